/*
 * repro_act.cu: the pointwise ops that call an elementary function (Exp, Log, Tanh, Sigmoid,
 * Softplus, Elu, Selu, Celu, Gelu, Mish, Erf, the trigonometric and hyperbolic ones), those of
 * a short formula (HardSigmoid, HardSwish, LeakyRelu, Softsign, ThresholdedRelu, Shrink: the
 * default kernel of HardSwish computes ONNX's x/6 + 1/2, not cpu's (x + 3)/6, and differs in
 * the last bit, as the H200 showed) and Pow
 * under --repro bitwise: engine/core/act_rules.h's formulas, the cpu backend's own, on
 * engine/core/math_rules.h's float functions, the cpu backend's own, one thread per element.
 * Built with --fmad=false: every product and sum is rounded as on the CPU.
 */
#include "repro.cuh"
#include "repro.h"

#include "../core/math_rules.h"
typedef float real;
#define R(fn) gd__##fn##f
#include "../core/act_rules.h"

enum act {
    A_ELU,
    A_SELU,
    A_SIGMOID,
    A_TANH,
    A_SOFTPLUS,
    A_GELU,
    A_EXP,
    A_LOG,
    A_ERF,
    A_SIN,
    A_COS,
    A_TAN,
    A_ASIN,
    A_ACOS,
    A_ATAN,
    A_SINH,
    A_COSH,
    A_ASINH,
    A_ACOSH,
    A_ATANH,
    A_CELU,
    A_MISH,
    A_HARD_SIGMOID,
    A_HARD_SWISH,
    A_LEAKY_RELU,
    A_SOFTSIGN,
    A_THRESHOLDED_RELU,
    A_SHRINK
};

/* The float attributes, converted once on the host as the CPU converts them. */
struct act_args {
    float alpha, beta, gamma, lambd, bias;
    int gelu_tanh;
};

template <int OP>
static __device__ __forceinline__ float
act_apply(float x, const act_args &a)
{
    switch (OP) {
    case A_ELU:
        return gd__act_elu(x, a.alpha);
    case A_SELU:
        return gd__act_selu(x, a.alpha, a.gamma);
    case A_SIGMOID:
        return gd__act_sigmoid(x);
    case A_TANH:
        return gd__tanhf(x);
    case A_SOFTPLUS:
        return gd__act_softplus(x);
    case A_GELU:
        return gd__act_gelu(x, a.gelu_tanh);
    case A_EXP:
        return gd__expf(x);
    case A_LOG:
        return gd__logf(x);
    case A_ERF:
        return gd__erff(x);
    case A_SIN:
        return gd__sinf(x);
    case A_COS:
        return gd__cosf(x);
    case A_TAN:
        return gd__tanf(x);
    case A_ASIN:
        return gd__asinf(x);
    case A_ACOS:
        return gd__acosf(x);
    case A_ATAN:
        return gd__atanf(x);
    case A_SINH:
        return gd__sinhf(x);
    case A_COSH:
        return gd__coshf(x);
    case A_ASINH:
        return gd__asinhf(x);
    case A_ACOSH:
        return gd__acoshf(x);
    case A_ATANH:
        return gd__atanhf(x);
    case A_CELU:
        return gd__act_celu(x, a.alpha);
    case A_MISH:
        return gd__act_mish(x);
    case A_HARD_SIGMOID:
        return gd__act_hard_sigmoid(x, a.alpha, a.beta);
    case A_HARD_SWISH:
        return gd__act_hard_swish(x);
    case A_LEAKY_RELU:
        return gd__act_leaky_relu(x, a.alpha);
    case A_SOFTSIGN:
        return gd__act_softsign(x);
    case A_THRESHOLDED_RELU:
        return gd__act_thresholded_relu(x, a.alpha);
    case A_SHRINK:
        return gd__act_shrink(x, a.lambd, a.bias);
    }
    return x;
}

