/*
 * tensor_cache.c: decoded layer tensors by content (tensor_cache.h): a chained hash table of
 * entries on a doubly linked list in order of use, the least recently used dropped first
 * when the byte budget is passed. A hit is a copy of the kept data (memcpy), far cheaper than
 * what it saves: the blob read, its zstd decoding and unshuffling, and the SHA-256 check.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tensor_cache.h"

#define BUCKETS 4096

struct entry {
    struct entry *chain;       /* next in the bucket */
    struct entry *prev, *next; /* in order of use, newest first */
    char sha256[65];
    struct gd_tensor *t;
    size_t bytes;
};

struct srv_tensor_cache {
    pthread_mutex_t mu;
    size_t max_bytes, bytes, count;
    int64_t hits, misses;
    struct entry *newest, *oldest;
    struct entry *buckets[BUCKETS];
};

static size_t
bucket_of(const char *sha256)
{
    /* The key is a hash already: its first 12 hex digits spread the buckets evenly. */
    size_t h = 0;
    for (int i = 0; i < 12 && sha256[i] != '\0'; i++)
        h = h * 16 + (size_t)(sha256[i] <= '9' ? sha256[i] - '0' : (sha256[i] | 0x20) - 'a' + 10);
    return h % BUCKETS;
}

int
srv_tensor_cache_new(size_t max_bytes, struct srv_tensor_cache **out, struct gd_err *err)
{
    struct srv_tensor_cache *c = calloc(1, sizeof *c);
    if (c == NULL)
        return gd_err_set(err, GD_ENOMEM, "out of memory");
    pthread_mutex_init(&c->mu, NULL);
    c->max_bytes = max_bytes;
    *out = c;
    return 0;
}

static void
unlink_use(struct srv_tensor_cache *c, struct entry *e)
{
    if (e->prev != NULL)
        e->prev->next = e->next;
    else
        c->newest = e->next;
    if (e->next != NULL)
        e->next->prev = e->prev;
    else
        c->oldest = e->prev;
    e->prev = e->next = NULL;
}

static void
link_newest(struct srv_tensor_cache *c, struct entry *e)
{
    e->prev = NULL;
    e->next = c->newest;
    if (c->newest != NULL)
        c->newest->prev = e;
    c->newest = e;
    if (c->oldest == NULL)
        c->oldest = e;
}

static void
drop(struct srv_tensor_cache *c, struct entry *e)
{
    struct entry **p = &c->buckets[bucket_of(e->sha256)];
    while (*p != e)
        p = &(*p)->chain;
    *p = e->chain;
    unlink_use(c, e);
    c->bytes -= e->bytes;
    c->count--;
    gd_tensor_free(e->t);
    free(e);
}

void
srv_tensor_cache_free(struct srv_tensor_cache *c)
{
    if (c == NULL)
        return;
    while (c->oldest != NULL)
        drop(c, c->oldest);
    pthread_mutex_destroy(&c->mu);
    free(c);
}

static struct entry *
find(struct srv_tensor_cache *c, const char *sha256)
{
    struct entry *e = c->buckets[bucket_of(sha256)];
    while (e != NULL && strcmp(e->sha256, sha256) != 0)
        e = e->chain;
    return e;
}

static int
same_layout(const struct gd_tensor *t, enum gd_dtype dtype, int ndim, const int64_t *shape)
{
    if (t->dtype != dtype || t->ndim != ndim)
        return 0;
    for (int i = 0; i < ndim; i++)
        if (t->shape[i] != shape[i])
            return 0;
    return 1;
}

struct gd_tensor *
srv_tensor_cache_get(struct srv_tensor_cache *c, const char *sha256, enum gd_dtype dtype, int ndim,
                     const int64_t *shape)
{
    if (c == NULL || sha256 == NULL || strlen(sha256) != 64)
        return NULL;
    struct gd_tensor *copy = NULL;
    pthread_mutex_lock(&c->mu);
    struct entry *e = find(c, sha256);
    /* The same bytes may be another dtype or shape in another record: only a match serves. */
    if (e != NULL && same_layout(e->t, dtype, ndim, shape)) {
        unlink_use(c, e);
        link_newest(c, e);
        copy = gd_tensor_dup(e->t, NULL);
    }
    if (copy != NULL)
        c->hits++;
    else
        c->misses++;
    pthread_mutex_unlock(&c->mu);
    return copy;
}

void
srv_tensor_cache_put(struct srv_tensor_cache *c, const char *sha256, const struct gd_tensor *t)
{
    if (c == NULL || sha256 == NULL || strlen(sha256) != 64 || t->device != 0)
        return;
    size_t bytes = gd_tensor_nbytes(t) + sizeof(struct entry) + sizeof(struct gd_tensor);
    if (bytes > c->max_bytes / 8)
        return;
    struct gd_tensor *copy = gd_tensor_dup(t, NULL);
    struct entry *e = copy != NULL ? calloc(1, sizeof *e) : NULL;
    if (e == NULL) {
        gd_tensor_free(copy);
        return;
    }
    memcpy(e->sha256, sha256, 65);
    e->t = copy;
    e->bytes = bytes;
    pthread_mutex_lock(&c->mu);
    struct entry *old = find(c, sha256);
    if (old != NULL)
        drop(c, old); /* kept under another shape: the newer one stays */
    size_t b = bucket_of(sha256);
    e->chain = c->buckets[b];
    c->buckets[b] = e;
    link_newest(c, e);
    c->bytes += bytes;
    c->count++;
    while (c->bytes > c->max_bytes && c->oldest != NULL)
        drop(c, c->oldest);
    pthread_mutex_unlock(&c->mu);
}

void
srv_tensor_cache_stats(struct srv_tensor_cache *c, size_t *tensors, size_t *bytes, int64_t *hits,
                       int64_t *misses)
{
    pthread_mutex_lock(&c->mu);
    *tensors = c->count;
    *bytes = c->bytes;
    *hits = c->hits;
    *misses = c->misses;
    pthread_mutex_unlock(&c->mu);
}
