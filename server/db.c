/*
 * db.c: a database connection of either backend (sql.h) with its cache of prepared
 * statements, transactions, the migrations by schema version, backups, and the pool that
 * request handlers borrow connections from.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "db.h"

/* Distinct statements of all db_*.c files together; the cache is a short array. */
#define STMT_CACHE 96

struct srv_db {
    const struct srv_sql_backend *be;
    struct srv_sql_conn *conn;
    int busy_ms;
    int64_t fleet_stale, fleet_confirm; /* seconds (issue 24) */
    int n_stmts;
    struct {
        const char *sql;
        struct srv_stmt st;
    } stmts[STMT_CACHE];
    struct srv_db *next_free;
};

struct srv_store {
    char *path;
    const struct srv_sql_backend *be;
    struct srv_db_opts opts;
    pthread_mutex_t mu;
    struct srv_db *free_list;
    void *pool; /* the backend's own part (SQLite: the checkpointer) */
};

int
srv_db_open(const char *path, const struct srv_db_opts *opts, struct srv_db **out,
            struct gd_err *err)
{
    struct srv_db *db = calloc(1, sizeof *db);
    if (db == NULL)
        return gd_err_set(err, GD_ENOMEM, "out of memory");
    db->be = srv_sql_backend_for(path);
    db->busy_ms = opts->busy_timeout_ms;
    db->fleet_stale =
        opts->fleet_stale_seconds > 0 ? opts->fleet_stale_seconds : SRV_FLEET_STALE_DEFAULT;
    db->fleet_confirm =
        opts->fleet_confirm_seconds > 0 ? opts->fleet_confirm_seconds : SRV_FLEET_CONFIRM_DEFAULT;
    int rc = db->be->open(path, opts, &db->conn, err);
    if (rc != 0) {
        free(db);
        return rc;
    }
    *out = db;
    return 0;
}

void
srv_db_close(struct srv_db *db)
{
    if (db == NULL)
        return;
    for (int i = 0; i < db->n_stmts; i++)
        db->be->finalize(db->stmts[i].st.h);
    db->be->close(db->conn);
    free(db);
}

enum srv_sql_dialect
srv_db_dialect(const struct srv_db *db)
{
    return db->be->dialect;
}

const struct srv_sql_backend *
srv_db_backend(const struct srv_db *db)
{
    return db->be;
}

struct srv_sql_conn *
srv_db_sql_conn(struct srv_db *db)
{
    return db->conn;
}

int
srv_db_prepare(struct srv_db *db, const char *sql, struct srv_stmt **st, struct gd_err *err)
{
    for (int i = 0; i < db->n_stmts; i++) {
        if (db->stmts[i].sql == sql) {
            db->be->reset(db->stmts[i].st.h);
            *st = &db->stmts[i].st;
            return 0;
        }
    }
    if (db->n_stmts == STMT_CACHE)
        return gd_err_set(err, SRV_EINTERNAL, "statement cache full (raise STMT_CACHE)");
    struct srv_sql_stmt *h = NULL;
    int rc = db->be->prepare(db->conn, sql, 0, &h, err);
    if (rc != 0)
        return rc;
    db->stmts[db->n_stmts].sql = sql;
    db->stmts[db->n_stmts].st.be = db->be;
    db->stmts[db->n_stmts].st.h = h;
    *st = &db->stmts[db->n_stmts].st;
    db->n_stmts++;
    return 0;
}

int
srv_db_prepare_once(struct srv_db *db, const char *sql, struct srv_stmt *st, struct gd_err *err)
{
    st->be = db->be;
    st->h = NULL;
    return db->be->prepare(db->conn, sql, 1, &st->h, err);
}

void
srv_stmt_free(struct srv_stmt *st)
{
    if (st != NULL && st->h != NULL) {
        st->be->finalize(st->h);
        st->h = NULL;
    }
}

