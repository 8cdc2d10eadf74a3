/*
 * fold_int.c: the folds of integer arithmetic (Add to Xor, Not, Mod, Range, the reductions):
 * exact in int64, an overflow refused (GD_ERANGE), bool results for the comparisons.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fold_internal.h"
#include "move.h"

/* ---- integer arithmetic ---- */

enum int_op {
    I_ADD,
    I_SUB,
    I_MUL,
    I_DIV,
    I_MOD,
    I_FMOD,
    I_MIN,
    I_MAX,
    I_EQ,
    I_LT,
    I_GT,
    I_LE,
    I_GE,
    I_AND,
    I_OR,
    I_XOR
};

static int
int_apply(enum int_op op, int64_t a, int64_t b, int64_t *r, struct gd_err *err)
{
    switch (op) {
    case I_ADD:
        if (__builtin_add_overflow(a, b, r))
            goto overflow;
        return 0;
    case I_SUB:
        if (__builtin_sub_overflow(a, b, r))
            goto overflow;
        return 0;
    case I_MUL:
        if (__builtin_mul_overflow(a, b, r))
            goto overflow;
        return 0;
    case I_DIV: /* truncates toward zero, as onnxruntime's integer Div does */
    case I_MOD:
    case I_FMOD:
        if (b == 0)
            return gd_err_set(err, GD_EINVAL, "integer division by zero");
        if (a == INT64_MIN && b == -1)
            goto overflow;
        if (op == I_DIV) {
            *r = a / b;
        } else {
            *r = a % b; /* fmod=1: the sign of the dividend (C's %) */
            if (op == I_MOD && *r != 0 && ((*r < 0) != (b < 0)))
                *r += b; /* fmod=0: the sign of the divisor (Python's %) */
        }
        return 0;
    case I_MIN:
        *r = a < b ? a : b;
        return 0;
    case I_MAX:
        *r = a > b ? a : b;
        return 0;
    case I_EQ:
        *r = a == b;
        return 0;
    case I_LT:
        *r = a < b;
        return 0;
    case I_GT:
        *r = a > b;
        return 0;
    case I_LE:
        *r = a <= b;
        return 0;
    case I_GE:
        *r = a >= b;
        return 0;
    case I_AND:
        *r = (a != 0) && (b != 0);
        return 0;
    case I_OR:
        *r = (a != 0) || (b != 0);
        return 0;
    case I_XOR:
        *r = (a != 0) != (b != 0);
        return 0;
    }
overflow:
    return gd_err_set(err, GD_ERANGE, "int64 overflow computing with %lld and %lld", (long long)a,
                      (long long)b);
}

/* Applies op left to right over the broadcast inputs (Min and Max take several). */
static int
fold_int_nary(struct gd__fold_call *c, enum int_op op, enum gd_dtype out_dtype, struct gd_err *err)
{
    for (int i = 0; i < c->n_in; i++) {
        if (c->in[i]->dtype != c->in[0]->dtype)
            return gd_err_set(err, GD_EMODEL, "input %d is %s, input 0 %s", i,
                              gd_dtype_name(c->in[i]->dtype), gd_dtype_name(c->in[0]->dtype));
        int rc = gd__fold_check_u64(c->in[i], err);
        if (rc != 0)
            return rc;
    }
    struct gd_shape s;
    int rc = gd__fold_broadcast_all(c, 0, c->n_in, &s, err);
    if (rc != 0)
        return rc;
    struct gd_tensor *t = gd__fold_new_tensor(out_dtype, &s, err);
    if (t == NULL)
        return err ? err->code : GD_ENOMEM;
    int64_t idx[GD_MAX_DIMS] = {0}, n = gd__shape_numel(&s);
    for (int64_t o = 0; o < n && rc == 0; o++) {
        int64_t acc = gd_tensor_get_i64(c->in[0], gd__fold_bcast_offset(c->in[0], s.ndim, idx));
        for (int i = 1; i < c->n_in && rc == 0; i++)
            rc = int_apply(
                op, acc, gd_tensor_get_i64(c->in[i], gd__fold_bcast_offset(c->in[i], s.ndim, idx)),
                &acc, err);
        if (rc == 0)
            rc = gd__fold_put_int(t, o, acc, err);
        gd__fold_index_next(&s, idx);
    }
    if (rc != 0) {
        gd_tensor_free(t);
        return rc;
    }
    c->out[0] = t;
    return 0;
}

#define INT_BINARY(fname, op)                                                                      \
    static int fname(struct gd__fold_call *c, struct gd_err *err)                                  \
    {                                                                                              \
        return fold_int_nary(c, op, c->in[0]->dtype, err);                                         \
    }
#define INT_COMPARE(fname, op)                                                                     \
    static int fname(struct gd__fold_call *c, struct gd_err *err)                                  \
    {                                                                                              \
        return fold_int_nary(c, op, GD_BOOL, err);                                                 \
    }
