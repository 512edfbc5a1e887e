#!/usr/bin/env bash
# Everything CI checks, from a clean clone: the README's test command (format, lints, build, unit
# and integration tests, both SDKs' suites with the docs' samples) plus cargo-deny, the deployment
# checks (template lints, `sam build` of the arm64 artifact, the CDK app), schemathesis against
# the API document, and short runs of every benchmark (so none rots). Installs and starts
# everything it needs. On 2 cores no single build or suite keeps both busy, so the steps run
# side by side wherever they need nothing from each other; each step's time is printed at the end,
# and the test suites' summaries close the output.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
. scripts/lib/steps.sh

# A clean clone builds everything once: cargo's incremental caches would only be written, never
# read, at a cost to every compile of the workspace's own crates.
export CARGO_INCREMENTAL=0
export FORGEBENCH_DYNAMODB_PORT=${FORGEBENCH_TEST_DYNAMODB_PORT:-8010}
export FORGEBENCH_MOTO_PORT=${FORGEBENCH_TEST_MOTO_PORT:-5010}
at_exit scripts/local-stack.sh stop

# A run that cannot finish fails early and says why, well inside CI's own limit: a full disk or a
# hung step shows up as a failed step with its log, not as a run stopped from outside.
free_kib=$(df --output=avail -k "$root" | tail -n 1)
if [ "$free_kib" -lt $(( ${FORGEBENCH_CI_MIN_FREE_GIB:-10} * 1024 * 1024 )) ]; then
  echo "CI needs ${FORGEBENCH_CI_MIN_FREE_GIB:-10} GiB free beside the clone (builds, emulators' data); $(( free_kib / 1024 / 1024 )) GiB are" >&2
  exit 1
fi
ci_time_limit=${FORGEBENCH_CI_TIME_LIMIT:-2700}
( sleep "$ci_time_limit" && echo "== CI ran past ${ci_time_limit} s: stopping it" >&2 && kill -TERM $$ ) &
ci_watchdog=$!
disown "$ci_watchdog"
at_exit "kill -- -$ci_watchdog 2>/dev/null"

step "format: cargo fmt --check" cargo fmt --all -- --check
# Tools come from PyPI and npm (the deployment tools first) while cargo compiles.
spawn install scripts/install.sh deploy tests schemathesis deny localstack
# The build lints the workspace's crates as it compiles them (scripts/lib/lint-build.sh), every
# target, the tests included.
. scripts/lib/lint-build.sh
spawn build cargo build --workspace --all-targets --locked
export FORGEBENCH_GATEWAY_BUILT=1
await install

# The deployed artifact (arm64) builds through sam build, as a deploy builds it, beside the debug
# build (as soon as the tools are in), in a target directory of its own, with cargo's dev profile
# here (FORGEBENCH_DEPLOY_BUILD=debug): a release build of the dependency graph costs more CPU
# than the rest of the run's compiling (docs/loop.md).
# (It builds as a deploy does: without the lints, which the build above runs.)
spawn deploy-build env -u RUSTC_WORKSPACE_WRAPPER -u CLIPPY_ARGS FORGEBENCH_DEPLOY_BUILD=debug \
  scripts/check-deploy.sh build
spawn deploy-lint scripts/check-deploy.sh lint
cargo_deny() { PATH="$root/.local/cargo/bin:$PATH" cargo deny --locked "$@"; }
dependency_checks() {
  if cargo_deny fetch db; then
    cargo_deny check
  else
    # The RustSec database is a git repository on GitHub: a machine that cannot reach it still
    # checks the rest, and says loudly that advisories were not checked.
    echo "WARNING: cargo deny: the advisory database could not be fetched; advisories NOT checked" >&2
    cargo_deny check bans licenses sources
  fi
}
spawn cargo-deny dependency_checks
await build
step "local stack" scripts/local-stack.sh start
eval "$(scripts/local-stack.sh env)"
# Schemathesis and the benchmarks each get a stack of their own beside the SDK suites' (this
# one): DynamoDB Local writes one database at a time, and their bursts (five schemathesis runs at
# once, the search benchmark's 2,000 tasks seeded at once) timed out the SDK suites' requests
# on a shared one. They start now and idle until the tests are done.
stack_on() { env FORGEBENCH_DYNAMODB_PORT="$1" FORGEBENCH_MOTO_PORT="$2" scripts/local-stack.sh "$3"; }
on_stack() { eval "$(stack_on "$1" "$2" env)"; "${@:3}"; }
more_stacks() { stack_on 8011 5011 start && stack_on 8012 5012 start; }
at_exit stack_on 8011 5011 stop
at_exit stack_on 8012 5012 stop
spawn more-stacks more_stacks

