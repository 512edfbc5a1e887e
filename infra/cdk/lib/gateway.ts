import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { Aws, CfnCondition, CfnDeletionPolicy, CfnWaitConditionHandle, Duration, Fn, IResolvable, Token } from 'aws-cdk-lib';
import * as apigateway from 'aws-cdk-lib/aws-apigateway';
import * as cloudwatch from 'aws-cdk-lib/aws-cloudwatch';
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
import { acknowledgeNagFindings } from './nag';
import { TABLE } from './table';

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

export interface ForgebenchGatewayProps {
  /** SHA-256 (64 lower-case hex) of the operator key; the key itself is never deployed. */
  readonly operatorKeyHash: string;
  /** @default { kind: 'prebuilt' } with `dir` `<repository>/target/lambda-arm64` */
  readonly code?: FunctionCode;
  /** The API definition; its integrations name the functions (`${<id>Function.Arn}`). @default `<repository>/infra/openapi.yaml` */
  readonly openApiPath?: string;
  /** @default true */
  readonly tableDeletionProtection?: boolean | IResolvable;
  /** Days the functions' logs are kept (a CloudWatch Logs retention value). @default 30 */
  readonly logRetentionDays?: number;
  /** Days tasks and their stored bodies are kept (table TTL, bucket lifecycle), 1–3650. @default 365 */
  readonly taskRetentionDays?: number;
  /** Requests per second the whole API serves. @default 500 */
  readonly throttleRateLimit?: number;
  /** The stage's token bucket size. @default 1000 */
  readonly throttleBurstLimit?: number;
  /** Reserved concurrency of each long-poll function. @default 100 */
  readonly longPollConcurrency?: number;
  /** The most push worker invocations the queue runs at once (2 to 1,000). @default 50 */
  readonly pushWorkerConcurrency?: number;
  /** The base URL agent cards name and sign; empty: the API's own URL. @default '' */
  readonly publicUrl?: string;
  /** The bound on `?wait=`, 0–30. @default 30 */
  readonly maxWaitSeconds?: number;
  /** The most waiting requests and streams of one tenant at once, 1–1,000. @default 40 */
  readonly tenantMaxWaits?: number;
  /** The most agents one tenant holds that are not retired (1 to 100,000; default 1,000). */
  readonly tenantMaxAgents?: number;
  /** The most push notification configs with updates to send one tenant holds (1 to 1,000,000; default 10,000). */
  readonly tenantMaxConfigs?: number;
  /** The most push POSTs of one tenant in flight across every push worker (1 to 1,000; default 10). */
  readonly tenantMaxPushes?: number;
  /** Failed attempts in a row that disable a push endpoint (1 to 100,000; default 20). */
  readonly endpointDisableFailures?: number;
  /** The least time those failures span, in seconds (0 to 2,592,000; default 3,600). */
  readonly endpointDisableSeconds?: number;
  /** The most DynamoDB write units one write of a message's word postings spends (1 to 1,000; default 1,000). */
  readonly indexUnits?: number;
  /** The secrets key's alias. @default `alias/<stack name>-secrets` */
  readonly keyAliasName?: string;
  /** The REST API's name (also the `ApiName` the 5xx alarm and the dashboard watch). @default `<stack name>-Api` */
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
 * `FORGEBENCH_ROUTE`), the state table, the body bucket and the secrets key; the same system as
 * infra/template.yaml.
 */
export class ForgebenchGateway extends Construct {
  readonly table: dynamodb.CfnTable;
  readonly pushQueue: sqs.CfnQueue;
  readonly pushDeadLetterQueue: sqs.CfnQueue;
  readonly secretsKey: kms.CfnKey;
  readonly bodyBucket: s3.CfnBucket;
  readonly api: apigateway.SpecRestApi;
  /** Every function by its `id` in FUNCTIONS (`OpenTask`, `PushWorker`, ...). */
  readonly functions: Readonly<Record<string, lambda.Function>>;
  readonly pushDeadLetterAlarm: cloudwatch.CfnAlarm;
  /** The topic every alarm notifies. */
  readonly alarmTopic: sns.CfnTopic;
  /** Every alarm, by its SAM logical id (`Api5xxAlarm`, `PushDeadLetterAlarm`, ...). */
  readonly alarms: Readonly<Record<string, cloudwatch.CfnAlarm>>;
  readonly dashboard: cloudwatch.CfnDashboard;
  /** The dashboard's name (`<stack name>-gateway`). */
  readonly dashboardName: string;
  /** The stage's access log (one JSON line per request: no body, header or key). */
  readonly accessLogGroup: logs.CfnLogGroup;
  readonly metricsNamespace: string;
  /** The X-Ray write policy every function's role has (SAM's name for it in the partition). */
  readonly xrayWritePolicy: iam.IManagedPolicy;
  /** The API's base URL (`https://{id}.execute-api.{region}.{suffix}/prod`). */
  readonly url: string;

