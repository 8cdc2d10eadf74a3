/* graph.c: building a graph, checking it, and inferring shapes node by node. */
#include <stdlib.h>
#include <string.h>

#include "gpudiff/graph.h"
#include "internal.h"

struct gd_graph *
gd_graph_new(const char *name, struct gd_err *err)
{
    struct gd_graph *g = calloc(1, sizeof *g);
    if (g == NULL || (g->name = gd__strdup(name ? name : "")) == NULL) {
        free(g);
        gd_err_set(err, GD_ENOMEM, "out of memory for a graph");
        return NULL;
    }
    return g;
}

void
gd_attr_fini(struct gd_attr *a)
{
    if (a == NULL)
        return;
    free(a->name);
    free(a->s);
    free(a->ints);
    free(a->floats);
    gd_tensor_free(a->t);
    memset(a, 0, sizeof *a);
}

int
gd__attr_copy(const struct gd_attr *src, struct gd_attr *dst)
{
    memset(dst, 0, sizeof *dst);
    dst->name = gd__strdup(src->name);
    dst->type = src->type;
    dst->i = src->i;
    dst->f = src->f;
    dst->n = src->n;
    if (src->s != NULL)
        dst->s = gd__strdup(src->s);
    if (src->ints != NULL && src->n > 0) {
        dst->ints = malloc((size_t)src->n * sizeof *dst->ints);
        if (dst->ints != NULL)
            memcpy(dst->ints, src->ints, (size_t)src->n * sizeof *dst->ints);
    }
    if (src->floats != NULL && src->n > 0) {
        dst->floats = malloc((size_t)src->n * sizeof *dst->floats);
        if (dst->floats != NULL)
            memcpy(dst->floats, src->floats, (size_t)src->n * sizeof *dst->floats);
    }
    if (src->t != NULL)
        dst->t = gd_tensor_dup(src->t, NULL);
    int bad = dst->name == NULL || (src->s && !dst->s) || (src->ints && src->n > 0 && !dst->ints) ||
              (src->floats && src->n > 0 && !dst->floats) || (src->t && !dst->t);
    if (bad)
        gd_attr_fini(dst);
    return bad ? GD_ENOMEM : 0;
}

void
gd_graph_free(struct gd_graph *g)
{
    if (g == NULL)
        return;
    for (int i = 0; i < g->n_values; i++) {
        free(g->values[i].name);
        gd_tensor_free(g->values[i].constant);
    }
    for (int i = 0; i < g->n_nodes; i++) {
        struct gd_node *n = &g->nodes[i];
        free(n->name);
        free(n->inputs);
        free(n->outputs);
        for (int k = 0; k < n->n_attrs; k++)
            gd_attr_fini(&n->attrs[k]);
        free(n->attrs);
    }
    for (int i = 0; i < g->n_folds; i++)
        gd__fold_fini(&g->folds[i]);
    free(g->folds);
    free(g->values);
    free(g->nodes);
    free(g->inputs);
    free(g->input_decls);
    free(g->outputs);
    free(g->name);
    free(g);
}

int
gd_graph_find_value(const struct gd_graph *g, const char *name)
{
    for (int i = 0; i < g->n_values; i++)
        if (strcmp(g->values[i].name, name) == 0)
            return i;
    return -1;
}

int
gd_graph_find_node(const struct gd_graph *g, const char *name)
{
    for (int i = 0; i < g->n_nodes; i++)
        if (strcmp(g->nodes[i].name, name) == 0)
            return i;
    return -1;
}

const struct gd_attr *
gd_node_attr(const struct gd_node *n, const char *name)
{
    for (int i = 0; i < n->n_attrs; i++)
        if (strcmp(n->attrs[i].name, name) == 0)
            return &n->attrs[i];
    return NULL;
}

/* Appends a value; returns its index or a negative code (declared in internal.h). */
int
gd__value_add(struct gd_graph *g, const char *name, struct gd_err *err)
{
    if (name == NULL || name[0] == '\0')
        return gd_err_set(err, GD_EMODEL, "a value has an empty name");
    if (gd_graph_find_value(g, name) >= 0)
        return gd_err_set(err, GD_EMODEL, "value %s is defined twice", name);
    if (g->n_values == g->cap_values) {
        int cap = g->cap_values ? g->cap_values * 2 : 16;
        struct gd_value *v = realloc(g->values, (size_t)cap * sizeof *v);
        if (v == NULL)
            return gd_err_set(err, GD_ENOMEM, "out of memory for values");
        g->values = v;
        g->cap_values = cap;
    }
    struct gd_value *v = &g->values[g->n_values];
    memset(v, 0, sizeof *v);
    if ((v->name = gd__strdup(name)) == NULL)
        return gd_err_set(err, GD_ENOMEM, "out of memory for a value name");
    v->dtype = GD_F32;
    v->producer = -1;
    v->last_use = -1;
    v->fold = -1;
    return g->n_values++;
}