INT_BINARY(fold_add, I_ADD)
INT_BINARY(fold_sub, I_SUB)
INT_BINARY(fold_mul, I_MUL)
INT_BINARY(fold_div, I_DIV)
INT_BINARY(fold_min, I_MIN)
INT_BINARY(fold_max, I_MAX)
INT_COMPARE(fold_equal, I_EQ)
INT_COMPARE(fold_less, I_LT)
INT_COMPARE(fold_greater, I_GT)
INT_COMPARE(fold_less_equal, I_LE)
INT_COMPARE(fold_greater_equal, I_GE)
INT_COMPARE(fold_and, I_AND)
INT_COMPARE(fold_or, I_OR)
INT_COMPARE(fold_xor, I_XOR)

static int
fold_mod(struct gd__fold_call *c, struct gd_err *err)
{
    int64_t fmod;
    int rc = gd__attr_int(&c->view, "fmod", 0, &fmod, err);
    return rc != 0 ? rc : fold_int_nary(c, fmod ? I_FMOD : I_MOD, c->in[0]->dtype, err);
}

/* Neg, Abs, Not: one input. */
static int
fold_int_unary(struct gd__fold_call *c, const char *op, struct gd_err *err)
{
    const struct gd_tensor *x = c->in[0];
    int rc = gd__fold_check_u64(x, err);
    if (rc != 0)
        return rc;
    struct gd_shape s;
    gd__fold_shape_of(x, &s);
    struct gd_tensor *t = gd__fold_new_tensor(x->dtype, &s, err);
    if (t == NULL)
        return err ? err->code : GD_ENOMEM;
    for (int64_t i = 0; i < gd_tensor_numel(x) && rc == 0; i++) {
        int64_t v = gd_tensor_get_i64(x, i);
        if (strcmp(op, "Not") == 0)
            v = !v;
        else if (v == INT64_MIN)
            rc = gd_err_set(err, GD_ERANGE, "int64 overflow negating %lld", (long long)v);
        else if (strcmp(op, "Neg") == 0 || v < 0)
            v = -v;
        if (rc == 0)
            rc = gd__fold_put_int(t, i, v, err);
    }
    if (rc != 0) {
        gd_tensor_free(t);
        return rc;
    }
    c->out[0] = t;
    return 0;
}

static int
fold_neg(struct gd__fold_call *c, struct gd_err *err)
{
    return fold_int_unary(c, "Neg", err);
}

static int
fold_abs(struct gd__fold_call *c, struct gd_err *err)
{
    return fold_int_unary(c, "Abs", err);
}

static int
fold_not(struct gd__fold_call *c, struct gd_err *err)
{
    if (c->in[0]->dtype != GD_BOOL)
        return gd_err_set(err, GD_EMODEL, "Not takes bool, not %s", gd_dtype_name(c->in[0]->dtype));
    return fold_int_unary(c, "Not", err);
}

static int
fold_range(struct gd__fold_call *c, struct gd_err *err)
{
    int64_t v[3];
    for (int i = 0; i < 3; i++) {
        if (gd_tensor_numel(c->in[i]) != 1)
            return gd_err_set(err, GD_EMODEL, "input %d must hold one value", i);
        int rc = gd__fold_check_u64(c->in[i], err);
        if (rc != 0)
            return rc;
        v[i] = gd_tensor_get_i64(c->in[i], 0);
    }
    int64_t start = v[0], limit = v[1], delta = v[2], span;
    if (delta == 0)
        return gd_err_set(err, GD_EINVAL, "delta is 0");
    /* span / -1 overflows for span = INT64_MIN (a range of 2^63 values) */
    if (__builtin_sub_overflow(limit, start, &span) || (span == INT64_MIN && delta == -1))
        return gd_err_set(err, GD_ERANGE, "int64 overflow in the range's length");
    /* max(ceil(span / delta), 0) in integers */
    int64_t n = span / delta + ((span % delta != 0) && ((span < 0) == (delta < 0)));
    if (n < 0)
        n = 0;
    struct gd_tensor *t = gd__fold_tensor(c->in[0]->dtype, 1, &n, err);
    if (t == NULL)
        return err ? err->code : GD_ENOMEM;
    int rc = 0;
    for (int64_t i = 0; i < n && rc == 0; i++)
        rc = gd__fold_put_int(t, i, start + i * delta, err);
    if (rc != 0) {
        gd_tensor_free(t);
        return rc;
    }
    c->out[0] = t;
    return 0;
}

