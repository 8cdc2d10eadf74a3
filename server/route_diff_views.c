/*
 * route_diff_views.c: the dashboard's reads of a diff that stay small however deep the model
 * (docs/SERVER.md, "Diff views"): GET /api/v1/diff/summary (the summary document),
 * GET /api/v1/diff/layers (a page of per-layer rows, filtered by verdict, op and name) and
 * GET /api/v1/diff/graph (every layer as a node with its verdict and error, and the input
 * edges run a recorded). All take the key of GET /api/v1/diff. The view is made from the
 * cached diff the first time it is asked for (the diff computed first when it is not
 * cached), on the compare pool, and stored; later reads are indexed queries of stored text
 * from the thread that serves the connection.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compare.h"
#include "db.h"
#include "diff_view.h"
#include "server.h"

#define PAGE_DEFAULT 200
#define PAGE_MAX     1000
#define OFFSET_MAX   100000000
#define OP_NAME_MAX  64
#define SEARCH_MAX   200

/* The stored meta of a run for the summary; null when the run is gone. */
static json_t *
run_meta(void *user, const char *id)
{
    struct srv_db *db = user;
    json_t *meta = NULL;
    struct gd_err err;
    if (id == NULL || srv_db_run_meta(db, id, &meta, &err) != 0)
        return json_null();
    return meta;
}

/* Makes and stores the view of the cached diff of key (row diff_id). */
static int
view_build(struct srv_req *req, const struct srv_diff_key *key, int64_t diff_id, struct gd_err *err)
{
    struct srv_db *db = NULL;
    char *text = NULL;
    size_t len = 0;
    struct srv_diff_view v;
    memset(&v, 0, sizeof v);
    int rc = srv_store_acquire(req->srv->store, &db, err);
    if (rc == 0)
        rc = srv_db_diff_json(db, key, &text, &len, err);
    if (rc == 0)
        rc = srv_diff_view_make(text, len, run_meta, db, &v, err);
    free(text);
    if (rc == 0)
        rc = srv_db_diff_view_put(db, diff_id, &v, srv_now(), err);
    srv_store_release(req->srv->store, db);
    srv_diff_view_fini(&v);
    return rc;
}

/*
 * Makes sure the view of key is stored: *diff_id and *n_layers then say where. SRV_EDEFER
 * (req untouched) when something has to be computed and the request is not on the pool;
 * *built says whether this request made it. Any other failure fails req.
 */
static int
view_ready(struct srv_req *req, const struct srv_diff_key *key, int64_t *diff_id, int64_t *n_layers,
           int *built)
{
    struct gd_err err;
    *built = 0;
    for (int attempt = 0; attempt < 3; attempt++) {
        struct srv_db *db = srv_req_db(req);
        if (db == NULL)
            return req->err.code;
        int has = 0;
        int rc = srv_db_diff_view_locate(db, key, diff_id, &has, n_layers, &err);
        srv_req_db_release(req, db);
        if (rc == 0 && has)
            return 0;
        if (rc != 0 && rc != SRV_ENOTFOUND)
            return srv_req_fail_err(req, &err);
        if (!req->on_pool)
            return SRV_EDEFER;
        if (rc == SRV_ENOTFOUND)
            rc = srv_compare_ensure(req->srv->compare, key, NULL, &err);
        else
            rc = view_build(req, key, *diff_id, &err);
        if (rc != 0)
            return srv_req_fail_err(req, &err);
        *built = 1;
    }
    return srv_req_fail(req, GD_EIO, "the view of this diff could not be stored");
}

static const char *const KEY_PARAMS[] = {"a", "b", "truth", "atol", "rtol"};

/* The key's parameters plus a route's own, for srv_req_query_check(). */
static int
query_check(struct srv_req *req, const char *const *more)
{
    const char *known[16];
    size_t n = 0;
    for (size_t i = 0; i < sizeof KEY_PARAMS / sizeof KEY_PARAMS[0]; i++)
        known[n++] = KEY_PARAMS[i];
    for (; more != NULL && *more != NULL && n < 15; more++)
        known[n++] = *more;
    known[n] = NULL;
    return srv_req_query_check(req, known);
}

