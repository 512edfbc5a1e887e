// ForgebenchGateway as a construct library: embedded in a plain stack (no parameters, plain
// values), its L2 handles, the grants and metrics it offers the embedding stack, the props that
// change what it deploys, and the logical ids it keeps from its L1 days. Assertions with
// aws-cdk-lib/assertions on the synthesized template.
import * as assert from 'node:assert/strict';
import { test } from 'node:test';
import { App, CfnElement, CfnResource, Stack } from 'aws-cdk-lib';
import { Match, Template } from 'aws-cdk-lib/assertions';
import * as cloudwatch from 'aws-cdk-lib/aws-cloudwatch';
import * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as kms from 'aws-cdk-lib/aws-kms';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import * as s3 from 'aws-cdk-lib/aws-s3';
import * as sns from 'aws-cdk-lib/aws-sns';
import * as sqs from 'aws-cdk-lib/aws-sqs';
import { AwsSolutionsChecks } from 'cdk-nag';
import { Construct, IConstruct } from 'constructs';
import { FUNCTIONS } from '../lib/functions';
import { ForgebenchGateway, ForgebenchGatewayProps } from '../lib/gateway';
import { logicalIdAt } from '../lib/logical-ids';
import { Json } from './model';

// CloudFormation's own template validation (the built-in plugin) runs in the apps' synth
// (scripts/cdk-check.sh); here it would add seconds to every synth and check nothing of ours.
const app = () => new App({ builtinCloudFormationValidation: false });

function embed(props: Partial<ForgebenchGatewayProps> = {}): { stack: Stack; gateway: ForgebenchGateway } {
  const stack = new Stack(app(), 'Platform');
  const gateway = new ForgebenchGateway(stack, 'Gateway', { operatorKeyHash: '0'.repeat(64), code: { kind: 'placeholder' }, ...props });
  return { stack, gateway };
}
const logicalId = (c: IConstruct): string => Stack.of(c).resolve((c.node.defaultChild as CfnElement).logicalId);
const getAtt = (c: IConstruct, attribute: string) => ({ 'Fn::GetAtt': [logicalId(c), attribute] });

// The defaults, and what a stack of its own adds with the grants and metrics.
const { stack, gateway } = embed();
const auditors = new iam.Role(stack, 'Auditors', { assumedBy: new iam.AccountRootPrincipal() });
const ledgerGrant = gateway.grantReadLedger(auditors);
const readers = new iam.Role(stack, 'Readers', { assumedBy: new iam.AccountRootPrincipal() });
const bodiesGrant = gateway.grantReadBodies(readers);
new cloudwatch.Alarm(stack, 'DeadLetters', { metric: gateway.metricDeadLetters(), threshold: 5, evaluationPeriods: 2 });
const template = Template.fromStack(stack);
const resources: Record<string, Json> = template.toJSON().Resources;

// The same with every prop that changes something set away from its default.
const custom = embed({
  taskRetentionDays: 30,
  pushWorkerConcurrency: 7,
  longPollConcurrency: 11,
  logRetentionDays: 14,
  tableDeletionProtection: false,
  alarmEmail: 'ops@example.com',
  configureApiGatewayLogging: false,
  restApiName: 'acme-gateway',
  metricsNamespace: 'Acme/Gateway',
});
// The L2's own grant, which does not acknowledge its wildcard as the construct's grants do.
const unacknowledged = new iam.Role(custom.stack, 'Unacknowledged', { assumedBy: new iam.AccountRootPrincipal() });
custom.gateway.table.grantReadData(unacknowledged);
const customTemplate = Template.fromStack(custom.stack);

