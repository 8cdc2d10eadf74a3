/* infer_shape.c: data movement ops: Concat, Flatten, Reshape, Transpose, Squeeze, Unsqueeze,
 * Pad, Identity, Dropout, Slice, Split, Expand, Tile, DepthToSpace, SpaceToDepth (inference).
 * Inputs of any dtype; the outputs keep it. */
#include <stdint.h>
#include <string.h>

#include "internal.h"
#include "move.h"

/* Reads a list given by attribute `name` or, in later opsets, by constant input `in`. */
static int
ints_attr_or_input(struct gd__infer_call *c, const char *name, int in, int max, int64_t *out,
                   int *n_out, int *given, struct gd_err *err)
{
    int rc = gd__attr_ints(c->node, name, -1, max, out, n_out, err);
    if (rc != 0)
        return rc;
    *given = gd_node_attr(c->node, name) != NULL;
    if (in < c->n_in && c->in[in] != NULL) {
        if (*given)
            return gd_err_set(err, GD_EMODEL, "%s given both as attribute and as input", name);
        if (c->in_const[in] == NULL)
            return gd_err_set(err, GD_ENOTSUP, "%s must be a constant (a weight)", name);
        *given = 1;
        return gd__const_ints(c->in_const[in], name, max, out, n_out, err);
    }
    return 0;
}

static int
infer_concat(struct gd__infer_call *c, struct gd_err *err)
{
    static const char *const known[] = {"axis", NULL};
    int64_t axis;
    int rc = gd__attr_check_known(c->node, known, err);
    if (rc == 0 && gd_node_attr(c->node, "axis") == NULL)
        rc = gd_err_set(err, GD_EMODEL, "axis is required");
    if (rc == 0)
        rc = gd__attr_int(c->node, "axis", 0, &axis, err);
    const struct gd_shape *x = c->in[0];
    if (rc == 0)
        rc = gd__axis_norm(axis, x->ndim, &c->params->axis, err);
    if (rc != 0)
        return rc;
    struct gd_shape y = *x;
    for (int i = 1; i < c->n_in; i++) {
        const struct gd_shape *s = c->in[i];
        if (s == NULL)
            return gd_err_set(err, GD_EMODEL, "input %d is missing", i);
        if (c->in_dtype[i] != c->in_dtype[0])
            return gd_err_set(err, GD_EDTYPE, "input %d is %s, input 0 %s", i,
                              gd_dtype_name(c->in_dtype[i]), gd_dtype_name(c->in_dtype[0]));
        int ok = s->ndim == x->ndim;
        for (int k = 0; ok && k < x->ndim; k++)
            ok = k == c->params->axis || s->dim[k] == x->dim[k];
        if (!ok) {
            char a[96], b[96];
            return gd_err_set(err, GD_ESHAPE, "input %d has shape %s, input 0 %s", i,
                              gd_shape_format(s->ndim, s->dim, b, sizeof b),
                              gd_shape_format(x->ndim, x->dim, a, sizeof a));
        }
        if (__builtin_add_overflow(y.dim[c->params->axis], s->dim[c->params->axis],
                                   &y.dim[c->params->axis]))
            return gd_err_set(err, GD_ESHAPE, "the concatenation would be too large");
    }
    *c->out[0] = y;
    c->params->mixes_batch = c->params->axis == 0 && c->n_in > 1;
    return 0;
}

static int
infer_flatten(struct gd__infer_call *c, struct gd_err *err)
{
    static const char *const known[] = {"axis", NULL};
    const struct gd_shape *x = c->in[0];
    int64_t axis;
    int rc = gd__attr_check_known(c->node, known, err);
    if (rc == 0)
        rc = gd__attr_int(c->node, "axis", 1, &axis, err);
    if (rc != 0)
        return rc;
    if (axis < 0)
        axis += x->ndim;
    if (axis < 0 || axis > x->ndim)
        return gd_err_set(err, GD_EMODEL, "axis is out of range for %d dimensions", x->ndim);
    c->params->axis = axis;
    int64_t outer = 1, inner = 1;
    for (int i = 0; i < x->ndim; i++)
        *(i < axis ? &outer : &inner) *= x->dim[i];
    c->out[0]->ndim = 2;
    c->out[0]->dim[0] = outer;
    c->out[0]->dim[1] = inner;
    c->params->mixes_batch = axis == 0 && x->ndim > 0;
    return 0;
}

