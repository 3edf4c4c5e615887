#!/usr/bin/env bash
# Runs each Go fuzz target for a set time, one after the other, and prints
# what ran and what was found. `go test ./...` (scripts/test.sh) already runs
# every target's seeds; this script explores beyond them.
#   scripts/fuzz.sh            # 60 s per target
#   FUZZTIME=10m scripts/fuzz.sh
# A failing input is written to <package>/testdata/fuzz/<Target>/ by the Go
# tool: commit it with the fix, so that every later `go test` replays it.
set -uo pipefail
cd "$(dirname "$0")/.."
FUZZTIME="${FUZZTIME:-60s}"
PARALLEL="${PARALLEL:-1}"
targets=(
  "./pkg/settings FuzzLoad"
  "./pkg/plugin FuzzDecodeQuery"
  "./pkg/hist FuzzHist"
  "./pkg/collect FuzzParsePage"
  "./pkg/bench FuzzParse"
)
status=0
for t in "${targets[@]}"; do
  read -r pkg name <<<"$t"
  echo "== $name ($pkg) for $FUZZTIME"
  log="$(mktemp)"
  if go test "$pkg" -run '^$' -fuzz "^${name}\$" -fuzztime "$FUZZTIME" -parallel "$PARALLEL" >"$log" 2>&1; then
    grep -E '^fuzz: elapsed' "$log" | tail -1
    echo "   no failure"
  else
    status=1
    tail -20 "$log"
  fi
  rm -f "$log"
done
exit $status
