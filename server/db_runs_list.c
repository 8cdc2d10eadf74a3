/*
 * db_runs_list.c: the run list: filters (model, GPU, backend, date, device key, env
 * versions, knobs, labels, search words), sorting, paging, and for each run of the page
 * where it stands against its model's baseline, read from the diff cache.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compare.h"
#include "db.h"

/* The most values one listing binds: the filters above, each at most once per slot. */
#define LIST_BINDS_MAX 64

/*
 * The query is put together from fixed fragments, one per filter given, so that SQLite sees
 * plain equalities and walks the matching runs_by_* index in ORDER BY order when the order
 * is the default one; values (paths of knobs and labels included) are always bound, never
 * spliced into the text.
 */
struct list_query {
    char where[4096];
    size_t used;
    int overflow;
    struct {
        const char *text; /* NULL: the integer */
        int64_t integer;
    } binds[LIST_BINDS_MAX];
    int n_binds;
    char paths[2 * SRV_RUN_MATCH_MAX][96]; /* "$.knobs.\"tf32\"" and the like */
    enum srv_sql_dialect dialect;
};

static void
add_sql(struct list_query *q, const char *frag)
{
    size_t n = strlen(frag);
    if (q->used + n >= sizeof q->where) {
        q->overflow = 1;
        return;
    }
    memcpy(q->where + q->used, frag, n + 1);
    q->used += n;
}

static void
add_text(struct list_query *q, const char *text)
{
    if (q->n_binds == LIST_BINDS_MAX) {
        q->overflow = 1;
        return;
    }
    q->binds[q->n_binds].text = text;
    q->n_binds++;
}

static void
add_int(struct list_query *q, int64_t v)
{
    if (q->n_binds == LIST_BINDS_MAX) {
        q->overflow = 1;
        return;
    }
    q->binds[q->n_binds].text = NULL;
    q->binds[q->n_binds].integer = v;
    q->n_binds++;
}

/*
 * A value of run.json (its JSON path bound) equal to value: as JSON text (true, 32, null)
 * or, for strings, as the string. SQLite's -> gives a member's JSON text, PostgreSQL's json
 * (not jsonb) #> the member's text as stored: the same comparison on both.
 */
static void
add_json_match(struct list_query *q, int slot, const char *section, const struct srv_run_match *m)
{
    /* Keys are checked by the route to be names (no quote, no backslash): safe in a path. */
    if (q->dialect == SRV_SQL_PG) {
        snprintf(q->paths[slot], sizeof q->paths[slot], "{\"%s\",\"%s\"}", section, m->key);
        add_sql(q, " AND ((r.meta::json #> CAST(? AS TEXT[]))::text = ? OR "
                   "r.meta::json #>> CAST(? AS TEXT[]) = ?)");
    } else {
        snprintf(q->paths[slot], sizeof q->paths[slot], "$.%s.\"%s\"", section, m->key);
        add_sql(q, " AND (r.meta -> ? = ? OR r.meta ->> ? = ?)");
    }
    add_text(q, q->paths[slot]);
    add_text(q, m->value);
    add_text(q, q->paths[slot]);
    add_text(q, m->value);
}

/*
 * What a search word is looked for in: the run's names, and its knobs and labels as their
 * JSON text without quotes ({tf32:true,conv_algo:autotune}), where the word is looked for
 * with each "=" read as ":" (tf32=true finds tf32:true). A scan of the meta texts, which for
 * 10,000 runs takes tens of milliseconds.
 */
