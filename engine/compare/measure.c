/*
 * measure.c: each matched pair of layers measured while it is loaded: the tensor metrics
 * (a against b, b the reference, as numpy.isclose orders them), and the figures the verdict
 * reads, which must not depend on which run is a: the scale max(|a|, |b|), the values that
 * differ, and the median of |a - b| / max(|a|, |b|) over all values and over the values that
 * differ. A float64 side is rounded to the other side's float dtype first.
 */
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../core/internal.h"
#include "diff_internal.h"

int
gd__reconcile(struct gd_tensor *a, struct gd_tensor *b, struct gd_tensor **a2,
              struct gd_tensor **b2, int *rounded_side, struct gd_err *err)
{
    *a2 = a;
    *b2 = b;
    *rounded_side = 0;
    if (a->dtype == b->dtype)
        return 0;
    if (a->dtype == GD_F64 && gd_dtype_is_float(b->dtype)) {
        *a2 = gd_tensor_cast(a, b->dtype, err);
        *rounded_side = 'a';
        return *a2 ? 0 : GD_ENOMEM;
    }
    if (b->dtype == GD_F64 && gd_dtype_is_float(a->dtype)) {
        *b2 = gd_tensor_cast(b, a->dtype, err);
        *rounded_side = 'b';
        return *b2 ? 0 : GD_ENOMEM;
    }
    /* float16 against bfloat16 or float32: float32 holds both exactly, so neither moves */
    if (gd_dtype_is_float(a->dtype) && gd_dtype_is_float(b->dtype)) {
        if (a->dtype != GD_F32 && (*a2 = gd_tensor_cast(a, GD_F32, err)) == NULL)
            return GD_ENOMEM;
        if (b->dtype != GD_F32 && (*b2 = gd_tensor_cast(b, GD_F32, err)) == NULL) {
            if (*a2 != a)
                gd_tensor_free(*a2);
            *a2 = a;
            return GD_ENOMEM;
        }
        return 0;
    }
    return gd_err_set(err, GD_EDTYPE, "dtypes %s and %s cannot be compared",
                      gd_dtype_name(a->dtype), gd_dtype_name(b->dtype));
}

double
gd__abs_max(const struct gd_tensor *t)
{
    double m = 0;
    int64_t n = gd_tensor_numel(t);
    for (int64_t i = 0; i < n; i++) {
        double v = fabs(gd_tensor_get_f64(t, i));
        if (isfinite(v) && v > m)
            m = v;
    }
    return m;
}

/* ---- a log-linear histogram of relative errors, for medians within 1/16 of a binade ---- */

#define REL_EXP_MIN (-110)
#define REL_EXP_MAX 20
#define REL_SUB 16 /* bins per binade: the top 4 bits of the significand */
#define REL_BINS (1 + (1 + REL_EXP_MAX - REL_EXP_MIN) * REL_SUB)

struct rel_hist {
    /* 0: rel == 0; 1 + (e - REL_EXP_MIN) * REL_SUB + k: rel in [2^e (1 + k/16), 2^e (1 + (k+1)/16)) */
    int64_t bins[REL_BINS];
    int64_t n;
    double max; /* the largest rel added: no median estimate exceeds it */
};

static inline void
hist_add(struct rel_hist *h, double rel)
{
    int bin = 0;
    if (rel > 0) {
        uint64_t bits;
        memcpy(&bits, &rel, sizeof bits);
        int e = (int)((bits >> 52) & 0x7ff) - 1023; /* rel in [2^e, 2^(e+1)) when normal */
        int k = (int)((bits >> 48) & 0xf);
        if (e == -1023) { /* subnormal: below every bin, counted in the lowest */
            e = REL_EXP_MIN;
            k = 0;
        }
        if (e < REL_EXP_MIN) {
            e = REL_EXP_MIN;
            k = 0;
        } else if (e > REL_EXP_MAX) {
            e = REL_EXP_MAX;
            k = REL_SUB - 1;
        }
        bin = 1 + (e - REL_EXP_MIN) * REL_SUB + k;
        if (rel > h->max)
            h->max = rel;
    }
    h->bins[bin]++;
    h->n++;
}

