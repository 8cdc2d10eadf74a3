/* op_act.cu: the pointwise unary ops on the GPU: one grid-stride kernel over a functor per op,
 * with the formulas of engine/cpu/op_act.c in CUDA's accurate float math, on float32,
 * float16 or bfloat16 storage (half.cuh: load as float32, compute, round once on the store,
 * which is what engine/core/half_call.c's float32 copies gave, without them). */
#include <stdint.h>

#include "../core/elt_rules.h"
#include "half.cuh"
#include "kernels.cuh"

/*
 * The CPU build passes -ffp-contract=off: every product and sum is rounded on its own. nvcc
 * fuses a multiply feeding an add into one FMA by default (--fmad=true), also across the
 * inlined bodies of expf and friends. So every product, sum and quotient in these formulas is
 * written with a round-to-nearest intrinsic (__fmul_rn, __fadd_rn, __fdiv_rn), which the CUDA
 * Math API documents as never merged into a multiply-add: where the CPU and the GPU share a
 * formula, they round the same steps. Negation, fabsf, comparisons and selections are exact.
 */

/*
 * y[i] = f(x[i]) for i < n. When both pointers are 16-byte aligned (device allocations are)
 * the body of the array moves in 16-byte vectors (4 float32 or 8 half values) and the last
 * elements one by one; the values and the order of operations per element are the same
 * either way.
 */
template <class T, class F>
static __global__ void
unary_kernel(const T *x, T *y, int64_t n, int vec, F f)
{
    const int V = GD_VEC16_LEN(T);
    int64_t step = (int64_t)gridDim.x * blockDim.x;
    int64_t first = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    int64_t head = 0;
    if (vec) {
        int64_t nv = n / V;
        const gd__vec16<T> *xv = (const gd__vec16<T> *)x;
        gd__vec16<T> *yv = (gd__vec16<T> *)y;
        for (int64_t i = first; i < nv; i += step) {
            gd__vec16<T> v = xv[i];
#pragma unroll
            for (int k = 0; k < V; k++)
                gd__st(v.e, k, f(gd__ld(v.e, k)));
            yv[i] = v;
        }
        head = nv * V;
    }
    for (int64_t i = head + first; i < n; i += step)
        gd__st(y, i, f(gd__ld(x, i)));
}

template <class T, class F>
static int
unary_typed(struct gd_op_call *c, F f, struct gd_err *err)
{
    struct gd__cuda_ctx *ctx = gd__cuda_ctx_of(c);
    const T *x = (const T *)c->in[0]->data;
    T *y = (T *)c->out[0]->data;
    int64_t n = gd_tensor_numel(c->out[0]);
    int vec = ((uintptr_t)x % 16 == 0) && ((uintptr_t)y % 16 == 0);
    const int V = GD_VEC16_LEN(T);
    int rc = 0;
    if (n == 0)
        return 0;
    unary_kernel<<<gd__cuda_blocks(vec ? (n + V - 1) / V : n), GD_CUDA_THREADS, 0,
                   ctx->compute>>>(x, y, n, vec, f);
    GD_CUDA_CHECK_LAUNCH();
done:
    return rc;
}

/* A float op on float32, float16 or bfloat16 storage, input and output of one dtype. */
template <class F>
static int
unary_launch(struct gd_op_call *c, F f, struct gd_err *err)
{
    enum gd_dtype dt = c->in[0]->dtype;
    if (!gd__cuda_stored_float(dt) || c->out[0]->dtype != dt)
        return gd_err_set(err, GD_EDTYPE, "%s of %s into %s on cuda", gd_op_name(c->node->op),
                          gd_dtype_name(dt), gd_dtype_name(c->out[0]->dtype));
    return GD_CUDA_FLOAT_CASES(dt, unary_typed<T>(c, f, err));
}

/* ---- the functions: the CPU's, step for step ---- */

struct f_relu {
    __device__ float operator()(float x) const
    {
        return x > 0.f ? x : (isnan(x) ? x : 0.f);
    }
};

struct f_leaky_relu {
    float alpha;
    __device__ float operator()(float x) const
    {
        return x >= 0.f ? x : __fmul_rn(alpha, x);
    }
};

struct f_elu {
    float alpha;
    __device__ float operator()(float x) const
    {
        return x > 0.f ? x : __fmul_rn(alpha, expm1f(x));
    }
};

struct f_selu {
    float alpha, gamma;
    __device__ float operator()(float x) const
    {
        return __fmul_rn(gamma, x > 0.f ? x : __fmul_rn(alpha, expm1f(x)));
    }
};