/* Grows an int array by one; returns 0 or GD_ENOMEM. */
static int
int_push(int **arr, int n, int x, struct gd_err *err)
{
    int *a = realloc(*arr, (size_t)(n + 1) * sizeof *a);
    if (a == NULL)
        return gd_err_set(err, GD_ENOMEM, "out of memory");
    a[n] = x;
    *arr = a;
    return 0;
}

int
gd_graph_add_input(struct gd_graph *g, const char *name, const struct gd_input_decl *decl,
                   struct gd_err *err)
{
    if (decl->shape.ndim < 0 || decl->shape.ndim > GD_MAX_DIMS)
        return gd_err_set(err, GD_EMODEL, "input %s has %d dimensions", name, decl->shape.ndim);
    for (int i = 0; i < decl->shape.ndim; i++)
        if (decl->shape.dim[i] < -1)
            return gd_err_set(err, GD_EMODEL, "input %s: dimension %d is %lld", name, i,
                              (long long)decl->shape.dim[i]);
    struct gd_input_decl *d = realloc(g->input_decls, (size_t)(g->n_inputs + 1) * sizeof *d);
    if (d == NULL)
        return gd_err_set(err, GD_ENOMEM, "out of memory");
    g->input_decls = d;
    int v = gd__value_add(g, name, err);
    if (v < 0)
        return v;
    int rc = int_push(&g->inputs, g->n_inputs, v, err);
    if (rc != 0)
        return rc;
    g->input_decls[g->n_inputs++] = *decl;
    g->values[v].is_input = 1;
    g->values[v].dtype = decl->dtype;
    return 0;
}

int
gd_graph_add_constant(struct gd_graph *g, const char *name, struct gd_tensor *t,
                      struct gd_err *err)
{
    int v = gd__value_add(g, name, err);
    if (v < 0) {
        gd_tensor_free(t);
        return v;
    }
    g->values[v].constant = t;
    g->values[v].dtype = t->dtype;
    g->values[v].shape.ndim = t->ndim;
    memcpy(g->values[v].shape.dim, t->shape, sizeof t->shape);
    return 0;
}

static void
attrs_free(int n, struct gd_attr *attrs)
{
    for (int i = 0; i < n; i++)
        gd_attr_fini(&attrs[i]);
}

