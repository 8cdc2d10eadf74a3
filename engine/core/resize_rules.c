/*
 * resize_rules.c: the source coordinates, taps and weights of Resize and Upsample (see
 * resize_rules.h), in exact rational arithmetic on 128-bit integers.
 *
 * With scale s = Sn / Sd, input length I, L = s I (the "length_resized" of ONNX's formulas:
 * the output length for sizes, s times the input's for scales, as ONNX's reference does),
 * output index o maps to x = N / D:
 *   half_pixel            ((2o + 1) Sd - Sn) / (2 Sn)
 *   half_pixel_symmetric  ((Sn I - floor(L) Sd) + (2o + 1) Sd - Sn) / (2 Sn): half_pixel
 *                         shifted by (I / 2)(1 - floor(L) / L)
 *   pytorch_half_pixel    half_pixel, or -1/2 when L = 1
 *   align_corners         o (I - 1) Sd / (Sn I - Sd), or 0 when L = 1
 *   asymmetric            o Sd / Sn
 *   tf_half_pixel_for_nn  (2o + 1) Sd / (2 Sn)
 *   tf_crop_and_resize    (I - 1)(a (Sn I - Sd) + o (b - a) Sd) / (Q (Sn I - Sd)), roi start
 *                         a / Q, end b / Q; (I - 1)(a + b) / (2Q) when L = 1
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "resize_rules.h"

typedef __int128 i128;

/* Products and sums that fail rather than wrap. */
static int
mul(i128 a, i128 b, i128 *out)
{
    return __builtin_mul_overflow(a, b, out) ? GD_ENOTSUP : 0;
}

static int
add(i128 a, i128 b, i128 *out)
{
    return __builtin_add_overflow(a, b, out) ? GD_ENOTSUP : 0;
}

int
gd__resize_exact_fraction(double v, int64_t *num, int64_t *den)
{
    if (v == 0) {
        *num = 0;
        *den = 1;
        return 0;
    }
    if (!isfinite(v))
        return GD_ENOTSUP;
    int e;
    double m = frexp(fabs(v), &e); /* |v| = m 2^e, m in [0.5, 1) */
    int64_t mant = (int64_t)ldexp(m, 53), shift = e - 53;
    while (mant % 2 == 0 && shift < 0) {
        mant /= 2;
        shift++;
    }
    if (shift > 0) {
        if (shift > 38 || mant > (INT64_C(1) << 24))
            return GD_ENOTSUP;
        mant <<= shift;
        shift = 0;
    }
    if (-shift > 62)
        return GD_ENOTSUP;
    *num = v < 0 ? -mant : mant;
    *den = INT64_C(1) << -shift;
    return 0;
}

/* floor(n / d) for d > 0. */
static i128
floor_div(i128 n, i128 d)
{
    i128 q = n / d;
    return q * d > n ? q - 1 : q;
}

