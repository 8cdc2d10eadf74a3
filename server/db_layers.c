/*
 * db_layers.c: layers: what an upload must match, the commit that makes a layer present
 * (with its blob, in one transaction), and where a download finds the data.
 */
#include <stdio.h>
#include <string.h>

#include "gpudiff/hash.h"
#include "blob.h"
#include "db.h"

static const char SQL_LAYER_SPEC[] =
    "SELECT r.state, r.n_layers, l.dtype, l.shape, l.raw_size, l.sha256, "
    "l.uploaded_at IS NOT NULL, EXISTS(SELECT 1 FROM blobs b WHERE b.sha256 = l.sha256), "
    "l.record "
    "FROM runs r LEFT JOIN layers l ON l.run_id = r.id AND l.idx = ?2 WHERE r.id = ?1";
static const char SQL_LAYER_PRESENT[] =
    "SELECT uploaded_at IS NOT NULL FROM layers WHERE run_id = ?1 AND idx = ?2";
static const char SQL_BLOB_EXISTS[] = "SELECT 1 FROM blobs WHERE sha256 = ?1";
/* fp: a layer held as a fingerprint gets its data's SHA-256 when its tensor comes */
static const char SQL_LAYER_MARK[] =
    "UPDATE layers SET uploaded_at = ?3, blob_sha256 = ?4, "
    "sha256 = CASE WHEN sha256 = '' THEN ?4 ELSE sha256 END WHERE run_id = ?1 AND idx = ?2 "
    "AND uploaded_at IS NULL";
static const char SQL_LAYER_LOCATE[] =
    "SELECT r.state, r.n_layers, l.name, l.dtype, l.shape, l.sha256, l.uploaded_at, "
    "l.blob_sha256, b.id, b.elem_size, b.raw_size, b.stored_size "
    "FROM runs r LEFT JOIN layers l ON l.run_id = r.id AND l.idx = ?2 "
    "LEFT JOIN blobs b ON b.sha256 = l.blob_sha256 WHERE r.id = ?1";

/* The stored shape, a JSON array of integers written by run_doc.c. */
static int
shape_parse(const char *text, int *ndim, int64_t *shape, struct gd_err *err)
{
    json_t *a = json_loads(text, 0, NULL);
    int rc = 0;
    if (!json_is_array(a) || json_array_size(a) > GD_MAX_DIMS) {
        rc = gd_err_set(err, GD_EIO, "stored shape %s is damaged", text);
    } else {
        *ndim = (int)json_array_size(a);
        for (int i = 0; i < *ndim; i++)
            shape[i] = json_integer_value(json_array_get(a, (size_t)i));
    }
    json_decref(a);
    return rc;
}

int
srv_db_layer_spec(struct srv_db *db, const char *run_id, int index, struct srv_layer_spec *out,
                  struct gd_err *err)
{
    struct srv_stmt *st;
    int rc = srv_db_prepare(db, SQL_LAYER_SPEC, &st, err);
    if (rc != 0)
        return rc;
    srv_stmt_bind_text(st, 1, run_id);
    srv_stmt_bind_int64(st, 2, index);
    int s = srv_stmt_step(st, "layer lookup", err);
    if (s != SRV_SQL_ROW) {
        rc = s == SRV_SQL_DONE ? gd_err_set(err, SRV_ENOTFOUND, "no run %s", run_id) : s;
        goto done;
    }
    if (srv_stmt_null(st, 2)) {
        rc = gd_err_set(err, SRV_ENOTFOUND, "run %s has layers 0 to %d; there is no layer %d",
                        run_id, srv_stmt_int(st, 1) - 1, index);
        goto done;
    }
    struct srv_layer_spec spec;
    memset(&spec, 0, sizeof spec);
    spec.run_complete = strcmp(srv_stmt_text(st, 0), "complete") == 0;
    if (gd_dtype_from_name(srv_stmt_text(st, 2), &spec.dtype) != 0) {
        rc = gd_err_set(err, GD_EIO, "stored dtype of layer %d is damaged", index);
        goto done;
    }
    rc = shape_parse(srv_stmt_text(st, 3), &spec.ndim, spec.shape, err);
    if (rc != 0)
        goto done;
    spec.raw_size = (uint64_t)srv_stmt_int64(st, 4);
    snprintf(spec.sha256, sizeof spec.sha256, "%s", srv_stmt_text(st, 5));
    spec.present = srv_stmt_int(st, 6);
    spec.blob_stored = srv_stmt_int(st, 7);
    if (spec.sha256[0] == '\0') {
        /* fp: a fingerprint's layer: its data must have the fingerprint's BLAKE3 */
        json_t *rec = json_loads(srv_stmt_text(st, 8), 0, NULL);
        const char *b3 = json_string_value(json_object_get(json_object_get(rec, "fingerprint"),
                                                           "blake3"));
        if (b3 != NULL)
            snprintf(spec.blake3, sizeof spec.blake3, "%s", b3);
        json_decref(rec);
        if (spec.blake3[0] == '\0') {
            rc = gd_err_set(err, GD_EIO, "stored record of layer %d has no hash", index);
            goto done;
        }
    }
    *out = spec;
done:
    srv_stmt_done(st);
    return rc;
}

