/*
 * route_runs.c: POST /api/v1/runs (create from run.json, idempotent by id), GET
 * /api/v1/runs (filtered, searched, sorted, paged), GET /api/v1/runs/{id} and POST /api/v1/runs/{id}/finish.
 * Runs still uploading are shown only to agents that ask (?include=uploading), so they can
 * resume; to everyone else they do not exist.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "compare.h"
#include "db.h"
#include "run_doc.h"
#include "server.h"

/* ?include=uploading: only the value "uploading", and only for agents. */
static int
include_uploading(struct srv_req *req, int *out)
{
    const char *inc = srv_req_query(req, "include");
    *out = 0;
    if (inc == NULL)
        return 0;
    if (strcmp(inc, "uploading") != 0)
        return srv_req_fail(req, SRV_EBADREQ, "include: the only value is \"uploading\"");
    int rc = srv_route_authorize(req, SRV_ROLE_AGENT);
    if (rc == 0)
        *out = 1;
    return rc;
}

static int
check_run_id(struct srv_req *req, const char *id)
{
    if (!srv_is_uuid(id))
        return srv_req_fail(req, SRV_EBADREQ, "a run id is a lowercase UUID version 4");
    return 0;
}

int
srv_runs_create(struct srv_req *req)
{
    /* Parsing and storing: on the write pool, not a connection's thread. */
    if (!req->on_pool)
        return SRV_EDEFERWRITE;
    struct srv_run_doc doc;
    struct gd_err err;
    int rc = srv_run_doc_parse(req->body.data ? req->body.data : "", req->body.len,
                               (uint64_t)req->srv->cfg.max_body, &doc, &err);
    if (rc != 0)
        return srv_req_fail_err(req, &err);
    struct srv_db *db = srv_req_db(req);
    if (db == NULL) {
        srv_run_doc_fini(&doc);
        return req->err.code;
    }
    int created = 0;
    json_t *run = NULL;
    /* sec: a replay is attached to the run it replays only by that run's owner (an admin) */
    const char *of = json_string_value(json_object_get(json_object_get(doc.root, "replay"), "of"));
    int64_t of_owner;
    if (of != NULL && srv_db_run_owner(db, of, &of_owner, &err) == 0 &&
        srv_run_owner_check(req, db, of, "attach a replay to") != 0) {
        srv_req_db_release(req, db);
        srv_run_doc_fini(&doc);
        return req->err.code;
    }
    doc.owner_token = req->token_id;
    rc = srv_db_run_create(db, &doc, srv_now(), &created, &err);
    /* The same document again is the owner's retry; anyone else's is refused. */
    if (rc == 0 && !created && srv_run_owner_check(req, db, doc.id, "post again") != 0) {
        srv_req_db_release(req, db);
        srv_run_doc_fini(&doc);
        return req->err.code;
    }
    if (rc == 0)
        rc = srv_db_run_get(db, doc.id, 1, &run, &err);
    srv_req_db_release(req, db);
    if (rc == 0 && created)
        SRV_LOG(GD_LOG_INFO, req, "run %s of model %s (%s, %d layers) created", doc.id,
                doc.model_name, doc.backend, doc.n_layers);
    srv_run_doc_fini(&doc);
    if (rc != 0)
        return srv_req_fail_err(req, &err);
    return srv_reply_json(req, created ? 201 : 200, run);
}

/* The knob= and label= filters of a listing, split into key and value. */
struct list_matches {
    char text[2][SRV_RUN_MATCH_MAX][330];
    int n[2];
    int too_many;
};

static enum MHD_Result
collect_match(void *cls, enum MHD_ValueKind kind, const char *key, const char *value)
{
    (void)kind;
    struct list_matches *m = cls;
    int which = strcmp(key, "knob") == 0 ? 0 : strcmp(key, "label") == 0 ? 1 : -1;
    if (which < 0)
        return MHD_YES;
    if (m->n[which] == SRV_RUN_MATCH_MAX) {
        m->too_many = 1;
        return MHD_NO;
    }
    snprintf(m->text[which][m->n[which]++], sizeof m->text[0][0], "%s", value ? value : "");
    return MHD_YES;
}

