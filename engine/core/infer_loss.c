/*
 * infer_loss.c: NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss (inference).
 *
 * Scores are (N, C) or (N, C, d1, ..., dk), targets (N) or (N, d1, ..., dk) of int32 or
 * int64 class numbers in [0, C) or equal to ignore_index, the optional weight (C). The loss
 * is the target-shaped per-position loss (reduction none) or a scalar (sum, mean);
 * SoftmaxCrossEntropyLoss's optional second output is the log-probabilities, scores-shaped.
 */
#include <stdint.h>
#include <string.h>

#include "internal.h"

/* Checks constant targets: each in [0, C) or the ignore_index. */
static int
check_const_targets(const struct gd_tensor *t, int64_t classes, const struct gd_params *p,
                    struct gd_err *err)
{
    int64_t n = gd_tensor_numel(t);
    for (int64_t i = 0; i < n; i++) {
        int64_t v = t->dtype == GD_I32 ? ((const int32_t *)t->data)[i]
                                       : ((const int64_t *)t->data)[i];
        if ((v < 0 || v >= classes) && !(p->has_ignore_index && v == p->ignore_index))
            return gd_err_set(err, GD_ERANGE,
                              "target %lld (element %lld) is not a class of %lld%s",
                              (long long)v, (long long)i, (long long)classes,
                              p->has_ignore_index ? " nor the ignore_index" : "");
    }
    return 0;
}

int
gd__infer_loss(struct gd__infer_call *c, struct gd_err *err)
{
    static const char *const known[] = {"reduction", "ignore_index", NULL};
    const struct gd_node *n = c->node;
    const struct gd_shape *x = c->in[0], *t = c->in[1];
    const struct gd_shape *w = c->n_in > 2 ? c->in[2] : NULL;
    struct gd_params *p = c->params;
    int sce = n->op == GD_OP_SCE_LOSS;
    const char *reduction;
    int rc = gd__attr_check_known(n, known, err);
    if (rc == 0)
        rc = gd__attr_string(n, "reduction", "mean", &reduction, err);
    if (rc == 0)
        rc = gd__attr_int(n, "ignore_index", 0, &p->ignore_index, err);
    if (rc != 0)
        return rc;
    p->has_ignore_index = gd_node_attr(n, "ignore_index") != NULL;
    if (strcmp(reduction, "none") == 0)
        p->loss_reduction = GD_LOSS_NONE;
    else if (strcmp(reduction, "sum") == 0)
        p->loss_reduction = GD_LOSS_SUM;
    else if (strcmp(reduction, "mean") == 0)
        p->loss_reduction = GD_LOSS_MEAN;
    else
        return gd_err_set(err, GD_EMODEL, "reduction %s (none, sum or mean)", reduction);
    if (c->n_out > (sce ? 2 : 1))
        return gd_err_set(err, GD_EMODEL, "%s has at most %d output%s", gd_op_name(n->op),
                          sce ? 2 : 1, sce ? "s" : "");
    if (!gd_dtype_is_float(c->in_dtype[0]) || (w != NULL && !gd_dtype_is_float(c->in_dtype[2])))
        return gd_err_set(err, GD_EDTYPE, "scores and weight must be floating point");
    if (c->in_dtype[1] != GD_I32 && c->in_dtype[1] != GD_I64)
        return gd_err_set(err, GD_EDTYPE, "targets must be int32 or int64, not %s",
                          gd_dtype_name(c->in_dtype[1]));
    if (x->ndim < 2)
        return gd_err_set(err, GD_ESHAPE, "scores must be (N, C) or (N, C, d1, ...), not %d-D",
                          x->ndim);
    int ok = t->ndim == x->ndim - 1 && t->dim[0] == x->dim[0];
    for (int i = 1; ok && i < t->ndim; i++)
        ok = t->dim[i] == x->dim[i + 1];
    if (!ok) {
        char a[96], b[96];
        return gd_err_set(err, GD_ESHAPE, "targets have shape %s for scores %s (N, d1, ... "
                          "without C)", gd_shape_format(t->ndim, t->dim, a, sizeof a),
                          gd_shape_format(x->ndim, x->dim, b, sizeof b));
    }
    if (w != NULL && (w->ndim != 1 || w->dim[0] != x->dim[1]))
        return gd_err_set(err, GD_ESHAPE, "weight must be a list of the %lld classes",
                          (long long)x->dim[1]);
    if (c->in_const[1] != NULL &&
        (rc = check_const_targets(c->in_const[1], x->dim[1], p, err)) != 0)
        return rc;
    if (p->loss_reduction == GD_LOSS_NONE)
        *c->out[0] = *t;
    else
        c->out[0]->ndim = 0;
    c->out_dtype[0] = c->in_dtype[0];
    if (c->n_out > 1) {
        *c->out[1] = *x;
        c->out_dtype[1] = c->in_dtype[0];
    }
    /* A sum or mean over the positions joins every row. */
    p->mixes_batch = p->loss_reduction != GD_LOSS_NONE;
    return 0;
}
