/*
 * check_upload.c: the pure parts of agent/upload.c: the backoff schedule (doubling from the
 * first wait to the cap, jitter keeping at least half of each step), which outcomes are
 * retried, refused or final, reading layers_missing from the server's answer, the server's
 * error text, and the checks on --server and the token (from $GPUDIFF_TOKEN too).
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "upload.h"

START_TEST(backoff_schedule)
{
    /* 0.5 s doubling to 30 s; jitter 0 gives half the step, jitter near 1 nearly all. */
    ck_assert(agt_backoff_delay(0, 0.5, 30, 0.0) == 0.25);
    ck_assert(agt_backoff_delay(1, 0.5, 30, 0.0) == 0.5);
    ck_assert(agt_backoff_delay(2, 0.5, 30, 0.0) == 1.0);
    ck_assert(agt_backoff_delay(3, 0.5, 30, 0.5) == 3.0);
    ck_assert(agt_backoff_delay(5, 0.5, 30, 0.0) == 8.0);
    ck_assert(agt_backoff_delay(6, 0.5, 30, 0.0) == 15.0); /* 32 s, capped at 30 */
    ck_assert(agt_backoff_delay(1000, 0.5, 30, 0.0) == 15.0);
    ck_assert(agt_backoff_delay(1000, 0.5, 30, 0.999) < 30.0);
    ck_assert(agt_backoff_delay(1000, 0.5, 30, 0.999) > 29.9);
    /* Jitter outside [0, 1) is clamped: never below half a step, never above a step. */
    ck_assert(agt_backoff_delay(0, 0.5, 30, -3.0) == 0.25);
    ck_assert(agt_backoff_delay(0, 0.5, 30, 7.0) == 0.5);
    /* The default 10 retries wait at most 0.5+1+2+4+8+16+30*4 = 151.5 s in all. */
    double most = 0;
    for (int i = 0; i < 10; i++)
        most += agt_backoff_delay(i, 0.5, 30, 1.0);
    ck_assert(most == 151.5);
}
END_TEST

START_TEST(outcomes)
{
    ck_assert_int_eq(agt_outcome_of(CURLE_OK, 200), AGT_OUTCOME_OK);
    ck_assert_int_eq(agt_outcome_of(CURLE_OK, 201), AGT_OUTCOME_OK);
    ck_assert_int_eq(agt_outcome_of(CURLE_OK, 401), AGT_OUTCOME_REFUSED);
    ck_assert_int_eq(agt_outcome_of(CURLE_OK, 403), AGT_OUTCOME_REFUSED);
    ck_assert_int_eq(agt_outcome_of(CURLE_OK, 400), AGT_OUTCOME_FAILED);
    ck_assert_int_eq(agt_outcome_of(CURLE_OK, 404), AGT_OUTCOME_FAILED);
    ck_assert_int_eq(agt_outcome_of(CURLE_OK, 409), AGT_OUTCOME_FAILED);
    ck_assert_int_eq(agt_outcome_of(CURLE_OK, 413), AGT_OUTCOME_FAILED);
    ck_assert_int_eq(agt_outcome_of(CURLE_OK, 408), AGT_OUTCOME_RETRY);
    ck_assert_int_eq(agt_outcome_of(CURLE_OK, 429), AGT_OUTCOME_RETRY);
    ck_assert_int_eq(agt_outcome_of(CURLE_OK, 500), AGT_OUTCOME_RETRY);
    ck_assert_int_eq(agt_outcome_of(CURLE_OK, 502), AGT_OUTCOME_RETRY);
    ck_assert_int_eq(agt_outcome_of(CURLE_OK, 503), AGT_OUTCOME_RETRY);
    ck_assert_int_eq(agt_outcome_of(CURLE_COULDNT_CONNECT, 0), AGT_OUTCOME_RETRY);
    ck_assert_int_eq(agt_outcome_of(CURLE_RECV_ERROR, 0), AGT_OUTCOME_RETRY);
    ck_assert_int_eq(agt_outcome_of(CURLE_SEND_ERROR, 0), AGT_OUTCOME_RETRY);
    ck_assert_int_eq(agt_outcome_of(CURLE_GOT_NOTHING, 0), AGT_OUTCOME_RETRY);
    ck_assert_int_eq(agt_outcome_of(CURLE_OPERATION_TIMEDOUT, 0), AGT_OUTCOME_RETRY);
    ck_assert_int_eq(agt_outcome_of(CURLE_URL_MALFORMAT, 0), AGT_OUTCOME_FAILED);
    ck_assert_int_eq(agt_outcome_of(CURLE_UNSUPPORTED_PROTOCOL, 0), AGT_OUTCOME_FAILED);
    ck_assert_int_eq(agt_outcome_of(CURLE_READ_ERROR, 0), AGT_OUTCOME_FAILED);
}
END_TEST

static json_t *
parse(const char *text)
{
    json_t *j = json_loads(text, 0, NULL);
    ck_assert_ptr_nonnull(j);
    return j;
}