test('the construct embeds in a plain stack: the whole gateway, as L2 resources', () => {
  template.resourceCountIs('AWS::Lambda::Function', FUNCTIONS.length);
  template.resourceCountIs('AWS::DynamoDB::Table', 1);
  template.resourceCountIs('AWS::SQS::Queue', 2);
  template.resourceCountIs('AWS::KMS::Key', 2);
  template.resourceCountIs('AWS::S3::Bucket', 1);
  template.resourceCountIs('AWS::SNS::Topic', 1);
  template.resourceCountIs('AWS::ApiGateway::RestApi', 1);
  // The construct's eight alarms and the embedding stack's own.
  template.resourceCountIs('AWS::CloudWatch::Alarm', 9);
  assert.ok(gateway.table instanceof dynamodb.Table);
  assert.ok(gateway.pushQueue instanceof sqs.Queue && gateway.pushDeadLetterQueue instanceof sqs.Queue);
  assert.ok(gateway.secretsKey instanceof kms.Key);
  assert.ok(gateway.bodyBucket instanceof s3.Bucket);
  assert.ok(gateway.alarmTopic instanceof sns.Topic);
  assert.deepEqual(Object.keys(gateway.functions).sort(), FUNCTIONS.map((f) => f.id).sort());
  assert.ok(Object.values(gateway.functions).every((f) => f instanceof lambda.Function));
  assert.equal(Object.keys(gateway.functionLogGroups).length, FUNCTIONS.length);
  assert.equal(gateway.functionOf('open-task'), gateway.functions.OpenTask);
  assert.throws(() => gateway.functionOf('no-such-route'), /no function no-such-route; one of .*OpenTask/);
  assert.deepEqual(Object.keys(gateway.alarms).sort(), [
    'Api5xxAlarm', 'EventFunctionErrorsAlarm', 'ItemsSkippedAlarm', 'LongPollThrottlesAlarm', 'PushDeadLetterAlarm',
    'PushQueueAgeAlarm', 'StreamThrottlesAlarm', 'SweepSkippedAlarm',
  ]);
});

test('the table keeps the template\'s keys, indexes (words_due on two partition attributes), TTL, PITR, SSE and billing', () => {
  template.hasResourceProperties('AWS::DynamoDB::Table', {
    KeySchema: [{ AttributeName: 'pk', KeyType: 'HASH' }, { AttributeName: 'sk', KeyType: 'RANGE' }],
    BillingMode: 'PAY_PER_REQUEST',
    PointInTimeRecoverySpecification: { PointInTimeRecoveryEnabled: true },
    SSESpecification: { SSEEnabled: true },
    TimeToLiveSpecification: { AttributeName: 'expires_at', Enabled: true },
    DeletionProtectionEnabled: true,
    GlobalSecondaryIndexes: Match.arrayWith([
      {
        IndexName: 'words_due',
        KeySchema: [
          { AttributeName: 'words_due', KeyType: 'HASH' },
          { AttributeName: 'shard', KeyType: 'HASH' },
          { AttributeName: 'changed_at', KeyType: 'RANGE' },
        ],
        Projection: { ProjectionType: 'KEYS_ONLY' },
      },
    ]),
  });
  const table = resources[logicalId(gateway.table)];
  assert.deepEqual(
    table.Properties.GlobalSecondaryIndexes.map((i: Json) => i.IndexName),
    ['gsi1', 'gsi2', 'inbound_tasks', 'outbound_tasks', 'conversation', 'words_due'],
  );
  // In the template's order, which the L2 alone would not keep.
  assert.deepEqual(table.Properties.AttributeDefinitions.map((a: Json) => a.AttributeName), [
    'pk', 'sk', 'gsi1pk', 'gsi1sk', 'gsi2pk', 'gsi2sk', 'callee_agent_id', 'caller_agent_id', 'created_at', 'context_id', 'changed_at', 'words_due', 'shard',
  ]);
});

test('the stateful resources keep the logical ids of the L1 resources they were', () => {
  // What the construct synthesized before its resources were L2 (the same below any stack).
  assert.equal(logicalId(gateway.table), 'GatewayTable6600E3F8');
  assert.equal(logicalId(gateway.pushQueue), 'GatewayPushQueue2967DD5F');
  assert.equal(logicalId(gateway.pushDeadLetterQueue), 'GatewayPushDeadLetterQueue17ED511B');
  assert.equal(logicalId(gateway.secretsKey), 'GatewaySecretsKey09B2E1F7');
  assert.equal(logicalId(gateway.bodyBucket), 'GatewayBodyBucket221657B8');
  assert.equal(logicalId(gateway.bodyBucket.policy!), 'GatewayBodyBucketPolicy3DB48635');
  assert.equal(logicalId(gateway.alarmTopic), 'GatewayAlarmTopic9FF236BB');
  assert.equal(logicalId(gateway.alarmTopic.node.findChild('Policy')), 'GatewayAlarmTopicPolicyE1E01563');
  assert.equal(logicalId(gateway.accessLogGroup), 'GatewayApiAccessLogGroup8909E5D0');
  assert.equal(logicalId(gateway.functionLogGroups.OpenTask!), 'GatewayOpenTaskLogGroup23B7645D');
  assert.equal(logicalId(gateway.pushDeadLetterAlarm), 'GatewayPushDeadLetterAlarmE1F432BC');
  assert.ok(resources.GatewayPushQueuesTlsOnly9C9B1184, 'the queues\' policy lost its logical id');
  // logicalIdAt computes what CDK itself allocates for an L1 at a path.
  const probe = new Stack(app(), 'Probe');
  for (const path of [['Gateway', 'Table'], ['Gateway', 'OpenTask', 'LogGroup'], ['A'], ['Outer', 'Default', 'Resource'], ['Gate', 'Gate', 'X']]) {
    let scope: Construct = probe;
    for (const id of path.slice(0, -1)) scope = (scope.node.tryFindChild(id) as Construct) ?? new Construct(scope, id);
    const element = new CfnResource(scope, path[path.length - 1]!, { type: 'Test::Probe' });
    assert.equal(logicalIdAt(path), probe.resolve(element.logicalId), path.join('/'));
  }
});

