/*
 * graph_replay.c: the replay graph of a model (gpudiff/graph_replay.h): every node reads captured
 * values through graph inputs of their own instead of its upstream nodes' outputs.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpudiff/graph_replay.h"
#include "internal.h"

/* A name for value v's replay input that no value of g has. */
static int
replay_name(const struct gd_graph *g, const struct gd_graph *r, int v, char *out, size_t size)
{
    for (int k = 0; k < 1000; k++) {
        if (k == 0)
            snprintf(out, size, "%s@replay", g->values[v].name);
        else
            snprintf(out, size, "%s@replay%d", g->values[v].name, k);
        if (gd_graph_find_value(g, out) < 0 && gd_graph_find_value(r, out) < 0)
            return 0;
    }
    return GD_EEXIST;
}

/* Node n of g, copied into r, reading replay inputs for the captured values. */
static int
copy_node(const struct gd_graph *g, struct gd_graph *r, int ni, const int *replay_input,
          struct gd_err *err)
{
    const struct gd_node *n = &g->nodes[ni];
    const char **ins = calloc((size_t)(n->n_inputs + 1), sizeof *ins);
    const char **outs = calloc((size_t)(n->n_outputs + 1), sizeof *outs);
    struct gd_attr *attrs = calloc((size_t)(n->n_attrs + 1), sizeof *attrs);
    int rc = 0, n_copied = 0;
    if (ins == NULL || outs == NULL || attrs == NULL) {
        rc = gd_err_set(err, GD_ENOMEM, "out of memory");
        goto done;
    }
    for (int i = 0; i < n->n_inputs; i++) {
        int v = n->inputs[i];
        ins[i] = v < 0 ? NULL
                 : replay_input[v] >= 0 ? r->values[r->inputs[replay_input[v]]].name
                                        : g->values[v].name;
    }
    for (int k = 0; k < n->n_outputs; k++)
        outs[k] = g->values[n->outputs[k]].name;
    for (; n_copied < n->n_attrs; n_copied++)
        if (gd__attr_copy(&n->attrs[n_copied], &attrs[n_copied]) != 0) {
            rc = gd_err_set(err, GD_ENOMEM, "out of memory");
            goto done;
        }
    rc = gd_graph_add_node(r, n->name, gd_op_name(n->op), n->n_inputs, ins, n->n_outputs, outs,
                           n->n_attrs, attrs, err);
    n_copied = 0; /* taken over by the graph, also on failure */
done:
    for (int k = 0; k < n_copied; k++)
        gd_attr_fini(&attrs[k]);
    free(attrs);
    free(ins);
    free(outs);
    return rc;
}

/* Fold f of g (one computed at each inference: an ONNX model's shape computation), copied
 * into r as it is: it reads the same values by name, which r's nodes make as g's do. */
static int
copy_fold(const struct gd_graph *g, struct gd_graph *r, const struct gd_fold *f,
          struct gd_err *err)
{
    const char **ins = calloc((size_t)(f->n_inputs + 1), sizeof *ins);
    const char **outs = calloc((size_t)(f->n_outputs + 1), sizeof *outs);
    struct gd_attr *attrs = calloc((size_t)(f->n_attrs + 1), sizeof *attrs);
    int rc = 0, n_copied = 0;
    if (ins == NULL || outs == NULL || attrs == NULL) {
        rc = gd_err_set(err, GD_ENOMEM, "out of memory");
        goto done;
    }
    for (int i = 0; i < f->n_inputs; i++)
        ins[i] = f->inputs[i] < 0 ? NULL : g->values[f->inputs[i]].name;
    for (int k = 0; k < f->n_outputs; k++)
        outs[k] = g->values[f->outputs[k]].name;
    for (; n_copied < f->n_attrs; n_copied++)
        if (gd__attr_copy(&f->attrs[n_copied], &attrs[n_copied]) != 0) {
            rc = gd_err_set(err, GD_ENOMEM, "out of memory");
            goto done;
        }
    rc = gd_graph_add_fold(r, f->name, f->op, f->n_inputs, ins, f->n_outputs, outs, f->n_attrs,
                           attrs, err);
    if (rc == 0)
        n_copied = 0; /* taken over by the graph on success only */
done:
    for (int k = 0; k < n_copied; k++)
        gd_attr_fini(&attrs[k]);
    free(attrs);
    free(ins);
    free(outs);
    return rc;
}

