/* blob.c: the byte shuffle and the streaming zstd encoder and decoder of stored tensors. */
#include <stdlib.h>
#include <string.h>

#include <zstd.h>

#include "blob.h"

/*
 * The loops, with the element size a constant in each instance so the compiler can unroll
 * and vectorize them: for 4-byte elements that makes the transposition several times faster.
 */
static inline void
shuffle_n(const unsigned char *src, unsigned char *dst, size_t n, size_t elem_size)
{
    for (size_t b = 0; b < elem_size; b++) {
        unsigned char *row = dst + b * n;
        const unsigned char *col = src + b;
        for (size_t i = 0; i < n; i++)
            row[i] = col[i * elem_size];
    }
}

static inline void
unshuffle_n(const unsigned char *src, unsigned char *dst, size_t n, size_t elem_size)
{
    for (size_t b = 0; b < elem_size; b++) {
        const unsigned char *row = src + b * n;
        unsigned char *col = dst + b;
        for (size_t i = 0; i < n; i++)
            col[i * elem_size] = row[i];
    }
}

/* Shuffles (or with undo, unshuffles) the whole elements of len bytes; a tail shorter than
 * an element is copied as it is. */
static void
reorder(const void *in, void *out, size_t len, size_t elem_size, int undo)
{
    const unsigned char *src = in;
    unsigned char *dst = out;
    size_t n = elem_size > 1 ? len / elem_size : 0, body = n * elem_size;
    switch (elem_size) {
    case 0:
    case 1:
        break;
    case 2:
        undo ? unshuffle_n(src, dst, n, 2) : shuffle_n(src, dst, n, 2);
        break;
    case 4:
        undo ? unshuffle_n(src, dst, n, 4) : shuffle_n(src, dst, n, 4);
        break;
    case 8:
        undo ? unshuffle_n(src, dst, n, 8) : shuffle_n(src, dst, n, 8);
        break;
    default:
        undo ? unshuffle_n(src, dst, n, elem_size) : shuffle_n(src, dst, n, elem_size);
        break;
    }
    memcpy(dst + body, src + body, len - body);
}

void
srv_shuffle(const void *in, void *out, size_t len, size_t elem_size)
{
    reorder(in, out, len, elem_size, 0);
}

void
srv_unshuffle(const void *in, void *out, size_t len, size_t elem_size)
{
    reorder(in, out, len, elem_size, 1);
}

/* ---- encoder ---- */

struct srv_blob_enc {
    ZSTD_CCtx *cctx;
    size_t elem_size;
    uint64_t raw_size; /* UINT64_MAX: not known */
    uint64_t taken;    /* raw bytes written so far */
    int frames;        /* frames made */
    unsigned char *block; /* raw bytes gathered toward one block */
    size_t block_len, block_cap;
    unsigned char *shuffled;
    unsigned char *out; /* one frame: ZSTD_compressBound of a block */
    size_t out_cap;
    srv_blob_sink_fn sink;
    void *user;
    uint64_t stored;
};

static int
zstd_fail(size_t r, const char *what, struct gd_err *err)
{
    return gd_err_set(err, ZSTD_isError(r) ? GD_EFORMAT : GD_EIO, "%s: %s", what,
                      ZSTD_getErrorName(r));
}

