/*
 * route_tokens.c: token management for admins over the API: POST /api/v1/tokens (the new
 * token is in the answer, once), GET /api/v1/tokens (never the tokens themselves) and
 * DELETE /api/v1/tokens/{id}.
 */
#include <string.h>

#include "db.h"
#include "server.h"

int
srv_tokens_create(struct srv_req *req)
{
    json_error_t jerr;
    json_t *body = json_loadb(req->body.data ? req->body.data : "", req->body.len,
                              JSON_REJECT_DUPLICATES, &jerr);
    if (body == NULL)
        return srv_req_fail(req, SRV_EBADJSON, "line %d, column %d: %s", jerr.line, jerr.column,
                            jerr.text);
    json_t *role = json_object_get(body, "role"), *label = json_object_get(body, "label");
    int r = json_is_string(role) ? srv_role_from_name(json_string_value(role)) : -1;
    int rc = 0;
    if (!json_is_object(body) || r < 0 || (label != NULL && !json_is_string(label)))
        rc = srv_req_fail(req, SRV_EBADREQ,
                          "the body must be {\"role\": \"viewer|agent|admin\", \"label\": TEXT}");
    struct srv_db *db = rc == 0 ? srv_req_db(req) : NULL;
    if (rc == 0 && db == NULL)
        rc = req->err.code;
    if (rc == 0) {
        char token[SRV_TOKEN_LEN + 1];
        int64_t id = 0;
        struct gd_err err;
        const char *text = label ? json_string_value(label) : "";
        rc = srv_token_create(db, (enum srv_role)r, text, token, &id, &err);
        srv_req_db_release(req, db);
        if (rc != 0) {
            srv_req_fail_err(req, &err);
        } else {
            SRV_LOG(GD_LOG_INFO, req, "token %lld (%s) created by token %lld", (long long)id,
                    srv_role_name((enum srv_role)r), (long long)req->token_id);
            srv_reply_json(req, 201,
                           json_pack("{s:I,s:s,s:s,s:s}", "id", (json_int_t)id, "role",
                                     srv_role_name((enum srv_role)r), "label", text, "token",
                                     token));
            memset(token, 0, sizeof token);
        }
    }
    json_decref(body);
    return rc;
}

int
srv_tokens_list(struct srv_req *req)
{
    struct srv_db *db = srv_req_db(req);
    if (db == NULL)
        return req->err.code;
    json_t *out = NULL;
    struct gd_err err;
    int rc = srv_db_token_list(db, &out, &err);
    srv_req_db_release(req, db);
    if (rc != 0)
        return srv_req_fail_err(req, &err);
    return srv_reply_json(req, 200, out);
}

int
srv_tokens_revoke(struct srv_req *req)
{
    int64_t id;
    if (srv_parse_int(req->params[0], 1, INT64_MAX / 10, &id) != 0)
        return srv_req_fail(req, SRV_EBADREQ, "a token id is a positive integer");
    struct srv_db *db = srv_req_db(req);
    if (db == NULL)
        return req->err.code;
    struct gd_err err;
    int rc = srv_db_token_revoke(db, id, srv_now(), &err);
    srv_req_db_release(req, db);
    if (rc != 0)
        return srv_req_fail_err(req, &err);
    SRV_LOG(GD_LOG_INFO, req, "token %lld revoked", (long long)id);
    return srv_reply_json(req, 200, json_pack("{s:I,s:b}", "id", (json_int_t)id, "revoked", 1));
}
