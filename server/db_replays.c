/*
 * db_replays.c: replays in the store. A replay is a run whose run.json says which run it
 * replays ("replay": {"of": ID}); the daemon's diff of two runs uses the newest replay of
 * one of them made on the other's device (docs/SERVER.md, "Replays"), and a replay that
 * finishes drops the cached diffs of its source so they are computed again with it.
 */
#include <string.h>

#include "db.h"

static const char SQL_REPLAY_FIND[] =
    "SELECT r.id FROM runs r JOIN runs o ON o.id = ?2 WHERE r.state = 'complete' "
    "AND r.device = o.device AND json_extract(r.meta, '$.replay.of') = ?1 "
    "ORDER BY r.created_ts DESC, r.id DESC LIMIT 1";
static const char SQL_REPLAY_DROP[] =
    "DELETE FROM diffs WHERE (SELECT json_extract(meta, '$.replay.of') FROM runs WHERE id = ?1) "
    "IN (run_a, run_b)";

int
srv_db_replay_find(struct srv_db *db, const char *of, const char *like, char out[40],
                   struct gd_err *err)
{
    sqlite3_stmt *st;
    int rc = srv_db_prepare(db, SQL_REPLAY_FIND, &st, err);
    if (rc != 0)
        return rc;
    srv_db_bind_text(st, 1, of);
    srv_db_bind_text(st, 2, like);
    int s = sqlite3_step(st);
    if (s == SQLITE_ROW) {
        snprintf(out, 40, "%s", (const char *)sqlite3_column_text(st, 0));
        rc = 0;
    } else if (s == SQLITE_DONE) {
        rc = gd_err_set(err, SRV_ENOTFOUND, "no replay of run %s", of);
    } else {
        rc = gd_err_set(err, GD_EIO, "replay lookup: %s", sqlite3_errstr(s));
    }
    srv_db_done(st);
    return rc;
}

int
srv_db_replay_finished(struct srv_db *db, const char *id, struct gd_err *err)
{
    sqlite3_stmt *st;
    int rc = srv_db_prepare(db, SQL_REPLAY_DROP, &st, err);
    if (rc != 0)
        return rc;
    srv_db_bind_text(st, 1, id);
    int s = sqlite3_step(st);
    srv_db_done(st);
    return s == SQLITE_DONE ? 0 : gd_err_set(err, GD_EIO, "dropping diffs: %s", sqlite3_errstr(s));
}
