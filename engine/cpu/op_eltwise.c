/*
 * op_eltwise.c: binary and variadic pointwise ops with numpy broadcasting on the CPU.
 * Max and Min propagate NaN (numpy's maximum/minimum); comparisons with NaN are false. Sum
 * and Mean fold their inputs left to right, ((x0 + x1) + x2) + ..., each addition rounded to
 * the backend's precision; Mean divides that sum once by the number of inputs. Mod with
 * fmod=1 is C's fmod (exact). Integer data (and bool, for Equal) takes the rules of
 * engine/core/elt_rules.h in one plain loop per op.
 *
 * The output is walked row by row (its last axis); each op has its own row loop for the
 * common stride patterns (both operands contiguous, or one a broadcast scalar), which the
 * compiler vectorizes, and blocks of rows are the thread pool's tasks. Each element is
 * binop_apply() of its two operands whichever loop computes it.
 */
#include <string.h>

#include "../core/elt_rules.h"
#include "bcast.h"
#include "cpu.h"

enum binop { B_ADD, B_SUB, B_MUL, B_DIV, B_POW, B_MAX, B_MIN, B_PRELU, B_FMOD };
enum cmpop { C_GREATER, C_LESS, C_EQUAL, C_GREATER_EQ, C_LESS_EQ };

/* Strides of t's elements along each axis of the output shape y (0 where t broadcasts). */
static void
bcast_strides(const struct gd_tensor *t, const struct gd_tensor *y, int64_t *strides)
{
    int64_t s = 1;
    for (int i = y->ndim - 1; i >= 0; i--) {
        int ti = i - (y->ndim - t->ndim);
        int64_t d = ti >= 0 ? t->shape[ti] : 1;
        strides[i] = d == 1 ? 0 : s;
        s *= d;
    }
}

static inline real
binop_apply(enum binop op, real a, real b)
{
    switch (op) {
    case B_ADD:
        return a + b;
    case B_SUB:
        return a - b;
    case B_MUL:
        return a * b;
    case B_DIV:
        return a / b;
    case B_POW:
        return R(pow)(a, b);
    case B_MAX:
        return isnan(a) || a > b ? a : b;
    case B_MIN:
        return isnan(a) || a < b ? a : b;
    case B_PRELU:
        return a < 0 ? b * a : a;
    case B_FMOD:
        return R(fmod)(a, b);
    }
    return 0;
}

/*
 * The output's rows (its last axis) and, per axis, each operand's stride in elements (0
 * where it broadcasts).
 */
struct walk {
    int nd;
    int64_t shape[GD_MAX_DIMS];
    int64_t sa[GD_MAX_DIMS], sb[GD_MAX_DIMS];
};

static void
walk_init(struct walk *w, const struct gd_tensor *a, const struct gd_tensor *b,
          const struct gd_tensor *y)
{
    w->nd = y->ndim;
    for (int i = 0; i < y->ndim; i++)
        w->shape[i] = y->shape[i];
    bcast_strides(a, y, w->sa);
    bcast_strides(b, y, w->sb);
}

/*
 * One row: y[j] = a[j * ia] op b[j * ib]. `op` is a constant wherever this is inlined
 * (row_for_op), so each op gets loops of its own; the strides 1 and 0 get loops with
 * constant strides, which vectorize.
 */
static inline void
row_apply(enum binop op, const real *a, int64_t ia, const real *b, int64_t ib, real *y,
          int64_t len)
{
    if (ia == 1 && ib == 1) {
        for (int64_t j = 0; j < len; j++)
            y[j] = binop_apply(op, a[j], b[j]);
    } else if (ia == 1 && ib == 0) {
        real bv = b[0];
        for (int64_t j = 0; j < len; j++)
            y[j] = binop_apply(op, a[j], bv);
    } else if (ia == 0 && ib == 1) {
        real av = a[0];
        for (int64_t j = 0; j < len; j++)
            y[j] = binop_apply(op, av, b[j]);
    } else {
        for (int64_t j = 0; j < len; j++)
            y[j] = binop_apply(op, a[j * ia], b[j * ib]);
    }
}

static void
row_for_op(enum binop op, const real *a, int64_t ia, const real *b, int64_t ib, real *y,
           int64_t len)
{
    switch (op) {
    case B_ADD:
        row_apply(B_ADD, a, ia, b, ib, y, len);
        break;
    case B_SUB:
        row_apply(B_SUB, a, ia, b, ib, y, len);
        break;
    case B_MUL:
        row_apply(B_MUL, a, ia, b, ib, y, len);
        break;
    case B_DIV:
        row_apply(B_DIV, a, ia, b, ib, y, len);
        break;
    case B_POW:
        row_apply(B_POW, a, ia, b, ib, y, len);
        break;
    case B_MAX:
        row_apply(B_MAX, a, ia, b, ib, y, len);
        break;
    case B_MIN:
        row_apply(B_MIN, a, ia, b, ib, y, len);
        break;
    case B_PRELU:
        row_apply(B_PRELU, a, ia, b, ib, y, len);
        break;
    case B_FMOD:
        row_apply(B_FMOD, a, ia, b, ib, y, len);
        break;
    }
}

