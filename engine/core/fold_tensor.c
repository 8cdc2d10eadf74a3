/*
 * fold_tensor.c: the fold evaluator's element access and tensors (fold_internal.h): integer
 * elements stored with range checks, tensors of bounded size, integer inputs read.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fold_internal.h"
#include "move.h"

/* Stores v as element i of an integer or bool tensor; GD_ERANGE when it does not fit. */
int
gd__fold_put_int(struct gd_tensor *t, int64_t i, int64_t v, struct gd_err *err)
{
    int64_t lo = 0, hi = INT64_MAX;
    switch (t->dtype) {
    case GD_I8:
        lo = INT8_MIN, hi = INT8_MAX;
        break;
    case GD_I16:
        lo = INT16_MIN, hi = INT16_MAX;
        break;
    case GD_I32:
        lo = INT32_MIN, hi = INT32_MAX;
        break;
    case GD_I64:
        lo = INT64_MIN;
        break;
    case GD_U8:
        hi = UINT8_MAX;
        break;
    case GD_U16:
        hi = UINT16_MAX;
        break;
    case GD_U32:
        hi = UINT32_MAX;
        break;
    case GD_BOOL:
        v = v != 0;
        break;
    default:
        break;
    }
    if (v < lo || v > hi)
        return gd_err_set(err, GD_ERANGE, "the result %lld does not fit %s", (long long)v,
                          gd_dtype_name(t->dtype));
    gd__tensor_put_int(t, i, v);
    return 0;
}

int
gd__fold_is_int_dtype(enum gd_dtype d)
{
    return !gd_dtype_is_float(d);
}

/* A uint64 element above INT64_MAX cannot be computed with exactly here. */
int
gd__fold_check_u64(const struct gd_tensor *t, struct gd_err *err)
{
    if (t->dtype != GD_U64)
        return 0;
    for (int64_t i = 0; i < gd_tensor_numel(t); i++)
        if (((const uint64_t *)t->data)[i] > (uint64_t)INT64_MAX)
            return gd_err_set(err, GD_ENOTSUP, "a uint64 value above 2^63 - 1");
    return 0;
}

void
gd__fold_shape_of(const struct gd_tensor *t, struct gd_shape *s)
{
    s->ndim = t->ndim;
    memcpy(s->dim, t->shape, sizeof s->dim);
}

struct gd_tensor *
gd__fold_tensor(enum gd_dtype dtype, int ndim, const int64_t *dims, struct gd_err *err)
{
    int64_t n = 1;
    for (int i = 0; i < ndim; i++) {
        if (dims[i] < 0 || (dims[i] > 0 && n > GD__FOLD_MAX_BYTES / dims[i])) {
            n = GD__FOLD_MAX_BYTES + 1;
            break;
        }
        n *= dims[i];
    }
    if (n > GD__FOLD_MAX_BYTES / (int64_t)gd_dtype_size(dtype)) {
        char buf[128];
        gd_err_set(err, GD_ENOTSUP,
                   "a shape computation would make a %s tensor of %s, more "
                   "than the %lld bytes a fold may",
                   gd_dtype_name(dtype), gd_shape_format(ndim, dims, buf, sizeof buf),
                   (long long)GD__FOLD_MAX_BYTES);
        return NULL;
    }
    return gd_tensor_new(dtype, ndim, dims, err);
}

struct gd_tensor *
gd__fold_new_tensor(enum gd_dtype dtype, const struct gd_shape *s, struct gd_err *err)
{
    return gd__fold_tensor(dtype, s->ndim, s->dim, err);
}

