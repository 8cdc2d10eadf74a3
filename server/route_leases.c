/*
 * route_leases.c: how `gpudiff-agent serve` takes and ends work (docs/SERVER.md, "Jobs,
 * devices and leases"): POST /api/v1/agents/{agent_id}/poll?wait=S, a heartbeat of the
 * agent's devices and a long poll for a lease; POST /api/v1/leases/{id}/heartbeat (the first
 * confirms the lease), done, fail and release (the agent gives it back).
 *
 * A long poll waits on a pool of its own (--max-polls threads), never on a thread serving
 * connections nor holding a database connection: it tries to take a task at once, then
 * every 0.5 s reads whether one is pending for its devices (the connection released between
 * reads) and only then takes it in a write transaction. Before each take it checks that its
 * client is still there (srv_req_client_gone: the agent's end of the connection not closed);
 * a poll whose client has gone ends at once with no lease. A client can still vanish between
 * the take and the answer (or sit behind a proxy that keeps its side open): the lease is
 * then an offer no heartbeat confirms, withdrawn after --lease-confirm-seconds, its attempt
 * not counted. A poll waits at most half of --device-stale-seconds, so a live agent is never
 * taken for a stale one. A poll beyond --max-polls is answered 503 with Retry-After at once;
 * a stopping daemon answers the waiting ones 204.
 */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "db.h"
#include "fleet.h"
#include "server.h"

/* How often a waiting poll looks for a task. */
#define POLL_STEP_MS 500

/* The place a poll holds among --max-polls, given back when the request ends. */
struct poll_ctx {
    struct srv_server *srv;
};

static void
poll_ctx_free(void *p)
{
    struct poll_ctx *c = p;
    atomic_fetch_sub(&c->srv->polls_active, 1);
    free(c);
}

static int
reply_204(struct srv_req *req)
{
    struct MHD_Response *resp = MHD_create_response_from_buffer(0, (void *)"",
                                                                MHD_RESPMEM_PERSISTENT);
    if (resp == NULL)
        return srv_req_fail(req, GD_ENOMEM, "out of memory");
    return srv_reply(req, 204, resp);
}

/*
 * One try: a read first when `read_first`, then the take. *lease or NULL. Nothing is taken
 * for a client that has gone (*gone = 1).
 */
static int
try_take(struct srv_req *req, const char *agent_id, int read_first, json_t **lease, int *gone)
{
    if (srv_req_client_gone(req)) {
        *gone = 1;
        return 0;
    }
    struct srv_db *db = srv_req_db(req);
    if (db == NULL)
        return req->err.code;
    struct gd_err err;
    int64_t now = srv_now();
    int ready = 1;
    int rc = read_first ? srv_db_lease_ready(db, agent_id, now, &ready, &err) : 0;
    struct srv_fleet_expired ex;
    /* the last look at the connection before the take: the read may have taken a while */
    if (rc == 0 && ready && srv_req_client_gone(req))
        *gone = 1;
    else if (rc == 0 && ready)
        rc = srv_db_lease_take(db, agent_id, now, lease, &ex, &err);
    srv_req_db_release(req, db);
    return rc == 0 ? 0 : srv_req_fail_err(req, &err);
}

