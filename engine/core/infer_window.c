/*
 * infer_window.c: window geometry shared by the convolutions and the pools: strides,
 * dilations, pads in ONNX order, auto_pad, and 1-D ops treated as 2-D with height 1.
 */
#include <string.h>

#include "internal.h"

int
gd__spatial_ints(const struct gd_node *n, const char *name, int ns, int64_t dflt, int64_t fill,
             int64_t *out, struct gd_err *err)
{
    int64_t v[2];
    int got = 0;
    int rc = gd__attr_ints(n, name, ns, 2, v, &got, err);
    if (rc != 0)
        return rc;
    if (got == 0) {
        out[0] = out[1] = dflt;
    } else if (ns == 1) {
        out[0] = fill;
        out[1] = v[0];
    } else {
        out[0] = v[0];
        out[1] = v[1];
    }
    return 0;
}

static int
spatial_pads(const struct gd_node *n, int ns, int64_t *pads, struct gd_err *err)
{
    int64_t v[4];
    int got = 0;
    int rc = gd__attr_ints(n, "pads", 2 * ns, 4, v, &got, err);
    if (rc != 0)
        return rc;
    memset(pads, 0, 4 * sizeof *pads);
    if (got == 0)
        return 0;
    if (ns == 1) {
        pads[1] = v[0];
        pads[3] = v[1];
    } else {
        memcpy(pads, v, 4 * sizeof *v);
    }
    for (int i = 0; i < 4; i++)
        if (pads[i] < 0)
            return gd_err_set(err, GD_ENOTSUP, "negative pads are not supported");
    return 0;
}

int
gd__auto_pad_read(const struct gd_node *n, enum gd__auto_pad *out, struct gd_err *err)
{
    const char *s;
    int rc = gd__attr_string(n, "auto_pad", "NOTSET", &s, err);
    if (rc != 0)
        return rc;
    if (strcmp(s, "NOTSET") == 0)
        *out = GD__PAD_NOTSET;
    else if (strcmp(s, "SAME_UPPER") == 0)
        *out = GD__PAD_SAME_UPPER;
    else if (strcmp(s, "SAME_LOWER") == 0)
        *out = GD__PAD_SAME_LOWER;
    else if (strcmp(s, "VALID") == 0)
        *out = GD__PAD_VALID;
    else
        return gd_err_set(err, GD_EMODEL, "auto_pad %s is not NOTSET, SAME_UPPER, SAME_LOWER "
                          "or VALID", s);
    return 0;
}

int
gd__spatial_geometry(const struct gd_node *n, int ns, int with_dilations, struct gd_params *p,
                     struct gd_err *err)
{
    int rc = gd__spatial_ints(n, "strides", ns, 1, 1, p->strides, err);
    if (rc == 0 && with_dilations)
        rc = gd__spatial_ints(n, "dilations", ns, 1, 1, p->dilations, err);
    if (rc == 0 && !with_dilations)
        p->dilations[0] = p->dilations[1] = 1;
    if (rc == 0)
        rc = spatial_pads(n, ns, p->pads, err);
    if (rc != 0)
        return rc;
    for (int i = 0; i < 2; i++) {
        if (p->strides[i] < 1)
            return gd_err_set(err, GD_EMODEL, "strides must be at least 1");
        if (p->dilations[i] < 1)
            return gd_err_set(err, GD_EMODEL, "dilations must be at least 1");
    }
    return 0;
}

void
gd__same_pads(int mode_upper, const int64_t *in_hw, struct gd_params *p)
{
    for (int i = 0; i < 2; i++) {
        int64_t out = (in_hw[i] + p->strides[i] - 1) / p->strides[i];
        int64_t span = p->dilations[i] * (p->kernel[i] - 1) + 1;
        int64_t total = (out - 1) * p->strides[i] + span - in_hw[i];
        if (total < 0)
            total = 0;
        int64_t small = total / 2, big = total - total / 2;
        p->pads[i] = mode_upper ? small : big;
        p->pads[i + 2] = mode_upper ? big : small;
    }
}

void
gd__spatial_in(const struct gd_shape *x, int64_t *hw)
{
    hw[0] = x->ndim == 4 ? x->dim[2] : 1;
    hw[1] = x->dim[x->ndim - 1];
}

