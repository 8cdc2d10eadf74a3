/*
 * check_server_url.c: agent/server_url.c, the one reading of --server and the token rule
 * decided on it: every URL below is parsed by libcurl's URL API as libcurl will connect,
 * and the rule must follow that parse, not the text (the '?@' and '#@' tricks, userinfo,
 * IPv4 and IPv6 spellings, upper-case schemes and hosts); and the request URL
 * agt_server_request() builds is the parsed host's, with the token added only where the
 * rule allows it.
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "server_url.h"

/* What a URL must come to: refused at parse, or parsed with these facts. */
enum outcome { REFUSED, TOKEN_OK, NO_TOKEN };

struct url_case {
    const char *url;
    enum outcome want;
    const char *host; /* the host libcurl connects to, when parsed */
};

static const struct url_case cases[] = {
    /* loopback over http: the token may go */
    {"http://127.0.0.1:8470/", TOKEN_OK, "127.0.0.1"},
    {"http://127.1.2.3", TOKEN_OK, "127.1.2.3"},
    {"http://127.1/", TOKEN_OK, "127.0.0.1"},      /* libcurl normalizes IPv4 forms */
    {"http://2130706433/", TOKEN_OK, "127.0.0.1"}, /* 127.0.0.1 as one number */
    {"http://0x7f.1/", TOKEN_OK, "127.0.0.1"},     /* hex */
    {"http://127.000.000.001/", TOKEN_OK, "127.0.0.1"},
    {"http://%31%32%37.0.0.1/", TOKEN_OK, "127.0.0.1"}, /* percent-encoded */
    {"http://localhost:1/x", TOKEN_OK, "localhost"},
    {"HTTP://LOCALHOST", TOKEN_OK, "LOCALHOST"},
    {"Http://127.0.0.1:8470", TOKEN_OK, "127.0.0.1"},
    {"http://[::1]:8470/", TOKEN_OK, "[::1]"},
    {"http://[0:0:0:0:0:0:0:1]/", TOKEN_OK, "[::1]"},
    /* TLS: the token may go anywhere the certificate checks out */
    {"https://gpudiff.example/", TOKEN_OK, "gpudiff.example"},
    {"HTTPS://gpudiff.example:8470/", TOKEN_OK, "gpudiff.example"},
    /* plain http to another host: parsed, but no token */
    {"http://10.0.0.1:8470/", NO_TOKEN, "10.0.0.1"},
    {"HTTP://gpudiff.example/", NO_TOKEN, "gpudiff.example"},
    {"http://127.0.0.1.example/", NO_TOKEN, "127.0.0.1.example"},
    {"http://localhost.example/", NO_TOKEN, "localhost.example"},
    {"http://localhost./", NO_TOKEN, "localhost."},
    {"http://0.0.0.0:8470/", NO_TOKEN, "0.0.0.0"},
    {"http://128.0.0.1/", NO_TOKEN, "128.0.0.1"},
    {"http://[::2]/", NO_TOKEN, "[::2]"},
    {"http://[::]/", NO_TOKEN, "[::]"},
    {"http://[::ffff:127.0.0.1]/", NO_TOKEN, "[::ffff:127.0.0.1]"},
    {"http://gpudiff/127.0.0.1", NO_TOKEN, "gpudiff"},
    {"http://1270.0.0.1/", NO_TOKEN, "1270.0.0.1"},
    /* a second place for a host to hide: refused whatever the host */
    {"http://gpudiff.example:8470?@127.0.0.1", REFUSED, NULL},
    {"http://gpudiff.example:8470/?@127.0.0.1", REFUSED, NULL},
    {"http://gpudiff.example:8470#@127.0.0.1", REFUSED, NULL},
    {"http://0.0.0.0:8470?@127.0.0.1", REFUSED, NULL},
    {"http://127.0.0.1:8470/?x=1", REFUSED, NULL},
    {"https://gpudiff.example/#top", REFUSED, NULL},
    {"http://127.0.0.1@gpudiff.example/", REFUSED, NULL},
    {"http://u:p@127.0.0.1/", REFUSED, NULL},
    {"http://:@127.0.0.1/", REFUSED, NULL},
    {"http://evil.example\\@127.0.0.1/", REFUSED, NULL},
    {"https://user@gpudiff.example/", REFUSED, NULL},
    /* not an http(s) URL libcurl reads */
    {"ftp://127.0.0.1/", REFUSED, NULL},
    {"file:///etc/passwd", REFUSED, NULL},
    {"127.0.0.1:8470", REFUSED, NULL},
    {"//127.0.0.1:8470", REFUSED, NULL},
    {"http:127.0.0.1", REFUSED, NULL},
    {"http://[::1", REFUSED, NULL},
    {"http://127.0.0.1:99999/", REFUSED, NULL},
    {"http://127.0.0.1 /", REFUSED, NULL},
    {"http://127.0.0.1;x/", REFUSED, NULL},
    {"https://", REFUSED, NULL},
    {"", REFUSED, NULL},
};

