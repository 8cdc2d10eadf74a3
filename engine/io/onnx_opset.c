/*
 * onnx_opset.c: the per-op version rules, in one table. The engine's ops take the newest
 * ONNX form of each op (docs/ARCHITECTURE.md "Ops follow ONNX"); a node of an older opset is
 * rewritten here into what means the same in that form, so no op needs to know the opset:
 * attributes that became inputs become constant inputs, and ops whose meaning changed
 * become ops that mean the same. docs/ONNX.md lists the rules.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../core/internal.h"
#include "onnx_internal.h"

void
gd__onnx_node_fini(struct gd__onnx_node *n)
{
    for (int i = 0; i < n->n_inputs; i++)
        free(n->inputs[i]);
    for (int i = 0; i < n->n_outputs; i++)
        free(n->outputs[i]);
    for (int i = 0; i < n->n_attrs; i++)
        gd_attr_fini(&n->attrs[i]);
    n->n_inputs = n->n_outputs = n->n_attrs = 0;
}

/* ---- helpers ---- */

/* Removes attribute name from n into *out (zeroed when absent); 1 when it was there. */
static int
attr_take(struct gd__onnx_node *n, const char *name, struct gd_attr *out)
{
    memset(out, 0, sizeof *out);
    for (int i = 0; i < n->n_attrs; i++) {
        if (strcmp(n->attrs[i].name, name) != 0)
            continue;
        *out = n->attrs[i];
        memmove(&n->attrs[i], &n->attrs[i + 1], (size_t)(n->n_attrs - i - 1) * sizeof *out);
        n->n_attrs--;
        return 1;
    }
    return 0;
}

static void
attr_drop(struct gd__onnx_node *n, const char *name)
{
    struct gd_attr a;
    if (attr_take(n, name, &a))
        gd_attr_fini(&a);
}

static int
attr_set_string(struct gd__onnx_node *n, const char *name, const char *value,
                struct gd_err *err)
{
    attr_drop(n, name);
    if (n->n_attrs == GD__ONNX_MAX_ATTRS)
        return gd_err_set(err, GD_EMODEL, "node %s: too many attributes", n->name);
    struct gd_attr *a = &n->attrs[n->n_attrs];
    memset(a, 0, sizeof *a);
    a->type = GD_ATTR_STRING;
    a->name = gd__strdup(name);
    a->s = gd__strdup(value);
    if (a->name == NULL || a->s == NULL) {
        gd_attr_fini(a);
        return gd_err_set(err, GD_ENOMEM, "out of memory");
    }
    n->n_attrs++;
    return 0;
}

static int
attr_set_int(struct gd__onnx_node *n, const char *name, int64_t value, struct gd_err *err)
{
    attr_drop(n, name);
    if (n->n_attrs == GD__ONNX_MAX_ATTRS)
        return gd_err_set(err, GD_EMODEL, "node %s: too many attributes", n->name);
    struct gd_attr *a = &n->attrs[n->n_attrs];
    memset(a, 0, sizeof *a);
    a->type = GD_ATTR_INT;
    a->i = value;
    if ((a->name = gd__strdup(name)) == NULL)
        return gd_err_set(err, GD_ENOMEM, "out of memory");
    n->n_attrs++;
    return 0;
}

/* Sets input i to the value called name (NULL: absent), growing the list with absent ones. */
static int
input_set(struct gd__onnx_node *n, int i, const char *name, struct gd_err *err)
{
    if (i >= GD__ONNX_MAX_IO)
        return gd_err_set(err, GD_EMODEL, "node %s: too many inputs", n->name);
    while (n->n_inputs <= i)
        n->inputs[n->n_inputs++] = NULL;
    free(n->inputs[i]);
    n->inputs[i] = NULL;
    if (name != NULL && (n->inputs[i] = gd__strdup(name)) == NULL)
        return gd_err_set(err, GD_ENOMEM, "out of memory");
    return 0;
}