/*
 * A shared transaction (sql.h): uploads commit beside each other, and two commits of the
 * same data (the same layer sent twice, or one tensor of two runs) take turns on its hash,
 * so the second finds the blob the first stored, and the layer marked.
 */
int
srv_db_layer_commit(struct srv_db *db, const char *run_id, int index, const char *sha256,
                    const struct srv_blob_spill *spill, int64_t now, int *stored, int *was_present,
                    struct gd_err *err)
{
    struct srv_stmt *st;
    *stored = *was_present = 0;
    int rc = srv_db_begin_shared(db, err);
    if (rc == 0)
        rc = srv_db_lock_key(db, sha256, err);
    if (rc != 0)
        goto done;
    rc = srv_db_prepare(db, SQL_LAYER_PRESENT, &st, err);
    if (rc != 0)
        goto done;
    srv_stmt_bind_text(st, 1, run_id);
    srv_stmt_bind_int64(st, 2, index);
    int s = srv_stmt_step(st, "layer lookup", err);
    int present = s == SRV_SQL_ROW && srv_stmt_int(st, 0);
    srv_stmt_done(st);
    if (s == SRV_SQL_DONE) {
        rc = gd_err_set(err, SRV_ENOTFOUND, "run %s or its layer %d is gone", run_id, index);
        goto done;
    }
    if (s < 0) {
        rc = s;
        goto done;
    }
    if (present) {
        /* Another upload of the same layer got here first: the same data, nothing to do. */
        *was_present = 1;
        goto done;
    }
    rc = srv_db_prepare(db, SQL_BLOB_EXISTS, &st, err);
    if (rc != 0)
        goto done;
    srv_stmt_bind_text(st, 1, sha256);
    s = srv_stmt_step(st, "blob lookup", err);
    srv_stmt_done(st);
    if (s < 0) {
        rc = s;
        goto done;
    }
    if (s == SRV_SQL_DONE) {
        if (spill == NULL) {
            rc = gd_err_set(err, SRV_EBUSY,
                            "the stored copy of this data was dropped by retention meanwhile; "
                            "send the layer again");
            goto done;
        }
        rc = srv_db_blob_insert(db, sha256, spill, now, err);
        if (rc != 0)
            goto done;
        *stored = 1;
    }
    rc = srv_db_prepare(db, SQL_LAYER_MARK, &st, err);
    if (rc != 0)
        goto done;
    srv_stmt_bind_text(st, 1, run_id);
    srv_stmt_bind_int64(st, 2, index);
    srv_stmt_bind_int64(st, 3, now);
    srv_stmt_bind_text(st, 4, sha256);
    s = srv_stmt_step(st, "layer update", err);
    if (s >= 0 && srv_stmt_changes(st) == 0)
        *was_present = 1; /* marked by an upload that committed after the lookup above */
    srv_stmt_done(st);
    if (s < 0) {
        rc = s;
        goto done;
    }
    rc = srv_db_layer_fetched(db, run_id, index, now, err);
    if (rc == 0)
        rc = srv_db_commit(db, err);
done:
    if (rc != 0)
        *stored = 0;
    srv_db_rollback(db);
    return rc;
}

