/*
 * sql_pg.c: the PostgreSQL backend (sql.h), through libpq: --db postgresql://... Several
 * gpudiffd on one database share everything through it, so the locking that SQLite gets
 * from being one file is made explicit here with advisory locks (enum srv_tx): a write
 * transaction takes one lock exclusively, an upload's commit takes it shared plus a lock on
 * its tensor's hash. Blobs go in with COPY (streamed from the spill file in pieces, never
 * held whole) and come out in byte ranges of an uncompressed, out-of-line bytea, so memory
 * stays bounded both ways as with SQLite. Statements are prepared once per connection on
 * first use, their parameters sent as text (bytea in binary).
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <libpq-fe.h>

#include "db.h"
#include "sql.h"

/* Pieces of a spill file sent per COPY message. */
#define PIECE ((size_t)256 * 1024)
/* The advisory lock every write transaction takes ('gpud'), and the key space of hashes. */
#define WRITE_LOCK  0x67707564LL
#define KEY_SPACE   0x67706b
#define BYTEA_OID   17
#define BOOL_OID    16
#define PARAMS_MAX  128

struct srv_sql_conn {
    PGconn *pg;
    int in_tx;
    unsigned next_name;
    int pieces_prepared;
};

struct srv_sql_stmt {
    struct srv_sql_conn *c;
    char *sql; /* with $N parameters */
    char name[24];
    int once, prepared, executed;
    int n_params;
    char *values[PARAMS_MAX];
    int lengths[PARAMS_MAX], formats[PARAMS_MAX];
    unsigned char owned[PARAMS_MAX];
    char scratch[PARAMS_MAX][32]; /* numbers as text */
    PGresult *res;
    int row, n_rows;
    int64_t changes;
    /* the current row's bytea columns, decoded on demand */
    int dec_row, dec_col;
    unsigned char *dec;
    size_t dec_len;
};

struct srv_sql_piece_handle {
    int unused;
};

/* The first line of libpq's message, without its "ERROR:  " and line end. */
static void
first_line(const char *msg, char *out, size_t size)
{
    if (msg == NULL)
        msg = "";
    if (strncmp(msg, "ERROR:  ", 8) == 0)
        msg += 8;
    size_t n = strcspn(msg, "\n");
    snprintf(out, size, "%.*s", (int)n, msg);
}

/*
 * A failure as a code: what may pass (the lock or the connection, a serialization or a
 * deadlock, the server shutting down or full of connections) is SRV_EBUSY, so a client
 * retries; the rest GD_EIO.
 */
static int
fail(PGconn *pg, const PGresult *r, const char *what, struct gd_err *err)
{
    char msg[300];
    first_line(r != NULL ? PQresultErrorMessage(r) : PQerrorMessage(pg), msg, sizeof msg);
    if (msg[0] == '\0')
        first_line(PQerrorMessage(pg), msg, sizeof msg);
    const char *state = r != NULL ? PQresultErrorField(r, PG_DIAG_SQLSTATE) : NULL;
    if (pg == NULL || PQstatus(pg) != CONNECTION_OK)
        return gd_err_set(err, SRV_EBUSY, "%s: the database connection was lost, retry (%s)", what,
                          msg);
    if (state != NULL &&
        (strncmp(state, "08", 2) == 0 || strcmp(state, "40001") == 0 ||
         strcmp(state, "40P01") == 0 || strcmp(state, "55P03") == 0 ||
         strcmp(state, "57014") == 0 || strncmp(state, "57P0", 4) == 0 ||
         strcmp(state, "53300") == 0))
        return gd_err_set(err, SRV_EBUSY, "%s: the database is busy, retry (%s)", what, msg);
    if (state != NULL && strcmp(state, "53200") == 0)
        return gd_err_set(err, GD_ENOMEM, "%s: the database is out of memory (%s)", what, msg);
    return gd_err_set(err, GD_EIO, "%s: %s", what, msg);
}

static int
command(struct srv_sql_conn *c, const char *sql, ExecStatusType want, const char *what,
        struct gd_err *err)
{
    PGresult *r = PQexec(c->pg, sql);
    int rc = PQresultStatus(r) == want ? 0 : fail(c->pg, r, what, err);
    PQclear(r);
    return rc;
}

static int
pg_claims(const char *db)
{
    return strncmp(db, "postgresql://", 13) == 0 || strncmp(db, "postgres://", 11) == 0;
}