static const char *const SEARCH_NAMES[] = {
    " AND (instr(lower(r.id || ' ' || m.name || ' ' || r.backend || ' ' || r.gpu || ' ' || "
    "r.host || ' ' || r.device), lower(?)) > 0 OR instr(lower(replace(coalesce(r.meta -> "
    "'$.knobs', '') || ' ' || coalesce(r.meta -> '$.labels', ''), '\"', '')), "
    "lower(replace(?, '=', ':'))) > 0)",
    " AND (strpos(lower(r.id || ' ' || m.name || ' ' || r.backend || ' ' || r.gpu || ' ' || "
    "r.host || ' ' || r.device), lower(CAST(? AS TEXT))) > 0 OR strpos(lower(replace("
    "coalesce((r.meta::json -> 'knobs')::text, '') || ' ' || "
    "coalesce((r.meta::json -> 'labels')::text, ''), '\"', '')), "
    "lower(replace(CAST(? AS TEXT), '=', ':'))) > 0)",
};

static void
build_where(struct list_query *q, const struct srv_run_filter *f)
{
    add_sql(q, "WHERE 1 = 1");
    if (!f->include_uploading)
        add_sql(q, " AND r.state = 'complete'");
    if (f->model != NULL) {
        add_sql(q, " AND r.model_id = (SELECT id FROM models WHERE name = ?)");
        add_text(q, f->model);
    }
    if (f->gpu != NULL) {
        add_sql(q, " AND r.gpu = ?");
        add_text(q, f->gpu);
    }
    if (f->backend != NULL) {
        add_sql(q, " AND r.backend = ?");
        add_text(q, f->backend);
    }
    if (f->device != NULL) {
        add_sql(q, " AND r.device = ?");
        add_text(q, f->device);
    }
    if (f->since != INT64_MIN) {
        add_sql(q, " AND r.created_ts >= ?");
        add_int(q, f->since);
    }
    static const char *const env_paths[2][4] = {
        {"$.env.driver", "$.env.cuda_runtime", "$.env.cudnn", "$.env.cublas"},
        {"{env,driver}", "{env,cuda_runtime}", "{env,cudnn}", "{env,cublas}"}};
    const char *env_values[] = {f->driver, f->cuda, f->cudnn, f->cublas};
    for (int i = 0; i < 4; i++) {
        if (env_values[i] == NULL)
            continue;
        add_sql(q, q->dialect == SRV_SQL_PG ? " AND r.meta::json #>> CAST(? AS TEXT[]) = ?"
                                            : " AND r.meta ->> ? = ?");
        add_text(q, env_paths[q->dialect][i]);
        add_text(q, env_values[i]);
    }
    for (int i = 0; i < f->n_knobs && i < SRV_RUN_MATCH_MAX; i++)
        add_json_match(q, i, "knobs", &f->knobs[i]);
    for (int i = 0; i < f->n_labels && i < SRV_RUN_MATCH_MAX; i++)
        add_json_match(q, SRV_RUN_MATCH_MAX + i, "labels", &f->labels[i]);
    for (int i = 0; i < f->n_words && i < SRV_RUN_MATCH_MAX; i++) {
        add_sql(q, SEARCH_NAMES[q->dialect]);
        add_text(q, f->words[i]);
        add_text(q, f->words[i]);
    }
}

static const char *
sort_column(enum srv_run_sort sort)
{
    switch (sort) {
    case SRV_SORT_MODEL:
        return "m.name";
    case SRV_SORT_BACKEND:
        return "r.backend";
    case SRV_SORT_GPU:
        return "r.gpu";
    case SRV_SORT_HOST:
        return "r.host";
    case SRV_SORT_DEVICE:
        return "r.device";
    case SRV_SORT_LAYERS:
        return "r.n_layers";
    case SRV_SORT_RECEIVED:
        return "r.received_at";
    case SRV_SORT_CREATED:
    default:
        return NULL;
    }
}

static void
bind_all(struct srv_stmt *st, const struct list_query *q)
{
    for (int i = 0; i < q->n_binds; i++) {
        if (q->binds[i].text != NULL)
            srv_stmt_bind_text(st, i + 1, q->binds[i].text);
        else
            srv_stmt_bind_int64(st, i + 1, q->binds[i].integer);
    }
}