void
srv_stmt_done(struct srv_stmt *st)
{
    if (st != NULL && st->h != NULL)
        st->be->reset(st->h);
}

int
srv_stmt_step(struct srv_stmt *st, const char *what, struct gd_err *err)
{
    int s = st->be->step(st->h, err);
    if (s < 0 && what != NULL)
        gd_err_prefix(err, "%s: ", what);
    return s;
}

int
srv_stmt_exec(struct srv_stmt *st, const char *what, struct gd_err *err)
{
    int s = srv_stmt_step(st, what, err);
    srv_stmt_done(st);
    return s < 0 ? s : 0;
}

int
srv_db_exec(struct srv_db *db, const char *sql, struct gd_err *err)
{
    return db->be->exec(db->conn, sql, err);
}

sqlite3 *
srv_db_conn(struct srv_db *db)
{
    extern sqlite3 *srv__sqlite_handle(struct srv_sql_conn * c);
    return db->be == &srv_sql_sqlite ? srv__sqlite_handle(db->conn) : NULL;
}

int
srv_db_begin(struct srv_db *db, struct gd_err *err)
{
    return db->be->begin(db->conn, SRV_TX_WRITE, db->busy_ms, err);
}

int
srv_db_begin_shared(struct srv_db *db, struct gd_err *err)
{
    return db->be->begin(db->conn, SRV_TX_SHARED, db->busy_ms, err);
}

int
srv_db_lock_key(struct srv_db *db, const char *key, struct gd_err *err)
{
    return db->be->lock_key(db->conn, key, err);
}

int
srv_db_commit(struct srv_db *db, struct gd_err *err)
{
    int rc = db->be->commit(db->conn, err);
    if (rc != 0)
        db->be->rollback(db->conn);
    return rc;
}

void
srv_db_rollback(struct srv_db *db)
{
    db->be->rollback(db->conn);
}

/* ---- migrations ---- */

int
srv_db_version(struct srv_db *db, int *version, struct gd_err *err)
{
    return db->be->version(db->conn, version, err);
}

int
srv_db_migrate(struct srv_db *db, int *from, int *to, struct gd_err *err)
{
    const struct srv_migration *list = db->be->migrations;
    int count = *db->be->n_migrations;
    int newest = list[count - 1].version;
    int start = -1, v = 0, rc = 0;
    for (int i = 0; i < count; i++) {
        const struct srv_migration *m = &list[i];
        /* The version is read again under the write lock: two daemons may start at once. */
        rc = srv_db_begin(db, err);
        if (rc == 0)
            rc = srv_db_version(db, &v, err);
        if (rc != 0)
            break;
        if (start < 0)
            start = v;
        if (v > newest) {
            srv_db_rollback(db);
            return gd_err_set(err, GD_ENOTSUP,
                              "the database is at schema version %d, newer than this gpudiffd "
                              "knows (%d): use a newer gpudiffd",
                              v, newest);
        }
        if (m->version <= v) {
            srv_db_rollback(db);
            continue;
        }
        rc = srv_db_exec(db, m->sql, err);
        if (rc == 0)
            rc = db->be->set_version(db->conn, m->version, err);
        if (rc == 0)
            rc = srv_db_commit(db, err);
        if (rc != 0) {
            srv_db_rollback(db);
            gd_err_prefix(err, "migration %03d_%s: ", m->version, m->name);
            break;
        }
        SRV_LOG(GD_LOG_INFO, NULL, "database migrated to version %d (%s)", m->version, m->name);
        v = m->version;
    }
    if (rc != 0)
        return rc;
    if (from != NULL)
        *from = start < 0 ? v : start;
    if (to != NULL)
        *to = v;
    return 0;
}

int64_t
srv_db_fleet_stale_seconds(const struct srv_db *db)
{
    return db->fleet_stale;
}

int64_t
srv_db_fleet_confirm_seconds(const struct srv_db *db)
{
    return db->fleet_confirm;
}

/* ---- backups ---- */

