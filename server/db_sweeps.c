/*
 * db_sweeps.c: sweeps as stored (schema/sql/004_sweeps.sql): the document with the fields it
 * is filed by, and its links to the runs it names, which must be complete runs of the same
 * model on the server when it arrives. A sweep is served as stored text: the answer to GET
 * /api/v1/sweeps/{id} is assembled from it without parsing it again.
 */
#include <stdlib.h>
#include <string.h>

#include "db.h"
#include "sweep_doc.h"

static const char SQL_SWEEP_FIND[] = "SELECT content_sha256 FROM sweeps WHERE id = ?1";
static const char SQL_SWEEP_RUN_CHECK[] =
    "SELECT r.state, m.name FROM runs r JOIN models m ON m.id = r.model_id WHERE r.id = ?1";
static const char SQL_SWEEP_INSERT[] =
    "INSERT INTO sweeps(id, model, backend, gpu, created_at, created_ts, received_at, "
    "n_settings, content_sha256, doc, summary, table_rows) "
    "VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)";
static const char SQL_SWEEP_LINK[] =
    "INSERT INTO sweep_runs(sweep_id, run_id, role, setting, position) VALUES(?1, ?2, ?3, ?4, ?5)";
static const char SQL_SWEEP_GET[] =
    "SELECT received_at, summary, table_rows, doc FROM sweeps WHERE id = ?1";
static const char SQL_SWEEP_RUNS[] =
    "SELECT sr.run_id, sr.role, sr.setting, r.trimmed_at FROM sweep_runs sr "
    "JOIN runs r ON r.id = sr.run_id WHERE sr.sweep_id = ?1 ORDER BY sr.position";
static const char SQL_SWEEPS_LIST[] =
    "SELECT summary, received_at FROM sweeps WHERE (CAST(?1 AS TEXT) IS NULL OR model = ?1) "
    "AND (CAST(?2 AS TEXT) IS NULL OR backend = ?2) ORDER BY created_ts DESC, id DESC LIMIT ?3 OFFSET ?4";
static const char SQL_SWEEPS_LIST_MODEL[] =
    "SELECT summary, received_at FROM sweeps WHERE model = ?1 "
    "AND (CAST(?2 AS TEXT) IS NULL OR backend = ?2) ORDER BY created_ts DESC, id DESC LIMIT ?3 OFFSET ?4";
static const char SQL_SWEEPS_COUNT[] =
    "SELECT count(*) FROM sweeps WHERE (CAST(?1 AS TEXT) IS NULL OR model = ?1) AND (CAST(?2 AS TEXT) IS NULL OR backend = ?2)";

/* Every run the document names: complete, of its model. */
static int
check_runs(struct srv_db *db, const struct srv_sweep_doc *doc, struct gd_err *err)
{
    for (int i = 0; i < doc->n_runs; i++) {
        struct srv_stmt *st;
        int rc = srv_db_prepare(db, SQL_SWEEP_RUN_CHECK, &st, err);
        if (rc != 0)
            return rc;
        const char *id = doc->runs[i].run_id;
        srv_stmt_bind_text(st, 1, id);
        int s = srv_stmt_step(st, "sweep run check", err);
        if (s == SRV_SQL_DONE)
            rc = gd_err_set(err, SRV_ECONFLICT,
                            "run %s (%s%s%s) is not on the server: upload "
                            "the sweep's runs first",
                            id, doc->runs[i].role, doc->runs[i].setting[0] ? " " : "",
                            doc->runs[i].setting);
        else if (s < 0)
            rc = s;
        else if (strcmp(srv_stmt_text(st, 0), "complete") != 0)
            rc = gd_err_set(err, SRV_ECONFLICT, "run %s is still uploading: finish it first", id);
        else if (strcmp(srv_stmt_text(st, 1), doc->model) != 0)
            rc = gd_err_set(err, SRV_ECONFLICT, "run %s is of model %s, the sweep of %s", id,
                            srv_stmt_text(st, 1), doc->model);
        srv_stmt_done(st);
        if (rc != 0)
            return rc;
    }
    return 0;
}