int
srv_blob_enc_new(size_t elem_size, uint64_t raw_size, int level, srv_blob_sink_fn sink, void *user,
                 struct srv_blob_enc **out, struct gd_err *err)
{
    if (elem_size < 1 || elem_size > 8)
        return gd_err_set(err, GD_EINVAL, "element size %zu is not 1 to 8", elem_size);
    struct srv_blob_enc *e = calloc(1, sizeof *e);
    if (e == NULL)
        return gd_err_set(err, GD_ENOMEM, "out of memory for a blob encoder");
    e->elem_size = elem_size;
    e->raw_size = raw_size;
    e->sink = sink;
    e->user = user;
    /* A small tensor needs no full block of buffer: uploads waiting to commit hold these. */
    e->block_cap =
        raw_size < SRV_BLOB_BLOCK ? (size_t)(raw_size > 0 ? raw_size : 1) : SRV_BLOB_BLOCK;
    e->out_cap = ZSTD_compressBound(e->block_cap);
    e->cctx = ZSTD_createCCtx();
    e->block = malloc(e->block_cap);
    e->shuffled = malloc(e->block_cap);
    e->out = malloc(e->out_cap);
    if (e->cctx == NULL || e->block == NULL || e->shuffled == NULL || e->out == NULL) {
        srv_blob_enc_free(e);
        return gd_err_set(err, GD_ENOMEM, "out of memory for a blob encoder");
    }
    /* Each block one frame, with its content size (ZSTD_compress2 writes it) and checksum. */
    size_t r = ZSTD_CCtx_setParameter(e->cctx, ZSTD_c_compressionLevel, level);
    if (!ZSTD_isError(r))
        r = ZSTD_CCtx_setParameter(e->cctx, ZSTD_c_checksumFlag, 1);
    if (ZSTD_isError(r)) {
        srv_blob_enc_free(e);
        return zstd_fail(r, "zstd setup", err);
    }
    *out = e;
    return 0;
}

/* Compresses len shuffled bytes as one frame and hands it to the sink. */
static int
enc_frame(struct srv_blob_enc *e, const void *data, size_t len, struct gd_err *err)
{
    size_t n = ZSTD_compress2(e->cctx, e->out, e->out_cap, data, len);
    if (ZSTD_isError(n))
        return zstd_fail(n, "zstd compression", err);
    int rc = e->sink(e->user, e->out, n, err);
    if (rc != 0)
        return rc;
    e->stored += n;
    e->frames++;
    return 0;
}

static int
enc_flush_block(struct srv_blob_enc *e, struct gd_err *err)
{
    if (e->block_len == 0)
        return 0;
    srv_shuffle(e->block, e->shuffled, e->block_len, e->elem_size);
    size_t len = e->block_len;
    e->block_len = 0;
    return enc_frame(e, e->shuffled, len, err);
}

int
srv_blob_enc_write(struct srv_blob_enc *e, const void *data, size_t len, struct gd_err *err)
{
    const unsigned char *p = data;
    if (e->raw_size != UINT64_MAX && len > e->raw_size - e->taken)
        return gd_err_set(err, GD_EINVAL, "more data than the blob's size");
    while (len > 0) {
        size_t n = e->block_cap - e->block_len;
        if (n > len)
            n = len;
        memcpy(e->block + e->block_len, p, n);
        e->block_len += n;
        e->taken += n;
        p += n;
        len -= n;
        if (e->block_len == e->block_cap) {
            int rc = enc_flush_block(e, err);
            if (rc != 0)
                return rc;
        }
    }
    return 0;
}

int
srv_blob_enc_finish(struct srv_blob_enc *e, uint64_t *stored, struct gd_err *err)
{
    if (e->raw_size != UINT64_MAX && e->taken != e->raw_size)
        return gd_err_set(err, GD_EINVAL, "the blob holds %llu bytes, not the %llu expected",
                          (unsigned long long)e->taken, (unsigned long long)e->raw_size);
    int rc = enc_flush_block(e, err);
    /* No data: one empty frame, so that every stored blob is a frame to check. */
    if (rc == 0 && e->frames == 0)
        rc = enc_frame(e, e->shuffled, 0, err);
    if (rc == 0 && stored != NULL)
        *stored = e->stored;
    return rc;
}

void
srv_blob_enc_free(struct srv_blob_enc *e)
{
    if (e == NULL)
        return;
    ZSTD_freeCCtx(e->cctx);
    free(e->block);
    free(e->shuffled);
    free(e->out);
    free(e);
}

/* ---- decoder ---- */

struct srv_blob_dec {
    ZSTD_DCtx *dctx;
    size_t elem_size;
    uint64_t raw_size;
    uint64_t decoded; /* raw bytes taken out of the frame so far */
    srv_blob_source_fn source;
    void *user;
    unsigned char *in;
    size_t in_cap, in_len, in_pos;
    int in_eof;
    int frame_end; /* the last zstd call ended a frame and nothing was read since */
    unsigned char *shuffled; /* one block as it comes out of zstd */
    unsigned char *block;    /* the same, unshuffled, being handed out */
    size_t block_len, block_pos;
};

