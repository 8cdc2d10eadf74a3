/*
 * op_index.c: indexing ops on the CPU: Gather, GatherElements, GatherND, ScatterElements
 * (Scatter), ScatterND, Trilu, OneHot, EyeLike, TopK.
 *
 * The gathers and Trilu, OneHot and EyeLike move bytes, so they serve every dtype. Indices
 * are int32 or int64; every index is checked before anything is written, and one out of
 * range fails the op with GD_ERANGE naming it (indices that are weights were checked at
 * load). Scatters apply their updates in the C order of the indices, so an element that
 * several updates hit takes them in that order: with reduction none the last one wins,
 * with add and mul they are summed or multiplied into the data element one after another
 * (docs/NUMERICS.md). TopK compares values; ties go to the lower index.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cpu.h"
#include "../core/move.h"

static int64_t
index_at(const struct gd_tensor *t, int64_t i)
{
    return t->dtype == GD_I32 ? ((const int32_t *)t->data)[i] : ((const int64_t *)t->data)[i];
}

static int
out_of_range(int64_t v, int64_t i, int64_t len, struct gd_err *err)
{
    return gd_err_set(err, GD_ERANGE,
                      "index %lld (element %lld of the indices) is out of range for an axis of "
                      "%lld",
                      (long long)v, (long long)i, (long long)len);
}

/* Checks every index: element i against bounds[i % period]. */
static int
check_indices(const struct gd_tensor *t, const int64_t *bounds, int64_t period,
              struct gd_err *err)
{
    int64_t n = gd_tensor_numel(t);
    for (int64_t i = 0; i < n; i++) {
        int64_t len = bounds[period > 1 ? i % period : 0];
        if (gd__index_fix(index_at(t, i), len) < 0)
            return out_of_range(index_at(t, i), i, len, err);
    }
    return 0;
}

/* Sizes before, at and after axis. */
static void
split_at(const struct gd_tensor *t, int64_t axis, int64_t *outer, int64_t *len, int64_t *inner)
{
    *outer = 1;
    *inner = 1;
    for (int i = 0; i < t->ndim; i++) {
        if (i < axis)
            *outer *= t->shape[i];
        else if (i > axis)
            *inner *= t->shape[i];
    }
    *len = t->shape[axis];
}

int
CPU_FN(gather)(struct gd_op_call *c, struct gd_err *err)
{
    const struct gd_tensor *x = c->in[0], *idx = c->in[1];
    size_t es = gd_dtype_size(x->dtype);
    int64_t outer, len, inner, n = gd_tensor_numel(idx);
    split_at(x, c->params->axis, &outer, &len, &inner);
    int rc = check_indices(idx, &len, 1, err);
    if (rc != 0)
        return rc;
    size_t chunk = (size_t)inner * es;
    const char *src = x->data;
    char *dst = c->out[0]->data;
    for (int64_t o = 0; o < outer; o++) {
        for (int64_t j = 0; j < n; j++) {
            int64_t v = gd__index_fix(index_at(idx, j), len);
            memcpy(dst, src + (size_t)(o * len + v) * chunk, chunk);
            dst += chunk;
        }
    }
    return 0;
}

int
CPU_FN(gather_elements)(struct gd_op_call *c, struct gd_err *err)
{
    const struct gd_tensor *x = c->in[0], *idx = c->in[1];
    size_t es = gd_dtype_size(x->dtype);
    int64_t axis = c->params->axis, len = x->shape[axis], xs[GD_MAX_DIMS];
    int rc = check_indices(idx, &len, 1, err);
    if (rc != 0)
        return rc;
    gd__strides_of(x, xs);
    int64_t pos[GD_MAX_DIMS] = {0}, n = gd_tensor_numel(idx);
    const char *src = x->data;
    char *dst = c->out[0]->data;
    for (int64_t i = 0; i < n; i++) {
        int64_t off = 0;
        for (int d = 0; d < idx->ndim; d++)
            off += (d == axis ? gd__index_fix(index_at(idx, i), len) : pos[d]) * xs[d];
        memcpy(dst + (size_t)i * es, src + (size_t)off * es, es);
        for (int d = idx->ndim - 1; d >= 0; d--) {
            if (++pos[d] < idx->shape[d])
                break;
            pos[d] = 0;
        }
    }
    return 0;
}

