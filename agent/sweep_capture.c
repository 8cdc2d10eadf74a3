/*
 * sweep_capture.c: captured runs held in memory for `gpudiff-agent sweep`. A run's layers
 * arrive slice by slice (with a batch size) and are put together whole; the comparison reads
 * them through a struct gd_run_view whose tensors borrow that memory, so nothing is copied
 * or written to disk to compare (a bundle is written beside only when asked). A repeat of a
 * run is compared with the stored one bit for bit as it arrives, and not kept.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gpudiff/ops.h"
#include "sweep.h"

double
agt_sweep_now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

int
agt_memrun_new(const struct gd_graph *g, json_t *run, struct agt_memrun **out, struct gd_err *err)
{
    int n = 0;
    for (int i = 0; i < g->n_nodes; i++)
        n += g->nodes[i].n_outputs;
    struct agt_memrun *r = calloc(1, sizeof *r);
    size_t m = (size_t)(n > 0 ? n : 1);
    if (r != NULL) {
        r->layers = calloc(m, sizeof *r->layers);
        r->tensors = calloc(m, sizeof *r->tensors);
        r->algos = calloc(m, sizeof *r->algos);
        r->inputs = calloc(m, sizeof *r->inputs);
        r->seen = calloc(m, sizeof *r->seen);
    }
    if (r == NULL || r->layers == NULL || r->tensors == NULL || r->algos == NULL ||
        r->inputs == NULL || r->seen == NULL) {
        agt_memrun_free(r);
        return gd_err_set(err, GD_ENOMEM, "out of memory for a run of %d layers", n);
    }
    r->n_layers = n;
    r->run = json_incref(run);
    int li = 0;
    for (int ni = 0; ni < g->n_nodes; ni++) {
        const struct gd_node *node = &g->nodes[ni];
        json_t *ins = json_array();
        for (int i = 0; i < node->n_inputs; i++)
            if (node->inputs[i] >= 0 && g->values[node->inputs[i]].producer >= 0)
                json_array_append_new(ins, json_string(g->values[node->inputs[i]].name));
        for (int k = 0; k < node->n_outputs; k++, li++) {
            struct gd_bundle_layer *l = &r->layers[li];
            l->index = li;
            l->name = g->values[node->outputs[k]].name;
            l->op = gd_op_name(node->op);
            l->sha256 = "";
            l->file = "";
            l->time_us = 0;
            l->reduction_len = gd_node_reduction_len(g, ni);
            l->discontinuous = gd_op_info(node->op)->discontinuous;
            l->algo = "";
            r->inputs[li] = json_incref(ins);
            l->inputs = r->inputs[li];
        }
        json_decref(ins);
    }
    *out = r;
    return 0;
}

void
agt_memrun_reset(struct agt_memrun *r, json_t *run)
{
    json_decref(r->run);
    r->run = json_incref(run);
    for (int i = 0; i < r->n_layers; i++) {
        free(r->algos[i]);
        r->algos[i] = NULL;
        r->layers[i].algo = "";
        r->layers[i].time_us = 0;
        r->seen[i] = 0;
    }
}

void
agt_memrun_free(struct agt_memrun *r)
{
    if (r == NULL)
        return;
    for (int i = 0; i < r->n_layers; i++) {
        if (r->tensors != NULL)
            gd_tensor_free(r->tensors[i]);
        if (r->algos != NULL)
            free(r->algos[i]);
        if (r->inputs != NULL)
            json_decref(r->inputs[i]);
    }
    free(r->layers);
    free(r->tensors);
    free(r->algos);
    free(r->inputs);
    free(r->seen);
    json_decref(r->run);
    free(r);
}

static int
memrun_load(void *user, int index, struct gd_tensor **out, struct gd_err *err)
{
    const struct agt_memrun *r = user;
    if (index < 0 || index >= r->n_layers || r->tensors[index] == NULL)
        return gd_err_set(err, GD_EINVAL, "layer %d was not captured", index);
    const struct gd_tensor *t = r->tensors[index];
    /* A header around the run's own memory: the comparison frees the header only. */
    *out = gd_tensor_wrap(t->dtype, t->ndim, t->shape, t->data, err);
    return *out != NULL ? 0 : (err ? err->code : GD_ENOMEM);
}

void
agt_memrun_view(struct agt_memrun *r, struct gd_run_view *out)
{
    out->run = r->run;
    out->n_layers = r->n_layers;
    out->layers = r->layers;
    out->load = memrun_load;
    out->user = r;
}

/* The slice's place in the whole layer: bytes per row and the offset of its first row. */
static void
slice_place(const struct gd_layer *layer, size_t *offset, size_t *bytes)
{
    const struct gd_tensor *t = layer->value;
    *bytes = gd_tensor_nbytes(t);
    size_t row = t->ndim > 0 && t->shape[0] > 0 ? *bytes / (size_t)t->shape[0] : 0;
    *offset = (size_t)layer->batch_offset * row;
}

