/*
 * fetch.c: GETs of a stored run and its layers from gpudiffd (fetch.h), for `replay --server`,
 * through the agent's HTTP client (http.c).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "fetch.h"
#include "http.h"
#include "upload.h"

#define FETCH_DOC_MAX (256u << 20) /* a run document of a model with very many layers */

/*
 * GETs path with retries (connection errors, timeouts, 5xx: up to o->retries, waiting
 * 0.5 s doubling to 10 s), the answer in c's body, or with path_out a 200's body written to
 * that file (opened afresh for each attempt). *status is a refusal's status, 0 when none came.
 */
static int
get(struct agt_http *c, const struct agt_fetch_opts *o, const char *path, const char *path_out,
    long *status, struct gd_err *err)
{
    *status = 0;
    for (int attempt = 0;; attempt++) {
        long st = 0;
        struct gd_err e = {0};
        struct agt_http_req r = {.method = "GET", .path = path, .out = path_out};
        CURLcode rc = agt_http_once(c, &r, &st, &e);
        enum agt_outcome out = agt_outcome_of(rc, st);
        if (out == AGT_OUTCOME_OK && !c->too_big)
            return 0;
        if (out == AGT_OUTCOME_OK)
            return gd_err_set(err, GD_EIO, "GET %s: could not keep the answer", path);
        if (out == AGT_OUTCOME_RETRY && attempt < o->retries) {
            double wait = agt_backoff_delay(attempt, 0.5, 10.0, agt_http_jitter(c));
            agt_sleep(wait, NULL);
            continue;
        }
        if (path_out != NULL)
            unlink(path_out);
        if (st == 0)
            return gd_err_set(err, GD_EIO, "GET %s: %s", path,
                              e.msg[0]         ? e.msg
                              : c->curl_err[0] ? c->curl_err
                                               : curl_easy_strerror(rc));
        char text[320];
        agt_http_error(c, text, sizeof text);
        *status = st;
        return gd_err_set(err, st == 404 ? GD_ENOENT : GD_EIO, "GET %s: %ld %s", path, st, text);
    }
}

/*
 * A client for o: reads need no token (docs/AGENT.md, "replay"); a token given goes only
 * where server_url.c's rule allows it, checked here before any connection (GD_EINVAL).
 */
static int
open_client(struct agt_http *c, const struct agt_fetch_opts *o, struct agt_upload_opts *uo,
            struct gd_err *err)
{
    agt_upload_opts_init(uo);
    uo->server = o->server;
    uo->token = o->token;
    uo->retries = o->retries;
    uo->cacert = o->cacert;
    uo->insecure_http = o->insecure_http;
    if (agt_http_open(c, uo, "agt-replay", err) != 0) {
        agt_http_close(c);
        return err != NULL ? err->code : GD_ENOMEM;
    }
    if (o->token != NULL && o->token[0] != '\0' && agt_server_token_check(&c->srv, err) != 0) {
        agt_http_close(c);
        return GD_EINVAL;
    }
    c->body_max = FETCH_DOC_MAX;
    return 0;
}

int
agt_fetch_run(const struct agt_fetch_opts *o, const char *id, json_t **out, long *status,
              struct gd_err *err)
{
    char path[256];
    snprintf(path, sizeof path, "/api/v1/runs/%s", id);
    struct agt_http c;
    struct agt_upload_opts uo;
    *status = 0;
    int rc = open_client(&c, o, &uo, err);
    if (rc == 0)
        rc = get(&c, o, path, NULL, status, err);
    if (rc == 0) {
        json_error_t jerr;
        *out = json_loadb(c.body ? c.body : "", c.len, 0, &jerr);
        if (*out == NULL)
            rc = gd_err_set(err, GD_EFORMAT, "GET %s: the answer is not JSON: %s", path,
                            jerr.text);
    }
    agt_http_close(&c);
    return rc;
}

int
agt_fetch_layer(const struct agt_fetch_opts *o, const char *id, int index, const char *path,
                long *status, struct gd_err *err)
{
    char url[256];
    snprintf(url, sizeof url, "/api/v1/runs/%s/layers/%d.npy", id, index);
    struct agt_http c;
    struct agt_upload_opts uo;
    *status = 0;
    int rc = open_client(&c, o, &uo, err);
    if (rc == 0)
        rc = get(&c, o, url, path, status, err);
    agt_http_close(&c);
    return rc;
}
