import { CfnOutput, CfnParameter, Fn, Stack, StackProps, Token } from 'aws-cdk-lib';
import { Construct } from 'constructs';
import { ForgebenchGateway, FunctionCode } from './gateway';

export interface ForgebenchStackProps extends StackProps {
  /** @default { kind: 'prebuilt' } */
  readonly code?: FunctionCode;
}

/**
 * The gateway as a stack of its own, with the parameters of infra/template.yaml (same names,
 * defaults and constraints), so `cdk deploy --parameters OperatorKeyHash=...` deploys what
 * `sam deploy --parameter-overrides OperatorKeyHash=...` does, and the same outputs.
 */
export class ForgebenchStack extends Stack {
  readonly gateway: ForgebenchGateway;

  constructor(scope: Construct, id: string, props: ForgebenchStackProps = {}) {
    super(scope, id, props);
    const operatorKeyHash = new CfnParameter(this, 'OperatorKeyHash', {
      type: 'String',
      noEcho: true,
      allowedPattern: '^[0-9a-f]{64}$',
      description:
        'SHA-256 (lower-case hex) of the operator key that may create tenants and rotate the signing key: ' +
        'printf %s "$OPERATOR_KEY" | sha256sum. The key itself is never deployed.',
    });
    const tableDeletionProtection = new CfnParameter(this, 'TableDeletionProtection', {
      type: 'String',
      allowedValues: ['true', 'false'],
      default: 'true',
      description: 'Protects the state table from deletion together with the stack.',
    });
    const logRetentionDays = new CfnParameter(this, 'LogRetentionDays', {
      type: 'Number',
      default: 30,
      allowedValues: ['1', '3', '5', '7', '14', '30', '60', '90', '120', '150', '180', '365', '400', '545', '731', '1096', '1827', '2192', '2557', '2922', '3288', '3653'],
      description: "How long the functions' logs are kept.",
    });
    const taskRetentionDays = new CfnParameter(this, 'TaskRetentionDays', {
      type: 'Number',
      default: 365,
      minValue: 1,
      maxValue: 3650,
      description: "How long a task is kept, with every body stored for it (table TTL and the body bucket's lifecycle rule).",
    });
    const throttleRateLimit = new CfnParameter(this, 'ThrottleRateLimit', {
      type: 'Number',
      default: 500,
      minValue: 1,
      description: 'Requests per second the whole API serves (API Gateway stage throttling); past it, 429.',
    });
    const throttleBurstLimit = new CfnParameter(this, 'ThrottleBurstLimit', {
      type: 'Number',
      default: 1000,
      minValue: 1,
      description: "Requests the API may take at once above the rate (the token bucket's size).",
    });
    const longPollConcurrency = new CfnParameter(this, 'LongPollConcurrency', {
      type: 'Number',
      default: 100,
      minValue: 1,
      description: 'Reserved concurrency of each long-poll function.',
    });
    const pushWorkerConcurrency = new CfnParameter(this, 'PushWorkerConcurrency', {
      type: 'Number',
      default: 50,
      minValue: 2,
      maxValue: 1000,
      description: 'The most push worker invocations the queue runs at once.',
    });
    const publicUrl = new CfnParameter(this, 'PublicUrl', {
      type: 'String',
      default: '',
      allowedPattern: '^(https?://[^/?#@\\s]+(/[^?#\\s]*)?)?$',
      description: "The base URL agent cards name and sign; empty: the API's own URL. Never a request header.",
    });
    const maxWaitSeconds = new CfnParameter(this, 'MaxWaitSeconds', {
      type: 'Number',
      default: 30,
      minValue: 0,
      maxValue: 30,
      description: 'Upper bound for ?wait= on long-polling routes.',
    });

    const tenantMaxWaits = new CfnParameter(this, 'TenantMaxWaits', {
      type: 'Number',
      default: 40,
      minValue: 1,
      maxValue: 1000,
      description: 'The most waiting requests and open event streams of one tenant at once; keep it below LongPollConcurrency.',
    });

    const tenantMaxAgents = new CfnParameter(this, 'TenantMaxAgents', {
      type: 'Number',
      default: 1000,
      minValue: 1,
      maxValue: 100000,
      description: 'The most agents one tenant holds that are not retired (past it, creating one is 409 limit_reached).',
    });

    const tenantMaxConfigs = new CfnParameter(this, 'TenantMaxConfigs', {
      type: 'Number',
      default: 10000,
      minValue: 1,
      maxValue: 1000000,
      description: 'The most A2A push notification configs one tenant holds with updates still to send (past it, adding one is 429).',
    });

    const tenantMaxPushes = new CfnParameter(this, 'TenantMaxPushes', {
      type: 'Number',
      default: 10,
      minValue: 1,
      maxValue: 1000,
      description: 'The most push POSTs (task deliveries and notifications) of one tenant in flight at once across every push worker invocation; past it a job waits on the queue without dialing. Keep it well under PushWorkerConcurrency.',
    });

    const endpointDisableFailures = new CfnParameter(this, 'EndpointDisableFailures', {
      type: 'Number',
      default: 20,
      minValue: 1,
      maxValue: 100000,
      description:
        'A push endpoint that failed this many attempts in a row, spanning at least EndpointDisableSeconds, is ' +
        'disabled until an admin enables it.',
    });

    const endpointDisableSeconds = new CfnParameter(this, 'EndpointDisableSeconds', {
      type: 'Number',
      default: 3600,
      minValue: 0,
      maxValue: 2592000,
      description: 'The least time the failures in a row that disable a push endpoint span (seconds).',
    });

    const indexUnits = new CfnParameter(this, 'IndexUnits', {
      type: 'Number',
      default: 1000,
      minValue: 1,
      maxValue: 1000,
      description:
        "The most DynamoDB write units one write of a message's word postings spends (one per posting); a message's " +
        'later words are not indexed for search.',
    });

    const alarmEmail = new CfnParameter(this, 'AlarmEmail', {
      type: 'String',
      default: '',
      allowedPattern: '^([^@\\s]+@[^@\\s]+)?$',
      description:
        'An address the alarm topic mails (it confirms the subscription first). Empty: the topic has no subscriber; ' +
        'subscribe your own (chat, paging) to the AlarmTopic output.',
    });
    const keyRequestRateLimit = new CfnParameter(this, 'KeyRequestRateLimit', {
      type: 'String',
      default: '0',
      allowedPattern: '^(0|[1-9][0-9]{1,8})$',
      description:
        'Requests a minute one API key may make (counted by its Authorization header) before a WAF web ACL on the ' +
        "stage answers 429; 0 (the default) deploys no web ACL. At least 10 when set (WAF's own minimum). The web ACL " +
        'also refuses (401) an Authorization header that is not exactly "Bearer <credential>", and limits each address ' +
        '(AddressRequestRateLimit).',
    });
    const addressRequestRateLimit = new CfnParameter(this, 'AddressRequestRateLimit', {
      type: 'Number',
      default: 6000,
      minValue: 10,
      maxValue: 2000000000,
      description:
        'Requests a minute one source address may make, with a key or without, before the web ACL answers 429: the ' +
        'backstop against a flood that sends a new key with every request, or none. Only with KeyRequestRateLimit set ' +
        '(which deploys the web ACL). Keep it well above KeyRequestRateLimit: many keys may share one address (a NAT, ' +
        "a proxy). At least 10 (WAF's own minimum).",
    });
    const otelCollectorLayerArn = new CfnParameter(this, 'OtelCollectorLayerArn', {
      type: 'String',
      default: '',
      allowedPattern: '^(arn:[a-z-]+:lambda:[a-z0-9-]+:[0-9]{12}:layer:[A-Za-z0-9_-]+:[0-9]+)?$',
      description:
        'The ARN of an OpenTelemetry Collector Lambda layer for arm64 in this region (the AWS Distro for ' +
        'OpenTelemetry collector layer, which sends to X-Ray; or one of your own). When set, every function runs it ' +
        'and exports its spans to it on localhost (OTLP/HTTP); empty, spans are not exported (docs/operations.md, ' +
        'Traces).',
    });
    const configureApiGatewayLogging = new CfnParameter(this, 'ConfigureApiGatewayLogging', {
      type: 'String',
      allowedValues: ['true', 'false'],
      default: 'true',
      description:
        'API Gateway writes access logs only once the account names a CloudWatch Logs role (one setting per account ' +
        'and region). "true" creates that role and sets it; "false" when the account has one already.',
    });

    this.gateway = new ForgebenchGateway(this, 'Gateway', {
      code: props.code,
      operatorKeyHash: operatorKeyHash.valueAsString,
      tableDeletionProtection: Token.asAny(tableDeletionProtection.valueAsString),
      logRetentionDays: logRetentionDays.valueAsNumber,
      taskRetentionDays: taskRetentionDays.valueAsNumber,
      throttleRateLimit: throttleRateLimit.valueAsNumber,
      throttleBurstLimit: throttleBurstLimit.valueAsNumber,
      longPollConcurrency: longPollConcurrency.valueAsNumber,
      pushWorkerConcurrency: pushWorkerConcurrency.valueAsNumber,
      publicUrl: publicUrl.valueAsString,
      maxWaitSeconds: maxWaitSeconds.valueAsNumber,
      tenantMaxWaits: tenantMaxWaits.valueAsNumber,
      tenantMaxAgents: tenantMaxAgents.valueAsNumber,
      tenantMaxConfigs: tenantMaxConfigs.valueAsNumber,
      tenantMaxPushes: tenantMaxPushes.valueAsNumber,
      endpointDisableFailures: endpointDisableFailures.valueAsNumber,
      endpointDisableSeconds: endpointDisableSeconds.valueAsNumber,
      indexUnits: indexUnits.valueAsNumber,
      alarmEmail: alarmEmail.valueAsString,
      configureApiGatewayLogging: Token.asAny(configureApiGatewayLogging.valueAsString),
      keyRequestRateLimit: keyRequestRateLimit.valueAsString,
      addressRequestRateLimit: addressRequestRateLimit.valueAsNumber,
      otelCollectorLayerArn: otelCollectorLayerArn.valueAsString,
    });

    new CfnOutput(this, 'AlarmTopic', { description: 'The SNS topic every alarm notifies; subscribe to it', value: this.gateway.alarmTopic.topicArn });
    new CfnOutput(this, 'Dashboard', {
      description: 'The CloudWatch dashboard of the gateway',
      value: Fn.sub('https://${AWS::Region}.console.aws.amazon.com/cloudwatch/home?region=${AWS::Region}#dashboards:name=${Name}', {
        Name: this.gateway.dashboardName,
      }),
    });

    new CfnOutput(this, 'ApiUrl', { description: 'Base URL of the gateway', value: this.gateway.url });
    new CfnOutput(this, 'TableName', { value: this.gateway.table.tableName });
  }
}
