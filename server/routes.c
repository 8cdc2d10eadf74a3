/*
 * routes.c: the route table (method + path pattern -> handler, with the role it needs), the
 * pattern matcher, and the token check every route goes through.
 */
#include <stdio.h>
#include <string.h>

#include "db.h"
#include "server.h"

const struct srv_route srv_routes[] = {
    {"GET", "/healthz", SRV_ROLE_NONE, SRV_BODY_NONE, NULL, NULL, srv_health_route},
    {"GET", "/metrics", SRV_ROLE_VIEWER, SRV_BODY_NONE, NULL, NULL, srv_metrics_get},
    {"GET", "/api/v1/models", SRV_ROLE_VIEWER, SRV_BODY_NONE, NULL, NULL, srv_models_list},
    {"POST", "/api/v1/models/{model}/baseline", SRV_ROLE_ADMIN, SRV_BODY_JSON, NULL, NULL,
     srv_models_baseline},
    {"GET", "/api/v1/models/{model}/matrix", SRV_ROLE_VIEWER, SRV_BODY_NONE, NULL, NULL,
     srv_models_matrix},
    {"GET", "/api/v1/models/{model}/history", SRV_ROLE_VIEWER, SRV_BODY_NONE, NULL, NULL,
     srv_models_history},
    /* the same three with ?model=, for model names a path segment cannot carry */
    {"POST", "/api/v1/baseline", SRV_ROLE_ADMIN, SRV_BODY_JSON, NULL, NULL, srv_models_baseline},
    {"GET", "/api/v1/matrix", SRV_ROLE_VIEWER, SRV_BODY_NONE, NULL, NULL, srv_models_matrix},
    {"GET", "/api/v1/history", SRV_ROLE_VIEWER, SRV_BODY_NONE, NULL, NULL, srv_models_history},
    {"GET", "/api/v1/diff", SRV_ROLE_VIEWER, SRV_BODY_NONE, NULL, NULL, srv_diff_get},
    {"POST", "/api/v1/runs", SRV_ROLE_AGENT, SRV_BODY_JSON, NULL, NULL, srv_runs_create},
    {"GET", "/api/v1/runs", SRV_ROLE_VIEWER, SRV_BODY_NONE, NULL, NULL, srv_runs_list},
    {"GET", "/api/v1/runs/{id}", SRV_ROLE_VIEWER, SRV_BODY_NONE, NULL, NULL, srv_runs_get},
    {"POST", "/api/v1/runs/{id}/finish", SRV_ROLE_AGENT, SRV_BODY_NONE, NULL, NULL,
     srv_runs_finish},
    {"PUT", "/api/v1/runs/{id}/layers/{index}", SRV_ROLE_AGENT, SRV_BODY_STREAM,
     srv_layer_put_begin, srv_layer_put_chunk, srv_layer_put_end},
    {"GET", "/api/v1/runs/{id}/layers/{index}.npy", SRV_ROLE_VIEWER, SRV_BODY_NONE, NULL, NULL,
     srv_layer_get},
    {"POST", "/api/v1/tokens", SRV_ROLE_ADMIN, SRV_BODY_JSON, NULL, NULL, srv_tokens_create},
    {"GET", "/api/v1/tokens", SRV_ROLE_ADMIN, SRV_BODY_NONE, NULL, NULL, srv_tokens_list},
    {"DELETE", "/api/v1/tokens/{id}", SRV_ROLE_ADMIN, SRV_BODY_NONE, NULL, NULL, srv_tokens_revoke},
    /* sweeps (gpudiff-agent sweep --server) */
    {"POST", "/api/v1/sweeps", SRV_ROLE_AGENT, SRV_BODY_JSON, NULL, NULL, srv_sweeps_create},
    {"GET", "/api/v1/sweeps", SRV_ROLE_VIEWER, SRV_BODY_NONE, NULL, NULL, srv_sweeps_list},
    {"GET", "/api/v1/sweeps/{id}", SRV_ROLE_VIEWER, SRV_BODY_NONE, NULL, NULL, srv_sweeps_get},
    /* web: the op list with its traits */
    {"GET", "/api/v1/ops", SRV_ROLE_VIEWER, SRV_BODY_NONE, NULL, NULL, srv_ops_list},
    {"GET", "/api/v1/knobs", SRV_ROLE_VIEWER, SRV_BODY_NONE, NULL, NULL, srv_knobs_list},
    /* fp: tensors asked for where runs hold fingerprints (gpudiff-agent fetch-layers) */
    {"GET", "/api/v1/runs/{id}/requests", SRV_ROLE_VIEWER, SRV_BODY_NONE, NULL, NULL,
     srv_requests_list},
    {"POST", "/api/v1/runs/{id}/requests", SRV_ROLE_AGENT, SRV_BODY_JSON, NULL, NULL,
     srv_requests_add},
    /* jobsrv: jobs run by agents as a service (docs/SERVER.md, "Jobs, devices and leases") */
    {"PUT", "/api/v1/files/{sha256}", SRV_ROLE_AGENT, SRV_BODY_FILE, srv_files_put_begin,
     srv_files_put_chunk, srv_files_put_end},
    {"GET", "/api/v1/files/{sha256}", SRV_ROLE_AGENT, SRV_BODY_NONE, NULL, NULL, srv_files_get},
    {"POST", "/api/v1/agents", SRV_ROLE_AGENT, SRV_BODY_JSON, NULL, NULL, srv_agents_register},
    {"GET", "/api/v1/agents", SRV_ROLE_VIEWER, SRV_BODY_NONE, NULL, NULL, srv_agents_list},
    {"DELETE", "/api/v1/devices/{id}", SRV_ROLE_ADMIN, SRV_BODY_NONE, NULL, NULL,
     srv_devices_delete},
    {"POST", "/api/v1/agents/{agent_id}/poll", SRV_ROLE_AGENT, SRV_BODY_NONE, NULL, NULL,
     srv_leases_poll},
    {"POST", "/api/v1/jobs", SRV_ROLE_AGENT, SRV_BODY_JSON, NULL, NULL, srv_fleet_jobs_create},
    {"GET", "/api/v1/jobs", SRV_ROLE_VIEWER, SRV_BODY_NONE, NULL, NULL, srv_fleet_jobs_list},
    {"GET", "/api/v1/jobs/{id}", SRV_ROLE_VIEWER, SRV_BODY_NONE, NULL, NULL, srv_fleet_jobs_get},
    {"POST", "/api/v1/leases/{lease_id}/heartbeat", SRV_ROLE_AGENT, SRV_BODY_NONE, NULL, NULL,
     srv_leases_heartbeat},
    {"POST", "/api/v1/leases/{lease_id}/done", SRV_ROLE_AGENT, SRV_BODY_JSON, NULL, NULL,
     srv_leases_done},
    {"POST", "/api/v1/leases/{lease_id}/fail", SRV_ROLE_AGENT, SRV_BODY_JSON, NULL, NULL,
     srv_leases_fail},
    /* web (issue 26): a diff in pages, overlays of runs against one truth, heatmaps */
    {"GET", "/api/v1/diff/summary", SRV_ROLE_VIEWER, SRV_BODY_NONE, NULL, NULL,
     srv_diff_summary_get},
    {"GET", "/api/v1/diff/layers", SRV_ROLE_VIEWER, SRV_BODY_NONE, NULL, NULL, srv_diff_layers_get},
    {"GET", "/api/v1/diff/graph", SRV_ROLE_VIEWER, SRV_BODY_NONE, NULL, NULL, srv_diff_graph_get},
    {"GET", "/api/v1/overlay", SRV_ROLE_VIEWER, SRV_BODY_NONE, NULL, NULL, srv_overlay_get},
    {"GET", "/api/v1/heatmap", SRV_ROLE_VIEWER, SRV_BODY_NONE, NULL, NULL, srv_heatmap_get},
    {"GET", "/api/v1/standing", SRV_ROLE_VIEWER, SRV_BODY_NONE, NULL, NULL, srv_standing_get},
    {"POST", "/api/v1/leases/{lease_id}/release", SRV_ROLE_AGENT, SRV_BODY_NONE, NULL, NULL,
     srv_leases_release},
};

