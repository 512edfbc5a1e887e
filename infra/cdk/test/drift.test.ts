// The CDK stack and the SAM template deploy the same system: the same routes (both from
// infra/openapi.yaml), REST API and stage (tracing, access log), functions (each the one gateway
// binary, named by the FORGEBENCH_ROUTE it serves) and their settings (tracing), environment,
// every policy's actions on every resource with its conditions, managed policies (as SAM's own
// transform attaches them), triggers, table and indexes, queues and their policy, key, bucket,
// topic, alarms, dashboard, the API Gateway logging role and account, the optional web ACL,
// parameters, conditions and outputs. Run after `cdk synth` (scripts/cdk-check.sh):
//   FORGEBENCH_SAM_TEMPLATE (default ../template.yaml) and FORGEBENCH_CDK_TEMPLATE (default
//   cdk.out/forgebench-cdk.template.json) choose the two sides.
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { test } from 'node:test';
import { FUNCTIONS } from '../lib/functions';
import { CANONICAL_AUTHORIZATION, repositoryRoot } from '../lib/gateway';
import { cdkModel, differences, Json, Model, Partition, samModel } from './model';

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
  const d = only(/^routes|^API definition|^API invoke/);
  assert.deepEqual(d, [], report(d));
});

test('both deploy the same REST API and stage: name, tracing, access log, throttling, its wait for the logging role', () => {
  assert.equal(sam.stage.Stage.TracingEnabled, true);
  assert.ok(sam.stage.Stage.AccessLogSetting?.Format, 'no access log format read from the SAM side');
  const d = only(/^API and stage/);
  assert.deepEqual(d, [], report(d));
});

test('the API definition still carries the gateway responses of openapi.yaml', () => {
  const responses = cdk.definition['x-amazon-apigateway-gateway-responses'];
  assert.ok(responses && Object.keys(responses).length > 0, 'no x-amazon-apigateway-gateway-responses in the CDK API definition');
  assert.deepEqual(responses, sam.definition['x-amazon-apigateway-gateway-responses']);
});

test('both deploy the same functions, each serving the same route, with the same settings, environment and triggers', () => {
  assert.equal(Object.keys(sam.functions).length, FUNCTIONS.length);
  assert.equal(new Set(Object.values(sam.functions).map((f) => f.route)).size, FUNCTIONS.length, 'two SAM functions serve the same FORGEBENCH_ROUTE');
  const d = only(/^(functions: |\S+Function \(\S+\) (?!policy|managed policies))/);
  assert.deepEqual(d, [], report(d));
});

test("every function's role allows exactly what the SAM function's does", () => {
  const total = Object.values(sam.functions).reduce((n, f) => n + f.permissions.length, 0);
  assert.ok(total > 200, `only ${total} permissions read from the SAM side`);
  const d = only(/ (policy|managed policies): /);
  assert.deepEqual(d, [], report(d));
});

test('both deploy the same table, queues, key, bucket, topic, alarms, dashboard, every other resource, log groups, parameters, conditions and outputs', () => {
  // Everything the tests above do not cover.
  const d = differences(sam, cdk).filter((x) => !/^(routes|API definition|API invoke|API and stage|functions: |\S+Function \(\S+\) )/.test(x));
  for (const r of ['AlarmTopic', 'AlarmTopicPolicy', 'AlarmEmailSubscription', 'Api5xxAlarm', 'Dashboard', 'PushQueuesTlsOnly', 'ApiGatewayAccount', 'ApiGatewayLoggingReady']) {
    assert.ok(sam.resources[r], `no ${r} read from the SAM side`);
  }
  assert.ok(Object.keys(sam.conditions).length >= 2, 'too few conditions read from the SAM side');
  assert.deepEqual(d, [], report(d));
});

// SAM names the X-Ray policy by the partition it transforms in; the CDK stack decides at deploy time.
for (const partition of ['aws-cn', 'aws-us-gov'] as Partition[]) {
  test(`in ${partition} too, every function's role has the managed policies SAM's transform gives it there`, () => {
    const [s, c] = [samModel(samPath, partition), cdkModel(cdkPath, partition)];
    assert.ok(Object.values(s.functions).every((f) => f.managedPolicies.some((m) => m.endsWith('/AWSXRayDaemonWriteAccess'))));
    const d = differences(s, c).filter((x) => / managed policies: /.test(x));
    assert.deepEqual(d, [], report(d));
  });
}

