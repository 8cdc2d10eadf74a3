/*
 * check_head.c: server/head.c, the strict request-head parser the gate runs: where a head
 * ends, what a good head parses to (method, decoded path, query pairs with '+' and escapes,
 * fields without their whitespace, the length), and one refusal with its code for each rule
 * (versions, Host, the framing fields, line ends, folding, names, control bytes raw and
 * percent-encoded, escapes, query keys, targets).
 */
#include <check.h>
#include <stdio.h>
#include <string.h>

#include "head.h"
#include "server.h"

static int
parse(const char *text, struct srv_head *h, struct gd_err *err)
{
    size_t len = strlen(text);
    size_t end = srv_head_end(text, len);
    ck_assert_msg(end > 0, "no end found in %s", text);
    return srv_head_parse(text, end, h, err);
}

static void
refused(const char *text, int code, const char *words)
{
    struct srv_head h;
    struct gd_err err = {0};
    int rc = parse(text, &h, &err);
    ck_assert_msg(rc == code, "%s: rc %d (%s), expected %d", text, rc, err.msg, code);
    ck_assert_msg(strstr(err.msg, words) != NULL, "%s: message \"%s\" lacks \"%s\"", text, err.msg,
                  words);
}

START_TEST(end_of_head)
{
    const char *whole = "GET / HTTP/1.1\r\nHost: x\r\n\r\nbody";
    ck_assert_uint_eq(srv_head_end(whole, strlen(whole)), strlen(whole) - 4);
    ck_assert_uint_eq(srv_head_end(whole, 20), 0);
    ck_assert_uint_eq(srv_head_end("GET / HTTP/1.1\r\nHost: x\r\n\r", 26), 0);
    const char *lead = "\r\n\r\nGET / HTTP/1.1\r\nHost: x\r\n\r\n";
    ck_assert_uint_eq(srv_head_end(lead, strlen(lead)), strlen(lead));
    /* A bare LF or a stray CR ends the head where it stands, to be refused at once. */
    ck_assert_uint_eq(srv_head_end("GET / HTTP/1.1\nHost", 19), 15);
    ck_assert_uint_eq(srv_head_end("GET /\rx", 7), 6);
}
END_TEST

START_TEST(a_good_head)
{
    struct srv_head h;
    struct gd_err err = {0};
    const char *text =
        "\r\nPUT /api/v1/runs/a%20b/layers/3?model=x+y%2Bz&limit=10&flag HTTP/1.1\r\n"
        "Host: 127.0.0.1:8470\r\n"
        "Content-Length: 1234\r\n"
        "X-Empty:\r\n"
        "Authorization:   Bearer gd_x \t\r\n\r\n";
    ck_assert_msg(parse(text, &h, &err) == 0, "%s", err.msg);
    ck_assert_str_eq(h.method, "PUT");
    ck_assert_str_eq(h.target, "/api/v1/runs/a%20b/layers/3?model=x+y%2Bz&limit=10&flag");
    ck_assert_str_eq(h.path, "/api/v1/runs/a b/layers/3");
    ck_assert_int_eq(h.minor, 1);
    ck_assert_int_eq(h.n_query, 3);
    ck_assert_str_eq(srv_head_query(&h, "model"), "x y+z");
    ck_assert_str_eq(srv_head_query(&h, "limit"), "10");
    ck_assert_str_eq(srv_head_query(&h, "flag"), "");
    ck_assert_ptr_null(srv_head_query(&h, "Limit"));
    ck_assert_str_eq(srv_head_field(&h, "authorization"), "Bearer gd_x");
    ck_assert_str_eq(srv_head_field(&h, "X-EMPTY"), "");
    ck_assert_ptr_null(srv_head_field(&h, "Content-Type"));
    ck_assert_int_eq(h.has_length, 1);
    ck_assert_uint_eq(h.content_length, 1234);
    ck_assert_int_eq(h.chunked, 0);
    ck_assert_uint_eq(h.head_len, strlen(text));
    /* The struct moves with its memory. */
    struct srv_head moved = h;
    ck_assert_str_eq(srv_head_query(&moved, "model"), "x y+z");
    srv_head_fini(&moved);
    srv_head_fini(&moved);

    ck_assert_int_eq(parse("GET /healthz HTTP/1.0\r\n\r\n", &h, &err), 0); /* 1.0: no Host */
    ck_assert_int_eq(h.minor, 0);
    ck_assert_int_eq(h.n_query, 0);
    srv_head_fini(&h);
    /* A later minor version is read as HTTP/1.1 (RFC 9110 2.5), Host and all. */
    ck_assert_int_eq(parse("GET / HTTP/1.7\r\nHost: x\r\n\r\n", &h, &err), 0);
    ck_assert_int_eq(h.minor, 1);
    srv_head_fini(&h);
    ck_assert_int_eq(
        parse("POST /x HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: Chunked\r\n\r\n", &h, &err), 0);
    ck_assert_int_eq(h.chunked, 1);
    ck_assert_int_eq(h.has_length, 0);
    srv_head_fini(&h);
}
END_TEST