const int srv_route_count = (int)(sizeof srv_routes / sizeof srv_routes[0]);

/*
 * Matches path against pattern segment by segment; "{x}" takes one whole segment, or all of
 * it but a literal suffix ("{index}.npy"). Captures go to params.
 */
static int
match(const char *pattern, const char *path, char params[][SRV_PARAM_MAX], int *n_params)
{
    const char *p = pattern, *s = path;
    int n = 0;
    while (*p != '\0') {
        if (*p != '{') {
            if (*p != *s)
                return 0;
            p++;
            s++;
            continue;
        }
        const char *close = strchr(p, '}');
        const char *seg_end = strchr(s, '/');
        if (seg_end == NULL)
            seg_end = s + strlen(s);
        const char *suffix = close + 1;
        size_t suffix_len = strcspn(suffix, "/");
        size_t seg_len = (size_t)(seg_end - s);
        if (seg_len <= suffix_len || strncmp(seg_end - suffix_len, suffix, suffix_len) != 0)
            return 0;
        size_t value_len = seg_len - suffix_len;
        if (value_len >= SRV_PARAM_MAX || n >= SRV_MAX_PARAMS)
            return 0;
        memcpy(params[n], s, value_len);
        params[n][value_len] = '\0';
        n++;
        p = suffix + suffix_len;
        s = seg_end;
    }
    if (*s != '\0')
        return 0;
    *n_params = n;
    return 1;
}

