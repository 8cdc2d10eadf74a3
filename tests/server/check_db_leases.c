/*
 * check_db_leases.c: server/db_leases.c, the life of a task at chosen times: a take hands
 * out one lease per pending task and uses an attempt (the oldest job first); a lease is live
 * up to and including its lease_until, a heartbeat moves that to now + lease_seconds; past
 * it the task is pending again while attempts are left, else failed with the expiry's error
 * (device key, seconds since the last heartbeat, attempt a of n); done needs a complete run;
 * done and fail end the lease (409 lease_lost after), and a finished or failed task is never
 * taken again; a pending task past its job's deadline is never_answered; threads on their
 * own connections taking one task at once get one lease among them.
 */
#include <check.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "db.h"
#include "db_fixture.h"
#include "fleet_fixture.h"

static char db_path[64];
static const char *RUN_OK = "aaaaaaaa-aaaa-4aaa-8aaa-aaaaaaaaaaaa";
static const char *RUN_UP = "bbbbbbbb-bbbb-4bbb-8bbb-bbbbbbbbbbbb";

/* Takes at now for agent; the lease document (a new reference) or NULL. */
static json_t *
take(struct srv_db *db, const char *agent, int64_t now)
{
    json_t *lease = NULL;
    struct srv_fleet_expired ex;
    struct gd_err err;
    ck_assert_msg(srv_db_lease_take(db, agent, now, &lease, &ex, &err) == 0, "%s", err.msg);
    return lease;
}

static const char *
lease_id(json_t *lease)
{
    return json_string_value(json_object_get(lease, "lease_id"));
}

/* Task `key` of the job document of id: a new reference. */
static json_t *
task_of(struct srv_db *db, const char *job, const char *key)
{
    json_t *doc = NULL;
    struct gd_err err;
    ck_assert_msg(srv_db_fleet_job_get(db, job, &doc, &err) == 0, "%s", err.msg);
    size_t i;
    json_t *t, *found = NULL;
    json_array_foreach(json_object_get(doc, "tasks"), i, t) {
        if (strcmp(json_string_value(json_object_get(json_object_get(t, "device"), "key")),
                   key) == 0)
            found = json_incref(t);
    }
    json_decref(doc);
    ck_assert_ptr_nonnull(found);
    return found;
}

static void
check_task(struct srv_db *db, const char *job, const char *key, const char *state, int used)
{
    json_t *t = task_of(db, job, key);
    ck_assert_str_eq(json_string_value(json_object_get(t, "state")), state);
    ck_assert_int_eq(json_integer_value(json_object_get(t, "attempts_used")), used);
    json_decref(t);
}

static struct srv_db *
fresh(void)
{
    struct srv_db *db = dbf_open(db_path, sizeof db_path, "check_db_leases", 0, 1);
    flf_files(db);
    return db;
}

START_TEST(one_lease_per_task_oldest_job_first)
{
    struct srv_db *db = fresh();
    char agent[40], j1[40], j2[40];
    flf_register(db, "h1", "sm_75", 1000, agent, NULL);
    ck_assert_int_eq(flf_job(db, "{}", 10, 1, 86400, 1000, j1), 0);
    ck_assert_int_eq(flf_job(db, "{}", 20, 1, 86400, 1000, j2), 0);
    json_t *a = take(db, agent, 1001), *b = take(db, agent, 1001);
    ck_assert_ptr_nonnull(a);
    ck_assert_ptr_nonnull(b);
    ck_assert_str_eq(json_string_value(json_object_get(a, "job_id")), j1);
    ck_assert_str_eq(json_string_value(json_object_get(b, "job_id")), j2);
    ck_assert_str_eq(json_string_value(json_object_get(a, "lease_until")), "1970-01-01T00:16:51Z");
    ck_assert_int_eq(json_integer_value(json_object_get(a, "attempt")), 1);
    ck_assert_str_eq(json_string_value(json_object_get(a, "device_key")), "h1/cpu");
    ck_assert_ptr_null(take(db, agent, 1002));
    check_task(db, j1, "h1/cpu", "leased", 1);
    json_decref(a);
    json_decref(b);
    srv_db_close(db);
    dbf_remove(db_path);
}
END_TEST