test('grantReadLedger allows only the read actions, on the table and its indexes', () => {
  const table = getAtt(gateway.table, 'Arn');
  const indexes = { 'Fn::Join': ['', [table, '/index/*']] };
  template.hasResourceProperties('AWS::IAM::Policy', {
    Roles: [{ Ref: logicalId(auditors) }],
    PolicyDocument: {
      Statement: [
        {
          Action: ['dynamodb:BatchGetItem', 'dynamodb:Query', 'dynamodb:GetItem', 'dynamodb:Scan', 'dynamodb:ConditionCheckItem', 'dynamodb:DescribeTable'],
          Effect: 'Allow',
          Resource: [table, indexes],
        },
        { Action: ['dynamodb:GetRecords', 'dynamodb:GetShardIterator'], Effect: 'Allow', Resource: [table, indexes] },
      ],
    },
  });
  assert.ok(ledgerGrant.success);
  const actions = ledgerGrant.principalStatements.flatMap((s) => s.actions);
  assert.deepEqual(actions.filter((a) => /Put|Update|Delete|Write|Batch(?!Get)/.test(a)), []);
});

test('grantReadBodies allows GetObject on tasks/* and Decrypt on the key only through S3', () => {
  template.hasResourceProperties('AWS::IAM::Policy', {
    Roles: [{ Ref: logicalId(readers) }],
    PolicyDocument: {
      Statement: [
        { Action: 's3:GetObject', Effect: 'Allow', Resource: { 'Fn::Join': ['', [getAtt(gateway.bodyBucket, 'Arn'), '/tasks/*']] } },
        {
          Action: 'kms:Decrypt',
          Effect: 'Allow',
          Resource: getAtt(gateway.secretsKey, 'Arn'),
          Condition: { StringEquals: { 'kms:ViaService': { 'Fn::Sub': 's3.${AWS::Region}.amazonaws.com' } } },
        },
      ],
    },
  });
  assert.ok(bodiesGrant.success);
});

test('the embedding stack, grants included, passes cdk-nag\'s AwsSolutions pack; the L2\'s own read grant does not', () => {
  const report = new AwsSolutionsChecks().validateScope(stack);
  assert.deepEqual(report.violations.map((v) => `${v.ruleName} ${v.violatingResources.map((r) => r.constructPath).join(' ')}`), []);
  const failing = new AwsSolutionsChecks().validateScope(custom.stack);
  assert.deepEqual(
    failing.violations.map((v) => `${v.ruleName} ${v.violatingResources.map((r) => r.constructPath).join(' ')}`),
    [`AwsSolutions-IAM5[Resource::<${logicalId(custom.gateway.table)}.Arn>/index/*] Platform/Unacknowledged/DefaultPolicy/Resource`],
  );
});

/** A metric's namespace, name, dimensions (resolved), statistic and period. */
function stat(s: Stack, metric: cloudwatch.IMetric): Json {
  const m = metric.toMetricConfig().metricStat!;
  return {
    namespace: s.resolve(m.namespace),
    metricName: m.metricName,
    dimensions: Object.fromEntries((m.dimensions ?? []).map((d) => [d.name, s.resolve(d.value)])),
    statistic: m.statistic,
    period: m.period.toSeconds(),
  };
}