/* The q-quantile (the median for q = 1/2), interpolated inside its bin and never above the
 * largest value; NAN if empty. */
static double
hist_quantile(const struct rel_hist *h, double q)
{
    if (h->n == 0)
        return NAN;
    double target = q * (double)h->n;
    int64_t cum = 0;
    for (int i = 0; i < REL_BINS; i++) {
        int64_t c = h->bins[i];
        if (c == 0 || (double)(cum + c) < target) {
            cum += c;
            continue;
        }
        if (i == 0)
            return 0.0;
        int e = (i - 1) / REL_SUB + REL_EXP_MIN, k = (i - 1) % REL_SUB;
        double lo = ldexp(1.0 + (double)k / REL_SUB, e), width = ldexp(1.0 / REL_SUB, e);
        double frac = (target - (double)cum) / (double)c;
        double v = lo + (frac < 0 ? 0 : frac) * width;
        return v < h->max ? v : h->max;
    }
    return h->max;
}

static double
hist_median(const struct rel_hist *h)
{
    return hist_quantile(h, 0.5);
}

struct sym_stats {
    double scale;           /* max(|a|, |b|) over finite values: the first pass's */
    double inv_scale;
    double max_abs;
    double sum_diff;        /* of a - b over finite pairs */
    int64_t n_finite;
    int64_t n_differ;
    struct rel_hist all;    /* |a - b| / scale over all values */
    struct rel_hist differing; /* |a - b| / max(|a|, |b|) over the values that differ */
};

static inline void
scale_pair(double *m, double x, double y)
{
    double ax = fabs(x), ay = fabs(y);
    if (ax <= DBL_MAX && ax > *m)
        *m = ax;
    if (ay <= DBL_MAX && ay > *m)
        *m = ay;
}

static inline void
sym_pair(struct sym_stats *s, double x, double y)
{
    if (x == y && fabs(x) <= DBL_MAX) { /* the common case: equal finite values */
        s->all.bins[0]++;
        s->all.n++;
        s->n_finite++;
        return;
    }
    if (isnan(x) || isnan(y)) {
        s->n_differ += !(isnan(x) && isnan(y));
        return;
    }
    if (isinf(x) || isinf(y)) {
        s->n_differ += x != y;
        return;
    }
    s->n_finite++;
    if (x == y) { /* -0 against +0 */
        hist_add(&s->all, 0.0);
        return;
    }
    s->sum_diff += x - y;
    double ax = fabs(x), ay = fabs(y), m = ax > ay ? ax : ay;
    double d = fabs(x - y);
    s->max_abs = d > s->max_abs ? d : s->max_abs;
    s->n_differ++;
    hist_add(&s->all, d * s->inv_scale);
    hist_add(&s->differing, d / m);
}

/* Both tensors have one dtype and one element count. Two passes: the scale, then the rest in
 * its units. */
static void
sym_measure(struct sym_stats *s, const struct gd_tensor *a, const struct gd_tensor *b)
{
    memset(s, 0, sizeof *s);
    int64_t n = gd_tensor_numel(a);
    double m = 0;
    if (a->dtype == GD_F32) {
        const float *x = a->data, *y = b->data;
        for (int64_t i = 0; i < n; i++)
            scale_pair(&m, x[i], y[i]);
    } else if (a->dtype == GD_F64) {
        const double *x = a->data, *y = b->data;
        for (int64_t i = 0; i < n; i++)
            scale_pair(&m, x[i], y[i]);
    } else {
        for (int64_t i = 0; i < n; i++)
            scale_pair(&m, gd_tensor_get_f64(a, i), gd_tensor_get_f64(b, i));
    }
    s->scale = m > 0 ? m : 1.0;
    s->inv_scale = 1.0 / s->scale;
    if (a->dtype == GD_F32) {
        const float *x = a->data, *y = b->data;
        for (int64_t i = 0; i < n; i++)
            sym_pair(s, x[i], y[i]);
    } else if (a->dtype == GD_F64) {
        const double *x = a->data, *y = b->data;
        for (int64_t i = 0; i < n; i++)
            sym_pair(s, x[i], y[i]);
    } else {
        for (int64_t i = 0; i < n; i++)
            sym_pair(s, gd_tensor_get_f64(a, i), gd_tensor_get_f64(b, i));
    }
}