/* Notices (a CREATE ... IF NOT EXISTS that found the table) are nobody's business. */
static void
quiet(void *arg, const char *message)
{
    (void)arg;
    (void)message;
}

static void
pg_close(struct srv_sql_conn *c)
{
    if (c == NULL)
        return;
    PQfinish(c->pg);
    free(c);
}

static int
pg_open(const char *db, const struct srv_db_opts *opts, struct srv_sql_conn **out,
        struct gd_err *err)
{
    struct srv_sql_conn *c = calloc(1, sizeof *c);
    if (c == NULL)
        return gd_err_set(err, GD_ENOMEM, "out of memory");
    const char *keys[] = {"dbname", "fallback_application_name", "connect_timeout", NULL};
    const char *values[] = {db, "gpudiffd", "10", NULL};
    c->pg = PQconnectdbParams(keys, values, 1);
    if (c->pg == NULL || PQstatus(c->pg) != CONNECTION_OK) {
        char msg[300], where[300];
        first_line(c->pg != NULL ? PQerrorMessage(c->pg) : "out of memory", msg, sizeof msg);
        srv_sql_pg.describe(db, where, sizeof where);
        gd_err_set(err, SRV_EBUSY, "%s: cannot connect: %s", where, msg);
        pg_close(c);
        return SRV_EBUSY;
    }
    PQsetNoticeProcessor(c->pg, quiet, NULL);
    /*
     * A lock (the write lock of another daemon, a row) is waited for at most the busy
     * timeout, as SQLite's writers wait; then the request is answered 503 busy.
     */
    char set[160];
    snprintf(set, sizeof set,
             "SET lock_timeout = %d; SET idle_in_transaction_session_timeout = 600000; "
             "SET client_min_messages = warning",
             opts->busy_timeout_ms > 0 ? opts->busy_timeout_ms : 1);
    int rc = command(c, set, PGRES_COMMAND_OK, "session settings", err);
    if (rc != 0) {
        pg_close(c);
        return rc;
    }
    *out = c;
    return 0;
}

static int
pg_broken(struct srv_sql_conn *c)
{
    return PQstatus(c->pg) != CONNECTION_OK;
}

static int
pg_exec(struct srv_sql_conn *c, const char *sql, struct gd_err *err)
{
    PGresult *r = PQexec(c->pg, sql);
    ExecStatusType s = PQresultStatus(r);
    int rc = s == PGRES_COMMAND_OK || s == PGRES_TUPLES_OK ? 0 : fail(c->pg, r, "database", err);
    PQclear(r);
    return rc;
}

/* ---- statements ---- */

static void
unbind(struct srv_sql_stmt *s)
{
    for (int i = 0; i < s->n_params; i++) {
        if (s->owned[i])
            free(s->values[i]);
        s->values[i] = NULL;
        s->owned[i] = 0;
        s->lengths[i] = 0;
        s->formats[i] = 0;
    }
}

static void
pg_reset(struct srv_sql_stmt *s)
{
    PQclear(s->res);
    s->res = NULL;
    s->executed = 0;
    s->row = -1;
    s->n_rows = 0;
    free(s->dec);
    s->dec = NULL;
    s->dec_row = s->dec_col = -1;
    unbind(s);
}

static int
pg_prepare(struct srv_sql_conn *c, const char *sql, int once, struct srv_sql_stmt **out,
           struct gd_err *err)
{
    struct srv_sql_stmt *s = calloc(1, sizeof *s);
    size_t size = 2 * strlen(sql) + 64;
    if (s == NULL || (s->sql = malloc(size)) == NULL) {
        free(s);
        return gd_err_set(err, GD_ENOMEM, "out of memory");
    }
    s->c = c;
    s->once = once;
    s->n_params = srv_sql_numbered(sql, s->sql, size);
    if (s->n_params > PARAMS_MAX) {
        free(s->sql);
        free(s);
        return gd_err_set(err, SRV_EINTERNAL, "a statement with more than %d parameters",
                          PARAMS_MAX);
    }
    if (!once)
        snprintf(s->name, sizeof s->name, "gd%u", ++c->next_name);
    s->row = -1;
    s->dec_row = s->dec_col = -1;
    *out = s;
    return 0;
}

static void
pg_finalize(struct srv_sql_stmt *s)
{
    if (s == NULL)
        return;
    pg_reset(s);
    if (s->prepared && PQstatus(s->c->pg) == CONNECTION_OK) {
        char sql[64];
        snprintf(sql, sizeof sql, "DEALLOCATE %s", s->name);
        PQclear(PQexec(s->c->pg, sql));
    }
    free(s->sql);
    free(s);
}

