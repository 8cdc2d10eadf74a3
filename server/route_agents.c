/*
 * route_agents.c: POST /api/v1/agents (what `gpudiff-agent serve` registers: its host, its
 * serve_id and its devices, each with the env `run` records and the operator's labels), GET
 * /api/v1/agents (the devices, each with its agent and last heartbeat) and DELETE
 * /api/v1/devices/{id} (an admin removes a device). docs/SERVER.md, "Jobs, devices and
 * leases".
 */
#include <stdio.h>
#include <string.h>

#include "db.h"
#include "fleet.h"
#include "server.h"

#define MAX_DEVICES 64
#define MAX_LABELS  32
#define MAX_KEY     512

static int
check_labels(struct srv_req *req, json_t *labels, int i)
{
    if (!json_is_object(labels))
        return srv_req_fail(req, SRV_EBADREQ, "devices[%d].labels must be an object of strings",
                            i);
    if (json_object_size(labels) > MAX_LABELS)
        return srv_req_fail(req, SRV_EBADREQ, "devices[%d].labels: at most %d labels", i,
                            MAX_LABELS);
    const char *k;
    json_t *v;
    json_object_foreach(labels, k, v) {
        if (!srv_is_name(k, 64, "._-"))
            return srv_req_fail(req, SRV_EBADREQ,
                                "devices[%d].labels: a label name is 1 to 64 of A-Z a-z 0-9 . _ -",
                                i);
        if (!json_is_string(v) || !srv_is_text(json_string_value(v), 256))
            return srv_req_fail(req, SRV_EBADREQ,
                                "devices[%d].labels.%s: a label value is 1 to 256 bytes of text",
                                i, k);
    }
    return 0;
}

static int
check_device(struct srv_req *req, json_t *d, int i, struct srv_fleet_device_in *out)
{
    static const char *const known[] = {"key", "backend", "env", "labels", NULL};
    char what[32];
    snprintf(what, sizeof what, "devices[%d]", i);
    if (!json_is_object(d))
        return srv_req_fail(req, SRV_EBADREQ, "%s must be an object", what);
    if (srv_fleet_keys(req, d, known, what) != 0)
        return req->err.code;
    const char *key = json_string_value(json_object_get(d, "key"));
    const char *backend = json_string_value(json_object_get(d, "backend"));
    json_t *env = json_object_get(d, "env"), *labels = json_object_get(d, "labels");
    if (key == NULL || !srv_is_text(key, MAX_KEY))
        return srv_req_fail(req, SRV_EBADREQ, "%s.key must be 1 to %d bytes of text", what,
                            MAX_KEY);
    if (backend == NULL ||
        (strcmp(backend, "cpu") != 0 && strcmp(backend, "cpu64") != 0 &&
         strcmp(backend, "cuda") != 0))
        return srv_req_fail(req, SRV_EBADREQ, "%s.backend must be cpu, cpu64 or cuda", what);
    if (!json_is_object(env))
        return srv_req_fail(req, SRV_EBADREQ, "%s.env must be an object (run.json's env)", what);
    if (labels != NULL && check_labels(req, labels, i) != 0)
        return req->err.code;
    out->key = key;
    out->backend = backend;
    out->env = env;
    out->labels = labels;
    return 0;
}

/* 409 conflict: the error body with the two sides of the collision in it. Steals held_by. */
static int
reply_conflict(struct srv_req *req, const struct gd_err *err, json_t *held_by,
               const struct srv_fleet_agent_in *agent)
{
    json_t *refused =
        json_pack("{s:s,s:o}", "host", agent->host, "serve_id",
                  agent->serve_id != NULL ? json_string(agent->serve_id) : json_null());
    json_t *body = json_pack("{s:{s:s,s:s,s:s,s:o,s:o}}", "error", "code",
                             srv_err_code(SRV_ECONFLICT), "message", err->msg, "request_id",
                             req->id, "held_by", held_by, "refused", refused);
    return srv_reply_json(req, 409, body);
}