/* "KEY=VALUE" of knob= (which 0) or label= (1) into out; fails req when malformed. */
static int
split_match(struct srv_req *req, int which, char *text, struct srv_run_match *out)
{
    const char *what = which == 0 ? "knob" : "label";
    char *eq = strchr(text, '=');
    if (eq == NULL)
        return srv_req_fail(req, SRV_EBADREQ, "%s: NAME=VALUE, e.g. %s", what,
                            which == 0 ? "tf32=true" : "team=serving");
    *eq = '\0';
    const char *value = eq + 1;
    if (!srv_is_name(text, 64, which == 0 ? "_" : "_.:-"))
        return srv_req_fail(req, SRV_EBADREQ, "%s: the name is 1 to 64 of A-Z a-z 0-9 %s", what,
                            which == 0 ? "_" : "_.:-");
    if (value[0] != '\0' && !srv_is_text(value, 256))
        return srv_req_fail(req, SRV_EBADREQ,
                            "%s: the value is at most 256 bytes of UTF-8 without control "
                            "characters",
                            what);
    out->key = text;
    out->value = value;
    return 0;
}

static const struct {
    const char *name;
    enum srv_run_sort sort;
} sorts[] = {
    {"created", SRV_SORT_CREATED}, {"model", SRV_SORT_MODEL},   {"backend", SRV_SORT_BACKEND},
    {"gpu", SRV_SORT_GPU},         {"host", SRV_SORT_HOST},     {"device", SRV_SORT_DEVICE},
    {"layers", SRV_SORT_LAYERS},   {"received", SRV_SORT_RECEIVED},
};

/* sort=, order= and q= (the search words, split at spaces into words). */
static int
list_order_and_words(struct srv_req *req, struct srv_run_filter *f, char *words, size_t size)
{
    const char *sort = srv_req_query(req, "sort"), *order = srv_req_query(req, "order");
    if (sort != NULL) {
        size_t i = 0, n = sizeof sorts / sizeof sorts[0];
        while (i < n && strcmp(sort, sorts[i].name) != 0)
            i++;
        if (i == n)
            return srv_req_fail(req, SRV_EBADREQ,
                                "sort: created, model, backend, gpu, host, device, layers or "
                                "received");
        f->sort = sorts[i].sort;
    }
    if (order != NULL) {
        if (strcmp(order, "asc") != 0 && strcmp(order, "desc") != 0)
            return srv_req_fail(req, SRV_EBADREQ, "order: asc or desc");
        f->ascending = strcmp(order, "asc") == 0;
    }
    const char *q = srv_req_query(req, "q");
    if (q == NULL)
        return 0;
    if (strlen(q) >= size || (q[0] != '\0' && !srv_is_text(q, size - 1)))
        return srv_req_fail(req, SRV_EBADREQ,
                            "q: at most %zu bytes of UTF-8 without control characters", size - 1);
    snprintf(words, size, "%s", q);
    for (char *save = NULL, *w = strtok_r(words, " ", &save); w != NULL;
         w = strtok_r(NULL, " ", &save)) {
        if (f->n_words == SRV_RUN_MATCH_MAX)
            return srv_req_fail(req, SRV_EBADREQ, "q: at most %d words", SRV_RUN_MATCH_MAX);
        f->words[f->n_words++] = w;
    }
    return 0;
}

/* device=, driver=, cuda=, cudnn=, cublas=: exact values. */
static int
list_exact(struct srv_req *req, struct srv_run_filter *f)
{
    static const char *const names[] = {"device", "driver", "cuda", "cudnn", "cublas"};
    const char **slots[] = {&f->device, &f->driver, &f->cuda, &f->cudnn, &f->cublas};
    for (int i = 0; i < 5; i++) {
        const char *v = srv_req_query(req, names[i]);
        size_t max = i == 0 ? 4096 : 256;
        if (v != NULL && !srv_is_text(v, max))
            return srv_req_fail(req, SRV_EBADREQ,
                                "%s: 1 to %zu bytes of UTF-8 without control characters",
                                names[i], max);
        *slots[i] = v;
    }
    return 0;
}

