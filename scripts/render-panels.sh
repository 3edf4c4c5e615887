#!/usr/bin/env bash
# Renders every generated dashboard without a Grafana server and writes the screenshots
# src/img/screenshots/*.png (used by README.md and plugin.json): test/asgrafana
# (TestDashboardScreenshotFrames) runs every panel query through the built plugin over one hour
# of the demo's own targets (provisioning/datasources/inferscope.yaml, each simulator
# fast-forwarded through the hour, then served live) at the dashboards' range, now-1h to now,
# and writes the frames (INFERSCOPE_PANEL_FRAMES); harness/panels.tsx draws them with
# @grafana/data and @grafana/ui in chromium (harness/render-panels.js). The dashboards' hashes
# go beside the images (src/img/screenshots/dashboards.sha256): tools/dashgen's
# TestScreenshotsAreFresh fails when a dashboard changed after its screenshot.
# Needs: npm ci, Go, chromium (apt-get install -y chromium). FRAMES=<dir> reuses frames.
set -euo pipefail
cd "$(dirname "$0")/.."
out=harness/dist-panels
rm -rf "$out" && mkdir -p "$out"
if [ -z "${FRAMES:-}" ]; then
  FRAMES=$(mktemp -d)
  INFERSCOPE_PANEL_FRAMES="$FRAMES" go test ./test/asgrafana -run 'TestDashboardScreenshotFrames' -count=1 -timeout 30m
fi
cp -r "$FRAMES" "$out/frames"
npx esbuild harness/panels.tsx --bundle --outdir="$out" --entry-names=panels-bundle \
  --alias:react-custom-scrollbars-2=./harness/shims/react-custom-scrollbars-2.js \
  --loader:.svg=file --loader:.ttf=file --loader:.woff=file --loader:.woff2=file \
  --define:process.env.NODE_ENV=\"production\" --define:global=window --minify --log-level=warning
cp harness/panels.html "$out/"
node harness/render-panels.js "$out"
(cd dashboards && sha256sum *.json) > src/img/screenshots/dashboards.sha256