/* Rows per task: about this many elements. */
#define ELTWISE_BLOCK 32768

struct binary_job {
    const struct walk *w;
    enum binop op;
    const real *a, *b;
    real *y;
    int64_t len, rows, rows_per_task;
};

static void
binary_task(void *arg, int64_t task, int worker)
{
    const struct binary_job *job = arg;
    const struct walk *w = job->w;
    int nd = w->nd;
    int64_t ia = nd > 0 ? w->sa[nd - 1] : 0, ib = nd > 0 ? w->sb[nd - 1] : 0;
    int64_t r0 = task * job->rows_per_task, r1 = r0 + job->rows_per_task;
    if (r1 > job->rows)
        r1 = job->rows;
    /* the counters and offsets of row r0 */
    int64_t idx[GD_MAX_DIMS] = {0}, oa = 0, ob = 0, rest = r0;
    for (int i = nd - 2; i >= 0; i--) {
        idx[i] = rest % w->shape[i];
        rest /= w->shape[i];
        oa += idx[i] * w->sa[i];
        ob += idx[i] * w->sb[i];
    }
    for (int64_t r = r0; r < r1; r++) {
        row_for_op(job->op, job->a + oa, ia, job->b + ob, ib, job->y + r * job->len, job->len);
        for (int i = nd - 2; i >= 0; i--) {
            oa += w->sa[i];
            ob += w->sb[i];
            if (++idx[i] < w->shape[i])
                break;
            oa -= w->sa[i] * w->shape[i];
            ob -= w->sb[i] * w->shape[i];
            idx[i] = 0;
        }
    }
}

static void
binary_rows(struct gd__cpu_ctx *ctx, const struct walk *w, enum binop op, const real *a,
            const real *b, real *y)
{
    int nd = w->nd;
    struct binary_job job = {.w = w, .op = op, .a = a, .b = b, .y = y,
                             .len = nd > 0 ? w->shape[nd - 1] : 1, .rows = 1};
    for (int i = 0; i + 1 < nd; i++)
        job.rows *= w->shape[i];
    if (job.len == 0 || job.rows == 0)
        return;
    job.rows_per_task = ELTWISE_BLOCK / job.len + 1;
    gd__cpu_parallel(ctx, (job.rows + job.rows_per_task - 1) / job.rows_per_task, binary_task,
                     &job);
}

/* The integer op of elt_rules.h that binop is. */
static int
int_op_of(enum binop op, int fmod)
{
    switch (op) {
    case B_ADD:
        return GD_IOP_ADD;
    case B_SUB:
        return GD_IOP_SUB;
    case B_MUL:
        return GD_IOP_MUL;
    case B_DIV:
        return GD_IOP_DIV;
    case B_MAX:
        return GD_IOP_MAX;
    case B_MIN:
        return GD_IOP_MIN;
    default: /* B_FMOD: Mod, either form */
        return fmod ? GD_IOP_FMOD : GD_IOP_MOD;
    }
}

/* y = a op b on integer data, the output walked in C order (a may be y itself). */
static void
int_binary(struct gd_op_call *c, const struct gd_tensor *a, const struct gd_tensor *b,
           enum binop op)
{
    const struct gd_tensor *ins[2] = {a, b};
    struct gd_tensor *y = c->out[0];
    enum gd_dtype dt = y->dtype;
    int iop = int_op_of(op, c->params->fmod);
    int uns = gd__dtype_unsigned(dt), bits = gd__dtype_bits(dt);
    struct gd__bcast w;
    gd__bcast_init(&w, 2, ins, y);
    int64_t n = gd_tensor_numel(y);
    for (int64_t k = 0; k < n; k++, gd__bcast_next(&w)) {
        int64_t va = gd__int_load(dt, a->data, w.off[0]);
        int64_t vb = gd__int_load(dt, b->data, w.off[1]);
        gd__int_store(dt, y->data, k, gd__int_binary(iop, va, vb, uns, bits));
    }
}

static int
binary(struct gd_op_call *c, enum binop op)
{
    if (!gd_dtype_is_float(c->out[0]->dtype)) {
        int_binary(c, c->in[0], c->in[1], op);
        return 0;
    }
    struct walk w;
    walk_init(&w, c->in[0], c->in[1], c->out[0]);
    binary_rows(c->ctx, &w, op, c->in[0]->data, c->in[1]->data, c->out[0]->data);
    return 0;
}

/* Max, Min and Sum fold their inputs left to right into the output. */
static int
variadic(struct gd_op_call *c, enum binop op)
{
    struct gd_tensor *y = c->out[0];
    struct walk w;
    if (!gd_dtype_is_float(y->dtype)) {
        int_binary(c, c->in[0], c->n_in > 1 ? c->in[1] : c->in[0], c->n_in > 1 ? op : B_MAX);
        for (int i = 2; i < c->n_in; i++)
            int_binary(c, y, c->in[i], op);
        return 0;
    }
    walk_init(&w, c->in[0], c->n_in > 1 ? c->in[1] : c->in[0], y);
    if (c->n_in == 1) { /* Max(x, x) and Min(x, x) are x, bit for bit; Sum copies */
        if (op == B_ADD)
            memcpy(y->data, c->in[0]->data, gd_tensor_nbytes(y));
        else
            binary_rows(c->ctx, &w, op, c->in[0]->data, c->in[0]->data, y->data);
        return 0;
    }
    binary_rows(c->ctx, &w, op, c->in[0]->data, c->in[1]->data, y->data);
    for (int i = 2; i < c->n_in; i++) {
        walk_init(&w, y, c->in[i], y);
        binary_rows(c->ctx, &w, op, y->data, c->in[i]->data, y->data);
    }
    return 0;
}

