import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { Aws, CfnCondition, CfnWaitConditionHandle, Duration, Fn, IResolvable, RemovalPolicy, Token } from 'aws-cdk-lib';
import * as apigateway from 'aws-cdk-lib/aws-apigateway';
import * as cloudwatch from 'aws-cdk-lib/aws-cloudwatch';
import * as cloudwatchActions from 'aws-cdk-lib/aws-cloudwatch-actions';
import * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import * as events from 'aws-cdk-lib/aws-events';
import * as targets from 'aws-cdk-lib/aws-events-targets';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as kms from 'aws-cdk-lib/aws-kms';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import * as logs from 'aws-cdk-lib/aws-logs';
import * as s3 from 'aws-cdk-lib/aws-s3';
import * as sns from 'aws-cdk-lib/aws-sns';
import * as sqs from 'aws-cdk-lib/aws-sqs';
import * as wafv2 from 'aws-cdk-lib/aws-wafv2';
import { RustFunction, RustFunctionProps } from 'cargo-lambda-cdk';
import { Construct } from 'constructs';
import * as yaml from 'js-yaml';
import { DASHBOARD_BODY } from './dashboard';
import { EnvValue, FUNCTIONS, FunctionSpec, Grant, ResourceKind } from './functions';
import { keepLogicalId } from './logical-ids';
import { acknowledgeGrantFinding, acknowledgeNagFindings } from './nag';
import { TABLE, TABLE_ATTRIBUTES, TABLE_INDEXES } from './table';

/**
 * How the functions' code is packaged. Every function runs the one gateway binary
 * (functions/gateway, which serves the route its `FORGEBENCH_ROUTE` names), packaged once as one
 * asset that all of them share.
 *
 * - `prebuilt` (default): the `bootstrap` that
 *   `cargo lambda build --release --arm64 --lambda-dir target/lambda-arm64 --bin gateway` leaves in
 *   `<dir>/gateway/`; synth fails naming it and that command when it is missing.
 * - `cargoLambda`: `cargo-lambda-cdk`'s `RustFunction` builds the gateway binary at synth time
 *   (cargo-lambda and zig on the PATH, or Docker): an arm64 release build.
 * - `placeholder`: one stand-in asset for every function, to synthesize and test the stack
 *   without building Rust. Never deploy it: every invocation fails.
 */
export type FunctionCode =
  | { readonly kind: 'prebuilt'; readonly dir?: string }
  | { readonly kind: 'cargoLambda'; readonly manifestPath?: string }
  | { readonly kind: 'placeholder' };

/**
 * The gateway's settings: the parameters of infra/template.yaml as plain values, or tokens (a
 * `CfnParameter`'s value, as `ForgebenchStack` passes them). Plain values outside their range stop
 * the synth.
 */
export interface ForgebenchGatewayProps {
  /** SHA-256 (64 lower-case hex) of the operator key; the key itself is never deployed. */
  readonly operatorKeyHash: string;
  /**
   * How the functions' code is packaged (every function runs the one gateway binary).
   * @default { kind: 'prebuilt' } with `dir` `<repository>/target/lambda-arm64`
   */
  readonly code?: FunctionCode;
  /**
   * The API definition; its integrations name the functions (`${<id>Function.Arn}`).
   * @default `infra/openapi.yaml` of the repository this package is in, or the copy packed with it
   */
  readonly openApiPath?: string;
  /**
   * Whether the state table is protected from deletion (with the stack, or by anyone). A token
   * (a `"true"`/`"false"` parameter) is passed through.
   * @default true
   */
  readonly tableDeletionProtection?: boolean | IResolvable;
  /** Days the functions' and the access log's logs are kept (a CloudWatch Logs retention value). @default 30 */
  readonly logRetentionDays?: number;
  /** Days tasks and their stored bodies are kept (table TTL, the body bucket's lifecycle rule), 1–3650. @default 365 */
  readonly taskRetentionDays?: number;
  /** Requests per second the whole API serves (the stage's throttle); past it, 429. @default 500 */
  readonly throttleRateLimit?: number;
  /** The stage's token bucket size. @default 1000 */
  readonly throttleBurstLimit?: number;
  /** Reserved concurrency of each long-poll function. @default 100 */
  readonly longPollConcurrency?: number;
  /** The most push worker invocations the queue runs at once (the event source mapping's maximum concurrency), 2–1,000. @default 50 */
  readonly pushWorkerConcurrency?: number;
  /** The base URL agent cards name and sign; empty: the API's own URL. @default '' */
  readonly publicUrl?: string;
  /** The bound on `?wait=`, 0–30. @default 30 */
  readonly maxWaitSeconds?: number;
  /** The most waiting requests and streams of one tenant at once, 1–1,000. @default 40 */
  readonly tenantMaxWaits?: number;
  /** The most agents one tenant holds that are not retired, 1–100,000. @default 1000 */
  readonly tenantMaxAgents?: number;
  /** The most push notification configs with updates to send one tenant holds, 1–1,000,000. @default 10000 */
  readonly tenantMaxConfigs?: number;
  /** The most push POSTs of one tenant in flight across every push worker, 1–1,000. @default 10 */
  readonly tenantMaxPushes?: number;
  /** Failed attempts in a row that disable a push endpoint, 1–100,000. @default 20 */
  readonly endpointDisableFailures?: number;
  /** The least time those failures span, in seconds, 0–2,592,000. @default 3600 */
  readonly endpointDisableSeconds?: number;
  /** The most DynamoDB write units one write of a message's word postings spends, 1–1,000. @default 1000 */
  readonly indexUnits?: number;
  /** The secrets key's alias. @default `alias/<stack name>-secrets` */
  readonly keyAliasName?: string;
  /**
   * The REST API's name (also the `ApiName` the 5xx alarm, the dashboard and the `metricApi*`
   * methods watch): give each gateway in one account and region its own.
   * @default `<stack name>-Api`
   */
  readonly restApiName?: string;
  /**
   * An address the alarm topic mails (it confirms the subscription first); empty: the topic has
   * no subscriber. A token (a parameter) makes the subscription conditional on it not being empty.
   * @default ''
   */
  readonly alarmEmail?: string;
  /**
   * Whether the construct makes the account's API Gateway CloudWatch Logs role and sets it
   * (`AWS::ApiGateway::Account`, one setting per account and region), which the stage's access
   * log needs; false when the account has one already. A token (a `"true"`/`"false"` parameter)
   * makes both conditional on it.
   * @default true
   */
  readonly configureApiGatewayLogging?: boolean | IResolvable;
  /**
   * Requests a minute one API key may make (counted by its Authorization header) before a WAF web
   * ACL on the stage answers 429; 0 deploys no web ACL. At least 10 when set. A token (a
   * parameter) makes the web ACL conditional on it not being '0'. The web ACL also refuses (401)
   * an Authorization header that is not exactly `Bearer <credential>`, and limits each address
   * (`addressRequestRateLimit`).
   * @default 0
   */
  readonly keyRequestRateLimit?: number | string;
  /**
   * Requests a minute one source address may make, with a key or without, before the web ACL
   * answers 429: the backstop against a flood that sends a new key with every request, or none.
   * Only with `keyRequestRateLimit` set (which deploys the web ACL). Keep it well above
   * `keyRequestRateLimit`: many keys may share one address. 10 to 2,000,000,000 (WAF's range).
   * @default 6000
   */
  readonly addressRequestRateLimit?: number;
  /** The CloudWatch namespace of the functions' business metrics (EMF). @default `Forgebench/<stack name>` */
  readonly metricsNamespace?: string;
  /**
   * The ARN of an OpenTelemetry Collector Lambda layer for arm64 in the stack's region (the AWS
   * Distro for OpenTelemetry collector layer, which sends to X-Ray, or one of your own): every
   * function runs it and exports its spans to it on localhost (OTLP/HTTP). Empty or unset: no
   * spans are exported. A token (a parameter) makes the layer conditional on it not being empty.
   * @default no layer
   */
  readonly otelCollectorLayerArn?: string;
}

const FIVE_MINUTES = Duration.minutes(5);
/** The statistic and period of the count metrics (the alarms' and the dashboard's). */
const FIVE_MINUTE_SUM = { statistic: 'Sum', period: FIVE_MINUTES } as const;
const LOG_RETENTION_DAYS = [1, 3, 5, 7, 14, 30, 60, 90, 120, 150, 180, 365, 400, 545, 731, 1096, 1827, 2192, 2557, 2922, 3288, 3653];
const DEFAULT_TIMEOUT = 29;
const DEFAULT_MEMORY = 256;
/** The cargo binary every function runs, and its directory under target/lambda-arm64. */
const GATEWAY_BINARY = 'gateway';
/** Requests a minute per source address, the web ACL's backstop (the SAM template's `AddressRequestRateLimit` default). */
const DEFAULT_ADDRESS_REQUEST_RATE_LIMIT = 6000;
/**
 * The only `Authorization` value the gateway accepts: the scheme exactly `Bearer`, one space, a
 * credential in RFC 6750's b64token grammar, nothing else. WAF's regex is PCRE's (case-sensitive;
 * its `$` also matches before a final newline, which no header value can hold).
 */
