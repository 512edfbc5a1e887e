#!/usr/bin/env bash
# Brings the whole gateway up locally from a fresh clone: installs what running it needs (and only
# that: the test and deployment tools come with the commands that use them), starts the local AWS
# stack (DynamoDB Local, moto for SQS, KMS and S3) while the gateway builds, then starts the
# gateway, which creates its table from infra/template.yaml. Prints each step's time, the URL and
# the operator key.
#   FORGEBENCH_LISTEN        address to serve on (default 127.0.0.1:8080; 0.0.0.0:8080 for all)
#   FORGEBENCH_OPERATOR_KEY  operator key (default: a new random one, printed below)
#   FORGEBENCH_TABLE         table name (default forgebench)
#   FORGEBENCH_PUBLIC_URL    the base URL cards name (default: the URL this listens on)
#   FORGEBENCH_PUSH_ALLOWED_CIDRS  ranges push endpoints may reach besides public addresses;
#                            127.0.0.0/8 here so callees on this machine can be tried out
#                            (local development only: a deployment leaves it empty)
# Stop with Ctrl-C; `scripts/local-stack.sh stop` stops the emulators.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

steps_logs="$root/.local/logs/up"
. scripts/lib/steps.sh

# The emulators install and start while cargo builds: neither waits for the other.
spawn local-stack scripts/local-stack.sh start
step "build the local gateway" cargo build --locked -p forgebench-local
await local-stack
print_step_times
eval "$(scripts/local-stack.sh env)"
export FORGEBENCH_TABLE=${FORGEBENCH_TABLE:-forgebench}
export FORGEBENCH_LISTEN=${FORGEBENCH_LISTEN:-127.0.0.1:8080}
export FORGEBENCH_PUSH_ALLOWED_CIDRS=${FORGEBENCH_PUSH_ALLOWED_CIDRS-127.0.0.0/8}
if [ -z "${FORGEBENCH_OPERATOR_KEY:-}" ]; then
  FORGEBENCH_OPERATOR_KEY="fb_op_$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')"
  export FORGEBENCH_OPERATOR_KEY
fi

url="http://${FORGEBENCH_LISTEN/0.0.0.0/127.0.0.1}"
export FORGEBENCH_PUBLIC_URL=${FORGEBENCH_PUBLIC_URL:-$url}
cat >&2 <<INFO

  Forgebench gateway: $url
  Operator key:       $FORGEBENCH_OPERATOR_KEY
  Push may reach:     public addresses${FORGEBENCH_PUSH_ALLOWED_CIDRS:+ and $FORGEBENCH_PUSH_ALLOWED_CIDRS (local development)}
  Create a tenant:    curl -X POST $url/v1/tenants -H "Authorization: Bearer \$FORGEBENCH_OPERATOR_KEY" -d '{"name":"acme"}'

INFO
exec target/debug/forgebench-local
