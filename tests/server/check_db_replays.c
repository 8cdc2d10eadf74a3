/*
 * check_db_replays.c: server/db_replays.c with run owners (migration 020, issue 25 item 4):
 * a replay counts for the run it replays, in the diff's lookup and in the cached diffs it
 * drops when it finishes, only when it was made by that run's owner or by an admin; another
 * agent's replay changes nothing. Runs from before owners (NULL on both sides) keep theirs.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "db.h"
#include "db_fixture.h"
#include "run_doc.h"

static char db_path[64];

static const char *SRC = "11111111-1111-4111-8111-111111111111";
static const char *OTHER = "22222222-2222-4222-8222-222222222222";
static const char *BY_B = "33333333-3333-4333-8333-333333333333";
static const char *BY_A = "44444444-4444-4444-8444-444444444444";
static const char *BY_ADMIN = "55555555-5555-4555-8555-555555555555";
static const char *OLD_SRC = "66666666-6666-4666-8666-666666666666";
static const char *OLD_REPLAY = "77777777-7777-4777-8777-777777777777";

enum { TOKEN_A = 1, TOKEN_B = 2, TOKEN_ADMIN = 3 };

static void
exec(struct srv_db *db, const char *sql)
{
    char *msg = NULL;
    ck_assert_msg(sqlite3_exec(srv_db_conn(db), sql, NULL, NULL, &msg) == SQLITE_OK, "%s: %s",
                  sql, msg);
}

/* A complete cpu run of one layer, created by owner (0: before owners), replaying of. */
static void
add_run(struct srv_db *db, const char *id, int64_t owner, const char *of, int minute)
{
    char text[1400], replay[200] = "";
    struct gd_err err;
    struct srv_run_doc doc;
    if (of != NULL)
        snprintf(replay, sizeof replay, "\"replay\":{\"of\":\"%s\",\"inputs\":\"captured\"},",
                 of);
    snprintf(text, sizeof text,
             "{\"format\":\"gpudiff-run\",\"version\":1,\"id\":\"%s\",%s"
             "\"created_at\":\"2026-01-01T00:%02d:00Z\",\"model\":{\"name\":\"m\",\"sha256\":"
             "null},\"backend\":\"cpu\",\"layers\":[{\"index\":0,\"name\":\"x\",\"dtype\":"
             "\"float32\",\"shape\":[1],\"file\":\"layers/0000-x.npy\",\"sha256\":\"%064d\"}]}",
             id, replay, minute, 0);
    ck_assert_msg(srv_run_doc_parse(text, strlen(text), 1 << 20, &doc, &err) == 0, "%s", err.msg);
    doc.owner_token = owner;
    int created = 0;
    ck_assert_msg(srv_db_run_create(db, &doc, 1, &created, &err) == 0, "%s", err.msg);
    ck_assert(created);
    srv_run_doc_fini(&doc);
    char sql[200];
    snprintf(sql, sizeof sql, "UPDATE runs SET state = 'complete' WHERE id = '%s'", id);
    exec(db, sql);
}

/* The replay the diff of a against like would use ("" for none). */
static const char *
found(struct srv_db *db, const char *of, const char *like, char out[40])
{
    struct gd_err err;
    int rc = srv_db_replay_find(db, of, like, out, &err);
    ck_assert_msg(rc == 0 || rc == SRV_ENOTFOUND, "%s", err.msg);
    if (rc != 0)
        out[0] = '\0';
    return out;
}

static int64_t
diffs_of(struct srv_db *db, const char *id)
{
    char sql[200];
    sqlite3_stmt *st = NULL;
    snprintf(sql, sizeof sql, "SELECT count(*) FROM diffs WHERE '%s' IN (run_a, run_b)", id);
    ck_assert_int_eq(sqlite3_prepare_v2(srv_db_conn(db), sql, -1, &st, NULL), SQLITE_OK);
    ck_assert_int_eq(sqlite3_step(st), SQLITE_ROW);
    int64_t n = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    return n;
}

static void
add_diff(struct srv_db *db, const char *a, const char *b)
{
    char sql[400];
    snprintf(sql, sizeof sql,
             "INSERT INTO diffs(run_a, run_b, atol, rtol, engine_version, n_layers, json, "
             "seconds, created_at) VALUES('%s', '%s', 1e-8, 1e-5, 'v', 0, '{}', 0, 1)",
             a, b);
    exec(db, sql);
}

START_TEST(replays_by_owner)
{
    struct srv_db *db = dbf_open(db_path, sizeof db_path, "check_db_replays", 0, 1);
    char out[40];
    struct gd_err err;
    exec(db, "INSERT INTO tokens(id, hash, role, hint, created_at) VALUES "
             "(1, 'ha', 'agent', 'gd_a', 1), (2, 'hb', 'agent', 'gd_b', 1), "
             "(3, 'hc', 'admin', 'gd_c', 1)");
    add_run(db, SRC, TOKEN_A, NULL, 0);
    add_run(db, OTHER, TOKEN_A, NULL, 1);
    int64_t owner = -1;
    ck_assert_int_eq(srv_db_run_owner(db, SRC, &owner, &err), 0);
    ck_assert_int_eq(owner, TOKEN_A);
    ck_assert_int_eq(srv_db_run_owner(db, "99999999-9999-4999-8999-999999999999", &owner, &err),
                     SRV_ENOTFOUND);

    /* Another agent's replay of SRC: not SRC's, whatever its device and time. */
    add_run(db, BY_B, TOKEN_B, SRC, 5);
    ck_assert_str_eq(found(db, SRC, OTHER, out), "");
    add_diff(db, SRC, OTHER);
    ck_assert_int_eq(srv_db_replay_finished(db, BY_B, &err), 0);
    ck_assert_int_eq(diffs_of(db, SRC), 1); /* the cached diff stays */

    /* The owner's replay counts, and an admin's (the newest wins). */
    add_run(db, BY_A, TOKEN_A, SRC, 2);
    ck_assert_str_eq(found(db, SRC, OTHER, out), BY_A);
    add_run(db, BY_ADMIN, TOKEN_ADMIN, SRC, 3);
    ck_assert_str_eq(found(db, SRC, OTHER, out), BY_ADMIN);
    ck_assert_int_eq(srv_db_replay_finished(db, BY_A, &err), 0);
    ck_assert_int_eq(diffs_of(db, SRC), 0);

    /* Runs from before owners keep the replays made then. */
    add_run(db, OLD_SRC, 0, NULL, 6);
    add_run(db, OLD_REPLAY, 0, OLD_SRC, 7);
    ck_assert_int_eq(srv_db_run_owner(db, OLD_SRC, &owner, &err), 0);
    ck_assert_int_eq(owner, 0);
    ck_assert_str_eq(found(db, OLD_SRC, OTHER, out), OLD_REPLAY);
    srv_db_close(db);
    dbf_remove(db_path);
}
END_TEST

int
main(void)
{
    Suite *s = suite_create("db_replays");
    TCase *tc = tcase_create("owners");
    tcase_add_test(tc, replays_by_owner);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? 0 : 1;
}