static int
infer_reshape(struct gd__infer_call *c, struct gd_err *err)
{
    static const char *const known[] = {"shape", "allowzero", NULL};
    const struct gd_shape *x = c->in[0];
    int64_t want[GD_MAX_DIMS], allowzero;
    int n = 0, given = 0;
    int rc = gd__attr_check_known(c->node, known, err);
    if (rc == 0)
        rc = gd__attr_int(c->node, "allowzero", 0, &allowzero, err);
    if (rc == 0)
        rc = ints_attr_or_input(c, "shape", 1, GD_MAX_DIMS, want, &n, &given, err);
    if (rc != 0)
        return rc;
    if (!given)
        return gd_err_set(err, GD_EMODEL, "the target shape is missing");
    struct gd_shape *y = c->out[0];
    int infer_at = -1;
    int64_t known_numel = 1;
    y->ndim = n;
    for (int i = 0; i < n; i++) {
        int64_t d = want[i];
        if (d == 0 && !allowzero) {
            if (i >= x->ndim)
                return gd_err_set(err, GD_EMODEL, "shape[%d] = 0 copies a dimension the input "
                                  "lacks", i);
            d = x->dim[i];
        }
        if (d == -1) {
            if (infer_at >= 0)
                return gd_err_set(err, GD_EMODEL, "shape has more than one -1");
            infer_at = i;
            continue;
        }
        if (d < 0)
            return gd_err_set(err, GD_EMODEL, "shape[%d] is %lld", i, (long long)d);
        y->dim[i] = d;
        /* The input's element count fits; a product past it cannot match it. */
        if (__builtin_mul_overflow(known_numel, d, &known_numel))
            return gd_err_set(err, GD_ESHAPE, "shape[%d] = %lld makes the target shape too "
                              "large", i, (long long)d);
    }
    int64_t numel = gd__shape_numel(x);
    if (infer_at >= 0) {
        if (known_numel == 0 || numel % known_numel != 0)
            return gd_err_set(err, GD_ESHAPE, "cannot reshape %lld elements with a -1 there",
                              (long long)numel);
        y->dim[infer_at] = numel / known_numel;
        known_numel *= y->dim[infer_at];
    }
    if (known_numel != numel) {
        char a[96], b[96];
        return gd_err_set(err, GD_ESHAPE, "cannot reshape %s (%lld elements) into %s",
                          gd_shape_format(x->ndim, x->dim, a, sizeof a), (long long)numel,
                          gd_shape_format(y->ndim, y->dim, b, sizeof b));
    }
    /* Rows stay rows when dim 0 is kept: each row's elements are contiguous either side. */
    c->params->mixes_batch = x->ndim < 1 || y->ndim < 1 || y->dim[0] != x->dim[0];
    return 0;
}

static int
infer_transpose(struct gd__infer_call *c, struct gd_err *err)
{
    static const char *const known[] = {"perm", NULL};
    const struct gd_shape *x = c->in[0];
    int64_t *perm = c->params->perm;
    int n = 0;
    int rc = gd__attr_check_known(c->node, known, err);
    if (rc == 0)
        rc = gd__attr_ints(c->node, "perm", -1, GD_MAX_DIMS, perm, &n, err);
    if (rc != 0)
        return rc;
    if (n == 0) {
        for (int i = 0; i < x->ndim; i++)
            perm[i] = x->ndim - 1 - i;
    } else if (n != x->ndim) {
        return gd_err_set(err, GD_EMODEL, "perm has %d values for %d dimensions", n, x->ndim);
    }
    int seen[GD_MAX_DIMS] = {0};
    struct gd_shape *y = c->out[0];
    y->ndim = x->ndim;
    for (int i = 0; i < x->ndim; i++) {
        if (perm[i] < 0 || perm[i] >= x->ndim || seen[perm[i]])
            return gd_err_set(err, GD_EMODEL, "perm is not a permutation of the axes");
        seen[perm[i]] = 1;
        y->dim[i] = x->dim[perm[i]];
    }
    c->params->mixes_batch = x->ndim > 0 && perm[0] != 0;
    return 0;
}

