/*
 * route_requests.c: the tensors the daemon asks agents for (docs/SERVER.md, "Fingerprints
 * and fetched layers"). GET /api/v1/runs/{id}/requests lists a run's requests (what
 * `gpudiff-agent fetch-layers` fulfils); POST adds one by hand ({"index": N}: the dashboard's
 * "fetch this layer"). Diffs add their own (compare.c).
 */
#include <stdio.h>
#include <string.h>

#include "db.h"
#include "server.h"

int
srv_requests_list(struct srv_req *req)
{
    static const char *const known[] = {NULL};
    if (srv_req_query_check(req, known) != 0)
        return req->err.code;
    if (!srv_is_uuid(req->params[0]))
        return srv_req_fail(req, SRV_EBADREQ, "a run id is a lowercase UUID version 4");
    struct srv_db *db = srv_req_db(req);
    if (db == NULL)
        return req->err.code;
    json_t *out = NULL;
    struct gd_err err;
    int rc = srv_db_requests_list(db, req->params[0], &out, &err);
    srv_req_db_release(req, db);
    if (rc != 0)
        return srv_req_fail_err(req, &err);
    return srv_reply_json(req, 200, out);
}

int
srv_requests_add(struct srv_req *req)
{
    static const char *const known[] = {NULL};
    if (srv_req_query_check(req, known) != 0)
        return req->err.code;
    if (!srv_is_uuid(req->params[0]))
        return srv_req_fail(req, SRV_EBADREQ, "a run id is a lowercase UUID version 4");
    if (!req->on_pool)
        return SRV_EDEFERWRITE;
    json_error_t jerr;
    json_t *body = json_loadb(req->body.data ? req->body.data : "", req->body.len,
                              JSON_REJECT_DUPLICATES, &jerr);
    if (body == NULL)
        return srv_req_fail(req, SRV_EBADJSON, "line %d, column %d: %s", jerr.line, jerr.column,
                            jerr.text);
    json_t *index = json_object_get(body, "index");
    int ok = json_is_object(body) && json_object_size(body) == 1 && json_is_integer(index) &&
             json_integer_value(index) >= 0 && json_integer_value(index) <= 0x7fffffff;
    int idx = ok ? (int)json_integer_value(index) : -1;
    json_decref(body);
    if (!ok)
        return srv_req_fail(req, SRV_EBADREQ, "the body must be {\"index\": N}, N >= 0");
    struct srv_db *db = srv_req_db(req);
    if (db == NULL)
        return req->err.code;
    struct gd_err err;
    struct srv_layer_spec spec;
    int added = 0;
    /* the layer must exist; a request for a layer whose tensor is here adds nothing */
    int rc = srv_db_layer_spec(db, req->params[0], idx, &spec, &err);
    if (rc == 0)
        rc = srv_db_request_add(db, req->params[0], idx, "asked by hand", "", srv_now(), &added,
                                &err);
    json_t *out = NULL;
    if (rc == 0)
        rc = srv_db_requests_list(db, req->params[0], &out, &err);
    srv_req_db_release(req, db);
    if (rc != 0)
        return srv_req_fail_err(req, &err);
    json_object_set_new(out, "added", json_boolean(added));
    if (added)
        SRV_LOG(GD_LOG_INFO, req, "layer %d of run %s asked for", idx, req->params[0]);
    return srv_reply_json(req, added ? 201 : 200, out);
}
