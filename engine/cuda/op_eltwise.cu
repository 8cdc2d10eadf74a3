/* op_eltwise.cu: binary, variadic and comparison pointwise ops with numpy broadcasting on the
 * GPU, with the NaN rules of engine/cpu/op_eltwise.c. */
#include <stdint.h>

#include "kernels.cuh"

/*
 * Each output element is one IEEE operation on loaded values (powf aside), so nothing here
 * can be fused into an FMA and Add, Sub, Mul, Div (prec-div, the default) and PRelu round as
 * the CPU does.
 */

struct f_add {
    __device__ float operator()(float a, float b) const
    {
        return a + b;
    }
};
struct f_sub {
    __device__ float operator()(float a, float b) const
    {
        return a - b;
    }
};
struct f_mul {
    __device__ float operator()(float a, float b) const
    {
        return a * b;
    }
};
struct f_div {
    __device__ float operator()(float a, float b) const
    {
        return a / b;
    }
};
struct f_pow {
    __device__ float operator()(float a, float b) const
    {
        return powf(a, b);
    }
};
/* NaN propagates (numpy's maximum/minimum): a NaN a wins, and a NaN b wins by the comparison
 * failing. On a tie (including -0 against +0) b is taken, as on the CPU. */
struct f_max {
    __device__ float operator()(float a, float b) const
    {
        return isnan(a) || a > b ? a : b;
    }
};
struct f_min {
    __device__ float operator()(float a, float b) const
    {
        return isnan(a) || a < b ? a : b;
    }
};
struct f_prelu {
    __device__ float operator()(float a, float b) const
    {
        return a < 0.f ? b * a : a;
    }
};
/* Comparisons with NaN are false. The output is bool: one byte, 0 or 1. */
struct f_greater {
    __device__ uint8_t operator()(float a, float b) const
    {
        return a > b;
    }
};
struct f_less {
    __device__ uint8_t operator()(float a, float b) const
    {
        return a < b;
    }
};
struct f_equal {
    __device__ uint8_t operator()(float a, float b) const
    {
        return a == b;
    }
};

/* ---- two inputs ---- */

/* Inputs of the output's shape: no index arithmetic. */
template <class T, class F>
static __global__ void
binary_same_kernel(const float *a, const float *b, T *y, int64_t n, F f)
{
    int64_t step = (int64_t)gridDim.x * blockDim.x;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += step)
        y[i] = f(a[i], b[i]);
}

template <class T, class F>
static __global__ void
binary_walk_kernel(const float *a, const float *b, T *y, int64_t n, gd__cuda_walk w, F f)
{
    int64_t step = (int64_t)gridDim.x * blockDim.x;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += step) {
        int64_t off[2];
        gd__cuda_walk_offsets(w, i, 2, off);
        y[i] = f(a[off[0]], b[off[1]]);
    }
}

/* With broadcasting an input has fewer elements than the output; with as many, its shape is
 * the output's (every axis is equal or 1, none of them 0 when the output is not empty). */
static int
same_shape(const struct gd_tensor *t, int64_t n)
{
    return gd_tensor_numel(t) == n;
}

template <class T, class F>
static int
binary_launch(struct gd_op_call *c, F f, struct gd_err *err)
{
    struct gd__cuda_ctx *ctx = gd__cuda_ctx_of(c);
    const struct gd_tensor *y = c->out[0];
    const float *a = (const float *)c->in[0]->data, *b = (const float *)c->in[1]->data;
    T *out = (T *)y->data;
    int64_t n = gd_tensor_numel(y);
    gd__cuda_walk w;
    int rc = 0;
    if (n == 0)
        return 0;
    if (same_shape(c->in[0], n) && same_shape(c->in[1], n)) {
        binary_same_kernel<<<gd__cuda_blocks(n), GD_CUDA_THREADS, 0, ctx->compute>>>(a, b, out, n,
                                                                                     f);
    } else {
        w.ndim = y->ndim;
        for (int d = 0; d < y->ndim; d++)
            w.shape[d] = y->shape[d];
        gd__cuda_bcast_strides(c->in[0], y, w.stride[0]);
        gd__cuda_bcast_strides(c->in[1], y, w.stride[1]);
        binary_walk_kernel<<<gd__cuda_blocks(n), GD_CUDA_THREADS, 0, ctx->compute>>>(a, b, out, n,
                                                                                     w, f);
    }
    GD_CUDA_CHECK_LAUNCH();
done:
    return rc;
}

/* ---- Max and Min: up to 8 inputs in one pass ---- */

#define VARIADIC_MAX_INPUTS 8

/* The inputs and, per input, its element stride along each output axis (0 where it
 * broadcasts). Passed by value (about 650 bytes, inside the 4 KiB kernel parameter limit). */