/* The source coordinate of output index o along axis a: *n / *d, *d > 0. */
static int
source(const struct gd_params *p, int a, int64_t in_len, int64_t o, i128 *n, i128 *d)
{
    i128 sn = p->scale_num[a], sd = p->scale_den[a], I = in_len, snI = 0, t = 0, u = 0;
    int rc = mul(sn, I, &snI);
    if (rc != 0)
        return rc;
    /* L = s I = 1: ONNX's special cases; L < 1 only with keep_aspect_ratio_policy, treated
     * as 1 so that no denominator below is 0 or negative */
    int unit = snI <= sd;
    switch (p->coord_mode) {
    case GD_COORD_PYTORCH_HALF_PIXEL:
        if (unit) {
            *n = -1;
            *d = 2;
            return 0;
        }
        /* fall through */
    case GD_COORD_HALF_PIXEL:
        rc = mul(2 * (i128)o + 1, sd, &t);
        *n = t - sn;
        *d = 2 * sn;
        return rc;
    case GD_COORD_HALF_PIXEL_SYMMETRIC: {
        i128 fl = floor_div(snI, sd), v = 0;
        rc = mul(fl, sd, &v);
        if (rc == 0)
            rc = mul(2 * (i128)o + 1, sd, &t);
        *n = snI - v + t - sn;
        *d = 2 * sn;
        return rc;
    }
    case GD_COORD_ALIGN_CORNERS:
        if (unit) {
            *n = 0;
            *d = 1;
            return 0;
        }
        rc = mul((i128)o * (I - 1), sd, n);
        *d = snI - sd;
        return rc;
    case GD_COORD_ASYMMETRIC:
        rc = mul(o, sd, n);
        *d = sn;
        return rc;
    case GD_COORD_TF_HALF_PIXEL_FOR_NN:
        rc = mul(2 * (i128)o + 1, sd, n);
        *d = 2 * sn;
        return rc;
    case GD_COORD_TF_CROP_AND_RESIZE: {
        int64_t an, ad, bn, bd;
        if (gd__resize_exact_fraction(p->roi[a], &an, &ad) != 0 ||
            gd__resize_exact_fraction(p->roi[GD_MAX_DIMS + a], &bn, &bd) != 0)
            return GD_ENOTSUP;
        /* a common power-of-two denominator q */
        i128 q = ad > bd ? ad : bd, ra = (i128)an * (q / ad), rb = (i128)bn * (q / bd);
        if (unit) {
            rc = mul(I - 1, ra + rb, n);
            *d = 2 * q;
            return rc;
        }
        i128 span = snI - sd;
        rc = mul(ra, span, &t);
        if (rc == 0) /* rb - ra is up to 2^125: its product with o is checked too */
            rc = mul(o, rb - ra, &u);
        if (rc == 0)
            rc = mul(u, sd, &u);
        if (rc == 0)
            rc = add(t, u, &t);
        if (rc == 0)
            rc = mul(I - 1, t, n);
        if (rc == 0)
            rc = mul(q, span, d);
        return rc;
    }
    }
    return GD_EINVAL;
}

int
gd__resize_axis_identity(const struct gd_params *p, int a, int64_t in_len, int64_t out_len)
{
    if (in_len != out_len)
        return 0;
    /* In every mode of source() d is the same for each o and n is affine in o: the map is
     * the identity when it takes 0 to 0 and 1 to 1. (A loop over every o took hours on an
     * axis of 2^40, which a declared input shape can have.) */
    for (int64_t o = 0; o < out_len && o < 2; o++) {
        i128 n, d;
        int rc = source(p, a, in_len, o, &n, &d);
        if (rc != 0)
            return rc;
        if (n != (i128)o * d)
            return 0;
    }
    return 1; /* (rc above is a negative GD_E* code) */
}

/* The nearest index of x = n / d by the op's nearest_mode, clamped into [0, in - 1]. */
static int64_t
nearest(const struct gd_params *p, i128 n, i128 d, int64_t in_len)
{
    i128 f = floor_div(n, d), rem = n - f * d; /* 0 <= rem < d */
    switch (p->nearest_mode) {
    case GD_NEAREST_ROUND_PREFER_FLOOR:
        f += 2 * rem > d;
        break;
    case GD_NEAREST_ROUND_PREFER_CEIL:
        f += 2 * rem >= d;
        break;
    case GD_NEAREST_FLOOR:
        break;
    case GD_NEAREST_CEIL:
        f += rem > 0;
        break;
    }
    return f < 0 ? 0 : f > in_len - 1 ? in_len - 1 : (int64_t)f;
}

/* The Keys cubic weights at distances 1 + t, t, 1 - t, 2 - t; s = 1 - t (both exact). */
static void
cubic_weights(long double t, long double s, long double a, long double *w)
{
    w[0] = a * t * s * s;
    w[1] = s * (1 + t - (a + 2) * t * t);
    w[2] = t * (1 + s - (a + 2) * s * s);
    w[3] = a * s * t * t;
}