export const CANONICAL_AUTHORIZATION = '^Bearer [A-Za-z0-9._~+/-]+=*$';

/** The directory holding `infra/openapi.yaml`, found upward from this file (lib/ or dist/lib/). */
export function repositoryRoot(from: string = __dirname): string {
  for (let dir = from; ; dir = path.dirname(dir)) {
    if (fs.existsSync(path.join(dir, 'infra', 'openapi.yaml'))) return dir;
    if (path.dirname(dir) === dir) throw new Error(`no infra/openapi.yaml above ${from}; pass openApiPath and code.dir`);
  }
}

/** This package's directory (the one holding its package.json), from lib/ or dist/lib/. */
function packageDir(): string {
  for (let dir = __dirname; ; dir = path.dirname(dir)) {
    if (fs.existsSync(path.join(dir, 'package.json'))) return dir;
    if (path.dirname(dir) === dir) throw new Error(`no package.json above ${__dirname}`);
  }
}

/**
 * The API definition the construct deploys by default: `infra/openapi.yaml` of the repository
 * when this package is its `infra/cdk` (a checkout, or an install from that directory), else the
 * copy `npm pack` puts beside package.json (the `prepack` script).
 */
export function defaultOpenApiPath(): string {
  const dir = packageDir();
  const candidates = [path.join(dir, '..', 'openapi.yaml'), path.join(dir, 'openapi.yaml')];
  const found = candidates.find((c) => fs.existsSync(c));
  if (!found) throw new Error(`no API definition at ${candidates.join(' or ')}; pass openApiPath`);
  return found;
}

/**
 * The `code` an app's context asks for: `-c code=prebuilt` (the default; `-c prebuiltDir=DIR` for
 * a directory holding `gateway/bootstrap` other than `<repository>/target/lambda-arm64`),
 * `-c code=cargoLambda` or `-c code=placeholder`.
 */
export function functionCodeFromContext(scope: Construct): FunctionCode {
  const kind = (scope.node.tryGetContext('code') as string | undefined) ?? 'prebuilt';
  if (kind === 'prebuilt') return { kind, dir: scope.node.tryGetContext('prebuiltDir') as string | undefined };
  if (kind === 'cargoLambda' || kind === 'placeholder') return { kind };
  throw new Error(`context code must be prebuilt, cargoLambda or placeholder, not ${kind}`);
}

function checkRange(name: string, value: number | undefined, min: number, max: number): void {
  if (value === undefined || Token.isUnresolved(value)) return;
  if (!Number.isInteger(value) || value < min || value > max) throw new Error(`${name} must be a whole number in ${min}..${max}, not ${value}`);
}

function envString(value: number): string {
  return Token.isUnresolved(value) ? Token.asString(value) : String(value);
}

/**
 * The Forgebench A2A gateway: the REST API of infra/openapi.yaml, one arm64 Lambda function per
 * route with its own least-privilege role, the push worker on its queue with a dead-letter queue
 * and an alarm, the scheduled sweeper (all of them the one gateway binary, told apart by
 * `FORGEBENCH_ROUTE`), the state table, the body bucket and the secrets key, the alarms and the
 * dashboard; the same system as infra/template.yaml.
 *
 * A stack that embeds it reaches its resources as L2 constructs (`table`, `pushQueue`, `api`,
 * `functions.OpenTask`, ...) and has `grant*` methods for its own principals and `metric*`
 * methods for its own alarms and dashboards.
 */
export class ForgebenchGateway extends Construct {
  /** The state table: tasks, their calls and audit entries, agents, keys, tenants (one table). */
  readonly table: dynamodb.Table;
  /** The push deliveries' queue, which the push worker consumes. */
  readonly pushQueue: sqs.Queue;
  /** Where a push delivery lands that the worker could not handle in 10 receives. */
  readonly pushDeadLetterQueue: sqs.Queue;
  /** Seals push endpoint secrets and signing-key seeds, and encrypts the body bucket. */
  readonly secretsKey: kms.Key;
  /** Message and artifact bodies too large for a task item, under `tasks/`; kept when the stack goes (Retain). */
  readonly bodyBucket: s3.Bucket;
  /** The REST API (infra/openapi.yaml); its one stage is `api.deploymentStage` (`prod`). */
  readonly api: apigateway.SpecRestApi;
  /** The REST API's name: the `ApiName` dimension of its metrics. */
  readonly restApiName: string;
  /** Every function by its `id` in FUNCTIONS (`OpenTask`, `PushWorker`, ...). */
  readonly functions: Readonly<Record<string, lambda.Function>>;
  /** Every function's log group (`/aws/lambda/<function name>`), by the function's `id`. */
  readonly functionLogGroups: Readonly<Record<string, logs.LogGroup>>;
  /** The alarm on the dead-letter queue (also `alarms.PushDeadLetterAlarm`). */
  readonly pushDeadLetterAlarm: cloudwatch.Alarm;
  /** The topic every alarm notifies: subscribe to it, or add it as an action of your own alarms. */
  readonly alarmTopic: sns.Topic;
  /** The alarm topic's key: its policy lets CloudWatch alarms of this account publish to it. */
  readonly alarmTopicKey: kms.Key;
  /** Every alarm, by its SAM logical id (`Api5xxAlarm`, `PushDeadLetterAlarm`, ...). */
  readonly alarms: Readonly<Record<string, cloudwatch.IAlarm>>;
  readonly dashboard: cloudwatch.CfnDashboard;
  /** The dashboard's name (`<stack name>-gateway`). */
  readonly dashboardName: string;
  /** The stage's access log (one JSON line per request: no body, header or key). */
  readonly accessLogGroup: logs.LogGroup;
  /** The CloudWatch namespace of the functions' business metrics (see `metric`). */
  readonly metricsNamespace: string;
  /** The X-Ray write policy every function's role has (SAM's name for it in the partition). */
  readonly xrayWritePolicy: iam.IManagedPolicy;
  /** The API's base URL (`https://{id}.execute-api.{region}.{suffix}/prod`). */
  readonly url: string;