static json_t *
time_or_null(struct srv_stmt *st, int col)
{
    if (srv_stmt_null(st, col))
        return json_null();
    char t[32];
    srv_time_format(srv_stmt_int64(st, col), t);
    return json_string(t);
}

static json_t *
number_or_null(double v)
{
    return isfinite(v) ? json_real(v) : json_null();
}

/*
 * Where run stands against baseline (NULL: the model has none): from the diff cache only,
 * so that a page of the list never waits for a comparison.
 */
static int
against_baseline(struct srv_db *db, const char *run, const char *baseline, int trimmed,
                 json_t **out, struct gd_err *err)
{
    if (baseline == NULL) {
        *out = json_null();
        return 0;
    }
    json_t *o = json_pack("{s:s}", "baseline", baseline);
    if (o == NULL)
        return gd_err_set(err, GD_ENOMEM, "out of memory");
    if (strcmp(run, baseline) == 0) {
        json_object_set_new(o, "state", json_string("baseline"));
        *out = o;
        return 0;
    }
    struct srv_diff_key key;
    struct srv_diff_summary sum;
    srv_diff_key_default(&key, run, baseline);
    int rc = srv_db_diff_summary(db, &key, NULL, &sum, err);
    if (rc == SRV_ENOTFOUND) {
        /* Not compared yet: the worker does it after finish, or the first read of the diff;
           a run whose tensors retention dropped can no longer be. */
        json_object_set_new(o, "state", json_string(trimmed ? "unavailable" : "pending"));
        *out = o;
        return 0;
    }
    if (rc != 0) {
        json_decref(o);
        return rc;
    }
    json_object_set_new(o, "state", json_string("compared"));
    json_object_set_new(o, "verdict",
                        sum.layer_found ? json_string(sum.verdict) : json_string("incomparable"));
    json_object_set_new(o, "first_divergent",
                        sum.has_first ? json_string(sum.first_divergent) : json_null());
    json_object_set_new(o, "err", number_or_null(sum.err));
    json_object_set_new(o, "max_abs", number_or_null(sum.max_abs));
    *out = o;
    return 0;
}

/* run.json's object member name of meta, or a new empty object. */
static json_t *
meta_object(json_t *meta, const char *name)
{
    json_t *v = json_object_get(meta, name);
    return json_is_object(v) ? json_incref(v) : json_object();
}

/* One row of the page as its summary. */
static int
run_summary(struct srv_db *db, struct srv_stmt *st, json_t **out, struct gd_err *err)
{
    json_t *r = json_object();
    static const char *const text_cols[] = {"id",  "model", "model_sha256", "backend",
                                            "gpu", "host",  "created_at",   "state"};
    for (int c = 0; c < 8; c++)
        json_object_set_new(r, text_cols[c], json_string(srv_stmt_text(st, c)));
    json_object_set_new(r, "layers", json_integer(srv_stmt_int64(st, 8)));
    json_object_set_new(r, "received_at", time_or_null(st, 9));
    json_object_set_new(r, "finished_at", time_or_null(st, 10));
    json_object_set_new(r, "trimmed_at", time_or_null(st, 11));
    json_object_set_new(r, "device", json_string(srv_stmt_text(st, 12)));
    const char *id = srv_stmt_text(st, 0);
    json_t *meta = json_loads(srv_stmt_text(st, 13), 0, NULL);
    if (meta == NULL) {
        json_decref(r);
        return gd_err_set(err, GD_EIO, "run %s: stored metadata is not JSON", id);
    }
    json_object_set_new(r, "env", meta_object(meta, "env"));
    json_object_set_new(r, "knobs", meta_object(meta, "knobs"));
    json_object_set_new(r, "labels", meta_object(meta, "labels"));
    json_decref(meta);
    const char *baseline = srv_stmt_null(st, 14) ? NULL : srv_stmt_text(st, 14);
    json_t *against = NULL;
    int rc = against_baseline(db, id, baseline, !srv_stmt_null(st, 11) || srv_stmt_int(st, 15),
                              &against, err);
    if (rc != 0) {
        json_decref(r);
        return rc;
    }
    json_object_set_new(r, "against_baseline", against);
    *out = r;
    return 0;
}

