/*
 * metrics.c: one pass over two tensors: error statistics, ULP and relative-error histograms,
 * tolerance counts, cosine and SQNR (definitions in docs/COMPARISON.md). This file holds the
 * API and picks the path: whole float32 blocks go to a vector kernel, the rest to the
 * scalar path (metrics_internal.h names the parts).
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "metrics_internal.h"

/* Adds the code counts of an update's fast blocks to the histograms. */
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
        gd__metrics_blocks_avx512(m, a, b, n_blocks, offset, t, blk, counts);
    else
#endif
        gd__metrics_blocks_portable(m, a, b, n_blocks, offset, t, blk, counts);
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
    gd__metrics_tol_make(m->dtype, m->atol, m->rtol, &t);
    int64_t done = m->dtype == GD_F32 ? f32_fast(m, a, b, n, offset, &t) : 0;
    size_t size = gd_dtype_size(m->dtype);
    gd__metrics_scalar_range(m, (const char *)a + (size_t)done * size,
                             (const char *)b + (size_t)done * size, n - done, offset + done, &t);
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
