/*
 * infer_norm.c: attribute checks and output shapes of the normalizations:
 * BatchNormalization (inference, or training_mode=1 with the batch's own statistics and the
 * optional running mean and variance), LRN, InstanceNormalization, LayerNormalization (with
 * the optional Mean and InvStdDev outputs), MeanVarianceNormalization and
 * GroupNormalization (opset 18 and 21 forms). The axes each mean and variance runs over go to
 * params->axes (sorted), their element count to params->reduction_terms.
 */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* ONNX's default epsilon 1e-5 is a float32 attribute: 9.99999974737875e-06. */
#define DEFAULT_EPSILON ((double)1e-5f)

/* Every input must be floating point; GD_EDTYPE naming the first that is not. */
static int
float_inputs(const struct gd__infer_call *c, struct gd_err *err)
{
    for (int i = 0; i < c->n_in; i++)
        if (c->in[i] != NULL && !gd_dtype_is_float(c->in_dtype[i]))
            return gd_err_set(err, GD_EDTYPE, "input %d must be floating point", i);
    return 0;
}

/* The normalized axes [from, ndim) of x (or the listed ones) into params, with their size. */
static void
set_axes(struct gd_params *p, const struct gd_shape *x, const int64_t *axes, int n_axes)
{
    p->n_axes = n_axes;
    p->reduction_terms = 1;
    for (int i = 0; i < n_axes; i++) {
        p->axes[i] = axes[i];
        p->reduction_terms *= x->dim[axes[i]];
    }
}

static void
trailing_axes(struct gd_params *p, const struct gd_shape *x, int from)
{
    int64_t axes[GD_MAX_DIMS];
    for (int a = from; a < x->ndim; a++)
        axes[a - from] = a;
    set_axes(p, x, axes, x->ndim - from);
}

/* A per-channel input (scale, B, mean, var) must be (C). */
static int
per_channel(const struct gd__infer_call *c, int i, const char *what, int64_t channels,
            struct gd_err *err)
{
    const struct gd_shape *s = c->in[i];
    if (s == NULL)
        return gd_err_set(err, GD_EMODEL, "input %d (%s) is missing", i, what);
    if (s->ndim != 1 || s->dim[0] != channels)
        return gd_err_set(err, GD_ESHAPE, "%s must have shape (%lld)", what, (long long)channels);
    return 0;
}

static int
infer_batch_norm(struct gd__infer_call *c, struct gd_err *err)
{
    static const char *const known[] = {"epsilon", "momentum", "training_mode", "spatial",
                                        "is_test", "consumed_inputs", NULL};
    const struct gd_node *n = c->node;
    struct gd_params *p = c->params;
    int64_t training = 0, spatial = 1, is_test = -1;
    int rc = gd__attr_check_known(n, known, err);
    if (rc == 0)
        rc = gd__attr_float(n, "epsilon", DEFAULT_EPSILON, &p->epsilon, err);
    if (rc == 0)
        rc = gd__attr_float(n, "momentum", (double)0.9f, &p->momentum, err);
    if (rc == 0)
        rc = gd__attr_int(n, "training_mode", 0, &training, err);
    if (rc == 0)
        rc = gd__attr_int(n, "spatial", 1, &spatial, err);
    if (rc == 0)
        rc = gd__attr_int(n, "is_test", -1, &is_test, err);
    if (rc != 0)
        return rc;
    /* opset 6 and older say is_test=1 for inference, 0 for the batch's statistics */
    p->training_mode = is_test >= 0 ? is_test == 0 : training != 0;
    if (spatial != 1)
        return gd_err_set(err, GD_ENOTSUP, "spatial=0 is not supported");
    if (p->epsilon < 0)
        return gd_err_set(err, GD_EMODEL, "epsilon must not be negative");
    if (c->n_out < 1 || c->n_out > (p->training_mode ? 3 : 1))
        return gd_err_set(err, p->training_mode && c->n_out > 3 ? GD_ENOTSUP : GD_EMODEL,
                          "%s: %d outputs; inference has one (Y), training_mode three (Y, "
                          "running_mean, running_var; the saved statistics of opsets before 14 "
                          "are not supported)", p->training_mode ? "training mode" : "inference",
                          c->n_out);
    const struct gd_shape *x = c->in[0];
    if (x->ndim < 2)
        return gd_err_set(err, GD_ESHAPE, "input needs (N, C, ...) dimensions");
    static const char *const names[] = {"", "scale", "B", "mean", "var"};
    for (int i = 1; i < 5 && rc == 0; i++)
        rc = per_channel(c, i, names[i], x->dim[1], err);
    if (rc != 0)
        return rc;
    *c->out[0] = *x;
    p->reduction_terms = 1;
    if (p->training_mode) {
        /* each channel's mean and variance run over N and the spatial axes */
        int64_t axes[GD_MAX_DIMS];
        int k = 0;
        for (int a = 0; a < x->ndim; a++)
            if (a != 1)
                axes[k++] = a;
        set_axes(p, x, axes, k);
        for (int o = 1; o < c->n_out; o++)
            *c->out[o] = *c->in[o + 2];
        p->mixes_batch = 1;
    }
    return 0;
}

