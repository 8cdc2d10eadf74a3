/*
 * upload.c: uploads a run bundle to gpudiffd with libcurl. The upload is a small state
 * machine (POST run.json, PUT each missing layer, POST finish) whose every step may fail
 * and be retried; after a failed step the agent asks the server what it is missing (GET
 * /api/v1/runs/{id}?include=uploading) instead of assuming, since a cut PUT may or may not
 * have been committed. So a daemon restarted halfway, or an agent started again on a bundle
 * it half sent, ends with exactly the layers the server lacked sent once more.
 */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "gpudiff/bundle.h"
#include "http.h"
#include "upload.h"

#define CONNECT_TIMEOUT 10L
/* A transfer that moves less than a byte a second for this long has stalled. */
#define STALL_SECONDS 60L
/* Answers are run documents: large for runs of many layers, never this large. */
#define ANSWER_MAX ((size_t)256 << 20)

void
agt_upload_opts_init(struct agt_upload_opts *o)
{
    memset(o, 0, sizeof *o);
    o->retries = 10;
    o->retry_time = 300;
    o->backoff_first = 0.5;
    o->backoff_max = 30;
}

int
agt_upload_opts_check(struct agt_upload_opts *o, struct gd_err *err)
{
    if (o->server == NULL)
        return gd_err_set(err, GD_EINVAL, "--server URL is required");
    struct agt_server srv;
    int rc = agt_server_parse(o->server, o->insecure_http, &srv, err);
    if (rc != 0)
        return rc;
    rc = agt_server_token_check(&srv, err);
    agt_server_fini(&srv);
    if (rc != 0)
        return rc;
    if (o->token == NULL || o->token[0] == '\0')
        o->token = getenv(AGT_TOKEN_ENV);
    if (o->token == NULL || o->token[0] == '\0')
        return gd_err_set(err, GD_EINVAL,
                          "a token is needed: --token T, or the environment variable %s "
                          "(which keeps it out of the process list)",
                          AGT_TOKEN_ENV);
    for (const char *p = o->token; *p; p++)
        if ((unsigned char)*p <= ' ' || *p == 0x7f)
            return gd_err_set(err, GD_EINVAL,
                              "the token holds a space or a control character (a line end "
                              "copied with it?)");
    if (strlen(o->token) > 512)
        return gd_err_set(err, GD_EINVAL, "the token is longer than 512 characters");
    if (o->cacert != NULL && access(o->cacert, R_OK) != 0)
        return gd_err_set(err, GD_EINVAL, "--cacert %.200s: %s", o->cacert, strerror(errno));
    if (o->retries < 0 || !(o->retry_time >= 0) || !(o->backoff_first > 0) ||
        !(o->backoff_max >= o->backoff_first))
        return gd_err_set(err, GD_EINVAL, "bad retry settings");
    return 0;
}

void
agt_tls_hint(CURLcode code, char *why, size_t size)
{
    size_t n = strlen(why);
    if (code == CURLE_PEER_FAILED_VERIFICATION && n < size)
        snprintf(why + n, size - n, " (the server's certificate is not one to trust for this "
                                    "host name: give the CA that signed it with --cacert "
                                    "FILE, and a --server name the certificate holds)");
    else if (code == CURLE_SSL_CACERT_BADFILE && n < size)
        snprintf(why + n, size - n, " (--cacert must name a PEM file of CA certificates)");
}

double
agt_backoff_delay(int attempt, double first, double max, double jitter)
{
    double step = first;
    for (int i = 0; i < attempt && step < max; i++)
        step *= 2;
    if (step > max)
        step = max;
    if (jitter < 0)
        jitter = 0;
    if (jitter >= 1)
        jitter = 1;
    return step * (0.5 + 0.5 * jitter);
}

