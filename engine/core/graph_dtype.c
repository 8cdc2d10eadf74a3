/*
 * graph_dtype.c: gd_graph_cast_floats(), a float32 model run in float16 or bfloat16 as
 * PyTorch's model.half() / model.bfloat16() runs it: the weights and the float inputs in the
 * half format, and the model's own casts to float32 aimed at it instead, so every float
 * value of the graph is of that dtype. Integer and bool tensors (token ids, masks) stay.
 */
#include <string.h>

#include "internal.h"

/* ONNX's TensorProto.DataType numbers this file reads and writes. */
#define ONNX_FLOAT 1
#define ONNX_FLOAT16 10
#define ONNX_DOUBLE 11
#define ONNX_BFLOAT16 16

static int
is_wide(enum gd_dtype dt)
{
    return dt == GD_F32 || dt == GD_F64;
}

/*
 * 1 when input slot `slot` of op takes a float that ONNX types as float32 whatever the data
 * (a parameter, not data of the model's dtype): Resize's roi and scales, Upsample's scales,
 * Dropout's ratio. A weight read only there keeps its value.
 */
static int
param_slot(enum gd_op op, int slot)
{
    switch (op) {
    case GD_OP_RESIZE:
    case GD_OP_UPSAMPLE:
        return slot >= 1;
    case GD_OP_DROPOUT:
        return slot == 1;
    default:
        return 0;
    }
}

/* 1 when some node reads value v as data (not only at a parameter slot); a value no node
 * reads (a graph output that is a weight) counts as data. */
static int
read_as_data(const struct gd_graph *g, int v)
{
    int readers = 0;
    for (int ni = 0; ni < g->n_nodes; ni++) {
        const struct gd_node *n = &g->nodes[ni];
        for (int i = 0; i < n->n_inputs; i++) {
            if (n->inputs[i] != v)
                continue;
            readers++;
            if (!param_slot(n->op, i))
                return 1;
        }
    }
    for (int f = 0; f < g->n_folds; f++)
        for (int i = 0; i < g->folds[f].n_inputs; i++)
            if (g->folds[f].inputs[i] == v)
                return 1; /* a fold moves it as data (in the new dtype) */
    return readers == 0;
}

/* A "to" or "dtype" attribute naming float32 or float64 aims at the target instead. */
static void
retarget_attr(struct gd_attr *a, int64_t target)
{
    if (a->type == GD_ATTR_INT && (a->i == ONNX_FLOAT || a->i == ONNX_DOUBLE))
        a->i = target;
}

int
gd_graph_cast_floats(struct gd_graph *g, enum gd_dtype dtype, struct gd_err *err)
{
    if (dtype != GD_F16 && dtype != GD_BF16)
        return gd_err_set(err, GD_EINVAL, "a model can be cast to float16 or bfloat16, not %s",
                          gd_dtype_name(dtype));
    int64_t target = dtype == GD_F16 ? ONNX_FLOAT16 : ONNX_BFLOAT16;
    for (int v = 0; v < g->n_values; v++) {
        struct gd_value *val = &g->values[v];
        if (val->constant == NULL || !is_wide(val->constant->dtype) || !read_as_data(g, v))
            continue;
        struct gd_tensor *t = gd_tensor_cast(val->constant, dtype, err);
        if (t == NULL)
            return gd_err_prefix(err, "weight %s: ", val->name);
        gd_tensor_free(val->constant);
        val->constant = t;
        val->dtype = dtype;
    }
    for (int i = 0; i < g->n_inputs; i++) {
        if (!is_wide(g->input_decls[i].dtype))
            continue;
        g->input_decls[i].dtype = dtype;
        g->values[g->inputs[i]].dtype = dtype;
    }
    for (int ni = 0; ni < g->n_nodes; ni++) {
        struct gd_node *n = &g->nodes[ni];
        const char *name = n->op == GD_OP_CAST ? "to" : n->op == GD_OP_EYE_LIKE ? "dtype" : NULL;
        for (int a = 0; name != NULL && a < n->n_attrs; a++)
            if (strcmp(n->attrs[a].name, name) == 0)
                retarget_attr(&n->attrs[a], target);
    }
    for (int f = 0; f < g->n_folds; f++) {
        struct gd_fold *fold = &g->folds[f];
        if (fold->at_load || strcmp(fold->op, "ConstantOfShape") != 0)
            continue;
        for (int a = 0; a < fold->n_attrs; a++) {
            struct gd_attr *at = &fold->attrs[a];
            if (strcmp(at->name, "value") != 0 || at->type != GD_ATTR_TENSOR ||
                at->t == NULL || !is_wide(at->t->dtype))
                continue;
            struct gd_tensor *t = gd_tensor_cast(at->t, dtype, err);
            if (t == NULL)
                return gd_err_prefix(err, "node %s (ConstantOfShape): ", fold->name);
            gd_tensor_free(at->t);
            at->t = t;
        }
    }
    return 0;
}
