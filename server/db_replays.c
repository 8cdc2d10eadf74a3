/*
 * db_replays.c: replays in the store. A replay is a run whose run.json says which run it
 * replays ("replay": {"of": ID}); the daemon's diff of two runs uses the newest replay of
 * one of them made on the other's device (docs/SERVER.md, "Replays"), and a replay that
 * finishes drops the cached diffs of its source so they are computed again with it.
 */
#include <stdio.h>
#include <string.h>

#include "db.h"

/*
 * sec: a replay counts for a run only when the run's owner made it, or an admin did (the
 * same owner: IS in SQLite, IS NOT DISTINCT FROM in PostgreSQL, so that runs from before
 * owners, NULL on both sides, keep their replays). A replay another token attached changes
 * no diff of runs it does not own, and drops none of their cached diffs.
 */
#define REPLAY_MAY(same)                                                                           \
    "(r.owner_token " same " s.owner_token OR EXISTS (SELECT 1 FROM tokens t "                     \
    "WHERE t.id = r.owner_token AND t.role = 'admin'))"

/*
 * By dialect (sql.h): SQLite's json_extract, PostgreSQL's json path operator. A replay runs
 * its source's model, so the search walks runs_by_device for that model and the device only:
 * without the model it read the meta of every complete run, 30 ms per diff with 10,000 runs
 * in the store, twice per diff (docs/PERFORMANCE.md, "The device matrix").
 */
static const char *const SQL_REPLAY_FIND[] = {
    "SELECT r.id FROM runs r JOIN runs o ON o.id = ?2 JOIN runs s ON s.id = ?1 "
    "WHERE r.model_id = s.model_id AND r.device = o.device AND r.state = 'complete' "
    "AND json_extract(r.meta, '$.replay.of') = ?1 AND " REPLAY_MAY("IS") " "
    "ORDER BY r.created_ts DESC, r.id DESC LIMIT 1",
    "SELECT r.id FROM runs r JOIN runs o ON o.id = ?2 JOIN runs s ON s.id = ?1 "
    "WHERE r.model_id = s.model_id AND r.device = o.device AND r.state = 'complete' "
    "AND r.meta::json #>> '{replay,of}' = ?1 AND " REPLAY_MAY("IS NOT DISTINCT FROM") " "
    "ORDER BY r.created_ts DESC, r.id DESC LIMIT 1",
};
static const char *const SQL_REPLAY_DROP[] = {
    "DELETE FROM diffs WHERE (SELECT s.id FROM runs r JOIN runs s "
    "ON s.id = json_extract(r.meta, '$.replay.of') WHERE r.id = ?1 AND " REPLAY_MAY("IS") ") "
    "IN (run_a, run_b)",
    "DELETE FROM diffs WHERE (SELECT s.id FROM runs r JOIN runs s "
    "ON s.id = r.meta::json #>> '{replay,of}' WHERE r.id = ?1 AND "
    REPLAY_MAY("IS NOT DISTINCT FROM") ") IN (run_a, run_b)",
};

int
srv_db_replay_find(struct srv_db *db, const char *of, const char *like, char out[40],
                   struct gd_err *err)
{
    struct srv_stmt *st;
    int rc = srv_db_prepare(db, SQL_REPLAY_FIND[srv_db_dialect(db)], &st, err);
    if (rc != 0)
        return rc;
    srv_stmt_bind_text(st, 1, of);
    srv_stmt_bind_text(st, 2, like);
    int s = srv_stmt_step(st, "replay lookup", err);
    if (s == SRV_SQL_ROW) {
        snprintf(out, 40, "%s", srv_stmt_text(st, 0));
        rc = 0;
    } else if (s == SRV_SQL_DONE) {
        rc = gd_err_set(err, SRV_ENOTFOUND, "no replay of run %s", of);
    } else {
        rc = s;
    }
    srv_stmt_done(st);
    return rc;
}

int
srv_db_replay_finished(struct srv_db *db, const char *id, struct gd_err *err)
{
    struct srv_stmt *st;
    int rc = srv_db_prepare(db, SQL_REPLAY_DROP[srv_db_dialect(db)], &st, err);
    if (rc != 0)
        return rc;
    srv_stmt_bind_text(st, 1, id);
    return srv_stmt_exec(st, "dropping diffs", err);
}