static int
param_slot(struct srv_sql_stmt *s, int i)
{
    if (i < 1 || i > s->n_params)
        return -1;
    int k = i - 1;
    if (s->owned[k])
        free(s->values[k]);
    s->values[k] = NULL;
    s->owned[k] = 0;
    s->lengths[k] = 0;
    s->formats[k] = 0;
    return k;
}

static void
pg_bind_null(struct srv_sql_stmt *s, int i)
{
    param_slot(s, i);
}

static void
pg_bind_int64(struct srv_sql_stmt *s, int i, int64_t v)
{
    int k = param_slot(s, i);
    if (k < 0)
        return;
    snprintf(s->scratch[k], sizeof s->scratch[k], "%lld", (long long)v);
    s->values[k] = s->scratch[k];
}

static void
pg_bind_double(struct srv_sql_stmt *s, int i, double v)
{
    int k = param_slot(s, i);
    if (k < 0)
        return;
    if (v != v)
        snprintf(s->scratch[k], sizeof s->scratch[k], "NaN");
    else if (v > 1.7976931348623157e308)
        snprintf(s->scratch[k], sizeof s->scratch[k], "Infinity");
    else if (v < -1.7976931348623157e308)
        snprintf(s->scratch[k], sizeof s->scratch[k], "-Infinity");
    else
        snprintf(s->scratch[k], sizeof s->scratch[k], "%.17g", v);
    s->values[k] = s->scratch[k];
}

static void
pg_bind_text(struct srv_sql_stmt *s, int i, const char *t)
{
    int k = param_slot(s, i);
    if (k < 0)
        return;
    s->values[k] = strdup(t);
    s->owned[k] = s->values[k] != NULL;
}

static void
pg_bind_blob(struct srv_sql_stmt *s, int i, const void *p, size_t n)
{
    int k = param_slot(s, i);
    if (k < 0)
        return;
    s->values[k] = (char *)p;
    s->lengths[k] = (int)n;
    s->formats[k] = 1; /* binary: bytea's binary form is its bytes */
}

static int
pg_step(struct srv_sql_stmt *s, struct gd_err *err)
{
    PGconn *pg = s->c->pg;
    if (!s->executed) {
        if (!s->once && !s->prepared) {
            PGresult *r = PQprepare(pg, s->name, s->sql, 0, NULL);
            int ok = PQresultStatus(r) == PGRES_COMMAND_OK;
            int rc = ok ? 0 : fail(pg, r, "database", err);
            PQclear(r);
            if (!ok)
                return rc;
            s->prepared = 1;
        }
        const char *const *values = (const char *const *)s->values;
        s->res = s->once ? PQexecParams(pg, s->sql, s->n_params, NULL, values, s->lengths,
                                        s->formats, 0)
                         : PQexecPrepared(pg, s->name, s->n_params, values, s->lengths,
                                          s->formats, 0);
        ExecStatusType st = PQresultStatus(s->res);
        if (st != PGRES_TUPLES_OK && st != PGRES_COMMAND_OK) {
            int rc = fail(pg, s->res, "database", err);
            PQclear(s->res);
            s->res = NULL;
            return rc;
        }
        s->executed = 1;
        s->n_rows = st == PGRES_TUPLES_OK ? PQntuples(s->res) : 0;
        const char *n = PQcmdTuples(s->res);
        s->changes = n != NULL && n[0] != '\0' ? strtoll(n, NULL, 10) : 0;
        s->row = -1;
    }
    if (s->row + 1 < s->n_rows) {
        s->row++;
        return SRV_SQL_ROW;
    }
    s->row = s->n_rows;
    return SRV_SQL_DONE;
}

static int
in_row(const struct srv_sql_stmt *s, int col)
{
    return s->res != NULL && s->row >= 0 && s->row < s->n_rows && col >= 0 &&
           col < PQnfields(s->res);
}

static int
pg_is_null(struct srv_sql_stmt *s, int col)
{
    return !in_row(s, col) || PQgetisnull(s->res, s->row, col);
}

static int64_t
pg_col_int64(struct srv_sql_stmt *s, int col)
{
    if (pg_is_null(s, col))
        return 0;
    const char *v = PQgetvalue(s->res, s->row, col);
    if (PQftype(s->res, col) == BOOL_OID)
        return v[0] == 't';
    return strtoll(v, NULL, 10);
}

