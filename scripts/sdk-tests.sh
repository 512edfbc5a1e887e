#!/usr/bin/env bash
# Runs the SDKs' tests (sdk/python, sdk/typescript) and the console's browser tests (console/,
# headless Chromium) over a local stack that is already up (the AWS_* settings of
# scripts/local-stack.sh env), all at once, each against a local gateway of its own (a free port, a fresh table, its own operator key): one suite's changes to the
# deployment (a rotated signing key, a tenant's settings) never meet the other's tests. Each
# SDK's runner installs what it needs (a venv from PyPI, npm packages) on first use. The docs'
# samples run there as written. Each runner type-checks first: the Python package and its tests
# with `mypy --strict`, the TypeScript samples with `tsc --strict`. The checks that the samples
# are the docs' own read shared/seeds beside the clone; a checkout without it skips them, but
# with CI set they fail instead. After a suite, its gateway's access log must show every
# operation the SDKs should reach requested with that SDK's User-Agent
# (scripts/operations-reached.py).
#
#   scripts/sdk-tests.sh [python|typescript|console]...   (all when none is named)
set -euo pipefail
suites=("$@")
[ $# -gt 0 ] || suites=(python typescript console)
declare -A folders=([python]=sdk/python [typescript]=sdk/typescript [console]=console)
declare -A user_agents=([python]=forgebench-python/ [typescript]=forgebench-sdk-typescript/)
for suite in "${suites[@]}"; do
  [ -n "${folders[$suite]:-}" ] || {
    echo "sdk-tests.sh: no suite named '$suite' (python, typescript, console)" >&2
    exit 2
  }
done
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
. scripts/lib/local-gateway.sh
logs="$root/.local/logs"
mkdir -p "$logs"

# One suite against a gateway of its own; run in a subshell (the gateway stops when it exits).
run_suite() {
  local suite=$1 port status=0
  port=$(free_port)
  export FORGEBENCH_URL="http://127.0.0.1:$port" FORGEBENCH_LISTEN="127.0.0.1:$port"
  export FORGEBENCH_PUBLIC_URL="$FORGEBENCH_URL"
  export FORGEBENCH_TABLE="sdk-$suite-$(date +%s)-$$"
  FORGEBENCH_OPERATOR_KEY="fb_op_$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')"
  export FORGEBENCH_OPERATOR_KEY
  export FORGEBENCH_PUSH_ALLOWED_CIDRS=127.0.0.0/8 RUST_LOG=warn
  export FORGEBENCH_ACCESS_LOG="$logs/sdk-$suite-access.log"
  : >"$FORGEBENCH_ACCESS_LOG"
  start_local_gateway "$FORGEBENCH_URL" "$logs/sdk-$suite-gateway.log"
  if [ "$suite" = python ]; then
    sdk/python/test.sh -q || status=1
  else
    "${folders[$suite]}"/test.sh || status=1
  fi
  if [ -n "${user_agents[$suite]:-}" ]; then
    echo "== the operations the $suite SDK's suite requested (scripts/operations-reached.py)"
    "$root/.local/venv/bin/python" scripts/operations-reached.py "$FORGEBENCH_ACCESS_LOG" \
      "$suite=${user_agents[$suite]}" || status=1
  fi
  return "$status"
}

# The suites at once (they mostly wait on their gateways), each into a log of its own, printed
# whole when all are done.
declare -A pids
for suite in "${suites[@]}"; do
  (run_suite "$suite") >"$logs/sdk-$suite.log" 2>&1 &
  pids[$suite]=$!
done
status=0
for suite in "${suites[@]}"; do
  wait "${pids[$suite]}" || status=1
done
for suite in "${suites[@]}"; do
  echo "== $suite (${folders[$suite]})" >&2
  cat "$logs/sdk-$suite.log" >&2
done
exit "$status"
