/*
 * sql.h: the storage backends under db.h. gpudiffd keeps its data in SQLite (one file, the
 * default) or in PostgreSQL (--db postgresql://..., many daemons on one database); each is a
 * const vtable of the primitives every query of db_*.c is written on: connections,
 * statements with bound parameters, transactions and their locks, the compressed blobs
 * streamed in and out in pieces, the schema's version and migrations, backups. Like the
 * engine's backends (engine/core/internal.h) and curl's vtls, the registry is a
 * NULL-terminated list of vtables, each #ifdef-gated (sql.c); db.c picks the one whose
 * `claims` accepts the --db value (docs/ARCHITECTURE.md, "Storage backends").
 *
 * The queries are written once, in the SQL both engines read the same way (parameters as
 * ?N, CAST where PostgreSQL could not infer a parameter's type); the few that differ
 * (JSON paths, string search) pick their text by the backend's dialect.
 *
 * A connection and its statements are used by one thread at a time. Every function that
 * can fail returns 0 or a negative GD_E* / SRV_E* code with err filled (may be NULL): a
 * database that is busy, locked or gone away is SRV_EBUSY (the request may be retried),
 * out of memory GD_ENOMEM, anything else GD_EIO.
 */
#ifndef GPUDIFF_SERVER_SQL_H
#define GPUDIFF_SERVER_SQL_H

#include <stddef.h>
#include <stdint.h>

#include <sqlite3.h>

#include "gpudiff/error.h"

struct srv_db_opts;   /* db.h */
struct srv_blob_spill; /* db.h */
struct srv_db;

enum srv_sql_dialect { SRV_SQL_SQLITE = 0, SRV_SQL_PG = 1 };

/* What srv_sql_step() returns besides an error code. */
enum { SRV_SQL_DONE = 0, SRV_SQL_ROW = 1 };

/*
 * How a write transaction locks. Every write transaction is SRV_TX_WRITE, which excludes
 * every other write transaction of every daemon on the database, as SQLite's one writer
 * does: a transaction's reads then see what it decides on, whichever backend. A layer
 * upload's commit, the bulk of the writes, is SRV_TX_SHARED: it runs beside other shared
 * ones and excludes only SRV_TX_WRITE; shared transactions that could meet (two uploads of
 * one tensor) serialize on srv_db_lock_key() of what they share (its SHA-256). SQLite has
 * one writer at a time, so there both kinds are the same.
 */
enum srv_tx { SRV_TX_WRITE, SRV_TX_SHARED };

/* The two columns read in pieces: a blob's compressed data, a cached diff's JSON text. */
enum srv_sql_piece { SRV_PIECE_BLOB, SRV_PIECE_DIFF };

struct srv_sql_conn; /* a backend's connection */
struct srv_sql_stmt; /* a backend's prepared statement */
struct srv_sql_piece_handle; /* a backend's open column, kept between piece reads */

/* One schema migration, embedded from schema/sql/ (SQLite) or schema/pg/ (PostgreSQL). */
struct srv_migration {
    int version;
    const char *name;
    const char *sql;
};

struct srv_sql_backend {
    const char *name; /* "sqlite", "postgresql" */
    enum srv_sql_dialect dialect;
    /* 1 when `db` (the --db setting) names a database of this backend. */
    int (*claims)(const char *db);

    /* Opens a connection (SQLite: creates the file, 0600); does not migrate. */
    int (*open)(const char *db, const struct srv_db_opts *opts, struct srv_sql_conn **out,
                struct gd_err *err);
    void (*close)(struct srv_sql_conn *c);
    /* 1 when the connection is broken (the server went away): it is closed, not pooled. */
    int (*broken)(struct srv_sql_conn *c);
    /* Runs text of one or more statements without parameters (migrations, tests). */
    int (*exec)(struct srv_sql_conn *c, const char *sql, struct gd_err *err);

