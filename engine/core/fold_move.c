/*
 * fold_move.c: the folds that read shapes (Shape, Size) and that make or move data of any
 * dtype (ConstantOfShape, Identity, Cast, Reshape, Unsqueeze, Squeeze, Concat, Gather,
 * Slice, Transpose, Expand, Where): nothing is computed on the values they move.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fold_internal.h"
#include "move.h"

/* ---- ops that read shapes ---- */

static int
fold_shape(struct gd__fold_call *c, struct gd_err *err)
{
    const struct gd_shape *x = c->in_shape[0];
    int64_t start, end;
    int rc = gd__attr_int(&c->view, "start", 0, &start, err);
    if (rc == 0)
        rc = gd__attr_int(&c->view, "end", x->ndim, &end, err);
    if (rc != 0)
        return rc;
    /* Shape-15: negative bounds count from the end; both are clamped to [0, rank]. */
    if (start < 0)
        start += x->ndim;
    if (end < 0)
        end += x->ndim;
    start = start < 0 ? 0 : start > x->ndim ? x->ndim : start;
    end = end < 0 ? 0 : end > x->ndim ? x->ndim : end;
    int64_t len = end > start ? end - start : 0;
    struct gd_tensor *t = gd_tensor_new(GD_I64, 1, &len, err);
    if (t == NULL)
        return err ? err->code : GD_ENOMEM;
    for (int64_t i = 0; i < len; i++)
        ((int64_t *)t->data)[i] = x->dim[start + i];
    c->out[0] = t;
    return 0;
}

static int
fold_size(struct gd__fold_call *c, struct gd_err *err)
{
    struct gd_tensor *t = gd_tensor_new(GD_I64, 0, NULL, err);
    if (t == NULL)
        return err ? err->code : GD_ENOMEM;
    *(int64_t *)t->data = gd__shape_numel(c->in_shape[0]);
    c->out[0] = t;
    return 0;
}

/* ---- ops that make or move data ---- */

static int
fold_constant_of_shape(struct gd__fold_call *c, struct gd_err *err)
{
    int64_t dims[GD_MAX_DIMS];
    int n = 0;
    int rc = gd__fold_input_ints(c, 0, "the shape", GD_MAX_DIMS, dims, &n, err);
    if (rc != 0)
        return rc;
    const struct gd_attr *value = gd_node_attr(&c->view, "value");
    if (value != NULL && (value->type != GD_ATTR_TENSOR || gd_tensor_numel(value->t) != 1))
        return gd_err_set(err, GD_EMODEL, "attribute value must be a tensor of one element");
    enum gd_dtype dtype = value ? value->t->dtype : GD_F32;
    for (int i = 0; i < n; i++)
        if (dims[i] < 0)
            return gd_err_set(err, GD_ESHAPE, "dimension %d of the shape is %lld", i,
                              (long long)dims[i]);
    struct gd_tensor *t = gd__fold_tensor(dtype, n, dims, err);
    if (t == NULL)
        return err ? err->code : GD_ENOMEM;
    if (value != NULL) {
        size_t es = gd_dtype_size(dtype);
        for (int64_t i = 0; i < gd_tensor_numel(t); i++)
            memcpy((char *)t->data + (size_t)i * es, value->t->data, es);
    }
    c->out[0] = t;
    return 0;
}

int
gd__fold_identity(struct gd__fold_call *c, struct gd_err *err)
{
    c->out[0] = gd_tensor_dup(c->in[0], err);
    return c->out[0] ? 0 : (err ? err->code : GD_ENOMEM);
}

static int
fold_cast(struct gd__fold_call *c, struct gd_err *err)
{
    int64_t to;
    enum gd_dtype dtype = GD_F32;
    int rc = gd__attr_int(&c->view, "to", -1, &to, err);
    if (rc == 0 && to < 0)
        rc = gd_err_set(err, GD_EMODEL, "attribute to is required");
    if (rc == 0)
        rc = gd__fold_onnx_dtype(to, &dtype, err);
    if (rc != 0)
        return rc;
    c->out[0] = gd_tensor_cast(c->in[0], dtype, err);
    return c->out[0] ? 0 : (err ? err->code : GD_ENOMEM);
}

