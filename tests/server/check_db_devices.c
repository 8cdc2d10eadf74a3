/*
 * check_db_devices.c: server/db_devices.c: a registration makes an agent and its devices; a
 * key registered again (serve restarted) keeps its device id and takes the new env, labels,
 * agent and last_seen, keeping its first registration time; the list is newest first, each
 * device with its agent and last heartbeat. The device follows its newest agent: a poll of
 * the old agent no longer gets its tasks. A key registered by another serve while its device
 * is live is refused (naming both agents), recording nothing; once the device is stale, or
 * by the same serve (a restart, whose lost leases end), it is taken over.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "db.h"
#include "db_fixture.h"
#include "fleet_fixture.h"

static char db_path[64];

START_TEST(register_again_keeps_the_device)
{
    struct srv_db *db = dbf_open(db_path, sizeof db_path, "check_db_devices", 0, 1);
    struct gd_err err;
    char a1[40], d1[40], a2[40], d2[40], b[40], job[40];
    flf_files(db);
    flf_register(db, "h1", "sm_75", 1000, a1, d1);
    flf_register(db, "h2", "sm_86", 1001, b, NULL);
    flf_register(db, "h1", "sm_80", 1002, a2, d2);
    ck_assert_str_ne(a1, a2);
    ck_assert_str_eq(d1, d2);
    json_t *out = NULL;
    ck_assert_int_eq(srv_db_devices_list(db, 1003, &out, &err), 0);
    json_t *devs = json_object_get(out, "devices");
    ck_assert_int_eq(json_array_size(devs), 2);
    json_t *h2 = json_array_get(devs, 0), *h1 = json_array_get(devs, 1);
    ck_assert_str_eq(json_string_value(json_object_get(h2, "key")), "h2/cpu");
    ck_assert_str_eq(json_string_value(json_object_get(h1, "id")), d1);
    ck_assert_str_eq(json_string_value(json_object_get(json_object_get(h1, "labels"), "gpu")),
                     "sm_80");
    ck_assert_str_eq(json_string_value(json_object_get(json_object_get(h1, "env"), "host")), "h1");
    ck_assert_str_eq(json_string_value(json_object_get(h1, "registered")), "1970-01-01T00:16:40Z");
    ck_assert_str_eq(json_string_value(json_object_get(h1, "last_seen")), "1970-01-01T00:16:42Z");
    ck_assert_str_eq(json_string_value(json_object_get(h1, "backend")), "cpu");
    json_t *agent = json_object_get(h1, "agent");
    ck_assert_str_eq(json_string_value(json_object_get(agent, "id")), a2);
    ck_assert_str_eq(json_string_value(json_object_get(agent, "host")), "h1");
    char serve[40];
    flf_serve_id("h1", serve);
    ck_assert_str_eq(json_string_value(json_object_get(agent, "serve_id")), serve);
    ck_assert_str_eq(json_string_value(json_object_get(agent, "last_seen")),
                     "1970-01-01T00:16:42Z");
    ck_assert_str_eq(json_string_value(json_object_get(h1, "state")), "live");
    ck_assert_int_eq(json_integer_value(json_object_get(h1, "seen_seconds_ago")), 1);
    ck_assert_int_eq(json_integer_value(json_object_get(out, "stale_seconds")), 120);
    json_decref(out);
    /* the device's tasks go to its newest agent */
    ck_assert_int_eq(flf_job(db, "{\"host\": \"h1\"}", 60, 1, 3600, 1003, job), 0);
    json_t *lease = NULL;
    struct srv_fleet_expired ex;
    ck_assert_int_eq(srv_db_lease_take(db, a1, 1004, &lease, &ex, &err), 0);
    ck_assert_ptr_null(lease);
    ck_assert_int_eq(srv_db_lease_take(db, a2, 1004, &lease, &ex, &err), 0);
    ck_assert_ptr_nonnull(lease);
    json_decref(lease);
    srv_db_close(db);
    dbf_remove(db_path);
}
END_TEST

static const char *SERVE_A = "aaaaaaaa-0000-4000-8000-000000000001";
static const char *SERVE_B = "bbbbbbbb-0000-4000-8000-000000000002";

START_TEST(a_live_key_of_another_serve_is_refused)
{
    struct srv_db *db = dbf_open(db_path, sizeof db_path, "check_db_devices", 0, 1);
    struct gd_err err;
    char a1[40], d1[40], a2[40], d2[40], job[40];
    flf_files(db);
    ck_assert_int_eq(flf_register_as(db, "host-a", "gpu0", SERVE_A, 1000, a1, d1, &err), 0);
    /* another serve, on another host, asks for the same key while host-a's device is live */
    ck_assert_int_eq(flf_register_as(db, "host-b", "gpu0", SERVE_B, 1100, a2, d2, &err),
                     SRV_ECONFLICT);
    ck_assert_str_eq(err.msg, "device \"gpu0\" is held by host-a (serve aaaaaaaa, seen 100 s "
                              "ago), not host-b (serve bbbbbbbb): use another --device-id, stop "
                              "the other serve or DELETE the device");
    char *n = flf_query(db, "SELECT count(*) FROM fleet_agents");
    ck_assert_str_eq(n, "1");
    free(n);
    /* an agent without a serve_id (an older serve) is another serve too */
    ck_assert_int_eq(flf_register_as(db, "host-a", "gpu0", NULL, 1100, a2, d2, &err),
                     SRV_ECONFLICT);
    /* the same serve again is a restart: its lease of the device is lost, pending again */
    ck_assert_int_eq(flf_job(db, "{}", 60, 2, 86400, 1100, job), 0);
    json_t *lease = NULL;
    struct srv_fleet_expired ex;
    ck_assert_int_eq(srv_db_lease_take(db, a1, 1101, &lease, &ex, &err), 0);
    ck_assert_ptr_nonnull(lease);
    int64_t until;
    ck_assert_int_eq(srv_db_lease_heartbeat(db,
                                            json_string_value(json_object_get(lease, "lease_id")),
                                            1101, &until, NULL, &err),
                     0);
    ck_assert_int_eq(flf_register_as(db, "host-a", "gpu0", SERVE_A, 1102, a2, d2, &err), 0);
    ck_assert_str_eq(d2, d1);
    char *state = flf_query(db, "SELECT state || ' ' || attempts_used FROM fleet_tasks");
    ck_assert_str_eq(state, "pending 1");
    free(state);
    char *outcome = flf_query(db, "SELECT outcome FROM fleet_leases");
    ck_assert_str_eq(outcome, "expired");
    free(outcome);
    json_decref(lease);
    /* stale (120 s unseen, no lease): another serve may take the key over */
    ck_assert_int_eq(flf_register_as(db, "host-b", "gpu0", SERVE_B, 1222, a2, d2, &err),
                     SRV_ECONFLICT);
    ck_assert_int_eq(flf_register_as(db, "host-b", "gpu0", SERVE_B, 1223, a2, d2, &err), 0);
    ck_assert_str_eq(d2, d1);
    srv_db_close(db);
    dbf_remove(db_path);
}
END_TEST

int
main(void)
{
    Suite *s = suite_create("db_devices");
    TCase *tc = tcase_create("devices");
    tcase_add_test(tc, register_again_keeps_the_device);
    tcase_add_test(tc, a_live_key_of_another_serve_is_refused);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? 0 : 1;
}
