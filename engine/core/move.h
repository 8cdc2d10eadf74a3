/*
 * move.h: what the CPU backends and the CUDA kernels share for data movement and indexing:
 * a copy plan (an affine walk of the source in the output's C order) built once, in
 * engine/core/move.c, for Slice, Split, Expand, Tile, DepthToSpace and SpaceToDepth, and the
 * index rules of the indexing ops. Both sides follow the same plan and the same rules, so
 * they move the same elements by construction. Compiled as host code by the C compiler and
 * as host and device code by nvcc.
 */
#ifndef GPUDIFF_CORE_MOVE_H
#define GPUDIFF_CORE_MOVE_H

#include <stdint.h>

#include "gpudiff/ops.h"
#include "gpudiff/tensor.h"

#ifdef __CUDACC__
#define GD_MOVE_FN static __host__ __device__ __forceinline__
#else
#define GD_MOVE_FN static inline
#endif

#ifdef __cplusplus
extern "C" {
#endif

/*
 * Slice on one axis of length dim, step not 0 (ONNX's Slice; its reference implementation is
 * numpy's slicing, onnx.reference's op_slice): a negative start or end counts from the end
 * (dim added), then start and end are clamped to [0, dim] for a positive step and to
 * [-1, dim - 1] for a negative one (a start still below 0 then selects nothing, as in numpy:
 * range(5)[-10:-20:-1] is empty; the spec's prose, which clamps such a start to 0, would
 * take element 0). *first gets the first index taken (0 when none is), the result the count.
 * Exact for any int64 bounds and steps (INT64_MIN too): shape inference and the folds use it
 * alike (tests/engine/check_fold.c, slice_rule).
 */
GD_MOVE_FN int64_t
gd__slice_axis(int64_t dim, int64_t start, int64_t end, int64_t step, int64_t *first)
{
    if (start < 0)
        start += dim;
    if (end < 0)
        end += dim;
    int64_t count;
    if (step > 0) {
        start = start < 0 ? 0 : start > dim ? dim : start;
        end = end < 0 ? 0 : end > dim ? dim : end;
        /* ceil(span / step) as (span - 1) / step + 1: no sum that could overflow */
        count = end > start ? (end - start - 1) / step + 1 : 0;
    } else {
        start = start < 0 ? -1 : start > dim - 1 ? dim - 1 : start;
        end = end < -1 ? -1 : end > dim - 1 ? dim - 1 : end;
        /* C's division truncates, so for step < 0, (span - 1) / step is -ceil's part; no -step
         * (step may be INT64_MIN) */
        count = start > end ? 1 - (start - end - 1) / step : 0;
    }
    *first = count > 0 ? start : 0;
    return count;
}

/* Tile walks a (repeat, dimension) pair per axis. */
#define GD__MOVE_MAX_DIMS (2 * GD_MAX_DIMS)

/*
 * Output element i (C order over shape) is source element offset + sum idx_d * stride[d],
 * idx the multi-index of i. Strides may be 0 (broadcast) or negative (Slice's negative
 * steps). After gd__move_simplify no axis has length 1 and no two neighbours merge.
 */
struct gd__move {
    int ndim;
    int64_t shape[GD__MOVE_MAX_DIMS];
    int64_t stride[GD__MOVE_MAX_DIMS];
    int64_t offset;
};

/* Slice of x by params' slice_start and slice_step into y's shape. */
void gd__move_slice(const struct gd_tensor *x, const struct gd_params *p,
                    const struct gd_tensor *y, struct gd__move *m);

/* Split: part y of x, starting at `first` along axis. */
void gd__move_split(const struct gd_tensor *x, int64_t axis, int64_t first,
                    const struct gd_tensor *y, struct gd__move *m);

/* Expand: x broadcast (numpy) into y's shape. */
void gd__move_expand(const struct gd_tensor *x, const struct gd_tensor *y, struct gd__move *m);

/* Tile: y's dimension d is repeats x x's, the repeats outer. */
void gd__move_tile(const struct gd_tensor *x, const struct gd_tensor *y, struct gd__move *m);

/* DepthToSpace (DCR or CRD) and SpaceToDepth with params' blocksize. */
void gd__move_depth_to_space(const struct gd_tensor *x, const struct gd_params *p,
                             const struct gd_tensor *y, struct gd__move *m);
void gd__move_space_to_depth(const struct gd_tensor *x, const struct gd_params *p,
                             const struct gd_tensor *y, struct gd__move *m);

/* Drops axes of length 1 and merges neighbours that walk the source contiguously. */
void gd__move_simplify(struct gd__move *m);

/* C-order element strides of a tensor's shape. */
void gd__strides_of(const struct gd_tensor *t, int64_t *stride);

#ifdef __cplusplus
}
#endif

/* An index into an axis of length len, negative counting from the end: the position in
 * [0, len), or -1 when out of range. */
GD_MOVE_FN int64_t
gd__index_fix(int64_t v, int64_t len)
{
    if (v < 0)
        v += len;
    return v >= 0 && v < len ? v : -1;
}

/*
 * Trilu: whether element (row, col) of a matrix is kept: upper keeps col - row >= k, lower
 * col - row <= k.
 */
GD_MOVE_FN int
gd__trilu_keeps(int64_t row, int64_t col, int64_t k, int upper)
{
    return upper ? col - row >= k : col - row <= k;
}

#endif
