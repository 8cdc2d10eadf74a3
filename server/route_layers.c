/*
 * route_layers.c: PUT /api/v1/runs/{id}/layers/{index} and GET .../layers/{index}.npy.
 *
 * An upload is a .npy body streamed through in pieces: its header is checked against the
 * layer record (dtype, shape, C order, little-endian) and the body's length against header
 * plus data; the data is hashed and, unless it is already stored, shuffled and compressed
 * into an anonymous spill file. Only when the whole body checked out does one transaction
 * store the blob and mark the layer present, so a failed or cut upload leaves no row behind,
 * and the spill file, never named, vanishes with its descriptor even on kill -9.
 *
 * A download streams the blob back: read from the database in pieces, decompressed, unshuffled,
 * after a .npy header made afresh (the same bytes numpy and the agent write), and hashed on
 * the way so damaged data ends the response with an error instead of being delivered.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gpudiff/fingerprint.h"
#include "gpudiff/hash.h"
#include "gpudiff/io.h"
#include "blob.h"
#include "db.h"
#include "server.h"

/* A .npy header longer than this is refused (numpy writes about 128 bytes). */
#define HEAD_MAX  65536
#define MAX_INDEX 1000000

struct layer_put {
    char run_id[40];
    int index;
    struct srv_layer_spec spec;
    unsigned char *head; /* the header's bytes until it is parsed */
    size_t head_len, head_need;
    int head_done;
    size_t header_len;
    uint64_t data_got;
    struct gd_sha256 hash;
    int hash_live;
    struct gd_blake3 *b3; /* fp: a fingerprint's layer is checked by its BLAKE3; else NULL */
    int store; /* 0: the data is already stored; only verify it */
    int spill_fd;
    struct srv_blob_enc *enc;
    int finished;         /* the body is checked and compressed: only the commit is left */
    char sha[65];         /* of the data, once finished */
    uint64_t stored_size; /* compressed, once finished */
};

static void
layer_put_free(void *p)
{
    struct layer_put *u = p;
    if (u->hash_live)
        gd_sha256_fini(&u->hash);
    srv_blob_enc_free(u->enc);
    if (u->spill_fd >= 0)
        close(u->spill_fd);
    free(u->head);
    free(u->b3);
    free(u);
}

static int
spill_write(void *user, const void *data, size_t len, struct gd_err *err)
{
    struct layer_put *u = user;
    return srv_spill_write(u->spill_fd, data, len, err);
}

/* Run id and layer index from the path. */
static int
layer_params(struct srv_req *req, const char **run_id, int *index)
{
    int64_t v;
    if (!srv_is_uuid(req->params[0]))
        return srv_req_fail(req, SRV_EBADREQ, "a run id is a lowercase UUID version 4");
    if (srv_parse_int(req->params[1], 0, MAX_INDEX, &v) != 0)
        return srv_req_fail(req, SRV_EBADREQ, "a layer index is an integer from 0 to %d",
                            MAX_INDEX);
    *run_id = req->params[0];
    *index = (int)v;
    return 0;
}

