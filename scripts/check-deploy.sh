#!/usr/bin/env bash
# Checks that the gateway deploys: lints the SAM template (cfn-lint, `sam validate --lint`),
# scans it for security findings (checkov, infra/checkov.yaml), and builds every Lambda function
# for arm64 in release mode with cargo-lambda, as `sam build` does (`sam build` itself rebuilds
# the dependencies under its own environment, which would double the step).
# Prints each step's time and the size of every bootstrap. Part of CI (.ci/run).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
FORGEBENCH_INSTALL_DEPLOY_TOOLS=1 scripts/install.sh
export PATH="$root/.local/venv/bin:$PATH" SAM_CLI_TELEMETRY=0 AWS_REGION=${AWS_REGION:-us-east-1}

step() { echo "== $1" >&2; started=$(date +%s); }
took() { echo "   took $(( $(date +%s) - started )) s" >&2; }

step "cfn-lint infra/template.yaml"
status=0
cfn-lint infra/template.yaml || status=$?
# cfn-lint's exit code is a bit mask: 2 = errors, 4 = warnings, 8 = informational.
if (( status & 2 )); then echo "cfn-lint found errors" >&2; exit 1; fi
took

step "sam validate --lint"
sam validate --lint -t infra/template.yaml
took

step "checkov infra/template.yaml (skips reasoned in infra/checkov.yaml)"
"$root/.local/checkov-venv/bin/checkov" --config-file infra/checkov.yaml -f infra/template.yaml
took

step "cargo lambda build --release --arm64 (every function)"
packages=()
for dir in functions/*/; do packages+=(-p "$(basename "$dir")"); done
cargo lambda build --release --arm64 --locked --lambda-dir target/lambda-arm64 "${packages[@]}"
took

echo "== bootstrap sizes (arm64, stripped)" >&2
for dir in functions/*/; do
  name=$(basename "$dir")
  awk -v name="$name" -v bytes="$(stat -c %s "target/lambda-arm64/$name/bootstrap")" \
    'BEGIN { printf "%-26s %6.1f MB\n", name, bytes / 1048576 }' >&2
done
bash scripts/cdk-check.sh   # the CDK path (infra/cdk): strict tsc, offline synth with cdk-nag, drift test against the SAM template