/* The folds of g computed at inference just before node `before` (g->n_nodes: after all). */
static int
copy_folds_before(const struct gd_graph *g, struct gd_graph *r, int before, struct gd_err *err)
{
    for (int f = 0; f < g->n_folds; f++)
        if (!g->folds[f].at_load && g->folds[f].before == before) {
            int rc = copy_fold(g, r, &g->folds[f], err);
            if (rc != 0)
                return rc;
        }
    return 0;
}

int
gd_graph_replay_new(const struct gd_graph *g, const struct gd_shape *shapes,
                    struct gd_graph **out, int **source, struct gd_err *err)
{
    struct gd_graph *r = gd_graph_new(g->name, err);
    int *replay_input = malloc((size_t)(g->n_values + 1) * sizeof *replay_input);
    int *src = malloc((size_t)(g->n_values + 1) * sizeof *src);
    int rc = 0;
    if (r == NULL || replay_input == NULL || src == NULL) {
        rc = err && err->code ? err->code : gd_err_set(err, GD_ENOMEM, "out of memory");
        goto done;
    }
    memcpy(r->sha256, g->sha256, sizeof r->sha256);
    for (int v = 0; v < g->n_values; v++)
        replay_input[v] = -1;
    for (int i = 0; i < g->n_inputs && rc == 0; i++) {
        int v = g->inputs[i];
        struct gd_input_decl decl = {.dtype = g->values[v].dtype, .shape = shapes[v]};
        rc = gd_graph_add_input(r, g->values[v].name, &decl, err);
        src[r->n_inputs - 1] = v;
    }
    for (int v = 0; v < g->n_values && rc == 0; v++) {
        if (g->values[v].constant == NULL)
            continue;
        struct gd_tensor *t = gd_tensor_dup(g->values[v].constant, err);
        rc = t ? gd_graph_add_constant(r, g->values[v].name, t, err)
               : gd_err_set(err, GD_ENOMEM, "out of memory for weight %s", g->values[v].name);
    }
    /* The captured values nodes read: float outputs of earlier nodes. */
    for (int ni = 0; ni < g->n_nodes && rc == 0; ni++) {
        const struct gd_node *n = &g->nodes[ni];
        rc = copy_folds_before(g, r, ni, err);
        for (int i = 0; i < n->n_inputs && rc == 0; i++) {
            int v = n->inputs[i];
            if (v < 0 || g->values[v].producer < 0 || replay_input[v] >= 0 ||
                !gd_dtype_is_float(g->values[v].dtype))
                continue;
            char name[512];
            if (replay_name(g, r, v, name, sizeof name) != 0) {
                rc = gd_err_set(err, GD_EEXIST, "no free name for the replay input of %s",
                                g->values[v].name);
                break;
            }
            struct gd_input_decl decl = {.dtype = g->values[v].dtype, .shape = shapes[v]};
            rc = gd_graph_add_input(r, name, &decl, err);
            if (rc == 0) {
                replay_input[v] = r->n_inputs - 1;
                src[r->n_inputs - 1] = v;
            }
        }
        if (rc == 0)
            rc = copy_node(g, r, ni, replay_input, err);
    }
    if (rc == 0)
        rc = copy_folds_before(g, r, g->n_nodes, err);
    for (int i = 0; i < g->n_outputs && rc == 0; i++)
        rc = gd_graph_add_output(r, g->values[g->outputs[i]].name, err);
    if (rc == 0)
        rc = gd_graph_finalize(r, err);
done:
    free(replay_input);
    if (rc != 0) {
        gd_graph_free(r);
        free(src);
        return rc;
    }
    *out = r;
    *source = src;
    return 0;
}
