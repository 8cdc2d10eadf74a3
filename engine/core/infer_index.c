/*
 * infer_index.c: indexing ops (inference): Gather, GatherElements, GatherND, ScatterElements
 * (and its opset-9 name Scatter), ScatterND, Trilu, OneHot, EyeLike, TopK.
 *
 * Indices are int32 or int64, negative ones counting from the end. Indices that are weights
 * are checked here, so a model with an index out of range is refused at load with the node
 * named (GD_ERANGE); computed indices are checked by the backends when the op runs.
 */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "internal.h"

static int
is_index_dtype(enum gd_dtype d)
{
    return d == GD_I32 || d == GD_I64;
}

static int
need_index_dtype(struct gd__infer_call *c, int i, const char *what, struct gd_err *err)
{
    if (!is_index_dtype(c->in_dtype[i]))
        return gd_err_set(err, GD_EDTYPE, "%s must be int32 or int64, not %s", what,
                          gd_dtype_name(c->in_dtype[i]));
    return 0;
}

/* Element i of a constant integer tensor. */
static int64_t
const_index(const struct gd_tensor *t, int64_t i)
{
    return t->dtype == GD_I32 ? ((const int32_t *)t->data)[i] : ((const int64_t *)t->data)[i];
}

/*
 * Checks a constant index tensor whose element i indexes an axis of length bounds[i % period]
 * (period 1: one axis; GatherND's tuples: one bound per component): every value must lie in
 * [-len, len).
 */
static int
check_const_indices(const struct gd_tensor *t, const int64_t *bounds, int64_t period,
                    struct gd_err *err)
{
    int64_t n = gd_tensor_numel(t);
    for (int64_t i = 0; i < n; i++) {
        int64_t v = const_index(t, i), len = bounds[period > 1 ? i % period : 0];
        if (v < -len || v >= len)
            return gd_err_set(err, GD_ERANGE,
                              "index %lld (element %lld of the indices) is out of range for "
                              "an axis of %lld",
                              (long long)v, (long long)i, (long long)len);
    }
    return 0;
}

static int
check_rank(const struct gd_shape *s, int lo, const char *what, struct gd_err *err)
{
    if (s->ndim < lo)
        return gd_err_set(err, GD_ESHAPE, "%s must have at least %d dimension%s, not %d", what, lo,
                          lo == 1 ? "" : "s", s->ndim);
    return 0;
}

static int
read_axis(struct gd__infer_call *c, int64_t dflt, int ndim, struct gd_err *err)
{
    int64_t axis;
    int rc = gd__attr_int(c->node, "axis", dflt, &axis, err);
    if (rc == 0)
        rc = gd__axis_norm(axis, ndim, &c->params->axis, err);
    return rc;
}

static int
infer_gather(struct gd__infer_call *c, struct gd_err *err)
{
    static const char *const known[] = {"axis", NULL};
    const struct gd_shape *x = c->in[0], *idx = c->in[1];
    struct gd_params *p = c->params;
    int rc = gd__attr_check_known(c->node, known, err);
    if (rc == 0)
        rc = check_rank(x, 1, "data", err);
    if (rc == 0)
        rc = need_index_dtype(c, 1, "indices", err);
    if (rc == 0)
        rc = read_axis(c, 0, x->ndim, err);
    if (rc != 0)
        return rc;
    if (x->ndim - 1 + idx->ndim > GD_MAX_DIMS)
        return gd_err_set(err, GD_ESHAPE, "the result would have %d dimensions",
                          x->ndim - 1 + idx->ndim);
    if (c->in_const[1] != NULL &&
        (rc = check_const_indices(c->in_const[1], &x->dim[p->axis], 1, err)) != 0)
        return rc;
    struct gd_shape *y = c->out[0];
    y->ndim = 0;
    for (int i = 0; i < p->axis; i++)
        y->dim[y->ndim++] = x->dim[i];
    for (int i = 0; i < idx->ndim; i++)
        y->dim[y->ndim++] = idx->dim[i];
    for (int i = (int)p->axis + 1; i < x->ndim; i++)
        y->dim[y->ndim++] = x->dim[i];
    /*
     * Row r of the output comes from row r of data alone when the gather is along a later
     * axis with fixed indices, and from row r of the indices alone when a table (a weight)
     * is looked up by indices of rank >= 1: token ids into an embedding.
     */
    int data_const = c->in_weight[0], idx_const = c->in_weight[1];
    int rows_kept = (p->axis > 0 && idx_const) || (p->axis == 0 && data_const && idx->ndim > 0) ||
                    (data_const && idx_const);
    p->mixes_batch = !rows_kept;
    return 0;
}