START_TEST(the_request_line)
{
    refused("GET /x HTTP/2.0\r\nHost: x\r\n\r\n", SRV_EVERSION, "HTTP/2.0");
    refused("GET /x HTTP/0.9\r\nHost: x\r\n\r\n", SRV_EVERSION, "HTTP/0.9");
    refused("GET /x HTTP/11.1\r\nHost: x\r\n\r\n", SRV_EBADREQ, "HTTP/1.1");
    refused("GET /x HTTX/1.1\r\nHost: x\r\n\r\n", SRV_EBADREQ, "HTTP/1.1");
    refused("GET /x\r\nHost: x\r\n\r\n", SRV_EBADREQ, "METHOD TARGET");
    refused("GET  /x HTTP/1.1\r\nHost: x\r\n\r\n", SRV_EBADREQ, "METHOD TARGET");
    refused("GET /x y HTTP/1.1\r\nHost: x\r\n\r\n", SRV_EBADREQ, "HTTP/1.1");
    refused("G(T /x HTTP/1.1\r\nHost: x\r\n\r\n", SRV_EBADREQ, "token");
    refused("AAAAAAAAAAAAAAAAA /x HTTP/1.1\r\nHost: x\r\n\r\n", SRV_EBADREQ, "longer");
    refused("GET http://x/ HTTP/1.1\r\nHost: x\r\n\r\n", SRV_EBADREQ, "starting with '/'");
    refused("OPTIONS * HTTP/1.1\r\nHost: x\r\n\r\n", SRV_EBADREQ, "starting with '/'");
    refused("GET /a#b HTTP/1.1\r\nHost: x\r\n\r\n", SRV_EBADREQ, "'#'");
    refused("GET /\x7f HTTP/1.1\r\nHost: x\r\n\r\n", SRV_EBADREQ, "0x7f");
    refused("GET /\x80 HTTP/1.1\r\nHost: x\r\n\r\n", SRV_EBADREQ, "0x80");
}
END_TEST

START_TEST(lines_and_fields)
{
    refused("GET / HTTP/1.1\nHost: x\n\n", SRV_EBADREQ, "CRLF");
    refused("GET / HTTP/1.1\r\nHost: x\r\nX-A: a\rb\r\n\r\n", SRV_EBADREQ, "CRLF");
    refused("GET / HTTP/1.1\r\nHost: x\r\nX-A: a\r\n b\r\n\r\n", SRV_EBADREQ, "folded");
    refused("GET / HTTP/1.1\r\nHost: x\r\nX-A : a\r\n\r\n", SRV_EBADREQ, "whitespace");
    refused("GET / HTTP/1.1\r\nHost: x\r\nno colon\r\n\r\n", SRV_EBADREQ, "colon");
    refused("GET / HTTP/1.1\r\nHost: x\r\n: v\r\n\r\n", SRV_EBADREQ, "without a name");
    refused("GET / HTTP/1.1\r\nHost: x\r\nX(y): v\r\n\r\n", SRV_EBADREQ, "token");
    refused("GET / HTTP/1.1\r\nHost: x\r\nX-A: a\x01"
            "b\r\n\r\n",
            SRV_EBADREQ, "control byte");
    refused("GET / HTTP/1.1\r\nHost: x\r\nX-A: a\x7f\r\n\r\n", SRV_EBADREQ, "control byte");
    /* A NUL cannot pass through a C string: the parser sees it by length. */
    const char nul[] = "GET / HTTP/1.1\r\nHost: x\r\nX-A: a\0b\r\n\r\n";
    struct srv_head h;
    struct gd_err err = {0};
    size_t end = srv_head_end(nul, sizeof nul - 1);
    ck_assert_uint_eq(end, sizeof nul - 1);
    ck_assert_int_eq(srv_head_parse(nul, end, &h, &err), SRV_EBADREQ);
    ck_assert_msg(strstr(err.msg, "NUL") != NULL, "%s", err.msg);
    /* Tabs are whitespace in a value. */
    ck_assert_int_eq(parse("GET / HTTP/1.1\r\nHost: x\r\nX-A: a\tb\r\n\r\n", &h, &err), 0);
    ck_assert_str_eq(srv_head_field(&h, "X-A"), "a\tb");
    srv_head_fini(&h);
    char many[8192];
    size_t n = (size_t)snprintf(many, sizeof many, "GET / HTTP/1.1\r\nHost: x\r\n");
    for (int i = 0; i < SRV_HEAD_FIELDS_MAX; i++)
        n += (size_t)snprintf(many + n, sizeof many - n, "X-%d: v\r\n", i);
    snprintf(many + n, sizeof many - n, "\r\n");
    refused(many, SRV_EHEADERS, "header lines");
}
END_TEST