int
srv_db_layer_locate(struct srv_db *db, const char *run_id, int index, int include_uploading,
                    struct srv_layer_loc *out, struct gd_err *err)
{
    struct srv_stmt *st;
    int rc = srv_db_prepare(db, SQL_LAYER_LOCATE, &st, err);
    if (rc != 0)
        return rc;
    srv_stmt_bind_text(st, 1, run_id);
    srv_stmt_bind_int64(st, 2, index);
    int s = srv_stmt_step(st, "layer lookup", err);
    if (s != SRV_SQL_ROW) {
        rc = s == SRV_SQL_DONE ? gd_err_set(err, SRV_ENOTFOUND, "no run %s", run_id) : s;
        goto done;
    }
    if (strcmp(srv_stmt_text(st, 0), "complete") != 0 && !include_uploading) {
        rc = gd_err_set(err, SRV_ENOTFOUND, "no run %s", run_id);
        goto done;
    }
    if (srv_stmt_null(st, 2)) {
        rc = gd_err_set(err, SRV_ENOTFOUND, "run %s has layers 0 to %d; there is no layer %d",
                        run_id, srv_stmt_int(st, 1) - 1, index);
        goto done;
    }
    if (srv_stmt_null(st, 6)) {
        rc = gd_err_set(err, SRV_ENOTFOUND, "layer %d of run %s has not been uploaded", index,
                        run_id);
        goto done;
    }
    if (srv_stmt_null(st, 8)) {
        rc = gd_err_set(err, SRV_EGONE,
                        "the data of layer %d of run %s was dropped by retention; its record "
                        "and summary remain",
                        index, run_id);
        goto done;
    }
    struct srv_layer_loc loc;
    memset(&loc, 0, sizeof loc);
    snprintf(loc.name, sizeof loc.name, "%s", srv_stmt_text(st, 2));
    if (gd_dtype_from_name(srv_stmt_text(st, 3), &loc.dtype) != 0) {
        rc = gd_err_set(err, GD_EIO, "stored dtype of layer %d is damaged", index);
        goto done;
    }
    rc = shape_parse(srv_stmt_text(st, 4), &loc.ndim, loc.shape, err);
    if (rc != 0)
        goto done;
    snprintf(loc.sha256, sizeof loc.sha256, "%s", srv_stmt_text(st, 5));
    loc.blob_id = srv_stmt_int64(st, 8);
    loc.elem_size = srv_stmt_int(st, 9);
    loc.raw_size = (uint64_t)srv_stmt_int64(st, 10);
    loc.stored_size = (uint64_t)srv_stmt_int64(st, 11);
    *out = loc;
done:
    srv_stmt_done(st);
    return rc;
}

struct load_src {
    struct srv_db *db;
    struct srv_sql_piece_handle *handle;
    int64_t blob_id;
    uint64_t off, size;
};

static int
load_source(void *user, void *buf, size_t cap, size_t *got, struct gd_err *err)
{
    struct load_src *s = user;
    size_t n = s->size - s->off < cap ? (size_t)(s->size - s->off) : cap;
    *got = 0;
    if (n == 0)
        return 0;
    int rc = srv_db_blob_read(s->db, s->blob_id, &s->handle, s->off, buf, n, err);
    if (rc != 0)
        return rc;
    s->off += n;
    *got = n;
    return 0;
}

int
srv_db_layer_load(struct srv_db *db, const char *run_id, int index, int include_uploading,
                  struct gd_tensor **out, struct gd_err *err)
{
    struct srv_layer_loc loc;
    int rc = srv_db_layer_locate(db, run_id, index, include_uploading, &loc, err);
    if (rc != 0)
        return rc;
    struct gd_tensor *t = gd_tensor_new(loc.dtype, loc.ndim, loc.shape, err);
    if (t == NULL)
        return err != NULL ? err->code : GD_ENOMEM;
    if (gd_tensor_nbytes(t) != loc.raw_size) {
        gd_tensor_free(t);
        return gd_err_set(err, GD_EIO,
                          "layer %d of run %s: %llu bytes stored for a %zu-byte "
                          "tensor",
                          index, run_id, (unsigned long long)loc.raw_size, gd_tensor_nbytes(t));
    }
    struct load_src src = {db, NULL, loc.blob_id, 0, loc.stored_size};
    struct srv_blob_dec *dec = NULL;
    size_t got = 0;
    char sha[65];
    rc = srv_blob_dec_new((size_t)loc.elem_size, loc.raw_size, load_source, &src, &dec, err);
    if (rc == 0)
        rc = srv_blob_dec_read(dec, t->data, loc.raw_size, &got, err);
    if (rc == 0 && got != loc.raw_size)
        rc = gd_err_set(err, GD_EFORMAT, "layer %d of run %s: stored data is short", index, run_id);
    if (rc == 0)
        rc = gd_sha256_hex(t->data, loc.raw_size, sha, err);
    if (rc == 0 && strcmp(sha, loc.sha256) != 0)
        rc = gd_err_set(err, GD_EFORMAT, "layer %d of run %s: stored data hashes to %s, not %s",
                        index, run_id, sha, loc.sha256);
    srv_blob_dec_free(dec);
    srv_db_blob_close(db, &src.handle);
    if (rc != 0) {
        gd_tensor_free(t);
        return rc;
    }
    *out = t;
    return 0;
}
