#!/usr/bin/env bash
# Runs the SDKs' tests (sdk/python, sdk/typescript) against a local gateway of their own, on a
# free port with a fresh table, over a local stack that is already up (the AWS_* settings of
# scripts/local-stack.sh env), both at once. Each SDK's runner installs what it needs (a venv
# from PyPI, npm packages) on first use. The docs' samples run there as written. Each runner type-checks first:
# the Python package and its tests with `mypy --strict`, the TypeScript samples with `tsc
# --strict`. The checks that the samples are the docs' own read shared/seeds beside the clone; a
# checkout without it skips them, but with CI set they fail instead.
#
#   scripts/sdk-tests.sh [python|typescript]   (both when none is named)
set -euo pipefail
suites=("$@")
[ $# -gt 0 ] || suites=(python typescript)
for suite in "${suites[@]}"; do
  case "$suite" in
    python | typescript) ;;
    *) echo "sdk-tests.sh: no SDK suite named '$suite' (python, typescript)" >&2; exit 2 ;;
  esac
done
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
. scripts/lib/local-gateway.sh
port=$(free_port)
export FORGEBENCH_URL="http://127.0.0.1:$port"
export FORGEBENCH_TABLE="sdk-tests-$(date +%s)-$$"
export FORGEBENCH_OPERATOR_KEY="fb_op_$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')"
export FORGEBENCH_LISTEN="127.0.0.1:$port" FORGEBENCH_PUBLIC_URL="$FORGEBENCH_URL"
export FORGEBENCH_PUSH_ALLOWED_CIDRS=127.0.0.0/8 RUST_LOG=warn
# Every request the gateway routes, with its operation and User-Agent: the check at the end
# reads it to show that each SDK's suite requested every operation the SDKs should reach.
logs="$root/.local/logs"
mkdir -p "$logs"
export FORGEBENCH_ACCESS_LOG="$logs/sdk-access.log"
: >"$FORGEBENCH_ACCESS_LOG"

start_local_gateway "$FORGEBENCH_URL" "$root/.local/sdk-tests-gateway.log"

# The suites at once (they mostly wait on the gateway), each into a log of its own, printed
# whole when all are done.
declare -A pids
for suite in "${suites[@]}"; do
  sdk/"$suite"/test.sh $([ "$suite" = python ] && echo -q) >"$logs/sdk-$suite.log" 2>&1 &
  pids[$suite]=$!
done
status=0
for suite in "${suites[@]}"; do
  wait "${pids[$suite]}" || status=1
done
for suite in "${suites[@]}"; do
  echo "== $suite SDK (sdk/$suite)" >&2
  cat "$logs/sdk-$suite.log" >&2
done
declare -A user_agents=([python]=forgebench-python/ [typescript]=forgebench-sdk-typescript/)
reached=()
for suite in "${suites[@]}"; do
  reached+=("$suite=${user_agents[$suite]}")
done
echo "== the operations each SDK's suite requested (scripts/operations-reached.py)" >&2
"$root/.local/venv/bin/python" scripts/operations-reached.py "$FORGEBENCH_ACCESS_LOG" "${reached[@]}" || status=1
exit "$status"
