/*
 * fold.c: the nodes of a model that are not layers. ONNX exports compute Reshape targets,
 * Expand shapes and Slice bounds with Shape, Gather, Unsqueeze, Concat, Cast,
 * ConstantOfShape, Range, Equal, Where and int64 arithmetic; this evaluator computes them
 * exactly (integers in int64 with overflow checks, data of any dtype only moved or
 * converted by gd_tensor_cast), once when every input is a constant, else at each
 * inference for the input shapes of that inference (graph.c). It computes nothing on
 * floats: float arithmetic stays in the graph, where a backend does it. This file looks the
 * ops up and runs them, and adds folds to a graph; the ops are fold_move.c's and fold_int.c's,
 * their helpers fold_tensor.c's (fold_internal.h).
 */
#include <stdlib.h>
#include <string.h>

#include "fold_internal.h"

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

/* ---- the op lookup: the ops of fold_move.c and fold_int.c, in that order ---- */

static int
n_ops(void)
{
    return gd__fold_move_ops_count + gd__fold_int_ops_count;
}

static const struct gd__fold_op *
op_at(int i)
{
    return i < gd__fold_move_ops_count ? &gd__fold_move_ops[i]
                                       : &gd__fold_int_ops[i - gd__fold_move_ops_count];
}

static int
fold_find(const char *op)
{
    for (int i = 0; i < n_ops(); i++)
        if (strcmp(op_at(i)->op, op) == 0)
            return (int)i;
    return -1;
}

const char *
gd_fold_op_name(int i)
{
    return i >= 0 && i < n_ops() ? op_at(i)->op : NULL;
}

int
gd__fold_has(const char *op)
{
    return fold_find(op) >= 0;
}

int
gd__fold_eval(const struct gd_fold *f, const struct gd_shape *const *in_shape,
              const struct gd_tensor *const *in_val, struct gd_tensor **out, struct gd_err *err)
{
    int k = fold_find(f->op);
    if (k < 0)
        return gd_err_set(err, GD_ENOTSUP, "no fold for %s", f->op);
    struct gd__fold_call c = {.f = f,
                              .n_in = f->n_inputs,
                              .in_shape = in_shape,
                              .in = in_val,
                              .n_out = f->n_outputs,
                              .out = out};
    c.view.name = f->name;
    c.view.n_attrs = f->n_attrs;
    c.view.attrs = f->attrs;
    for (int i = 0; i < f->n_inputs; i++) {
        /* a variadic op's inputs (Concat, Min, Max) are none of them optional */
        int required = i < op_at(k)->min_in || op_at(k)->max_in == GD__MAX_OP_INPUTS;
        int needs_value = op_at(k)->kind != GD__FOLD_SHAPE;
        if (required && (in_shape[i] == NULL || (needs_value && in_val[i] == NULL)))
            return gd_err_set(err, GD_EMODEL, "input %d is missing", i);
    }
    for (int i = 0; i < f->n_outputs; i++)
        out[i] = NULL;
    int rc = op_at(k)->fn(&c, err);
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
    static const char *const to_bool[] = {
        "Equal", "Less", "Greater", "LessOrEqual", "GreaterOrEqual",
        "And",   "Or",   "Xor",     "Not",         NULL};
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
        return rc != 0 ? rc : gd__fold_onnx_dtype(to, out, err);
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
                  const char *const *inputs, int n_outputs, const char *const *outputs, int n_attrs,
                  struct gd_attr *attrs, struct gd_err *err)
{
    int k = fold_find(op);
    if (k < 0)
        return gd_err_set(err, GD_ENOTSUP, "node %s: %s is not a shape computation", name, op);
    if (n_inputs < op_at(k)->min_in || n_inputs > op_at(k)->max_in || n_outputs != 1)
        return gd_err_set(err, GD_ENOTSUP, "node %s: %s with %d inputs and %d outputs", name, op,
                          n_inputs, n_outputs);
    struct gd_node view = {.name = (char *)name, .n_attrs = n_attrs, .attrs = attrs};
    int in[GD__MAX_OP_INPUTS];
    enum gd_dtype in_dtype[GD__MAX_OP_INPUTS];
    int all_const = 1, reads_input = 0, reads_float = 0;
    for (int i = 0; i < n_inputs; i++) {
        in[i] = inputs[i] == NULL || inputs[i][0] == '\0' ? -1 : gd_graph_find_value(g, inputs[i]);
        if (in[i] < 0 && inputs[i] != NULL && inputs[i][0] != '\0')
            return gd_err_set(err, GD_EMODEL, "node %s: input %s is not defined before it", name,
                              inputs[i]);
        if (in[i] < 0) {
            if (i < op_at(k)->min_in)
                return gd_err_set(err, GD_EMODEL, "node %s: input %d of %s is required", name, i,
                                  op);
            in_dtype[i] = GD_F32;
            continue;
        }
        const struct gd_value *v = &g->values[in[i]];
        int shape_only = op_at(k)->kind == GD__FOLD_SHAPE && i == 0;
        int int_input = v->is_input && !gd_dtype_is_float(v->dtype);
        int known = v->constant != NULL || v->fold >= 0 || int_input;
        reads_input |= int_input && !shape_only;
        reads_float |= known && !shape_only && gd_dtype_is_float(v->dtype);
        if (!known && !shape_only)
            return gd_err_set(err, GD_ENOTSUP, "node %s: input %s is computed at run time", name,
                              inputs[i]);
        if (op_at(k)->kind == GD__FOLD_INT && known && gd_dtype_is_float(v->dtype))
            return gd_err_set(err, GD_ENOTSUP, "node %s: %s on %s is left to the backends", name,
                              op, gd_dtype_name(v->dtype));
        all_const &= v->constant != NULL;
        in_dtype[i] = v->dtype;
    }
    if (reads_input && reads_float)
        return gd_err_set(err, GD_ENOTSUP,
                          "node %s: %s would move float data by a graph "
                          "input's values: left to the backends",
                          name, op);
    struct gd_fold f = {
        .n_inputs = n_inputs, .n_outputs = n_outputs, .before = g->n_nodes, .at_load = all_const};
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
