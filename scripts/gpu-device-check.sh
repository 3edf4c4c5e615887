#!/usr/bin/env bash
# gpu-device-check.sh: run the Inferscope GPU agent for 60 s on a machine with
# an NVIDIA GPU, beside a matrix-multiply load when PyTorch with CUDA is present,
# and save what it served into $OUT.
#
# Usage (from the repository root):  OUT=/some/dir scripts/gpu-device-check.sh
#   AGENT_BIN=path   use a prebuilt agent (build here with
#                    CGO_ENABLED=1 go build -o bin/inferscope-gpu-agent ./pkg/cmd/inferscope-gpu-agent)
#                    instead of building with the local Go toolchain
#   DURATION=60      seconds to run the agent beside the load
#   PORT=19402       loopback port for the agent
#
# Files in $OUT: nvidia-smi.txt, agent.log, healthz.txt, metrics-NN.prom (one
# scrape every 5 s), metrics-final.prom, promtool.txt, load.log,
# nvidia-smi-during.csv, summary.txt. Exit status 0 when the agent served
# /metrics with GPU series and stopped cleanly; the load's absence is reported in
# load.log and summary.txt, not as a failure.
set -euo pipefail

OUT=${OUT:-$(pwd)/gpu-device-check-out}
DURATION=${DURATION:-60}
PORT=${PORT:-19402}
mkdir -p "$OUT"
summary="$OUT/summary.txt"
: >"$summary"
note() { echo "$*" | tee -a "$summary"; }

if ! command -v nvidia-smi >/dev/null 2>&1; then
	note "FAIL: nvidia-smi not found: this is not a GPU machine"
	exit 1
fi
if ! command -v curl >/dev/null 2>&1; then
	note "FAIL: curl not found"
	exit 1
fi
nvidia-smi >"$OUT/nvidia-smi.txt" 2>&1 || true
nvidia-smi --query-gpu=index,name,uuid,driver_version,mig.mode.current --format=csv >>"$OUT/nvidia-smi.txt" 2>&1 || true

work=$(mktemp -d)
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	rm -rf "$work"
}
trap cleanup EXIT

agent=${AGENT_BIN:-}
if [[ -z "$agent" ]]; then
	if ! command -v go >/dev/null 2>&1; then
		note "FAIL: no Go toolchain and no AGENT_BIN; build the agent elsewhere and pass AGENT_BIN"
		exit 1
	fi
	agent="$work/inferscope-gpu-agent"
	CGO_ENABLED=1 CGO_CFLAGS="-O2 -g -Wno-deprecated-declarations" \
		go build -o "$agent" ./pkg/cmd/inferscope-gpu-agent 2>"$OUT/build.log"
fi
note "agent: $agent"

"$agent" --listen "127.0.0.1:$PORT" --interval 1s --hostname device-check >"$OUT/agent.log" 2>&1 &
agent_pid=$!
pids+=("$agent_pid")
base="http://127.0.0.1:$PORT"

healthy=0
for _ in $(seq 1 30); do
	if curl -fsS "$base/healthz" >"$OUT/healthz.txt" 2>&1; then
		healthy=1
		break
	fi
	if ! kill -0 "$agent_pid" 2>/dev/null; then break; fi
	sleep 0.5
done
if [[ $healthy -ne 1 ]]; then
	note "FAIL: agent not healthy; see agent.log and healthz.txt"
	curl -sS "$base/metrics" >"$OUT/metrics-final.prom" 2>&1 || true
	exit 1
fi
note "agent healthy"

# Load: bf16 matrix multiplies on every visible GPU for DURATION seconds.
if python3 -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' >/dev/null 2>&1; then
	python3 - "$DURATION" >"$OUT/load.log" 2>&1 <<'PY' &
import sys, time, torch
dur = float(sys.argv[1])
n = 8192
devs = [torch.device(f"cuda:{i}") for i in range(torch.cuda.device_count())]
mats = [(torch.randn(n, n, device=d, dtype=torch.bfloat16), torch.randn(n, n, device=d, dtype=torch.bfloat16)) for d in devs]
end = time.time() + dur
iters = 0
t0 = time.time()
while time.time() < end:
    for a, b in mats:
        a @ b
    iters += 1
    if iters % 50 == 0:
        torch.cuda.synchronize()
torch.cuda.synchronize()
el = time.time() - t0
print(f"gpus={len(devs)} iterations={iters} seconds={el:.1f} tflops_per_gpu={2 * n**3 * iters / el / 1e12:.1f}")
PY
	load_pid=$!
	pids+=("$load_pid")
	note "load: torch bf16 matmul 8192x8192 for ${DURATION}s"
else
	load_pid=""
	echo "no load: python3 with torch and CUDA is not available; the agent ran beside an idle GPU" >"$OUT/load.log"
	note "load: NONE (python3 torch with CUDA absent) - GPU idle during the run"
fi

nvidia-smi --query-gpu=timestamp,index,utilization.gpu,utilization.memory,power.draw,clocks.sm,clocks_event_reasons.active \
	--format=csv -l 5 >"$OUT/nvidia-smi-during.csv" 2>&1 &
pids+=("$!")

i=0
end=$((SECONDS + DURATION))
while ((SECONDS < end)); do
	sleep 5
	i=$((i + 1))
	curl -fsS "$base/metrics" >"$OUT/metrics-$(printf %02d "$i").prom" 2>>"$OUT/agent.log" || true
done
if [[ -n "$load_pid" ]]; then wait "$load_pid" || note "load exited with an error (see load.log)"; fi
curl -fsS "$base/metrics" >"$OUT/metrics-final.prom"
curl -sS "$base/healthz" >>"$OUT/healthz.txt" 2>&1 || true

if command -v promtool >/dev/null 2>&1; then
	if promtool check metrics <"$OUT/metrics-final.prom" >"$OUT/promtool.txt" 2>&1; then
		note "promtool check metrics: clean"
	else
		note "promtool check metrics: findings (see promtool.txt)"
	fi
else
	echo "promtool not installed" >"$OUT/promtool.txt"
fi

kill -TERM "$agent_pid"
rc=0
wait "$agent_pid" || rc=$?
note "agent exit status after SIGTERM: $rc"

series=$(grep -c '^inferscope_gpu_' "$OUT/metrics-final.prom" || true)
note "series in final scrape: $series"
{
	echo "--- key series (final scrape) ---"
	grep -E '^inferscope_gpu_(utilization_ratio|sm_active_ratio|sm_occupancy_ratio|dram_active_ratio|tensor_active_ratio|power_watts|power_limit_watts|sm_clock_hertz|temperature_celsius)' "$OUT/metrics-final.prom" || true
	echo "--- active throttle reasons ---"
	grep -E '^inferscope_gpu_throttle_reason.* 1$' "$OUT/metrics-final.prom" || echo "(none)"
	echo "--- GPM series over the run (count per scrape) ---"
	for f in "$OUT"/metrics-[0-9]*.prom; do
		printf '%s %s\n' "$(basename "$f")" "$(grep -c '^inferscope_gpu_sm_active_ratio' "$f" || true)"
	done
	echo "--- load ---"
	cat "$OUT/load.log"
} >>"$summary"

if [[ "$series" -eq 0 || "$rc" -ne 0 ]]; then
	note "FAIL"
	exit 1
fi
note "OK"
