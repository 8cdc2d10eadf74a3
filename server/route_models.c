/*
 * route_models.c: GET /api/v1/models and POST /api/v1/models/{model}/baseline, which picks
 * the run the model's other runs are compared against.
 */
#include <stdio.h>
#include <string.h>

#include "db.h"
#include "server.h"

int
srv_models_list(struct srv_req *req)
{
    static const char *const known[] = {NULL};
    if (srv_req_query_check(req, known) != 0)
        return req->err.code;
    struct srv_db *db = srv_req_db(req);
    if (db == NULL)
        return req->err.code;
    json_t *out = NULL;
    struct gd_err err;
    int rc = srv_db_models_list(db, &out, &err);
    srv_req_db_release(req, db);
    if (rc != 0)
        return srv_req_fail_err(req, &err);
    return srv_reply_json(req, 200, out);
}

int
srv_models_baseline(struct srv_req *req)
{
    const char *model = req->params[0];
    if (!srv_is_name(model, 128, SRV_MODEL_NAME_CHARS))
        return srv_req_fail(req, SRV_EBADREQ, "a model name is 1 to 128 of A-Z a-z 0-9 ._:-+@");
    json_error_t jerr;
    json_t *body = json_loadb(req->body.data ? req->body.data : "", req->body.len,
                              JSON_REJECT_DUPLICATES, &jerr);
    if (body == NULL)
        return srv_req_fail(req, SRV_EBADJSON, "line %d, column %d: %s", jerr.line, jerr.column,
                            jerr.text);
    json_t *run = json_object_get(body, "run");
    int rc = 0;
    if (!json_is_object(body) || !json_is_string(run) || json_object_size(body) != 1)
        rc = srv_req_fail(req, SRV_EBADREQ, "the body must be {\"run\": \"RUN-ID\"}");
    else if (!srv_is_uuid(json_string_value(run)))
        rc = srv_req_fail(req, SRV_EBADREQ, "run: must be a lowercase UUID version 4");
    char run_id[40];
    if (rc == 0)
        snprintf(run_id, sizeof run_id, "%s", json_string_value(run));
    json_decref(body);
    if (rc != 0)
        return rc;
    struct srv_db *db = srv_req_db(req);
    if (db == NULL)
        return req->err.code;
    struct gd_err err;
    rc = srv_db_baseline_set(db, model, run_id, req->token_id, srv_now(), &err);
    srv_req_db_release(req, db);
    if (rc != 0)
        return srv_req_fail_err(req, &err);
    SRV_LOG(GD_LOG_INFO, req, "baseline of model %s is now run %s", model, run_id);
    return srv_reply_json(req, 200, json_pack("{s:s,s:s}", "model", model, "baseline", run_id));
}