static int
infer_gather_elements(struct gd__infer_call *c, struct gd_err *err)
{
    static const char *const known[] = {"axis", NULL};
    const struct gd_shape *x = c->in[0], *idx = c->in[1];
    struct gd_params *p = c->params;
    int rc = gd__attr_check_known(c->node, known, err);
    if (rc == 0)
        rc = check_rank(x, 1, "data", err);
    if (rc == 0)
        rc = need_index_dtype(c, 1, "indices", err);
    if (rc == 0)
        rc = read_axis(c, 0, x->ndim, err);
    if (rc != 0)
        return rc;
    if (idx->ndim != x->ndim)
        return gd_err_set(err, GD_ESHAPE, "indices have %d dimensions, data %d", idx->ndim,
                          x->ndim);
    for (int i = 0; i < x->ndim; i++)
        if (i != p->axis && idx->dim[i] > x->dim[i])
            return gd_err_set(err, GD_ESHAPE, "indices dimension %d is %lld, data has %lld", i,
                              (long long)idx->dim[i], (long long)x->dim[i]);
    if (c->in_const[1] != NULL &&
        (rc = check_const_indices(c->in_const[1], &x->dim[p->axis], 1, err)) != 0)
        return rc;
    *c->out[0] = *idx;
    p->mixes_batch = p->axis == 0 && !c->in_weight[0];
    return 0;
}

static int
infer_gather_nd(struct gd__infer_call *c, struct gd_err *err)
{
    static const char *const known[] = {"batch_dims", NULL};
    const struct gd_shape *x = c->in[0], *idx = c->in[1];
    struct gd_params *p = c->params;
    int rc = gd__attr_check_known(c->node, known, err);
    if (rc == 0)
        rc = gd__attr_int(c->node, "batch_dims", 0, &p->batch_dims, err);
    if (rc == 0)
        rc = check_rank(x, 1, "data", err);
    if (rc == 0)
        rc = check_rank(idx, 1, "indices", err);
    if (rc == 0)
        rc = need_index_dtype(c, 1, "indices", err);
    if (rc != 0)
        return rc;
    int64_t b = p->batch_dims, k = idx->dim[idx->ndim - 1];
    if (b < 0 || b >= x->ndim || b >= idx->ndim)
        return gd_err_set(err, GD_EMODEL, "batch_dims %lld must be below both ranks (%d, %d)",
                          (long long)b, x->ndim, idx->ndim);
    for (int i = 0; i < b; i++)
        if (idx->dim[i] != x->dim[i])
            return gd_err_set(err, GD_ESHAPE, "batch dimension %d is %lld in indices, %lld in "
                              "data", i, (long long)idx->dim[i], (long long)x->dim[i]);
    if (k < 1 || k > x->ndim - b)
        return gd_err_set(err, GD_ESHAPE, "index tuples of %lld components for %lld indexable "
                          "dimensions", (long long)k, (long long)(x->ndim - b));
    int rank = idx->ndim - 1 + x->ndim - (int)b - (int)k;
    if (rank > GD_MAX_DIMS)
        return gd_err_set(err, GD_ESHAPE, "the result would have %d dimensions", rank);
    if (c->in_const[1] != NULL &&
        (rc = check_const_indices(c->in_const[1], &x->dim[b], k, err)) != 0)
        return rc;
    struct gd_shape *y = c->out[0];
    y->ndim = 0;
    for (int i = 0; i < idx->ndim - 1; i++)
        y->dim[y->ndim++] = idx->dim[i];
    for (int i = (int)(b + k); i < x->ndim; i++)
        y->dim[y->ndim++] = x->dim[i];
    /* A batch axis keeps rows; otherwise the first component picks data's row. */
    p->mixes_batch = !(b > 0 || (c->in_weight[0] && idx->ndim > 1));
    return 0;
}

