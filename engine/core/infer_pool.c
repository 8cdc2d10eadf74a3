/*
 * infer_pool.c: attribute checks and output shapes for MaxPool (with its optional Indices),
 * AveragePool, GlobalAveragePool and GlobalMaxPool (ONNX semantics, 1 to 3 spatial axes,
 * held as 3-D: see struct gd_params).
 */
#include <string.h>

#include "internal.h"

static const char *const maxpool_attrs[] = {"auto_pad", "ceil_mode",    "dilations", "kernel_shape",
                                            "pads",     "storage_order", "strides",   NULL};
static const char *const avgpool_attrs[] = {"auto_pad", "ceil_mode", "count_include_pad",
                                            "dilations", "kernel_shape", "pads", "strides", NULL};

/*
 * Output length of one spatial axis. With ceil_mode the last window may start past the
 * input; it is dropped when it would start inside the end padding only (the rule PyTorch
 * and ONNX Runtime follow), so every window covers at least one real element.
 */
static int64_t
pool_out_len(int64_t in, int64_t k, int64_t s, int64_t d, int64_t pad_b, int64_t pad_e,
             int ceil_mode)
{
    int64_t span = d * (k - 1) + 1;
    int64_t room = in + pad_b + pad_e - span;
    if (room < 0)
        return 0;
    int64_t out = (ceil_mode ? (room + s - 1) / s : room / s) + 1;
    if (ceil_mode && (out - 1) * s >= in + pad_b)
        out--;
    return out;
}

static int
infer_window_pool(struct gd__infer_call *c, struct gd_err *err)
{
    const struct gd_node *n = c->node;
    const struct gd_shape *x = c->in[0];
    struct gd_params *p = c->params;
    int is_max = n->op == GD_OP_MAX_POOL;
    int rc = gd__attr_check_known(n, is_max ? maxpool_attrs : avgpool_attrs, err);
    if (rc != 0)
        return rc;
    if (c->n_out != 1 && !(is_max && c->n_out == 2))
        return gd_err_set(err, GD_EMODEL, "%s has %s", gd_op_name(n->op),
                          is_max ? "one or two outputs (Y, Indices)" : "one output");
    if (x->ndim < 3 || x->ndim > 2 + GD_MAX_SPATIAL)
        return gd_err_set(err, GD_ENOTSUP, "input has %d dimensions; 1-D (N,C,W), 2-D (N,C,H,W) "
                          "and 3-D (N,C,D,H,W) are supported", x->ndim);
    int ns = x->ndim - 2, lead = GD_MAX_SPATIAL - ns;
    int64_t ks[GD_MAX_SPATIAL];
    int nk = 0;
    rc = gd__attr_ints(n, "kernel_shape", ns, GD_MAX_SPATIAL, ks, &nk, err);
    if (rc != 0)
        return rc;
    if (nk == 0)
        return gd_err_set(err, GD_EMODEL, "kernel_shape is required");
    for (int a = 0; a < GD_MAX_SPATIAL; a++)
        p->kernel[a] = a < lead ? 1 : ks[a - lead];
    rc = gd__window_kernel(p->kernel, err);
    if (rc == 0)
        rc = gd__spatial_geometry(n, ns, 1, p, err);
    int64_t v;
    if (rc == 0)
        rc = gd__attr_int(n, "ceil_mode", 0, &v, err);
    if (rc != 0)
        return rc;
    p->ceil_mode = v != 0;
    if (!is_max) {
        rc = gd__attr_int(n, "count_include_pad", 0, &v, err);
        if (rc != 0)
            return rc;
        p->count_include_pad = v != 0;
        for (int a = 0; a < GD_MAX_SPATIAL; a++)
            if (p->dilations[a] != 1)
                return gd_err_set(err, GD_ENOTSUP, "AveragePool with dilations is not "
                                  "supported");
    } else {
        rc = gd__attr_int(n, "storage_order", 0, &v, err);
        if (rc == 0 && v != 0 && v != 1)
            rc = gd_err_set(err, GD_EMODEL, "storage_order is 0 (row major) or 1 (column "
                            "major), not %lld", (long long)v);
        if (rc != 0)
            return rc;
        p->storage_order = (int)v;
    }
    enum gd__auto_pad ap;
    rc = gd__auto_pad_read(n, &ap, err);
    if (rc != 0)
        return rc;
    int64_t in[GD_MAX_SPATIAL];
    rc = gd__spatial_in(x, in, err);
    if (rc != 0)
        return rc;
    if (ap == GD__PAD_SAME_UPPER || ap == GD__PAD_SAME_LOWER)
        gd__same_pads(ap == GD__PAD_SAME_UPPER, in, p);
    else if (ap == GD__PAD_VALID)
        memset(p->pads, 0, sizeof p->pads);
    int64_t out[GD_MAX_SPATIAL];
    for (int a = 0; a < GD_MAX_SPATIAL; a++) {
        int64_t span = p->dilations[a] * (p->kernel[a] - 1) + 1;
        if (p->pads[a] >= span || p->pads[a + GD_MAX_SPATIAL] >= span)
            return gd_err_set(err, GD_EMODEL, "pads must be smaller than the window");
        out[a] = pool_out_len(in[a], p->kernel[a], p->strides[a], p->dilations[a], p->pads[a],
                              p->pads[a + GD_MAX_SPATIAL], p->ceil_mode);
        if (out[a] < 1)
            return gd_err_set(err, GD_ESHAPE, "the window is larger than the padded input");
    }
    struct gd_shape *y = c->out[0];
    *y = *x;
    for (int i = 0; i < ns; i++)
        y->dim[2 + i] = out[lead + i];
    if (c->n_out == 2) {
        /* Indices: int64 positions in the flattened input, of Y's shape */
        *c->out[1] = *y;
        c->out_dtype[1] = GD_I64;
    }
    return 0;
}

static int
infer_global_pool(struct gd__infer_call *c, struct gd_err *err)
{
    const struct gd_shape *x = c->in[0];
    static const char *const none[] = {NULL};
    int rc = gd__attr_check_known(c->node, none, err);
    if (rc != 0)
        return rc;
    if (c->n_out != 1)
        return gd_err_set(err, GD_EMODEL, "%s has one output", gd_op_name(c->node->op));
    if (x->ndim < 3)
        return gd_err_set(err, GD_ESHAPE, "input needs (N, C, spatial...) dimensions, has %d",
                          x->ndim);
    struct gd_shape *y = c->out[0];
    *y = *x;
    for (int i = 2; i < x->ndim; i++)
        y->dim[i] = 1;
    return 0;
}

int
gd__infer_pool(struct gd__infer_call *c, struct gd_err *err)
{
    if (!gd_dtype_is_float(c->in_dtype[0]))
        return gd_err_set(err, GD_EDTYPE, "input must be floating point");
    if (c->node->op == GD_OP_GLOBAL_AVERAGE_POOL || c->node->op == GD_OP_GLOBAL_MAX_POOL)
        return infer_global_pool(c, err);
    return infer_window_pool(c, err);
}
