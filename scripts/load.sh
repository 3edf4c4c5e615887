#!/usr/bin/env bash
# Load and scale runs of the built plugin (test/asgrafana TestLoad, TestScale):
#   TestLoad:  LOAD_CONCURRENCY (200) concurrent QueryData calls, every query
#              type, for LOAD_DURATION (60s) against 10 targets: errors,
#              p50/p99, goroutines and heap after each half.
#   TestScale: SCALE_TARGETS (1000) targets at SCALE_INTERVAL (15s) in one
#              instance: start time, scrape CPU, memory, latency query time.
#              SCALE_DISCOVERY=file: the targets are one target group's, found
#              by file_sd; SCALE_SETTLE (e.g. 35m) waits before measuring (a
#              head chunk fills for 15 min at 15 s); SCALE_HEAP_PROFILE=<file>
#              saves the heap profile; SCALE_PLUGIN_ENV adds plugin environment;
#              SCALE_STORE_ALL=1 sets storeAllSeries (every series of the page stored);
#              LOAD_TIMEOUT (20m) is go test's -timeout (raise it with SCALE_SETTLE).
# Figures are printed as "load:" and "scale:" lines; the README quotes them.
set -euo pipefail
cd "$(dirname "$0")/.."
log="$(mktemp)"
trap 'rm -f "$log"' EXIT
status=0
INFERSCOPE_LOAD=1 go test ./test/asgrafana/ -run "${RUN:-TestLoad|TestScale}" -count=1 -v -timeout "${LOAD_TIMEOUT:-20m}" >"$log" 2>&1 || status=$?
grep -E '^(--- |ok|FAIL)|load:|scale:|error:|Error|Messages' "$log" || true
exit $status