static int
infer_lrn(struct gd__infer_call *c, struct gd_err *err)
{
    static const char *const known[] = {"alpha", "beta", "bias", "size", NULL};
    const struct gd_node *n = c->node;
    struct gd_params *p = c->params;
    int rc = gd__attr_check_known(n, known, err);
    if (rc == 0 && gd_node_attr(n, "size") == NULL)
        rc = gd_err_set(err, GD_EMODEL, "size is required");
    if (rc == 0)
        rc = gd__attr_int(n, "size", 1, &p->lrn_size, err);
    if (rc == 0)
        rc = gd__attr_float(n, "alpha", (double)1e-4f, &p->alpha, err);
    if (rc == 0)
        rc = gd__attr_float(n, "beta", 0.75, &p->beta, err);
    if (rc == 0)
        rc = gd__attr_float(n, "bias", 1.0, &p->lrn_bias, err);
    if (rc != 0)
        return rc;
    if (p->lrn_size < 1)
        return gd_err_set(err, GD_EMODEL, "size must be at least 1, not %lld",
                          (long long)p->lrn_size);
    const struct gd_shape *x = c->in[0];
    if (x->ndim < 2)
        return gd_err_set(err, GD_ESHAPE, "input needs (N, C, ...) dimensions");
    /* the window: channels c - floor((size - 1) / 2) .. c + ceil((size - 1) / 2) */
    p->reduction_terms = p->lrn_size < x->dim[1] ? p->lrn_size : x->dim[1];
    *c->out[0] = *x;
    return 0;
}

static int
infer_instance_norm(struct gd__infer_call *c, struct gd_err *err)
{
    static const char *const known[] = {"epsilon", NULL};
    struct gd_params *p = c->params;
    int rc = gd__attr_check_known(c->node, known, err);
    if (rc == 0)
        rc = gd__attr_float(c->node, "epsilon", DEFAULT_EPSILON, &p->epsilon, err);
    if (rc != 0)
        return rc;
    const struct gd_shape *x = c->in[0];
    if (x->ndim < 3)
        return gd_err_set(err, GD_ESHAPE, "input needs (N, C, D1, ...) dimensions, has %d",
                          x->ndim);
    rc = per_channel(c, 1, "scale", x->dim[1], err);
    if (rc == 0)
        rc = per_channel(c, 2, "B", x->dim[1], err);
    if (rc != 0)
        return rc;
    trailing_axes(p, x, 2);
    *c->out[0] = *x;
    return 0;
}

/* stash_type: the precision of the statistics; only float (1), what the backends compute in
 * (cpu64 computes everything in float64). */
