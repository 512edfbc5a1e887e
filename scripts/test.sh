#!/usr/bin/env bash
# Runs every check and test of the project from a fresh clone: installs what is missing, starts
# its own local AWS stack (on ports apart from a dev stack's), runs the linters and the dependency
# checks (cargo deny), builds every crate (each Lambda function included), runs the unit and
# integration tests, then the benchmarks.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

export FORGEBENCH_DYNAMODB_PORT=${FORGEBENCH_TEST_DYNAMODB_PORT:-8010}
export FORGEBENCH_MOTO_PORT=${FORGEBENCH_TEST_MOTO_PORT:-5010}

stop_stack() { scripts/local-stack.sh stop; }
trap stop_stack EXIT

scripts/local-stack.sh start
eval "$(scripts/local-stack.sh env)"

echo "== format and lints" >&2
cargo fmt --all -- --check
cargo clippy --workspace --all-targets --locked -- -D warnings

echo "== dependencies: cargo deny (advisories, licences, bans, sources; deny.toml)" >&2
cargo_deny() { PATH="$root/.local/cargo/bin:$PATH" cargo deny --locked "$@"; }
if cargo_deny fetch db; then
  cargo_deny check
else
  # The RustSec database is a git repository on GitHub: a machine that cannot reach it still
  # checks the rest, and says loudly that advisories were not checked.
  echo "WARNING: cargo deny: the advisory database could not be fetched; advisories NOT checked" >&2
  cargo_deny check bans licenses sources
fi

echo "== build every crate (each Lambda function included)" >&2
cargo build --workspace --locked

echo "== benchmark (short: 6 s idle waits): one pull task's DynamoDB calls, long-poll cost, answer latency" >&2
cargo run --quiet --locked -p forgebench-bench --bin pull-lifecycle -- 6

echo "== benchmark (short): push delivery beside a direct POST, and its hot path's calls" >&2
cargo run --quiet --locked -p forgebench-bench --bin push-delivery -- 10 40 20

echo "== benchmark (short): event streams beside the long poll" >&2
cargo run --quiet --locked -p forgebench-bench --bin event-streams -- 8 6

echo "== benchmark (short): task search beside a full Scan" >&2
cargo run --quiet --locked -p forgebench-bench --bin search -- 2000 3

echo "== benchmark (short): claims beside raw conditional writes, 1 to 8 pollers" >&2
cargo run --quiet --locked -p forgebench-bench --bin claims -- 100

echo "== benchmark (short): claims, idle waits and search with 10x and 100x the history" >&2
cargo run --quiet --locked -p forgebench-bench --bin history -- 20 20 3

echo "== benchmark (short): cost per million tasks, pull and push" >&2
cargo run --quiet --locked -p forgebench-bench --bin cost -- 20

echo "== schemathesis: the gateway against its own OpenAPI document" >&2
scripts/schemathesis.sh

echo "== SDKs: the docs' samples and the SDK tests, against a local gateway" >&2
scripts/sdk-tests.sh

echo "== unit and integration tests" >&2
if cargo nextest --version >/dev/null 2>&1; then
  cargo nextest run --workspace --locked --no-fail-fast
else
  cargo test --workspace --locked --no-fail-fast
fi
