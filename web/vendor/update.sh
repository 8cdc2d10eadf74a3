#!/bin/sh
# web/vendor/update.sh: makes the dashboard's vendored files from the pinned npm package
# (package.json, package-lock.json beside this script): elkjs's Web Worker bundle, which lays
# out the graph view, and its licence. The files are checked in, so serving the dashboard,
# building gpudiff and running its tests need no network; this script is run by hand when
# the pin changes (it needs npm and the registry), and `make check` checks that the files are
# the ones SHA256SUMS lists (tests/web/vendor.sh).
#
#   web/vendor/update.sh          download (npm ci: the lock file's integrity hashes are
#                                 checked), copy, rewrite SHA256SUMS
set -eu
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d "${TMPDIR:-/tmp}/gpudiff-vendor.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
cp "$here/package.json" "$here/package-lock.json" "$tmp/"
npm ci --prefix "$tmp" --no-audit --no-fund --ignore-scripts >"$tmp/npm.log" 2>&1 ||
    { cat "$tmp/npm.log"; exit 1; }
pkg="$tmp/node_modules/elkjs"
version=$(sed -n 's/^ *"version": *"\([^"]*\)".*/\1/p' "$pkg/package.json" | head -n 1)
cp "$pkg/lib/elk-worker.min.js" "$here/elk-worker.min.js"
cp "$pkg/LICENSE.md" "$here/LICENSE.elkjs.md"
(cd "$here" && sha256sum elk-worker.min.js LICENSE.elkjs.md >SHA256SUMS)
echo "web/vendor: elkjs $version, $(wc -c <"$here/elk-worker.min.js") bytes"