static int
stash_type(const struct gd_node *n, struct gd_err *err)
{
    int64_t stash;
    int rc = gd__attr_int(n, "stash_type", 1, &stash, err);
    if (rc == 0 && stash != 1)
        rc = gd_err_set(err, GD_ENOTSUP, "stash_type %lld is not supported (only 1, float)",
                        (long long)stash);
    return rc;
}

/* Scale or B of LayerNormalization: broadcastable to x's normalized dims (numpy rules). */
static int
broadcasts_to_tail(const struct gd_shape *s, const struct gd_shape *x, int axis, const char *what,
                   struct gd_err *err)
{
    int tail = x->ndim - axis;
    int ok = s->ndim <= tail;
    for (int i = 1; ok && i <= s->ndim; i++)
        ok = s->dim[s->ndim - i] == 1 || s->dim[s->ndim - i] == x->dim[x->ndim - i];
    if (!ok) {
        char a[96], b[96];
        return gd_err_set(err, GD_ESHAPE, "%s of shape %s does not broadcast to the normalized "
                          "dimensions of %s from axis %d", what,
                          gd_shape_format(s->ndim, s->dim, a, sizeof a),
                          gd_shape_format(x->ndim, x->dim, b, sizeof b), axis);
    }
    return 0;
}

static int
infer_layer_norm(struct gd__infer_call *c, struct gd_err *err)
{
    static const char *const known[] = {"axis", "epsilon", "stash_type", NULL};
    const struct gd_node *n = c->node;
    struct gd_params *p = c->params;
    const struct gd_shape *x = c->in[0];
    int64_t axis;
    int rc = gd__attr_check_known(n, known, err);
    if (rc == 0)
        rc = gd__attr_int(n, "axis", -1, &axis, err);
    if (rc == 0)
        rc = gd__attr_float(n, "epsilon", DEFAULT_EPSILON, &p->epsilon, err);
    if (rc == 0)
        rc = stash_type(n, err);
    if (rc == 0 && x->ndim < 1)
        rc = gd_err_set(err, GD_ESHAPE, "input must have at least one dimension");
    if (rc == 0)
        rc = gd__axis_norm(axis, x->ndim, &p->axis, err);
    if (rc == 0)
        rc = broadcasts_to_tail(c->in[1], x, (int)p->axis, "Scale", err);
    if (rc == 0 && c->n_in > 2 && c->in[2] != NULL)
        rc = broadcasts_to_tail(c->in[2], x, (int)p->axis, "B", err);
    if (rc != 0)
        return rc;
    if (c->n_out > 3)
        return gd_err_set(err, GD_EMODEL, "LayerNormalization has at most three outputs (Y, "
                          "Mean, InvStdDev)");
    trailing_axes(p, x, (int)p->axis);
    *c->out[0] = *x;
    for (int o = 1; o < c->n_out; o++) {
        /* Mean and InvStdDev: x's shape with the normalized dimensions 1; stash_type 1 keeps
         * them in float32 for a float16 or bfloat16 x (ONNX's U) */
        *c->out[o] = *x;
        for (int a = (int)p->axis; a < x->ndim; a++)
            c->out[o]->dim[a] = 1;
        enum gd_dtype xt = c->in_dtype[0];
        c->out_dtype[o] = xt == GD_F16 || xt == GD_BF16 ? GD_F32 : xt;
    }
    p->mixes_batch = p->axis == 0;
    return 0;
}

static int
cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