static int
infer_squeeze(struct gd__infer_call *c, struct gd_err *err)
{
    static const char *const known[] = {"axes", NULL};
    const struct gd_shape *x = c->in[0];
    struct gd_params *p = c->params;
    int64_t axes[GD_MAX_DIMS];
    int n = 0, given = 0;
    int rc = gd__attr_check_known(c->node, known, err);
    if (rc == 0)
        rc = ints_attr_or_input(c, "axes", 1, GD_MAX_DIMS, axes, &n, &given, err);
    if (rc != 0)
        return rc;
    int drop[GD_MAX_DIMS] = {0};
    for (int i = 0; i < n; i++) {
        int64_t a;
        rc = gd__axis_norm(axes[i], x->ndim, &a, err);
        if (rc != 0)
            return rc;
        if (x->dim[a] != 1)
            return gd_err_set(err, GD_ESHAPE, "axis %lld has size %lld, not 1", (long long)a,
                              (long long)x->dim[a]);
        drop[a] = 1;
    }
    if (n == 0)
        for (int i = 0; i < x->ndim; i++)
            drop[i] = x->dim[i] == 1;
    struct gd_shape *y = c->out[0];
    y->ndim = 0;
    p->n_axes = 0;
    for (int i = 0; i < x->ndim; i++) {
        if (drop[i])
            p->axes[p->n_axes++] = i;
        else
            y->dim[y->ndim++] = x->dim[i];
    }
    p->mixes_batch = x->ndim > 0 && drop[0];
    return 0;
}

static int
infer_unsqueeze(struct gd__infer_call *c, struct gd_err *err)
{
    static const char *const known[] = {"axes", NULL};
    const struct gd_shape *x = c->in[0];
    int64_t axes[GD_MAX_DIMS];
    int n = 0, given = 0;
    int rc = gd__attr_check_known(c->node, known, err);
    if (rc == 0)
        rc = ints_attr_or_input(c, "axes", 1, GD_MAX_DIMS, axes, &n, &given, err);
    if (rc != 0)
        return rc;
    if (n == 0)
        return gd_err_set(err, GD_EMODEL, "axes is required");
    int rank = x->ndim + n;
    if (rank > GD_MAX_DIMS)
        return gd_err_set(err, GD_ESHAPE, "the result would have %d dimensions", rank);
    int added[GD_MAX_DIMS] = {0};
    for (int i = 0; i < n; i++) {
        int64_t a;
        rc = gd__axis_norm(axes[i], rank, &a, err);
        if (rc != 0)
            return rc;
        if (added[a])
            return gd_err_set(err, GD_EMODEL, "axis %lld is given twice", (long long)a);
        added[a] = 1;
    }
    struct gd_shape *y = c->out[0];
    y->ndim = rank;
    for (int i = 0, k = 0; i < rank; i++)
        y->dim[i] = added[i] ? 1 : x->dim[k++];
    c->params->mixes_batch = added[0];
    return 0;
}

