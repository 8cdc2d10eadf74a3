/*
 * infer_conv.c: attribute checks and output shapes for Conv and ConvTranspose (ONNX
 * semantics, 1-D or 2-D spatial; a 1-D op is handled as 2-D with height 1).
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
    if (x->ndim != 3 && x->ndim != 4)
        return gd_err_set(err, GD_ENOTSUP, "input has %d dimensions; 1-D (N,C,W) and 2-D "
                          "(N,C,H,W) are supported", x->ndim);
    if (w->ndim != x->ndim)
        return gd_err_set(err, GD_ESHAPE, "weight has %d dimensions, input %d", w->ndim,
                          x->ndim);
    if (!gd_dtype_is_float(c->in_dtype[0]) || !gd_dtype_is_float(c->in_dtype[1]))
        return gd_err_set(err, GD_EDTYPE, "input and weight must be floating point");
    int ns = x->ndim - 2;
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
    p->kernel[0] = ns == 2 ? w->dim[2] : 1;
    p->kernel[1] = w->dim[w->ndim - 1];
    int64_t ks[2];
    int nk = 0;
    rc = gd__attr_ints(n, "kernel_shape", ns, 2, ks, &nk, err);
    if (rc != 0)
        return rc;
    if (nk > 0 && (ks[0] != w->dim[2] || (ns == 2 && ks[1] != w->dim[3])))
        return gd_err_set(err, GD_ESHAPE, "kernel_shape does not match the weight's shape");
    int64_t cin = x->dim[1];
    int64_t cout;
    if (!transpose) {
        /* weight (M, C/group, kH, kW) */
        cout = w->dim[0];
        if (w->dim[1] * group != cin)
            return gd_err_set(err, GD_ESHAPE, "input has %lld channels; weight expects %lld x "
                              "group %lld", (long long)cin, (long long)w->dim[1],
                              (long long)group);
        if (cout % group != 0)
            return gd_err_set(err, GD_ESHAPE, "%lld output channels do not divide into %lld "
                              "groups", (long long)cout, (long long)group);
    } else {
        /* weight (C, M/group, kH, kW) */
        if (w->dim[0] != cin)
            return gd_err_set(err, GD_ESHAPE, "input has %lld channels; weight has %lld",
                              (long long)cin, (long long)w->dim[0]);
        if (cin % group != 0)
            return gd_err_set(err, GD_ESHAPE, "%lld input channels do not divide into %lld "
                              "groups", (long long)cin, (long long)group);
        cout = w->dim[1] * group;
    }
    if (b != NULL && (b->ndim != 1 || b->dim[0] != cout))
        return gd_err_set(err, GD_ESHAPE, "bias must have shape (%lld)", (long long)cout);
    enum gd__auto_pad ap;
    rc = gd__auto_pad_read(n, &ap, err);
    if (rc != 0)
        return rc;
    int64_t in_hw[2], out_hw[2];
    gd__spatial_in(x, in_hw);
    if (!transpose) {
        if (ap == GD__PAD_SAME_UPPER || ap == GD__PAD_SAME_LOWER)
            gd__same_pads(ap == GD__PAD_SAME_UPPER, in_hw, p);
        else if (ap == GD__PAD_VALID)
            memset(p->pads, 0, sizeof p->pads);
        for (int i = 0; i < 2; i++) {
            int64_t span = p->dilations[i] * (p->kernel[i] - 1) + 1;
            int64_t padded = in_hw[i] + p->pads[i] + p->pads[i + 2];
            if (padded < span)
                return gd_err_set(err, GD_ESHAPE, "the kernel (span %lld) is larger than the "
                                  "padded input (%lld)", (long long)span, (long long)padded);
            out_hw[i] = (padded - span) / p->strides[i] + 1;
        }
    } else {
        int64_t op[2], os[2];
        int n_os = 0;
        rc = gd__spatial_ints(n, "output_padding", ns, 0, 0, op, err);
        if (rc == 0)
            rc = gd__attr_ints(n, "output_shape", ns, 2, os, &n_os, err);
        if (rc != 0)
            return rc;
        for (int i = 0; i < 2; i++) {
            int64_t lim = p->strides[i] > p->dilations[i] ? p->strides[i] : p->dilations[i];
            if (op[i] < 0 || op[i] >= lim)
                return gd_err_set(err, GD_EMODEL, "output_padding %lld must be below the "
                                  "stride or the dilation", (long long)op[i]);
            p->output_padding[i] = op[i];
        }
        int64_t want[2] = {0, 0};
        if (n_os > 0) {
            want[0] = ns == 2 ? os[0] : 1;
            want[1] = os[ns - 1];
        } else if (ap == GD__PAD_SAME_UPPER || ap == GD__PAD_SAME_LOWER) {
            want[0] = in_hw[0] * p->strides[0];
            want[1] = in_hw[1] * p->strides[1];
        }
        for (int i = 0; i < 2; i++) {
            int64_t span = p->dilations[i] * (p->kernel[i] - 1) + 1;
            int64_t full = p->strides[i] * (in_hw[i] - 1) + p->output_padding[i] + span;
            if (want[i] > 0) {
                int64_t total = full - want[i];
                if (total < 0)
                    return gd_err_set(err, GD_ESHAPE, "output_shape is larger than the op "
                                      "can make");
                int upper = ap == GD__PAD_SAME_UPPER;
                p->pads[i] = upper ? total / 2 : total - total / 2;
                p->pads[i + 2] = upper ? total - total / 2 : total / 2;
            } else if (ap == GD__PAD_VALID) {
                p->pads[i] = p->pads[i + 2] = 0;
            }
            out_hw[i] = full - p->pads[i] - p->pads[i + 2];
            if (out_hw[i] < 1)
                return gd_err_set(err, GD_ESHAPE, "pads leave no output");
        }
    }
    struct gd_shape *y = c->out[0];
    y->ndim = x->ndim;
    y->dim[0] = x->dim[0];
    y->dim[1] = cout;
    if (ns == 2) {
        y->dim[2] = out_hw[0];
        y->dim[3] = out_hw[1];
    } else {
        y->dim[2] = out_hw[1];
    }
    return 0;
}

int
gd__infer_conv(struct gd__infer_call *c, struct gd_err *err)
{
    if (c->n_out != 1)
        return gd_err_set(err, GD_EMODEL, "%s has one output", gd_op_name(c->node->op));
    return conv_common(c, c->node->op == GD_OP_CONV_TRANSPOSE, err);
}