  constructor(scope: Construct, id: string, props: ForgebenchGatewayProps) {
    super(scope, id);
    const logRetentionDays = props.logRetentionDays ?? 30;
    const taskRetentionDays = props.taskRetentionDays ?? 365;
    const maxWaitSeconds = props.maxWaitSeconds ?? 30;
    const tenantMaxWaits = props.tenantMaxWaits ?? 40;
    checkRange('tenantMaxWaits', tenantMaxWaits, 1, 1000);
    const tenantMaxAgents = props.tenantMaxAgents ?? 1000;
    checkRange('tenantMaxAgents', tenantMaxAgents, 1, 100000);
    const tenantMaxConfigs = props.tenantMaxConfigs ?? 10000;
    checkRange('tenantMaxConfigs', tenantMaxConfigs, 1, 1000000);
    const tenantMaxPushes = props.tenantMaxPushes ?? 10;
    checkRange('tenantMaxPushes', tenantMaxPushes, 1, 1000);
    const endpointDisableFailures = props.endpointDisableFailures ?? 20;
    checkRange('endpointDisableFailures', endpointDisableFailures, 1, 100000);
    const endpointDisableSeconds = props.endpointDisableSeconds ?? 3600;
    checkRange('endpointDisableSeconds', endpointDisableSeconds, 0, 2592000);
    const indexUnits = props.indexUnits ?? 1000;
    checkRange('indexUnits', indexUnits, 1, 1000);
    checkRange('taskRetentionDays', taskRetentionDays, 1, 3650);
    checkRange('maxWaitSeconds', maxWaitSeconds, 0, 30);
    checkRange('longPollConcurrency', props.longPollConcurrency, 1, 1000000);
    checkRange('pushWorkerConcurrency', props.pushWorkerConcurrency, 2, 1000);
    checkRange('throttleRateLimit', props.throttleRateLimit, 1, 1000000);
    checkRange('throttleBurstLimit', props.throttleBurstLimit, 1, 1000000);
    if (!Token.isUnresolved(logRetentionDays) && !LOG_RETENTION_DAYS.includes(logRetentionDays)) {
      throw new Error(`logRetentionDays must be one of ${LOG_RETENTION_DAYS.join(', ')}, not ${logRetentionDays}`);
    }
    if (!Token.isUnresolved(props.operatorKeyHash) && !/^[0-9a-f]{64}$/.test(props.operatorKeyHash)) {
      throw new Error('operatorKeyHash must be the SHA-256 of the operator key in 64 lower-case hex digits');
    }
    const alarmEmail = props.alarmEmail ?? '';
    if (!Token.isUnresolved(alarmEmail) && !/^([^@\s]+@[^@\s]+)?$/.test(alarmEmail)) {
      throw new Error(`alarmEmail must be an email address or empty, not ${alarmEmail}`);
    }
    this.metricsNamespace = props.metricsNamespace ?? Fn.sub('Forgebench/${AWS::StackName}');

    // The state table, as infra/template.yaml defines it (lib/table.ts).
    // Deleted with the stack unless deletion protection (on by default) stops it: the SAM stack's
    // table declares no DeletionPolicy, whose default is Delete (the L2's would be Retain).
    this.table = new dynamodb.Table(this, 'Table', { ...TABLE, removalPolicy: RemovalPolicy.DESTROY });
    for (const gsi of TABLE_INDEXES) this.table.addGlobalSecondaryIndex(gsi);
    const cfnTable = this.table.node.defaultChild as dynamodb.CfnTable;
    // Typed `boolean` on the L2; a parameter's token goes on the resource as it is.
    cfnTable.deletionProtectionEnabled = props.tableDeletionProtection ?? true;
    // The template's order (the L2 lists them in the order its keys name them): sorted in place,
    // so an index added later still reaches the resource.
    (cfnTable.attributeDefinitions as dynamodb.CfnTable.AttributeDefinitionProperty[]).sort(
      (a, b) => TABLE_ATTRIBUTES.indexOf(a.attributeName) - TABLE_ATTRIBUTES.indexOf(b.attributeName),
    );
    keepLogicalId(this.table);

    this.pushDeadLetterQueue = new sqs.Queue(this, 'PushDeadLetterQueue', {
      retentionPeriod: Duration.seconds(1209600),
      encryption: sqs.QueueEncryption.SQS_MANAGED,
      // As the SAM stack's queues (no DeletionPolicy: CloudFormation's default, Delete).
      removalPolicy: RemovalPolicy.DESTROY,
    });
    // The worker's timeout is 30 s; the visibility timeout is 6x that, as the event source
    // mapping wants; maxReceiveCount is above the 6 scheduled attempts.
    this.pushQueue = new sqs.Queue(this, 'PushQueue', {
      visibilityTimeout: Duration.seconds(180),
      retentionPeriod: Duration.seconds(345600),
      encryption: sqs.QueueEncryption.SQS_MANAGED,
      deadLetterQueue: { queue: this.pushDeadLetterQueue, maxReceiveCount: 10 },
      removalPolicy: RemovalPolicy.DESTROY,
    });
    keepLogicalId(this.pushDeadLetterQueue);
    keepLogicalId(this.pushQueue);

    // TLS-only, like the body bucket (cdk-nag AwsSolutions-SQS4). Every client already uses HTTPS:
    // the functions' SDK clients and Lambda's event source mapping. One policy for both queues.
    const queuesTlsOnly = new sqs.QueuePolicy(this, 'PushQueuesTlsOnly', { queues: [this.pushQueue, this.pushDeadLetterQueue] });
    queuesTlsOnly.document.addStatements(
      new iam.PolicyStatement({
        sid: 'TlsOnly',
        effect: iam.Effect.DENY,
        principals: [new iam.StarPrincipal()],
        actions: ['sqs:*'],
        resources: [this.pushQueue.queueArn, this.pushDeadLetterQueue.queueArn],
        conditions: { Bool: { 'aws:SecureTransport': 'false' } },
      }),
    );
    keepLogicalId(queuesTlsOnly);

    this.secretsKey = new kms.Key(this, 'SecretsKey', {
      description: 'Forgebench gateway - seals push endpoint secrets',
      enableKeyRotation: true,
      // Deleted (scheduled for deletion) with the stack, as the SAM stack's key, which declares no
      // DeletionPolicy; the L2's default would be Retain.
      removalPolicy: RemovalPolicy.DESTROY,
      policy: new iam.PolicyDocument({
        statements: [
          new iam.PolicyStatement({
            sid: 'AccountAdministers',
            effect: iam.Effect.ALLOW,
            principals: [new iam.ArnPrincipal(Fn.sub('arn:${AWS::Partition}:iam::${AWS::AccountId}:root'))],
            actions: ['kms:*'],
            resources: ['*'],
          }),
        ],
      }),
    });
    keepLogicalId(this.secretsKey);
    // L1: kms.Alias targets the key by its ARN, the SAM template (and this resource) by its id.
    new kms.CfnAlias(this, 'SecretsKeyAlias', {
      aliasName: props.keyAliasName ?? Fn.sub('alias/${AWS::StackName}-secrets'),
      targetKeyId: this.secretsKey.keyId,
    });

    this.bodyBucket = new s3.Bucket(this, 'BodyBucket', {
      encryption: s3.BucketEncryption.KMS,
      encryptionKey: this.secretsKey,
      bucketKeyEnabled: true,
      blockPublicAccess: s3.BlockPublicAccess.BLOCK_ALL,
      objectOwnership: s3.ObjectOwnership.BUCKET_OWNER_ENFORCED,
      lifecycleRules: [
        {
          id: 'expire-task-bodies',
          enabled: true,
          prefix: 'tasks/',
          expiration: Duration.days(taskRetentionDays),
          abortIncompleteMultipartUploadAfter: Duration.days(1),
        },
      ],
      // The bodies are the tasks' data: kept when the stack goes, like the SAM stack's.
      removalPolicy: RemovalPolicy.RETAIN,
    });
    keepLogicalId(this.bodyBucket);
    // TLS-only (the SAM template's statement, with its Sid; `enforceSSL` would write its own).
    this.bodyBucket.addToResourcePolicy(
      new iam.PolicyStatement({
        sid: 'TlsOnly',
        effect: iam.Effect.DENY,
        principals: [new iam.StarPrincipal()],
        actions: ['s3:*'],
        resources: [this.bodyBucket.bucketArn, this.bodyBucket.arnForObjects('*')],
        conditions: { Bool: { 'aws:SecureTransport': 'false' } },
      }),
    );
    keepLogicalId(this.bodyBucket.policy!, { parent: this, id: 'BodyBucketPolicy' });

    const envValues: Record<EnvValue, string> = {
      queueUrl: this.pushQueue.queueUrl,
      bucketName: this.bodyBucket.bucketName,
      keyId: this.secretsKey.keyId,
      operatorKeyHash: props.operatorKeyHash,
      publicUrl: props.publicUrl ?? '',
    };
    const resources: Record<string, string> = {
      table: this.table.tableArn,
      indexes: `${this.table.tableArn}/index/*`,
      bodies: this.bodyBucket.arnForObjects('tasks/*'),
      queue: this.pushQueue.queueArn,
      key: this.secretsKey.keyArn,
    };
    const resourceArn = (kind: ResourceKind): string =>
      kind.startsWith('index/') ? `${this.table.tableArn}/${kind}` : resources[kind]!;

    // The one binary is packaged once. Prebuilt and placeholder: one asset (one lambda.Code),
    // shared by every function: staged and uploaded once. cargoLambda: RustFunction makes its own
    // code, and cargo-lambda-cdk exports no other way to build it (its Bundling is internal), so
    // every function gets the same build props (the one rustBuild object): their bundling options
    // are identical, so CDK's asset cache (keyed on the source and the bundling options) runs the
    // build once, and every function's asset is that one output (one hash, one upload).
    const code = props.code ?? { kind: 'prebuilt' };
    let sharedCode: lambda.Code | undefined;
    let rustBuild: RustBuild | undefined;
    if (code.kind === 'prebuilt') {
      const dir = path.join(code.dir ?? path.join(repositoryRoot(), 'target', 'lambda-arm64'), GATEWAY_BINARY);
      if (!fs.existsSync(path.join(dir, 'bootstrap'))) {
        throw new Error(
          `ForgebenchGateway: no prebuilt gateway binary: ${path.join(dir, 'bootstrap')} is missing. ` +
            `Build it first: cargo lambda build --release --arm64 --locked --lambda-dir target/lambda-arm64 --bin ${GATEWAY_BINARY} ` +
            '(scripts/check-deploy.sh does), or use code { kind: "cargoLambda" } (cdk synth -c code=cargoLambda) to build at synth time.',
        );
      }
      sharedCode = lambda.Code.fromAsset(dir);
    } else if (code.kind === 'placeholder') {
      sharedCode = placeholderCode();
    } else {
      rustBuild = {
        runtime: 'provided.al2023',
        manifestPath: code.manifestPath ?? path.join(repositoryRoot(), 'Cargo.toml'),
        binaryName: GATEWAY_BINARY,
        bundling: { architecture: lambda.Architecture.ARM_64, cargoLambdaFlags: ['--locked'] },
      };
    }

    // Every function is traced (X-Ray, Tracing: Active); SAM's transform then attaches the X-Ray
    // write policy to each function's role under its name in that partition: AWSXrayWriteOnlyAccess
    // in aws, AWSXRayDaemonWriteAccess elsewhere (aws-cn, aws-us-gov), the same actions.
    const standardPartition = new CfnCondition(this, 'StandardPartition', { expression: Fn.conditionEquals(Aws.PARTITION, 'aws') });
    const xrayPolicy = (this.xrayWritePolicy = iam.ManagedPolicy.fromManagedPolicyArn(
      this,
      'XRayWritePolicy',
      Fn.conditionIf(
        standardPartition.logicalId,
        Fn.sub('arn:${AWS::Partition}:iam::aws:policy/AWSXrayWriteOnlyAccess'),
        Fn.sub('arn:${AWS::Partition}:iam::aws:policy/AWSXRayDaemonWriteAccess'),
      ).toString(),
    ));
    const spans = spanExport(this, props.otelCollectorLayerArn);

    const functions: Record<string, lambda.Function> = {};
    const functionLogGroups: Record<string, logs.LogGroup> = {};
    for (const spec of FUNCTIONS) {
      ({ fn: functions[spec.id], logGroup: functionLogGroups[spec.id] } = this.makeFunction(spec, {
        sharedCode,
        rustBuild,
        envValues,
        resourceArn,
        maxWaitSeconds,
        tenantMaxWaits,
        tenantMaxAgents,
        tenantMaxConfigs,
        tenantMaxPushes,
        endpointDisableFailures,
        endpointDisableSeconds,
        indexUnits,
        taskRetentionDays,
        logRetentionDays,
        longPollConcurrency: props.longPollConcurrency ?? 100,
        pushWorkerConcurrency: props.pushWorkerConcurrency ?? 50,
        metricsNamespace: this.metricsNamespace,
        xrayPolicy,
        spans,
      }));
    }
    this.functions = functions;
    this.functionLogGroups = functionLogGroups;

    // The API: infra/openapi.yaml with each integration's function ARN substituted.
    const openApiPath = props.openApiPath ?? defaultOpenApiPath();
    const definition = yaml.load(fs.readFileSync(openApiPath, 'utf8')) as OpenApi;
    const named = bindIntegrations(definition, functions);
    for (const spec of FUNCTIONS) {
      if (!spec.trigger && !named.has(spec.id)) throw new Error(`ForgebenchGateway: ${spec.id} has no trigger and no route in ${openApiPath}`);
    }
    const apiName = (this.restApiName = props.restApiName ?? Fn.sub('${AWS::StackName}-Api'));

    // The stage's access log, and the account setting it needs: API Gateway writes access logs
    // only once the account (per region) names a CloudWatch Logs role.
    this.accessLogGroup = new logs.LogGroup(this, 'ApiAccessLogGroup', {
      retention: logRetentionDays as logs.RetentionDays,
      removalPolicy: RemovalPolicy.DESTROY,
    });
    keepLogicalId(this.accessLogGroup);
    const configureLogging = props.configureApiGatewayLogging ?? true;
    const loggingCondition = Token.isUnresolved(configureLogging)
      ? new CfnCondition(this, 'ConfiguresApiGatewayLogging', { expression: Fn.conditionEquals(configureLogging, 'true') })
      : undefined;
    const loggingReady = new CfnWaitConditionHandle(this, 'ApiGatewayLoggingReady');
    if (loggingCondition || configureLogging === true) {
      const loggingRole = new iam.CfnRole(this, 'ApiGatewayLoggingRole', {
        assumeRolePolicyDocument: {
          Version: '2012-10-17',
          Statement: [{ Effect: 'Allow', Principal: { Service: 'apigateway.amazonaws.com' }, Action: 'sts:AssumeRole' }],
        },
        managedPolicyArns: [Fn.sub('arn:${AWS::Partition}:iam::aws:policy/service-role/AmazonAPIGatewayPushToCloudWatchLogs')],
      });
      const account = new apigateway.CfnAccount(this, 'ApiGatewayAccount', { cloudWatchRoleArn: loggingRole.attrArn });
      loggingRole.cfnOptions.condition = loggingCondition;
      account.cfnOptions.condition = loggingCondition;
      // Ordering only: the API waits for the account setting when this construct makes it.
      loggingReady.addMetadata('Account', loggingCondition ? Fn.conditionIf(loggingCondition.logicalId, account.ref, '') : account.ref);
    } else {
      loggingReady.addMetadata('Account', '');
    }

    this.api = new apigateway.SpecRestApi(this, 'Api', {
      apiDefinition: apigateway.ApiDefinition.fromInline(definition),
      restApiName: apiName,
      endpointTypes: [apigateway.EndpointType.REGIONAL],
      // As SAM's import of a REGIONAL definition body.
      parameters: { endpointConfigurationTypes: 'REGIONAL' },
      cloudWatchRole: false,
      deployOptions: {
        stageName: 'prod',
        // Execution logging stays off (nag.ts, APIG6); the access log records every request.
        loggingLevel: apigateway.MethodLoggingLevel.OFF,
        metricsEnabled: true,
        tracingEnabled: true,
        throttlingRateLimit: props.throttleRateLimit ?? 500,
        throttlingBurstLimit: props.throttleBurstLimit ?? 1000,
        // One JSON line per request: no body, no header, no key. API Gateway knows no principal
        // (the functions authenticate), so the principal is on the function's `request served`
        // line, joined by request_id (docs/operations.md).
        accessLogDestination: new apigateway.LogGroupLogDestination(this.accessLogGroup),
        accessLogFormat: apigateway.AccessLogFormat.custom(ACCESS_LOG_FORMAT),
      },
    });
    (this.api.node.defaultChild as apigateway.CfnRestApi).addResourceDependency(loggingReady);
    for (const fnId of named) {
      new lambda.CfnPermission(this, `${fnId}Permission`, {
        action: 'lambda:InvokeFunction',
        functionName: functions[fnId]!.functionName,
        principal: 'apigateway.amazonaws.com',
        sourceArn: Fn.sub('arn:${AWS::Partition}:execute-api:${AWS::Region}:${AWS::AccountId}:${Api}/*', { Api: this.api.restApiId }),
      });
    }
    this.url = Fn.sub('https://${Api}.execute-api.${AWS::Region}.${AWS::URLSuffix}/prod', { Api: this.api.restApiId });
    this.limitKeyRequestRates(props.keyRequestRateLimit ?? 0, props.addressRequestRateLimit ?? DEFAULT_ADDRESS_REQUEST_RATE_LIMIT);

    // Operations (docs/operations.md): the topic every alarm notifies, the alarms, a dashboard.
    // The topic's own key: CloudWatch alarms cannot publish to a topic encrypted with SNS's AWS
    // managed key (alias/aws/sns), whose policy cannot let CloudWatch use it.
    this.alarmTopicKey = new kms.Key(this, 'AlarmTopicKey', {
      description: 'Forgebench gateway - encrypts the alarm topic',
      enableKeyRotation: true,
      removalPolicy: RemovalPolicy.DESTROY,
      policy: new iam.PolicyDocument({
        statements: [
          new iam.PolicyStatement({
            sid: 'AccountAdministers',
            effect: iam.Effect.ALLOW,
            principals: [new iam.ArnPrincipal(Fn.sub('arn:${AWS::Partition}:iam::${AWS::AccountId}:root'))],
            actions: ['kms:*'],
            resources: ['*'],
          }),
          new iam.PolicyStatement({
            sid: 'AlarmsPublishEncrypted',
            effect: iam.Effect.ALLOW,
            principals: [new iam.ServicePrincipal('cloudwatch.amazonaws.com')],
            actions: ['kms:Decrypt', 'kms:GenerateDataKey*'],
            resources: ['*'],
            conditions: { StringEquals: { 'aws:SourceAccount': Aws.ACCOUNT_ID } },
          }),
        ],
      }),
    });
    keepLogicalId(this.alarmTopicKey);
    this.alarmTopic = new sns.Topic(this, 'AlarmTopic');
    // The key by its id, as the template names it (the L2's `masterKey` would write its ARN).
    (this.alarmTopic.node.defaultChild as sns.CfnTopic).kmsMasterKeyId = this.alarmTopicKey.keyId;
    keepLogicalId(this.alarmTopic);
    this.alarmTopic.addToResourcePolicy(
      new iam.PolicyStatement({
        sid: 'AlarmsPublish',
        effect: iam.Effect.ALLOW,
        principals: [new iam.ServicePrincipal('cloudwatch.amazonaws.com')],
        actions: ['sns:Publish'],
        resources: [this.alarmTopic.topicArn],
        conditions: { StringEquals: { 'aws:SourceAccount': Aws.ACCOUNT_ID } },
      }),
    );
    keepLogicalId(this.alarmTopic.node.findChild('Policy'), { parent: this, id: 'AlarmTopicPolicy' });
    if (Token.isUnresolved(alarmEmail) || alarmEmail !== '') {
      const subscription = new sns.Subscription(this, 'AlarmEmailSubscription', {
        topic: this.alarmTopic,
        protocol: sns.SubscriptionProtocol.EMAIL,
        endpoint: alarmEmail,
      });
      keepLogicalId(subscription);
      if (Token.isUnresolved(alarmEmail)) {
        (subscription.node.defaultChild as sns.CfnSubscription).cfnOptions.condition = new CfnCondition(this, 'HasAlarmEmail', {
          expression: Fn.conditionNot(Fn.conditionEquals(alarmEmail, '')),
        });
      }
    }
    const alarms: Record<string, cloudwatch.IAlarm> = {};
    // The metric-math alarms stay L1: the L2 Alarm names its expression `expr_1`, where the
    // template's names it (`rate`, `failures`, `throttles`). Each has an IAlarm handle.
    const alarm = (name: string, alarmProps: Omit<cloudwatch.CfnAlarmProps, 'alarmActions' | 'treatMissingData' | 'comparisonOperator'>) => {
      const resource = new cloudwatch.CfnAlarm(this, name, {
        ...alarmProps,
        alarmActions: [this.alarmTopic.topicArn],
        comparisonOperator: 'GreaterThanThreshold',
        treatMissingData: 'notBreaching',
      });
      alarms[name] = cloudwatch.Alarm.fromAlarmArn(this, `${name}Handle`, resource.attrArn);
    };
    // An alarm on one metric (the construct's own metric* methods) above its threshold, to the topic.
    const metricAlarm = (name: string, metric: cloudwatch.IMetric, alarmProps: Pick<cloudwatch.AlarmProps, 'alarmDescription' | 'evaluationPeriods' | 'datapointsToAlarm' | 'threshold'>) => {
      const created = new cloudwatch.Alarm(this, name, {
        ...alarmProps,
        metric,
        comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
        treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
      });
      created.addAlarmAction(new cloudwatchActions.SnsAction(this.alarmTopic));
      keepLogicalId(created);
      alarms[name] = created;
      return created;
    };
    const stat = (id: string, namespace: string, metricName: string, dimensions: Record<string, string>, s = 'Sum') => ({
      id,
      returnData: false,
      metricStat: {
        metric: { namespace, metricName, dimensions: Object.entries(dimensions).map(([name, value]) => ({ name, value })) },
        period: 300,
        stat: s,
      },
    });
    const lambdaStat = (id: string, metricName: string, fnId: string) =>
      stat(id, 'AWS/Lambda', metricName, { FunctionName: functions[fnId]!.functionName });

    alarm('Api5xxAlarm', {
      alarmDescription:
        "More than 1 % of the API's requests answered 5xx over 10 minutes (a function failing, " +
        'timing out or throttled, or a backing service unavailable).\n',
      metrics: [
        stat('errors', 'AWS/ApiGateway', '5XXError', { ApiName: apiName, Stage: 'prod' }),
        stat('requests', 'AWS/ApiGateway', 'Count', { ApiName: apiName, Stage: 'prod' }),
        { id: 'rate', label: '5xx share of requests', expression: 'IF(requests > 20, errors / requests, 0)', returnData: true },
      ],
      evaluationPeriods: 2,
      threshold: 0.01,
    });
    alarm('EventFunctionErrorsAlarm', {
      alarmDescription:
        "The push worker or the sweeper failed an invocation (the API's functions show as 5xx in Api5xxAlarm).\n",
      metrics: [
        lambdaStat('worker', 'Errors', 'PushWorker'),
        lambdaStat('sweeper', 'Errors', 'SweepDeadlines'),
        { id: 'failures', expression: 'worker + sweeper', label: 'Invocation errors', returnData: true },
      ],
      evaluationPeriods: 1,
      threshold: 0,
    });
    alarm('LongPollThrottlesAlarm', {
      alarmDescription:
        'A function with reserved concurrency or the push worker was throttled: waiting requests ' +
        'or deliveries were turned away (raise LongPollConcurrency, or look for a runaway agent).\n',
      metrics: [
        lambdaStat('open', 'Throttles', 'OpenTask'),
        lambdaStat('read', 'Throttles', 'GetTask'),
        lambdaStat('claim', 'Throttles', 'ClaimNextTask'),
        lambdaStat('worker', 'Throttles', 'PushWorker'),
        { id: 'throttles', expression: 'open + read + claim + worker', label: 'Throttled invocations', returnData: true },
      ],
      evaluationPeriods: 1,
      threshold: 0,
    });
    alarm('StreamThrottlesAlarm', {
      alarmDescription:
        'A streaming or A2A waiting function was throttled: event streams, A2A streams or ' +
        'blocking SendMessage calls were turned away (raise LongPollConcurrency, or look for a ' +
        'runaway agent).\n',
      metrics: [
        lambdaStat('events', 'Throttles', 'TaskEvents'),
        lambdaStat('send', 'Throttles', 'A2aSendMessage'),
        lambdaStat('stream', 'Throttles', 'A2aStreamMessage'),
        lambdaStat('jsonrpc', 'Throttles', 'A2aJsonRpc'),
        lambdaStat('subscribe', 'Throttles', 'A2aGetTask'),
        lambdaStat('action', 'Throttles', 'A2aTaskAction'),
        { id: 'throttles', expression: 'events + send + stream + jsonrpc + subscribe + action', label: 'Throttled invocations', returnData: true },
      ],
      evaluationPeriods: 1,
      threshold: 0,
    });
    metricAlarm('PushQueueAgeAlarm', this.metricPushQueueAge(), {
      alarmDescription:
        'The oldest push message waited over 5 minutes: the worker is failing, throttled, or ' +
        'slower than the tasks arriving.\n',
      evaluationPeriods: 2,
      threshold: 300,
    });
    metricAlarm('SweepSkippedAlarm', this.metric('SweepSkipped'), {
      alarmDescription:
        'Sweeps left items for later three runs in a row (the store or the queue failing for ' +
        'the sweeper): overdue tasks are not failed, lost enqueues not redone, word indexes behind.\n',
      evaluationPeriods: 3,
      datapointsToAlarm: 3,
      threshold: 0,
    });
    metricAlarm('ItemsSkippedAlarm', this.metric('ItemsSkipped'), {
      alarmDescription:
        'A page left out a stored item it could not decode (the rest of the page was served): ' +
        'a bug to fix, never a normal condition. The gateway\'s log line "an item of a page could ' +
        'not be decoded" names the item\'s key and the cause.\n',
      evaluationPeriods: 1,
      threshold: 0,
    });

    this.dashboardName = Fn.sub('${AWS::StackName}-gateway');
    this.dashboard = new cloudwatch.CfnDashboard(this, 'Dashboard', {
      dashboardName: this.dashboardName,
      dashboardBody: Fn.sub(DASHBOARD_BODY, {
        Namespace: this.metricsNamespace,
        ApiName: apiName,
        PushQueueName: this.pushQueue.queueName,
        DeadLetterQueueName: this.pushDeadLetterQueue.queueName,
      }),
    });

    this.pushDeadLetterAlarm = metricAlarm('PushDeadLetterAlarm', this.metricDeadLetters(), {
      alarmDescription: 'Push deliveries the worker could not handle reached the dead-letter queue.',
      evaluationPeriods: 1,
      threshold: 0,
    });
    this.alarms = alarms;

    acknowledgeNagFindings(this);
  }

