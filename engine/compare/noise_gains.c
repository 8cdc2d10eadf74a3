/*
 * noise_gains.c: how much a difference in a layer input grows through a linear op
 * (noise_internal.h): the largest sum of |coefficients| (l1), |sum of coefficients|
 * (shift) and root sum of squares (l2) over the outputs, from the whole weights, fixed for a
 * mean or a sum, from the other operand's kept rows for a product of two layers.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../core/internal.h"
#include "noise_internal.h"

/* Element i of a host tensor as a double: float32 and float64 read directly (the gains walk
 * whole weights, hundreds of millions of elements), the rest through gd_tensor_get_f64. */
static inline double
elem(const struct gd_tensor *t, int64_t i)
{
    if (t->dtype == GD_F32)
        return ((const float *)t->data)[i];
    if (t->dtype == GD_F64)
        return ((const double *)t->data)[i];
    return gd_tensor_get_f64(t, i);
}

/* The three gains of a block of coefficients, folded into the largest of each seen. */
static void
gain_fold(struct gd__gain3 *g, double abs_sum, double sum, double sq_sum)
{
    g->l1 = fmax(g->l1, abs_sum);
    g->shift = fmax(g->shift, fabs(sum));
    g->l2 = fmax(g->l2, sqrt(sq_sum));
}

/* The gains of the columns of t seen as (outer, K, N), K = shape[k_axis]: a matrix's columns
 * (the coefficients one output of x W takes), over its batch. */
static struct gd__gain3
column_gains(const struct gd_tensor *t, int k_axis)
{
    int64_t outer = 1, kdim = t->shape[k_axis], inner = 1;
    for (int d = 0; d < k_axis; d++)
        outer *= t->shape[d];
    for (int d = k_axis + 1; d < t->ndim; d++)
        inner *= t->shape[d];
    struct gd__gain3 g = {0, 0, 0};
    double *acc = calloc((size_t)(inner > 0 ? inner : 1) * 3, sizeof *acc);
    if (acc == NULL) /* no gains: the comparison falls back on its rule */
        return (struct gd__gain3){NAN, NAN, NAN};
    for (int64_t o = 0; o < outer; o++) {
        memset(acc, 0, (size_t)inner * 3 * sizeof *acc);
        for (int64_t k = 0; k < kdim; k++) /* row by row, in memory order */
            for (int64_t j = 0; j < inner; j++) {
                double v = elem(t, (o * kdim + k) * inner + j);
                acc[3 * j] += fabs(v), acc[3 * j + 1] += v, acc[3 * j + 2] += v * v;
            }
        for (int64_t j = 0; j < inner; j++)
            gain_fold(&g, acc[3 * j], acc[3 * j + 1], acc[3 * j + 2]);
    }
    free(acc);
    return g;
}

/* The gains of t's blocks along axis 0 (a convolution's filter per output channel). */
static struct gd__gain3
block_gains(const struct gd_tensor *t, int64_t blocks)
{
    int64_t n = gd_tensor_numel(t), per = blocks > 0 ? n / blocks : 0;
    struct gd__gain3 g = {0, 0, 0};
    for (int64_t b = 0; b < blocks; b++) {
        double a = 0, s = 0, q = 0;
        for (int64_t i = 0; i < per; i++) {
            double v = elem(t, b * per + i);
            a += fabs(v), s += v, q += v * v;
        }
        gain_fold(&g, a, s, q);
    }
    return g;
}

/* The tensor a slot holds for gain purposes: a weight, or a runtime value's kept rows. */
static const struct gd_tensor *
slot_tensor(const struct gd_noise_collector *c, int v)
{
    const struct gd_value *val = &c->g->values[v];
    return val->constant != NULL ? val->constant : c->vals[v].data;
}

void
gd__noise_gain_add(struct gd_noise_probe *p, const char *name, struct gd__gain3 g, double factor)
{
    g.l1 *= factor, g.shift *= factor, g.l2 *= factor;
    for (int i = 0; i < p->n_gains; i++)
        if (strcmp(p->gains[i].input, name) == 0) {
            p->gains[i].l1 += g.l1, p->gains[i].shift += g.shift, p->gains[i].l2 += g.l2;
            return;
        }
    if (p->n_gains < GD_NOISE_GAINS && strlen(name) < sizeof p->gains[0].input && isfinite(g.l1) &&
        isfinite(g.shift) && isfinite(g.l2)) {
        struct gd_noise_gain *o = &p->gains[p->n_gains++];
        snprintf(o->input, sizeof o->input, "%s", name);
        o->l1 = g.l1, o->shift = g.shift, o->l2 = g.l2;
    }
}

/* Ops linear in their layer inputs: their gains come from their coefficients. */
int
gd__noise_linear_op(enum gd_op op)
{
    switch (op) {
    case GD_OP_GEMM:
    case GD_OP_MATMUL:
    case GD_OP_CONV:
    case GD_OP_CONV_TRANSPOSE:
    case GD_OP_AVERAGE_POOL:
    case GD_OP_GLOBAL_AVERAGE_POOL:
    case GD_OP_REDUCE_MEAN:
    case GD_OP_REDUCE_SUM:
    case GD_OP_SUM:
    case GD_OP_MEAN:
        return 1;
    default:
        return 0;
    }
}

