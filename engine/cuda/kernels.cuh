/*
 * kernels.cuh: what the .cu op files share: launch geometry, the stride walk that
 * broadcasting and permutations use, and the entry-point convention.
 *
 * An entry point (extern "C" gd__cuda_<fn>) checks what it can only know at run time,
 * launches on the session's compute stream, checks the launch, and returns 0 or a GD_E*
 * code. Activations are float32 (the backend's compute dtype).
 */
#ifndef GPUDIFF_KERNELS_CUH
#define GPUDIFF_KERNELS_CUH

#include <stdint.h>

#include "cuda.h"

/* Threads per block for element-wise kernels, and a grid covering n elements with a
 * grid-stride loop (capped so huge tensors do not ask for absurd grids). */
#define GD_CUDA_THREADS 256

static inline unsigned
gd__cuda_blocks(int64_t n)
{
    int64_t b = (n + GD_CUDA_THREADS - 1) / GD_CUDA_THREADS;
    if (b < 1)
        b = 1;
    if (b > 65535LL * 8)
        b = 65535LL * 8;
    return (unsigned)b;
}

/* A tensor's walk: output shape and, per input, the element stride along each output axis
 * (0 where the input broadcasts). Passed to kernels by value. */
struct gd__cuda_walk {
    int ndim;
    int64_t shape[GD_MAX_DIMS];
    int64_t stride[4][GD_MAX_DIMS];
};

/* Offsets of output element i in up to four inputs of a walk. */
static __device__ __forceinline__ void
gd__cuda_walk_offsets(const gd__cuda_walk &w, int64_t i, int n_in, int64_t *off)
{
    for (int k = 0; k < n_in; k++)
        off[k] = 0;
    for (int d = w.ndim - 1; d >= 0; d--) {
        int64_t idx = i % w.shape[d];
        i /= w.shape[d];
        for (int k = 0; k < n_in; k++)
            off[k] += idx * w.stride[k][d];
    }
}

/* The same in 32-bit arithmetic, for walks gd__cuda_walk_fits32() accepts: a 64-bit
 * division is a long software sequence on the GPU, a 32-bit one a few instructions. */
static __device__ __forceinline__ void
gd__cuda_walk_offsets32(const gd__cuda_walk &w, uint32_t i, int n_in, uint32_t *off)
{
    for (int k = 0; k < n_in; k++)
        off[k] = 0;
    for (int d = w.ndim - 1; d > 0; d--) {
        uint32_t len = (uint32_t)w.shape[d];
        uint32_t idx = i % len;
        i /= len;
        for (int k = 0; k < n_in; k++)
            off[k] += idx * (uint32_t)w.stride[k][d];
    }
    /* what is left of i is the outermost index: i < n, so no division */
    for (int k = 0; w.ndim > 0 && k < n_in; k++)
        off[k] += i * (uint32_t)w.stride[k][0];
}

/*
 * Rewrites a walk over n_in inputs into the fewest axes that visit the same offsets in the
 * same order: axes of length 1 go, and an axis merges into the next inner one when every
 * input steps along it by the inner axis' stride times the inner length (contiguous
 * together, or broadcast along both). (N, C, H, W) times (1, C, 1, 1) becomes two axes.
 */
static inline void
gd__cuda_walk_coalesce(gd__cuda_walk *w, int n_in)
{
    int m = 0;
    for (int d = 0; d < w->ndim; d++) {
        if (w->shape[d] == 1)
            continue;
        w->shape[m] = w->shape[d];
        for (int k = 0; k < n_in; k++)
            w->stride[k][m] = w->stride[k][d];
        m++;
    }
    w->ndim = m;
    for (int d = w->ndim - 2; d >= 0; d--) {
        int merge = 1;
        for (int k = 0; k < n_in; k++)
            merge &= w->stride[k][d] == w->stride[k][d + 1] * w->shape[d + 1];
        if (!merge)
            continue;
        w->shape[d] *= w->shape[d + 1];
        for (int k = 0; k < n_in; k++)
            w->stride[k][d] = w->stride[k][d + 1];
        for (int e = d + 1; e + 1 < w->ndim; e++) {
            w->shape[e] = w->shape[e + 1];
            for (int k = 0; k < n_in; k++)
                w->stride[k][e] = w->stride[k][e + 1];
        }
        w->ndim--;
    }
}

/* 1 when n elements and every input's largest offset fit 32-bit unsigned arithmetic. */
static inline int
gd__cuda_walk_fits32(const gd__cuda_walk *w, int n_in, int64_t n)
{
    if (n > (int64_t)INT32_MAX)
        return 0;
    for (int k = 0; k < n_in; k++) {
        int64_t last = 0;
        for (int d = 0; d < w->ndim; d++)
            last += (w->shape[d] - 1) * w->stride[k][d];
        if (last > (int64_t)INT32_MAX)
            return 0;
    }
    return 1;
}

/* Fills the strides of input t along the axes of output y (numpy broadcasting). */
static inline void
gd__cuda_bcast_strides(const struct gd_tensor *t, const struct gd_tensor *y, int64_t *stride)
{
    int64_t s = 1;
    for (int i = y->ndim - 1; i >= 0; i--) {
        int ti = i - (y->ndim - t->ndim);
        int64_t d = ti >= 0 ? t->shape[ti] : 1;
        stride[i] = d == 1 ? 0 : s;
        s *= d;
    }
}

/* Geometry of an (N, C, W), (N, C, H, W) or (N, C, D, H, W) tensor as (N, C, D, H, W), the
 * missing leading spatial sizes 1 (as struct gd_params holds spatial attributes). */
struct gd__cuda_ncdhw {
    int64_t n, c, d, h, w;
};

static inline gd__cuda_ncdhw
gd__cuda_ncdhw_of(const struct gd_tensor *t)
{
    int ns = t->ndim - 2;
    gd__cuda_ncdhw g = {t->shape[0], t->shape[1], ns >= 3 ? t->shape[t->ndim - 3] : 1,
                        ns >= 2 ? t->shape[t->ndim - 2] : 1, t->shape[t->ndim - 1]};
    return g;
}

/*
 * y = a op b for integer or bool data with broadcasting, through engine/core/elt_rules.h:
 * op a gd__int_op, or with cmp a gd__cmp_op giving bool. y is c->out[0]; a may be y itself
 * (a fold). Defined in op_eltwise.cu; op_logic.cu uses it for And, Or, Xor and BitShift.
 */
int gd__cuda_int_binary(struct gd_op_call *c, const struct gd_tensor *a, const struct gd_tensor *b,
                        int op, int cmp, struct gd_err *err);

#endif
