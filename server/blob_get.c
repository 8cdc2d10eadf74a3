/*
 * blob_get.c: a stored blob sent back as a response body (server.h, srv_blob_response): a
 * prefix of the caller's (a layer's .npy header; none for a job's file), then the blob's
 * data as libmicrohttpd asks for it, and the bytes checked against their SHA-256 at the
 * end: a blob that does not decode to what was stored ends the download with an error
 * instead of a wrong body.
 *
 * Memory per connection is bounded by the piece libmicrohttpd asks for (PIECE), not by the
 * codec (issue 25 item 2): a client that asks and never reads holds its piece, its offsets
 * and a hash state, about 34 KiB, whatever the tensor. Each block of SRV_BLOB_CODEC is a
 * frame of its own, so the connection keeps no decoder between pieces: the thread serving
 * it decodes a block from its frame's offset into a small cache of its own (the last
 * CACHE_SLOTS blocks it decoded, with where the next frame starts), and every piece of that
 * block, for this connection or another one on the same thread, is copied from there. A
 * database connection is held only within one read callback. Blobs stored before that codec
 * (one frame for the whole blob) need a decoder that lives as long as the download: at most
 * LEGACY_MAX such downloads run at once, further ones are answered 503 busy.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpudiff/hash.h"
#include "blob.h"
#include "db.h"
#include "server.h"

/* What libmicrohttpd buffers per connection: the most a piece is. */
#define PIECE       ((size_t)32 * 1024)
#define CACHE_SLOTS 4
#define LEGACY_MAX  8

/* ---- per thread: the blocks decoded lately ---- */

struct block_slot {
    int64_t blob_id; /* 0: empty */
    uint64_t index;
    uint64_t next_off; /* where the next block's frame starts */
    size_t len;
    uint64_t used; /* the thread's clock when last used */
    unsigned char *data;
};

struct thread_blocks {
    struct srv_blob_scratch *scratch;
    unsigned char *shuffled;
    struct block_slot slots[CACHE_SLOTS];
    uint64_t clock;
};

static pthread_key_t blocks_key;
static pthread_once_t blocks_once = PTHREAD_ONCE_INIT;
static _Atomic int legacy_live;

static void
thread_blocks_free(void *p)
{
    struct thread_blocks *t = p;
    if (t == NULL)
        return;
    srv_blob_scratch_free(t->scratch);
    free(t->shuffled);
    for (int i = 0; i < CACHE_SLOTS; i++)
        free(t->slots[i].data);
    free(t);
}

static void
blocks_key_make(void)
{
    pthread_key_create(&blocks_key, thread_blocks_free);
}

static struct thread_blocks *
thread_blocks(struct gd_err *err)
{
    pthread_once(&blocks_once, blocks_key_make);
    struct thread_blocks *t = pthread_getspecific(blocks_key);
    if (t != NULL)
        return t;
    t = calloc(1, sizeof *t);
    int ok = t != NULL && srv_blob_scratch_new(&t->scratch, err) == 0 &&
             (t->shuffled = malloc(SRV_BLOB_BLOCK)) != NULL;
    for (int i = 0; ok && i < CACHE_SLOTS; i++)
        ok = (t->slots[i].data = malloc(SRV_BLOB_BLOCK)) != NULL;
    if (!ok || pthread_setspecific(blocks_key, t) != 0) {
        thread_blocks_free(t);
        gd_err_set(err, GD_ENOMEM, "out of memory for a download's blocks");
        return NULL;
    }
    return t;
}

/* ---- one download ---- */

struct blob_get {
    struct srv_store *store;
    char req_id[48];
    int64_t blob_id;
    uint64_t stored_size, raw_size;
    size_t elem_size;
    unsigned char prefix[256];
    size_t prefix_len;
    uint64_t pos;        /* bytes of the body sent */
    uint64_t block;      /* the block the data goes on with */
    uint64_t frame_off;  /* where its frame starts */
    uint64_t in_off;     /* the source: the next stored byte to read */
    struct srv_db *db;   /* held during one read callback only */
    struct srv_sql_piece_handle *handle;
    struct srv_blob_dec *dec; /* a blob of the legacy codec only */
    struct gd_sha256 hash;
    int hash_live;
    char sha256[65];
};