static inline int
cmp_apply(enum cmpop op, real a, real b)
{
    switch (op) {
    case C_GREATER:
        return a > b;
    case C_LESS:
        return a < b;
    case C_EQUAL:
        return a == b;
    case C_GREATER_EQ:
        return a >= b;
    default:
        return a <= b;
    }
}

/* Comparisons of integers (or bools, for Equal): elt_rules.h's, unsigned types as such. */
static int
int_compare(struct gd_op_call *c, enum cmpop op)
{
    static const int map[] = {[C_GREATER] = GD_CMP_GREATER, [C_LESS] = GD_CMP_LESS,
                              [C_EQUAL] = GD_CMP_EQUAL, [C_GREATER_EQ] = GD_CMP_GREATER_EQ,
                              [C_LESS_EQ] = GD_CMP_LESS_EQ};
    const struct gd_tensor *ins[2] = {c->in[0], c->in[1]};
    struct gd_tensor *y = c->out[0];
    enum gd_dtype dt = c->in[0]->dtype;
    int uns = gd__dtype_unsigned(dt);
    uint8_t *out = y->data;
    struct gd__bcast w;
    gd__bcast_init(&w, 2, ins, y);
    int64_t n = gd_tensor_numel(y);
    for (int64_t k = 0; k < n; k++, gd__bcast_next(&w))
        out[k] = (uint8_t)gd__int_compare(map[op], gd__int_load(dt, ins[0]->data, w.off[0]),
                                          gd__int_load(dt, ins[1]->data, w.off[1]), uns);
    return 0;
}

static int
compare(struct gd_op_call *c, enum cmpop op)
{
    if (!gd_dtype_is_float(c->in[0]->dtype))
        return int_compare(c, op);
    const struct gd_tensor *y = c->out[0];
    int64_t sa[GD_MAX_DIMS], sb[GD_MAX_DIMS], idx[GD_MAX_DIMS] = {0};
    bcast_strides(c->in[0], y, sa);
    bcast_strides(c->in[1], y, sb);
    const real *a = c->in[0]->data, *b = c->in[1]->data;
    uint8_t *out = y->data;
    int64_t n = gd_tensor_numel(y), oa = 0, ob = 0;
    for (int64_t k = 0; k < n; k++) {
        real va = a[oa], vb = b[ob];
        out[k] = (uint8_t)cmp_apply(op, va, vb);
        for (int i = y->ndim - 1; i >= 0; i--) {
            oa += sa[i];
            ob += sb[i];
            if (++idx[i] < y->shape[i])
                break;
            oa -= sa[i] * y->shape[i];
            ob -= sb[i] * y->shape[i];
            idx[i] = 0;
        }
    }
    return 0;
}

#define ELTWISE_ENTRY(name, call)                                    \
    int CPU_FN(name)(struct gd_op_call * c, struct gd_err * err)     \
    {                                                                \
        (void)err;                                                   \
        return call;                                                 \
    }

ELTWISE_ENTRY(add, binary(c, B_ADD))
ELTWISE_ENTRY(sub, binary(c, B_SUB))
ELTWISE_ENTRY(mul, binary(c, B_MUL))
ELTWISE_ENTRY(div, binary(c, B_DIV))
ELTWISE_ENTRY(pow, binary(c, B_POW))
ELTWISE_ENTRY(prelu, binary(c, B_PRELU))
ELTWISE_ENTRY(max, variadic(c, B_MAX))
ELTWISE_ENTRY(min, variadic(c, B_MIN))
ELTWISE_ENTRY(greater, compare(c, C_GREATER))
ELTWISE_ENTRY(less, compare(c, C_LESS))
ELTWISE_ENTRY(equal, compare(c, C_EQUAL))
ELTWISE_ENTRY(greater_or_equal, compare(c, C_GREATER_EQ))
ELTWISE_ENTRY(less_or_equal, compare(c, C_LESS_EQ))
ELTWISE_ENTRY(sum, variadic(c, B_ADD))
ELTWISE_ENTRY(mod, binary(c, B_FMOD))

/* Mean: the Sum, then one division by the number of inputs. */
int
CPU_FN(mean)(struct gd_op_call *c, struct gd_err *err)
{
    (void)err;
    variadic(c, B_ADD);
    real *y = c->out[0]->data, count = (real)c->n_in;
    int64_t n = gd_tensor_numel(c->out[0]);
    for (int64_t i = 0; i < n; i++)
        y[i] = y[i] / count;
    return 0;
}