int
gd_graph_add_node(struct gd_graph *g, const char *name, const char *op_name, int n_inputs,
                  const char *const *inputs, int n_outputs, const char *const *outputs,
                  int n_attrs, struct gd_attr *attrs, struct gd_err *err)
{
    int rc = 0;
    struct gd_node node = {0};
    enum gd_op op;
    if (name == NULL || name[0] == '\0') {
        rc = gd_err_set(err, GD_EMODEL, "a %s node has no name", op_name);
        goto done;
    }
    if (gd_graph_find_node(g, name) >= 0) {
        rc = gd_err_set(err, GD_EMODEL, "node %s: the name is used twice", name);
        goto done;
    }
    if (gd_op_from_name(op_name, &op) != 0) {
        rc = gd_err_set(err, GD_ENOTSUP,
                        "node %s: unknown op %s (`gpudiff-agent ops` lists the ops of this build)",
                        name, op_name);
        goto done;
    }
    const struct gd_op_info *info = gd_op_info(op);
    if (n_inputs < info->min_inputs || n_inputs > info->max_inputs) {
        rc = gd_err_set(err, GD_EMODEL, "node %s: %s takes %d to %d inputs, not %d", name,
                        op_name, info->min_inputs, info->max_inputs, n_inputs);
        goto done;
    }
    if (n_outputs < 1 || n_outputs > GD__MAX_OP_OUTPUTS) {
        rc = gd_err_set(err, GD_EMODEL, "node %s: %d outputs", name, n_outputs);
        goto done;
    }
    node.op = op;
    node.n_inputs = n_inputs;
    node.n_outputs = n_outputs;
    node.inputs = malloc((size_t)n_inputs * sizeof *node.inputs);
    node.outputs = malloc((size_t)n_outputs * sizeof *node.outputs);
    node.name = gd__strdup(name);
    if (node.inputs == NULL || node.outputs == NULL || node.name == NULL) {
        rc = gd_err_set(err, GD_ENOMEM, "out of memory for node %s", name);
        goto done;
    }
    for (int i = 0; i < n_inputs; i++) {
        if (inputs[i] == NULL || inputs[i][0] == '\0') {
            if (i < info->min_inputs) {
                rc = gd_err_set(err, GD_EMODEL, "node %s: input %d of %s is required", name, i,
                                op_name);
                goto done;
            }
            node.inputs[i] = -1;
            continue;
        }
        node.inputs[i] = gd_graph_find_value(g, inputs[i]);
        if (node.inputs[i] < 0) {
            rc = gd_err_set(err, GD_EMODEL,
                            "node %s: input %s is not a graph input, a weight or an output of "
                            "an earlier node",
                            name, inputs[i]);
            goto done;
        }
    }
    if (g->n_nodes == g->cap_nodes) {
        int cap = g->cap_nodes ? g->cap_nodes * 2 : 16;
        struct gd_node *nn = realloc(g->nodes, (size_t)cap * sizeof *nn);
        if (nn == NULL) {
            rc = gd_err_set(err, GD_ENOMEM, "out of memory for nodes");
            goto done;
        }
        g->nodes = nn;
        g->cap_nodes = cap;
    }
    for (int i = 0; i < n_outputs; i++) {
        int v = gd__value_add(g, outputs[i], err);
        if (v < 0) {
            rc = gd_err_prefix(err, "node %s: ", name);
            /* Values added for earlier outputs stay unnamed by any node: drop them. */
            while (i-- > 0)
                free(g->values[--g->n_values].name);
            goto done;
        }
        g->values[v].producer = g->n_nodes;
        node.outputs[i] = v;
    }
    node.n_attrs = n_attrs;
    node.attrs = NULL;
    if (n_attrs > 0) {
        node.attrs = malloc((size_t)n_attrs * sizeof *node.attrs);
        if (node.attrs == NULL) {
            rc = gd_err_set(err, GD_ENOMEM, "out of memory for attributes");
            for (int i = 0; i < n_outputs; i++)
                free(g->values[--g->n_values].name);
            goto done;
        }
        memcpy(node.attrs, attrs, (size_t)n_attrs * sizeof *attrs);
        n_attrs = 0; /* moved */
    }
    g->nodes[g->n_nodes++] = node;
    return 0;
done:
    attrs_free(n_attrs, attrs);
    free(node.inputs);
    free(node.outputs);
    free(node.name);
    return rc;
}

int
gd_graph_add_output(struct gd_graph *g, const char *name, struct gd_err *err)
{
    int v = gd_graph_find_value(g, name);
    if (v < 0)
        return gd_err_set(err, GD_EMODEL, "output %s is not a value of the graph", name);
    if (g->values[v].is_output)
        return 0;
    int rc = int_push(&g->outputs, g->n_outputs, v, err);
    if (rc != 0)
        return rc;
    g->n_outputs++;
    g->values[v].is_output = 1;
    return 0;
}

/* What an inference knows of the graph inputs' values. */
struct known_inputs {
    const struct gd_tensor *const *values; /* per graph input; NULL: none known */
    int read;                   /* set when a node or fold read one */
};

/*
 * The tensor a node or fold may read as a parameter: a constant, a fold's result, or the
 * value of an integer or bool graph input when the inference was given it.
 */
static const struct gd_tensor *
known_value(const struct gd_graph *g, struct known_inputs *ki, struct gd_tensor **folded,
            int v)
{
    if (g->values[v].constant != NULL)
        return g->values[v].constant;
    if (folded[v] != NULL)
        return folded[v];
    if (!g->values[v].is_input || ki->values == NULL)
        return NULL;
    for (int i = 0; i < g->n_inputs; i++)
        if (g->inputs[i] == v && ki->values[i] != NULL) {
            ki->read = 1;
            return ki->values[i];
        }
    return NULL;
}

/*
 * Computes the folds that come before node `before` (from *next on) for the shapes so far,
 * into folded[].
 */
