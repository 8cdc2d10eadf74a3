/*
 * http.c: the agent's one HTTP client (http.h): submit, serve, uploads, replay's and
 * fetch-layers's reads. One libcurl handle kept open (one connection for many requests), every
 * request made from the URL parsed once by server_url.c (the token only as its rule allows,
 * --cacert), every answer's status and body given back, and the retries of uploads for
 * connection errors, timeouts and 5xx answers.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "http.h"

#define CONNECT_TIMEOUT 10L
#define STALL_SECONDS   60L
#define BODY_MAX        ((size_t)64 << 20)

static double
now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

void
agt_sleep(double seconds, volatile sig_atomic_t *stop)
{
    double end = now() + seconds;
    while (stop == NULL || !*stop) {
        double left = end - now();
        if (left <= 0)
            break;
        double step = left < 0.2 ? left : 0.2;
        struct timespec ts = {(time_t)step, (long)((step - (double)(time_t)step) * 1e9)};
        nanosleep(&ts, NULL);
    }
}

int
agt_http_open(struct agt_http *c, const struct agt_upload_opts *o, const char *who,
              struct gd_err *err)
{
    memset(c, 0, sizeof *c);
    c->o = o;
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK || (c->h = curl_easy_init()) == NULL)
        return gd_err_set(err, GD_ENOMEM, "libcurl could not start");
    if (agt_server_parse(o->server, o->insecure_http, &c->srv, err) != 0) {
        curl_easy_cleanup(c->h);
        c->h = NULL;
        curl_global_cleanup();
        return GD_EINVAL;
    }
    snprintf(c->rid_prefix, sizeof c->rid_prefix, "%s-%ld", who, (long)getpid());
    c->body_max = BODY_MAX;
    c->rng = ((uint64_t)getpid() << 32) ^ (uint64_t)(now() * 1e6) ^ 0x9e3779b97f4a7c15ULL;
    return 0;
}

void
agt_http_close(struct agt_http *c)
{
    if (c->h != NULL) {
        curl_easy_cleanup(c->h);
        curl_global_cleanup();
    }
    agt_server_fini(&c->srv);
    free(c->body);
    memset(c, 0, sizeof *c);
}

struct sink {
    struct agt_http *c;
    FILE *f; /* the file of a GET's 200 answer */
};

static size_t
on_write(char *p, size_t size, size_t n, void *user)
{
    struct sink *s = user;
    struct agt_http *c = s->c;
    size_t len = size * n;
    if (s->f != NULL) {
        long status = 0;
        curl_easy_getinfo(c->h, CURLINFO_RESPONSE_CODE, &status);
        if (status == 200)
            return fwrite(p, 1, len, s->f);
    }
    /* at most body_max - 1 bytes of answer (the NUL counted in body_max) */
    int rc = agt_answer_append(&c->body, &c->len, &c->cap, c->body_max - 1, p, len);
    if (rc == 1)
        c->too_big = 1;
    return rc == 0 ? len : 0;
}

/* A PUT's body: the file, counted as it is read. */
struct source {
    struct agt_http *c;
    FILE *f;
};

static size_t
on_read(char *buf, size_t size, size_t n, void *user)
{
    struct source *src = user;
    size_t got = fread(buf, 1, size * n, src->f);
    if (got < size * n && ferror(src->f))
        return CURL_READFUNC_ABORT;
    src->c->sent += got;
    return got;
}

/* What a request's progress callback sees. */
struct progress {
    struct agt_http *c;
    const struct agt_http_req *r;
};

static int
on_progress(void *user, curl_off_t dt, curl_off_t dn, curl_off_t ut, curl_off_t un)
{
    (void)dt, (void)dn, (void)ut, (void)un;
    struct progress *p = user;
    if (p->c->stop != NULL && *p->c->stop)
        return 1;
    if (p->r->on_tick != NULL && p->r->on_tick(p->r->tick_user) != 0) {
        p->c->tick_stopped = 1;
        return 1;
    }
    return 0;
}