START_TEST(decisions)
{
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const struct url_case *c = &cases[i];
        struct agt_server s;
        struct gd_err err = {0};
        int rc = agt_server_parse(c->url, 0, &s, &err);
        if (c->want == REFUSED) {
            ck_assert_msg(rc == GD_EINVAL, "%s: parsed, expected refused", c->url);
            continue;
        }
        ck_assert_msg(rc == 0, "%s: refused (%s)", c->url, err.msg);
        ck_assert_msg(strcmp(s.host, c->host) == 0, "%s: host %s, expected %s", c->url, s.host,
                      c->host);
        int ok = agt_server_token_check(&s, &err) == 0;
        ck_assert_msg(ok == (c->want == TOKEN_OK), "%s: token %s", c->url,
                      ok ? "allowed" : "refused");
        if (!ok)
            ck_assert_msg(strstr(err.msg, "--insecure-http") != NULL, "%s: %s", c->url, err.msg);
        agt_server_fini(&s);
        /* --insecure-http allows the token over http:// to any host it parsed */
        ck_assert_int_eq(agt_server_parse(c->url, 1, &s, &err), 0);
        ck_assert_int_eq(agt_server_token_check(&s, &err), 0);
        agt_server_fini(&s);
    }
}
END_TEST

START_TEST(loopback_hosts)
{
    const char *yes[] = {"127.0.0.1", "127.255.255.255", "127.0.0.0",
                         "localhost", "LocalHost",       "[::1]"};
    const char *no[] = {"128.0.0.1",
                        "126.255.255.255",
                        "localhost.",
                        "localhost.localdomain",
                        "::1",
                        "[::2]",
                        "[::ffff:127.0.0.1]",
                        "[::ffff:7f00:1]",
                        "",
                        "[",
                        "[]",
                        "127.0.0.1.",
                        "0.0.0.0",
                        "127.1"};
    for (size_t i = 0; i < sizeof yes / sizeof yes[0]; i++)
        ck_assert_msg(agt_host_is_loopback(yes[i]), "%s", yes[i]);
    for (size_t i = 0; i < sizeof no / sizeof no[0]; i++)
        ck_assert_msg(!agt_host_is_loopback(no[i]), "%s", no[i]);
    ck_assert(!agt_host_is_loopback(NULL));
}
END_TEST

/* The URL of one request as agt_server_request() gave it to libcurl. */
static void
request_url(const struct agt_server *s, const char *path, const char *token, char *out, size_t size,
            int *has_auth, int *rc)
{
    CURL *h = curl_easy_init();
    struct curl_slist *headers = NULL;
    CURLU *u = NULL;
    struct gd_err err = {0};
    *rc = agt_server_request(s, h, path, token, &headers, &u, &err);
    *has_auth = 0;
    for (struct curl_slist *l = headers; l != NULL; l = l->next)
        if (strncmp(l->data, "Authorization: Bearer ", 22) == 0)
            *has_auth = 1;
    out[0] = '\0';
    char *text = NULL;
    if (u != NULL && curl_url_get(u, CURLUPART_URL, &text, 0) == CURLUE_OK) {
        snprintf(out, size, "%s", text);
        curl_free(text);
    }
    curl_url_cleanup(u);
    curl_slist_free_all(headers);
    curl_easy_cleanup(h);
}

START_TEST(requests)
{
    struct agt_server s;
    struct gd_err err;
    char url[2048];
    int auth, rc;
    ck_assert_int_eq(agt_server_parse("http://127.1:8470/gd/", 0, &s, &err), 0);
    ck_assert_str_eq(s.path, "/gd");
    request_url(&s, "/api/v1/runs/x?include=uploading", "gd_t", url, sizeof url, &auth, &rc);
    ck_assert_int_eq(rc, 0);
    ck_assert_str_eq(url, "http://127.0.0.1:8470/gd/api/v1/runs/x?include=uploading");
    ck_assert(auth);
    request_url(&s, "/healthz", NULL, url, sizeof url, &auth, &rc);
    ck_assert_int_eq(rc, 0);
    ck_assert_str_eq(url, "http://127.0.0.1:8470/gd/healthz");
    ck_assert(!auth);
    request_url(&s, "no-slash", "gd_t", url, sizeof url, &auth, &rc);
    ck_assert_int_eq(rc, GD_EINVAL);
    agt_server_fini(&s);

    /* a server the rule refuses a token: the request may go without one, never with */
    ck_assert_int_eq(agt_server_parse("http://gpudiff.example:8470", 0, &s, &err), 0);
    request_url(&s, "/api/v1/runs", "gd_t", url, sizeof url, &auth, &rc);
    ck_assert_int_eq(rc, GD_EINVAL);
    ck_assert(!auth);
    ck_assert_str_eq(url, "");
    request_url(&s, "/api/v1/runs", NULL, url, sizeof url, &auth, &rc);
    ck_assert_int_eq(rc, 0);
    ck_assert_str_eq(url, "http://gpudiff.example:8470/api/v1/runs");
    agt_server_fini(&s);

    ck_assert_int_eq(agt_server_parse("HTTPS://GPUDIFF.example", 0, &s, &err), 0);
    ck_assert(s.tls && !s.loopback);
    request_url(&s, "/api/v1/runs", "gd_t", url, sizeof url, &auth, &rc);
    ck_assert_int_eq(rc, 0);
    ck_assert(auth);
    ck_assert_str_eq(url, "https://GPUDIFF.example/api/v1/runs");
    agt_server_fini(&s);
    agt_server_fini(NULL);
}
END_TEST

int
main(void)
{
    Suite *s = suite_create("server_url");
    TCase *tc = tcase_create("rule");
    tcase_add_test(tc, decisions);
    tcase_add_test(tc, loopback_hosts);
    tcase_add_test(tc, requests);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? 0 : 1;
}
