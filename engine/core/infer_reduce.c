/* infer_reduce.c: reductions along axes (ReduceMean, ReduceSum, ReduceMax), along one axis
 * (Softmax, LogSoftmax: opset 13 semantics; ArgMax). */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

static int
cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

static int
infer_reduce_axes(struct gd__infer_call *c, struct gd_err *err)
{
    static const char *const known[] = {"axes", "keepdims", "noop_with_empty_axes", NULL};
    const struct gd_node *n = c->node;
    const struct gd_shape *x = c->in[0];
    struct gd_params *p = c->params;
    int64_t keepdims, noop, axes[GD_MAX_DIMS];
    int n_axes = 0;
    int rc = gd__attr_check_known(n, known, err);
    if (rc == 0)
        rc = gd__attr_int(n, "keepdims", 1, &keepdims, err);
    if (rc == 0)
        rc = gd__attr_int(n, "noop_with_empty_axes", 0, &noop, err);
    if (rc == 0)
        rc = gd__attr_ints(n, "axes", -1, GD_MAX_DIMS, axes, &n_axes, err);
    if (rc != 0)
        return rc;
    /* Opset 13 (ReduceSum) and 18 (the others) moved axes to an optional input. */
    if (c->n_in > 1 && c->in[1] != NULL) {
        if (n_axes > 0)
            return gd_err_set(err, GD_EMODEL, "axes given both as attribute and as input");
        if (c->in_const[1] == NULL)
            return gd_err_set(err, GD_ENOTSUP, "axes must be a constant (a weight)");
        rc = gd__const_ints(c->in_const[1], "axes", GD_MAX_DIMS, axes, &n_axes, err);
        if (rc != 0)
            return rc;
    }
    p->keepdims = keepdims != 0;
    if (n_axes == 0 && noop) {
        p->n_axes = 0;
        *c->out[0] = *x;
        return 0;
    }
    if (n_axes == 0) {
        for (int i = 0; i < x->ndim; i++)
            axes[i] = i;
        n_axes = x->ndim;
    }
    for (int i = 0; i < n_axes; i++) {
        rc = gd__axis_norm(axes[i], x->ndim, &axes[i], err);
        if (rc != 0)
            return rc;
    }
    qsort(axes, (size_t)n_axes, sizeof *axes, cmp_i64);
    for (int i = 1; i < n_axes; i++)
        if (axes[i] == axes[i - 1])
            return gd_err_set(err, GD_EMODEL, "axis %lld is given twice", (long long)axes[i]);
    p->n_axes = n_axes;
    memcpy(p->axes, axes, (size_t)n_axes * sizeof *axes);
    p->mixes_batch = n_axes > 0 && axes[0] == 0; /* reduces over the batch (axes sorted) */
    struct gd_shape *y = c->out[0];
    y->ndim = 0;
    for (int i = 0, k = 0; i < x->ndim; i++) {
        int reduced = k < n_axes && axes[k] == i;
        if (reduced)
            k++;
        if (!reduced)
            y->dim[y->ndim++] = x->dim[i];
        else if (p->keepdims)
            y->dim[y->ndim++] = 1;
    }
    return 0;
}

static int
infer_one_axis(struct gd__infer_call *c, struct gd_err *err)
{
    static const char *const softmax[] = {"axis", NULL};
    static const char *const argmax[] = {"axis", "keepdims", "select_last_index", NULL};
    const struct gd_node *n = c->node;
    const struct gd_shape *x = c->in[0];
    struct gd_params *p = c->params;
    int is_argmax = n->op == GD_OP_ARGMAX;
    int64_t axis, keepdims = 1, last = 0;
    int rc = gd__attr_check_known(n, is_argmax ? argmax : softmax, err);
    if (rc == 0)
        rc = gd__attr_int(n, "axis", is_argmax ? 0 : -1, &axis, err);
    if (rc == 0 && is_argmax)
        rc = gd__attr_int(n, "keepdims", 1, &keepdims, err);
    if (rc == 0 && is_argmax)
        rc = gd__attr_int(n, "select_last_index", 0, &last, err);
    if (rc == 0)
        rc = gd__axis_norm(axis, x->ndim, &p->axis, err);
    if (rc != 0)
        return rc;
    if (x->dim[p->axis] == 0 && is_argmax)
        return gd_err_set(err, GD_ESHAPE, "ArgMax over an empty axis");
    p->mixes_batch = p->axis == 0; /* along the batch axis */
    struct gd_shape *y = c->out[0];
    *y = *x;
    if (is_argmax) {
        p->keepdims = keepdims != 0;
        p->select_last_index = last != 0;
        c->out_dtype[0] = GD_I64;
        if (p->keepdims) {
            y->dim[p->axis] = 1;
        } else {
            for (int i = (int)p->axis; i < x->ndim - 1; i++)
                y->dim[i] = x->dim[i + 1];
            y->ndim--;
        }
    }
    return 0;
}

int
gd__infer_reduce(struct gd__infer_call *c, struct gd_err *err)
{
    if (!gd_dtype_is_float(c->in_dtype[0]))
        return gd_err_set(err, GD_EDTYPE, "input must be floating point");
    if (c->n_out != 1)
        return gd_err_set(err, GD_EMODEL, "%s has one output", gd_op_name(c->node->op));
    switch (c->node->op) {
    case GD_OP_SOFTMAX:
    case GD_OP_LOG_SOFTMAX:
    case GD_OP_ARGMAX:
        if (c->in[0]->ndim < 1)
            return gd_err_set(err, GD_ESHAPE, "input must have at least one dimension");
        return infer_one_axis(c, err);
    default:
        return infer_reduce_axes(c, err);
    }
}
