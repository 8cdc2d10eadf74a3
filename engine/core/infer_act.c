/* infer_act.c: the pointwise unary ops: attribute defaults as ONNX gives them; the output
 * has the input's shape and dtype. Floats of every width; Abs and Sign also take integers,
 * Neg signed integers. */
#include <math.h>
#include <string.h>

#include "elt_rules.h"
#include "internal.h"

static int
infer_clip(struct gd__infer_call *c, struct gd_err *err)
{
    static const char *const known[] = {"min", "max", NULL};
    struct gd_params *p = c->params;
    int rc = gd__attr_check_known(c->node, known, err);
    /* Opset 6 gives min/max as attributes; opset 11 and later as optional inputs. */
    if (rc == 0)
        rc = gd__attr_float(c->node, "min", -INFINITY, &p->clip_min, err);
    if (rc == 0)
        rc = gd__attr_float(c->node, "max", INFINITY, &p->clip_max, err);
    static const char *const names[] = {"", "min", "max"};
    for (int i = 1; i < c->n_in && rc == 0; i++) {
        if (c->in[i] == NULL)
            continue;
        if (c->in_const[i] == NULL)
            return gd_err_set(err, GD_ENOTSUP, "%s must be a constant (a weight)", names[i]);
        rc = gd__const_scalar(c->in_const[i], names[i], i == 1 ? &p->clip_min : &p->clip_max,
                              err);
    }
    return rc;
}

int
gd__infer_act(struct gd__infer_call *c, struct gd_err *err)
{
    const struct gd_node *n = c->node;
    struct gd_params *p = c->params;
    int rc = 0;
    enum gd_dtype dt = c->in_dtype[0];
    int int_ok = n->op == GD_OP_ABS || n->op == GD_OP_SIGN ||
                 (n->op == GD_OP_NEG && !gd__dtype_unsigned(dt));
    if (!gd_dtype_is_float(dt) && !(int_ok && gd__dtype_integer(dt)))
        return gd_err_set(err, GD_EDTYPE, "input must be floating point%s, not %s",
                          n->op == GD_OP_NEG ? " or a signed integer"
                                             : (int_ok ? " or an integer" : ""),
                          gd_dtype_name(dt));
    if (c->n_out != 1)
        return gd_err_set(err, GD_EMODEL, "%s has one output", gd_op_name(n->op));
    static const char *const none[] = {NULL};
    static const char *const alpha[] = {"alpha", NULL};
    static const char *const alpha_beta[] = {"alpha", "beta", NULL};
    static const char *const selu[] = {"alpha", "gamma", NULL};
    static const char *const gelu[] = {"approximate", NULL};
    static const char *const shrink[] = {"bias", "lambd", NULL};
    /*
     * ONNX float attributes are float32, so a default like 0.01 is the float32 nearest it
     * (0.00999999977648258...): that is the value cpu64 must use too.
     */
    switch (n->op) {
    case GD_OP_LEAKY_RELU:
        rc = gd__attr_check_known(n, alpha, err);
        if (rc == 0)
            rc = gd__attr_float(n, "alpha", (double)0.01f, &p->alpha, err);
        break;
    case GD_OP_ELU:
        rc = gd__attr_check_known(n, alpha, err);
        if (rc == 0)
            rc = gd__attr_float(n, "alpha", 1.0, &p->alpha, err);
        break;
    case GD_OP_SELU:
        /* ONNX's defaults are these float32 values, written exactly. */
        rc = gd__attr_check_known(n, selu, err);
        if (rc == 0)
            rc = gd__attr_float(n, "alpha", 1.67326319217681884765625, &p->alpha, err);
        if (rc == 0)
            rc = gd__attr_float(n, "gamma", 1.05070102214813232421875, &p->gamma, err);
        break;
    case GD_OP_HARD_SIGMOID:
        rc = gd__attr_check_known(n, alpha_beta, err);
        if (rc == 0)
            rc = gd__attr_float(n, "alpha", (double)0.2f, &p->alpha, err);
        if (rc == 0)
            rc = gd__attr_float(n, "beta", 0.5, &p->beta, err);
        break;
    case GD_OP_GELU: {
        const char *mode;
        rc = gd__attr_check_known(n, gelu, err);
        if (rc == 0)
            rc = gd__attr_string(n, "approximate", "none", &mode, err);
        if (rc == 0 && strcmp(mode, "none") != 0 && strcmp(mode, "tanh") != 0)
            rc = gd_err_set(err, GD_EMODEL, "approximate must be none or tanh, not %s", mode);
        if (rc == 0)
            p->gelu_tanh = strcmp(mode, "tanh") == 0;
        break;
    }
    case GD_OP_CLIP:
        rc = infer_clip(c, err);
        break;
    case GD_OP_THRESHOLDED_RELU:
        rc = gd__attr_check_known(n, alpha, err);
        if (rc == 0)
            rc = gd__attr_float(n, "alpha", 1.0, &p->alpha, err);
        break;
    case GD_OP_CELU:
        rc = gd__attr_check_known(n, alpha, err);
        if (rc == 0)
            rc = gd__attr_float(n, "alpha", 1.0, &p->alpha, err);
        if (rc == 0 && p->alpha == 0)
            rc = gd_err_set(err, GD_EMODEL, "alpha must not be 0 (Celu divides by it)");
        break;
    case GD_OP_SHRINK:
        rc = gd__attr_check_known(n, shrink, err);
        if (rc == 0)
            rc = gd__attr_float(n, "bias", 0.0, &p->bias, err);
        if (rc == 0)
            rc = gd__attr_float(n, "lambd", 0.5, &p->lambd, err);
        break;
    default:
        rc = gd__attr_check_known(n, none, err);
        break;
    }
    if (rc != 0)
        return rc;
    *c->out[0] = *c->in[0];
    c->out_dtype[0] = dt;
    return 0;
}