START_TEST(framing)
{
    refused("GET / HTTP/1.1\r\n\r\n", SRV_EBADREQ, "Host");
    refused("GET / HTTP/1.1\r\nHost: a\r\nhost: b\r\n\r\n", SRV_EBADREQ, "more than one Host");
    refused("PUT / HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n",
            SRV_EBADREQ, "together");
    refused("PUT / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip\r\n\r\n", SRV_EBADREQ, "chunked");
    refused("PUT / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip, chunked\r\n\r\n", SRV_EBADREQ,
            "chunked");
    refused("PUT / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n"
            "Transfer-Encoding: chunked\r\n\r\n",
            SRV_EBADREQ, "chunked");
    refused("PUT / HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\nContent-Length: 4\r\n\r\n",
            SRV_EBADREQ, "more than one Content-Length");
    static const char *const lengths[] = {"abc",  "-1",   "+1", "1 2",
                                          "5, 5", "0x10", "",   "9999999999999999999"};
    for (size_t i = 0; i < sizeof lengths / sizeof lengths[0]; i++) {
        char text[256];
        snprintf(text, sizeof text, "PUT / HTTP/1.1\r\nHost: x\r\nContent-Length: %s\r\n\r\n",
                 lengths[i]);
        refused(text, SRV_EBADREQ, "decimal digits");
    }
    struct srv_head h;
    struct gd_err err = {0};
    ck_assert_int_eq(
        parse("PUT / HTTP/1.1\r\nHost: x\r\nContent-Length: 000000000000000042\r\n\r\n", &h, &err),
        0);
    ck_assert_uint_eq(h.content_length, 42);
    srv_head_fini(&h);
}
END_TEST

START_TEST(escapes_and_queries)
{
    refused("GET /runs/x%00y HTTP/1.1\r\nHost: x\r\n\r\n", SRV_EBADREQ, "%00");
    refused("GET /index.html%00.png HTTP/1.1\r\nHost: x\r\n\r\n", SRV_EBADREQ, "%00");
    refused("GET /a%1F HTTP/1.1\r\nHost: x\r\n\r\n", SRV_EBADREQ, "%1F");
    refused("GET /a?b=%7F HTTP/1.1\r\nHost: x\r\n\r\n", SRV_EBADREQ, "%7F");
    refused("GET /a?b%00=1 HTTP/1.1\r\nHost: x\r\n\r\n", SRV_EBADREQ, "%00");
    refused("GET /a?b=%0a HTTP/1.1\r\nHost: x\r\n\r\n", SRV_EBADREQ, "%0A");
    refused("GET /a%zz HTTP/1.1\r\nHost: x\r\n\r\n", SRV_EBADREQ, "two hex digits");
    refused("GET /a?b=%4 HTTP/1.1\r\nHost: x\r\n\r\n", SRV_EBADREQ, "two hex digits");
    refused("GET /a?b=% HTTP/1.1\r\nHost: x\r\n\r\n", SRV_EBADREQ, "two hex digits");
    refused("GET /a?a=1&a=2 HTTP/1.1\r\nHost: x\r\n\r\n", SRV_EBADREQ, "twice");
    refused("GET /a?a=1&a HTTP/1.1\r\nHost: x\r\n\r\n", SRV_EBADREQ, "twice");
    refused("GET /a?=1 HTTP/1.1\r\nHost: x\r\n\r\n", SRV_EBADREQ, "without a key");
    /* the list filters of GET /api/v1/runs come once per item */
    struct srv_head lists;
    struct gd_err lists_err = {0};
    ck_assert_msg(parse("GET /a?knob=tf32=true&knob=batch=32&label=t=w&label=u=v HTTP/1.1\r\n"
                        "Host: x\r\n\r\n", &lists, &lists_err) == 0, "%s", lists_err.msg);
    ck_assert_int_eq(lists.n_query, 4);
    ck_assert_str_eq(srv_head_query(&lists, "knob"), "tf32=true");
    srv_head_fini(&lists);
    char many[4096];
    size_t n = (size_t)snprintf(many, sizeof many, "GET /a?");
    for (int i = 0; i <= SRV_HEAD_QUERY_MAX; i++)
        n += (size_t)snprintf(many + n, sizeof many - n, "k%d=1&", i);
    snprintf(many + n, sizeof many - n, " HTTP/1.1\r\nHost: x\r\n\r\n");
    refused(many, SRV_EBADREQ, "query parameters");
    /* Empty pieces are nothing; %2F decodes to '/' inside a value. */
    struct srv_head h;
    struct gd_err err = {0};
    ck_assert_int_eq(parse("GET /a?&&x=%2Fy&& HTTP/1.1\r\nHost: x\r\n\r\n", &h, &err), 0);
    ck_assert_int_eq(h.n_query, 1);
    ck_assert_str_eq(srv_head_query(&h, "x"), "/y");
    srv_head_fini(&h);
    /* The most query pairs of one-byte keys fit the room set aside for them. */
    n = (size_t)snprintf(many, sizeof many, "G /?");
    for (int i = 0; i < SRV_HEAD_QUERY_MAX; i++)
        n += (size_t)snprintf(many + n, sizeof many - n, "%c&", 'A' + (i % 26) + (i >= 26) * 32);
    snprintf(many + n, sizeof many - n, " HTTP/1.0\r\n\r\n");
    ck_assert_msg(parse(many, &h, &err) == 0, "%s", err.msg);
    ck_assert_int_eq(h.n_query, SRV_HEAD_QUERY_MAX);
    srv_head_fini(&h);
}
END_TEST

