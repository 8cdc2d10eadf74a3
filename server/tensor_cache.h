/*
 * tensor_cache.h: the layer tensors the comparison service read last, decoded and checked,
 * kept in memory up to a byte budget and dropped least recently used first. Stored tensors
 * are content-addressed (a layer's sha256 is its data's), so an entry serves every run that
 * holds the same data: a device matrix, an overlay or a heatmap compares each run with many
 * others and reads its layers once instead of once per pair (docs/SERVER.md, "Memory").
 * Thread-safe.
 */
#ifndef GPUDIFF_SERVER_TENSOR_CACHE_H
#define GPUDIFF_SERVER_TENSOR_CACHE_H

#include <stddef.h>

#include "gpudiff/error.h"
#include "gpudiff/tensor.h"

struct srv_tensor_cache;

/* A cache of at most max_bytes of tensor data; a tensor over an eighth of it is not kept. */
int srv_tensor_cache_new(size_t max_bytes, struct srv_tensor_cache **out, struct gd_err *err);

/* Frees the cache and its tensors. Accepts NULL. */
void srv_tensor_cache_free(struct srv_tensor_cache *c);

/*
 * A new host tensor (owned by the caller) with the data kept under sha256 (64 hex digits),
 * when it was kept with this dtype and shape; NULL when not, or when out of memory.
 */
struct gd_tensor *srv_tensor_cache_get(struct srv_tensor_cache *c, const char *sha256,
                                       enum gd_dtype dtype, int ndim, const int64_t *shape);

/* Keeps a copy of t under sha256 (nothing when it is too large or memory is short). */
void srv_tensor_cache_put(struct srv_tensor_cache *c, const char *sha256,
                          const struct gd_tensor *t);

/* Tensors and bytes kept, and lookups that found a tensor and that did not, for /metrics. */
void srv_tensor_cache_stats(struct srv_tensor_cache *c, size_t *tensors, size_t *bytes,
                            int64_t *hits, int64_t *misses);

#endif
