/*
 * metrics_internal.h: what the parts of gd_metrics_update() share: the block size, the
 * compensated sums, the per-element definitions (ULP distance, relative-error bins, numpy's
 * isclose) that the scalar path and the float32 rescans both use, and the float32 block
 * record the vector kernels fill. metrics.c holds the API, metrics_scalar.c the path for
 * every dtype, metrics_f32.c the float32 block driver, metrics_portable.c and
 * metrics_avx512.c the two vector kernels.
 */
#ifndef GPUDIFF_METRICS_INTERNAL_H
#define GPUDIFF_METRICS_INTERNAL_H

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "gpudiff/metrics.h"

/*
 * The isclose count must match numpy bit for bit and the sums must not depend on the
 * machine, so a*b+c is never fused into an FMA, whichever flags the file is built with
 * (configure passes -ffp-contract=off too; GCC ignores #pragma STDC FP_CONTRACT).
 */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("fp-contract=off")
#endif

/*
 * Elements per block of the float32 fast path: large enough to spread the per-block work
 * (reductions, window choice) thin, small enough that the block's data (32 KiB) and codes
 * (24 KiB) stay in the L1/L2 caches for the counting and the rare rescans. The AVX-512
 * byte counters take BLOCK / 64 = 64 increments per lane, well below 256.
 */
#define BLOCK 4096

#define REL_BIN_TOP (GD_METRICS_REL_BINS - 1)

#define HOT static inline __attribute__((always_inline))

/* ---- compensated sums ---- */

/* Neumaier's variant of Kahan summation: exact error terms, any order of magnitudes. */
static inline void
ksum_add(struct gd_metrics_sum *s, double x)
{
    double t = s->sum + x;
    if (fabs(s->sum) >= fabs(x))
        s->comp += (s->sum - t) + x;
    else
        s->comp += (x - t) + s->sum;
    s->sum = t;
}


static inline double
ksum_value(const struct gd_metrics_sum *s)
{
    return s->sum + s->comp;
}

/* Per-block plain float64 partial sums; a block's total joins the compensated sum. */
struct block_sums {
    double abs;
    double sq_err;
    double sq_a;
    double sq_b;
};

static inline void
block_sums_flush(struct gd_metrics *m, struct block_sums *bs)
{
    ksum_add(&m->sum_abs, bs->abs);
    ksum_add(&m->sum_sq_err, bs->sq_err);
    ksum_add(&m->sum_sq_a, bs->sq_a);
    ksum_add(&m->sum_sq_b, bs->sq_b);
    memset(bs, 0, sizeof *bs);
}

/* ---- per-element definitions shared by the scalar path and the fast path's rescans ---- */

/* Bit length: 0 for 0, k for a value in [2^(k-1), 2^k); the ULP histogram bin. */
static inline int
bit_length(uint64_t x)
{
    return x ? 64 - __builtin_clzll(x) : 0;
}

/*
 * Distance between two sign-magnitude bit patterns of `bits`-bit floats: both are mapped to
 * signed integers (negative values to minus their magnitude, so -0 and +0 both map to 0)
 * and subtracted. Across zero this is the sum of both sides' distances to zero.
 */
static inline uint64_t
ulp_distance(uint64_t xa, uint64_t xb, int bits)
{
    uint64_t sign = (uint64_t)1 << (bits - 1);
    uint64_t mag_a = xa & (sign - 1), mag_b = xb & (sign - 1);
    int neg_a = (xa & sign) != 0, neg_b = (xb & sign) != 0;
    if (neg_a == neg_b)
        return mag_a > mag_b ? mag_a - mag_b : mag_b - mag_a;
    return mag_a + mag_b; /* < 2^64 for every format: magnitudes are below 2^(bits-1) */
}

/* Relative-error bin of rel = m * 2^e, m in [1, 2), from e; rel > 0. */
static inline int
rel_bin_of_exp(int e)
{
    if (e < GD_METRICS_REL_EXP_MIN)
        e = GD_METRICS_REL_EXP_MIN;
    if (e > GD_METRICS_REL_EXP_MAX)
        e = GD_METRICS_REL_EXP_MAX;
    return 1 + e - GD_METRICS_REL_EXP_MIN;
}