test('the API metrics are the prod stage\'s, by the API\'s name, as the 5xx alarm watches them', () => {
  // The stage by reference (a Ref of a stage is its name), which the template names `prod`.
  const stage = gateway.api.deploymentStage;
  assert.equal(resources[logicalId(stage)].Properties.StageName, 'prod');
  const api = { ApiName: { 'Fn::Sub': '${AWS::StackName}-Api' }, Stage: { Ref: logicalId(stage) } };
  assert.deepEqual(stat(stack, gateway.metricApi5xx()), { namespace: 'AWS/ApiGateway', metricName: '5XXError', dimensions: api, statistic: 'Sum', period: 300 });
  assert.deepEqual(stat(stack, gateway.metricApi4xx()), { namespace: 'AWS/ApiGateway', metricName: '4XXError', dimensions: api, statistic: 'Sum', period: 300 });
  assert.deepEqual(stat(stack, gateway.metricApiRequests()), { namespace: 'AWS/ApiGateway', metricName: 'Count', dimensions: api, statistic: 'Sum', period: 300 });
  assert.deepEqual(stat(stack, gateway.metricApiLatency()), { namespace: 'AWS/ApiGateway', metricName: 'Latency', dimensions: api, statistic: 'p99', period: 300 });
  assert.equal(stat(stack, gateway.metricApiLatency({ statistic: 'p50' })).statistic, 'p50');
  const alarm = Object.values(resources).find((r) => r.Type === 'AWS::CloudWatch::Alarm' && r.Properties.Metrics?.[0]?.Id === 'errors');
  const watched = alarm.Properties.Metrics[0].MetricStat.Metric;
  assert.deepEqual(
    { namespace: watched.Namespace, metricName: watched.MetricName, dimensions: Object.fromEntries(watched.Dimensions.map((d: Json) => [d.Name, d.Value])) },
    { namespace: 'AWS/ApiGateway', metricName: '5XXError', dimensions: { ...api, Stage: 'prod' } },
  );
  const named = stat(custom.stack, custom.gateway.metricApi5xx());
  assert.deepEqual(named.dimensions, { ApiName: 'acme-gateway', Stage: { Ref: logicalId(custom.gateway.api.deploymentStage) } });
});

test('the queue metrics name the push queue and the dead-letter queue', () => {
  assert.deepEqual(stat(stack, gateway.metricPushQueueAge()), {
    namespace: 'AWS/SQS',
    metricName: 'ApproximateAgeOfOldestMessage',
    dimensions: { QueueName: getAtt(gateway.pushQueue, 'QueueName') },
    statistic: 'Maximum',
    period: 300,
  });
  assert.deepEqual(stat(stack, gateway.metricDeadLetters()), {
    namespace: 'AWS/SQS',
    metricName: 'ApproximateNumberOfMessagesVisible',
    dimensions: { QueueName: getAtt(gateway.pushDeadLetterQueue, 'QueueName') },
    statistic: 'Maximum',
    period: 300,
  });
  // An alarm of the embedding stack on it, and the construct's own on both queues.
  template.hasResourceProperties('AWS::CloudWatch::Alarm', {
    Namespace: 'AWS/SQS',
    MetricName: 'ApproximateNumberOfMessagesVisible',
    Dimensions: [{ Name: 'QueueName', Value: getAtt(gateway.pushDeadLetterQueue, 'QueueName') }],
    Threshold: 5,
    EvaluationPeriods: 2,
  });
  for (const [alarm, queue, threshold] of [['PushDeadLetterAlarm', gateway.pushDeadLetterQueue, 0], ['PushQueueAgeAlarm', gateway.pushQueue, 300]] as const) {
    const r = resources[logicalId(gateway.alarms[alarm]!)];
    assert.deepEqual(r.Properties.Dimensions, [{ Name: 'QueueName', Value: getAtt(queue, 'QueueName') }], alarm);
    assert.equal(r.Properties.Threshold, threshold);
    assert.deepEqual(r.Properties.AlarmActions, [{ Ref: logicalId(gateway.alarmTopic) }], alarm);
  }
});

test('the function metrics name one function, by id or route, or sum every function', () => {
  const openTask = { FunctionName: { Ref: logicalId(gateway.functions.OpenTask!) } };
  assert.deepEqual(stat(stack, gateway.metricFunctionErrors('OpenTask')), { namespace: 'AWS/Lambda', metricName: 'Errors', dimensions: openTask, statistic: 'Sum', period: 300 });
  assert.deepEqual(stat(stack, gateway.metricFunctionErrors('open-task')), stat(stack, gateway.metricFunctionErrors('OpenTask')));
  assert.deepEqual(stat(stack, gateway.metricFunctionThrottles('claim-next-task')).dimensions, { FunctionName: { Ref: logicalId(gateway.functions.ClaimNextTask!) } });
  assert.equal(stat(stack, gateway.metricFunctionThrottles('ClaimNextTask')).metricName, 'Throttles');
  assert.throws(() => gateway.metricFunctionErrors('Nope'), /no function Nope/);
  for (const [sum, metricName] of [[gateway.metricFunctionErrors(), 'Errors'], [gateway.metricFunctionThrottles(), 'Throttles']] as const) {
    const parts = Object.values(sum.usingMetrics).map((m) => stat(stack, m));
    assert.equal(parts.length, FUNCTIONS.length);
    assert.ok(parts.every((p) => p.namespace === 'AWS/Lambda' && p.metricName === metricName && p.statistic === 'Sum'));
    assert.equal(new Set(parts.map((p) => JSON.stringify(p.dimensions))).size, FUNCTIONS.length, 'one metric per function');
    assert.match(sum.expression, /^SUM\(\[\w+(, \w+){56,}\]\)$/);
  }
});