/* tls: a head rebuilt from libmicrohttpd's parse (srv_head_rebuild) meets the same checks. */
static int
rebuild(const char *method, const char *target, const struct srv_head_field *f, int n,
        size_t max, struct srv_head *h, struct gd_err *err)
{
    return srv_head_rebuild(method, target, "HTTP/1.1", f, n, max, h, err);
}

START_TEST(rebuilt_heads)
{
    struct srv_head h;
    struct gd_err err = {0};
    struct srv_head_field good[] = {{"Host", "localhost:8470"},
                                    {"Content-Length", "12"},
                                    {"X-Request-Id", "abc"}};
    /* The target as received: escapes decoded once, here, and the query split here. */
    ck_assert_msg(rebuild("PUT", "/api/v1/runs/a%2541?model=x+y&n", good, 3, 16384, &h, &err) ==
                      0,
                  "%s", err.msg);
    ck_assert_str_eq(h.method, "PUT");
    ck_assert_str_eq(h.path, "/api/v1/runs/a%41");
    ck_assert_int_eq(h.n_query, 2);
    ck_assert_str_eq(srv_head_query(&h, "model"), "x y");
    ck_assert_str_eq(srv_head_query(&h, "n"), "");
    ck_assert_int_eq(h.has_length, 1);
    ck_assert_uint_eq(h.content_length, 12);
    ck_assert_str_eq(srv_head_field(&h, "x-request-id"), "abc");
    const char *want = "PUT /api/v1/runs/a%2541?model=x+y&n HTTP/1.1\r\nHost: localhost:8470\r\n"
                       "Content-Length: 12\r\nX-Request-Id: abc\r\n\r\n";
    ck_assert_uint_eq(h.head_len, strlen(want));
    srv_head_fini(&h);

    /* What the strict parse refuses is refused the same way. */
    struct srv_head_field two_lengths[] = {{"Host", "x"}, {"Content-Length", "1"},
                                           {"Content-Length", "2"}};
    ck_assert_int_eq(rebuild("PUT", "/a", two_lengths, 3, 16384, &h, &err), SRV_EBADREQ);
    struct srv_head_field length_and_te[] = {{"Host", "x"}, {"Content-Length", "1"},
                                             {"Transfer-Encoding", "chunked"}};
    ck_assert_int_eq(rebuild("PUT", "/a", length_and_te, 3, 16384, &h, &err), SRV_EBADREQ);
    struct srv_head_field no_host[] = {{"Accept", "*/*"}};
    ck_assert_int_eq(rebuild("GET", "/a", no_host, 1, 16384, &h, &err), SRV_EBADREQ);
    struct srv_head_field control[] = {{"Host", "x"}, {"X-A", "a\x01z"}};
    ck_assert_int_eq(rebuild("GET", "/a", control, 2, 16384, &h, &err), SRV_EBADREQ);
    struct srv_head_field line_break[] = {{"Host", "x"}, {"X-A", "a\r\nX-B: b"}};
    ck_assert_int_eq(rebuild("GET", "/a", line_break, 2, 16384, &h, &err), SRV_EBADREQ);
    ck_assert_msg(strstr(err.msg, "CR or LF") != NULL, "%s", err.msg);
    struct srv_head_field host[] = {{"Host", "x"}};
    ck_assert_int_eq(rebuild("GET", "/a%00b", host, 1, 16384, &h, &err), SRV_EBADREQ);
    ck_assert_int_eq(rebuild("GET", "/a\r\nX: y", host, 1, 16384, &h, &err), SRV_EBADREQ);
    ck_assert_int_eq(rebuild("GET", "a", host, 1, 16384, &h, &err), SRV_EBADREQ);
    ck_assert_int_eq(srv_head_rebuild("GET", "/", "HTTP/2.0", host, 1, 16384, &h, &err),
                     SRV_EVERSION);

    /* --max-header holds for the rebuilt head: the request line alone, then the whole. */
    char target[200];
    memset(target, 'a', sizeof target - 1);
    target[0] = '/';
    target[sizeof target - 1] = '\0';
    ck_assert_int_eq(rebuild("GET", target, host, 1, 150, &h, &err), SRV_EURI);
    ck_assert_int_eq(rebuild("GET", "/", good, 3, 60, &h, &err), SRV_EHEADERS);
    ck_assert_int_eq(rebuild("GET", "/", good, 3, 80, &h, &err), 0);
    srv_head_fini(&h);
    struct srv_head_field many[SRV_HEAD_FIELDS_MAX + 1];
    many[0] = (struct srv_head_field){"Host", "x"};
    for (int i = 1; i <= SRV_HEAD_FIELDS_MAX; i++)
        many[i] = (struct srv_head_field){"X-A", "1"};
    ck_assert_int_eq(rebuild("GET", "/", many, SRV_HEAD_FIELDS_MAX, 16384, &h, &err), 0);
    srv_head_fini(&h);
    ck_assert_int_eq(rebuild("GET", "/", many, SRV_HEAD_FIELDS_MAX + 1, 16384, &h, &err),
                     SRV_EHEADERS);
}
END_TEST

