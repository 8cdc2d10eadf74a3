/*
 * route_sweeps.c: POST /api/v1/sweeps (a sweep document from `gpudiff-agent sweep --server`,
 * idempotent by id, its runs uploaded first), GET /api/v1/sweeps (filtered, paged) and GET
 * /api/v1/sweeps/{id} (the document with its table rows and linked runs, served as stored
 * text).
 */
#include <string.h>

#include "db.h"
#include "server.h"
#include "sweep_doc.h"

int
srv_sweeps_create(struct srv_req *req)
{
    static const char *const known[] = {NULL};
    if (srv_req_query_check(req, known) != 0)
        return req->err.code;
    struct srv_sweep_doc doc;
    struct gd_err err;
    int rc = srv_sweep_doc_parse(req->body.data ? req->body.data : "", req->body.len, &doc, &err);
    if (rc != 0)
        return srv_req_fail_err(req, &err);
    struct srv_db *db = srv_req_db(req);
    if (db == NULL) {
        srv_sweep_doc_fini(&doc);
        return req->err.code;
    }
    int created = 0;
    char *text = NULL;
    size_t len = 0;
    rc = srv_db_sweep_create(db, &doc, srv_now(), &created, &err);
    if (rc == 0)
        rc = srv_db_sweep_get(db, doc.id, &text, &len, &err);
    srv_req_db_release(req, db);
    if (rc == 0 && created)
        SRV_LOG(GD_LOG_INFO, req, "sweep %s of model %s (%s, %d settings, %d runs) stored", doc.id,
                doc.model, doc.backend, doc.n_settings, doc.n_runs);
    srv_sweep_doc_fini(&doc);
    if (rc != 0)
        return srv_req_fail_err(req, &err);
    return srv_reply_json_text(req, created ? 201 : 200, text, len);
}

int
srv_sweeps_list(struct srv_req *req)
{
    static const char *const known[] = {"model", "backend", "limit", "offset", NULL};
    if (srv_req_query_check(req, known) != 0)
        return req->err.code;
    struct srv_sweep_filter f = {.limit = 50, .offset = 0};
    f.model = srv_req_query(req, "model");
    f.backend = srv_req_query(req, "backend");
    if (f.model != NULL && !srv_is_text(f.model, SRV_MODEL_NAME_MAX))
        return srv_req_fail(req, SRV_EBADREQ, "model: " SRV_MODEL_NAME_RULE);
    if (f.backend != NULL && !srv_is_name(f.backend, 64, "._-"))
        return srv_req_fail(req, SRV_EBADREQ, "backend: 1 to 64 of A-Z a-z 0-9 ._-");
    const char *limit = srv_req_query(req, "limit"), *offset = srv_req_query(req, "offset");
    if (limit != NULL && srv_parse_int(limit, 1, 1000, &f.limit) != 0)
        return srv_req_fail(req, SRV_EBADREQ, "limit: an integer from 1 to 1000");
    if (offset != NULL && srv_parse_int(offset, 0, 1000000000, &f.offset) != 0)
        return srv_req_fail(req, SRV_EBADREQ, "offset: an integer from 0 to 1000000000");
    struct srv_db *db = srv_req_db(req);
    if (db == NULL)
        return req->err.code;
    json_t *out = NULL;
    struct gd_err err;
    int rc = srv_db_sweeps_list(db, &f, &out, &err);
    srv_req_db_release(req, db);
    if (rc != 0)
        return srv_req_fail_err(req, &err);
    return srv_reply_json(req, 200, out);
}

int
srv_sweeps_get(struct srv_req *req)
{
    static const char *const known[] = {NULL};
    if (srv_req_query_check(req, known) != 0)
        return req->err.code;
    if (!srv_is_uuid(req->params[0]))
        return srv_req_fail(req, SRV_EBADREQ, "a sweep id is a lowercase UUID version 4");
    struct srv_db *db = srv_req_db(req);
    if (db == NULL)
        return req->err.code;
    char *text = NULL;
    size_t len = 0;
    struct gd_err err;
    int rc = srv_db_sweep_get(db, req->params[0], &text, &len, &err);
    srv_req_db_release(req, db);
    if (rc != 0)
        return srv_req_fail_err(req, &err);
    return srv_reply_json_text(req, 200, text, len);
}
