/*
 * norm_rules.h: how the normalizations (engine/core/infer_norm.c) group a tensor's elements
 * for their means and variances, and which scale and bias element each one takes. The CPU
 * backends and the CUDA kernels share it, so both walk the same elements of a group in the
 * same order. Compiled as host code by the C compiler and as host and device code by nvcc.
 */
#ifndef GPUDIFF_CORE_NORM_RULES_H
#define GPUDIFF_CORE_NORM_RULES_H

#include <stdint.h>

#include "index_rules.h"
#include "internal.h"

/*
 * The groups of a tensor of shape dim[ndim] whose statistics run over the axes in `reduced`
 * (bit a set: axis a is reduced): every combination of the kept axes is one group (groups in
 * C order of the kept axes), its elements every combination of the reduced axes (in C order:
 * the documented summation order). Adjacent axes of the same kind are merged.
 */
struct gd__norm_geom {
    int64_t groups, len;            /* how many groups; elements in each */
    int nk, nr;                     /* runs of kept and of reduced axes */
    int64_t k_dim[GD_MAX_DIMS], k_stride[GD_MAX_DIMS];
    int64_t r_dim[GD_MAX_DIMS], r_stride[GD_MAX_DIMS];
};

GD_INDEX_FN void
gd__norm_geom_init(struct gd__norm_geom *g, int ndim, const int64_t *dim, unsigned reduced)
{
    int64_t stride[GD_MAX_DIMS], s = 1;
    for (int a = ndim - 1; a >= 0; a--) {
        stride[a] = s;
        s *= dim[a];
    }
    g->groups = g->len = 1;
    g->nk = g->nr = 0;
    int prev = -1; /* kind of the previous axis: 0 kept, 1 reduced */
    for (int a = 0; a < ndim; a++) {
        int red = (reduced >> a) & 1u;
        int64_t *gdim = red ? g->r_dim : g->k_dim, *gstr = red ? g->r_stride : g->k_stride;
        int *n = red ? &g->nr : &g->nk;
        if (red == prev) { /* merge with the run before: its stride becomes this axis's */
            gdim[*n - 1] *= dim[a];
            gstr[*n - 1] = stride[a];
        } else {
            gdim[*n] = dim[a];
            gstr[*n] = stride[a];
            (*n)++;
        }
        if (red)
            g->len *= dim[a];
        else
            g->groups *= dim[a];
        prev = red;
    }
}

/* Offset of the first element of group grp. */
GD_INDEX_FN int64_t
gd__norm_group_offset(const struct gd__norm_geom *g, int64_t grp)
{
    int64_t off = 0;
    for (int i = g->nk - 1; i >= 0; i--) {
        off += grp % g->k_dim[i] * g->k_stride[i];
        grp /= g->k_dim[i];
    }
    return off;
}

/* Offset of element j of a group from the group's first element. */
GD_INDEX_FN int64_t
gd__norm_elem_offset(const struct gd__norm_geom *g, int64_t j)
{
    if (g->nr == 1)
        return j * g->r_stride[0];
    int64_t off = 0;
    for (int i = g->nr - 1; i >= 0; i--) {
        off += j % g->r_dim[i] * g->r_stride[i];
        j /= g->r_dim[i];
    }
    return off;
}

/*
 * Which element of a scale or bias tensor element j of group grp takes:
 * (grp % g_mod) * g_mul + the C-order coordinates of j over t_dim dotted with t_stride
 * (0 where the tensor broadcasts). BatchNormalization and InstanceNormalization: one per
 * channel (g_mod = C); LayerNormalization: broadcast over the normalized dimensions;
 * GroupNormalization: one per group, or one per channel of the group.
 */
struct gd__norm_affine {
    int64_t g_mod, g_mul;
    int nt;
    int64_t t_dim[GD_MAX_DIMS], t_stride[GD_MAX_DIMS];
};

GD_INDEX_FN int64_t
gd__norm_affine_index(const struct gd__norm_affine *f, int64_t grp, int64_t j)
{
    int64_t idx = grp % f->g_mod * f->g_mul;
    for (int i = f->nt - 1; i >= 0; i--) {
        idx += j % f->t_dim[i] * f->t_stride[i];
        j /= f->t_dim[i];
    }
    return idx;
}

/* Scale or bias of LayerNormalization, of shape s, broadcast over x's dims from axis. */
static inline void
gd__norm_affine_tail(struct gd__norm_affine *f, const struct gd_tensor *x, int axis,
                     const struct gd_tensor *s)
{
    f->g_mod = 1;
    f->g_mul = 0;
    f->nt = x->ndim - axis;
    int64_t stride = 1;
    for (int i = f->nt - 1; i >= 0; i--) {
        int k = i - (f->nt - s->ndim); /* s's axis under x's axis axis + i */
        int64_t d = k >= 0 ? s->shape[k] : 1;
        f->t_dim[i] = x->shape[axis + i];
        f->t_stride[i] = d == 1 ? 0 : stride;
        stride *= d;
    }
}

/*
 * The groups and the scale and bias indexing of a normalization call (host code): for
 * BatchNormalization (training), InstanceNormalization, LayerNormalization,
 * MeanVarianceNormalization and GroupNormalization. scale and bias may be NULL.
 */
static inline void
gd__norm_setup(const struct gd_op_call *c, struct gd__norm_geom *g, struct gd__norm_affine *scale,
               struct gd__norm_affine *bias)
{
    const struct gd_tensor *x = c->in[0];
    const struct gd_params *p = c->params;
    struct gd__norm_affine none = {1, 0, 0, {0}, {0}};
    struct gd__norm_affine per_channel = {x->ndim > 1 ? x->shape[1] : 1, 1, 0, {0}, {0}};
    *scale = *bias = none;
    if (c->node->op == GD_OP_GROUP_NORM) {
        int64_t groups = p->group, cg = x->shape[1] / groups, inner = 1;
        for (int a = 2; a < x->ndim; a++)
            inner *= x->shape[a];
        int64_t view[3] = {x->shape[0], groups, cg * inner};
        gd__norm_geom_init(g, 3, view, 1u << 2);
        for (int i = 1; i < 3; i++) {
            struct gd__norm_affine *f = i == 1 ? scale : bias;
            f->g_mod = groups;
            f->g_mul = 1;
            if (c->in[i]->shape[0] != groups) { /* one per channel (opset 21) */
                f->g_mul = cg;
                f->nt = 2;
                f->t_dim[0] = cg;
                f->t_dim[1] = inner;
                f->t_stride[0] = 1;
                f->t_stride[1] = 0;
            }
        }
        return;
    }
    unsigned reduced = 0;
    for (int i = 0; i < p->n_axes; i++)
        reduced |= 1u << p->axes[i];
    gd__norm_geom_init(g, x->ndim, x->shape, reduced);
    switch (c->node->op) {
    case GD_OP_BATCH_NORM:
    case GD_OP_INSTANCE_NORM:
        *scale = *bias = per_channel;
        break;
    case GD_OP_LAYER_NORM:
        gd__norm_affine_tail(scale, x, (int)p->axis, c->in[1]);
        if (c->n_in > 2 && c->in[2] != NULL)
            gd__norm_affine_tail(bias, x, (int)p->axis, c->in[2]);
        break;
    default:
        break;
    }
}

#endif