test('both deploy the same web ACL: the canonical Authorization form first, then a rate per key and per address', () => {
  const acl = sam.resources.KeyRequestRateLimits;
  assert.ok(acl, 'no KeyRequestRateLimits read from the SAM side');
  const rules = (m: Model) => m.resources.KeyRequestRateLimits.Properties.Rules.map((r: Json) => `${r.Priority} ${r.Name}`);
  assert.deepEqual(rules(sam), ['0 non-canonical-authorization', '1 per-key', '2 per-address']);
  assert.deepEqual(rules(cdk), rules(sam));
  assert.equal(cdk.resources.KeyRequestRateLimits.Properties.Rules[0].Statement.AndStatement.Statements[1].NotStatement.Statement.RegexMatchStatement.RegexString, CANONICAL_AUTHORIZATION);
  assert.deepEqual(sam.parameters.AddressRequestRateLimit, { Type: 'Number', Default: '6000', MinValue: '10', MaxValue: '2000000000' });
  const d = differences(sam, cdk).filter((x) => /^(KeyRequestRateLimits|parameters|parameter (Key|Address)RequestRateLimit|conditions|condition LimitsKeyRequestRate)/.test(x));
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
  const binary = perturbed((m) => {
    m.functions['GetMeFunction (get-me)']!.binary = 'get-me';
  });
  assert.match(binary.join('\n'), /GetMeFunction \(get-me\) binary: SAM builds "get-me", not gateway/);
  const serves = perturbed((m) => {
    // The CDK side's GetMeFunction still serves get-me.
    const fn = m.functions['GetMeFunction (get-me)']!;
    delete m.functions['GetMeFunction (get-me)'];
    m.functions['GetMeFunction (get-task)'] = { ...fn, route: 'get-task', env: { ...fn.env, FORGEBENCH_ROUTE: 'get-task' } };
  });
  assert.match(serves.join('\n'), /functions: only in SAM: GetMeFunction \(get-task\)\n(.*\n)*functions: only in CDK: GetMeFunction \(get-me\)/);
  const routeName = perturbed((m) => {
    m.functions['GetMeFunction (get-me)']!.route = 'get-task';
  });
  assert.match(routeName.join('\n'), /GetMeFunction \(get-me\) FORGEBENCH_ROUTE: SAM "get-task" but CDK "get-me"/);
  const timeout = perturbed((m) => {
    m.functions['OpenTaskFunction (open-task)']!.settings.Timeout = 36;
  });
  assert.match(timeout.join('\n'), /OpenTaskFunction \(open-task\) Timeout: SAM 36 but CDK 35/);
  const index = perturbed((m) => m.resources.Table.Properties.GlobalSecondaryIndexes.pop());
  assert.match(index.join('\n'), /^Table: /m);
  const alarmActions = perturbed((m) => delete m.resources.PushQueueAgeAlarm.Properties.AlarmActions);
  assert.match(alarmActions.join('\n'), /^PushQueueAgeAlarm: \/Properties\/AlarmActions only in CDK/m);
  const tracing = perturbed((m) => delete m.functions['GetMeFunction (get-me)']!.settings.TracingConfig);
  assert.match(tracing.join('\n'), /GetMeFunction \(get-me\) TracingConfig: SAM undefined but CDK \{"Mode":"Active"\}/);
  const xray = perturbed((m) => m.functions['GetMeFunction (get-me)']!.managedPolicies.pop());
  assert.match(xray.join('\n'), /GetMeFunction \(get-me\) managed policies: only in CDK: /);
  const accessLog = perturbed((m) => delete m.stage.Stage.AccessLogSetting);
  assert.match(accessLog.join('\n'), /^API and stage: \/Stage\/AccessLogSetting only in CDK/m);
  const dashboard = perturbed((m) => (m.resources.Dashboard.Properties.DashboardBody.widgets[5].properties.stat = 'Average'));
  assert.match(dashboard.join('\n'), /^Dashboard: \/Properties\/DashboardBody\/widgets\/5\/properties\/stat: SAM "Average" but CDK "Maximum"/m);
  const condition = perturbed((m) => delete m.resources.AlarmEmailSubscription.Condition);
  assert.match(condition.join('\n'), /^AlarmEmailSubscription: \/Condition only in CDK/m);
  const acl = (m: Model) => m.resources.KeyRequestRateLimits.Properties.Rules;
  const regex = perturbed((m) => (acl(m)[0].Statement.AndStatement.Statements[1].NotStatement.Statement.RegexMatchStatement.RegexString = '(?i)^Bearer [A-Za-z0-9._~+/-]+=*$'));
  assert.match(regex.join('\n'), /^KeyRequestRateLimits: \/Properties\/Rules\/0\/Statement\/AndStatement\/Statements\/1\/NotStatement\/Statement\/RegexMatchStatement\/RegexString: SAM /m);
  const scoped = perturbed((m) => (acl(m)[2].Statement.RateBasedStatement.ScopeDownStatement = structuredClone(acl(m)[0].Statement.AndStatement.Statements[0])));
  assert.match(scoped.join('\n'), /^KeyRequestRateLimits: \/Properties\/Rules\/2\/Statement\/RateBasedStatement\/ScopeDownStatement only in SAM/m);
  const addressLimit = perturbed((m) => (m.parameters.AddressRequestRateLimit.Default = '600'));
  assert.match(addressLimit.join('\n'), /^parameter AddressRequestRateLimit: SAM .*"Default":"600"/m);
});
