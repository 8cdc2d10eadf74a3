/*
 * resize_rules.h: where Resize and Upsample read each output element from (ONNX's coordinate
 * transformations, nearest modes, linear and cubic weights), computed once per call on the
 * host in exact rational arithmetic and shared by the CPU backends and the CUDA kernels, so
 * both read the same inputs with the same weights for every output.
 *
 * An output index o of a resized axis maps to the source coordinate x = N / D, a rational
 * computed exactly from the op's scale (itself exact: a float32 scale's value, or output /
 * input size), the roi's float32 values and o (resize_rules.c gives the formulas). From x:
 *   nearest: one index by nearest_mode, clamped into [0, in - 1];
 *   linear:  x clamped into [0, in - 1], taps floor(x) and floor(x) + 1 (clamped), weights
 *            1 - t and t, t = x - floor(x);
 *   cubic:   taps floor(x) - 1 .. floor(x) + 2, weights the Keys kernel of cubic_coeff_a at
 *            1 + t, t, 1 - t, 2 - t (factored: A t (1-t)^2, (1-t)(1 + t - (A+2) t^2),
 *            t (1 + (1-t) - (A+2)(1-t)^2), A (1-t) t^2); out-of-range taps read the edge, or
 *            with exclude_outside get weight 0 and the others are divided by their sum.
 * The weights are evaluated in long double from t and 1 - t (each exact to 2^-64 relative)
 * and rounded once to float and to double. With tf_crop_and_resize a coordinate outside
 * [0, in - 1] gives no taps (index -1): the output is extrapolation_value.
 */
#ifndef GPUDIFF_CORE_RESIZE_RULES_H
#define GPUDIFF_CORE_RESIZE_RULES_H

#include <stdint.h>

#include "internal.h"

#ifdef __cplusplus
extern "C" {
#endif

/* One resized axis: per output index o, `taps` input indices and weights. */
struct gd__resize_axis {
    int axis;              /* the tensor's axis */
    int64_t out_len;
    int64_t *index;        /* out_len x taps; -1 (every tap): extrapolation_value */
    float *weight32;       /* out_len x taps; NULL for nearest */
    double *weight64;
};

/* The resized axes of one call (those whose mapping is not the identity), ascending. */
struct gd__resize_plan {
    int n_axes;
    int taps;              /* per axis: 1 nearest, 2 linear, 4 cubic */
    struct gd__resize_axis axis[GD_MAX_DIMS];
    void *mem;             /* everything above points into it */
    size_t mem_bytes;
};

/* Makes the plan for input shape in and output shape out (ndim dims). GD_ENOMEM, or
 * GD_ENOTSUP when a coordinate does not fit 128-bit arithmetic. */
int gd__resize_plan_make(const struct gd_params *p, int ndim, const int64_t *in,
                         const int64_t *out, struct gd__resize_plan *plan, struct gd_err *err);

void gd__resize_plan_free(struct gd__resize_plan *plan);

/* 1 when axis a (input length in_len, output out_len) maps every o to o itself exactly, so
 * that it needs no taps; 0 otherwise, < 0 (a GD_E* code) when the arithmetic overflows. */
int gd__resize_axis_identity(const struct gd_params *p, int a, int64_t in_len, int64_t out_len);

/* A float32 value (given as double) as an exact fraction num / den, den a power of two;
 * GD_ENOTSUP when it does not fit 64-bit integers (|v| below 2^-62 or above 2^62). */
int gd__resize_exact_fraction(double v, int64_t *num, int64_t *den);

#ifdef __cplusplus
}
#endif
#endif