CURLcode
agt_http_once(struct agt_http *c, const struct agt_http_req *r, long *status, struct gd_err *err)
{
    char rid[128];
    *status = 0;
    c->len = 0;
    c->too_big = 0;
    c->tick_stopped = 0;
    if (c->body != NULL)
        c->body[0] = '\0';
    c->curl_err[0] = '\0';
    snprintf(c->rid, sizeof c->rid, "%s-%u", c->rid_prefix, ++c->n_requests);
    snprintf(rid, sizeof rid, "X-Request-Id: %s", c->rid);
    c->sent = 0;
    FILE *in = NULL, *out = NULL;
    struct stat sb;
    if (r->file != NULL && ((in = fopen(r->file, "rb")) == NULL || fstat(fileno(in), &sb) != 0)) {
        gd_err_set(err, GD_EIO, "%s: %s", r->file, strerror(errno));
        if (in != NULL)
            fclose(in);
        return CURLE_READ_ERROR;
    }
    if (r->out != NULL && (out = fopen(r->out, "wb")) == NULL) {
        gd_err_set(err, GD_EIO, "%s: %s", r->out, strerror(errno));
        if (in != NULL)
            fclose(in);
        return CURLE_WRITE_ERROR;
    }
    struct curl_slist *headers = curl_slist_append(NULL, rid);
    if (r->json != NULL)
        headers = curl_slist_append(headers, "Content-Type: application/json");
    if (r->file != NULL)
        headers = curl_slist_append(headers, "Content-Type: application/octet-stream");
    struct sink sink = {c, out};
    struct source source = {c, in};
    CURL *h = c->h;
    curl_easy_reset(h);
    CURLU *url = NULL;
    /* the token's one place: server_url.c's rule, on every request of a client made with
     * one (none without) */
    const char *token = c->o->token != NULL && c->o->token[0] != '\0' ? c->o->token : NULL;
    if (headers != NULL &&
        agt_server_request(&c->srv, h, r->path, token, &headers, &url, err) != 0) {
        /* the reason (the token rule's) where callers read a failed request's message */
        snprintf(c->curl_err, sizeof c->curl_err, "%s", err->msg);
        curl_slist_free_all(headers);
        if (in != NULL)
            fclose(in);
        if (out != NULL)
            fclose(out);
        return CURLE_URL_MALFORMAT;
    }
    if (c->o->cacert != NULL)
        curl_easy_setopt(h, CURLOPT_CAINFO, c->o->cacert);
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT, CONNECT_TIMEOUT);
    curl_easy_setopt(h, CURLOPT_LOW_SPEED_LIMIT, 1L);
    curl_easy_setopt(h, CURLOPT_LOW_SPEED_TIME, STALL_SECONDS);
    if (r->timeout > 0)
        curl_easy_setopt(h, CURLOPT_TIMEOUT, r->timeout);
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, headers);
    curl_easy_setopt(h, CURLOPT_ERRORBUFFER, c->curl_err);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_write);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, &sink);
    curl_easy_setopt(h, CURLOPT_NOPROGRESS, 0L);
    curl_easy_setopt(h, CURLOPT_XFERINFOFUNCTION, on_progress);
    struct progress prog = {c, r};
    curl_easy_setopt(h, CURLOPT_XFERINFODATA, &prog);
    if (r->out != NULL && r->max_recv_rate > 0)
        curl_easy_setopt(h, CURLOPT_MAX_RECV_SPEED_LARGE, (curl_off_t)r->max_recv_rate);
    if (strcmp(r->method, "PUT") == 0) {
        curl_easy_setopt(h, CURLOPT_UPLOAD, 1L);
        curl_easy_setopt(h, CURLOPT_READFUNCTION, on_read);
        curl_easy_setopt(h, CURLOPT_READDATA, &source);
        curl_easy_setopt(h, CURLOPT_UPLOAD_BUFFERSIZE, 1024L * 1024);
        curl_easy_setopt(h, CURLOPT_INFILESIZE_LARGE, (curl_off_t)(in ? sb.st_size : 0));
    } else if (strcmp(r->method, "POST") == 0) {
        curl_easy_setopt(h, CURLOPT_POST, 1L);
        curl_easy_setopt(h, CURLOPT_POSTFIELDS, r->json != NULL ? r->json : "");
        curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE,
                         (curl_off_t)(r->json != NULL ? strlen(r->json) : 0));
    } else {
        curl_easy_setopt(h, CURLOPT_HTTPGET, 1L);
    }
    CURLcode rc = headers == NULL ? CURLE_OUT_OF_MEMORY : curl_easy_perform(h);
    if (rc == CURLE_OK || rc == CURLE_WRITE_ERROR)
        curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, status);
    if (out != NULL && fclose(out) != 0 && rc == CURLE_OK) {
        gd_err_set(err, GD_EIO, "%s: %s", r->out, strerror(errno));
        rc = CURLE_WRITE_ERROR;
    }
    if (in != NULL)
        fclose(in);
    curl_slist_free_all(headers);
    curl_url_cleanup(url);
    if (rc != CURLE_OK && err->code == 0) {
        char why[CURL_ERROR_SIZE + 300];
        snprintf(why, sizeof why, "%s",
                 c->too_big       ? "the answer is too large"
                 : c->curl_err[0] ? c->curl_err
                                  : curl_easy_strerror(rc));
        agt_tls_hint(rc, why, sizeof why);
        gd_err_set(err, GD_EIO, "%s %s: %s", r->method, r->path, why);
    }
    return rc;
}

