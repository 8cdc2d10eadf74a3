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

/* Takes at now for agent, an offer only; the lease document (a new reference) or NULL. */
static json_t *
offer(struct srv_db *db, const char *agent, int64_t now)
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

/* Takes at now and confirms at once, as serve does: the lease lasts lease_seconds from now. */
static json_t *
take(struct srv_db *db, const char *agent, int64_t now)
{
    json_t *lease = offer(db, agent, now);
    if (lease != NULL) {
        int64_t until = 0;
        int confirmed = 0;
        struct gd_err err;
        ck_assert_msg(srv_db_lease_heartbeat(db, lease_id(lease), now, &until, &confirmed, &err) ==
                          0,
                      "%s", err.msg);
        ck_assert_int_eq(confirmed, 1);
    }
    return lease;
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
    /* the document is an offer: live for the confirm time (10 s by default) */
    ck_assert_str_eq(json_string_value(json_object_get(a, "lease_until")), "1970-01-01T00:16:51Z");
    ck_assert_int_eq(json_integer_value(json_object_get(a, "confirm_seconds")), 10);
    ck_assert_str_eq(json_string_value(json_object_get(b, "lease_until")), "1970-01-01T00:16:51Z");
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
    ck_assert_int_eq(srv_db_lease_heartbeat(db, lease_id(a), 1011, &until, NULL, &err), SRV_ELEASE);
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
    ck_assert_int_eq(srv_db_lease_heartbeat(db, lease_id(a), 1008, &until, NULL, &err), 0);
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
    ck_assert_int_eq(srv_db_lease_heartbeat(db, lease_id(a), 1017, &until, NULL, &err), SRV_ELEASE);
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

/* An offer no heartbeat confirms is withdrawn: pending again, the attempt not counted. */
START_TEST(unconfirmed_offer_is_withdrawn)
{
    struct srv_db *db = fresh();
    char agent[40], job[40];
    struct gd_err err;
    struct srv_fleet_expired ex;
    flf_register(db, "h1", "sm_75", 1000, agent, NULL);
    ck_assert_int_eq(flf_job(db, "{}", 60, 1, 86400, 1000, job), 0);
    json_t *a = offer(db, agent, 1000);
    ck_assert_ptr_nonnull(a);
    check_task(db, job, "h1/cpu", "leased", 1);
    ck_assert_int_eq(srv_db_fleet_expire(db, 1010, &ex, &err), 0);
    ck_assert_int_eq(ex.withdrawn, 0);
    int stale = 0;
    ck_assert_int_eq(srv_db_fleet_stale(db, job, 1011, &stale, &err), 0);
    ck_assert_int_eq(stale, 1);
    ck_assert_int_eq(srv_db_fleet_expire(db, 1011, &ex, &err), 0);
    ck_assert_int_eq(ex.withdrawn, 1);
    ck_assert_int_eq(ex.failed + ex.requeued, 0);
    check_task(db, job, "h1/cpu", "pending", 0);
    int64_t until = 0;
    ck_assert_int_eq(srv_db_lease_heartbeat(db, lease_id(a), 1012, &until, NULL, &err), SRV_ELEASE);
    ck_assert_msg(strstr(err.msg, "withdrawn") != NULL, "%s", err.msg);
    char *outcome = flf_query(db, "SELECT outcome FROM fleet_leases");
    ck_assert_str_eq(outcome, "withdrawn");
    free(outcome);
    /* the one attempt of the job is still there: the next take is attempt 1 again, and a
       heartbeat confirms it for lease_seconds */
    json_t *b = offer(db, agent, 1013);
    ck_assert_ptr_nonnull(b);
    ck_assert_int_eq(json_integer_value(json_object_get(b, "attempt")), 1);
    int confirmed = 0;
    ck_assert_int_eq(srv_db_lease_heartbeat(db, lease_id(b), 1015, &until, &confirmed, &err), 0);
    ck_assert_int_eq(confirmed, 1);
    ck_assert_int_eq(until, 1075);
    ck_assert_int_eq(srv_db_lease_heartbeat(db, lease_id(b), 1016, &until, &confirmed, &err), 0);
    ck_assert_int_eq(confirmed, 0);
    ck_assert_int_eq(srv_db_fleet_expire(db, 1070, &ex, &err), 0);
    ck_assert_int_eq(ex.withdrawn + ex.failed + ex.requeued, 0);
    check_task(db, job, "h1/cpu", "leased", 1);
    json_decref(a);
    json_decref(b);
    srv_db_close(db);
    dbf_remove(db_path);
}
END_TEST

/* A lease given back (a serve that stops) is pending again, its attempt not counted. */
START_TEST(release_gives_the_task_back)
{
    struct srv_db *db = fresh();
    char agent[40], job[40];
    struct gd_err err;
    flf_register(db, "h1", "sm_75", 1000, agent, NULL);
    ck_assert_int_eq(flf_job(db, "{}", 60, 1, 86400, 1000, job), 0);
    json_t *a = take(db, agent, 1000);
    ck_assert_int_eq(srv_db_lease_release(db, lease_id(a), 1005, &err), 0);
    check_task(db, job, "h1/cpu", "pending", 0);
    ck_assert_int_eq(srv_db_lease_release(db, lease_id(a), 1006, &err), SRV_ELEASE);
    ck_assert_msg(strstr(err.msg, "given back") != NULL, "%s", err.msg);
    int64_t until;
    ck_assert_int_eq(srv_db_lease_heartbeat(db, lease_id(a), 1006, &until, NULL, &err), SRV_ELEASE);
    json_t *b = take(db, agent, 1007);
    ck_assert_ptr_nonnull(b);
    ck_assert_int_eq(json_integer_value(json_object_get(b, "attempt")), 1);
    char *n = flf_query(db, "SELECT count(*) FROM fleet_leases WHERE outcome = 'released'");
    ck_assert_str_eq(n, "1");
    free(n);
    json_decref(a);
    json_decref(b);
    srv_db_close(db);
    dbf_remove(db_path);
}
END_TEST

/*
 * A device unseen for the stale time (120 s by default) that holds no lease leaves: its
 * pending tasks end (never_answered; failed after an earlier attempt), with the reason; a
 * device busy with a lease stays, however long ago it was seen; new jobs skip the stale one.
 */
START_TEST(stale_devices_leave_the_targets)
{
    struct srv_db *db = fresh();
    char a1[40], a2[40], a3[40], j0[40], j1[40], j2[40];
    struct gd_err err;
    struct srv_fleet_expired ex;
    flf_register(db, "h1", "sm_75", 1000, a1, NULL);
    flf_register(db, "h2", "sm_86", 1000, a2, NULL);
    flf_register(db, "h3", "v100", 1000, a3, NULL);
    ck_assert_int_eq(flf_job(db, "{\"host\": \"h1\"}", 3600, 1, 86400, 1000, j1), 0);
    ck_assert_int_eq(flf_job(db, "{\"host\": [\"h1\", \"h2\", \"h3\"]}", 10, 2, 86400, 1000, j0),
                     0);
    json_t *l1 = take(db, a1, 1000); /* h1 runs j1 for a long time, no heartbeat due */
    json_t *l3 = take(db, a3, 1000); /* h3's first attempt of j0 expires, then it is gone */
    ck_assert_str_eq(json_string_value(json_object_get(l1, "job_id")), j1);
    ck_assert_int_eq(srv_db_fleet_expire(db, 1011, &ex, &err), 0);
    ck_assert_int_eq(ex.requeued, 1);
    ck_assert_int_eq(srv_db_fleet_expire(db, 1120, &ex, &err), 0);
    ck_assert_int_eq(ex.stale, 0);
    int stale = 0;
    ck_assert_int_eq(srv_db_fleet_stale(db, j0, 1121, &stale, &err), 0);
    ck_assert_int_eq(stale, 1);
    ck_assert_int_eq(srv_db_fleet_expire(db, 1121, &ex, &err), 0);
    ck_assert_int_eq(ex.stale, 2);
    json_t *t2 = task_of(db, j0, "h2/cpu"), *t3 = task_of(db, j0, "h3/cpu");
    ck_assert_str_eq(json_string_value(json_object_get(t2, "state")), "never_answered");
    ck_assert_str_eq(json_string_value(json_object_get(t2, "error")),
                     "device h2/cpu was not seen for 121 s (device-stale-seconds 120): it left "
                     "the job's targets");
    ck_assert_str_eq(json_string_value(json_object_get(t3, "state")), "failed");
    ck_assert_int_eq(json_integer_value(json_object_get(t3, "attempts_used")), 1);
    /* h1 is busy with j1's lease: its j0 task waits, however long ago h1 was seen */
    check_task(db, j0, "h1/cpu", "pending", 0);
    check_task(db, j1, "h1/cpu", "leased", 1);
    json_decref(t2);
    json_decref(t3);
    /* a new job's targets: h1 (busy, seen at 1000) but neither h2 nor h3 */
    ck_assert_int_eq(flf_job(db, "{}", 60, 1, 86400, 1200, j2), 0);
    json_t *doc = NULL;
    ck_assert_int_eq(srv_db_fleet_job_get(db, j2, &doc, &err), 0);
    ck_assert_int_eq(json_array_size(json_object_get(doc, "tasks")), 1);
    json_decref(doc);
    ck_assert_int_eq(flf_job(db, "{\"host\": \"h2\"}", 60, 1, 86400, 1201, j2), SRV_ENODEVICE);
    /* a poll brings h2 back: the next job has it again */
    ck_assert_ptr_null(take(db, a2, 1300));
    ck_assert_int_eq(flf_job(db, "{\"host\": \"h2\"}", 60, 1, 86400, 1301, j2), 0);
    json_decref(l1);
    json_decref(l3);
    srv_db_close(db);
    dbf_remove(db_path);
}
END_TEST

/* DELETE of a device: its lease ends (409 after), its open tasks end, takes skip it, the
 * list leaves it out; its key registered again brings it back with its id. */
START_TEST(removed_device_ends_its_tasks)
{
    struct srv_db *db = fresh();
    char agent[40], dev[40], j1[40], j2[40];
    struct gd_err err;
    flf_register(db, "h1", "sm_75", 1000, agent, dev);
    ck_assert_int_eq(flf_job(db, "{}", 60, 1, 86400, 1000, j1), 0);
    ck_assert_int_eq(flf_job(db, "{}", 60, 1, 86400, 1000, j2), 0);
    json_t *a = take(db, agent, 1000);
    char key[512];
    int64_t ended = 0;
    ck_assert_int_eq(srv_db_device_remove(db, dev, 1010, key, &ended, &err), 0);
    ck_assert_str_eq(key, "h1/cpu");
    ck_assert_int_eq(ended, 1);
    json_t *t1 = task_of(db, j1, "h1/cpu"), *t2 = task_of(db, j2, "h1/cpu");
    ck_assert_str_eq(json_string_value(json_object_get(t1, "state")), "failed");
    ck_assert_str_eq(json_string_value(json_object_get(t2, "state")), "never_answered");
    ck_assert_msg(strstr(json_string_value(json_object_get(t1, "error")), "was removed") != NULL,
                  "%s", json_string_value(json_object_get(t1, "error")));
    int64_t until;
    ck_assert_int_eq(srv_db_lease_heartbeat(db, lease_id(a), 1011, &until, NULL, &err), SRV_ELEASE);
    ck_assert_int_eq(srv_db_device_remove(db, dev, 1012, key, &ended, &err), SRV_ENOTFOUND);
    ck_assert_int_eq(
        srv_db_device_remove(db, "ffffffff-ffff-4fff-8fff-ffffffffffff", 1012, key, &ended, &err),
        SRV_ENOTFOUND);
    json_t *list = NULL;
    ck_assert_int_eq(srv_db_devices_list(db, 1012, &list, &err), 0);
    ck_assert_int_eq(json_array_size(json_object_get(list, "devices")), 0);
    json_decref(list);
    char j3[40];
    ck_assert_int_eq(flf_job(db, "{}", 60, 1, 86400, 1013, j3), SRV_ENODEVICE);
    char d2[40];
    flf_register(db, "h1", "sm_75", 1014, agent, d2);
    ck_assert_str_eq(d2, dev);
    ck_assert_int_eq(flf_job(db, "{}", 60, 1, 86400, 1015, j3), 0);
    json_decref(t1);
    json_decref(t2);
    json_decref(a);
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
    tcase_add_test(tc, unconfirmed_offer_is_withdrawn);
    tcase_add_test(tc, release_gives_the_task_back);
    tcase_add_test(tc, stale_devices_leave_the_targets);
    tcase_add_test(tc, removed_device_ends_its_tasks);
    tcase_set_timeout(tc, 60);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? 0 : 1;
}
