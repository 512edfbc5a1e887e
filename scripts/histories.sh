#!/usr/bin/env bash
# The history test with a long budget, on demand: FORGEBENCH_HISTORIES histories (default
# 10,000) from a fresh seed, against a local stack of its own (ports apart from the others'),
# then its counts: histories, steps, requests, 5xx seen, disagreements with the model, and the
# seed that replays a failure (FORGEBENCH_HISTORY_SEED=...). CI runs the short budget with every
# test (tests/tests/api/histories).
#   scripts/histories.sh [HISTORIES]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
. scripts/lib/steps.sh
export FORGEBENCH_DYNAMODB_PORT=${FORGEBENCH_HISTORIES_DYNAMODB_PORT:-8013}
export FORGEBENCH_MOTO_PORT=${FORGEBENCH_HISTORIES_MOTO_PORT:-5013}
export FORGEBENCH_HISTORIES=${1:-${FORGEBENCH_HISTORIES:-10000}}
at_exit scripts/local-stack.sh stop
step "install: the stack and the test tools" scripts/install.sh tests
step "local stack" scripts/local-stack.sh start
eval "$(scripts/local-stack.sh env)"
. scripts/lib/lint-build.sh
histories() {
  set -o pipefail
  cargo nextest run --locked -p forgebench-tests --no-capture \
    -E 'test(=histories::histories_from_a_fresh_seed_agree_with_the_model)' 2>&1 |
    tee "$steps_logs/histories.log"
}
step "histories ($FORGEBENCH_HISTORIES)" histories
print_step_times
grep '^histories (' "$steps_logs/histories.log"
