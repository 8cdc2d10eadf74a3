/* op_eltwise.cu: binary, variadic and comparison pointwise ops with numpy broadcasting on the
 * GPU, with the NaN rules of engine/cpu/op_eltwise.c; integer data through the rules of
 * engine/core/elt_rules.h, which the CPU shares. */
#include <stdint.h>

#include "../core/elt_rules.h"
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
struct f_greater_eq {
    __device__ uint8_t operator()(float a, float b) const
    {
        return a >= b;
    }
};
struct f_less_eq {
    __device__ uint8_t operator()(float a, float b) const
    {
        return a <= b;
    }
};
/* Mod with fmod=1: C's fmod, exact (0 ulp in CUDA's table), as the CPU's fmodf. */
struct f_fmod {
    __device__ float operator()(float a, float b) const
    {
        return fmodf(a, b);
    }
};

/* ---- two inputs ---- */

/* Inputs of the output's shape: no index arithmetic. With vec4 (float output, every
 * pointer 16-byte aligned) the body moves as float4 and the last n % 4 elements one by one;
 * each element gets the same one operation either way. */
template <class T, class F>
static __global__ void
binary_same_kernel(const float *a, const float *b, T *y, int64_t n, int vec4, F f)
{
    int64_t step = (int64_t)gridDim.x * blockDim.x;
    int64_t first = (int64_t)blockIdx.x * blockDim.x + threadIdx.x, head = 0;
    if (vec4) {
        int64_t n4 = n / 4;
        const float4 *a4 = (const float4 *)a, *b4 = (const float4 *)b;
        float4 *y4 = (float4 *)y;
        for (int64_t i = first; i < n4; i += step) {
            float4 u = a4[i], v = b4[i], r;
            r.x = f(u.x, v.x);
            r.y = f(u.y, v.y);
            r.z = f(u.z, v.z);
            r.w = f(u.w, v.w);
            y4[i] = r;
        }
        head = n4 * 4;
    }
    for (int64_t i = head + first; i < n; i += step)
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

template <class T, class F>
static __global__ void
binary_walk32_kernel(const float *a, const float *b, T *y, uint32_t n, gd__cuda_walk w, F f)
{
    uint32_t step = gridDim.x * blockDim.x;
    for (uint32_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += step) {
        uint32_t off[2];
        gd__cuda_walk_offsets32(w, i, 2, off);
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
        int vec4 = sizeof(T) == 4 && (uintptr_t)a % 16 == 0 && (uintptr_t)b % 16 == 0 &&
                   (uintptr_t)out % 16 == 0;
        binary_same_kernel<<<gd__cuda_blocks(vec4 ? (n + 3) / 4 : n), GD_CUDA_THREADS, 0,
                             ctx->compute>>>(a, b, out, n, vec4, f);
    } else {
        w.ndim = y->ndim;
        for (int d = 0; d < y->ndim; d++)
            w.shape[d] = y->shape[d];
        gd__cuda_bcast_strides(c->in[0], y, w.stride[0]);
        gd__cuda_bcast_strides(c->in[1], y, w.stride[1]);
        gd__cuda_walk_coalesce(&w, 2);
        if (gd__cuda_walk_fits32(&w, 2, n))
            binary_walk32_kernel<<<gd__cuda_blocks(n), GD_CUDA_THREADS, 0, ctx->compute>>>(
                a, b, out, (uint32_t)n, w, f);
        else
            binary_walk_kernel<<<gd__cuda_blocks(n), GD_CUDA_THREADS, 0, ctx->compute>>>(
                a, b, out, n, w, f);
    }
    GD_CUDA_CHECK_LAUNCH();
done:
    return rc;
}

/* ---- integer (and bool) data: elt_rules.h element by element ---- */

static __global__ void
int_binary_kernel(const void *a, const void *b, void *y, int64_t n, gd__cuda_walk w,
                  enum gd_dtype dt, int op, int cmp)
{
    int uns = gd__dtype_unsigned(dt), bits = gd__dtype_bits(dt);
    int64_t step = (int64_t)gridDim.x * blockDim.x;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += step) {
        int64_t off[2];
        gd__cuda_walk_offsets(w, i, 2, off);
        int64_t va = gd__int_load(dt, a, off[0]), vb = gd__int_load(dt, b, off[1]);
        if (cmp)
            ((uint8_t *)y)[i] = (uint8_t)gd__int_compare(op, va, vb, uns);
        else
            gd__int_store(dt, y, i, gd__int_binary(op, va, vb, uns, bits));
    }
}