START_TEST(expiry_requeues_then_fails)
{
    struct srv_db *db = fresh();
    char agent[40], job[40];
    struct gd_err err;
    struct srv_fleet_expired ex;
    flf_register(db, "h1", "sm_75", 1000, agent, NULL);
    ck_assert_int_eq(flf_job(db, "{}", 10, 2, 86400, 1000, job), 0);
    json_t *a = take(db, agent, 1000);
    /* live up to and including lease_until (1010) */
    ck_assert_int_eq(srv_db_fleet_expire(db, 1010, &ex, &err), 0);
    ck_assert_int_eq(ex.requeued + ex.failed, 0);
    int stale = 0;
    ck_assert_int_eq(srv_db_fleet_stale(db, job, 1011, &stale, &err), 0);
    ck_assert_int_eq(stale, 1);
    ck_assert_int_eq(srv_db_fleet_expire(db, 1011, &ex, &err), 0);
    ck_assert_int_eq(ex.requeued, 1);
    check_task(db, job, "h1/cpu", "pending", 1);
    int64_t until;
    ck_assert_int_eq(srv_db_lease_heartbeat(db, lease_id(a), 1011, &until, &err), SRV_ELEASE);
    json_t *b = take(db, agent, 1011);
    ck_assert_ptr_nonnull(b);
    ck_assert_int_eq(json_integer_value(json_object_get(b, "attempt")), 2);
    /* attempt 2 expires too; the last heartbeat (the take) was 19 s before */
    ck_assert_int_eq(srv_db_fleet_expire(db, 1030, &ex, &err), 0);
    ck_assert_int_eq(ex.failed, 1);
    json_t *t = task_of(db, job, "h1/cpu");
    ck_assert_str_eq(json_string_value(json_object_get(t, "state")), "failed");
    ck_assert_str_eq(json_string_value(json_object_get(t, "error")),
                     "lease expired: no heartbeat from h1/cpu for 19 s (attempt 2 of 2)");
    ck_assert_ptr_null(take(db, agent, 1031));
    ck_assert_int_eq(srv_db_fleet_stale(db, job, 5000, &stale, &err), 0);
    ck_assert_int_eq(stale, 0);
    json_decref(t);
    json_decref(a);
    json_decref(b);
    srv_db_close(db);
    dbf_remove(db_path);
}
END_TEST

START_TEST(heartbeat_then_done)
{
    struct srv_db *db = fresh();
    char agent[40], job[40];
    struct gd_err err;
    struct srv_fleet_expired ex;
    flf_register(db, "h1", "sm_75", 1000, agent, NULL);
    flf_run(db, RUN_OK, 1);
    flf_run(db, RUN_UP, 0);
    ck_assert_int_eq(flf_job(db, "{}", 10, 1, 86400, 1000, job), 0);
    json_t *a = take(db, agent, 1000);
    int64_t until = 0;
    ck_assert_int_eq(srv_db_lease_heartbeat(db, lease_id(a), 1008, &until, &err), 0);
    ck_assert_int_eq(until, 1018);
    ck_assert_int_eq(srv_db_fleet_expire(db, 1015, &ex, &err), 0);
    ck_assert_int_eq(ex.requeued + ex.failed, 0);
    /* a run still uploading, or none, is refused; the lease stays */
    ck_assert_int_eq(srv_db_lease_done(db, lease_id(a), RUN_UP, 1016, &err), SRV_EBADREQ);
    ck_assert_int_eq(srv_db_lease_done(db, lease_id(a), "cccccccc-cccc-4ccc-8ccc-cccccccccccc",
                                       1016, &err),
                     SRV_EBADREQ);
    ck_assert_int_eq(srv_db_lease_done(db, lease_id(a), RUN_OK, 1017, &err), 0);
    json_t *t = task_of(db, job, "h1/cpu");
    ck_assert_str_eq(json_string_value(json_object_get(t, "state")), "finished");
    ck_assert_str_eq(json_string_value(json_object_get(t, "run_id")), RUN_OK);
    ck_assert(json_is_null(json_object_get(t, "lease_until")));
    ck_assert_int_eq(srv_db_lease_done(db, lease_id(a), RUN_OK, 1017, &err), SRV_ELEASE);
    ck_assert_int_eq(srv_db_lease_heartbeat(db, lease_id(a), 1017, &until, &err), SRV_ELEASE);
    ck_assert_ptr_null(take(db, agent, 1018));
    char *outcome = flf_query(db, "SELECT outcome FROM fleet_leases");
    ck_assert_str_eq(outcome, "finished");
    free(outcome);
    json_decref(t);
    json_decref(a);
    srv_db_close(db);
    dbf_remove(db_path);
}
END_TEST