enum agt_outcome
agt_outcome_of(CURLcode code, long status)
{
    switch (code) {
    case CURLE_OK:
        break;
    case CURLE_COULDNT_RESOLVE_HOST:
    case CURLE_COULDNT_RESOLVE_PROXY:
    case CURLE_COULDNT_CONNECT:
    case CURLE_OPERATION_TIMEDOUT:
    case CURLE_SEND_ERROR:
    case CURLE_RECV_ERROR:
    case CURLE_GOT_NOTHING:
    case CURLE_PARTIAL_FILE:
    case CURLE_SSL_CONNECT_ERROR:
    case CURLE_HTTP2:
    case CURLE_HTTP2_STREAM:
        return AGT_OUTCOME_RETRY;
    default:
        return AGT_OUTCOME_FAILED;
    }
    if (status >= 200 && status < 300)
        return AGT_OUTCOME_OK;
    if (status == 401 || status == 403)
        return AGT_OUTCOME_REFUSED;
    if (status == 408 || status == 429 || status >= 500)
        return AGT_OUTCOME_RETRY;
    return AGT_OUTCOME_FAILED;
}

int
agt_missing_parse(json_t *run, int n_layers, unsigned char *missing, struct gd_err *err)
{
    json_t *list = json_object_get(run, "layers_missing");
    if (!json_is_array(list))
        return gd_err_set(err, GD_EFORMAT, "the server's answer has no layers_missing list");
    memset(missing, 0, (size_t)n_layers);
    size_t i;
    json_t *v;
    json_array_foreach(list, i, v)
    {
        if (!json_is_integer(v) || json_integer_value(v) < 0 || json_integer_value(v) >= n_layers)
            return gd_err_set(err, GD_EFORMAT,
                              "the server lists a missing layer that the bundle, with %d "
                              "layers, does not have",
                              n_layers);
        missing[json_integer_value(v)] = 1;
    }
    return 0;
}

void
agt_server_error(const char *body, size_t len, char *out, size_t size)
{
    json_t *j = body != NULL ? json_loadb(body, len, 0, NULL) : NULL;
    json_t *e = json_object_get(j, "error");
    const char *code = json_string_value(json_object_get(e, "code"));
    const char *msg = json_string_value(json_object_get(e, "message"));
    if (code != NULL && msg != NULL) {
        snprintf(out, size, "%s: %s", code, msg);
    } else {
        /* Not gpudiffd's answer (a proxy's page?): its first line, made printable. */
        size_t n = 0;
        for (; n < len && n + 1 < size && n < 200 && body[n] != '\n'; n++)
            out[n] = (unsigned char)body[n] < 0x20 || (unsigned char)body[n] > 0x7e ? '?' : body[n];
        out[n] = '\0';
        if (n == 0)
            snprintf(out, size, "(no message)");
    }
    json_decref(j);
}

/* ---- one HTTP request: the agent's client (http.c) ---- */

int
agt_answer_append(char **data, size_t *len, size_t *cap, size_t max, const char *p, size_t n)
{
    if (*len + n > max)
        return 1;
    if (*len + n + 1 > *cap) {
        size_t c = *cap ? *cap : 4096;
        while (c < *len + n + 1)
            c *= 2;
        char *d = realloc(*data, c);
        if (d == NULL)
            return -1;
        *data = d;
        *cap = c;
    }
    memcpy(*data + *len, p, n);
    *len += n;
    (*data)[*len] = '\0';
    return 0;
}

/* One attempt of method on path with a JSON body (json, NUL-terminated), a file's bytes or
 * none; the answer in c->body, its status in *status (0 when none came). A file that cannot
 * be read is CURLE_READ_ERROR with err set. */
static CURLcode
attempt(struct agt_http *c, const char *method, const char *path, const char *json,
        const char *file, long *status, struct gd_err *err)
{
    struct agt_http_req r = {.method = method, .path = path, .json = json, .file = file};
    return agt_http_once(c, &r, status, err);
}

/* ---- the upload ---- */

enum step { STEP_POST, STEP_SYNC, STEP_LAYER, STEP_FINISH, STEP_DONE };

