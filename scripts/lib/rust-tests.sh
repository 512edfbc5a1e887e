# shellcheck shell=bash
# rust_tests COMMAND...: runs the Rust tests (a `cargo nextest run` or `cargo test` command line),
# their output into $steps_logs/rust-tests.log, with the gateway's access log on; then checks that
# the Rust SDK's tests, and the CLI's (cli/tests, in the same run, with its own User-Agent),
# each requested every operation the SDKs should reach (scripts/operations-reached.py). Sourced
# by scripts/test.sh and scripts/ci.sh.
rust_tests() {
  local status=0 access_log="$steps_logs/rust-access.log"
  : >"$access_log"
  FORGEBENCH_ACCESS_LOG="$access_log" "$@" --no-fail-fast 2>&1 | tee "$steps_logs/rust-tests.log" || status=1
  echo "== the operations the Rust SDK's and the CLI's tests requested (scripts/operations-reached.py)" >&2
  "$root/.local/venv/bin/python" "$root/scripts/operations-reached.py" "$access_log" \
    rust=forgebench-rust/ cli=forgebench-cli/ || status=1
  return "$status"
}