/* A copy of src with another shape of the same element count. */
static int
reshaped(const struct gd_tensor *src, const struct gd_shape *s, struct gd_tensor **out,
         struct gd_err *err)
{
    if (gd__shape_numel(s) != gd_tensor_numel(src)) {
        char a[128], b[128];
        return gd_err_set(err, GD_ESHAPE, "cannot reshape %s into %s",
                          gd_shape_format(src->ndim, src->shape, a, sizeof a),
                          gd_shape_format(s->ndim, s->dim, b, sizeof b));
    }
    struct gd_tensor *t = gd__fold_new_tensor(src->dtype, s, err);
    if (t == NULL)
        return err ? err->code : GD_ENOMEM;
    if (gd_tensor_nbytes(src) > 0)
        memcpy(t->data, src->data, gd_tensor_nbytes(src));
    *out = t;
    return 0;
}

static int
fold_reshape(struct gd__fold_call *c, struct gd_err *err)
{
    int64_t target[GD_MAX_DIMS];
    int n = 0;
    int64_t allowzero;
    int rc = gd__attr_int(&c->view, "allowzero", 0, &allowzero, err);
    if (rc == 0)
        rc = gd__fold_input_ints(c, 1, "the shape", GD_MAX_DIMS, target, &n, err);
    if (rc != 0)
        return rc;
    const struct gd_tensor *x = c->in[0];
    struct gd_shape s = {.ndim = n};
    int infer = -1;
    int64_t known = 1;
    for (int i = 0; i < n; i++) {
        int64_t d = target[i];
        if (d == 0 && !allowzero) {
            if (i >= x->ndim)
                return gd_err_set(err, GD_ESHAPE,
                                  "shape entry %d is 0 but the input has %d "
                                  "dimensions",
                                  i, x->ndim);
            d = x->shape[i];
        }
        if (d == -1) {
            if (infer >= 0)
                return gd_err_set(err, GD_ESHAPE, "the shape has two -1 entries");
            infer = i;
            continue;
        }
        if (d < 0)
            return gd_err_set(err, GD_ESHAPE, "shape entry %d is %lld", i, (long long)d);
        s.dim[i] = d;
        if (__builtin_mul_overflow(known, d, &known))
            return gd_err_set(err, GD_ESHAPE,
                              "the shape's entries multiply past 2^63 "
                              "elements");
    }
    if (infer >= 0) {
        if (known == 0 || gd_tensor_numel(x) % known != 0)
            return gd_err_set(err, GD_ESHAPE, "no size for the -1 entry fits %lld elements",
                              (long long)gd_tensor_numel(x));
        s.dim[infer] = gd_tensor_numel(x) / known;
    }
    return reshaped(x, &s, &c->out[0], err);
}

static int
fold_unsqueeze(struct gd__fold_call *c, struct gd_err *err)
{
    const struct gd_tensor *x = c->in[0];
    int64_t axes[GD_MAX_DIMS];
    int64_t raw[GD_MAX_DIMS];
    int n = 0;
    int rc = c->n_in > 1 && c->in[1] != NULL
                 ? gd__fold_input_ints(c, 1, "axes", GD_MAX_DIMS, raw, &n, err)
                 : gd__attr_ints(&c->view, "axes", -1, GD_MAX_DIMS, raw, &n, err);
    if (rc != 0)
        return rc;
    int rank = x->ndim + n;
    if (rank > GD_MAX_DIMS)
        return gd_err_set(err, GD_ESHAPE, "the result would have %d dimensions", rank);
    int used[GD_MAX_DIMS] = {0};
    for (int i = 0; i < n; i++) {
        rc = gd__axis_norm(raw[i], rank, &axes[i], err);
        if (rc != 0)
            return rc;
        if (used[axes[i]]++)
            return gd_err_set(err, GD_EMODEL, "axis %lld is given twice", (long long)raw[i]);
    }
    struct gd_shape s = {.ndim = rank};
    for (int d = 0, k = 0; d < rank; d++)
        s.dim[d] = used[d] ? 1 : x->shape[k++];
    return reshaped(x, &s, &c->out[0], err);
}

static int
fold_squeeze(struct gd__fold_call *c, struct gd_err *err)
{
    const struct gd_tensor *x = c->in[0];
    int64_t axes[GD_MAX_DIMS];
    int n = 0;
    int rc = gd__fold_read_axes(c, x->ndim, axes, &n, err);
    if (rc != 0)
        return rc;
    int drop[GD_MAX_DIMS] = {0};
    for (int i = 0; i < n; i++) {
        if (x->shape[axes[i]] != 1)
            return gd_err_set(err, GD_ESHAPE, "axis %lld has size %lld, not 1", (long long)axes[i],
                              (long long)x->shape[axes[i]]);
        drop[axes[i]] = 1;
    }
    struct gd_shape s = {0};
    for (int d = 0; d < x->ndim; d++)
        if (!(n > 0 ? drop[d] : x->shape[d] == 1))
            s.dim[s.ndim++] = x->shape[d];
    return reshaped(x, &s, &c->out[0], err);
}

