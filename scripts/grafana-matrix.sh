#!/usr/bin/env bash
# Builds and tests the front end against an older Grafana's @grafana/* packages (issue 34's
# version matrix): the working tree's front-end files are copied into a scratch directory,
# @grafana/{data,ui,runtime,schema} are pinned there to one release, and
# typecheck, jest, the production build and (with chromium) the browser harness run against
# them. The main tree's node_modules and package-lock.json are left alone.
#
#   scripts/grafana-matrix.sh            # the oldest supported set (GRAFANA_OLDEST below)
#   scripts/grafana-matrix.sh 12.4.10    # any other release line
#
# The rest keeps package-lock.json's versions. @grafana/plugin-ui is bundled into module.js and
# stays at package.json's version; it declares peer dependencies on @grafana/* ^13, which
# --force turns into a warning (peers are still installed): what this check builds and tests
# is exactly that combination, as Grafana 11/12 would load it. @grafana/i18n exists from 12.1 on
# and is pinned with the rest from there; before 12.1 it is removed (nothing in src/ imports it).
# Needs: Node 20, npm, the registry that npm ci reaches; chromium for the harness (skipped without).
set -euo pipefail
cd "$(dirname "$0")/.."
# The oldest Grafana that grafanaDependency admits; docs/frontend.md says what needs it.
GRAFANA_OLDEST=12.4.0
version="${1:-$GRAFANA_OLDEST}"
scratch="$(mktemp -d "${TMPDIR:-/tmp}/inferscope-grafana-${version}.XXXXXX")"
trap 'rm -rf "$scratch"' EXIT

# Only what the front end's build and tests read (no Go sources, no node_modules).
tar -cf - --exclude=node_modules --exclude=dist --exclude=harness/dist \
  package.json package-lock.json tsconfig.json jest.config.js jest-setup.js webpack.config.ts \
  eslint.config.mjs .config src harness scripts/plugin-readme.mjs scripts/plugin-readme-lib.mjs \
  scripts/plugin-readme-lib.d.mts README.md CHANGELOG.md LICENSE dashboards \
  2>/dev/null | tar -xf - -C "$scratch"
cd "$scratch"
pins=()
for p in data ui runtime schema; do pins+=("@grafana/$p@$version"); done
major="${version%%.*}"; rest="${version#*.}"; minor="${rest%%.*}"
if [ "$major" -gt 12 ] || { [ "$major" -eq 12 ] && [ "$minor" -ge 1 ]; }; then
  pins+=("@grafana/i18n@$version")
else
  npm pkg delete dependencies.@grafana/i18n
fi
for p in "${pins[@]}"; do npm pkg set "dependencies.${p%@*}=${p##*@}"; done
# @grafana/ui 12.4.0-12.4.3 take react-data-grid from a GitHub commit (codeload.github.com,
# which CI cannot reach); 12.4.6 on take Grafana's npm release of that fork, used here for
# those too (only @grafana/ui's Table uses it; no editor of ours renders one).
npm pkg set 'overrides.react-data-grid=npm:@grafana/react-data-grid@7.0.0-beta.57'
echo "== grafana matrix $version: npm install ${pins[*]}"
npm install --no-audit --no-fund --force --loglevel=error
npm ls --depth=0 @grafana/data @grafana/ui @grafana/runtime @grafana/plugin-ui
echo "== grafana matrix $version: typecheck"
npm run typecheck
echo "== grafana matrix $version: jest"
npm run test:ci
echo "== grafana matrix $version: build"
npm run build
if [ -x "${CHROMIUM:-/usr/bin/chromium}" ]; then
  echo "== grafana matrix $version: editors in chromium"
  npm run test:browser
else
  echo "== grafana matrix $version: no chromium, browser harness skipped"
fi
echo "grafana matrix $version: ok"