    /* A statement of sql (parameters ?1, ?2, ... or ?); `once`: it will not be cached. */
    int (*prepare)(struct srv_sql_conn *c, const char *sql, int once, struct srv_sql_stmt **out,
                   struct gd_err *err);
    void (*finalize)(struct srv_sql_stmt *st);
    /* Ends the current execution (no row, snapshot or lock held) and unbinds the values. */
    void (*reset)(struct srv_sql_stmt *st);
    /* Parameters count from 1; one left unbound is NULL. Text is copied; a blob is not and
       must stay valid until the statement is reset. */
    void (*bind_null)(struct srv_sql_stmt *st, int i);
    void (*bind_int64)(struct srv_sql_stmt *st, int i, int64_t v);
    void (*bind_double)(struct srv_sql_stmt *st, int i, double v);
    void (*bind_text)(struct srv_sql_stmt *st, int i, const char *s);
    void (*bind_blob)(struct srv_sql_stmt *st, int i, const void *p, size_t n);
    /* SRV_SQL_ROW, SRV_SQL_DONE, or an error code. The first step executes. */
    int (*step)(struct srv_sql_stmt *st, struct gd_err *err);
    /* The current row's columns, from 0; text and blobs stay valid until the next step. */
    int (*is_null)(struct srv_sql_stmt *st, int col);
    int64_t (*col_int64)(struct srv_sql_stmt *st, int col); /* booleans are 0 and 1 */
    double (*col_double)(struct srv_sql_stmt *st, int col);
    const char *(*col_text)(struct srv_sql_stmt *st, int col); /* NULL for NULL */
    const void *(*col_blob)(struct srv_sql_stmt *st, int col, size_t *len);
    /* Rows the last execution inserted, updated or deleted. */
    int64_t (*changes)(struct srv_sql_stmt *st);

    /* BEGIN with the locks of kind, waiting for them at most busy_ms (then SRV_EBUSY). */
    int (*begin)(struct srv_sql_conn *c, enum srv_tx kind, int busy_ms, struct gd_err *err);
    int (*commit)(struct srv_sql_conn *c, struct gd_err *err);
    /* Rolls back when a transaction is open (and releases its locks); else nothing. */
    void (*rollback)(struct srv_sql_conn *c);
    /* Inside a SRV_TX_SHARED transaction: waits for the others holding key. */
    int (*lock_key)(struct srv_sql_conn *c, const char *key, struct gd_err *err);

    /* The schema version (0 for an empty database); set inside a migration's transaction. */
    int (*version)(struct srv_sql_conn *c, int *version, struct gd_err *err);
    int (*set_version)(struct srv_sql_conn *c, int version, struct gd_err *err);
    const struct srv_migration *migrations;
    const int *n_migrations;

    /* Stores a new blob row from a spill file, streamed; inside the caller's transaction. */
    int (*blob_insert)(struct srv_sql_conn *c, const char *sha256,
                       const struct srv_blob_spill *spill, int64_t now, struct gd_err *err);
    /*
     * Reads n bytes at off of a blob's data or a cached diff's text, the row by its id
     * (never reused). *handle (NULL at first) may keep the column open for the next reads;
     * piece_close() ends it before the connection is released. piece_size() gives its size.
     */
    int (*piece_size)(struct srv_sql_conn *c, enum srv_sql_piece what, int64_t id,
                      uint64_t *size, struct gd_err *err);
    int (*piece_read)(struct srv_sql_conn *c, enum srv_sql_piece what, int64_t id,
                      struct srv_sql_piece_handle **handle, uint64_t off, void *buf, size_t n,
                      struct gd_err *err);
    void (*piece_close)(struct srv_sql_piece_handle **handle);

    /*
     * `gpudiffd backup --to FILE`: an online, consistent copy of the database db into a new
     * file (made whole, then renamed into place). `restore`: the copy back into db.
     */
    int (*backup)(const char *db, const struct srv_db_opts *opts, const char *to,
                  struct gd_err *err);
    int (*restore)(const char *db, const struct srv_db_opts *opts, const char *from,
                   struct gd_err *err);

    /*
     * Optional (NULL: none): what the pool of a daemon's connections needs besides them
     * (SQLite: the checkpoint thread), and what each pooled connection is given.
     */
    int (*pool_start)(const char *db, const struct srv_db_opts *opts, void **pool,
                      struct gd_err *err);
    void (*pool_stop)(void *pool);
    void (*pool_attach)(void *pool, struct srv_sql_conn *c);
    /* Optional: the library's own memory in use and its peak, for /metrics. */
    void (*memory)(int64_t *used, int64_t *highwater);
    /* A description of the database for the start-up log (no password). */
    void (*describe)(const char *db, char *out, size_t size);
};

/* The backends built in, NULL-terminated (sql.c). */
extern const struct srv_sql_backend *const srv_sql_backends[];

/* The backend that claims db (SQLite claims what no other does). */
const struct srv_sql_backend *srv_sql_backend_for(const char *db);

/* The backends by name, for --help: "sqlite, postgresql". */
const char *srv_sql_backend_names(void);