/* Adds constant t as "<node>/<what>" and makes it input i of n. */
static int
const_input(struct gd__onnx_build *b, struct gd__onnx_node *n, int i, const char *what,
            struct gd_tensor *t, struct gd_err *err)
{
    char name[320];
    snprintf(name, sizeof name, "%s/%s", n->name, what);
    int rc = gd_graph_add_constant(b->g, name, t, err);
    if (rc != 0)
        return gd_err_prefix(err, "node %s: ", n->name);
    return input_set(n, i, name, err);
}

/* An int64 attribute list becomes input i (a 1-D int64 constant); absent: nothing. */
static int
ints_to_input(struct gd__onnx_build *b, struct gd__onnx_node *n, const char *attr, int i,
              struct gd_err *err)
{
    struct gd_attr a;
    if (!attr_take(n, attr, &a))
        return 0;
    int rc = 0;
    if (a.type != GD_ATTR_INTS && a.type != GD_ATTR_INT) {
        rc = gd_err_set(err, GD_EMODEL, "node %s: attribute %s must be a list of integers",
                        n->name, attr);
    } else {
        int64_t count = a.type == GD_ATTR_INT ? 1 : a.n;
        struct gd_tensor *t = gd_tensor_new(GD_I64, 1, &count, err);
        if (t == NULL) {
            rc = err ? err->code : GD_ENOMEM;
        } else {
            for (int64_t k = 0; k < count; k++)
                ((int64_t *)t->data)[k] = a.type == GD_ATTR_INT ? a.i : a.ints[k];
            rc = const_input(b, n, i, attr, t, err);
        }
    }
    gd_attr_fini(&a);
    return rc;
}

/* A float attribute becomes input i (a float32 scalar); absent: dflt_absent leaves it out. */
static int
float_to_input(struct gd__onnx_build *b, struct gd__onnx_node *n, const char *attr, int i,
               struct gd_err *err)
{
    struct gd_attr a;
    if (!attr_take(n, attr, &a))
        return 0;
    int rc = 0;
    if (a.type != GD_ATTR_FLOAT && a.type != GD_ATTR_INT) {
        rc = gd_err_set(err, GD_EMODEL, "node %s: attribute %s must be a number", n->name, attr);
    } else {
        struct gd_tensor *t = gd_tensor_new(GD_F32, 0, NULL, err);
        if (t == NULL) {
            rc = err ? err->code : GD_ENOMEM;
        } else {
            *(float *)t->data = (float)(a.type == GD_ATTR_INT ? (double)a.i : a.f);
            rc = const_input(b, n, i, attr, t, err);
        }
    }
    gd_attr_fini(&a);
    return rc;
}

/* A list of floats becomes input i (a 1-D float32 constant). */
static int
floats_to_input(struct gd__onnx_build *b, struct gd__onnx_node *n, const char *attr, int i,
                struct gd_err *err)
{
    struct gd_attr a;
    if (!attr_take(n, attr, &a))
        return 0;
    int rc = 0;
    if (a.type != GD_ATTR_FLOATS && a.type != GD_ATTR_INTS) {
        rc = gd_err_set(err, GD_EMODEL, "node %s: attribute %s must be a list of numbers",
                        n->name, attr);
    } else {
        int64_t count = a.n;
        struct gd_tensor *t = gd_tensor_new(GD_F32, 1, &count, err);
        if (t == NULL) {
            rc = err ? err->code : GD_ENOMEM;
        } else {
            for (int64_t k = 0; k < count; k++)
                ((float *)t->data)[k] =
                    (float)(a.type == GD_ATTR_FLOATS ? a.floats[k] : (double)a.ints[k]);
            rc = const_input(b, n, i, attr, t, err);
        }
    }
    gd_attr_fini(&a);
    return rc;
}

/* ---- the rules ---- */

/* Squeeze, Unsqueeze (before 13), the reductions (before 13 or 18): axes becomes input 1. */
static int
rule_axes_input(struct gd__onnx_build *b, struct gd__onnx_node *n, struct gd_err *err)
{
    int rc = ints_to_input(b, n, "axes", 1, err);
    return rc != 0 ? rc : b->add(b, n, err);
}