static int
fold_concat(struct gd__fold_call *c, struct gd_err *err)
{
    int64_t axis;
    const struct gd_tensor *x0 = c->in[0];
    int rc = gd__attr_int(&c->view, "axis", INT64_MIN, &axis, err);
    if (rc == 0 && axis == INT64_MIN)
        rc = gd_err_set(err, GD_EMODEL, "attribute axis is required");
    if (rc == 0)
        rc = gd__axis_norm(axis, x0->ndim, &axis, err);
    if (rc != 0)
        return rc;
    struct gd_shape s;
    gd__fold_shape_of(x0, &s);
    s.dim[axis] = 0;
    for (int i = 0; i < c->n_in; i++) {
        const struct gd_tensor *x = c->in[i];
        int same = x->ndim == x0->ndim && x->dtype == x0->dtype;
        for (int d = 0; same && d < x->ndim; d++)
            same = d == axis || x->shape[d] == x0->shape[d];
        if (!same) {
            char a[128], b[128];
            return gd_err_set(
                err, GD_ESHAPE, "input %d (%s %s) does not fit input 0 (%s %s)", i,
                gd_dtype_name(x->dtype), gd_shape_format(x->ndim, x->shape, a, sizeof a),
                gd_dtype_name(x0->dtype), gd_shape_format(x0->ndim, x0->shape, b, sizeof b));
        }
        /* each input's size fits, their sum need not (empty inputs of huge axes) */
        if (__builtin_add_overflow(s.dim[axis], x->shape[axis], &s.dim[axis]))
            return gd_err_set(err, GD_ESHAPE,
                              "the concatenation along axis %lld would be "
                              "longer than 2^63 - 1",
                              (long long)axis);
    }
    struct gd_tensor *t = gd__fold_new_tensor(x0->dtype, &s, err);
    if (t == NULL)
        return err ? err->code : GD_ENOMEM;
    size_t es = gd_dtype_size(x0->dtype);
    int64_t outer = 1, inner = 1;
    for (int d = 0; d < axis; d++)
        outer *= s.dim[d];
    for (int d = (int)axis + 1; d < s.ndim; d++)
        inner *= s.dim[d];
    char *dst = t->data;
    for (int64_t o = 0; o < outer; o++)
        for (int i = 0; i < c->n_in; i++) {
            size_t block = (size_t)(c->in[i]->shape[axis] * inner) * es;
            if (block > 0)
                memcpy(dst, (const char *)c->in[i]->data + (size_t)o * block, block);
            dst += block;
        }
    c->out[0] = t;
    return 0;
}

static int
fold_gather(struct gd__fold_call *c, struct gd_err *err)
{
    const struct gd_tensor *x = c->in[0], *idx = c->in[1];
    int64_t axis;
    int rc = gd__attr_int(&c->view, "axis", 0, &axis, err);
    if (rc == 0)
        rc = gd__axis_norm(axis, x->ndim, &axis, err);
    if (rc == 0 && !gd__fold_is_int_dtype(idx->dtype))
        rc = gd_err_set(err, GD_EMODEL, "indices must be integers, not %s",
                        gd_dtype_name(idx->dtype));
    if (rc == 0)
        rc = gd__fold_check_u64(idx, err);
    if (rc != 0)
        return rc;
    struct gd_shape s = {.ndim = x->ndim - 1 + idx->ndim};
    if (s.ndim > GD_MAX_DIMS)
        return gd_err_set(err, GD_ESHAPE, "the result would have %d dimensions", s.ndim);
    int k = 0;
    for (int d = 0; d < axis; d++)
        s.dim[k++] = x->shape[d];
    for (int d = 0; d < idx->ndim; d++)
        s.dim[k++] = idx->shape[d];
    for (int d = (int)axis + 1; d < x->ndim; d++)
        s.dim[k++] = x->shape[d];
    int64_t outer = 1, inner = 1, len = x->shape[axis];
    for (int d = 0; d < axis; d++)
        outer *= x->shape[d];
    for (int d = (int)axis + 1; d < x->ndim; d++)
        inner *= x->shape[d];
    struct gd_tensor *t = gd__fold_new_tensor(x->dtype, &s, err);
    if (t == NULL)
        return err ? err->code : GD_ENOMEM;
    size_t row = (size_t)inner * gd_dtype_size(x->dtype);
    int64_t n_idx = gd_tensor_numel(idx);
    char *dst = t->data;
    for (int64_t o = 0; o < outer; o++)
        for (int64_t j = 0; j < n_idx; j++) {
            int64_t i = gd_tensor_get_i64(idx, j);
            if (i < -len || i >= len) {
                gd_tensor_free(t);
                return gd_err_set(err, GD_EMODEL,
                                  "index %lld is out of range for a "
                                  "dimension of %lld",
                                  (long long)i, (long long)len);
            }
            if (i < 0)
                i += len;
            memcpy(dst, (const char *)x->data + (size_t)(o * len + i) * row, row);
            dst += row;
        }
    c->out[0] = t;
    return 0;
}

