/*
 * db_diff_views.c: the dashboard's view of a cached diff (migration 013, diff_view.h): its
 * summary document and one row per layer, stored beside the diff and deleted with it; pages
 * of rows filtered by verdict, op and name as their text is stored (no JSON parsed or
 * written on the way), the graph's nodes, and the stored documents of a diff's runs. And a
 * cached diff's per-layer summaries (diff_layers, migration 002) in order, for the overlay
 * and the heatmap (route_overlay.c), which draw them without reading any diff's JSON.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compare.h"
#include "db.h"
#include "diff_view.h"

static const char SQL_VIEW_LOCATE[] =
    "SELECT d.id, v.format, v.n_layers FROM diffs d LEFT JOIN diff_views v ON v.diff_id = d.id "
    "WHERE d.run_a = ?1 AND d.run_b = ?2 AND d.truth = ?3 AND d.atol = ?4 AND d.rtol = ?5 "
    "AND d.engine_version = ?6";
static const char SQL_VIEW_SUMMARY[] =
    "SELECT summary FROM diff_views WHERE diff_id = ?1 AND format = ?2";
static const char SQL_VIEW_DROP_STALE[] =
    "DELETE FROM diff_views WHERE diff_id = ?1 AND format <> ?2";
static const char SQL_VIEW_INSERT[] =
    "INSERT INTO diff_views(diff_id, format, n_layers, summary, created_at) "
    "SELECT id, ?2, ?3, ?4, ?5 FROM diffs WHERE id = ?1 ON CONFLICT DO NOTHING RETURNING diff_id";
static const char SQL_VIEW_ROW_INSERT[] =
    "INSERT INTO diff_view_layers(diff_id, idx, name, op, verdict, err, row) "
    "VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7)";
/* A filter is NULL when not given; ?4 a LIKE pattern with '!' as its escape. */
#define FILTER                                                                                     \
    "diff_id = ?1 AND (CAST(?2 AS TEXT) IS NULL OR verdict = ?2) "                                 \
    "AND (CAST(?3 AS TEXT) IS NULL OR op = ?3) "                                                   \
    "AND (CAST(?4 AS TEXT) IS NULL OR lower(name) LIKE ?4 ESCAPE '!') "                            \
    "AND (CAST(?5 AS TEXT) IS NULL OR name = ?5)"
static const char SQL_VIEW_COUNT[] = "SELECT count(*) FROM diff_view_layers WHERE " FILTER;
static const char SQL_VIEW_PAGE[] =
    "SELECT row FROM diff_view_layers WHERE " FILTER " ORDER BY idx LIMIT ?6 OFFSET ?7";
/* Without a filter a page is a range of the key: no rows stepped over. */
static const char SQL_VIEW_RANGE[] =
    "SELECT row FROM diff_view_layers WHERE diff_id = ?1 AND idx >= ?2 AND idx < ?3 "
    "ORDER BY idx";
static const char SQL_VIEW_NODES[] =
    "SELECT idx, name, op, verdict, err FROM diff_view_layers WHERE diff_id = ?1 ORDER BY idx";
static const char SQL_RUN_META[] = "SELECT meta, n_layers, state FROM runs WHERE id = ?1";
static const char SQL_DIFF_ROW[] =
    "SELECT id, first_divergent FROM diffs WHERE run_a = ?1 AND run_b = ?2 AND truth = ?3 "
    "AND atol = ?4 AND rtol = ?5 AND engine_version = ?6";
static const char SQL_DIFF_LAYERS[] =
    "SELECT name, verdict, err FROM diff_layers WHERE diff_id = ?1 ORDER BY idx";

static void
bind_key(struct srv_stmt *st, const struct srv_diff_key *key)
{
    srv_stmt_bind_text(st, 1, key->a);
    srv_stmt_bind_text(st, 2, key->b);
    srv_stmt_bind_text(st, 3, key->truth != NULL ? key->truth : "");
    srv_stmt_bind_double(st, 4, key->atol);
    srv_stmt_bind_double(st, 5, key->rtol);
    srv_stmt_bind_text(st, 6, key->engine_version);
}