static int
infer_mvn(struct gd__infer_call *c, struct gd_err *err)
{
    static const char *const known[] = {"axes", NULL};
    const struct gd_shape *x = c->in[0];
    int64_t axes[GD_MAX_DIMS] = {0, 2, 3};
    int n_axes = 3;
    int rc = gd__attr_check_known(c->node, known, err);
    if (rc == 0 && gd_node_attr(c->node, "axes") != NULL)
        rc = gd__attr_ints(c->node, "axes", -1, GD_MAX_DIMS, axes, &n_axes, err);
    if (rc != 0)
        return rc;
    if (n_axes == 0)
        return gd_err_set(err, GD_EMODEL, "axes is empty");
    for (int i = 0; i < n_axes; i++) {
        rc = gd__axis_norm(axes[i], x->ndim, &axes[i], err);
        if (rc != 0)
            return gd_err_prefix(err, "axes (default [0, 2, 3]): ");
    }
    qsort(axes, (size_t)n_axes, sizeof axes[0], cmp_i64);
    for (int i = 1; i < n_axes; i++)
        if (axes[i] == axes[i - 1])
            return gd_err_set(err, GD_EMODEL, "axis %lld is given twice", (long long)axes[i]);
    set_axes(c->params, x, axes, n_axes);
    /* ONNX's definition: (X - mean) / (sqrt(variance) + 1e-9), its epsilon a float32 */
    c->params->epsilon = (double)1e-9f;
    c->params->mixes_batch = axes[0] == 0;
    *c->out[0] = *x;
    return 0;
}

static int
infer_group_norm(struct gd__infer_call *c, struct gd_err *err)
{
    static const char *const known[] = {"epsilon", "num_groups", "stash_type", NULL};
    const struct gd_node *n = c->node;
    struct gd_params *p = c->params;
    const struct gd_shape *x = c->in[0];
    int rc = gd__attr_check_known(n, known, err);
    if (rc == 0 && gd_node_attr(n, "num_groups") == NULL)
        rc = gd_err_set(err, GD_EMODEL, "num_groups is required");
    if (rc == 0)
        rc = gd__attr_int(n, "num_groups", 1, &p->group, err);
    if (rc == 0)
        rc = gd__attr_float(n, "epsilon", DEFAULT_EPSILON, &p->epsilon, err);
    if (rc == 0)
        rc = stash_type(n, err);
    if (rc != 0)
        return rc;
    if (x->ndim < 2)
        return gd_err_set(err, GD_ESHAPE, "input needs (N, C, ...) dimensions");
    if (p->group < 1 || x->dim[1] % p->group != 0)
        return gd_err_set(err, GD_ESHAPE, "%lld channels do not divide into num_groups %lld",
                          (long long)x->dim[1], (long long)p->group);
    /* scale and bias: one per group (opset 18) or one per channel (opset 21) */
    for (int i = 1; i < 3; i++) {
        const struct gd_shape *s = c->in[i];
        if (s->ndim != 1 || (s->dim[0] != p->group && s->dim[0] != x->dim[1]))
            return gd_err_set(err, GD_ESHAPE, "%s must have shape (%lld) (one per group) or "
                              "(%lld) (one per channel)", i == 1 ? "scale" : "bias",
                              (long long)p->group, (long long)x->dim[1]);
    }
    /* each group: C / num_groups channels and every spatial position */
    p->n_axes = 0;
    p->reduction_terms = x->dim[1] / p->group;
    for (int a = 2; a < x->ndim; a++)
        p->reduction_terms *= x->dim[a];
    *c->out[0] = *x;
    return 0;
}

int
gd__infer_norm(struct gd__infer_call *c, struct gd_err *err)
{
    int rc = float_inputs(c, err);
    if (rc != 0)
        return rc;
    if (c->node->op != GD_OP_BATCH_NORM && c->node->op != GD_OP_LAYER_NORM && c->n_out != 1)
        return gd_err_set(err, GD_EMODEL, "%s has one output", gd_op_name(c->node->op));
    switch (c->node->op) {
    case GD_OP_BATCH_NORM:
        return infer_batch_norm(c, err);
    case GD_OP_LRN:
        return infer_lrn(c, err);
    case GD_OP_INSTANCE_NORM:
        return infer_instance_norm(c, err);
    case GD_OP_LAYER_NORM:
        return infer_layer_norm(c, err);
    case GD_OP_MEAN_VARIANCE_NORM:
        return infer_mvn(c, err);
    case GD_OP_GROUP_NORM:
        return infer_group_norm(c, err);
    default:
        return gd_err_set(err, GD_EINVAL, "not a normalization");
    }
}
