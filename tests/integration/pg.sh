# tests/integration/pg.sh: a PostgreSQL server of a test's own, sourced after env.sh. pg_start
# makes a cluster with Debian's postgresql 15 (initdb) in a temporary folder, starts it
# (pg_ctl) on a Unix socket in that folder only (no TCP port), as the postgres user when the
# test runs as root (PostgreSQL refuses root), with trust authentication for that socket;
# pg_createdb NAME makes a database and prints its --db URI; pg_stop stops the server and
# removes the folder (pg_cleanup, for a trap, does the same and never fails).

PG_BIN=${PG_BIN:-/usr/lib/postgresql/15/bin}
PG_DIR=""
PG_SOCK=""
PG_PORT=""

pg_need() {
    [ -x "$PG_BIN/initdb" ] && [ -x "$PG_BIN/pg_ctl" ] ||
        skip "PostgreSQL 15 is not installed in $PG_BIN (deploy/setup.sh installs postgresql)"
    command -v psql >/dev/null || skip "psql is not installed (Debian's postgresql-client)"
    "$GD_BUILDDIR/gpudiffd" --help 2>&1 | grep -q 'postgresql' ||
        skip "this gpudiffd was built without libpq (configure --with-postgresql)"
}

# Runs a command as the cluster's owner.
pg_as_owner() {
    if [ "$(id -u)" = 0 ]; then
        runuser -u postgres -- "$@"
    else
        "$@"
    fi
}

pg_start() {
    pg_need
    PG_DIR=$(mktemp -d "${TMPDIR:-/tmp}/gpudiff-pg.XXXXXX")
    chmod 755 "$PG_DIR"
    mkdir "$PG_DIR/sock"
    [ "$(id -u)" = 0 ] && chown postgres:postgres "$PG_DIR" "$PG_DIR/sock"
    pg_as_owner "$PG_BIN/initdb" -D "$PG_DIR/data" -U postgres -A trust -E UTF8 \
        --locale=C.UTF-8 >"$PG_DIR/initdb.log" 2>&1 ||
        { cat "$PG_DIR/initdb.log" >&2; fail "initdb failed"; }
    # A port number only names the socket file (no TCP: listen_addresses is empty); one
    # from the pid keeps two tests' clusters apart in /tmp even when run at once.
    PG_PORT=$((20000 + $$ % 20000))
    PG_SOCK="$PG_DIR/sock"
    # fsync=off: a commit still writes its WAL to the kernel before it returns, so a test
    # that kills gpudiffd, or stops the server with -m immediate (pg_cleanup), loses nothing;
    # only a crash of this machine would, which no test makes. With fsync on, the suite on
    # PostgreSQL waited on the disk: server_pg.sh took 288 s of a CI run here, 130 s without
    # (server_e2e.sh 86 s -> 18 s).
    pg_as_owner "$PG_BIN/pg_ctl" -D "$PG_DIR/data" -l "$PG_DIR/server.log" -w -t 60 \
        -o "-c listen_addresses='' -c unix_socket_directories='$PG_SOCK' -p $PG_PORT \
            -c fsync=off -c max_connections=200 -c shared_buffers=64MB" start \
        >/dev/null || { tail -n 20 "$PG_DIR/server.log" >&2; fail "pg_ctl start failed"; }
    echo "$("$PG_BIN/postgres" --version) on $PG_SOCK port $PG_PORT"
}

# psql on the test's cluster: pg_psql DB [psql args...]
pg_psql() {
    db=$1
    shift
    psql -X -q -v ON_ERROR_STOP=1 -h "$PG_SOCK" -p "$PG_PORT" -U postgres -d "$db" "$@"
}

pg_createdb() {
    pg_psql postgres -c "CREATE DATABASE $1" >/dev/null
    echo "postgresql:///$1?host=$PG_SOCK&port=$PG_PORT&user=postgres"
}

pg_stop() {
    if [ -n "$PG_DIR" ] && [ -f "$PG_DIR/data/postmaster.pid" ]; then
        pg_as_owner "$PG_BIN/pg_ctl" -D "$PG_DIR/data" -m fast -w stop >/dev/null
    fi
    [ -n "$PG_DIR" ] && rm -rf "$PG_DIR"
    PG_DIR=""
}

pg_cleanup() {
    if [ -n "$PG_DIR" ] && [ -f "$PG_DIR/data/postmaster.pid" ]; then
        pg_as_owner "$PG_BIN/pg_ctl" -D "$PG_DIR/data" -m immediate -w stop >/dev/null 2>&1 ||
            true
    fi
    [ -n "$PG_DIR" ] && rm -rf "$PG_DIR"
    PG_DIR=""
}
