/*
 * noise_probe.c: the noise probes' collector (gpudiff/noise.h). As a run's layers are
 * captured, it keeps a few rows of every value a reducing node reads, within a memory
 * budget; once a node's inputs are complete it has that node probed (noise_node.c) and lets
 * go of the rows nothing else reads. Rows are taken spread over the batch (a van der Corput
 * sequence), the same rows for every value of one length, so the rows of a node's inputs
 * belong together.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpudiff/noise.h"
#include "../core/internal.h"
#include "diff_internal.h"
#include "noise_internal.h"

void
gd_noise_opts_init(struct gd_noise_opts *o)
{
    o->outputs = 4096;
    o->max_terms = (int64_t)1 << 24;
    o->max_bytes = (int64_t)256 << 20;
    o->threads = 1;
}

/* ---- which rows ---- */

/* The first k distinct rows of [0, n) in van der Corput order (0, n/2, n/4, 3n/4, ...). */
int64_t
gd__rows_pick(int64_t n, int64_t k, int64_t *out)
{
    int64_t got = 0;
    unsigned char *seen = calloc((size_t)n, 1);
    if (seen == NULL)
        return -1;
    for (uint64_t i = 0; got < k && i < ((uint64_t)1 << 40); i++) {
        /* the bits of i mirrored: a fraction in [0, 1) */
        double f = 0, w = 0.5;
        for (uint64_t b = i; b != 0; b >>= 1, w *= 0.5)
            if (b & 1u)
                f += w;
        int64_t r = (int64_t)(f * (double)n);
        if (r >= n)
            r = n - 1;
        if (!seen[r]) {
            seen[r] = 1;
            out[got++] = r;
        }
        if (i > (uint64_t)4 * (uint64_t)n + 64 && got < k) { /* the rest in order */
            for (int64_t q = 0; q < n && got < k; q++)
                if (!seen[q]) {
                    seen[q] = 1;
                    out[got++] = q;
                }
        }
    }
    free(seen);
    return got;
}

void
gd__noise_skip(struct gd_noise_collector *c, int node, const char *why)
{
    if (c->n_skipped++ == 0)
        snprintf(c->first_skip, sizeof c->first_skip, "%.80s: %.100s", c->g->nodes[node].name, why);
}

struct gd_noise_probe *
gd__noise_probe_slot(struct gd_noise_collector *c, const char *name)
{
    if (c->n_outs == c->cap_outs) {
        int cap = c->cap_outs ? 2 * c->cap_outs : 16;
        struct probe_out *p = realloc(c->outs, (size_t)cap * sizeof *p);
        if (p == NULL)
            return NULL;
        c->outs = p;
        c->cap_outs = cap;
    }
    struct probe_out *o = &c->outs[c->n_outs];
    memset(o, 0, sizeof *o);
    if ((o->name = gd__strdup(name)) == NULL)
        return NULL;
    c->n_outs++;
    return &o->p;
}

/* A node worth probing: it sums terms, makes a float output, and reads only values the
 * collector can have (weights still held, layers, graph inputs). why says what is missing. */
static int
probe_worthy(const struct gd_graph *g, int ni, const char **why)
{
    const struct gd_node *n = &g->nodes[ni];
    const struct gd_op_info *info = gd_op_info(n->op);
    *why = NULL;
    if (info == NULL || info->reduction == GD_RED_NONE || n->n_outputs < 1 ||
        !gd_dtype_is_float(g->values[n->outputs[0]].dtype))
        return 0;
    for (int i = 0; i < n->n_inputs; i++) {
        int v = n->inputs[i];
        if (v < 0)
            continue;
        const struct gd_value *val = &g->values[v];
        if (val->constant != NULL) {
            if (val->constant->data == NULL) {
                *why = "its weights were released";
                return 0;
            }
        } else if (val->producer < 0 && !val->is_input) {
            *why = "an input is computed by a shape fold";
            return 0;
        }
    }
    return 1;
}

