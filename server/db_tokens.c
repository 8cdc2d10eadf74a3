/*
 * db_tokens.c: tokens as stored: the SHA-256 of the token, its role, a label and a short
 * hint, never the token itself, so a copy of the database grants nothing.
 */
#include <string.h>

#include "db.h"

static const char SQL_TOKEN_INSERT[] =
    "INSERT INTO tokens(hash, role, label, hint, created_at) VALUES(?1, ?2, ?3, ?4, ?5) "
    "RETURNING id";
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
    struct srv_stmt *st;
    int rc = srv_db_prepare(db, SQL_TOKEN_INSERT, &st, err);
    if (rc != 0)
        return rc;
    srv_stmt_bind_text(st, 1, hash);
    srv_stmt_bind_text(st, 2, srv_role_name(role));
    srv_stmt_bind_text(st, 3, label ? label : "");
    srv_stmt_bind_text(st, 4, hint);
    srv_stmt_bind_int64(st, 5, now);
    int s = srv_stmt_step(st, "token insert", err);
    if (s == SRV_SQL_ROW)
        *id = srv_stmt_int64(st, 0);
    srv_stmt_done(st);
    if (s == SRV_SQL_DONE)
        return gd_err_set(err, GD_EIO, "token insert: no id came back");
    return s < 0 ? s : 0;
}

int
srv_db_token_lookup(struct srv_db *db, const char *hash, enum srv_role *role, int64_t *id,
                    struct gd_err *err)
{
    struct srv_stmt *st;
    int rc = srv_db_prepare(db, SQL_TOKEN_LOOKUP, &st, err);
    if (rc != 0)
        return rc;
    srv_stmt_bind_text(st, 1, hash);
    int s = srv_stmt_step(st, "token lookup", err);
    if (s == SRV_SQL_ROW) {
        int r = srv_role_from_name(srv_stmt_text(st, 1));
        if (!srv_stmt_null(st, 2))
            rc = gd_err_set(err, SRV_EAUTH, "the token was revoked");
        else if (r < 0)
            rc = gd_err_set(err, GD_EIO, "stored role of token %lld is damaged",
                            (long long)srv_stmt_int64(st, 0));
        else {
            *role = (enum srv_role)r;
            *id = srv_stmt_int64(st, 0);
        }
    } else if (s == SRV_SQL_DONE) {
        rc = gd_err_set(err, SRV_EAUTH, "unknown token");
    } else {
        rc = s;
    }
    srv_stmt_done(st);
    return rc;
}

int
srv_db_token_list(struct srv_db *db, json_t **out, struct gd_err *err)
{
    struct srv_stmt *st;
    int rc = srv_db_prepare(db, SQL_TOKEN_LIST, &st, err);
    if (rc != 0)
        return rc;
    json_t *list = json_array();
    int s;
    while ((s = srv_stmt_step(st, "token list", err)) == SRV_SQL_ROW) {
        char created[32], revoked[32];
        srv_time_format(srv_stmt_int64(st, 4), created);
        srv_time_format(srv_stmt_int64(st, 5), revoked);
        json_t *t = json_object();
        json_object_set_new(t, "id", json_integer(srv_stmt_int64(st, 0)));
        json_object_set_new(t, "role", json_string(srv_stmt_text(st, 1)));
        json_object_set_new(t, "label", json_string(srv_stmt_text(st, 2)));
        json_object_set_new(t, "hint", json_string(srv_stmt_text(st, 3)));
        json_object_set_new(t, "created_at", json_string(created));
        json_object_set_new(t, "revoked_at",
                            srv_stmt_null(st, 5) ? json_null() : json_string(revoked));
        json_array_append_new(list, t);
    }
    srv_stmt_done(st);
    if (s < 0) {
        json_decref(list);
        return s;
    }
    *out = json_pack("{s:o}", "tokens", list);
    return *out != NULL ? 0 : gd_err_set(err, GD_ENOMEM, "out of memory");
}

int
srv_db_token_revoke(struct srv_db *db, int64_t id, int64_t now, struct gd_err *err)
{
    struct srv_stmt *st;
    int rc = srv_db_prepare(db, SQL_TOKEN_REVOKE, &st, err);
    if (rc != 0)
        return rc;
    srv_stmt_bind_int64(st, 1, id);
    srv_stmt_bind_int64(st, 2, now);
    int s = srv_stmt_step(st, "token revoke", err);
    int64_t changed = s >= 0 ? srv_stmt_changes(st) : 0;
    srv_stmt_done(st);
    if (s < 0)
        return s;
    if (changed == 0)
        return gd_err_set(err, SRV_ENOTFOUND, "no token %lld", (long long)id);
    return 0;
}

int
srv_db_token_counts(struct srv_db *db, int64_t counts[4], struct gd_err *err)
{
    struct srv_stmt *st;
    int rc = srv_db_prepare(db, SQL_TOKEN_COUNTS, &st, err);
    if (rc != 0)
        return rc;
    memset(counts, 0, 4 * sizeof counts[0]);
    int s;
    while ((s = srv_stmt_step(st, "token counts", err)) == SRV_SQL_ROW) {
        int r = srv_role_from_name(srv_stmt_text(st, 0));
        if (r > 0)
            counts[r] = srv_stmt_int64(st, 1);
    }
    srv_stmt_done(st);
    return s < 0 ? s : 0;
}