/* Reads a 1-D (or scalar) integer input into out. */
int
gd__fold_input_ints(struct gd__fold_call *c, int i, const char *what, int max, int64_t *out, int *n,
                    struct gd_err *err)
{
    const struct gd_tensor *t = c->in[i];
    if (!gd__fold_is_int_dtype(t->dtype))
        return gd_err_set(err, GD_EMODEL, "%s must hold integers, not %s", what,
                          gd_dtype_name(t->dtype));
    int rc = gd__fold_check_u64(t, err);
    if (rc != 0)
        return rc;
    int64_t count = gd_tensor_numel(t);
    if (t->ndim > 1)
        return gd_err_set(err, GD_EMODEL, "%s must be 1-D, not %d-D", what, t->ndim);
    if (count > max)
        return gd_err_set(err, GD_EMODEL, "%s has %lld values (at most %d)", what, (long long)count,
                          max);
    for (int64_t k = 0; k < count; k++)
        out[k] = gd_tensor_get_i64(t, k);
    *n = (int)count;
    return 0;
}

/* Offset in t of the element at out-coordinates idx of a broadcast shape of rank ndim. */
int64_t
gd__fold_bcast_offset(const struct gd_tensor *t, int ndim, const int64_t *idx)
{
    int64_t off = 0;
    for (int d = 0; d < t->ndim; d++) {
        int64_t i = idx[ndim - t->ndim + d];
        off = off * t->shape[d] + (t->shape[d] == 1 ? 0 : i);
    }
    return off;
}

void
gd__fold_index_next(const struct gd_shape *s, int64_t *idx)
{
    for (int d = s->ndim - 1; d >= 0; d--) {
        if (++idx[d] < s->dim[d])
            return;
        idx[d] = 0;
    }
}

/* ONNX's TensorProto.DataType codes, which Cast's `to` uses. */
int
gd__fold_onnx_dtype(int64_t code, enum gd_dtype *out, struct gd_err *err)
{
    static const struct {
        int code;
        enum gd_dtype dtype;
    } map[] = {{1, GD_F32},  {2, GD_U8},   {3, GD_I8},   {4, GD_U16},  {5, GD_I16},
               {6, GD_I32},  {7, GD_I64},  {9, GD_BOOL}, {10, GD_F16}, {11, GD_F64},
               {12, GD_U32}, {13, GD_U64}, {16, GD_BF16}};
    for (size_t i = 0; i < sizeof map / sizeof map[0]; i++)
        if (map[i].code == code) {
            *out = map[i].dtype;
            return 0;
        }
    return gd_err_set(err, GD_ENOTSUP, "Cast to ONNX data type %lld is not supported",
                      (long long)code);
}

/* Numpy broadcasting of the shapes of n tensors. */
int
gd__fold_broadcast_all(struct gd__fold_call *c, int first, int n, struct gd_shape *out,
                       struct gd_err *err)
{
    gd__fold_shape_of(c->in[first], out);
    for (int i = first + 1; i < first + n; i++) {
        struct gd_shape b, r;
        gd__fold_shape_of(c->in[i], &b);
        int rc = gd__broadcast_shape(out, &b, &r, err);
        if (rc != 0)
            return rc;
        *out = r;
    }
    return 0;
}

/* Reads axes from attribute "axes" or input 1, each normalized for rank and sorted. */
int
gd__fold_read_axes(struct gd__fold_call *c, int rank, int64_t *axes, int *n, struct gd_err *err)
{
    int rc;
    *n = 0;
    if (c->n_in > 1 && c->in[1] != NULL)
        rc = gd__fold_input_ints(c, 1, "axes", GD_MAX_DIMS, axes, n, err);
    else
        rc = gd__attr_ints(&c->view, "axes", -1, GD_MAX_DIMS, axes, n, err);
    for (int i = 0; i < *n && rc == 0; i++)
        rc = gd__axis_norm(axes[i], rank, &axes[i], err);
    for (int i = 1; i < *n && rc == 0; i++) /* insertion sort, then no repeats */
        for (int k = i; k > 0 && axes[k - 1] >= axes[k]; k--) {
            if (axes[k - 1] == axes[k])
                return gd_err_set(err, GD_EMODEL, "axis %lld is given twice", (long long)axes[k]);
            int64_t t = axes[k];
            axes[k] = axes[k - 1];
            axes[k - 1] = t;
        }
    return rc;
}