/* Lists the rows (dim 0) with an element that is not close, by numpy.isclose's rule. */
static void
mismatch_rows(struct gd_diff_layer *dl, const struct gd_tensor *a, const struct gd_tensor *b,
              double atol, double rtol)
{
    int64_t n = gd_tensor_numel(a);
    int64_t rows = a->ndim > 0 ? a->shape[0] : 1;
    int64_t per_row = rows > 0 ? n / rows : 0;
    for (int64_t r = 0; r < rows; r++) {
        for (int64_t k = 0; k < per_row; k++) {
            double x = gd_tensor_get_f64(a, r * per_row + k);
            double y = gd_tensor_get_f64(b, r * per_row + k);
            int close = x == y || fabs(x - y) <= atol + rtol * fabs(y);
            if (!close) {
                if (dl->n_rows < GD_DIFF_MAX_ROWS)
                    dl->rows[dl->n_rows++] = r;
                dl->rows_mismatch++;
                break;
            }
        }
    }
}

/* Significand bits of a float dtype (24 for float32); 0 for integers. */
static double
significand_bits(enum gd_dtype dtype)
{
    double u = gd__unit_roundoff(dtype);
    return u > 0 ? -log2(u) : 0;
}

int
gd__pair_stats(const struct gd_tensor *a, const struct gd_tensor *b, struct gd__pair_stats *out,
               struct gd_err *err)
{
    struct sym_stats *s = malloc(sizeof *s);
    if (s == NULL)
        return gd_err_set(err, GD_ENOMEM, "out of memory");
    sym_measure(s, a, b);
    memset(out, 0, sizeof *out);
    out->scale = s->scale;
    out->err_median = s->all.n > 0 ? hist_median(&s->all) : 0.0;
    /* the order statistic above which the population's median lies with 1% chance (normal
     * approximation of the binomial: rank n/2 + 2.33 sqrt(n) / 2) */
    double q_hi = s->all.n > 0 ? fmin(1.0, 0.5 + 1.165 / sqrt((double)s->all.n)) : 0.5;
    out->err_median_hi = s->all.n > 0 ? hist_quantile(&s->all, q_hi) : 0.0;
    out->abs_max = s->max_abs;
    out->mean_diff = s->n_finite > 0 ? s->sum_diff / (double)s->n_finite : 0.0;
    out->n_differ = s->n_differ;
    double p = significand_bits(a->dtype);
    double med = s->differing.n > 0 ? hist_median(&s->differing) : 0.0;
    /* A correctly rounded result's median relative error is u/2 = 2^-(p+1): report p; a
     * median relative error above 1/2 (values of other signs, steps) is 0 bits, not fewer. */
    out->bits = med > 0 ? fmax(0.0, fmin(p, -log2(2 * med))) : p;
    free(s);
    return 0;
}

