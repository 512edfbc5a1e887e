#!/usr/bin/env bash
# Runs the SDKs' tests (sdk/python, sdk/typescript) against a local gateway of their own, on a
# free port with a fresh table, over a local stack that is already up (the AWS_* settings of
# scripts/local-stack.sh env), both at once. Each SDK's runner installs what it needs (a venv
# from PyPI, npm packages) on first use. The docs' samples run there as written. Each runner type-checks first:
# the Python package and its tests with `mypy --strict`, the TypeScript samples with `tsc
# --strict`. The checks that the samples are the docs' own read shared/seeds beside the clone; a
# checkout without it skips them, but with CI set they fail instead.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
. scripts/lib/local-gateway.sh
port=$(free_port)
export FORGEBENCH_URL="http://127.0.0.1:$port"
export FORGEBENCH_TABLE="sdk-tests-$(date +%s)-$$"
export FORGEBENCH_OPERATOR_KEY="fb_op_$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')"
export FORGEBENCH_LISTEN="127.0.0.1:$port" FORGEBENCH_PUBLIC_URL="$FORGEBENCH_URL"
export FORGEBENCH_PUSH_ALLOWED_CIDRS=127.0.0.0/8 RUST_LOG=warn

start_local_gateway "$FORGEBENCH_URL" "$root/.local/sdk-tests-gateway.log"

# Both suites at once (they mostly wait on the gateway), each into a log of its own, printed
# whole when both are done.
logs="$root/.local/logs"
mkdir -p "$logs"
sdk/python/test.sh -q >"$logs/sdk-python.log" 2>&1 &
python_suite=$!
sdk/typescript/test.sh >"$logs/sdk-typescript.log" 2>&1 &
typescript_suite=$!
status=0
wait "$python_suite" || status=1
wait "$typescript_suite" || status=1
echo "== Python SDK (sdk/python): mypy --strict, then pytest" >&2
cat "$logs/sdk-python.log" >&2
echo "== TypeScript SDK (sdk/typescript)" >&2
cat "$logs/sdk-typescript.log" >&2
exit "$status"
