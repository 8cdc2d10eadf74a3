/*
 * db_devices.c: fleet_agents and fleet_devices (migration 011): what `gpudiff-agent serve`
 * registers. A device is its key, stable across restarts of serve: registering it again
 * keeps its id (and its tasks) and takes the new env, labels and agent.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpudiff/uuid.h"
#include "db.h"

static const char SQL_AGENT_ADD[] =
    "INSERT INTO fleet_agents(id, host, agent_version, registered_at, last_seen) "
    "VALUES(?1, ?2, ?3, ?4, ?4)";
static const char SQL_DEVICE_ID[] = "SELECT id FROM fleet_devices WHERE key = ?1";
static const char SQL_DEVICE_UPDATE[] =
    "UPDATE fleet_devices SET agent_id = ?2, host = ?3, backend = ?4, env = ?5, labels = ?6, "
    "last_seen = ?7 WHERE id = ?1";
static const char SQL_DEVICE_ADD[] =
    "INSERT INTO fleet_devices(id, key, agent_id, host, backend, env, labels, registered_at, "
    "last_seen) VALUES(?1, ?8, ?2, ?3, ?4, ?5, ?6, ?7, ?7)";
static const char SQL_DEVICES_LIST[] =
    "SELECT id, key, host, backend, labels, env, registered_at, last_seen FROM fleet_devices "
    "ORDER BY registered_at DESC, key";

/* The stored text of a JSON object: compact, keys sorted. */
static char *
json_text(json_t *v)
{
    return json_dumps(v, JSON_COMPACT | JSON_SORT_KEYS);
}

static int
device_put(struct srv_db *db, const char *agent_id, const char *host,
           const struct srv_fleet_device_in *d, int64_t now, char id[40], struct gd_err *err)
{
    struct srv_stmt *st;
    int rc = srv_db_prepare(db, SQL_DEVICE_ID, &st, err);
    if (rc != 0)
        return rc;
    srv_stmt_bind_text(st, 1, d->key);
    int s = srv_stmt_step(st, "device lookup", err);
    if (s == SRV_SQL_ROW)
        snprintf(id, 40, "%s", srv_stmt_text(st, 0));
    srv_stmt_done(st);
    if (s < 0)
        return s;
    int known = s == SRV_SQL_ROW;
    if (!known && (rc = gd_uuid_v4(id, err)) != 0)
        return rc;
    char *env = json_text(d->env), *labels = json_text(d->labels);
    if (env == NULL || labels == NULL) {
        free(env);
        free(labels);
        return gd_err_set(err, GD_ENOMEM, "out of memory");
    }
    rc = srv_db_prepare(db, known ? SQL_DEVICE_UPDATE : SQL_DEVICE_ADD, &st, err);
    if (rc == 0) {
        srv_stmt_bind_text(st, 1, id);
        srv_stmt_bind_text(st, 2, agent_id);
        srv_stmt_bind_text(st, 3, host);
        srv_stmt_bind_text(st, 4, d->backend);
        srv_stmt_bind_text(st, 5, env);
        srv_stmt_bind_text(st, 6, labels);
        srv_stmt_bind_int64(st, 7, now);
        if (!known)
            srv_stmt_bind_text(st, 8, d->key);
        rc = srv_stmt_exec(st, known ? "device update" : "device insert", err);
    }
    free(env);
    free(labels);
    return rc;
}

int
srv_db_agent_register(struct srv_db *db, const char *host, const char *version,
                      const struct srv_fleet_device_in *devices, int n, int64_t now,
                      json_t **out, struct gd_err *err)
{
    char agent_id[40];
    struct srv_stmt *st;
    json_t *list = json_array();
    int rc = list != NULL ? gd_uuid_v4(agent_id, err) : gd_err_set(err, GD_ENOMEM, "out of memory");
    if (rc == 0)
        rc = srv_db_begin(db, err);
    if (rc == 0)
        rc = srv_db_prepare(db, SQL_AGENT_ADD, &st, err);
    if (rc == 0) {
        srv_stmt_bind_text(st, 1, agent_id);
        srv_stmt_bind_text(st, 2, host);
        srv_stmt_bind_text(st, 3, version);
        srv_stmt_bind_int64(st, 4, now);
        rc = srv_stmt_exec(st, "agent insert", err);
    }
    for (int i = 0; rc == 0 && i < n; i++) {
        char id[40];
        rc = device_put(db, agent_id, host, &devices[i], now, id, err);
        if (rc == 0 &&
            json_array_append_new(list, json_pack("{s:s,s:s}", "key", devices[i].key, "id", id)))
            rc = gd_err_set(err, GD_ENOMEM, "out of memory");
    }
    if (rc == 0)
        rc = srv_db_commit(db, err);
    srv_db_rollback(db);
    if (rc != 0) {
        json_decref(list);
        return rc;
    }
    *out = json_pack("{s:s,s:o}", "agent_id", agent_id, "devices", list);
    return *out != NULL ? 0 : gd_err_set(err, GD_ENOMEM, "out of memory");
}

/* A stored JSON object (written by this file), or {} if it cannot be read. */
json_t *
srv__fleet_json(const char *text)
{
    json_t *v = json_loads(text, 0, NULL);
    return v != NULL ? v : json_object();
}

int
srv_db_devices_list(struct srv_db *db, json_t **out, struct gd_err *err)
{
    struct srv_stmt *st;
    int rc = srv_db_prepare(db, SQL_DEVICES_LIST, &st, err);
    if (rc != 0)
        return rc;
    json_t *list = json_array();
    int s;
    while ((s = srv_stmt_step(st, "devices lookup", err)) == SRV_SQL_ROW) {
        char reg[32], seen[32];
        srv_time_format(srv_stmt_int64(st, 6), reg);
        srv_time_format(srv_stmt_int64(st, 7), seen);
        json_array_append_new(
            list, json_pack("{s:s,s:s,s:s,s:s,s:o,s:o,s:s,s:s}", "id", srv_stmt_text(st, 0),
                            "key", srv_stmt_text(st, 1), "host", srv_stmt_text(st, 2), "backend",
                            srv_stmt_text(st, 3), "labels", srv__fleet_json(srv_stmt_text(st, 4)),
                            "env", srv__fleet_json(srv_stmt_text(st, 5)), "registered", reg,
                            "last_seen", seen));
    }
    srv_stmt_done(st);
    if (s != SRV_SQL_DONE) {
        json_decref(list);
        return s;
    }
    *out = json_pack("{s:o}", "devices", list);
    return 0;
}