/* Measures one pair of tensors into the layer's metrics and normalized errors. */
static int
measure(struct gd_diff_layer *dl, struct gd_tensor *ta, struct gd_tensor *tb, double atol,
        double rtol, struct gd_err *err)
{
    struct gd_tensor *a = NULL, *b = NULL;
    int rc = gd__reconcile(ta, tb, &a, &b, &dl->rounded_side, err);
    if (rc != 0)
        return rc;
    dl->dtype = a->dtype;
    rc = gd_metrics_compute(a, b, atol, rtol, &dl->m, err);
    struct gd__pair_stats ps;
    if (rc == 0)
        rc = gd__pair_stats(a, b, &ps, err);
    if (rc == 0) {
        dl->scale = ps.scale;
        dl->err = dl->m.abs_max / dl->scale;
        dl->err_median = ps.err_median;
        dl->mean_diff = ps.mean_diff;
        dl->n_differ = ps.n_differ;
        dl->differ_fraction = dl->m.count > 0 ? (double)ps.n_differ / (double)dl->m.count : 0;
        dl->sparse = ps.n_differ > 0 && dl->differ_fraction < GD__SPARSE;
        dl->bits = ps.bits;
        dl->ulp_scaled = gd__ulps_at(dl->m.abs_max, dl->scale, dl->dtype);
        if (dl->m.n_mismatch > 0)
            mismatch_rows(dl, a, b, atol, rtol);
    }
    if (a != ta)
        gd_tensor_free(a);
    if (b != tb)
        gd_tensor_free(b);
    return rc;
}

static int
same_shape(const struct gd_bundle_layer *x, const struct gd_bundle_layer *y)
{
    if (x->shape.ndim != y->shape.ndim)
        return 0;
    for (int i = 0; i < x->shape.ndim; i++)
        if (x->shape.dim[i] != y->shape.dim[i])
            return 0;
    return 1;
}

/* Measures pair i (both sides' tensors loaded here and freed); writes d->layers[i] only, so
 * pairs can be measured on several threads at once. */
static int
measure_pair(struct gd__work *w, int i, struct gd_err *err)
{
    struct gd_diff *d = w->d;
    struct gd_diff_layer *dl = &d->layers[i];
    if (dl->index_a < 0 || dl->index_b < 0)
        return 0;
    const struct gd_bundle_layer *la = &w->a->layers[dl->index_a];
    const struct gd_bundle_layer *lb = &w->b->layers[dl->index_b];
    if (!same_shape(la, lb)) {
        char sa[96], sb[96];
        snprintf(dl->note, sizeof dl->note, "shapes differ: %s and %s",
                 gd_shape_format(la->shape.ndim, la->shape.dim, sa, sizeof sa),
                 gd_shape_format(lb->shape.ndim, lb->shape.dim, sb, sizeof sb));
        return 0;
    }
    if (la->tensor_absent || lb->tensor_absent) {
        /* fp: judged from the fingerprints when both sides have one */
        if (la->fingerprint == NULL || lb->fingerprint == NULL) {
            snprintf(dl->note, sizeof dl->note, "a side has neither its tensor nor a "
                     "fingerprint");
            return 0;
        }
        struct gd_err merr = {0};
        int rc = gd__measure_sampled(dl, la, lb, d->atol, d->rtol, &merr);
        if (rc == 0) {
            dl->verdict = GD_VERDICT_UNKNOWN; /* measured; judged in verdict.c */
        } else if (rc == GD_EDTYPE) {
            snprintf(dl->note, sizeof dl->note, "%.150s", merr.msg);
        } else {
            if (err != NULL)
                *err = merr;
            return gd_err_prefix(err, "layer %s: ", la->name);
        }
        return 0;
    }
    struct gd_tensor *ta = NULL, *tb = NULL;
    int rc = w->a->load(w->a->user, dl->index_a, &ta, err);
    if (rc == 0)
        rc = w->b->load(w->b->user, dl->index_b, &tb, err);
    if (rc != 0) {
        gd_tensor_free(ta);
        return gd_err_prefix(err, "layer %s: ", la->name);
    }
    struct gd_err merr = {0};
    rc = measure(dl, ta, tb, d->atol, d->rtol, &merr);
    if (rc == 0) {
        dl->verdict = GD_VERDICT_UNKNOWN; /* measured; judged in verdict.c */
        if (w->truth != NULL)
            rc = gd__truth_layer(w, i, ta, tb, err);
    } else if (rc == GD_EDTYPE) {
        snprintf(dl->note, sizeof dl->note, "%.150s", merr.msg);
        rc = 0;
    } else {
        if (err != NULL)
            *err = merr;
        rc = gd_err_prefix(err, "layer %s: ", la->name);
    }
    gd_tensor_free(ta);
    gd_tensor_free(tb);
    return rc;
}