template <int OP>
static __global__ void
act_kernel(const float *__restrict__ x, float *__restrict__ y, int64_t n, act_args a)
{
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x)
        y[i] = act_apply<OP>(x[i], a);
}

template <int OP>
static int
act_launch(struct gd_op_call *c, struct gd_err *err)
{
    struct gd__cuda_ctx *ctx = gd__cuda_ctx_of(c);
    const struct gd_params *p = c->params;
    int64_t n = gd_tensor_numel(c->out[0]);
    act_args a = {(float)p->alpha, (float)p->beta, (float)p->gamma,
                  (float)p->lambd, (float)p->bias, p->gelu_tanh};
    int rc = 0;
    if (n == 0)
        return 0;
    act_kernel<OP><<<gd__repro_elt_blocks(ctx, n), GD_CUDA_THREADS, 0, ctx->compute>>>(
        (const float *)c->in[0]->data, (float *)c->out[0]->data, n, a);
    GD_CUDA_CHECK_LAUNCH();
done:
    return rc;
}

#define ACT_ENTRY(fn, op)                                                                          \
    extern "C" int gd__cuda_repro_##fn(struct gd_op_call *c, struct gd_err *err)                   \
    {                                                                                              \
        return act_launch<op>(c, err);                                                             \
    }

ACT_ENTRY(elu, A_ELU)
ACT_ENTRY(selu, A_SELU)
ACT_ENTRY(sigmoid, A_SIGMOID)
ACT_ENTRY(tanh, A_TANH)
ACT_ENTRY(softplus, A_SOFTPLUS)
ACT_ENTRY(gelu, A_GELU)
ACT_ENTRY(exp, A_EXP)
ACT_ENTRY(log, A_LOG)
ACT_ENTRY(erf, A_ERF)
ACT_ENTRY(sin, A_SIN)
ACT_ENTRY(cos, A_COS)
ACT_ENTRY(tan, A_TAN)
ACT_ENTRY(asin, A_ASIN)
ACT_ENTRY(acos, A_ACOS)
ACT_ENTRY(atan, A_ATAN)
ACT_ENTRY(sinh, A_SINH)
ACT_ENTRY(cosh, A_COSH)
ACT_ENTRY(asinh, A_ASINH)
ACT_ENTRY(acosh, A_ACOSH)
ACT_ENTRY(atanh, A_ATANH)
ACT_ENTRY(celu, A_CELU)
ACT_ENTRY(mish, A_MISH)
ACT_ENTRY(hard_sigmoid, A_HARD_SIGMOID)
ACT_ENTRY(hard_swish, A_HARD_SWISH)
ACT_ENTRY(leaky_relu, A_LEAKY_RELU)
ACT_ENTRY(softsign, A_SOFTSIGN)
ACT_ENTRY(thresholded_relu, A_THRESHOLDED_RELU)
ACT_ENTRY(shrink, A_SHRINK)

/* Pow with numpy broadcasting: y = pow(a, b) element by element (math_rules.h's). */
static __global__ void
pow_kernel(const float *__restrict__ a, const float *__restrict__ b, float *__restrict__ y,
           int64_t n, gd__cuda_walk w)
{
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x) {
        int64_t off[2];
        gd__cuda_walk_offsets(w, i, 2, off);
        y[i] = gd__powf(a[off[0]], b[off[1]]);
    }
}

extern "C" int
gd__cuda_repro_pow(struct gd_op_call *c, struct gd_err *err)
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
    gd__cuda_bcast_strides(c->in[0], y, w.stride[0]);
    gd__cuda_bcast_strides(c->in[1], y, w.stride[1]);
    gd__cuda_walk_coalesce(&w, 2);
    pow_kernel<<<gd__repro_elt_blocks(ctx, n), GD_CUDA_THREADS, 0, ctx->compute>>>(
        (const float *)c->in[0]->data, (const float *)c->in[1]->data, (float *)y->data, n, w);
    GD_CUDA_CHECK_LAUNCH();
done:
    return rc;
}
