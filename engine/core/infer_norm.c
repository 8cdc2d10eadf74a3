/* infer_norm.c: BatchNormalization in inference mode. */
#include "internal.h"

int
gd__infer_norm(struct gd__infer_call *c, struct gd_err *err)
{
    static const char *const known[] = {"epsilon", "momentum", "training_mode", "spatial", NULL};
    const struct gd_node *n = c->node;
    int rc = gd__attr_check_known(n, known, err);
    int64_t training = 0, spatial = 1;
    /* ONNX's default 1e-5 is a float32 attribute: 9.99999974737875e-06 */
    if (rc == 0)
        rc = gd__attr_float(n, "epsilon", (double)1e-5f, &c->params->epsilon, err);
    if (rc == 0)
        rc = gd__attr_int(n, "training_mode", 0, &training, err);
    if (rc == 0)
        rc = gd__attr_int(n, "spatial", 1, &spatial, err);
    if (rc != 0)
        return rc;
    if (training != 0 || c->n_out != 1)
        return gd_err_set(err, GD_ENOTSUP, "only inference mode (one output) is supported");
    if (spatial != 1)
        return gd_err_set(err, GD_ENOTSUP, "spatial=0 is not supported");
    if (c->params->epsilon < 0)
        return gd_err_set(err, GD_EMODEL, "epsilon must not be negative");
    const struct gd_shape *x = c->in[0];
    if (x->ndim < 2)
        return gd_err_set(err, GD_ESHAPE, "input needs (N, C, ...) dimensions");
    static const char *const names[] = {"", "scale", "B", "mean", "var"};
    for (int i = 0; i < 5; i++) {
        if (!gd_dtype_is_float(c->in_dtype[i]))
            return gd_err_set(err, GD_EDTYPE, "input %d must be floating point", i);
        if (i > 0 && (c->in[i]->ndim != 1 || c->in[i]->dim[0] != x->dim[1]))
            return gd_err_set(err, GD_ESHAPE, "%s must have shape (%lld)", names[i],
                              (long long)x->dim[1]);
    }
    *c->out[0] = *x;
    return 0;
}