/* Slice before 10: starts, ends and axes were attributes. */
static int
rule_slice(struct gd__onnx_build *b, struct gd__onnx_node *n, struct gd_err *err)
{
    int rc = ints_to_input(b, n, "starts", 1, err);
    if (rc == 0)
        rc = ints_to_input(b, n, "ends", 2, err);
    if (rc == 0)
        rc = ints_to_input(b, n, "axes", 3, err);
    return rc != 0 ? rc : b->add(b, n, err);
}

/* Split before 13: split was an attribute. */
static int
rule_split(struct gd__onnx_build *b, struct gd__onnx_node *n, struct gd_err *err)
{
    int rc = ints_to_input(b, n, "split", 1, err);
    return rc != 0 ? rc : b->add(b, n, err);
}

/* TopK before 10: k was an attribute. */
static int
rule_topk(struct gd__onnx_build *b, struct gd__onnx_node *n, struct gd_err *err)
{
    int rc = ints_to_input(b, n, "k", 1, err);
    return rc != 0 ? rc : b->add(b, n, err);
}

/* Pad before 11: pads ("paddings" in Pad-1) and value were attributes. */
static int
rule_pad(struct gd__onnx_build *b, struct gd__onnx_node *n, struct gd_err *err)
{
    struct gd_attr a;
    if (attr_take(n, "paddings", &a)) { /* Pad-1's name for pads */
        free(a.name);
        a.name = gd__strdup("pads");
        if (a.name == NULL) {
            gd_attr_fini(&a);
            return gd_err_set(err, GD_ENOMEM, "out of memory");
        }
        n->attrs[n->n_attrs++] = a;
    }
    int rc = ints_to_input(b, n, "pads", 1, err);
    if (rc == 0)
        rc = float_to_input(b, n, "value", 2, err);
    return rc != 0 ? rc : b->add(b, n, err);
}

/* Clip before 11: min and max were attributes. */
static int
rule_clip(struct gd__onnx_build *b, struct gd__onnx_node *n, struct gd_err *err)
{
    int rc = float_to_input(b, n, "min", 1, err);
    if (rc == 0)
        rc = float_to_input(b, n, "max", 2, err);
    return rc != 0 ? rc : b->add(b, n, err);
}

/*
 * BatchNormalization: spatial (7, 8) 1 is the only meaning the later ops kept; is_test and
 * consumed_inputs (before 7) say nothing for inference.
 */
static int
rule_batch_norm(struct gd__onnx_build *b, struct gd__onnx_node *n, struct gd_err *err)
{
    struct gd_attr a;
    if (attr_take(n, "spatial", &a)) {
        int per_activation = a.type == GD_ATTR_INT && a.i == 0;
        gd_attr_fini(&a);
        if (per_activation)
            return gd_err_set(err, GD_ENOTSUP, "node %s: BatchNormalization with spatial=0 "
                              "(statistics per activation) is not supported", n->name);
    }
    attr_drop(n, "is_test");
    attr_drop(n, "consumed_inputs");
    return b->add(b, n, err);
}

/*
 * Upsample (7: scales attribute, 9: scales input) and Resize-10 (X, scales) are Resize of
 * opset 11 and later with the old coordinate rule: an output pixel x samples the input at
 * x / scale ("asymmetric"), nearest taking the floor of it, as ONNX's Upsample tests and
 * onnxruntime's pre-11 Resize compute.
 */