static double
pg_col_double(struct srv_sql_stmt *s, int col)
{
    if (pg_is_null(s, col))
        return 0;
    return strtod(PQgetvalue(s->res, s->row, col), NULL);
}

static int
hex(int ch)
{
    return ch >= '0' && ch <= '9' ? ch - '0' : ch >= 'a' && ch <= 'f' ? ch - 'a' + 10 : -1;
}

/* A bytea column of the current row, as bytes (text results give it as \x and hex). */
static const void *
bytea(struct srv_sql_stmt *s, int col, size_t *len)
{
    if (s->dec != NULL && s->dec_row == s->row && s->dec_col == col) {
        *len = s->dec_len;
        return s->dec;
    }
    free(s->dec);
    s->dec = NULL;
    const char *v = PQgetvalue(s->res, s->row, col);
    size_t n = strlen(v);
    if (n < 2 || v[0] != '\\' || v[1] != 'x' || (n - 2) % 2 != 0)
        return NULL;
    unsigned char *out = malloc((n - 2) / 2 + 1);
    if (out == NULL)
        return NULL;
    size_t k = 0;
    for (size_t i = 2; i + 1 < n; i += 2) {
        int hi = hex(v[i]), lo = hex(v[i + 1]);
        if (hi < 0 || lo < 0) {
            free(out);
            return NULL;
        }
        out[k++] = (unsigned char)(hi << 4 | lo);
    }
    out[k] = '\0';
    s->dec = out;
    s->dec_len = k;
    s->dec_row = s->row;
    s->dec_col = col;
    *len = k;
    return out;
}

static const char *
pg_col_text(struct srv_sql_stmt *s, int col)
{
    if (pg_is_null(s, col))
        return NULL;
    if (PQftype(s->res, col) == BYTEA_OID) {
        size_t n;
        return bytea(s, col, &n);
    }
    return PQgetvalue(s->res, s->row, col);
}

static const void *
pg_col_blob(struct srv_sql_stmt *s, int col, size_t *len)
{
    *len = 0;
    if (pg_is_null(s, col))
        return NULL;
    if (PQftype(s->res, col) == BYTEA_OID)
        return bytea(s, col, len);
    *len = (size_t)PQgetlength(s->res, s->row, col);
    return PQgetvalue(s->res, s->row, col);
}

static int64_t
pg_changes(struct srv_sql_stmt *s)
{
    return s->changes;
}

/* ---- transactions ---- */

static int
pg_begin(struct srv_sql_conn *c, enum srv_tx kind, int busy_ms, struct gd_err *err)
{
    (void)busy_ms; /* lock_timeout, set when the connection was opened */
    char sql[96];
    snprintf(sql, sizeof sql, "BEGIN; SELECT pg_advisory_xact_lock%s(%lld)",
             kind == SRV_TX_SHARED ? "_shared" : "", (long long)WRITE_LOCK);
    PGresult *r = PQexec(c->pg, sql);
    c->in_tx = PQtransactionStatus(c->pg) != PQTRANS_IDLE;
    int rc = PQresultStatus(r) == PGRES_TUPLES_OK ? 0 : fail(c->pg, r, "BEGIN", err);
    PQclear(r);
    if (rc != 0 && c->in_tx) {
        PQclear(PQexec(c->pg, "ROLLBACK"));
        c->in_tx = 0;
    }
    if (rc == SRV_EBUSY && err != NULL) {
        char why[sizeof err->msg];
        snprintf(why, sizeof why, "%s", err->msg);
        gd_err_set(err, SRV_EBUSY, "%s (the write lock of the database)", why);
    }
    return rc;
}

static void
pg_rollback(struct srv_sql_conn *c)
{
    if (PQtransactionStatus(c->pg) != PQTRANS_IDLE && PQstatus(c->pg) == CONNECTION_OK)
        PQclear(PQexec(c->pg, "ROLLBACK"));
    c->in_tx = 0;
}

static int
pg_commit(struct srv_sql_conn *c, struct gd_err *err)
{
    int rc = command(c, "COMMIT", PGRES_COMMAND_OK, "COMMIT", err);
    c->in_tx = 0;
    return rc;
}

static int
pg_lock_key(struct srv_sql_conn *c, const char *key, struct gd_err *err)
{
    const char *values[1] = {key};
    char sql[96];
    snprintf(sql, sizeof sql, "SELECT pg_advisory_xact_lock(%d, hashtext($1))", KEY_SPACE);
    PGresult *r = PQexecParams(c->pg, sql, 1, NULL, values, NULL, NULL, 0);
    int rc = PQresultStatus(r) == PGRES_TUPLES_OK ? 0 : fail(c->pg, r, "lock", err);
    PQclear(r);
    return rc;
}

