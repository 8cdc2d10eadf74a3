/*
 * graph_weights.c: gd_graph_release_weights(), for a process that made its one session:
 * the backend holds its own copy of every weight, so the graph's host copies of the large
 * float ones can go (a run's host memory then stops growing with the model once the
 * weights are on the device).
 */
#include <stdlib.h>

#include "internal.h"

int64_t
gd_graph_release_weights(struct gd_graph *g, size_t min_bytes)
{
    int64_t released = 0;
    for (int v = 0; v < g->n_values; v++) {
        struct gd_tensor *t = g->values[v].constant;
        if (t == NULL || t->data == NULL || !gd_dtype_is_float(t->dtype) ||
            gd_tensor_nbytes(t) < min_bytes || g->values[v].fold >= 0)
            continue;
        int read_by_fold = 0;
        for (int f = 0; f < g->n_folds && !read_by_fold; f++)
            for (int i = 0; i < g->folds[f].n_inputs; i++)
                read_by_fold |= g->folds[f].inputs[i] == v;
        if (read_by_fold)
            continue;
        released += (int64_t)gd_tensor_nbytes(t);
        if (t->owns_data)
            free(t->data);
        t->data = NULL;
        t->owns_data = 0;
    }
    return released;
}
