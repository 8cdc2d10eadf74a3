/*
 * op_act.c: the pointwise unary ops on the CPU. Each is one scalar function of the build's
 * precision (libm's float functions for `cpu`, double ones for `cpu64`), applied to every
 * element. Formulas are chosen for accuracy where the textbook one loses it: expm1 for Elu
 * and Selu, a split Softplus and Sigmoid that never overflow.
 *
 * Each entry point passes its function to unary() as a constant, so the compiler inlines it
 * into that op's own loop (no call per element) and vectorizes the loop where the function
 * allows; the tensor is cut into blocks that are the thread pool's tasks. Every element is
 * still the same function of its input.
 */
#include "cpu.h"

typedef real (*unary_fn)(real x, const struct gd_params *p);

/* Elements per task: enough to pay for handing a task over. */
#define UNARY_BLOCK 32768

struct unary_job {
    const real *x;
    real *y;
    int64_t n;
    const struct gd_params *p;
    unary_fn fn;
};

/* static inline with a constant fn at each call: the compiler makes one loop per op. */
static inline void
unary_block(const struct unary_job *job, int64_t task, unary_fn fn)
{
    int64_t end = (task + 1) * UNARY_BLOCK < job->n ? (task + 1) * UNARY_BLOCK : job->n;
    for (int64_t i = task * UNARY_BLOCK; i < end; i++)
        job->y[i] = fn(job->x[i], job->p);
}

static inline int
unary(struct gd_op_call *c, unary_fn fn, gd__task_fn task)
{
    struct unary_job job = {.x = c->in[0]->data, .y = c->out[0]->data,
                            .n = gd_tensor_numel(c->out[0]), .p = c->params, .fn = fn};
    gd__cpu_parallel(c->ctx, (job.n + UNARY_BLOCK - 1) / UNARY_BLOCK, task, &job);
    return 0;
}

static real
relu(real x, const struct gd_params *p)
{
    /* x for x > 0 and for NaN, +0 otherwise (-0 included); as one comparison it vectorizes */
    return !(x <= 0) ? x : 0;
}

static real
leaky_relu(real x, const struct gd_params *p)
{
    return x >= 0 ? x : (real)p->alpha * x;
}

static real
elu(real x, const struct gd_params *p)
{
    return x > 0 ? x : (real)p->alpha * R(expm1)(x);
}

static real
selu(real x, const struct gd_params *p)
{
    return (real)p->gamma * (x > 0 ? x : (real)p->alpha * R(expm1)(x));
}

static real
sigmoid(real x, const struct gd_params *p)
{
    if (x >= 0)
        return 1 / (1 + R(exp)(-x));
    real e = R(exp)(x);
    return e / (1 + e);
}

static real
tanh_(real x, const struct gd_params *p)
{
    return R(tanh)(x);
}

static real
softplus(real x, const struct gd_params *p)
{
    /* log(1 + e^x) = max(x, 0) + log1p(e^-|x|) */
    return (x > 0 ? x : 0) + R(log1p)(R(exp)(-R(fabs)(x)));
}

static real
hard_sigmoid(real x, const struct gd_params *p)
{
    real v = (real)p->alpha * x + (real)p->beta;
    return v < 0 ? 0 : (v > 1 ? 1 : v);
}

static real
hard_swish(real x, const struct gd_params *p)
{
    /*
     * ONNX: x * max(0, min(1, x/6 + 1/2)), computed as x * max(0, min(6, x + 3)) / 6: near
     * the kink at x = -3, x/6 + 1/2 cancels and keeps the rounding error of x/6 whole, while
     * x + 3 is exact there (Sterbenz), so the result stays within a few ulps.
     */
    real v = x + 3;
    return x * (v < 0 ? 0 : (v > 6 ? 6 : v)) / 6;
}

static real
gelu(real x, const struct gd_params *p)
{
    if (p->gelu_tanh) {
        /*
         * 0.5 x (1 + tanh(w)) = x sigmoid(2w), w = sqrt(2/pi) (x + 0.044715 x^3): as
         * 1 + tanh(w) the error of tanh (ulps of 1) is relative to a sum that vanishes as
         * x -> -inf; the sigmoid form, split on the sign as in sigmoid(), keeps it relative.
         */
        const real k = (real)0.7978845608028654; /* sqrt(2/pi) */
        real w2 = 2 * (k * (x + (real)0.044715 * x * x * x));
        if (w2 >= 0)
            return x / (1 + R(exp)(-w2));
        real e = R(exp)(w2);
        return x * e / (1 + e);
    }
    /* 0.5 x (1 + erf(x / sqrt 2)) = 0.5 x erfc(-x / sqrt 2), which does not cancel for x < 0 */
    return (real)0.5 * x * R(erfc)(-(x * (real)0.7071067811865476));
}

static real
floor_(real x, const struct gd_params *p)
{
    return R(floor)(x);
}

static real
ceil_(real x, const struct gd_params *p)
{
    return R(ceil)(x);
}

static real
round_(real x, const struct gd_params *p)
{
    return R(rint)(x); /* halves to even, in the default rounding mode */
}

static real
sign(real x, const struct gd_params *p)
{
    return x > 0 ? 1 : (x < 0 ? -1 : x); /* keeps 0, -0 and NaN */
}

static real
abs_(real x, const struct gd_params *p)
{
    return R(fabs)(x);
}

static real
neg(real x, const struct gd_params *p)
{
    return -x;
}

static real
sqrt_(real x, const struct gd_params *p)
{
    return R(sqrt)(x);
}

static real
exp_(real x, const struct gd_params *p)
{
    return R(exp)(x);
}

static real
log_(real x, const struct gd_params *p)
{
    return R(log)(x);
}

static real
clip(real x, const struct gd_params *p)
{
    real lo = (real)p->clip_min, hi = (real)p->clip_max;
    if (x < lo)
        x = lo;
    if (x > hi)
        x = hi;
    return x;
}

#define UNARY_ENTRY(op, f)                                          \
    static void op##_task(void *arg, int64_t task, int worker)      \
    {                                                               \
        (void)worker;                                               \
        unary_block(arg, task, f);                                  \
    }                                                               \
    int CPU_FN(op)(struct gd_op_call * c, struct gd_err * err)      \
    {                                                               \
        (void)err;                                                  \
        return unary(c, f, op##_task);                              \
    }

UNARY_ENTRY(relu, relu)
UNARY_ENTRY(leaky_relu, leaky_relu)
UNARY_ENTRY(elu, elu)
UNARY_ENTRY(selu, selu)
UNARY_ENTRY(sigmoid, sigmoid)
UNARY_ENTRY(tanh, tanh_)
UNARY_ENTRY(softplus, softplus)
UNARY_ENTRY(hard_sigmoid, hard_sigmoid)
UNARY_ENTRY(hard_swish, hard_swish)
UNARY_ENTRY(gelu, gelu)
UNARY_ENTRY(floor, floor_)
UNARY_ENTRY(ceil, ceil_)
UNARY_ENTRY(round, round_)
UNARY_ENTRY(sign, sign)
UNARY_ENTRY(abs, abs_)
UNARY_ENTRY(neg, neg)
UNARY_ENTRY(sqrt, sqrt_)
UNARY_ENTRY(exp, exp_)
UNARY_ENTRY(log, log_)
UNARY_ENTRY(clip, clip)
