/*
 * fold.c: the nodes of a model that are not layers. ONNX exports compute Reshape targets,
 * Expand shapes and Slice bounds with Shape, Gather, Unsqueeze, Concat, Cast,
 * ConstantOfShape, Range, Equal, Where and int64 arithmetic; this evaluator computes them
 * exactly (integers in int64 with overflow checks, data of any dtype only moved or
 * converted by gd_tensor_cast), once when every input is a constant, else at each
 * inference for the input shapes of that inference (graph.c). It computes nothing on
 * floats: float arithmetic stays in the graph, where a backend does it.
 */
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "move.h"

/* What an op of the evaluator needs of its inputs. */
enum fold_kind {
    FOLD_SHAPE, /* reads only the shape of input 0: it may be a value known at run time */
    FOLD_MOVE,  /* moves or converts data of any dtype */
    FOLD_INT    /* arithmetic: integer or bool inputs only */
};

struct fold_call {
    const struct gd_fold *f;
    struct gd_node view;        /* the fold as a node, for the attribute readers */
    int n_in;
    const struct gd_shape *const *in_shape;
    const struct gd_tensor *const *in;
    int n_out;
    struct gd_tensor **out;
};

typedef int (*fold_fn)(struct fold_call *c, struct gd_err *err);

void
gd__fold_fini(struct gd_fold *f)
{
    free(f->name);
    free(f->op);
    free(f->inputs);
    free(f->outputs);
    for (int i = 0; i < f->n_attrs; i++)
        gd_attr_fini(&f->attrs[i]);
    free(f->attrs);
    memset(f, 0, sizeof *f);
}

/* ---- element access ---- */

/* Stores v as element i of an integer or bool tensor; GD_ERANGE when it does not fit. */
static int
put_int(struct gd_tensor *t, int64_t i, int64_t v, struct gd_err *err)
{
    void *p = t->data;
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
    switch (t->dtype) {
    case GD_I8:
        ((int8_t *)p)[i] = (int8_t)v;
        break;
    case GD_I16:
        ((int16_t *)p)[i] = (int16_t)v;
        break;
    case GD_I32:
        ((int32_t *)p)[i] = (int32_t)v;
        break;
    case GD_I64:
        ((int64_t *)p)[i] = v;
        break;
    case GD_U8:
    case GD_BOOL:
        ((uint8_t *)p)[i] = (uint8_t)v;
        break;
    case GD_U16:
        ((uint16_t *)p)[i] = (uint16_t)v;
        break;
    case GD_U32:
        ((uint32_t *)p)[i] = (uint32_t)v;
        break;
    case GD_U64:
        ((uint64_t *)p)[i] = (uint64_t)v;
        break;
    default:
        break;
    }
    return 0;
}

static int
is_int_dtype(enum gd_dtype d)
{
    return !gd_dtype_is_float(d);
}

/* A uint64 element above INT64_MAX cannot be computed with exactly here. */
static int
check_u64(const struct gd_tensor *t, struct gd_err *err)
{
    if (t->dtype != GD_U64)
        return 0;
    for (int64_t i = 0; i < gd_tensor_numel(t); i++)
        if (((const uint64_t *)t->data)[i] > (uint64_t)INT64_MAX)
            return gd_err_set(err, GD_ENOTSUP, "a uint64 value above 2^63 - 1");
    return 0;
}

static void
shape_of(const struct gd_tensor *t, struct gd_shape *s)
{
    s->ndim = t->ndim;
    memcpy(s->dim, t->shape, sizeof s->dim);
}

/*
 * The largest result a fold may make: shape computations are small, and the biggest data a
 * fold makes (a mask by ConstantOfShape or Expand) stays far below this. A model asking for
 * more is refused rather than allowed to exhaust memory at load.
 */
#define FOLD_MAX_BYTES ((int64_t)1 << 30)

static struct gd_tensor *
fold_tensor(enum gd_dtype dtype, int ndim, const int64_t *dims, struct gd_err *err)
{
    int64_t n = 1;
    for (int i = 0; i < ndim; i++) {
        if (dims[i] < 0 || (dims[i] > 0 && n > FOLD_MAX_BYTES / dims[i])) {
            n = FOLD_MAX_BYTES + 1;
            break;
        }
        n *= dims[i];
    }
    if (n > FOLD_MAX_BYTES / (int64_t)gd_dtype_size(dtype)) {
        char buf[128];
        gd_err_set(err, GD_ENOTSUP, "a shape computation would make a %s tensor of %s, more "
                   "than the %lld bytes a fold may", gd_dtype_name(dtype),
                   gd_shape_format(ndim, dims, buf, sizeof buf), (long long)FOLD_MAX_BYTES);
        return NULL;
    }
    return gd_tensor_new(dtype, ndim, dims, err);
}

static struct gd_tensor *
new_tensor(enum gd_dtype dtype, const struct gd_shape *s, struct gd_err *err)
{
    return fold_tensor(dtype, s->ndim, s->dim, err);
}

/* Reads a 1-D (or scalar) integer input into out. */
static int
input_ints(struct fold_call *c, int i, const char *what, int max, int64_t *out, int *n,
           struct gd_err *err)
{
    const struct gd_tensor *t = c->in[i];
    if (!is_int_dtype(t->dtype))
        return gd_err_set(err, GD_EMODEL, "%s must hold integers, not %s", what,
                          gd_dtype_name(t->dtype));
    int rc = check_u64(t, err);
    if (rc != 0)
        return rc;
    int64_t count = gd_tensor_numel(t);
    if (t->ndim > 1)
        return gd_err_set(err, GD_EMODEL, "%s must be 1-D, not %d-D", what, t->ndim);
    if (count > max)
        return gd_err_set(err, GD_EMODEL, "%s has %lld values (at most %d)", what,
                          (long long)count, max);
    for (int64_t k = 0; k < count; k++)
        out[k] = gd_tensor_get_i64(t, k);
    *n = (int)count;
    return 0;
}