int
srv_leases_poll(struct srv_req *req)
{
    static const char *const known[] = {"wait", NULL};
    if (srv_req_query_check(req, known) != 0)
        return req->err.code;
    const char *agent_id = req->params[0];
    if (!srv_is_uuid(agent_id))
        return srv_req_fail(req, SRV_EBADREQ, "an agent id is a lowercase UUID version 4");
    int64_t wait = 30;
    const char *w = srv_req_query(req, "wait");
    if (w != NULL && srv_parse_int(w, 0, 60, &wait) != 0)
        return srv_req_fail(req, SRV_EBADREQ, "wait must be an integer from 0 to 60 (seconds)");
    struct srv_server *srv = req->srv;
    if (!req->on_pool) {
        struct poll_ctx *c = malloc(sizeof *c);
        if (c == NULL)
            return srv_req_fail(req, GD_ENOMEM, "out of memory");
        if (atomic_fetch_add(&srv->polls_active, 1) >= (int)srv->cfg.max_polls) {
            atomic_fetch_sub(&srv->polls_active, 1);
            free(c);
            return srv_req_fail(req, SRV_EBUSY,
                                "%lld polls are waiting already (--max-polls): retry in a moment",
                                (long long)srv->cfg.max_polls);
        }
        c->srv = srv;
        req->ctx = c;
        req->ctx_free = poll_ctx_free;
        return SRV_EDEFERPOLL;
    }
    /* a live agent polls again at least twice in the stale time */
    if (wait > srv->cfg.device_stale_seconds / 2)
        wait = srv->cfg.device_stale_seconds / 2;
    double until = srv_clock() + (double)wait;
    json_t *lease = NULL;
    int gone = 0;
    if (try_take(req, agent_id, 0, &lease, &gone) != 0)
        return req->err.code;
    while (lease == NULL && !gone && !atomic_load(&srv->polls_stop) && srv_clock() < until) {
        double left = until - srv_clock();
        double step = left < POLL_STEP_MS / 1000.0 ? left : POLL_STEP_MS / 1000.0;
        struct timespec ts = {(time_t)step, (long)((step - (double)(time_t)step) * 1e9)};
        nanosleep(&ts, NULL);
        if (try_take(req, agent_id, 1, &lease, &gone) != 0)
            return req->err.code;
    }
    if (gone) {
        srv_metrics_add(SRV_M_POLLS_GONE, 1);
        SRV_LOG(GD_LOG_INFO, req, "poll of agent %s: its client has gone; no lease handed out",
                agent_id);
    }
    if (lease == NULL)
        return reply_204(req);
    srv_metrics_add(SRV_M_TASKS_LEASED, 1);
    SRV_LOG(GD_LOG_INFO, req,
            "lease %s of job %s offered to %s (attempt %lld; confirm within %lld s)",
            json_string_value(json_object_get(lease, "lease_id")),
            json_string_value(json_object_get(lease, "job_id")),
            json_string_value(json_object_get(lease, "device_key")),
            (long long)json_integer_value(json_object_get(lease, "attempt")),
            (long long)json_integer_value(json_object_get(lease, "confirm_seconds")));
    return srv_reply_json(req, 200, lease);
}

static int
lease_param(struct srv_req *req)
{
    if (!srv_is_uuid(req->params[0]))
        return srv_req_fail(req, SRV_EBADREQ, "a lease id is a lowercase UUID version 4");
    return 0;
}

int
srv_leases_heartbeat(struct srv_req *req)
{
    static const char *const known[] = {NULL};
    if (srv_req_query_check(req, known) != 0 || lease_param(req) != 0)
        return req->err.code;
    if (!req->on_pool)
        return SRV_EDEFERWRITE;
    struct srv_db *db = srv_req_db(req);
    if (db == NULL)
        return req->err.code;
    struct gd_err err;
    int64_t until = 0;
    int confirmed = 0;
    int rc = srv_db_lease_heartbeat(db, req->params[0], srv_now(), &until, &confirmed, &err);
    srv_req_db_release(req, db);
    if (rc != 0)
        return srv_req_fail_err(req, &err);
    if (confirmed)
        SRV_LOG(GD_LOG_INFO, req, "lease %s confirmed by its agent", req->params[0]);
    char t[32];
    srv_time_format(until, t);
    return srv_reply_json(req, 200, json_pack("{s:s}", "lease_until", t));
}