int
gd__cuda_int_binary(struct gd_op_call *c, const struct gd_tensor *a, const struct gd_tensor *b,
                    int op, int cmp, struct gd_err *err)
{
    struct gd__cuda_ctx *ctx = gd__cuda_ctx_of(c);
    const struct gd_tensor *y = c->out[0];
    int64_t n = gd_tensor_numel(y);
    gd__cuda_walk w;
    int rc = 0;
    if (n == 0)
        return 0;
    w.ndim = y->ndim;
    for (int d = 0; d < y->ndim; d++)
        w.shape[d] = y->shape[d];
    gd__cuda_bcast_strides(a, y, w.stride[0]);
    gd__cuda_bcast_strides(b, y, w.stride[1]);
    int_binary_kernel<<<gd__cuda_blocks(n), GD_CUDA_THREADS, 0, ctx->compute>>>(
        a->data, b->data, y->data, n, w, a->dtype, op, cmp);
    GD_CUDA_CHECK_LAUNCH();
done:
    return rc;
}

/* Integers: an op of elt_rules.h on both inputs; floats: f. */
template <class F>
static int
arith_launch(struct gd_op_call *c, F f, int int_op, struct gd_err *err)
{
    if (c->in[0]->dtype != GD_F32)
        return gd__cuda_int_binary(c, c->in[0], c->in[1], int_op, 0, err);
    return binary_launch<float>(c, f, err);
}

template <class F>
static int
compare_launch(struct gd_op_call *c, F f, int cmp_op, struct gd_err *err)
{
    if (c->in[0]->dtype != GD_F32)
        return gd__cuda_int_binary(c, c->in[0], c->in[1], cmp_op, 1, err);
    return binary_launch<uint8_t>(c, f, err);
}

/* ---- Max, Min, Sum, Mean: up to 8 inputs per pass ---- */

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
variadic_kernel(variadic_args args, float *y, int64_t n, F f, float divisor)
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
        y[i] = divisor != 0.f ? __fdiv_rn(acc, divisor) : acc;
    }
}

/*
 * y = the left-to-right fold of inputs [first, first + count) (with y itself first when
 * `first` > 0: the fold so far), divided by `divisor` when it is not 0 (Mean).
 */
template <class F>
static int
variadic_pass(struct gd_op_call *c, int first, int count, F f, float divisor, struct gd_err *err)
{
    struct gd__cuda_ctx *ctx = gd__cuda_ctx_of(c);
    const struct gd_tensor *y = c->out[0];
    int64_t n = gd_tensor_numel(y);
    variadic_args args;
    int rc = 0;
    args.n_in = 0;
    args.ndim = y->ndim;
    args.all_same = 1;
    for (int d = 0; d < y->ndim; d++)
        args.shape[d] = y->shape[d];
    if (first > 0) { /* the fold so far, in y */
        args.in[0] = (const float *)y->data;
        gd__cuda_bcast_strides(y, y, args.stride[0]);
        args.n_in = 1;
    }
    for (int k = first; k < first + count; k++) {
        args.in[args.n_in] = (const float *)c->in[k]->data;
        args.all_same = args.all_same && same_shape(c->in[k], n);
        gd__cuda_bcast_strides(c->in[k], y, args.stride[args.n_in]);
        args.n_in++;
    }
    variadic_kernel<<<gd__cuda_blocks(n), GD_CUDA_THREADS, 0, ctx->compute>>>(
        args, (float *)y->data, n, f, divisor);
    GD_CUDA_CHECK_LAUNCH();
done:
    return rc;
}