int
gd_noise_collector_new(const struct gd_graph *g, const struct gd_tensor *const *inputs,
                       const struct gd_noise_opts *opts, struct gd_noise_collector **out,
                       struct gd_err *err)
{
    struct gd_noise_collector *c = calloc(1, sizeof *c);
    if (c == NULL)
        return gd_err_set(err, GD_ENOMEM, "out of memory");
    c->g = g;
    c->inputs = inputs;
    if (opts != NULL)
        c->opts = *opts;
    else
        gd_noise_opts_init(&c->opts);
    c->vals = calloc((size_t)g->n_values + 1, sizeof *c->vals);
    c->waiting = calloc((size_t)g->n_nodes + 1, sizeof *c->waiting);
    if (c->vals == NULL || c->waiting == NULL) {
        gd_noise_collector_free(c);
        return gd_err_set(err, GD_ENOMEM, "out of memory");
    }
    for (int ni = 0; ni < g->n_nodes; ni++) {
        const struct gd_node *n = &g->nodes[ni];
        const char *why;
        c->waiting[ni] = -1;
        if (!probe_worthy(g, ni, &why)) {
            if (why != NULL)
                gd__noise_skip(c, ni, why);
            continue;
        }
        c->waiting[ni] = 0;
        for (int i = 0; i < n->n_inputs; i++) {
            int v = n->inputs[i], dup = 0;
            if (v < 0 || g->values[v].constant != NULL)
                continue;
            for (int q = 0; q < i; q++)
                dup |= n->inputs[q] == v;
            if (dup)
                continue;
            c->vals[v].consumers++;
            c->vals[v].whole |= n->params.mixes_batch;
            if (!g->values[v].is_input)
                c->waiting[ni]++;
        }
    }
    *out = c;
    return 0;
}

/* Decides how many rows of value v (whole shape ndim, shape) to keep, and allocates them;
 * state -1 when it cannot be kept. */
static int
kept_begin(struct gd_noise_collector *c, int v, enum gd_dtype dtype, int ndim, const int64_t *shape,
           struct gd_err *err)
{
    struct kept *k = &c->vals[v];
    k->ndim = ndim;
    memcpy(k->shape, shape, (size_t)ndim * sizeof *shape);
    k->n_rows = ndim > 0 ? shape[0] : 1;
    k->per_row = 1;
    for (int d = 1; d < ndim; d++)
        k->per_row *= shape[d];
    size_t row_bytes = (size_t)k->per_row * gd_dtype_size(dtype);
    int64_t want =
        k->whole ? k->n_rows : (c->opts.outputs + k->per_row - 1) / (k->per_row ? k->per_row : 1);
    if (!k->whole && want > ROWS_MAX)
        want = ROWS_MAX;
    if (want > k->n_rows)
        want = k->n_rows;
    if (want < 1)
        want = 1;
    /* no more than half the budget for one value, and the budget in all */
    while (want > 1 && !k->whole &&
           (double)want * (double)row_bytes > 0.5 * (double)c->opts.max_bytes)
        want /= 2;
    double need = (double)want * (double)row_bytes;
    if (k->n_rows == 0 || need > 0.5 * (double)c->opts.max_bytes ||
        (double)c->bytes + need > (double)c->opts.max_bytes) {
        k->state = -1;
        return 0;
    }
    k->k = want;
    k->rows = malloc((size_t)want * sizeof *k->rows);
    if (k->rows == NULL)
        return gd_err_set(err, GD_ENOMEM, "out of memory");
    if (k->whole) {
        for (int64_t r = 0; r < want; r++)
            k->rows[r] = r;
    } else if (gd__rows_pick(k->n_rows, want, k->rows) != want) {
        return gd_err_set(err, GD_ENOMEM, "out of memory");
    }
    int64_t dshape[GD_MAX_DIMS];
    memcpy(dshape, shape, (size_t)ndim * sizeof *shape);
    if (ndim > 0)
        dshape[0] = want;
    k->data = gd_tensor_new(dtype, ndim, dshape, err);
    if (k->data == NULL)
        return err && err->code ? err->code : GD_ENOMEM;
    c->bytes += (int64_t)need;
    k->state = 1;
    return 0;
}

