/*
 * metrics_scalar.c: the reference path of gd_metrics_update(), one element at a time, for
 * every dtype and for the float32 blocks that hold a NaN or an Inf (docs/COMPARISON.md).
 */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "metrics_internal.h"

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

void
gd__metrics_tol_make(enum gd_dtype dtype, double atol, double rtol, struct tol *t)
{
    t->atol = atol;
    t->rtol = rtol;
    t->atol_f = tol_in(dtype, atol);
    t->rtol_f = tol_in(dtype, rtol);
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
            fa = gd_f16_to_f32((uint16_t)xa);
            fb = gd_f16_to_f32((uint16_t)xb);
        } else {
            fa = gd_bf16_to_f32((uint16_t)xa);
            fb = gd_bf16_to_f32((uint16_t)xb);
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

void
gd__metrics_scalar_range(struct gd_metrics *m, const void *a, const void *b, int64_t n,
                         int64_t offset, const struct tol *t)
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
