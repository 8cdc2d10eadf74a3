/*
 * index_rules.h: the index arithmetic of windows and padding that the CPU backends and the
 * CUDA kernels share, so both read the same inputs for every output (ONNX's rules, stated
 * once). Compiled as host code by the C compiler and as host and device code by nvcc.
 */
#ifndef GPUDIFF_CORE_INDEX_RULES_H
#define GPUDIFF_CORE_INDEX_RULES_H

#include <stdint.h>

#include "gpudiff/ops.h"

#ifdef __CUDACC__
#define GD_INDEX_FN static __host__ __device__ __forceinline__
#else
#define GD_INDEX_FN static inline
#endif

/*
 * The taps t of window o (stride s, dilation d, k taps, pad before) that fall inside an
 * input of length in, 0 <= o*s - pad + t*d < in, as [*lo, *hi).
 */
GD_INDEX_FN void
gd__window_taps(int64_t o, int64_t s, int64_t d, int64_t k, int64_t pad, int64_t in, int64_t *lo,
                int64_t *hi)
{
    int64_t start = o * s - pad;
    int64_t t0 = 0, t1 = k;
    while (t0 < k && start + t0 * d < 0)
        t0++;
    while (t1 > t0 && start + (t1 - 1) * d >= in)
        t1--;
    *lo = t0;
    *hi = t1;
}

/*
 * The taps of window o (stride s, k taps) inside the padded input [-pad_b, in + pad_e):
 * AveragePool's divisor with count_include_pad.
 */
GD_INDEX_FN int64_t
gd__window_padded_count(int64_t o, int64_t s, int64_t k, int64_t pad_b, int64_t pad_e, int64_t in)
{
    int64_t start = o * s - pad_b, end = start + k;
    if (start < -pad_b)
        start = -pad_b;
    if (end > in + pad_e)
        end = in + pad_e;
    return end - start;
}

/* Pad: the source index along one axis for output index o, or -1 for the constant value. */
GD_INDEX_FN int64_t
gd__pad_source(enum gd_pad_mode mode, int64_t o, int64_t before, int64_t len)
{
    int64_t i = o - before;
    if (i >= 0 && i < len)
        return i;
    switch (mode) {
    case GD_PAD_CONSTANT:
        return -1;
    case GD_PAD_EDGE:
        return i < 0 ? 0 : len - 1;
    case GD_PAD_REFLECT:
        /* pads are smaller than len (checked at load), so one reflection suffices */
        return i < 0 ? -i : 2 * (len - 1) - i;
    }
    return -1;
}

#endif
