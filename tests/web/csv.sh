#!/bin/sh
# tests/web/csv.sh: the dashboard's CSV export against formula injection (csv_cells.mjs),
# in node: web/js is ES modules without a package.json, which node reads as such with
# --experimental-default-type=module (node 20.10 and later).
. ./tests/integration/env.sh
command -v node >/dev/null || skip "node is not installed (deploy/setup.sh)"
node --experimental-default-type=module "$GD_SRCDIR/tests/web/csv_cells.mjs" ||
    fail "csv_cells.mjs"