/* sec: RFC 9112 3.2: a Host that is not a host and port is 400 (it was accepted). */
START_TEST(host_values)
{
    const char *good[] = {"x", "127.0.0.1", "127.0.0.1:8470", "gpudiff.example:443",
                          "[::1]", "[::1]:8470", "[2001:db8::7]:1", "a-b_c~d.e", "%41b",
                          "x:", "x:65535", "", "[v7.a:b]", "!$&'()*+,;="};
    const char *bad[] = {"a b", "x y:1", "host/path", "host?q", "host#f", "user@host",
                         "x:y", "x:65536", "x:123456", "x:-1", "[::1", "[::1]x", "[::g]",
                         "[]", "[127.0.0.1]", "a:1:2", "%4", "%zz", "h\"q", "<x>", "x\\y",
                         "[::1]:1:2", "::1"};
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++)
        ck_assert_msg(srv_head_host_valid(good[i]), "refused Host: %s", good[i]);
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        ck_assert_msg(!srv_head_host_valid(bad[i]), "accepted Host: %s", bad[i]);
    refused("GET / HTTP/1.1\r\nHost: a b\r\n\r\n", SRV_EBADREQ, "Host");
    refused("GET / HTTP/1.1\r\nHost: evil.example/x\r\n\r\n", SRV_EBADREQ, "Host");
    refused("GET / HTTP/1.0\r\nHost: u@h\r\n\r\n", SRV_EBADREQ, "Host"); /* 1.0 too */
    struct srv_head h;
    struct gd_err err = {0};
    const char *ok = "GET / HTTP/1.1\r\nHost: [::1]:8470\r\n\r\n";
    ck_assert_int_eq(srv_head_parse(ok, strlen(ok), &h, &err), 0);
    srv_head_fini(&h);
}
END_TEST

int
main(void)
{
    Suite *s = suite_create("head");
    TCase *tc = tcase_create("parse");
    tcase_add_test(tc, end_of_head);
    tcase_add_test(tc, a_good_head);
    tcase_add_test(tc, the_request_line);
    tcase_add_test(tc, lines_and_fields);
    tcase_add_test(tc, host_values);
    tcase_add_test(tc, framing);
    tcase_add_test(tc, escapes_and_queries);
    tcase_add_test(tc, rebuilt_heads);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? 0 : 1;
}