START_TEST(fail_is_final)
{
    struct srv_db *db = fresh();
    char agent[40], job[40];
    struct gd_err err;
    flf_register(db, "h1", "sm_75", 1000, agent, NULL);
    ck_assert_int_eq(flf_job(db, "{}", 10, 3, 86400, 1000, job), 0);
    json_t *a = take(db, agent, 1000);
    ck_assert_int_eq(srv_db_lease_fail(db, lease_id(a), "exit 3: no such op", 3, 1001, &err), 0);
    json_t *t = task_of(db, job, "h1/cpu");
    ck_assert_str_eq(json_string_value(json_object_get(t, "state")), "failed");
    ck_assert_str_eq(json_string_value(json_object_get(t, "error")), "exit 3: no such op");
    char *code = flf_query(db, "SELECT exit_code FROM fleet_tasks");
    ck_assert_str_eq(code, "3");
    free(code);
    /* attempts were left: a failure is the agent's answer, not retried */
    ck_assert_ptr_null(take(db, agent, 1002));
    ck_assert_int_eq(srv_db_lease_fail(db, lease_id(a), "again", 3, 1002, &err), SRV_ELEASE);
    ck_assert_int_eq(srv_db_lease_fail(db, "dddddddd-dddd-4ddd-8ddd-dddddddddddd", "x", 1, 1002,
                                       &err),
                     SRV_ELEASE);
    json_decref(t);
    json_decref(a);
    srv_db_close(db);
    dbf_remove(db_path);
}
END_TEST

START_TEST(deadline_never_answered)
{
    struct srv_db *db = fresh();
    char a1[40], a2[40], job[40];
    struct gd_err err;
    struct srv_fleet_expired ex;
    flf_register(db, "h1", "sm_75", 1000, a1, NULL);
    flf_register(db, "h2", "sm_86", 1000, a2, NULL);
    ck_assert_int_eq(flf_job(db, "{}", 3600, 1, 100, 1000, job), 0);
    json_t *a = take(db, a1, 1050);
    ck_assert_int_eq(srv_db_fleet_expire(db, 1099, &ex, &err), 0);
    ck_assert_int_eq(ex.never_answered, 0);
    ck_assert_int_eq(srv_db_fleet_expire(db, 1100, &ex, &err), 0);
    ck_assert_int_eq(ex.never_answered, 1);
    check_task(db, job, "h2/cpu", "never_answered", 0);
    check_task(db, job, "h1/cpu", "leased", 1); /* a live lease may still finish */
    ck_assert_ptr_null(take(db, a2, 1101));
    json_decref(a);
    srv_db_close(db);
    dbf_remove(db_path);
}
END_TEST

