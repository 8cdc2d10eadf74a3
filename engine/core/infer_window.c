/*
 * infer_window.c: window geometry shared by the convolutions and the pools: strides,
 * dilations, pads in ONNX order, auto_pad, for 1 to 3 spatial axes held as 3-D
 * (depth, height, width) with the missing leading axes of size 1 (struct gd_params).
 */
#include <string.h>

#include "internal.h"

int
gd__spatial_ints(const struct gd_node *n, const char *name, int ns, int64_t dflt, int64_t fill,
                 int64_t *out, struct gd_err *err)
{
    int64_t v[GD_MAX_SPATIAL];
    int got = 0;
    int rc = gd__attr_ints(n, name, ns, GD_MAX_SPATIAL, v, &got, err);
    if (rc != 0)
        return rc;
    int lead = GD_MAX_SPATIAL - ns;
    for (int a = 0; a < GD_MAX_SPATIAL; a++)
        out[a] = a < lead ? fill : got == 0 ? dflt : v[a - lead];
    return 0;
}

static int
spatial_pads(const struct gd_node *n, int ns, int64_t *pads, struct gd_err *err)
{
    int64_t v[2 * GD_MAX_SPATIAL];
    int got = 0;
    int rc = gd__attr_ints(n, "pads", 2 * ns, 2 * GD_MAX_SPATIAL, v, &got, err);
    if (rc != 0)
        return rc;
    memset(pads, 0, 2 * GD_MAX_SPATIAL * sizeof *pads);
    if (got == 0)
        return 0;
    int lead = GD_MAX_SPATIAL - ns;
    for (int i = 0; i < ns; i++) {
        pads[lead + i] = v[i];
        pads[GD_MAX_SPATIAL + lead + i] = v[ns + i];
    }
    for (int i = 0; i < 2 * GD_MAX_SPATIAL; i++)
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
    p->n_spatial = ns;
    int rc = gd__spatial_ints(n, "strides", ns, 1, 1, p->strides, err);
    if (rc == 0 && with_dilations)
        rc = gd__spatial_ints(n, "dilations", ns, 1, 1, p->dilations, err);
    if (rc == 0 && !with_dilations)
        for (int a = 0; a < GD_MAX_SPATIAL; a++)
            p->dilations[a] = 1;
    if (rc == 0)
        rc = spatial_pads(n, ns, p->pads, err);
    if (rc != 0)
        return rc;
    for (int a = 0; a < GD_MAX_SPATIAL; a++) {
        if (p->strides[a] < 1)
            return gd_err_set(err, GD_EMODEL, "strides must be at least 1");
        if (p->dilations[a] < 1)
            return gd_err_set(err, GD_EMODEL, "dilations must be at least 1");
        if (p->strides[a] > GD__WINDOW_MAX || p->dilations[a] > GD__WINDOW_MAX ||
            p->pads[a] > GD__WINDOW_MAX || p->pads[a + GD_MAX_SPATIAL] > GD__WINDOW_MAX)
            return gd_err_set(err, GD_ENOTSUP, "strides, dilations and pads above %lld are "
                              "not supported", (long long)GD__WINDOW_MAX);
    }
    return 0;
}

int
gd__window_kernel(const int64_t *kernel, struct gd_err *err)
{
    for (int a = 0; a < GD_MAX_SPATIAL; a++)
        if (kernel[a] < 1 || kernel[a] > GD__WINDOW_MAX)
            return gd_err_set(err, kernel[a] < 1 ? GD_EMODEL : GD_ENOTSUP,
                              "kernel size %lld: from 1 to %lld is supported",
                              (long long)kernel[a], (long long)GD__WINDOW_MAX);
    return 0;
}

void
gd__same_pads(int mode_upper, const int64_t *in, struct gd_params *p)
{
    for (int a = 0; a < GD_MAX_SPATIAL; a++) {
        int64_t out = (in[a] + p->strides[a] - 1) / p->strides[a];
        int64_t span = p->dilations[a] * (p->kernel[a] - 1) + 1;
        int64_t total = (out - 1) * p->strides[a] + span - in[a];
        if (total < 0)
            total = 0;
        int64_t small = total / 2, big = total - total / 2;
        p->pads[a] = mode_upper ? small : big;
        p->pads[a + GD_MAX_SPATIAL] = mode_upper ? big : small;
    }
}

int
gd__spatial_in(const struct gd_shape *x, int64_t *dhw, struct gd_err *err)
{
    int ns = x->ndim - 2;
    for (int a = 0; a < GD_MAX_SPATIAL; a++) {
        int k = a - (GD_MAX_SPATIAL - ns);
        dhw[a] = k >= 0 ? x->dim[2 + k] : 1;
        if (dhw[a] > GD__WINDOW_INPUT_MAX)
            return gd_err_set(err, GD_ENOTSUP, "a spatial axis of %lld elements (above %lld) "
                              "is not supported", (long long)dhw[a],
                              (long long)GD__WINDOW_INPUT_MAX);
    }
    return 0;
}
