#!/usr/bin/env bash
# Builds the plugin's release archive, as a Grafana plugin catalog submission
# (or `grafana cli --pluginUrl`) takes it:
#   release/inferscope-llm-datasource-<version>.zip         the plugin id as its only top folder
#   release/inferscope-llm-datasource-<version>.zip.sha256  "<sha256>  <archive name>" (sha256sum -c)
# then checks it (layout, every platform's executable, plugin.json against
# Grafana's plugin.json schema, README, checksum: pkg/release).
#
#   scripts/release.sh                      front end + every platform's backend, then zip and check
#   scripts/release.sh --platforms linux/amd64[,linux/arm64...]
#                                           only those platforms' executables (the archive then
#                                           serves only them; CI builds linux/amd64 alone)
#   scripts/release.sh --no-build           zip and check what dist/ already holds
# Needs Go 1.26, Node 20, mage (go install github.com/magefile/mage@v1.17.2), zip.
# A private signature (npx @grafana/sign-plugin) goes into dist/ before this
# script's zip step: run the build, sign, then scripts/release.sh --no-build.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$(go env GOPATH)/bin:$PATH"

# The platforms of the plugin SDK's `mage -v` (build.BuildAll); the archive
# check expects the same list (pkg/release: TestReleaseScriptPlatforms).
ALL_PLATFORMS="linux/amd64 linux/arm64 linux/arm darwin/amd64 darwin/arm64 windows/amd64"

platforms="$ALL_PLATFORMS"
build=1
while [ $# -gt 0 ]; do
  case "$1" in
    --platforms) platforms="${2//,/ }"; shift 2 ;;
    --platforms=*) platforms="${1#--platforms=}"; platforms="${platforms//,/ }"; shift ;;
    --no-build) build=0; shift ;;
    -h|--help) sed -n '2,17p' "$0"; exit 0 ;;
    *) echo "release.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done

# The SDK's mage target for each platform.
mage_target() {
  case "$1" in
    linux/amd64) echo build:linux ;;
    linux/arm64) echo build:linuxARM64 ;;
    linux/arm) echo build:linuxARM ;;
    darwin/amd64) echo build:darwin ;;
    darwin/arm64) echo build:darwinARM64 ;;
    windows/amd64) echo build:windows ;;
    *) echo "release.sh: platform $1 is not one of: $ALL_PLATFORMS" >&2; return 1 ;;
  esac
}
for p in $platforms; do mage_target "$p" >/dev/null; done

id="$(node -p 'require("./src/plugin.json").id')"
version="$(node -p 'require("./package.json").version')"
exe="$(node -p 'require("./src/plugin.json").executable')"

if [ "$build" = 1 ]; then
  [ -d node_modules ] || npm ci --no-audit --no-fund
  npm run build
  for p in $platforms; do mage -v "$(mage_target "$p")"; done
fi
[ -f dist/plugin.json ] && [ -f dist/module.js ] || { echo "release.sh: dist/ holds no built plugin (run without --no-build)" >&2; exit 1; }

mkdir -p release
stage="release/$id"
archive="release/$id-$version.zip"
rm -rf "$stage" "$archive" "$archive.sha256"
cp -r dist "$stage"
# Only the chosen platforms' executables: dist/ may hold others from earlier builds.
for f in "$stage/${exe}"_*; do
  [ -e "$f" ] || continue
  keep=0
  for p in $platforms; do
    name="${exe}_${p%/*}_${p#*/}"
    [ "${p%/*}" = windows ] && name="$name.exe"
    [ "$(basename "$f")" = "$name" ] && keep=1
  done
  if [ "$keep" = 1 ]; then chmod 0755 "$f"; else rm -f "$f"; fi
done
(cd release && zip -q -r -X "$(basename "$archive")" "$id")
rm -rf "$stage"
(cd release && sha256sum "$(basename "$archive")" > "$(basename "$archive").sha256")

# An archive that fails its check is removed with its checksum, so that no one ships it.
if ! INFERSCOPE_RELEASE_ARCHIVE="$PWD/$archive" INFERSCOPE_RELEASE_PLATFORMS="$platforms" \
  go test ./pkg/release -run 'TestReleaseArchive$' -count=1 -v | grep -v '^=== RUN'; then
  rm -f "$archive" "$archive.sha256"
  echo "release.sh: $archive failed its check (above) and was removed with its checksum" >&2
  exit 1
fi
echo "release: $archive ($(du -h "$archive" | cut -f1)), $archive.sha256; platforms: $platforms"