int
srv_db_diff_view_locate(struct srv_db *db, const struct srv_diff_key *key, int64_t *diff_id,
                        int *has_view, int64_t *n_layers, struct gd_err *err)
{
    struct srv_stmt *st;
    int rc = srv_db_prepare(db, SQL_VIEW_LOCATE, &st, err);
    if (rc != 0)
        return rc;
    bind_key(st, key);
    int s = srv_stmt_step(st, "diff view lookup", err);
    if (s == SRV_SQL_ROW) {
        *diff_id = srv_stmt_int64(st, 0);
        *has_view = !srv_stmt_null(st, 1) && srv_stmt_int64(st, 1) == SRV_DIFF_VIEW_FORMAT;
        *n_layers = *has_view ? srv_stmt_int64(st, 2) : 0;
    }
    srv_stmt_done(st);
    if (s == SRV_SQL_DONE)
        return gd_err_set(err, SRV_ENOTFOUND, "not cached");
    return s < 0 ? s : 0;
}

/* A copy of a text column followed by a newline, as served. */
static int
text_copy(const char *t, char **text, size_t *len, struct gd_err *err)
{
    size_t n = strlen(t);
    char *copy = malloc(n + 2);
    if (copy == NULL)
        return gd_err_set(err, GD_ENOMEM, "out of memory for %zu bytes", n);
    memcpy(copy, t, n);
    copy[n] = '\n';
    copy[n + 1] = '\0';
    *text = copy;
    *len = n + 1;
    return 0;
}

int
srv_db_diff_view_summary(struct srv_db *db, int64_t diff_id, char **text, size_t *len,
                         struct gd_err *err)
{
    struct srv_stmt *st;
    int rc = srv_db_prepare(db, SQL_VIEW_SUMMARY, &st, err);
    if (rc != 0)
        return rc;
    srv_stmt_bind_int64(st, 1, diff_id);
    srv_stmt_bind_int64(st, 2, SRV_DIFF_VIEW_FORMAT);
    int s = srv_stmt_step(st, "diff view summary", err);
    if (s == SRV_SQL_ROW)
        rc = text_copy(srv_stmt_text(st, 0), text, len, err);
    else
        rc = s == SRV_SQL_DONE ? gd_err_set(err, SRV_ENOTFOUND, "no view of this diff") : s;
    srv_stmt_done(st);
    return rc;
}

static void
bind_number(struct srv_stmt *st, int i, double v)
{
    if (isfinite(v))
        srv_stmt_bind_double(st, i, v);
    else
        srv_stmt_bind_null(st, i);
}

int
srv_db_diff_view_put(struct srv_db *db, int64_t diff_id, const struct srv_diff_view *v, int64_t now,
                     struct gd_err *err)
{
    struct srv_stmt *st;
    int rc = srv_db_begin(db, err);
    if (rc != 0)
        return rc;
    rc = srv_db_prepare(db, SQL_VIEW_DROP_STALE, &st, err);
    if (rc != 0)
        goto done;
    srv_stmt_bind_int64(st, 1, diff_id);
    srv_stmt_bind_int64(st, 2, SRV_DIFF_VIEW_FORMAT);
    rc = srv_stmt_exec(st, "dropping a stale diff view", err);
    if (rc == 0)
        rc = srv_db_prepare(db, SQL_VIEW_INSERT, &st, err);
    if (rc != 0)
        goto done;
    srv_stmt_bind_int64(st, 1, diff_id);
    srv_stmt_bind_int64(st, 2, SRV_DIFF_VIEW_FORMAT);
    srv_stmt_bind_int64(st, 3, v->n_layers);
    srv_stmt_bind_text(st, 4, v->summary);
    srv_stmt_bind_int64(st, 5, now);
    int s = srv_stmt_step(st, "diff view insert", err);
    srv_stmt_done(st);
    /* No row: another request made the view first (or the diff is gone): nothing to add. */
    if (s != SRV_SQL_ROW) {
        rc = s < 0 ? s : srv_db_commit(db, err);
        goto done;
    }
    rc = srv_db_prepare(db, SQL_VIEW_ROW_INSERT, &st, err);
    for (int i = 0; rc == 0 && i < v->n_layers; i++) {
        const struct srv_diff_view_row *r = &v->rows[i];
        srv_stmt_done(st);
        srv_stmt_bind_int64(st, 1, diff_id);
        srv_stmt_bind_int64(st, 2, i);
        srv_stmt_bind_text(st, 3, r->name);
        srv_stmt_bind_text(st, 4, r->op);
        srv_stmt_bind_text(st, 5, r->verdict);
        bind_number(st, 6, r->err);
        srv_stmt_bind_text(st, 7, r->row);
        s = srv_stmt_step(st, "diff view row insert", err);
        if (s < 0)
            rc = s;
    }
    if (rc == 0) {
        srv_stmt_done(st);
        rc = srv_db_commit(db, err);
    }
done:
    srv_db_rollback(db);
    return rc;
}

