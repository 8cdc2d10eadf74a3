/*
 * http.h: the agent's one HTTP client (http.c), used by every command that talks to
 * gpudiffd: push and run --server (upload.c), replay --server (fetch.c), fetch-layers,
 * sweep's upload, submit and serve. One libcurl handle kept open (one connection for many
 * requests), every request built by agt_server_request() (server_url.h) from --server parsed
 * once: the token only as agt_server_token_check() allows it, and sent only when there is
 * one; --cacert), every answer's status and body given back, and the retries of uploads for
 * connection errors, timeouts and 5xx answers.
 */
#ifndef GPUDIFF_AGENT_HTTP_H
#define GPUDIFF_AGENT_HTTP_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>

#include <curl/curl.h>
#include <jansson.h>

#include "gpudiff/error.h"
#include "upload.h"

struct agt_http {
    CURL *h;
    const struct agt_upload_opts *o; /* server, token, cacert, retries */
    /* o->server, parsed once (server_url.h): every request goes there, a token only as
     * agt_server_token_check() allows */
    struct agt_server srv;
    char curl_err[CURL_ERROR_SIZE];
    char *body; /* the latest answer's body, NUL-terminated (NULL when none) */
    size_t len, cap;
    size_t body_max; /* the most bytes of an answer kept (64 MiB; upload: 256) */
    int too_big;
    char rid[80];                /* the X-Request-Id of the latest request */
    uint64_t sent;               /* bytes of r->file sent by the latest request */
    volatile sig_atomic_t *stop; /* when not NULL and set, a request in progress is abandoned */
    int tick_stopped;            /* the latest request was abandoned by its on_tick (not retried) */
    unsigned n_requests;
    char rid_prefix[24];
    uint64_t rng;
};

/* Starts a client for o (checked already with agt_upload_opts_check(), or for reads without
 * a token, fetch.c's check): --server parsed by agt_server_parse(), GD_EINVAL when it is not
 * a URL the agent takes. */
int agt_http_open(struct agt_http *c, const struct agt_upload_opts *o, const char *who,
                  struct gd_err *err);
void agt_http_close(struct agt_http *c);

struct agt_http_req {
    const char *method; /* GET, POST, PUT */
    const char *path;   /* /api/v1/... */
    const char *json;   /* a JSON body, or NULL */
    const char *file;   /* PUT: the file streamed as the body */
    const char *out;    /* GET: the answer's body written to this file when the status is 200 */
    long timeout;       /* seconds for the whole request, 0: none (stalls still end it) */
    /* When not NULL, called from the request's progress (several times a second while it
     * goes on, from inside libcurl: it must not use this client); non-zero abandons it. */
    int (*on_tick)(void *user);
    void *tick_user;
    int64_t max_recv_rate; /* GET to out: the most bytes per second; 0: no limit */
};

/*
 * One attempt. *status is the HTTP status (0 when no answer came), the body in c->body.
 * Returns libcurl's code; a message for a failure to talk in err (with the TLS hint).
 */
CURLcode agt_http_once(struct agt_http *c, const struct agt_http_req *r, long *status,
                       struct gd_err *err);

/*
 * The request, retried as uploads are (connection errors, timeouts, 408, 429, 5xx, with
 * backoff, up to o->retries times or o->retry_time seconds; retries < 0 here means forever,
 * logging each wait). Any other answer comes back: 0 with *status set (2xx, 3xx, 4xx), the
 * body in c->body; AGT_EXIT_TOKEN for 401 and 403; AGT_EXIT_UPLOAD when the retries ran out
 * or c->stop was set; err says why.
 */
int agt_http_call(struct agt_http *c, const struct agt_http_req *r, int retries, long *status,
                  struct gd_err *err);

/* The answer's body as JSON (NULL when it is none). */
json_t *agt_http_json(const struct agt_http *c);

/* "CODE: MESSAGE" of the latest answer (the daemon's error body). */
void agt_http_error(const struct agt_http *c, char *out, size_t size);

/* Sleeps seconds, in steps, returning early when *stop is set (stop may be NULL). */
void agt_sleep(double seconds, volatile sig_atomic_t *stop);

/* Request ids are PREFIX-N (default WHO-PID): upload's "agt-<run id's first 8>". */
void agt_http_set_rid_prefix(struct agt_http *c, const char *prefix);

/* A number in [0, 1) from the client's generator: a retry's jitter. */
double agt_http_jitter(struct agt_http *c);

#endif
