/*
 * onnx.c: an ONNX ModelProto to struct gd_graph: opset check, initializers, inputs, the
 * nodes in topological order (each a layer, a fold or a Constant), outputs. The per-op
 * version rules are onnx_opset.c's, tensor decoding onnx_tensor.c's. docs/ONNX.md says
 * what is taken and what is refused.
 */
#include <libgen.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpudiff/hash.h"
#include "../core/internal.h"
#include "onnx_internal.h"

#define OPSET_MIN 1
#define OPSET_MAX 21
#define MAX_MISSING 64
#define POISONED (-2)

/* ---- a string map (keys borrowed from the model) ---- */

struct strmap {
    const char **keys;
    int *vals;
    size_t cap, n;
};

static uint64_t
str_hash(const char *s)
{
    uint64_t h = 1469598103934665603ull; /* FNV-1a */
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

static int
map_put(struct strmap *m, const char *key, int val, struct gd_err *err)
{
    if (2 * (m->n + 1) > m->cap) {
        size_t cap = m->cap ? m->cap * 2 : 64;
        const char **keys = calloc(cap, sizeof *keys);
        int *vals = calloc(cap, sizeof *vals);
        if (keys == NULL || vals == NULL) {
            free(keys);
            free(vals);
            return gd_err_set(err, GD_ENOMEM, "out of memory");
        }
        for (size_t i = 0; i < m->cap; i++) {
            if (m->keys[i] == NULL)
                continue;
            size_t j = str_hash(m->keys[i]) & (cap - 1);
            while (keys[j] != NULL)
                j = (j + 1) & (cap - 1);
            keys[j] = m->keys[i];
            vals[j] = m->vals[i];
        }
        free(m->keys);
        free(m->vals);
        m->keys = keys;
        m->vals = vals;
        m->cap = cap;
    }
    size_t j = str_hash(key) & (m->cap - 1);
    while (m->keys[j] != NULL && strcmp(m->keys[j], key) != 0)
        j = (j + 1) & (m->cap - 1);
    if (m->keys[j] == NULL) {
        m->keys[j] = key;
        m->n++;
    }
    m->vals[j] = val;
    return 0;
}

/* The value of key, or -1. */
static int
map_get(const struct strmap *m, const char *key)
{
    if (m->cap == 0)
        return -1;
    size_t j = str_hash(key) & (m->cap - 1);
    while (m->keys[j] != NULL) {
        if (strcmp(m->keys[j], key) == 0)
            return m->vals[j];
        j = (j + 1) & (m->cap - 1);
    }
    return -1;
}

static void
map_free(struct strmap *m)
{
    free(m->keys);
    free(m->vals);
    memset(m, 0, sizeof *m);
}

/* ---- the loader ---- */

struct missing {
    char op[96];
    int count;
    char first[3][64];
};

struct loader {
    struct gd_graph *g;
    const char *dir;
    Onnx__GraphProto *gp;
    int opset;
    struct strmap values;       /* ONNX value name -> graph value index, or POISONED */
    struct strmap outputs;      /* ONNX graph output names */
    struct strmap node_names;   /* ONNX node name -> how many nodes have it */
    struct strmap onnx_values;  /* every value name of the model */
    struct strmap poisoned;     /* graph value names a refused node would have made */
    char **owned;               /* names made here, that the maps borrow */
    int n_owned, cap_owned;
    struct missing missing[MAX_MISSING];
    int n_missing;
    enum gd_onnx_refusal refusal;
    int *external;              /* value indices of initializers read from external files */
    int n_external;
};

static const char *
keep(struct loader *L, const char *s, struct gd_err *err)
{
    if (L->n_owned == L->cap_owned) {
        int cap = L->cap_owned ? L->cap_owned * 2 : 64;
        char **o = realloc(L->owned, (size_t)cap * sizeof *o);
        if (o == NULL) {
            gd_err_set(err, GD_ENOMEM, "out of memory");
            return NULL;
        }
        L->owned = o;
        L->cap_owned = cap;
    }
    char *c = gd__strdup(s);
    if (c == NULL) {
        gd_err_set(err, GD_ENOMEM, "out of memory");
        return NULL;
    }
    return L->owned[L->n_owned++] = c;
}

static const char *
str_or_empty(const char *s)
{
    return s ? s : "";
}

/* Remembers that node `name` needs `op`, which this build lacks. */
static void
missing_add(struct loader *L, const char *op, const char *name)
{
    int i = 0;
    while (i < L->n_missing && strcmp(L->missing[i].op, op) != 0)
        i++;
    if (i == L->n_missing) {
        if (i == MAX_MISSING)
            return;
        memset(&L->missing[i], 0, sizeof L->missing[i]);
        snprintf(L->missing[i].op, sizeof L->missing[i].op, "%s", op);
        L->n_missing++;
    }
    struct missing *m = &L->missing[i];
    if (m->count < 3)
        snprintf(m->first[m->count], sizeof m->first[0], "%s", name);
    m->count++;
}

static int
missing_report(struct loader *L, struct gd_onnx_report *report, struct gd_err *err)
{
    char msg[sizeof err->msg];
    size_t len = (size_t)snprintf(msg, sizeof msg, "the model needs %s this build does not "
                                  "have: ", L->n_missing > 1 ? "ops" : "an op");
    if (report != NULL)
        report->missing_ops[0] = '\0';
    for (int i = 0; i < L->n_missing; i++) {
        const struct missing *m = &L->missing[i];
        if (report != NULL) {
            size_t r = strlen(report->missing_ops);
            snprintf(report->missing_ops + r, sizeof report->missing_ops - r, "%s%s",
                     r ? "," : "", m->op);
        }
        if (len >= sizeof msg)
            continue;
        len += (size_t)snprintf(msg + len, sizeof msg - len, "%s%s (%d node%s: ",
                                i ? "; " : "", m->op, m->count, m->count > 1 ? "s" : "");
        for (int k = 0; k < m->count && k < 3 && len < sizeof msg; k++)
            len += (size_t)snprintf(msg + len, sizeof msg - len, "%s%s", k ? ", " : "",
                                    m->first[k]);
        if (len < sizeof msg)
            len += (size_t)snprintf(msg + len, sizeof msg - len, "%s)",
                                    m->count > 3 ? ", ..." : "");
    }
    if (report != NULL)
        report->refusal = GD_ONNX_REFUSED_OP;
    return gd_err_set(err, GD_ENOTSUP, "%s", msg);
}

/* 1 when the engine has op as a layer or a fold, after the version rules' renames. */
static int
op_known(const char *op)
{
    enum gd_op e;
    if (strcmp(op, "Constant") == 0 || gd__fold_has(op) || gd_op_from_name(op, &e) == 0)
        return 1;
    return strcmp(op, "Upsample") == 0 && gd_op_from_name("Resize", &e) == 0;
}

static int
poison(struct loader *L, struct gd__onnx_node *n, struct gd_err *err)
{
    for (int i = 0; i < n->n_outputs; i++) {
        const char *k = keep(L, n->outputs[i], err);
        if (k == NULL || map_put(&L->poisoned, k, 1, err) != 0)
            return err ? err->code : GD_ENOMEM;
    }
    return 0;
}

/* A node name no graph node has yet: name, else name#2, name#3, ... */
static void
unique_node_name(const struct gd_graph *g, char *name, size_t cap)
{
    if (gd_graph_find_node(g, name) < 0)
        return;
    char base[256];
    snprintf(base, sizeof base, "%s", name);
    for (int k = 2;; k++) {
        snprintf(name, cap, "%.240s#%d", base, k);
        if (gd_graph_find_node(g, name) < 0)
            return;
    }
}

/* The builder's add(): a fold when the evaluator takes the node, else a layer. */
static int
loader_add(struct gd__onnx_build *b, struct gd__onnx_node *n, struct gd_err *err)
{
    struct loader *L = b->loader;
    for (int i = 0; i < n->n_inputs; i++)
        if (n->inputs[i] != NULL && map_get(&L->poisoned, n->inputs[i]) >= 0)
            return poison(L, n, err);
    int rc = gd_graph_add_fold(b->g, n->name, n->op, n->n_inputs, (const char *const *)n->inputs,
                               n->n_outputs, (const char *const *)n->outputs, n->n_attrs,
                               n->attrs, err);
    if (rc == 0) {
        n->n_attrs = 0; /* the fold has them */
        return 0;
    }
    if (rc != GD_ENOTSUP)
        return rc;
    enum gd_op op;
    if (gd_op_from_name(n->op, &op) != 0) {
        missing_add(L, n->op, n->name);
        return poison(L, n, err);
    }
    unique_node_name(b->g, n->name, sizeof n->name);
    rc = gd_graph_add_node(b->g, n->name, n->op, n->n_inputs, (const char *const *)n->inputs,
                           n->n_outputs, (const char *const *)n->outputs, n->n_attrs, n->attrs,
                           err);
    n->n_attrs = 0; /* moved, also on failure */
    return rc;
}

/* The builder's rank(): infer the graph so far with free dimensions as 1. */
static int
loader_rank(struct gd__onnx_build *b, const char *value)
{
    const struct gd_graph *g = b->g;
    int v = gd_graph_find_value(g, value), rank = -1;
    if (v < 0)
        return -1;
    if (g->values[v].constant != NULL)
        return g->values[v].constant->ndim;
    for (int i = 0; i < g->n_inputs; i++)
        if (g->inputs[i] == v)
            return g->input_decls[i].shape.ndim;
    struct gd_shape *in = calloc((size_t)(g->n_inputs ? g->n_inputs : 1), sizeof *in);
    struct gd_shape *shapes = calloc((size_t)g->n_values, sizeof *shapes);
    struct gd_params *params = calloc((size_t)(g->n_nodes ? g->n_nodes : 1), sizeof *params);
    if (in != NULL && shapes != NULL && params != NULL) {
        for (int i = 0; i < g->n_inputs; i++) {
            in[i] = g->input_decls[i].shape;
            for (int k = 0; k < in[i].ndim; k++)
                if (in[i].dim[k] < 0)
                    in[i].dim[k] = 1;
        }
        if (gd_graph_infer(g, in, shapes, params, NULL) == 0)
            rank = shapes[v].ndim;
    }
    free(in);
    free(shapes);
    free(params);
    return rank;
}

/* ---- attributes ---- */

static int
attr_convert(struct loader *L, const Onnx__AttributeProto *ap, const char *node,
             struct gd_attr *a, struct gd_err *err)
{
    memset(a, 0, sizeof *a);
    const char *name = str_or_empty(ap->name);
    int type = ap->has_type ? (int)ap->type : 0;
    if (type == 0) { /* writers before IR 2 left the type out: it is the field that is set */
        type = ap->has_f ? 1 : ap->has_i ? 2 : ap->has_s ? 3 : ap->t ? 4 : ap->g ? 5
             : ap->n_floats ? 6 : ap->n_ints ? 7 : ap->n_strings ? 8 : ap->n_tensors ? 9
             : ap->n_graphs ? 10 : 0;
        if (type == 0)
            return gd_err_set(err, GD_EFORMAT, "node %s: attribute %s has no value", node, name);
    }
    if (ap->ref_attr_name != NULL && ap->ref_attr_name[0] != '\0') {
        L->refusal = GD_ONNX_REFUSED_FORM;
        return gd_err_set(err, GD_ENOTSUP, "node %s: attribute %s refers to a function's "
                          "attribute; functions are not supported", node, name);
    }
    if ((a->name = gd__strdup(name)) == NULL)
        return gd_err_set(err, GD_ENOMEM, "out of memory");
    int rc = 0;
    switch (type) {
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT:
        a->type = GD_ATTR_FLOAT;
        a->f = ap->f;
        break;
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT:
        a->type = GD_ATTR_INT;
        a->i = ap->i;
        break;
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING:
        a->type = GD_ATTR_STRING;
        if (ap->s.len > 0 && memchr(ap->s.data, '\0', ap->s.len) != NULL) {
            rc = gd_err_set(err, GD_EFORMAT, "node %s: attribute %s holds a NUL byte", node,
                            name);
            break;
        }
        if ((a->s = malloc(ap->s.len + 1)) == NULL) {
            rc = gd_err_set(err, GD_ENOMEM, "out of memory");
            break;
        }
        if (ap->s.len > 0)
            memcpy(a->s, ap->s.data, ap->s.len);
        a->s[ap->s.len] = '\0';
        break;
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSOR: {
        char what[320];
        snprintf(what, sizeof what, "node %s: attribute %s", node, name);
        a->type = GD_ATTR_TENSOR;
        if (ap->t == NULL)
            rc = gd_err_set(err, GD_EFORMAT, "%s has no tensor", what);
        else
            rc = gd__onnx_tensor(ap->t, what, L->dir, &a->t, err);
        if (rc == GD_ENOTSUP)
            L->refusal = GD_ONNX_REFUSED_DTYPE;
        break;
    }
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOATS:
        a->type = GD_ATTR_FLOATS;
        a->n = (int)ap->n_floats;
        if ((a->floats = calloc(ap->n_floats ? ap->n_floats : 1, sizeof *a->floats)) == NULL) {
            rc = gd_err_set(err, GD_ENOMEM, "out of memory");
            break;
        }
        for (size_t i = 0; i < ap->n_floats; i++)
            a->floats[i] = ap->floats[i];
        break;
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS:
        a->type = GD_ATTR_INTS;
        a->n = (int)ap->n_ints;
        if ((a->ints = calloc(ap->n_ints ? ap->n_ints : 1, sizeof *a->ints)) == NULL) {
            rc = gd_err_set(err, GD_ENOMEM, "out of memory");
            break;
        }
        if (ap->n_ints > 0)
            memcpy(a->ints, ap->ints, ap->n_ints * sizeof *a->ints);
        break;
    default:
        L->refusal = GD_ONNX_REFUSED_FORM;
        rc = gd_err_set(err, GD_ENOTSUP, "node %s: attribute %s is of ONNX attribute type %d "
                        "(lists of strings or tensors, sparse tensors, types), which the "
                        "engine does not take", node, name, type);
        break;
    }
    if (rc != 0)
        gd_attr_fini(a);
    return rc;
}

/* ---- nodes ---- */

static int
has_subgraph(const Onnx__NodeProto *np)
{
    for (size_t i = 0; i < np->n_attribute; i++) {
        const Onnx__AttributeProto *ap = np->attribute[i];
        if (ap->g != NULL || ap->n_graphs > 0 ||
            (ap->has_type && (ap->type == ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPH ||
                              ap->type == ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPHS)))
            return 1;
    }
    return 0;
}

/* A Constant node: its value in any of its forms becomes a constant. */
static int
constant_node(struct loader *L, const Onnx__NodeProto *np, const char *name, const char *output,
              struct gd_err *err)
{
    if (np->n_attribute != 1)
        return gd_err_set(err, GD_EMODEL, "Constant node %s needs exactly one attribute, not "
                          "%zu", name, np->n_attribute);
    const Onnx__AttributeProto *ap = np->attribute[0];
    const char *attr = str_or_empty(ap->name);
    struct gd_tensor *t = NULL;
    int rc = 0;
    char what[320];
    snprintf(what, sizeof what, "Constant node %s", name);
    if (strcmp(attr, "value") == 0) {
        if (ap->t == NULL)
            return gd_err_set(err, GD_EFORMAT, "%s: value is not a tensor", what);
        rc = gd__onnx_tensor(ap->t, what, L->dir, &t, err);
        if (rc == GD_ENOTSUP)
            L->refusal = GD_ONNX_REFUSED_DTYPE;
    } else if (strcmp(attr, "value_float") == 0 || strcmp(attr, "value_int") == 0) {
        int is_float = attr[6] == 'f';
        t = gd_tensor_new(is_float ? GD_F32 : GD_I64, 0, NULL, err);
        if (t == NULL)
            return err ? err->code : GD_ENOMEM;
        if (is_float)
            *(float *)t->data = ap->f;
        else
            *(int64_t *)t->data = ap->i;
    } else if (strcmp(attr, "value_floats") == 0 || strcmp(attr, "value_ints") == 0) {
        int is_float = attr[6] == 'f';
        int64_t count = is_float ? (int64_t)ap->n_floats : (int64_t)ap->n_ints;
        t = gd_tensor_new(is_float ? GD_F32 : GD_I64, 1, &count, err);
        if (t == NULL)
            return err ? err->code : GD_ENOMEM;
        if (count > 0)
            memcpy(t->data, is_float ? (void *)ap->floats : (void *)ap->ints,
                   (size_t)count * (is_float ? sizeof(float) : sizeof(int64_t)));
    } else if (strcmp(attr, "value_string") == 0 || strcmp(attr, "value_strings") == 0) {
        L->refusal = GD_ONNX_REFUSED_DTYPE;
        return gd_err_set(err, GD_ENOTSUP, "%s: the engine has no string tensors", what);
    } else if (strcmp(attr, "sparse_value") == 0) {
        L->refusal = GD_ONNX_REFUSED_FORM;
        return gd_err_set(err, GD_ENOTSUP, "%s: sparse tensors are not supported", what);
    } else {
        return gd_err_set(err, GD_EMODEL, "%s: unknown attribute %s", what, attr);
    }
    if (rc != 0)
        return rc;
    return gd_graph_add_constant_node(L->g, name, output, t, err);
}

static int
process_node(struct loader *L, struct gd__onnx_build *b, const Onnx__NodeProto *np, size_t k,
             struct gd_err *err)
{
    const char *op = str_or_empty(np->op_type), *domain = str_or_empty(np->domain);
    const char *onnx_name = str_or_empty(np->name);
    struct gd__onnx_node n = {.n_inputs = 0};
    int rc = 0, refused = 0, poisoned = 0;
    if (op[0] == '\0')
        return gd_err_set(err, GD_EFORMAT, "node %zu (%s) has no op_type", k, onnx_name);
    /* The graph node's name: the ONNX one when it names one node only, else the first
     * output's name (item 7 of docs/ONNX.md). */
    size_t n_out = np->n_output;
    while (n_out > 0 && str_or_empty(np->output[n_out - 1])[0] == '\0')
        n_out--;
    int own_name = onnx_name[0] != '\0' && map_get(&L->node_names, onnx_name) == 1;
    snprintf(n.name, sizeof n.name, "%s",
             own_name ? onnx_name : n_out > 0 ? np->output[0] : op);
    if (n_out == 0)
        return gd_err_set(err, GD_EFORMAT, "node %s (%s) has no outputs", n.name, op);
    if (np->n_input > GD__ONNX_MAX_IO || n_out > GD__ONNX_MAX_IO)
        return gd_err_set(err, GD_ENOTSUP, "node %s (%s): %zu inputs and %zu outputs", n.name,
                          op, np->n_input, n_out);
    if ((domain[0] == '\0' || strcmp(domain, "ai.onnx") == 0) && L->opset < 0)
        return gd_err_set(err, GD_EFORMAT, "node %s uses ai.onnx's %s, but the model imports "
                          "no ai.onnx opset", n.name, op);
    if (domain[0] != '\0' && strcmp(domain, "ai.onnx") != 0) {
        char full[96];
        snprintf(full, sizeof full, "%s.%s", domain, op);
        missing_add(L, full, n.name);
        refused = 1;
    } else if (has_subgraph(np) || strcmp(op, "If") == 0 || strcmp(op, "Loop") == 0 ||
               strcmp(op, "Scan") == 0) {
        char full[96];
        snprintf(full, sizeof full, "%s (a subgraph op)", op);
        missing_add(L, full, n.name);
        refused = 1;
    }
    for (size_t i = 0; i < np->n_input && !refused; i++) {
        const char *in = str_or_empty(np->input[i]);
        n.inputs[i] = NULL;
        n.n_inputs = (int)i + 1;
        if (in[0] == '\0')
            continue;
        int v = map_get(&L->values, in);
        if (v == POISONED) {
            poisoned = 1;
            continue;
        }
        if (v < 0) { /* node_order() makes this impossible */
            rc = gd_err_set(err, GD_EFORMAT, "input %s is not defined before the node", in);
            goto done;
        }
        if ((n.inputs[i] = gd__strdup(L->g->values[v].name)) == NULL) {
            rc = gd_err_set(err, GD_ENOMEM, "out of memory");
            goto done;
        }
    }
    if (poisoned && !op_known(op))
        missing_add(L, op, n.name);
    if (refused || poisoned) {
        for (size_t i = 0; i < n_out; i++)
            if ((rc = map_put(&L->values, np->output[i], POISONED, err)) != 0)
                goto done;
        goto done;
    }
    if (strcmp(op, "Constant") == 0) {
        if (n_out != 1) {
            rc = gd_err_set(err, GD_EMODEL, "Constant node %s has %zu outputs", n.name, n_out);
            goto done;
        }
        rc = constant_node(L, np, n.name, np->output[0], err);
        if (rc == 0)
            rc = map_put(&L->values, np->output[0], L->g->n_values - 1, err);
        goto done;
    }
    snprintf(n.op, sizeof n.op, "%s", op);
    if (np->n_attribute > GD__ONNX_MAX_ATTRS) {
        rc = gd_err_set(err, GD_ENOTSUP, "node %s: %zu attributes", n.name, np->n_attribute);
        goto done;
    }
    for (size_t i = 0; i < np->n_attribute; i++) {
        rc = attr_convert(L, np->attribute[i], n.name, &n.attrs[i], err);
        if (rc != 0)
            goto done;
        n.n_attrs = (int)i + 1;
    }
    /* Output values: a node with one output names it after itself (its layer's name). */
    int name_value = n_out == 1 && own_name &&
                     (map_get(&L->onnx_values, onnx_name) < 0 ||
                      strcmp(onnx_name, np->output[0]) == 0);
    for (size_t i = 0; i < n_out; i++) {
        char buf[512];
        const char *o = str_or_empty(np->output[i]);
        if (o[0] == '\0')
            snprintf(buf, sizeof buf, "%s/unused%zu", n.name, i);
        else
            snprintf(buf, sizeof buf, "%s", name_value ? n.name : o);
        if ((n.outputs[i] = gd__strdup(buf)) == NULL) {
            rc = gd_err_set(err, GD_ENOMEM, "out of memory");
            goto done;
        }
        n.n_outputs = (int)i + 1;
    }
    rc = gd__onnx_rewrite(b, &n, err);
    for (size_t i = 0; i < n_out && rc == 0; i++) {
        const char *o = str_or_empty(np->output[i]);
        if (o[0] == '\0')
            continue;
        int v = map_get(&L->poisoned, n.outputs[i]) >= 0 ? POISONED
                                                         : gd_graph_find_value(L->g, n.outputs[i]);
        if (v == -1)
            rc = gd_err_set(err, GD_EMODEL, "node %s: output %s was not made", n.name, o);
        else
            rc = map_put(&L->values, o, v, err);
    }
done:
    gd__onnx_node_fini(&n);
    if (rc != 0 && err != NULL && strstr(err->msg, n.name) == NULL)
        gd_err_prefix(err, "node %s (%s): ", n.name, op);
    return rc;
}

/* ---- the graph ---- */

static int
check_opsets(const Onnx__ModelProto *m, int *opset, struct gd_err *err)
{
    *opset = -1;
    for (size_t i = 0; i < m->n_opset_import; i++) {
        const char *d = str_or_empty(m->opset_import[i]->domain);
        if (d[0] == '\0' || strcmp(d, "ai.onnx") == 0)
            *opset = (int)m->opset_import[i]->version;
    }
    if (*opset < 0) /* only other domains: their nodes are refused one by one */
        return 0;
    if (*opset < OPSET_MIN || *opset > OPSET_MAX)
        return gd_err_set(err, GD_ENOTSUP, "the model uses ai.onnx opset %d; this loader takes "
                          "%d to %d", *opset, OPSET_MIN, OPSET_MAX);
    return 0;
}

static int
add_initializers(struct loader *L, struct gd_err *err)
{
    Onnx__GraphProto *gp = L->gp;
    if (gp->n_sparse_initializer > 0) {
        L->refusal = GD_ONNX_REFUSED_FORM;
        return gd_err_set(err, GD_ENOTSUP, "sparse initializers are not supported");
    }
    for (size_t i = 0; i < gp->n_initializer; i++) {
        Onnx__TensorProto *tp = gp->initializer[i];
        const char *name = str_or_empty(tp->name);
        char what[320];
        snprintf(what, sizeof what, "initializer %s", name);
        if (name[0] == '\0')
            return gd_err_set(err, GD_EFORMAT, "initializer %zu has no name", i);
        if (map_get(&L->values, name) >= 0)
            return gd_err_set(err, GD_EFORMAT, "initializer %s is defined twice", name);
        struct gd_tensor *t = NULL;
        int rc = gd__onnx_tensor(tp, what, L->dir, &t, err);
        if (rc == GD_ENOTSUP)
            L->refusal = GD_ONNX_REFUSED_DTYPE;
        if (rc != 0) {
            gd_tensor_free(t);
            return rc;
        }
        rc = gd_graph_add_constant(L->g, name, t, err);
        if (rc == 0)
            rc = map_put(&L->values, name, L->g->n_values - 1, err);
        if (rc != 0)
            return rc;
        if (tp->has_data_location &&
            tp->data_location == ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL) {
            int *e = realloc(L->external, (size_t)(L->n_external + 1) * sizeof *e);
            if (e == NULL)
                return gd_err_set(err, GD_ENOMEM, "out of memory");
            L->external = e;
            L->external[L->n_external++] = L->g->n_values - 1;
        }
    }
    return 0;
}

static int
add_inputs(struct loader *L, struct gd_err *err)
{
    for (size_t i = 0; i < L->gp->n_input; i++) {
        const Onnx__ValueInfoProto *vi = L->gp->input[i];
        const char *name = str_or_empty(vi->name);
        if (name[0] == '\0')
            return gd_err_set(err, GD_EFORMAT, "graph input %zu has no name", i);
        if (map_get(&L->values, name) >= 0)
            continue; /* an initializer: a weight with a default the model may not override */
        const Onnx__TypeProto *tp = vi->type;
        if (tp == NULL || tp->value_case != ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE) {
            L->refusal = GD_ONNX_REFUSED_DTYPE;
            return gd_err_set(err, tp == NULL ? GD_EFORMAT : GD_ENOTSUP, "input %s %s", name,
                              tp == NULL ? "has no type"
                              : tp->value_case == ONNX__TYPE_PROTO__VALUE_SEQUENCE_TYPE
                                  ? "is a sequence; the engine takes tensors"
                              : tp->value_case == ONNX__TYPE_PROTO__VALUE_MAP_TYPE
                                  ? "is a map; the engine takes tensors"
                              : tp->value_case == ONNX__TYPE_PROTO__VALUE_OPTIONAL_TYPE
                                  ? "is an optional; the engine takes tensors"
                                  : "is not a dense tensor");
        }
        const Onnx__TypeProto__Tensor *tt = tp->tensor_type;
        struct gd_input_decl d = {0};
        char what[320];
        snprintf(what, sizeof what, "input %s", name);
        int rc = gd__onnx_dtype(tt->has_elem_type ? tt->elem_type : 0, what, &d.dtype, err);
        if (rc == GD_ENOTSUP)
            L->refusal = GD_ONNX_REFUSED_DTYPE;
        if (rc != 0)
            return rc;
        if (tt->shape == NULL) {
            L->refusal = GD_ONNX_REFUSED_FORM;
            return gd_err_set(err, GD_ENOTSUP, "input %s has no shape (not even a rank); the "
                              "engine needs its rank", name);
        }
        if (tt->shape->n_dim > GD_MAX_DIMS) {
            L->refusal = GD_ONNX_REFUSED_FORM;
            return gd_err_set(err, GD_ENOTSUP, "input %s has %zu dimensions (at most %d)", name,
                              tt->shape->n_dim, GD_MAX_DIMS);
        }
        d.shape.ndim = (int)tt->shape->n_dim;
        for (size_t k = 0; k < tt->shape->n_dim; k++) {
            const Onnx__TensorShapeProto__Dimension *dim = tt->shape->dim[k];
            int fixed = dim->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE &&
                        dim->dim_value >= 0;
            /* A symbolic (dim_param) or unknown dimension is taken from the input at run time. */
            d.shape.dim[k] = fixed ? dim->dim_value : -1;
        }
        rc = gd_graph_add_input(L->g, name, &d, err);
        if (rc == 0)
            rc = map_put(&L->values, name, L->g->n_values - 1, err);
        if (rc != 0)
            return rc;
    }
    return 0;
}

/*
 * The order to add the nodes in: the model's when it is topological (ONNX requires it),
 * else a topological one that keeps the model's order where it can. Dangling inputs,
 * values produced twice and cycles are errors that name the nodes.
 */
static int
node_order(struct loader *L, int *order, struct gd_err *err)
{
    Onnx__GraphProto *gp = L->gp;
    int n = (int)gp->n_node, rc = 0;
    struct strmap producer = {0};
    int *done = calloc((size_t)(n ? n : 1), sizeof *done);
    if (done == NULL)
        return gd_err_set(err, GD_ENOMEM, "out of memory");
    for (int k = 0; k < n && rc == 0; k++) {
        const Onnx__NodeProto *np = gp->node[k];
        for (size_t i = 0; i < np->n_output && rc == 0; i++) {
            const char *o = str_or_empty(np->output[i]);
            if (o[0] == '\0')
                continue;
            int other = map_get(&producer, o);
            if (other >= 0)
                rc = gd_err_set(err, GD_EFORMAT, "value %s is produced twice: by node %s and "
                                "node %s", o, str_or_empty(gp->node[other]->name),
                                str_or_empty(np->name));
            else if (map_get(&L->values, o) >= 0)
                rc = gd_err_set(err, GD_EFORMAT, "node %s produces %s, which is also a graph "
                                "input or initializer", str_or_empty(np->name), o);
            else
                rc = map_put(&producer, o, k, err);
        }
    }
    for (int k = 0; k < n && rc == 0; k++) {
        const Onnx__NodeProto *np = gp->node[k];
        for (size_t i = 0; i < np->n_input && rc == 0; i++) {
            const char *in = str_or_empty(np->input[i]);
            if (in[0] != '\0' && map_get(&producer, in) < 0 && map_get(&L->values, in) < 0)
                rc = gd_err_set(err, GD_EFORMAT, "node %s (%s) reads %s, which no node, graph "
                                "input or initializer defines", str_or_empty(np->name),
                                str_or_empty(np->op_type), in);
        }
    }
    /* Repeatedly take the first node whose producers are all done: the model's order when
     * it is already topological, in one pass. */
    int n_done = 0, first = 0;
    while (rc == 0 && n_done < n) {
        int taken = -1;
        for (int k = first; k < n && taken < 0; k++) {
            if (done[k])
                continue;
            const Onnx__NodeProto *np = gp->node[k];
            int ready = 1;
            for (size_t i = 0; i < np->n_input && ready; i++) {
                const char *in = str_or_empty(np->input[i]);
                int p = in[0] ? map_get(&producer, in) : -1;
                ready = p < 0 || (done[p] && p != k);
            }
            if (ready)
                taken = k;
        }
        if (taken < 0) {
            /* Every node left waits for another one left: walking from one to what it waits
             * for comes back to a node seen before, which is on a cycle. done[] marks the
             * walk with 2. */
            int k = first, from = -1;
            const char *what = "";
            while (done[k] != 2) {
                done[k] = 2;
                const Onnx__NodeProto *np = gp->node[k];
                for (size_t i = 0; i < np->n_input; i++) {
                    const char *in = str_or_empty(np->input[i]);
                    int p = in[0] ? map_get(&producer, in) : -1;
                    if (p >= 0 && done[p] != 1) {
                        from = k, what = in, k = p;
                        break;
                    }
                }
            }
            rc = gd_err_set(err, GD_EFORMAT, "the nodes form a cycle: node %s (%s) reads %s, "
                            "which node %s (%s) makes from what depends on it",
                            str_or_empty(gp->node[from]->name),
                            str_or_empty(gp->node[from]->op_type), what,
                            str_or_empty(gp->node[k]->name), str_or_empty(gp->node[k]->op_type));
            break;
        }
        done[taken] = 1;
        order[n_done++] = taken;
        while (first < n && done[first])
            first++;
    }
    map_free(&producer);
    free(done);
    return rc;
}

/*
 * Graph outputs. One that no node makes (an input, a constant, a fold) gets an Identity
 * layer of its name, so every output is captured: the value it copies is renamed
 * "<name>/value", unless it is a graph input, which keeps its name (users give inputs by
 * name) while the Identity's output becomes "<name>/output".
 */
static int
add_outputs(struct loader *L, struct gd_err *err)
{
    for (size_t i = 0; i < L->gp->n_output; i++) {
        const char *name = str_or_empty(L->gp->output[i]->name);
        int v = map_get(&L->values, name);
        if (v == POISONED)
            continue;
        if (v < 0)
            return gd_err_set(err, GD_EFORMAT, "graph output %s is not a value of the graph",
                              name);
        if (L->g->values[v].producer >= 0) {
            int rc = gd_graph_add_output(L->g, L->g->values[v].name, err);
            if (rc != 0)
                return rc;
            continue;
        }
        char node[256], out[512], moved[512];
        snprintf(node, sizeof node, "%s", name);
        unique_node_name(L->g, node, sizeof node);
        int is_input = L->g->values[v].is_input;
        snprintf(out, sizeof out, "%s%s", name, is_input ? "/output" : "");
        if (!is_input) {
            snprintf(moved, sizeof moved, "%s/value", L->g->values[v].name);
            char *nm = gd__strdup(moved);
            if (nm == NULL)
                return gd_err_set(err, GD_ENOMEM, "out of memory");
            if (gd_graph_find_value(L->g, moved) >= 0) {
                free(nm);
                return gd_err_set(err, GD_EMODEL, "graph output %s: the name %s is taken", name,
                                  moved);
            }
            free(L->g->values[v].name);
            L->g->values[v].name = nm;
        }
        const char *in = L->g->values[v].name;
        const char *o = out;
        int rc = gd_graph_add_node(L->g, node, "Identity", 1, &in, 1, &o, 0, NULL, err);
        if (rc == 0)
            rc = gd_graph_add_output(L->g, out, err);
        if (rc != 0)
            return rc;
    }
    return 0;
}

static int
build(struct loader *L, Onnx__ModelProto *m, const struct gd_onnx_opts *opts,
      struct gd_onnx_report *report, struct gd_err *err)
{
    Onnx__GraphProto *gp = m->graph;
    int rc = check_opsets(m, &L->opset, err);
    if (report != NULL)
        report->opset = L->opset;
    if (rc == GD_ENOTSUP)
        L->refusal = GD_ONNX_REFUSED_FORM;
    if (rc != 0)
        return rc;
    if (gp == NULL)
        return gd_err_set(err, GD_EFORMAT, "the model has no graph");
    L->gp = gp;
    for (size_t i = 0; i < gp->n_output && rc == 0; i++)
        rc = map_put(&L->outputs, str_or_empty(gp->output[i]->name), 1, err);
    for (size_t k = 0; k < gp->n_node && rc == 0; k++) {
        const Onnx__NodeProto *np = gp->node[k];
        const char *nm = str_or_empty(np->name);
        int seen = nm[0] != '\0' ? map_get(&L->node_names, nm) : -1;
        if (nm[0] != '\0')
            rc = map_put(&L->node_names, nm, seen < 0 ? 1 : seen + 1, err);
        for (size_t i = 0; i < np->n_output && rc == 0; i++)
            rc = map_put(&L->onnx_values, str_or_empty(np->output[i]), 1, err);
    }
    for (size_t i = 0; i < gp->n_input && rc == 0; i++)
        rc = map_put(&L->onnx_values, str_or_empty(gp->input[i]->name), 1, err);
    for (size_t i = 0; i < gp->n_initializer && rc == 0; i++)
        rc = map_put(&L->onnx_values, str_or_empty(gp->initializer[i]->name), 1, err);
    if (rc == 0)
        rc = add_initializers(L, err);
    if (rc == 0)
        rc = add_inputs(L, err);
    int *order = calloc(gp->n_node ? gp->n_node : 1, sizeof *order);
    if (rc == 0 && order == NULL)
        rc = gd_err_set(err, GD_ENOMEM, "out of memory");
    if (rc == 0)
        rc = node_order(L, order, err);
    struct gd__onnx_build b = {.g = L->g, .opset = L->opset, .add = loader_add,
                               .rank = loader_rank, .loader = L};
    for (size_t k = 0; k < gp->n_node && rc == 0; k++)
        rc = process_node(L, &b, gp->node[order[k]], (size_t)order[k], err);
    free(order);
    if (rc == GD_ENOTSUP && L->refusal == GD_ONNX_OK)
        L->refusal = GD_ONNX_REFUSED_FORM;
    if (rc != 0)
        return rc;
    if (L->n_missing > 0)
        return missing_report(L, report, err);
    rc = add_outputs(L, err);
    if (rc == 0 && (opts == NULL || !opts->defer_finalize))
        rc = gd_graph_finalize(L->g, err);
    if (rc == GD_ENOTSUP)
        L->refusal = GD_ONNX_REFUSED_FORM;
    if (rc == GD_EDTYPE)
        L->refusal = GD_ONNX_REFUSED_DTYPE;
    return rc;
}

/* The file's hash, on a thread of its own while the model is decoded: both read the file
 * once, and hashing a 330 MB model costs as much as decoding it. */
struct hash_job {
    const void *buf;
    size_t len;
    struct gd_sha256 *h;
    int rc;
    struct gd_err err;
};

static void *
hash_main(void *arg)
{
    struct hash_job *j = arg;
    j->rc = gd_sha256_update(j->h, j->buf, j->len, &j->err);
    return NULL;
}

/* Waits for the hash; its error, if any, becomes the load's when the load had none. */
static int
hash_join(struct hash_job *j, pthread_t *th, int *running, int rc, struct gd_err *err)
{
    if (*running) {
        pthread_join(*th, NULL);
        *running = 0;
    }
    if (rc == 0 && j->rc != 0) {
        if (err != NULL)
            *err = j->err;
        return j->rc;
    }
    return rc;
}

int
gd_onnx_parse(const void *buf, size_t len, const char *where, const char *dir,
              const struct gd_onnx_opts *opts, struct gd_onnx_report *report,
              struct gd_graph **out, struct gd_err *err)
{
    where = where ? where : "model";
    struct loader L = {.dir = dir};
    struct gd_sha256 h = {0};
    struct hash_job job = {.buf = buf, .len = len, .h = &h};
    pthread_t th;
    int hashing = 0;
    Onnx__ModelProto *m = NULL;
    if (report != NULL)
        memset(report, 0, sizeof *report);
    int rc = gd_sha256_init(&h, err);
    if (rc != 0)
        goto done;
    if (pthread_create(&th, NULL, hash_main, &job) == 0)
        hashing = 1;
    else
        hash_main(&job);
    m = (Onnx__ModelProto *)gd__onnx_unpack(&onnx__model_proto__descriptor, buf, len, NULL,
                                            err);
    if (m == NULL) {
        rc = err ? err->code : GD_EFORMAT;
        goto done;
    }
    char name[256];
    snprintf(name, sizeof name, "%s",
             m->graph != NULL && m->graph->name != NULL && m->graph->name[0] ? m->graph->name
                                                                             : "onnx-model");
    if ((L.g = gd_graph_new(name, err)) == NULL) {
        rc = err ? err->code : GD_ENOMEM;
        goto done;
    }
    rc = build(&L, m, opts, report, err);
    rc = hash_join(&job, &th, &hashing, rc, err);
    /* Then the external data, as read: each such initializer's name and bytes. */
    for (int i = 0; i < L.n_external && rc == 0; i++) {
        const struct gd_value *v = &L.g->values[L.external[i]];
        rc = gd_sha256_update(&h, v->name, strlen(v->name) + 1, err);
        if (rc == 0)
            rc = gd_sha256_update(&h, v->constant->data, gd_tensor_nbytes(v->constant), err);
    }
    if (rc == 0)
        rc = gd_sha256_final(&h, L.g->sha256, err);
done:
    rc = hash_join(&job, &th, &hashing, rc, err);
    if (rc != 0) {
        if (report != NULL && report->refusal == GD_ONNX_OK && rc == GD_ENOTSUP)
            report->refusal = L.refusal ? L.refusal : GD_ONNX_REFUSED_FORM;
        gd_err_prefix(err, "%s: ", where);
        gd_graph_free(L.g);
        L.g = NULL;
    }
    if (m != NULL)
        onnx__model_proto__free_unpacked(m, &gd__onnx_allocator);
    gd_sha256_fini(&h);
    map_free(&L.values);
    map_free(&L.outputs);
    map_free(&L.node_names);
    map_free(&L.onnx_values);
    map_free(&L.poisoned);
    free(L.external);
    for (int i = 0; i < L.n_owned; i++)
        free(L.owned[i]);
    free(L.owned);
    if (rc == 0)
        *out = L.g;
    return rc;
}

int
gd_onnx_load(const char *path, const struct gd_onnx_opts *opts, struct gd_onnx_report *report,
             struct gd_graph **out, struct gd_err *err)
{
    const uint8_t *data = NULL;
    size_t len = 0;
    int mapped = 0;
    if (report != NULL)
        memset(report, 0, sizeof *report);
    int rc = gd__onnx_map(path, &data, &len, &mapped, err);
    if (rc != 0)
        return rc;
    char copy[PATH_MAX];
    snprintf(copy, sizeof copy, "%s", path);
    rc = gd_onnx_parse(data, len, path, dirname(copy), opts, report, out, err);
    gd__onnx_unmap(data, len, mapped);
    return rc;
}