/* GatherND and ScatterND: where index tuple t of batch bi starts in the data, in elements. */
static int64_t
tuple_offset(const struct gd_tensor *idx, int64_t t, int64_t k, const int64_t *dims,
             const int64_t *strides)
{
    int64_t off = 0;
    for (int64_t j = 0; j < k; j++)
        off += gd__index_fix(index_at(idx, t * k + j), dims[j]) * strides[j];
    return off;
}

int
CPU_FN(gather_nd)(struct gd_op_call *c, struct gd_err *err)
{
    const struct gd_tensor *x = c->in[0], *idx = c->in[1];
    size_t es = gd_dtype_size(x->dtype);
    int64_t b = c->params->batch_dims, k = idx->shape[idx->ndim - 1], xs[GD_MAX_DIMS];
    int rc = check_indices(idx, &x->shape[b], k, err);
    if (rc != 0)
        return rc;
    gd__strides_of(x, xs);
    int64_t batches = 1, tuples = gd_tensor_numel(idx) / k;
    for (int i = 0; i < b; i++)
        batches *= x->shape[i];
    int64_t per_batch = batches > 0 ? tuples / batches : 0;
    int64_t slice = 1;
    for (int i = (int)(b + k); i < x->ndim; i++)
        slice *= x->shape[i];
    int64_t batch_stride = b > 0 ? xs[b - 1] : 0;
    const char *src = x->data;
    char *dst = c->out[0]->data;
    for (int64_t t = 0; t < tuples; t++) {
        int64_t bi = per_batch > 0 ? t / per_batch : 0;
        int64_t off = bi * batch_stride + tuple_offset(idx, t, k, &x->shape[b], &xs[b]);
        memcpy(dst, src + (size_t)off * es, (size_t)slice * es);
        dst += (size_t)slice * es;
    }
    return 0;
}

/* ---- scatters ---- */

/* y = reduce(y, u) for one element of type T; max and min keep a NaN already there and take
 * a NaN update (NaN propagates, as in Max and ReduceMax). */
#define SCATTER_APPLY(T, is_nan)                                                             \
    static void scatter_apply_##T(T *y, T u, enum gd_scatter_reduction r)                     \
    {                                                                                         \
        switch (r) {                                                                          \
        case GD_SCATTER_NONE:                                                                 \
            *y = u;                                                                           \
            break;                                                                            \
        case GD_SCATTER_ADD:                                                                  \
            *y = *y + u;                                                                      \
            break;                                                                            \
        case GD_SCATTER_MUL:                                                                  \
            *y = *y * u;                                                                      \
            break;                                                                            \
        case GD_SCATTER_MAX:                                                                  \
            if (!is_nan(*y) && (is_nan(u) || u > *y))                                         \
                *y = u;                                                                       \
            break;                                                                            \
        case GD_SCATTER_MIN:                                                                  \
            if (!is_nan(*y) && (is_nan(u) || u < *y))                                         \
                *y = u;                                                                       \
            break;                                                                            \
        }                                                                                     \
    }
#define NOT_NAN(v) 0
SCATTER_APPLY(real, isnan)
SCATTER_APPLY(int32_t, NOT_NAN)
SCATTER_APPLY(int64_t, NOT_NAN)

/* Applies update element u_i to output element y_i (element indices). */
static void
scatter_one(struct gd_tensor *y, int64_t yi, const struct gd_tensor *upd, int64_t ui,
            enum gd_scatter_reduction r)
{
    size_t es = gd_dtype_size(y->dtype);
    if (r == GD_SCATTER_NONE) {
        memcpy((char *)y->data + (size_t)yi * es, (const char *)upd->data + (size_t)ui * es, es);
        return;
    }
    switch (y->dtype) {
    case GD_I32:
        scatter_apply_int32_t((int32_t *)y->data + yi, ((const int32_t *)upd->data)[ui], r);
        break;
    case GD_I64:
        scatter_apply_int64_t((int64_t *)y->data + yi, ((const int64_t *)upd->data)[ui], r);
        break;
    default: /* the backend's float type (inference admits no other dtype) */
        scatter_apply_real((real *)y->data + yi, ((const real *)upd->data)[ui], r);
        break;
    }
}