START_TEST(missing_layers)
{
    unsigned char missing[3];
    struct gd_err err;
    json_t *run = parse("{\"layers_missing\": [0, 2]}");
    ck_assert_int_eq(agt_missing_parse(run, 3, missing, &err), 0);
    ck_assert(missing[0] == 1 && missing[1] == 0 && missing[2] == 1);
    json_decref(run);
    run = parse("{\"layers_missing\": []}");
    memset(missing, 7, sizeof missing);
    ck_assert_int_eq(agt_missing_parse(run, 3, missing, &err), 0);
    ck_assert(missing[0] == 0 && missing[1] == 0 && missing[2] == 0);
    json_decref(run);
    static const char *const bad[] = {"{\"layers_missing\": [3]}", "{\"layers_missing\": [-1]}",
                                      "{\"layers_missing\": [\"0\"]}", "{\"layers\": []}",
                                      "{\"layers_missing\": 2}"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        run = parse(bad[i]);
        ck_assert_msg(agt_missing_parse(run, 3, missing, &err) == GD_EFORMAT, "%s", bad[i]);
        json_decref(run);
    }
}
END_TEST

START_TEST(server_error_text)
{
    char out[128];
    const char *body = "{\"error\": {\"code\": \"unauthorized\", \"message\": \"unknown token\", "
                       "\"request_id\": \"x-1\"}}";
    agt_server_error(body, strlen(body), out, sizeof out);
    ck_assert_str_eq(out, "unauthorized: unknown token");
    body = "<html>bad gateway\n<body>...";
    agt_server_error(body, strlen(body), out, sizeof out);
    ck_assert_str_eq(out, "<html>bad gateway");
    agt_server_error("a\tb\x01", 4, out, sizeof out);
    ck_assert_str_eq(out, "a?b?");
    agt_server_error(NULL, 0, out, sizeof out);
    ck_assert_str_eq(out, "(no message)");
    agt_server_error("x", 1, out, 1);
    ck_assert_str_eq(out, "");
}
END_TEST

START_TEST(options)
{
    struct agt_upload_opts o;
    struct gd_err err;
    unsetenv(AGT_TOKEN_ENV);
    agt_upload_opts_init(&o);
    ck_assert_int_eq(o.retries, 10);
    ck_assert(o.retry_time == 300 && o.backoff_first == 0.5 && o.backoff_max == 30);
    ck_assert_int_eq(agt_upload_opts_check(&o, &err), GD_EINVAL); /* no --server */
    o.server = "ftp://host";
    ck_assert_int_eq(agt_upload_opts_check(&o, &err), GD_EINVAL);
    o.server = "http://127.0.0.1:8470/";
    ck_assert_int_eq(agt_upload_opts_check(&o, &err), GD_EINVAL); /* no token */
    ck_assert_msg(strstr(err.msg, AGT_TOKEN_ENV) != NULL, "%s", err.msg);
    setenv(AGT_TOKEN_ENV, "gd_from_the_environment", 1);
    ck_assert_int_eq(agt_upload_opts_check(&o, &err), 0);
    ck_assert_str_eq(o.token, "gd_from_the_environment");
    o.token = "gd_from_the_flag";
    ck_assert_int_eq(agt_upload_opts_check(&o, &err), 0);
    ck_assert_str_eq(o.token, "gd_from_the_flag");
    o.token = "gd_with_a_newline\n";
    ck_assert_int_eq(agt_upload_opts_check(&o, &err), GD_EINVAL);
    o.token = "gd_ok";
    o.server = "https://gpudiff.example/";
    ck_assert_int_eq(agt_upload_opts_check(&o, &err), 0);
    /* The token never goes over plain HTTP to another host unless told to. */
    o.server = "http://gpudiff.example:8470/";
    ck_assert_int_eq(agt_upload_opts_check(&o, &err), GD_EINVAL);
    ck_assert_msg(strstr(err.msg, "--insecure-http") != NULL, "%s", err.msg);
    o.insecure_http = 1;
    ck_assert_int_eq(agt_upload_opts_check(&o, &err), 0);
    o.insecure_http = 0;
    /* The rule is decided on libcurl's parse: a '?' or '#' before an '@' hides no host. */
    o.server = "http://gpudiff.example:8470?@127.0.0.1";
    ck_assert_int_eq(agt_upload_opts_check(&o, &err), GD_EINVAL);
    o.server = "http://gpudiff.example:8470#@127.0.0.1";
    ck_assert_int_eq(agt_upload_opts_check(&o, &err), GD_EINVAL);
    o.server = "http://127.0.0.1:8470@gpudiff.example/";
    ck_assert_int_eq(agt_upload_opts_check(&o, &err), GD_EINVAL);
    o.cacert = "/nonexistent/ca.pem";
    o.server = "https://gpudiff.example/";
    ck_assert_int_eq(agt_upload_opts_check(&o, &err), GD_EINVAL);
    ck_assert_msg(strstr(err.msg, "/nonexistent/ca.pem") != NULL, "%s", err.msg);
    unsetenv(AGT_TOKEN_ENV);
}
END_TEST

int
main(void)
{
    Suite *s = suite_create("upload");
    TCase *tc = tcase_create("pure");
    tcase_add_test(tc, backoff_schedule);
    tcase_add_test(tc, outcomes);
    tcase_add_test(tc, missing_layers);
    tcase_add_test(tc, server_error_text);
    tcase_add_test(tc, options);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? 0 : 1;
}
