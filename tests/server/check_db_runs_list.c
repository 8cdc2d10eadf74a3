/*
 * check_db_runs_list.c: server/db_runs_list.c, the run list: the device, env, knob and label
 * filters match JSON values as text (true, 32, null) and strings as strings, and only whole
 * values; search words are ANDed, case folded, and find knobs written KEY=VALUE; sorting by a
 * column and both directions; paging counts all matches; each run's standing against its
 * model's baseline comes from the diff cache (baseline, compared with the verdict of the last
 * layer, pending, unavailable after retention), and the page carries env, knobs and labels.
 */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compare.h"
#include "db.h"
#include "db_fixture.h"

static char db_path[64];

static void
exec(struct srv_db *db, const char *sql)
{
    char *msg = NULL;
    int rc = sqlite3_exec(srv_db_conn(db), sql, NULL, NULL, &msg);
    ck_assert_msg(rc == SQLITE_OK, "%s: %s", sql, msg ? msg : "?");
    sqlite3_free(msg);
}

/* Run i of 40, of model m1 (even i) or m2; a minute apart from 2026-01-01. */
static void
add_runs(struct srv_db *db)
{
    exec(db, "INSERT INTO models(id, name, created_at) VALUES (1, 'm1', 0), (2, 'm2', 0)");
    exec(db,
         "WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < 39) "
         "INSERT INTO runs(id, model_id, model_sha256, backend, gpu, host, created_at, "
         "created_ts, state, received_at, n_layers, content_sha256, meta, device) "
         "SELECT printf('%08x-0000-4000-8000-%012x', i, i), 1 + i % 2, '', "
         "CASE WHEN i % 4 = 0 THEN 'cpu' ELSE 'cuda' END, "
         "CASE WHEN i % 4 = 0 THEN '' ELSE 'NVIDIA H200' END, 'host' || (i % 3), "
         "strftime('%Y-%m-%dT%H:%M:%SZ', 1767225600 + 60 * i, 'unixepoch'), "
         "1767225600 + 60 * i, CASE WHEN i = 39 THEN 'uploading' ELSE 'complete' END, i, 40 - i, "
         "'', printf('{\"env\":{\"driver\":\"%s\",\"cudnn\":\"9.1.0\"},"
         "\"knobs\":{\"tf32\":%s,\"batch\":%s,\"conv_algo\":\"%s\"},\"labels\":{\"team\":\"T%d\"}}', "
         "CASE WHEN i < 20 THEN '550' ELSE '560' END, CASE WHEN i % 3 = 0 THEN 'true' ELSE "
         "'false' END, CASE WHEN i % 5 = 0 THEN 'null' ELSE i % 5 END, "
         "CASE WHEN i = 17 THEN 'fft_tiling' ELSE 'heuristic' END, i % 2), "
         "CASE WHEN i % 4 = 0 THEN 'cpu' ELSE 'cuda NVIDIA H200' END FROM n");
}

static const char *
run_id(int i, char out[40])
{
    snprintf(out, 40, "%08x-0000-4000-8000-%012x", i, i);
    return out;
}

/* The list under f: total into *total, the ids of the page joined by ",". */
static char *
list(struct srv_db *db, const struct srv_run_filter *f, int64_t *total)
{
    json_t *out = NULL;
    struct gd_err err;
    ck_assert_msg(srv_db_runs_list(db, f, &out, &err) == 0, "%s", err.msg);
    *total = json_integer_value(json_object_get(out, "total"));
    static char ids[4096];
    ids[0] = '\0';
    size_t i;
    json_t *r;
    json_array_foreach(json_object_get(out, "runs"), i, r)
    {
        /* the id's last digits: 00000011-...-000000000011 gives "11" as hex */
        const char *id = json_string_value(json_object_get(r, "id"));
        char num[16];
        snprintf(num, sizeof num, "%s%d", i ? "," : "", (int)strtol(id + 24, NULL, 16));
        strcat(ids, num);
    }
    json_decref(out);
    return ids;
}

static struct srv_run_filter
all(void)
{
    struct srv_run_filter f = {.since = INT64_MIN, .limit = 100};
    return f;
}

