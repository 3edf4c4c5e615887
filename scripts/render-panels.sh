#!/usr/bin/env bash
# Renders every generated dashboard without a Grafana server and writes the screenshots
# src/img/screenshots/*.png (used by README.md and plugin.json): test/asgrafana runs every
# panel query through the built plugin against the simulated vLLM servers and GPU agents and
# writes the frames (INFERSCOPE_PANEL_FRAMES), then harness/panels.tsx draws them with
# @grafana/data and @grafana/ui in chromium (harness/render-panels.js).
# Needs: npm ci, Go, chromium (apt-get install -y chromium). FRAMES=<dir> reuses frames.
set -euo pipefail
cd "$(dirname "$0")/.."
out=harness/dist-panels
rm -rf "$out" && mkdir -p "$out"
if [ -z "${FRAMES:-}" ]; then
  FRAMES=$(mktemp -d)
  INFERSCOPE_PANEL_FRAMES="$FRAMES" go test ./test/asgrafana -run 'TestDashboardsRender' -count=1
fi
cp -r "$FRAMES" "$out/frames"
npx esbuild harness/panels.tsx --bundle --outdir="$out" --entry-names=panels-bundle \
  --alias:react-custom-scrollbars-2=./harness/shims/react-custom-scrollbars-2.js \
  --loader:.svg=file --loader:.ttf=file --loader:.woff=file --loader:.woff2=file \
  --define:process.env.NODE_ENV=\"production\" --define:global=window --minify --log-level=warning
cp harness/panels.html "$out/"
node harness/render-panels.js "$out"