static inline int
rel_bin_f64(double rel)
{
    if (rel == 0.0)
        return 0;
    if (isinf(rel))
        return REL_BIN_TOP;
    uint64_t bits;
    memcpy(&bits, &rel, sizeof bits);
    int biased = (int)(bits >> 52);
    if (biased == 0) { /* subnormal: out of reach of any nonzero rel of two doubles */
        int e;
        frexp(rel, &e); /* rel = f * 2^e with f in [0.5, 1) */
        return rel_bin_of_exp(e - 1);
    }
    return rel_bin_of_exp(biased - 1023);
}

/* The tolerances as numpy rounds them for each dtype. */
struct tol {
    double atol, rtol;    /* float64 */
    float atol_f, rtol_f; /* float32: (float)atol; float16 and bfloat16: rounded to those */
};

/* Rounds a float32 result to the dtype's precision (identity for float32). */
static inline float
round_to(enum gd_dtype dtype, float x)
{
    if (dtype == GD_F16)
        return gd_f16_to_f32(gd_f32_to_f16(x));
    if (dtype == GD_BF16)
        return gd_bf16_to_f32(gd_f32_to_bf16(x));
    return x;
}

/*
 * numpy.isclose for two finite values, in the dtype's arithmetic: float32 ops for float32;
 * for float16 and bfloat16 each op in float32 rounded to the format, which is how numpy
 * computes float16 (float32 has more than 2p+2 bits, so each result is correctly rounded).
 */
static inline int
close_f32(enum gd_dtype dtype, float fa, float fb, const struct tol *t)
{
    float diff = round_to(dtype, fa - fb);
    float bound = round_to(dtype, t->atol_f + round_to(dtype, t->rtol_f * fabsf(fb)));
    return fabsf(diff) <= bound;
}

static inline void
note_mismatch(struct gd_metrics *m, int64_t index)
{
    m->n_mismatch++;
    if (m->mismatch_first_index < 0 || index < m->mismatch_first_index)
        m->mismatch_first_index = index;
}

/* (value, index) maxima keep the larger value, and the smaller index on a tie. */
static inline int
beats(double value, int64_t index, double best, int64_t best_index)
{
    return best_index < 0 || value > best || (value == best && index < best_index);
}

static inline int
beats_u64(uint64_t value, int64_t index, uint64_t best, int64_t best_index)
{
    return best_index < 0 || value > best || (value == best && index < best_index);
}

/* The tolerances of m's dtype, rounded as numpy holds them (metrics_scalar.c). */
void gd__metrics_tol_make(enum gd_dtype dtype, double atol, double rtol, struct tol *t);

/* The scalar path: n pairs of m's dtype at flat index offset (metrics_scalar.c). */
void gd__metrics_scalar_range(struct gd_metrics *m, const void *a, const void *b, int64_t n,
                              int64_t offset, const struct tol *t);

/* ---- the float32 fast path ---- */

/*
 * Per block, a vector pass computes the float64 partial sums, the maxima and one byte code
 * per element for each histogram; counting the codes comes after. Two kernels do the pass
 * and the counting: AVX-512 intrinsics where the CPU has them, GNU C vector types compiled
 * for AVX2 and the baseline elsewhere (GCC 12 splits their 8-lane float-to-double
 * conversions and byte packing into many instructions, hence the intrinsics). Both produce
 * the same codes and add the float64 lanes in the same order, so every field, sums
 * included, comes out the same on every machine.
 *
 * ULP code: the histogram bin (0..32). rel code: the biased exponent of the float32 rel:
 * 0 for rel == 0, e + 127 for rel in [2^e, 2^(e+1)) (102..254: rel is never below 2^-25
 * here, and an infinite rel sends the block to the scalar path), and 255 where b == 0
 * (|a-b| / 0 is Inf or NaN, whose exponent bits are all ones).
 */
#define REL_CODE_ZERO 0
#define REL_CODE_REF_ZERO 255

