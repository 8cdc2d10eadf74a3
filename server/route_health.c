/*
 * route_health.c: GET /healthz (the database answers: its last answer to the health thread,
 * health.c, read from memory; over plain HTTP the gate answers it itself, gate.c, with the
 * same body) and GET /metrics (Prometheus).
 */
#include <stdio.h>
#include <stdlib.h>

#include "gpudiff/session.h"
#include "db.h"
#include "server.h"

json_t *
srv_health_ok_json(const struct srv_server *srv, int schema_version)
{
    /* The instance: random per start, in the start-up log too, so a client can tell which
     * daemon answers (another one may hold the port). */
    char instance[16];
    snprintf(instance, sizeof instance, "%08x", srv->boot_id);
    return json_pack("{s:s,s:s,s:i,s:s}", "status", "ok", "version", gd_version(), "schema_version",
                     schema_version, "instance", instance);
}

int
srv_health_route(struct srv_req *req)
{
    int version = 0;
    double age = 0;
    char why[300];
    if (req->srv->health == NULL) { /* a server without the thread (the fuzzer's): ask */
        struct srv_db *db = srv_req_db(req);
        if (db == NULL)
            return req->err.code;
        struct gd_err err;
        int rc = srv_db_version(db, &version, &err);
        srv_req_db_release(req, db);
        if (rc != 0)
            return srv_req_fail_err(req, &err);
    } else if (!srv_health_get(req->srv->health, &version, &age, why, sizeof why)) {
        return srv_req_fail(req, SRV_EBUSY, "%s", why);
    }
    return srv_reply_json(req, 200, srv_health_ok_json(req->srv, version));
}

int
srv_metrics_get(struct srv_req *req)
{
    struct srv_db *db = srv_req_db(req);
    if (db == NULL)
        return req->err.code;
    struct srv_buf text = {0};
    struct gd_err err;
    int rc = srv_metrics_render(db, &text, &err);
    srv_req_db_release(req, db);
    if (rc == 0 && srv_metrics_render_limits(req->srv, &text) != 0)
        rc = gd_err_set(&err, GD_ENOMEM, "out of memory for /metrics");
    if (rc != 0) {
        srv_buf_fini(&text);
        return srv_req_fail_err(req, &err);
    }
    struct MHD_Response *resp =
        MHD_create_response_from_buffer(text.len, text.data, MHD_RESPMEM_MUST_FREE);
    if (resp == NULL) {
        srv_buf_fini(&text);
        return srv_req_fail(req, GD_ENOMEM, "out of memory");
    }
    MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE,
                            "text/plain; version=0.0.4; charset=utf-8");
    return srv_reply(req, 200, resp);
}