int
agt_http_call(struct agt_http *c, const struct agt_http_req *r, int retries, long *status,
              struct gd_err *err)
{
    int failures = 0;
    double streak_start = now();
    for (;;) {
        struct gd_err e = {0};
        CURLcode cc = agt_http_once(c, r, status, &e);
        if ((c->stop != NULL && *c->stop) || c->tick_stopped) {
            gd_err_set(err, GD_EIO, "%s %s: stopped", r->method, r->path);
            return AGT_EXIT_UPLOAD;
        }
        enum agt_outcome outcome = agt_outcome_of(cc, *status);
        char why[600];
        if (cc != CURLE_OK)
            snprintf(why, sizeof why, "%s", e.msg);
        else
            agt_http_error(c, why, sizeof why);
        if (outcome == AGT_OUTCOME_REFUSED) {
            gd_err_set(err, GD_EINVAL, "%s %s: the server refused the token (%ld %s)", r->method,
                       r->path, *status, why);
            return AGT_EXIT_TOKEN;
        }
        if (cc == CURLE_OK && outcome != AGT_OUTCOME_RETRY)
            return 0;
        if (outcome == AGT_OUTCOME_FAILED) { /* a local failure: a file, a bad URL */
            gd_err_set(err, GD_EIO, "%s", why);
            return AGT_EXIT_UPLOAD;
        }
        failures++;
        if (retries >= 0 && (failures > retries || now() - streak_start > c->o->retry_time)) {
            gd_err_set(err, GD_EIO, "%s; gave up after %d attempts", why, failures);
            return AGT_EXIT_UPLOAD;
        }
        double jitter = agt_http_jitter(c);
        double delay =
            agt_backoff_delay(failures - 1, c->o->backoff_first, c->o->backoff_max, jitter);
        if (cc == CURLE_OK)
            fprintf(stderr,
                    "gpudiff-agent: %s %s: the server answered %ld %s; retry %d in "
                    "%.1f s\n",
                    r->method, r->path, *status, why, failures, delay);
        else
            fprintf(stderr, "gpudiff-agent: %s; retry %d in %.1f s\n", why, failures, delay);
        agt_sleep(delay, c->stop);
    }
}

json_t *
agt_http_json(const struct agt_http *c)
{
    if (c->body == NULL || c->len == 0)
        return NULL;
    return json_loadb(c->body, c->len, 0, NULL);
}

void
agt_http_error(const struct agt_http *c, char *out, size_t size)
{
    agt_server_error(c->body ? c->body : "", c->len, out, size);
}

void
agt_http_set_rid_prefix(struct agt_http *c, const char *prefix)
{
    snprintf(c->rid_prefix, sizeof c->rid_prefix, "%s", prefix);
}

double
agt_http_jitter(struct agt_http *c)
{
    c->rng ^= c->rng << 13;
    c->rng ^= c->rng >> 7;
    c->rng ^= c->rng << 17;
    return (double)(c->rng >> 11) / 9007199254740992.0;
}