int
srv_diff_summary_get(struct srv_req *req)
{
    struct srv_diff_key key;
    if (query_check(req, NULL) != 0 || srv_diff_key_from_query(req, &key) != 0)
        return req->err.code;
    int64_t diff_id = 0, n = 0;
    int built = 0;
    int rc = view_ready(req, &key, &diff_id, &n, &built);
    if (rc != 0)
        return rc;
    struct srv_db *db = srv_req_db(req);
    if (db == NULL)
        return req->err.code;
    char *text = NULL;
    size_t len = 0;
    struct gd_err err;
    rc = srv_db_diff_view_summary(db, diff_id, &text, &len, &err);
    srv_req_db_release(req, db);
    if (rc != 0)
        return srv_req_fail_err(req, &err);
    rc = srv_reply_json_text(req, 200, text, len);
    if (rc == 0)
        MHD_add_response_header(req->resp, "X-Cache", built ? "miss" : "hit");
    return rc;
}

static int
int_param(struct srv_req *req, const char *name, int64_t min, int64_t max, int64_t def,
          int64_t *out)
{
    const char *text = srv_req_query(req, name);
    *out = def;
    if (text != NULL && srv_parse_int(text, min, max, out) != 0)
        return srv_req_fail(req, SRV_EBADREQ, "%s: an integer from %lld to %lld", name,
                            (long long)min, (long long)max);
    return 0;
}

static int
is_verdict(const char *v)
{
    static const char *const verdicts[] = {"identical", "noise",        "divergent", "amplified",
                                           "nonfinite", "incomparable", "unknown",   NULL};
    for (int i = 0; verdicts[i] != NULL; i++)
        if (strcmp(v, verdicts[i]) == 0)
            return 1;
    return 0;
}

static int
filter_from_query(struct srv_req *req, struct srv_diff_view_filter *f)
{
    memset(f, 0, sizeof *f);
    f->verdict = srv_req_query(req, "verdict");
    f->op = srv_req_query(req, "op");
    f->q = srv_req_query(req, "q");
    f->name = srv_req_query(req, "name");
    if (f->verdict != NULL && !is_verdict(f->verdict))
        return srv_req_fail(req, SRV_EBADREQ,
                            "verdict: identical, noise, divergent, amplified, nonfinite, "
                            "incomparable or unknown");
    if (f->op != NULL && !srv_is_name(f->op, OP_NAME_MAX, "_."))
        return srv_req_fail(req, SRV_EBADREQ, "op: an op name, 1 to %d of A-Z a-z 0-9 _ .",
                            OP_NAME_MAX);
    if (f->q != NULL && f->q[0] == '\0')
        f->q = NULL; /* an empty search matches every name */
    if (f->q != NULL && !srv_is_name(f->q, SEARCH_MAX, SRV_LAYER_NAME_CHARS))
        return srv_req_fail(req, SRV_EBADREQ,
                            "q: part of a layer name, 1 to %d of A-Z a-z 0-9 ._:/-+@#[]",
                            SEARCH_MAX);
    if (f->name != NULL && !srv_is_name(f->name, 200, SRV_LAYER_NAME_CHARS))
        return srv_req_fail(req, SRV_EBADREQ,
                            "name: a layer name is 1 to 200 of A-Z a-z 0-9 ._:/-+@#[]");
    return 0;
}

int
srv_diff_layers_get(struct srv_req *req)
{
    static const char *const more[] = {"offset", "limit", "verdict", "op", "q", "name", NULL};
    struct srv_diff_key key;
    struct srv_diff_view_filter f;
    int64_t offset, limit;
    if (query_check(req, more) != 0 || srv_diff_key_from_query(req, &key) != 0 ||
        filter_from_query(req, &f) != 0 ||
        int_param(req, "offset", 0, OFFSET_MAX, 0, &offset) != 0 ||
        int_param(req, "limit", 1, PAGE_MAX, PAGE_DEFAULT, &limit) != 0)
        return req->err.code;
    int64_t diff_id = 0, n = 0;
    int built = 0;
    int rc = view_ready(req, &key, &diff_id, &n, &built);
    if (rc != 0)
        return rc;
    struct srv_db *db = srv_req_db(req);
    if (db == NULL)
        return req->err.code;
    struct srv_buf out = {0};
    struct gd_err err;
    rc = srv_db_diff_view_page(db, diff_id, n, &f, offset, limit, &out, &err);
    srv_req_db_release(req, db);
    if (rc != 0) {
        srv_buf_fini(&out);
        return srv_req_fail_err(req, &err);
    }
    rc = srv_reply_json_text(req, 200, out.data, out.len);
    if (rc == 0)
        MHD_add_response_header(req->resp, "X-Cache", built ? "miss" : "hit");
    return rc;
}

/* ---- the graph ---- */

struct graph {
    json_t *names, *ops, *err, *index; /* index: name -> node number */
    struct srv_buf verdicts;
};

