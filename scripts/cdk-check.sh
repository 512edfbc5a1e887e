#!/usr/bin/env bash
# Checks the CDK path (infra/cdk, the forgebench-gateway-cdk construct library and its apps):
# installs its packages from package-lock.json, builds it as cdk.json's "build" says (strict tsc),
# synthesizes offline with cdk-nag's AwsSolutions checks (which fail the synth on any
# unacknowledged finding) both the gateway's stack (bin/app.ts) and the example app that embeds
# the construct in a stack of its own (examples/embedded.ts), and runs the tests: the construct's
# (aws-cdk-lib/assertions), the WAF's, and the drift test of the gateway's stack against
# infra/template.yaml. Part of CI (scripts/check-deploy.sh, after the arm64 build).
#
# The stacks package the prebuilt arm64 gateway binary, target/lambda-arm64/gateway/bootstrap, once
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

build=$(node -p 'require("./cdk.json").build')
step "build: $build (strict)"
# cdk.json's "build", which `cdk synth` runs before the app, run here once: both synths below
# skip it (--build ''). One compile is the type check: tsconfig's noEmitOnError leaves dist/
# untouched on any error.
bash -c "$build"
took

# Offline: no account or region, so nothing to look up and no credentials read.
synth() {
  env -u AWS_PROFILE -u AWS_DEFAULT_PROFILE AWS_EC2_METADATA_DISABLED=true CDK_DISABLE_VERSION_CHECK=1 \
    npx --no-install cdk synth --build '' --no-lookups --no-notices --no-version-reporting --quiet -c "code=$code" "$@" >/dev/null
}
resources() {
  local n
  n=$(node -e 'console.log(Object.keys(require(process.argv[1]).Resources).length)' "$PWD/$1")
  echo "   $n resources in $1" >&2
}

step "cdk synth: the gateway's stack (cdk.json's app, offline, code=$code, cdk-nag AwsSolutions)"
rm -rf cdk.out
synth
resources cdk.out/forgebench-cdk.template.json
took

step "cdk synth: the example app embedding the construct (offline, code=$code, cdk-nag AwsSolutions)"
rm -rf cdk.out.example
# --no-validation: without CDK's built-in CloudFormation validation (about 10 s), which the synth
# above ran on the same gateway; cdk-nag, the app's own plugin, still runs.
synth --app 'node dist/examples/embedded.js' --output cdk.out.example --no-validation
resources cdk.out.example/agent-platform.template.json
took

step "tests: the construct, its web ACL, the drift test (the gateway's stack against infra/template.yaml)"
node --test dist/test/*.test.js
took