START_TEST(ready_and_unknown_agents)
{
    struct srv_db *db = fresh();
    char agent[40], job[40];
    struct gd_err err;
    int ready = -1;
    flf_register(db, "h1", "sm_75", 1000, agent, NULL);
    ck_assert_int_eq(srv_db_lease_ready(db, agent, 1000, &ready, &err), 0);
    ck_assert_int_eq(ready, 0);
    ck_assert_int_eq(flf_job(db, "{}", 10, 1, 86400, 1000, job), 0);
    ck_assert_int_eq(srv_db_lease_ready(db, agent, 1000, &ready, &err), 0);
    ck_assert_int_eq(ready, 1);
    const char *nobody = "eeeeeeee-eeee-4eee-8eee-eeeeeeeeeeee";
    ck_assert_int_eq(srv_db_lease_ready(db, nobody, 1000, &ready, &err), SRV_ENOTFOUND);
    json_t *lease = NULL;
    struct srv_fleet_expired ex;
    ck_assert_int_eq(srv_db_lease_take(db, nobody, 1000, &lease, &ex, &err), SRV_ENOTFOUND);
    /* a poll is a heartbeat of the agent's devices */
    ck_assert_ptr_nonnull(lease = take(db, agent, 1500));
    char *seen = flf_query(db, "SELECT last_seen FROM fleet_devices");
    ck_assert_str_eq(seen, "1500");
    free(seen);
    json_decref(lease);
    srv_db_close(db);
    dbf_remove(db_path);
}
END_TEST

/* Threads on their own connections take at once; the agent has one task. */
struct racer {
    const char *agent;
    int got;
};

static void *
race(void *arg)
{
    struct racer *r = arg;
    struct srv_db_opts opts = {.busy_timeout_ms = 10000};
    struct srv_db *db = NULL;
    struct gd_err err;
    ck_assert_msg(srv_db_open(db_path, &opts, &db, &err) == 0, "%s", err.msg);
    json_t *lease = NULL;
    struct srv_fleet_expired ex;
    int rc = srv_db_lease_take(db, r->agent, 2000, &lease, &ex, &err);
    ck_assert_msg(rc == 0, "%s", err.msg);
    r->got = lease != NULL;
    json_decref(lease);
    srv_db_close(db);
    return NULL;
}

START_TEST(one_task_one_lease_among_connections)
{
    struct srv_db *db = fresh();
    char agent[40], job[40];
    flf_register(db, "h1", "sm_75", 1990, agent, NULL);
    ck_assert_int_eq(flf_job(db, "{}", 10, 5, 86400, 1990, job), 0);
    enum { N = 6 };
    pthread_t th[N];
    struct racer r[N];
    for (int i = 0; i < N; i++) {
        r[i] = (struct racer){agent, 0};
        ck_assert_int_eq(pthread_create(&th[i], NULL, race, &r[i]), 0);
    }
    int leases = 0;
    for (int i = 0; i < N; i++) {
        pthread_join(th[i], NULL);
        leases += r[i].got;
    }
    ck_assert_int_eq(leases, 1);
    char *n = flf_query(db, "SELECT count(*) FROM fleet_leases");
    ck_assert_str_eq(n, "1");
    free(n);
    check_task(db, job, "h1/cpu", "leased", 1);
    srv_db_close(db);
    dbf_remove(db_path);
}
END_TEST

int
main(void)
{
    Suite *s = suite_create("db_leases");
    TCase *tc = tcase_create("leases");
    tcase_add_test(tc, one_lease_per_task_oldest_job_first);
    tcase_add_test(tc, expiry_requeues_then_fails);
    tcase_add_test(tc, heartbeat_then_done);
    tcase_add_test(tc, fail_is_final);
    tcase_add_test(tc, deadline_never_answered);
    tcase_add_test(tc, ready_and_unknown_agents);
    tcase_add_test(tc, one_task_one_lease_among_connections);
    tcase_set_timeout(tc, 60);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? 0 : 1;
}