  // For the stacks that embed the gateway: grants to their own principals, metrics for their own
  // alarms and dashboards. Each is made of the construct's resources (the grants name their ARNs,
  // the metrics their names), never of names typed again.

  /**
   * Lets `grantee` read the ledger: the state table and its indexes (`dynamodb.Table.grantReadData`:
   * GetItem, BatchGetItem, Query, Scan, ConditionCheckItem, DescribeTable, and GetRecords and
   * GetShardIterator, which need a stream the table does not have), never write. The table holds
   * every tenant's items: a grant for the operator's own auditors and reporting jobs, not for a
   * tenant. The table is encrypted with DynamoDB's AWS-managed key, so no key grant is needed.
   * Acknowledges, on the grantee, the cdk-nag finding (AwsSolutions-IAM5) of `<table>/index/*`.
   */
  grantReadLedger(grantee: iam.IGrantable): iam.Grant {
    const grant = this.table.grantReadData(grantee);
    acknowledgeGrantFinding(this, grantee, 'indexes');
    return grant;
  }

  /**
   * Lets `grantee` read the stored message and artifact bodies: `s3:GetObject` on the body
   * bucket's `tasks/*`, and `kms:Decrypt` on the secrets key only through S3 in this region
   * (`kms:ViaService`), so not the endpoint secrets and signing-key seeds the key also seals. For
   * a principal of this account: the key's policy leaves its use to the account's IAM policies.
   * Acknowledges, on the grantee, the cdk-nag finding (AwsSolutions-IAM5) of `<bucket>/tasks/*`.
   */
  grantReadBodies(grantee: iam.IGrantable): iam.Grant {
    const objects = iam.Grant.addToPrincipal({
      grantee,
      actions: ['s3:GetObject'],
      resourceArns: [this.bodyBucket.arnForObjects('tasks/*')],
    });
    const key = iam.Grant.addToPrincipal({
      grantee,
      actions: ['kms:Decrypt'],
      resourceArns: [this.secretsKey.keyArn],
      conditions: { StringEquals: { 'kms:ViaService': Fn.sub('s3.${AWS::Region}.amazonaws.com') } },
    });
    acknowledgeGrantFinding(this, grantee, 'bodies');
    return objects.combine(key);
  }

