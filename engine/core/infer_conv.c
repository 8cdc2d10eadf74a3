/*
 * infer_conv.c: attribute checks and output shapes for Conv and ConvTranspose (ONNX
 * semantics, 1 to 3 spatial axes, held as 3-D: see struct gd_params).
 */
#include <string.h>

#include "internal.h"

static const char *const conv_attrs[] = {"auto_pad", "dilations", "group", "kernel_shape",
                                         "pads", "strides", NULL};
static const char *const convt_attrs[] = {"auto_pad",       "dilations",    "group",
                                          "kernel_shape",   "output_padding", "output_shape",
                                          "pads",           "strides",      NULL};

static int
conv_common(struct gd__infer_call *c, int transpose, struct gd_err *err)
{
    const struct gd_node *n = c->node;
    const struct gd_shape *x = c->in[0], *w = c->in[1], *b = c->n_in > 2 ? c->in[2] : NULL;
    struct gd_params *p = c->params;
    int rc = gd__attr_check_known(n, transpose ? convt_attrs : conv_attrs, err);
    if (rc != 0)
        return rc;
    if (x->ndim < 3 || x->ndim > 2 + GD_MAX_SPATIAL)
        return gd_err_set(err, GD_ENOTSUP, "input has %d dimensions; 1-D (N,C,W), 2-D (N,C,H,W) "
                          "and 3-D (N,C,D,H,W) are supported", x->ndim);
    if (w->ndim != x->ndim)
        return gd_err_set(err, GD_ESHAPE, "weight has %d dimensions, input %d", w->ndim,
                          x->ndim);
    if (!gd_dtype_is_float(c->in_dtype[0]) || !gd_dtype_is_float(c->in_dtype[1]))
        return gd_err_set(err, GD_EDTYPE, "input and weight must be floating point");
    int ns = x->ndim - 2, lead = GD_MAX_SPATIAL - ns;
    int64_t group;
    rc = gd__attr_int(n, "group", 1, &group, err);
    if (rc != 0)
        return rc;
    if (group < 1)
        return gd_err_set(err, GD_EMODEL, "group must be at least 1, not %lld", (long long)group);
    p->group = group;
    rc = gd__spatial_geometry(n, ns, 1, p, err);
    if (rc != 0)
        return rc;
    for (int a = 0; a < GD_MAX_SPATIAL; a++)
        p->kernel[a] = a < lead ? 1 : w->dim[2 + a - lead];
    rc = gd__window_kernel(p->kernel, err);
    if (rc != 0)
        return rc;
    int64_t ks[GD_MAX_SPATIAL];
    int nk = 0;
    rc = gd__attr_ints(n, "kernel_shape", ns, GD_MAX_SPATIAL, ks, &nk, err);
    if (rc != 0)
        return rc;
    for (int i = 0; i < nk; i++)
        if (ks[i] != w->dim[2 + i])
            return gd_err_set(err, GD_ESHAPE, "kernel_shape does not match the weight's shape");
    int64_t cin = x->dim[1];
    int64_t cout;
    if (!transpose) {
        /* weight (M, C/group, k...) */
        cout = w->dim[0];
        int64_t want_cin;
        if (__builtin_mul_overflow(w->dim[1], group, &want_cin) || want_cin != cin)
            return gd_err_set(err, GD_ESHAPE, "input has %lld channels; weight expects %lld x "
                              "group %lld", (long long)cin, (long long)w->dim[1],
                              (long long)group);
        if (cout % group != 0)
            return gd_err_set(err, GD_ESHAPE, "%lld output channels do not divide into %lld "
                              "groups", (long long)cout, (long long)group);
    } else {
        /* weight (C, M/group, k...) */
        if (w->dim[0] != cin)
            return gd_err_set(err, GD_ESHAPE, "input has %lld channels; weight has %lld",
                              (long long)cin, (long long)w->dim[0]);
        if (cin % group != 0)
            return gd_err_set(err, GD_ESHAPE, "%lld input channels do not divide into %lld "
                              "groups", (long long)cin, (long long)group);
        if (__builtin_mul_overflow(w->dim[1], group, &cout))
            return gd_err_set(err, GD_ESHAPE, "%lld output channels per group x %lld groups "
                              "is too many", (long long)w->dim[1], (long long)group);
    }
    if (b != NULL && (b->ndim != 1 || b->dim[0] != cout))
        return gd_err_set(err, GD_ESHAPE, "bias must have shape (%lld)", (long long)cout);
    enum gd__auto_pad ap;
    rc = gd__auto_pad_read(n, &ap, err);
    if (rc != 0)
        return rc;
    int64_t in[GD_MAX_SPATIAL], out[GD_MAX_SPATIAL];
    rc = gd__spatial_in(x, in, err);
    if (rc != 0)
        return rc;
    if (!transpose) {
        if (ap == GD__PAD_SAME_UPPER || ap == GD__PAD_SAME_LOWER)
            gd__same_pads(ap == GD__PAD_SAME_UPPER, in, p);
        else if (ap == GD__PAD_VALID)
            memset(p->pads, 0, sizeof p->pads);
        for (int a = 0; a < GD_MAX_SPATIAL; a++) {
            int64_t span = p->dilations[a] * (p->kernel[a] - 1) + 1;
            int64_t padded = in[a] + p->pads[a] + p->pads[a + GD_MAX_SPATIAL];
            if (padded < span)
                return gd_err_set(err, GD_ESHAPE, "the kernel (span %lld) is larger than the "
                                  "padded input (%lld)", (long long)span, (long long)padded);
            out[a] = (padded - span) / p->strides[a] + 1;
        }
    } else {
        int64_t op[GD_MAX_SPATIAL], os[GD_MAX_SPATIAL];
        int n_os = 0;
        rc = gd__spatial_ints(n, "output_padding", ns, 0, 0, op, err);
        if (rc == 0)
            rc = gd__attr_ints(n, "output_shape", ns, GD_MAX_SPATIAL, os, &n_os, err);
        if (rc != 0)
            return rc;
        for (int a = 0; a < GD_MAX_SPATIAL; a++) {
            int64_t lim = p->strides[a] > p->dilations[a] ? p->strides[a] : p->dilations[a];
            if (op[a] < 0 || op[a] >= lim)
                return gd_err_set(err, GD_EMODEL, "output_padding %lld must be below the "
                                  "stride or the dilation", (long long)op[a]);
            p->output_padding[a] = op[a];
        }
        int64_t want[GD_MAX_SPATIAL] = {0, 0, 0};
        for (int a = lead; a < GD_MAX_SPATIAL; a++) {
            if (n_os > 0 && os[a - lead] < 1)
                return gd_err_set(err, GD_EMODEL, "output_shape %lld is not positive",
                                  (long long)os[a - lead]);
            if (n_os > 0)
                want[a] = os[a - lead];
            else if ((ap == GD__PAD_SAME_UPPER || ap == GD__PAD_SAME_LOWER) &&
                     __builtin_mul_overflow(in[a], p->strides[a], &want[a]))
                return gd_err_set(err, GD_ESHAPE, "the output would be too large");
        }
        for (int a = 0; a < GD_MAX_SPATIAL; a++) {
            int64_t span = p->dilations[a] * (p->kernel[a] - 1) + 1;
            int64_t full;
            if (__builtin_mul_overflow(p->strides[a], in[a] - 1, &full) ||
                __builtin_add_overflow(full, p->output_padding[a] + span, &full))
                return gd_err_set(err, GD_ESHAPE, "the output would be too large");
            int64_t *pb = &p->pads[a], *pe = &p->pads[a + GD_MAX_SPATIAL];
            if (want[a] > 0) {
                /* an output_shape larger than the op makes gives negative pads (ONNX's
                 * reference): outputs beyond the full result receive no term */
                int64_t total = full - want[a];
                int64_t half = total >= 0 ? total / 2 : -((1 - total) / 2); /* floor */
                int upper = ap == GD__PAD_SAME_UPPER;
                *pb = upper ? half : total - half;
                *pe = upper ? total - half : half;
            } else if (ap == GD__PAD_VALID) {
                *pb = *pe = 0;
            }
            out[a] = full - *pb - *pe;
            if (out[a] < 1)
                return gd_err_set(err, GD_ESHAPE, "pads leave no output");
        }
    }
    struct gd_shape *y = c->out[0];
    y->ndim = x->ndim;
    y->dim[0] = x->dim[0];
    y->dim[1] = cout;
    for (int i = 0; i < ns; i++)
        y->dim[2 + i] = out[lead + i];
    return 0;
}

int
gd__infer_conv(struct gd__infer_call *c, struct gd_err *err)
{
    if (c->n_out != 1)
        return gd_err_set(err, GD_EMODEL, "%s has one output", gd_op_name(c->node->op));
    return conv_common(c, c->node->op == GD_OP_CONV_TRANSPOSE, err);
}