static int
read_scatter_reduction(struct gd__infer_call *c, struct gd_err *err)
{
    const char *r;
    struct gd_params *p = c->params;
    int rc = gd__attr_string(c->node, "reduction", "none", &r, err);
    if (rc != 0)
        return rc;
    if (strcmp(r, "none") == 0)
        p->scatter_reduction = GD_SCATTER_NONE;
    else if (strcmp(r, "add") == 0)
        p->scatter_reduction = GD_SCATTER_ADD;
    else if (strcmp(r, "mul") == 0)
        p->scatter_reduction = GD_SCATTER_MUL;
    else if (strcmp(r, "max") == 0)
        p->scatter_reduction = GD_SCATTER_MAX;
    else if (strcmp(r, "min") == 0)
        p->scatter_reduction = GD_SCATTER_MIN;
    else
        return gd_err_set(err, GD_EMODEL, "reduction %s (none, add, mul, max or min)", r);
    enum gd_dtype d = c->in_dtype[0];
    if (p->scatter_reduction != GD_SCATTER_NONE && !gd_dtype_is_float(d) && d != GD_I32 &&
        d != GD_I64)
        return gd_err_set(err, GD_EDTYPE, "reduction %s of %s data (floats, int32 and int64)", r,
                          gd_dtype_name(d));
    if (c->in_dtype[2] != d)
        return gd_err_set(err, GD_EDTYPE, "updates are %s, data %s", gd_dtype_name(c->in_dtype[2]),
                          gd_dtype_name(d));
    return 0;
}

static int
infer_scatter_elements(struct gd__infer_call *c, struct gd_err *err)
{
    static const char *const known[] = {"axis", "reduction", NULL};
    static const char *const known_v9[] = {"axis", NULL};
    const struct gd_shape *x = c->in[0], *idx = c->in[1], *upd = c->in[2];
    struct gd_params *p = c->params;
    int rc = gd__attr_check_known(c->node, c->node->op == GD_OP_SCATTER ? known_v9 : known, err);
    if (rc == 0)
        rc = check_rank(x, 1, "data", err);
    if (rc == 0)
        rc = need_index_dtype(c, 1, "indices", err);
    if (rc == 0)
        rc = read_axis(c, 0, x->ndim, err);
    if (rc == 0)
        rc = read_scatter_reduction(c, err);
    if (rc != 0)
        return rc;
    if (idx->ndim != x->ndim)
        return gd_err_set(err, GD_ESHAPE, "indices have %d dimensions, data %d", idx->ndim,
                          x->ndim);
    for (int i = 0; i < x->ndim; i++) {
        if (upd->ndim != idx->ndim || upd->dim[i] != idx->dim[i]) {
            char a[96], b[96];
            return gd_err_set(err, GD_ESHAPE, "updates have shape %s, indices %s",
                              gd_shape_format(upd->ndim, upd->dim, a, sizeof a),
                              gd_shape_format(idx->ndim, idx->dim, b, sizeof b));
        }
        if (i != p->axis && idx->dim[i] > x->dim[i])
            return gd_err_set(err, GD_ESHAPE, "indices dimension %d is %lld, data has %lld", i,
                              (long long)idx->dim[i], (long long)x->dim[i]);
    }
    if (c->in_const[1] != NULL &&
        (rc = check_const_indices(c->in_const[1], &x->dim[p->axis], 1, err)) != 0)
        return rc;
    *c->out[0] = *x;
    p->mixes_batch = p->axis == 0;
    return 0;
}