struct variadic_args {
    int n_in;
    int ndim;
    int all_same; /* every input has the output's shape */
    int64_t shape[GD_MAX_DIMS];
    int64_t stride[VARIADIC_MAX_INPUTS][GD_MAX_DIMS];
    const float *in[VARIADIC_MAX_INPUTS];
};

/*
 * y = f(...f(f(in0, in1), in2)..., in_last): the CPU's left-to-right fold, so the NaN that
 * wins and the zero kept on a -0/+0 tie are the same. One input gives in0 itself, which is
 * what the CPU's f(in0, in0) gives too.
 */
template <class F>
static __global__ void
variadic_kernel(variadic_args args, float *y, int64_t n, F f)
{
    int64_t step = (int64_t)gridDim.x * blockDim.x;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += step) {
        int64_t off[VARIADIC_MAX_INPUTS];
        if (args.all_same) {
            for (int k = 0; k < args.n_in; k++)
                off[k] = i;
        } else {
            for (int k = 0; k < args.n_in; k++)
                off[k] = 0;
            int64_t rest = i;
            for (int d = args.ndim - 1; d >= 0; d--) {
                int64_t idx = rest % args.shape[d];
                rest /= args.shape[d];
                for (int k = 0; k < args.n_in; k++)
                    off[k] += idx * args.stride[k][d];
            }
        }
        float acc = args.in[0][off[0]];
        for (int k = 1; k < args.n_in; k++)
            acc = f(acc, args.in[k][off[k]]);
        y[i] = acc;
    }
}

template <class F>
static int
variadic_launch(struct gd_op_call *c, F f, struct gd_err *err)
{
    struct gd__cuda_ctx *ctx = gd__cuda_ctx_of(c);
    const struct gd_tensor *y = c->out[0];
    int64_t n = gd_tensor_numel(y);
    variadic_args args;
    int rc = 0;
    if (c->n_in < 1 || c->n_in > VARIADIC_MAX_INPUTS)
        return gd_err_set(err, GD_EINVAL, "%d inputs; 1 to %d are supported", c->n_in,
                          VARIADIC_MAX_INPUTS);
    if (n == 0)
        return 0;
    args.n_in = c->n_in;
    args.ndim = y->ndim;
    args.all_same = 1;
    for (int d = 0; d < y->ndim; d++)
        args.shape[d] = y->shape[d];
    for (int k = 0; k < c->n_in; k++) {
        args.in[k] = (const float *)c->in[k]->data;
        args.all_same = args.all_same && same_shape(c->in[k], n);
        gd__cuda_bcast_strides(c->in[k], y, args.stride[k]);
    }
    variadic_kernel<<<gd__cuda_blocks(n), GD_CUDA_THREADS, 0, ctx->compute>>>(
        args, (float *)y->data, n, f);
    GD_CUDA_CHECK_LAUNCH();
done:
    return rc;
}

/* ---- entry points ---- */

extern "C" int
gd__cuda_add(struct gd_op_call *c, struct gd_err *err)
{
    return binary_launch<float>(c, f_add{}, err);
}

extern "C" int
gd__cuda_sub(struct gd_op_call *c, struct gd_err *err)
{
    return binary_launch<float>(c, f_sub{}, err);
}

extern "C" int
gd__cuda_mul(struct gd_op_call *c, struct gd_err *err)
{
    return binary_launch<float>(c, f_mul{}, err);
}

extern "C" int
gd__cuda_div(struct gd_op_call *c, struct gd_err *err)
{
    return binary_launch<float>(c, f_div{}, err);
}

extern "C" int
gd__cuda_pow(struct gd_op_call *c, struct gd_err *err)
{
    return binary_launch<float>(c, f_pow{}, err);
}

extern "C" int
gd__cuda_prelu(struct gd_op_call *c, struct gd_err *err)
{
    return binary_launch<float>(c, f_prelu{}, err);
}

extern "C" int
gd__cuda_max(struct gd_op_call *c, struct gd_err *err)
{
    return variadic_launch(c, f_max{}, err);
}

extern "C" int
gd__cuda_min(struct gd_op_call *c, struct gd_err *err)
{
    return variadic_launch(c, f_min{}, err);
}

extern "C" int
gd__cuda_greater(struct gd_op_call *c, struct gd_err *err)
{
    return binary_launch<uint8_t>(c, f_greater{}, err);
}

extern "C" int
gd__cuda_less(struct gd_op_call *c, struct gd_err *err)
{
    return binary_launch<uint8_t>(c, f_less{}, err);
}

extern "C" int
gd__cuda_equal(struct gd_op_call *c, struct gd_err *err)
{
    return binary_launch<uint8_t>(c, f_equal{}, err);
}
