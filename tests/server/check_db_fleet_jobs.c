/*
 * check_db_fleet_jobs.c: server/db_fleet_jobs.c: match keys (backend, host, key, env.<field>
 * with numbers as their JSON text, labels.<name>; a string or any of an array; {} matches
 * all); a job's targets are the matching devices seen in the last 10 minutes, fixed at
 * submission; no target is SRV_ENODEVICE, a file not recorded SRV_EMISSING naming each
 * lacking hash once, and neither stores anything; the job document's fields and counts;
 * the list newest first.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "db.h"
#include "db_fixture.h"
#include "fleet_fixture.h"

static char db_path[64];

static int
matches(const char *match, const char *key, const char *host, const char *backend,
        const char *env, const char *labels)
{
    json_t *m = json_loads(match, 0, NULL), *e = json_loads(env, 0, NULL);
    json_t *l = json_loads(labels, 0, NULL);
    ck_assert(m != NULL && e != NULL && l != NULL);
    int r = srv_fleet_match(m, key, host, backend, e, l);
    json_decref(m);
    json_decref(e);
    json_decref(l);
    return r;
}

START_TEST(match_keys)
{
    const char *env = "{\"gpu_name\": \"NVIDIA T4\", \"compute_capability\": 7.5, \"sm\": 75}";
    const char *labels = "{\"gpu\": \"sm_75\", \"site\": \"a\"}";
#define M(match) matches(match, "h1/cuda:0", "h1", "cuda", env, labels)
    ck_assert_int_eq(M("{}"), 1);
    ck_assert_int_eq(M("{\"backend\": \"cuda\"}"), 1);
    ck_assert_int_eq(M("{\"backend\": \"cpu\"}"), 0);
    ck_assert_int_eq(M("{\"backend\": [\"cpu\", \"cuda\"], \"host\": \"h1\"}"), 1);
    ck_assert_int_eq(M("{\"backend\": \"cuda\", \"host\": \"h2\"}"), 0);
    ck_assert_int_eq(M("{\"key\": \"h1/cuda:0\"}"), 1);
    ck_assert_int_eq(M("{\"env.gpu_name\": \"NVIDIA T4\"}"), 1);
    ck_assert_int_eq(M("{\"env.compute_capability\": \"7.5\"}"), 1);
    ck_assert_int_eq(M("{\"env.sm\": [\"70\", \"75\"]}"), 1);
    ck_assert_int_eq(M("{\"env.driver\": \"1\"}"), 0); /* not recorded: no match */
    ck_assert_int_eq(M("{\"labels.gpu\": [\"sm_86\", \"sm_75\"], \"labels.site\": \"a\"}"), 1);
    ck_assert_int_eq(M("{\"labels.gpu\": \"sm_86\"}"), 0);
    ck_assert_int_eq(M("{\"labels.rack\": \"1\"}"), 0);
#undef M
}
END_TEST

START_TEST(targets_fixed_at_submission)
{
    struct srv_db *db = dbf_open(db_path, sizeof db_path, "check_db_fleet_jobs", 0, 1);
    struct gd_err err;
    char a1[40], a2[40], a3[40], job[40];
    flf_files(db);
    flf_register(db, "h1", "sm_75", 10000, a1, NULL);
    flf_register(db, "h2", "sm_86", 10000, a2, NULL);
    flf_register(db, "h3", "v100", 9399, a3, NULL); /* seen 601 s before the job */
    ck_assert_int_eq(flf_job(db, "{\"labels.gpu\": [\"sm_75\", \"v100\"]}", 60, 2, 3600, 10000, job),
                     0);
    json_t *doc = NULL;
    ck_assert_int_eq(srv_db_fleet_job_get(db, job, &doc, &err), 0);
    ck_assert_int_eq(json_array_size(json_object_get(doc, "tasks")), 1);
    json_t *t = json_array_get(json_object_get(doc, "tasks"), 0);
    ck_assert_str_eq(json_string_value(json_object_get(json_object_get(t, "device"), "key")),
                     "h1/cpu");
    ck_assert_str_eq(json_string_value(json_object_get(json_object_get(
                         json_object_get(t, "device"), "labels"), "gpu")),
                     "sm_75");
    ck_assert_str_eq(json_string_value(json_object_get(t, "state")), "pending");
    ck_assert(json_is_null(json_object_get(t, "run_id")) && json_is_null(json_object_get(t, "error")));
    ck_assert_str_eq(json_string_value(json_object_get(doc, "state")), "running");
    ck_assert_str_eq(json_string_value(json_object_get(doc, "created")), "1970-01-01T02:46:40Z");
    ck_assert_str_eq(json_string_value(json_object_get(doc, "deadline")), "1970-01-01T03:46:40Z");
    ck_assert_int_eq(json_integer_value(json_object_get(doc, "lease_seconds")), 60);
    ck_assert_int_eq(json_integer_value(json_object_get(doc, "attempts")), 2);
    ck_assert_int_eq(json_integer_value(json_object_get(json_object_get(doc, "knobs"), "batch")), 4);
    ck_assert_int_eq(json_integer_value(json_object_get(json_object_get(doc, "counts"), "pending")),
                     1);
    ck_assert_int_eq(json_array_size(json_object_get(doc, "files")), 2);
    json_decref(doc);
    /* h3 registers again later: the job's targets stay as they were */
    flf_register(db, "h3", "v100", 10001, a3, NULL);
    ck_assert_int_eq(srv_db_fleet_job_get(db, job, &doc, &err), 0);
    ck_assert_int_eq(json_array_size(json_object_get(doc, "tasks")), 1);
    json_decref(doc);
    srv_db_close(db);
    dbf_remove(db_path);
}
END_TEST