static int
folds_until(const struct gd_graph *g, struct known_inputs *ki, int before, int *next,
            struct gd_shape *value_shapes, enum gd_dtype *value_dtypes,
            struct gd_tensor **folded, struct gd_err *err)
{
    for (; *next < g->n_folds && g->folds[*next].before <= before; (*next)++) {
        const struct gd_fold *f = &g->folds[*next];
        if (f->at_load)
            continue;
        const struct gd_shape *in_shape[GD__MAX_OP_INPUTS] = {0};
        const struct gd_tensor *in_val[GD__MAX_OP_INPUTS] = {0};
        struct gd_tensor *out[GD__MAX_OP_OUTPUTS] = {0};
        for (int i = 0; i < f->n_inputs; i++) {
            int v = f->inputs[i];
            if (v < 0)
                continue;
            in_shape[i] = &value_shapes[v];
            /* Shape and Size read only the shape of what they are given. */
            int shape_only = i == 0 && (strcmp(f->op, "Shape") == 0 || strcmp(f->op, "Size") == 0);
            in_val[i] = shape_only ? NULL : known_value(g, ki, folded, v);
        }
        int rc = gd__fold_eval(f, in_shape, in_val, out, err);
        if (rc != 0)
            return gd_err_prefix(err, "node %s (%s): ", f->name, f->op);
        for (int k = 0; k < f->n_outputs; k++) {
            int v = f->outputs[k];
            gd_tensor_free(folded[v]);
            folded[v] = out[k];
            value_dtypes[v] = out[k]->dtype;
            value_shapes[v].ndim = out[k]->ndim;
            memcpy(value_shapes[v].dim, out[k]->shape, sizeof value_shapes[v].dim);
        }
    }
    return 0;
}

/*
 * Infers shapes and dtypes of every value and the params of every node from the input
 * shapes, computing the folds in between (their results go to folded[]). value_dtypes gets
 * each value's dtype.
 */
static int
infer_all(const struct gd_graph *g, const struct gd_shape *input_shapes,
          struct known_inputs *ki, struct gd_shape *value_shapes,
          enum gd_dtype *value_dtypes, struct gd_params *node_params, struct gd_tensor **folded,
          struct gd_err *err)
{
    int next_fold = 0;
    for (int v = 0; v < g->n_values; v++) {
        value_dtypes[v] = g->values[v].dtype;
        if (g->values[v].constant != NULL)
            value_shapes[v] = g->values[v].shape;
    }
    for (int i = 0; i < g->n_inputs; i++) {
        const struct gd_input_decl *d = &g->input_decls[i];
        const struct gd_shape *s = &input_shapes[i];
        const char *name = g->values[g->inputs[i]].name;
        char want[128], got[128];
        int ok = s->ndim == d->shape.ndim;
        for (int k = 0; ok && k < s->ndim; k++)
            ok = s->dim[k] >= 0 && (d->shape.dim[k] < 0 || d->shape.dim[k] == s->dim[k]);
        if (!ok)
            return gd_err_set(err, GD_ESHAPE, "input %s has shape %s, the model declares %s",
                              name, gd_shape_format(s->ndim, s->dim, got, sizeof got),
                              gd_shape_format(d->shape.ndim, d->shape.dim, want, sizeof want));
        /* The bound every node's outputs get (so products of a value's dims fit int64)
         * holds for the inputs too: a declared shape need not be one a tensor can have. */
        int rc = gd_shape_check(s->ndim, s->dim, gd_dtype_size(d->dtype), err);
        if (rc != 0)
            return gd_err_prefix(err, "input %s: ", name);
        value_shapes[g->inputs[i]] = *s;
    }
    for (int ni = 0; ni < g->n_nodes; ni++) {
        const struct gd_node *n = &g->nodes[ni];
        struct gd__infer_call c = {.graph = g, .node = n, .n_in = n->n_inputs,
                                   .n_out = n->n_outputs, .params = &node_params[ni]};
        int frc = folds_until(g, ki, ni, &next_fold, value_shapes, value_dtypes, folded, err);
        if (frc != 0)
            return frc;
        for (int i = 0; i < n->n_inputs; i++) {
            int v = n->inputs[i];
            c.in[i] = v >= 0 ? &value_shapes[v] : NULL;
            c.in_dtype[i] = v >= 0 ? value_dtypes[v] : GD_F32;
            c.in_const[i] = v < 0 ? NULL : known_value(g, ki, folded, v);
            c.in_weight[i] = v >= 0 && (g->values[v].constant != NULL || folded[v] != NULL);
        }
        /* An op that does not set its outputs' dtypes makes floats of its first float
         * input's dtype (a float16 Conv gives float16), float32 when it reads none. */
        enum gd_dtype float_out = GD_F32;
        for (int i = n->n_inputs - 1; i >= 0; i--)
            if (n->inputs[i] >= 0 && gd_dtype_is_float(c.in_dtype[i]))
                float_out = c.in_dtype[i];
        for (int i = 0; i < n->n_outputs; i++) {
            c.out[i] = &value_shapes[n->outputs[i]];
            c.out[i]->ndim = 0;
            c.out_dtype[i] = float_out;
        }
        memset(c.params, 0, sizeof *c.params);
        int rc = gd__infer_table[n->op](&c, err);
        if (rc == 0) {
            for (int i = 0; i < n->n_outputs && rc == 0; i++) {
                value_dtypes[n->outputs[i]] = c.out_dtype[i];
                rc = gd_shape_check(c.out[i]->ndim, c.out[i]->dim,
                                    gd_dtype_size(c.out_dtype[i]), err);
            }
        }
        if (rc != 0)
            return gd_err_prefix(err, "node %s (%s): ", n->name, gd_op_name(n->op));
    }
    return folds_until(g, ki, g->n_nodes, &next_fold, value_shapes, value_dtypes, folded, err);
}