static int
infer_pad(struct gd__infer_call *c, struct gd_err *err)
{
    static const char *const known[] = {"mode", "pads", "value", NULL};
    const struct gd_shape *x = c->in[0];
    struct gd_params *p = c->params;
    const char *mode;
    int64_t pads[2 * GD_MAX_DIMS], axes[GD_MAX_DIMS];
    int n = 0, n_axes = 0, given = 0;
    int rc = gd__attr_check_known(c->node, known, err);
    if (rc == 0)
        rc = gd__attr_string(c->node, "mode", "constant", &mode, err);
    if (rc == 0)
        rc = ints_attr_or_input(c, "pads", 1, 2 * GD_MAX_DIMS, pads, &n, &given, err);
    if (rc == 0)
        rc = gd__attr_float(c->node, "value", 0.0, &p->pad_value, err);
    if (rc == 0 && c->n_in > 2 && c->in[2] != NULL) {
        if (c->in_const[2] == NULL)
            return gd_err_set(err, GD_ENOTSUP, "constant_value must be a constant (a weight)");
        rc = gd__const_scalar(c->in_const[2], "constant_value", &p->pad_value, err);
    }
    if (rc == 0 && c->n_in > 3 && c->in[3] != NULL) {
        if (c->in_const[3] == NULL)
            return gd_err_set(err, GD_ENOTSUP, "axes must be a constant (a weight)");
        rc = gd__const_ints(c->in_const[3], "axes", GD_MAX_DIMS, axes, &n_axes, err);
    }
    if (rc != 0)
        return rc;
    if (strcmp(mode, "constant") == 0)
        p->pad_mode = GD_PAD_CONSTANT;
    else if (strcmp(mode, "reflect") == 0)
        p->pad_mode = GD_PAD_REFLECT;
    else if (strcmp(mode, "edge") == 0)
        p->pad_mode = GD_PAD_EDGE;
    else
        return gd_err_set(err, GD_ENOTSUP, "mode %s (constant, reflect and edge are supported)",
                          mode);
    if (n_axes == 0) {
        for (int i = 0; i < x->ndim; i++)
            axes[i] = i;
        n_axes = x->ndim;
    }
    if (n != 2 * n_axes)
        return gd_err_set(err, GD_EMODEL, "pads has %d values; %d axes need %d", n, n_axes,
                          2 * n_axes);
    memset(p->pads_nd, 0, sizeof p->pads_nd);
    for (int i = 0; i < n_axes; i++) {
        int64_t a;
        rc = gd__axis_norm(axes[i], x->ndim, &a, err);
        if (rc != 0)
            return rc;
        p->pads_nd[a] = pads[i];
        p->pads_nd[x->ndim + a] = pads[n_axes + i];
    }
    struct gd_shape *y = c->out[0];
    *y = *x;
    for (int i = 0; i < x->ndim; i++) {
        int64_t b = p->pads_nd[i], e = p->pads_nd[x->ndim + i];
        if (b < 0 || e < 0)
            return gd_err_set(err, GD_ENOTSUP, "negative pads are not supported");
        if (p->pad_mode == GD_PAD_REFLECT && (b >= x->dim[i] || e >= x->dim[i]))
            return gd_err_set(err, GD_EMODEL, "reflect pads must be smaller than the axis "
                              "(axis %d has %lld)", i, (long long)x->dim[i]);
        if (p->pad_mode == GD_PAD_EDGE && x->dim[i] == 0 && (b > 0 || e > 0))
            return gd_err_set(err, GD_EMODEL, "edge padding of an empty axis");
        if (__builtin_add_overflow(x->dim[i], b, &y->dim[i]) ||
            __builtin_add_overflow(y->dim[i], e, &y->dim[i]))
            return gd_err_set(err, GD_ESHAPE, "pads of axis %d make it too large", i);
    }
    p->mixes_batch = x->ndim > 0 && (p->pads_nd[0] != 0 || p->pads_nd[x->ndim] != 0);
    return 0;
}

