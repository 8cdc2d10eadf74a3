/*
 * server_url.c: --server parsed once by libcurl's URL API, the token rule decided on the
 * parts of that parse, and each request made from the same handle (server_url.h). A rule
 * written over the text of the URL (looking for "://", an '@', a ':') reads it one way
 * and libcurl another: "http://HOST:PORT?@127.0.0.1" is HOST to libcurl and was 127.0.0.1
 * to such a rule. Here there is no second reader.
 */
#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "server_url.h"

#define URL_MAX 1000

/* One part of u, copied into out; "" when u lacks it. 0, or 1 when it does not fit. */
static int
part(CURLU *u, CURLUPart which, char *out, size_t size, int *present)
{
    char *v = NULL;
    CURLUcode rc = curl_url_get(u, which, &v, 0);
    out[0] = '\0';
    if (present != NULL)
        *present = rc == CURLUE_OK;
    if (rc != CURLUE_OK)
        return 0;
    int fits = strlen(v) < size;
    if (fits)
        memcpy(out, v, strlen(v) + 1);
    curl_free(v);
    return !fits;
}

int
agt_host_is_loopback(const char *host)
{
    if (host == NULL)
        return 0;
    if (strcasecmp(host, "localhost") == 0)
        return 1;
    size_t n = strlen(host);
    if (n > 2 && host[0] == '[' && host[n - 1] == ']') {
        char inner[64];
        struct in6_addr a6;
        if (n - 2 >= sizeof inner)
            return 0;
        memcpy(inner, host + 1, n - 2);
        inner[n - 2] = '\0';
        return inet_pton(AF_INET6, inner, &a6) == 1 && IN6_IS_ADDR_LOOPBACK(&a6);
    }
    /* Only the dotted quad libcurl normalizes every IPv4 form to (127.1, 0x7f.1, ...). */
    struct in_addr a4;
    if (inet_pton(AF_INET, host, &a4) != 1)
        return 0;
    return (ntohl(a4.s_addr) >> 24) == 127;
}

int
agt_server_parse(const char *text, int insecure_http, struct agt_server *out, struct gd_err *err)
{
    if (text == NULL)
        return gd_err_set(err, GD_EINVAL, "--server URL is required");
    if (strlen(text) > URL_MAX)
        return gd_err_set(err, GD_EINVAL, "--server: a URL of at most %d characters", URL_MAX);
    struct agt_server s;
    memset(&s, 0, sizeof s);
    int rc = 0, has_user = 0, has_password = 0, has_query = 0, has_fragment = 0, has_options = 0;
    char scheme[16], ignored[8];
    s.url = curl_url();
    if (s.url == NULL)
        return gd_err_set(err, GD_ENOMEM, "out of memory");
    /* No CURLU_NON_SUPPORT_SCHEME, no guessing: the scheme is written, and one libcurl has. */
    CURLUcode uc = curl_url_set(s.url, CURLUPART_URL, text, 0);
    if (uc != CURLUE_OK) {
        rc = gd_err_set(err, GD_EINVAL,
                        "--server %.200s: not a URL libcurl reads (%s); write it as "
                        "https://HOST[:PORT] or http://127.0.0.1:PORT",
                        text, curl_url_strerror(uc));
        goto done;
    }
    if (part(s.url, CURLUPART_SCHEME, scheme, sizeof scheme, NULL) != 0 ||
        (strcmp(scheme, "http") != 0 && strcmp(scheme, "https") != 0)) {
        rc = gd_err_set(err, GD_EINVAL,
                        "--server takes a URL of http:// or https:// (e.g. "
                        "https://gpudiffd:8470), not %.200s",
                        text);
        goto done;
    }
    part(s.url, CURLUPART_USER, ignored, sizeof ignored, &has_user);
    part(s.url, CURLUPART_PASSWORD, ignored, sizeof ignored, &has_password);
    part(s.url, CURLUPART_OPTIONS, ignored, sizeof ignored, &has_options);
    part(s.url, CURLUPART_QUERY, ignored, sizeof ignored, &has_query);
    part(s.url, CURLUPART_FRAGMENT, ignored, sizeof ignored, &has_fragment);
    if (has_user || has_password || has_options) {
        rc = gd_err_set(err, GD_EINVAL,
                        "--server %.200s holds a user name or password before an '@': the "
                        "token is the only credential, give the server as https://HOST[:PORT]",
                        text);
        goto done;
    }
    if (has_query || has_fragment) {
        rc = gd_err_set(err, GD_EINVAL,
                        "--server %.200s holds a %s: a base URL is scheme, host, port and "
                        "path only",
                        text, has_query ? "'?' query" : "'#' fragment");
        goto done;
    }
    if (part(s.url, CURLUPART_HOST, s.host, sizeof s.host, NULL) != 0 || s.host[0] == '\0' ||
        part(s.url, CURLUPART_PATH, s.path, sizeof s.path, NULL) != 0 ||
        part(s.url, CURLUPART_URL, s.shown, sizeof s.shown, NULL) != 0) {
        rc = gd_err_set(err, GD_EINVAL, "--server %.200s: no host, or too long", text);
        goto done;
    }
    size_t n = strlen(s.path);
    while (n > 0 && s.path[n - 1] == '/')
        s.path[--n] = '\0';
    n = strlen(s.shown);
    while (n > 0 && s.shown[n - 1] == '/')
        s.shown[--n] = '\0';
    s.tls = strcmp(scheme, "https") == 0;
    s.loopback = agt_host_is_loopback(s.host);
    s.token_ok = s.tls || s.loopback || insecure_http;
done:
    if (rc != 0) {
        curl_url_cleanup(s.url);
        return rc;
    }
    *out = s;
    return 0;
}

