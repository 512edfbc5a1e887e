#!/usr/bin/env bash
# Runs the benchmarks against a local stack of their own, in release mode.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
export FORGEBENCH_DYNAMODB_PORT=${FORGEBENCH_BENCH_DYNAMODB_PORT:-8020}
export FORGEBENCH_MOTO_PORT=${FORGEBENCH_BENCH_MOTO_PORT:-5020}
trap 'scripts/local-stack.sh stop' EXIT
scripts/local-stack.sh start
eval "$(scripts/local-stack.sh env)"
cargo run --release --locked -p forgebench-bench --bin pull-lifecycle
cargo run --release --locked -p forgebench-bench --bin push-delivery
