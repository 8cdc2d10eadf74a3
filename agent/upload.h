/*
 * upload.h: uploading a run bundle to gpudiffd (docs/SERVER.md, "Uploading a run"): POST
 * run.json, PUT each layer the server lacks (streamed from its file), POST finish; retried
 * with exponential backoff and jitter on connection errors, timeouts and 5xx answers, and
 * resumed from what the server says is missing. Used by `gpudiff-agent push` and `run
 * --server`, and by tests/bench/bench_ingest.c, through the agent's HTTP client (http.h).
 */
#ifndef GPUDIFF_AGENT_UPLOAD_H
#define GPUDIFF_AGENT_UPLOAD_H

#include <stdint.h>

#include <curl/curl.h>
#include <jansson.h>

#include "gpudiff/error.h"
#include "agent.h"
#include "server_url.h"

/* The environment variable a token may come from, so it is not in the process list. */
#define AGT_TOKEN_ENV "GPUDIFF_TOKEN"

struct agt_upload_opts {
    const char *server;   /* base URL: http://host:8470 (a trailing / is fine) */
    const char *token;    /* an agent token, gd_... */
    int retries;          /* failed attempts in a row retried before giving up */
    double retry_time;    /* seconds of failures in a row before giving up */
    double backoff_first; /* the first wait, doubled after each failure ... */
    double backoff_max;   /* ... up to this */
    int progress;         /* a line per layer on stderr */
    const char *who;      /* starts messages: "push", "run" */
    const char *cacert;   /* PEM file of the CAs an https:// server is verified with; NULL:
                             the system's store */
    int insecure_http;    /* allows sending the token over http:// to a non-loopback host */
};

/* The defaults: 10 retries, 300 s, 0.5 s doubling to 30 s, no progress lines. */
void agt_upload_opts_init(struct agt_upload_opts *o);

/*
 * Completes opts from the command line: the token from $GPUDIFF_TOKEN when --token was not
 * given; checks the URL with agt_server_parse() (http:// or https://, no user, query or
 * fragment), that the token may go there (agt_server_token_check(): TLS, a loopback host,
 * or insecure_http) and that a token is there. 0, or GD_EINVAL with the message in err (a
 * usage error).
 */
int agt_upload_opts_check(struct agt_upload_opts *o, struct gd_err *err);

/* Adds to why (a curl message) what to do when code is a TLS verification failure. */
void agt_tls_hint(CURLcode code, char *why, size_t size);

struct agt_upload_stats {
    char run_id[37];
    int layers;          /* in the bundle */
    int layers_sent;     /* uploaded by this call */
    int layers_known;    /* the server had them (an earlier try, or identical data) */
    uint64_t bytes_sent; /* layer bodies sent, counting the ones cut and sent again */
    double seconds;
    int retries;
    /* outbox: the daemon refused the bundle for good: a 4xx other than 401, 403, 408, 429
     * (0 when it did not), its "code: message" and the request's id */
    long refused_status;
    char refused_reason[400];
    char refused_request[80]; /* as long as agt_http's rid */
};

/*
 * Uploads the bundle in dir and finishes the run. Returns an exit code of AGT_EXIT_MAP:
 * AGT_EXIT_OK; AGT_EXIT_INPUT when the bundle cannot be read; AGT_EXIT_TOKEN when the
 * server refuses the token (401, 403), at once; AGT_EXIT_UPLOAD when any other failure
 * lasts beyond the retries or is not worth retrying (a 4xx). err gets the message, naming
 * the server's error text (err->code is a GD_E* code, the return value the exit code).
 * stats (may be NULL) is filled as far as the upload went.
 * Calls curl_global_init(), so it must not run while another thread uses libcurl.
 */
int agt_upload_bundle(const char *dir, const struct agt_upload_opts *opts,
                      struct agt_upload_stats *stats, struct gd_err *err);

/*
 * POSTs one JSON document (json, len bytes) to path on the server, with the retries of a
 * bundle's upload; id (a UUID) names the requests' X-Request-Id. The answer's JSON goes to
 * *answer when not NULL (NULL when it is not JSON). Returns an exit code as
 * agt_upload_bundle() does.
 */
int agt_upload_post_json(const char *path, const char *json, size_t len, const char *id,
                         const struct agt_upload_opts *o, json_t **answer, struct gd_err *err);

/* fp: a GET of a JSON answer, and a PUT of a file's bytes, with the same retries. */
int agt_upload_get_json(const char *path, const char *id, const struct agt_upload_opts *o,
                        json_t **answer, struct gd_err *err);
int agt_upload_put_file(const char *path, const char *file, const char *id,
                        const struct agt_upload_opts *o, json_t **answer, struct gd_err *err);

/* ---- the pure parts, for tests ---- */

/*
 * The wait before retry number attempt (0 for the first): min(max, first * 2^attempt)
 * times (0.5 + 0.5 * jitter), jitter drawn from [0, 1): at least half of the step, so
 * clients that failed together spread out without ever hammering the server.
 */
double agt_backoff_delay(int attempt, double first, double max, double jitter);

enum agt_outcome {
    AGT_OUTCOME_OK,      /* 2xx */
    AGT_OUTCOME_RETRY,   /* connection error, timeout, 408, 429, 5xx */
    AGT_OUTCOME_REFUSED, /* 401, 403: the token */
    AGT_OUTCOME_FAILED   /* anything else: retrying would change nothing */
};

/* What an attempt came to, from libcurl's code and (when a response came) the status. */
enum agt_outcome agt_outcome_of(CURLcode code, long status);

/*
 * Marks in missing[0..n_layers) the layers the run answer's "layers_missing" lists.
 * GD_EFORMAT when the answer has no such list or it names a layer out of range.
 */
int agt_missing_parse(json_t *run, int n_layers, unsigned char *missing, struct gd_err *err);

/* "CODE: MESSAGE" of a JSON error body, or the body's start when it is not one. */
void agt_server_error(const char *body, size_t len, char *out, size_t size);

/*
 * Appends n bytes at p to the NUL-terminated buffer *data (*len bytes in *cap), growing it,
 * while *len stays at most max: an HTTP answer collected by a curl write callback. 0, 1 when
 * it would pass max (nothing appended), -1 out of memory.
 */
int agt_answer_append(char **data, size_t *len, size_t *cap, size_t max, const char *p, size_t n);

#endif