static int
rule_upsample(struct gd__onnx_build *b, struct gd__onnx_node *n, struct gd_err *err)
{
    int rc = 0;
    char *scales = NULL;
    struct gd_attr mode;
    if (n->n_inputs > 1 && n->inputs[1] != NULL) {
        scales = n->inputs[1];
        n->inputs[1] = NULL;
    }
    if (scales == NULL) {
        rc = floats_to_input(b, n, "scales", 1, err);
        if (rc == 0 && (n->n_inputs < 2 || n->inputs[1] == NULL))
            rc = gd_err_set(err, GD_EMODEL, "node %s: %s needs scales", n->name, n->op);
        if (rc == 0) {
            scales = n->inputs[1];
            n->inputs[1] = NULL;
        }
    }
    if (rc == 0)
        rc = input_set(n, 1, NULL, err); /* roi: absent */
    if (rc == 0)
        rc = input_set(n, 2, scales, err);
    free(scales);
    const char *how = "nearest";
    if (rc == 0 && attr_take(n, "mode", &mode)) {
        /* Upsample-7 also spelled linear "bilinear". */
        how = mode.type == GD_ATTR_STRING && (strcmp(mode.s, "linear") == 0 ||
                                              strcmp(mode.s, "bilinear") == 0)
                  ? "linear"
                  : mode.type == GD_ATTR_STRING && strcmp(mode.s, "nearest") == 0 ? "nearest"
                                                                                : NULL;
        if (how == NULL)
            rc = gd_err_set(err, GD_ENOTSUP, "node %s: %s mode %s is not supported", n->name,
                            n->op, mode.type == GD_ATTR_STRING ? mode.s : "(not a string)");
        gd_attr_fini(&mode);
    }
    if (rc == 0)
        rc = attr_set_string(n, "mode", how, err);
    if (rc == 0)
        rc = attr_set_string(n, "coordinate_transformation_mode", "asymmetric", err);
    if (rc == 0 && strcmp(how, "nearest") == 0)
        rc = attr_set_string(n, "nearest_mode", "floor", err);
    if (rc != 0)
        return rc;
    snprintf(n->op, sizeof n->op, "Resize");
    return b->add(b, n, err);
}

/* Adds a node of the rewrite: op on the given inputs into one output. */
static int
add_simple(struct gd__onnx_build *b, const char *name, const char *op, int n_in,
           const char *const *inputs, const char *output, struct gd__onnx_node *attrs_from,
           struct gd_err *err)
{
    struct gd__onnx_node m = {.n_inputs = 0};
    snprintf(m.name, sizeof m.name, "%s", name);
    snprintf(m.op, sizeof m.op, "%s", op);
    int rc = 0;
    for (int i = 0; i < n_in && rc == 0; i++)
        rc = input_set(&m, i, inputs[i], err);
    if (rc == 0 && (m.outputs[0] = gd__strdup(output)) == NULL)
        rc = gd_err_set(err, GD_ENOMEM, "out of memory");
    if (rc == 0)
        m.n_outputs = 1;
    if (rc == 0 && attrs_from != NULL) {
        memcpy(m.attrs, attrs_from->attrs, (size_t)attrs_from->n_attrs * sizeof m.attrs[0]);
        m.n_attrs = attrs_from->n_attrs;
        attrs_from->n_attrs = 0;
    }
    if (rc == 0)
        rc = b->add(b, &m, err);
    gd__onnx_node_fini(&m);
    return rc;
}

/*
 * Softmax, LogSoftmax and Hardmax before 13 coerce the input to 2-D at `axis` (default 1)
 * and normalize each row; from 13 on they work along one axis (default -1). When axis is the
 * last one the two agree; otherwise the node becomes Flatten(axis) -> op(axis=-1) ->
 * Reshape(Shape(x)): the first two are named "<node>/2d" and "<node>/op2d", the last keeps
 * the node's name and output, so the layer of that name holds the op's result.
 */