/*
 * Copies what a chunk holds of value v's kept rows: the chunk covers elements [from, from +
 * count) of the rows [row0, row0 + rows) of the whole layer (a slice with --batch), C order.
 */
static void
kept_fill(struct kept *k, const void *src, int64_t row0, int64_t from, int64_t count)
{
    size_t es = gd_dtype_size(k->data->dtype);
    for (int64_t j = 0; j < k->k; j++) {
        int64_t r = k->rows[j] - row0; /* the row inside this slice */
        if (r < 0)
            continue;
        int64_t lo = r * k->per_row, hi = lo + k->per_row;
        int64_t a = lo > from ? lo : from, b = hi < from + count ? hi : from + count;
        if (a >= b)
            continue;
        memcpy((char *)k->data->data + ((size_t)(j * k->per_row + (a - lo))) * es,
               (const char *)src + (size_t)(a - from) * es, (size_t)(b - a) * es);
        k->filled += b - a;
    }
}

static void
kept_free(struct gd_noise_collector *c, struct kept *k)
{
    if (k->data != NULL)
        c->bytes -= (int64_t)gd_tensor_nbytes(k->data);
    gd_tensor_free(k->data);
    free(k->rows);
    k->data = NULL;
    k->rows = NULL;
    k->state = -1;
}

/* Graph input v's kept rows, taken from the run's input tensor on first use. */
static int
input_kept(struct gd_noise_collector *c, int v, struct gd_err *err)
{
    struct kept *k = &c->vals[v];
    if (k->state != 0)
        return 0;
    const struct gd_tensor *t = NULL;
    for (int i = 0; i < c->g->n_inputs; i++)
        if (c->g->inputs[i] == v)
            t = c->inputs != NULL ? c->inputs[i] : NULL;
    if (t == NULL || t->data == NULL || t->device) {
        k->state = -1;
        return 0;
    }
    int rc = kept_begin(c, v, t->dtype, t->ndim, t->shape, err);
    if (rc != 0 || k->state != 1)
        return rc;
    kept_fill(k, t->data, 0, 0, gd_tensor_numel(t));
    k->state = 2;
    return 0;
}

/* Node ni's inputs are complete: probe it, then let go of what no other probe reads. */
static int
node_ready(struct gd_noise_collector *c, int ni, struct gd_err *err)
{
    const struct gd_node *n = &c->g->nodes[ni];
    int ok = 1, rc = 0;
    for (int i = 0; i < n->n_inputs && rc == 0; i++) {
        int v = n->inputs[i];
        if (v < 0 || c->g->values[v].constant != NULL)
            continue;
        if (c->g->values[v].is_input)
            rc = input_kept(c, v, err);
        ok &= c->vals[v].state == 2;
    }
    if (rc == 0) {
        if (ok) {
            double t0 = gd__now_us();
            rc = gd__noise_probe_node(c, ni, err);
            c->seconds += (gd__now_us() - t0) * 1e-6;
        } else {
            gd__noise_skip(c, ni, "an input was not captured or did not fit the memory budget");
        }
    }
    c->waiting[ni] = -1;
    for (int i = 0; i < n->n_inputs; i++) {
        int v = n->inputs[i], dup = 0;
        if (v < 0 || c->g->values[v].constant != NULL)
            continue;
        for (int q = 0; q < i; q++)
            dup |= n->inputs[q] == v;
        if (!dup && --c->vals[v].consumers == 0)
            kept_free(c, &c->vals[v]);
    }
    return rc;
}

