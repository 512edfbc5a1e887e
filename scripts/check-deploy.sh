#!/usr/bin/env bash
# Checks that the gateway deploys: lints the SAM template (cfn-lint, `sam validate --lint`),
# scans it for security findings (checkov, infra/checkov.yaml), builds every Lambda function for
# arm64 in release mode with cargo-lambda, then runs `sam build` over that build (incremental:
# the workspace's default members are the functions, so its per-function builds have the same
# features; see Cargo.toml), which checks the template's build metadata as a deploy uses it.
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

step "sam build (every function through cargo-lambda, as a deploy builds them; incremental over the build above)"
sam build --beta-features -t infra/template.yaml --build-dir target/sam-build >/dev/null
for dir in functions/*/; do
  function_dir=$(grep -B6 "Binary: $(basename "$dir")\$" infra/template.yaml | awk '/^  [A-Za-z0-9]+Function:/ {print $1}' | tr -d :)
  test -x "target/sam-build/$function_dir/bootstrap" || { echo "sam build left no bootstrap for $(basename "$dir")" >&2; exit 1; }
done
took

echo "== bootstrap sizes (arm64, stripped)" >&2
for dir in functions/*/; do
  name=$(basename "$dir")
  awk -v name="$name" -v bytes="$(stat -c %s "target/lambda-arm64/$name/bootstrap")" \
    'BEGIN { printf "%-26s %6.1f MB\n", name, bytes / 1048576 }' >&2
done
bash scripts/cdk-check.sh   # the CDK path (infra/cdk): strict tsc, offline synth with cdk-nag, drift test against the SAM template