START_TEST(filters)
{
    struct srv_db *db = dbf_open(db_path, sizeof db_path, "check_db_runs_list", 0, 1);
    add_runs(db);
    int64_t total = 0;
    struct srv_run_filter f = all();
    list(db, &f, &total);
    ck_assert_int_eq(total, 39); /* run 39 is uploading */
    f.include_uploading = 1;
    list(db, &f, &total);
    ck_assert_int_eq(total, 40);

    /* A knob as JSON text: true is not "true" the string, and batch=3 finds 3, not 13. */
    f = all();
    f.knobs[0] = (struct srv_run_match){"tf32", "true"};
    f.n_knobs = 1;
    ck_assert_str_eq(list(db, &f, &total), "36,33,30,27,24,21,18,15,12,9,6,3,0");
    f.knobs[1] = (struct srv_run_match){"batch", "3"};
    f.n_knobs = 2;
    ck_assert_str_eq(list(db, &f, &total), "33,18,3");
    f.knobs[0] = (struct srv_run_match){"batch", "null"};
    f.n_knobs = 1;
    ck_assert_str_eq(list(db, &f, &total), "35,30,25,20,15,10,5,0");
    /* A string knob, found on the 2nd page of 1 (paging counts every match). */
    f.knobs[0] = (struct srv_run_match){"conv_algo", "fft_tiling"};
    ck_assert_str_eq(list(db, &f, &total), "17");
    f.knobs[0] = (struct srv_run_match){"conv_algo", "fft"};
    list(db, &f, &total);
    ck_assert_int_eq(total, 0); /* whole values only */
    f.knobs[0] = (struct srv_run_match){"nosuch", "1"};
    list(db, &f, &total);
    ck_assert_int_eq(total, 0);

    f = all();
    f.labels[0] = (struct srv_run_match){"team", "T1"};
    f.n_labels = 1;
    f.driver = "560";
    f.limit = 3;
    f.offset = 3;
    ck_assert_str_eq(list(db, &f, &total), "31,29,27");
    ck_assert_int_eq(total, 9); /* odd runs 21..37 */
    f = all();
    f.device = "cpu";
    f.cudnn = "9.1.0";
    ck_assert_str_eq(list(db, &f, &total), "36,32,28,24,20,16,12,8,4,0");
    f.cudnn = "9.1";
    list(db, &f, &total);
    ck_assert_int_eq(total, 0);

    /* Search words: all must occur; case folded; knobs as KEY=VALUE. */
    f = all();
    f.words[0] = "CONV_ALGO=FFT";
    f.n_words = 1;
    ck_assert_str_eq(list(db, &f, &total), "17");
    f.words[0] = "host2";
    f.words[1] = "h200";
    f.words[2] = "m2";
    f.n_words = 3;
    ck_assert_str_eq(list(db, &f, &total), "35,29,23,17,11,5");
    f.words[0] = "00000011";
    f.n_words = 1;
    ck_assert_str_eq(list(db, &f, &total), "17");

    /* Sorting: by host ascending, ties newest last in the same direction; layers. */
    f = all();
    f.sort = SRV_SORT_HOST;
    f.ascending = 1;
    f.limit = 4;
    ck_assert_str_eq(list(db, &f, &total), "0,3,6,9");
    f.sort = SRV_SORT_LAYERS; /* n_layers = 40 - i */
    f.ascending = 0;
    ck_assert_str_eq(list(db, &f, &total), "0,1,2,3");
    f.sort = SRV_SORT_CREATED;
    f.ascending = 1;
    ck_assert_str_eq(list(db, &f, &total), "0,1,2,3");
    srv_db_close(db);
    dbf_remove(db_path);
}
END_TEST

/* The "against_baseline" object of run i in the list of model m1. */
static json_t *
against(struct srv_db *db, int i)
{
    struct srv_run_filter f = all();
    f.model = "m1";
    json_t *out = NULL;
    struct gd_err err;
    ck_assert_msg(srv_db_runs_list(db, &f, &out, &err) == 0, "%s", err.msg);
    char id[40];
    run_id(i, id);
    json_t *found = NULL, *r;
    size_t k;
    json_array_foreach(json_object_get(out, "runs"), k, r)
        if (strcmp(json_string_value(json_object_get(r, "id")), id) == 0)
            found = json_incref(json_object_get(r, "against_baseline"));
    json_decref(out);
    ck_assert_ptr_nonnull(found);
    return found;
}

