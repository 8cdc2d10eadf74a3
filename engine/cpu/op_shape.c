/*
 * op_shape.c: data movement on the CPU: copies, Concat, Transpose, Pad, and the copy plans
 * of engine/core/move.h (Slice, Split, Expand, Tile, DepthToSpace, SpaceToDepth). These work
 * on bytes, so they serve every dtype (ArgMax's int64, comparisons' bool) in both backends.
 */
#include <stdint.h>
#include <string.h>

#include "cpu.h"
#include "../core/index_rules.h"
#include "../core/move.h"

/* Flatten, Reshape, Squeeze, Unsqueeze, Identity: C order is unchanged, so a copy. */
static int
copy(struct gd_op_call *c)
{
    memcpy(c->out[0]->data, c->in[0]->data, gd_tensor_nbytes(c->in[0]));
    return 0;
}

int
CPU_FN(flatten)(struct gd_op_call *c, struct gd_err *err)
{
    return copy(c);
}

int
CPU_FN(reshape)(struct gd_op_call *c, struct gd_err *err)
{
    return copy(c);
}

int
CPU_FN(squeeze)(struct gd_op_call *c, struct gd_err *err)
{
    return copy(c);
}

int
CPU_FN(unsqueeze)(struct gd_op_call *c, struct gd_err *err)
{
    return copy(c);
}

int
CPU_FN(identity)(struct gd_op_call *c, struct gd_err *err)
{
    return copy(c);
}

int
CPU_FN(dropout)(struct gd_op_call *c, struct gd_err *err)
{
    /* Inference: the input passes unchanged and the mask keeps everything. */
    copy(c);
    if (c->n_out > 1)
        memset(c->out[1]->data, 1, gd_tensor_nbytes(c->out[1]));
    return 0;
}

int
CPU_FN(concat)(struct gd_op_call *c, struct gd_err *err)
{
    const struct gd_tensor *y = c->out[0];
    int64_t axis = c->params->axis;
    size_t es = gd_dtype_size(y->dtype);
    int64_t outer = 1, inner = 1;
    for (int i = 0; i < y->ndim; i++) {
        if (i < axis)
            outer *= y->shape[i];
        else if (i > axis)
            inner *= y->shape[i];
    }
    char *out = y->data;
    for (int64_t o = 0; o < outer; o++) {
        for (int k = 0; k < c->n_in; k++) {
            size_t chunk = (size_t)(c->in[k]->shape[axis] * inner) * es;
            memcpy(out, (const char *)c->in[k]->data + (size_t)o * chunk, chunk);
            out += chunk;
        }
    }
    return 0;
}

int
CPU_FN(transpose)(struct gd_op_call *c, struct gd_err *err)
{
    const struct gd_tensor *x = c->in[0];
    const struct gd_tensor *y = c->out[0];
    const int64_t *perm = c->params->perm;
    size_t es = gd_dtype_size(x->dtype);
    int64_t stride[GD_MAX_DIMS], s = 1;
    for (int i = x->ndim - 1; i >= 0; i--) {
        stride[i] = s;
        s *= x->shape[i];
    }
    int64_t idx[GD_MAX_DIMS] = {0}, off = 0, n = gd_tensor_numel(y);
    const char *src = x->data;
    char *dst = y->data;
    for (int64_t k = 0; k < n; k++) {
        memcpy(dst + (size_t)k * es, src + (size_t)off * es, es);
        for (int i = y->ndim - 1; i >= 0; i--) {
            off += stride[perm[i]];
            if (++idx[i] < y->shape[i])
                break;
            off -= stride[perm[i]] * y->shape[i];
            idx[i] = 0;
        }
    }
    return 0;
}

int
CPU_FN(pad)(struct gd_op_call *c, struct gd_err *err)
{
    const struct gd_tensor *x = c->in[0];
    const struct gd_tensor *y = c->out[0];
    const struct gd_params *p = c->params;
    size_t es = gd_dtype_size(x->dtype);
    unsigned char value[8];
    gd__scalar_bytes(x->dtype, p->pad_value, value);
    int nd = x->ndim;
    int64_t stride[GD_MAX_DIMS], s = 1;
    for (int i = nd - 1; i >= 0; i--) {
        stride[i] = s;
        s *= x->shape[i];
    }
    int64_t idx[GD_MAX_DIMS] = {0}, n = gd_tensor_numel(y);
    const char *src = x->data;
    char *dst = y->data;
    for (int64_t k = 0; k < n; k++) {
        int64_t off = 0;
        int inside = 1;
        for (int i = 0; i < nd && inside; i++) {
            int64_t si = gd__pad_source(p->pad_mode, idx[i], p->pads_nd[i], x->shape[i]);
            inside = si >= 0;
            off += si * stride[i];
        }
        memcpy(dst + (size_t)k * es, inside ? src + (size_t)off * es : (const char *)value, es);
        for (int i = nd - 1; i >= 0; i--) {
            if (++idx[i] < y->shape[i])
                break;
            idx[i] = 0;
        }
    }
    return 0;
}