void
agt_server_fini(struct agt_server *s)
{
    if (s == NULL)
        return;
    curl_url_cleanup(s->url);
    s->url = NULL;
}

int
agt_server_token_check(const struct agt_server *s, struct gd_err *err)
{
    if (s->token_ok)
        return 0;
    return gd_err_set(err, GD_EINVAL,
                      "%s is plain HTTP to another host (%s): the token would cross the "
                      "network readable by anyone on the way; use https:// (gpudiffd "
                      "--tls-cert, or a TLS proxy in front, docs/DEPLOY.md), or "
                      "--insecure-http on a network you trust",
                      s->shown, s->host);
}

int
agt_server_request(const struct agt_server *s, CURL *h, const char *path_query, const char *token,
                   struct curl_slist **headers, CURLU **url, struct gd_err *err)
{
    *url = NULL;
    if (s == NULL || s->url == NULL)
        return gd_err_set(err, GD_EINVAL, "no server URL");
    if (token != NULL && agt_server_token_check(s, err) != 0)
        return GD_EINVAL;
    if (token != NULL && strlen(token) > 512)
        return gd_err_set(err, GD_EINVAL, "the token is longer than 512 characters");
    const char *q = strchr(path_query, '?');
    size_t path_len = q != NULL ? (size_t)(q - path_query) : strlen(path_query);
    char path[2048];
    if (path_query[0] != '/' || strlen(s->path) + path_len >= sizeof path)
        return gd_err_set(err, GD_EINVAL, "a request path must start with '/': %.100s", path_query);
    snprintf(path, sizeof path, "%s%.*s", s->path, (int)path_len, path_query);
    CURLU *u = curl_url_dup(s->url);
    if (u == NULL)
        return gd_err_set(err, GD_ENOMEM, "out of memory");
    CURLUcode uc = curl_url_set(u, CURLUPART_PATH, path, 0);
    if (uc == CURLUE_OK)
        uc = curl_url_set(u, CURLUPART_QUERY, q != NULL ? q + 1 : NULL, 0);
    if (uc != CURLUE_OK) {
        curl_url_cleanup(u);
        return gd_err_set(err, GD_EINVAL, "request path %.100s: %s", path_query,
                          curl_url_strerror(uc));
    }
    if (token != NULL) {
        char auth[600];
        snprintf(auth, sizeof auth, "Authorization: Bearer %s", token);
        struct curl_slist *l = curl_slist_append(*headers, auth);
        if (l == NULL) {
            curl_url_cleanup(u);
            return gd_err_set(err, GD_ENOMEM, "out of memory");
        }
        *headers = l;
    }
    curl_easy_setopt(h, CURLOPT_CURLU, u);
    curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, s->tls ? "https" : "http");
    curl_easy_setopt(h, CURLOPT_FOLLOWLOCATION, 0L);
    /* A proxy would make the connection go elsewhere than the loopback host decided on. */
    if (s->loopback)
        curl_easy_setopt(h, CURLOPT_NOPROXY, "*");
    *url = u;
    return 0;
}
