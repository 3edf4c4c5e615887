#!/usr/bin/env bash
# Builds the plugin (front end + backend for linux amd64/arm64) and the vLLM
# simulator, then starts the demo: Grafana on http://localhost:3000 with the
# Inferscope data source and dashboard provisioned against two simulators.
# Needs Go 1.26, Node 20 and Docker with the compose plugin (or docker-compose).
set -euo pipefail
cd "$(dirname "$0")/.."
# Before minutes of builds: the demo ends in `docker compose up`, which needs the daemon.
if ! docker info >/dev/null 2>&1; then
  echo "scripts/demo.sh: the Docker daemon does not answer this user (docker info failed): start it, or add the user to the docker group, then run this again" >&2
  exit 1
fi
export PATH="$(go env GOPATH)/bin:$PATH"
command -v mage >/dev/null || go install github.com/magefile/mage@v1.17.2
npm ci --no-audit --no-fund
npm run build
mage -v build:linux build:linuxARM64
# The simulator runs inside the demo's containers: build it for the Docker
# daemon's architecture (this machine's when the daemon does not answer; a
# failed `docker version` prints a blank line, which must not reach GOARCH).
arch=$(docker version --format '{{.Server.Arch}}' 2>/dev/null | tr -d '[:space:]' || true)
[ -n "$arch" ] || arch=$(go env GOARCH)
mkdir -p .demo/bin
CGO_ENABLED=0 GOOS=linux GOARCH="$arch" go build -o .demo/bin/vllm-sim ./pkg/cmd/vllm-sim
CGO_ENABLED=0 GOOS=linux GOARCH="$arch" go build -o .demo/bin/inferscope-probe ./pkg/cmd/inferscope-probe
if docker compose version >/dev/null 2>&1; then
  exec docker compose up "$@"
fi
exec docker-compose up "$@"