int
srv_agents_register(struct srv_req *req)
{
    static const char *const known_q[] = {NULL};
    static const char *const known[] = {"host", "agent_version", "serve_id", "devices", NULL};
    if (srv_req_query_check(req, known_q) != 0)
        return req->err.code;
    if (!req->on_pool)
        return SRV_EDEFERWRITE;
    json_t *body = NULL, *empty = json_object();
    if (srv_fleet_body(req, &body) != 0 || srv_fleet_keys(req, body, known, "the body") != 0)
        goto done;
    const char *host = json_string_value(json_object_get(body, "host"));
    const char *version = json_string_value(json_object_get(body, "agent_version"));
    json_t *devices = json_object_get(body, "devices");
    json_t *serve_id = json_object_get(body, "serve_id");
    if (serve_id != NULL && !srv_is_uuid(json_string_value(serve_id))) {
        srv_req_fail(req, SRV_EBADREQ,
                     "serve_id must be the serve's identity, a lowercase UUID version 4");
        goto done;
    }
    if (host == NULL || !srv_is_name(host, 253, "._-")) {
        srv_req_fail(req, SRV_EBADREQ, "host must be a host name: 1 to 253 of A-Z a-z 0-9 . _ -");
        goto done;
    }
    if (version == NULL || !srv_is_text(version, 64)) {
        srv_req_fail(req, SRV_EBADREQ, "agent_version must be 1 to 64 bytes of text");
        goto done;
    }
    if (!json_is_array(devices) || json_array_size(devices) < 1 ||
        json_array_size(devices) > MAX_DEVICES) {
        srv_req_fail(req, SRV_EBADREQ, "devices must be an array of 1 to %d devices",
                     MAX_DEVICES);
        goto done;
    }
    struct srv_fleet_device_in in[MAX_DEVICES];
    int n = (int)json_array_size(devices);
    for (int i = 0; i < n; i++) {
        if (check_device(req, json_array_get(devices, (size_t)i), i, &in[i]) != 0)
            goto done;
        if (in[i].labels == NULL)
            in[i].labels = empty;
        for (int j = 0; j < i; j++)
            if (strcmp(in[j].key, in[i].key) == 0) {
                srv_req_fail(req, SRV_EBADREQ, "devices[%d] and devices[%d] have one key", j, i);
                goto done;
            }
    }
    struct srv_db *db = srv_req_db(req);
    if (db == NULL)
        goto done;
    json_t *out = NULL;
    struct gd_err err;
    struct srv_fleet_agent_in agent = {host, version, json_string_value(serve_id)};
    json_t *held_by = NULL;
    int rc = srv_db_agent_register(db, &agent, in, n, srv_now(), &out, &held_by, &err);
    srv_req_db_release(req, db);
    if (rc == SRV_ECONFLICT && held_by != NULL) {
        SRV_LOG(GD_LOG_WARN, req, "registration from %s refused: %s", host, err.msg);
        reply_conflict(req, &err, held_by, &agent);
        goto done;
    }
    json_decref(held_by);
    if (rc != 0) {
        srv_req_fail_err(req, &err);
        goto done;
    }
    SRV_LOG(GD_LOG_INFO, req, "agent %s on %s registered %d devices",
            json_string_value(json_object_get(out, "agent_id")), host, n);
    srv_reply_json(req, 200, out);
done:
    json_decref(body);
    json_decref(empty);
    return req->err.code;
}

int
srv_agents_list(struct srv_req *req)
{
    static const char *const known[] = {NULL};
    if (srv_req_query_check(req, known) != 0)
        return req->err.code;
    struct srv_db *db = srv_req_db(req);
    if (db == NULL)
        return req->err.code;
    json_t *out = NULL;
    struct gd_err err;
    int rc = srv_db_devices_list(db, srv_now(), &out, &err);
    srv_req_db_release(req, db);
    if (rc != 0)
        return srv_req_fail_err(req, &err);
    return srv_reply_json(req, 200, out);
}

int
srv_devices_delete(struct srv_req *req)
{
    static const char *const known[] = {NULL};
    if (srv_req_query_check(req, known) != 0)
        return req->err.code;
    const char *id = req->params[0];
    if (!srv_is_uuid(id))
        return srv_req_fail(req, SRV_EBADREQ, "a device id is a lowercase UUID version 4");
    if (!req->on_pool)
        return SRV_EDEFERWRITE;
    struct srv_db *db = srv_req_db(req);
    if (db == NULL)
        return req->err.code;
    struct gd_err err;
    char key[512] = "";
    int64_t ended = 0;
    int rc = srv_db_device_remove(db, id, srv_now(), key, &ended, &err);
    srv_req_db_release(req, db);
    if (rc != 0)
        return srv_req_fail_err(req, &err);
    if (ended > 0)
        srv_metrics_add(SRV_M_TASKS_STALE, (uint64_t)ended);
    SRV_LOG(GD_LOG_INFO, req, "device %s (%s) removed: %lld open tasks ended", id, key,
            (long long)ended);
    return srv_reply_json(req, 200,
                          json_pack("{s:s,s:s,s:b,s:I}", "id", id, "key", key, "removed", 1,
                                    "tasks_ended", (json_int_t)ended));
}