int
srv_layer_put_begin(struct srv_req *req)
{
    const char *run_id;
    int index;
    if (layer_params(req, &run_id, &index) != 0)
        return req->err.code;
    struct layer_put *u = calloc(1, sizeof *u);
    if (u == NULL)
        return srv_req_fail(req, GD_ENOMEM, "out of memory");
    u->spill_fd = -1;
    u->index = index;
    snprintf(u->run_id, sizeof u->run_id, "%s", run_id);
    req->ctx = u;
    req->ctx_free = layer_put_free;

    struct srv_db *db = srv_req_db(req);
    if (db == NULL)
        return req->err.code;
    struct gd_err err;
    /* sec: before a byte of the body: only the run's owner (or an admin) sends its layers */
    if (srv_run_owner_check(req, db, run_id, "send layers to") != 0) {
        srv_req_db_release(req, db);
        return req->err.code;
    }
    int rc = srv_db_layer_spec(db, run_id, index, &u->spec, &err);
    srv_req_db_release(req, db);
    if (rc != 0)
        return srv_req_fail_err(req, &err);
    /* Lengths that cannot be right are refused before a byte of the body is read. */
    if (req->content_length < u->spec.raw_size + 10 ||
        req->content_length > u->spec.raw_size + HEAD_MAX)
        return srv_req_fail(req, SRV_EBADBODY,
                            "the body is %llu bytes; layer %d holds %llu bytes of data, so its "
                            ".npy is that plus a header of 10 to %d bytes",
                            (unsigned long long)req->content_length, index,
                            (unsigned long long)u->spec.raw_size, HEAD_MAX);
    rc = gd_sha256_init(&u->hash, &err);
    if (rc != 0)
        return srv_req_fail_err(req, &err);
    u->hash_live = 1;
    if (u->spec.sha256[0] == '\0') {
        u->b3 = malloc(sizeof *u->b3);
        if (u->b3 == NULL)
            return srv_req_fail(req, GD_ENOMEM, "out of memory");
        gd_blake3_init(u->b3);
    }
    u->head_need = 12;
    u->head = malloc(u->head_need);
    if (u->head == NULL)
        return srv_req_fail(req, GD_ENOMEM, "out of memory");
    u->store = !u->spec.present && !u->spec.blob_stored;
    if (u->store) {
        rc = srv_spill_open(req->srv->spill_dir, &u->spill_fd, &err);
        if (rc == 0)
            rc = srv_blob_enc_new(gd_dtype_size(u->spec.dtype), u->spec.raw_size,
                                  (int)req->srv->cfg.compress_level, spill_write, u, &u->enc, &err);
        if (rc != 0)
            return srv_req_fail_err(req, &err);
    }
    return 0;
}

/* The header is complete: it must describe exactly the layer's record. */
static int
head_check(struct srv_req *req, struct layer_put *u)
{
    struct gd_npy_header h;
    struct gd_err err;
    if (gd_npy_header_parse(u->head, u->header_len, "body", &h, &err) != 0)
        return srv_req_fail(req, SRV_EBADBODY, "%s", err.msg);
    const struct srv_layer_spec *s = &u->spec;
    char want[128], got[128];
    gd_shape_format(s->ndim, s->shape, want, sizeof want);
    gd_shape_format(h.ndim, h.shape, got, sizeof got);
    if (h.dtype != s->dtype)
        return srv_req_fail(req, SRV_EBADBODY, "the body's dtype is %s; layer %d is %s",
                            gd_dtype_name(h.dtype), u->index, gd_dtype_name(s->dtype));
    if (h.ndim != s->ndim || memcmp(h.shape, s->shape, sizeof(int64_t) * (size_t)h.ndim) != 0)
        return srv_req_fail(req, SRV_EBADBODY, "the body's shape is %s; layer %d is %s", got,
                            u->index, want);
    if (h.fortran_order)
        return srv_req_fail(req, SRV_EBADBODY, "the body is in Fortran order; send C order");
    if (h.big_endian && gd_dtype_size(h.dtype) > 1)
        return srv_req_fail(req, SRV_EBADBODY, "the body is big-endian; send little-endian");
    uint64_t want_len = (uint64_t)h.header_len + h.data_len;
    if (req->content_length != want_len)
        return srv_req_fail(req, SRV_EBADBODY,
                            "the body is %llu bytes but its header (%zu bytes) says %zu bytes "
                            "of data follow: %llu in all",
                            (unsigned long long)req->content_length, h.header_len, h.data_len,
                            (unsigned long long)want_len);
    u->head_done = 1;
    free(u->head);
    u->head = NULL;
    return 0;
}