int
srv_route_find(struct srv_req *req, char *allow, size_t allow_size)
{
    const char *method = strcmp(req->method, "HEAD") == 0 ? "GET" : req->method;
    size_t used = 0;
    allow[0] = '\0';
    for (int i = 0; i < srv_route_count; i++) {
        const struct srv_route *r = &srv_routes[i];
        char params[SRV_MAX_PARAMS][SRV_PARAM_MAX];
        int n = 0;
        if (!match(r->pattern, req->path, params, &n))
            continue;
        if (strcmp(r->method, method) == 0) {
            req->route = r;
            req->n_params = n;
            memcpy(req->params, params, sizeof params);
            return 0;
        }
        if (used + strlen(r->method) + 3 < allow_size)
            used += (size_t)snprintf(allow + used, allow_size - used, "%s%s", used ? ", " : "",
                                     r->method);
    }
    if (allow[0] != '\0')
        return srv_req_fail(req, SRV_EMETHOD, "%s is not allowed here (allowed: %s)", req->method,
                            allow);
    return srv_req_fail(req, SRV_ENOTFOUND, "no such path");
}

int
srv_route_authorize(struct srv_req *req, enum srv_role need)
{
    const char *header =
        MHD_lookup_connection_value(req->conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_AUTHORIZATION);
    if (header != NULL && req->role == SRV_ROLE_NONE) {
        /* A token that is sent must be good, even where none is needed: no silent downgrade. */
        char token[SRV_TOKEN_LEN + 1], hash[65];
        struct gd_err err;
        int rc = srv_token_from_header(header, token, &err);
        if (rc == 0)
            rc = srv_token_hash(token, hash, &err);
        if (rc == 0) {
            struct srv_db *db = srv_req_db(req);
            if (db == NULL)
                return req->err.code;
            rc = srv_db_token_lookup(db, hash, &req->role, &req->token_id, &err);
            srv_req_db_release(req, db);
        }
        if (rc != 0)
            return srv_req_fail_err(req, &err);
    }
    if (need == SRV_ROLE_VIEWER && !req->srv->cfg.require_auth_read)
        need = SRV_ROLE_NONE;
    if (req->role >= need)
        return 0;
    if (req->role == SRV_ROLE_NONE)
        return srv_req_fail(req, SRV_EAUTH,
                            "this needs a token (Authorization: Bearer gd_...) "
                            "of role %s or above",
                            srv_role_name(need));
    return srv_req_fail(req, SRV_EFORBIDDEN, "a token of role %s may not do this; it needs %s",
                        srv_role_name(req->role), srv_role_name(need));
}