/* ---- Slice, Split, Expand, Tile, DepthToSpace, SpaceToDepth: copy plans (move.h) ---- */

/* One run of n elements of size es from src (step `stride` elements) to contiguous dst. */
static void
move_row(const char *src, int64_t stride, char *dst, int64_t n, size_t es)
{
    if (stride == 1) {
        memcpy(dst, src, (size_t)n * es);
        return;
    }
    switch (es) {
    case 1:
        for (int64_t j = 0; j < n; j++)
            ((uint8_t *)dst)[j] = ((const uint8_t *)src)[j * stride];
        break;
    case 2:
        for (int64_t j = 0; j < n; j++)
            ((uint16_t *)dst)[j] = ((const uint16_t *)src)[j * stride];
        break;
    case 4:
        for (int64_t j = 0; j < n; j++)
            ((uint32_t *)dst)[j] = ((const uint32_t *)src)[j * stride];
        break;
    case 8:
        for (int64_t j = 0; j < n; j++)
            ((uint64_t *)dst)[j] = ((const uint64_t *)src)[j * stride];
        break;
    default:
        for (int64_t j = 0; j < n; j++)
            memcpy(dst + (size_t)j * es, src + j * stride * (int64_t)es, es);
    }
}

/* Runs a copy plan: the innermost axis as rows, the others by an odometer. */
static void
move_run(const struct gd__move *plan, const void *src, void *dst, size_t es)
{
    struct gd__move m = *plan;
    gd__move_simplify(&m);
    if (m.ndim == 1 && m.shape[0] == 0)
        return;
    const char *s = (const char *)src + m.offset * (int64_t)es;
    char *d = dst;
    if (m.ndim == 0) {
        memcpy(d, s, es);
        return;
    }
    int last = m.ndim - 1;
    int64_t row = m.shape[last], rows = 1, idx[GD__MOVE_MAX_DIMS] = {0}, off = 0;
    for (int i = 0; i < last; i++)
        rows *= m.shape[i];
    for (int64_t r = 0; r < rows; r++) {
        move_row(s + off * (int64_t)es, m.stride[last], d, row, es);
        d += (size_t)row * es;
        for (int i = last - 1; i >= 0; i--) {
            off += m.stride[i];
            if (++idx[i] < m.shape[i])
                break;
            off -= m.stride[i] * m.shape[i];
            idx[i] = 0;
        }
    }
}

int
CPU_FN(slice)(struct gd_op_call *c, struct gd_err *err)
{
    struct gd__move m;
    gd__move_slice(c->in[0], c->params, c->out[0], &m);
    move_run(&m, c->in[0]->data, c->out[0]->data, gd_dtype_size(c->in[0]->dtype));
    return 0;
}

int
CPU_FN(split)(struct gd_op_call *c, struct gd_err *err)
{
    int64_t first = 0, axis = c->params->axis;
    for (int k = 0; k < c->n_out; k++) {
        struct gd__move m;
        gd__move_split(c->in[0], axis, first, c->out[k], &m);
        move_run(&m, c->in[0]->data, c->out[k]->data, gd_dtype_size(c->in[0]->dtype));
        first += c->out[k]->shape[axis];
    }
    return 0;
}

int
CPU_FN(expand)(struct gd_op_call *c, struct gd_err *err)
{
    struct gd__move m;
    gd__move_expand(c->in[0], c->out[0], &m);
    move_run(&m, c->in[0]->data, c->out[0]->data, gd_dtype_size(c->in[0]->dtype));
    return 0;
}

int
CPU_FN(tile)(struct gd_op_call *c, struct gd_err *err)
{
    struct gd__move m;
    gd__move_tile(c->in[0], c->out[0], &m);
    move_run(&m, c->in[0]->data, c->out[0]->data, gd_dtype_size(c->in[0]->dtype));
    return 0;
}

int
CPU_FN(depth_to_space)(struct gd_op_call *c, struct gd_err *err)
{
    struct gd__move m;
    gd__move_depth_to_space(c->in[0], c->params, c->out[0], &m);
    move_run(&m, c->in[0]->data, c->out[0]->data, gd_dtype_size(c->in[0]->dtype));
    return 0;
}

int
CPU_FN(space_to_depth)(struct gd_op_call *c, struct gd_err *err)
{
    struct gd__move m;
    gd__move_space_to_depth(c->in[0], c->params, c->out[0], &m);
    move_run(&m, c->in[0]->data, c->out[0]->data, gd_dtype_size(c->in[0]->dtype));
    return 0;
}