static int
infer_scatter_nd(struct gd__infer_call *c, struct gd_err *err)
{
    static const char *const known[] = {"reduction", NULL};
    const struct gd_shape *x = c->in[0], *idx = c->in[1], *upd = c->in[2];
    int rc = gd__attr_check_known(c->node, known, err);
    if (rc == 0)
        rc = check_rank(x, 1, "data", err);
    if (rc == 0)
        rc = check_rank(idx, 1, "indices", err);
    if (rc == 0)
        rc = need_index_dtype(c, 1, "indices", err);
    if (rc == 0)
        rc = read_scatter_reduction(c, err);
    if (rc != 0)
        return rc;
    int64_t k = idx->dim[idx->ndim - 1];
    if (k < 1 || k > x->ndim)
        return gd_err_set(err, GD_ESHAPE, "index tuples of %lld components for data of %d "
                          "dimensions", (long long)k, x->ndim);
    /* updates: indices.shape[:-1] + data.shape[k:] */
    struct gd_shape want = {.ndim = 0};
    for (int i = 0; i < idx->ndim - 1; i++)
        want.dim[want.ndim++] = idx->dim[i];
    for (int i = (int)k; i < x->ndim && want.ndim < GD_MAX_DIMS; i++)
        want.dim[want.ndim++] = x->dim[i];
    int ok = upd->ndim == want.ndim && idx->ndim - 1 + x->ndim - k <= GD_MAX_DIMS;
    for (int i = 0; ok && i < want.ndim; i++)
        ok = upd->dim[i] == want.dim[i];
    if (!ok) {
        char a[96], b[96];
        return gd_err_set(err, GD_ESHAPE, "updates have shape %s; these indices and data need %s",
                          gd_shape_format(upd->ndim, upd->dim, a, sizeof a),
                          gd_shape_format(want.ndim, want.dim, b, sizeof b));
    }
    if (c->in_const[1] != NULL && (rc = check_const_indices(c->in_const[1], x->dim, k, err)) != 0)
        return rc;
    *c->out[0] = *x;
    c->params->mixes_batch = 1; /* the first component of a tuple picks data's row */
    return 0;
}

static int
infer_trilu(struct gd__infer_call *c, struct gd_err *err)
{
    static const char *const known[] = {"upper", NULL};
    const struct gd_shape *x = c->in[0];
    struct gd_params *p = c->params;
    int64_t upper;
    int rc = gd__attr_check_known(c->node, known, err);
    if (rc == 0)
        rc = gd__attr_int(c->node, "upper", 1, &upper, err);
    if (rc == 0)
        rc = check_rank(x, 2, "input", err);
    if (rc != 0)
        return rc;
    p->upper = upper != 0;
    p->diagonal = 0;
    if (c->n_in > 1 && c->in[1] != NULL) {
        if (c->in_dtype[1] != GD_I64)
            return gd_err_set(err, GD_EDTYPE, "k must be int64, not %s",
                              gd_dtype_name(c->in_dtype[1]));
        if (gd__shape_numel(c->in[1]) != 1)
            return gd_err_set(err, GD_ESHAPE, "k must hold one value, not %lld",
                              (long long)gd__shape_numel(c->in[1]));
        if (c->in_const[1] != NULL)
            p->diagonal = ((const int64_t *)c->in_const[1]->data)[0];
        else
            p->diagonal_runtime = 1;
    }
    *c->out[0] = *x;
    /* A matrix's rows are dim 0 of a 2-D input: which elements stay depends on the row. */
    p->mixes_batch = x->ndim == 2;
    return 0;
}