/* The LIKE pattern of a substring search, ASCII lower case, its wildcards escaped with '!'. */
static char *
like_pattern(const char *q)
{
    size_t n = strlen(q);
    char *p = malloc(2 * n + 3);
    if (p == NULL)
        return NULL;
    size_t k = 0;
    p[k++] = '%';
    for (size_t i = 0; i < n; i++) {
        char c = q[i];
        if (c == '%' || c == '_' || c == '!')
            p[k++] = '!';
        p[k++] = (char)(c >= 'A' && c <= 'Z' ? c + ('a' - 'A') : c);
    }
    p[k++] = '%';
    p[k] = '\0';
    return p;
}

static void
bind_filter(struct srv_stmt *st, int64_t diff_id, const struct srv_diff_view_filter *f,
            const char *pattern)
{
    srv_stmt_bind_int64(st, 1, diff_id);
    srv_stmt_bind_text(st, 2, f->verdict);
    srv_stmt_bind_text(st, 3, f->op);
    srv_stmt_bind_text(st, 4, pattern);
    srv_stmt_bind_text(st, 5, f->name);
}

int
srv_db_diff_view_page(struct srv_db *db, int64_t diff_id, int64_t n_layers,
                      const struct srv_diff_view_filter *f, int64_t offset, int64_t limit,
                      struct srv_buf *out, struct gd_err *err)
{
    int filtered = f->verdict != NULL || f->op != NULL || f->q != NULL || f->name != NULL;
    char *pattern = f->q != NULL ? like_pattern(f->q) : NULL;
    if (f->q != NULL && pattern == NULL)
        return gd_err_set(err, GD_ENOMEM, "out of memory");
    int64_t total = n_layers;
    struct srv_stmt *st = NULL;
    int rc = 0, s = SRV_SQL_DONE;
    if (filtered) {
        rc = srv_db_prepare(db, SQL_VIEW_COUNT, &st, err);
        if (rc != 0)
            goto done;
        bind_filter(st, diff_id, f, pattern);
        s = srv_stmt_step(st, "diff view count", err);
        total = s == SRV_SQL_ROW ? srv_stmt_int64(st, 0) : 0;
        srv_stmt_done(st);
        if (s < 0) {
            rc = s;
            goto done;
        }
    }
    rc = srv_db_prepare(db, filtered ? SQL_VIEW_PAGE : SQL_VIEW_RANGE, &st, err);
    if (rc != 0)
        goto done;
    if (filtered) {
        bind_filter(st, diff_id, f, pattern);
        srv_stmt_bind_int64(st, 6, limit);
        srv_stmt_bind_int64(st, 7, offset);
    } else {
        srv_stmt_bind_int64(st, 1, diff_id);
        srv_stmt_bind_int64(st, 2, offset);
        srv_stmt_bind_int64(st, 3, offset > INT64_MAX - limit ? INT64_MAX : offset + limit);
    }
    int nomem = srv_buf_printf(out, "{\"total\":%lld,\"offset\":%lld,\"limit\":%lld,\"layers\":[",
                               (long long)total, (long long)offset, (long long)limit) != 0;
    int first = 1;
    while (!nomem && (s = srv_stmt_step(st, "diff view page", err)) == SRV_SQL_ROW) {
        const char *row = srv_stmt_text(st, 0);
        nomem = (!first && srv_buf_append(out, ",", 1) != 0) ||
                srv_buf_append(out, row, strlen(row)) != 0;
        first = 0;
    }
    srv_stmt_done(st);
    if (!nomem && s < 0)
        rc = s;
    else if (nomem || srv_buf_append(out, "]}\n", 3) != 0)
        rc =
            gd_err_set(err, GD_ENOMEM, "out of memory for a page of %lld layers", (long long)limit);
done:
    free(pattern);
    return rc;
}