  /**
   * A business metric the functions write (Embedded Metric Format lines, shared/src/metrics.rs)
   * in `metricsNamespace`: `TasksOpened` (dimension `Delivery`), `TasksClaimed`, `TasksAnswered`
   * (`State`, `Delivery`), `TasksExpired`, `SweepSkipped`, `Refusals` (`Reason`),
   * `PushAttemptLatency` (`Outcome`, milliseconds), `PushFailures`, `ItemsSkipped`, `LongPollWait`
   * (`Route`, seconds). A metric with dimensions is published only with them: pass
   * `dimensionsMap` for those.
   * @default statistic Sum, period 5 minutes
   */
  metric(metricName: string, props?: cloudwatch.MetricOptions): cloudwatch.Metric {
    return new cloudwatch.Metric({ namespace: this.metricsNamespace, metricName, ...FIVE_MINUTE_SUM, ...props });
  }

  /**
   * The API's requests (`AWS/ApiGateway` `Count`, by `ApiName` and `Stage`: the stage's own
   * metric, its `Stage` a reference to the `prod` stage, as for every `metricApi*`).
   * @default statistic Sum, period 5 minutes
   */
  metricApiRequests(props?: cloudwatch.MetricOptions): cloudwatch.Metric {
    return this.api.deploymentStage.metricCount({ ...FIVE_MINUTE_SUM, ...props });
  }