int
srv_blob_dec_new(size_t elem_size, uint64_t raw_size, srv_blob_source_fn source, void *user,
                 struct srv_blob_dec **out, struct gd_err *err)
{
    if (elem_size < 1 || elem_size > 8)
        return gd_err_set(err, GD_EINVAL, "element size %zu is not 1 to 8", elem_size);
    struct srv_blob_dec *d = calloc(1, sizeof *d);
    if (d == NULL)
        return gd_err_set(err, GD_ENOMEM, "out of memory for a blob decoder");
    d->elem_size = elem_size;
    d->raw_size = raw_size;
    d->source = source;
    d->user = user;
    d->in_cap = ZSTD_DStreamInSize();
    d->dctx = ZSTD_createDCtx();
    d->in = malloc(d->in_cap);
    d->shuffled = malloc(SRV_BLOB_BLOCK);
    d->block = malloc(SRV_BLOB_BLOCK);
    if (d->dctx == NULL || d->in == NULL || d->shuffled == NULL || d->block == NULL) {
        srv_blob_dec_free(d);
        return gd_err_set(err, GD_ENOMEM, "out of memory for a blob decoder");
    }
    *out = d;
    return 0;
}

/* Refills the input buffer when it is used up. */
static int
dec_refill(struct srv_blob_dec *d, struct gd_err *err)
{
    if (d->in_pos < d->in_len || d->in_eof)
        return 0;
    size_t got = 0;
    int rc = d->source(d->user, d->in, d->in_cap, &got, err);
    if (rc != 0)
        return rc;
    d->in_len = got;
    d->in_pos = 0;
    if (got == 0)
        d->in_eof = 1;
    return 0;
}

/*
 * Decompresses into out until want bytes are there or the input ends at the end of a frame.
 * Frames follow each other: one per block (SRV_BLOB_CODEC), or one for the whole blob in
 * blobs stored before it ("shuffle256k+zstd"); either is read the same way.
 */
static int
dec_fill(struct srv_blob_dec *d, unsigned char *out, size_t want, size_t *have, struct gd_err *err)
{
    while (*have < want) {
        int rc = dec_refill(d, err);
        if (rc != 0)
            return rc;
        if (d->in_pos == d->in_len && d->in_eof) {
            if (d->frame_end)
                return 0;
            return gd_err_set(err, GD_EFORMAT, "stored blob: the zstd frame is cut short");
        }
        ZSTD_inBuffer in = {d->in, d->in_len, d->in_pos};
        ZSTD_outBuffer o = {out, want, *have};
        size_t r = ZSTD_decompressStream(d->dctx, &o, &in);
        if (ZSTD_isError(r))
            return zstd_fail(r, "stored blob", err);
        int progress = in.pos != d->in_pos || o.pos != *have;
        d->in_pos = in.pos;
        *have = o.pos;
        if (r == 0)
            d->frame_end = 1;
        else if (progress)
            d->frame_end = 0;
    }
    return 0;
}

/* Decodes the next block into d->block. */
static int
dec_next_block(struct srv_blob_dec *d, struct gd_err *err)
{
    uint64_t left = d->raw_size - d->decoded;
    size_t want = left < SRV_BLOB_BLOCK ? (size_t)left : SRV_BLOB_BLOCK;
    size_t have = 0;
    int rc = dec_fill(d, d->shuffled, want, &have, err);
    if (rc != 0)
        return rc;
    if (have < want)
        return gd_err_set(err, GD_EFORMAT, "stored blob holds %llu bytes, %llu expected",
                          (unsigned long long)(d->decoded + have), (unsigned long long)d->raw_size);
    srv_unshuffle(d->shuffled, d->block, want, d->elem_size);
    d->decoded += want;
    d->block_len = want;
    d->block_pos = 0;
    return 0;
}

/* After the last byte: a frame must end there (checksums are checked on the way). */
static int
dec_check_end(struct srv_blob_dec *d, struct gd_err *err)
{
    unsigned char extra;
    size_t have = 0;
    int rc = dec_fill(d, &extra, 1, &have, err);
    if (rc != 0)
        return rc;
    if (have > 0)
        return gd_err_set(err, GD_EFORMAT, "stored blob holds more than the %llu bytes expected",
                          (unsigned long long)d->raw_size);
    return 0;
}