int
srv_db_runs_list(struct srv_db *db, const struct srv_run_filter *f, json_t **out,
                 struct gd_err *err)
{
    struct list_query *q = calloc(1, sizeof *q);
    char *sql = malloc(8192), *count_sql = malloc(8192);
    struct srv_stmt st = {0}, cst = {0};
    json_t *runs = json_array();
    int rc = 0;
    if (q == NULL || sql == NULL || count_sql == NULL || runs == NULL) {
        rc = gd_err_set(err, GD_ENOMEM, "out of memory");
        goto done;
    }
    q->dialect = srv_db_dialect(db);
    build_where(q, f);
    if (q->overflow) {
        rc = gd_err_set(err, GD_EINVAL, "too many filters");
        goto done;
    }
    const char *col = sort_column(f->sort);
    const char *dir = f->ascending ? "ASC" : "DESC";
    char order[160];
    if (col != NULL)
        snprintf(order, sizeof order, "%s %s, r.created_ts %s, r.id %s", col, dir, dir, dir);
    else
        snprintf(order, sizeof order, "r.created_ts %s, r.id %s", dir, dir);
    snprintf(sql, 8192,
             "SELECT r.id, m.name, r.model_sha256, r.backend, r.gpu, r.host, r.created_at, "
             "r.state, r.n_layers, r.received_at, r.finished_at, r.trimmed_at, r.device, r.meta, "
             "b.run_id, br.trimmed_at IS NOT NULL "
             "FROM runs r JOIN models m ON m.id = r.model_id "
             "LEFT JOIN baselines b ON b.model_id = r.model_id "
             "LEFT JOIN runs br ON br.id = b.run_id %s ORDER BY %s LIMIT ? OFFSET ?",
             q->where, order);
    /* The count joins models only when a search word may name the model. */
    snprintf(count_sql, 8192, "SELECT count(*) FROM runs r %s%s",
             f->n_words > 0 ? "JOIN models m ON m.id = r.model_id " : "", q->where);

    rc = srv_db_prepare_once(db, sql, &st, err);
    if (rc == 0)
        rc = srv_db_prepare_once(db, count_sql, &cst, err);
    if (rc != 0) {
        gd_err_prefix(err, "runs query: ");
        goto done;
    }
    bind_all(&st, q);
    bind_all(&cst, q);
    srv_stmt_bind_int64(&st, q->n_binds + 1, f->limit);
    srv_stmt_bind_int64(&st, q->n_binds + 2, f->offset);
    int s;
    while (rc == 0 && (s = srv_stmt_step(&st, "runs query", err)) == SRV_SQL_ROW) {
        json_t *r = NULL;
        rc = run_summary(db, &st, &r, err);
        if (rc == 0)
            json_array_append_new(runs, r);
    }
    if (rc != 0)
        goto done;
    if (s < 0) {
        rc = s;
        goto done;
    }
    s = srv_stmt_step(&cst, "runs count", err);
    if (s != SRV_SQL_ROW) {
        rc = s < 0 ? s : gd_err_set(err, GD_EIO, "runs count: no row");
        goto done;
    }
    int64_t total = srv_stmt_int64(&cst, 0);
    json_t *res = json_object();
    json_object_set_new(res, "runs", runs);
    json_object_set_new(res, "total", json_integer(total));
    json_object_set_new(res, "limit", json_integer(f->limit));
    json_object_set_new(res, "offset", json_integer(f->offset));
    runs = NULL;
    *out = res;
done:
    srv_stmt_free(&st);
    srv_stmt_free(&cst);
    json_decref(runs);
    free(q);
    free(sql);
    free(count_sql);
    return rc;
}