static int
fold_slice(struct gd__fold_call *c, struct gd_err *err)
{
    const struct gd_tensor *x = c->in[0];
    int64_t starts[GD_MAX_DIMS], ends[GD_MAX_DIMS], axes[GD_MAX_DIMS], steps[GD_MAX_DIMS];
    int ns = 0, ne = 0, na = 0, nst = 0;
    int rc = gd__fold_input_ints(c, 1, "starts", GD_MAX_DIMS, starts, &ns, err);
    if (rc == 0)
        rc = gd__fold_input_ints(c, 2, "ends", GD_MAX_DIMS, ends, &ne, err);
    if (rc == 0 && c->n_in > 3 && c->in[3] != NULL)
        rc = gd__fold_input_ints(c, 3, "axes", GD_MAX_DIMS, axes, &na, err);
    else
        for (na = 0; na < ns; na++)
            axes[na] = na;
    if (rc == 0 && c->n_in > 4 && c->in[4] != NULL)
        rc = gd__fold_input_ints(c, 4, "steps", GD_MAX_DIMS, steps, &nst, err);
    else
        for (nst = 0; nst < ns; nst++)
            steps[nst] = 1;
    if (rc == 0 && (ne != ns || na != ns || nst != ns))
        rc = gd_err_set(err, GD_EMODEL, "starts, ends, axes and steps differ in length");
    if (rc != 0)
        return rc;
    int64_t first[GD_MAX_DIMS], step[GD_MAX_DIMS];
    struct gd_shape s;
    gd__fold_shape_of(x, &s);
    int seen[GD_MAX_DIMS] = {0};
    for (int d = 0; d < x->ndim; d++)
        first[d] = 0, step[d] = 1;
    for (int i = 0; i < ns; i++) {
        int64_t a;
        rc = gd__axis_norm(axes[i], x->ndim, &a, err);
        if (rc != 0)
            return rc;
        if (seen[a]++)
            return gd_err_set(err, GD_EMODEL, "axis %lld is sliced twice", (long long)a);
        int64_t dim = x->shape[a], st = steps[i], b = starts[i], e = ends[i];
        if (st == 0)
            return gd_err_set(err, GD_EMODEL, "a step is 0");
        /* the one rule shape inference follows too (move.h) */
        s.dim[a] = gd__slice_axis(dim, b, e, st, &first[a]);
        step[a] = st;
    }
    struct gd_tensor *t = gd__fold_new_tensor(x->dtype, &s, err);
    if (t == NULL)
        return err ? err->code : GD_ENOMEM;
    size_t es = gd_dtype_size(x->dtype);
    int64_t idx[GD_MAX_DIMS] = {0}, n = gd__shape_numel(&s);
    for (int64_t o = 0; o < n; o++) {
        int64_t off = 0;
        for (int d = 0; d < x->ndim; d++)
            off = off * x->shape[d] + first[d] + idx[d] * step[d];
        memcpy((char *)t->data + (size_t)o * es, (const char *)x->data + (size_t)off * es, es);
        gd__fold_index_next(&s, idx);
    }
    c->out[0] = t;
    return 0;
}

static int
fold_transpose(struct gd__fold_call *c, struct gd_err *err)
{
    const struct gd_tensor *x = c->in[0];
    int64_t perm[GD_MAX_DIMS];
    int n = 0;
    int rc = gd__attr_ints(&c->view, "perm", -1, GD_MAX_DIMS, perm, &n, err);
    if (rc != 0)
        return rc;
    if (n == 0)
        for (n = 0; n < x->ndim; n++)
            perm[n] = x->ndim - 1 - n;
    int p[GD_MAX_DIMS], used[GD_MAX_DIMS] = {0};
    if (n != x->ndim)
        return gd_err_set(err, GD_EMODEL, "perm has %d entries for %d dimensions", n, x->ndim);
    for (int i = 0; i < n; i++) {
        if (perm[i] < 0 || perm[i] >= n || used[perm[i]]++)
            return gd_err_set(err, GD_EMODEL, "perm is not a permutation");
        p[i] = (int)perm[i];
    }
    c->out[0] = gd_tensor_transpose(x, p, err);
    return c->out[0] ? 0 : (err ? err->code : GD_ENOMEM);
}