static int
rule_coerce_2d(struct gd__onnx_build *b, struct gd__onnx_node *n, struct gd_err *err)
{
    int64_t axis = 1;
    struct gd_attr a;
    if (attr_take(n, "axis", &a)) {
        if (a.type != GD_ATTR_INT) {
            gd_attr_fini(&a);
            return gd_err_set(err, GD_EMODEL, "node %s: attribute axis must be an integer",
                              n->name);
        }
        axis = a.i;
        gd_attr_fini(&a);
    }
    if (n->n_inputs < 1 || n->inputs[0] == NULL || n->n_outputs != 1)
        return gd_err_set(err, GD_EMODEL, "node %s: %s takes one input and gives one output",
                          n->name, n->op);
    int rank = b->rank(b, n->inputs[0]);
    if (rank > 0 && (axis == rank - 1 || axis == -1)) {
        int rc = attr_set_int(n, "axis", -1, err);
        return rc != 0 ? rc : b->add(b, n, err);
    }
    char flat[320], flat_out[320], op2d[320], op2d_out[320], shape[320];
    snprintf(flat, sizeof flat, "%s/2d", n->name);
    snprintf(flat_out, sizeof flat_out, "%s/2d", n->outputs[0]);
    snprintf(op2d, sizeof op2d, "%s/op2d", n->name);
    snprintf(op2d_out, sizeof op2d_out, "%s/op2d", n->outputs[0]);
    snprintf(shape, sizeof shape, "%s/shape", n->name);
    struct gd__onnx_node attrs = {.n_attrs = 0};
    snprintf(attrs.name, sizeof attrs.name, "%s", n->name);
    int rc = attr_set_int(&attrs, "axis", axis, err);
    const char *x = n->inputs[0];
    if (rc == 0)
        rc = add_simple(b, flat, "Flatten", 1, &x, flat_out, &attrs, err);
    if (rc == 0)
        rc = attr_set_int(n, "axis", -1, err);
    const char *f = flat_out;
    if (rc == 0)
        rc = add_simple(b, op2d, n->op, 1, &f, op2d_out, n, err);
    if (rc == 0)
        rc = add_simple(b, shape, "Shape", 1, &x, shape, NULL, err);
    const char *back[2] = {op2d_out, shape};
    if (rc == 0)
        rc = add_simple(b, n->name, "Reshape", 2, back, n->outputs[0], NULL, err);
    gd__onnx_node_fini(&attrs);
    return rc;
}

static int
rule_none(struct gd__onnx_build *b, struct gd__onnx_node *n, struct gd_err *err)
{
    return b->add(b, n, err);
}

/* Replaces input 1 of n (of rank `rank`) by Unsqueeze(input 1) with `count` trailing 1s. */
static int
unsqueeze_trailing(struct gd__onnx_build *b, struct gd__onnx_node *n, int rank, int64_t count,
                   struct gd_err *err)
{
    if (count == 0)
        return 0;
    struct gd_tensor *axes = gd_tensor_new(GD_I64, 1, &count, err);
    if (axes == NULL)
        return err ? err->code : GD_ENOMEM;
    for (int64_t k = 0; k < count; k++)
        ((int64_t *)axes->data)[k] = rank + k;
    char axes_name[320], name[320], out[320];
    snprintf(axes_name, sizeof axes_name, "%s/broadcast_axes", n->name);
    snprintf(name, sizeof name, "%s/broadcast", n->name);
    snprintf(out, sizeof out, "%s/broadcast", n->inputs[1]);
    int rc = gd_graph_add_constant(b->g, axes_name, axes, err);
    const char *ins[2] = {n->inputs[1], axes_name};
    if (rc == 0)
        rc = add_simple(b, name, "Unsqueeze", 2, ins, out, NULL, err);
    if (rc == 0)
        rc = input_set(n, 1, out, err);
    return rc;
}

/*
 * The element-wise binary ops before 7 (Add, Sub, Mul, Div, Pow, the comparisons and the
 * logical ops) broadcast only with broadcast=1, B's dimensions matching A's from `axis` on
 * (the trailing ones when axis is absent). Numpy's rule of 7 and later aligns trailing
 * dimensions, so a B aligned elsewhere gets as many trailing 1s as it lacks, by Unsqueeze.
 */
static int
rule_legacy_broadcast(struct gd__onnx_build *b, struct gd__onnx_node *n, struct gd_err *err)
{
    struct gd_attr bc, ax;
    int have_bc = attr_take(n, "broadcast", &bc), have_ax = attr_take(n, "axis", &ax);
    int broadcast = have_bc && bc.type == GD_ATTR_INT && bc.i != 0;
    int64_t axis = have_ax && ax.type == GD_ATTR_INT ? ax.i : INT64_MIN;
    gd_attr_fini(&bc);
    gd_attr_fini(&ax);
    if (!broadcast || axis == INT64_MIN || n->n_inputs < 2 || n->inputs[1] == NULL)
        return b->add(b, n, err);
    int rank_a = b->rank(b, n->inputs[0]), rank_b = b->rank(b, n->inputs[1]);
    if (rank_a < 0 || rank_b < 0)
        return gd_err_set(err, GD_ENOTSUP, "node %s: the ranks for its opset-%d broadcast "
                          "(axis %lld) cannot be known at load", n->name, b->opset,
                          (long long)axis);
    if (axis < 0)
        axis += rank_a;
    /* axis bounded before the subtraction, which overflows for an axis near 2^63 */
    int64_t trailing = axis >= 0 && axis <= rank_a ? rank_a - axis - rank_b : -1;
    if (axis < 0 || trailing < 0)
        return gd_err_set(err, GD_EMODEL, "node %s: B (rank %d) does not fit A (rank %d) "
                          "from axis %lld", n->name, rank_b, rank_a, (long long)axis);
    int rc = unsqueeze_trailing(b, n, rank_b, trailing, err);
    return rc != 0 ? rc : b->add(b, n, err);
}

