/*
 * half_call.c: float16 and bfloat16 storage for the ops that compute in float32 only. A
 * backend with half storage (struct gd__backend's convert) keeps half values in 16 bits;
 * an op without its own half path runs here on float32 copies of its half inputs, and its
 * float32 results are rounded once into the half outputs. Loading a half value as float32
 * is exact, so this is the arithmetic of a kernel that loads half, computes in float32 and
 * stores half (docs/NUMERICS.md, "Half storage"), with more memory traffic.
 */
#include <string.h>

#include "internal.h"

static int
is_half(enum gd_dtype dt)
{
    return dt == GD_F16 || dt == GD_BF16;
}

enum gd_dtype
gd__storage_dtype(const struct gd__backend *be, enum gd_dtype logical)
{
    if (!gd_dtype_is_float(logical))
        return logical;
    if (be->convert != NULL && is_half(logical))
        return logical;
    return be->compute_dtype;
}

int
gd__call_has_half(const struct gd_op_call *c)
{
    for (int i = 0; i < c->n_in; i++)
        if (c->in[i] != NULL && is_half(c->in[i]->dtype))
            return 1;
    for (int k = 0; k < c->n_out; k++)
        if (is_half(c->out[k]->dtype))
            return 1;
    return 0;
}

/* A float32 tensor of t's shape in backend memory. */
static int
wide_alloc(const struct gd__backend *be, void *ctx, const struct gd_tensor *t,
           struct gd_tensor *wide, struct gd_err *err)
{
    memset(wide, 0, sizeof *wide);
    wide->dtype = GD_F32;
    wide->ndim = t->ndim;
    memcpy(wide->shape, t->shape, sizeof wide->shape);
    return be->alloc(ctx, wide, err);
}

int
gd__half_call(const struct gd__backend *be, gd_op_fn fn, struct gd_op_call *c,
              struct gd_err *err)
{
    struct gd_op_call w = *c;
    struct gd_tensor wide_in[GD__MAX_OP_INPUTS], wide_out[GD__MAX_OP_OUTPUTS];
    int rc = 0;
    for (int i = 0; i < c->n_in; i++)
        wide_in[i].data = NULL;
    for (int k = 0; k < c->n_out; k++)
        wide_out[k].data = NULL;
    for (int i = 0; i < c->n_in && rc == 0; i++) {
        const struct gd_tensor *t = c->in[i];
        if (t == NULL || !is_half(t->dtype))
            continue;
        int seen = -1; /* Mul(x, x): one copy */
        for (int j = 0; j < i && seen < 0; j++)
            if (c->in[j] == t)
                seen = j;
        if (seen >= 0) {
            w.in[i] = w.in[seen];
            continue;
        }
        rc = wide_alloc(be, c->ctx, t, &wide_in[i], err);
        if (rc != 0) {
            wide_in[i].data = NULL;
            break;
        }
        w.in[i] = &wide_in[i];
        rc = be->convert(c->ctx, &wide_in[i], t, err);
    }
    for (int k = 0; k < c->n_out && rc == 0; k++) {
        if (!is_half(c->out[k]->dtype))
            continue;
        rc = wide_alloc(be, c->ctx, c->out[k], &wide_out[k], err);
        if (rc != 0) {
            wide_out[k].data = NULL;
            break;
        }
        w.out[k] = &wide_out[k];
    }
    if (rc == 0)
        rc = fn(&w, err);
    for (int k = 0; k < c->n_out && rc == 0; k++)
        if (w.out[k] != c->out[k])
            rc = be->convert(c->ctx, c->out[k], w.out[k], err);
    memcpy(c->algo, w.algo, sizeof c->algo);
    memcpy(c->math, w.math, sizeof c->math);
    c->time_us = w.time_us;
    for (int i = 0; i < c->n_in; i++)
        if (wide_in[i].data != NULL)
            be->release(c->ctx, &wide_in[i]);
    for (int k = 0; k < c->n_out; k++)
        if (wide_out[k].data != NULL)
            be->release(c->ctx, &wide_out[k]);
    return rc;
}