START_TEST(baseline_standing)
{
    struct srv_db *db = dbf_open(db_path, sizeof db_path, "check_db_runs_list", 0, 1);
    add_runs(db);
    struct gd_err err;
    /* No baseline: null, and env, knobs and labels come with each run. */
    json_t *a = against(db, 2);
    ck_assert(json_is_null(a));
    json_decref(a);
    struct srv_run_filter f = all();
    f.limit = 1;
    json_t *out = NULL;
    ck_assert_int_eq(srv_db_runs_list(db, &f, &out, &err), 0);
    json_t *r0 = json_array_get(json_object_get(out, "runs"), 0);
    ck_assert_str_eq(json_string_value(json_object_get(json_object_get(r0, "labels"), "team")), "T0");
    ck_assert_str_eq(json_string_value(json_object_get(json_object_get(r0, "env"), "driver")), "560");
    ck_assert(json_is_false(json_object_get(json_object_get(r0, "knobs"), "tf32")));
    ck_assert_str_eq(json_string_value(json_object_get(r0, "device")), "cuda NVIDIA H200");
    json_decref(out);

    char base[40], other[40];
    run_id(0, base);
    exec(db, "INSERT INTO baselines(model_id, run_id, set_at) VALUES (1, "
             "'00000000-0000-4000-8000-000000000000', 0)");
    a = against(db, 0);
    ck_assert_str_eq(json_string_value(json_object_get(a, "state")), "baseline");
    ck_assert_str_eq(json_string_value(json_object_get(a, "baseline")), base);
    json_decref(a);
    a = against(db, 2);
    ck_assert_str_eq(json_string_value(json_object_get(a, "state")), "pending");
    json_decref(a);

    /* Cached with the default key: the last layer's verdict and numbers, the first divergent. */
    struct srv_diff_key key;
    srv_diff_key_default(&key, run_id(2, other), base);
    struct srv_diff_layer_sum layers[2] = {{"x", "divergent", 0.5, 2.0}, {"y", "noise", 1e-6, NAN}};
    struct srv_diff_row row = {"x", 2, layers, "{}", 0.01, 0};
    ck_assert_msg(srv_db_diff_put(db, &key, &row, 5, &err) == 0, "%s", err.msg);
    a = against(db, 2);
    ck_assert_str_eq(json_string_value(json_object_get(a, "state")), "compared");
    ck_assert_str_eq(json_string_value(json_object_get(a, "verdict")), "noise");
    ck_assert_str_eq(json_string_value(json_object_get(a, "first_divergent")), "x");
    ck_assert_double_eq_tol(json_real_value(json_object_get(a, "err")), 1e-6, 1e-18);
    ck_assert(json_is_null(json_object_get(a, "max_abs")));
    json_decref(a);
    /* Another tolerance is another diff: run 4 stays pending. */
    srv_diff_key_default(&key, run_id(4, other), base);
    key.atol = 1e-3;
    ck_assert_int_eq(srv_db_diff_put(db, &key, &row, 5, &err), 0);
    a = against(db, 4);
    ck_assert_str_eq(json_string_value(json_object_get(a, "state")), "pending");
    json_decref(a);
    /* Retention dropped run 6's tensors before a comparison: it can no longer be made. */
    exec(db, "UPDATE runs SET trimmed_at = 9 WHERE id = '00000006-0000-4000-8000-000000000006'");
    a = against(db, 6);
    ck_assert_str_eq(json_string_value(json_object_get(a, "state")), "unavailable");
    json_decref(a);
    srv_db_close(db);
    dbf_remove(db_path);
}
END_TEST

int
main(void)
{
    Suite *s = suite_create("db_runs_list");
    TCase *tc = tcase_create("list");
    tcase_add_test(tc, filters);
    tcase_add_test(tc, baseline_standing);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