/* Taps and weights of output index o along axis a into index[0..taps), w[0..taps). */
static int
axis_taps(const struct gd_params *p, int a, int64_t in_len, int64_t o, int taps,
          int64_t *index, long double *w)
{
    i128 n, d, last;
    int rc = source(p, a, in_len, o, &n, &d);
    if (rc != 0)
        return rc;
    /* the last index in - 1 as an n over d: (in - 1) d, which may pass 2^127 (d does not),
     * and is then above any n */
    int past = mul(in_len - 1, d, &last) != 0;
    if (p->coord_mode == GD_COORD_TF_CROP_AND_RESIZE && (n < 0 || (!past && n > last))) {
        for (int k = 0; k < taps; k++) {
            index[k] = -1;
            w[k] = 0;
        }
        return 0;
    }
    if (p->resize_mode == GD_RESIZE_NEAREST) {
        index[0] = nearest(p, n, d, in_len);
        w[0] = 1;
        return 0;
    }
    if (p->resize_mode == GD_RESIZE_LINEAR) {
        if (n < 0)
            n = 0;
        if (!past && n > last)
            n = last;
    }
    i128 f = floor_div(n, d), rem = n - f * d;
    long double t = (long double)rem / (long double)d, s = (long double)(d - rem) / (long double)d;
    if (p->resize_mode == GD_RESIZE_LINEAR) {
        index[0] = (int64_t)f;
        index[1] = f + 1 < in_len ? (int64_t)f + 1 : in_len - 1;
        w[0] = s;
        w[1] = t;
        return 0;
    }
    cubic_weights(t, s, (long double)p->cubic_coeff_a, w);
    long double kept = 0;
    for (int k = 0; k < 4; k++) {
        int64_t i = (int64_t)f - 1 + k;
        int outside = i < 0 || i >= in_len;
        if (outside && p->exclude_outside)
            w[k] = 0;
        kept += w[k];
        index[k] = i < 0 ? 0 : i >= in_len ? in_len - 1 : i;
    }
    if (p->exclude_outside)
        for (int k = 0; k < 4; k++)
            w[k] /= kept;
    return 0;
}

int
gd__resize_plan_make(const struct gd_params *p, int ndim, const int64_t *in, const int64_t *out,
                     struct gd__resize_plan *plan, struct gd_err *err)
{
    memset(plan, 0, sizeof *plan);
    plan->taps = p->resize_mode == GD_RESIZE_NEAREST ? 1 : p->resize_mode == GD_RESIZE_LINEAR ? 2
                                                                                              : 4;
    size_t entries = 0;
    for (int a = 0; a < ndim; a++)
        if (p->resized_axes & (1u << a))
            entries += (size_t)out[a] * (size_t)plan->taps;
    size_t bytes = entries * (sizeof(int64_t) + sizeof(float) + sizeof(double));
    plan->mem = malloc(bytes > 0 ? bytes : 1);
    if (plan->mem == NULL)
        return gd_err_set(err, GD_ENOMEM, "out of memory for Resize's tables");
    plan->mem_bytes = bytes;
    int64_t *index = plan->mem;
    double *w64 = (double *)(index + entries);
    float *w32 = (float *)(w64 + entries);
    for (int a = 0; a < ndim; a++) {
        if (!(p->resized_axes & (1u << a)))
            continue;
        struct gd__resize_axis *ax = &plan->axis[plan->n_axes++];
        ax->axis = a;
        ax->out_len = out[a];
        ax->index = index;
        ax->weight64 = w64;
        ax->weight32 = w32;
        for (int64_t o = 0; o < out[a]; o++) {
            long double w[4];
            int rc = axis_taps(p, a, in[a], o, plan->taps, index + o * plan->taps, w);
            if (rc != 0) {
                gd__resize_plan_free(plan);
                return gd_err_set(err, rc, "the source coordinates of axis %d do not fit 128-bit "
                                  "arithmetic", a);
            }
            for (int k = 0; k < plan->taps; k++) {
                w64[o * plan->taps + k] = (double)w[k];
                w32[o * plan->taps + k] = (float)w[k];
            }
        }
        index += out[a] * plan->taps;
        w64 += out[a] * plan->taps;
        w32 += out[a] * plan->taps;
    }
    if (plan->taps == 1) { /* nearest reads no weights */
        for (int k = 0; k < plan->n_axes; k++) {
            plan->axis[k].weight32 = NULL;
            plan->axis[k].weight64 = NULL;
        }
    }
    return 0;
}

void
gd__resize_plan_free(struct gd__resize_plan *plan)
{
    free(plan->mem);
    memset(plan, 0, sizeof *plan);
}
