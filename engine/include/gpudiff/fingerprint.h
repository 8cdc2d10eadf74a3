/*
 * fingerprint.h: what a run keeps of a layer without keeping its tensor (docs/COMPARISON.md,
 * "Fingerprints"): a BLAKE3 hash of the data bytes, min, max, the sum and sum of squares of
 * the finite values (so mean and L2 norm), NaN and Inf counts, a log2 histogram of |x|, and
 * GD_FINGERPRINT_SAMPLES elements at indices that depend on the shape only, so every device
 * samples the same elements. Every number is defined down to the order of its additions
 * (engine/core/fp_rules.h), so a CPU and a GPU give the same bits for the same tensor.
 *
 * struct gd_fingerprint is caller-owned plain data (about 16 KiB).
 */
#ifndef GPUDIFF_FINGERPRINT_H
#define GPUDIFF_FINGERPRINT_H

#include <stdint.h>

#include <jansson.h>

#include "gpudiff/error.h"
#include "gpudiff/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

#define GD_FINGERPRINT_SAMPLES 2048
#define GD_FINGERPRINT_HIST_BINS 67   /* 0, below 2^-48, 2^-48 .. 2^15 by powers of 2, 2^16+ */
#define GD_FINGERPRINT_HIST_EXP_MIN (-48)
#define GD_FINGERPRINT_HASH_HEX_LEN 64

struct gd_fingerprint {
    enum gd_dtype dtype;
    int ndim;
    int64_t shape[GD_MAX_DIMS];
    int64_t count;                  /* elements */
    unsigned char hash[32];         /* BLAKE3 of the data bytes (C order, little-endian) */
    int has_stats;                  /* float dtypes: min .. hist below are set */
    double min, max;                /* of the finite values; NaN when none is finite */
    double sum, sumsq;              /* of the finite values, in the fixed tree order */
    int64_t nan_count, inf_count;
    int64_t hist[GD_FINGERPRINT_HIST_BINS];
    int64_t n_samples;              /* min(count, GD_FINGERPRINT_SAMPLES) */
    unsigned char samples[GD_FINGERPRINT_SAMPLES * 8]; /* the sampled elements, in dtype */
};

/* Fingerprints a host tensor. GD_EINVAL for a tensor without data. */
int gd_fingerprint_compute(const struct gd_tensor *t, struct gd_fingerprint *out,
                           struct gd_err *err);

/* The flat index of sample k of a tensor of this shape (0 <= k < n_samples). */
int64_t gd_fingerprint_sample_index(int ndim, const int64_t *shape, int64_t k);

/* Sample k as a double (integers converted, bool 0 or 1). */
double gd_fingerprint_sample(const struct gd_fingerprint *fp, int64_t k);

/* Mean and L2 norm of the finite values (NaN when none is finite). */
double gd_fingerprint_mean(const struct gd_fingerprint *fp);
double gd_fingerprint_l2(const struct gd_fingerprint *fp);

/* A bound on the rounding error of fp->sum (and, relative, of fp->sumsq): the tree of
 * float64 additions has a known depth. */
double gd_fingerprint_sum_error(const struct gd_fingerprint *fp);

/* 1 when both record the same dtype, shape and hash. */
int gd_fingerprint_same_hash(const struct gd_fingerprint *a, const struct gd_fingerprint *b);

void gd_fingerprint_hash_hex(const struct gd_fingerprint *fp,
                             char hex[GD_FINGERPRINT_HASH_HEX_LEN + 1]);

/* The run.json form: {"blake3", "count", "min", "max", "mean", "l2", "sum", "sumsq", "nan",
 * "inf", "hist", "samples": {"count", "data" (base64 of the elements)}}. A new reference. */
json_t *gd_fingerprint_to_json(const struct gd_fingerprint *fp);

/* Reads that form for a layer of this dtype and shape; GD_EFORMAT names what is wrong. */
int gd_fingerprint_from_json(json_t *j, enum gd_dtype dtype, int ndim, const int64_t *shape,
                             struct gd_fingerprint *out, struct gd_err *err);

/* ---- BLAKE3 over bytes that arrive in pieces (an upload) ---- */

struct gd_blake3 {
    uint32_t cv[8];                 /* the chunk in progress */
    uint64_t chunk;                 /* its index */
    unsigned char buf[64];
    int buf_len;
    int blocks_done;                /* in the chunk in progress */
    int n_stack;
    uint32_t stack[64][8];          /* chaining values of full subtrees, left to right */
};

void gd_blake3_init(struct gd_blake3 *h);
void gd_blake3_update(struct gd_blake3 *h, const void *data, size_t len);
void gd_blake3_final(const struct gd_blake3 *h, unsigned char out[32]);

#ifdef __cplusplus
}
#endif
#endif