/* Adds algo to the layer's record when it is new (slices of another size may differ). */
static int
note_algo(struct agt_memrun *r, int i, const char *algo, struct gd_err *err)
{
    if (algo == NULL || algo[0] == '\0')
        return 0;
    char *have = r->algos[i];
    if (have != NULL && strstr(have, algo) != NULL)
        return 0;
    size_t len = (have ? strlen(have) + 3 : 0) + strlen(algo) + 1;
    char *s = malloc(len);
    if (s == NULL)
        return gd_err_set(err, GD_ENOMEM, "out of memory");
    snprintf(s, len, "%s%s%s", have ? have : "", have ? " | " : "", algo);
    free(have);
    r->algos[i] = s;
    r->layers[i].algo = s;
    return 0;
}

static int
store(struct agt_capture *c, const struct gd_layer *layer, struct gd_err *err)
{
    struct agt_memrun *r = c->store;
    const struct gd_tensor *t = layer->value;
    int i = layer->index;
    if (i < 0 || i >= r->n_layers)
        return gd_err_set(err, GD_EINVAL, "layer index %d outside the graph's %d", i, r->n_layers);
    struct gd_tensor *whole = r->tensors[i];
    if (layer->batch_offset == 0) {
        int64_t shape[GD_MAX_DIMS];
        memcpy(shape, t->shape, sizeof shape);
        if (t->ndim > 0)
            shape[0] = layer->batch_total;
        /* memory of an earlier run of the same shapes is reused: fresh pages would cost a
         * fault each on first touch */
        if (whole == NULL || whole->dtype != t->dtype || whole->ndim != t->ndim ||
            memcmp(whole->shape, shape, (size_t)t->ndim * sizeof shape[0]) != 0) {
            gd_tensor_free(whole);
            r->tensors[i] = whole = gd_tensor_new(t->dtype, t->ndim, shape, err);
            if (whole == NULL)
                return err ? err->code : GD_ENOMEM;
        }
        r->layers[i].dtype = t->dtype;
        r->layers[i].shape.ndim = t->ndim;
        memcpy(r->layers[i].shape.dim, shape, sizeof r->layers[i].shape.dim);
        r->layers[i].time_us = 0;
    } else if (whole == NULL || whole->dtype != t->dtype) {
        return gd_err_set(err, GD_EINVAL, "layer %s: a slice at row %lld before its first",
                          layer->name, (long long)layer->batch_offset);
    }
    size_t off, bytes;
    slice_place(layer, &off, &bytes);
    if (off + bytes > gd_tensor_nbytes(whole))
        return gd_err_set(err, GD_EINVAL, "layer %s: rows beyond its whole shape", layer->name);
    double t0 = agt_sweep_now_us();
    agt_sweep_copy((char *)whole->data + off, t->data, bytes);
    c->store_us += agt_sweep_now_us() - t0;
    c->store_bytes += (double)bytes;
    r->layers[i].time_us += layer->time_us > 0 ? layer->time_us : 0;
    r->seen[i]++;
    return note_algo(r, i, layer->algo, err);
}

static void
check(struct agt_capture *c, const struct gd_layer *layer)
{
    const struct agt_memrun *r = c->check;
    int i = layer->index;
    if (i < 0 || i >= r->n_layers)
        return;
    const struct gd_tensor *ref = r->tensors[i], *t = layer->value;
    size_t off, bytes;
    slice_place(layer, &off, &bytes);
    double t0 = agt_sweep_now_us();
    if (ref == NULL || ref->dtype != t->dtype || off + bytes > gd_tensor_nbytes(ref) ||
        agt_sweep_differ((const char *)ref->data + off, t->data, bytes))
        c->bytes_differ[i] = 1;
    c->check_us += agt_sweep_now_us() - t0;
    c->check_bytes += (double)bytes;
    const char *algo = layer->algo ? layer->algo : "";
    const char *had = r->layers[i].algo ? r->layers[i].algo : "";
    if (strstr(had, algo) == NULL) {
        c->algo_differs[i] = 1;
        snprintf(c->algo_seen[i], sizeof c->algo_seen[i], "%s", algo);
    }
}

int
agt_capture_layer(void *user, const struct gd_layer *layer, struct gd_err *err)
{
    struct agt_capture *c = user;
    double t0 = agt_sweep_now_us();
    int rc = 0;
    if (c->store != NULL)
        rc = store(c, layer, err);
    if (rc == 0 && c->writer != NULL)
        rc = gd_bundle_writer_layer(c->writer, c->g, layer, err);
    if (rc == 0 && c->check != NULL)
        check(c, layer);
    c->callback_us += agt_sweep_now_us() - t0;
    return rc;
}