  constructor(scope: Construct, id: string, props: ForgebenchGatewayProps) {
    super(scope, id);
    const root = repositoryRoot();
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

    // The state table, as infra/template.yaml defines it. The L1 resource: its global secondary
    // indexes use multi-attribute partition keys (several HASH entries), which CloudFormation takes
    // as they are; the L2 Table would also add a Retain deletion policy the SAM stack lacks.
    this.table = new dynamodb.CfnTable(this, 'Table', {
      ...TABLE,
      deletionProtectionEnabled: props.tableDeletionProtection ?? true,
    });

    this.pushDeadLetterQueue = new sqs.CfnQueue(this, 'PushDeadLetterQueue', {
      messageRetentionPeriod: 1209600,
      sqsManagedSseEnabled: true,
    });
    // The worker's timeout is 30 s; the visibility timeout is 6x that, as the event source
    // mapping wants; maxReceiveCount is above the 6 scheduled attempts.
    this.pushQueue = new sqs.CfnQueue(this, 'PushQueue', {
      visibilityTimeout: 180,
      messageRetentionPeriod: 345600,
      sqsManagedSseEnabled: true,
      redrivePolicy: { deadLetterTargetArn: this.pushDeadLetterQueue.attrArn, maxReceiveCount: 10 },
    });

    // TLS-only, like the body bucket (cdk-nag AwsSolutions-SQS4). Every client already uses HTTPS:
    // the functions' SDK clients and Lambda's event source mapping.
    new sqs.CfnQueuePolicy(this, 'PushQueuesTlsOnly', {
      queues: [this.pushQueue.ref, this.pushDeadLetterQueue.ref],
      policyDocument: {
        Version: '2012-10-17',
        Statement: [
          {
            Sid: 'TlsOnly',
            Effect: 'Deny',
            Principal: '*',
            Action: 'sqs:*',
            Resource: [this.pushQueue.attrArn, this.pushDeadLetterQueue.attrArn],
            Condition: { Bool: { 'aws:SecureTransport': 'false' } },
          },
        ],
      },
    });

    this.secretsKey = new kms.CfnKey(this, 'SecretsKey', {
      description: 'Forgebench gateway - seals push endpoint secrets',
      enableKeyRotation: true,
      keyPolicy: {
        Version: '2012-10-17',
        Statement: [
          {
            Sid: 'AccountAdministers',
            Effect: 'Allow',
            Principal: { AWS: Fn.sub('arn:${AWS::Partition}:iam::${AWS::AccountId}:root') },
            Action: 'kms:*',
            Resource: '*',
          },
        ],
      },
    });
    new kms.CfnAlias(this, 'SecretsKeyAlias', {
      aliasName: props.keyAliasName ?? Fn.sub('alias/${AWS::StackName}-secrets'),
      targetKeyId: this.secretsKey.ref,
    });

    this.bodyBucket = new s3.CfnBucket(this, 'BodyBucket', {
      bucketEncryption: {
        serverSideEncryptionConfiguration: [
          {
            serverSideEncryptionByDefault: { sseAlgorithm: 'aws:kms', kmsMasterKeyId: this.secretsKey.attrArn },
            bucketKeyEnabled: true,
          },
        ],
      },
      publicAccessBlockConfiguration: {
        blockPublicAcls: true,
        blockPublicPolicy: true,
        ignorePublicAcls: true,
        restrictPublicBuckets: true,
      },
      ownershipControls: { rules: [{ objectOwnership: 'BucketOwnerEnforced' }] },
      lifecycleConfiguration: {
        rules: [
          {
            id: 'expire-task-bodies',
            status: 'Enabled',
            prefix: 'tasks/',
            expirationInDays: taskRetentionDays,
            abortIncompleteMultipartUpload: { daysAfterInitiation: 1 },
          },
        ],
      },
    });
    // The bodies are the tasks' data: kept when the stack goes, like the SAM stack's.
    this.bodyBucket.cfnOptions.deletionPolicy = CfnDeletionPolicy.RETAIN;
    this.bodyBucket.cfnOptions.updateReplacePolicy = CfnDeletionPolicy.RETAIN;
    new s3.CfnBucketPolicy(this, 'BodyBucketPolicy', {
      bucket: this.bodyBucket.ref,
      policyDocument: {
        Version: '2012-10-17',
        Statement: [
          {
            Sid: 'TlsOnly',
            Effect: 'Deny',
            Principal: '*',
            Action: 's3:*',
            Resource: [this.bodyBucket.attrArn, `${this.bodyBucket.attrArn}/*`],
            Condition: { Bool: { 'aws:SecureTransport': 'false' } },
          },
        ],
      },
    });

    const envValues: Record<EnvValue, string> = {
      queueUrl: this.pushQueue.ref,
      bucketName: this.bodyBucket.ref,
      keyId: this.secretsKey.ref,
      operatorKeyHash: props.operatorKeyHash,
      publicUrl: props.publicUrl ?? '',
    };
    const resources: Record<string, string> = {
      table: this.table.attrArn,
      indexes: `${this.table.attrArn}/index/*`,
      bodies: `${this.bodyBucket.attrArn}/tasks/*`,
      queue: this.pushQueue.attrArn,
      key: this.secretsKey.attrArn,
    };
    const resourceArn = (kind: ResourceKind): string =>
      kind.startsWith('index/') ? `${this.table.attrArn}/${kind}` : resources[kind]!;

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
      const dir = path.join(code.dir ?? path.join(root, 'target', 'lambda-arm64'), GATEWAY_BINARY);
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
        manifestPath: code.manifestPath ?? path.join(root, 'Cargo.toml'),
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
    for (const spec of FUNCTIONS) {
      functions[spec.id] = this.makeFunction(spec, {
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
      });
    }
    this.functions = functions;

    // The API: infra/openapi.yaml with each integration's function ARN substituted.
    const openApiPath = props.openApiPath ?? path.join(root, 'infra', 'openapi.yaml');
    const definition = yaml.load(fs.readFileSync(openApiPath, 'utf8')) as OpenApi;
    const named = bindIntegrations(definition, functions);
    for (const spec of FUNCTIONS) {
      if (!spec.trigger && !named.has(spec.id)) throw new Error(`ForgebenchGateway: ${spec.id} has no trigger and no route in ${openApiPath}`);
    }
    const apiName = props.restApiName ?? Fn.sub('${AWS::StackName}-Api');

    // The stage's access log, and the account setting it needs: API Gateway writes access logs
    // only once the account (per region) names a CloudWatch Logs role.
    this.accessLogGroup = new logs.CfnLogGroup(this, 'ApiAccessLogGroup', { retentionInDays: logRetentionDays });
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
        accessLogDestination: { bind: () => ({ destinationArn: this.accessLogGroup.attrArn }) },
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
    this.alarmTopic = new sns.CfnTopic(this, 'AlarmTopic', { kmsMasterKeyId: 'alias/aws/sns' });
    new sns.CfnTopicPolicy(this, 'AlarmTopicPolicy', {
      topics: [this.alarmTopic.ref],
      policyDocument: {
        Version: '2012-10-17',
        Statement: [
          {
            Sid: 'AlarmsPublish',
            Effect: 'Allow',
            Principal: { Service: 'cloudwatch.amazonaws.com' },
            Action: 'sns:Publish',
            Resource: this.alarmTopic.ref,
            Condition: { StringEquals: { 'aws:SourceAccount': Aws.ACCOUNT_ID } },
          },
        ],
      },
    });
    if (Token.isUnresolved(alarmEmail) || alarmEmail !== '') {
      const subscription = new sns.CfnSubscription(this, 'AlarmEmailSubscription', {
        topicArn: this.alarmTopic.ref,
        protocol: 'email',
        endpoint: alarmEmail,
      });
      if (Token.isUnresolved(alarmEmail)) {
        subscription.cfnOptions.condition = new CfnCondition(this, 'HasAlarmEmail', {
          expression: Fn.conditionNot(Fn.conditionEquals(alarmEmail, '')),
        });
      }
    }
    const alarmActions = [this.alarmTopic.ref];
    const alarms: Record<string, cloudwatch.CfnAlarm> = {};
    const alarm = (name: string, alarmProps: Omit<cloudwatch.CfnAlarmProps, 'alarmActions' | 'treatMissingData' | 'comparisonOperator'>) => {
      alarms[name] = new cloudwatch.CfnAlarm(this, name, {
        ...alarmProps,
        alarmActions,
        comparisonOperator: 'GreaterThanThreshold',
        treatMissingData: 'notBreaching',
      });
      return alarms[name]!;
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
    alarm('PushQueueAgeAlarm', {
      alarmDescription:
        'The oldest push message waited over 5 minutes: the worker is failing, throttled, or ' +
        'slower than the tasks arriving.\n',
      namespace: 'AWS/SQS',
      metricName: 'ApproximateAgeOfOldestMessage',
      dimensions: [{ name: 'QueueName', value: this.pushQueue.attrQueueName }],
      statistic: 'Maximum',
      period: 300,
      evaluationPeriods: 2,
      threshold: 300,
    });
    alarm('SweepSkippedAlarm', {
      alarmDescription:
        'Sweeps left items for later three runs in a row (the store or the queue failing for ' +
        'the sweeper): overdue tasks are not failed, lost enqueues not redone, word indexes behind.\n',
      namespace: this.metricsNamespace,
      metricName: 'SweepSkipped',
      statistic: 'Sum',
      period: 300,
      evaluationPeriods: 3,
      datapointsToAlarm: 3,
      threshold: 0,
    });

    alarm('ItemsSkippedAlarm', {
      alarmDescription:
        'A page left out a stored item it could not decode (the rest of the page was served): ' +
        'a bug to fix, never a normal condition. The gateway\'s log line "an item of a page could ' +
        'not be decoded" names the item\'s key and the cause.\n',
      namespace: this.metricsNamespace,
      metricName: 'ItemsSkipped',
      statistic: 'Sum',
      period: 300,
      evaluationPeriods: 1,
      threshold: 0,
    });

    this.dashboardName = Fn.sub('${AWS::StackName}-gateway');
    this.dashboard = new cloudwatch.CfnDashboard(this, 'Dashboard', {
      dashboardName: this.dashboardName,
      dashboardBody: Fn.sub(DASHBOARD_BODY, {
        Namespace: this.metricsNamespace,
        ApiName: apiName,
        PushQueueName: this.pushQueue.attrQueueName,
        DeadLetterQueueName: this.pushDeadLetterQueue.attrQueueName,
      }),
    });

    this.pushDeadLetterAlarm = new cloudwatch.CfnAlarm(this, 'PushDeadLetterAlarm', {
      alarmDescription: 'Push deliveries the worker could not handle reached the dead-letter queue.',
      alarmActions,
      namespace: 'AWS/SQS',
      metricName: 'ApproximateNumberOfMessagesVisible',
      dimensions: [{ name: 'QueueName', value: this.pushDeadLetterQueue.attrQueueName }],
      statistic: 'Maximum',
      period: 300,
      evaluationPeriods: 1,
      threshold: 0,
      comparisonOperator: 'GreaterThanThreshold',
      treatMissingData: 'notBreaching',
    });
    alarms.PushDeadLetterAlarm = this.pushDeadLetterAlarm;
    this.alarms = alarms;

    acknowledgeNagFindings(this);
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

  private makeFunction(spec: FunctionSpec, ctx: FunctionContext): lambda.Function {
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
      FORGEBENCH_TABLE: this.table.ref,
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
    new logs.CfnLogGroup(scope, 'LogGroup', {
      logGroupName: `/aws/lambda/${fn.functionName}`,
      retentionInDays: ctx.logRetentionDays,
    });

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
        eventSourceArn: this.pushQueue.attrArn,
        batchSize: spec.trigger.batchSize,
        reportBatchItemFailures: spec.trigger.reportBatchItemFailures,
        maxConcurrency: ctx.pushWorkerConcurrency,
      });
    }
    return fn;
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