/* An address `off` bytes past p, for prefetching (no out-of-bounds pointer is formed). */
#define AHEAD(p, off) ((const char *)((uintptr_t)(p) + (size_t)(off)))

/* What the vector pass learns about one block of pairs. */
struct f32_block {
    double sum_abs, sum_sq_err, sum_sq_a, sum_sq_b;
    double abs_max;
    uint32_t ulp_max;
    uint32_t rel_max_bits;  /* largest float32 rel of the block, as bits (b == 0 left out) */
    int64_t n_mismatch;
    int64_t n_bits_differ;
    int64_t n_ref_zero_diff; /* b == 0, a != 0 */
    uint8_t ulp_code[BLOCK] __attribute__((aligned(64)));
    uint8_t rel_code[BLOCK] __attribute__((aligned(64)));
    /* Per element, in order: the float32 rel as bits (anything where b == 0), so the rescan
     * for the largest float64 rel divides only where the float32 one comes close. */
    uint32_t rel_bits[BLOCK] __attribute__((aligned(64)));
};

/* Code counts of the fast blocks of one update, added to the histograms at its end. */
struct f32_counts {
    int64_t ulp[256];
    int64_t rel[256];
};

/*
 * metrics_f32.c: the end of a vector pass (lanes added in a fixed order; 0 when the block
 * can be folded, -1 when it goes to the scalar path), the counting window, and the fold of
 * a block into m (with rescans for the indexes of new maxima).
 */
int gd__metrics_block_reduce(struct f32_block *out, const double *s_abs, const double *s_sq,
                             const double *s_aa, const double *s_bb, const double *m_abs,
                             const uint32_t *m_ulp, const uint32_t *m_rel, const int32_t *n_mis,
                             const int32_t *n_diff, const int32_t *n_rzd);
void gd__metrics_window_pick(int lo, int hi, int reg_lo, int reg_hi, int *win_lo, int *nwin);
void gd__metrics_block_fold(struct gd_metrics *m, const char *a, const char *b, int64_t offset,
                            const struct tol *t, const struct f32_block *blk, int64_t ref_zero);

/*
 * Whole blocks of float32 pairs: the vector pass, the codes counted, the block folded in;
 * a block with a NaN or an Inf goes through the scalar path instead.
 */
#define F32_BLOCKS_BODY(block_pass, count)                                                    \
    for (int64_t k = 0; k < n_blocks; k++) {                                                  \
        const char *pa = a + (size_t)k * BLOCK * 4, *pb = b + (size_t)k * BLOCK * 4;          \
        int64_t off = offset + k * BLOCK;                                                     \
        if (block_pass(pa, pb, t->atol_f, t->rtol_f, blk) != 0) {                             \
            gd__metrics_scalar_range(m, pa, pb, BLOCK, off, t);                               \
            continue;                                                                         \
        }                                                                                     \
        int64_t ref_zero = counts->rel[REL_CODE_REF_ZERO];                                    \
        count(blk->ulp_code, 0, counts->ulp);                                                 \
        count(blk->rel_code, 1, counts->rel);                                                 \
        ref_zero = counts->rel[REL_CODE_REF_ZERO] - ref_zero;                                 \
        gd__metrics_block_fold(m, pa, pb, off, t, blk, ref_zero);                             \
    }

/* Whole blocks of float32 pairs through one kernel (metrics_portable.c, metrics_avx512.c). */
void gd__metrics_blocks_portable(struct gd_metrics *m, const char *a, const char *b,
                                 int64_t n_blocks, int64_t offset, const struct tol *t,
                                 struct f32_block *blk, struct f32_counts *counts);
#if defined(__x86_64__) && defined(__GNUC__)
#define HAVE_AVX512_KERNEL 1
#define AVX512_TARGET __attribute__((target("avx512f,avx512bw,avx512dq,avx512cd,avx512vl,fma")))
void gd__metrics_blocks_avx512(struct gd_metrics *m, const char *a, const char *b,
                               int64_t n_blocks, int64_t offset, const struct tol *t,
                               struct f32_block *blk, struct f32_counts *counts);
#endif

#endif