/* Takes header bytes from data; *used says how many. */
static int
head_take(struct srv_req *req, struct layer_put *u, const char *data, size_t len, size_t *used)
{
    size_t n = u->head_need - u->head_len;
    if (n > len)
        n = len;
    memcpy(u->head + u->head_len, data, n);
    u->head_len += n;
    *used = n;
    static const unsigned char magic[6] = {0x93, 'N', 'U', 'M', 'P', 'Y'};
    size_t cmp = u->head_len < 6 ? u->head_len : 6;
    if (memcmp(u->head, magic, cmp) != 0)
        return srv_req_fail(req, SRV_EBADBODY, "the body is not a .npy (bad magic)");
    if (u->head_len < u->head_need)
        return 0;
    if (u->header_len == 0) {
        /* 12 bytes in: the format version says how long the header is. */
        unsigned major = u->head[6];
        if (major < 1 || major > 3 || u->head[7] != 0)
            return srv_req_fail(req, SRV_EBADBODY, "unsupported .npy format version %u.%u", major,
                                u->head[7]);
        const unsigned char *b = u->head + 8;
        uint64_t dict = major == 1 ? (uint64_t)(b[0] | b[1] << 8)
                                   : (uint64_t)b[0] | (uint64_t)b[1] << 8 | (uint64_t)b[2] << 16 |
                                         (uint64_t)b[3] << 24;
        uint64_t total = (major == 1 ? 10 : 12) + dict;
        /* The shortest dict numpy can read is far longer than the 2 bytes asked for here. */
        if (total <= 12 || total > HEAD_MAX || total > req->content_length)
            return srv_req_fail(req, SRV_EBADBODY, "the .npy header claims %llu bytes",
                                (unsigned long long)total);
        u->header_len = (size_t)total;
        unsigned char *h = realloc(u->head, u->header_len);
        if (h == NULL)
            return srv_req_fail(req, GD_ENOMEM, "out of memory");
        u->head = h;
        u->head_need = u->header_len;
        return 0;
    }
    return head_check(req, u);
}

int
srv_layer_put_chunk(struct srv_req *req, const char *data, size_t len)
{
    struct layer_put *u = req->ctx;
    srv_metrics_add(SRV_M_BODY_BYTES, len);
    while (len > 0) {
        if (!u->head_done) {
            size_t used = 0;
            if (head_take(req, u, data, len, &used) != 0)
                return req->err.code;
            data += used;
            len -= used;
            continue;
        }
        struct gd_err err;
        int rc = gd_sha256_update(&u->hash, data, len, &err);
        if (u->b3 != NULL)
            gd_blake3_update(u->b3, data, len);
        if (rc == 0 && u->store)
            rc = srv_blob_enc_write(u->enc, data, len, &err);
        if (rc != 0)
            return srv_req_fail_err(req, &err);
        u->data_got += len;
        len = 0;
    }
    return 0;
}