int
srv_db_diff_view_nodes(struct srv_db *db, int64_t diff_id, srv_diff_view_node_fn *fn, void *user,
                       struct gd_err *err)
{
    struct srv_stmt *st;
    int rc = srv_db_prepare(db, SQL_VIEW_NODES, &st, err);
    if (rc != 0)
        return rc;
    srv_stmt_bind_int64(st, 1, diff_id);
    int s = SRV_SQL_DONE;
    while (rc == 0 && (s = srv_stmt_step(st, "diff view nodes", err)) == SRV_SQL_ROW)
        rc = fn(user, srv_stmt_int64(st, 0), srv_stmt_text(st, 1), srv_stmt_text(st, 2),
                srv_stmt_text(st, 3), srv_stmt_null(st, 4) ? NAN : srv_stmt_double(st, 4), err);
    srv_stmt_done(st);
    return rc != 0 ? rc : s < 0 ? s : 0;
}

int
srv_db_run_meta(struct srv_db *db, const char *id, json_t **out, struct gd_err *err)
{
    struct srv_stmt *st;
    int rc = srv_db_prepare(db, SQL_RUN_META, &st, err);
    if (rc != 0)
        return rc;
    srv_stmt_bind_text(st, 1, id);
    int s = srv_stmt_step(st, "run meta", err);
    if (s == SRV_SQL_ROW) {
        json_t *meta = json_loads(srv_stmt_text(st, 0), 0, NULL);
        if (!json_is_object(meta)) {
            json_decref(meta);
            rc = gd_err_set(err, GD_EIO, "run %s: stored metadata is not JSON", id);
        } else {
            json_object_set_new(meta, "n_layers", json_integer(srv_stmt_int64(st, 1)));
            json_object_set_new(meta, "state", json_string(srv_stmt_text(st, 2)));
            *out = meta;
        }
    } else {
        rc = s == SRV_SQL_DONE ? gd_err_set(err, SRV_ENOTFOUND, "no run %s", id) : s;
    }
    srv_stmt_done(st);
    return rc;
}

int
srv_db_diff_layers(struct srv_db *db, const struct srv_diff_key *key, char first_divergent[256],
                   srv_diff_layer_fn *fn, void *user, struct gd_err *err)
{
    struct srv_stmt *st;
    int rc = srv_db_prepare(db, SQL_DIFF_ROW, &st, err);
    if (rc != 0)
        return rc;
    bind_key(st, key);
    int s = srv_stmt_step(st, "diff lookup", err);
    int64_t id = s == SRV_SQL_ROW ? srv_stmt_int64(st, 0) : 0;
    if (s == SRV_SQL_ROW)
        snprintf(first_divergent, 256, "%s", srv_stmt_null(st, 1) ? "" : srv_stmt_text(st, 1));
    srv_stmt_done(st);
    if (s != SRV_SQL_ROW)
        return s == SRV_SQL_DONE ? gd_err_set(err, SRV_ENOTFOUND, "not cached") : s;
    rc = srv_db_prepare(db, SQL_DIFF_LAYERS, &st, err);
    if (rc != 0)
        return rc;
    srv_stmt_bind_int64(st, 1, id);
    while (rc == 0 && (s = srv_stmt_step(st, "diff layers", err)) == SRV_SQL_ROW)
        rc = fn(user, srv_stmt_text(st, 0), srv_stmt_text(st, 1),
                srv_stmt_null(st, 2) ? NAN : srv_stmt_double(st, 2), err);
    srv_stmt_done(st);
    return rc != 0 ? rc : s < 0 ? s : 0;
}