static int
infer_one_hot(struct gd__infer_call *c, struct gd_err *err)
{
    static const char *const known[] = {"axis", NULL};
    const struct gd_shape *idx = c->in[0], *values = c->in[2];
    struct gd_params *p = c->params;
    double depth;
    int rc = gd__attr_check_known(c->node, known, err);
    if (rc != 0)
        return rc;
    if (c->in_dtype[0] == GD_BOOL)
        return gd_err_set(err, GD_EDTYPE, "indices must be numbers, not bool");
    if (idx->ndim + 1 > GD_MAX_DIMS)
        return gd_err_set(err, GD_ESHAPE, "the result would have %d dimensions", idx->ndim + 1);
    if (c->in_const[1] == NULL)
        return gd_err_set(err, GD_ENOTSUP, "depth must be a constant (a weight)");
    rc = gd__const_scalar(c->in_const[1], "depth", &depth, err);
    if (rc == 0)
        rc = read_axis(c, -1, idx->ndim + 1, err);
    if (rc != 0)
        return rc;
    depth = trunc(depth); /* ONNX casts depth to an integer */
    if (!(depth >= 1) || depth > (double)INT64_MAX / 2)
        return gd_err_set(err, GD_EMODEL, "depth must be a positive integer, not %g", depth);
    if (values->ndim != 1 || values->dim[0] != 2)
        return gd_err_set(err, GD_ESHAPE, "values must be a list of two (off, on)");
    struct gd_shape *y = c->out[0];
    y->ndim = 0;
    for (int i = 0; i <= idx->ndim; i++)
        y->dim[y->ndim++] = i == p->axis ? (int64_t)depth : idx->dim[i - (i > p->axis)];
    c->out_dtype[0] = c->in_dtype[2];
    p->mixes_batch = p->axis == 0;
    return 0;
}

/* ONNX's TensorProto.DataType numbers, for EyeLike's dtype attribute. */
static int
onnx_dtype(int64_t code, enum gd_dtype *out)
{
    static const struct {
        int code;
        enum gd_dtype dtype;
    } map[] = {{1, GD_F32}, {2, GD_U8},   {3, GD_I8},   {4, GD_U16},   {5, GD_I16},
               {6, GD_I32}, {7, GD_I64},  {9, GD_BOOL}, {10, GD_F16},  {11, GD_F64},
               {12, GD_U32}, {13, GD_U64}, {16, GD_BF16}};
    for (size_t i = 0; i < sizeof map / sizeof map[0]; i++) {
        if (map[i].code == code) {
            *out = map[i].dtype;
            return 0;
        }
    }
    return -1;
}

static int
infer_eye_like(struct gd__infer_call *c, struct gd_err *err)
{
    static const char *const known[] = {"dtype", "k", NULL};
    const struct gd_shape *x = c->in[0];
    struct gd_params *p = c->params;
    const struct gd_attr *dt = gd_node_attr(c->node, "dtype");
    int rc = gd__attr_check_known(c->node, known, err);
    if (rc == 0)
        rc = gd__attr_int(c->node, "k", 0, &p->diagonal, err);
    if (rc != 0)
        return rc;
    if (x->ndim != 2)
        return gd_err_set(err, GD_ESHAPE, "EyeLike takes a 2-D input, not %d-D", x->ndim);
    c->out_dtype[0] = c->in_dtype[0];
    /* dtype: ONNX's number, or (the JSON format) a dtype's name */
    if (dt != NULL && dt->type == GD_ATTR_INT && onnx_dtype(dt->i, &c->out_dtype[0]) != 0)
        return gd_err_set(err, GD_ENOTSUP, "dtype %lld", (long long)dt->i);
    if (dt != NULL && dt->type == GD_ATTR_STRING &&
        gd_dtype_from_name(dt->s, &c->out_dtype[0]) != 0)
        return gd_err_set(err, GD_EMODEL, "dtype %s", dt->s);
    if (dt != NULL && dt->type != GD_ATTR_INT && dt->type != GD_ATTR_STRING)
        return gd_err_set(err, GD_EMODEL, "dtype must be an ONNX type number or a dtype name");
    *c->out[0] = *x;
    p->mixes_batch = 1; /* row r of an identity depends on r */
    return 0;
}

