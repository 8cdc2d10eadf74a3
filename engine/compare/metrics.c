/* metrics.c: one pass over two tensors: error statistics, ULP and relative-error histograms,
 * tolerance counts, cosine and SQNR (definitions in docs/COMPARISON.md). */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "gpudiff/compare.h"

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

/* ---- compensated sums ---- */

/* Neumaier's variant of Kahan summation: exact error terms, any order of magnitudes. */
static void
ksum_add(struct gd_metrics_sum *s, double x)
{
    double t = s->sum + x;
    if (fabs(s->sum) >= fabs(x))
        s->comp += (s->sum - t) + x;
    else
        s->comp += (x - t) + s->sum;
    s->sum = t;
}

static double
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

static void
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
static int
bit_length(uint64_t x)
{
    return x ? 64 - __builtin_clzll(x) : 0;
}

/*
 * Distance between two sign-magnitude bit patterns of `bits`-bit floats: both are mapped to
 * signed integers (negative values to minus their magnitude, so -0 and +0 both map to 0)
 * and subtracted. Across zero this is the sum of both sides' distances to zero.
 */
static uint64_t
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
static int
rel_bin_of_exp(int e)
{
    if (e < GD_METRICS_REL_EXP_MIN)
        e = GD_METRICS_REL_EXP_MIN;
    if (e > GD_METRICS_REL_EXP_MAX)
        e = GD_METRICS_REL_EXP_MAX;
    return 1 + e - GD_METRICS_REL_EXP_MIN;
}

static int
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

/*
 * Relative-error bin for float32, float16 and bfloat16 pairs: rel rounded to float32, as the
 * vectorized path computes it; where float32 overflows (|a-b| or the quotient beyond
 * FLT_MAX) the float64 quotient decides. Not called with b == 0.
 */
static int
rel_bin_f32(float fa, float fb)
{
    float rel = fabsf(fa - fb) / fabsf(fb);
    if (isinf(rel))
        return rel_bin_f64(fabs((double)fa - (double)fb) / fabs((double)fb));
    if (rel == 0.0f)
        return 0;
    uint32_t bits;
    memcpy(&bits, &rel, sizeof bits);
    int biased = (int)(bits >> 23);
    if (biased == 0) { /* subnormal: not reached, a nonzero rel is >= 2^-25 */
        int e;
        frexpf(rel, &e);
        return rel_bin_of_exp(e - 1);
    }
    return rel_bin_of_exp(biased - 127);
}

/* The tolerances as numpy rounds them for each dtype. */
struct tol {
    double atol, rtol;    /* float64 */
    float atol_f, rtol_f; /* float32: (float)atol; float16 and bfloat16: rounded to those */
};

/* Rounds a float32 result to the dtype's precision (identity for float32). */
static float
round_to(enum gd_dtype dtype, float x)
{
    if (dtype == GD_F16)
        return gd_f16_to_f32(gd_f32_to_f16(x));
    if (dtype == GD_BF16)
        return gd_bf16_to_f32(gd_f32_to_bf16(x));
    return x;
}

/* A tolerance as numpy holds it in the dtype: rounded once from the float64 given. */
static float
tol_in(enum gd_dtype dtype, double v)
{
    if (dtype == GD_F16)
        return gd_f16_to_f32(gd_f64_to_f16(v));
    if (dtype == GD_BF16)
        return gd_bf16_to_f32(gd_f64_to_bf16(v));
    return (float)v;
}

static void
tol_make(enum gd_dtype dtype, double atol, double rtol, struct tol *t)
{
    t->atol = atol;
    t->rtol = rtol;
    t->atol_f = tol_in(dtype, atol);
    t->rtol_f = tol_in(dtype, rtol);
}

/*
 * numpy.isclose for two finite values, in the dtype's arithmetic: float32 ops for float32;
 * for float16 and bfloat16 each op in float32 rounded to the format, which is how numpy
 * computes float16 (float32 has more than 2p+2 bits, so each result is correctly rounded).
 */
static int
close_f32(enum gd_dtype dtype, float fa, float fb, const struct tol *t)
{
    float diff = round_to(dtype, fa - fb);
    float bound = round_to(dtype, t->atol_f + round_to(dtype, t->rtol_f * fabsf(fb)));
    return fabsf(diff) <= bound;
}

/*
 * close_f32() for float16 and bfloat16, decided in float32 when |a-b| is clear of the bound
 * by more than the roundings to the format can move them (each moves a value by at most u
 * relative or half the smallest subnormal; four of each are allowed for), emulated one
 * operation at a time otherwise.
 */
static int
close_16(enum gd_dtype dtype, float fa, float fb, const struct tol *t)
{
    float u = dtype == GD_F16 ? 0x1p-11f : 0x1p-8f;
    float s = dtype == GD_F16 ? 0x1p-25f : 0x1p-134f;
    float limit = dtype == GD_F16 ? 60000.0f : 3.0e38f; /* clear of overflow to Inf */
    float diff = fabsf(fa - fb);
    float bound = t->atol_f + t->rtol_f * fabsf(fb);
    if (diff < limit && bound < limit) {
        if (diff * (1.0f + 4.0f * u) + 4.0f * s < bound * (1.0f - 4.0f * u))
            return 1;
        if (diff * (1.0f - 4.0f * u) - 4.0f * s > bound * (1.0f + 4.0f * u))
            return 0;
    }
    return close_f32(dtype, fa, fb, t);
}

/* float16 to float32 as gd_f16_to_f32(), inline: the scalar path converts two per element. */
static inline float
f16_value(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16, exp = (h >> 10) & 0x1fu, mant = h & 0x3ffu;
    if (exp == 0) {
        float f = (float)mant * 0x1p-24f; /* zero or subnormal, exact */
        return sign ? -f : f;
    }
    uint32_t bits = sign | (exp == 31 ? 0x7f800000u : (exp + 112u) << 23) | (mant << 13);
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}

static void
note_mismatch(struct gd_metrics *m, int64_t index)
{
    m->n_mismatch++;
    if (m->mismatch_first_index < 0 || index < m->mismatch_first_index)
        m->mismatch_first_index = index;
}

/* (value, index) maxima keep the larger value, and the smaller index on a tie. */
static int
beats(double value, int64_t index, double best, int64_t best_index)
{
    return best_index < 0 || value > best || (value == best && index < best_index);
}

static int
beats_u64(uint64_t value, int64_t index, uint64_t best, int64_t best_index)
{
    return best_index < 0 || value > best || (value == best && index < best_index);
}

#define HOT static inline __attribute__((always_inline))

static size_t
elem_size(enum gd_dtype dtype)
{
    switch (dtype) {
    case GD_F64:
    case GD_I64:
    case GD_U64:
        return 8;
    case GD_F32:
    case GD_I32:
    case GD_U32:
        return 4;
    case GD_F16:
    case GD_BF16:
    case GD_I16:
    case GD_U16:
        return 2;
    default:
        return 1;
    }
}

/* One pair as the scalar path sees it. */
struct pair {
    double a, b;        /* values as float64 */
    int a_nan, b_nan, a_inf, b_inf;
    uint64_t ulp;       /* finite pairs */
    int close;          /* finite pairs */
    int rel_bin;        /* finite pairs with b != 0 */
};

