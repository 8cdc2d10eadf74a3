/*
 * db_devices.c: fleet_agents and fleet_devices (migrations 011, 012): what `gpudiff-agent
 * serve` registers. A device is its key, stable across restarts of serve: registering it
 * again keeps its id (and its tasks) and takes the new env, labels and agent. A key is one
 * serve's at a time: registered by another serve (its serve_id differs) while the device is
 * live (seen within the stale time, or holding a lease), it is refused, naming both. The
 * same serve registering again is a restart: the leases its devices held are ended, since
 * the process that held them is gone. A removed device (DELETE) keeps its row for the job
 * documents that name it, ends its open tasks, and comes back if its key registers again.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpudiff/uuid.h"
#include "db.h"

static const char SQL_AGENT_ADD[] =
    "INSERT INTO fleet_agents(id, host, agent_version, registered_at, last_seen, serve_id) "
    "VALUES(?1, ?2, ?3, ?4, ?4, CAST(?5 AS TEXT))";
static const char SQL_DEVICE_HOLDER[] =
    "SELECT d.id, d.agent_id, d.last_seen, d.removed_at, a.serve_id, a.host, "
    "(SELECT count(*) FROM fleet_tasks t WHERE t.device_id = d.id AND t.state = 'leased') "
    "FROM fleet_devices d JOIN fleet_agents a ON a.id = d.agent_id WHERE d.key = ?1";
static const char SQL_DEVICE_UPDATE[] =
    "UPDATE fleet_devices SET agent_id = ?2, host = ?3, backend = ?4, env = ?5, labels = ?6, "
    "last_seen = ?7, removed_at = NULL WHERE id = ?1";
static const char SQL_DEVICE_ADD[] =
    "INSERT INTO fleet_devices(id, key, agent_id, host, backend, env, labels, registered_at, "
    "last_seen) VALUES(?1, ?8, ?2, ?3, ?4, ?5, ?6, ?7, ?7)";
static const char SQL_DEVICES_LIST[] =
    "SELECT d.id, d.key, d.host, d.backend, d.labels, d.env, d.registered_at, d.last_seen, "
    "a.id, a.host, a.agent_version, a.serve_id, a.registered_at, a.last_seen, "
    "(SELECT count(*) FROM fleet_tasks t WHERE t.device_id = d.id AND t.state = 'leased') "
    "FROM fleet_devices d JOIN fleet_agents a ON a.id = d.agent_id WHERE d.removed_at IS NULL "
    "ORDER BY d.registered_at DESC, d.key";
static const char SQL_DEVICE_GET[] = "SELECT key, removed_at FROM fleet_devices WHERE id = ?1";
static const char SQL_DEVICE_REMOVE[] = "UPDATE fleet_devices SET removed_at = ?2 WHERE id = ?1";

/* The stored text of a JSON object: compact, keys sorted. */
static char *
json_text(json_t *v)
{
    return json_dumps(v, JSON_COMPACT | JSON_SORT_KEYS);
}

/* 1 when a and b are the same serve: both known and equal. */
static int
same_serve(const char *a, const char *b)
{
    return a != NULL && b != NULL && a[0] != '\0' && strcmp(a, b) == 0;
}