/* PRelu before 7: a 1-D slope of C values is per channel (dimension 1), not per last one. */
static int
rule_prelu(struct gd__onnx_build *b, struct gd__onnx_node *n, struct gd_err *err)
{
    if (n->n_inputs < 2 || n->inputs[1] == NULL)
        return b->add(b, n, err);
    int rank_x = b->rank(b, n->inputs[0]), rank_s = b->rank(b, n->inputs[1]);
    if (rank_x < 0 || rank_s < 0)
        return gd_err_set(err, GD_ENOTSUP, "node %s: the ranks for its opset-%d slope cannot "
                          "be known at load", n->name, b->opset);
    int rc = rank_s == 1 && rank_x > 2 ? unsqueeze_trailing(b, n, 1, rank_x - 2, err) : 0;
    return rc != 0 ? rc : b->add(b, n, err);
}

/* Gemm before 7: broadcast=1 let C broadcast, which 7 and later always allow. */
static int
rule_gemm(struct gd__onnx_build *b, struct gd__onnx_node *n, struct gd_err *err)
{
    attr_drop(n, "broadcast");
    return b->add(b, n, err);
}

/* Reshape before 5: the shape was an attribute. */
static int
rule_reshape(struct gd__onnx_build *b, struct gd__onnx_node *n, struct gd_err *err)
{
    int rc = ints_to_input(b, n, "shape", 1, err);
    return rc != 0 ? rc : b->add(b, n, err);
}

/* Concat before 4: axis was optional, 1 by default. */
static int
rule_concat(struct gd__onnx_build *b, struct gd__onnx_node *n, struct gd_err *err)
{
    struct gd_attr a;
    if (attr_take(n, "axis", &a)) {
        n->attrs[n->n_attrs++] = a;
        return b->add(b, n, err);
    }
    int rc = attr_set_int(n, "axis", 1, err);
    return rc != 0 ? rc : b->add(b, n, err);
}

/* Cast before 6 named the type as a string ("FLOAT"). */
static int
rule_cast(struct gd__onnx_build *b, struct gd__onnx_node *n, struct gd_err *err)
{
    struct gd_attr a;
    if (!attr_take(n, "to", &a))
        return b->add(b, n, err);
    if (a.type != GD_ATTR_STRING) {
        n->attrs[n->n_attrs++] = a;
        return b->add(b, n, err);
    }
    int64_t code = -1;
    for (int64_t k = 1; k < 24 && code < 0; k++)
        if (strcmp(gd__onnx_dtype_name(k), a.s) == 0)
            code = k;
    if (code < 0) {
        int rc = gd_err_set(err, GD_EMODEL, "node %s: Cast to unknown type %s", n->name, a.s);
        gd_attr_fini(&a);
        return rc;
    }
    gd_attr_fini(&a);
    int rc = attr_set_int(n, "to", code, err);
    return rc != 0 ? rc : b->add(b, n, err);
}