  /** The API's 4xx answers (`AWS/ApiGateway` `4XXError` of the `prod` stage). @default statistic Sum, period 5 minutes */
  metricApi4xx(props?: cloudwatch.MetricOptions): cloudwatch.Metric {
    return this.api.deploymentStage.metricClientError({ ...FIVE_MINUTE_SUM, ...props });
  }

  /**
   * The API's 5xx answers (`AWS/ApiGateway` `5XXError` of the `prod` stage): a function failing,
   * timing out or throttled, or a backing service unavailable. The construct's own `Api5xxAlarm`
   * watches their share of requests.
   * @default statistic Sum, period 5 minutes
   */
  metricApi5xx(props?: cloudwatch.MetricOptions): cloudwatch.Metric {
    return this.api.deploymentStage.metricServerError({ ...FIVE_MINUTE_SUM, ...props });
  }

  /**
   * The API's latency, request to response as API Gateway measures it (`AWS/ApiGateway`
   * `Latency` of the `prod` stage, milliseconds). Long polls (`?wait=`) and streams count the time
   * they wait, so a high percentile can be waiting rather than slowness.
   * @default statistic p99, period 5 minutes
   */
  metricApiLatency(props?: cloudwatch.MetricOptions): cloudwatch.Metric {
    return this.api.deploymentStage.metricLatency({ statistic: 'p99', period: FIVE_MINUTES, ...props });
  }

  /**
   * How long the oldest push delivery has waited on the push queue (`AWS/SQS`
   * `ApproximateAgeOfOldestMessage`, seconds), which `PushQueueAgeAlarm` watches.
   * @default statistic Maximum, period 5 minutes
   */
  metricPushQueueAge(props?: cloudwatch.MetricOptions): cloudwatch.Metric {
    return this.pushQueue.metricApproximateAgeOfOldestMessage({ statistic: 'Maximum', period: FIVE_MINUTES, ...props });
  }

  /**
   * Push deliveries waiting on the dead-letter queue (`AWS/SQS`
   * `ApproximateNumberOfMessagesVisible`), which `PushDeadLetterAlarm` watches.
   * @default statistic Maximum, period 5 minutes
   */
  metricDeadLetters(props?: cloudwatch.MetricOptions): cloudwatch.Metric {
    return this.pushDeadLetterQueue.metricApproximateNumberOfMessagesVisible({ statistic: 'Maximum', period: FIVE_MINUTES, ...props });
  }

  /**
   * A function's failed invocations (`AWS/Lambda` `Errors` by `FunctionName`), the function named
   * by its id in FUNCTIONS (`OpenTask`) or its route (`open-task`). Without one, the sum over
   * every function: a math expression of one metric per function, for dashboards (a CloudWatch
   * alarm takes at most 10 metrics; alarm on one function's).
   * @default statistic Sum, period 5 minutes
   */
  metricFunctionErrors(functionId: string, props?: cloudwatch.MetricOptions): cloudwatch.Metric;
  metricFunctionErrors(): cloudwatch.MathExpression;
  metricFunctionErrors(functionId?: string, props?: cloudwatch.MetricOptions): cloudwatch.IMetric {
    if (functionId === undefined) return this.sumOverFunctions('errors', (fn) => fn.metricErrors(FIVE_MINUTE_SUM), 'Errors, every function');
    return this.functionOf(functionId).metricErrors({ ...FIVE_MINUTE_SUM, ...props });
  }

  /**
   * A function's throttled invocations (`AWS/Lambda` `Throttles` by `FunctionName`): for a
   * long-poll function, requests turned away at its reserved concurrency. Without a function, the
   * sum over every function (for dashboards, as `metricFunctionErrors`).
   * @default statistic Sum, period 5 minutes
   */
  metricFunctionThrottles(functionId: string, props?: cloudwatch.MetricOptions): cloudwatch.Metric;
  metricFunctionThrottles(): cloudwatch.MathExpression;
  metricFunctionThrottles(functionId?: string, props?: cloudwatch.MetricOptions): cloudwatch.IMetric {
    if (functionId === undefined) return this.sumOverFunctions('throttles', (fn) => fn.metricThrottles(FIVE_MINUTE_SUM), 'Throttles, every function');
    return this.functionOf(functionId).metricThrottles({ ...FIVE_MINUTE_SUM, ...props });
  }

  /** The function with this id in FUNCTIONS (`OpenTask`) or this route (`open-task`). */
  functionOf(idOrRoute: string): lambda.Function {
    const spec = FUNCTIONS.find((f) => f.id === idOrRoute || f.route === idOrRoute);
    if (!spec) throw new Error(`ForgebenchGateway: no function ${idOrRoute}; one of ${FUNCTIONS.map((f) => f.id).join(', ')}`);
    return this.functions[spec.id]!;
  }

  /** SUM over one metric per function, each named `<prefix><function id>` (ids unique in a graph beside another such sum). */
  private sumOverFunctions(prefix: string, metricOf: (fn: lambda.Function) => cloudwatch.Metric, label: string): cloudwatch.MathExpression {
    const usingMetrics: Record<string, cloudwatch.IMetric> = {};
    for (const spec of FUNCTIONS) usingMetrics[`${prefix}${spec.id}`] = metricOf(this.functions[spec.id]!);
    return new cloudwatch.MathExpression({ expression: `SUM([${Object.keys(usingMetrics).join(', ')}])`, usingMetrics, label, period: FIVE_MINUTES });
  }

