/*
 * op_act.c: the pointwise unary ops on the CPU. Each is one scalar function of the build's
 * precision (engine/core/math_rules.h's float functions for `cpu`, libm's double ones for
 * `cpu64`), applied to every element; the formulas are engine/core/act_rules.h's, which the
 * cuda backend's --repro bitwise kernels share.
 *
 * Each entry point passes its function to unary() as a constant, so the compiler inlines it
 * into that op's own loop (no call per element) and vectorizes the loop where the function
 * allows; the tensor is cut into blocks that are the thread pool's tasks. Every element is
 * still the same function of its input.
 */
#include "../core/elt_rules.h"
#include "cpu.h"
#include "../core/act_rules.h"

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
    return gd__act_relu(x);
}

static real
leaky_relu(real x, const struct gd_params *p)
{
    return gd__act_leaky_relu(x, (real)p->alpha);
}

static real
elu(real x, const struct gd_params *p)
{
    return gd__act_elu(x, (real)p->alpha);
}

static real
selu(real x, const struct gd_params *p)
{
    return gd__act_selu(x, (real)p->alpha, (real)p->gamma);
}

static real
sigmoid(real x, const struct gd_params *p)
{
    return gd__act_sigmoid(x);
}

static real
tanh_(real x, const struct gd_params *p)
{
    return R(tanh)(x);
}

static real
softplus(real x, const struct gd_params *p)
{
    return gd__act_softplus(x);
}

static real
hard_sigmoid(real x, const struct gd_params *p)
{
    return gd__act_hard_sigmoid(x, (real)p->alpha, (real)p->beta);
}

static real
hard_swish(real x, const struct gd_params *p)
{
    return gd__act_hard_swish(x);
}

static real
gelu(real x, const struct gd_params *p)
{
    return gd__act_gelu(x, p->gelu_tanh);
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
    return gd__act_sign(x);
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
    return gd__act_clip(x, (real)p->clip_min, (real)p->clip_max);
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

static real
softsign(real x, const struct gd_params *p)
{
    return gd__act_softsign(x);
}

static real
thresholded_relu(real x, const struct gd_params *p)
{
    return gd__act_thresholded_relu(x, (real)p->alpha);
}

/* One libm call (cpu64) or math_rules.h function (cpu) each. */
#define LIB_UNARY(name)                                     \
    static real name##_(real x, const struct gd_params *p) \
    {                                                       \
        return R(name)(x);                                  \
    }
LIB_UNARY(sin)
LIB_UNARY(cos)
LIB_UNARY(tan)
LIB_UNARY(asin)
LIB_UNARY(acos)
LIB_UNARY(atan)
LIB_UNARY(sinh)
LIB_UNARY(cosh)
LIB_UNARY(asinh)
LIB_UNARY(acosh)
LIB_UNARY(atanh)

static real
celu(real x, const struct gd_params *p)
{
    return gd__act_celu(x, (real)p->alpha);
}

static real
shrink(real x, const struct gd_params *p)
{
    return gd__act_shrink(x, (real)p->lambd, (real)p->bias);
}

static real
mish(real x, const struct gd_params *p)
{
    return gd__act_mish(x);
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