/* ---- schema version: one row of gpudiff_schema ---- */

static int
pg_version(struct srv_sql_conn *c, int *version, struct gd_err *err)
{
    PGresult *r = PQexec(c->pg, "SELECT to_regclass('gpudiff_schema') IS NOT NULL");
    int rc = PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) == 1
                 ? 0
                 : fail(c->pg, r, "schema version", err);
    int exists = rc == 0 && PQgetvalue(r, 0, 0)[0] == 't';
    PQclear(r);
    *version = 0;
    if (rc != 0 || !exists)
        return rc;
    r = PQexec(c->pg, "SELECT max(version) FROM gpudiff_schema");
    if (PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) == 1) {
        *version = PQgetisnull(r, 0, 0) ? 0 : atoi(PQgetvalue(r, 0, 0));
    } else {
        rc = fail(c->pg, r, "schema version", err);
    }
    PQclear(r);
    return rc;
}

static int
pg_set_version(struct srv_sql_conn *c, int version, struct gd_err *err)
{
    char sql[200];
    snprintf(sql, sizeof sql,
             "CREATE TABLE IF NOT EXISTS gpudiff_schema (version integer NOT NULL); "
             "DELETE FROM gpudiff_schema; INSERT INTO gpudiff_schema VALUES (%d)",
             version);
    return command(c, sql, PGRES_COMMAND_OK, "schema version", err);
}

/* ---- blobs ---- */

static void
put16(unsigned char *p, int v)
{
    p[0] = (unsigned char)(v >> 8);
    p[1] = (unsigned char)v;
}

static void
put32(unsigned char *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (unsigned char)(v >> (24 - 8 * i));
}

static void
put64(unsigned char *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (unsigned char)(v >> (56 - 8 * i));
}

/* Appends one field of COPY's binary format: its length, then its bytes. */
static size_t
field(unsigned char *buf, size_t at, const void *data, size_t len)
{
    put32(buf + at, (uint32_t)len);
    memcpy(buf + at + 4, data, len);
    return at + 4 + len;
}

/*
 * COPY ... FROM STDIN in binary: the row's small fields, then the data's length and the
 * spill file's bytes in pieces, so the daemon never holds a tensor whole.
 */
static int
pg_blob_insert(struct srv_sql_conn *c, const char *sha256, const struct srv_blob_spill *spill,
               int64_t now, struct gd_err *err)
{
    if (spill->stored_size > (uint64_t)0x3fffffff)
        return gd_err_set(err, GD_ERANGE,
                          "compressed data of %llu bytes is over PostgreSQL's limit of 1 GiB",
                          (unsigned long long)spill->stored_size);
    PGresult *r = PQexec(c->pg, "COPY blobs(sha256, dtype, elem_size, raw_size, stored_size, "
                                "codec, created_at, data) FROM STDIN WITH (FORMAT binary)");
    if (PQresultStatus(r) != PGRES_COPY_IN) {
        int rc = fail(c->pg, r, "blob insert", err);
        PQclear(r);
        return rc;
    }
    PQclear(r);
    unsigned char *buf = malloc(PIECE + 1024);
    if (buf == NULL) {
        PQputCopyEnd(c->pg, "out of memory");
        PQclear(PQgetResult(c->pg));
        return gd_err_set(err, GD_ENOMEM, "out of memory");
    }
    static const unsigned char sig[11] = {'P', 'G', 'C', 'O', 'P', 'Y', '\n', 0xff, '\r', '\n', 0};
    size_t n = 0;
    memcpy(buf, sig, sizeof sig);
    n = sizeof sig;
    put32(buf + n, 0); /* flags */
    put32(buf + n + 4, 0); /* header extension */
    n += 8;
    put16(buf + n, 8); /* fields in the row */
    n += 2;
    unsigned char num[8];
    n = field(buf, n, sha256, strlen(sha256));
    n = field(buf, n, spill->dtype, strlen(spill->dtype));
    put32(num, (uint32_t)spill->elem_size);
    n = field(buf, n, num, 4);
    put64(num, spill->raw_size);
    n = field(buf, n, num, 8);
    put64(num, spill->stored_size);
    n = field(buf, n, num, 8);
    n = field(buf, n, spill->codec, strlen(spill->codec));
    put64(num, (uint64_t)now);
    n = field(buf, n, num, 8);
    put32(buf + n, (uint32_t)spill->stored_size);
    n += 4;
    int rc = 0;
    char why[200] = "";
    if (PQputCopyData(c->pg, (const char *)buf, (int)n) != 1)
        rc = fail(c->pg, NULL, "blob insert", err);
    uint64_t off = 0;
    while (rc == 0 && off < spill->stored_size) {
        size_t want = spill->stored_size - off < PIECE ? (size_t)(spill->stored_size - off) : PIECE;
        ssize_t got = pread(spill->fd, buf, want, (off_t)off);
        if (got < 0 && errno == EINTR)
            continue;
        if (got <= 0) {
            snprintf(why, sizeof why, "spill file: %s",
                     got < 0 ? strerror(errno) : "shorter than written");
            rc = gd_err_set(err, GD_EIO, "%s", why);
            break;
        }
        if (PQputCopyData(c->pg, (const char *)buf, (int)got) != 1)
            rc = fail(c->pg, NULL, "blob insert", err);
        off += (uint64_t)got;
    }
    if (rc == 0) {
        put16(buf, -1); /* the end of the rows */
        if (PQputCopyData(c->pg, (const char *)buf, 2) != 1)
            rc = fail(c->pg, NULL, "blob insert", err);
    }
    free(buf);
    if (PQputCopyEnd(c->pg, rc == 0 ? NULL : "the upload failed") != 1 && rc == 0)
        rc = fail(c->pg, NULL, "blob insert", err);
    while ((r = PQgetResult(c->pg)) != NULL) {
        if (rc == 0 && PQresultStatus(r) != PGRES_COMMAND_OK)
            rc = fail(c->pg, r, "blob insert", err);
        PQclear(r);
    }
    return rc;
}

