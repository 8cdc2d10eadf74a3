/*
 * fetch.c: GETs of a stored run and its layers from gpudiffd (fetch.h), for `replay --server`.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <curl/curl.h>

#include "fetch.h"
#include "upload.h"

#define FETCH_CONNECT_TIMEOUT 10L
#define FETCH_STALL_SECONDS 60L
#define FETCH_DOC_MAX (256u << 20) /* a run document of a model with very many layers */

struct sink {
    FILE *f;        /* the layer file, or NULL for the document */
    char *data;     /* the document (or an error body) */
    size_t len, cap;
    int failed;
    long status;    /* of a refused answer */
};

static size_t
on_data(char *p, size_t size, size_t n, void *user)
{
    struct sink *s = user;
    size_t len = size * n;
    if (s->f != NULL)
        return fwrite(p, 1, len, s->f);
    if (s->len + len + 1 > FETCH_DOC_MAX) {
        s->failed = 1;
        return 0;
    }
    if (s->len + len + 1 > s->cap) {
        size_t cap = s->cap ? s->cap : 65536;
        while (cap < s->len + len + 1)
            cap *= 2;
        char *d = realloc(s->data, cap);
        if (d == NULL) {
            s->failed = 1;
            return 0;
        }
        s->data = d;
        s->cap = cap;
    }
    memcpy(s->data + s->len, p, len);
    s->len += len;
    s->data[s->len] = '\0';
    return len;
}

/* One GET of path into s; *status 0 when no answer came. */
static CURLcode
get_once(const struct agt_fetch_opts *o, const struct agt_server *srv, const char *path,
         struct sink *s, long *status, char *curl_err)
{
    struct curl_slist *headers = NULL;
    CURL *h = curl_easy_init();
    if (h == NULL)
        return CURLE_FAILED_INIT;
    *status = 0;
    curl_err[0] = '\0';
    CURLU *url = NULL;
    struct gd_err uerr;
    if (agt_server_request(srv, h, path, o->token, &headers, &url, &uerr) != 0) {
        snprintf(curl_err, CURL_ERROR_SIZE, "%s", uerr.msg);
        curl_easy_cleanup(h);
        curl_slist_free_all(headers);
        return CURLE_URL_MALFORMAT;
    }
    if (o->cacert != NULL)
        curl_easy_setopt(h, CURLOPT_CAINFO, o->cacert);
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT, FETCH_CONNECT_TIMEOUT);
    curl_easy_setopt(h, CURLOPT_LOW_SPEED_LIMIT, 1L);
    curl_easy_setopt(h, CURLOPT_LOW_SPEED_TIME, FETCH_STALL_SECONDS);
    curl_easy_setopt(h, CURLOPT_ERRORBUFFER, curl_err);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_data);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, s);
    if (headers != NULL)
        curl_easy_setopt(h, CURLOPT_HTTPHEADER, headers);
    CURLcode rc = curl_easy_perform(h);
    curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, status);
    curl_easy_cleanup(h);
    curl_slist_free_all(headers);
    curl_url_cleanup(url);
    return rc;
}

/* get() with the URL parsed: the attempts. */
static int
get_with(const struct agt_fetch_opts *o, const struct agt_server *srv, const char *path,
         const char *path_out, struct sink *s, char *curl_err, struct gd_err *err)
{
    for (int attempt = 0;; attempt++) {
        long status = 0;
        s->len = 0;
        s->failed = 0;
        if (path_out != NULL && (s->f = fopen(path_out, "wb")) == NULL)
            return gd_err_set(err, GD_EIO, "%s: %s", path_out, strerror(errno));
        CURLcode rc = get_once(o, srv, path, s, &status, curl_err);
        int wrote = s->f == NULL || fclose(s->f) == 0;
        s->f = NULL;
        enum agt_outcome out = agt_outcome_of(rc, status);
        if (out == AGT_OUTCOME_OK && wrote && !s->failed)
            return 0;
        if (out == AGT_OUTCOME_OK)
            return gd_err_set(err, GD_EIO, "GET %s: could not keep the answer", path);
        if (out == AGT_OUTCOME_RETRY && attempt < o->retries) {
            double wait = agt_backoff_delay(attempt, 0.5, 10.0, (double)rand() / RAND_MAX);
            struct timespec ts = {(time_t)wait, (long)((wait - (time_t)wait) * 1e9)};
            nanosleep(&ts, NULL);
            continue;
        }
        char msg[300] = "";
        if (path_out != NULL) {
            /* the error body went into the file: read it back for the message */
            FILE *f = fopen(path_out, "rb");
            size_t got = f ? fread(msg, 1, sizeof msg - 1, f) : 0;
            if (f)
                fclose(f);
            msg[got] = '\0';
            unlink(path_out);
        } else if (s->data != NULL) {
            snprintf(msg, sizeof msg, "%s", s->data);
        }
        char text[320];
        agt_server_error(msg, strlen(msg), text, sizeof text);
        if (status == 0)
            return gd_err_set(err, GD_EIO, "GET %s: %s", path,
                              curl_err[0] ? curl_err : curl_easy_strerror(rc));
        s->status = status;
        return gd_err_set(err, status == 404 ? GD_ENOENT : GD_EIO, "GET %s: %ld %s", path,
                          status, text);
    }
}

/* GETs path with retries; a layer goes to path_out (opened afresh for each attempt). */
static int
get(const struct agt_fetch_opts *o, const char *path, const char *path_out, struct sink *s,
    struct gd_err *err)
{
    char curl_err[CURL_ERROR_SIZE];
    struct agt_server srv;
    int prc = agt_server_parse(o->server, o->insecure_http, &srv, err);
    if (prc == 0 && o->token != NULL && (prc = agt_server_token_check(&srv, err)) != 0)
        agt_server_fini(&srv);
    if (prc != 0)
        return prc;
    int rc = get_with(o, &srv, path, path_out, s, curl_err, err);
    agt_server_fini(&srv);
    return rc;
}

int
agt_fetch_run(const struct agt_fetch_opts *o, const char *id, json_t **out, long *status,
              struct gd_err *err)
{
    char path[256];
    snprintf(path, sizeof path, "/api/v1/runs/%s", id);
    struct sink s = {0};
    int rc = get(o, path, NULL, &s, err);
    *status = s.status;
    if (rc == 0) {
        json_error_t jerr;
        *out = json_loadb(s.data ? s.data : "", s.len, 0, &jerr);
        if (*out == NULL)
            rc = gd_err_set(err, GD_EFORMAT, "GET %s: the answer is not JSON: %s", path,
                            jerr.text);
    }
    free(s.data);
    return rc;
}

int
agt_fetch_layer(const struct agt_fetch_opts *o, const char *id, int index, const char *path,
                long *status, struct gd_err *err)
{
    char url[256];
    snprintf(url, sizeof url, "/api/v1/runs/%s/layers/%d.npy", id, index);
    struct sink s = {0};
    int rc = get(o, url, path, &s, err);
    *status = s.status;
    free(s.data);
    return rc;
}