START_TEST(refused_jobs_store_nothing)
{
    struct srv_db *db = dbf_open(db_path, sizeof db_path, "check_db_fleet_jobs", 0, 1);
    char a1[40], job[40];
    flf_register(db, "h1", "sm_75", 10000, a1, NULL);
    ck_assert_int_eq(flf_job(db, "{}", 60, 1, 3600, 10000, job), SRV_EMISSING);
    flf_file(db, FLF_MODEL, 100);
    /* the missing list names the input only, once */
    json_t *files = json_pack("[{s:s,s:s,s:s},{s:s,s:s,s:s},{s:s,s:s,s:s}]", "role", "model",
                              "name", "m", "sha256", FLF_MODEL, "role", "input", "name", "i",
                              "sha256", FLF_INPUT, "role", "data", "name", "d", "sha256",
                              FLF_INPUT);
    json_t *empty = json_object();
    struct srv_fleet_job_in in = {"lenet", files, empty, empty, 60, 1, 3600, 0};
    json_t *missing = NULL, *out = NULL;
    struct gd_err err;
    ck_assert_int_eq(srv_db_fleet_job_create(db, &in, 10000, &missing, &out, &err), SRV_EMISSING);
    ck_assert_int_eq(json_array_size(missing), 1);
    ck_assert_str_eq(json_string_value(json_array_get(missing, 0)), FLF_INPUT);
    json_decref(missing);
    flf_file(db, FLF_INPUT, 10);
    ck_assert_int_eq(flf_job(db, "{\"backend\": \"cuda\"}", 60, 1, 3600, 10000, job),
                     SRV_ENODEVICE);
    ck_assert_int_eq(flf_job(db, "{}", 60, 1, 3600, 10601, job), SRV_ENODEVICE); /* not seen */
    char *n = flf_query(db, "SELECT (SELECT count(*) FROM fleet_jobs) + "
                            "(SELECT count(*) FROM fleet_tasks)");
    ck_assert_str_eq(n, "0");
    free(n);
    json_decref(files);
    json_decref(empty);
    srv_db_close(db);
    dbf_remove(db_path);
}
END_TEST

START_TEST(list_newest_first)
{
    struct srv_db *db = dbf_open(db_path, sizeof db_path, "check_db_fleet_jobs", 0, 1);
    char a1[40], j[3][40];
    struct gd_err err;
    flf_files(db);
    flf_register(db, "h1", "sm_75", 10000, a1, NULL);
    ck_assert_int_eq(flf_job(db, "{}", 60, 1, 3600, 10000, j[0]), 0);
    ck_assert_int_eq(flf_job(db, "{}", 60, 1, 3600, 10000, j[1]), 0); /* the same second */
    ck_assert_int_eq(flf_job(db, "{}", 60, 1, 3600, 10001, j[2]), 0);
    json_t *out = NULL;
    ck_assert_int_eq(srv_db_fleet_jobs_list(db, 2, &out, &err), 0);
    json_t *jobs = json_object_get(out, "jobs");
    ck_assert_int_eq(json_array_size(jobs), 2);
    ck_assert_str_eq(json_string_value(json_object_get(json_array_get(jobs, 0), "id")), j[2]);
    ck_assert_str_eq(json_string_value(json_object_get(json_array_get(jobs, 1), "id")), j[1]);
    json_decref(out);
    ck_assert_int_eq(srv_db_fleet_job_get(db, "ffffffff-ffff-4fff-8fff-ffffffffffff", &out, &err),
                     SRV_ENOTFOUND);
    srv_db_close(db);
    dbf_remove(db_path);
}
END_TEST

int
main(void)
{
    Suite *s = suite_create("db_fleet_jobs");
    TCase *tc = tcase_create("jobs");
    tcase_add_test(tc, match_keys);
    tcase_add_test(tc, targets_fixed_at_submission);
    tcase_add_test(tc, refused_jobs_store_nothing);
    tcase_add_test(tc, list_newest_first);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? 0 : 1;
}
