// The construct's web ACL with plain values (a stack embedding the construct, not the app's
// parameters, which the drift test compares with the SAM template): a key limit deploys it with
// no condition, its address limit defaults as the template's does, and limits outside WAF's range
// stop the synth.
import * as assert from 'node:assert/strict';
import { test } from 'node:test';
import { App, Stack } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import { ForgebenchGateway, ForgebenchGatewayProps } from '../lib/gateway';
import { Json } from './model';

function webAcls(props: Partial<ForgebenchGatewayProps>): Json[] {
  // CloudFormation's own template validation runs in the apps' synth (scripts/cdk-check.sh), not here.
  const stack = new Stack(new App({ builtinCloudFormationValidation: false }), 'Embedding');
  new ForgebenchGateway(stack, 'Gateway', { operatorKeyHash: '0'.repeat(64), code: { kind: 'placeholder' }, ...props });
  const resources: Json = Template.fromStack(stack).toJSON().Resources;
  return Object.values<Json>(resources).filter((r) => r.Type.startsWith('AWS::WAFv2::'));
}

test('a plain key limit deploys the web ACL unconditionally, with the default address limit', () => {
  const deployed = webAcls({ keyRequestRateLimit: 600 });
  assert.deepEqual(deployed.map((r) => r.Type).sort(), ['AWS::WAFv2::WebACL', 'AWS::WAFv2::WebACLAssociation']);
  assert.ok(deployed.every((r) => r.Condition === undefined));
  const rules = deployed.find((r) => r.Type === 'AWS::WAFv2::WebACL').Properties.Rules;
  const limit = (name: string) => rules.find((r: Json) => r.Name === name).Statement.RateBasedStatement.Limit;
  assert.equal(limit('per-key'), 600);
  assert.equal(limit('per-address'), 6000);
  const set = webAcls({ keyRequestRateLimit: 600, addressRequestRateLimit: 20000 });
  assert.equal(set.find((r) => r.Type === 'AWS::WAFv2::WebACL').Properties.Rules[2].Statement.RateBasedStatement.Limit, 20000);
});

test('no key limit deploys no web ACL', () => {
  assert.deepEqual(webAcls({}), []);
  assert.deepEqual(webAcls({ keyRequestRateLimit: 0, addressRequestRateLimit: 6000 }), []);
});

test('a limit outside WAF\'s range stops the synth', () => {
  assert.throws(() => webAcls({ keyRequestRateLimit: 9 }), /keyRequestRateLimit must be 0 or a whole number from 10/);
  for (const address of [9, 2000000001, 60.5]) {
    assert.throws(() => webAcls({ keyRequestRateLimit: 600, addressRequestRateLimit: address }), /addressRequestRateLimit must be a whole number from 10 to 2,000,000,000/);
  }
});