int
gd_noise_collector_layer(struct gd_noise_collector *c, const struct gd_layer *layer,
                         struct gd_err *err)
{
    const struct gd_graph *g = c->g;
    int rc = 0;
    if (!c->started) {
        /* the nodes that read only graph inputs and weights: ready from the start */
        c->started = 1;
        for (int ni = 0; ni < g->n_nodes && rc == 0; ni++)
            if (c->waiting[ni] == 0)
                rc = node_ready(c, ni, err);
        if (rc != 0)
            return rc;
    }
    if (layer->node_index < 0 || layer->node_index >= g->n_nodes)
        return 0;
    const struct gd_node *node = &g->nodes[layer->node_index];
    if (layer->output_slot < 0 || layer->output_slot >= node->n_outputs)
        return 0;
    int v = node->outputs[layer->output_slot];
    struct kept *k = &c->vals[v];
    if (k->consumers == 0 || k->state == 2 || k->state == -1)
        return 0;
    const struct gd_tensor *t = layer->value;
    if (t->data == NULL || t->device) {
        kept_free(c, k);
    } else {
        /* the whole layer's shape: the slice's (or the piece's layer) with dim 0 the total */
        int ndim = layer->piece_ndim > 0 ? layer->piece_ndim : t->ndim;
        int64_t shape[GD_MAX_DIMS];
        memcpy(shape, layer->piece_ndim > 0 ? layer->piece_shape : t->shape,
               (size_t)ndim * sizeof *shape);
        if (ndim > 0)
            shape[0] = layer->batch_total > 0 ? layer->batch_total : shape[0];
        if (k->state == 0)
            rc = kept_begin(c, v, t->dtype, ndim, shape, err);
        if (rc == 0 && k->state == 1) {
            kept_fill(k, t->data, layer->batch_offset,
                      layer->piece_ndim > 0 ? layer->piece_offset : 0, gd_tensor_numel(t));
            if (k->filled >= k->k * k->per_row)
                k->state = 2;
        }
    }
    if (rc != 0 || (k->state != 2 && k->state != -1))
        return rc;
    /* The value is done (complete or lost): the nodes waiting for it may be ready. */
    for (int ni = layer->node_index + 1; ni < g->n_nodes && rc == 0; ni++) {
        if (c->waiting[ni] <= 0)
            continue;
        const struct gd_node *n = &g->nodes[ni];
        int reads = 0;
        for (int i = 0; i < n->n_inputs; i++)
            reads |= n->inputs[i] == v;
        if (reads && --c->waiting[ni] == 0)
            rc = node_ready(c, ni, err);
    }
    return rc;
}

const struct gd_noise_probe *
gd_noise_collector_get(const struct gd_noise_collector *c, const char *name)
{
    for (int i = 0; c != NULL && i < c->n_outs; i++)
        if (strcmp(c->outs[i].name, name) == 0)
            return &c->outs[i].p;
    return NULL;
}

int
gd_noise_collector_count(const struct gd_noise_collector *c)
{
    return c ? c->n_probed : 0;
}

int
gd_noise_collector_skipped(const struct gd_noise_collector *c, const char **first_reason)
{
    if (first_reason != NULL)
        *first_reason = c && c->n_skipped ? c->first_skip : NULL;
    return c ? c->n_skipped : 0;
}

double
gd_noise_collector_seconds(const struct gd_noise_collector *c)
{
    return c ? c->seconds : 0;
}

void
gd_noise_collector_free(struct gd_noise_collector *c)
{
    if (c == NULL)
        return;
    for (int v = 0; c->vals != NULL && v < c->g->n_values; v++) {
        gd_tensor_free(c->vals[v].data);
        free(c->vals[v].rows);
    }
    for (int i = 0; i < c->n_outs; i++)
        free(c->outs[i].name);
    free(c->outs);
    free(c->vals);
    free(c->waiting);
    free(c);
}