static _Atomic int measure_threads = 1;

int
gd_diff_set_threads(int threads)
{
    if (threads < 1 || threads > GD__POOL_MAX)
        return GD_EINVAL;
    measure_threads = threads;
    return 0;
}

struct measure_job {
    struct gd__work *w;
    int *rc;
    struct gd_err *err;
};

static void
measure_task(void *arg, int64_t task, int worker)
{
    (void)worker;
    struct measure_job *j = arg;
    j->rc[task] = measure_pair(j->w, (int)task, &j->err[task]);
}

int
gd__measure_all(struct gd__work *w, struct gd_err *err)
{
    struct gd_diff *d = w->d;
    int threads = measure_threads, rc = 0;
    if (threads > d->n_layers)
        threads = d->n_layers;
    struct gd__pool *pool = NULL;
    struct measure_job j = {w, NULL, NULL};
    if (threads > 1) {
        j.rc = calloc((size_t)d->n_layers, sizeof *j.rc);
        j.err = calloc((size_t)d->n_layers, sizeof *j.err);
        /* without the memory or the threads, the pairs are measured here, one by one */
        if (j.rc == NULL || j.err == NULL || gd__pool_new(threads, &pool, NULL) != 0)
            threads = 1;
    }
    if (threads <= 1) {
        for (int i = 0; i < d->n_layers && rc == 0; i++)
            rc = measure_pair(w, i, err);
    } else {
        gd__pool_run(pool, d->n_layers, measure_task, &j);
        /* the first failure in layer order, as the loop above would have stopped at */
        for (int i = 0; i < d->n_layers && rc == 0; i++)
            if ((rc = j.rc[i]) != 0 && err != NULL)
                *err = j.err[i];
    }
    gd__pool_free(pool);
    free(j.rc);
    free(j.err);
    for (int i = 0; i < d->n_layers && rc == 0; i++)
        d->n_sampled += d->layers[i].sampled;
    return rc;
}

/* ---- fp: a pair judged from fingerprints ---- */

/* The value v of dtype `from` as the comparison sees it in dtype `to` (a float64 side is
 * rounded to the other's float dtype, as gd__reconcile does). */
static double
as_compared(double v, enum gd_dtype from, enum gd_dtype to)
{
    if (from == to || !isfinite(v))
        return v;
    int64_t one[1] = {1};
    struct gd_tensor *t = gd_tensor_new(from, 1, one, NULL), *r = NULL;
    double out = v;
    if (from != GD_F64 || t == NULL) {
        gd_tensor_free(t);
        return v;
    }
    ((double *)t->data)[0] = v;
    if ((r = gd_tensor_cast(t, to, NULL)) != NULL)
        out = gd_tensor_get_f64(r, 0);
    gd_tensor_free(t);
    gd_tensor_free(r);
    return out;
}

