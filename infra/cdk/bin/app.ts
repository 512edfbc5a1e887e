#!/usr/bin/env node
// The CDK app: the gateway's stack with cdk-nag's AwsSolutions checks, which fail the synth on
// any unsuppressed error. No account or region is named (`env` unset), so synth needs no AWS
// access and makes no context lookups; the stack deploys to whatever account and region
// `cdk deploy` runs with.
//
// Context: -c code=prebuilt (default: the one gateway binary every function runs,
// target/lambda-arm64/gateway/bootstrap, built by
// `cargo lambda build --release --arm64 --lambda-dir target/lambda-arm64 --bin gateway`),
// -c code=cargoLambda (cargo-lambda-cdk builds it at synth), -c code=placeholder (tests only:
// never deploy it); -c prebuiltDir=DIR (holding gateway/bootstrap); -c stackName=NAME (default
// forgebench-cdk).
import { App, Validations } from 'aws-cdk-lib';
import { AwsSolutionsChecks } from 'cdk-nag';
import { functionCodeFromContext } from '../lib/gateway';
import { ForgebenchStack } from '../lib/stack';

const app = new App();
new ForgebenchStack(app, (app.node.tryGetContext('stackName') as string | undefined) ?? 'forgebench-cdk', {
  description: 'Forgebench A2A gateway: governed agent-to-agent tasks behind API Gateway REST, one Lambda function per route, state in one DynamoDB table.',
  code: functionCodeFromContext(app),
});
Validations.of(app).addPlugins(new AwsSolutionsChecks(app, { verbose: true }));