int
srv_db_backup(const char *db, const struct srv_db_opts *opts, const char *to, struct gd_err *err)
{
    return srv_sql_backend_for(db)->backup(db, opts, to, err);
}

int
srv_db_restore(const char *db, const struct srv_db_opts *opts, const char *from,
               struct gd_err *err)
{
    return srv_sql_backend_for(db)->restore(db, opts, from, err);
}

void
srv_db_describe(const char *db, char *out, size_t size)
{
    srv_sql_backend_for(db)->describe(db, out, size);
}

/* ---- the pool ---- */

static int
store_db_open(struct srv_store *s, struct srv_db **out, struct gd_err *err)
{
    int rc = srv_db_open(s->path, &s->opts, out, err);
    if (rc == 0 && s->be->pool_attach != NULL)
        s->be->pool_attach(s->pool, (*out)->conn);
    return rc;
}

int
srv_store_open(const char *path, const struct srv_db_opts *opts, struct srv_store **out,
               struct gd_err *err)
{
    struct srv_store *s = calloc(1, sizeof *s);
    if (s == NULL || (s->path = strdup(path)) == NULL) {
        free(s);
        return gd_err_set(err, GD_ENOMEM, "out of memory");
    }
    s->opts = *opts;
    s->be = srv_sql_backend_for(path);
    pthread_mutex_init(&s->mu, NULL);
    int rc = 0;
    if (s->be->pool_start != NULL)
        rc = s->be->pool_start(path, opts, &s->pool, err);
    /* One connection now, so that a bad path fails at start rather than at a request. */
    struct srv_db *db = NULL;
    if (rc == 0)
        rc = store_db_open(s, &db, err);
    if (rc == 0)
        s->free_list = db;
    if (rc != 0) {
        srv_store_close(s);
        return rc;
    }
    *out = s;
    return 0;
}

void
srv_store_close(struct srv_store *s)
{
    if (s == NULL)
        return;
    if (s->be->pool_stop != NULL && s->pool != NULL)
        s->be->pool_stop(s->pool);
    while (s->free_list != NULL) {
        struct srv_db *db = s->free_list;
        s->free_list = db->next_free;
        srv_db_close(db);
    }
    pthread_mutex_destroy(&s->mu);
    free(s->path);
    free(s);
}

int
srv_store_acquire(struct srv_store *s, struct srv_db **out, struct gd_err *err)
{
    pthread_mutex_lock(&s->mu);
    struct srv_db *db = s->free_list;
    if (db != NULL)
        s->free_list = db->next_free;
    pthread_mutex_unlock(&s->mu);
    /*
     * A handler holds a connection for one callback only, so there are never more in use
     * than threads that touch the database: opening one more when none is free is bounded.
     */
    if (db == NULL) {
        int rc = store_db_open(s, &db, err);
        if (rc != 0)
            return rc;
    }
    db->next_free = NULL;
    *out = db;
    return 0;
}

void
srv_store_release(struct srv_store *s, struct srv_db *db)
{
    if (db == NULL)
        return;
    /* A statement left stepping would hold a read snapshot (SQLite: keep the WAL growing). */
    for (int i = 0; i < db->n_stmts; i++)
        db->be->reset(db->stmts[i].st.h);
    srv_db_rollback(db);
    if (db->be->broken(db->conn)) {
        /* The server went away (PostgreSQL restarted): the next acquire connects afresh. */
        srv_db_close(db);
        return;
    }
    pthread_mutex_lock(&s->mu);
    db->next_free = s->free_list;
    s->free_list = db;
    pthread_mutex_unlock(&s->mu);
}

enum srv_sql_dialect
srv_store_dialect(const struct srv_store *s)
{
    return s->be->dialect;
}

int
srv_db_memory(const struct srv_db *db, int64_t *used, int64_t *highwater)
{
    if (db->be->memory == NULL)
        return 0;
    db->be->memory(used, highwater);
    return 1;
}