static void
folded_clear(const struct gd_graph *g, struct gd_tensor **folded)
{
    for (int v = 0; v < g->n_values; v++) {
        gd_tensor_free(folded[v]);
        folded[v] = NULL;
    }
}

int
gd_graph_infer_folds(const struct gd_graph *g, const struct gd_shape *input_shapes,
                     const struct gd_tensor *const *input_values, struct gd_shape *value_shapes,
                     struct gd_params *node_params, struct gd_tensor **folded, int *values_read,
                     struct gd_err *err)
{
    struct known_inputs ki = {.values = input_values};
    size_t n = (size_t)(g->n_values ? g->n_values : 1);
    enum gd_dtype *dtypes = malloc(n * sizeof *dtypes);
    struct gd_tensor **mine = folded ? NULL : calloc(n, sizeof *mine);
    if (dtypes == NULL || (folded == NULL && mine == NULL)) {
        free(dtypes);
        free(mine);
        return gd_err_set(err, GD_ENOMEM, "out of memory");
    }
    struct gd_tensor **f = folded ? folded : mine;
    int rc = infer_all(g, input_shapes, &ki, value_shapes, dtypes, node_params, f, err);
    if (rc != 0 || mine != NULL)
        folded_clear(g, f);
    if (values_read != NULL)
        *values_read = ki.read;
    free(dtypes);
    free(mine);
    return rc;
}

int
gd_graph_infer(const struct gd_graph *g, const struct gd_shape *input_shapes,
               struct gd_shape *value_shapes, struct gd_params *node_params, struct gd_err *err)
{
    return gd_graph_infer_folds(g, input_shapes, NULL, value_shapes, node_params, NULL, NULL,
                                err);
}

int
gd_graph_finalize(struct gd_graph *g, struct gd_err *err)
{
    return gd_graph_finalize_with(g, NULL, err);
}

int
gd_graph_finalize_with(struct gd_graph *g, const struct gd_tensor *const *inputs,
                       struct gd_err *err)
{
    struct known_inputs ki = {.values = inputs};
    int rc = 0;
    struct gd_shape *shapes_in = NULL, *shapes = NULL;
    struct gd_params *params = NULL;
    enum gd_dtype *dtypes = NULL;
    struct gd_tensor **folded = NULL;
    if (g->n_outputs == 0) {
        rc = gd_err_set(err, GD_EMODEL, "the model has no outputs");
        goto done;
    }
    shapes_in = calloc((size_t)(g->n_inputs ? g->n_inputs : 1), sizeof *shapes_in);
    shapes = calloc((size_t)g->n_values, sizeof *shapes);
    dtypes = calloc((size_t)g->n_values, sizeof *dtypes);
    params = calloc((size_t)(g->n_nodes ? g->n_nodes : 1), sizeof *params);
    folded = calloc((size_t)(g->n_values ? g->n_values : 1), sizeof *folded);
    if (shapes_in == NULL || shapes == NULL || dtypes == NULL || params == NULL ||
        folded == NULL) {
        rc = gd_err_set(err, GD_ENOMEM, "out of memory");
        goto done;
    }
    for (int i = 0; i < g->n_inputs; i++) {
        shapes_in[i] = g->input_decls[i].shape;
        if (inputs != NULL && inputs[i] != NULL) {
            shapes_in[i].ndim = inputs[i]->ndim;
            memcpy(shapes_in[i].dim, inputs[i]->shape, sizeof shapes_in[i].dim);
        }
        for (int k = 0; k < shapes_in[i].ndim; k++)
            if (shapes_in[i].dim[k] < 0)
                shapes_in[i].dim[k] = 1;
    }
    rc = infer_all(g, shapes_in, &ki, shapes, dtypes, params, folded, err);
    if (rc != 0)
        goto done;
    for (int v = 0; v < g->n_values; v++) {
        g->values[v].shape = shapes[v];
        g->values[v].dtype = dtypes[v];
        g->values[v].last_use = -1;
    }
    for (int ni = 0; ni < g->n_nodes; ni++) {
        g->nodes[ni].params = params[ni];
        for (int i = 0; i < g->nodes[ni].n_inputs; i++)
            if (g->nodes[ni].inputs[i] >= 0)
                g->values[g->nodes[ni].inputs[i]].last_use = ni;
    }
done:
    if (folded != NULL)
        folded_clear(g, folded);
    free(folded);
    free(shapes_in);
    free(shapes);
    free(dtypes);
    free(params);
    return rc;
}

