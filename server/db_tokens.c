/*
 * db_tokens.c: tokens as stored: the SHA-256 of the token, its role, a label and a short
 * hint, never the token itself, so a copy of the database grants nothing.
 */
#include <string.h>

#include "db.h"

static const char SQL_TOKEN_INSERT[] =
    "INSERT INTO tokens(hash, role, label, hint, created_at) VALUES(?1, ?2, ?3, ?4, ?5)";
static const char SQL_TOKEN_LOOKUP[] = "SELECT id, role, revoked_at FROM tokens WHERE hash = ?1";
static const char SQL_TOKEN_LIST[] =
    "SELECT id, role, label, hint, created_at, revoked_at FROM tokens ORDER BY id";
static const char SQL_TOKEN_REVOKE[] =
    "UPDATE tokens SET revoked_at = coalesce(revoked_at, ?2) WHERE id = ?1";
static const char SQL_TOKEN_COUNTS[] =
    "SELECT role, count(*) FROM tokens WHERE revoked_at IS NULL GROUP BY role";

int
srv_db_token_insert(struct srv_db *db, const char *hash, const char *hint, enum srv_role role,
                    const char *label, int64_t now, int64_t *id, struct gd_err *err)
{
    sqlite3_stmt *st;
    int rc = srv_db_prepare(db, SQL_TOKEN_INSERT, &st, err);
    if (rc != 0)
        return rc;
    srv_db_bind_text(st, 1, hash);
    srv_db_bind_text(st, 2, srv_role_name(role));
    srv_db_bind_text(st, 3, label ? label : "");
    srv_db_bind_text(st, 4, hint);
    sqlite3_bind_int64(st, 5, now);
    int s = sqlite3_step(st);
    srv_db_done(st);
    if (s != SQLITE_DONE)
        return srv_db_fail(db, s, "token insert", err);
    *id = sqlite3_last_insert_rowid(srv_db_conn(db));
    return 0;
}

int
srv_db_token_lookup(struct srv_db *db, const char *hash, enum srv_role *role, int64_t *id,
                    struct gd_err *err)
{
    sqlite3_stmt *st;
    int rc = srv_db_prepare(db, SQL_TOKEN_LOOKUP, &st, err);
    if (rc != 0)
        return rc;
    srv_db_bind_text(st, 1, hash);
    int s = sqlite3_step(st);
    if (s == SQLITE_ROW) {
        int r = srv_role_from_name((const char *)sqlite3_column_text(st, 1));
        if (sqlite3_column_type(st, 2) != SQLITE_NULL)
            rc = gd_err_set(err, SRV_EAUTH, "the token was revoked");
        else if (r < 0)
            rc = gd_err_set(err, GD_EIO, "stored role of token %lld is damaged",
                            (long long)sqlite3_column_int64(st, 0));
        else {
            *role = (enum srv_role)r;
            *id = sqlite3_column_int64(st, 0);
        }
    } else if (s == SQLITE_DONE) {
        rc = gd_err_set(err, SRV_EAUTH, "unknown token");
    } else {
        rc = srv_db_fail(db, s, "token lookup", err);
    }
    srv_db_done(st);
    return rc;
}

int
srv_db_token_list(struct srv_db *db, json_t **out, struct gd_err *err)
{
    sqlite3_stmt *st;
    int rc = srv_db_prepare(db, SQL_TOKEN_LIST, &st, err);
    if (rc != 0)
        return rc;
    json_t *list = json_array();
    int s;
    while ((s = sqlite3_step(st)) == SQLITE_ROW) {
        char created[32], revoked[32];
        srv_time_format(sqlite3_column_int64(st, 4), created);
        srv_time_format(sqlite3_column_int64(st, 5), revoked);
        json_t *t = json_object();
        json_object_set_new(t, "id", json_integer(sqlite3_column_int64(st, 0)));
        json_object_set_new(t, "role", json_string((const char *)sqlite3_column_text(st, 1)));
        json_object_set_new(t, "label", json_string((const char *)sqlite3_column_text(st, 2)));
        json_object_set_new(t, "hint", json_string((const char *)sqlite3_column_text(st, 3)));
        json_object_set_new(t, "created_at", json_string(created));
        json_object_set_new(t, "revoked_at",
                            sqlite3_column_type(st, 5) == SQLITE_NULL ? json_null()
                                                                      : json_string(revoked));
        json_array_append_new(list, t);
    }
    srv_db_done(st);
    if (s != SQLITE_DONE) {
        json_decref(list);
        return srv_db_fail(db, s, "token list", err);
    }
    *out = json_pack("{s:o}", "tokens", list);
    return *out != NULL ? 0 : gd_err_set(err, GD_ENOMEM, "out of memory");
}

int
srv_db_token_revoke(struct srv_db *db, int64_t id, int64_t now, struct gd_err *err)
{
    sqlite3_stmt *st;
    int rc = srv_db_prepare(db, SQL_TOKEN_REVOKE, &st, err);
    if (rc != 0)
        return rc;
    sqlite3_bind_int64(st, 1, id);
    sqlite3_bind_int64(st, 2, now);
    int s = sqlite3_step(st);
    srv_db_done(st);
    if (s != SQLITE_DONE)
        return srv_db_fail(db, s, "token revoke", err);
    if (sqlite3_changes(srv_db_conn(db)) == 0)
        return gd_err_set(err, SRV_ENOTFOUND, "no token %lld", (long long)id);
    return 0;
}

int
srv_db_token_counts(struct srv_db *db, int64_t counts[4], struct gd_err *err)
{
    sqlite3_stmt *st;
    int rc = srv_db_prepare(db, SQL_TOKEN_COUNTS, &st, err);
    if (rc != 0)
        return rc;
    memset(counts, 0, 4 * sizeof counts[0]);
    int s;
    while ((s = sqlite3_step(st)) == SQLITE_ROW) {
        int r = srv_role_from_name((const char *)sqlite3_column_text(st, 0));
        if (r > 0)
            counts[r] = sqlite3_column_int64(st, 1);
    }
    srv_db_done(st);
    return s == SQLITE_DONE ? 0 : srv_db_fail(db, s, "token counts", err);
}