static const char *const PIECE_SIZE_SQL[] = {
    "SELECT octet_length(data) FROM blobs WHERE id = $1",
    "SELECT octet_length(json) FROM diffs WHERE id = $1",
};
static const char *const PIECE_READ_SQL[] = {
    "SELECT substring(data FROM $2 FOR $3) FROM blobs WHERE id = $1",
    "SELECT substring(json FROM $2 FOR $3) FROM diffs WHERE id = $1",
};

/* The four statements of pieces, prepared once per connection. */
static int
pieces_prepare(struct srv_sql_conn *c, struct gd_err *err)
{
    if (c->pieces_prepared)
        return 0;
    for (int i = 0; i < 2; i++) {
        char name[16];
        snprintf(name, sizeof name, "gd_size%d", i);
        PGresult *r = PQprepare(c->pg, name, PIECE_SIZE_SQL[i], 0, NULL);
        int ok = PQresultStatus(r) == PGRES_COMMAND_OK;
        int rc = ok ? 0 : fail(c->pg, r, "prepare", err);
        PQclear(r);
        if (!ok)
            return rc;
        snprintf(name, sizeof name, "gd_read%d", i);
        r = PQprepare(c->pg, name, PIECE_READ_SQL[i], 0, NULL);
        ok = PQresultStatus(r) == PGRES_COMMAND_OK;
        rc = ok ? 0 : fail(c->pg, r, "prepare", err);
        PQclear(r);
        if (!ok)
            return rc;
    }
    c->pieces_prepared = 1;
    return 0;
}

static int
pg_piece_size(struct srv_sql_conn *c, enum srv_sql_piece what, int64_t id, uint64_t *size,
              struct gd_err *err)
{
    int rc = pieces_prepare(c, err);
    if (rc != 0)
        return rc;
    char idt[32], name[16];
    snprintf(idt, sizeof idt, "%lld", (long long)id);
    snprintf(name, sizeof name, "gd_size%d", (int)what);
    const char *values[1] = {idt};
    PGresult *r = PQexecPrepared(c->pg, name, 1, values, NULL, NULL, 0);
    if (PQresultStatus(r) != PGRES_TUPLES_OK)
        rc = fail(c->pg, r, "size", err);
    else if (PQntuples(r) != 1)
        rc = gd_err_set(err, GD_EIO, "row %lld is gone", (long long)id);
    else
        *size = (uint64_t)strtoull(PQgetvalue(r, 0, 0), NULL, 10);
    PQclear(r);
    return rc;
}