/* Split at 0 so that exp never overflows: 1 / (1 + e^-x) above, e^x / (1 + e^x) below. */
struct f_sigmoid {
    __device__ float operator()(float x) const
    {
        if (x >= 0.f)
            return __fdiv_rn(1.f, __fadd_rn(1.f, expf(-x)));
        float e = expf(x);
        return __fdiv_rn(e, __fadd_rn(1.f, e));
    }
};

struct f_tanh {
    __device__ float operator()(float x) const
    {
        return tanhf(x);
    }
};

/* log(1 + e^x) = max(x, 0) + log1p(e^-|x|): no overflow, no cancellation. */
struct f_softplus {
    __device__ float operator()(float x) const
    {
        return __fadd_rn(x > 0.f ? x : 0.f, log1pf(expf(-fabsf(x))));
    }
};

struct f_hard_sigmoid {
    float alpha, beta;
    __device__ float operator()(float x) const
    {
        float v = __fadd_rn(__fmul_rn(alpha, x), beta);
        return v < 0.f ? 0.f : (v > 1.f ? 1.f : v);
    }
};

/* x * max(0, min(1, x/6 + 1/2)) as ONNX defines it; x/6 is a true division, as on the CPU. */
struct f_hard_swish {
    __device__ float operator()(float x) const
    {
        float v = __fadd_rn(__fdiv_rn(x, 6.f), 0.5f);
        return __fmul_rn(x, v < 0.f ? 0.f : (v > 1.f ? 1.f : v));
    }
};

/* The constants are the CPU's double literals rounded to float, as (real) rounds them there.
 * The CPU's forms, which do not cancel for x < 0 (1 + erf(z) and 1 + tanh(w) lose every
 * digit there: a float16 or bfloat16 output shows it): 0.5 x erfc(-x / sqrt 2), and
 * x sigmoid(2w) split on the sign of w as the CPU splits it. */
struct f_gelu {
    __device__ float operator()(float x) const
    {
        float e = erfcf(-__fmul_rn(x, (float)0.7071067811865476));
        return __fmul_rn(__fmul_rn(0.5f, x), e);
    }
};

struct f_gelu_tanh {
    __device__ float operator()(float x) const
    {
        const float k = (float)0.7978845608028654; /* sqrt(2/pi) */
        float cube = __fmul_rn(__fmul_rn(__fmul_rn((float)0.044715, x), x), x);
        float w2 = __fmul_rn(2.f, __fmul_rn(k, __fadd_rn(x, cube)));
        if (w2 >= 0.f)
            return __fdiv_rn(x, __fadd_rn(1.f, expf(-w2)));
        float e = expf(w2);
        return __fdiv_rn(__fmul_rn(x, e), __fadd_rn(1.f, e));
    }
};

struct f_floor {
    __device__ float operator()(float x) const
    {
        return floorf(x);
    }
};

struct f_ceil {
    __device__ float operator()(float x) const
    {
        return ceilf(x);
    }
};

/* rintf rounds halves to even (the default rounding mode), like the CPU's rintf; roundf
 * would round them away from zero. */
struct f_round {
    __device__ float operator()(float x) const
    {
        return rintf(x);
    }
};

/* Keeps 0, -0 and NaN. */
struct f_sign {
    __device__ float operator()(float x) const
    {
        return x > 0.f ? 1.f : (x < 0.f ? -1.f : x);
    }
};

struct f_abs {
    __device__ float operator()(float x) const
    {
        return fabsf(x);
    }
};

struct f_neg {
    __device__ float operator()(float x) const
    {
        return -x;
    }
};

/* IEEE correctly rounded without --use_fast_math / -prec-sqrt=false, as libm's. */
struct f_sqrt {
    __device__ float operator()(float x) const
    {
        return sqrtf(x);
    }
};

struct f_exp {
    __device__ float operator()(float x) const
    {
        return expf(x);
    }
};

struct f_log {
    __device__ float operator()(float x) const
    {
        return logf(x);
    }
};

/* NaN passes: both comparisons are false for it. */
struct f_clip {
    float lo, hi;
    __device__ float operator()(float x) const
    {
        if (x < lo)
            x = lo;
        if (x > hi)
            x = hi;
        return x;
    }
};

struct f_erf {
    __device__ float operator()(float x) const
    {
        return erff(x);
    }
};

/* 1 / x correctly rounded (-prec-div=true), as the CPU's division. */
struct f_reciprocal {
    __device__ float operator()(float x) const
    {
        return __fdiv_rn(1.f, x);
    }
};

