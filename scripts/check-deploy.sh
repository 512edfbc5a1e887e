#!/usr/bin/env bash
# Checks that the gateway deploys: lints the SAM template (cfn-lint, `sam validate --lint`), scans
# it for security findings (checkov, infra/checkov.yaml), runs `sam build` as a deploy does (it
# builds the one gateway binary for arm64 in release mode with cargo-lambda, once, and packages it
# into every function), checks that every function got that same artifact, and checks the CDK app
# against the same build. Prints each step's time and the package's size. Part of CI (scripts/ci.sh).
#   scripts/check-deploy.sh          every step
#   scripts/check-deploy.sh lint     the template checks only (no build)
#   scripts/check-deploy.sh build    sam build, the artifact checks and the CDK app only
# FORGEBENCH_DEPLOY_BUILD=debug has `sam build` build the same binary for the same target (arm64)
# through the same path with cargo's dev profile instead of release (SAM_BUILD_MODE=debug): what
# CI runs, since the release build alone took longer than the rest of a CI run's compiling
# (docs/loop.md). A deploy builds release.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
what=${1:-all}
scripts/install.sh deploy
export PATH="$root/.local/venv/bin:$PATH" SAM_CLI_TELEMETRY=0 AWS_REGION=${AWS_REGION:-us-east-1}

step() { echo "== $1" >&2; started=$(date +%s); }
took() { echo "   took $(( $(date +%s) - started )) s" >&2; }

lint() {
  step "cfn-lint infra/template.yaml"
  local status=0
  cfn-lint infra/template.yaml || status=$?
  # cfn-lint's exit code is a bit mask: 2 = errors, 4 = warnings, 8 = informational.
  if (( status & 2 )); then echo "cfn-lint found errors" >&2; exit 1; fi
  took

  step "sam validate --lint"
  sam validate --lint -t infra/template.yaml
  took

  step "checkov infra/template.yaml (skips reasoned in infra/checkov.yaml)"
  "$root/.local/checkov-venv/bin/checkov" --config-file infra/checkov.yaml -f infra/template.yaml --quiet
  took
}

build() {
  # `sam build` runs `cargo lambda build --release --arm64 --bin gateway` over the workspace's
  # default member (functions/gateway) once for the functions that share that build definition,
  # all of them here, and copies the bootstrap into each function's artifact.
  local mode=${FORGEBENCH_DEPLOY_BUILD:-release}
  case $mode in release | debug) ;; *) echo "FORGEBENCH_DEPLOY_BUILD is release or debug, not $mode" >&2; exit 2 ;; esac
  step "sam build (the gateway binary for arm64, $mode profile, as a deploy builds it)"
  # A target directory of its own: cargo's lock on the workspace's would make the debug build
  # and the tests beside it (scripts/ci.sh) wait for this one, and the arm64 build shares
  # nothing with them but build scripts.
  export CARGO_TARGET_DIR=${FORGEBENCH_DEPLOY_TARGET_DIR:-$root/target/deploy}
  # SAM's own switch: SAM_BUILD_MODE=debug drops cargo-lambda's --release; it has no other value.
  if [ "$mode" = debug ]; then export SAM_BUILD_MODE=debug; else unset SAM_BUILD_MODE; fi
  sam build --beta-features -t infra/template.yaml --build-dir target/sam-build >/dev/null
  took

  step "every function packages the same gateway artifact"
  # sam build writes the template a deploy packages: each function's CodeUri names the folder
  # of its artifact. One build definition for all of them means one shared folder.
  local built=target/sam-build/template.yaml functions uris first
  functions=$(awk '/^  [A-Za-z0-9]+:$/ {id = $1} /Type: AWS::Serverless::Function/ {sub(":", "", id); print id}' infra/template.yaml)
  uris=$(awk '/^  [A-Za-z0-9]+:$/ {id = $1; sub(":", "", id)} /^      CodeUri: / {print id, $2}' "$built")
  for function in $functions; do
    uri=$(awk -v id="$function" '$1 == id {print $2}' <<<"$uris")
    [ -n "$uri" ] || { echo "sam build left no artifact for $function" >&2; exit 1; }
    test -x "target/sam-build/$uri/bootstrap" || { echo "$function: no bootstrap in target/sam-build/$uri" >&2; exit 1; }
  done
  first=$(awk 'NR == 1 {print $2}' <<<"$uris")
  artifacts=$(awk '{print $2}' <<<"$uris" | sort -u | wc -l)
  [ "$artifacts" = 1 ] || { echo "the functions package $artifacts artifacts, not one:" >&2; echo "$uris" >&2; exit 1; }
  mkdir -p target/lambda-arm64/gateway
  cp "target/sam-build/$first/bootstrap" target/lambda-arm64/gateway/bootstrap
  awk -v n="$(wc -w <<<"$functions")" -v dir="$first" -v bytes="$(stat -c %s target/lambda-arm64/gateway/bootstrap)" \
    -v mode="$mode" 'BEGIN { printf "   %d functions, one artifact (%s): the gateway bootstrap, arm64, %s profile, %.1f MB\n", n, dir, mode, bytes / 1048576 }' >&2
  took

  # The CDK path (infra/cdk): strict tsc, offline synth with cdk-nag packaging the build above,
  # the drift test against the SAM template.
  bash scripts/cdk-check.sh
}

case $what in
  lint) lint ;;
  build) build ;;
  all) lint; build ;;
  *) echo "usage: $0 [lint|build|all]" >&2; exit 2 ;;
esac
