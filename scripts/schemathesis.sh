#!/usr/bin/env bash
# Fuzzes the local gateway from its own OpenAPI document with schemathesis, once per kind of key
# (operator, viewer, member, admin, agent; the operator's and the agent's runs in two halves
# each), and once more with an admin's and an agent's key as a user would run it, without hooks or
# ids (plain-*), every phase (examples, coverage, fuzzing, stateful) and every check: no 5xx,
# every response matching its schema, no schema-valid request refused and no schema-violating
# request accepted. tests/schemathesis/setup.py makes the ids first and
# tests/schemathesis/schemathesis.toml puts them into the path parameters, so every operation
# reaches its logic; tests/schemathesis/hooks.py (SCHEMATHESIS_HOOKS) keeps the rules no schema can
# hold (issued cursors, public push URLs, task states) in the schema-valid cases and judges the
# JSON-RPC binding's answers. Prints the cases per operation and fails on any failure.
#
# Runs against a local stack that is already up (the AWS_* settings of scripts/local-stack.sh
# env) with a fresh table. Bounded for CI (FORGEBENCH_SCHEMATHESIS_EXAMPLES=5 cases per
# operation and phase); a longer run: FORGEBENCH_SCHEMATHESIS_EXAMPLES=500 scripts/schemathesis.sh
# Some kinds only: FORGEBENCH_SCHEMATHESIS_KINDS="plain-admin plain-agent" (space-separated).
# Then checks that a TypeScript client generated from the document compiles
# (tests/openapi-client/check.sh).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
scripts/install.sh schemathesis
examples=${FORGEBENCH_SCHEMATHESIS_EXAMPLES:-5}
# A free port unless one is named, so a second gateway on this machine cannot answer for ours.
. scripts/lib/local-gateway.sh
port=${FORGEBENCH_SCHEMATHESIS_PORT:-$(free_port)}
base="http://127.0.0.1:$port"
export FORGEBENCH_TABLE="schemathesis-$(date +%s)-$$"
export FORGEBENCH_OPERATOR_KEY="fb_op_schemathesis_$(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n')"
# Waits are served up to 1 s here (a deployment bound), so long polls stay inside the fuzzer's
# request timeout and the run stays short; streams keep alive every second. Cards need a base.
export FORGEBENCH_LISTEN="127.0.0.1:$port" RUST_LOG=warn FORGEBENCH_MAX_WAIT_SECONDS=1 \
  FORGEBENCH_STREAM_MAX_SECONDS=10 FORGEBENCH_STREAM_KEEPALIVE_SECONDS=1 FORGEBENCH_PUBLIC_URL="$base"

echo "== the document's examples: one on every request and response body, each valid" >&2
"$root/.local/openapi-examples-venv/bin/python" tests/openapi-examples/check.py infra/openapi.yaml

start_local_gateway "$base" "$root/.local/schemathesis-gateway.log"

python="$root/.local/venv/bin/python"
reports="$root/.local/schemathesis-reports"
rm -rf "$reports" && mkdir -p "$reports"
curl -sf "$base/openapi.json" >"$reports/openapi.json"

# One seed, so a CI run is reproducible and its failures can be replayed; a longer run can vary
# it (FORGEBENCH_SCHEMATHESIS_SEED) to explore further.
seed=${FORGEBENCH_SCHEMATHESIS_SEED:-20261202}
echo "== schemathesis seed $seed" >&2

# The A2A binding's REST routes (all but JSON-RPC): the agent key reaches every operation, and its
# run is split in two along this line so that the two halves take about as long as each other kind.
a2a_rest='/a2a/(?!jsonrpc$)'
# The operator's own operations (tenants and the deployment's signing keys). Everywhere else the
# operator key is refused, which its second half (operator-refused) checks beside the tenant
# kinds, without the coverage phase: every case there is the one documented 403.
operator_own='^/(v1/tenants$|v1/signing-keys/|v1/billing/export/pubkey$|\.well-known/jwks\.json$)'
kinds=(viewer member admin agent agent-a2a plain-admin plain-agent operator-refused)
# Some kinds only, e.g. FORGEBENCH_SCHEMATHESIS_KINDS="plain-admin plain-agent" for a longer run
# of the two plain ones (the operator's runs only when named). Every kind unless set.
only_kinds=${FORGEBENCH_SCHEMATHESIS_KINDS:-}
if [ -n "$only_kinds" ]; then
  read -r -a kinds <<<"$only_kinds"
fi

