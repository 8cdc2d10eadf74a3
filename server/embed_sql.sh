#!/bin/sh
# embed_sql.sh: turns schema/sql/NNN_name.sql files into C (the srv_migrations table of
# server/db.h) on stdout, so gpudiffd carries its migrations inside the binary.
# The numbers must increase in the order the files are given, from 1. A number may be
# missing while the branch that owns it is not merged yet (each migration's number is
# assigned to one change); a database is only ever migrated by the binary of one tree.
set -eu
echo "/* Made by server/embed_sql.sh from schema/sql/NNN_name.sql: edit those, not this. */"
echo "#include \"db.h\""
echo
echo "const struct srv_migration srv_migrations[] = {"
want=1
for f in "$@"; do
    base=$(basename "$f" .sql)
    num=$(echo "$base" | sed -n 's/^\([0-9][0-9][0-9]\)_[a-z0-9_]*$/\1/p')
    if [ -z "$num" ]; then
        echo "embed_sql.sh: $f is not named NNN_name.sql" >&2
        exit 1
    fi
    num=$(expr "$num" + 0)
    if [ "$num" -lt "$want" ]; then
        echo "embed_sql.sh: $f is migration $num, expected $want or more" >&2
        exit 1
    fi
    name=${base#*_}
    echo "    {$num, \"$name\","
    # Each line becomes one C string: backslashes and quotes escaped, comments kept.
    sed -e 's/\\/\\\\/g' -e 's/"/\\"/g' -e 's/^/     "/' -e 's/$/\\n"/' "$f"
    echo "    },"
    want=$((num + 1))
done
echo "};"
echo
echo "const int srv_migration_count = (int)(sizeof srv_migrations / sizeof srv_migrations[0]);"
