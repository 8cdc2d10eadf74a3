/* db_fixture.c: temporary SQLite databases for the server's unit tests. */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include <check.h>

#include "db_fixture.h"

void
dbf_temp(char *path, size_t size, const char *prefix)
{
    ck_assert_int_lt(snprintf(path, size, "/tmp/%s.XXXXXX", prefix), (int)size);
    int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    close(fd);
}

void
dbf_remove(const char *path)
{
    char p[4096];
    unlink(path);
    snprintf(p, sizeof p, "%s-wal", path);
    unlink(p);
    snprintf(p, sizeof p, "%s-shm", path);
    unlink(p);
}

struct srv_db *
dbf_open(char *path, size_t size, const char *prefix, int sync_full, int migrate)
{
    dbf_temp(path, size, prefix);
    struct srv_db_opts opts = {.busy_timeout_ms = 1000, .sync_full = sync_full};
    struct srv_db *db = NULL;
    struct gd_err err;
    ck_assert_msg(srv_db_open(path, &opts, &db, &err) == 0, "%s", err.msg);
    if (migrate)
        ck_assert_msg(srv_db_migrate(db, NULL, NULL, &err) == 0, "%s", err.msg);
    return db;
}