struct f_softsign {
    __device__ float operator()(float x) const
    {
        return __fdiv_rn(x, __fadd_rn(1.f, fabsf(x)));
    }
};

/* NaN gives 0, as on the CPU: the comparison is false. */
struct f_thresholded_relu {
    float alpha;
    __device__ float operator()(float x) const
    {
        return x > alpha ? x : 0.f;
    }
};

struct f_sin {
    __device__ float operator()(float x) const
    {
        return sinf(x);
    }
};

struct f_cos {
    __device__ float operator()(float x) const
    {
        return cosf(x);
    }
};

struct f_tan {
    __device__ float operator()(float x) const
    {
        return tanf(x);
    }
};

struct f_asin {
    __device__ float operator()(float x) const
    {
        return asinf(x);
    }
};

struct f_acos {
    __device__ float operator()(float x) const
    {
        return acosf(x);
    }
};

struct f_atan {
    __device__ float operator()(float x) const
    {
        return atanf(x);
    }
};

struct f_sinh {
    __device__ float operator()(float x) const
    {
        return sinhf(x);
    }
};

struct f_cosh {
    __device__ float operator()(float x) const
    {
        return coshf(x);
    }
};

struct f_asinh {
    __device__ float operator()(float x) const
    {
        return asinhf(x);
    }
};

struct f_acosh {
    __device__ float operator()(float x) const
    {
        return acoshf(x);
    }
};

struct f_atanh {
    __device__ float operator()(float x) const
    {
        return atanhf(x);
    }
};

/* alpha expm1(x / alpha) for x <= 0, x above: the CPU's steps. */
struct f_celu {
    float alpha;
    __device__ float operator()(float x) const
    {
        return x > 0.f ? x : __fmul_rn(alpha, expm1f(__fdiv_rn(x, alpha)));
    }
};

struct f_shrink {
    float lambd, bias;
    __device__ float operator()(float x) const
    {
        return x < -lambd ? __fadd_rn(x, bias) : (x > lambd ? __fsub_rn(x, bias) : 0.f);
    }
};

/* x tanh(softplus(x)), softplus as f_softplus computes it. */
struct f_mish {
    __device__ float operator()(float x) const
    {
        return __fmul_rn(x, tanhf(f_softplus{}(x)));
    }
};

/* ---- Abs, Neg, Sign of integers: engine/core/elt_rules.h, as on the CPU ---- */

enum int_unary { IU_ABS, IU_NEG, IU_SIGN };

static __global__ void
int_unary_kernel(const void *x, void *y, int64_t n, enum gd_dtype dt, int which)
{
    int uns = gd__dtype_unsigned(dt);
    int64_t step = (int64_t)gridDim.x * blockDim.x;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += step) {
        int64_t v = gd__int_load(dt, x, i);
        v = which == IU_ABS ? gd__int_abs(v, uns)
                            : (which == IU_NEG ? gd__int_neg(v) : gd__int_sign(v, uns));
        gd__int_store(dt, y, i, v);
    }
}

static int
int_unary_launch(struct gd_op_call *c, int which, struct gd_err *err)
{
    struct gd__cuda_ctx *ctx = gd__cuda_ctx_of(c);
    int64_t n = gd_tensor_numel(c->out[0]);
    int rc = 0;
    if (n == 0)
        return 0;
    int_unary_kernel<<<gd__cuda_blocks(n), GD_CUDA_THREADS, 0, ctx->compute>>>(
        c->in[0]->data, c->out[0]->data, n, c->in[0]->dtype, which);
    GD_CUDA_CHECK_LAUNCH();
done:
    return rc;
}

/* ---- entry points ---- */

extern "C" int
gd__cuda_relu(struct gd_op_call *c, struct gd_err *err)
{
    return unary_launch(c, f_relu{}, err);
}

extern "C" int
gd__cuda_leaky_relu(struct gd_op_call *c, struct gd_err *err)
{
    return unary_launch(c, f_leaky_relu{(float)c->params->alpha}, err);
}

extern "C" int
gd__cuda_elu(struct gd_op_call *c, struct gd_err *err)
{
    return unary_launch(c, f_elu{(float)c->params->alpha}, err);
}

extern "C" int
gd__cuda_selu(struct gd_op_call *c, struct gd_err *err)
{
    return unary_launch(c, f_selu{(float)c->params->alpha, (float)c->params->gamma}, err);
}

