/*
 * route_runs.c: POST /api/v1/runs (create from run.json, idempotent by id), GET
 * /api/v1/runs (filtered, paged), GET /api/v1/runs/{id} and POST /api/v1/runs/{id}/finish.
 * Runs still uploading are shown only to agents that ask (?include=uploading), so they can
 * resume; to everyone else they do not exist.
 */
#include <stdint.h>
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
    rc = srv_db_run_create(db, &doc, srv_now(), &created, &err);
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

int
srv_runs_list(struct srv_req *req)
{
    static const char *const known[] = {"model", "gpu",    "backend", "since",
                                        "limit", "offset", "include", NULL};
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
    if (include_uploading(req, &f.include_uploading) != 0)
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
