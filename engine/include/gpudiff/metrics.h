/*
 * metrics.h: the tensor-level comparison, one pass over two tensors of the same dtype and
 * shape, b taken as the reference ("expected") and a as the run under test ("actual").
 *
 * struct gd_metrics is caller-owned and plain data (no pointers): it can be copied, kept
 * on the stack, and filled in chunks. gd_metrics_compute() measures two whole host
 * tensors; gd_metrics_init() / gd_metrics_update() / gd_metrics_merge() /
 * gd_metrics_finish() do the same over chunks, so a tensor larger than memory, or one split
 * across threads, gives the same counts, maxima, indexes and histograms as a single pass
 * (sums may differ in the last bits). docs/COMPARISON.md defines every field exactly.
 */
#ifndef GPUDIFF_METRICS_H
#define GPUDIFF_METRICS_H

#include <stdint.h>

#include "gpudiff/error.h"
#include "gpudiff/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ULP histogram: bin 0 counts equal pairs, bin k (1..64) distances in [2^(k-1), 2^k). */
#define GD_METRICS_ULP_BINS 65

/*
 * Relative-error histogram: bin 0 counts rel == 0; bin 1 + (e - GD_METRICS_REL_EXP_MIN)
 * counts rel in [2^e, 2^(e+1)) for e = GD_METRICS_REL_EXP_MIN..GD_METRICS_REL_EXP_MAX.
 * The first of those bins also takes every rel below 2^GD_METRICS_REL_EXP_MIN and the
 * last every rel from 2^GD_METRICS_REL_EXP_MAX up (no float32 or float64 pair produces a
 * nonzero rel below 2^-54).
 */
#define GD_METRICS_REL_EXP_MIN (-64)
#define GD_METRICS_REL_EXP_MAX 63
#define GD_METRICS_REL_BINS (2 + GD_METRICS_REL_EXP_MAX - GD_METRICS_REL_EXP_MIN)

/* A compensated (Neumaier) sum: the value is sum + comp. */
struct gd_metrics_sum {
    double sum;
    double comp;
};

struct gd_metrics {
    /* What is compared: set by gd_metrics_init(), checked by gd_metrics_merge(). */
    enum gd_dtype dtype;
    double atol;
    double rtol;

    /* Element classes. Every element is in exactly one of: finite pair, NaN on a side,
     * Inf on a side (and no NaN). Integer and bool elements are all finite pairs. */
    int64_t count;               /* elements seen */
    int64_t n_finite;            /* both sides finite: the elements the error stats cover */
    int64_t a_nan, b_nan;        /* NaNs on each side */
    int64_t a_inf, b_inf;        /* infinities on each side */
    int64_t nan_both;            /* both NaN: agreeing NaNs */
    int64_t nan_disagree;        /* exactly one side NaN */
    int64_t inf_both;            /* the same infinity on both sides (no NaN) */
    int64_t inf_disagree;        /* an infinity against a finite value or the other infinity */
    int64_t n_bits_differ;       /* elements whose bytes differ (-0.0 vs +0.0 differs) */

    /* Tolerance: numpy.isclose(a, b, rtol, atol, equal_nan=False) evaluated in the
     * tensor's own dtype as numpy does; integers and bools compare exactly. */
    int64_t n_mismatch;          /* elements that are not close (NaN never is) */
    int64_t mismatch_first_index;/* smallest flat index not close, or -1 */

    /* Absolute error |a-b| in float64, over finite pairs. */
    double abs_max;
    int64_t abs_max_index;       /* smallest index attaining abs_max, -1 if no finite pair */
    struct gd_metrics_sum sum_abs;       /* sum of |a-b| */
    struct gd_metrics_sum sum_sq_err;    /* sum of (a-b)^2 */
    struct gd_metrics_sum sum_sq_a;      /* sum of a^2 */
    struct gd_metrics_sum sum_sq_b;      /* sum of b^2 */

