/*
 * check_auth.c: server/auth.c and db_tokens.c: base64url against RFC 4648's vectors, the
 * token's form, its stored hash against an independent SHA-256, the Authorization header
 * parser, roles, and tokens in a database: looked up, revoked, never stored in clear.
 */
#define _GNU_SOURCE /* memmem */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "db.h"
#include "server.h"

START_TEST(base64url_vectors)
{
    /* RFC 4648 section 10, without padding; the last has the two url-safe characters. */
    static const struct {
        const char *in, *out;
    } v[] = {
        {"", ""},           {"f", "Zg"},          {"fo", "Zm8"},          {"foo", "Zm9v"},
        {"foob", "Zm9vYg"}, {"fooba", "Zm9vYmE"}, {"foobar", "Zm9vYmFy"}, {"\xfb\xff\xfe", "-__-"}};
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
        char out[16];
        srv_base64url((const unsigned char *)v[i].in, strlen(v[i].in), out);
        ck_assert_str_eq(out, v[i].out);
    }
}
END_TEST

START_TEST(token_form)
{
    char a[SRV_TOKEN_LEN + 1], b[SRV_TOKEN_LEN + 1];
    struct gd_err err;
    ck_assert_int_eq(srv_token_generate(a, &err), 0);
    ck_assert_int_eq(srv_token_generate(b, &err), 0);
    ck_assert_uint_eq(strlen(a), 46);
    ck_assert(strncmp(a, "gd_", 3) == 0);
    ck_assert(srv_token_well_formed(a));
    ck_assert_str_ne(a, b);
    ck_assert(!srv_token_well_formed("gd_short"));
    ck_assert(!srv_token_well_formed("xx_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"));
    ck_assert(!srv_token_well_formed("gd_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA+"));
}
END_TEST

START_TEST(token_hash)
{
    /* printf gd_AAA...A | sha256sum */
    char hex[65];
    struct gd_err err;
    ck_assert_int_eq(srv_token_hash("gd_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", hex, &err),
                     0);
    ck_assert_str_eq(hex, "c1b1b5f0cfb2532bb72e05842883416d886c0f4dea001b09f819375795b9b840");
}
END_TEST

START_TEST(bearer_header)
{
    const char *tok = "gd_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA";
    char out[SRV_TOKEN_LEN + 1], h[128];
    struct gd_err err;
    snprintf(h, sizeof h, "Bearer %s", tok);
    ck_assert_int_eq(srv_token_from_header(h, out, &err), 0);
    ck_assert_str_eq(out, tok);
    snprintf(h, sizeof h, "bearer   %s  ", tok);
    ck_assert_int_eq(srv_token_from_header(h, out, &err), 0);
    ck_assert_str_eq(out, tok);
    ck_assert_int_eq(srv_token_from_header("Basic dXNlcjpwYXNz", out, &err), SRV_EAUTH);
    ck_assert_msg(strstr(err.msg, "Bearer") != NULL, "%s", err.msg);
    ck_assert_int_eq(srv_token_from_header("Bearer gd_abc", out, &err), SRV_EAUTH);
    ck_assert_int_eq(srv_token_from_header("Bearer", out, &err), SRV_EAUTH);
    ck_assert_int_eq(
        srv_token_from_header("Bearer gd_AAAAAAAAAAAAAAAAAAAAA'OR'1'='1AAAAAAAAAAAAAAA", out, &err),
        SRV_EAUTH);
}
END_TEST

START_TEST(roles)
{
    ck_assert_int_eq(srv_role_from_name("viewer"), SRV_ROLE_VIEWER);
    ck_assert_int_eq(srv_role_from_name("agent"), SRV_ROLE_AGENT);
    ck_assert_int_eq(srv_role_from_name("admin"), SRV_ROLE_ADMIN);
    ck_assert_int_eq(srv_role_from_name("root"), -1);
    ck_assert_int_eq(srv_role_from_name("none"), -1);
    ck_assert_str_eq(srv_role_name(SRV_ROLE_AGENT), "agent");
    /* Each role includes the ones before it: the route check compares them. */
    ck_assert(SRV_ROLE_NONE < SRV_ROLE_VIEWER && SRV_ROLE_VIEWER < SRV_ROLE_AGENT &&
              SRV_ROLE_AGENT < SRV_ROLE_ADMIN);
    ck_assert_int_eq(srv_err_status(SRV_EAUTH), 401);
    ck_assert_int_eq(srv_err_status(SRV_EFORBIDDEN), 403);
}
END_TEST