static int
infer_dropout(struct gd__infer_call *c, struct gd_err *err)
{
    static const char *const known[] = {"ratio", "seed", "is_test", NULL};
    int rc = gd__attr_check_known(c->node, known, err);
    if (rc != 0)
        return rc;
    if (c->n_in > 2 && c->in[2] != NULL) {
        double training = 1;
        if (c->in_const[2] == NULL)
            return gd_err_set(err, GD_ENOTSUP, "training_mode must be a constant false");
        rc = gd__const_scalar(c->in_const[2], "training_mode", &training, err);
        if (rc != 0)
            return rc;
        if (training != 0)
            return gd_err_set(err, GD_ENOTSUP, "training mode is not supported");
    }
    if (c->n_out > 2)
        return gd_err_set(err, GD_EMODEL, "Dropout has at most two outputs");
    *c->out[0] = *c->in[0];
    c->out_dtype[0] = c->in_dtype[0];
    if (c->n_out == 2) {
        *c->out[1] = *c->in[0];
        c->out_dtype[1] = GD_BOOL;
    }
    return 0;
}

static int
infer_slice(struct gd__infer_call *c, struct gd_err *err)
{
    static const char *const known[] = {"starts", "ends", "axes", NULL};
    const struct gd_shape *x = c->in[0];
    struct gd_params *p = c->params;
    int64_t starts[GD_MAX_DIMS], ends[GD_MAX_DIMS], axes[GD_MAX_DIMS], steps[GD_MAX_DIMS];
    int ns = 0, ne = 0, na = 0, nst = 0;
    int rc = gd__attr_check_known(c->node, known, err);
    if (rc != 0)
        return rc;
    if (c->n_in > 1) {
        /* opset 10 on: starts, ends, axes, steps as inputs, which must be weights */
        static const char *const names[] = {"starts", "ends", "axes", "steps"};
        int64_t *dst[] = {starts, ends, axes, steps};
        int *cnt[] = {&ns, &ne, &na, &nst};
        if (c->node->n_attrs > 0)
            return gd_err_set(err, GD_EMODEL, "starts and ends given both as attributes and as "
                              "inputs");
        if (c->n_in < 3 || c->in[1] == NULL || c->in[2] == NULL)
            return gd_err_set(err, GD_EMODEL, "starts and ends are required");
        for (int i = 1; i < c->n_in && i <= 4; i++) {
            if (c->in[i] == NULL)
                continue;
            if (c->in_const[i] == NULL)
                return gd_err_set(err, GD_ENOTSUP, "%s must be a constant (a weight)",
                                  names[i - 1]);
            rc = gd__const_ints(c->in_const[i], names[i - 1], GD_MAX_DIMS, dst[i - 1], cnt[i - 1],
                                err);
            if (rc != 0)
                return rc;
        }
    } else {
        rc = gd__attr_ints(c->node, "starts", -1, GD_MAX_DIMS, starts, &ns, err);
        if (rc == 0)
            rc = gd__attr_ints(c->node, "ends", -1, GD_MAX_DIMS, ends, &ne, err);
        if (rc == 0)
            rc = gd__attr_ints(c->node, "axes", -1, GD_MAX_DIMS, axes, &na, err);
        if (rc != 0)
            return rc;
        if (gd_node_attr(c->node, "starts") == NULL || gd_node_attr(c->node, "ends") == NULL)
            return gd_err_set(err, GD_EMODEL, "starts and ends are required");
    }
    int given_axes = (c->n_in > 3 && c->in[3] != NULL) || gd_node_attr(c->node, "axes") != NULL;
    int given_steps = c->n_in > 4 && c->in[4] != NULL;
    if (ne != ns || (given_axes && na != ns) || (given_steps && nst != ns))
        return gd_err_set(err, GD_EMODEL, "starts, ends, axes and steps have %d, %d, %d and %d "
                          "values", ns, ne, given_axes ? na : ns, given_steps ? nst : ns);
    struct gd_shape *y = c->out[0];
    *y = *x;
    int sliced[GD_MAX_DIMS] = {0};
    for (int i = 0; i < x->ndim; i++) {
        p->slice_start[i] = 0;
        p->slice_step[i] = 1;
    }
    for (int i = 0; i < ns; i++) {
        int64_t a = given_axes ? axes[i] : i, step = given_steps ? steps[i] : 1;
        rc = gd__axis_norm(a, x->ndim, &a, err);
        if (rc != 0)
            return rc;
        if (sliced[a])
            return gd_err_set(err, GD_EMODEL, "axis %lld is sliced twice", (long long)a);
        if (step == 0 || step == INT64_MIN)
            return gd_err_set(err, GD_EMODEL, "steps[%d] is %lld", i, (long long)step);
        sliced[a] = 1;
        y->dim[a] = gd__slice_axis(x->dim[a], starts[i], ends[i], step, &p->slice_start[a]);
        p->slice_step[a] = step;
    }
    p->mixes_batch = x->ndim > 0 && sliced[0] &&
                     !(p->slice_start[0] == 0 && p->slice_step[0] == 1 && y->dim[0] == x->dim[0]);
    return 0;
}