int
srv_layer_put_end(struct srv_req *req)
{
    struct layer_put *u = req->ctx;
    struct gd_err err;
    int rc;
    if (!u->finished) {
        if (!u->head_done)
            return srv_req_fail(req, SRV_EBADBODY, "the body is not a .npy (%llu bytes)",
                                (unsigned long long)req->body_bytes);
        if (u->data_got != u->spec.raw_size)
            return srv_req_fail(req, SRV_EBADBODY, "the body holds %llu bytes of data, not %llu",
                                (unsigned long long)u->data_got,
                                (unsigned long long)u->spec.raw_size);
        u->hash_live = 0;
        rc = gd_sha256_final(&u->hash, u->sha, &err);
        if (rc != 0)
            return srv_req_fail_err(req, &err);
        if (u->b3 != NULL) {
            unsigned char h[32];
            char hex[65];
            gd_blake3_final(u->b3, h);
            for (int k = 0; k < 32; k++)
                snprintf(hex + 2 * k, 3, "%02x", h[k]);
            if (strcmp(hex, u->spec.blake3) != 0)
                return srv_req_fail(req, SRV_EHASH,
                                    "the data's BLAKE3 is %s; layers[%d].fingerprint.blake3 of "
                                    "the run says %s",
                                    hex, u->index, u->spec.blake3);
        } else if (strcmp(u->sha, u->spec.sha256) != 0)
            return srv_req_fail(req, SRV_EHASH,
                                "the data's SHA-256 is %s; layers[%d].sha256 of the run says %s",
                                u->sha, u->index, u->spec.sha256);
        /* The compressor's buffers go before the wait for a write thread. */
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
    const char *sha = u->sha;
    uint64_t stored_size = u->stored_size;
    struct srv_blob_spill spill;
    if (u->store) {
        spill.fd = u->spill_fd;
        spill.dtype = gd_dtype_name(u->spec.dtype);
        spill.elem_size = (int)gd_dtype_size(u->spec.dtype);
        spill.raw_size = u->spec.raw_size;
        spill.stored_size = stored_size;
        spill.codec = SRV_BLOB_CODEC;
    }
    struct srv_db *db = srv_req_db(req);
    if (db == NULL)
        return req->err.code;
    int stored = 0, was_present = 0;
    rc = srv_db_layer_commit(db, u->run_id, u->index, sha, u->store ? &spill : NULL, srv_now(),
                             &stored, &was_present, &err);
    srv_req_db_release(req, db);
    if (rc != 0)
        return srv_req_fail_err(req, &err);
    if (!was_present)
        srv_metrics_add(SRV_M_LAYERS_STORED, 1);
    if (stored) {
        srv_metrics_add(SRV_M_BLOBS_WRITTEN, 1);
        srv_metrics_add(SRV_M_TENSOR_BYTES, u->spec.raw_size);
        srv_metrics_add(SRV_M_STORED_BYTES, stored_size);
        SRV_LOG(GD_LOG_DEBUG, req, "layer %d of run %s: %llu bytes stored as %llu", u->index,
                u->run_id, (unsigned long long)u->spec.raw_size, (unsigned long long)stored_size);
    } else if (!was_present) {
        srv_metrics_add(SRV_M_BLOBS_DEDUP, 1);
    }
    json_t *out = json_pack("{s:s,s:i,s:s,s:b,s:I}", "run", u->run_id, "index", u->index, "sha256",
                            sha, "stored", stored, "raw_size", (json_int_t)u->spec.raw_size);
    if (out != NULL && stored)
        json_object_set_new(out, "stored_size", json_integer((json_int_t)stored_size));
    return srv_reply_json(req, was_present ? 200 : 201, out);
}

/* ---- download ---- */

int
srv_layer_get(struct srv_req *req)
{
    static const char *const known[] = {"include", NULL};
    const char *run_id;
    int index, include = 0;
    if (srv_req_query_check(req, known) != 0 || layer_params(req, &run_id, &index) != 0)
        return req->err.code;
    const char *inc = srv_req_query(req, "include");
    if (inc != NULL) {
        if (strcmp(inc, "uploading") != 0)
            return srv_req_fail(req, SRV_EBADREQ, "include: the only value is \"uploading\"");
        if (srv_route_authorize(req, SRV_ROLE_AGENT) != 0)
            return req->err.code;
        include = 1;
    }
    struct srv_db *db = srv_req_db(req);
    if (db == NULL)
        return req->err.code;
    struct srv_layer_loc loc;
    struct gd_err err;
    int rc = srv_db_layer_locate(db, run_id, index, include, &loc, &err);
    srv_req_db_release(req, db);
    if (rc != 0)
        return srv_req_fail_err(req, &err);

    unsigned char header[256];
    size_t header_len = 0;
    rc = gd_npy_header_write(loc.dtype, loc.ndim, loc.shape, header, sizeof header, &header_len,
                             &err);
    struct srv_blob_spec spec = {.blob_id = loc.blob_id,
                                 .stored_size = loc.stored_size,
                                 .raw_size = loc.raw_size,
                                 .elem_size = (size_t)loc.elem_size,
                                 .sha256 = loc.sha256,
                                 .prefix = header,
                                 .prefix_len = header_len};
    struct MHD_Response *resp = NULL;
    if (rc == 0)
        rc = srv_blob_response(req, &spec, &resp, &err);
    if (rc != 0)
        return srv_req_fail_err(req, &err);
    /* The file name a browser saves it as: the bundle's name, from the safe name alphabet. */
    char disp[320], etag[72];
    snprintf(disp, sizeof disp, "attachment; filename=\"%04d-%s.npy\"", index, loc.name);
    for (char *p = disp + 22; *p; p++)
        if (*p == '/' || *p == ':' || *p == '#' || *p == '[' || *p == ']' || *p == '+' || *p == '@')
            *p = '_';
    snprintf(etag, sizeof etag, "\"%s\"", loc.sha256);
    MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, "application/octet-stream");
    MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_DISPOSITION, disp);
    MHD_add_response_header(resp, MHD_HTTP_HEADER_ETAG, etag);
    return srv_reply(req, 200, resp);
}