static int
insert(struct srv_db *db, const struct srv_sweep_doc *doc, int64_t now, struct gd_err *err)
{
    struct srv_stmt *st;
    int rc = srv_db_prepare(db, SQL_SWEEP_INSERT, &st, err);
    if (rc != 0)
        return rc;
    srv_stmt_bind_text(st, 1, doc->id);
    srv_stmt_bind_text(st, 2, doc->model);
    srv_stmt_bind_text(st, 3, doc->backend);
    srv_stmt_bind_text(st, 4, doc->gpu);
    srv_stmt_bind_text(st, 5, doc->created_at);
    srv_stmt_bind_int64(st, 6, doc->created_ts);
    srv_stmt_bind_int64(st, 7, now);
    srv_stmt_bind_int64(st, 8, doc->n_settings);
    srv_stmt_bind_text(st, 9, doc->content_sha256);
    srv_stmt_bind_text(st, 10, doc->doc);
    srv_stmt_bind_text(st, 11, doc->summary);
    srv_stmt_bind_text(st, 12, doc->table);
    rc = srv_stmt_exec(st, "sweep insert", err);
    if (rc != 0)
        return rc;
    for (int i = 0; i < doc->n_runs; i++) {
        rc = srv_db_prepare(db, SQL_SWEEP_LINK, &st, err);
        if (rc != 0)
            return rc;
        srv_stmt_bind_text(st, 1, doc->id);
        srv_stmt_bind_text(st, 2, doc->runs[i].run_id);
        srv_stmt_bind_text(st, 3, doc->runs[i].role);
        srv_stmt_bind_text(st, 4, doc->runs[i].setting);
        srv_stmt_bind_int64(st, 5, i);
        rc = srv_stmt_exec(st, "sweep run link", err);
        if (rc != 0)
            return rc;
    }
    return 0;
}

int
srv_db_sweep_create(struct srv_db *db, const struct srv_sweep_doc *doc, int64_t now, int *created,
                    struct gd_err *err)
{
    struct srv_stmt *st;
    int rc = srv_db_begin(db, err);
    if (rc != 0)
        return rc;
    rc = srv_db_prepare(db, SQL_SWEEP_FIND, &st, err);
    if (rc != 0)
        goto done;
    srv_stmt_bind_text(st, 1, doc->id);
    int s = srv_stmt_step(st, "sweep lookup", err);
    if (s == SRV_SQL_ROW) {
        int same = strcmp(srv_stmt_text(st, 0), doc->content_sha256) == 0;
        srv_stmt_done(st);
        if (!same) {
            rc = gd_err_set(err, SRV_ECONFLICT, "sweep %s exists with other content", doc->id);
            goto done;
        }
        *created = 0;
        rc = srv_db_commit(db, err);
        goto done;
    }
    srv_stmt_done(st);
    if (s < 0) {
        rc = s;
        goto done;
    }
    rc = check_runs(db, doc, err);
    if (rc == 0)
        rc = insert(db, doc, now, err);
    if (rc == 0)
        rc = srv_db_commit(db, err);
    if (rc == 0)
        *created = 1;
done:
    if (rc != 0)
        srv_db_rollback(db);
    return rc;
}

/* The links of a sweep, as a JSON array text. */
static int
runs_json(struct srv_db *db, const char *id, char **out, struct gd_err *err)
{
    struct srv_stmt *st;
    int rc = srv_db_prepare(db, SQL_SWEEP_RUNS, &st, err);
    if (rc != 0)
        return rc;
    srv_stmt_bind_text(st, 1, id);
    json_t *runs = json_array();
    int s;
    while ((s = srv_stmt_step(st, "sweep runs", err)) == SRV_SQL_ROW) {
        const char *setting = srv_stmt_text(st, 2);
        json_array_append_new(
            runs, json_pack("{s:s, s:s, s:o, s:b}", "run", srv_stmt_text(st, 0),
                            "role", srv_stmt_text(st, 1), "setting",
                            setting[0] ? json_string(setting) : json_null(), "tensors",
                            srv_stmt_null(st, 3)));
    }
    srv_stmt_done(st);
    if (s < 0) {
        json_decref(runs);
        return s;
    }
    *out = json_dumps(runs, JSON_COMPACT | JSON_PRESERVE_ORDER);
    json_decref(runs);
    return *out != NULL ? 0 : gd_err_set(err, GD_ENOMEM, "out of memory");
}

