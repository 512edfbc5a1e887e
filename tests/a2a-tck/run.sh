#!/usr/bin/env bash
# Runs the A2A project's compatibility kit (a2a-tck, its 1.0 branch, a checkout at KIT_DIR: it is
# on no package registry) against one agent of a local gateway, one binding a run:
#   tests/a2a-tck/run.sh KIT_DIR [jsonrpc|http_json] [-- pytest args]
# On a running local stack (the AWS_* settings of scripts/local-stack.sh env). It makes a fresh
# tenant with a caller bound to a callee, plays the kit's scenarios with a pull callee
# (callee.py), serves the callee to the kit through proxy.py (the kit sends no credentials), and
# installs the kit's dependencies into .local/tck-venv. Push configs may point at loopback, where
# the kit's webhook receiver listens. Not part of CI; docs/a2a.md has the last figures.
set -euo pipefail
kit=$(cd "${1:?usage: run.sh KIT_DIR [jsonrpc|http_json] [-- pytest args]}" && pwd)
binding=${2:-jsonrpc}
shift $(( $# >= 2 ? 2 : 1 ))
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
venv=$root/.local/tck-venv
[ -x "$venv/bin/python" ] || python3 -m venv "$venv"
"$venv/bin/pip" install -q "$kit" httpx
. scripts/lib/local-gateway.sh
port=$(free_port)
base="http://127.0.0.1:$port"
export FORGEBENCH_TABLE="tck-$(date +%s)-$$"
export FORGEBENCH_OPERATOR_KEY="fb_op_tck_$(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n')"
export FORGEBENCH_LISTEN="127.0.0.1:$port" RUST_LOG=warn FORGEBENCH_PUBLIC_URL="$base" \
  FORGEBENCH_PUSH_ALLOWED_CIDRS=127.0.0.0/8
start_local_gateway "$base" "$root/.local/tck-gateway.log"
read -r caller_key callee_id callee_key < <("$venv/bin/python" - "$base" "$FORGEBENCH_OPERATOR_KEY" <<'PY'
import sys
import httpx
base, operator = sys.argv[1], sys.argv[2]
client = httpx.Client(base_url=base, headers={"A2A-Version": "1.0"})
def call(key, path, body):
    reply = client.post(path, json=body, headers={"Authorization": f"Bearer {key}"})
    reply.raise_for_status()
    return reply.json()
admin = call(operator, "/v1/tenants", {"name": "tck"})["admin_key"]
caller = call(admin, "/v1/agents", {"name": "tck-caller"})
# The media types the kit's reference agent states on its card (text), and data parts.
callee = call(admin, "/v1/agents", {"name": "tck-callee",
                                    "input_modes": ["text/plain", "application/json"]})
caller_key = call(admin, f"/v1/agents/{caller['id']}/keys", {})["key"]
callee_key = call(admin, f"/v1/agents/{callee['id']}/keys", {})["key"]
call(admin, f"/v1/agents/{caller['id']}/agents", {"callees": [callee["name"]]})
print(caller_key, callee["id"], callee_key)
PY
)
proxy_port=$(free_port)
"$venv/bin/python" tests/a2a-tck/callee.py "$base" "$callee_key" &
callee=$!
"$venv/bin/python" tests/a2a-tck/proxy.py "$proxy_port" "$base" "$callee_id" "$caller_key" &
proxy=$!
trap 'kill $callee $proxy $local_gateway_pid 2>/dev/null || true' EXIT
sleep 1
cd "$kit"
"$venv/bin/python" run_tck.py --sut-host "http://127.0.0.1:$proxy_port" --transport "$binding" "$@"
