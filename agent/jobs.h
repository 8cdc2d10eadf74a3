/*
 * jobs.h: what `gpudiff-agent submit` and `gpudiff-agent serve` share (docs/AGENT.md,
 * "submit" and "serve"; the contract is docs/SERVER.md, "Jobs"): the pure pieces (knob and
 * match parsing, a job's knobs as `run` flags, the file cache's names) and a small HTTP
 * client that gives back every answer's status and body, since the jobs routes speak in
 * statuses (204 no work, 409 missing files or a lost lease). Needs libcurl.
 */
#ifndef GPUDIFF_AGENT_JOBS_H
#define GPUDIFF_AGENT_JOBS_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>

#include <curl/curl.h>
#include <jansson.h>

#include "gpudiff/error.h"
#include "upload.h"

/* ---- the pure pieces (jobs_args.c) ---- */

/* 1 when s is 64 lowercase hex digits (a SHA-256 as the daemon names files). */
int agt_sha256_valid(const char *s);

/* 1 when s is a plain file name: not empty, no '/', not "." or "..", at most 255 bytes, no
 * control characters. Job file names must be, so a job cannot write outside its folder. */
int agt_basename_valid(const char *s);

/* 1 when s may name a job's file as the daemon takes them: a plain file name of the letters
 * A-Z a-z, the digits and . _ - + @ (the jobs contract, amendment 6). */
int agt_job_name_valid(const char *s);

/*
 * The cache's name for the file of hash sha256 under dir: DIR/files/SHA256 into out. The
 * temporary name a download is written to before it is checked and renamed is
 * DIR/files/.SHA256.PID.tmp (tmp may be NULL). GD_EINVAL for a hash that is not one, or a
 * path that does not fit.
 */
int agt_cache_path(const char *dir, const char *sha256, long pid, char *out, size_t size,
                   char *tmp, size_t tmp_size, struct gd_err *err);

/*
 * `--knob K=V` of submit into knobs: K a knob of knobs.def ('-' read as '_') or input_key,
 * given once, stored under its name; V one of its values, checked here (a mistake is found
 * before the job goes out) and stored in its one spelling, as a number for the knobs
 * run.json records as numbers. GD_EINVAL with the message in err.
 */
int agt_knob_kv(const char *arg, json_t *knobs, struct gd_err *err);

/*
 * `--match K=V[,V...]` into match: one value as a string, several as an array of strings. K
 * is backend, host, key, env.FIELD or labels.NAME, given once. GD_EINVAL with the message.
 */
int agt_match_kv(const char *arg, json_t *match, struct gd_err *err);

/*
 * A job's "knobs" object as `run` flags, appended to argv (its strings are copies owned by
 * the caller, who frees argv[*argc ...] after) from index *argc, at most max entries in
 * all. Names are knobs of knobs.def or input_key ('-' read as '_'); values are strings,
 * integers for the knobs run.json records as numbers, or booleans for the on|off knobs.
 * GD_EINVAL naming the knob for an unknown name or a value of the wrong type: the message is
 * what serve reports to the daemon.
 */
int agt_knob_args(json_t *knobs, char **argv, int *argc, int max, struct gd_err *err);

/* The knob names agt_knob_args() knows, comma separated ("emulate, tf32, ..."). */
const char *agt_knob_names(void);

/* The last non-empty line of text (len bytes) into out, without its line end; out is ""
 * when there is none. What serve reports of a failed run: its stderr's last line. */
void agt_last_line(const char *text, size_t len, char *out, size_t size);

/* ---- the HTTP client (jobs_http.c) ---- */

struct agt_http {
    CURL *h;
    const struct agt_upload_opts *o; /* server, token, cacert, retries */
    char base[1024];
    char auth[600];
    char curl_err[CURL_ERROR_SIZE];
    char *body; /* the latest answer's body, NUL-terminated (NULL when none) */
    size_t len, cap;
    int too_big;
    volatile sig_atomic_t *stop; /* when not NULL and set, a request in progress is abandoned */
    int tick_stopped; /* the latest request was abandoned by its on_tick (not retried) */
    unsigned n_requests;
    char rid_prefix[24];
    uint64_t rng;
};

/* Starts a client for o (checked already with agt_upload_opts_check()). */
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

#endif