static int
infer_split(struct gd__infer_call *c, struct gd_err *err)
{
    static const char *const known[] = {"axis", "split", "num_outputs", NULL};
    const struct gd_shape *x = c->in[0];
    struct gd_params *p = c->params;
    int64_t axis, num_outputs, split[GD__MAX_OP_OUTPUTS];
    int n = 0, given = 0;
    int rc = gd__attr_check_known(c->node, known, err);
    if (rc == 0)
        rc = gd__attr_int(c->node, "axis", 0, &axis, err);
    if (rc == 0)
        rc = gd__attr_int(c->node, "num_outputs", 0, &num_outputs, err);
    if (rc == 0)
        rc = ints_attr_or_input(c, "split", 1, GD__MAX_OP_OUTPUTS, split, &n, &given, err);
    if (rc == 0)
        rc = gd__axis_norm(axis, x->ndim, &p->axis, err);
    if (rc != 0)
        return rc;
    int64_t len = x->dim[p->axis], total = 0;
    int has_num = gd_node_attr(c->node, "num_outputs") != NULL;
    if (given && has_num)
        return gd_err_set(err, GD_EMODEL, "split and num_outputs are both given");
    if (has_num && num_outputs != c->n_out)
        return gd_err_set(err, GD_EMODEL, "num_outputs is %lld for %d outputs",
                          (long long)num_outputs, c->n_out);
    if (given) {
        if (n != c->n_out)
            return gd_err_set(err, GD_EMODEL, "split has %d sizes for %d outputs", n, c->n_out);
        for (int i = 0; i < n; i++) {
            if (split[i] < 0)
                return gd_err_set(err, GD_EMODEL, "split[%d] is %lld", i, (long long)split[i]);
            if (__builtin_add_overflow(total, split[i], &total))
                return gd_err_set(err, GD_ESHAPE, "split sizes add up past the axis (%lld)",
                                  (long long)len);
        }
        if (total != len)
            return gd_err_set(err, GD_ESHAPE, "split sizes add up to %lld for an axis of %lld",
                              (long long)total, (long long)len);
    } else if (has_num) {
        /* opset 18: chunks of ceil(len / n), the last one smaller */
        int64_t chunk = len / c->n_out + (len % c->n_out != 0); /* len + n - 1 may overflow */
        for (int i = 0; i < c->n_out; i++) {
            split[i] = i + 1 < c->n_out ? chunk : len - chunk * (c->n_out - 1);
            if (split[i] < 0)
                return gd_err_set(err, GD_ESHAPE, "an axis of %lld does not split into %d "
                                  "chunks of %lld", (long long)len, c->n_out, (long long)chunk);
        }
    } else {
        if (len % c->n_out != 0)
            return gd_err_set(err, GD_ESHAPE, "an axis of %lld does not split into %d equal "
                              "parts", (long long)len, c->n_out);
        for (int i = 0; i < c->n_out; i++)
            split[i] = len / c->n_out;
    }
    for (int i = 0; i < c->n_out; i++) {
        *c->out[i] = *x;
        c->out[i]->dim[p->axis] = split[i];
        c->out_dtype[i] = c->in_dtype[0];
    }
    p->mixes_batch = p->axis == 0 && c->n_out > 1;
    return 0;
}