/*
 * Folds every input left to right: the first 8 in one pass, then y and the next 7, and so
 * on. Each pass stores the fold as float, which is what the CPU's pairwise loop does after
 * every input, so the order and the roundings are the CPU's for any number of inputs.
 * Integer data (Max, Min) folds pair by pair through elt_rules.h.
 */
template <class F>
static int
variadic_launch(struct gd_op_call *c, F f, int int_op, int mean, struct gd_err *err)
{
    int64_t n = gd_tensor_numel(c->out[0]);
    int rc = 0;
    if (c->n_in < 1)
        return gd_err_set(err, GD_EINVAL, "%s needs an input", gd_op_name(c->node->op));
    if (n == 0)
        return 0;
    if (c->in[0]->dtype != GD_F32) {
        rc = gd__cuda_int_binary(c, c->in[0], c->n_in > 1 ? c->in[1] : c->in[0], int_op, 0, err);
        for (int k = 2; k < c->n_in && rc == 0; k++)
            rc = gd__cuda_int_binary(c, c->out[0], c->in[k], int_op, 0, err);
        return rc;
    }
    int first = 0;
    while (rc == 0 && first < c->n_in) {
        int room = first == 0 ? VARIADIC_MAX_INPUTS : VARIADIC_MAX_INPUTS - 1;
        int count = c->n_in - first < room ? c->n_in - first : room;
        int last = first + count == c->n_in;
        rc = variadic_pass(c, first, count, f, last && mean ? (float)c->n_in : 0.f, err);
        first += count;
    }
    return rc;
}

/* ---- entry points ---- */

extern "C" int
gd__cuda_add(struct gd_op_call *c, struct gd_err *err)
{
    return arith_launch(c, f_add{}, GD_IOP_ADD, err);
}

extern "C" int
gd__cuda_sub(struct gd_op_call *c, struct gd_err *err)
{
    return arith_launch(c, f_sub{}, GD_IOP_SUB, err);
}

extern "C" int
gd__cuda_mul(struct gd_op_call *c, struct gd_err *err)
{
    return arith_launch(c, f_mul{}, GD_IOP_MUL, err);
}

extern "C" int
gd__cuda_div(struct gd_op_call *c, struct gd_err *err)
{
    return arith_launch(c, f_div{}, GD_IOP_DIV, err);
}

extern "C" int
gd__cuda_mod(struct gd_op_call *c, struct gd_err *err)
{
    return arith_launch(c, f_fmod{}, c->params->fmod ? GD_IOP_FMOD : GD_IOP_MOD, err);
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
    return variadic_launch(c, f_max{}, GD_IOP_MAX, 0, err);
}

extern "C" int
gd__cuda_min(struct gd_op_call *c, struct gd_err *err)
{
    return variadic_launch(c, f_min{}, GD_IOP_MIN, 0, err);
}

extern "C" int
gd__cuda_sum(struct gd_op_call *c, struct gd_err *err)
{
    return variadic_launch(c, f_add{}, GD_IOP_ADD, 0, err);
}

extern "C" int
gd__cuda_mean(struct gd_op_call *c, struct gd_err *err)
{
    return variadic_launch(c, f_add{}, GD_IOP_ADD, 1, err);
}

extern "C" int
gd__cuda_greater(struct gd_op_call *c, struct gd_err *err)
{
    return compare_launch(c, f_greater{}, GD_CMP_GREATER, err);
}

extern "C" int
gd__cuda_less(struct gd_op_call *c, struct gd_err *err)
{
    return compare_launch(c, f_less{}, GD_CMP_LESS, err);
}

extern "C" int
gd__cuda_equal(struct gd_op_call *c, struct gd_err *err)
{
    return compare_launch(c, f_equal{}, GD_CMP_EQUAL, err);
}

extern "C" int
gd__cuda_greater_or_equal(struct gd_op_call *c, struct gd_err *err)
{
    return compare_launch(c, f_greater_eq{}, GD_CMP_GREATER_EQ, err);
}

extern "C" int
gd__cuda_less_or_equal(struct gd_op_call *c, struct gd_err *err)
{
    return compare_launch(c, f_less_eq{}, GD_CMP_LESS_EQ, err);
}