/* Offset in t of the element at out-coordinates idx of a broadcast shape of rank ndim. */
static int64_t
bcast_offset(const struct gd_tensor *t, int ndim, const int64_t *idx)
{
    int64_t off = 0;
    for (int d = 0; d < t->ndim; d++) {
        int64_t i = idx[ndim - t->ndim + d];
        off = off * t->shape[d] + (t->shape[d] == 1 ? 0 : i);
    }
    return off;
}

static void
index_next(const struct gd_shape *s, int64_t *idx)
{
    for (int d = s->ndim - 1; d >= 0; d--) {
        if (++idx[d] < s->dim[d])
            return;
        idx[d] = 0;
    }
}

/* ---- ops that read shapes ---- */

static int
fold_shape(struct fold_call *c, struct gd_err *err)
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
fold_size(struct fold_call *c, struct gd_err *err)
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
fold_constant_of_shape(struct fold_call *c, struct gd_err *err)
{
    int64_t dims[GD_MAX_DIMS];
    int n = 0;
    int rc = input_ints(c, 0, "the shape", GD_MAX_DIMS, dims, &n, err);
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
    struct gd_tensor *t = fold_tensor(dtype, n, dims, err);
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

static int
fold_identity(struct fold_call *c, struct gd_err *err)
{
    c->out[0] = gd_tensor_dup(c->in[0], err);
    return c->out[0] ? 0 : (err ? err->code : GD_ENOMEM);
}

/* ONNX's TensorProto.DataType codes, which Cast's `to` uses. */
static int
onnx_dtype(int64_t code, enum gd_dtype *out, struct gd_err *err)
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

static int
fold_cast(struct fold_call *c, struct gd_err *err)
{
    int64_t to;
    enum gd_dtype dtype = GD_F32;
    int rc = gd__attr_int(&c->view, "to", -1, &to, err);
    if (rc == 0 && to < 0)
        rc = gd_err_set(err, GD_EMODEL, "attribute to is required");
    if (rc == 0)
        rc = onnx_dtype(to, &dtype, err);
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
    struct gd_tensor *t = new_tensor(src->dtype, s, err);
    if (t == NULL)
        return err ? err->code : GD_ENOMEM;
    if (gd_tensor_nbytes(src) > 0)
        memcpy(t->data, src->data, gd_tensor_nbytes(src));
    *out = t;
    return 0;
}

static int
fold_reshape(struct fold_call *c, struct gd_err *err)
{
    int64_t target[GD_MAX_DIMS];
    int n = 0;
    int64_t allowzero;
    int rc = gd__attr_int(&c->view, "allowzero", 0, &allowzero, err);
    if (rc == 0)
        rc = input_ints(c, 1, "the shape", GD_MAX_DIMS, target, &n, err);
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
                return gd_err_set(err, GD_ESHAPE, "shape entry %d is 0 but the input has %d "
                                  "dimensions", i, x->ndim);
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
            return gd_err_set(err, GD_ESHAPE, "the shape's entries multiply past 2^63 "
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

/* Reads axes from attribute "axes" or input 1, each normalized for rank and sorted. */
static int
read_axes(struct fold_call *c, int rank, int64_t *axes, int *n, struct gd_err *err)
{
    int rc;
    *n = 0;
    if (c->n_in > 1 && c->in[1] != NULL)
        rc = input_ints(c, 1, "axes", GD_MAX_DIMS, axes, n, err);
    else
        rc = gd__attr_ints(&c->view, "axes", -1, GD_MAX_DIMS, axes, n, err);
    for (int i = 0; i < *n && rc == 0; i++)
        rc = gd__axis_norm(axes[i], rank, &axes[i], err);
    for (int i = 1; i < *n && rc == 0; i++) /* insertion sort, then no repeats */
        for (int k = i; k > 0 && axes[k - 1] >= axes[k]; k--) {
            if (axes[k - 1] == axes[k])
                return gd_err_set(err, GD_EMODEL, "axis %lld is given twice",
                                  (long long)axes[k]);
            int64_t t = axes[k];
            axes[k] = axes[k - 1];
            axes[k - 1] = t;
        }
    return rc;
}

static int
fold_unsqueeze(struct fold_call *c, struct gd_err *err)
{
    const struct gd_tensor *x = c->in[0];
    int64_t axes[GD_MAX_DIMS];
    int64_t raw[GD_MAX_DIMS];
    int n = 0;
    int rc = c->n_in > 1 && c->in[1] != NULL
                 ? input_ints(c, 1, "axes", GD_MAX_DIMS, raw, &n, err)
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
fold_squeeze(struct fold_call *c, struct gd_err *err)
{
    const struct gd_tensor *x = c->in[0];
    int64_t axes[GD_MAX_DIMS];
    int n = 0;
    int rc = read_axes(c, x->ndim, axes, &n, err);
    if (rc != 0)
        return rc;
    int drop[GD_MAX_DIMS] = {0};
    for (int i = 0; i < n; i++) {
        if (x->shape[axes[i]] != 1)
            return gd_err_set(err, GD_ESHAPE, "axis %lld has size %lld, not 1",
                              (long long)axes[i], (long long)x->shape[axes[i]]);
        drop[axes[i]] = 1;
    }
    struct gd_shape s = {0};
    for (int d = 0; d < x->ndim; d++)
        if (!(n > 0 ? drop[d] : x->shape[d] == 1))
            s.dim[s.ndim++] = x->shape[d];
    return reshaped(x, &s, &c->out[0], err);
}

static int
fold_concat(struct fold_call *c, struct gd_err *err)
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
    shape_of(x0, &s);
    s.dim[axis] = 0;
    for (int i = 0; i < c->n_in; i++) {
        const struct gd_tensor *x = c->in[i];
        int same = x->ndim == x0->ndim && x->dtype == x0->dtype;
        for (int d = 0; same && d < x->ndim; d++)
            same = d == axis || x->shape[d] == x0->shape[d];
        if (!same) {
            char a[128], b[128];
            return gd_err_set(err, GD_ESHAPE, "input %d (%s %s) does not fit input 0 (%s %s)",
                              i, gd_dtype_name(x->dtype),
                              gd_shape_format(x->ndim, x->shape, a, sizeof a),
                              gd_dtype_name(x0->dtype),
                              gd_shape_format(x0->ndim, x0->shape, b, sizeof b));
        }
        /* each input's size fits, their sum need not (empty inputs of huge axes) */
        if (__builtin_add_overflow(s.dim[axis], x->shape[axis], &s.dim[axis]))
            return gd_err_set(err, GD_ESHAPE, "the concatenation along axis %lld would be "
                              "longer than 2^63 - 1", (long long)axis);
    }
    struct gd_tensor *t = new_tensor(x0->dtype, &s, err);
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
fold_gather(struct fold_call *c, struct gd_err *err)
{
    const struct gd_tensor *x = c->in[0], *idx = c->in[1];
    int64_t axis;
    int rc = gd__attr_int(&c->view, "axis", 0, &axis, err);
    if (rc == 0)
        rc = gd__axis_norm(axis, x->ndim, &axis, err);
    if (rc == 0 && !is_int_dtype(idx->dtype))
        rc = gd_err_set(err, GD_EMODEL, "indices must be integers, not %s",
                        gd_dtype_name(idx->dtype));
    if (rc == 0)
        rc = check_u64(idx, err);
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
    struct gd_tensor *t = new_tensor(x->dtype, &s, err);
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
                return gd_err_set(err, GD_EMODEL, "index %lld is out of range for a "
                                  "dimension of %lld", (long long)i, (long long)len);
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
fold_slice(struct fold_call *c, struct gd_err *err)
{
    const struct gd_tensor *x = c->in[0];
    int64_t starts[GD_MAX_DIMS], ends[GD_MAX_DIMS], axes[GD_MAX_DIMS], steps[GD_MAX_DIMS];
    int ns = 0, ne = 0, na = 0, nst = 0;
    int rc = input_ints(c, 1, "starts", GD_MAX_DIMS, starts, &ns, err);
    if (rc == 0)
        rc = input_ints(c, 2, "ends", GD_MAX_DIMS, ends, &ne, err);
    if (rc == 0 && c->n_in > 3 && c->in[3] != NULL)
        rc = input_ints(c, 3, "axes", GD_MAX_DIMS, axes, &na, err);
    else
        for (na = 0; na < ns; na++)
            axes[na] = na;
    if (rc == 0 && c->n_in > 4 && c->in[4] != NULL)
        rc = input_ints(c, 4, "steps", GD_MAX_DIMS, steps, &nst, err);
    else
        for (nst = 0; nst < ns; nst++)
            steps[nst] = 1;
    if (rc == 0 && (ne != ns || na != ns || nst != ns))
        rc = gd_err_set(err, GD_EMODEL, "starts, ends, axes and steps differ in length");
    if (rc != 0)
        return rc;
    int64_t first[GD_MAX_DIMS], step[GD_MAX_DIMS];
    struct gd_shape s;
    shape_of(x, &s);
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
    struct gd_tensor *t = new_tensor(x->dtype, &s, err);
    if (t == NULL)
        return err ? err->code : GD_ENOMEM;
    size_t es = gd_dtype_size(x->dtype);
    int64_t idx[GD_MAX_DIMS] = {0}, n = gd__shape_numel(&s);
    for (int64_t o = 0; o < n; o++) {
        int64_t off = 0;
        for (int d = 0; d < x->ndim; d++)
            off = off * x->shape[d] + first[d] + idx[d] * step[d];
        memcpy((char *)t->data + (size_t)o * es, (const char *)x->data + (size_t)off * es, es);
        index_next(&s, idx);
    }
    c->out[0] = t;
    return 0;
}

static int
fold_transpose(struct fold_call *c, struct gd_err *err)
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

/* Numpy broadcasting of the shapes of n tensors. */
static int
broadcast_all(struct fold_call *c, int first, int n, struct gd_shape *out, struct gd_err *err)
{
    shape_of(c->in[first], out);
    for (int i = first + 1; i < first + n; i++) {
        struct gd_shape b, r;
        shape_of(c->in[i], &b);
        int rc = gd__broadcast_shape(out, &b, &r, err);
        if (rc != 0)
            return rc;
        *out = r;
    }
    return 0;
}

static int
fold_expand(struct fold_call *c, struct gd_err *err)
{
    const struct gd_tensor *x = c->in[0];
    struct gd_shape want = {0}, xs, s;
    int rc = input_ints(c, 1, "the shape", GD_MAX_DIMS, want.dim, &want.ndim, err);
    if (rc != 0)
        return rc;
    shape_of(x, &xs);
    rc = gd__broadcast_shape(&xs, &want, &s, err);
    if (rc != 0)
        return rc;
    struct gd_tensor *t = new_tensor(x->dtype, &s, err);
    if (t == NULL)
        return err ? err->code : GD_ENOMEM;
    size_t es = gd_dtype_size(x->dtype);
    int64_t idx[GD_MAX_DIMS] = {0}, n = gd__shape_numel(&s);
    for (int64_t o = 0; o < n; o++) {
        memcpy((char *)t->data + (size_t)o * es,
               (const char *)x->data + (size_t)bcast_offset(x, s.ndim, idx) * es, es);
        index_next(&s, idx);
    }
    c->out[0] = t;
    return 0;
}

static int
fold_where(struct fold_call *c, struct gd_err *err)
{
    const struct gd_tensor *cond = c->in[0], *x = c->in[1], *y = c->in[2];
    struct gd_shape s;
    if (cond->dtype != GD_BOOL)
        return gd_err_set(err, GD_EMODEL, "the condition must be bool, not %s",
                          gd_dtype_name(cond->dtype));
    if (x->dtype != y->dtype)
        return gd_err_set(err, GD_EMODEL, "X is %s and Y %s", gd_dtype_name(x->dtype),
                          gd_dtype_name(y->dtype));
    int rc = broadcast_all(c, 0, 3, &s, err);
    if (rc != 0)
        return rc;
    struct gd_tensor *t = new_tensor(x->dtype, &s, err);
    if (t == NULL)
        return err ? err->code : GD_ENOMEM;
    size_t es = gd_dtype_size(x->dtype);
    int64_t idx[GD_MAX_DIMS] = {0}, n = gd__shape_numel(&s);
    for (int64_t o = 0; o < n; o++) {
        const struct gd_tensor *src =
            ((const uint8_t *)cond->data)[bcast_offset(cond, s.ndim, idx)] ? x : y;
        memcpy((char *)t->data + (size_t)o * es,
               (const char *)src->data + (size_t)bcast_offset(src, s.ndim, idx) * es, es);
        index_next(&s, idx);
    }
    c->out[0] = t;
    return 0;
}

/* ---- integer arithmetic ---- */

enum int_op { I_ADD, I_SUB, I_MUL, I_DIV, I_MOD, I_FMOD, I_MIN, I_MAX, I_EQ, I_LT, I_GT, I_LE,
              I_GE, I_AND, I_OR, I_XOR };

static int
int_apply(enum int_op op, int64_t a, int64_t b, int64_t *r, struct gd_err *err)
{
    switch (op) {
    case I_ADD:
        if (__builtin_add_overflow(a, b, r))
            goto overflow;
        return 0;
    case I_SUB:
        if (__builtin_sub_overflow(a, b, r))
            goto overflow;
        return 0;
    case I_MUL:
        if (__builtin_mul_overflow(a, b, r))
            goto overflow;
        return 0;
    case I_DIV: /* truncates toward zero, as onnxruntime's integer Div does */
    case I_MOD:
    case I_FMOD:
        if (b == 0)
            return gd_err_set(err, GD_EINVAL, "integer division by zero");
        if (a == INT64_MIN && b == -1)
            goto overflow;
        if (op == I_DIV) {
            *r = a / b;
        } else {
            *r = a % b; /* fmod=1: the sign of the dividend (C's %) */
            if (op == I_MOD && *r != 0 && ((*r < 0) != (b < 0)))
                *r += b; /* fmod=0: the sign of the divisor (Python's %) */
        }
        return 0;
    case I_MIN:
        *r = a < b ? a : b;
        return 0;
    case I_MAX:
        *r = a > b ? a : b;
        return 0;
    case I_EQ:
        *r = a == b;
        return 0;
    case I_LT:
        *r = a < b;
        return 0;
    case I_GT:
        *r = a > b;
        return 0;
    case I_LE:
        *r = a <= b;
        return 0;
    case I_GE:
        *r = a >= b;
        return 0;
    case I_AND:
        *r = (a != 0) && (b != 0);
        return 0;
    case I_OR:
        *r = (a != 0) || (b != 0);
        return 0;
    case I_XOR:
        *r = (a != 0) != (b != 0);
        return 0;
    }
overflow:
    return gd_err_set(err, GD_ERANGE, "int64 overflow computing with %lld and %lld",
                      (long long)a, (long long)b);
}

/* Applies op left to right over the broadcast inputs (Min and Max take several). */
static int
fold_int_nary(struct fold_call *c, enum int_op op, enum gd_dtype out_dtype, struct gd_err *err)
{
    for (int i = 0; i < c->n_in; i++) {
        if (c->in[i]->dtype != c->in[0]->dtype)
            return gd_err_set(err, GD_EMODEL, "input %d is %s, input 0 %s", i,
                              gd_dtype_name(c->in[i]->dtype), gd_dtype_name(c->in[0]->dtype));
        int rc = check_u64(c->in[i], err);
        if (rc != 0)
            return rc;
    }
    struct gd_shape s;
    int rc = broadcast_all(c, 0, c->n_in, &s, err);
    if (rc != 0)
        return rc;
    struct gd_tensor *t = new_tensor(out_dtype, &s, err);
    if (t == NULL)
        return err ? err->code : GD_ENOMEM;
    int64_t idx[GD_MAX_DIMS] = {0}, n = gd__shape_numel(&s);
    for (int64_t o = 0; o < n && rc == 0; o++) {
        int64_t acc = gd_tensor_get_i64(c->in[0], bcast_offset(c->in[0], s.ndim, idx));
        for (int i = 1; i < c->n_in && rc == 0; i++)
            rc = int_apply(op, acc,
                           gd_tensor_get_i64(c->in[i], bcast_offset(c->in[i], s.ndim, idx)),
                           &acc, err);
        if (rc == 0)
            rc = put_int(t, o, acc, err);
        index_next(&s, idx);
    }
    if (rc != 0) {
        gd_tensor_free(t);
        return rc;
    }
    c->out[0] = t;
    return 0;
}

#define INT_BINARY(fname, op)                                                   \
    static int fname(struct fold_call *c, struct gd_err *err)                   \
    {                                                                           \
        return fold_int_nary(c, op, c->in[0]->dtype, err);                      \
    }
#define INT_COMPARE(fname, op)                                                  \
    static int fname(struct fold_call *c, struct gd_err *err)                   \
    {                                                                           \
        return fold_int_nary(c, op, GD_BOOL, err);                              \
    }
INT_BINARY(fold_add, I_ADD)
INT_BINARY(fold_sub, I_SUB)
INT_BINARY(fold_mul, I_MUL)
INT_BINARY(fold_div, I_DIV)
INT_BINARY(fold_min, I_MIN)
INT_BINARY(fold_max, I_MAX)
INT_COMPARE(fold_equal, I_EQ)
INT_COMPARE(fold_less, I_LT)
INT_COMPARE(fold_greater, I_GT)
INT_COMPARE(fold_less_equal, I_LE)
INT_COMPARE(fold_greater_equal, I_GE)
INT_COMPARE(fold_and, I_AND)
INT_COMPARE(fold_or, I_OR)
INT_COMPARE(fold_xor, I_XOR)

static int
fold_mod(struct fold_call *c, struct gd_err *err)
{
    int64_t fmod;
    int rc = gd__attr_int(&c->view, "fmod", 0, &fmod, err);
    return rc != 0 ? rc : fold_int_nary(c, fmod ? I_FMOD : I_MOD, c->in[0]->dtype, err);
}

/* Neg, Abs, Not: one input. */
static int
fold_int_unary(struct fold_call *c, const char *op, struct gd_err *err)
{
    const struct gd_tensor *x = c->in[0];
    int rc = check_u64(x, err);
    if (rc != 0)
        return rc;
    struct gd_shape s;
    shape_of(x, &s);
    struct gd_tensor *t = new_tensor(x->dtype, &s, err);
    if (t == NULL)
        return err ? err->code : GD_ENOMEM;
    for (int64_t i = 0; i < gd_tensor_numel(x) && rc == 0; i++) {
        int64_t v = gd_tensor_get_i64(x, i);
        if (strcmp(op, "Not") == 0)
            v = !v;
        else if (v == INT64_MIN)
            rc = gd_err_set(err, GD_ERANGE, "int64 overflow negating %lld", (long long)v);
        else if (strcmp(op, "Neg") == 0 || v < 0)
            v = -v;
        if (rc == 0)
            rc = put_int(t, i, v, err);
    }
    if (rc != 0) {
        gd_tensor_free(t);
        return rc;
    }
    c->out[0] = t;
    return 0;
}

static int
fold_neg(struct fold_call *c, struct gd_err *err)
{
    return fold_int_unary(c, "Neg", err);
}

static int
fold_abs(struct fold_call *c, struct gd_err *err)
{
    return fold_int_unary(c, "Abs", err);
}

static int
fold_not(struct fold_call *c, struct gd_err *err)
{
    if (c->in[0]->dtype != GD_BOOL)
        return gd_err_set(err, GD_EMODEL, "Not takes bool, not %s",
                          gd_dtype_name(c->in[0]->dtype));
    return fold_int_unary(c, "Not", err);
}

static int
fold_range(struct fold_call *c, struct gd_err *err)
{
    int64_t v[3];
    for (int i = 0; i < 3; i++) {
        if (gd_tensor_numel(c->in[i]) != 1)
            return gd_err_set(err, GD_EMODEL, "input %d must hold one value", i);
        int rc = check_u64(c->in[i], err);
        if (rc != 0)
            return rc;
        v[i] = gd_tensor_get_i64(c->in[i], 0);
    }
    int64_t start = v[0], limit = v[1], delta = v[2], span;
    if (delta == 0)
        return gd_err_set(err, GD_EINVAL, "delta is 0");
    /* span / -1 overflows for span = INT64_MIN (a range of 2^63 values) */
    if (__builtin_sub_overflow(limit, start, &span) || (span == INT64_MIN && delta == -1))
        return gd_err_set(err, GD_ERANGE, "int64 overflow in the range's length");
    /* max(ceil(span / delta), 0) in integers */
    int64_t n = span / delta + ((span % delta != 0) && ((span < 0) == (delta < 0)));
    if (n < 0)
        n = 0;
    struct gd_tensor *t = fold_tensor(c->in[0]->dtype, 1, &n, err);
    if (t == NULL)
        return err ? err->code : GD_ENOMEM;
    int rc = 0;
    for (int64_t i = 0; i < n && rc == 0; i++)
        rc = put_int(t, i, start + i * delta, err);
    if (rc != 0) {
        gd_tensor_free(t);
        return rc;
    }
    c->out[0] = t;
    return 0;
}

/* ReduceProd, ReduceSum, ReduceMin, ReduceMax on integers. */
static int
fold_reduce(struct fold_call *c, enum int_op op, int64_t init, struct gd_err *err)
{
    const struct gd_tensor *x = c->in[0];
    int64_t axes[GD_MAX_DIMS], keepdims, noop;
    int n = 0;
    int rc = check_u64(x, err);
    if (rc == 0)
        rc = gd__attr_int(&c->view, "keepdims", 1, &keepdims, err);
    if (rc == 0)
        rc = gd__attr_int(&c->view, "noop_with_empty_axes", 0, &noop, err);
    if (rc == 0)
        rc = read_axes(c, x->ndim, axes, &n, err);
    if (rc != 0)
        return rc;
    if (n == 0 && noop)
        return fold_identity(c, err);
    int reduced[GD_MAX_DIMS] = {0};
    for (int i = 0; i < n; i++)
        reduced[axes[i]] = 1;
    if (n == 0)
        for (int d = 0; d < x->ndim; d++)
            reduced[d] = 1;
    struct gd_shape s = {0}, kept;
    shape_of(x, &kept);
    for (int d = 0; d < x->ndim; d++) {
        if (reduced[d])
            kept.dim[d] = 1;
        if (!reduced[d] || keepdims)
            s.dim[s.ndim++] = kept.dim[d];
    }
    struct gd_tensor *t = new_tensor(x->dtype, &s, err);
    if (t == NULL)
        return err ? err->code : GD_ENOMEM;
    int64_t n_out = gd__shape_numel(&s);
    int64_t *acc = malloc((size_t)(n_out ? n_out : 1) * sizeof *acc);
    if (acc == NULL) {
        gd_tensor_free(t);
        return gd_err_set(err, GD_ENOMEM, "out of memory");
    }
    for (int64_t o = 0; o < n_out; o++)
        acc[o] = init;
    int64_t idx[GD_MAX_DIMS] = {0};
    struct gd_shape xs;
    shape_of(x, &xs);
    for (int64_t i = 0; i < gd_tensor_numel(x) && rc == 0; i++) {
        int64_t o = 0;
        for (int d = 0; d < x->ndim; d++)
            o = o * kept.dim[d] + (reduced[d] ? 0 : idx[d]);
        rc = int_apply(op, acc[o], gd_tensor_get_i64(x, i), &acc[o], err);
        index_next(&xs, idx);
    }
    for (int64_t o = 0; o < n_out && rc == 0; o++)
        rc = put_int(t, o, acc[o], err);
    free(acc);
    if (rc != 0) {
        gd_tensor_free(t);
        return rc;
    }
    c->out[0] = t;
    return 0;
}

static int
fold_reduce_prod(struct fold_call *c, struct gd_err *err)
{
    return fold_reduce(c, I_MUL, 1, err);
}

static int
fold_reduce_sum(struct fold_call *c, struct gd_err *err)
{
    return fold_reduce(c, I_ADD, 0, err);
}

static int
fold_reduce_min(struct fold_call *c, struct gd_err *err)
{
    return fold_reduce(c, I_MIN, INT64_MAX, err);
}

static int
fold_reduce_max(struct fold_call *c, struct gd_err *err)
{
    return fold_reduce(c, I_MAX, INT64_MIN, err);
}

/* ---- the table ---- */

static const struct {
    const char *op;
    fold_fn fn;
    enum fold_kind kind;
    int min_in, max_in;
} fold_ops[] = {
    {"Shape", fold_shape, FOLD_SHAPE, 1, 1},
    {"Size", fold_size, FOLD_SHAPE, 1, 1},
    {"ConstantOfShape", fold_constant_of_shape, FOLD_INT, 1, 1},
    {"Identity", fold_identity, FOLD_MOVE, 1, 1},
    {"Cast", fold_cast, FOLD_MOVE, 1, 1},
    {"Reshape", fold_reshape, FOLD_MOVE, 2, 2},
    {"Unsqueeze", fold_unsqueeze, FOLD_MOVE, 1, 2},
    {"Squeeze", fold_squeeze, FOLD_MOVE, 1, 2},
    {"Concat", fold_concat, FOLD_MOVE, 1, GD__MAX_OP_INPUTS},
    {"Gather", fold_gather, FOLD_MOVE, 2, 2},
    {"Slice", fold_slice, FOLD_MOVE, 3, 5},
    {"Transpose", fold_transpose, FOLD_MOVE, 1, 1},
    {"Expand", fold_expand, FOLD_MOVE, 2, 2},
    {"Where", fold_where, FOLD_MOVE, 3, 3},
    {"Add", fold_add, FOLD_INT, 2, 2},
    {"Sub", fold_sub, FOLD_INT, 2, 2},
    {"Mul", fold_mul, FOLD_INT, 2, 2},
    {"Div", fold_div, FOLD_INT, 2, 2},
    {"Mod", fold_mod, FOLD_INT, 2, 2},
    {"Neg", fold_neg, FOLD_INT, 1, 1},
    {"Abs", fold_abs, FOLD_INT, 1, 1},
    {"Min", fold_min, FOLD_INT, 1, GD__MAX_OP_INPUTS},
    {"Max", fold_max, FOLD_INT, 1, GD__MAX_OP_INPUTS},
    {"Equal", fold_equal, FOLD_INT, 2, 2},
    {"Less", fold_less, FOLD_INT, 2, 2},
    {"Greater", fold_greater, FOLD_INT, 2, 2},
    {"LessOrEqual", fold_less_equal, FOLD_INT, 2, 2},
    {"GreaterOrEqual", fold_greater_equal, FOLD_INT, 2, 2},
    {"And", fold_and, FOLD_INT, 2, 2},
    {"Or", fold_or, FOLD_INT, 2, 2},
    {"Xor", fold_xor, FOLD_INT, 2, 2},
    {"Not", fold_not, FOLD_INT, 1, 1},
    {"Range", fold_range, FOLD_INT, 3, 3},
    {"ReduceProd", fold_reduce_prod, FOLD_INT, 1, 2},
    {"ReduceSum", fold_reduce_sum, FOLD_INT, 1, 2},
    {"ReduceMin", fold_reduce_min, FOLD_INT, 1, 2},
    {"ReduceMax", fold_reduce_max, FOLD_INT, 1, 2},
};

static int
fold_find(const char *op)
{
    for (size_t i = 0; i < sizeof fold_ops / sizeof fold_ops[0]; i++)
        if (strcmp(fold_ops[i].op, op) == 0)
            return (int)i;
    return -1;
}

const char *
gd_fold_op_name(int i)
{
    return i >= 0 && (size_t)i < sizeof fold_ops / sizeof fold_ops[0] ? fold_ops[i].op : NULL;
}

int
gd__fold_has(const char *op)
{
    return fold_find(op) >= 0;
}

int
gd__fold_eval(const struct gd_fold *f, const struct gd_shape *const *in_shape,
              const struct gd_tensor *const *in_val, struct gd_tensor **out,
              struct gd_err *err)
{
    int k = fold_find(f->op);
    if (k < 0)
        return gd_err_set(err, GD_ENOTSUP, "no fold for %s", f->op);
    struct fold_call c = {.f = f, .n_in = f->n_inputs, .in_shape = in_shape, .in = in_val,
                          .n_out = f->n_outputs, .out = out};
    c.view.name = f->name;
    c.view.n_attrs = f->n_attrs;
    c.view.attrs = f->attrs;
    for (int i = 0; i < f->n_inputs; i++) {
        /* a variadic op's inputs (Concat, Min, Max) are none of them optional */
        int required = i < fold_ops[k].min_in || fold_ops[k].max_in == GD__MAX_OP_INPUTS;
        int needs_value = fold_ops[k].kind != FOLD_SHAPE;
        if (required && (in_shape[i] == NULL || (needs_value && in_val[i] == NULL)))
            return gd_err_set(err, GD_EMODEL, "input %d is missing", i);
    }
    for (int i = 0; i < f->n_outputs; i++)
        out[i] = NULL;
    int rc = fold_ops[k].fn(&c, err);
    if (rc == 0 && out[0] == NULL)
        rc = gd_err_set(err, GD_EMODEL, "%s made no output", f->op);
    for (int i = 1; i < f->n_outputs && rc == 0; i++)
        if (out[i] == NULL)
            rc = gd_err_set(err, GD_EMODEL, "%s has one output, not %d", f->op, f->n_outputs);
    if (rc != 0)
        for (int i = 0; i < f->n_outputs; i++) {
            gd_tensor_free(out[i]);
            out[i] = NULL;
        }
    return rc;
}

/* ---- adding folds to a graph ---- */

/* The dtype of a fold's output 0 from its inputs' dtypes, for values computed later. */
static int
fold_dtype(const char *op, const struct gd_node *view, const enum gd_dtype *in, int n_in,
           enum gd_dtype *out, struct gd_err *err)
{
    static const char *const to_bool[] = {"Equal", "Less", "Greater", "LessOrEqual",
                                          "GreaterOrEqual", "And", "Or", "Xor", "Not", NULL};
    if (strcmp(op, "Shape") == 0 || strcmp(op, "Size") == 0) {
        *out = GD_I64;
        return 0;
    }
    for (int i = 0; to_bool[i] != NULL; i++)
        if (strcmp(op, to_bool[i]) == 0) {
            *out = GD_BOOL;
            return 0;
        }
    if (strcmp(op, "Cast") == 0) {
        int64_t to;
        int rc = gd__attr_int(view, "to", -1, &to, err);
        return rc != 0 ? rc : onnx_dtype(to, out, err);
    }
    if (strcmp(op, "ConstantOfShape") == 0) {
        const struct gd_attr *v = gd_node_attr(view, "value");
        *out = v != NULL && v->type == GD_ATTR_TENSOR ? v->t->dtype : GD_F32;
        return 0;
    }
    *out = strcmp(op, "Where") == 0 && n_in > 1 ? in[1] : in[0];
    return 0;
}

static int
fold_push(struct gd_graph *g, struct gd_fold *f, struct gd_err *err)
{
    if (g->n_folds == g->cap_folds) {
        int cap = g->cap_folds ? g->cap_folds * 2 : 16;
        struct gd_fold *nf = realloc(g->folds, (size_t)cap * sizeof *nf);
        if (nf == NULL)
            return gd_err_set(err, GD_ENOMEM, "out of memory for folds");
        g->folds = nf;
        g->cap_folds = cap;
    }
    g->folds[g->n_folds++] = *f;
    return 0;
}

int
gd_graph_add_fold(struct gd_graph *g, const char *name, const char *op, int n_inputs,
                  const char *const *inputs, int n_outputs, const char *const *outputs,
                  int n_attrs, struct gd_attr *attrs, struct gd_err *err)
{
    int k = fold_find(op);
    if (k < 0)
        return gd_err_set(err, GD_ENOTSUP, "node %s: %s is not a shape computation", name, op);
    if (n_inputs < fold_ops[k].min_in || n_inputs > fold_ops[k].max_in || n_outputs != 1)
        return gd_err_set(err, GD_ENOTSUP, "node %s: %s with %d inputs and %d outputs", name,
                          op, n_inputs, n_outputs);
    struct gd_node view = {.name = (char *)name, .n_attrs = n_attrs, .attrs = attrs};
    int in[GD__MAX_OP_INPUTS];
    enum gd_dtype in_dtype[GD__MAX_OP_INPUTS];
    int all_const = 1, reads_input = 0, reads_float = 0;
    for (int i = 0; i < n_inputs; i++) {
        in[i] = inputs[i] == NULL || inputs[i][0] == '\0' ? -1
                                                         : gd_graph_find_value(g, inputs[i]);
        if (in[i] < 0 && inputs[i] != NULL && inputs[i][0] != '\0')
            return gd_err_set(err, GD_EMODEL, "node %s: input %s is not defined before it",
                              name, inputs[i]);
        if (in[i] < 0) {
            if (i < fold_ops[k].min_in)
                return gd_err_set(err, GD_EMODEL, "node %s: input %d of %s is required", name,
                                  i, op);
            in_dtype[i] = GD_F32;
            continue;
        }
        const struct gd_value *v = &g->values[in[i]];
        int shape_only = fold_ops[k].kind == FOLD_SHAPE && i == 0;
        int int_input = v->is_input && !gd_dtype_is_float(v->dtype);
        int known = v->constant != NULL || v->fold >= 0 || int_input;
        reads_input |= int_input && !shape_only;
        reads_float |= known && !shape_only && gd_dtype_is_float(v->dtype);
        if (!known && !shape_only)
            return gd_err_set(err, GD_ENOTSUP, "node %s: input %s is computed at run time",
                              name, inputs[i]);
        if (fold_ops[k].kind == FOLD_INT && known && gd_dtype_is_float(v->dtype))
            return gd_err_set(err, GD_ENOTSUP, "node %s: %s on %s is left to the backends",
                              name, op, gd_dtype_name(v->dtype));
        all_const &= v->constant != NULL;
        in_dtype[i] = v->dtype;
    }
    if (reads_input && reads_float)
        return gd_err_set(err, GD_ENOTSUP, "node %s: %s would move float data by a graph "
                          "input's values: left to the backends", name, op);
    struct gd_fold f = {.n_inputs = n_inputs, .n_outputs = n_outputs, .before = g->n_nodes,
                        .at_load = all_const};
    struct gd_tensor *out[GD__MAX_OP_OUTPUTS] = {0};
    enum gd_dtype dtype;
    int rc = fold_dtype(op, &view, in_dtype, n_inputs, &dtype, err);
    if (rc != 0)
        return gd_err_prefix(err, "node %s: ", name);
    f.name = gd__strdup(name);
    f.op = gd__strdup(op);
    f.inputs = malloc((size_t)(n_inputs ? n_inputs : 1) * sizeof *f.inputs);
    f.outputs = malloc((size_t)n_outputs * sizeof *f.outputs);
    if (f.name == NULL || f.op == NULL || f.inputs == NULL || f.outputs == NULL) {
        rc = gd_err_set(err, GD_ENOMEM, "out of memory for node %s", name);
        goto fail;
    }
    memcpy(f.inputs, in, (size_t)n_inputs * sizeof *in);
    f.attrs = n_attrs > 0 ? malloc((size_t)n_attrs * sizeof *f.attrs) : NULL;
    if (n_attrs > 0 && f.attrs == NULL) {
        rc = gd_err_set(err, GD_ENOMEM, "out of memory for node %s", name);
        goto fail;
    }
    if (n_attrs > 0)
        memcpy(f.attrs, attrs, (size_t)n_attrs * sizeof *attrs);
    f.n_attrs = n_attrs;
    if (all_const) {
        const struct gd_shape *shp[GD__MAX_OP_INPUTS] = {0};
        const struct gd_tensor *val[GD__MAX_OP_INPUTS] = {0};
        for (int i = 0; i < n_inputs; i++)
            if (in[i] >= 0) {
                shp[i] = &g->values[in[i]].shape;
                val[i] = g->values[in[i]].constant;
            }
        rc = gd__fold_eval(&f, shp, val, out, err);
        if (rc != 0) {
            gd_err_prefix(err, "node %s (%s): ", name, op);
            goto fail_owned;
        }
    }
    for (int i = 0; i < n_outputs; i++) {
        int v;
        if (all_const) {
            rc = gd_graph_add_constant(g, outputs[i], out[i], err);
            out[i] = NULL;
            v = rc == 0 ? g->n_values - 1 : rc;
        } else {
            v = gd__value_add(g, outputs[i], err);
        }
        if (v < 0) {
            rc = gd_err_prefix(err, "node %s: ", name);
            goto fail_owned;
        }
        f.outputs[i] = v;
        if (!all_const) {
            g->values[v].fold = g->n_folds;
            g->values[v].dtype = dtype;
        }
    }
    rc = fold_push(g, &f, err);
    if (rc == 0)
        return 0;
fail_owned:
    for (int i = 0; i < n_outputs; i++)
        gd_tensor_free(out[i]);
fail:
    /* The attributes stay the caller's: only the array they were copied into goes. */
    free(f.attrs);
    f.attrs = NULL;
    f.n_attrs = 0;
    gd__fold_fini(&f);
    return rc;
}

int
gd_graph_add_constant_node(struct gd_graph *g, const char *name, const char *output,
                           struct gd_tensor *t, struct gd_err *err)
{
    struct gd_fold f = {.n_outputs = 1, .before = g->n_nodes, .at_load = 1};
    int rc = gd_graph_add_constant(g, output, t, err);
    if (rc != 0)
        return gd_err_prefix(err, "node %s: ", name);
    f.name = gd__strdup(name);
    f.op = gd__strdup("Constant");
    f.outputs = malloc(sizeof *f.outputs);
    if (f.name == NULL || f.op == NULL || f.outputs == NULL) {
        gd__fold_fini(&f);
        return gd_err_set(err, GD_ENOMEM, "out of memory for node %s", name);
    }
    f.outputs[0] = g->n_values - 1;
    rc = fold_push(g, &f, err);
    if (rc != 0)
        gd__fold_fini(&f);
    return rc;
}