START_TEST(tokens_in_db)
{
    char path[] = "/tmp/check_auth.XXXXXX";
    int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    close(fd);
    struct srv_db_opts opts = {.busy_timeout_ms = 1000};
    struct srv_db *db = NULL;
    struct gd_err err;
    ck_assert_int_eq(srv_db_open(path, &opts, &db, &err), 0);
    ck_assert_int_eq(srv_db_migrate(db, NULL, NULL, &err), 0);

    char agent[SRV_TOKEN_LEN + 1], viewer[SRV_TOKEN_LEN + 1], hash[65];
    int64_t agent_id = 0, viewer_id = 0, id = 0;
    enum srv_role role = SRV_ROLE_NONE;
    ck_assert_int_eq(srv_token_create(db, SRV_ROLE_AGENT, "ci", agent, &agent_id, &err), 0);
    ck_assert_int_eq(srv_token_create(db, SRV_ROLE_VIEWER, "", viewer, &viewer_id, &err), 0);
    ck_assert_int_ne(agent_id, viewer_id);
    ck_assert_int_eq(srv_token_create(db, SRV_ROLE_NONE, "", viewer, &id, &err), GD_EINVAL);
    ck_assert_int_eq(srv_token_create(db, SRV_ROLE_AGENT, "tab\there", viewer, &id, &err),
                     GD_EINVAL);

    ck_assert_int_eq(srv_token_hash(agent, hash, &err), 0);
    ck_assert_int_eq(srv_db_token_lookup(db, hash, &role, &id, &err), 0);
    ck_assert_int_eq(role, SRV_ROLE_AGENT);
    ck_assert_int_eq(id, agent_id);

    int64_t counts[4];
    ck_assert_int_eq(srv_db_token_counts(db, counts, &err), 0);
    ck_assert_int_eq(counts[SRV_ROLE_AGENT], 1);
    ck_assert_int_eq(counts[SRV_ROLE_VIEWER], 1);
    ck_assert_int_eq(counts[SRV_ROLE_ADMIN], 0);

    ck_assert_int_eq(srv_db_token_revoke(db, agent_id, 1000, &err), 0);
    ck_assert_int_eq(srv_db_token_lookup(db, hash, &role, &id, &err), SRV_EAUTH);
    ck_assert_msg(strstr(err.msg, "revoked") != NULL, "%s", err.msg);
    ck_assert_int_eq(srv_db_token_revoke(db, 9999, 1000, &err), SRV_ENOTFOUND);
    ck_assert_int_eq(srv_db_token_lookup(db, "00", &role, &id, &err), SRV_EAUTH);
    srv_db_close(db);

    /* Neither token is anywhere in the database file (nor its WAL, closed into it). */
    FILE *f = fopen(path, "rb");
    ck_assert(f != NULL);
    static char bytes[1 << 20];
    size_t n = fread(bytes, 1, sizeof bytes, f);
    fclose(f);
    ck_assert(memmem(bytes, n, agent + 3, 20) == NULL);
    ck_assert(memmem(bytes, n, viewer + 3, 20) == NULL);
    ck_assert(memmem(bytes, n, hash, 64) != NULL);
    unlink(path);
}
END_TEST

int
main(void)
{
    Suite *s = suite_create("auth");
    TCase *tc = tcase_create("auth");
    tcase_add_test(tc, base64url_vectors);
    tcase_add_test(tc, token_form);
    tcase_add_test(tc, token_hash);
    tcase_add_test(tc, bearer_header);
    tcase_add_test(tc, roles);
    tcase_add_test(tc, tokens_in_db);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? 0 : 1;
}