static int
infer_expand(struct gd__infer_call *c, struct gd_err *err)
{
    static const char *const none[] = {NULL};
    const struct gd_shape *x = c->in[0];
    struct gd_shape want = {.ndim = 0};
    int n = 0;
    int rc = gd__attr_check_known(c->node, none, err);
    if (rc != 0)
        return rc;
    if (c->in_const[1] == NULL)
        return gd_err_set(err, GD_ENOTSUP, "shape must be a constant (a weight)");
    rc = gd__const_ints(c->in_const[1], "shape", GD_MAX_DIMS, want.dim, &n, err);
    if (rc != 0)
        return rc;
    want.ndim = n;
    for (int i = 0; i < n; i++)
        if (want.dim[i] < 0)
            return gd_err_set(err, GD_EMODEL, "shape[%d] is %lld", i, (long long)want.dim[i]);
    /* Expand broadcasts both ways: a 1 in shape keeps the input's dimension. */
    rc = gd__broadcast_shape(x, &want, c->out[0], err);
    if (rc != 0)
        return rc;
    const struct gd_shape *y = c->out[0];
    c->params->mixes_batch = x->ndim < 1 || y->ndim != x->ndim || y->dim[0] != x->dim[0];
    return 0;
}

static int
infer_tile(struct gd__infer_call *c, struct gd_err *err)
{
    static const char *const none[] = {NULL};
    const struct gd_shape *x = c->in[0];
    int64_t reps[GD_MAX_DIMS];
    int n = 0;
    int rc = gd__attr_check_known(c->node, none, err);
    if (rc != 0)
        return rc;
    if (c->in_const[1] == NULL)
        return gd_err_set(err, GD_ENOTSUP, "repeats must be a constant (a weight)");
    rc = gd__const_ints(c->in_const[1], "repeats", GD_MAX_DIMS, reps, &n, err);
    if (rc != 0)
        return rc;
    if (n != x->ndim)
        return gd_err_set(err, GD_EMODEL, "repeats has %d values for %d dimensions", n, x->ndim);
    struct gd_shape *y = c->out[0];
    *y = *x;
    for (int i = 0; i < n; i++) {
        if (reps[i] < 0)
            return gd_err_set(err, GD_EMODEL, "repeats[%d] is %lld", i, (long long)reps[i]);
        if (x->dim[i] > 0 && reps[i] > INT64_MAX / x->dim[i])
            return gd_err_set(err, GD_ERANGE, "repeats[%d] = %lld is too large", i,
                              (long long)reps[i]);
        y->dim[i] = x->dim[i] * reps[i];
    }
    c->params->mixes_batch = x->ndim > 0 && reps[0] != 1;
    return 0;
}

