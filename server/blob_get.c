/*
 * blob_get.c: a stored blob sent back as a response body (server.h, srv_blob_response): a
 * prefix of the caller's (a layer's .npy header; none for a job's file), then the blob
 * decoded piece by piece as libmicrohttpd asks for it, each read holding a database
 * connection only for its own length, and the bytes checked against their SHA-256 at the
 * end: a blob that does not decode to what was stored ends the download with an error
 * instead of a wrong body.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpudiff/hash.h"
#include "blob.h"
#include "db.h"
#include "server.h"

struct blob_get {
    struct srv_store *store;
    struct srv_db *db;                 /* held during one read callback only */
    struct srv_sql_piece_handle *blob; /* open during one read callback only */
    char req_id[48];
    int64_t blob_id;
    uint64_t stored_size, in_off;
    unsigned char prefix[256];
    size_t prefix_len;
    uint64_t raw_size, raw_done, pos;
    struct srv_blob_dec *dec;
    struct gd_sha256 hash;
    int hash_live;
    char sha256[65];
};

static void
blob_get_free(void *p)
{
    struct blob_get *g = p;
    srv_blob_dec_free(g->dec);
    if (g->hash_live)
        gd_sha256_fini(&g->hash);
    free(g);
}

static int
blob_source(void *user, void *buf, size_t cap, size_t *got, struct gd_err *err)
{
    struct blob_get *g = user;
    uint64_t left = g->stored_size - g->in_off;
    size_t n = left < cap ? (size_t)left : cap;
    *got = 0;
    if (n == 0)
        return 0;
    int rc = srv_db_blob_read(g->db, g->blob_id, &g->blob, g->in_off, buf, n, err);
    if (rc != 0)
        return rc;
    g->in_off += n;
    *got = n;
    return 0;
}

/* The next up to max bytes of the blob's data into buf, *got of them; hashed as they go. */
static int
decode_more(struct blob_get *g, char *buf, size_t max, size_t *got, struct gd_err *err)
{
    *got = 0;
    int rc = srv_store_acquire(g->store, &g->db, err);
    if (rc == 0) {
        rc = srv_blob_dec_read(g->dec, buf, max, got, err);
        srv_db_blob_close(g->db, &g->blob);
        srv_store_release(g->store, g->db);
        g->db = NULL;
    }
    if (rc == 0)
        rc = gd_sha256_update(&g->hash, buf, *got, err);
    g->raw_done += *got;
    if (rc == 0 && g->raw_done == g->raw_size) {
        char sha[65];
        g->hash_live = 0;
        rc = gd_sha256_final(&g->hash, sha, err);
        if (rc == 0 && strcmp(sha, g->sha256) != 0)
            rc = gd_err_set(err, GD_EFORMAT, "stored data hashes to %s, not %s", sha, g->sha256);
    }
    if (rc == 0 && *got == 0)
        rc = gd_err_set(err, GD_EFORMAT, "stored data ends early");
    return rc;
}

static ssize_t
blob_get_read(void *cls, uint64_t pos, char *buf, size_t max)
{
    struct blob_get *g = cls;
    if (pos != g->pos)
        return MHD_CONTENT_READER_END_WITH_ERROR;
    size_t n = 0;
    if (g->pos < g->prefix_len) {
        n = g->prefix_len - (size_t)g->pos;
        if (n > max)
            n = max;
        memcpy(buf, g->prefix + g->pos, n);
    }
    if (n < max && g->raw_done < g->raw_size) {
        struct gd_err err;
        size_t got = 0;
        if (decode_more(g, buf + n, max - n, &got, &err) != 0) {
            SRV_LOG(GD_LOG_ERROR, NULL, "download of request %s stopped: %s", g->req_id,
                    err.msg);
            return MHD_CONTENT_READER_END_WITH_ERROR;
        }
        n += got;
    }
    if (n == 0)
        return MHD_CONTENT_READER_END_OF_STREAM;
    g->pos += n;
    return (ssize_t)n;
}

int
srv_blob_response(struct srv_req *req, const struct srv_blob_spec *spec, struct MHD_Response **out,
                  struct gd_err *err)
{
    *out = NULL;
    if (spec->prefix_len > sizeof ((struct blob_get *)0)->prefix)
        return gd_err_set(err, GD_EINVAL, "a prefix of %zu bytes is too long",
                          spec->prefix_len);
    struct blob_get *g = calloc(1, sizeof *g);
    if (g == NULL)
        return gd_err_set(err, GD_ENOMEM, "out of memory");
    g->store = req->srv->store;
    g->blob_id = spec->blob_id;
    g->stored_size = spec->stored_size;
    g->raw_size = spec->raw_size;
    if (spec->prefix_len > 0)
        memcpy(g->prefix, spec->prefix, spec->prefix_len);
    g->prefix_len = spec->prefix_len;
    snprintf(g->sha256, sizeof g->sha256, "%s", spec->sha256);
    snprintf(g->req_id, sizeof g->req_id, "%s", req->id);
    int rc = srv_blob_dec_new(spec->elem_size, spec->raw_size, blob_source, g, &g->dec, err);
    if (rc == 0) {
        rc = gd_sha256_init(&g->hash, err);
        g->hash_live = rc == 0;
    }
    if (rc != 0) {
        blob_get_free(g);
        return rc;
    }
    *out = MHD_create_response_from_callback(g->prefix_len + spec->raw_size, 1024 * 1024,
                                             blob_get_read, g, blob_get_free);
    if (*out == NULL) {
        blob_get_free(g);
        return gd_err_set(err, GD_ENOMEM, "out of memory");
    }
    return 0;
}
