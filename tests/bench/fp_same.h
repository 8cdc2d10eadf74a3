/* fp_same.h: the first field where two fingerprints differ, bit for bit (fp_verify and
 * bench_fp_cuda: the CUDA kernels against the host definitions). */
#ifndef GPUDIFF_FP_SAME_H
#define GPUDIFF_FP_SAME_H

#include <math.h>
#include <string.h>

#include "gpudiff/fingerprint.h"
#include "gpudiff/tensor.h"

static inline int
fp_same_double(double a, double b)
{
    if (isnan(a) && isnan(b))
        return 1;
    return memcmp(&a, &b, sizeof a) == 0;
}

/* The name of the first field where a and b differ, or NULL when every field is the same. */
static inline const char *
fp_first_difference(const struct gd_fingerprint *a, const struct gd_fingerprint *b)
{
    if (a->count != b->count)
        return "count";
    if (memcmp(a->hash, b->hash, sizeof a->hash) != 0)
        return "hash";
    if (a->has_stats != b->has_stats)
        return "has_stats";
    if (a->has_stats) {
        if (!fp_same_double(a->min, b->min))
            return "min";
        if (!fp_same_double(a->max, b->max))
            return "max";
        if (!fp_same_double(a->sum, b->sum))
            return "sum";
        if (!fp_same_double(a->sumsq, b->sumsq))
            return "sumsq";
        if (a->nan_count != b->nan_count)
            return "nan";
        if (a->inf_count != b->inf_count)
            return "inf";
        if (memcmp(a->hist, b->hist, sizeof a->hist) != 0)
            return "hist";
    }
    if (a->n_samples != b->n_samples)
        return "n_samples";
    if (memcmp(a->samples, b->samples, (size_t)a->n_samples * gd_dtype_size(a->dtype)) != 0)
        return "samples";
    return NULL;
}

#endif