  /**
   * Per-key request rates (docs/reliability.md, "Limits per tenant"): the stage's throttle is
   * shared by every key and by requests without one, so one key holder, or a flood, could spend it
   * for everyone. WAF evaluates, in order:
   * - non-canonical-authorization: an Authorization header that is not exactly
   *   `Bearer <credential>` (RFC 6750's b64token) is refused with 401, as the gateway would refuse
   *   it, so the per-key count below sees each key under one spelling only (otherwise one key
   *   could dodge its limit by writing "bearer", "BEARER" or two spaces);
   * - per-key: each Authorization header's requests over a minute, 429 past the key limit;
   * - per-address: each source address's requests over a minute, with a key or without, 429 past
   *   the address limit: a new random key per request is a counter of its own each time, and only
   *   this rule bounds such a flood.
   * A request without the header is counted per address only.
   */
  private limitKeyRequestRates(limit: number | string, addressLimit: number): void {
    const token = Token.isUnresolved(limit);
    if (!token) {
      const value = Number(limit);
      if (value === 0) return;
      if (!Number.isInteger(value) || value < 10 || value > 999999999) {
        throw new Error(`keyRequestRateLimit must be 0 or a whole number from 10 to 999,999,999, not ${limit}`);
      }
    }
    if (!Token.isUnresolved(addressLimit) && (!Number.isInteger(addressLimit) || addressLimit < 10 || addressLimit > 2000000000)) {
      throw new Error(`addressRequestRateLimit must be a whole number from 10 to 2,000,000,000, not ${addressLimit}`);
    }
    const condition = token
      ? new CfnCondition(this, 'LimitsKeyRequestRate', { expression: Fn.conditionNot(Fn.conditionEquals(limit, '0')) })
      : undefined;
    const tooMany = (body: string): wafv2.CfnWebACL.RuleActionProperty => ({
      block: {
        customResponse: {
          responseCode: 429,
          customResponseBodyKey: body,
          responseHeaders: [{ name: 'Retry-After', value: '60' }],
        },
      },
    });
    const visibility = (metric: string): wafv2.CfnWebACL.VisibilityConfigProperty => ({
      sampledRequestsEnabled: false,
      cloudWatchMetricsEnabled: true,
      metricName: Fn.sub(`\${AWS::StackName}-${metric}`),
    });
    const asIs = [{ priority: 0, type: 'NONE' }];
    // CfnWebACL passes `singleHeader` through untyped: its key is CloudFormation's own `Name`.
    const authorization = { singleHeader: { Name: 'authorization' } };
    const acl = new wafv2.CfnWebACL(this, 'KeyRequestRateLimits', {
      scope: 'REGIONAL',
      description: 'Only canonical bearer headers, and requests a minute per API key and per address.',
      defaultAction: { allow: {} },
      visibilityConfig: visibility('key-rates'),
      customResponseBodies: {
        unauthenticated: {
          contentType: 'APPLICATION_JSON',
          content: '{"detail": {"code": "unauthenticated", "message": "the Authorization header must be exactly: Bearer <credential>"}}',
        },
        too_many_requests: {
          contentType: 'APPLICATION_JSON',
          content: '{"detail": {"code": "too_many_requests", "message": "this key\'s request rate is at its limit; retry later"}}',
        },
        too_many_requests_from_address: {
          contentType: 'APPLICATION_JSON',
          content: '{"detail": {"code": "too_many_requests", "message": "this address\'s request rate is at its limit; retry later"}}',
        },
      },
      rules: [
        {
          name: 'non-canonical-authorization',
          priority: 0,
          action: { block: { customResponse: { responseCode: 401, customResponseBodyKey: 'unauthenticated' } } },
          visibilityConfig: visibility('non-canonical-authorization'),
          statement: {
            andStatement: {
              statements: [
                { sizeConstraintStatement: { fieldToMatch: authorization, comparisonOperator: 'GT', size: 0, textTransformations: asIs } },
                {
                  notStatement: {
                    statement: {
                      regexMatchStatement: { fieldToMatch: authorization, regexString: CANONICAL_AUTHORIZATION, textTransformations: asIs },
                    },
                  },
                },
              ],
            },
          },
        },
        {
          name: 'per-key',
          priority: 1,
          action: tooMany('too_many_requests'),
          visibilityConfig: visibility('per-key'),
          statement: {
            rateBasedStatement: {
              limit: Token.asNumber(limit),
              evaluationWindowSec: 60,
              aggregateKeyType: 'CUSTOM_KEYS',
              customKeys: [{ header: { name: 'authorization', textTransformations: asIs } }],
            },
          },
        },
        {
          name: 'per-address',
          priority: 2,
          action: tooMany('too_many_requests_from_address'),
          visibilityConfig: visibility('per-address'),
          statement: {
            rateBasedStatement: { limit: addressLimit, evaluationWindowSec: 60, aggregateKeyType: 'IP' },
          },
        },
      ],
    });
    const association = new wafv2.CfnWebACLAssociation(this, 'KeyRequestRateLimitsOnStage', {
      resourceArn: Fn.sub('arn:${AWS::Partition}:apigateway:${AWS::Region}::/restapis/${Api}/stages/${Stage}', {
        Api: this.api.restApiId,
        Stage: this.api.deploymentStage.stageName,
      }),
      webAclArn: acl.attrArn,
    });
    acl.cfnOptions.condition = condition;
    association.cfnOptions.condition = condition;
  }

  private makeFunction(spec: FunctionSpec, ctx: FunctionContext): { fn: lambda.Function; logGroup: logs.LogGroup } {
    const scope = new Construct(this, spec.id);
    const statements = spec.grants.map((g) => statement(g, ctx.resourceArn));
    const managedPolicies = [iam.ManagedPolicy.fromAwsManagedPolicyName('service-role/AWSLambdaBasicExecutionRole'), ctx.xrayPolicy];
    // SAM adds this managed policy to a function with an SQS event; kept for the same role.
    if (spec.trigger?.kind === 'pushQueue') {
      managedPolicies.push(iam.ManagedPolicy.fromAwsManagedPolicyName('service-role/AWSLambdaSQSQueueExecutionRole'));
    }
    const role = new iam.Role(scope, 'Role', {
      assumedBy: new iam.ServicePrincipal('lambda.amazonaws.com'),
      managedPolicies,
      // A function that calls no AWS service (the console's page and files) has no inline policy.
      inlinePolicies: statements.length > 0 ? { FunctionPolicy: new iam.PolicyDocument({ statements }) } : {},
    });
    const environment: Record<string, string> = {
      // What the gateway binary serves in this function (its route, the push worker, the sweeper).
      FORGEBENCH_ROUTE: spec.route,
      FORGEBENCH_TABLE: this.table.tableName,
      FORGEBENCH_MAX_WAIT_SECONDS: envString(ctx.maxWaitSeconds),
      FORGEBENCH_TENANT_MAX_WAITS: envString(ctx.tenantMaxWaits),
      FORGEBENCH_TENANT_MAX_AGENTS: envString(ctx.tenantMaxAgents),
      FORGEBENCH_TENANT_MAX_CONFIGS: envString(ctx.tenantMaxConfigs),
      FORGEBENCH_TENANT_MAX_PUSHES: envString(ctx.tenantMaxPushes),
      FORGEBENCH_ENDPOINT_DISABLE_FAILURES: envString(ctx.endpointDisableFailures),
      FORGEBENCH_ENDPOINT_DISABLE_SECONDS: envString(ctx.endpointDisableSeconds),
      FORGEBENCH_INDEX_UNITS: envString(ctx.indexUnits),
      FORGEBENCH_TASK_RETENTION_DAYS: envString(ctx.taskRetentionDays),
      // The CloudWatch namespace of the business metrics (EMF lines, shared/src/metrics.rs).
      FORGEBENCH_METRICS_NAMESPACE: ctx.metricsNamespace,
      RUST_LOG: 'info',
      // The service the spans name (OpenTelemetry's resource).
      OTEL_SERVICE_NAME: Fn.sub('forgebench-${AWS::StackName}'),
      // Runtime worker threads get 8 MiB of stack like the main thread (the A2A routes nest a
      // task's open inside the protocol's handling).
      RUST_MIN_STACK: '8388608',
    };
    for (const [name, value] of Object.entries(spec.env ?? {})) environment[name] = ctx.envValues[value];
    // Where the spans go: the collector extension's OTLP/HTTP receiver; unset, none are exported.
    if (ctx.spans.layerArn !== undefined) {
      environment.OTEL_EXPORTER_OTLP_ENDPOINT = ctx.spans.condition
        ? Token.asString(Fn.conditionIf(ctx.spans.condition.logicalId, 'http://localhost:4318', Aws.NO_VALUE))
        : 'http://localhost:4318';
    }
    const options: lambda.FunctionOptions = {
      description: spec.description,
      architecture: lambda.Architecture.ARM_64,
      memorySize: spec.memorySize ?? DEFAULT_MEMORY,
      timeout: Duration.seconds(spec.timeout ?? DEFAULT_TIMEOUT),
      loggingFormat: lambda.LoggingFormat.JSON,
      environment,
      role,
      reservedConcurrentExecutions: spec.longPoll ? ctx.longPollConcurrency : undefined,
    };
    let fn: lambda.Function;
    if (ctx.rustBuild) {
      fn = new RustFunction(scope, 'Function', { ...options, ...ctx.rustBuild });
    } else {
      fn = new lambda.Function(scope, 'Function', {
        ...options,
        runtime: lambda.Runtime.PROVIDED_AL2023,
        handler: 'bootstrap',
        code: ctx.sharedCode!,
      });
    }
    // X-Ray: a trace of every invocation (its trace id is on each of the invocation's log lines).
    // Set on the resource rather than with `tracing`, which would add its own xray statement on
    // `*` to the role; the role has SAM's managed X-Ray policy instead (xrayPolicy above).
    (fn.node.defaultChild as lambda.CfnFunction).tracingConfig = { mode: 'Active' };
    // The OpenTelemetry Collector extension, when one is named (its spans go to it on localhost).
    if (ctx.spans.layerArn !== undefined) {
      (fn.node.defaultChild as lambda.CfnFunction).layers = ctx.spans.condition
        ? Token.asList(Fn.conditionIf(ctx.spans.condition.logicalId, [ctx.spans.layerArn], Aws.NO_VALUE))
        : [ctx.spans.layerArn];
    }
    // Names the function's route for the drift test (test/drift.test.ts) and for readers of the template.
    (fn.node.defaultChild as lambda.CfnFunction).addMetadata('forgebench:function', spec.route);

    // One log group per function, so the retention is set rather than forever.
    const logGroup = new logs.LogGroup(scope, 'LogGroup', {
      logGroupName: `/aws/lambda/${fn.functionName}`,
      retention: ctx.logRetentionDays as logs.RetentionDays,
      removalPolicy: RemovalPolicy.DESTROY,
    });
    keepLogicalId(logGroup);

    if (spec.trigger?.kind === 'schedule') {
      new events.Rule(scope, spec.trigger.id, {
        schedule: events.Schedule.expression(spec.trigger.expression),
        targets: [new targets.LambdaFunction(fn)],
      });
    } else if (spec.trigger?.kind === 'pushQueue') {
      // The event source mapping alone: the function's policy already allows what it needs on
      // the queue, as SAM's does (an SqsEventSource would add a second, broader grant).
      new lambda.EventSourceMapping(scope, spec.trigger.id, {
        target: fn,
        eventSourceArn: this.pushQueue.queueArn,
        batchSize: spec.trigger.batchSize,
        reportBatchItemFailures: spec.trigger.reportBatchItemFailures,
        maxConcurrency: ctx.pushWorkerConcurrency,
      });
    }
    return { fn, logGroup };
  }
}