# The SDK suites mostly wait on their gateway (scripts/test.sh runs them beside the Rust tests
# too): they start once the arm64 build is done, beside the rest of the Rust tests (which
# leave a core idle) and the LocalStack smoke, rather than in the run's CPU-bound tail. (Not
# sooner: beside the debug build's tests and the arm64 build at once, the racing Rust tests
# only slow down.)
sdk_suites() { after deploy-build; scripts/sdk-tests.sh python typescript; }
spawn sdk-suites sdk_suites
. scripts/lib/rust-tests.sh
step "unit and integration tests (nextest)" rust_tests cargo nextest run --workspace --locked
# LocalStack's runtime and Chromium are the heaviest processes of the run: beside the
# benchmarks they made the soak's p99 reach 21 s and the search benchmark's seeding time out.
# Their suites run on their own first: the tests that use SQS, KMS and S3 against LocalStack
# (ports of their own), then the console in headless Chromium. (Side by side they saved a
# minute, and the console's test of a disabled endpoint, whose page then stood in for the
# health's first read only, timed out beside LocalStack's start.) Schemathesis beside the
# console (2026-12-07) took the console from 78 to 152 s and left the run's tail to the
# benchmark lanes (248 s): no shorter than schemathesis after the console.
step "localstack smoke (SQS, KMS and S3 on LocalStack)" scripts/localstack-smoke.sh
step "console in headless Chromium" scripts/sdk-tests.sh console
await more-stacks
spawn schemathesis on_stack 8011 5011 scripts/schemathesis.sh

# Each benchmark's time closes its output, so the two lanes can be kept even. The binaries are
# the workspace build's own: `cargo run -p forgebench-bench` unifies the dependencies' features
# apart from the workspace and compiled 64 crates again, five minutes of the lanes' tail.
bench() {
  local name=$1 began=$SECONDS
  shift
  [ "${1:-}" != -- ] || shift
  # The stack cargo gives every program it runs (.cargo/config.toml): without cargo, set here.
  RUST_MIN_STACK=8388608 "$root/target/debug/$name" "$@" && echo "(took $((SECONDS - began)) s)"
}
# Two lanes of benchmarks, each on tables of its own: they mostly wait on their emulators.
benchmarks_waiting() {
  echo "== benchmark (short: 6 s idle waits, 12 rounds): one pull task's DynamoDB calls, long-poll cost, answer latency"
  bench pull-lifecycle -- 6 12
  echo "== benchmark (short): push delivery beside a direct POST, and its hot path's calls"
  bench push-delivery -- 10 40 20
  echo "== benchmark (short): event streams beside the long poll"
  bench event-streams -- 8 6
  echo "== fault suite (short: 3 s faults); fails on a task lost or duplicated, or an undocumented answer"
  bench faults -- 3 --gate
  echo "== soak (short: 40 s of mixed work); fails on an undocumented answer or a task not completed"
  bench soak -- 40 4 --gate
  echo "== benchmark (short): a quiet tenant's pull life and push deliveries beside a noisy tenant; fails on a quiet push task lost"
  bench noisy-neighbour -- 10
}
benchmarks_volume() {
  echo "== benchmark (short): task search beside a full Scan"
  bench search -- 2000 3
  echo "== benchmark (short): claims beside raw conditional writes, 1 to 8 pollers"
  bench claims -- 50
  echo "== benchmark (short): claims, idle waits and search with 10x and 100x the history"
  bench history -- 20 20 3
  # In this lane, not the other: the waiting lane is the run's longest tail.
  # Ten tasks per mode: the units per task are the same as with more (they are counts), and the
  # run takes half the time.
  echo "== benchmark (short): cost per million tasks, pull and push; fails past the units a task may cost"
  bench cost -- 10 --gate
  echo "== benchmark (short): DynamoDB units per partition key and the capacity model; fails past the busiest keys' units per task"
  bench partitions -- 8 2 --gate
}
# The benchmarks run short here, to keep them working; their figures come from scripts/bench.sh.
spawn benchmarks-waiting on_stack 8012 5012 benchmarks_waiting
spawn benchmarks-volume on_stack 8012 5012 benchmarks_volume
await sdk-suites cargo-deny deploy-lint benchmarks-waiting benchmarks-volume schemathesis deploy-build
cat "$steps_logs/benchmarks-waiting.log" "$steps_logs/benchmarks-volume.log"

print_step_times
# The closing lines: each suite's own summary, the Rust tests' last.
grep -hE '^schemathesis: [0-9]+ cases|^(=* ?[0-9]+ (passed|failed).*|# (pass|fail) [0-9]+)$' \
  "$steps_logs/schemathesis.log" "$steps_logs/sdk-suites.log" >&2 || true
grep -E '^ +Summary \[' "$steps_logs/rust-tests.log" | tail -n 1
