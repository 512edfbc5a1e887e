// The CDK stack and the SAM template deploy the same system: the same routes (both from
// infra/openapi.yaml), functions and their settings, environment, every policy's actions on every
// resource with its conditions, managed policies, triggers, table and indexes, queues, key,
// bucket, alarm, parameters and outputs. Run after `cdk synth` (scripts/cdk-check.sh):
//   FORGEBENCH_SAM_TEMPLATE (default ../template.yaml) and FORGEBENCH_CDK_TEMPLATE (default
//   cdk.out/forgebench-cdk.template.json) choose the two sides.
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { test } from 'node:test';
import { FUNCTIONS } from '../lib/functions';
import { repositoryRoot } from '../lib/gateway';
import { cdkModel, differences, Model, samModel } from './model';

const root = repositoryRoot();
const samPath = process.env.FORGEBENCH_SAM_TEMPLATE ?? path.join(root, 'infra', 'template.yaml');
const cdkPath = process.env.FORGEBENCH_CDK_TEMPLATE ?? path.join(root, 'infra', 'cdk', 'cdk.out', 'forgebench-cdk.template.json');

const sam = samModel(samPath);
if (!fs.existsSync(cdkPath)) throw new Error(`${cdkPath} is missing: run cdk synth first (scripts/cdk-check.sh does)`);
const cdk = cdkModel(cdkPath);

const report = (lines: string[]) => (lines.length === 0 ? '' : `\n  ${lines.slice(0, 60).join('\n  ')}${lines.length > 60 ? `\n  ... and ${lines.length - 60} more` : ''}`);
const only = (prefix: RegExp) => differences(sam, cdk).filter((d) => prefix.test(d));

test('both deploy the same routes, each to the same function with the same integration', () => {
  assert.ok(sam.routes.length >= 40, `only ${sam.routes.length} routes read from the SAM side`);
  const d = only(/^routes|^API|^API invoke/);
  assert.deepEqual(d, [], report(d));
});

test('both deploy the same functions with the same settings, environment and triggers', () => {
  assert.equal(Object.keys(sam.functions).length, FUNCTIONS.length);
  const d = only(/^(functions: |\S+Function \(\S+\) (?!policy|managed policies))/);
  assert.deepEqual(d, [], report(d));
});

test("every function's role allows exactly what the SAM function's does", () => {
  const total = Object.values(sam.functions).reduce((n, f) => n + f.permissions.length, 0);
  assert.ok(total > 200, `only ${total} permissions read from the SAM side`);
  const d = only(/ (policy|managed policies): /);
  assert.deepEqual(d, [], report(d));
});

test('both deploy the same table, queues, key, bucket, alarm, every other resource, log groups, parameters and outputs', () => {
  const d = only(/^(resources|Table|PushQueue|PushDeadLetterQueue|SecretsKey|SecretsKeyAlias|BodyBucket|BodyBucketPolicy|PushDeadLetterAlarm|log groups|parameter|outputs)/);
  assert.ok(Object.keys(sam.resources).length >= 8, 'too few resources read from the SAM side');
  assert.deepEqual(d, [], report(d));
});

test('the table keeps its keys, indexes (multi-attribute ones included), TTL, billing and PITR', () => {
  const table = cdk.resources.Table.Properties;
  assert.equal(table.BillingMode, 'PAY_PER_REQUEST');
  assert.equal(table.PointInTimeRecoverySpecification.PointInTimeRecoveryEnabled, true);
  assert.deepEqual(table.TimeToLiveSpecification, { AttributeName: 'expires_at', Enabled: true });
  const multi = table.GlobalSecondaryIndexes.filter((i: { KeySchema: { KeyType: string }[] }) => i.KeySchema.filter((k) => k.KeyType === 'HASH').length > 1);
  assert.ok(multi.length >= 1, 'no multi-attribute index reached the synthesized table');
});

// The comparison itself must see a difference: each perturbation of the SAM side below is one a
// change to infra/template.yaml or infra/openapi.yaml could make without touching the CDK app.
test('the comparison fails when one side adds a route, a function or a permission', () => {
  assert.deepEqual(differences(sam, cdk), [], 'the two sides differ before any perturbation');
  const perturbed = (change: (m: Model) => void): string[] => {
    const copy = structuredClone(sam);
    change(copy);
    return differences(copy, cdk);
  };
  const route = perturbed((m) => m.routes.push('GET /v1/extra -> aws_proxy POST {{ListAgentsFunction.Arn}}'));
  assert.match(route.join('\n'), /routes: only in SAM: GET \/v1\/extra/);
  const fn = perturbed((m) => {
    m.functions['ExtraFunction (extra)'] = structuredClone(m.functions['GetMeFunction (get-me)']!);
  });
  assert.match(fn.join('\n'), /functions: only in SAM: ExtraFunction/);
  const permission = perturbed((m) => m.functions['GetMeFunction (get-me)']!.permissions.push('Allow dynamodb:Scan on {{Table.Arn}}'));
  assert.match(permission.join('\n'), /GetMeFunction \(get-me\) policy: only in SAM: Allow dynamodb:Scan/);
  const timeout = perturbed((m) => {
    m.functions['OpenTaskFunction (open-task)']!.settings.Timeout = 36;
  });
  assert.match(timeout.join('\n'), /OpenTaskFunction \(open-task\) Timeout: SAM 36 but CDK 35/);
  const index = perturbed((m) => m.resources.Table.Properties.GlobalSecondaryIndexes.pop());
  assert.match(index.join('\n'), /^Table: /m);
});