int
srv_leases_done(struct srv_req *req)
{
    static const char *const known_q[] = {NULL};
    static const char *const known[] = {"run_id", NULL};
    if (srv_req_query_check(req, known_q) != 0 || lease_param(req) != 0)
        return req->err.code;
    if (!req->on_pool)
        return SRV_EDEFERWRITE;
    json_t *body = NULL;
    if (srv_fleet_body(req, &body) != 0 || srv_fleet_keys(req, body, known, "the body") != 0)
        goto done;
    const char *run_id = json_string_value(json_object_get(body, "run_id"));
    if (run_id == NULL || !srv_is_uuid(run_id)) {
        srv_req_fail(req, SRV_EBADREQ, "run_id must be a run's id (a lowercase UUID version 4)");
        goto done;
    }
    struct srv_db *db = srv_req_db(req);
    if (db == NULL)
        goto done;
    struct gd_err err;
    int rc = srv_db_lease_done(db, req->params[0], run_id, srv_now(), &err);
    srv_req_db_release(req, db);
    if (rc != 0) {
        srv_req_fail_err(req, &err);
        goto done;
    }
    srv_metrics_add(SRV_M_TASKS_FINISHED, 1);
    SRV_LOG(GD_LOG_INFO, req, "lease %s done: run %s", req->params[0], run_id);
    srv_reply_json(req, 200,
                   json_pack("{s:s,s:s,s:s}", "lease_id", req->params[0], "state", "finished",
                             "run_id", run_id));
done:
    json_decref(body);
    return req->err.code;
}

int
srv_leases_fail(struct srv_req *req)
{
    static const char *const known_q[] = {NULL};
    static const char *const known[] = {"error", "exit_code", NULL};
    if (srv_req_query_check(req, known_q) != 0 || lease_param(req) != 0)
        return req->err.code;
    if (!req->on_pool)
        return SRV_EDEFERWRITE;
    json_t *body = NULL;
    if (srv_fleet_body(req, &body) != 0 || srv_fleet_keys(req, body, known, "the body") != 0)
        goto done;
    const char *error = json_string_value(json_object_get(body, "error"));
    json_t *code = json_object_get(body, "exit_code");
    if (error == NULL || error[0] == '\0' || strlen(error) > 8192) {
        srv_req_fail(req, SRV_EBADREQ, "error must be a string of 1 to 8192 bytes");
        goto done;
    }
    if (code != NULL && (!json_is_integer(code) || json_integer_value(code) < -255 ||
                         json_integer_value(code) > 255)) {
        srv_req_fail(req, SRV_EBADREQ, "exit_code must be an integer from -255 to 255");
        goto done;
    }
    struct srv_db *db = srv_req_db(req);
    if (db == NULL)
        goto done;
    struct gd_err err;
    int rc = srv_db_lease_fail(db, req->params[0], error,
                               code != NULL ? json_integer_value(code) : -1, srv_now(), &err);
    srv_req_db_release(req, db);
    if (rc != 0) {
        srv_req_fail_err(req, &err);
        goto done;
    }
    srv_metrics_add(SRV_M_TASKS_FAILED, 1);
    SRV_LOG(GD_LOG_INFO, req, "lease %s failed: %s", req->params[0], error);
    srv_reply_json(req, 200,
                   json_pack("{s:s,s:s,s:s}", "lease_id", req->params[0], "state", "failed",
                             "error", error));
done:
    json_decref(body);
    return req->err.code;
}

int
srv_leases_release(struct srv_req *req)
{
    static const char *const known[] = {NULL};
    if (srv_req_query_check(req, known) != 0 || lease_param(req) != 0)
        return req->err.code;
    if (!req->on_pool)
        return SRV_EDEFERWRITE;
    struct srv_db *db = srv_req_db(req);
    if (db == NULL)
        return req->err.code;
    struct gd_err err;
    int rc = srv_db_lease_release(db, req->params[0], srv_now(), &err);
    srv_req_db_release(req, db);
    if (rc != 0)
        return srv_req_fail_err(req, &err);
    srv_metrics_add(SRV_M_LEASES_RELEASED, 1);
    SRV_LOG(GD_LOG_INFO, req, "lease %s given back by its agent: the task is pending again",
            req->params[0]);
    return srv_reply_json(req, 200,
                          json_pack("{s:s,s:s}", "lease_id", req->params[0], "state", "pending"));
}