# One run per kind of key, each on a tenant of its own that setup.py makes for it, so runs at once
# cannot touch each other's agents, keys or tasks. Its output goes to its own log.
run_kind() {
  local kind=$1 key me filter=() phases=examples,coverage,fuzzing,stateful
  eval "$("$python" tests/schemathesis/setup.py "$base" "$FORGEBENCH_OPERATOR_KEY")"
  case $kind in
    # As a user of the document would run it: no hooks, no ids in the paths, every check but
    # the two that want schema-violating requests refused (the JSON-RPC binding answers those,
    # a missing A2A-Version included, in a 200, which the hooked runs judge from the body).
    # Nothing the document calls valid may be refused. Without ids the stateful phase also reads
    # a 404 for an agent the body names (a grant to the example's callees, which a fresh tenant
    # does not have: a documented 404) as the path's new agent gone missing, so the check that a
    # created resource can be found is left to the hooked runs, whose tenants hold those agents.
    # A tenant policy's text is Cedar and its name a slug, which no JSON schema can hold to a
    # grammar: a string the document calls valid is mostly not a policy (a documented 400). So
    # UpdateTenantPolicies is left to the hooked runs, whose hooks send policies that parse.
    plain-admin | plain-agent)
      key=$ST_ADMIN_KEY
      [ "$kind" = plain-agent ] && key=$ST_CALLER_KEY
      local plain
      plain=$(mktemp -d)
      cd "$plain" && "$root/.local/venv/bin/st" run "$base/openapi.json" \
        -H "Authorization: Bearer $key" -H "A2A-Version: 1.0" \
        --max-examples "$examples" --seed "$seed" --generation-database none --no-color \
        --request-timeout 10 --exclude-checks negative_data_rejection,missing_required_header,ensure_resource_availability \
        --exclude-operation-id UpdateTenantPolicies \
        --report ndjson --report-ndjson-path "$reports/$kind.ndjson"
      return ;;
    operator) key=$ST_OPERATOR_KEY filter=(--include-path-regex "$operator_own") ;;
    operator-refused) key=$ST_OPERATOR_KEY filter=(--exclude-path-regex "$operator_own")
      phases=examples,fuzzing ;;
    viewer) key=$ST_VIEWER_KEY ;;
    member) key=$ST_MEMBER_KEY ;;
    admin) key=$ST_ADMIN_KEY ;;
    agent) key=$ST_CALLER_KEY filter=(--exclude-path-regex "$a2a_rest") ;;
    # No link of the document joins these operations: no stateful phase for them alone.
    agent-a2a) key=$ST_CALLER_KEY filter=(--include-path-regex "$a2a_rest")
      phases=examples,coverage,fuzzing ;;
  esac
  # The `/v1/agents/me/...` routes take the callee's key in the agent runs, the run's key else.
  me=$key
  [ "$key" = "$ST_CALLER_KEY" ] && me=$ST_CALLEE_KEY
  cd tests/schemathesis && ST_KEY=$key ST_ME_KEY=$me ST_BASE=$base SCHEMATHESIS_HOOKS=hooks \
    PYTHONPATH="$root/tests/schemathesis" "$root/.local/venv/bin/st" run "$base/openapi.json" \
    --phases "$phases" --max-examples "$examples" --seed "$seed" \
    --generation-database none --no-color "${filter[@]}" \
    --report ndjson --report-ndjson-path "$reports/$kind.ndjson"
}

status=0
# The operator's own operations first, alone: they rotate and retire the deployment's signing
# keys, which every tenant's cards use. Then the other kinds at once.
if [ -z "$only_kinds" ] || [[ " ${kinds[*]} " == *" operator "* ]]; then
  echo "== schemathesis with the operator key" >&2
  (run_kind operator) || status=1
fi
declare -A runs=()
for kind in "${kinds[@]}"; do
  [ "$kind" = operator ] && continue
  (run_kind "$kind") >"$reports/$kind.log" 2>&1 &
  runs[$kind]=$!
done
for kind in "${kinds[@]}"; do
  [ "$kind" = operator ] && continue
  kind_status=0
  wait "${runs[$kind]}" || kind_status=$?
  echo "== schemathesis with the $kind key (exit $kind_status)" >&2
  cat "$reports/$kind.log" >&2
  [ "$kind_status" = 0 ] || status=1
done
# Some kinds alone need not reach every operation: their failures still fail the run.
summary_args=()
[ -n "$only_kinds" ] && summary_args=(--some-kinds)
"$python" tests/schemathesis/summary.py "${summary_args[@]}" "$reports/openapi.json" \
  "$reports"/*.ndjson || status=1
[ "$status" = 0 ] || exit 1

tests/openapi-client/check.sh "$reports/openapi.json"