int
srv_db_sweep_get(struct srv_db *db, const char *id, char **text, size_t *len, struct gd_err *err)
{
    struct srv_stmt *st;
    char *runs = NULL;
    struct srv_buf b = {0};
    int rc = runs_json(db, id, &runs, err);
    if (rc != 0)
        return rc;
    rc = srv_db_prepare(db, SQL_SWEEP_GET, &st, err);
    if (rc != 0)
        goto done;
    srv_stmt_bind_text(st, 1, id);
    int s = srv_stmt_step(st, "sweep get", err);
    if (s == SRV_SQL_ROW) {
        char received[32];
        srv_time_format(srv_stmt_int64(st, 0), received);
        const char *summary = srv_stmt_text(st, 1);
        size_t slen = strlen(summary);
        /* {summary fields..., "received_at", "runs", "table", "sweep"}: the summary object is
         * opened up and the rest appended, all stored text */
        if (slen < 2 || summary[slen - 1] != '}')
            rc = gd_err_set(err, GD_EIO, "sweep %s: its stored summary is damaged", id);
        if (rc == 0 && (srv_buf_append(&b, summary, slen - 1) != 0 ||
                        srv_buf_printf(&b,
                                       ",\"received_at\":\"%s\",\"runs\":%s,"
                                       "\"table\":%s,\"sweep\":%s}\n",
                                       received, runs, srv_stmt_text(st, 2),
                                       srv_stmt_text(st, 3)) != 0))
            rc = gd_err_set(err, GD_ENOMEM, "out of memory");
    } else if (s == SRV_SQL_DONE) {
        rc = gd_err_set(err, SRV_ENOTFOUND, "no sweep %s", id);
    } else {
        rc = s;
    }
    srv_stmt_done(st);
done:
    free(runs);
    if (rc != 0) {
        srv_buf_fini(&b);
        return rc;
    }
    *text = b.data;
    *len = b.len;
    return 0;
}

int
srv_db_sweeps_list(struct srv_db *db, const struct srv_sweep_filter *f, json_t **out,
                   struct gd_err *err)
{
    struct srv_stmt *st;
    int64_t total = 0;
    int rc = srv_db_prepare(db, SQL_SWEEPS_COUNT, &st, err);
    if (rc != 0)
        return rc;
    srv_stmt_bind_text(st, 1, f->model);
    srv_stmt_bind_text(st, 2, f->backend);
    int s = srv_stmt_step(st, "sweep count", err);
    if (s == SRV_SQL_ROW)
        total = srv_stmt_int64(st, 0);
    srv_stmt_done(st);
    if (s < 0)
        return s;
    rc = srv_db_prepare(db, f->model != NULL ? SQL_SWEEPS_LIST_MODEL : SQL_SWEEPS_LIST, &st, err);
    if (rc != 0)
        return rc;
    srv_stmt_bind_text(st, 1, f->model);
    srv_stmt_bind_text(st, 2, f->backend);
    srv_stmt_bind_int64(st, 3, f->limit);
    srv_stmt_bind_int64(st, 4, f->offset);
    json_t *list = json_array();
    while ((s = srv_stmt_step(st, "sweep list", err)) == SRV_SQL_ROW) {
        json_t *sum = json_loads(srv_stmt_text(st, 0), 0, NULL);
        if (!json_is_object(sum)) {
            json_decref(sum);
            continue; /* a damaged row is left out, never served half */
        }
        char received[32];
        srv_time_format(srv_stmt_int64(st, 1), received);
        json_object_set_new(sum, "received_at", json_string(received));
        json_array_append_new(list, sum);
    }
    srv_stmt_done(st);
    if (s < 0) {
        json_decref(list);
        return s;
    }
    *out = json_pack("{s:o, s:I, s:I, s:I}", "sweeps", list, "total", (json_int_t)total, "limit",
                     (json_int_t)f->limit, "offset", (json_int_t)f->offset);
    return *out != NULL ? 0 : gd_err_set(err, GD_ENOMEM, "out of memory");
}
