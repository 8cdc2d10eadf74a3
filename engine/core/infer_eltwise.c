/* infer_eltwise.c: binary and variadic pointwise ops with numpy broadcasting; comparisons
 * give bool. */
#include "internal.h"

int
gd__infer_eltwise(struct gd__infer_call *c, struct gd_err *err)
{
    static const char *const none[] = {NULL};
    const struct gd_node *n = c->node;
    int rc = gd__attr_check_known(n, none, err);
    if (rc != 0)
        return rc;
    if (c->n_out != 1)
        return gd_err_set(err, GD_EMODEL, "%s has one output", gd_op_name(n->op));
    for (int i = 0; i < c->n_in; i++) {
        if (c->in[i] == NULL)
            return gd_err_set(err, GD_EMODEL, "input %d is missing", i);
        if (!gd_dtype_is_float(c->in_dtype[i]))
            return gd_err_set(err, GD_EDTYPE, "input %d must be floating point, not %s", i,
                              gd_dtype_name(c->in_dtype[i]));
    }
    struct gd_shape y = *c->in[0];
    for (int i = 1; i < c->n_in; i++) {
        rc = gd__broadcast_shape(&y, c->in[i], &y, err);
        if (rc != 0)
            return rc;
    }
    if (n->op == GD_OP_PRELU) {
        /* The slope broadcasts to X; the output keeps X's shape. */
        const struct gd_shape *x = c->in[0];
        int same = y.ndim == x->ndim;
        for (int i = 0; same && i < x->ndim; i++)
            same = y.dim[i] == x->dim[i];
        if (!same)
            return gd_err_set(err, GD_ESHAPE, "slope does not broadcast to the input's shape");
    }
    *c->out[0] = y;
    if (n->op == GD_OP_GREATER || n->op == GD_OP_LESS || n->op == GD_OP_EQUAL)
        c->out_dtype[0] = GD_BOOL;
    return 0;
}