int
gd__measure_sampled(struct gd_diff_layer *dl, const struct gd_bundle_layer *la,
                    const struct gd_bundle_layer *lb, double atol, double rtol,
                    struct gd_err *err)
{
    const struct gd_fingerprint *fa = la->fingerprint, *fb = lb->fingerprint;
    int64_t k[1] = {fa->n_samples};
    if (fb->n_samples != fa->n_samples || fa->count != fb->count)
        return gd_err_set(err, GD_EFORMAT, "the fingerprints sample %lld and %lld elements",
                          (long long)fa->n_samples, (long long)fb->n_samples);
    struct gd_tensor *sa = gd_tensor_wrap(fa->dtype, 1, k, (void *)fa->samples, err);
    struct gd_tensor *sb = gd_tensor_wrap(fb->dtype, 1, k, (void *)fb->samples, err);
    int rc = sa != NULL && sb != NULL ? measure(dl, sa, sb, atol, rtol, err) : GD_ENOMEM;
    gd_tensor_free(sa);
    gd_tensor_free(sb);
    if (rc != 0)
        return rc;
    dl->n_rows = 0;
    dl->rows_mismatch = 0;
    dl->m.count = fa->count;
    if (fa->dtype == fb->dtype && gd_fingerprint_same_hash(fa, fb)) {
        /* equal hashes: the tensors are equal, which no sample could show */
        dl->m.bitwise_equal = 1;
        dl->m.n_bits_differ = 0;
        return 0;
    }
    dl->sampled = 1;
    dl->n_sampled = fa->n_samples;
    dl->m.bitwise_equal = 0;
    dl->bound_from = "sample";
    double lb_abs = dl->m.abs_max;
    if (dl->m.abs_max_index >= 0)
        dl->m.abs_max_index = gd_fingerprint_sample_index(fa->ndim, fa->shape,
                                                          dl->m.abs_max_index);
    if (fa->has_stats && fb->has_stats) {
        /* a different count of NaNs or infinities puts one against a different value */
        int64_t dn = llabs(fa->nan_count - fb->nan_count);
        int64_t di = llabs(fa->inf_count - fb->inf_count);
        if (dn > dl->m.nan_disagree)
            dl->m.nan_disagree = dn;
        if (di > dl->m.inf_disagree)
            dl->m.inf_disagree = di;
        enum gd_dtype to = dl->dtype;
        double amin = as_compared(fa->min, fa->dtype, to), amax = as_compared(fa->max, fa->dtype, to);
        double bmin = as_compared(fb->min, fb->dtype, to), bmax = as_compared(fb->max, fb->dtype, to);
        double scale = fmax(fmax(fabs(amin), fabs(amax)), fmax(fabs(bmin), fabs(bmax)));
        if (scale > 0 && isfinite(scale))
            dl->scale = scale;
        if (fa->nan_count == 0 && fb->nan_count == 0 && fa->inf_count == 0 &&
            fb->inf_count == 0 && fa->count > 0) {
            /* every element finite: a's largest element at i has b_i <= max b, so
             * max |a-b| >= |max a - max b|; the same for the minima; a mean is an average
             * of differences; | |a| - |b| | <= |a-b|_2 <= sqrt(n) max |a-b| */
            double cand[2] = {fabs(amax - bmax), fabs(amin - bmin)};
            const char *from[2] = {"max", "min"};
            for (int i = 0; i < 2; i++)
                if (cand[i] > lb_abs) {
                    lb_abs = cand[i];
                    dl->bound_from = from[i];
                }
            if (fa->dtype == fb->dtype) {
                double n = (double)fa->count;
                double e = gd_fingerprint_sum_error(fa) + gd_fingerprint_sum_error(fb);
                double mean = (fabs(fa->sum - fb->sum) - e) / n;
                double la2 = sqrt(fa->sumsq), lb2 = sqrt(fb->sumsq);
                double l2 = (fabs(la2 - lb2) - 2 * e / sqrt(n) - 0x1p-50 * (la2 + lb2)) / sqrt(n);
                if (mean > lb_abs) {
                    lb_abs = mean;
                    dl->bound_from = "mean";
                }
                if (l2 > lb_abs) {
                    lb_abs = l2;
                    dl->bound_from = "l2";
                }
            }
        }
    }
    if (lb_abs > dl->m.abs_max)
        dl->m.abs_max_index = -1;
    dl->m.abs_max = lb_abs;
    dl->err = lb_abs / dl->scale;
    return 0;
}
