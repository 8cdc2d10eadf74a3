#!/bin/sh
# embed_sql.sh [--name VAR] FILE...: turns schema/sql/NNN_name.sql files into C (the
# srv_migrations table of server/db.h, or VAR: srv_pg_migrations for schema/pg/) on stdout,
# so gpudiffd carries its migrations inside the binary.
# The numbers must increase in the order the files are given (server/local.mk sorts them), from 1.
# while a branch carries a later migration than the one another branch is adding: sweep's
# 004 before srv's 003 is merged. A database migrated past a gap never gets the missing
# number, so only a development database can be made across one.)
set -eu
var=srv_migrations
if [ "${1:-}" = "--name" ]; then
    var=$2
    shift 2
fi
echo "/* Made by server/embed_sql.sh from schema/sql/ or schema/pg/ NNN_name.sql: edit those, not this. */"
echo "#include \"db.h\""
echo
echo "const struct srv_migration ${var}[] = {"
last=0
for f in "$@"; do
    base=$(basename "$f" .sql)
    num=$(echo "$base" | sed -n 's/^\([0-9][0-9][0-9]\)_[a-z0-9_]*$/\1/p')
    if [ -z "$num" ]; then
        echo "embed_sql.sh: $f is not named NNN_name.sql" >&2
        exit 1
    fi
    num=$(expr "$num" + 0)
    if [ "$num" -le "$last" ]; then
        echo "embed_sql.sh: $f is migration $num, expected a number above $last" >&2
        exit 1
    fi
    name=${base#*_}
    echo "    {$num, \"$name\","
    # Each line becomes one C string: backslashes and quotes escaped, comments kept.
    sed -e 's/\\/\\\\/g' -e 's/"/\\"/g' -e 's/^/     "/' -e 's/$/\\n"/' "$f"
    echo "    },"
    last=$num
done
echo "};"
echo
echo "const int ${var%s}_count = (int)(sizeof ${var} / sizeof ${var}[0]);"
