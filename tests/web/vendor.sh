#!/bin/sh
# tests/web/vendor.sh: the dashboard's vendored library (web/vendor) is what SHA256SUMS lists,
# and SHA256SUMS names the version package-lock.json pins: a hand edit of the bundle, or a pin
# changed without web/vendor/update.sh, fails here. Needs no network.
. ./tests/integration/env.sh
cd "$GD_SRCDIR/web/vendor" || fail "no web/vendor"
sha256sum --quiet -c SHA256SUMS || fail "web/vendor files differ from SHA256SUMS: run web/vendor/update.sh"
echo "ok: web/vendor matches SHA256SUMS"
pinned=$(jq -r '.dependencies.elkjs' package.json)
locked=$(jq -r '.packages["node_modules/elkjs"].version' package-lock.json)
[ "$pinned" = "$locked" ] || fail "package.json pins elkjs $pinned, package-lock.json has $locked"
jq -e '.packages["node_modules/elkjs"].integrity | startswith("sha512-")' package-lock.json >/dev/null ||
    fail "package-lock.json has no integrity hash for elkjs"
echo "ok: elkjs $locked pinned, with its integrity hash"
grep -q "Eclipse Public License" LICENSE.elkjs.md || fail "elkjs's licence is not beside it"
echo "ok: its licence (EPL-2.0) is beside it"
