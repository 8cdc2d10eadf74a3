/* infer_eltwise.c: binary and variadic pointwise ops with numpy broadcasting; the output has
 * the first input's dtype (comparisons give bool). Floats of every width for all (they may
 * mix: every float is computed in the backend's compute dtype); integers, all of one dtype,
 * for the arithmetic, Mod, Max, Min and the comparisons; bool for Equal. */
#include "elt_rules.h"
#include "internal.h"

/* Whether op takes inputs of dtype dt. */
static int
dtype_allowed(enum gd_op op, enum gd_dtype dt)
{
    if (gd_dtype_is_float(dt))
        return 1;
    switch (op) {
    case GD_OP_ADD:
    case GD_OP_SUB:
    case GD_OP_MUL:
    case GD_OP_DIV:
    case GD_OP_MOD:
    case GD_OP_MAX:
    case GD_OP_MIN:
    case GD_OP_GREATER:
    case GD_OP_LESS:
    case GD_OP_GREATER_OR_EQUAL:
    case GD_OP_LESS_OR_EQUAL:
        return gd__dtype_integer(dt);
    case GD_OP_EQUAL:
        return gd__dtype_integer(dt) || dt == GD_BOOL;
    default: /* Pow, PRelu, Sum, Mean */
        return 0;
    }
}

static int
is_comparison(enum gd_op op)
{
    return op == GD_OP_GREATER || op == GD_OP_LESS || op == GD_OP_EQUAL ||
           op == GD_OP_GREATER_OR_EQUAL || op == GD_OP_LESS_OR_EQUAL;
}

int
gd__infer_eltwise(struct gd__infer_call *c, struct gd_err *err)
{
    static const char *const none[] = {NULL};
    static const char *const mod[] = {"fmod", NULL};
    const struct gd_node *n = c->node;
    int rc = gd__attr_check_known(n, n->op == GD_OP_MOD ? mod : none, err);
    if (rc != 0)
        return rc;
    if (c->n_out != 1)
        return gd_err_set(err, GD_EMODEL, "%s has one output", gd_op_name(n->op));
    for (int i = 0; i < c->n_in; i++) {
        if (c->in[i] == NULL)
            return gd_err_set(err, GD_EMODEL, "input %d is missing", i);
        int both_float = gd_dtype_is_float(c->in_dtype[i]) && gd_dtype_is_float(c->in_dtype[0]);
        if (c->in_dtype[i] != c->in_dtype[0] && !both_float)
            return gd_err_set(err, GD_EDTYPE, "input %d is %s, input 0 %s: they must be the same",
                              i, gd_dtype_name(c->in_dtype[i]), gd_dtype_name(c->in_dtype[0]));
    }
    enum gd_dtype dt = c->in_dtype[0];
    if (!dtype_allowed(n->op, dt))
        return gd_err_set(err, GD_EDTYPE, "%s does not take %s inputs", gd_op_name(n->op),
                          gd_dtype_name(dt));
    if (n->op == GD_OP_MOD) {
        int64_t fmod;
        rc = gd__attr_int(n, "fmod", 0, &fmod, err);
        if (rc != 0)
            return rc;
        if (fmod != 0 && fmod != 1)
            return gd_err_set(err, GD_EMODEL, "fmod must be 0 or 1, not %lld", (long long)fmod);
        /* ONNX: the integer Mod (sign of the divisor) is not defined for floats */
        if (fmod == 0 && gd_dtype_is_float(dt))
            return gd_err_set(err, GD_EMODEL, "Mod of %s inputs needs fmod=1", gd_dtype_name(dt));
        c->params->fmod = (int)fmod;
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
    c->out_dtype[0] = is_comparison(n->op) ? GD_BOOL : dt;
    return 0;
}