/* A floating-point pair from its bit patterns; the field masks are those of the format. */
HOT void
load_float_pair(enum gd_dtype dtype, uint64_t xa, uint64_t xb, const struct tol *t,
                struct pair *p)
{
    int bits = (int)elem_size(dtype) * 8;
    uint64_t exp_mask = dtype == GD_F64 ? 0x7ff0000000000000ull
                        : dtype == GD_F32 ? 0x7f800000u
                        : dtype == GD_F16 ? 0x7c00u
                                          : 0x7f80u;
    uint64_t mag_mask = ((uint64_t)1 << (bits - 1)) - 1;
    uint64_t ma = xa & mag_mask, mb = xb & mag_mask;
    p->ulp = 0;
    p->close = 0;
    p->rel_bin = 0;
    p->a_nan = ma > exp_mask;
    p->b_nan = mb > exp_mask;
    p->a_inf = ma == exp_mask;
    p->b_inf = mb == exp_mask;
    float fa = 0, fb = 0;
    if (dtype == GD_F64) {
        memcpy(&p->a, &xa, 8);
        memcpy(&p->b, &xb, 8);
    } else {
        if (dtype == GD_F32) {
            uint32_t ua = (uint32_t)xa, ub = (uint32_t)xb;
            memcpy(&fa, &ua, 4);
            memcpy(&fb, &ub, 4);
        } else if (dtype == GD_F16) {
            fa = f16_value((uint16_t)xa);
            fb = f16_value((uint16_t)xb);
        } else {
            uint32_t ua = (uint32_t)xa << 16, ub = (uint32_t)xb << 16;
            memcpy(&fa, &ua, 4);
            memcpy(&fb, &ub, 4);
        }
        p->a = fa;
        p->b = fb;
    }
    if (ma >= exp_mask || mb >= exp_mask)
        return;
    p->ulp = ulp_distance(xa, xb, bits);
    if (dtype == GD_F64) {
        p->close = fabs(p->a - p->b) <= t->atol + t->rtol * fabs(p->b);
        p->rel_bin = p->b != 0.0 ? rel_bin_f64(fabs(p->a - p->b) / fabs(p->b)) : 0;
    } else {
        p->close = dtype == GD_F32 ? fabsf(fa - fb) <= t->atol_f + t->rtol_f * fabsf(fb)
                                   : close_16(dtype, fa, fb, t);
        p->rel_bin = fb != 0.0f ? rel_bin_f32(fa, fb) : 0;
    }
}

/* An integer or bool pair: exact distance, exact equality, float64 values. */
HOT void
load_int_pair(enum gd_dtype dtype, uint64_t xa, uint64_t xb, struct pair *p)
{
    p->a_nan = p->b_nan = p->a_inf = p->b_inf = 0;
    if (dtype == GD_BOOL) {
        xa = xa != 0;
        xb = xb != 0;
    }
    if (dtype == GD_I8 || dtype == GD_I16 || dtype == GD_I32 || dtype == GD_I64) {
        int bits = (int)elem_size(dtype) * 8;
        uint64_t sign = (uint64_t)1 << (bits - 1);
        int64_t va = (int64_t)((xa ^ sign) - sign), vb = (int64_t)((xb ^ sign) - sign);
        if (bits == 64) {
            va = (int64_t)xa;
            vb = (int64_t)xb;
        }
        p->a = (double)va;
        p->b = (double)vb;
        /* The difference of two int64 fits in uint64 when taken as max - min modulo 2^64. */
        p->ulp = va >= vb ? (uint64_t)va - (uint64_t)vb : (uint64_t)vb - (uint64_t)va;
    } else {
        p->a = (double)xa;
        p->b = (double)xb;
        p->ulp = xa >= xb ? xa - xb : xb - xa;
    }
    p->close = p->ulp == 0;
    p->rel_bin = p->b != 0.0 ? rel_bin_f64(fabs(p->a - p->b) / fabs(p->b)) : 0;
}

/*
 * The reference path, one element at a time, for every dtype and for NaN and Inf. Inlined
 * once per dtype (the switch on a constant folds away).
 */
HOT void
scalar_typed(struct gd_metrics *m, const char *a, const char *b, int64_t n, int64_t offset,
             const struct tol *t, enum gd_dtype dtype)
{
    size_t size = elem_size(dtype);
    int is_float = dtype == GD_F64 || dtype == GD_F32 || dtype == GD_F16 || dtype == GD_BF16;
    struct block_sums bs = {0};
    for (int64_t i = 0; i < n; i++) {
        uint64_t xa = 0, xb = 0;
        const char *pa = a + (size_t)i * size, *pb = b + (size_t)i * size;
        if (size == 8) {
            memcpy(&xa, pa, 8);
            memcpy(&xb, pb, 8);
        } else if (size == 4) {
            uint32_t ua, ub;
            memcpy(&ua, pa, 4);
            memcpy(&ub, pb, 4);
            xa = ua;
            xb = ub;
        } else if (size == 2) {
            uint16_t ua, ub;
            memcpy(&ua, pa, 2);
            memcpy(&ub, pb, 2);
            xa = ua;
            xb = ub;
        } else {
            xa = (uint8_t)*pa;
            xb = (uint8_t)*pb;
        }
        struct pair p;
        int64_t index = offset + i;
        if (is_float)
            load_float_pair(dtype, xa, xb, t, &p);
        else
            load_int_pair(dtype, xa, xb, &p);
        m->n_bits_differ += xa != xb;
        if (p.a_nan | p.b_nan | p.a_inf | p.b_inf) {
            m->a_nan += p.a_nan;
            m->b_nan += p.b_nan;
            m->a_inf += p.a_inf;
            m->b_inf += p.b_inf;
            if (p.a_nan || p.b_nan) {
                if (p.a_nan && p.b_nan)
                    m->nan_both++;
                else
                    m->nan_disagree++;
                note_mismatch(m, index);
            } else if (p.a == p.b) {
                m->inf_both++;
            } else {
                m->inf_disagree++;
                note_mismatch(m, index);
            }
        } else {
            m->n_finite++;
            double err = p.a - p.b;
            double abs_err = fabs(err);
            bs.abs += abs_err;
            bs.sq_err += err * err;
            bs.sq_a += p.a * p.a;
            bs.sq_b += p.b * p.b;
            if (beats(abs_err, index, m->abs_max, m->abs_max_index)) {
                m->abs_max = abs_err;
                m->abs_max_index = index;
            }
            if (beats_u64(p.ulp, index, m->ulp_max, m->ulp_max_index)) {
                m->ulp_max = p.ulp;
                m->ulp_max_index = index;
            }
            m->ulp_hist[bit_length(p.ulp)]++;
            if (!p.close)
                note_mismatch(m, index);
            if (p.b == 0.0) {
                m->n_ref_zero++;
                m->n_ref_zero_diff += p.a != 0.0;
            } else {
                m->n_rel++;
                m->rel_hist[p.rel_bin]++;
                double rel = abs_err / fabs(p.b);
                if (beats(rel, index, m->rel_max, m->rel_max_index)) {
                    m->rel_max = rel;
                    m->rel_max_index = index;
                }
            }
        }
        if ((i + 1) % BLOCK == 0)
            block_sums_flush(m, &bs);
    }
    block_sums_flush(m, &bs);
    m->count += n;
}