extern "C" int
gd__cuda_sigmoid(struct gd_op_call *c, struct gd_err *err)
{
    return unary_launch(c, f_sigmoid{}, err);
}

extern "C" int
gd__cuda_tanh(struct gd_op_call *c, struct gd_err *err)
{
    return unary_launch(c, f_tanh{}, err);
}

extern "C" int
gd__cuda_softplus(struct gd_op_call *c, struct gd_err *err)
{
    return unary_launch(c, f_softplus{}, err);
}

extern "C" int
gd__cuda_hard_sigmoid(struct gd_op_call *c, struct gd_err *err)
{
    return unary_launch(c, f_hard_sigmoid{(float)c->params->alpha, (float)c->params->beta}, err);
}

extern "C" int
gd__cuda_hard_swish(struct gd_op_call *c, struct gd_err *err)
{
    return unary_launch(c, f_hard_swish{}, err);
}

extern "C" int
gd__cuda_gelu(struct gd_op_call *c, struct gd_err *err)
{
    if (c->params->gelu_tanh)
        return unary_launch(c, f_gelu_tanh{}, err);
    return unary_launch(c, f_gelu{}, err);
}

extern "C" int
gd__cuda_floor(struct gd_op_call *c, struct gd_err *err)
{
    return unary_launch(c, f_floor{}, err);
}

extern "C" int
gd__cuda_ceil(struct gd_op_call *c, struct gd_err *err)
{
    return unary_launch(c, f_ceil{}, err);
}

extern "C" int
gd__cuda_round(struct gd_op_call *c, struct gd_err *err)
{
    return unary_launch(c, f_round{}, err);
}

extern "C" int
gd__cuda_sign(struct gd_op_call *c, struct gd_err *err)
{
    if (!gd__cuda_stored_float(c->in[0]->dtype))
        return int_unary_launch(c, IU_SIGN, err);
    return unary_launch(c, f_sign{}, err);
}

extern "C" int
gd__cuda_abs(struct gd_op_call *c, struct gd_err *err)
{
    if (!gd__cuda_stored_float(c->in[0]->dtype))
        return int_unary_launch(c, IU_ABS, err);
    return unary_launch(c, f_abs{}, err);
}

extern "C" int
gd__cuda_neg(struct gd_op_call *c, struct gd_err *err)
{
    if (!gd__cuda_stored_float(c->in[0]->dtype))
        return int_unary_launch(c, IU_NEG, err);
    return unary_launch(c, f_neg{}, err);
}

extern "C" int
gd__cuda_sqrt(struct gd_op_call *c, struct gd_err *err)
{
    return unary_launch(c, f_sqrt{}, err);
}

extern "C" int
gd__cuda_exp(struct gd_op_call *c, struct gd_err *err)
{
    return unary_launch(c, f_exp{}, err);
}

extern "C" int
gd__cuda_log(struct gd_op_call *c, struct gd_err *err)
{
    return unary_launch(c, f_log{}, err);
}

extern "C" int
gd__cuda_clip(struct gd_op_call *c, struct gd_err *err)
{
    /* min and max were read from attributes or constant inputs; infinite when absent */
    return unary_launch(c, f_clip{(float)c->params->clip_min, (float)c->params->clip_max}, err);
}

#define ACT_ENTRY(fn, functor)                                                                     \
    extern "C" int gd__cuda_##fn(struct gd_op_call *c, struct gd_err *err)                         \
    {                                                                                              \
        return unary_launch(c, functor, err);                                                      \
    }

ACT_ENTRY(erf, f_erf{})
ACT_ENTRY(reciprocal, f_reciprocal{})
ACT_ENTRY(softsign, f_softsign{})
ACT_ENTRY(thresholded_relu, f_thresholded_relu{(float)c->params->alpha})
ACT_ENTRY(sin, f_sin{})
ACT_ENTRY(cos, f_cos{})
ACT_ENTRY(tan, f_tan{})
ACT_ENTRY(asin, f_asin{})
ACT_ENTRY(acos, f_acos{})
ACT_ENTRY(atan, f_atan{})
ACT_ENTRY(sinh, f_sinh{})
ACT_ENTRY(cosh, f_cosh{})
ACT_ENTRY(asinh, f_asinh{})
ACT_ENTRY(acosh, f_acosh{})
ACT_ENTRY(atanh, f_atanh{})
ACT_ENTRY(celu, f_celu{(float)c->params->alpha})
ACT_ENTRY(shrink, (f_shrink{(float)c->params->lambd, (float)c->params->bias}))
ACT_ENTRY(mish, f_mish{})
