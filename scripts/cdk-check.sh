#!/usr/bin/env bash
# Checks the CDK path (infra/cdk): installs its packages from package-lock.json, type-checks it
# (strict), synthesizes the stack offline with cdk-nag's AwsSolutions checks (which fail the synth
# on any unacknowledged finding), and runs the drift test against infra/template.yaml.
# Part of CI (scripts/check-deploy.sh, after the arm64 build).
#
# The stack packages the prebuilt arm64 gateway binary, target/lambda-arm64/gateway/bootstrap, once
# for every function. When it is missing (a machine that has not built it), set
# FORGEBENCH_CDK_CODE=placeholder to synthesize with a stand-in asset instead: every check but the
# packaging itself still runs. Never deploy that cdk.out.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root/infra/cdk"
code=${FORGEBENCH_CDK_CODE:-prebuilt}

step() { echo "== cdk: $1" >&2; started=$(date +%s); }
took() { echo "   took $(( $(date +%s) - started )) s" >&2; }

step "npm ci"
npm ci --no-audit --no-fund --loglevel=error
took

step "tsc (strict)"
# One compile is the type check: tsconfig's noEmitOnError leaves dist/ untouched on any error.
npx --no-install tsc -p .
took

step "cdk synth (offline, code=$code, cdk-nag AwsSolutions)"
rm -rf cdk.out
# No account or region: nothing to look up, no credentials read.
env -u AWS_PROFILE -u AWS_DEFAULT_PROFILE AWS_EC2_METADATA_DISABLED=true CDK_DISABLE_VERSION_CHECK=1 \
  npx --no-install cdk synth --no-lookups --no-notices --no-version-reporting --quiet -c "code=$code" >/dev/null
resources=$(node -e 'console.log(Object.keys(require("./cdk.out/forgebench-cdk.template.json").Resources).length)')
echo "   $resources resources in cdk.out/forgebench-cdk.template.json" >&2
took

step "drift test (CDK stack against infra/template.yaml)"
node --test dist/test/*.test.js
took