int64_t
gd_node_reduction_len(const struct gd_graph *g, int ni)
{
    const struct gd_node *n = &g->nodes[ni];
    const struct gd_params *p = &n->params;
    const struct gd_shape *x = &g->values[n->inputs[0]].shape;
    const struct gd_shape *w = n->n_inputs > 1 && n->inputs[1] >= 0
                                   ? &g->values[n->inputs[1]].shape
                                   : NULL;
    int64_t len = 1;
    switch (gd_op_info(n->op)->reduction) {
    case GD_RED_NONE:
        return 1;
    case GD_RED_CONV: /* weight (Cout, Cin/g, k...): 1-D has one kernel axis */
        len = w->dim[1];
        for (int i = 2; i < w->ndim; i++)
            len *= w->dim[i];
        return len;
    case GD_RED_CONVT: { /* weight (Cin, Cout/g, k...) */
        /*
         * Tap t of an axis reaches output o from input (o + pad - t d) / s, so the taps of
         * one output are those with t d = o + pad (mod s): one in every s / gcd(s, d).
         * Params are right-aligned (depth, height, width): kernel axis i is param axis
         * GD_MAX_SPATIAL - ns + i.
         */
        len = w->dim[0] / p->group;
        int ns = w->ndim - 2;
        for (int i = 0; i < ns; i++) {
            int axis = GD_MAX_SPATIAL - ns + i;
            int64_t s = p->strides[axis], d = p->dilations[axis], gcd = s, r = d;
            while (r != 0) { /* Euclid */
                int64_t t = gcd % r;
                gcd = r;
                r = t;
            }
            int64_t step = s / gcd;
            len *= (w->dim[2 + i] + step - 1) / step;
        }
        return len;
    }
    case GD_RED_GEMM:
        if (n->op == GD_OP_GEMM)
            return p->trans_a ? x->dim[0] : x->dim[1];
        return x->dim[x->ndim - 1];
    case GD_RED_WINDOW:
        return p->kernel[0] * p->kernel[1] * p->kernel[2];
    case GD_RED_SPATIAL:
        for (int i = 2; i < x->ndim; i++)
            len *= x->dim[i];
        return len;
    case GD_RED_AXES:
        for (int i = 0; i < p->n_axes; i++)
            len *= x->dim[p->axes[i]];
        return len;
    case GD_RED_AXIS:
        return x->dim[p->axis];
    case GD_RED_SCATTER: /* inputs (data, indices, updates) */
        if (p->scatter_reduction != GD_SCATTER_ADD && p->scatter_reduction != GD_SCATTER_MUL)
            return 1;
        if (n->op == GD_OP_SCATTER_ND) /* indices (..., k): one update per index tuple */
            return 1 + (w->ndim > 0 && w->dim[w->ndim - 1] > 0
                            ? gd__shape_numel(w) / w->dim[w->ndim - 1]
                            : 0);
        return 1 + w->dim[p->axis];
    case GD_RED_LOSS: /* inputs (scores (N, C, d...), target (N, d...)) */
        len = p->loss_reduction == GD_LOSS_NONE ? 1 : gd__shape_numel(w);
        if (n->op == GD_OP_SCE_LOSS)
            len += x->dim[1];
        return len;
    case GD_RED_INPUTS: /* Sum, Mean: one term per input */
        return n->n_inputs;
    case GD_RED_INFERRED:
        return p->reduction_terms > 0 ? p->reduction_terms : 1;
    }
    return 1;
}
