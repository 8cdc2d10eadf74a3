/*
 * sql_sqlite.c: the SQLite backend (sql.h): one file in WAL mode, foreign keys on, each
 * write a BEGIN IMMEDIATE transaction behind a mutex of the process, blobs written from a
 * mapping of the spill file and read in pieces through incremental blob I/O, checkpoints
 * made by a thread of their own, backups through SQLite's online backup API.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "compare.h"
#include "db.h"
#include "sql.h"

/* Piece size for copying between a spill file and a blob: memory stays at this. */
#define PIECE ((size_t)256 * 1024)
/* WAL pages after a commit that call for a checkpoint: SQLite's own autocheckpoint default. */
#define CHECKPOINT_PAGES 1000

struct srv_sql_conn {
    sqlite3 *conn;
    int holds_write; /* this connection holds write_mu (a transaction of begin) */
};

struct srv_sql_stmt {
    sqlite3_stmt *st;
};

struct srv_sql_piece_handle {
    sqlite3_blob *blob;
};

static int
fail(sqlite3 *conn, int sqlite_rc, const char *what, struct gd_err *err)
{
    int primary = sqlite_rc & 0xff;
    const char *msg = conn != NULL ? sqlite3_errmsg(conn) : sqlite3_errstr(sqlite_rc);
    if (primary == SQLITE_BUSY || primary == SQLITE_LOCKED)
        return gd_err_set(err, SRV_EBUSY, "%s: the database is busy, retry (%s)", what, msg);
    if (primary == SQLITE_NOMEM)
        return gd_err_set(err, GD_ENOMEM, "%s: out of memory", what);
    return gd_err_set(err, GD_EIO, "%s: %s", what, msg);
}

sqlite3 *srv__sqlite_handle(struct srv_sql_conn *c);

sqlite3 *
srv__sqlite_handle(struct srv_sql_conn *c)
{
    return c->conn;
}

/*
 * gpudiff_device_key(meta): the device key of a run from its stored run.json (device.c), for
 * migration 002, which gives the runs stored before it their key. '' for a meta
 * that is not JSON (it always is: run_doc.c wrote it).
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
lite_exec(struct srv_sql_conn *c, const char *sql, struct gd_err *err)
{
    int rc = sqlite3_exec(c->conn, sql, NULL, NULL, NULL);
    if (rc == SQLITE_OK)
        return 0;
    /* The statement's first line names it (a migration's is its file name). */
    char what[80];
    snprintf(what, sizeof what, "%.*s", (int)strcspn(sql, "\n"), sql);
    return fail(c->conn, rc, what, err);
}

static int
lite_claims(const char *db)
{
    (void)db;
    return 1;
}

static void
lite_close(struct srv_sql_conn *c)
{
    if (c == NULL)
        return;
    sqlite3_close_v2(c->conn);
    free(c);
}