static int
fold_expand(struct gd__fold_call *c, struct gd_err *err)
{
    const struct gd_tensor *x = c->in[0];
    struct gd_shape want = {0}, xs, s;
    int rc = gd__fold_input_ints(c, 1, "the shape", GD_MAX_DIMS, want.dim, &want.ndim, err);
    if (rc != 0)
        return rc;
    gd__fold_shape_of(x, &xs);
    rc = gd__broadcast_shape(&xs, &want, &s, err);
    if (rc != 0)
        return rc;
    struct gd_tensor *t = gd__fold_new_tensor(x->dtype, &s, err);
    if (t == NULL)
        return err ? err->code : GD_ENOMEM;
    size_t es = gd_dtype_size(x->dtype);
    int64_t idx[GD_MAX_DIMS] = {0}, n = gd__shape_numel(&s);
    for (int64_t o = 0; o < n; o++) {
        memcpy((char *)t->data + (size_t)o * es,
               (const char *)x->data + (size_t)gd__fold_bcast_offset(x, s.ndim, idx) * es, es);
        gd__fold_index_next(&s, idx);
    }
    c->out[0] = t;
    return 0;
}

static int
fold_where(struct gd__fold_call *c, struct gd_err *err)
{
    const struct gd_tensor *cond = c->in[0], *x = c->in[1], *y = c->in[2];
    struct gd_shape s;
    if (cond->dtype != GD_BOOL)
        return gd_err_set(err, GD_EMODEL, "the condition must be bool, not %s",
                          gd_dtype_name(cond->dtype));
    if (x->dtype != y->dtype)
        return gd_err_set(err, GD_EMODEL, "X is %s and Y %s", gd_dtype_name(x->dtype),
                          gd_dtype_name(y->dtype));
    int rc = gd__fold_broadcast_all(c, 0, 3, &s, err);
    if (rc != 0)
        return rc;
    struct gd_tensor *t = gd__fold_new_tensor(x->dtype, &s, err);
    if (t == NULL)
        return err ? err->code : GD_ENOMEM;
    size_t es = gd_dtype_size(x->dtype);
    int64_t idx[GD_MAX_DIMS] = {0}, n = gd__shape_numel(&s);
    for (int64_t o = 0; o < n; o++) {
        const struct gd_tensor *src =
            ((const uint8_t *)cond->data)[gd__fold_bcast_offset(cond, s.ndim, idx)] ? x : y;
        memcpy((char *)t->data + (size_t)o * es,
               (const char *)src->data + (size_t)gd__fold_bcast_offset(src, s.ndim, idx) * es, es);
        gd__fold_index_next(&s, idx);
    }
    c->out[0] = t;
    return 0;
}

/* ---- the ops of this file, for fold.c's lookup ---- */

const struct gd__fold_op gd__fold_move_ops[] = {
    {"Shape", fold_shape, GD__FOLD_SHAPE, 1, 1},
    {"Size", fold_size, GD__FOLD_SHAPE, 1, 1},
    {"ConstantOfShape", fold_constant_of_shape, GD__FOLD_INT, 1, 1},
    {"Identity", gd__fold_identity, GD__FOLD_MOVE, 1, 1},
    {"Cast", fold_cast, GD__FOLD_MOVE, 1, 1},
    {"Reshape", fold_reshape, GD__FOLD_MOVE, 2, 2},
    {"Unsqueeze", fold_unsqueeze, GD__FOLD_MOVE, 1, 2},
    {"Squeeze", fold_squeeze, GD__FOLD_MOVE, 1, 2},
    {"Concat", fold_concat, GD__FOLD_MOVE, 1, GD__MAX_OP_INPUTS},
    {"Gather", fold_gather, GD__FOLD_MOVE, 2, 2},
    {"Slice", fold_slice, GD__FOLD_MOVE, 3, 5},
    {"Transpose", fold_transpose, GD__FOLD_MOVE, 1, 1},
    {"Expand", fold_expand, GD__FOLD_MOVE, 2, 2},
    {"Where", fold_where, GD__FOLD_MOVE, 3, 3},
};
const int gd__fold_move_ops_count = (int)(sizeof gd__fold_move_ops / sizeof gd__fold_move_ops[0]);