/* ReduceProd, ReduceSum, ReduceMin, ReduceMax on integers. */
static int
fold_reduce(struct gd__fold_call *c, enum int_op op, int64_t init, struct gd_err *err)
{
    const struct gd_tensor *x = c->in[0];
    int64_t axes[GD_MAX_DIMS], keepdims, noop;
    int n = 0;
    int rc = gd__fold_check_u64(x, err);
    if (rc == 0)
        rc = gd__attr_int(&c->view, "keepdims", 1, &keepdims, err);
    if (rc == 0)
        rc = gd__attr_int(&c->view, "noop_with_empty_axes", 0, &noop, err);
    if (rc == 0)
        rc = gd__fold_read_axes(c, x->ndim, axes, &n, err);
    if (rc != 0)
        return rc;
    if (n == 0 && noop)
        return gd__fold_identity(c, err);
    int reduced[GD_MAX_DIMS] = {0};
    for (int i = 0; i < n; i++)
        reduced[axes[i]] = 1;
    if (n == 0)
        for (int d = 0; d < x->ndim; d++)
            reduced[d] = 1;
    struct gd_shape s = {0}, kept;
    gd__fold_shape_of(x, &kept);
    for (int d = 0; d < x->ndim; d++) {
        if (reduced[d])
            kept.dim[d] = 1;
        if (!reduced[d] || keepdims)
            s.dim[s.ndim++] = kept.dim[d];
    }
    struct gd_tensor *t = gd__fold_new_tensor(x->dtype, &s, err);
    if (t == NULL)
        return err ? err->code : GD_ENOMEM;
    int64_t n_out = gd__shape_numel(&s);
    int64_t *acc = malloc((size_t)(n_out ? n_out : 1) * sizeof *acc);
    if (acc == NULL) {
        gd_tensor_free(t);
        return gd_err_set(err, GD_ENOMEM, "out of memory");
    }
    for (int64_t o = 0; o < n_out; o++)
        acc[o] = init;
    int64_t idx[GD_MAX_DIMS] = {0};
    struct gd_shape xs;
    gd__fold_shape_of(x, &xs);
    for (int64_t i = 0; i < gd_tensor_numel(x) && rc == 0; i++) {
        int64_t o = 0;
        for (int d = 0; d < x->ndim; d++)
            o = o * kept.dim[d] + (reduced[d] ? 0 : idx[d]);
        rc = int_apply(op, acc[o], gd_tensor_get_i64(x, i), &acc[o], err);
        gd__fold_index_next(&xs, idx);
    }
    for (int64_t o = 0; o < n_out && rc == 0; o++)
        rc = gd__fold_put_int(t, o, acc[o], err);
    free(acc);
    if (rc != 0) {
        gd_tensor_free(t);
        return rc;
    }
    c->out[0] = t;
    return 0;
}

static int
fold_reduce_prod(struct gd__fold_call *c, struct gd_err *err)
{
    return fold_reduce(c, I_MUL, 1, err);
}

static int
fold_reduce_sum(struct gd__fold_call *c, struct gd_err *err)
{
    return fold_reduce(c, I_ADD, 0, err);
}

static int
fold_reduce_min(struct gd__fold_call *c, struct gd_err *err)
{
    return fold_reduce(c, I_MIN, INT64_MAX, err);
}

static int
fold_reduce_max(struct gd__fold_call *c, struct gd_err *err)
{
    return fold_reduce(c, I_MAX, INT64_MIN, err);
}

/* ---- the ops of this file, for fold.c's lookup ---- */

const struct gd__fold_op gd__fold_int_ops[] = {
    {"Add", fold_add, GD__FOLD_INT, 2, 2},
    {"Sub", fold_sub, GD__FOLD_INT, 2, 2},
    {"Mul", fold_mul, GD__FOLD_INT, 2, 2},
    {"Div", fold_div, GD__FOLD_INT, 2, 2},
    {"Mod", fold_mod, GD__FOLD_INT, 2, 2},
    {"Neg", fold_neg, GD__FOLD_INT, 1, 1},
    {"Abs", fold_abs, GD__FOLD_INT, 1, 1},
    {"Min", fold_min, GD__FOLD_INT, 1, GD__MAX_OP_INPUTS},
    {"Max", fold_max, GD__FOLD_INT, 1, GD__MAX_OP_INPUTS},
    {"Equal", fold_equal, GD__FOLD_INT, 2, 2},
    {"Less", fold_less, GD__FOLD_INT, 2, 2},
    {"Greater", fold_greater, GD__FOLD_INT, 2, 2},
    {"LessOrEqual", fold_less_equal, GD__FOLD_INT, 2, 2},
    {"GreaterOrEqual", fold_greater_equal, GD__FOLD_INT, 2, 2},
    {"And", fold_and, GD__FOLD_INT, 2, 2},
    {"Or", fold_or, GD__FOLD_INT, 2, 2},
    {"Xor", fold_xor, GD__FOLD_INT, 2, 2},
    {"Not", fold_not, GD__FOLD_INT, 1, 1},
    {"Range", fold_range, GD__FOLD_INT, 3, 3},
    {"ReduceProd", fold_reduce_prod, GD__FOLD_INT, 1, 2},
    {"ReduceSum", fold_reduce_sum, GD__FOLD_INT, 1, 2},
    {"ReduceMin", fold_reduce_min, GD__FOLD_INT, 1, 2},
    {"ReduceMax", fold_reduce_max, GD__FOLD_INT, 1, 2},
};
const int gd__fold_int_ops_count = (int)(sizeof gd__fold_int_ops / sizeof gd__fold_int_ops[0]);