static void
blob_get_free(void *p)
{
    struct blob_get *g = p;
    if (g->dec != NULL) {
        srv_blob_dec_free(g->dec);
        atomic_fetch_sub(&legacy_live, 1);
    }
    if (g->hash_live)
        gd_sha256_fini(&g->hash);
    free(g);
}

/* The stored bytes from in_off on, for a decoder, within one callback's connection. */
static int
blob_source(void *user, void *buf, size_t cap, size_t *got, struct gd_err *err)
{
    struct blob_get *g = user;
    uint64_t left = g->stored_size - g->in_off;
    size_t n = left < cap ? (size_t)left : cap;
    *got = 0;
    if (n == 0)
        return 0;
    int rc = srv_db_blob_read(g->db, g->blob_id, &g->handle, g->in_off, buf, n, err);
    if (rc != 0)
        return rc;
    g->in_off += n;
    *got = n;
    return 0;
}

/* The slot holding block g->block, decoded now when no slot of this thread holds it. */
static struct block_slot *
block_get(struct blob_get *g, struct gd_err *err)
{
    struct thread_blocks *t = thread_blocks(err);
    if (t == NULL)
        return NULL;
    struct block_slot *oldest = &t->slots[0];
    for (int i = 0; i < CACHE_SLOTS; i++) {
        struct block_slot *s = &t->slots[i];
        if (s->blob_id == g->blob_id && s->index == g->block) {
            s->used = ++t->clock;
            return s;
        }
        if (s->used < oldest->used)
            oldest = s;
    }
    uint64_t start = g->block * SRV_BLOB_BLOCK;
    size_t len = g->raw_size - start < SRV_BLOB_BLOCK ? (size_t)(g->raw_size - start)
                                                      : SRV_BLOB_BLOCK;
    uint64_t frame_len = 0;
    oldest->blob_id = 0;
    int rc = srv_store_acquire(g->store, &g->db, err);
    if (rc == 0) {
        g->in_off = g->frame_off;
        rc = srv_blob_block_decode(t->scratch, g->elem_size, blob_source, g, t->shuffled,
                                   oldest->data, len, &frame_len, err);
        srv_db_blob_close(g->db, &g->handle);
        srv_store_release(g->store, g->db);
        g->db = NULL;
    }
    if (rc != 0)
        return NULL;
    oldest->blob_id = g->blob_id;
    oldest->index = g->block;
    oldest->len = len;
    oldest->next_off = g->frame_off + frame_len;
    oldest->used = ++t->clock;
    return oldest;
}

/* The next up to max bytes of data into buf: from the thread's blocks, or the legacy
 * decoder. */
static int
data_more(struct blob_get *g, char *buf, size_t max, size_t *got, struct gd_err *err)
{
    *got = 0;
    int rc = 0;
    if (g->dec != NULL) {
        rc = srv_store_acquire(g->store, &g->db, err);
        if (rc == 0) {
            rc = srv_blob_dec_read(g->dec, buf, max, got, err);
            srv_db_blob_close(g->db, &g->handle);
            srv_store_release(g->store, g->db);
            g->db = NULL;
        }
    } else {
        struct block_slot *s = block_get(g, err);
        if (s == NULL)
            return err->code != 0 ? err->code : GD_EIO;
        uint64_t at = g->pos - g->prefix_len - g->block * SRV_BLOB_BLOCK;
        size_t n = s->len - (size_t)at;
        if (n > max)
            n = max;
        memcpy(buf, s->data + at, n);
        *got = n;
        if (at + n == s->len) {
            g->block++;
            g->frame_off = s->next_off;
        }
    }
    if (rc == 0)
        rc = gd_sha256_update(&g->hash, buf, *got, err);
    if (rc == 0 && *got == 0)
        rc = gd_err_set(err, GD_EFORMAT, "stored data ends early");
    if (rc == 0 && g->pos + *got == g->prefix_len + g->raw_size) {
        char sha[65];
        g->hash_live = 0;
        rc = gd_sha256_final(&g->hash, sha, err);
        if (rc == 0 && strcmp(sha, g->sha256) != 0)
            rc = gd_err_set(err, GD_EFORMAT, "stored data hashes to %s, not %s", sha, g->sha256);
    }
    return rc;
}

