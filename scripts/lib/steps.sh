# Sourced by the scripts that run several steps (test.sh, ci.sh): runs each step in the foreground
# or in the background with its output in a log of its own, times it, and prints a table of every
# step's time at the end. Defines:
#   step NAME COMMAND...     runs COMMAND now; its output goes to this terminal
#   spawn NAME COMMAND...    starts COMMAND in the background, its output in $steps_logs/NAME.log
#   await NAME...            waits for spawned steps; a failed one prints its log and fails
#   after NAME               inside a spawned step: waits until step NAME has ended, however
#                            it ended (the awaiting script judges it)
#   at_exit COMMAND          runs COMMAND when the script exits (before the table)
#   print_step_times         the table (printed on exit)
# Every step runs with `set -e` semantics: a failing step fails the script, after the table.
# Each background step in a process group of its own, so a step stopped early is stopped with
# everything it started.
set -m
steps_logs=${steps_logs:-"$root/.local/logs"}
mkdir -p "$steps_logs"
steps_started=$(date +%s)
declare -A step_pid=() step_begin=()
step_times=()

_step_record() { # name seconds status
  step_times+=("$(printf '%-56s %5d s  %s' "$1" "$2" "$3")")
}

steps_printed=0
print_step_times() {
  [ $steps_printed = 0 ] || return 0
  steps_printed=1
  local total=$(( $(date +%s) - steps_started ))
  {
    echo
    echo "== step times ($(basename "$0"), $total s in all; steps in parallel overlap)"
    printf '%s\n' "${step_times[@]}"
  } >&2
}

step() {
  local name=$1 begin status=0
  shift
  echo "== $name" >&2
  begin=$(date +%s)
  "$@" || status=$?
  _step_record "$name" $(( $(date +%s) - begin )) "$([ $status = 0 ] && echo ok || echo "FAILED ($status)")"
  if [ $status != 0 ]; then
    echo "== $name failed ($status)" >&2
    exit $status
  fi
}

spawn() {
  local name=$1
  shift
  echo "== $name (in the background; log: ${steps_logs#"$root/"}/$name.log)" >&2
  step_begin[$name]=$(date +%s)
  rm -f "$steps_logs/$name.end" "$steps_logs/$name.status"
  # The step's own end time, so a step awaited late still reports how long it ran; and its exit
  # status, since `wait` cannot tell it once the step's pid was taken by another process (a long
  # run starts tens of thousands, and pids wrap around).
  ( status=0; ("$@") >"$steps_logs/$name.log" 2>&1 || status=$?
    date +%s >"$steps_logs/$name.end"; echo "$status" >"$steps_logs/$name.status"; exit $status ) &
  step_pid[$name]=$!
}

await() {
  local name status failed=0
  for name in "$@"; do
    status=0
    # A step that ended has said how; only one still running is waited for (its pid is its own).
    [ -s "$steps_logs/$name.status" ] || wait "${step_pid[$name]}" 2>/dev/null || status=$?
    [ ! -s "$steps_logs/$name.status" ] || status=$(cat "$steps_logs/$name.status")
    local end
    end=$(cat "$steps_logs/$name.end" 2>/dev/null || date +%s)
    _step_record "$name (beside others)" $(( end - ${step_begin[$name]} )) "$([ $status = 0 ] && echo ok || echo "FAILED ($status)")"
    if [ $status != 0 ]; then
      echo "== $name failed ($status); its log (${steps_logs#"$root/"}/$name.log):" >&2
      cat "$steps_logs/$name.log" >&2
      failed=$status
    else
      echo "== $name done" >&2
    fi
  done
  [ $failed = 0 ] || exit $failed
}

after() {
  until [ -s "$steps_logs/$1.status" ]; do sleep 2; done
}

steps_at_exit=()
at_exit() { steps_at_exit+=("$*"); }
_steps_exit() {
  local status=$? command name
  # A step still running when the script stops (another failed, or the time ran out) is stopped
  # with it, after the end of its log is shown: a hung step names itself.
  for name in "${!step_pid[@]}"; do
    kill -0 "${step_pid[$name]}" 2>/dev/null || continue
    if [ ! -e "$steps_logs/$name.end" ]; then
      echo "== $name was still running; the end of its log:" >&2
      tail -n 30 "$steps_logs/$name.log" >&2 || true
    fi
    kill -TERM -- "-${step_pid[$name]}" 2>/dev/null || true
  done
  for command in "${steps_at_exit[@]}"; do eval "$command" || true; done
  print_step_times
  exit $status
}
trap _steps_exit EXIT