    /* Relative error |a-b|/|b| over finite pairs with b != 0. */
    int64_t n_rel;               /* finite pairs with b != 0 */
    int64_t n_ref_zero;          /* finite pairs with b == 0 (left out of the relative stats) */
    int64_t n_ref_zero_diff;     /* of those, pairs with a != 0 */
    double rel_max;              /* in float64 */
    int64_t rel_max_index;       /* smallest index attaining rel_max, -1 if n_rel == 0 */
    int64_t rel_hist[GD_METRICS_REL_BINS];

    /* Distance in units in the last place of the dtype (integers: |a-b|), finite pairs. */
    uint64_t ulp_max;
    int64_t ulp_max_index;       /* smallest index attaining ulp_max, -1 if no finite pair */
    int64_t ulp_hist[GD_METRICS_ULP_BINS];

    /* Derived by gd_metrics_finish() from the fields above. */
    int bitwise_equal;           /* 1 when n_bits_differ == 0 */
    double abs_mean;             /* sum_abs / n_finite (0 when n_finite == 0) */
    double rms;                  /* sqrt(sum_sq_err / n_finite) (0 when n_finite == 0) */
    double cosine;               /* a.b / (|a| |b|) over finite pairs, in [-1, 1] */
    double cosine_distance;      /* 1 - cosine, accurate when tiny */
    double sqnr_db;              /* 10 log10(sum b^2 / sum (a-b)^2); +inf when no error */
};

/*
 * Starts an empty measurement of pairs of `dtype` elements. atol and rtol must be finite
 * and >= 0 (GD_EINVAL otherwise); dtype must be one of enum gd_dtype (GD_EDTYPE). Writes
 * *m only on success.
 */
int gd_metrics_init(struct gd_metrics *m, enum gd_dtype dtype, double atol, double rtol,
                    struct gd_err *err);

/*
 * Adds n pairs: a[i] and b[i] (host memory, native byte order, m->dtype elements, any
 * alignment) are the elements at flat index offset + i. Chunks may come in any order; each
 * index should be given once. GD_EINVAL when n or offset is negative, offset + n overflows,
 * or a data pointer is NULL with n > 0; GD_ERANGE when m->count + n overflows; m is then
 * unchanged.
 */
int gd_metrics_update(struct gd_metrics *m, const void *a, const void *b, int64_t n,
                      int64_t offset, struct gd_err *err);

/*
 * Adds the partial measurement `part` (over other indexes) into `into`; call
 * gd_metrics_finish() afterwards. GD_EINVAL when dtype, atol or rtol differ, GD_ERANGE when
 * the element count would overflow int64; `into` is then unchanged.
 */
int gd_metrics_merge(struct gd_metrics *into, const struct gd_metrics *part,
                     struct gd_err *err);

/* Fills the derived fields. May be called any number of times, also between updates. */
void gd_metrics_finish(struct gd_metrics *m);

/*
 * Measures a (actual) against b (reference) with the tolerance atol + rtol*|b|, and
 * finishes *out. GD_EDTYPE when the dtypes differ, GD_ESHAPE when the shapes differ (the
 * message names both), GD_EINVAL for a device tensor or a bad tolerance. Writes *out only
 * on success.
 */
int gd_metrics_compute(const struct gd_tensor *a, const struct gd_tensor *b, double atol,
                       double rtol, struct gd_metrics *out, struct gd_err *err);

/*
 * The q-quantile (0 <= q <= 1) of the relative errors, read from rel_hist: the bin where
 * the cumulative count reaches q * n_rel, interpolated linearly inside it. The result and
 * the exact quantile lie in the same bin, so they differ by less than a factor of 2 (the
 * zero bin is exact; the top bin answers its lower edge 2^GD_METRICS_REL_EXP_MAX). NaN
 * when q is outside [0, 1] or there are no relative errors.
 */
double gd_metrics_rel_quantile(const struct gd_metrics *m, double q);

#ifdef __cplusplus
}
#endif
#endif
