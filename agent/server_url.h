/*
 * server_url.h: the agent's one reading of --server and the one place a token enters a
 * request (docs/AGENT.md, "push", TLS). The URL is parsed once by libcurl's URL API; the
 * scheme and the host the token rule is decided on are the parts of that parse, and every
 * request is made from the same parsed handle (CURLOPT_CURLU), so the host the rule looked
 * at is the host libcurl connects to. The rule: a token goes only over https://, or over
 * http:// to a loopback host (127.0.0.0/8, ::1, localhost), or where the user said the
 * network is trusted (--insecure-http). Every client of the agent (uploads, fetches, jobs)
 * builds its requests through agt_server_request(). Needs libcurl.
 */
#ifndef GPUDIFF_AGENT_SERVER_URL_H
#define GPUDIFF_AGENT_SERVER_URL_H

#include <curl/curl.h>

#include "gpudiff/error.h"

struct agt_server {
    CURLU *url;       /* scheme, host, port and base path as libcurl parsed them (owned) */
    char shown[1100]; /* the URL libcurl writes of it, for messages */
    char host[300];   /* the host libcurl connects to (an IPv6 address in brackets) */
    char path[1024];  /* the base path without its trailing '/' ("" for none) */
    int tls;          /* https:// */
    int loopback;     /* host is 127.0.0.0/8, ::1 or localhost */
    int token_ok;     /* a token may be sent: tls, loopback, or insecure_http was given */
};

/*
 * Parses text as gpudiffd's base URL into out: http:// or https:// (any case), a host, an
 * optional port and path; no user:password@, no '?' query and no '#' fragment (each would
 * be a second place for a host to hide). insecure_http allows tokens over http:// to a
 * host that is not loopback. GD_EINVAL with the reason in err; out is filled only on
 * success and released with agt_server_fini().
 */
int agt_server_parse(const char *text, int insecure_http, struct agt_server *out,
                     struct gd_err *err);

void agt_server_fini(struct agt_server *s);

/*
 * 1 when host, as libcurl's URL API gives it, is a loopback address: an IPv4 address in
 * 127.0.0.0/8, the IPv6 address ::1 (in brackets), or the name localhost (any case),
 * exactly: not localhost., not an IPv4-mapped address.
 */
int agt_host_is_loopback(const char *host);

/* 0 when a token may go to s; else GD_EINVAL with the reason and what to do. */
int agt_server_token_check(const struct agt_server *s, struct gd_err *err);

/*
 * Sets up h (after curl_easy_reset) for a request of path_query ("/api/v1/runs/ID?x=y",
 * relative to the base path) to s: the URL from s's parsed handle, only the scheme
 * decided, no proxy for a loopback host, no redirects. When token is not NULL, appends
 * "Authorization: Bearer TOKEN" to *headers, but only when agt_server_token_check()
 * allows it (else GD_EINVAL, nothing appended). *url is the request's handle, which must
 * live until the transfer is done: free it with curl_url_cleanup(). GD_ENOMEM,
 * GD_EINVAL.
 */
int agt_server_request(const struct agt_server *s, CURL *h, const char *path_query,
                       const char *token, struct curl_slist **headers, CURLU **url,
                       struct gd_err *err);

#endif