static int
pg_piece_read(struct srv_sql_conn *c, enum srv_sql_piece what, int64_t id,
              struct srv_sql_piece_handle **handle, uint64_t off, void *buf, size_t n,
              struct gd_err *err)
{
    (void)handle; /* each read is one query: an out-of-line bytea gives a range cheaply */
    int rc = pieces_prepare(c, err);
    if (rc != 0)
        return rc;
    char idt[32], offt[32], nt[32], name[16];
    snprintf(idt, sizeof idt, "%lld", (long long)id);
    snprintf(offt, sizeof offt, "%llu", (unsigned long long)off + 1);
    snprintf(nt, sizeof nt, "%zu", n);
    snprintf(name, sizeof name, "gd_read%d", (int)what);
    const char *values[3] = {idt, offt, nt};
    PGresult *r = PQexecPrepared(c->pg, name, 3, values, NULL, NULL, 1);
    if (PQresultStatus(r) != PGRES_TUPLES_OK)
        rc = fail(c->pg, r, "read", err);
    else if (PQntuples(r) != 1 || PQgetisnull(r, 0, 0) || (size_t)PQgetlength(r, 0, 0) != n)
        rc = gd_err_set(err, GD_EIO, "%s row %lld is shorter than expected",
                        what == SRV_PIECE_BLOB ? "blobs" : "diffs", (long long)id);
    else
        memcpy(buf, PQgetvalue(r, 0, 0), n);
    PQclear(r);
    return rc;
}

static void
pg_piece_close(struct srv_sql_piece_handle **handle)
{
    *handle = NULL;
}

/* ---- backups: pg_dump and pg_restore ---- */

/*
 * The URI as keyword=value options without the password, which goes to the child in
 * PGPASSWORD instead: a command line is visible to every user of the host.
 */
static int
conninfo_split(const char *db, char *out, size_t size, char *password, size_t psize,
               struct gd_err *err)
{
    char *msg = NULL;
    PQconninfoOption *opts = PQconninfoParse(db, &msg);
    if (opts == NULL) {
        int rc = gd_err_set(err, GD_EINVAL, "--db: %s", msg != NULL ? msg : "not a URI");
        PQfreemem(msg);
        return rc;
    }
    size_t k = 0;
    out[0] = password[0] = '\0';
    for (PQconninfoOption *o = opts; o->keyword != NULL; o++) {
        if (o->val == NULL || o->val[0] == '\0')
            continue;
        if (strcmp(o->keyword, "password") == 0) {
            snprintf(password, psize, "%s", o->val);
            continue;
        }
        k += (size_t)snprintf(out + k, size > k ? size - k : 0, "%s%s='", k ? " " : "",
                              o->keyword);
        for (const char *p = o->val; *p && k + 3 < size; p++) {
            if (*p == '\'' || *p == '\\')
                out[k++] = '\\';
            out[k++] = *p;
        }
        if (k + 2 < size) {
            out[k++] = '\'';
            out[k] = '\0';
        }
    }
    PQconninfoFree(opts);
    if (k + 2 >= size)
        return gd_err_set(err, GD_EINVAL, "--db: too long");
    return 0;
}

