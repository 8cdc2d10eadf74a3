/*
 * db.c: SQLite connections (WAL, foreign keys, busy timeout), their statement caches, the
 * migrations by PRAGMA user_version, and the pool request handlers borrow connections from.
 */
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "compare.h"
#include "db.h"

/* Distinct statements of all db_*.c files together; the cache is a short array. */
#define STMT_CACHE 64

struct srv_db {
    sqlite3 *conn;
    int busy_ms;
    int holds_write; /* this connection holds write_mu (a transaction of srv_db_begin) */
    int n_stmts;
    struct {
        const char *sql;
        sqlite3_stmt *st;
    } stmts[STMT_CACHE];
    struct srv_db *next_free;
};

/* WAL pages after a commit that call for a checkpoint: SQLite's own autocheckpoint default. */
#define CHECKPOINT_PAGES 1000

struct srv_store {
    char *path;
    struct srv_db_opts opts;
    pthread_mutex_t mu;
    struct srv_db *free_list;
    /* The checkpointer: its own connection and thread, woken by the WAL hook. */
    struct srv_db *ckpt_db;
    pthread_t ckpt_thread;
    pthread_cond_t ckpt_cv;
    int ckpt_started, ckpt_wanted, ckpt_stop;
};

int
srv_db_fail(struct srv_db *db, int sqlite_rc, const char *what, struct gd_err *err)
{
    int primary = sqlite_rc & 0xff;
    const char *msg =
        db != NULL && db->conn != NULL ? sqlite3_errmsg(db->conn) : sqlite3_errstr(sqlite_rc);
    if (primary == SQLITE_BUSY || primary == SQLITE_LOCKED)
        return gd_err_set(err, SRV_EBUSY, "%s: the database is busy, retry (%s)", what, msg);
    if (primary == SQLITE_NOMEM)
        return gd_err_set(err, GD_ENOMEM, "%s: out of memory", what);
    return gd_err_set(err, GD_EIO, "%s: %s", what, msg);
}

/*
 * gpudiff_device_key(meta): the device key of a run from its stored run.json (device.c), for
 * migration 002, which gives the runs stored before it their key. '' for a meta that is not
 * JSON (it always is: run_doc.c wrote it).
 */
static void
sql_device_key(sqlite3_context *ctx, int argc, sqlite3_value **argv)
{
    (void)argc;
    const unsigned char *text = sqlite3_value_text(argv[0]);
    json_t *meta = text != NULL ? json_loads((const char *)text, 0, NULL) : NULL;
    struct srv_buf key = {0};
    if (meta != NULL && srv_device_key(meta, &key) != 0) {
        json_decref(meta);
        sqlite3_result_error_nomem(ctx);
        return;
    }
    json_decref(meta);
    sqlite3_result_text(ctx, key.data != NULL ? key.data : "", -1, SQLITE_TRANSIENT);
    srv_buf_fini(&key);
}

static int
exec(struct srv_db *db, const char *sql, struct gd_err *err)
{
    int rc = sqlite3_exec(db->conn, sql, NULL, NULL, NULL);
    return rc == SQLITE_OK ? 0 : srv_db_fail(db, rc, sql, err);
}

