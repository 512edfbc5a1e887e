#!/usr/bin/env bash
# Runs the SDKs' tests (sdk/python, sdk/typescript) against a local gateway of their own, on a
# free port with a fresh table, over a local stack that is already up (the AWS_* settings of
# scripts/local-stack.sh env). Each SDK's runner installs what it needs (a venv from PyPI, npm
# packages) on first use. The docs' samples run there as written.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
export FORGEBENCH_URL="http://127.0.0.1:$port"
export FORGEBENCH_TABLE="sdk-tests-$(date +%s)-$$"
export FORGEBENCH_OPERATOR_KEY="fb_op_$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')"
export FORGEBENCH_LISTEN="127.0.0.1:$port" FORGEBENCH_PUBLIC_URL="$FORGEBENCH_URL"
export FORGEBENCH_PUSH_ALLOWED_CIDRS=127.0.0.0/8 RUST_LOG=warn

cargo build --quiet --locked -p forgebench-local
log="$root/.local/sdk-tests-gateway.log"
target/debug/forgebench-local >"$log" 2>&1 &
gateway=$!
trap 'kill $gateway 2>/dev/null || true' EXIT
for _ in $(seq 1 150); do curl -s -o /dev/null "$FORGEBENCH_URL/openapi.json" && break; sleep 0.2; done
if ! kill -0 "$gateway" 2>/dev/null || ! curl -s -o /dev/null "$FORGEBENCH_URL/openapi.json"; then
  echo "sdk-tests: the local gateway did not come up on $FORGEBENCH_URL; its log:" >&2
  cat "$log" >&2
  exit 1
fi

echo "== Python SDK (sdk/python)" >&2
sdk/python/test.sh -q
echo "== TypeScript SDK (sdk/typescript)" >&2
sdk/typescript/test.sh
