/*
 * db_standing.c: the truth a run is measured against when none is named (GET
 * /api/v1/standing?truth=auto): the newest complete cpu64 run of the same model with the same
 * input, as `gpudiff-agent run --backend cpu64` makes it (docs/COMPARISON.md, "Truth").
 */
#include <stdio.h>

#include "db.h"

/* By dialect (sql.h): the input's sha256 from the stored meta, null-safe equality. */
static const char *const SQL_TRUTH_FIND[] = {
    "SELECT r.id FROM runs r JOIN runs o ON o.id = ?1 WHERE r.model_id = o.model_id "
    "AND r.backend = 'cpu64' AND r.state = 'complete' AND r.trimmed_at IS NULL AND r.id <> o.id "
    "AND json_extract(r.meta, '$.input.sha256') IS json_extract(o.meta, '$.input.sha256') "
    "ORDER BY r.created_ts DESC, r.id DESC LIMIT 1",
    "SELECT r.id FROM runs r JOIN runs o ON o.id = ?1 WHERE r.model_id = o.model_id "
    "AND r.backend = 'cpu64' AND r.state = 'complete' AND r.trimmed_at IS NULL AND r.id <> o.id "
    "AND (r.meta::json #>> '{input,sha256}') IS NOT DISTINCT FROM "
    "(o.meta::json #>> '{input,sha256}') ORDER BY r.created_ts DESC, r.id DESC LIMIT 1",
};

int
srv_db_truth_find(struct srv_db *db, const char *run, char out[40], struct gd_err *err)
{
    struct srv_stmt *st;
    int rc = srv_db_prepare(db, SQL_TRUTH_FIND[srv_db_dialect(db)], &st, err);
    if (rc != 0)
        return rc;
    srv_stmt_bind_text(st, 1, run);
    int s = srv_stmt_step(st, "truth lookup", err);
    if (s == SRV_SQL_ROW)
        snprintf(out, 40, "%s", srv_stmt_text(st, 0));
    else
        rc = s == SRV_SQL_DONE
                 ? gd_err_set(err, SRV_ENOTFOUND, "no cpu64 run of this model and input")
                 : s;
    srv_stmt_done(st);
    return rc;
}
