/*
 * op_eltwise.c: binary and variadic pointwise ops with numpy broadcasting on the CPU.
 * Max and Min propagate NaN (numpy's maximum/minimum); comparisons with NaN are false.
 */
#include "cpu.h"

enum binop { B_ADD, B_SUB, B_MUL, B_DIV, B_POW, B_MAX, B_MIN, B_PRELU };
enum cmpop { C_GREATER, C_LESS, C_EQUAL };

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
    }
    return 0;
}

/*
 * Walks the output in order: the last axis in the inner loop, the others by counters. The
 * callback style would cost a call per element; instead `body` is a switch the compiler
 * hoists, called once per row.
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

static void
binary_rows(const struct walk *w, enum binop op, const real *a, const real *b, real *y)
{
    int nd = w->nd;
    int64_t len = nd > 0 ? w->shape[nd - 1] : 1;
    int64_t ia = nd > 0 ? w->sa[nd - 1] : 0, ib = nd > 0 ? w->sb[nd - 1] : 0;
    int64_t rows = 1;
    for (int i = 0; i + 1 < nd; i++)
        rows *= w->shape[i];
    if (len == 0)
        return;
    int64_t idx[GD_MAX_DIMS] = {0};
    int64_t oa = 0, ob = 0;
    for (int64_t r = 0; r < rows; r++) {
        real *yr = y + r * len;
        for (int64_t j = 0; j < len; j++)
            yr[j] = binop_apply(op, a[oa + j * ia], b[ob + j * ib]);
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

static int
binary(struct gd_op_call *c, enum binop op)
{
    struct walk w;
    walk_init(&w, c->in[0], c->in[1], c->out[0]);
    binary_rows(&w, op, c->in[0]->data, c->in[1]->data, c->out[0]->data);
    return 0;
}

/* Max and Min fold their inputs left to right into the output. */
static int
variadic(struct gd_op_call *c, enum binop op)
{
    struct gd_tensor *y = c->out[0];
    struct walk w;
    walk_init(&w, c->in[0], c->n_in > 1 ? c->in[1] : c->in[0], y);
    if (c->n_in == 1) {
        binary_rows(&w, op, c->in[0]->data, c->in[0]->data, y->data);
        return 0;
    }
    binary_rows(&w, op, c->in[0]->data, c->in[1]->data, y->data);
    for (int i = 2; i < c->n_in; i++) {
        walk_init(&w, y, c->in[i], y);
        binary_rows(&w, op, y->data, c->in[i]->data, y->data);
    }
    return 0;
}

static int
compare(struct gd_op_call *c, enum cmpop op)
{
    const struct gd_tensor *y = c->out[0];
    int64_t sa[GD_MAX_DIMS], sb[GD_MAX_DIMS], idx[GD_MAX_DIMS] = {0};
    bcast_strides(c->in[0], y, sa);
    bcast_strides(c->in[1], y, sb);
    const real *a = c->in[0]->data, *b = c->in[1]->data;
    uint8_t *out = y->data;
    int64_t n = gd_tensor_numel(y), oa = 0, ob = 0;
    for (int64_t k = 0; k < n; k++) {
        real va = a[oa], vb = b[ob];
        out[k] = op == C_GREATER ? va > vb : (op == C_LESS ? va < vb : va == vb);
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