extern const struct srv_sql_backend srv_sql_sqlite;
#ifdef GD_HAVE_PQ
extern const struct srv_sql_backend srv_sql_pg;
#endif

/* ---- statements (db.c): what db_*.c calls ---- */

/* A statement from srv_db_prepare(); its functions dispatch to the backend. */
struct srv_stmt {
    const struct srv_sql_backend *be;
    struct srv_sql_stmt *h;
};

/* The dialect of db's backend (which text of a dialect-specific query to use). */
enum srv_sql_dialect srv_db_dialect(const struct srv_db *db);
const struct srv_sql_backend *srv_db_backend(const struct srv_db *db);
struct srv_sql_conn *srv_db_sql_conn(struct srv_db *db);

/*
 * A prepared statement for sql, cached in db by the address of sql (so sql must be a string
 * literal or static). Reset and unbound when given out; callers end with srv_stmt_done().
 */
int srv_db_prepare(struct srv_db *db, const char *sql, struct srv_stmt **st, struct gd_err *err);

/* A statement of text made at run time; finalize it with srv_stmt_free(). */
int srv_db_prepare_once(struct srv_db *db, const char *sql, struct srv_stmt *st,
                        struct gd_err *err);
void srv_stmt_free(struct srv_stmt *st);

/* Ends a statement's execution so it holds no row, snapshot or lock. Accepts NULL. */
void srv_stmt_done(struct srv_stmt *st);

static inline void
srv_stmt_bind_null(struct srv_stmt *st, int i)
{
    st->be->bind_null(st->h, i);
}
static inline void
srv_stmt_bind_int64(struct srv_stmt *st, int i, int64_t v)
{
    st->be->bind_int64(st->h, i, v);
}
static inline void
srv_stmt_bind_double(struct srv_stmt *st, int i, double v)
{
    st->be->bind_double(st->h, i, v);
}
/* Binds text; NULL binds SQL NULL. */
static inline void
srv_stmt_bind_text(struct srv_stmt *st, int i, const char *s)
{
    if (s == NULL)
        st->be->bind_null(st->h, i);
    else
        st->be->bind_text(st->h, i, s);
}
static inline void
srv_stmt_bind_blob(struct srv_stmt *st, int i, const void *p, size_t n)
{
    st->be->bind_blob(st->h, i, p, n);
}

/* SRV_SQL_ROW, SRV_SQL_DONE or an error code with err filled, prefixed with `what`. */
int srv_stmt_step(struct srv_stmt *st, const char *what, struct gd_err *err);

/* Steps a statement that returns no row and ends it: 0 or an error code. */
int srv_stmt_exec(struct srv_stmt *st, const char *what, struct gd_err *err);

static inline int
srv_stmt_null(struct srv_stmt *st, int col)
{
    return st->be->is_null(st->h, col);
}
static inline int64_t
srv_stmt_int64(struct srv_stmt *st, int col)
{
    return st->be->col_int64(st->h, col);
}
static inline int
srv_stmt_int(struct srv_stmt *st, int col)
{
    return (int)st->be->col_int64(st->h, col);
}
static inline double
srv_stmt_double(struct srv_stmt *st, int col)
{
    return st->be->col_double(st->h, col);
}
/* The text of a column; "" for NULL (callers that care ask srv_stmt_null() first). */
static inline const char *
srv_stmt_text(struct srv_stmt *st, int col)
{
    const char *t = st->be->col_text(st->h, col);
    return t != NULL ? t : "";
}
static inline const void *
srv_stmt_blob(struct srv_stmt *st, int col, size_t *len)
{
    return st->be->col_blob(st->h, col, len);
}
static inline int64_t
srv_stmt_changes(struct srv_stmt *st)
{
    return st->be->changes(st->h);
}

/* Runs SQL text without parameters on db (tests and migrations). */
int srv_db_exec(struct srv_db *db, const char *sql, struct gd_err *err);

/* The SQLite connection of db, NULL on another backend (the SQLite unit tests use it). */
sqlite3 *srv_db_conn(struct srv_db *db);

/* ---- what both backends share (sql.c) ---- */

/*
 * Rewrites SQLite's parameters (?N and bare ?) as PostgreSQL's ($N), outside quotes; out
 * must hold 2 * strlen(sql) + 1 bytes. Returns the number of parameters (the largest N).
 */
int srv_sql_numbered(const char *sql, char *out, size_t size);

#endif