static void
scalar_range(struct gd_metrics *m, const void *a, const void *b, int64_t n, int64_t offset,
             const struct tol *t)
{
    switch (m->dtype) {
#define SCALAR_CASE(e, name, size, kind, is_float)                                           \
    case GD_##e:                                                                              \
        scalar_typed(m, a, b, n, offset, t, GD_##e);                                          \
        break;
        GD_DTYPE_MAP(SCALAR_CASE)
#undef SCALAR_CASE
    case GD_DTYPE_COUNT:
        break;
    }
}

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

/*
 * The end of a vector pass: lanes added in a fixed order. Returns 0 when every pair was
 * finite and no float32 relative error overflowed; otherwise the block goes to the scalar
 * path. Non-finite inputs are caught for free: their squares make the float64 sums NaN or
 * Inf (finite float32 squares cannot overflow a double).
 */
static int
f32_block_reduce(struct f32_block *out, const double *s_abs, const double *s_sq,
                 const double *s_aa, const double *s_bb, const double *m_abs,
                 const uint32_t *m_ulp, const uint32_t *m_rel, const int32_t *n_mis,
                 const int32_t *n_diff, const int32_t *n_rzd)
{
    double sa = 0, sb = 0;
    out->sum_abs = out->sum_sq_err = 0;
    out->abs_max = 0;
    for (int j = 0; j < 8; j++) {
        out->sum_abs += s_abs[j];
        out->sum_sq_err += s_sq[j];
        sa += s_aa[j];
        sb += s_bb[j];
        if (m_abs[j] > out->abs_max)
            out->abs_max = m_abs[j];
    }
    out->sum_sq_a = sa;
    out->sum_sq_b = sb;
    out->ulp_max = 0;
    out->rel_max_bits = 0;
    out->n_mismatch = 0;
    out->n_bits_differ = 0;
    out->n_ref_zero_diff = 0;
    for (int j = 0; j < 16; j++) {
        if (m_ulp[j] > out->ulp_max)
            out->ulp_max = m_ulp[j];
        if (m_rel[j] > out->rel_max_bits)
            out->rel_max_bits = m_rel[j];
        out->n_mismatch += n_mis[j];
        out->n_bits_differ += n_diff[j];
        out->n_ref_zero_diff += n_rzd[j];
    }
    if (!isfinite(sa + sb) || out->rel_max_bits >= 0x7f800000u)
        return -1;
    return 0;
}

/*
 * Window for counting a block's codes: `nwin` (8 or 16) consecutive codes from the
 * smallest regular code (those in [reg_lo, reg_hi]; the others are special), so that with a
 * narrow spread every code gets its own counters. The window ends at reg_hi at the latest,
 * so it never takes in a special code.
 */
static void
count_window_pick(int lo, int hi, int reg_lo, int reg_hi, int *win_lo, int *nwin)
{
    int w = hi - lo < 8 ? 8 : 16;
    if (lo > hi)
        lo = reg_lo; /* no regular code: only the specials are counted */
    if (lo > reg_hi + 1 - w)
        lo = reg_hi + 1 - w;
    *win_lo = lo;
    *nwin = w;
}

/* ---- portable kernel: GNU C vector types ---- */

/*
 * 32-byte vectors, one AVX2 register or two SSE2 ones, and only the operations both have
 * (signed comparisons; unsigned ones are biased by the sign bit), so GCC neither splits nor
 * scalarizes them. Lane j of the float64 sums takes elements j, j + 8, j + 16, ... as in
 * the AVX-512 kernel.
 */
typedef float v8f __attribute__((vector_size(32)));
typedef float v4f __attribute__((vector_size(16)));
typedef int32_t v8i __attribute__((vector_size(32)));
typedef uint32_t v8u __attribute__((vector_size(32)));
typedef double v4d __attribute__((vector_size(32)));
typedef int64_t v4l __attribute__((vector_size(32)));

/* Lane-wise select of a where the mask is set, else b (masks are 0 or -1). */
#define PV_SEL(T, mask, a, b) ((T)(((v8i)(a) & (mask)) | ((v8i)(b) & ~(mask))))

HOT int
pv_block_pass(const char *a, const char *b, float atol, float rtol, struct f32_block *out)
{
    v4d s_abs[2] = {{0}}, s_sq[2] = {{0}}, s_aa[2] = {{0}}, s_bb[2] = {{0}}, m_abs[2] = {{0}};
    v8i n_mis = {0}, n_diff = {0}, n_rzd = {0};
    v8i m_ulp_biased = {INT32_MIN, INT32_MIN, INT32_MIN, INT32_MIN, INT32_MIN, INT32_MIN,
                        INT32_MIN, INT32_MIN};
    v8i m_rel = {0};
    for (int v = 0; v < BLOCK; v += 32) {
        v8u ucodes = {0}, rcodes = {0};
        /* The next block, two 64-byte lines per stream per 32 elements (see the AVX-512
         * pass). Prefetches never fault, also past the end of the data. */
        __builtin_prefetch(AHEAD(a, 4 * (v + BLOCK)), 0, 2);
        __builtin_prefetch(AHEAD(a, 4 * (v + BLOCK) + 64), 0, 2);
        __builtin_prefetch(AHEAD(b, 4 * (v + BLOCK)), 0, 2);
        __builtin_prefetch(AHEAD(b, 4 * (v + BLOCK) + 64), 0, 2);
        for (int q = 0; q < 4; q++) {
            const char *pa = a + 4 * (v + 8 * q), *pb = b + 4 * (v + 8 * q);
            v8f fa, fb;
            memcpy(&fa, pa, sizeof fa);
            memcpy(&fb, pb, sizeof fb);
            v8u ua = (v8u)fa, ub = (v8u)fb;
            n_diff -= (v8i)(ua != ub);

            /* ULP distance: |mag_a - mag_b| with equal signs, mag_a + mag_b across zero. */
            v8i mag_a = (v8i)(ua & 0x7fffffffu), mag_b = (v8i)(ub & 0x7fffffffu);
            v8i opposite = (v8i)(ua ^ ub) >> 31;
            v8i a_big = mag_a > mag_b;
            v8i hi = PV_SEL(v8i, a_big, mag_a, mag_b);
            v8i lo = (mag_a ^ mag_b) ^ hi;
            v8u ulp = PV_SEL(v8u, opposite, (v8u)mag_a + (v8u)mag_b, hi - lo);
            v8i ulp_biased = (v8i)(ulp ^ 0x80000000u);
            m_ulp_biased = PV_SEL(v8i, ulp_biased > m_ulp_biased, ulp_biased, m_ulp_biased);
            /* Bit length: keep the top bit, clear the one below it so the int-to-float
             * conversion cannot round up, and read the exponent; 2^31 and up is 32. */
            v8u top = ulp & ~(ulp >> 1);
            v8f topf = __builtin_convertvector((v8i)top, v8f);
            v8i ucode = (v8i)(((v8u)topf >> 23) & 0xffu) - 126;
            ucode &= ~(ucode >> 31);
            v8i huge = (v8i)ulp >> 31;
            ucode = (ucode & ~huge) | (huge & 32);

            /* Tolerance, exactly as numpy evaluates float32. */
            v8f diff = fa - fb;
            v8i abs_diff = (v8i)diff & 0x7fffffff;
            n_mis -= (v8i)((v8f)abs_diff > atol + rtol * (v8f)mag_b);

            /* Relative error in float32; its exponent makes the code. */
            v8f rel = (v8f)abs_diff / (v8f)mag_b;
            v8i b_zero = mag_b == 0;
            v8i rel_bits = (v8i)rel & ~b_zero;
            m_rel = PV_SEL(v8i, rel_bits > m_rel, rel_bits, m_rel);
            memcpy(out->rel_bits + v + 8 * q, &rel_bits, sizeof rel_bits);
            n_rzd -= b_zero & (mag_a != 0);

            ucodes |= (v8u)ucode << (8 * q);
            rcodes |= (((v8u)rel >> 23) & 0xffu) << (8 * q);

            /* float64: squares exact, differences exact unless the exponents are far apart. */
            for (int h = 0; h < 2; h++) {
                v4f ha, hb;
                memcpy(&ha, pa + 16 * h, sizeof ha);
                memcpy(&hb, pb + 16 * h, sizeof hb);
                v4d da = __builtin_convertvector(ha, v4d), db = __builtin_convertvector(hb, v4d);
                v4d err = da - db;
                v4d abs_err = (v4d)((v4l)err & 0x7fffffffffffffffll);
                s_abs[h] += abs_err;
                s_sq[h] += err * err;
                s_aa[h] += da * da;
                s_bb[h] += db * db;
                v4l g = abs_err > m_abs[h];
                m_abs[h] = (v4d)(((v4l)abs_err & g) | ((v4l)m_abs[h] & ~g));
            }
        }
        /* The codes of 32 elements in one store, permuted (counting needs no order). */
        memcpy(out->ulp_code + v, &ucodes, sizeof ucodes);
        memcpy(out->rel_code + v, &rcodes, sizeof rcodes);
    }
    double l_abs[8], l_sq[8], l_aa[8], l_bb[8], l_max[8];
    uint32_t l_ulp[16], l_rel[16];
    int32_t l_mis[16], l_diff[16], l_rzd[16];
    for (int h = 0; h < 2; h++) {
        memcpy(l_abs + 4 * h, &s_abs[h], sizeof s_abs[h]);
        memcpy(l_sq + 4 * h, &s_sq[h], sizeof s_sq[h]);
        memcpy(l_aa + 4 * h, &s_aa[h], sizeof s_aa[h]);
        memcpy(l_bb + 4 * h, &s_bb[h], sizeof s_bb[h]);
        memcpy(l_max + 4 * h, &m_abs[h], sizeof m_abs[h]);
    }
    memset(l_ulp, 0, sizeof l_ulp);
    memset(l_rel, 0, sizeof l_rel);
    memset(l_mis, 0, sizeof l_mis);
    memset(l_diff, 0, sizeof l_diff);
    memset(l_rzd, 0, sizeof l_rzd);
    for (int j = 0; j < 8; j++) {
        l_ulp[j] = (uint32_t)m_ulp_biased[j] ^ 0x80000000u;
        l_rel[j] = (uint32_t)m_rel[j];
        l_mis[j] = n_mis[j];
        l_diff[j] = n_diff[j];
        l_rzd[j] = n_rzd[j];
    }
    return f32_block_reduce(out, l_abs, l_sq, l_aa, l_bb, l_max, l_ulp, l_rel, l_mis, l_diff,
                            l_rzd);
}

/*
 * Counting uses 16-byte vectors: GCC 12 scalarizes 32-byte byte comparisons on SSE2.
 * Unsigned byte comparisons go through the signed ones with the sign bits flipped, and
 * every operand is a vector (scalar operands get scalarized too).
 */
typedef uint8_t v16b __attribute__((vector_size(16)));
typedef int8_t v16sb __attribute__((vector_size(16)));
typedef uint16_t v8s __attribute__((vector_size(16)));
typedef uint32_t v4u __attribute__((vector_size(16)));
typedef uint64_t v2q __attribute__((vector_size(16)));

#define PV_BYTES(c) ((v16b){0} + (uint8_t)(c))
#define PV_ULE(x, y) ((v16b)((v16sb)((x) ^ PV_BYTES(0x80)) <= (v16sb)((y) ^ PV_BYTES(0x80))))

/* Sum of 16 byte counters. */
HOT uint64_t
pv_sum_bytes(const v16b *v)
{
    v8s s16 = ((v8s)*v & 0xff) + ((v8s)*v >> 8);
    v4u s32 = ((v4u)s16 & 0xffff) + ((v4u)s16 >> 16);
    v2q s64 = ((v2q)s32 & 0xffffffffu) + ((v2q)s32 >> 32);
    return s64[0] + s64[1];
}

/*
 * Counting a block's codes into counts[code]. A scatter would cost a memory round trip per
 * element; instead each code of the window gets 16 byte counters (a compare and a subtract
 * per 16 elements), four codes per pass over the codes so the counters stay in registers.
 * One more pass counts the special codes 194, 254 and 255 and, one by one, the regular
 * codes outside the window (rare when a block's codes span few bins).
 */
/* Byte counters of 16 lanes take one increment per 16 codes: flushed every 2048 codes,
 * they stay below 256. */
#define PV_COUNT_RUN 2048

/* Counts codes base .. base+7, with byte counters flushed every PV_COUNT_RUN codes. */
HOT void
pv_count8(const uint8_t *codes, int base, int64_t *counts)
{
    const v16b v_base = PV_BYTES(base);
    for (int run = 0; run < BLOCK; run += PV_COUNT_RUN) {
        v16b c[8] = {{0}};
        for (int v = run; v < run + PV_COUNT_RUN; v += 16) {
            v16b x;
            memcpy(&x, codes + v, sizeof x);
            v16b t = x - v_base;
#pragma GCC unroll 8
            for (int j = 0; j < 8; j++)
                c[j] -= (v16b)(t == PV_BYTES(j));
        }
        for (int j = 0; j < 8; j++)
            counts[base + j] += (int64_t)pv_sum_bytes(&c[j]);
    }
}

/* The rel codes 0 and 255 (with specials), and regular codes outside the window. */
HOT void
pv_count_rest(const uint8_t *codes, int lo, int nwin, int specials, int64_t *counts)
{
    const v16b last = PV_BYTES(nwin - 1), v_lo = PV_BYTES(lo);
    const v16b c_zero = PV_BYTES(REL_CODE_ZERO), c_ref = PV_BYTES(REL_CODE_REF_ZERO);
    for (int run = 0; run < BLOCK; run += PV_COUNT_RUN) {
        v16b s_zero = {0}, s_ref = {0};
        for (int v = run; v < run + PV_COUNT_RUN; v += 16) {
            v16b x;
            memcpy(&x, codes + v, sizeof x);
            v16b outside = ~PV_ULE(x - v_lo, last);
            if (specials) {
                v16b is_zero = (v16b)(x == c_zero), is_ref = (v16b)(x == c_ref);
                s_zero -= is_zero;
                s_ref -= is_ref;
                outside &= ~(is_zero | is_ref);
            }
            v2q o = (v2q)outside;
            if ((o[0] | o[1]) != 0) {
                for (int k = 0; k < 16; k++) {
                    int c = codes[v + k];
                    int special = specials && (c == REL_CODE_ZERO || c == REL_CODE_REF_ZERO);
                    if (!special && (c < lo || c >= lo + nwin))
                        counts[c]++;
                }
            }
        }
        if (specials) {
            counts[REL_CODE_ZERO] += (int64_t)pv_sum_bytes(&s_zero);
            counts[REL_CODE_REF_ZERO] += (int64_t)pv_sum_bytes(&s_ref);
        }
    }
}

/*
 * Counts a block's codes into counts[code]. With specials (the rel codes) 0 and 255 are
 * special and 1..254 regular; without, every code is regular.
 */
HOT void
pv_count(const uint8_t *codes, int specials, int64_t *counts)
{
    int reg_lo = specials ? 1 : 0, reg_hi = specials ? 254 : 255;
    /* Smallest and largest regular code, in the sign-flipped (signed) domain. */
    const v16sb top = (v16sb){0} + (int8_t)127, bottom = (v16sb){0} + (int8_t)-128;
    const v16b reg_first = PV_BYTES(reg_lo), reg_span = PV_BYTES(reg_hi - reg_lo);
    v16sb mn = top, mx = bottom;
    for (int v = 0; v < BLOCK; v += 16) {
        v16b x;
        memcpy(&x, codes + v, sizeof x);
        v16sb regular = (v16sb)PV_ULE(x - reg_first, reg_span);
        v16sb xs = (v16sb)(x ^ PV_BYTES(0x80));
        v16sb x_lo = (xs & regular) | (top & ~regular), x_hi = (xs & regular) | (bottom & ~regular);
        v16sb lt = x_lo < mn, gt = x_hi > mx;
        mn = (x_lo & lt) | (mn & ~lt);
        mx = (x_hi & gt) | (mx & ~gt);
    }
    int lo = 255, hi = 0;
    for (int j = 0; j < 16; j++) {
        int l = (uint8_t)(mn[j] ^ 0x80), h = (uint8_t)(mx[j] ^ 0x80);
        lo = l < lo ? l : lo;
        hi = h > hi ? h : hi;
    }
    int win_lo, nwin;
    count_window_pick(lo, hi, reg_lo, reg_hi, &win_lo, &nwin);
    for (int base = win_lo; base < win_lo + nwin; base += 8)
        pv_count8(codes, base, counts);
    pv_count_rest(codes, win_lo, nwin, specials, counts);
}

/* ---- AVX-512 kernel ---- */

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define HAVE_AVX512_KERNEL 1
#define AVX512_TARGET __attribute__((target("avx512f,avx512bw,avx512dq,avx512cd,avx512vl,fma")))

AVX512_TARGET HOT int
avx512_block_pass(const char *a, const char *b, float atol, float rtol, struct f32_block *out)
{
    const __m512i abs32 = _mm512_set1_epi32(0x7fffffff);
    const __m512d abs64 = _mm512_castsi512_pd(_mm512_set1_epi64(0x7fffffffffffffffll));
    const __m512 v_atol = _mm512_set1_ps(atol), v_rtol = _mm512_set1_ps(rtol);
    const __m512i one = _mm512_set1_epi32(1), c32 = _mm512_set1_epi32(32);
    __m512d s_abs = _mm512_setzero_pd(), s_sq = s_abs, s_aa = s_abs, s_bb = s_abs, m_abs = s_abs;
    __m512i n_mis = _mm512_setzero_si512(), n_diff = n_mis, m_ulp = n_mis, m_rel = n_mis;
    __m512i n_rzd = n_mis;
    for (int v = 0; v < BLOCK; v += 16) {
        const char *pa = a + 4 * v, *pb = b + 4 * v;
        /* The next block into L2, so that it arrives while this one's codes are counted
         * (the hardware prefetcher stops with the loads). One line per stream per step. */
        _mm_prefetch(AHEAD(pa, 4 * BLOCK), _MM_HINT_T1);
        _mm_prefetch(AHEAD(pb, 4 * BLOCK), _MM_HINT_T1);
        __m512i ua = _mm512_loadu_si512(pa), ub = _mm512_loadu_si512(pb);
        __m512 fa = _mm512_castsi512_ps(ua), fb = _mm512_castsi512_ps(ub);
        n_diff = _mm512_mask_add_epi32(n_diff, _mm512_cmpneq_epi32_mask(ua, ub), n_diff, one);

        __m512i mag_a = _mm512_and_si512(ua, abs32), mag_b = _mm512_and_si512(ub, abs32);
        __mmask16 opposite = _mm512_movepi32_mask(_mm512_xor_si512(ua, ub));
        __m512i ulp = _mm512_sub_epi32(_mm512_max_epu32(mag_a, mag_b),
                                       _mm512_min_epu32(mag_a, mag_b));
        ulp = _mm512_mask_add_epi32(ulp, opposite, mag_a, mag_b);
        m_ulp = _mm512_max_epu32(m_ulp, ulp);
        __m512i ucode = _mm512_sub_epi32(c32, _mm512_lzcnt_epi32(ulp));

        __m512 abs_diff = _mm512_castsi512_ps(
            _mm512_and_si512(_mm512_castps_si512(_mm512_sub_ps(fa, fb)), abs32));
        __m512 abs_b = _mm512_castsi512_ps(mag_b);
        __m512 bound = _mm512_add_ps(v_atol, _mm512_mul_ps(v_rtol, abs_b));
        n_mis = _mm512_mask_add_epi32(n_mis, _mm512_cmp_ps_mask(abs_diff, bound, _CMP_GT_OQ),
                                      n_mis, one);

        __mmask16 b_zero = _mm512_testn_epi32_mask(mag_b, mag_b);
        __m512i rel_bits = _mm512_castps_si512(_mm512_div_ps(abs_diff, abs_b));
        m_rel = _mm512_mask_max_epu32(m_rel, (__mmask16)~b_zero, m_rel, rel_bits);
        _mm512_storeu_si512(out->rel_bits + v, rel_bits);
        n_rzd = _mm512_mask_add_epi32(n_rzd, _mm512_mask_test_epi32_mask(b_zero, mag_a, mag_a),
                                      n_rzd, one);
        __m512i rcode = _mm512_srli_epi32(rel_bits, 23);
        _mm_storeu_si128((__m128i *)(void *)(out->ulp_code + v), _mm512_cvtepi32_epi8(ucode));
        _mm_storeu_si128((__m128i *)(void *)(out->rel_code + v), _mm512_cvtepi32_epi8(rcode));

        for (int h = 0; h < 2; h++) {
            const float *ha = (const float *)(const void *)(pa + 32 * h);
            const float *hb = (const float *)(const void *)(pb + 32 * h);
            __m512d da = _mm512_cvtps_pd(_mm256_loadu_ps(ha));
            __m512d db = _mm512_cvtps_pd(_mm256_loadu_ps(hb));
            __m512d err = _mm512_sub_pd(da, db);
            __m512d abs_err = _mm512_and_pd(err, abs64);
            s_abs = _mm512_add_pd(s_abs, abs_err);
            s_sq = _mm512_add_pd(s_sq, _mm512_mul_pd(err, err));
            /* Squares of float32 values are exact in float64, so a fused multiply-add
             * rounds once just like the separate add: the same sums, one op fewer. */
            s_aa = _mm512_fmadd_pd(da, da, s_aa);
            s_bb = _mm512_fmadd_pd(db, db, s_bb);
            m_abs = _mm512_max_pd(m_abs, abs_err);
        }
    }
    double l_abs[8], l_sq[8], l_aa[8], l_bb[8], l_max[8];
    uint32_t l_ulp[16], l_rel[16];
    int32_t l_mis[16], l_diff[16], l_rzd[16];
    _mm512_storeu_pd(l_abs, s_abs);
    _mm512_storeu_pd(l_sq, s_sq);
    _mm512_storeu_pd(l_aa, s_aa);
    _mm512_storeu_pd(l_bb, s_bb);
    _mm512_storeu_pd(l_max, m_abs);
    _mm512_storeu_si512(l_ulp, m_ulp);
    _mm512_storeu_si512(l_rel, m_rel);
    _mm512_storeu_si512(l_mis, n_mis);
    _mm512_storeu_si512(l_diff, n_diff);
    _mm512_storeu_si512(l_rzd, n_rzd);
    return f32_block_reduce(out, l_abs, l_sq, l_aa, l_bb, l_max, l_ulp, l_rel, l_mis, l_diff,
                            l_rzd);
}

AVX512_TARGET HOT uint64_t
avx512_sum_bytes(__m512i v)
{
    return (uint64_t)_mm512_reduce_add_epi64(_mm512_sad_epu8(v, _mm512_setzero_si512()));
}

/* As pv_count8(), 64 codes at a time (64 per lane at most in a block: no flush needed). */
AVX512_TARGET HOT void
avx512_count8(const uint8_t *codes, int base, int64_t *counts)
{
    const __m512i one = _mm512_set1_epi8(1), v_base = _mm512_set1_epi8((char)base);
    __m512i c[8];
    for (int j = 0; j < 8; j++)
        c[j] = _mm512_setzero_si512();
    for (int v = 0; v < BLOCK; v += 64) {
        __m512i t = _mm512_sub_epi8(_mm512_loadu_si512(codes + v), v_base);
#pragma GCC unroll 8
        for (int j = 0; j < 8; j++)
            c[j] = _mm512_mask_add_epi8(
                c[j], _mm512_cmpeq_epi8_mask(t, _mm512_set1_epi8((char)j)), c[j], one);
    }
    for (int j = 0; j < 8; j++)
        counts[base + j] += (int64_t)avx512_sum_bytes(c[j]);
}

/* As pv_count_rest(); the regular codes outside the window are found through a bit mask. */
AVX512_TARGET HOT void
avx512_count_rest(const uint8_t *codes, int lo, int nwin, int specials, int64_t *counts)
{
    const __m512i one = _mm512_set1_epi8(1), v_lo = _mm512_set1_epi8((char)lo);
    const __m512i v_last = _mm512_set1_epi8((char)(nwin - 1));
    const __m512i c_zero = _mm512_set1_epi8((char)REL_CODE_ZERO);
    const __m512i c_ref = _mm512_set1_epi8((char)REL_CODE_REF_ZERO);
    __m512i s_zero = _mm512_setzero_si512(), s_ref = s_zero;
    for (int v = 0; v < BLOCK; v += 64) {
        __m512i x = _mm512_loadu_si512(codes + v);
        __mmask64 outside = _mm512_cmpgt_epu8_mask(_mm512_sub_epi8(x, v_lo), v_last);
        if (specials) {
            __mmask64 is_zero = _mm512_cmpeq_epi8_mask(x, c_zero);
            __mmask64 is_ref = _mm512_cmpeq_epi8_mask(x, c_ref);
            s_zero = _mm512_mask_add_epi8(s_zero, is_zero, s_zero, one);
            s_ref = _mm512_mask_add_epi8(s_ref, is_ref, s_ref, one);
            outside &= ~(is_zero | is_ref);
        }
        while (outside) {
            counts[codes[v + __builtin_ctzll(outside)]]++;
            outside &= outside - 1;
        }
    }
    if (specials) {
        counts[REL_CODE_ZERO] += (int64_t)avx512_sum_bytes(s_zero);
        counts[REL_CODE_REF_ZERO] += (int64_t)avx512_sum_bytes(s_ref);
    }
}

AVX512_TARGET HOT void
avx512_count(const uint8_t *codes, int specials, int64_t *counts)
{
    int reg_lo = specials ? 1 : 0, reg_hi = specials ? 254 : 255;
    const __m512i v_first = _mm512_set1_epi8((char)reg_lo);
    const __m512i v_span = _mm512_set1_epi8((char)(reg_hi - reg_lo));
    __m512i mn = _mm512_set1_epi8((char)0xff), mx = _mm512_setzero_si512();
    for (int v = 0; v < BLOCK; v += 64) {
        __m512i x = _mm512_loadu_si512(codes + v);
        __mmask64 regular = _mm512_cmple_epu8_mask(_mm512_sub_epi8(x, v_first), v_span);
        mn = _mm512_mask_min_epu8(mn, regular, mn, x);
        mx = _mm512_mask_max_epu8(mx, regular, mx, x);
    }
    uint8_t l_mn[64], l_mx[64];
    _mm512_storeu_si512(l_mn, mn);
    _mm512_storeu_si512(l_mx, mx);
    int lo = 255, hi = 0;
    for (int j = 0; j < 64; j++) {
        lo = l_mn[j] < lo ? l_mn[j] : lo;
        hi = l_mx[j] > hi ? l_mx[j] : hi;
    }
    int win_lo, nwin;
    count_window_pick(lo, hi, reg_lo, reg_hi, &win_lo, &nwin);
    for (int base = win_lo; base < win_lo + nwin; base += 8)
        avx512_count8(codes, base, counts);
    avx512_count_rest(codes, win_lo, nwin, specials, counts);
}
#endif

/* ---- rescans of one block for the indexes of its maxima (scalar, rare) ---- */

/* Element i of a float32 array at any alignment. */
static float
f32_at(const char *p, int i)
{
    float f;
    memcpy(&f, p + 4 * (size_t)i, sizeof f);
    return f;
}

static uint32_t
f32_bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

static void
f32_rescan_abs(struct gd_metrics *m, const char *a, const char *b, int64_t offset,
               double block_max)
{
    for (int i = 0; i < BLOCK; i++) {
        if (fabs((double)f32_at(a, i) - (double)f32_at(b, i)) == block_max) {
            if (beats(block_max, offset + i, m->abs_max, m->abs_max_index)) {
                m->abs_max = block_max;
                m->abs_max_index = offset + i;
            }
            return;
        }
    }
}

static void
f32_rescan_ulp(struct gd_metrics *m, const char *a, const char *b, int64_t offset,
               uint32_t block_max)
{
    for (int i = 0; i < BLOCK; i++) {
        if (ulp_distance(f32_bits(f32_at(a, i)), f32_bits(f32_at(b, i)), 32) == block_max) {
            if (beats_u64(block_max, offset + i, m->ulp_max, m->ulp_max_index)) {
                m->ulp_max = block_max;
                m->ulp_max_index = offset + i;
            }
            return;
        }
    }
}

/*
 * Largest float64 rel of the block. The float32 rel is within 2^-22 (relative) of it, so
 * only elements whose float32 rel reaches `floor_bits` (a float32 at most 1 - 2^-20 times
 * the current maximum) can beat the maximum: this skips the divisions elsewhere.
 */
static void
f32_rescan_rel(struct gd_metrics *m, const char *a, const char *b, int64_t offset,
               const uint32_t *rel_bits, uint32_t floor_bits)
{
    for (int i = 0; i < BLOCK; i++) {
        if (rel_bits[i] < floor_bits)
            continue;
        double da = f32_at(a, i), db = f32_at(b, i);
        if (db == 0.0)
            continue;
        double rel = fabs(da - db) / fabs(db);
        if (beats(rel, offset + i, m->rel_max, m->rel_max_index)) {
            m->rel_max = rel;
            m->rel_max_index = offset + i;
        }
    }
}

static void
f32_rescan_mismatch(struct gd_metrics *m, const char *a, const char *b, int64_t offset,
                    const struct tol *t)
{
    for (int i = 0; i < BLOCK; i++) {
        if (!close_f32(GD_F32, f32_at(a, i), f32_at(b, i), t)) {
            if (m->mismatch_first_index < 0 || offset + i < m->mismatch_first_index)
                m->mismatch_first_index = offset + i;
            return;
        }
    }
}

/* Folds a block of finite pairs into m; ref_zero is its count of pairs with b == 0. */
static void
f32_block_fold(struct gd_metrics *m, const char *a, const char *b, int64_t offset,
               const struct tol *t, const struct f32_block *blk, int64_t ref_zero)
{
    m->count += BLOCK;
    m->n_finite += BLOCK;
    m->n_bits_differ += blk->n_bits_differ;
    m->n_ref_zero_diff += blk->n_ref_zero_diff;
    ksum_add(&m->sum_abs, blk->sum_abs);
    ksum_add(&m->sum_sq_err, blk->sum_sq_err);
    ksum_add(&m->sum_sq_a, blk->sum_sq_a);
    ksum_add(&m->sum_sq_b, blk->sum_sq_b);

    /* A rescan is needed only when the block may hold a new maximum (or the same one at a
     * smaller index, when chunks come out of order). */
    if (beats(blk->abs_max, offset, m->abs_max, m->abs_max_index))
        f32_rescan_abs(m, a, b, offset, blk->abs_max);
    if (beats_u64(blk->ulp_max, offset, m->ulp_max, m->ulp_max_index))
        f32_rescan_ulp(m, a, b, offset, blk->ulp_max);
    if (ref_zero < BLOCK) {
        uint32_t floor_bits = 0;
        if (m->rel_max_index >= 0) {
            double rel_floor = m->rel_max * (1.0 - 0x1p-20);
            float floor_f = (float)rel_floor;
            if ((double)floor_f > rel_floor)
                floor_f = nextafterf(floor_f, 0.0f);
            floor_bits = f32_bits(floor_f);
        }
        if (blk->rel_max_bits >= floor_bits)
            f32_rescan_rel(m, a, b, offset, blk->rel_bits, floor_bits);
    }
    if (blk->n_mismatch > 0) {
        m->n_mismatch += blk->n_mismatch;
        if (m->mismatch_first_index < 0 || offset < m->mismatch_first_index)
            f32_rescan_mismatch(m, a, b, offset, t);
    }
}

/* Code counts of the fast blocks of one update, added to the histograms at its end. */
struct f32_counts {
    int64_t ulp[256];
    int64_t rel[256];
};

static void
f32_counts_fold(struct gd_metrics *m, const struct f32_counts *c)
{
    for (int code = 0; code <= 32; code++)
        m->ulp_hist[code] += c->ulp[code];
    m->rel_hist[0] += c->rel[REL_CODE_ZERO];
    m->n_rel += c->rel[REL_CODE_ZERO];
    for (int code = 1; code < REL_CODE_REF_ZERO; code++) {
        if (c->rel[code] == 0)
            continue;
        m->rel_hist[rel_bin_of_exp(code - 127)] += c->rel[code];
        m->n_rel += c->rel[code];
    }
    m->n_ref_zero += c->rel[REL_CODE_REF_ZERO];
}

/*
 * Whole blocks of float32 pairs: the vector pass, the codes counted, the block folded in;
 * a block with a NaN or an Inf goes through the scalar path instead.
 */
#define F32_BLOCKS_BODY(block_pass, count)                                                    \
    for (int64_t k = 0; k < n_blocks; k++) {                                                  \
        const char *pa = a + (size_t)k * BLOCK * 4, *pb = b + (size_t)k * BLOCK * 4;          \
        int64_t off = offset + k * BLOCK;                                                     \
        if (block_pass(pa, pb, t->atol_f, t->rtol_f, blk) != 0) {                             \
            scalar_range(m, pa, pb, BLOCK, off, t);                                           \
            continue;                                                                         \
        }                                                                                     \
        int64_t ref_zero = counts->rel[REL_CODE_REF_ZERO];                                    \
        count(blk->ulp_code, 0, counts->ulp);                                                 \
        count(blk->rel_code, 1, counts->rel);                                                 \
        ref_zero = counts->rel[REL_CODE_REF_ZERO] - ref_zero;                                 \
        f32_block_fold(m, pa, pb, off, t, blk, ref_zero);                                     \
    }

#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && defined(__ELF__)
#define PORTABLE_CLONES __attribute__((target_clones("avx2", "default")))
#else
#define PORTABLE_CLONES
#endif

PORTABLE_CLONES static void
f32_blocks_portable(struct gd_metrics *m, const char *a, const char *b, int64_t n_blocks,
                    int64_t offset, const struct tol *t, struct f32_block *blk,
                    struct f32_counts *counts)
{
    F32_BLOCKS_BODY(pv_block_pass, pv_count)
}

#ifdef HAVE_AVX512_KERNEL
AVX512_TARGET static void
f32_blocks_avx512(struct gd_metrics *m, const char *a, const char *b, int64_t n_blocks,
                  int64_t offset, const struct tol *t, struct f32_block *blk,
                  struct f32_counts *counts)
{
    F32_BLOCKS_BODY(avx512_block_pass, avx512_count)
}
#endif

/*
 * Which kernel runs: GPUDIFF_METRICS_SIMD=portable skips the AVX-512 one and =off the
 * vector path altogether (both for testing and for ruling the kernels out).
 */
enum f32_kernel { KERNEL_OFF, KERNEL_PORTABLE, KERNEL_AVX512 };

static enum f32_kernel
f32_kernel_pick(void)
{
    const char *env = getenv("GPUDIFF_METRICS_SIMD");
    if (env != NULL && strcmp(env, "off") == 0)
        return KERNEL_OFF;
#ifdef HAVE_AVX512_KERNEL
    if ((env == NULL || strcmp(env, "portable") != 0) && __builtin_cpu_supports("avx512f") &&
        __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512dq") &&
        __builtin_cpu_supports("avx512cd") && __builtin_cpu_supports("avx512vl") &&
        __builtin_cpu_supports("fma"))
        return KERNEL_AVX512;
#endif
    return KERNEL_PORTABLE;
}

/* The fast path over the whole blocks of the n pairs; returns how many pairs it took. */
static int64_t
f32_fast(struct gd_metrics *m, const void *a, const void *b, int64_t n, int64_t offset,
         const struct tol *t)
{
    enum f32_kernel kernel = f32_kernel_pick();
    int64_t n_blocks = n / BLOCK;
    if (kernel == KERNEL_OFF || n_blocks == 0)
        return 0;
    /* The codes are read 64 bytes at a time: keep them on one cache line each. */
    struct f32_block *blk = aligned_alloc(64, sizeof *blk);
    struct f32_counts *counts = calloc(1, sizeof *counts);
    if (blk == NULL || counts == NULL) {
        /* The scalar path needs no memory: fall back to it rather than fail. */
        free(blk);
        free(counts);
        return 0;
    }
#ifdef HAVE_AVX512_KERNEL
    if (kernel == KERNEL_AVX512)
        f32_blocks_avx512(m, a, b, n_blocks, offset, t, blk, counts);
    else
#endif
        f32_blocks_portable(m, a, b, n_blocks, offset, t, blk, counts);
    f32_counts_fold(m, counts);
    free(blk);
    free(counts);
    return n_blocks * BLOCK;
}

/* ---- public API ---- */

int
gd_metrics_init(struct gd_metrics *m, enum gd_dtype dtype, double atol, double rtol,
                struct gd_err *err)
{
    if ((unsigned)dtype >= GD_DTYPE_COUNT)
        return gd_err_set(err, GD_EDTYPE, "dtype %d is not known", (int)dtype);
    if (!(atol >= 0.0) || !(rtol >= 0.0) || isinf(atol) || isinf(rtol))
        return gd_err_set(err, GD_EINVAL,
                          "atol and rtol must be finite and >= 0 (got atol %g, rtol %g)", atol,
                          rtol);
    memset(m, 0, sizeof *m);
    m->dtype = dtype;
    m->atol = atol;
    m->rtol = rtol;
    m->mismatch_first_index = -1;
    m->abs_max_index = -1;
    m->rel_max_index = -1;
    m->ulp_max_index = -1;
    gd_metrics_finish(m);
    return 0;
}

int
gd_metrics_update(struct gd_metrics *m, const void *a, const void *b, int64_t n, int64_t offset,
                  struct gd_err *err)
{
    if (n < 0 || offset < 0 || offset > INT64_MAX - n)
        return gd_err_set(err, GD_EINVAL, "bad chunk: %lld elements at offset %lld",
                          (long long)n, (long long)offset);
    if (n > 0 && (a == NULL || b == NULL))
        return gd_err_set(err, GD_EINVAL, "chunk of %lld elements without data", (long long)n);
    if (m->count > INT64_MAX - n)
        return gd_err_set(err, GD_ERANGE, "more than %lld elements", (long long)INT64_MAX);
    if (n == 0)
        return 0;
    struct tol t;
    tol_make(m->dtype, m->atol, m->rtol, &t);
    int64_t done = m->dtype == GD_F32 ? f32_fast(m, a, b, n, offset, &t) : 0;
    size_t size = gd_dtype_size(m->dtype);
    scalar_range(m, (const char *)a + (size_t)done * size, (const char *)b + (size_t)done * size,
                 n - done, offset + done, &t);
    return 0;
}

static void
best_merge(double *best, int64_t *best_index, double value, int64_t index)
{
    if (index >= 0 && beats(value, index, *best, *best_index)) {
        *best = value;
        *best_index = index;
    }
}

int
gd_metrics_merge(struct gd_metrics *into, const struct gd_metrics *part, struct gd_err *err)
{
    if (into->dtype != part->dtype || into->atol != part->atol || into->rtol != part->rtol)
        return gd_err_set(err, GD_EINVAL,
                          "cannot merge %s atol %g rtol %g with %s atol %g rtol %g",
                          gd_dtype_name(into->dtype), into->atol, into->rtol,
                          gd_dtype_name(part->dtype), part->atol, part->rtol);
    if (part->count < 0 || into->count > INT64_MAX - part->count)
        return gd_err_set(err, GD_ERANGE, "element count overflows");
    into->count += part->count;
    into->n_finite += part->n_finite;
    into->a_nan += part->a_nan;
    into->b_nan += part->b_nan;
    into->a_inf += part->a_inf;
    into->b_inf += part->b_inf;
    into->nan_both += part->nan_both;
    into->nan_disagree += part->nan_disagree;
    into->inf_both += part->inf_both;
    into->inf_disagree += part->inf_disagree;
    into->n_bits_differ += part->n_bits_differ;
    into->n_mismatch += part->n_mismatch;
    if (part->mismatch_first_index >= 0 &&
        (into->mismatch_first_index < 0 ||
         part->mismatch_first_index < into->mismatch_first_index))
        into->mismatch_first_index = part->mismatch_first_index;
    best_merge(&into->abs_max, &into->abs_max_index, part->abs_max, part->abs_max_index);
    best_merge(&into->rel_max, &into->rel_max_index, part->rel_max, part->rel_max_index);
    if (part->ulp_max_index >= 0 &&
        beats_u64(part->ulp_max, part->ulp_max_index, into->ulp_max, into->ulp_max_index)) {
        into->ulp_max = part->ulp_max;
        into->ulp_max_index = part->ulp_max_index;
    }
    const struct gd_metrics_sum *src[4] = {&part->sum_abs, &part->sum_sq_err, &part->sum_sq_a,
                                           &part->sum_sq_b};
    struct gd_metrics_sum *dst[4] = {&into->sum_abs, &into->sum_sq_err, &into->sum_sq_a,
                                     &into->sum_sq_b};
    for (int i = 0; i < 4; i++) {
        ksum_add(dst[i], src[i]->sum);
        ksum_add(dst[i], src[i]->comp);
    }
    into->n_rel += part->n_rel;
    into->n_ref_zero += part->n_ref_zero;
    into->n_ref_zero_diff += part->n_ref_zero_diff;
    for (int i = 0; i < GD_METRICS_REL_BINS; i++)
        into->rel_hist[i] += part->rel_hist[i];
    for (int i = 0; i < GD_METRICS_ULP_BINS; i++)
        into->ulp_hist[i] += part->ulp_hist[i];
    return 0;
}

void
gd_metrics_finish(struct gd_metrics *m)
{
    double n = (double)m->n_finite;
    double sum_sq_err = ksum_value(&m->sum_sq_err);
    double na2 = ksum_value(&m->sum_sq_a), nb2 = ksum_value(&m->sum_sq_b);
    m->bitwise_equal = m->n_bits_differ == 0;
    m->abs_mean = m->n_finite > 0 ? ksum_value(&m->sum_abs) / n : 0.0;
    m->rms = m->n_finite > 0 ? sqrt(sum_sq_err / n) : 0.0;

    /*
     * 1 - cos = (|a-b|^2 - (|a| - |b|)^2) / (2 |a| |b|), with |a| - |b| taken as
     * (|a|^2 - |b|^2) / (|a| + |b|): for nearly equal vectors this keeps the digits that
     * a.b / (|a| |b|) would cancel away.
     */
    if (na2 == 0.0 && nb2 == 0.0) {
        m->cosine_distance = 0.0;
    } else if (na2 == 0.0 || nb2 == 0.0) {
        m->cosine_distance = 1.0;
    } else {
        double na = sqrt(na2), nb = sqrt(nb2);
        double norm_diff = (na2 - nb2) / (na + nb);
        double dist = (sum_sq_err - norm_diff * norm_diff) / (2.0 * na * nb);
        if (dist < 0.0)
            dist = 0.0;
        if (dist > 2.0)
            dist = 2.0;
        m->cosine_distance = dist;
    }
    m->cosine = 1.0 - m->cosine_distance;

    if (sum_sq_err == 0.0)
        m->sqnr_db = INFINITY;
    else
        m->sqnr_db = 10.0 * log10(nb2 / sum_sq_err);
}

int
gd_metrics_compute(const struct gd_tensor *a, const struct gd_tensor *b, double atol,
                   double rtol, struct gd_metrics *out, struct gd_err *err)
{
    if (a->dtype != b->dtype)
        return gd_err_set(err, GD_EDTYPE, "dtypes differ: a is %s, b is %s",
                          gd_dtype_name(a->dtype), gd_dtype_name(b->dtype));
    if (!gd_tensor_same_shape(a, b)) {
        char sa[160], sb[160];
        return gd_err_set(err, GD_ESHAPE, "shapes differ: a is %s, b is %s",
                          gd_shape_format(a->ndim, a->shape, sa, sizeof sa),
                          gd_shape_format(b->ndim, b->shape, sb, sizeof sb));
    }
    if (a->device || b->device)
        return gd_err_set(err, GD_EINVAL, "tensor data is in device memory; copy it to the host");
    struct gd_metrics m;
    int rc = gd_metrics_init(&m, a->dtype, atol, rtol, err);
    if (rc != 0)
        return rc;
    rc = gd_metrics_update(&m, a->data, b->data, gd_tensor_numel(a), 0, err);
    if (rc != 0)
        return rc;
    gd_metrics_finish(&m);
    *out = m;
    return 0;
}

double
gd_metrics_rel_quantile(const struct gd_metrics *m, double q)
{
    if (!(q >= 0.0 && q <= 1.0))
        return NAN;
    int64_t total = 0;
    for (int i = 0; i < GD_METRICS_REL_BINS; i++)
        total += m->rel_hist[i];
    if (total == 0)
        return NAN;
    double target = q * (double)total;
    int64_t cum = 0;
    for (int i = 0; i < GD_METRICS_REL_BINS; i++) {
        int64_t c = m->rel_hist[i];
        if (c == 0 || (double)(cum + c) < target) {
            cum += c;
            continue;
        }
        if (i == 0)
            return 0.0;
        double lo = ldexp(1.0, i - 1 + GD_METRICS_REL_EXP_MIN);
        if (i == REL_BIN_TOP)
            return lo;
        double frac = (target - (double)cum) / (double)c;
        if (frac < 0.0)
            frac = 0.0;
        return lo + frac * lo; /* the bin is [lo, 2 lo) */
    }
    return NAN; /* not reached: the last nonempty bin reaches the total */
}