/* DepthToSpace and SpaceToDepth: (N, C, H, W) with a block of b x b. */
static int
infer_depth_space(struct gd__infer_call *c, struct gd_err *err)
{
    static const char *const known_d2s[] = {"blocksize", "mode", NULL};
    static const char *const known_s2d[] = {"blocksize", NULL};
    int d2s = c->node->op == GD_OP_DEPTH_TO_SPACE;
    const struct gd_shape *x = c->in[0];
    struct gd_params *p = c->params;
    const char *mode = "DCR";
    int rc = gd__attr_check_known(c->node, d2s ? known_d2s : known_s2d, err);
    if (rc == 0 && gd_node_attr(c->node, "blocksize") == NULL)
        rc = gd_err_set(err, GD_EMODEL, "blocksize is required");
    if (rc == 0)
        rc = gd__attr_int(c->node, "blocksize", 0, &p->blocksize, err);
    if (rc == 0 && d2s)
        rc = gd__attr_string(c->node, "mode", "DCR", &mode, err);
    if (rc != 0)
        return rc;
    if (strcmp(mode, "DCR") != 0 && strcmp(mode, "CRD") != 0)
        return gd_err_set(err, GD_EMODEL, "mode %s (DCR or CRD)", mode);
    p->crd = strcmp(mode, "CRD") == 0;
    int64_t b = p->blocksize;
    if (b < 1 || b > (1 << 20))
        return gd_err_set(err, GD_EMODEL, "blocksize is %lld", (long long)b);
    if (x->ndim != 4)
        return gd_err_set(err, GD_ESHAPE, "%s takes a 4-D (N, C, H, W) input, not %d-D",
                          gd_op_name(c->node->op), x->ndim);
    struct gd_shape *y = c->out[0];
    *y = *x;
    if (d2s) {
        if (x->dim[1] % (b * b) != 0)
            return gd_err_set(err, GD_ESHAPE, "%lld channels are not a multiple of %lld",
                              (long long)x->dim[1], (long long)(b * b));
        if (x->dim[2] > INT64_MAX / b || x->dim[3] > INT64_MAX / b)
            return gd_err_set(err, GD_ERANGE, "the result is too large");
        y->dim[1] = x->dim[1] / (b * b);
        y->dim[2] = x->dim[2] * b;
        y->dim[3] = x->dim[3] * b;
    } else {
        if (x->dim[2] % b != 0 || x->dim[3] % b != 0)
            return gd_err_set(err, GD_ESHAPE, "height %lld and width %lld must be multiples of "
                              "%lld", (long long)x->dim[2], (long long)x->dim[3], (long long)b);
        if (x->dim[1] > INT64_MAX / (b * b))
            return gd_err_set(err, GD_ERANGE, "the result is too large");
        y->dim[1] = x->dim[1] * b * b;
        y->dim[2] = x->dim[2] / b;
        y->dim[3] = x->dim[3] / b;
    }
    return 0;
}

static int
infer_op(struct gd__infer_call *c, struct gd_err *err)
{
    static const char *const none[] = {NULL};
    int rc;
    if (c->node->op != GD_OP_DROPOUT && c->node->op != GD_OP_SPLIT && c->n_out != 1)
        return gd_err_set(err, GD_EMODEL, "%s has one output", gd_op_name(c->node->op));
    c->out_dtype[0] = c->in_dtype[0];
    switch (c->node->op) {
    case GD_OP_CONCAT:
        return infer_concat(c, err);
    case GD_OP_FLATTEN:
        return infer_flatten(c, err);
    case GD_OP_RESHAPE:
        return infer_reshape(c, err);
    case GD_OP_TRANSPOSE:
        return infer_transpose(c, err);
    case GD_OP_SQUEEZE:
        return infer_squeeze(c, err);
    case GD_OP_UNSQUEEZE:
        return infer_unsqueeze(c, err);
    case GD_OP_PAD:
        return infer_pad(c, err);
    case GD_OP_DROPOUT:
        return infer_dropout(c, err);
    case GD_OP_SLICE:
        return infer_slice(c, err);
    case GD_OP_SPLIT:
        return infer_split(c, err);
    case GD_OP_EXPAND:
        return infer_expand(c, err);
    case GD_OP_TILE:
        return infer_tile(c, err);
    case GD_OP_DEPTH_TO_SPACE:
    case GD_OP_SPACE_TO_DEPTH:
        return infer_depth_space(c, err);
    default: /* Identity */
        rc = gd__attr_check_known(c->node, none, err);
        if (rc == 0)
            *c->out[0] = *c->in[0];
        return rc;
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
gd__infer_shape(struct gd__infer_call *c, struct gd_err *err)
{
    int rc = infer_op(c, err);
    if (rc == 0 && inputs_all_constant(c))
        c->params->mixes_batch = 0;
    return rc;
}
