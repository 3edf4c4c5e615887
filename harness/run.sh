#!/usr/bin/env bash
# Real-browser check of the editors without Grafana (see README: the editors in a real browser).
# Needs: npm ci done, and chromium (apt-get install -y chromium) or CHROMIUM=/path/to/chrome.
# Writes harness/dist/{bundle.js,bundle.css,index.html,screenshot.png}.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ ! -x "${CHROMIUM:-/usr/bin/chromium}" ]; then
  echo "harness: no chromium at ${CHROMIUM:-/usr/bin/chromium}; install it with: apt-get install -y chromium" >&2
  exit 2
fi
rm -rf harness/dist && mkdir -p harness/dist
npx esbuild harness/index.tsx --bundle --outdir=harness/dist --entry-names=bundle \
  --loader:.svg=file --loader:.ttf=file --loader:.woff=file --loader:.woff2=file \
  --define:process.env.NODE_ENV=\"production\" --define:global=window --minify --log-level=warning
cp harness/index.html harness/dist/
node harness/drive.js
echo "harness: ok (screenshot in harness/dist/screenshot.png)"