static int
scatter_elements(struct gd_op_call *c, struct gd_err *err)
{
    const struct gd_tensor *x = c->in[0], *idx = c->in[1], *upd = c->in[2];
    struct gd_tensor *y = c->out[0];
    int64_t axis = c->params->axis, len = x->shape[axis], xs[GD_MAX_DIMS];
    int rc = check_indices(idx, &len, 1, err);
    if (rc != 0)
        return rc;
    memcpy(y->data, x->data, gd_tensor_nbytes(x));
    gd__strides_of(x, xs);
    int64_t pos[GD_MAX_DIMS] = {0}, n = gd_tensor_numel(idx);
    for (int64_t i = 0; i < n; i++) {
        int64_t off = 0;
        for (int d = 0; d < idx->ndim; d++)
            off += (d == axis ? gd__index_fix(index_at(idx, i), len) : pos[d]) * xs[d];
        scatter_one(y, off, upd, i, c->params->scatter_reduction);
        for (int d = idx->ndim - 1; d >= 0; d--) {
            if (++pos[d] < idx->shape[d])
                break;
            pos[d] = 0;
        }
    }
    return 0;
}

int
CPU_FN(scatter_elements)(struct gd_op_call *c, struct gd_err *err)
{
    return scatter_elements(c, err);
}

int
CPU_FN(scatter)(struct gd_op_call *c, struct gd_err *err)
{
    return scatter_elements(c, err);
}

int
CPU_FN(scatter_nd)(struct gd_op_call *c, struct gd_err *err)
{
    const struct gd_tensor *x = c->in[0], *idx = c->in[1], *upd = c->in[2];
    struct gd_tensor *y = c->out[0];
    int64_t k = idx->shape[idx->ndim - 1], xs[GD_MAX_DIMS];
    int rc = check_indices(idx, x->shape, k, err);
    if (rc != 0)
        return rc;
    memcpy(y->data, x->data, gd_tensor_nbytes(x));
    gd__strides_of(x, xs);
    int64_t tuples = gd_tensor_numel(idx) / k, slice = 1;
    for (int i = (int)k; i < x->ndim; i++)
        slice *= x->shape[i];
    for (int64_t t = 0; t < tuples; t++) {
        int64_t off = tuple_offset(idx, t, k, x->shape, xs);
        for (int64_t s = 0; s < slice; s++)
            scatter_one(y, off + s, upd, t * slice + s, c->params->scatter_reduction);
    }
    return 0;
}

/* ---- Trilu, OneHot, EyeLike ---- */

int
CPU_FN(trilu)(struct gd_op_call *c, struct gd_err *err)
{
    const struct gd_tensor *x = c->in[0];
    const struct gd_params *p = c->params;
    size_t es = gd_dtype_size(x->dtype);
    int64_t rows = x->shape[x->ndim - 2], cols = x->shape[x->ndim - 1];
    int64_t k = p->diagonal_runtime ? ((const int64_t *)c->in[1]->data)[0] : p->diagonal;
    int64_t n = gd_tensor_numel(x);
    const char *src = x->data;
    char *dst = c->out[0]->data;
    for (int64_t i = 0; i < n; i++) {
        int64_t col = i % cols, row = (i / cols) % rows;
        if (gd__trilu_keeps(row, col, k, p->upper))
            memcpy(dst + (size_t)i * es, src + (size_t)i * es, es);
        else
            memset(dst + (size_t)i * es, 0, es);
    }
    return 0;
}

