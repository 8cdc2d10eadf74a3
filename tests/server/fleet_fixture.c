/* fleet_fixture.c: devices, files, jobs and runs for the unit tests of jobs and leases. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <check.h>

#include "fleet_fixture.h"
#include "run_doc.h"

const char *const FLF_MODEL = "1111111111111111111111111111111111111111111111111111111111111111";
const char *const FLF_INPUT = "2222222222222222222222222222222222222222222222222222222222222222";

int
flf_register_as(struct srv_db *db, const char *host, const char *key, const char *serve_id,
                int64_t now, char *agent, char *device, struct gd_err *err)
{
    json_t *env = json_pack("{s:s}", "host", host), *labels = json_pack("{s:s}", "gpu", "x");
    struct srv_fleet_device_in d = {key, "cpu", env, labels};
    struct srv_fleet_agent_in a = {host, "0.test", serve_id};
    json_t *out = NULL;
    int rc = srv_db_agent_register(db, &a, &d, 1, now, &out, NULL, err);
    if (rc == 0 && agent != NULL)
        snprintf(agent, 40, "%s", json_string_value(json_object_get(out, "agent_id")));
    if (rc == 0 && device != NULL)
        snprintf(device, 40, "%s",
                 json_string_value(
                     json_object_get(json_array_get(json_object_get(out, "devices"), 0), "id")));
    json_decref(out);
    json_decref(env);
    json_decref(labels);
    return rc;
}

void
flf_serve_id(const char *host, char out[40])
{
    unsigned h = 2166136261u;
    for (const char *p = host; *p; p++)
        h = (h ^ (unsigned char)*p) * 16777619u;
    snprintf(out, 40, "00000000-0000-4000-8000-0000%08x", h);
}

void
flf_register(struct srv_db *db, const char *host, const char *gpu, int64_t now, char *agent,
             char *device)
{
    char key[128], serve[40];
    snprintf(key, sizeof key, "%s/cpu", host);
    flf_serve_id(host, serve);
    json_t *env = json_pack("{s:s}", "host", host), *labels = json_pack("{s:s}", "gpu", gpu);
    struct srv_fleet_device_in d = {key, "cpu", env, labels};
    struct srv_fleet_agent_in a = {host, "0.test", serve};
    json_t *out = NULL;
    struct gd_err err;
    ck_assert_msg(srv_db_agent_register(db, &a, &d, 1, now, &out, NULL, &err) == 0, "%s", err.msg);
    snprintf(agent, 40, "%s", json_string_value(json_object_get(out, "agent_id")));
    if (device != NULL)
        snprintf(device, 40, "%s",
                 json_string_value(json_object_get(
                     json_array_get(json_object_get(out, "devices"), 0), "id")));
    json_decref(out);
    json_decref(env);
    json_decref(labels);
}

void
flf_file(struct srv_db *db, const char *sha256, int64_t bytes)
{
    char sql[512];
    snprintf(sql, sizeof sql,
             "INSERT INTO blobs(sha256, dtype, elem_size, raw_size, stored_size, codec, "
             "created_at, data) VALUES('%s', 'uint8', 1, %lld, 1, 'test', 1, x'00');"
             "INSERT INTO fleet_files(sha256, bytes, created_at) VALUES('%s', %lld, 1)",
             sha256, (long long)bytes, sha256, (long long)bytes);
    ck_assert_int_eq(sqlite3_exec(srv_db_conn(db), sql, 0, 0, 0), SQLITE_OK);
}

void
flf_files(struct srv_db *db)
{
    flf_file(db, FLF_MODEL, 100);
    flf_file(db, FLF_INPUT, 10);
}

int
flf_job(struct srv_db *db, const char *match, int64_t lease_seconds, int64_t attempts,
        int64_t deadline_seconds, int64_t now, char *id)
{
    json_t *files = json_pack("[{s:s,s:s,s:s},{s:s,s:s,s:s}]", "role", "model", "name",
                              "model.onnx", "sha256", FLF_MODEL, "role", "input", "name",
                              "input.npy", "sha256", FLF_INPUT);
    json_t *knobs = json_pack("{s:i}", "batch", 4), *m = json_loads(match, 0, NULL);
    ck_assert_ptr_nonnull(m);
    struct srv_fleet_job_in in = {"lenet", files, knobs, m, lease_seconds, attempts,
                                  deadline_seconds, 0};
    json_t *missing = NULL, *out = NULL;
    struct gd_err err;
    int rc = srv_db_fleet_job_create(db, &in, now, &missing, &out, &err);
    if (rc == 0)
        snprintf(id, 40, "%s", json_string_value(json_object_get(out, "id")));
    json_decref(out);
    json_decref(missing);
    json_decref(files);
    json_decref(knobs);
    json_decref(m);
    return rc;
}

void
flf_run(struct srv_db *db, const char *id, int complete)
{
    char text[1024];
    struct gd_err err;
    struct srv_run_doc doc;
    snprintf(text, sizeof text,
             "{\"format\":\"gpudiff-run\",\"version\":1,\"id\":\"%s\","
             "\"created_at\":\"2026-01-01T00:00:00Z\",\"model\":{\"name\":\"lenet\","
             "\"sha256\":null},\"backend\":\"cpu\",\"layers\":[{\"index\":0,\"name\":\"x\","
             "\"dtype\":\"float32\",\"shape\":[1],\"file\":\"layers/0000-x.npy\","
             "\"sha256\":\"%064d\"}]}",
             id, 0);
    ck_assert_msg(srv_run_doc_parse(text, strlen(text), 1 << 20, &doc, &err) == 0, "%s", err.msg);
    int created = 0;
    ck_assert_msg(srv_db_run_create(db, &doc, 1, &created, &err) == 0, "%s", err.msg);
    srv_run_doc_fini(&doc);
    if (complete) {
        char sql[128];
        snprintf(sql, sizeof sql, "UPDATE runs SET state = 'complete' WHERE id = '%s'", id);
        ck_assert_int_eq(sqlite3_exec(srv_db_conn(db), sql, 0, 0, 0), SQLITE_OK);
    }
}

char *
flf_query(struct srv_db *db, const char *sql)
{
    sqlite3_stmt *st;
    ck_assert_int_eq(sqlite3_prepare_v2(srv_db_conn(db), sql, -1, &st, NULL), SQLITE_OK);
    char *out = strdup(sqlite3_step(st) == SQLITE_ROW && sqlite3_column_text(st, 0)
                           ? (const char *)sqlite3_column_text(st, 0)
                           : "");
    sqlite3_finalize(st);
    ck_assert_ptr_nonnull(out);
    return out;
}