static ssize_t
blob_get_read(void *cls, uint64_t pos, char *buf, size_t max)
{
    struct blob_get *g = cls;
    if (pos != g->pos)
        return MHD_CONTENT_READER_END_WITH_ERROR;
    if (g->pos == g->prefix_len + g->raw_size)
        return MHD_CONTENT_READER_END_OF_STREAM;
    size_t n = 0;
    if (g->pos < g->prefix_len) {
        /* The prefix alone: then every piece of data starts where the last one ended. */
        n = g->prefix_len - (size_t)g->pos;
        if (n > max)
            n = max;
        memcpy(buf, g->prefix + g->pos, n);
    } else {
        struct gd_err err = {0};
        if (data_more(g, buf, max, &n, &err) != 0) {
            SRV_LOG(GD_LOG_ERROR, NULL, "download of request %s stopped: %s", g->req_id,
                    err.msg);
            return MHD_CONTENT_READER_END_WITH_ERROR;
        }
    }
    g->pos += n;
    return (ssize_t)n;
}

/* 1 when the blob is one frame for all of its blocks (stored before SRV_BLOB_CODEC). */
static int
is_legacy(struct blob_get *g, struct gd_err *err, int *legacy)
{
    *legacy = 0;
    if (g->raw_size <= SRV_BLOB_BLOCK)
        return 0; /* one block: one frame either way */
    unsigned char head[32];
    size_t n = g->stored_size < sizeof head ? (size_t)g->stored_size : sizeof head;
    int rc = srv_store_acquire(g->store, &g->db, err);
    if (rc == 0) {
        rc = srv_db_blob_read(g->db, g->blob_id, &g->handle, 0, head, n, err);
        srv_db_blob_close(g->db, &g->handle);
        srv_store_release(g->store, g->db);
        g->db = NULL;
    }
    if (rc == 0)
        *legacy = srv_blob_frame_size(head, n) != SRV_BLOB_BLOCK;
    return rc;
}

int
srv_blob_response(struct srv_req *req, const struct srv_blob_spec *spec, struct MHD_Response **out,
                  struct gd_err *err)
{
    *out = NULL;
    if (spec->prefix_len > sizeof ((struct blob_get *)0)->prefix)
        return gd_err_set(err, GD_EINVAL, "a prefix of %zu bytes is too long", spec->prefix_len);
    struct blob_get *g = calloc(1, sizeof *g);
    if (g == NULL)
        return gd_err_set(err, GD_ENOMEM, "out of memory");
    g->store = req->srv->store;
    g->blob_id = spec->blob_id;
    g->stored_size = spec->stored_size;
    g->raw_size = spec->raw_size;
    g->elem_size = spec->elem_size;
    if (spec->prefix_len > 0)
        memcpy(g->prefix, spec->prefix, spec->prefix_len);
    g->prefix_len = spec->prefix_len;
    snprintf(g->sha256, sizeof g->sha256, "%s", spec->sha256);
    snprintf(g->req_id, sizeof g->req_id, "%s", req->id);
    int legacy = 0;
    int rc = gd_sha256_init(&g->hash, err);
    g->hash_live = rc == 0;
    if (rc == 0)
        rc = is_legacy(g, err, &legacy);
    if (rc == 0 && legacy) {
        if (atomic_fetch_add(&legacy_live, 1) >= LEGACY_MAX) {
            atomic_fetch_sub(&legacy_live, 1);
            rc = gd_err_set(err, SRV_EBUSY,
                            "%d downloads of tensors stored in the older one-frame codec run "
                            "already; try again",
                            LEGACY_MAX);
        } else {
            rc = srv_blob_dec_new(spec->elem_size, spec->raw_size, blob_source, g, &g->dec, err);
            if (rc != 0)
                atomic_fetch_sub(&legacy_live, 1);
        }
    }
    if (rc != 0) {
        blob_get_free(g);
        return rc;
    }
    *out = MHD_create_response_from_callback(g->prefix_len + spec->raw_size, PIECE,
                                             blob_get_read, g, blob_get_free);
    if (*out == NULL) {
        blob_get_free(g);
        return gd_err_set(err, GD_ENOMEM, "out of memory");
    }
    return 0;
}