int
CPU_FN(one_hot)(struct gd_op_call *c, struct gd_err *err)
{
    const struct gd_tensor *idx = c->in[0], *values = c->in[2];
    const struct gd_tensor *y = c->out[0];
    size_t es = gd_dtype_size(values->dtype);
    int64_t axis = c->params->axis, depth = y->shape[axis], outer = 1, inner = 1;
    for (int i = 0; i < idx->ndim; i++)
        *(i < axis ? &outer : &inner) *= idx->shape[i];
    const char *off_value = values->data, *on_value = off_value + es;
    char *dst = y->data;
    for (int64_t o = 0; o < outer; o++) {
        for (int64_t i = 0; i < inner; i++) {
            /* an index is truncated to an integer; one outside [-depth, depth) is all off */
            double v = trunc(gd_tensor_get_f64(idx, o * inner + i));
            if (v < 0)
                v += (double)depth;
            for (int64_t d = 0; d < depth; d++)
                memcpy(dst + (size_t)((o * depth + d) * inner + i) * es,
                       (double)d == v ? on_value : off_value, es);
        }
    }
    return 0;
}

int
CPU_FN(eye_like)(struct gd_op_call *c, struct gd_err *err)
{
    const struct gd_tensor *y = c->out[0];
    size_t es = gd_dtype_size(y->dtype);
    unsigned char one[8];
    int64_t rows = y->shape[0], cols = y->shape[1], k = c->params->diagonal;
    gd__scalar_bytes(y->dtype, 1.0, one);
    memset(y->data, 0, gd_tensor_nbytes(y));
    for (int64_t r = 0; r < rows; r++) {
        /* col = r + k in [0, cols), tested without overflow for any k */
        if (k >= 0 ? cols - r > k : r + k >= 0 && r + k < cols)
            memcpy((char *)y->data + (size_t)(r * cols + r + k) * es, one, es);
    }
    return 0;
}

/* ---- TopK ---- */

struct topk_item {
    real v;
    int64_t i;
};

/* a before b for largest: the greater value (NaN the greatest), ties the lower index. */
static int
topk_cmp_largest(const void *pa, const void *pb)
{
    const struct topk_item *a = pa, *b = pb;
    int an = isnan(a->v), bn = isnan(b->v);
    if (an != bn)
        return an ? -1 : 1;
    if (!an && a->v != b->v)
        return a->v > b->v ? -1 : 1;
    return (a->i > b->i) - (a->i < b->i);
}

/* a before b for smallest: the smaller value (NaN the greatest, so last), ties the lower
 * index. */
static int
topk_cmp_smallest(const void *pa, const void *pb)
{
    const struct topk_item *a = pa, *b = pb;
    int an = isnan(a->v), bn = isnan(b->v);
    if (an != bn)
        return an ? 1 : -1;
    if (!an && a->v != b->v)
        return a->v < b->v ? -1 : 1;
    return (a->i > b->i) - (a->i < b->i);
}

int
CPU_FN(topk)(struct gd_op_call *c, struct gd_err *err)
{
    const struct gd_tensor *x = c->in[0];
    int64_t outer, len, inner, k = c->out[0]->shape[c->params->axis];
    split_at(x, c->params->axis, &outer, &len, &inner);
    if (k == 0 || outer * inner == 0)
        return 0;
    struct topk_item *row = malloc((size_t)len * sizeof *row);
    if (row == NULL)
        return gd_err_set(err, GD_ENOMEM, "out of memory for a TopK row of %lld", (long long)len);
    const real *xv = x->data;
    real *yv = c->out[0]->data;
    int64_t *yi = c->out[1]->data;
    for (int64_t o = 0; o < outer; o++) {
        for (int64_t i = 0; i < inner; i++) {
            for (int64_t a = 0; a < len; a++) {
                row[a].v = xv[(o * len + a) * inner + i];
                row[a].i = a;
            }
            /* The order is total (ties by index), so any sort gives the same result. */
            qsort(row, (size_t)len, sizeof *row,
                  c->params->largest ? topk_cmp_largest : topk_cmp_smallest);
            for (int64_t a = 0; a < k; a++) {
                yv[(o * k + a) * inner + i] = row[a].v;
                yi[(o * k + a) * inner + i] = row[a].i;
            }
        }
    }
    free(row);
    return 0;
}
