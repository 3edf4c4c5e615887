#!/usr/bin/env bash
# Builds a real serving stack (Ollama, MIT, a Go module) and runs the live tests against it:
# the probe and the plugin's answers checked against a server nobody here wrote
# (docs/engines-live.md). The tests write their own tiny random-weight GGUF model
# (pkg/ollamatest), start `ollama serve` on 127.0.0.1 with a temporary OLLAMA_MODELS, and stop
# it when done. Nothing is fetched at run time.
#
#   scripts/live-server.sh            build when missing, then run the live tests
#   scripts/live-server.sh --build    build only (exit 1 when the build fails)
#
# Ollama's module zip leaves out llama.cpp's vendor/ directory (the Go module rules drop every
# vendor/ folder), so its cgo build lacks three single-header libraries; they come from
# ordinary packages: nlohmann/json and stb from Debian (nlohmann-json3-dev, libstb-dev),
# miniaudio.h from the Go module github.com/gen2brain/malgo (Go bindings that ship it).
set -euo pipefail
cd "$(dirname "$0")/.."

OLLAMA_VERSION=v0.17.4 # keep in step with ollamatest.Version
MALGO_VERSION=v0.11.24
gobin="${GOBIN:-$(go env GOPATH)/bin}"

build_ollama() {
  local sudo="" need=()
  if [ "$(id -u)" != 0 ] && command -v sudo >/dev/null; then sudo=sudo; fi
  [ -f /usr/include/nlohmann/json_fwd.hpp ] || need+=(nlohmann-json3-dev)
  [ -f /usr/include/stb/stb_image.h ] || need+=(libstb-dev)
  command -v g++ >/dev/null || need+=(g++)
  if [ ${#need[@]} -gt 0 ]; then
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${need[@]}"
  fi
  local malgo inc
  malgo="$(cd "$(mktemp -d)" && go mod download -json "github.com/gen2brain/malgo@$MALGO_VERSION" |
    sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')"
  [ -n "$malgo" ] && [ -f "$malgo/miniaudio.h" ] || { echo "miniaudio.h not found in malgo $MALGO_VERSION" >&2; return 1; }
  # a fixed folder, so that a rebuild finds the cgo packages in Go's build cache
  inc="$(go env GOPATH)/pkg/inferscope-ollama-include"
  mkdir -p "$inc/miniaudio"
  cp "$malgo/miniaudio.h" "$inc/miniaudio/miniaudio.h"
  local t0=$SECONDS
  echo "building ollama $OLLAMA_VERSION into $gobin (cgo compiles llama.cpp and ggml: 10-30 min on 2 cores)" >&2
  CGO_ENABLED=1 CGO_CPPFLAGS="-I$inc" GOBIN="$gobin" nice go install "github.com/ollama/ollama@$OLLAMA_VERSION"
  echo "built ollama in $((SECONDS - t0)) s" >&2
}

have_ollama() {
  # a go-install build reports version 0.0.0 itself; its build info names the module version
  [ -x "$gobin/ollama" ] && go version -m "$gobin/ollama" 2>/dev/null | grep -q "github.com/ollama/ollama[[:space:]]*$OLLAMA_VERSION"
}

if ! have_ollama; then
  build_ollama
fi
if [ "${1:-}" = "--build" ]; then
  exit 0
fi
export INFERSCOPE_OLLAMA="$gobin/ollama"
exec go test ./pkg/probe ./pkg/sim ./pkg/plugin -run 'Ollama' -count=1 -v