/** What `RustFunction` builds: the gateway binary, the same for every function (one build). */
type RustBuild = Pick<RustFunctionProps, 'runtime' | 'manifestPath' | 'binaryName' | 'bundling'>;

interface FunctionContext {
  /** The one asset every function runs (prebuilt, placeholder). */
  readonly sharedCode?: lambda.Code;
  /** Or the build every function's RustFunction runs (cargoLambda). */
  readonly rustBuild?: RustBuild;
  readonly envValues: Record<EnvValue, string>;
  readonly resourceArn: (kind: ResourceKind) => string;
  readonly maxWaitSeconds: number;
  readonly tenantMaxWaits: number;
  readonly tenantMaxAgents: number;
  readonly tenantMaxConfigs: number;
  readonly tenantMaxPushes: number;
  readonly endpointDisableFailures: number;
  readonly endpointDisableSeconds: number;
  readonly indexUnits: number;
  readonly taskRetentionDays: number;
  readonly logRetentionDays: number;
  readonly longPollConcurrency: number;
  readonly pushWorkerConcurrency: number;
  readonly metricsNamespace: string;
  readonly xrayPolicy: iam.IManagedPolicy;
  /** Where the functions' spans go: a collector layer (perhaps on a condition), or nowhere. */
  readonly spans: SpanExport;
}

/** The collector layer every function runs, and the condition it hangs on when a parameter names it. */
interface SpanExport {
  readonly layerArn?: string;
  readonly condition?: CfnCondition;
}

/** The span export `layerArn` asks for: a token is conditional on not being empty. */
function spanExport(scope: Construct, layerArn: string | undefined): SpanExport {
  if (layerArn === undefined || layerArn === '') return {};
  if (!Token.isUnresolved(layerArn)) return { layerArn };
  const condition = new CfnCondition(scope, 'ExportsSpans', { expression: Fn.conditionNot(Fn.conditionEquals(layerArn, '')) });
  return { layerArn, condition };
}

/** The stage's access log line (infra/template.yaml, the Api's AccessLogSetting). */
const ACCESS_LOG_FORMAT =
  '{"request_id":"$context.requestId","trace_id":"$context.xrayTraceId","route":"$context.resourcePath",' +
  '"method":"$context.httpMethod","status":"$context.status","latency_ms":"$context.responseLatency",' +
  '"integration_latency_ms":"$context.integrationLatency","error":"$context.error.responseType",' +
  '"source_ip":"$context.identity.sourceIp","time":"$context.requestTimeEpoch"}';

function statement(g: Grant, resourceArn: (kind: ResourceKind) => string): iam.PolicyStatement {
  const conditions: Record<string, Record<string, unknown>> = {};
  const add = (op: string, key: string, value: unknown) => {
    conditions[op] = { ...(conditions[op] ?? {}), [key]: value };
  };
  if (g.leadingKeys) add('ForAllValues:StringLike', 'dynamodb:LeadingKeys', [...g.leadingKeys]);
  if (g.attributes) add('ForAllValues:StringEquals', 'dynamodb:Attributes', [...g.attributes]);
  if (g.purposes) add('StringEquals', 'kms:EncryptionContext:purpose', g.purposes.length === 1 ? g.purposes[0] : [...g.purposes]);
  if (g.viaS3) add('StringEquals', 'kms:ViaService', Fn.sub('s3.${AWS::Region}.amazonaws.com'));
  return new iam.PolicyStatement({
    sid: g.sid,
    effect: iam.Effect.ALLOW,
    actions: [...g.actions],
    resources: g.on.map(resourceArn),
    conditions: Object.keys(conditions).length > 0 ? conditions : undefined,
  });
}

interface OpenApi {
  info?: { title?: string };
  paths: Record<string, Record<string, { 'x-amazon-apigateway-integration'?: { uri?: unknown } }>>;
}

const FUNCTION_ARN = /\$\{([A-Za-z0-9]+)Function\.Arn\}/;

/**
 * Points every integration of the definition at the construct's function: openapi.yaml names it
 * as `${<id>Function.Arn}` in an `Fn::Sub` (the SAM template's logical id), which becomes a
 * substitution of this construct's function's ARN. Returns the ids of the functions named.
 */
function bindIntegrations(definition: OpenApi, functions: Record<string, lambda.Function>): Set<string> {
  const named = new Set<string>();
  for (const [route, operations] of Object.entries(definition.paths)) {
    for (const [method, operation] of Object.entries(operations)) {
      const integration = operation['x-amazon-apigateway-integration'];
      if (!integration) continue;
      const uri = integration.uri as { 'Fn::Sub'?: unknown } | undefined;
      const template = uri?.['Fn::Sub'];
      const match = typeof template === 'string' ? FUNCTION_ARN.exec(template) : null;
      if (typeof template !== 'string' || !match) {
        throw new Error(`${method.toUpperCase()} ${route}: integration uri is not an Fn::Sub naming \${<Name>Function.Arn}`);
      }
      const fn = functions[match[1]!];
      if (!fn) throw new Error(`${method.toUpperCase()} ${route}: no function ${match[1]} in the construct's FUNCTIONS`);
      integration.uri = Fn.sub(template.replace(FUNCTION_ARN, '${FunctionArn}'), { FunctionArn: fn.functionArn });
      named.add(match[1]!);
    }
  }
  return named;
}

/** One stand-in asset for every function (its hash is its content's, so synth after synth agree). */
function placeholderCode(): lambda.Code {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'forgebench-placeholder-'));
  fs.writeFileSync(
    path.join(dir, 'bootstrap'),
    '#!/bin/sh\necho "forgebench: placeholder code, synthesized for tests; deploy with built functions" >&2\nexit 1\n',
    { mode: 0o755 },
  );
  return lambda.Code.fromAsset(dir);
}