int
srv_runs_list(struct srv_req *req)
{
    static const char *const known[] = {"model", "gpu",   "backend", "since",  "limit",
                                        "offset", "include", "device", "driver", "cuda",
                                        "cudnn",  "cublas", "knob",   "label",  "q",
                                        "sort",   "order",  NULL};
    if (srv_req_query_check(req, known) != 0)
        return req->err.code;
    struct srv_run_filter f = {0};
    f.model = srv_req_query(req, "model");
    f.gpu = srv_req_query(req, "gpu");
    f.backend = srv_req_query(req, "backend");
    f.since = INT64_MIN;
    f.limit = 50;
    f.offset = 0;
    if (f.model != NULL && !srv_is_text(f.model, SRV_MODEL_NAME_MAX))
        return srv_req_fail(req, SRV_EBADREQ, "model: " SRV_MODEL_NAME_RULE);
    if (f.backend != NULL && !srv_is_name(f.backend, 64, "._-"))
        return srv_req_fail(req, SRV_EBADREQ, "backend: 1 to 64 of A-Z a-z 0-9 ._-");
    if (f.gpu != NULL && strlen(f.gpu) > 1024)
        return srv_req_fail(req, SRV_EBADREQ, "gpu: at most 1024 bytes");
    const char *since = srv_req_query(req, "since");
    if (since != NULL && srv_time_parse(since, 1, &f.since) != 0)
        return srv_req_fail(req, SRV_EBADREQ,
                            "since: an RFC 3339 date-time or a date (2026-11-30)");
    const char *limit = srv_req_query(req, "limit"), *offset = srv_req_query(req, "offset");
    if (limit != NULL && srv_parse_int(limit, 1, 1000, &f.limit) != 0)
        return srv_req_fail(req, SRV_EBADREQ, "limit: an integer from 1 to 1000");
    if (offset != NULL && srv_parse_int(offset, 0, 1000000000, &f.offset) != 0)
        return srv_req_fail(req, SRV_EBADREQ, "offset: an integer from 0 to 1000000000");
    if (include_uploading(req, &f.include_uploading) != 0 || list_exact(req, &f) != 0)
        return req->err.code;
    struct list_matches m = {0};
    MHD_get_connection_values(req->conn, MHD_GET_ARGUMENT_KIND, collect_match, &m);
    if (m.too_many)
        return srv_req_fail(req, SRV_EBADREQ, "knob, label: at most %d of each",
                            SRV_RUN_MATCH_MAX);
    for (int i = 0; i < m.n[0]; i++)
        if (split_match(req, 0, m.text[0][i], &f.knobs[i]) != 0)
            return req->err.code;
    for (int i = 0; i < m.n[1]; i++)
        if (split_match(req, 1, m.text[1][i], &f.labels[i]) != 0)
            return req->err.code;
    f.n_knobs = m.n[0];
    f.n_labels = m.n[1];
    char words[257];
    if (list_order_and_words(req, &f, words, sizeof words) != 0)
        return req->err.code;
    struct srv_db *db = srv_req_db(req);
    if (db == NULL)
        return req->err.code;
    json_t *out = NULL;
    struct gd_err err;
    int rc = srv_db_runs_list(db, &f, &out, &err);
    srv_req_db_release(req, db);
    if (rc != 0)
        return srv_req_fail_err(req, &err);
    return srv_reply_json(req, 200, out);
}

int
srv_runs_get(struct srv_req *req)
{
    static const char *const known[] = {"include", NULL};
    int include = 0;
    if (srv_req_query_check(req, known) != 0 || check_run_id(req, req->params[0]) != 0 ||
        include_uploading(req, &include) != 0)
        return req->err.code;
    struct srv_db *db = srv_req_db(req);
    if (db == NULL)
        return req->err.code;
    json_t *run = NULL;
    struct gd_err err;
    int rc = srv_db_run_get(db, req->params[0], include, &run, &err);
    srv_req_db_release(req, db);
    if (rc != 0)
        return srv_req_fail_err(req, &err);
    return srv_reply_json(req, 200, run);
}

int
srv_runs_finish(struct srv_req *req)
{
    static const char *const known[] = {NULL};
    if (srv_req_query_check(req, known) != 0 || check_run_id(req, req->params[0]) != 0)
        return req->err.code;
    if (!req->on_pool)
        return SRV_EDEFERWRITE;
    struct srv_db *db = srv_req_db(req);
    if (db == NULL)
        return req->err.code;
    if (srv_run_owner_check(req, db, req->params[0], "finish") != 0) {
        srv_req_db_release(req, db);
        return req->err.code;
    }
    json_t *run = NULL;
    struct gd_err err;
    int rc = srv_db_run_finish(db, req->params[0], srv_now(), &err);
    if (rc == 0)
        rc = srv_db_run_get(db, req->params[0], 0, &run, &err);
    srv_req_db_release(req, db);
    if (rc != 0)
        return srv_req_fail_err(req, &err);
    SRV_LOG(GD_LOG_INFO, req, "run %s finished", req->params[0]);
    /* The comparison with the baseline is the worker's: the answer does not wait for it. */
    srv_compare_run_finished(req->srv->compare, req->params[0]);
    /* The layer list is what the agent sent: the answer is the summary without it. */
    json_object_del(run, "layers");
    return srv_reply_json(req, 200, run);
}