static int
infer_topk(struct gd__infer_call *c, struct gd_err *err)
{
    static const char *const known[] = {"axis", "largest", "sorted", "k", NULL};
    const struct gd_shape *x = c->in[0];
    struct gd_params *p = c->params;
    int64_t largest, sorted, k = -1;
    int rc = gd__attr_check_known(c->node, known, err);
    if (rc == 0)
        rc = gd__attr_int(c->node, "largest", 1, &largest, err);
    if (rc == 0)
        rc = gd__attr_int(c->node, "sorted", 1, &sorted, err);
    if (rc == 0)
        rc = gd__attr_int(c->node, "k", -1, &k, err);
    if (rc == 0)
        rc = check_rank(x, 1, "input", err);
    if (rc == 0)
        rc = read_axis(c, -1, x->ndim, err);
    if (rc != 0)
        return rc;
    if (!gd_dtype_is_float(c->in_dtype[0]))
        return gd_err_set(err, GD_ENOTSUP, "TopK of %s (floats are supported)",
                          gd_dtype_name(c->in_dtype[0]));
    if (c->n_out != 2)
        return gd_err_set(err, GD_EMODEL, "TopK has two outputs (values, indices), not %d",
                          c->n_out);
    int has_input = c->n_in > 1 && c->in[1] != NULL;
    if (has_input == (gd_node_attr(c->node, "k") != NULL))
        return gd_err_set(err, GD_EMODEL, "K must be given once: as input (opset 10 on) or as "
                          "attribute k (opset 1)");
    if (has_input) {
        int64_t v[1];
        int n = 0;
        if (c->in_const[1] == NULL)
            return gd_err_set(err, GD_ENOTSUP, "K must be a constant (a weight)");
        rc = gd__const_ints(c->in_const[1], "K", 1, v, &n, err);
        if (rc != 0)
            return rc;
        if (n != 1)
            return gd_err_set(err, GD_EMODEL, "K must hold one value");
        k = v[0];
    }
    if (k < 0 || k > x->dim[p->axis])
        return gd_err_set(err, GD_EMODEL, "K = %lld for an axis of %lld", (long long)k,
                          (long long)x->dim[p->axis]);
    p->largest = largest != 0;
    /* sorted = 0 leaves the order to the implementation: the engine always sorts. */
    (void)sorted;
    *c->out[0] = *x;
    c->out[0]->dim[p->axis] = k;
    *c->out[1] = *c->out[0];
    c->out_dtype[0] = c->in_dtype[0];
    c->out_dtype[1] = GD_I64;
    p->mixes_batch = p->axis == 0;
    return 0;
}

static int
infer_op(struct gd__infer_call *c, struct gd_err *err)
{
    if (c->node->op != GD_OP_TOPK && c->n_out != 1)
        return gd_err_set(err, GD_EMODEL, "%s has one output", gd_op_name(c->node->op));
    c->out_dtype[0] = c->in_dtype[0];
    switch (c->node->op) {
    case GD_OP_GATHER:
        return infer_gather(c, err);
    case GD_OP_GATHER_ELEMENTS:
        return infer_gather_elements(c, err);
    case GD_OP_GATHER_ND:
        return infer_gather_nd(c, err);
    case GD_OP_SCATTER_ELEMENTS:
    case GD_OP_SCATTER:
        return infer_scatter_elements(c, err);
    case GD_OP_SCATTER_ND:
        return infer_scatter_nd(c, err);
    case GD_OP_TRILU:
        return infer_trilu(c, err);
    case GD_OP_ONE_HOT:
        return infer_one_hot(c, err);
    case GD_OP_EYE_LIKE:
        return infer_eye_like(c, err);
    default: /* TopK */
        return infer_topk(c, err);
    }
}

/* 1 when every input present is a weight: the node's result depends on no row at all. */
static int
inputs_all_constant(const struct gd__infer_call *c)
{
    for (int i = 0; i < c->n_in; i++)
        if (c->in[i] != NULL && !c->in_weight[i])
            return 0;
    return 1;
}

int
gd__infer_index(struct gd__infer_call *c, struct gd_err *err)
{
    int rc = infer_op(c, err);
    if (rc == 0 && inputs_all_constant(c))
        c->params->mixes_batch = 0;
    return rc;
}
