#!/usr/bin/env bash
# The full diagnosis evaluation (docs/diagnosis.md, "Evaluation"): randomized
# simulator workloads with their ground truth, tune seeds and fresh report
# seeds, both cadences. Writes the tables to ${1:-diagnosis-eval.md}.
# DIAGNOSIS_EVAL_PER_FAMILY sets the workloads per family and set (default 5).
set -euo pipefail
cd "$(dirname "$0")/.."
out="$(cd "$(dirname "${1:-diagnosis-eval.md}")" && pwd)/$(basename "${1:-diagnosis-eval.md}")"
DIAGNOSIS_EVAL=full DIAGNOSIS_EVAL_PER_FAMILY="${DIAGNOSIS_EVAL_PER_FAMILY:-5}" DIAGNOSIS_EVAL_OUT="$out" \
	go test ./pkg/plugin/ -run '^TestDiagnosisEvaluation$' -count=1 -timeout 120m -v | grep -v '^=== RUN' | tail -n 80
echo "tables written to $out"
