#!/usr/bin/env bash
# Runs the benchmarks in release mode against a local stack of their own:
#   pull-lifecycle  DynamoDB calls per pull task, long-poll cost, answer latency
#   push-delivery   push latency and throughput against a direct POST
#   event-streams   an event stream's idle reads and write-to-event latency beside the long poll's
#   search          task search over an agent with 100,000 tasks beside a full Scan
#   cost            dollars per million tasks, pull and push, from the AWS requests counted
#   partitions      DynamoDB units per partition key per task, and the capacity model on them
#                   (fails unless docs/capacity.md quotes the model it prints)
#   claims          claims/s through the gateway beside raw conditional writes/s, 1 to 8 pollers
#   history         claims, idle waits and searches with 1x, 10x and 100x the finished tasks
#   cold-init       every function's cold start (the one gateway binary, each FORGEBENCH_ROUTE)
#                   and the package's size against a hello-world lambda_http, built with
#                   cargo-lambda for this machine (arm64 builds cannot run here)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
export FORGEBENCH_DYNAMODB_PORT=${FORGEBENCH_BENCH_DYNAMODB_PORT:-8020}
export FORGEBENCH_MOTO_PORT=${FORGEBENCH_BENCH_MOTO_PORT:-5020}
# The search benchmark holds 100,000 tasks (about 600,000 items) in DynamoDB Local's memory.
export FORGEBENCH_DYNAMODB_HEAP=${FORGEBENCH_DYNAMODB_HEAP:-6g}
trap 'scripts/local-stack.sh stop' EXIT
scripts/local-stack.sh start
eval "$(scripts/local-stack.sh env)"
cargo run --release --locked -p forgebench-bench --bin pull-lifecycle
cargo run --release --locked -p forgebench-bench --bin push-delivery
cargo run --release --locked -p forgebench-bench --bin event-streams
cargo run --release --locked -p forgebench-bench --bin search -- 100000 20
cargo run --release --locked -p forgebench-bench --bin cost -- 200 --gate
cargo run --release --locked -p forgebench-bench --bin partitions -- 200 8 --gate --doc=docs/capacity.md
cargo run --release --locked -p forgebench-bench --bin claims -- 2000
cargo run --release --locked -p forgebench-bench --bin history -- 200 200 20
cargo run --release --locked -p forgebench-bench --bin faults -- 10 --gate
# Both scenarios, 300 quiet tasks a phase; the push phases interleaved in 5 rounds.
cargo run --release --locked -p forgebench-bench --bin noisy-neighbour -- 300 both 10 5
cargo run --release --locked -p forgebench-bench --bin soak -- 600 4 --gate

scripts/install.sh deploy
PATH="$root/.local/venv/bin:$PATH" cargo lambda build --release --locked \
  --lambda-dir target/lambda-host -p hello-lambda -p forgebench-gateway
cargo run --release --locked -p forgebench-bench --bin cold-init -- \
  target/lambda-host/gateway/bootstrap target/lambda-host/hello-lambda/bootstrap
