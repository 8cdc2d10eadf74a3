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
#include "../core/elt_rules.h"
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

static real
erf_(real x, const struct gd_params *p)
{
    return R(erf)(x);
}

static real
reciprocal(real x, const struct gd_params *p)
{
    return 1 / x;
}

/* x / (1 + |x|), two roundings; +-inf give inf / inf = NaN, as ONNX's reference and PyTorch
 * compute the formula. */
static real
softsign(real x, const struct gd_params *p)
{
    return x / (1 + R(fabs)(x));
}

static real
thresholded_relu(real x, const struct gd_params *p)
{
    return x > (real)p->alpha ? x : 0; /* NaN gives 0, as ONNX's where(x > alpha, x, 0) */
}

static real
sin_(real x, const struct gd_params *p)
{
    return R(sin)(x);
}

static real
cos_(real x, const struct gd_params *p)
{
    return R(cos)(x);
}

static real
tan_(real x, const struct gd_params *p)
{
    return R(tan)(x);
}

static real
asin_(real x, const struct gd_params *p)
{
    return R(asin)(x);
}

static real
acos_(real x, const struct gd_params *p)
{
    return R(acos)(x);
}

static real
atan_(real x, const struct gd_params *p)
{
    return R(atan)(x);
}

static real
sinh_(real x, const struct gd_params *p)
{
    return R(sinh)(x);
}

static real
cosh_(real x, const struct gd_params *p)
{
    return R(cosh)(x);
}

static real
asinh_(real x, const struct gd_params *p)
{
    return R(asinh)(x);
}

static real
acosh_(real x, const struct gd_params *p)
{
    return R(acosh)(x);
}

static real
atanh_(real x, const struct gd_params *p)
{
    return R(atanh)(x);
}

/* max(0, x) + min(0, alpha (exp(x / alpha) - 1)), with expm1 for x <= 0 (no cancellation) */
static real
celu(real x, const struct gd_params *p)
{
    real a = (real)p->alpha;
    return x > 0 ? x : a * R(expm1)(x / a);
}

/* x + bias below -lambd, x - bias above lambd, 0 between (and for NaN, as ONNX's where()s) */
static real
shrink(real x, const struct gd_params *p)
{
    real lambd = (real)p->lambd, bias = (real)p->bias;
    return x < -lambd ? x + bias : (x > lambd ? x - bias : 0);
}

/* x tanh(softplus(x)), softplus in the accurate form above; -inf gives -inf * 0 = NaN, as the
 * formula does in ONNX's reference and PyTorch */
static real
mish(real x, const struct gd_params *p)
{
    return x * R(tanh)(softplus(x, p));
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
UNARY_ENTRY(erf, erf_)
UNARY_ENTRY(reciprocal, reciprocal)
UNARY_ENTRY(softsign, softsign)
UNARY_ENTRY(thresholded_relu, thresholded_relu)
UNARY_ENTRY(sin, sin_)
UNARY_ENTRY(cos, cos_)
UNARY_ENTRY(tan, tan_)
UNARY_ENTRY(asin, asin_)
UNARY_ENTRY(acos, acos_)
UNARY_ENTRY(atan, atan_)
UNARY_ENTRY(sinh, sinh_)
UNARY_ENTRY(cosh, cosh_)
UNARY_ENTRY(asinh, asinh_)
UNARY_ENTRY(acosh, acosh_)
UNARY_ENTRY(atanh, atanh_)
UNARY_ENTRY(celu, celu)
UNARY_ENTRY(shrink, shrink)
UNARY_ENTRY(mish, mish)

/* Abs, Neg and Sign of integers (elt_rules.h: wrapping, so |MIN| = MIN and -MIN = MIN). */
enum int_unary { IU_ABS, IU_NEG, IU_SIGN };

static int
int_unary(struct gd_op_call *c, enum int_unary which)
{
    enum gd_dtype dt = c->in[0]->dtype;
    int uns = gd__dtype_unsigned(dt);
    int64_t n = gd_tensor_numel(c->out[0]);
    for (int64_t i = 0; i < n; i++) {
        int64_t v = gd__int_load(dt, c->in[0]->data, i);
        v = which == IU_ABS ? gd__int_abs(v, uns)
                            : (which == IU_NEG ? gd__int_neg(v) : gd__int_sign(v, uns));
        gd__int_store(dt, c->out[0]->data, i, v);
    }
    return 0;
}

#define UNARY_INT_ENTRY(op, f, which)                               \
    static void op##_task(void *arg, int64_t task, int worker)      \
    {                                                               \
        (void)worker;                                               \
        unary_block(arg, task, f);                                  \
    }                                                               \
    int CPU_FN(op)(struct gd_op_call * c, struct gd_err * err)      \
    {                                                               \
        (void)err;                                                  \
        if (!gd_dtype_is_float(c->in[0]->dtype))                    \
            return int_unary(c, which);                             \
        return unary(c, f, op##_task);                              \
    }

UNARY_INT_ENTRY(sign, sign, IU_SIGN)
UNARY_INT_ENTRY(abs, abs_, IU_ABS)
UNARY_INT_ENTRY(neg, neg, IU_NEG)
UNARY_ENTRY(sqrt, sqrt_)
UNARY_ENTRY(exp, exp_)
UNARY_ENTRY(log, log_)
UNARY_ENTRY(clip, clip)