static int
device_put(struct srv_db *db, const char *agent_id, const struct srv_fleet_agent_in *in,
           const struct srv_fleet_device_in *d, int64_t now, char id[40], json_t **held_by,
           struct gd_err *err)
{
    struct srv_stmt *st;
    int rc = srv_db_prepare(db, SQL_DEVICE_HOLDER, &st, err);
    if (rc != 0)
        return rc;
    srv_stmt_bind_text(st, 1, d->key);
    int s = srv_stmt_step(st, "device lookup", err);
    int known = s == SRV_SQL_ROW, conflict = 0, restart = 0;
    char holder[40] = "", holder_serve[64] = "", holder_host[256] = "";
    int64_t seen = 0;
    if (known) {
        snprintf(id, 40, "%s", srv_stmt_text(st, 0));
        snprintf(holder, sizeof holder, "%s", srv_stmt_text(st, 1));
        seen = srv_stmt_int64(st, 2);
        int removed = !srv_stmt_null(st, 3);
        if (!srv_stmt_null(st, 4))
            snprintf(holder_serve, sizeof holder_serve, "%s", srv_stmt_text(st, 4));
        snprintf(holder_host, sizeof holder_host, "%s", srv_stmt_text(st, 5));
        int leased = srv_stmt_int64(st, 6) > 0;
        int live = !removed && (leased || seen >= now - srv_db_fleet_stale_seconds(db));
        restart = !removed && same_serve(holder_serve, in->serve_id);
        conflict = live && !restart;
    }
    srv_stmt_done(st);
    if (s < 0)
        return s;
    if (conflict) {
        /* the message is short (struct gd_err); *held_by has the whole holder */
        if (held_by != NULL)
            *held_by = json_pack("{s:s,s:s,s:s,s:o,s:s,s:I}", "device_id", id, "key", d->key,
                                 "agent_id", holder, "serve_id",
                                 holder_serve[0] ? json_string(holder_serve) : json_null(), "host",
                                 holder_host, "seen_seconds_ago", (json_int_t)(now - seen));
        return gd_err_set(err, SRV_ECONFLICT,
                          "device \"%.64s\" is held by %.48s (serve %.8s, seen %lld s ago), "
                          "not %.48s (serve %.8s): use another --device-id, stop the other "
                          "serve or DELETE the device",
                          d->key, holder_host, holder_serve[0] ? holder_serve : "unknown",
                          (long long)(now - seen), in->host,
                          in->serve_id != NULL ? in->serve_id : "unknown");
    }
    if (restart) {
        /* The serve that held these leases is this one before a restart: they are lost. */
        char why[400];
        snprintf(why, sizeof why, "serve %s on host %.100s registered again (it restarted)",
                 in->serve_id, in->host);
        rc = srv__fleet_device_leases_end(db, id, now, "expired", why, err);
        if (rc != 0)
            return rc;
    }
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
        srv_stmt_bind_text(st, 3, in->host);
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
srv_db_agent_register(struct srv_db *db, const struct srv_fleet_agent_in *in,
                      const struct srv_fleet_device_in *devices, int n, int64_t now, json_t **out,
                      json_t **held_by, struct gd_err *err)
{
    if (held_by != NULL)
        *held_by = NULL;
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
        srv_stmt_bind_text(st, 2, in->host);
        srv_stmt_bind_text(st, 3, in->version);
        srv_stmt_bind_int64(st, 4, now);
        srv_stmt_bind_text(st, 5, in->serve_id);
        rc = srv_stmt_exec(st, "agent insert", err);
    }
    for (int i = 0; rc == 0 && i < n; i++) {
        char id[40];
        rc = device_put(db, agent_id, in, &devices[i], now, id, held_by, err);
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

static json_t *
time_json(int64_t t)
{
    char s[32];
    srv_time_format(t, s);
    return json_string(s);
}

int
srv_db_devices_list(struct srv_db *db, int64_t now, json_t **out, struct gd_err *err)
{
    struct srv_stmt *st;
    int rc = srv_db_prepare(db, SQL_DEVICES_LIST, &st, err);
    if (rc != 0)
        return rc;
    int64_t stale = srv_db_fleet_stale_seconds(db);
    json_t *list = json_array();
    int s;
    while ((s = srv_stmt_step(st, "devices lookup", err)) == SRV_SQL_ROW) {
        int64_t seen = srv_stmt_int64(st, 7), leased = srv_stmt_int64(st, 14);
        json_t *agent = json_pack(
            "{s:s,s:s,s:s,s:o,s:o,s:o}", "id", srv_stmt_text(st, 8), "host", srv_stmt_text(st, 9),
            "agent_version", srv_stmt_text(st, 10), "serve_id",
            srv_stmt_null(st, 11) ? json_null() : json_string(srv_stmt_text(st, 11)), "registered",
            time_json(srv_stmt_int64(st, 12)), "last_seen", time_json(srv_stmt_int64(st, 13)));
        json_array_append_new(
            list, json_pack("{s:s,s:s,s:s,s:s,s:o,s:o,s:o,s:o,s:I,s:s,s:I,s:o}", "id",
                            srv_stmt_text(st, 0), "key", srv_stmt_text(st, 1), "host",
                            srv_stmt_text(st, 2), "backend", srv_stmt_text(st, 3), "labels",
                            srv__fleet_json(srv_stmt_text(st, 4)), "env",
                            srv__fleet_json(srv_stmt_text(st, 5)), "registered",
                            time_json(srv_stmt_int64(st, 6)), "last_seen", time_json(seen),
                            "seen_seconds_ago", (json_int_t)(now - seen), "state",
                            leased > 0            ? "busy"
                            : seen >= now - stale ? "live"
                                                  : "stale",
                            "leases", (json_int_t)leased, "agent", agent));
    }
    srv_stmt_done(st);
    if (s != SRV_SQL_DONE) {
        json_decref(list);
        return s;
    }
    *out = json_pack("{s:o,s:I}", "devices", list, "stale_seconds", (json_int_t)stale);
    return 0;
}

int
srv_db_device_remove(struct srv_db *db, const char *id, int64_t now, char key[512], int64_t *ended,
                     struct gd_err *err)
{
    struct srv_stmt *st;
    *ended = 0;
    int rc = srv_db_begin(db, err);
    if (rc == 0)
        rc = srv_db_prepare(db, SQL_DEVICE_GET, &st, err);
    if (rc == 0) {
        srv_stmt_bind_text(st, 1, id);
        int s = srv_stmt_step(st, "device lookup", err);
        int removed = s == SRV_SQL_ROW && !srv_stmt_null(st, 1);
        if (s == SRV_SQL_ROW)
            snprintf(key, 512, "%s", srv_stmt_text(st, 0));
        srv_stmt_done(st);
        rc = s < 0               ? s
             : s == SRV_SQL_DONE ? gd_err_set(err, SRV_ENOTFOUND, "no device %s", id)
             : removed ? gd_err_set(err, SRV_ENOTFOUND, "device %s was removed already", id)
                       : 0;
    }
    if (rc == 0)
        rc = srv_db_prepare(db, SQL_DEVICE_REMOVE, &st, err);
    if (rc == 0) {
        srv_stmt_bind_text(st, 1, id);
        srv_stmt_bind_int64(st, 2, now);
        rc = srv_stmt_exec(st, "device update", err);
    }
    char why[600];
    snprintf(why, sizeof why, "device %.400s was removed (DELETE /api/v1/devices/%s)", key, id);
    if (rc == 0)
        rc = srv__fleet_device_leases_end(db, id, now, "removed", why, err);
    if (rc == 0)
        rc = srv__fleet_device_tasks_end(db, id, now, why, ended, err);
    if (rc == 0)
        rc = srv_db_commit(db, err);
    srv_db_rollback(db);
    return rc;
}
