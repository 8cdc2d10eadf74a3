/*
 * check_db_matrix.c: server/db_matrix.c, the matrix cache: a stored matrix comes back byte
 * for byte under its signature only; a second store replaces the first (one row per model);
 * an unknown model stores nothing; the row goes with its model.
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "db.h"
#include "db_fixture.h"

static char db_path[64];

START_TEST(store_and_read)
{
    struct srv_db *db = dbf_open(db_path, sizeof db_path, "check_db_matrix", 0, 1);
    struct gd_err err;
    ck_assert_int_eq(sqlite3_exec(srv_db_conn(db),
                                  "INSERT INTO models(id, name, created_at) VALUES (1, 'm', 0)",
                                  NULL, NULL, NULL),
                     SQLITE_OK);
    char *text = NULL;
    size_t len = 0;
    ck_assert_int_eq(srv_db_matrix_get(db, "m", "sig1", &text, &len, &err), SRV_ENOTFOUND);
    const char *json = "{\"model\":\"m\",\"devices\":[],\"cells\":[],\"pending\":0}\n";
    ck_assert_msg(srv_db_matrix_put(db, "m", "sig1", 0, json, 0.5, 10, &err) == 0, "%s", err.msg);
    ck_assert_int_eq(srv_db_matrix_get(db, "m", "sig1", &text, &len, &err), 0);
    ck_assert_uint_eq(len, strlen(json));
    ck_assert_str_eq(text, json);
    free(text);
    ck_assert_int_eq(srv_db_matrix_get(db, "m", "sig2", &text, &len, &err), SRV_ENOTFOUND);
    ck_assert_int_eq(srv_db_matrix_get(db, "other", "sig1", &text, &len, &err), SRV_ENOTFOUND);

    /* A new signature replaces the row: the old one is gone. */
    ck_assert_int_eq(srv_db_matrix_put(db, "m", "sig2", 3, "{\"b\":2}\n", 0.1, 11, &err), 0);
    ck_assert_int_eq(srv_db_matrix_get(db, "m", "sig1", &text, &len, &err), SRV_ENOTFOUND);
    ck_assert_int_eq(srv_db_matrix_get(db, "m", "sig2", &text, &len, &err), 0);
    ck_assert_str_eq(text, "{\"b\":2}\n");
    free(text);
    sqlite3_stmt *st = NULL;
    ck_assert_int_eq(sqlite3_prepare_v2(srv_db_conn(db), "SELECT count(*) FROM matrix_cache", -1,
                                        &st, NULL),
                     SQLITE_OK);
    ck_assert_int_eq(sqlite3_step(st), SQLITE_ROW);
    ck_assert_int_eq(sqlite3_column_int(st, 0), 1);
    sqlite3_finalize(st);

    /* No such model: nothing stored, no error. */
    ck_assert_int_eq(srv_db_matrix_put(db, "nosuch", "s", 0, "{}", 0, 12, &err), 0);
    ck_assert_int_eq(srv_db_matrix_get(db, "nosuch", "s", &text, &len, &err), SRV_ENOTFOUND);
    /* The row goes with its model. */
    ck_assert_int_eq(sqlite3_exec(srv_db_conn(db), "DELETE FROM models WHERE id = 1", NULL, NULL,
                                  NULL),
                     SQLITE_OK);
    ck_assert_int_eq(srv_db_matrix_get(db, "m", "sig2", &text, &len, &err), SRV_ENOTFOUND);
    srv_db_close(db);
    dbf_remove(db_path);
}
END_TEST

int
main(void)
{
    Suite *s = suite_create("db_matrix");
    TCase *tc = tcase_create("cache");
    tcase_add_test(tc, store_and_read);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
