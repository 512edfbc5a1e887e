#!/usr/bin/env bash
# The README's test command: every developer's run. Installs what is missing (the local stack and
# the tools the integration tests call), starts its own local AWS stack (on ports apart from a dev
# stack's) while the format check and the builds run, builds every crate with clippy's lints
# failing the build on any warning, then runs every unit and integration test (nextest) and,
# beside them, both SDKs' suites with the docs' samples against a local gateway of their own.
# Prints each step's time.
#
# CI (scripts/ci.sh) runs this and more: the deployment checks, cargo-deny, schemathesis and the
# short benchmarks.
#   FORGEBENCH_TEST_SDKS=0   leaves the SDK suites out (they need npm and PyPI on first use)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
. scripts/lib/steps.sh

export FORGEBENCH_DYNAMODB_PORT=${FORGEBENCH_TEST_DYNAMODB_PORT:-8010}
export FORGEBENCH_MOTO_PORT=${FORGEBENCH_TEST_MOTO_PORT:-5010}
at_exit scripts/local-stack.sh stop

step "install: the stack and the test tools" scripts/install.sh tests
spawn local-stack scripts/local-stack.sh start
step "format: cargo fmt --check" cargo fmt --all -- --check
step "layers and sizes of shared/src (scripts/structure.py)" python3 scripts/structure_test.py
# The lints run inside the builds below, on the workspace's own crates (scripts/lib/lint-build.sh).
. scripts/lib/lint-build.sh
if cargo nextest --version >/dev/null 2>&1; then
  tests=(cargo nextest run --workspace --locked)
else
  tests=(cargo test --workspace --locked)
fi
step "build and lint every test" "${tests[@]}" --no-run
step "build and lint every other target" cargo build --workspace --all-targets --locked
export FORGEBENCH_GATEWAY_BUILT=1
await local-stack
eval "$(scripts/local-stack.sh env)"
if [ "${FORGEBENCH_TEST_SDKS:-1}" != 0 ]; then
  # The SDK suites mostly wait on their gateway: they run beside the Rust tests.
  spawn sdk-suites scripts/sdk-tests.sh
fi
. scripts/lib/rust-tests.sh
step "unit and integration tests" rust_tests "${tests[@]}"
if [ "${FORGEBENCH_TEST_SDKS:-1}" != 0 ]; then
  await sdk-suites
fi
print_step_times
# The closing lines: each suite's own summary.
if [ "${FORGEBENCH_TEST_SDKS:-1}" != 0 ]; then
  grep -E '^(=* ?[0-9]+ (passed|failed).*|# (pass|fail) [0-9]+)$' "$steps_logs/sdk-suites.log" >&2 || true
fi
grep -E '^ +Summary \[|^test result:' "$steps_logs/rust-tests.log" | tail -n 1