static int
graph_node(void *user, int64_t idx, const char *name, const char *op, const char *verdict,
           double err_value, struct gd_err *err)
{
    struct graph *g = user;
    char code = srv_diff_view_code(verdict);
    if (json_array_append_new(g->names, json_string(name)) != 0 ||
        json_array_append_new(g->ops, json_string(op)) != 0 ||
        json_array_append_new(g->err, isfinite(err_value) ? json_real(err_value) : json_null()) !=
            0 ||
        srv_buf_append(&g->verdicts, &code, 1) != 0 ||
        (json_object_get(g->index, name) == NULL &&
         json_object_set_new(g->index, name, json_integer(idx)) != 0))
        return gd_err_set(err, GD_ENOMEM, "out of memory for the graph");
    return 0;
}

/* 1 when some record of the run lists inputs. */
static int
has_edges(json_t *records)
{
    size_t i;
    json_t *r;
    json_array_foreach(records, i, r)
    {
        if (json_array_size(json_object_get(r, "inputs")) > 0)
            return 1;
    }
    return 0;
}

/* The edges of records as pairs of node numbers; inputs that are no layer become sources. */
static json_t *
graph_edges(struct graph *g, json_t *records, json_t *sources)
{
    json_t *edges = json_array(), *source_index = json_object();
    size_t n_layers = json_array_size(g->names);
    size_t i, k;
    json_t *r, *in;
    json_array_foreach(records, i, r)
    {
        json_t *to = json_object_get(g->index, json_string_value(json_object_get(r, "name")));
        if (to == NULL)
            continue;
        json_array_foreach(json_object_get(r, "inputs"), k, in)
        {
            const char *src = json_string_value(in);
            if (src == NULL)
                continue;
            json_t *from = json_object_get(g->index, src);
            json_int_t f;
            if (from != NULL) {
                f = json_integer_value(from);
            } else {
                json_t *s = json_object_get(source_index, src);
                if (s == NULL) {
                    s = json_integer((json_int_t)(n_layers + json_array_size(sources)));
                    json_object_set_new(source_index, src, s);
                    json_array_append_new(sources, json_string(src));
                }
                f = json_integer_value(s);
            }
            json_array_append_new(edges, json_integer(f));
            json_array_append(edges, to);
        }
    }
    json_decref(source_index);
    return edges;
}

int
srv_diff_graph_get(struct srv_req *req)
{
    struct srv_diff_key key;
    if (query_check(req, NULL) != 0 || srv_diff_key_from_query(req, &key) != 0)
        return req->err.code;
    int64_t diff_id = 0, n = 0;
    int built = 0;
    int rc = view_ready(req, &key, &diff_id, &n, &built);
    if (rc != 0)
        return rc;
    struct graph g = {json_array(), json_array(), json_array(), json_object(), {0}};
    json_t *records = NULL, *meta = NULL, *sources = json_array(), *edges = NULL;
    const char *from = NULL;
    struct gd_err err;
    struct srv_db *db = srv_req_db(req);
    if (db == NULL) {
        rc = req->err.code;
        goto done;
    }
    rc = srv_db_diff_view_nodes(db, diff_id, graph_node, &g, &err);
    /* The edges run a recorded, else run b's (a framework dump records none); a run whose
     * records are not to be had (retention) gives no edges: the layers in their order. */
    for (int side = 0; rc == 0 && side < 2 && from == NULL; side++) {
        json_decref(records);
        json_decref(meta);
        records = meta = NULL;
        if (srv_db_run_records(db, side == 0 ? key.a : key.b, &meta, &records, &err) == 0 &&
            has_edges(records))
            from = side == 0 ? "a" : "b";
    }
    srv_req_db_release(req, db);
    if (rc != 0) {
        rc = srv_req_fail_err(req, &err);
        goto done;
    }
    edges = from != NULL ? graph_edges(&g, records, sources) : json_array();
    if (srv_buf_append(&g.verdicts, "", 1) != 0) {
        rc = srv_req_fail(req, GD_ENOMEM, "out of memory");
        goto done;
    }
    json_t *out = json_pack("{s:I, s:O, s:O, s:s, s:O, s:O, s:O, s:o}", "nodes", (json_int_t)n,
                            "names", g.names, "ops", g.ops, "verdicts", g.verdicts.data, "err",
                            g.err, "sources", sources, "edges", edges, "edges_from",
                            from != NULL ? json_string(from) : json_null());
    rc = srv_reply_json_compact(req, 200, out, 3);
done:
    json_decref(g.names);
    json_decref(g.ops);
    json_decref(g.err);
    json_decref(g.index);
    srv_buf_fini(&g.verdicts);
    json_decref(records);
    json_decref(meta);
    json_decref(sources);
    json_decref(edges);
    return rc;
}