/* Upsample-1 (experimental) scaled height and width by attributes. */
static int
rule_upsample_1(struct gd__onnx_build *b, struct gd__onnx_node *n, struct gd_err *err)
{
    struct gd_attr h, w;
    int has_h = attr_take(n, "height_scale", &h), has_w = attr_take(n, "width_scale", &w);
    if (!has_h && !has_w)
        return rule_upsample(b, n, err);
    int64_t four = 4;
    struct gd_tensor *t = gd_tensor_new(GD_F32, 1, &four, err);
    int rc = t ? 0 : (err ? err->code : GD_ENOMEM);
    if (rc == 0) {
        float *f = t->data;
        f[0] = f[1] = 1;
        f[2] = has_h ? (float)(h.type == GD_ATTR_FLOAT ? h.f : (double)h.i) : 1;
        f[3] = has_w ? (float)(w.type == GD_ATTR_FLOAT ? w.f : (double)w.i) : 1;
        rc = const_input(b, n, 1, "scales", t, err);
    }
    gd_attr_fini(&h);
    gd_attr_fini(&w);
    return rc != 0 ? rc : rule_upsample(b, n, err);
}

/* Tile before 6 took tiles and axis inputs. */
static int
rule_refuse_old(struct gd__onnx_build *b, struct gd__onnx_node *n, struct gd_err *err)
{
    return gd_err_set(err, GD_ENOTSUP, "node %s: %s of opset %d (its first version) is not "
                      "supported", n->name, n->op, b->opset);
}

/* Each rule applies to models whose ai.onnx opset is below `before`. */
static const struct {
    const char *op;
    int before;
    int (*fn)(struct gd__onnx_build *b, struct gd__onnx_node *n, struct gd_err *err);
} rules[] = {
    {"Add", 7, rule_legacy_broadcast},
    {"Sub", 7, rule_legacy_broadcast},
    {"Mul", 7, rule_legacy_broadcast},
    {"Div", 7, rule_legacy_broadcast},
    {"Pow", 7, rule_legacy_broadcast},
    {"Equal", 7, rule_legacy_broadcast},
    {"Greater", 7, rule_legacy_broadcast},
    {"Less", 7, rule_legacy_broadcast},
    {"And", 7, rule_legacy_broadcast},
    {"Or", 7, rule_legacy_broadcast},
    {"Xor", 7, rule_legacy_broadcast},
    {"Gemm", 7, rule_gemm},
    {"PRelu", 7, rule_prelu},
    {"Reshape", 5, rule_reshape},
    {"Concat", 4, rule_concat},
    {"Cast", 6, rule_cast},
    {"Tile", 6, rule_refuse_old},
    {"Softmax", 13, rule_coerce_2d},
    {"LogSoftmax", 13, rule_coerce_2d},
    {"Hardmax", 13, rule_coerce_2d},
    {"BatchNormalization", 1000, rule_batch_norm},
    {"Upsample", 7, rule_upsample_1},
    {"Upsample", 1000, rule_upsample},
    {"Resize", 11, rule_upsample},
    {"Slice", 10, rule_slice},
    {"Split", 13, rule_split},
    {"TopK", 10, rule_topk},
    {"Pad", 11, rule_pad},
    {"Clip", 11, rule_clip},
    {"Squeeze", 13, rule_axes_input},
    {"Unsqueeze", 13, rule_axes_input},
    {"ReduceSum", 13, rule_axes_input},
    {"ReduceMean", 18, rule_axes_input},
    {"ReduceMax", 18, rule_axes_input},
    {"ReduceMin", 18, rule_axes_input},
    {"ReduceProd", 18, rule_axes_input},
    {"ReduceL1", 18, rule_axes_input},
    {"ReduceL2", 18, rule_axes_input},
    {"ReduceLogSum", 18, rule_axes_input},
    {"ReduceLogSumExp", 18, rule_axes_input},
    {"ReduceSumSquare", 18, rule_axes_input},
};

int
gd__onnx_rewrite(struct gd__onnx_build *b, struct gd__onnx_node *n, struct gd_err *err)
{
    /* Versions before 6 of many ops had consumed_inputs, an in-place hint of no meaning
     * for the result. */
    if (b->opset < 6)
        attr_drop(n, "consumed_inputs");
    for (size_t i = 0; i < sizeof rules / sizeof rules[0]; i++)
        if (strcmp(rules[i].op, n->op) == 0 && b->opset < rules[i].before)
            return rules[i].fn(b, n, err);
    return rule_none(b, n, err);
}
