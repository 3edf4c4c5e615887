#!/usr/bin/env bash
# Load and scale runs of the built plugin (test/asgrafana TestLoad, TestScale):
#   TestLoad:  LOAD_CONCURRENCY (200) concurrent QueryData calls, every query
#              type, for LOAD_DURATION (60s) against 10 targets: errors,
#              p50/p99, goroutines and heap after each half.
#   TestScale: SCALE_TARGETS (1000) targets at SCALE_INTERVAL (15s) in one
#              instance: start time, scrape CPU, memory, latency query time.
# Figures are printed as "load:" and "scale:" lines; the README quotes them.
set -euo pipefail
cd "$(dirname "$0")/.."
log="$(mktemp)"
trap 'rm -f "$log"' EXIT
status=0
INFERSCOPE_LOAD=1 go test ./test/asgrafana/ -run "${RUN:-TestLoad|TestScale}" -count=1 -v -timeout 20m >"$log" 2>&1 || status=$?
grep -E '^(--- |ok|FAIL)|load:|scale:|error:|Error|Messages' "$log" || true
exit $status
