# Sourced by the scripts that test against a local gateway of their own (schemathesis.sh,
# sdk-tests.sh). Defines:
#   free_port                  prints a free loopback port
#   start_local_gateway BASE LOG
#                              starts target/debug/forgebench-local (FORGEBENCH_LISTEN and the
#                              rest come from the caller's environment; built first unless
#                              FORGEBENCH_GATEWAY_BUILT=1 says the caller has built it, so a
#                              suite beside a running cargo does not wait for its lock) logging
#                              to LOG, stops it
#                              when the calling script exits, and waits until BASE answers; if it
#                              does not come up, prints its log and exits 1.
free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

start_local_gateway() {
  local base=$1 log=$2
  [ "${FORGEBENCH_GATEWAY_BUILT:-0}" = 1 ] || cargo build --quiet --locked -p forgebench-local
  target/debug/forgebench-local >"$log" 2>&1 &
  local_gateway_pid=$!
  trap 'kill $local_gateway_pid 2>/dev/null || true' EXIT
  for _ in $(seq 1 150); do curl -s -o /dev/null "$base/openapi.json" && break; sleep 0.2; done
  if ! kill -0 "$local_gateway_pid" 2>/dev/null || ! curl -s -o /dev/null "$base/openapi.json"; then
    echo "$(basename "$0"): the local gateway did not come up on $base; its log:" >&2
    cat "$log" >&2
    exit 1
  fi
}
