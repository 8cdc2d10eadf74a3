/*
 * hash.h: SHA-256 (through OpenSSL's libcrypto), streaming or in one call, as lowercase hex.
 */
#ifndef GPUDIFF_HASH_H
#define GPUDIFF_HASH_H

#include <stddef.h>

#include "gpudiff/error.h"

#ifdef __cplusplus
extern "C" {
#endif

#define GD_SHA256_HEX_LEN 64

/* A running hash; caller-owned, started with gd_sha256_init(), ended with _final or _fini. */
struct gd_sha256 {
    void *md; /* the library's context */
};

int gd_sha256_init(struct gd_sha256 *h, struct gd_err *err);
int gd_sha256_update(struct gd_sha256 *h, const void *data, size_t len, struct gd_err *err);
/* Writes 64 hex digits and a NUL into hex and releases the context. */
int gd_sha256_final(struct gd_sha256 *h, char hex[GD_SHA256_HEX_LEN + 1], struct gd_err *err);
/* Releases the context without a result (after an error). Accepts a finished hash. */
void gd_sha256_fini(struct gd_sha256 *h);

/* One call: the hash of len bytes. */
int gd_sha256_hex(const void *data, size_t len, char hex[GD_SHA256_HEX_LEN + 1],
                  struct gd_err *err);

/* The hash of a whole file, read in blocks. */
int gd_sha256_file(const char *path, char hex[GD_SHA256_HEX_LEN + 1], struct gd_err *err);

struct gd_tensor; /* gpudiff/tensor.h */

/* The SHA-256 of a tensor's data as run.json records it (C order, little-endian). */
int gd_tensor_sha256(const struct gd_tensor *t, char hex[GD_SHA256_HEX_LEN + 1],
                     struct gd_err *err);

#ifdef __cplusplus
}
#endif
#endif