static int
lite_open(const char *path, const struct srv_db_opts *opts, struct srv_sql_conn **out,
          struct gd_err *err)
{
    struct srv_sql_conn *c = calloc(1, sizeof *c);
    if (c == NULL)
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
    int rc = sqlite3_open_v2(path, &c->conn, flags, NULL);
    if (rc != SQLITE_OK) {
        gd_err_set(err, GD_EIO, "%s: %s", path,
                   c->conn ? sqlite3_errmsg(c->conn) : sqlite3_errstr(rc));
        lite_close(c);
        return GD_EIO;
    }
    sqlite3_extended_result_codes(c->conn, 1);
    sqlite3_busy_timeout(c->conn, opts->busy_timeout_ms);
    rc = sqlite3_create_function_v2(c->conn, "gpudiff_device_key", 1,
                                    SQLITE_UTF8 | SQLITE_DETERMINISTIC, NULL, sql_device_key, NULL,
                                    NULL, NULL);
    if (rc != SQLITE_OK) {
        int e = fail(c->conn, rc, "gpudiff_device_key", err);
        lite_close(c);
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
    int e = lite_exec(c, pragmas, err);
    if (e != 0) {
        gd_err_prefix(err, "%s: ", path);
        lite_close(c);
        return e;
    }
    *out = c;
    return 0;
}

static int
lite_broken(struct srv_sql_conn *c)
{
    (void)c;
    return 0;
}

/* ---- statements ---- */

static int
lite_prepare(struct srv_sql_conn *c, const char *sql, int once, struct srv_sql_stmt **out,
             struct gd_err *err)
{
    struct srv_sql_stmt *s = calloc(1, sizeof *s);
    if (s == NULL)
        return gd_err_set(err, GD_ENOMEM, "out of memory");
    int rc = sqlite3_prepare_v3(c->conn, sql, -1, once ? 0 : SQLITE_PREPARE_PERSISTENT, &s->st,
                                NULL);
    if (rc != SQLITE_OK) {
        int e = fail(c->conn, rc, "prepare", err);
        free(s);
        return e;
    }
    *out = s;
    return 0;
}

static void
lite_finalize(struct srv_sql_stmt *s)
{
    if (s == NULL)
        return;
    sqlite3_finalize(s->st);
    free(s);
}

static void
lite_reset(struct srv_sql_stmt *s)
{
    sqlite3_reset(s->st);
    sqlite3_clear_bindings(s->st);
}

static void
lite_bind_null(struct srv_sql_stmt *s, int i)
{
    sqlite3_bind_null(s->st, i);
}

static void
lite_bind_int64(struct srv_sql_stmt *s, int i, int64_t v)
{
    sqlite3_bind_int64(s->st, i, (sqlite3_int64)v);
}

static void
lite_bind_double(struct srv_sql_stmt *s, int i, double v)
{
    sqlite3_bind_double(s->st, i, v);
}

static void
lite_bind_text(struct srv_sql_stmt *s, int i, const char *t)
{
    sqlite3_bind_text(s->st, i, t, -1, SQLITE_TRANSIENT);
}

static void
lite_bind_blob(struct srv_sql_stmt *s, int i, const void *p, size_t n)
{
    sqlite3_bind_blob64(s->st, i, p, (sqlite3_uint64)n, SQLITE_STATIC);
}

static int
lite_step(struct srv_sql_stmt *s, struct gd_err *err)
{
    int rc = sqlite3_step(s->st);
    if (rc == SQLITE_ROW)
        return SRV_SQL_ROW;
    if (rc == SQLITE_DONE)
        return SRV_SQL_DONE;
    return fail(sqlite3_db_handle(s->st), rc, "database", err);
}

static int
lite_is_null(struct srv_sql_stmt *s, int col)
{
    return sqlite3_column_type(s->st, col) == SQLITE_NULL;
}

static int64_t
lite_col_int64(struct srv_sql_stmt *s, int col)
{
    return sqlite3_column_int64(s->st, col);
}

static double
lite_col_double(struct srv_sql_stmt *s, int col)
{
    return sqlite3_column_double(s->st, col);
}

static const char *
lite_col_text(struct srv_sql_stmt *s, int col)
{
    return (const char *)sqlite3_column_text(s->st, col);
}

static const void *
lite_col_blob(struct srv_sql_stmt *s, int col, size_t *len)
{
    const void *p = sqlite3_column_blob(s->st, col);
    *len = (size_t)sqlite3_column_bytes(s->st, col);
    return p;
}

static int64_t
lite_changes(struct srv_sql_stmt *s)
{
    return sqlite3_changes(sqlite3_db_handle(s->st));
}

/* ---- transactions ---- */

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
write_release(struct srv_sql_conn *c)
{
    if (c->holds_write) {
        c->holds_write = 0;
        pthread_mutex_unlock(&write_mu);
    }
}

/* SQLite has one writer at a time: a shared transaction is a write transaction. */
static int
lite_begin(struct srv_sql_conn *c, enum srv_tx kind, int busy_ms, struct gd_err *err)
{
    (void)kind;
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += busy_ms / 1000;
    until.tv_nsec += (long)(busy_ms % 1000) * 1000000L;
    if (until.tv_nsec >= 1000000000L) {
        until.tv_sec++;
        until.tv_nsec -= 1000000000L;
    }
    if (pthread_mutex_timedlock(&write_mu, &until) != 0)
        return gd_err_set(err, SRV_EBUSY,
                          "BEGIN: the database is busy with other writes, retry (waited %d ms)",
                          busy_ms);
    c->holds_write = 1;
    int rc = lite_exec(c, "BEGIN IMMEDIATE", err);
    if (rc != 0)
        write_release(c);
    return rc;
}

static void
lite_rollback(struct srv_sql_conn *c)
{
    if (!sqlite3_get_autocommit(c->conn))
        sqlite3_exec(c->conn, "ROLLBACK", NULL, NULL, NULL);
    write_release(c);
}

static int
lite_commit(struct srv_sql_conn *c, struct gd_err *err)
{
    int rc = lite_exec(c, "COMMIT", err);
    if (rc != 0)
        lite_rollback(c);
    write_release(c);
    return rc;
}

static int
lite_lock_key(struct srv_sql_conn *c, const char *key, struct gd_err *err)
{
    (void)c;
    (void)key;
    (void)err;
    return 0; /* the transaction holds the one write lock already */
}

/* ---- schema version ---- */

static int
lite_version(struct srv_sql_conn *c, int *version, struct gd_err *err)
{
    sqlite3_stmt *st = NULL;
    int rc = sqlite3_prepare_v2(c->conn, "PRAGMA user_version", -1, &st, NULL);
    if (rc == SQLITE_OK)
        rc = sqlite3_step(st);
    if (rc != SQLITE_ROW) {
        int e = fail(c->conn, rc, "PRAGMA user_version", err);
        sqlite3_finalize(st);
        return e;
    }
    *version = sqlite3_column_int(st, 0);
    sqlite3_finalize(st);
    return 0;
}

static int
lite_set_version(struct srv_sql_conn *c, int version, struct gd_err *err)
{
    char set[64];
    snprintf(set, sizeof set, "PRAGMA user_version=%d", version);
    return lite_exec(c, set, err);
}

/* ---- blobs ---- */

/* Copies the spill file into the new blob row's zeroblob in pieces of PIECE bytes. */
static int
blob_copy(struct srv_sql_conn *c, sqlite3_int64 rowid, const struct srv_blob_spill *spill,
          struct gd_err *err)
{
    sqlite3_blob *b = NULL;
    int s = sqlite3_blob_open(c->conn, "main", "blobs", "data", rowid, 1, &b);
    if (s != SQLITE_OK) {
        sqlite3_blob_close(b);
        return fail(c->conn, s, "blob open", err);
    }
    unsigned char *piece = malloc(PIECE);
    if (piece == NULL) {
        sqlite3_blob_close(b);
        return gd_err_set(err, GD_ENOMEM, "out of memory");
    }
    int rc = 0;
    uint64_t off = 0;
    while (rc == 0 && off < spill->stored_size) {
        size_t n = spill->stored_size - off < PIECE ? (size_t)(spill->stored_size - off) : PIECE;
        ssize_t got = pread(spill->fd, piece, n, (off_t)off);
        if (got < 0 && errno == EINTR)
            continue;
        if (got <= 0) {
            rc = gd_err_set(err, GD_EIO, "spill file: %s",
                            got < 0 ? strerror(errno) : "shorter than written");
            break;
        }
        s = sqlite3_blob_write(b, piece, (int)got, (int)off);
        if (s != SQLITE_OK)
            rc = fail(c->conn, s, "blob write", err);
        off += (uint64_t)got;
    }
    free(piece);
    s = sqlite3_blob_close(b);
    if (rc == 0 && s != SQLITE_OK)
        rc = fail(c->conn, s, "blob close", err);
    return rc;
}

static const char SQL_BLOB_INSERT[] =
    "INSERT INTO blobs(sha256, dtype, elem_size, raw_size, stored_size, codec, created_at, data) "
    "VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)";

static int
lite_blob_insert(struct srv_sql_conn *c, const char *sha256, const struct srv_blob_spill *spill,
                 int64_t now, struct gd_err *err)
{
    sqlite3_stmt *st = NULL;
    if (spill->stored_size > (uint64_t)INT32_MAX)
        return gd_err_set(err, GD_ERANGE, "compressed data of %llu bytes is over SQLite's limit",
                          (unsigned long long)spill->stored_size);
    /*
     * The spill file is bound as the value through a read-only mapping: SQLite copies it
     * once into its pages, and the bytes live in the kernel's page cache (where the spill
     * was just written), not on the daemon's heap. A zeroblob filled piece by piece, the
     * fallback, writes every page twice and costs about 40% more (docs/PERFORMANCE.md).
     */
    void *map = spill->stored_size > 0 ? mmap(NULL, (size_t)spill->stored_size, PROT_READ,
                                              MAP_SHARED, spill->fd, 0)
                                       : MAP_FAILED;
    int rc = 0;
    int s = sqlite3_prepare_v3(c->conn, SQL_BLOB_INSERT, -1, 0, &st, NULL);
    if (s != SQLITE_OK) {
        rc = fail(c->conn, s, "blob insert", err);
        goto done;
    }
    sqlite3_bind_text(st, 1, sha256, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(st, 2, spill->dtype, -1, SQLITE_TRANSIENT);
    sqlite3_bind_int(st, 3, spill->elem_size);
    sqlite3_bind_int64(st, 4, (sqlite3_int64)spill->raw_size);
    sqlite3_bind_int64(st, 5, (sqlite3_int64)spill->stored_size);
    sqlite3_bind_text(st, 6, spill->codec, -1, SQLITE_TRANSIENT);
    sqlite3_bind_int64(st, 7, now);
    if (map != MAP_FAILED)
        sqlite3_bind_blob64(st, 8, map, spill->stored_size, SQLITE_STATIC);
    else
        sqlite3_bind_zeroblob64(st, 8, spill->stored_size);
    s = sqlite3_step(st);
    if (s != SQLITE_DONE) {
        rc = fail(c->conn, s, "blob insert", err);
        goto done;
    }
    if (map == MAP_FAILED && spill->stored_size > 0)
        rc = blob_copy(c, sqlite3_last_insert_rowid(c->conn), spill, err);
done:
    /* SQLITE_STATIC: the mapping must outlive the statement's use of it, which ends here. */
    sqlite3_finalize(st);
    if (map != MAP_FAILED)
        munmap(map, (size_t)spill->stored_size);
    return rc;
}

static const char *
piece_table(enum srv_sql_piece what, const char **column)
{
    *column = what == SRV_PIECE_BLOB ? "data" : "json";
    return what == SRV_PIECE_BLOB ? "blobs" : "diffs";
}

static int
lite_piece_size(struct srv_sql_conn *c, enum srv_sql_piece what, int64_t id, uint64_t *size,
                struct gd_err *err)
{
    const char *column, *table = piece_table(what, &column);
    /* The size in bytes without reading the value (incremental I/O sees TEXT as bytes). */
    sqlite3_blob *b = NULL;
    int s = sqlite3_blob_open(c->conn, "main", table, column, id, 0, &b);
    if (s != SQLITE_OK) {
        sqlite3_blob_close(b);
        return fail(c->conn, s, "open", err);
    }
    *size = (uint64_t)sqlite3_blob_bytes(b);
    sqlite3_blob_close(b);
    return 0;
}

static void
lite_piece_close(struct srv_sql_piece_handle **handle)
{
    if (*handle == NULL)
        return;
    sqlite3_blob_close((*handle)->blob);
    free(*handle);
    *handle = NULL;
}

/*
 * The blob handle is kept for the next reads, since each fresh handle walks the value's
 * page chain from its start.
 */
static int
lite_piece_read(struct srv_sql_conn *c, enum srv_sql_piece what, int64_t id,
                struct srv_sql_piece_handle **handle, uint64_t off, void *buf, size_t n,
                struct gd_err *err)
{
    const char *column, *table = piece_table(what, &column);
    if (*handle == NULL) {
        struct srv_sql_piece_handle *h = calloc(1, sizeof *h);
        if (h == NULL)
            return gd_err_set(err, GD_ENOMEM, "out of memory");
        int s = sqlite3_blob_open(c->conn, "main", table, column, id, 0, &h->blob);
        if (s != SQLITE_OK) {
            sqlite3_blob_close(h->blob);
            free(h);
            return fail(c->conn, s, "blob open", err);
        }
        *handle = h;
    }
    int size = sqlite3_blob_bytes((*handle)->blob);
    if (off > (uint64_t)size || n > (uint64_t)size - off)
        return gd_err_set(err, GD_EIO, "%s row %lld is %d bytes, shorter than expected", table,
                          (long long)id, size);
    int s = sqlite3_blob_read((*handle)->blob, buf, (int)n, (int)off);
    return s == SQLITE_OK ? 0 : fail(c->conn, s, "blob read", err);
}

/* ---- backups ---- */

/* Copies every page of src into dst in one step (a consistent snapshot of src). */
static int
copy_db(sqlite3 *dst, sqlite3 *src, const char *what, struct gd_err *err)
{
    sqlite3_backup *b = sqlite3_backup_init(dst, "main", src, "main");
    if (b == NULL)
        return fail(dst, sqlite3_errcode(dst), what, err);
    int s = sqlite3_backup_step(b, -1);
    int f = sqlite3_backup_finish(b);
    if (s != SQLITE_DONE)
        return fail(dst, s, what, err);
    if (f != SQLITE_OK)
        return fail(dst, f, what, err);
    return 0;
}

static int
fsync_path(const char *path)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    int rc = fsync(fd);
    close(fd);
    return rc;
}

/*
 * The backup API copies a snapshot of the live database (a read transaction: writers go on,
 * in WAL mode nobody waits) page by page into a new file, which is fsynced and renamed into
 * place: a reader of FILE sees the whole backup or none.
 */
static int
lite_backup(const char *db, const struct srv_db_opts *opts, const char *to, struct gd_err *err)
{
    char tmp[4096];
    if (snprintf(tmp, sizeof tmp, "%s.partial", to) >= (int)sizeof tmp)
        return gd_err_set(err, GD_EINVAL, "%s: path too long", to);
    struct stat sb;
    if (stat(db, &sb) != 0)
        return gd_err_set(err, GD_ENOENT, "%s: %s", db, strerror(errno));
    unlink(tmp);
    struct srv_sql_conn *src = NULL;
    sqlite3 *dst = NULL;
    int rc = lite_open(db, opts, &src, err);
    if (rc == 0) {
        int fd = open(tmp, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
        if (fd < 0)
            rc = gd_err_set(err, GD_EIO, "%s: %s", tmp, strerror(errno));
        else
            close(fd);
    }
    if (rc == 0 && sqlite3_open_v2(tmp, &dst, SQLITE_OPEN_READWRITE, NULL) != SQLITE_OK)
        rc = fail(dst, sqlite3_errcode(dst), tmp, err);
    if (rc == 0)
        rc = copy_db(dst, src->conn, "backup", err);
    /* The copy is a plain rollback-journal file: one file, whatever the source's mode. */
    if (rc == 0 && sqlite3_exec(dst, "PRAGMA journal_mode=DELETE", NULL, NULL, NULL) != SQLITE_OK)
        rc = fail(dst, sqlite3_errcode(dst), "backup", err);
    if (dst != NULL && sqlite3_close(dst) != SQLITE_OK && rc == 0)
        rc = gd_err_set(err, GD_EIO, "%s: cannot close", tmp);
    lite_close(src);
    if (rc == 0 && fsync_path(tmp) != 0)
        rc = gd_err_set(err, GD_EIO, "%s: fsync: %s", tmp, strerror(errno));
    if (rc == 0 && rename(tmp, to) != 0)
        rc = gd_err_set(err, GD_EIO, "%s: %s", to, strerror(errno));
    if (rc != 0)
        unlink(tmp);
    return rc;
}

/*
 * The backup is checked first (it must be a gpudiffd database this build can read, whole),
 * then copied into the database in one transaction: a daemon serving it meanwhile sees the
 * old content or the restored one, never a mix.
 */
static int
lite_restore(const char *db, const struct srv_db_opts *opts, const char *from, struct gd_err *err)
{
    sqlite3 *src = NULL;
    struct srv_sql_conn *dst = NULL;
    int rc = 0;
    if (sqlite3_open_v2(from, &src, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK)
        rc = fail(src, sqlite3_errcode(src), from, err);
    sqlite3_stmt *st = NULL;
    if (rc == 0 && sqlite3_prepare_v2(src, "PRAGMA integrity_check", -1, &st, NULL) != SQLITE_OK)
        rc = gd_err_set(err, GD_EFORMAT, "%s is not a SQLite database (%s)", from,
                        sqlite3_errmsg(src));
    if (rc == 0) {
        int s = sqlite3_step(st);
        const char *ok = s == SQLITE_ROW ? (const char *)sqlite3_column_text(st, 0) : NULL;
        if (ok == NULL || strcmp(ok, "ok") != 0)
            rc = gd_err_set(err, GD_EFORMAT, "%s fails SQLite's integrity check: %s", from,
                            ok != NULL ? ok : sqlite3_errmsg(src));
    }
    sqlite3_finalize(st);
    st = NULL;
    int version = 0;
    if (rc == 0 && (sqlite3_prepare_v2(src, "PRAGMA user_version", -1, &st, NULL) != SQLITE_OK ||
                    sqlite3_step(st) != SQLITE_ROW))
        rc = fail(src, sqlite3_errcode(src), from, err);
    if (rc == 0)
        version = sqlite3_column_int(st, 0);
    sqlite3_finalize(st);
    int newest = srv_migrations[srv_migration_count - 1].version;
    if (rc == 0 && (version < 1 || version > newest))
        rc = gd_err_set(err, GD_EFORMAT,
                        "%s is at schema version %d: not a gpudiffd database this build reads "
                        "(1 to %d)",
                        from, version, newest);
    if (rc == 0)
        rc = lite_open(db, opts, &dst, err);
    if (rc == 0)
        rc = copy_db(dst->conn, src, "restore", err);
    lite_close(dst);
    sqlite3_close(src);
    return rc;
}

/* ---- the pool's checkpointer ---- */

struct lite_pool {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    struct srv_sql_conn *conn;
    pthread_t thread;
    int started, wanted, stop;
};

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
    struct lite_pool *p = user;
    if (pages >= CHECKPOINT_PAGES) {
        pthread_mutex_lock(&p->mu);
        p->wanted = 1;
        pthread_cond_signal(&p->cv);
        pthread_mutex_unlock(&p->mu);
    }
    return SQLITE_OK;
}

static void *
checkpointer(void *arg)
{
    struct lite_pool *p = arg;
    pthread_mutex_lock(&p->mu);
    while (!p->stop) {
        if (!p->wanted) {
            pthread_cond_wait(&p->cv, &p->mu);
            continue;
        }
        p->wanted = 0;
        pthread_mutex_unlock(&p->mu);
        /* PASSIVE: copies what no reader still needs, never waits for readers or writers. */
        int rc = sqlite3_wal_checkpoint_v2(p->conn->conn, NULL, SQLITE_CHECKPOINT_PASSIVE, NULL,
                                           NULL);
        if (rc != SQLITE_OK && (rc & 0xff) != SQLITE_BUSY && (rc & 0xff) != SQLITE_LOCKED)
            SRV_LOG(GD_LOG_WARN, NULL, "checkpoint: %s", sqlite3_errmsg(p->conn->conn));
        pthread_mutex_lock(&p->mu);
    }
    pthread_mutex_unlock(&p->mu);
    return NULL;
}

static void
lite_pool_stop(void *pool)
{
    struct lite_pool *p = pool;
    if (p == NULL)
        return;
    if (p->started) {
        pthread_mutex_lock(&p->mu);
        p->stop = 1;
        pthread_cond_signal(&p->cv);
        pthread_mutex_unlock(&p->mu);
        pthread_join(p->thread, NULL);
    }
    lite_close(p->conn);
    pthread_mutex_destroy(&p->mu);
    pthread_cond_destroy(&p->cv);
    free(p);
}

static int
lite_pool_start(const char *db, const struct srv_db_opts *opts, void **out, struct gd_err *err)
{
    struct lite_pool *p = calloc(1, sizeof *p);
    if (p == NULL)
        return gd_err_set(err, GD_ENOMEM, "out of memory");
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->cv, NULL);
    int rc = lite_open(db, opts, &p->conn, err);
    if (rc == 0) {
        if (pthread_create(&p->thread, NULL, checkpointer, p) == 0)
            p->started = 1;
        else
            rc = gd_err_set(err, GD_EIO, "cannot start the checkpoint thread");
    }
    if (rc != 0) {
        lite_pool_stop(p);
        return rc;
    }
    *out = p;
    return 0;
}

/* A pooled connection: its checkpoints are the checkpointer's. */
static void
lite_pool_attach(void *pool, struct srv_sql_conn *c)
{
    sqlite3_wal_hook(c->conn, wal_hook, pool);
}

static void
lite_memory(int64_t *used, int64_t *highwater)
{
    *used = (int64_t)sqlite3_memory_used();
    *highwater = (int64_t)sqlite3_memory_highwater(0);
}

static void
lite_describe(const char *db, char *out, size_t size)
{
    snprintf(out, size, "SQLite file %s", db);
}

const struct srv_sql_backend srv_sql_sqlite = {
    .name = "sqlite",
    .dialect = SRV_SQL_SQLITE,
    .claims = lite_claims,
    .open = lite_open,
    .close = lite_close,
    .broken = lite_broken,
    .exec = lite_exec,
    .prepare = lite_prepare,
    .finalize = lite_finalize,
    .reset = lite_reset,
    .bind_null = lite_bind_null,
    .bind_int64 = lite_bind_int64,
    .bind_double = lite_bind_double,
    .bind_text = lite_bind_text,
    .bind_blob = lite_bind_blob,
    .step = lite_step,
    .is_null = lite_is_null,
    .col_int64 = lite_col_int64,
    .col_double = lite_col_double,
    .col_text = lite_col_text,
    .col_blob = lite_col_blob,
    .changes = lite_changes,
    .begin = lite_begin,
    .commit = lite_commit,
    .rollback = lite_rollback,
    .lock_key = lite_lock_key,
    .version = lite_version,
    .set_version = lite_set_version,
    .migrations = srv_migrations,
    .n_migrations = &srv_migration_count,
    .blob_insert = lite_blob_insert,
    .piece_size = lite_piece_size,
    .piece_read = lite_piece_read,
    .piece_close = lite_piece_close,
    .backup = lite_backup,
    .restore = lite_restore,
    .pool_start = lite_pool_start,
    .pool_stop = lite_pool_stop,
    .pool_attach = lite_pool_attach,
    .memory = lite_memory,
    .describe = lite_describe,
};
