#!/usr/bin/env bash
# Fuzzes the local gateway from its own OpenAPI document with schemathesis: no 5xx, and every
# response matches its documented schema. Runs against a local stack that is already up (the
# AWS_* settings of scripts/local-stack.sh env) with a fresh table, once with an admin key and
# once with an agent key that is bound to another agent.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
# A free port unless one is named, so a second gateway on this machine cannot answer for ours.
. scripts/lib/local-gateway.sh
port=${FORGEBENCH_SCHEMATHESIS_PORT:-$(free_port)}
base="http://127.0.0.1:$port"
export FORGEBENCH_TABLE="schemathesis-$(date +%s)-$$"
export FORGEBENCH_OPERATOR_KEY="fb_op_schemathesis_$(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n')"
# Waits are served up to 1 s here (a deployment bound), so long polls stay inside the fuzzer's
# request timeout and the run stays short.
export FORGEBENCH_LISTEN="127.0.0.1:$port" RUST_LOG=warn FORGEBENCH_MAX_WAIT_SECONDS=1

start_local_gateway "$base" "$root/.local/schemathesis-gateway.log"

json() { "$root/.local/venv/bin/python" -c "import json,sys; print(json.load(sys.stdin)$1)"; }
post() { curl -s -X POST "$base$1" -H "Authorization: Bearer $2" -H 'content-type: application/json' -d "$3"; }
admin=$(post /v1/tenants "$FORGEBENCH_OPERATOR_KEY" '{"name":"fuzz"}' | json '["admin_key"]')
post /v1/agents "$admin" '{"name":"caller"}' >/dev/null
post /v1/agents "$admin" '{"name":"callee"}' >/dev/null
post /v1/agents/caller/agents "$admin" '{"callees":["callee"]}' >/dev/null
agent=$(post /v1/agents/caller/keys "$admin" '{}' | json '["key"]')

for key in "$admin" "$agent"; do
  "$root/.local/venv/bin/st" run "$base/openapi.json" -H "Authorization: Bearer $key" \
    --checks not_a_server_error,response_schema_conformance --max-examples 25 \
    --phases examples,fuzzing
done
