import { CfnElement, Stack, Validations } from 'aws-cdk-lib';
import type { IGrantable } from 'aws-cdk-lib/aws-iam';
import { Construct, IConstruct } from 'constructs';
import type { ForgebenchGateway } from './gateway';
import { FUNCTIONS } from './functions';

// cdk-nag (AwsSolutions pack) findings the gateway accepts, each on the one resource it is
// about and with the reason it stands. The construct acknowledges them itself, so a stack that
// embeds it and runs cdk-nag gets the same clean report as this project's app. cdk-nag v3
// reads CDK's own acknowledgements (`Validations.of(x).acknowledge`), which replaced v2's
// NagSuppressions.

function ack(scope: IConstruct, id: string, reason: string): void {
  Validations.of(scope).acknowledge({ id, reason });
}

/** How cdk-nag writes a resource's `Fn::GetAtt` in a finding: `<LogicalId.Attribute>`. */
function getAtt(r: IConstruct, attribute: string): string {
  return `<${Stack.of(r).resolve((r.node.defaultChild as CfnElement).logicalId)}.${attribute}>`;
}
/** The wildcard resource of the table's indexes, as a finding names it. */
const indexesOf = (gateway: ForgebenchGateway) => `${getAtt(gateway.table, 'Arn')}/index/*`;
/** The wildcard resource of the stored bodies, as a finding names it. */
const bodiesOf = (gateway: ForgebenchGateway) => `${getAtt(gateway.bodyBucket, 'Arn')}/tasks/*`;

/**
 * Acknowledges, on the principal a `grant*` method gave it to, the one wildcard finding
 * (AwsSolutions-IAM5) that grant raises: `<table>/index/*` for the ledger, `<bucket>/tasks/*` for
 * the bodies. A principal that is no construct (a service principal) gets no policy of its own.
 */
export function acknowledgeGrantFinding(gateway: ForgebenchGateway, grantee: IGrantable, on: 'indexes' | 'bodies'): void {
  const principal = grantee.grantPrincipal;
  if (!Construct.isConstruct(principal)) return;
  if (on === 'indexes') {
    ack(
      principal,
      `AwsSolutions-IAM5[Resource::${indexesOf(gateway)}]`,
      "ForgebenchGateway.grantReadLedger: the read actions on the indexes of the gateway's own table only " +
        '(tasks by side, conversation, call trees, word postings), which a reader of the ledger queries.',
    );
  } else {
    ack(
      principal,
      `AwsSolutions-IAM5[Resource::${bodiesOf(gateway)}]`,
      "ForgebenchGateway.grantReadBodies: s3:GetObject on the gateway's stored bodies only, one object per " +
        "body under tasks/<task id>/; the prefix is the narrowest resource a deploy-time policy can name.",
    );
  }
}

export function acknowledgeNagFindings(gateway: ForgebenchGateway): void {
  const stack = Stack.of(gateway);
  const indexes = indexesOf(gateway);
  const bodies = bodiesOf(gateway);

  const xray = JSON.stringify(stack.resolve(gateway.xrayWritePolicy.managedPolicyArn));
  for (const spec of FUNCTIONS) {
    const role = gateway.functions[spec.id]!.role!;
    ack(
      role,
      `AwsSolutions-IAM4[Policy::${xray}]`,
      'The X-Ray write policy SAM attaches to every traced function (AWSXrayWriteOnlyAccess, or ' +
        'AWSXRayDaemonWriteAccess outside the aws partition): only xray:PutTraceSegments, PutTelemetryRecords ' +
        'and the sampling reads, which take no resource; the function sends its invocation traces (Tracing: Active).',
    );
    ack(
      role,
      'AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/AWSLambdaBasicExecutionRole]',
      "Lambda's basic execution policy only lets the function create its log stream and put log events " +
        '(logs:CreateLogGroup, logs:CreateLogStream, logs:PutLogEvents); every SAM function has it too.',
    );
    if (spec.trigger?.kind === 'pushQueue') {
      ack(
        role,
        'AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/AWSLambdaSQSQueueExecutionRole]',
        "The policy SAM attaches for an SQS event (receive, delete, queue attributes) so the push worker's " +
          'event source mapping can poll; the role also names exactly those actions on the push queue.',
      );
    }
    const grants = spec.grants.flatMap((g) => g.on);
    if (grants.includes('indexes')) {
      ack(
        role,
        `AwsSolutions-IAM5[Resource::${indexes}]`,
        "The indexes of the gateway's own table only, never another table's: this function queries several of " +
          'them (the list routes gsi1/gsi2, task search ten search indexes, the sweeper the words_due index), ' +
          'and the actions are the ones its code calls (docs/deploy.md, "Least privilege").',
      );
    }
    if (grants.includes('bodies')) {
      ack(
        role,
        `AwsSolutions-IAM5[Resource::${bodies}]`,
        "Message and artifact bodies are stored under tasks/<task id>/ in the gateway's body bucket, one object " +
          'per body, named when the task is written: the prefix is the narrowest resource a deploy-time policy ' +
          'can name; only GetObject/PutObject as the function needs.',
      );
    }
  }

  const api = gateway.api;
  ack(
    api.node.defaultChild!,
    'AwsSolutions-APIG2',
    'Every function validates its request itself (the bodies of infra/openapi.yaml, checked against the local ' +
      "gateway's route table and by Schemathesis) and answers the project's own error shape; an API Gateway " +
      'validator would answer malformed requests with a different error body.',
  );
  const stage = api.deploymentStage.node.defaultChild!;
  // APIG1 (access logging) holds: the stage writes one JSON access log line per request.
  ack(
    stage,
    'AwsSolutions-APIG6',
    'Execution logging is OFF on purpose, as in the SAM stack. The access log (ApiAccessLogGroup) records every ' +
      'request (request and trace id, route, status, latencies, error type) without body, header or key, and the ' +
      "functions log each request they serve under the same request id; API Gateway's execution log is its own " +
      'processing trace, and with data tracing it writes whole requests and responses (task bodies, headers such ' +
      'as Authorization with the bearer key) to CloudWatch Logs, which the gateway must never do.',
  );
  const loggingRole = gateway.node.tryFindChild('ApiGatewayLoggingRole');
  if (loggingRole) {
    ack(
      loggingRole,
      'AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/AmazonAPIGatewayPushToCloudWatchLogs]',
      "The policy AWS documents for API Gateway's account-wide CloudWatch Logs role (create log groups and " +
        'streams, put events); API Gateway assumes this role only to write the access log, and the SAM stack ' +
        'makes the same role.',
    );
  }
  ack(
    stage,
    'AwsSolutions-APIG3',
    'Every route needs a bearer key and the stage throttles the whole API (ThrottleRateLimit/ThrottleBurstLimit); ' +
      'a WAF web ACL is an account-level choice (and cost) left to the operator, who can associate one with the stage.',
  );
  ack(
    gateway.bodyBucket.node.defaultChild!,
    'AwsSolutions-S1',
    'The bucket is private (public access blocked, bucket-owner-enforced), TLS-only and KMS-encrypted, and only ' +
      "the gateway's function roles may read or write tasks/*; server access logs would need a second bucket the " +
      'SAM stack lacks. Use CloudTrail data events for object-level audit.',
  );
}