int
srv_blob_dec_read(struct srv_blob_dec *d, void *buf, size_t len, size_t *got, struct gd_err *err)
{
    unsigned char *p = buf;
    size_t n = 0;
    int rc = 0;
    while (n < len) {
        if (d->block_pos == d->block_len) {
            if (d->decoded == d->raw_size) {
                rc = dec_check_end(d, err);
                break;
            }
            rc = dec_next_block(d, err);
            if (rc != 0)
                break;
        }
        size_t k = d->block_len - d->block_pos;
        if (k > len - n)
            k = len - n;
        memcpy(p + n, d->block + d->block_pos, k);
        d->block_pos += k;
        n += k;
    }
    if (rc != 0)
        return rc;
    *got = n;
    return 0;
}

void
srv_blob_dec_free(struct srv_blob_dec *d)
{
    if (d == NULL)
        return;
    ZSTD_freeDCtx(d->dctx);
    free(d->in);
    free(d->shuffled);
    free(d->block);
    free(d);
}

/* ---- one block at a time ---- */

uint64_t
srv_blob_frame_size(const void *head, size_t n)
{
    unsigned long long size = ZSTD_getFrameContentSize(head, n);
    if (size == ZSTD_CONTENTSIZE_UNKNOWN || size == ZSTD_CONTENTSIZE_ERROR)
        return UINT64_MAX;
    return (uint64_t)size;
}

struct srv_blob_scratch {
    ZSTD_DCtx *dctx;
    unsigned char *in;
    size_t in_cap;
};

int
srv_blob_scratch_new(struct srv_blob_scratch **out, struct gd_err *err)
{
    struct srv_blob_scratch *s = calloc(1, sizeof *s);
    if (s == NULL)
        return gd_err_set(err, GD_ENOMEM, "out of memory for a blob decoder");
    s->in_cap = ZSTD_DStreamInSize();
    s->dctx = ZSTD_createDCtx();
    s->in = malloc(s->in_cap);
    if (s->dctx == NULL || s->in == NULL) {
        srv_blob_scratch_free(s);
        return gd_err_set(err, GD_ENOMEM, "out of memory for a blob decoder");
    }
    *out = s;
    return 0;
}

void
srv_blob_scratch_free(struct srv_blob_scratch *s)
{
    if (s == NULL)
        return;
    ZSTD_freeDCtx(s->dctx);
    free(s->in);
    free(s);
}

int
srv_blob_block_decode(struct srv_blob_scratch *s, size_t elem_size, srv_blob_source_fn source,
                      void *user, void *shuffled, void *out, size_t len, uint64_t *frame_len,
                      struct gd_err *err)
{
    size_t r = ZSTD_DCtx_reset(s->dctx, ZSTD_reset_session_only);
    if (ZSTD_isError(r))
        return zstd_fail(r, "zstd reset", err);
    uint64_t fed = 0;
    ZSTD_outBuffer o = {shuffled, len, 0};
    for (;;) {
        size_t got = 0;
        int rc = source(user, s->in, s->in_cap, &got, err);
        if (rc != 0)
            return rc;
        if (got == 0)
            return gd_err_set(err, GD_EFORMAT, "stored blob: a block's frame is cut short");
        ZSTD_inBuffer in = {s->in, got, 0};
        while (in.pos < in.size) {
            size_t before = o.pos;
            r = ZSTD_decompressStream(s->dctx, &o, &in);
            if (ZSTD_isError(r))
                return zstd_fail(r, "stored blob", err);
            if (r == 0) {
                /* The frame ended here: what is left of the input is the next frame's. */
                if (o.pos != len)
                    return gd_err_set(err, GD_EFORMAT,
                                      "stored blob: a block's frame holds %zu bytes, not %zu",
                                      o.pos, len);
                *frame_len = fed + in.pos;
                srv_unshuffle(shuffled, out, len, elem_size);
                return 0;
            }
            if (o.pos == len && o.pos == before && in.pos < in.size)
                return gd_err_set(err, GD_EFORMAT,
                                  "stored blob: a block's frame holds more than %zu bytes", len);
        }
        fed += got;
    }
}