struct upload {
    struct agt_http c;
    const struct agt_upload_opts *o;
    struct gd_bundle *b;
    char *run_json;
    size_t run_json_len;
    const char *id;
    unsigned char *missing;
    struct agt_upload_stats st;
    double t0;
};

static double
now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void
sleep_for(double seconds)
{
    struct timespec ts = {(time_t)seconds, (long)((seconds - floor(seconds)) * 1e9)};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

static int
read_file(const char *path, char **out, size_t *len, struct gd_err *err)
{
    FILE *f = fopen(path, "rb");
    if (f == NULL)
        return gd_err_set(err, GD_ENOENT, "%s: %s", path, strerror(errno));
    char *data = NULL, buf[65536];
    size_t n, used = 0, cap = 0;
    while ((n = fread(buf, 1, sizeof buf, f)) > 0)
        if (agt_answer_append(&data, &used, &cap, ANSWER_MAX, buf, n) != 0) {
            fclose(f);
            free(data);
            return gd_err_set(err, GD_ENOMEM, "%s: too large or out of memory", path);
        }
    int bad = ferror(f);
    fclose(f);
    if (bad || data == NULL) {
        free(data);
        return gd_err_set(err, GD_EIO, "%s: cannot be read", path);
    }
    *out = data;
    *len = used;
    return 0;
}

static void say(const struct upload *u, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void
say(const struct upload *u, const char *fmt, ...)
{
    if (u->o->who == NULL)
        return;
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    fprintf(stderr, "gpudiff-agent: %s: %s\n", u->o->who, msg);
}

/* The run answer of a POST or GET: which layers are missing. */
static int
take_missing(struct upload *u, struct gd_err *err)
{
    json_t *run = json_loadb(u->c.body ? u->c.body : "", u->c.len, 0, NULL);
    int rc = run == NULL ? gd_err_set(err, GD_EFORMAT, "the server's answer is not JSON")
                         : agt_missing_parse(run, u->b->n_layers, u->missing, err);
    json_decref(run);
    /* fp: a layer captured as a fingerprint has no tensor to send (the server asks for it
     * later, through a request that fetch-layers fulfils) */
    for (int i = 0; rc == 0 && i < u->b->n_layers; i++)
        if (u->b->layers[i].tensor_absent)
            u->missing[i] = 0;
    return rc;
}

/* One step; *status and the answer tell how it went, *what names it for messages. */
static CURLcode
do_step(struct upload *u, enum step step, int layer, long *status, char *what, size_t what_size,
        struct gd_err *err)
{
    char path[256];
    switch (step) {
    case STEP_POST:
        snprintf(what, what_size, "POST run.json");
        return attempt(&u->c, "POST", "/api/v1/runs", u->run_json, NULL, status, err);
    case STEP_SYNC:
        snprintf(what, what_size, "GET the run's missing layers");
        snprintf(path, sizeof path, "/api/v1/runs/%s?include=uploading", u->id);
        return attempt(&u->c, "GET", path, NULL, NULL, status, err);
    case STEP_LAYER: {
        const struct gd_bundle_layer *l = &u->b->layers[layer];
        char file[4096];
        snprintf(what, what_size, "PUT layer %d (%.40s)", layer, l->name);
        snprintf(file, sizeof file, "%s/%s", u->b->dir, l->file);
        snprintf(path, sizeof path, "/api/v1/runs/%s/layers/%d", u->id, layer);
        return attempt(&u->c, "PUT", path, NULL, file, status, err);
    }
    case STEP_FINISH:
        snprintf(what, what_size, "POST finish");
        snprintf(path, sizeof path, "/api/v1/runs/%s/finish", u->id);
        return attempt(&u->c, "POST", path, NULL, NULL, status, err);
    case STEP_DONE:
        break;
    }
    return CURLE_OK;
}

static int
next_missing(const struct upload *u, int from)
{
    for (int i = from; i < u->b->n_layers; i++)
        if (u->missing[i])
            return i;
    return -1;
}

/* The loop of steps with its retries; returns an exit code with err filled. */
static int
run_steps(struct upload *u, struct gd_err *err)
{
    enum step step = STEP_POST;
    int failures = 0, cursor = 0, first_answer = 1, layer = -1;
    double streak_start = 0;
    while (step != STEP_DONE) {
        if (step == STEP_LAYER) {
            layer = next_missing(u, cursor);
            if (layer < 0) {
                step = STEP_FINISH;
                continue;
            }
        }
        char what[128], why[400];
        long status = 0;
        double t_step = now();
        struct gd_err local = {0};
        CURLcode cc = do_step(u, step, layer, &status, what, sizeof what, &local);
        if (step == STEP_LAYER)
            u->st.bytes_sent += u->c.sent;
        if (cc == CURLE_READ_ERROR || cc == CURLE_ABORTED_BY_CALLBACK) {
            /* the layer's file could not be read: retrying the server changes nothing */
            gd_err_set(err, GD_EIO, "%s: %s", what,
                       local.msg[0] ? local.msg : "the layer's file could not be read");
            return AGT_EXIT_INPUT;
        }
        enum agt_outcome outcome = agt_outcome_of(cc, status);
        if (cc != CURLE_OK) {
            snprintf(why, sizeof why, "%s",
                     u->c.curl_err[0] ? u->c.curl_err : curl_easy_strerror(cc));
            agt_tls_hint(cc, why, sizeof why);
        } else {
            agt_http_error(&u->c, why, sizeof why);
        }
        if (step == STEP_SYNC && status == 404) {
            /* The server lost the run (a restore from an old copy): create it again. */
            step = STEP_POST;
            continue;
        }
        if (step == STEP_FINISH && status == 409) {
            /* Layers the server says are missing: they are sent again, within the retries. */
            outcome = AGT_OUTCOME_RETRY;
        }
        if (outcome == AGT_OUTCOME_REFUSED) {
            gd_err_set(err, GD_EINVAL, "%s: the server refused the token (%ld %s)", what, status,
                       why);
            return AGT_EXIT_TOKEN;
        }
        if (outcome == AGT_OUTCOME_FAILED) {
            if (status >= 400 && status < 500) {
                u->st.refused_status = status;
                snprintf(u->st.refused_reason, sizeof u->st.refused_reason, "%s: %s", what, why);
                snprintf(u->st.refused_request, sizeof u->st.refused_request, "%s", u->c.rid);
            }
            if (status != 0)
                gd_err_set(err, GD_EIO, "%s: the server answered %ld %s (request %s)", what, status,
                           why, u->c.rid);
            else
                gd_err_set(err, GD_EIO, "%s: %s", what, why);
            return AGT_EXIT_UPLOAD;
        }
        if (outcome == AGT_OUTCOME_RETRY) {
            double t = now();
            if (failures == 0)
                streak_start = t;
            failures++;
            if (status != 0)
                snprintf(why + strlen(why), sizeof why - strlen(why), " (status %ld, request %s)",
                         status, u->c.rid);
            if (failures > u->o->retries || t - streak_start > u->o->retry_time) {
                gd_err_set(err, GD_EIO,
                           "%s: %s; gave up after %d attempts in %.0f s (--retries %d, "
                           "--retry-time %.0f)",
                           what, why, failures, t - streak_start, u->o->retries, u->o->retry_time);
                return AGT_EXIT_UPLOAD;
            }
            double delay = agt_backoff_delay(failures - 1, u->o->backoff_first, u->o->backoff_max,
                                             agt_http_jitter(&u->c));
            say(u, "%s: %s; retry %d of %d in %.1f s", what, why, failures, u->o->retries, delay);
            u->st.retries++;
            sleep_for(delay);
            /* What the server has now is what counts, whatever the cut request did. */
            if (step != STEP_POST)
                step = STEP_SYNC;
            continue;
        }
        /* Success. A sync is no progress: only the steps that move the run on reset the count. */
        switch (step) {
        case STEP_POST:
        case STEP_SYNC:
            if (take_missing(u, err) != 0) {
                gd_err_prefix(err, "%s: ", what);
                return AGT_EXIT_UPLOAD;
            }
            if (first_answer) {
                int n_missing = 0;
                for (int i = 0; i < u->b->n_layers; i++)
                    n_missing += u->missing[i];
                u->st.layers_known = u->b->n_layers - n_missing;
                first_answer = 0;
                if (u->o->progress)
                    say(u, "run %s: %d layers, %d of them already on the server", u->id,
                        u->b->n_layers, u->st.layers_known);
            }
            if (step == STEP_POST)
                failures = 0;
            step = STEP_LAYER;
            cursor = 0;
            break;
        case STEP_LAYER:
            failures = 0;
            u->missing[layer] = 0;
            u->st.layers_sent++;
            cursor = layer + 1;
            if (u->o->progress)
                say(u, "[%d/%d] layer %d %s: %.1f MB in %.2f s", layer + 1, u->b->n_layers, layer,
                    u->b->layers[layer].name, (double)u->c.sent / 1e6, now() - t_step);
            break;
        case STEP_FINISH:
            step = STEP_DONE;
            break;
        case STEP_DONE:
            break;
        }
    }
    return AGT_EXIT_OK;
}

int
agt_upload_bundle(const char *dir, const struct agt_upload_opts *o, struct agt_upload_stats *stats,
                  struct gd_err *err)
{
    struct upload u;
    memset(&u, 0, sizeof u);
    u.o = o;
    u.t0 = now();
    int code = AGT_EXIT_OK;
    char path[4096];
    struct gd_err local = {0};
    snprintf(path, sizeof path, "%s/run.json", dir);
    if (gd_bundle_open(dir, &u.b, &local) != 0 ||
        read_file(path, &u.run_json, &u.run_json_len, &local) != 0) {
        gd_err_set(err, local.code, "%s", local.msg);
        code = AGT_EXIT_INPUT;
        goto done;
    }
    u.id = json_string_value(json_object_get(u.b->run, "id"));
    if (u.id == NULL || strlen(u.id) != 36 || strspn(u.id, "0123456789abcdef-") != 36) {
        gd_err_set(err, GD_EFORMAT, "%s/run.json: \"id\" is not a run id (a UUID)", dir);
        code = AGT_EXIT_INPUT;
        goto done;
    }
    snprintf(u.st.run_id, sizeof u.st.run_id, "%s", u.id);
    u.st.layers = u.b->n_layers;
    u.missing = calloc(u.b->n_layers > 0 ? (size_t)u.b->n_layers : 1, 1);
    if (u.missing == NULL) {
        gd_err_set(err, GD_ENOMEM, "out of memory");
        code = AGT_EXIT_INTERNAL;
        goto done;
    }
    if (agt_http_open(&u.c, o, "agt", &local) != 0) {
        /* a --server server_url.c does not take, or libcurl that could not start */
        gd_err_set(err, local.code, "%s", local.msg);
        code = local.code == GD_EINVAL ? AGT_EXIT_USAGE : AGT_EXIT_INTERNAL;
        goto done;
    }
    char prefix[24];
    snprintf(prefix, sizeof prefix, "agt-%.8s", u.id);
    agt_http_set_rid_prefix(&u.c, prefix);
    u.c.body_max = ANSWER_MAX + 1;
    code = run_steps(&u, err);
    u.st.seconds = now() - u.t0;
    if (code == AGT_EXIT_OK) {
        double mb = (double)u.st.bytes_sent / 1e6;
        say(&u,
            "run %s is complete on the server: %d layers, %d sent (%.1f MB in %.2f s, %.0f "
            "MB/s), %d already there, %d retries",
            u.id, u.st.layers, u.st.layers_sent, mb, u.st.seconds,
            u.st.seconds > 0 ? mb / u.st.seconds : 0.0, u.st.layers_known, u.st.retries);
    }
done:
    if (stats != NULL)
        *stats = u.st;
    agt_http_close(&u.c);
    free(u.missing);
    free(u.run_json);
    gd_bundle_close(u.b);
    return code;
}

/* ---- one request with retries: a JSON document (sweep's POST /api/v1/sweeps), a GET, a
 * file PUT (fetch-layers) ---- */

static int
request_retry(const char *method, const char *path, const char *json, const char *file,
              const char *id, const struct agt_upload_opts *o, json_t **answer, struct gd_err *err)
{
    struct agt_http c;
    struct gd_err local = {0};
    if (agt_http_open(&c, o, "agt", &local) != 0) {
        agt_http_close(&c);
        gd_err_set(err, local.code, "%s", local.msg);
        return local.code == GD_EINVAL ? AGT_EXIT_USAGE : AGT_EXIT_INTERNAL;
    }
    char prefix[24];
    snprintf(prefix, sizeof prefix, "agt-%.8s", id);
    agt_http_set_rid_prefix(&c, prefix);
    c.body_max = ANSWER_MAX + 1;
    int code = AGT_EXIT_OK, failures = 0;
    double streak_start = now();
    for (;;) {
        long status = 0;
        char why[400];
        struct gd_err e = {0};
        CURLcode cc = attempt(&c, method, path, json, file, &status, &e);
        if (cc == CURLE_READ_ERROR) {
            gd_err_set(err, GD_EIO, "%s", e.msg);
            code = AGT_EXIT_INPUT;
            break;
        }
        enum agt_outcome outcome = agt_outcome_of(cc, status);
        if (cc != CURLE_OK) {
            snprintf(why, sizeof why, "%s", c.curl_err[0] ? c.curl_err : curl_easy_strerror(cc));
            agt_tls_hint(cc, why, sizeof why);
        } else {
            agt_http_error(&c, why, sizeof why);
        }
        if (outcome == AGT_OUTCOME_OK) {
            if (answer != NULL)
                *answer = agt_http_json(&c);
            break;
        }
        if (outcome == AGT_OUTCOME_REFUSED) {
            gd_err_set(err, GD_EINVAL, "%s %s: the server refused the token (%ld %s)", method,
                       path, status, why);
            code = AGT_EXIT_TOKEN;
            break;
        }
        if (outcome == AGT_OUTCOME_FAILED) {
            gd_err_set(err, GD_EIO, "%s %s: the server answered %ld %s (request %s)", method,
                       path, status, why, c.rid);
            code = AGT_EXIT_UPLOAD;
            break;
        }
        failures++;
        if (failures > o->retries || now() - streak_start > o->retry_time) {
            gd_err_set(err, GD_EIO, "%s %s: %s; gave up after %d attempts", method, path, why,
                       failures);
            code = AGT_EXIT_UPLOAD;
            break;
        }
        double delay =
            agt_backoff_delay(failures - 1, o->backoff_first, o->backoff_max, agt_http_jitter(&c));
        if (o->who != NULL)
            fprintf(stderr, "gpudiff-agent: %s: %s %s: %s; retry %d of %d in %.1f s\n", o->who,
                    method, path, why, failures, o->retries, delay);
        sleep_for(delay);
    }
    agt_http_close(&c);
    return code;
}

int
agt_upload_post_json(const char *path, const char *json, size_t len, const char *id,
                     const struct agt_upload_opts *o, json_t **answer, struct gd_err *err)
{
    (void)len; /* a JSON text is NUL-terminated: its length is strlen's */
    return request_retry("POST", path, json, NULL, id, o, answer, err);
}

int
agt_upload_get_json(const char *path, const char *id, const struct agt_upload_opts *o,
                    json_t **answer, struct gd_err *err)
{
    return request_retry("GET", path, NULL, NULL, id, o, answer, err);
}

int
agt_upload_put_file(const char *path, const char *file, const char *id,
                    const struct agt_upload_opts *o, json_t **answer, struct gd_err *err)
{
    return request_retry("PUT", path, NULL, file, id, o, answer, err);
}