test('the business metrics are in the gateway\'s namespace', () => {
  assert.deepEqual(stat(stack, gateway.metric('TasksClaimed')), {
    namespace: { 'Fn::Sub': 'Forgebench/${AWS::StackName}' },
    metricName: 'TasksClaimed',
    dimensions: {},
    statistic: 'Sum',
    period: 300,
  });
  assert.deepEqual(stat(custom.stack, custom.gateway.metric('Refusals', { dimensionsMap: { Reason: 'limit_reached' } })), {
    namespace: 'Acme/Gateway',
    metricName: 'Refusals',
    dimensions: { Reason: 'limit_reached' },
    statistic: 'Sum',
    period: 300,
  });
  // The functions write them there.
  customTemplate.hasResourceProperties('AWS::Lambda::Function', {
    Environment: { Variables: Match.objectLike({ FORGEBENCH_METRICS_NAMESPACE: 'Acme/Gateway' }) },
  });
});

test('the props change what they set: retention, concurrency, logs, deletion protection, email, logging role', () => {
  const lifecycle = (t: Template) => Object.values<Json>(t.findResources('AWS::S3::Bucket'))[0].Properties.LifecycleConfiguration.Rules[0];
  assert.equal(lifecycle(template).ExpirationInDays, 365);
  assert.equal(lifecycle(customTemplate).ExpirationInDays, 30);
  customTemplate.allResourcesProperties('AWS::Lambda::Function', {
    Environment: { Variables: Match.objectLike({ FORGEBENCH_TASK_RETENTION_DAYS: '30' }) },
  });
  template.hasResourceProperties('AWS::Lambda::EventSourceMapping', { ScalingConfig: { MaximumConcurrency: 50 } });
  customTemplate.hasResourceProperties('AWS::Lambda::EventSourceMapping', { ScalingConfig: { MaximumConcurrency: 7 } });
  const reserved = (t: Template) =>
    Object.values<Json>(t.findResources('AWS::Lambda::Function')).map((f) => f.Properties.ReservedConcurrentExecutions).filter((r) => r !== undefined);
  const longPolls = FUNCTIONS.filter((f) => f.longPoll).length;
  assert.ok(longPolls > 0);
  assert.deepEqual(reserved(template), Array(longPolls).fill(100));
  assert.deepEqual(reserved(customTemplate), Array(longPolls).fill(11));
  customTemplate.allResourcesProperties('AWS::Logs::LogGroup', { RetentionInDays: 14 });
  customTemplate.hasResourceProperties('AWS::DynamoDB::Table', { DeletionProtectionEnabled: false });
  template.resourceCountIs('AWS::SNS::Subscription', 0);
  customTemplate.hasResourceProperties('AWS::SNS::Subscription', { Protocol: 'email', Endpoint: 'ops@example.com', TopicArn: { Ref: logicalId(custom.gateway.alarmTopic) } });
  template.resourceCountIs('AWS::ApiGateway::Account', 1);
  customTemplate.resourceCountIs('AWS::ApiGateway::Account', 0);
  customTemplate.hasResourceProperties('AWS::ApiGateway::RestApi', { Name: 'acme-gateway' });
});

test('values out of their range stop the synth', () => {
  const cases: [Partial<ForgebenchGatewayProps>, RegExp][] = [
    [{ pushWorkerConcurrency: 1 }, /pushWorkerConcurrency must be a whole number in 2\.\.1000, not 1/],
    [{ taskRetentionDays: 0 }, /taskRetentionDays must be a whole number in 1\.\.3650/],
    [{ logRetentionDays: 31 }, /logRetentionDays must be one of/],
    [{ operatorKeyHash: 'not-a-hash' }, /operatorKeyHash must be the SHA-256/],
    [{ alarmEmail: 'nobody' }, /alarmEmail must be an email address or empty/],
  ];
  for (const [props, error] of cases) assert.throws(() => embed(props), error);
});
