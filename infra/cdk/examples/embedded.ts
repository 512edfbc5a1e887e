#!/usr/bin/env node
// An app of your own that embeds the gateway: a platform team's stack with `ForgebenchGateway`
// in it, a role for its auditors that reads the gateway's ledger and stored bodies and nothing
// else, alarms of its own on the gateway's metrics (to the gateway's alarm topic), and a
// dashboard of its own. cdk-nag's AwsSolutions checks run on the whole app, as on the gateway's.
//
//   npx cdk synth --app 'node dist/examples/embedded.js' -c code=placeholder
//
// (scripts/cdk-check.sh synthesizes it so; `-c code=...` and `-c prebuiltDir=DIR` as for
// bin/app.ts, `-c stackName=NAME` for another stack name than agent-platform.)
import { App, CfnOutput, CfnParameter, Duration, Stack, StackProps, Validations } from 'aws-cdk-lib';
import * as cloudwatch from 'aws-cdk-lib/aws-cloudwatch';
import * as cloudwatchActions from 'aws-cdk-lib/aws-cloudwatch-actions';
import * as iam from 'aws-cdk-lib/aws-iam';
import { AwsSolutionsChecks } from 'cdk-nag';
import { Construct } from 'constructs';
// In your own app: from 'forgebench-gateway-cdk'.
import { ForgebenchGateway, FunctionCode, functionCodeFromContext } from '../lib';

export interface AgentPlatformStackProps extends StackProps {
  /** How the gateway's functions are packaged. @default { kind: 'prebuilt' } */
  readonly code?: FunctionCode;
}

/** The gateway, an auditors' role, two alarms and a dashboard. */
export class AgentPlatformStack extends Stack {
  readonly gateway: ForgebenchGateway;
  /** May read the ledger (the table and its indexes) and the stored bodies; writes nothing. */
  readonly auditors: iam.Role;
  readonly deadLettersAlarm: cloudwatch.Alarm;
  readonly openTaskErrorsAlarm: cloudwatch.Alarm;
  readonly dashboard: cloudwatch.Dashboard;

  constructor(scope: Construct, id: string, props: AgentPlatformStackProps = {}) {
    super(scope, id, props);
    const operatorKeyHash = new CfnParameter(this, 'OperatorKeyHash', {
      type: 'String',
      noEcho: true,
      allowedPattern: '^[0-9a-f]{64}$',
      description: 'SHA-256 (lower-case hex) of the gateway operator key: printf %s "$OPERATOR_KEY" | sha256sum',
    });

    this.gateway = new ForgebenchGateway(this, 'Gateway', {
      operatorKeyHash: operatorKeyHash.valueAsString,
      code: props.code,
      restApiName: `${id}-gateway`,
      taskRetentionDays: 90,
      pushWorkerConcurrency: 20,
      tenantMaxPushes: 5,
    });

    // Principals of this account that are allowed to assume it (their own policy names it).
    this.auditors = new iam.Role(this, 'Auditors', {
      assumedBy: new iam.AccountRootPrincipal(),
      description: "Reads the gateway's ledger and stored bodies; writes nothing.",
      maxSessionDuration: Duration.hours(1),
    });
    this.gateway.grantReadLedger(this.auditors);
    this.gateway.grantReadBodies(this.auditors);

    // Alarms of the platform's own, beside the gateway's, to the gateway's topic (its policy
    // lets CloudWatch alarms of this account publish).
    const notify = new cloudwatchActions.SnsAction(this.gateway.alarmTopic);
    this.deadLettersAlarm = new cloudwatch.Alarm(this, 'DeadLettersPiling', {
      alarmDescription: 'More than 10 push deliveries have waited on the dead-letter queue for 15 minutes.',
      metric: this.gateway.metricDeadLetters(),
      threshold: 10,
      evaluationPeriods: 3,
      comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
      treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
    });
    this.deadLettersAlarm.addAlarmAction(notify);
    this.openTaskErrorsAlarm = new cloudwatch.Alarm(this, 'OpenTaskErrors', {
      alarmDescription: 'The function that opens tasks failed more than 5 invocations in 5 minutes.',
      metric: this.gateway.metricFunctionErrors('OpenTask'),
      threshold: 5,
      evaluationPeriods: 1,
      comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
      treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
    });
    this.openTaskErrorsAlarm.addAlarmAction(notify);

    this.dashboard = new cloudwatch.Dashboard(this, 'Platform', {
      widgets: [
        [
          new cloudwatch.GraphWidget({
            title: 'Gateway API',
            left: [this.gateway.metricApiRequests(), this.gateway.metricApi4xx(), this.gateway.metricApi5xx()],
            right: [this.gateway.metricApiLatency()],
            width: 12,
          }),
          new cloudwatch.GraphWidget({
            title: 'Gateway functions',
            left: [this.gateway.metricFunctionErrors(), this.gateway.metricFunctionThrottles()],
            width: 12,
          }),
        ],
        [
          new cloudwatch.GraphWidget({
            title: 'Push deliveries',
            left: [this.gateway.metricPushQueueAge()],
            right: [this.gateway.metricDeadLetters()],
            width: 12,
          }),
          new cloudwatch.GraphWidget({
            title: 'Tasks',
            left: [this.gateway.metric('TasksClaimed'), this.gateway.metric('TasksExpired'), this.gateway.metric('PushFailures')],
            width: 12,
          }),
        ],
      ],
    });

    new CfnOutput(this, 'ApiUrl', { value: this.gateway.url });
    new CfnOutput(this, 'AuditorsRoleArn', { value: this.auditors.roleArn });
  }
}

if (require.main === module) {
  const app = new App();
  new AgentPlatformStack(app, (app.node.tryGetContext('stackName') as string | undefined) ?? 'agent-platform', {
    code: functionCodeFromContext(app),
  });
  Validations.of(app).addPlugins(new AwsSolutionsChecks(app, { verbose: true }));
}
