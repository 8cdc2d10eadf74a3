/*
 * route_files.c: PUT and GET /api/v1/files/{sha256}, the files jobs name (models, inputs,
 * their data; docs/SERVER.md, "Jobs, devices and leases").
 *
 * An upload streams through like a layer's (route_layers.c): hashed on the way and, unless
 * the bytes are stored already, compressed into an anonymous spill file; only when the whole
 * body hashes to the path's SHA-256 does one transaction store the blob and record the file,
 * so a mismatch or a cut upload keeps nothing. A file recorded already is read and dropped
 * (200). A download streams the blob back decompressed, hashed on the way so damaged data
 * ends the response with an error instead of being delivered.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gpudiff/hash.h"
#include "blob.h"
#include "db.h"
#include "server.h"

struct file_put {
    char sha[65];     /* the path's */
    int drop;         /* recorded already: the body is read and dropped */
    uint64_t bytes;   /* drop: the recorded size */
    struct gd_sha256 hash;
    int hash_live;
    int store; /* 0: the bytes are stored already (a layer's blob); only verify them */
    int spill_fd;
    struct srv_blob_enc *enc;
    int finished;
    uint64_t stored_size;
};

static void
file_put_free(void *p)
{
    struct file_put *u = p;
    if (u->hash_live)
        gd_sha256_fini(&u->hash);
    srv_blob_enc_free(u->enc);
    if (u->spill_fd >= 0)
        close(u->spill_fd);
    free(u);
}

static int
spill_write(void *user, const void *data, size_t len, struct gd_err *err)
{
    struct file_put *u = user;
    return srv_spill_write(u->spill_fd, data, len, err);
}

static int
sha_param(struct srv_req *req)
{
    if (!srv_is_sha256(req->params[0]))
        return srv_req_fail(req, SRV_EBADREQ, "a file is named by its SHA-256: 64 lowercase hex "
                                              "digits");
    return 0;
}

int
srv_files_put_begin(struct srv_req *req)
{
    if (sha_param(req) != 0)
        return req->err.code;
    struct file_put *u = calloc(1, sizeof *u);
    if (u == NULL)
        return srv_req_fail(req, GD_ENOMEM, "out of memory");
    u->spill_fd = -1;
    memcpy(u->sha, req->params[0], 64); /* checked: 64 hex digits */
    u->sha[64] = '\0';
    req->ctx = u;
    req->ctx_free = file_put_free;
    struct srv_db *db = srv_req_db(req);
    if (db == NULL)
        return req->err.code;
    struct gd_err err;
    int is_file = 0, blob_stored = 0;
    int rc = srv_db_fleet_file_state(db, u->sha, &is_file, &blob_stored, &err);
    struct srv_fleet_file_loc loc;
    if (rc == 0 && is_file)
        rc = srv_db_fleet_file_locate(db, u->sha, &loc, &err);
    srv_req_db_release(req, db);
    if (rc != 0)
        return srv_req_fail_err(req, &err);
    if (is_file) {
        u->drop = 1;
        u->bytes = loc.raw_size;
        return 0;
    }
    rc = gd_sha256_init(&u->hash, &err);
    if (rc != 0)
        return srv_req_fail_err(req, &err);
    u->hash_live = 1;
    u->store = !blob_stored;
    if (u->store) {
        rc = srv_spill_open(req->srv->spill_dir, &u->spill_fd, &err);
        if (rc == 0)
            rc = srv_blob_enc_new(1, req->content_length, (int)req->srv->cfg.compress_level,
                                  spill_write, u, &u->enc, &err);
        if (rc != 0)
            return srv_req_fail_err(req, &err);
    }
    return 0;
}

int
srv_files_put_chunk(struct srv_req *req, const char *data, size_t len)
{
    struct file_put *u = req->ctx;
    if (u->drop)
        return 0;
    struct gd_err err;
    int rc = gd_sha256_update(&u->hash, data, len, &err);
    if (rc == 0 && u->store)
        rc = srv_blob_enc_write(u->enc, data, len, &err);
    return rc == 0 ? 0 : srv_req_fail_err(req, &err);
}

int
srv_files_put_end(struct srv_req *req)
{
    struct file_put *u = req->ctx;
    struct gd_err err;
    int rc;
    if (u->drop)
        return srv_reply_json(req, 200,
                              json_pack("{s:s,s:I,s:b}", "sha256", u->sha, "bytes",
                                        (json_int_t)u->bytes, "created", 0));
    if (!u->finished) {
        char sha[65];
        u->hash_live = 0;
        rc = gd_sha256_final(&u->hash, sha, &err);
        if (rc != 0)
            return srv_req_fail_err(req, &err);
        if (strcmp(sha, u->sha) != 0)
            return srv_req_fail(req, SRV_EHASH, "the body's SHA-256 is %s, not the path's %s",
                                sha, u->sha);
        if (u->store) {
            rc = srv_blob_enc_finish(u->enc, &u->stored_size, &err);
            if (rc != 0)
                return srv_req_fail_err(req, &err);
            srv_blob_enc_free(u->enc);
            u->enc = NULL;
        }
        u->finished = 1;
        /* The commit waits for the write lock: on the write pool, not a connection's thread. */
        if (!req->on_pool)
            return SRV_EDEFERWRITE;
    }
    struct srv_blob_spill spill = {u->spill_fd, "uint8", 1, req->content_length, u->stored_size,
                                   SRV_BLOB_CODEC};
    struct srv_db *db = srv_req_db(req);
    if (db == NULL)
        return req->err.code;
    int created = 0;
    rc = srv_db_fleet_file_commit(db, u->sha, req->content_length, u->store ? &spill : NULL,
                                  srv_now(), &created, &err);
    srv_req_db_release(req, db);
    if (rc != 0)
        return srv_req_fail_err(req, &err);
    if (created)
        SRV_LOG(GD_LOG_INFO, req, "file %s: %llu bytes%s", u->sha,
                (unsigned long long)req->content_length,
                u->store ? "" : " (the bytes were stored already)");
    return srv_reply_json(req, created ? 201 : 200,
                          json_pack("{s:s,s:I,s:b}", "sha256", u->sha, "bytes",
                                    (json_int_t)req->content_length, "created", created));
}

/* ---- download ---- */

int
srv_files_get(struct srv_req *req)
{
    static const char *const known[] = {NULL};
    if (srv_req_query_check(req, known) != 0 || sha_param(req) != 0)
        return req->err.code;
    struct srv_db *db = srv_req_db(req);
    if (db == NULL)
        return req->err.code;
    struct srv_fleet_file_loc loc;
    struct gd_err err;
    int rc = srv_db_fleet_file_locate(db, req->params[0], &loc, &err);
    srv_req_db_release(req, db);
    if (rc != 0)
        return srv_req_fail_err(req, &err);
    char sha256[65];
    memcpy(sha256, req->params[0], 64);
    sha256[64] = '\0';
    struct srv_blob_spec spec = {.blob_id = loc.blob_id,
                                 .stored_size = loc.stored_size,
                                 .raw_size = loc.raw_size,
                                 .elem_size = (size_t)loc.elem_size,
                                 .sha256 = sha256};
    struct MHD_Response *resp = NULL;
    if (srv_blob_response(req, &spec, &resp, &err) != 0)
        return srv_req_fail_err(req, &err);
    char etag[72];
    snprintf(etag, sizeof etag, "\"%s\"", sha256);
    MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, "application/octet-stream");
    MHD_add_response_header(resp, MHD_HTTP_HEADER_ETAG, etag);
    return srv_reply(req, 200, resp);
}