int
srv_db_open(const char *path, const struct srv_db_opts *opts, struct srv_db **out,
            struct gd_err *err)
{
    struct srv_db *db = calloc(1, sizeof *db);
    if (db == NULL)
        return gd_err_set(err, GD_ENOMEM, "out of memory");
    /*
     * A new database is made 0600 here, before SQLite would make it 0644; SQLite gives its
     * -wal and -shm files the database file's mode, so they are 0600 too. It holds tokens'
     * hashes and every uploaded tensor: nobody else on the machine needs to read it.
     */
    if (strcmp(path, ":memory:") != 0 && strncmp(path, "file:", 5) != 0) {
        int fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
        if (fd >= 0)
            close(fd);
    }
    int flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX;
    int rc = sqlite3_open_v2(path, &db->conn, flags, NULL);
    if (rc != SQLITE_OK) {
        gd_err_set(err, GD_EIO, "%s: %s", path,
                   db->conn ? sqlite3_errmsg(db->conn) : sqlite3_errstr(rc));
        srv_db_close(db);
        return GD_EIO;
    }
    sqlite3_extended_result_codes(db->conn, 1);
    sqlite3_busy_timeout(db->conn, opts->busy_timeout_ms);
    db->busy_ms = opts->busy_timeout_ms;
    rc = sqlite3_create_function_v2(db->conn, "gpudiff_device_key", 1,
                                    SQLITE_UTF8 | SQLITE_DETERMINISTIC, NULL, sql_device_key, NULL,
                                    NULL, NULL);
    if (rc != SQLITE_OK) {
        int e = srv_db_fail(db, rc, "gpudiff_device_key", err);
        srv_db_close(db);
        return e;
    }
    /*
     * WAL: readers never block the writer nor it them. With synchronous=NORMAL a commit is
     * written to the WAL without an fsync; it survives a crash of this process (the OS has
     * it), and only a power loss can undo the commits since the last checkpoint, never
     * corrupt the file (docs/SERVER.md, "Durability").
     */
    /*
     * mmap: a blob read at an offset follows the blob's chain of overflow pages from its
     * start; mapped, each hop is a memory access instead of a pread.
     */
    /*
     * Both the page cache and the mapping are per connection, and what they hold stays
     * resident: the settings --db-cache and --db-mmap bound them (docs/SERVER.md, "Memory").
     */
    long long cache_kib = opts->cache_size > 0 ? (long long)(opts->cache_size >> 10) : 2000;
    long long map = opts->mmap_size == 0 ? 256LL << 20 : opts->mmap_size < 0 ? 0 : opts->mmap_size;
    char pragmas[400];
    snprintf(pragmas, sizeof pragmas,
             "PRAGMA journal_mode=WAL; PRAGMA synchronous=%s; PRAGMA foreign_keys=ON; "
             "PRAGMA journal_size_limit=67108864; PRAGMA trusted_schema=OFF; "
             "PRAGMA mmap_size=%lld; PRAGMA cache_size=-%lld;",
             opts->sync_full ? "FULL" : "NORMAL", map, cache_kib);
    int e = exec(db, pragmas, err);
    if (e != 0) {
        gd_err_prefix(err, "%s: ", path);
        srv_db_close(db);
        return e;
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
        sqlite3_finalize(db->stmts[i].st);
    sqlite3_close_v2(db->conn);
    free(db);
}

sqlite3 *
srv_db_conn(struct srv_db *db)
{
    return db->conn;
}

int
srv_db_prepare(struct srv_db *db, const char *sql, sqlite3_stmt **st, struct gd_err *err)
{
    for (int i = 0; i < db->n_stmts; i++) {
        if (db->stmts[i].sql == sql) {
            sqlite3_reset(db->stmts[i].st);
            sqlite3_clear_bindings(db->stmts[i].st);
            *st = db->stmts[i].st;
            return 0;
        }
    }
    if (db->n_stmts == STMT_CACHE)
        return gd_err_set(err, SRV_EINTERNAL, "statement cache full (raise STMT_CACHE)");
    sqlite3_stmt *s = NULL;
    int rc = sqlite3_prepare_v3(db->conn, sql, -1, SQLITE_PREPARE_PERSISTENT, &s, NULL);
    if (rc != SQLITE_OK)
        return srv_db_fail(db, rc, "prepare", err);
    db->stmts[db->n_stmts].sql = sql;
    db->stmts[db->n_stmts].st = s;
    db->n_stmts++;
    *st = s;
    return 0;
}

void
srv_db_done(sqlite3_stmt *st)
{
    if (st != NULL)
        sqlite3_reset(st);
}

int
srv_db_bind_text(sqlite3_stmt *st, int i, const char *s)
{
    if (s == NULL)
        return sqlite3_bind_null(st, i);
    return sqlite3_bind_text(st, i, s, -1, SQLITE_TRANSIENT);
}

/*
 * The writers of this process take turns on a mutex before SQLite's write lock. SQLite's
 * busy handler waits for a lock held by another connection by sleeping in steps of up to
 * 100 ms, so under many concurrent uploads a writer sleeps long after the lock was free,
 * holding the thread that serves its connection; a mutex hands over at once, in order.
 * Other processes (a `gpudiffd token` command) still meet SQLite's own lock and its busy
 * timeout.
 */
static pthread_mutex_t write_mu = PTHREAD_MUTEX_INITIALIZER;

static void
write_release(struct srv_db *db)
{
    if (db->holds_write) {
        db->holds_write = 0;
        pthread_mutex_unlock(&write_mu);
    }
}

int
srv_db_begin(struct srv_db *db, struct gd_err *err)
{
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += db->busy_ms / 1000;
    until.tv_nsec += (long)(db->busy_ms % 1000) * 1000000L;
    if (until.tv_nsec >= 1000000000L) {
        until.tv_sec++;
        until.tv_nsec -= 1000000000L;
    }
    if (pthread_mutex_timedlock(&write_mu, &until) != 0)
        return gd_err_set(err, SRV_EBUSY,
                          "BEGIN: the database is busy with other writes, retry (waited %d ms)",
                          db->busy_ms);
    db->holds_write = 1;
    int rc = exec(db, "BEGIN IMMEDIATE", err);
    if (rc != 0)
        write_release(db);
    return rc;
}

int
srv_db_commit(struct srv_db *db, struct gd_err *err)
{
    int rc = exec(db, "COMMIT", err);
    if (rc != 0)
        srv_db_rollback(db);
    write_release(db);
    return rc;
}

void
srv_db_rollback(struct srv_db *db)
{
    if (!sqlite3_get_autocommit(db->conn))
        sqlite3_exec(db->conn, "ROLLBACK", NULL, NULL, NULL);
    write_release(db);
}

/* ---- migrations ---- */

int
srv_db_version(struct srv_db *db, int *version, struct gd_err *err)
{
    sqlite3_stmt *st = NULL;
    int rc = sqlite3_prepare_v2(db->conn, "PRAGMA user_version", -1, &st, NULL);
    if (rc == SQLITE_OK)
        rc = sqlite3_step(st);
    if (rc != SQLITE_ROW) {
        int e = srv_db_fail(db, rc, "PRAGMA user_version", err);
        sqlite3_finalize(st);
        return e;
    }
    *version = sqlite3_column_int(st, 0);
    sqlite3_finalize(st);
    return 0;
}

int
srv_db_migrate(struct srv_db *db, int *from, int *to, struct gd_err *err)
{
    int newest = srv_migrations[srv_migration_count - 1].version;
    int start = -1, v = 0, rc = 0;
    for (int i = 0; i < srv_migration_count; i++) {
        const struct srv_migration *m = &srv_migrations[i];
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
        char set[64];
        snprintf(set, sizeof set, "PRAGMA user_version=%d", m->version);
        rc = exec(db, m->sql, err);
        if (rc == 0)
            rc = exec(db, set, err);
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

/* ---- the pool ---- */

/*
 * Called by SQLite after each commit on a pooled connection. It replaces SQLite's
 * autocheckpoint, which would copy the WAL into the database, with two fsyncs, inside the
 * commit of the request that crossed the threshold: here the checkpointer thread does it
 * while the request answers (and its client sends the next layer).
 */
static int
wal_hook(void *user, sqlite3 *conn, const char *name, int pages)
{
    (void)conn;
    (void)name;
    struct srv_store *s = user;
    if (pages >= CHECKPOINT_PAGES) {
        pthread_mutex_lock(&s->mu);
        s->ckpt_wanted = 1;
        pthread_cond_signal(&s->ckpt_cv);
        pthread_mutex_unlock(&s->mu);
    }
    return SQLITE_OK;
}

static void *
checkpointer(void *arg)
{
    struct srv_store *s = arg;
    pthread_mutex_lock(&s->mu);
    while (!s->ckpt_stop) {
        if (!s->ckpt_wanted) {
            pthread_cond_wait(&s->ckpt_cv, &s->mu);
            continue;
        }
        s->ckpt_wanted = 0;
        pthread_mutex_unlock(&s->mu);
        /* PASSIVE: copies what no reader still needs, never waits for readers or writers. */
        int rc = sqlite3_wal_checkpoint_v2(s->ckpt_db->conn, NULL, SQLITE_CHECKPOINT_PASSIVE, NULL,
                                           NULL);
        if (rc != SQLITE_OK && (rc & 0xff) != SQLITE_BUSY && (rc & 0xff) != SQLITE_LOCKED)
            SRV_LOG(GD_LOG_WARN, NULL, "checkpoint: %s", sqlite3_errmsg(s->ckpt_db->conn));
        pthread_mutex_lock(&s->mu);
    }
    pthread_mutex_unlock(&s->mu);
    return NULL;
}

/* A pooled connection: the checkpoints are the checkpointer's. */
static int
store_db_open(struct srv_store *s, struct srv_db **out, struct gd_err *err)
{
    int rc = srv_db_open(s->path, &s->opts, out, err);
    if (rc == 0)
        sqlite3_wal_hook((*out)->conn, wal_hook, s);
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
    pthread_mutex_init(&s->mu, NULL);
    pthread_cond_init(&s->ckpt_cv, NULL);
    /* One connection now, so that a bad path fails at start rather than at a request. */
    struct srv_db *db = NULL;
    int rc = store_db_open(s, &db, err);
    if (rc == 0) {
        s->free_list = db;
        rc = srv_db_open(path, opts, &s->ckpt_db, err);
    }
    if (rc == 0) {
        if (pthread_create(&s->ckpt_thread, NULL, checkpointer, s) == 0)
            s->ckpt_started = 1;
        else
            rc = gd_err_set(err, GD_EIO, "cannot start the checkpoint thread");
    }
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
    if (s->ckpt_started) {
        pthread_mutex_lock(&s->mu);
        s->ckpt_stop = 1;
        pthread_cond_signal(&s->ckpt_cv);
        pthread_mutex_unlock(&s->mu);
        pthread_join(s->ckpt_thread, NULL);
    }
    srv_db_close(s->ckpt_db);
    while (s->free_list != NULL) {
        struct srv_db *db = s->free_list;
        s->free_list = db->next_free;
        srv_db_close(db);
    }
    pthread_mutex_destroy(&s->mu);
    pthread_cond_destroy(&s->ckpt_cv);
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
     * than worker threads (plus retention): opening one more when none is free is bounded.
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
    /* A statement left stepping would hold a read snapshot and keep the WAL from resetting. */
    for (int i = 0; i < db->n_stmts; i++)
        sqlite3_reset(db->stmts[i].st);
    srv_db_rollback(db);
    pthread_mutex_lock(&s->mu);
    db->next_free = s->free_list;
    s->free_list = db;
    pthread_mutex_unlock(&s->mu);
}