/* Runs argv (a pg_ tool from PATH) with PGPASSWORD set when given; 0 when it exits 0. */
static int
run_tool(char *const argv[], const char *password, struct gd_err *err)
{
    pid_t pid = fork();
    if (pid < 0)
        return gd_err_set(err, GD_EIO, "fork: %s", strerror(errno));
    if (pid == 0) {
        if (password[0] != '\0')
            setenv("PGPASSWORD", password, 1);
        execvp(argv[0], argv);
        fprintf(stderr, "gpudiffd: cannot run %s: %s (it comes with PostgreSQL's client "
                        "programs: Debian's postgresql-client)\n",
                argv[0], strerror(errno));
        _exit(127);
    }
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
        return 0;
    if (WIFEXITED(status) && WEXITSTATUS(status) == 127)
        return gd_err_set(err, GD_ENOENT, "%s could not be run", argv[0]);
    return gd_err_set(err, GD_EIO, "%s failed (%s %d); its messages are above", argv[0],
                      WIFEXITED(status) ? "exit" : "signal",
                      WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
}

/*
 * pg_dump takes one snapshot of the whole database (a repeatable-read transaction), while
 * the daemons go on writing: the dump is consistent and online. Custom format: compressed,
 * and pg_restore reads it.
 */
static int
pg_backup(const char *db, const struct srv_db_opts *opts, const char *to, struct gd_err *err)
{
    (void)opts;
    char conninfo[2048], password[256], tmp[4096], file_arg[4200], db_arg[2100];
    int rc = conninfo_split(db, conninfo, sizeof conninfo, password, sizeof password, err);
    if (rc != 0)
        return rc;
    if (snprintf(tmp, sizeof tmp, "%s.partial", to) >= (int)sizeof tmp)
        return gd_err_set(err, GD_EINVAL, "%s: path too long", to);
    snprintf(file_arg, sizeof file_arg, "--file=%s", tmp);
    snprintf(db_arg, sizeof db_arg, "--dbname=%s", conninfo);
    unlink(tmp);
    char *argv[] = {"pg_dump", "--format=custom", "--no-owner", "--no-privileges", file_arg,
                    db_arg, NULL};
    rc = run_tool(argv, password, err);
    if (rc == 0) {
        int fd = open(tmp, O_RDONLY | O_CLOEXEC);
        if (fd < 0 || fsync(fd) != 0)
            rc = gd_err_set(err, GD_EIO, "%s: %s", tmp, strerror(errno));
        if (fd >= 0)
            close(fd);
    }
    if (rc == 0 && rename(tmp, to) != 0)
        rc = gd_err_set(err, GD_EIO, "%s: %s", to, strerror(errno));
    if (rc != 0)
        unlink(tmp);
    return rc;
}

/* pg_restore into the database, replacing what it holds, in one transaction. */
static int
pg_restore(const char *db, const struct srv_db_opts *opts, const char *from, struct gd_err *err)
{
    (void)opts;
    char conninfo[2048], password[256], db_arg[2100], file[4096];
    int rc = conninfo_split(db, conninfo, sizeof conninfo, password, sizeof password, err);
    if (rc != 0)
        return rc;
    struct stat sb;
    if (stat(from, &sb) != 0)
        return gd_err_set(err, GD_ENOENT, "%s: %s", from, strerror(errno));
    snprintf(db_arg, sizeof db_arg, "--dbname=%s", conninfo);
    snprintf(file, sizeof file, "%s", from);
    char *argv[] = {"pg_restore", "--clean", "--if-exists", "--no-owner", "--no-privileges",
                    "--single-transaction", "--exit-on-error", db_arg, file, NULL};
    return run_tool(argv, password, err);
}

static void
pg_describe(const char *db, char *out, size_t size)
{
    char *msg = NULL;
    PQconninfoOption *opts = PQconninfoParse(db, &msg);
    PQfreemem(msg);
    const char *name = "", *host = "", *port = "", *user = "";
    for (PQconninfoOption *o = opts; o != NULL && o->keyword != NULL; o++) {
        if (o->val == NULL)
            continue;
        if (strcmp(o->keyword, "dbname") == 0)
            name = o->val;
        else if (strcmp(o->keyword, "host") == 0)
            host = o->val;
        else if (strcmp(o->keyword, "port") == 0)
            port = o->val;
        else if (strcmp(o->keyword, "user") == 0)
            user = o->val;
    }
    snprintf(out, size, "PostgreSQL database %s on %s%s%s%s%s", name[0] ? name : "(default)",
             host[0] ? host : "the default host", port[0] ? ":" : "", port,
             user[0] ? " as " : "", user);
    PQconninfoFree(opts);
}

const struct srv_sql_backend srv_sql_pg = {
    .name = "postgresql",
    .dialect = SRV_SQL_PG,
    .claims = pg_claims,
    .open = pg_open,
    .close = pg_close,
    .broken = pg_broken,
    .exec = pg_exec,
    .prepare = pg_prepare,
    .finalize = pg_finalize,
    .reset = pg_reset,
    .bind_null = pg_bind_null,
    .bind_int64 = pg_bind_int64,
    .bind_double = pg_bind_double,
    .bind_text = pg_bind_text,
    .bind_blob = pg_bind_blob,
    .step = pg_step,
    .is_null = pg_is_null,
    .col_int64 = pg_col_int64,
    .col_double = pg_col_double,
    .col_text = pg_col_text,
    .col_blob = pg_col_blob,
    .changes = pg_changes,
    .begin = pg_begin,
    .commit = pg_commit,
    .rollback = pg_rollback,
    .lock_key = pg_lock_key,
    .version = pg_version,
    .set_version = pg_set_version,
    .migrations = srv_pg_migrations,
    .n_migrations = &srv_pg_migration_count,
    .blob_insert = pg_blob_insert,
    .piece_size = pg_piece_size,
    .piece_read = pg_piece_read,
    .piece_close = pg_piece_close,
    .backup = pg_backup,
    .restore = pg_restore,
    .describe = pg_describe,
};
