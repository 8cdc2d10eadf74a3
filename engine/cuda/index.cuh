/*
 * index.cuh: what the indexing and loss kernels share: reading int32/int64 indices, and the
 * check of indices computed at run time.
 *
 * Indices that are weights were checked at load (shape inference). Computed ones are
 * checked on the device before the op's kernels run: a kernel raises a flag for any value
 * outside its range (every thread that finds one writes the same 1, so no atomics are
 * needed and the outcome is the same in every run); the host waits for the flag and, when
 * it is set, copies the indices back to name the first bad one, with the CPU backends'
 * message. Only the error path copies the indices; the check costs one small copy and a
 * stream synchronization per op with computed indices.
 */
#ifndef GPUDIFF_INDEX_CUH
#define GPUDIFF_INDEX_CUH

#include <stdint.h>

#include "kernels.cuh"
#include "../core/move.h"

/* Element i of an int32 or int64 index tensor on the device. */
static __device__ __forceinline__ int64_t
gd__cuda_index_at(const void *p, int is32, int64_t i)
{
    return is32 ? (int64_t)((const int32_t *)p)[i] : ((const int64_t *)p)[i];
}

/*
 * What values are valid: element i must lie in [lo[i % period], hi[i % period]) (period 1:
 * one range for all), or equal `special` when has_special (a loss's ignore_index).
 */
struct gd__cuda_index_rule {
    int period;
    int64_t lo[GD_MAX_DIMS], hi[GD_MAX_DIMS];
    int has_special;
    int64_t special;
};

/* The rule for indices into axes of lengths len[0 .. period): [-len, len). */
static inline gd__cuda_index_rule
gd__cuda_index_rule_axes(const int64_t *len, int period)
{
    gd__cuda_index_rule r = {};
    r.period = period;
    for (int i = 0; i < period; i++) {
        r.lo[i] = -len[i];
        r.hi[i] = len[i];
    }
    return r;
}

/*
 * Checks the computed index tensor t (input `slot` of the node) against rule; returns 0,
 * GD_ERANGE naming the first bad value in the CPU backends' words (`what`: "index" or
 * "target"), or GD_EDEVICE. A weight (checked at load) and an empty tensor pass at once.
 */
#ifdef __cplusplus
extern "C" {
#endif
int gd__cuda_check_indices(const struct gd_op_call *c, int slot, const gd__cuda_index_rule *rule,
                           const char *what, struct gd_err *err);
#ifdef __cplusplus
}
#endif

#endif
