#!/usr/bin/env bash
# Runs each Go fuzz target for a set time, one after the other, and prints
# what ran and what was found. `go test ./...` (scripts/test.sh) already runs
# every target's seeds; this script explores beyond them.
#   scripts/fuzz.sh            # 60 s per target
#   FUZZTIME=10m scripts/fuzz.sh
#   scripts/fuzz.sh --list     # the targets, one "<package> <Target>" a line
# A failing input is written to <package>/testdata/fuzz/<Target>/ by the Go
# tool: commit it with the fix, so that every later `go test` replays it.
set -uo pipefail
cd "$(dirname "$0")/.."
FUZZTIME="${FUZZTIME:-60s}"
PARALLEL="${PARALLEL:-1}"
# Every fuzz target of the module, found in the sources (so a new one is never
# missed): "<package dir> <Target>" per line.
mapfile -t targets < <(grep -rlE --include='*_test.go' '^func Fuzz[A-Za-z0-9_]*\(' pkg | sort |
  while read -r f; do
    grep -oE '^func Fuzz[A-Za-z0-9_]*' "$f" | sed "s|^func |./$(dirname "$f") |"
  done)
if [[ "${1:-}" == "--list" ]]; then
  printf '%s\n' "${targets[@]}"
  exit 0
fi
echo "${#targets[@]} fuzz targets"
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
