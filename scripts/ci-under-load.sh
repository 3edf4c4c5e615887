#!/usr/bin/env bash
# Runs .ci/run while a bounded load generator keeps the machine's load average above a
# target (default 20): the check that no test depends on the machine's speed (issue 32).
#
# The generator is LOAD_PROCS busy loops (default 24) at niceness LOAD_NICE (default 0, so
# they compete with the tests as a busy CI runner's other jobs would). It is bounded: it
# stops when .ci/run ends, or after LOAD_MAX_SECONDS (default 5400) whatever happens, and
# only the processes it started are stopped, by their ids. Every LOAD_SAMPLE_SECONDS
# (default 15) it writes the 1-minute load average to LOAD_LOG (default
# ci-under-load.log), and at the end it reports the minimum, mean and maximum of the samples
# taken after the first LOAD_WARMUP_SECONDS (default 120: the load average needs a minute or
# two to climb) and whether the minimum stayed above LOAD_TARGET.
#
# LOAD_COMMAND (default .ci/run) is what runs under the load (e.g. "sleep 60" to try the
# generator alone).
#
# Usage: scripts/ci-under-load.sh            (exit status: .ci/run's; 3 when .ci/run passed
#        but the load fell below the target, so the run does not count as "under load")
set -uo pipefail
cd "$(dirname "$0")/.."

procs=${LOAD_PROCS:-24}
niceness=${LOAD_NICE:-0}
max_seconds=${LOAD_MAX_SECONDS:-5400}
sample=${LOAD_SAMPLE_SECONDS:-15}
warmup=${LOAD_WARMUP_SECONDS:-120}
target=${LOAD_TARGET:-20}
log=${LOAD_LOG:-ci-under-load.log}
command=${LOAD_COMMAND:-.ci/run}

pids=()
stop_load() {
  local p
  for p in "${pids[@]}"; do
    kill "$p" 2>/dev/null || true
  done
  for p in "${pids[@]}"; do
    wait "$p" 2>/dev/null || true
  done
  pids=()
}
trap stop_load EXIT INT TERM

for _ in $(seq "$procs"); do
  # A busy loop that ends by itself after max_seconds, should this script be killed hard.
  nice -n "$niceness" bash -c 'end=$((SECONDS + '"$max_seconds"')); while [ $SECONDS -lt $end ]; do :; done' &
  pids+=("$!")
done

: >"$log"
start=$SECONDS
(
  while sleep "$sample"; do
    printf '%d %s\n' "$((SECONDS - start))" "$(cut -d' ' -f1 /proc/loadavg)" >>"$log"
  done
) &
sampler=$!
pids+=("$sampler")

echo "ci-under-load: $procs busy loops at niceness $niceness (at most ${max_seconds}s); load average sampled every ${sample}s into $log"
# shellcheck disable=SC2086 # LOAD_COMMAND may carry arguments
timeout "$max_seconds" $command
rc=$?
stop_load
trap - EXIT INT TERM

summary=$(awk -v w="$warmup" -v t="$target" '
  $1 >= w { n++; s += $2; if (n == 1 || $2 < min) min = $2; if ($2 > max) max = $2 }
  END {
    if (n == 0) { print "no load samples after the warm-up"; exit 1 }
    printf "load average after %ds: min %.1f, mean %.1f, max %.1f over %d samples; target > %s: %s\n", w, min, s / n, max, n, t, (min > t ? "held" : "NOT held")
    exit (min > t ? 0 : 1)
  }' "$log")
held=$?
echo "ci-under-load: $command exited $rc after $((SECONDS - start))s; $summary"
if [ "$rc" -eq 0 ] && [ "$held" -ne 0 ]; then
  exit 3
fi
exit "$rc"