/*
 * The gains of node n's layer inputs (struct gd_noise_probe): exact where the coefficients
 * are the whole weights or fixed (a mean's 1/n each), from the kept rows where they are the
 * other operand of a product of two layers. terms is the cut node's reduction length. Ops
 * that are not linear in their inputs get none.
 */
void
gd__noise_gains(const struct gd_noise_collector *c, const struct gd_node *n, int64_t terms,
                struct gd_noise_probe *p)
{
    const struct gd_graph *g = c->g;
    int in0 = n->n_inputs > 0 ? n->inputs[0] : -1, in1 = n->n_inputs > 1 ? n->inputs[1] : -1;
    int layer0 = in0 >= 0 && g->values[in0].constant == NULL;
    int layer1 = in1 >= 0 && g->values[in1].constant == NULL;
    const struct gd_tensor *t0 = in0 >= 0 ? slot_tensor(c, in0) : NULL;
    const struct gd_tensor *t1 = in1 >= 0 ? slot_tensor(c, in1) : NULL;
    double dn = (double)(terms > 0 ? terms : 1);
    struct gd__gain3 mean = {1.0, 1.0, 1.0 / sqrt(dn)}, sum = {dn, dn, sqrt(dn)}, one = {1, 1, 1};
    switch (n->op) {
    case GD_OP_GEMM: {
        double alpha = fabs(n->params.alpha);
        if (in0 == in1)
            return;                                /* x times itself is not linear in x */
        if (layer0 && t1 != NULL && t1->ndim == 2) /* the columns of op(B) */
            gd__noise_gain_add(p, g->values[in0].name, column_gains(t1, n->params.trans_b ? 1 : 0),
                               alpha);
        if (layer1 && t0 != NULL && t0->ndim == 2) /* the rows of op(A) */
            gd__noise_gain_add(p, g->values[in1].name, column_gains(t0, n->params.trans_a ? 0 : 1),
                               alpha);
        return;
    }
    case GD_OP_MATMUL:
        if (in0 == in1 || t0 == NULL || t1 == NULL || t0->ndim < 1 || t1->ndim < 1)
            return;
        if (layer0)
            gd__noise_gain_add(p, g->values[in0].name,
                               column_gains(t1, t1->ndim >= 2 ? t1->ndim - 2 : 0), 1.0);
        if (layer1)
            gd__noise_gain_add(p, g->values[in1].name, column_gains(t0, t0->ndim - 1), 1.0);
        return;
    case GD_OP_CONV:
        if (layer0 && !layer1 && t1 != NULL && t1->ndim >= 1)
            gd__noise_gain_add(p, g->values[in0].name, block_gains(t1, t1->shape[0]), 1.0);
        return;
    case GD_OP_CONV_TRANSPOSE:
        if (layer0 && !layer1 && t1 != NULL && t1->ndim >= 2) {
            /* W is (Cin, Cout/group, k...): an output channel's taps over its group's inputs */
            int64_t groups = n->params.group > 1 ? n->params.group : 1;
            int64_t cin = t1->shape[0], cout_g = t1->shape[1], per = 1;
            for (int d = 2; d < t1->ndim; d++)
                per *= t1->shape[d];
            struct gd__gain3 gg = {0, 0, 0};
            for (int64_t gi = 0; gi < groups; gi++)
                for (int64_t co = 0; co < cout_g; co++) {
                    double a = 0, s = 0, q = 0;
                    for (int64_t ci = gi * (cin / groups); ci < (gi + 1) * (cin / groups); ci++)
                        for (int64_t k = 0; k < per; k++) {
                            double v = elem(t1, (ci * cout_g + co) * per + k);
                            a += fabs(v), s += v, q += v * v;
                        }
                    gain_fold(&gg, a, s, q);
                }
            gd__noise_gain_add(p, g->values[in0].name, gg, 1.0);
        }
        return;
    case GD_OP_AVERAGE_POOL:
    case GD_OP_GLOBAL_AVERAGE_POOL:
    case GD_OP_REDUCE_MEAN:
        if (layer0)
            gd__noise_gain_add(p, g->values[in0].name, mean, 1.0);
        return;
    case GD_OP_REDUCE_SUM:
        if (layer0)
            gd__noise_gain_add(p, g->values[in0].name, sum, 1.0);
        return;
    case GD_OP_SUM:
    case GD_OP_MEAN:
        for (int i = 0; i < n->n_inputs; i++) {
            int v = n->inputs[i];
            if (v >= 0 && g->values[v].constant == NULL)
                gd__noise_gain_add(p, g->values[v].name, one,
                                   n->op == GD_OP_SUM ? 1.0 : 1.0 / n->n_inputs);
        }
        return;
    default:
        return;
    }
}
