/*
 * noise_probe.c: noise probes (gpudiff/noise.h). As a run's layers are captured, the
 * collector keeps a few rows of every value a reducing node reads; once a node's inputs are
 * complete it builds a graph of that node alone, on those rows (and, where that is still
 * more work than the budget, on a few rows of a matrix product's first operand, a few
 * output columns or channels, one group of a grouped convolution), runs it on the cpu64
 * backend (the reference) and on cpu in float32 and, for matrix products and convolutions,
 * with cpu's TF32, BF16 and FP16 emulation, and records each one's error against the
 * reference. Rows are taken spread over the batch (a van der Corput sequence), the same rows
 * for every value of one length, so the rows of a node's inputs belong together.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpudiff/noise.h"
#include "../core/internal.h"
#include "diff_internal.h"

#define ROWS_MAX 64 /* most rows kept of one value */

void
gd_noise_opts_init(struct gd_noise_opts *o)
{
    o->outputs = 4096;
    o->max_terms = (int64_t)1 << 24;
    o->max_bytes = (int64_t)256 << 20;
    o->threads = 1;
}

/* What the collector keeps of one value. */
struct kept {
    int consumers;          /* probed nodes reading it that are not done */
    int whole;              /* a node that mixes rows reads it: keep every row */
    int state;              /* 0 not seen yet, 1 filling, 2 complete, -1 not kept */
    int64_t n_rows;         /* the layer's dim 0 (1 for a scalar) */
    int64_t per_row;        /* elements per row */
    int ndim;
    int64_t shape[GD_MAX_DIMS]; /* the whole layer's */
    int64_t k;              /* rows kept */
    int64_t *rows;          /* which, in the order kept */
    struct gd_tensor *data; /* (k, shape[1], ...) */
    int64_t filled;         /* elements written so far */
};

struct probe_out {
    char *name;
    struct gd_noise_probe p;
};

struct gd_noise_collector {
    const struct gd_graph *g;
    const struct gd_tensor *const *inputs;
    struct gd_noise_opts opts;
    struct kept *vals;      /* per value */
    int *waiting;           /* per node: runtime inputs not complete; -1 not probed */
    struct probe_out *outs;
    int n_outs, cap_outs;
    int started;            /* the nodes reading only graph inputs were probed */
    int n_probed, n_skipped;
    char first_skip[192];
    double seconds;
    int64_t bytes;          /* held in kept rows */
};

/* ---- which rows ---- */

/* The first k distinct rows of [0, n) in van der Corput order (0, n/2, n/4, 3n/4, ...). */
static int64_t
rows_pick(int64_t n, int64_t k, int64_t *out)
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

static void
skip(struct gd_noise_collector *c, int node, const char *why)
{
    if (c->n_skipped++ == 0)
        snprintf(c->first_skip, sizeof c->first_skip, "%.80s: %.100s", c->g->nodes[node].name,
                 why);
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
                skip(c, ni, why);
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
kept_begin(struct gd_noise_collector *c, int v, enum gd_dtype dtype, int ndim,
           const int64_t *shape, struct gd_err *err)
{
    struct kept *k = &c->vals[v];
    k->ndim = ndim;
    memcpy(k->shape, shape, (size_t)ndim * sizeof *shape);
    k->n_rows = ndim > 0 ? shape[0] : 1;
    k->per_row = 1;
    for (int d = 1; d < ndim; d++)
        k->per_row *= shape[d];
    size_t row_bytes = (size_t)k->per_row * gd_dtype_size(dtype);
    int64_t want = k->whole ? k->n_rows
                            : (c->opts.outputs + k->per_row - 1) / (k->per_row ? k->per_row : 1);
    if (!k->whole && want > ROWS_MAX)
        want = ROWS_MAX;
    if (want > k->n_rows)
        want = k->n_rows;
    if (want < 1)
        want = 1;
    /* no more than a quarter of the budget for one value, and the budget in all */
    while (want > 1 && !k->whole && (double)want * (double)row_bytes > 0.25 * (double)c->opts.max_bytes)
        want /= 2;
    double need = (double)want * (double)row_bytes;
    if (k->n_rows == 0 || need > 0.25 * (double)c->opts.max_bytes ||
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
    } else if (rows_pick(k->n_rows, want, k->rows) != want) {
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

/* ---- one node, alone ---- */

/* How a node's probe is cut to its budget. */
struct cut {
    int64_t rows;           /* rows of the sliced inputs */
    int64_t m;              /* MatMul: rows of A's second-to-last axis kept (0: all) */
    int64_t cols;           /* Gemm: output columns kept; Conv, ConvTranspose: channels (0: all) */
    int one_group;          /* Conv, ConvTranspose: group 0 only, as a group-1 node */
};

/* A tensor of t's elements at idx[0 .. n) along axis (the others whole); new. */
static struct gd_tensor *
gather_axis(const struct gd_tensor *t, int axis, const int64_t *idx, int64_t n, struct gd_err *err)
{
    int64_t shape[GD_MAX_DIMS];
    memcpy(shape, t->shape, sizeof shape);
    shape[axis] = n;
    struct gd_tensor *o = gd_tensor_new(t->dtype, t->ndim, shape, err);
    if (o == NULL)
        return NULL;
    int64_t outer = 1, inner = 1;
    for (int d = 0; d < axis; d++)
        outer *= t->shape[d];
    for (int d = axis + 1; d < t->ndim; d++)
        inner *= t->shape[d];
    size_t es = gd_dtype_size(t->dtype), run = (size_t)inner * es;
    for (int64_t q = 0; q < outer; q++)
        for (int64_t j = 0; j < n; j++)
            memcpy((char *)o->data + ((size_t)(q * n + j)) * run,
                   (const char *)t->data + ((size_t)(q * t->shape[axis] + idx[j])) * run, run);
    return o;
}

/* The first n along axis of t. */
static struct gd_tensor *
prefix_axis(const struct gd_tensor *t, int axis, int64_t n, struct gd_err *err)
{
    int64_t *idx = malloc((size_t)(n > 0 ? n : 1) * sizeof *idx);
    if (idx == NULL) {
        gd_err_set(err, GD_ENOMEM, "out of memory");
        return NULL;
    }
    for (int64_t j = 0; j < n; j++)
        idx[j] = j;
    struct gd_tensor *o = gather_axis(t, axis, idx, n, err);
    free(idx);
    return o;
}

/* count of t's `total` first entries along axis, spread over them (van der Corput), new:
 * the same picks for every tensor cut this way (a weight and its bias). */
static struct gd_tensor *
spread_axis(const struct gd_tensor *t, int axis, int64_t total, int64_t count, struct gd_err *err)
{
    int64_t *idx = malloc((size_t)(count > 0 ? count : 1) * sizeof *idx);
    struct gd_tensor *o = NULL;
    if (idx == NULL || rows_pick(total, count, idx) != count)
        gd_err_set(err, GD_ENOMEM, "out of memory");
    else
        o = gather_axis(t, axis, idx, count, err);
    free(idx);
    return o;
}

/* Whether input slot i of node n is cut by rows (its dim 0 is the output's rows). */
static int
slot_takes_rows(const struct gd_graph *g, const struct gd_node *n, int i, const struct kept *k)
{
    int out_ndim = g->values[n->outputs[0]].shape.ndim;
    if (n->params.mixes_batch || k->ndim == 0 || k->n_rows <= 1)
        return 0;
    switch (n->op) {
    case GD_OP_GEMM: /* A's rows, and a bias of one row per row of A */
        return i == 0 || (i == 2 && k->ndim == 2);
    case GD_OP_MATMUL: /* A's leading axis, B's only when it is a batch axis too */
        return i == 0 ? k->ndim == out_ndim : k->ndim >= 3 && k->ndim == out_ndim;
    case GD_OP_CONV:
    case GD_OP_CONV_TRANSPOSE:
        return i == 0;
    default: /* aligned with the output: the same rank (a broadcast one has dim 0 of 1) */
        return k->ndim == out_ndim;
    }
}

struct built {
    struct gd_graph *g1;
    int n_in;
    struct gd_tensor *in[GD__MAX_OP_INPUTS]; /* the graph inputs, in order; owned */
};

static void
built_fini(struct built *b)
{
    gd_graph_free(b->g1);
    for (int i = 0; i < b->n_in; i++)
        gd_tensor_free(b->in[i]);
    memset(b, 0, sizeof *b);
}

/* The rows (of the layer) the node's row-taking inputs are cut to: those a value kept in
 * van der Corput order has first, else (every such value kept whole) the first rows. */
static const int64_t *
node_rows(const struct gd_noise_collector *c, const struct gd_node *n)
{
    for (int i = 0; i < n->n_inputs; i++) {
        int v = n->inputs[i];
        if (v >= 0 && c->g->values[v].constant == NULL && !c->vals[v].whole &&
            slot_takes_rows(c->g, n, i, &c->vals[v]))
            return c->vals[v].rows;
    }
    return NULL;
}

/* The value of slot i cut as `cut` says (a new tensor), or NULL with err. */
static struct gd_tensor *
cut_value(struct gd_noise_collector *c, const struct gd_node *n, int i, const struct cut *cut,
          struct gd_err *err)
{
    const struct gd_graph *g = c->g;
    int v = n->inputs[i];
    const struct gd_value *val = &g->values[v];
    struct gd_tensor *t = NULL;
    if (val->constant != NULL) {
        /* borrowed: the cut takes what it needs, and a weight taken whole is not copied */
        const struct gd_tensor *w = val->constant;
        t = gd_tensor_wrap(w->dtype, w->ndim, w->shape, w->data, err);
    } else {
        const struct kept *k = &c->vals[v];
        const int64_t *rows = node_rows(c, n);
        if (slot_takes_rows(g, n, i, k))
            t = k->whole && rows != NULL ? gather_axis(k->data, 0, rows, cut->rows, err)
                                         : prefix_axis(k->data, 0, cut->rows, err);
        else if (k->k == k->n_rows) /* every row kept: the whole value */
            t = gd_tensor_dup(k->data, err);
        else
            gd_err_set(err, GD_EINVAL, "input %s is not kept whole", val->name);
    }
    if (t == NULL)
        return NULL;
    struct gd_tensor *o = NULL;
    int64_t g_n = n->params.group > 1 ? n->params.group : 1;
    if (n->op == GD_OP_MATMUL && i == 0 && cut->m > 0 && t->ndim >= 2) {
        int64_t m_all = t->shape[t->ndim - 2];
        int64_t *idx = malloc((size_t)cut->m * sizeof *idx);
        if (idx == NULL || rows_pick(m_all, cut->m, idx) != cut->m)
            gd_err_set(err, GD_ENOMEM, "out of memory");
        else
            o = gather_axis(t, t->ndim - 2, idx, cut->m, err);
        free(idx);
    } else if (n->op == GD_OP_GEMM && cut->cols > 0 && (i == 1 || (i == 2 && t->ndim >= 1))) {
        int axis = i == 1 ? (n->params.trans_b ? 0 : 1) : t->ndim - 1;
        if (t->shape[axis] <= 1) /* a bias broadcast along the columns */
            return t;
        o = spread_axis(t, axis, t->shape[axis], cut->cols, err);
    } else if ((n->op == GD_OP_CONV || n->op == GD_OP_CONV_TRANSPOSE) &&
               (cut->one_group || cut->cols > 0) && t->ndim >= 1) {
        int convt = n->op == GD_OP_CONV_TRANSPOSE;
        if (i == 0 && cut->one_group) {        /* X: the first group's channels */
            o = prefix_axis(t, 1, t->shape[1] / g_n, err);
        } else if (i == 1) {                   /* W */
            struct gd_tensor *w = t;
            if (cut->one_group) {
                w = prefix_axis(t, 0, t->shape[0] / g_n, err);
                gd_tensor_free(t);
                t = w;
                if (w == NULL)
                    return NULL;
            }
            if (cut->cols > 0)
                o = spread_axis(w, convt ? 1 : 0, w->shape[convt ? 1 : 0], cut->cols, err);
            else
                return w;
        } else if (i == 2) {                   /* B: the same channels */
            int64_t per = cut->one_group ? t->shape[0] / g_n : t->shape[0];
            o = cut->cols > 0 ? spread_axis(t, 0, per, cut->cols, err)
                              : prefix_axis(t, 0, per, err);
        } else {
            return t;
        }
    } else {
        return t;
    }
    gd_tensor_free(t);
    return o;
}

/* The node alone, on its cut inputs: a finalized graph and its inputs. With wide, its
 * float layer inputs are declared float64 (a perturbation far below a half format's
 * precision then survives into a cpu64 run). */
static int
build(struct gd_noise_collector *c, int ni, const struct cut *cut, int wide, struct built *b,
      struct gd_err *err)
{
    const struct gd_graph *g = c->g;
    const struct gd_node *n = &g->nodes[ni];
    memset(b, 0, sizeof *b);
    int rc = 0, n_attrs = 0;
    const char *ins[GD__MAX_OP_INPUTS] = {0}, *outs[GD__MAX_OP_OUTPUTS] = {0};
    struct gd_attr *attrs = calloc((size_t)n->n_attrs + 1, sizeof *attrs);
    b->g1 = gd_graph_new("noise-probe", err);
    if (b->g1 == NULL || attrs == NULL || n->n_inputs > GD__MAX_OP_INPUTS ||
        n->n_outputs > GD__MAX_OP_OUTPUTS) {
        rc = gd_err_set(err, GD_ENOMEM, "out of memory");
        goto done;
    }
    for (int i = 0; i < n->n_inputs && rc == 0; i++) {
        int v = n->inputs[i];
        if (v < 0)
            continue;
        ins[i] = g->values[v].name;
        if (gd_graph_find_value(b->g1, ins[i]) >= 0)
            continue; /* the same value read twice */
        struct gd_tensor *t = cut_value(c, n, i, cut, err);
        if (t == NULL) {
            rc = err && err->code ? err->code : GD_ENOMEM;
            break;
        }
        if (g->values[v].constant != NULL) {
            rc = gd_graph_add_constant(b->g1, ins[i], t, err);
        } else {
            struct gd_input_decl decl = {.dtype = g->values[v].dtype};
            if (wide && gd_dtype_is_float(decl.dtype)) {
                struct gd_tensor *t64 = gd_tensor_cast(t, GD_F64, err);
                gd_tensor_free(t);
                if ((t = t64) == NULL) {
                    rc = err && err->code ? err->code : GD_ENOMEM;
                    break;
                }
                decl.dtype = GD_F64;
            }
            decl.shape.ndim = t->ndim;
            memcpy(decl.shape.dim, t->shape, sizeof t->shape);
            rc = gd_graph_add_input(b->g1, ins[i], &decl, err);
            if (rc == 0)
                b->in[b->n_in++] = t;
            else
                gd_tensor_free(t);
        }
    }
    for (; rc == 0 && n_attrs < n->n_attrs; n_attrs++) {
        if (gd__attr_copy(&n->attrs[n_attrs], &attrs[n_attrs]) != 0) {
            rc = gd_err_set(err, GD_ENOMEM, "out of memory");
            break;
        }
        if (cut->one_group && strcmp(attrs[n_attrs].name, "group") == 0)
            attrs[n_attrs].i = 1;
    }
    for (int k = 0; k < n->n_outputs; k++)
        outs[k] = g->values[n->outputs[k]].name;
    if (rc == 0) {
        rc = gd_graph_add_node(b->g1, n->name, gd_op_name(n->op), n->n_inputs, ins, n->n_outputs,
                               outs, n->n_attrs, attrs, err);
        n_attrs = 0; /* taken over by the graph, also on failure */
    }
    for (int k = 0; k < n->n_outputs && rc == 0; k++)
        if (gd_dtype_is_float(g->values[n->outputs[k]].dtype))
            rc = gd_graph_add_output(b->g1, outs[k], err);
    if (rc == 0)
        rc = gd_graph_finalize(b->g1, err);
done:
    for (int k = 0; k < n_attrs; k++)
        gd_attr_fini(&attrs[k]);
    free(attrs);
    if (rc != 0)
        built_fini(b);
    return rc;
}

/* Products (or terms) the cut node computes per arithmetic. */
static double
terms_of(const struct built *b)
{
    const struct gd_node *n = &b->g1->nodes[0];
    double out = (double)gd__shape_numel(&b->g1->values[n->outputs[0]].shape);
    return out * (double)gd_node_reduction_len(b->g1, 0);
}

struct run_outs {
    int n;
    struct gd_tensor *t[GD__MAX_OP_OUTPUTS];
};

static int
keep_output(void *user, const struct gd_layer *layer, struct gd_err *err)
{
    struct run_outs *o = user;
    if (layer->output_slot < 0 || layer->output_slot >= GD__MAX_OP_OUTPUTS ||
        layer->value->data == NULL)
        return 0;
    gd_tensor_free(o->t[layer->output_slot]);
    o->t[layer->output_slot] = gd_tensor_dup(layer->value, err);
    if (o->t[layer->output_slot] == NULL)
        return err && err->code ? err->code : GD_ENOMEM;
    if (layer->output_slot + 1 > o->n)
        o->n = layer->output_slot + 1;
    return 0;
}

static void
run_outs_fini(struct run_outs *o)
{
    for (int i = 0; i < GD__MAX_OP_OUTPUTS; i++)
        gd_tensor_free(o->t[i]);
    memset(o, 0, sizeof *o);
}

/* Runs the cut node on backend with an emulation (GD_EMULATE_NONE: none). */
static int
run_on(struct gd_noise_collector *c, struct built *b, const char *backend, enum gd_emulate emu,
       struct run_outs *o, struct gd_err *err)
{
    struct gd_knobs knobs;
    gd_knobs_init(&knobs);
    knobs.threads = c->opts.threads;
    knobs.emulate = emu;
    knobs.emulate_classes = GD_CLASS_GEMM | GD_CLASS_CONV;
    memset(o, 0, sizeof *o);
    struct gd_session *s = gd_session_new(b->g1, backend, &knobs, err);
    if (s == NULL)
        return err && err->code ? err->code : GD_ENOMEM;
    int rc = gd_session_run(s, b->n_in, (const struct gd_tensor *const *)b->in, keep_output, o,
                            err);
    gd_session_free(s);
    if (rc != 0)
        run_outs_fini(o);
    return rc;
}

static struct gd_noise_probe *
probe_slot(struct gd_noise_collector *c, const char *name)
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

/* Error of y against the reference ref in the comparison's units: max and median. */
static int
error_of(struct gd_tensor *y, struct gd_tensor *ref, double *max, double *median,
         double *median_hi, struct gd_err *err)
{
    struct gd_tensor *y2, *r2;
    int side;
    int rc = gd__reconcile(y, ref, &y2, &r2, &side, err);
    if (rc != 0)
        return rc;
    struct gd__pair_stats ps;
    rc = gd__pair_stats(y2, r2, &ps, err);
    if (rc == 0) {
        *max = ps.abs_max / ps.scale;
        *median = ps.err_median;
        *median_hi = fmax(ps.err_median_hi, ps.err_median);
        if (!isfinite(*max) || !isfinite(*median_hi))
            rc = gd_err_set(err, GD_ERANGE, "a non-finite value");
    }
    if (y2 != y)
        gd_tensor_free(y2);
    if (r2 != ref)
        gd_tensor_free(r2);
    return rc;
}

/* ---- how much an input's difference can grow through a linear op ---- */

/* Element i of a host tensor as a double: float32 and float64 read directly (the gains walk
 * whole weights, hundreds of millions of elements), the rest through gd_tensor_get_f64. */
static inline double
elem(const struct gd_tensor *t, int64_t i)
{
    if (t->dtype == GD_F32)
        return ((const float *)t->data)[i];
    if (t->dtype == GD_F64)
        return ((const double *)t->data)[i];
    return gd_tensor_get_f64(t, i);
}

/* The three gains of a block of coefficients, folded into the largest of each seen. */
struct gain3 {
    double l1, shift, l2;
};

static void
gain_fold(struct gain3 *g, double abs_sum, double sum, double sq_sum)
{
    g->l1 = fmax(g->l1, abs_sum);
    g->shift = fmax(g->shift, fabs(sum));
    g->l2 = fmax(g->l2, sqrt(sq_sum));
}

/* The gains of the columns of t seen as (outer, K, N), K = shape[k_axis]: a matrix's columns
 * (the coefficients one output of x W takes), over its batch. */
static struct gain3
column_gains(const struct gd_tensor *t, int k_axis)
{
    int64_t outer = 1, kdim = t->shape[k_axis], inner = 1;
    for (int d = 0; d < k_axis; d++)
        outer *= t->shape[d];
    for (int d = k_axis + 1; d < t->ndim; d++)
        inner *= t->shape[d];
    struct gain3 g = {0, 0, 0};
    double *acc = calloc((size_t)(inner > 0 ? inner : 1) * 3, sizeof *acc);
    if (acc == NULL) /* no gains: the comparison falls back on its rule */
        return (struct gain3){NAN, NAN, NAN};
    for (int64_t o = 0; o < outer; o++) {
        memset(acc, 0, (size_t)inner * 3 * sizeof *acc);
        for (int64_t k = 0; k < kdim; k++) /* row by row, in memory order */
            for (int64_t j = 0; j < inner; j++) {
                double v = elem(t, (o * kdim + k) * inner + j);
                acc[3 * j] += fabs(v), acc[3 * j + 1] += v, acc[3 * j + 2] += v * v;
            }
        for (int64_t j = 0; j < inner; j++)
            gain_fold(&g, acc[3 * j], acc[3 * j + 1], acc[3 * j + 2]);
    }
    free(acc);
    return g;
}

/* The gains of t's blocks along axis 0 (a convolution's filter per output channel). */
static struct gain3
block_gains(const struct gd_tensor *t, int64_t blocks)
{
    int64_t n = gd_tensor_numel(t), per = blocks > 0 ? n / blocks : 0;
    struct gain3 g = {0, 0, 0};
    for (int64_t b = 0; b < blocks; b++) {
        double a = 0, s = 0, q = 0;
        for (int64_t i = 0; i < per; i++) {
            double v = elem(t, b * per + i);
            a += fabs(v), s += v, q += v * v;
        }
        gain_fold(&g, a, s, q);
    }
    return g;
}

/* The tensor a slot holds for gain purposes: a weight, or a runtime value's kept rows. */
static const struct gd_tensor *
slot_tensor(const struct gd_noise_collector *c, int v)
{
    const struct gd_value *val = &c->g->values[v];
    return val->constant != NULL ? val->constant : c->vals[v].data;
}

static void
gain_add(struct gd_noise_probe *p, const char *name, struct gain3 g, double factor)
{
    g.l1 *= factor, g.shift *= factor, g.l2 *= factor;
    for (int i = 0; i < p->n_gains; i++)
        if (strcmp(p->gains[i].input, name) == 0) {
            p->gains[i].l1 += g.l1, p->gains[i].shift += g.shift, p->gains[i].l2 += g.l2;
            return;
        }
    if (p->n_gains < GD_NOISE_GAINS && strlen(name) < sizeof p->gains[0].input &&
        isfinite(g.l1) && isfinite(g.shift) && isfinite(g.l2)) {
        struct gd_noise_gain *o = &p->gains[p->n_gains++];
        snprintf(o->input, sizeof o->input, "%s", name);
        o->l1 = g.l1, o->shift = g.shift, o->l2 = g.l2;
    }
}

/* Ops linear in their layer inputs: their gains come from their coefficients. */
static int
linear_op(enum gd_op op)
{
    switch (op) {
    case GD_OP_GEMM:
    case GD_OP_MATMUL:
    case GD_OP_CONV:
    case GD_OP_CONV_TRANSPOSE:
    case GD_OP_AVERAGE_POOL:
    case GD_OP_GLOBAL_AVERAGE_POOL:
    case GD_OP_REDUCE_MEAN:
    case GD_OP_REDUCE_SUM:
    case GD_OP_SUM:
    case GD_OP_MEAN:
        return 1;
    default:
        return 0;
    }
}

/*
 * The gains of node n's layer inputs (struct gd_noise_probe): exact where the coefficients
 * are the whole weights or fixed (a mean's 1/n each), from the kept rows where they are the
 * other operand of a product of two layers. terms is the cut node's reduction length. Ops
 * that are not linear in their inputs get none.
 */
static void
gains_of(const struct gd_noise_collector *c, const struct gd_node *n, int64_t terms,
         struct gd_noise_probe *p)
{
    const struct gd_graph *g = c->g;
    int in0 = n->n_inputs > 0 ? n->inputs[0] : -1, in1 = n->n_inputs > 1 ? n->inputs[1] : -1;
    int layer0 = in0 >= 0 && g->values[in0].constant == NULL;
    int layer1 = in1 >= 0 && g->values[in1].constant == NULL;
    const struct gd_tensor *t0 = in0 >= 0 ? slot_tensor(c, in0) : NULL;
    const struct gd_tensor *t1 = in1 >= 0 ? slot_tensor(c, in1) : NULL;
    double dn = (double)(terms > 0 ? terms : 1);
    struct gain3 mean = {1.0, 1.0, 1.0 / sqrt(dn)}, sum = {dn, dn, sqrt(dn)}, one = {1, 1, 1};
    switch (n->op) {
    case GD_OP_GEMM: {
        double alpha = fabs(n->params.alpha);
        if (in0 == in1)
            return; /* x times itself is not linear in x */
        if (layer0 && t1 != NULL && t1->ndim == 2) /* the columns of op(B) */
            gain_add(p, g->values[in0].name, column_gains(t1, n->params.trans_b ? 1 : 0), alpha);
        if (layer1 && t0 != NULL && t0->ndim == 2) /* the rows of op(A) */
            gain_add(p, g->values[in1].name, column_gains(t0, n->params.trans_a ? 0 : 1), alpha);
        return;
    }
    case GD_OP_MATMUL:
        if (in0 == in1 || t0 == NULL || t1 == NULL || t0->ndim < 1 || t1->ndim < 1)
            return;
        if (layer0)
            gain_add(p, g->values[in0].name, column_gains(t1, t1->ndim >= 2 ? t1->ndim - 2 : 0),
                     1.0);
        if (layer1)
            gain_add(p, g->values[in1].name, column_gains(t0, t0->ndim - 1), 1.0);
        return;
    case GD_OP_CONV:
        if (layer0 && !layer1 && t1 != NULL && t1->ndim >= 1)
            gain_add(p, g->values[in0].name, block_gains(t1, t1->shape[0]), 1.0);
        return;
    case GD_OP_CONV_TRANSPOSE:
        if (layer0 && !layer1 && t1 != NULL && t1->ndim >= 2) {
            /* W is (Cin, Cout/group, k...): an output channel's taps over its group's inputs */
            int64_t groups = n->params.group > 1 ? n->params.group : 1;
            int64_t cin = t1->shape[0], cout_g = t1->shape[1], per = 1;
            for (int d = 2; d < t1->ndim; d++)
                per *= t1->shape[d];
            struct gain3 gg = {0, 0, 0};
            for (int64_t gi = 0; gi < groups; gi++)
                for (int64_t co = 0; co < cout_g; co++) {
                    double a = 0, s = 0, q = 0;
                    for (int64_t ci = gi * (cin / groups); ci < (gi + 1) * (cin / groups); ci++)
                        for (int64_t k = 0; k < per; k++) {
                            double v = elem(t1, (ci * cout_g + co) * per + k);
                            a += fabs(v), s += v, q += v * v;
                        }
                    gain_fold(&gg, a, s, q);
                }
            gain_add(p, g->values[in0].name, gg, 1.0);
        }
        return;
    case GD_OP_AVERAGE_POOL:
    case GD_OP_GLOBAL_AVERAGE_POOL:
    case GD_OP_REDUCE_MEAN:
        if (layer0)
            gain_add(p, g->values[in0].name, mean, 1.0);
        return;
    case GD_OP_REDUCE_SUM:
        if (layer0)
            gain_add(p, g->values[in0].name, sum, 1.0);
        return;
    case GD_OP_SUM:
    case GD_OP_MEAN:
        for (int i = 0; i < n->n_inputs; i++) {
            int v = n->inputs[i];
            if (v >= 0 && g->values[v].constant == NULL)
                gain_add(p, g->values[v].name, one, n->op == GD_OP_SUM ? 1.0 : 1.0 / n->n_inputs);
        }
        return;
    default:
        return;
    }
}

/*
 * The gains of a node that is not linear in its inputs (a normalization, Softmax), measured:
 * each float input is moved by d S (S its largest |value|) with random signs (the response
 * to independent differences: about 3 times the l2 gain for the largest output) and all of
 * one sign (the shift gain), and the node computed again in float64. l1 is taken as twice
 * the larger of the two. A LayerNormalization of a row of equal values divides the rounding
 * of its mean by sqrt(epsilon), which the random draw shows and the shift does not.
 */
static int
measured_gains(struct gd_noise_collector *c, int ni, const struct cut *cut,
               struct gd_noise_probe *p, struct gd_err *err)
{
    const double d = 0x1p-20;
    struct built b;
    struct run_outs base = {0}, moved = {0};
    int rc = build(c, ni, cut, 1, &b, err);
    if (rc == 0)
        rc = run_on(c, &b, "cpu64", GD_EMULATE_NONE, &base, err);
    uint64_t state = 0x9e3779b97f4a7c15ull ^ (uint64_t)ni;
    for (int q = 0; rc == 0 && q < b.n_in; q++) {
        struct gd_tensor *t = b.in[q];
        if (t->dtype != GD_F64 || base.t[0] == NULL)
            continue;
        int64_t n = gd_tensor_numel(t);
        double s = 0, best[2] = {0, 0};
        const double *x = t->data;
        for (int64_t k = 0; k < n; k++)
            if (isfinite(x[k]))
                s = fmax(s, fabs(x[k]));
        if (!(s > 0))
            s = 1;
        struct gd_tensor *orig = t, *pert = NULL;
        for (int draw = 0; rc == 0 && draw < 2; draw++) { /* 0: random signs, 1: a shift */
            if ((pert = gd_tensor_dup(orig, err)) == NULL) {
                rc = GD_ENOMEM;
                break;
            }
            double *y = pert->data;
            for (int64_t k = 0; k < n; k++) {
                state ^= state << 13, state ^= state >> 7, state ^= state << 17;
                y[k] += (draw == 1 || (state & 1u) ? d : -d) * s;
            }
            b.in[q] = pert;
            rc = run_on(c, &b, "cpu64", GD_EMULATE_NONE, &moved, err);
            b.in[q] = orig;
            gd_tensor_free(pert);
            if (rc != 0 || moved.t[0] == NULL)
                break;
            const struct gd_tensor *y0 = base.t[0], *y1 = moved.t[0];
            int64_t m = gd_tensor_numel(y0);
            for (int64_t k = 0; k < m; k++) {
                double dy = fabs(gd_tensor_get_f64(y1, k) - gd_tensor_get_f64(y0, k));
                if (isfinite(dy))
                    best[draw] = fmax(best[draw], dy / (d * s));
            }
            run_outs_fini(&moved);
        }
        if (rc == 0) {
            struct gain3 gm = {2 * fmax(best[0], best[1]), best[1], best[0]};
            gain_add(p, b.g1->values[b.g1->inputs[q]].name, gm, 1.0);
        }
    }
    run_outs_fini(&base);
    run_outs_fini(&moved);
    if (b.g1 != NULL)
        built_fini(&b);
    return rc;
}

/* Cuts node ni to the budget, runs it and records its probes. A failure of the node's own
 * (its graph or a session) leaves it unprobed; only memory is the run's problem. */
static int
probe_node(struct gd_noise_collector *c, int ni, struct gd_err *err)
{
    const struct gd_graph *g = c->g;
    const struct gd_node *n = &g->nodes[ni];
    struct cut cut = {.rows = ROWS_MAX};
    int any_rows = 0;
    for (int i = 0; i < n->n_inputs; i++) {
        int v = n->inputs[i];
        if (v >= 0 && g->values[v].constant == NULL && slot_takes_rows(g, n, i, &c->vals[v])) {
            any_rows = 1;
            if (c->vals[v].k < cut.rows)
                cut.rows = c->vals[v].k;
        }
    }
    if (!any_rows)
        cut.rows = 1; /* nothing is cut by rows: the other cuts are what is left */
    struct gd_err local = {0};
    struct built b;
    double budget = (double)c->opts.max_terms;
    int rc = build(c, ni, &cut, 0, &b, &local);
    for (int attempt = 0; rc == 0 && attempt < 4 && terms_of(&b) > budget; attempt++) {
        double over = terms_of(&b) / budget;
        const struct gd_value *a0 = &g->values[n->inputs[0]];
        const struct kept *k0 = &c->vals[n->inputs[0]];
        if (cut.rows > 1) {
            cut.rows = (int64_t)fmax(1.0, floor((double)cut.rows / over));
        } else if (n->op == GD_OP_MATMUL && a0->constant == NULL && k0->ndim >= 3 && cut.m == 0) {
            int64_t m_all = k0->shape[k0->ndim - 2];
            cut.m = (int64_t)fmax(1.0, floor((double)m_all / over));
        } else if (n->op == GD_OP_GEMM && cut.cols == 0) {
            const struct gd_tensor *w = g->values[n->inputs[1]].constant;
            int64_t cols = w ? w->shape[n->params.trans_b ? 0 : 1] : 0;
            cut.cols = cols > 0 ? (int64_t)fmax(1.0, floor((double)cols / over)) : 0;
        } else if ((n->op == GD_OP_CONV || n->op == GD_OP_CONV_TRANSPOSE) && !cut.one_group &&
                   n->params.group > 1 && a0->constant == NULL) {
            cut.one_group = 1;
        } else if ((n->op == GD_OP_CONV || n->op == GD_OP_CONV_TRANSPOSE) && cut.cols == 0) {
            const struct gd_tensor *w = g->values[n->inputs[1]].constant;
            int convt = n->op == GD_OP_CONV_TRANSPOSE;
            int64_t groups = n->params.group > 1 ? n->params.group : 1;
            /* channels inside a group only once it is the only group */
            int64_t ch = w == NULL || (groups > 1 && !cut.one_group) ? 0
                         : convt                                     ? w->shape[1]
                                                                     : w->shape[0] / groups;
            cut.cols = ch > 0 ? (int64_t)fmax(1.0, floor((double)ch / over)) : 0;
        } else {
            break;
        }
        built_fini(&b);
        rc = build(c, ni, &cut, 0, &b, &local);
    }
    if (rc != 0) {
        skip(c, ni, local.msg[0] ? local.msg : "its graph could not be built");
        return rc == GD_ENOMEM ? gd_err_set(err, GD_ENOMEM, "out of memory") : 0;
    }
    const struct gd_op_info *info = gd_op_info(n->op);
    int emulable = info->reduction == GD_RED_GEMM || info->reduction == GD_RED_CONV ||
                   info->reduction == GD_RED_CONVT;
    /* a node of one term sums nothing; its probe would only say what the op's ulps do,
     * except for a GEMM or convolution, whose operands the reduced formats round */
    if (terms_of(&b) > 2 * budget || (gd_node_reduction_len(b.g1, 0) <= 1 && !emulable)) {
        if (terms_of(&b) > 2 * budget)
            skip(c, ni, "too large to probe within the budget");
        built_fini(&b);
        return 0;
    }
    for (int i = 0; i < b.n_in; i++)
        emulable &= b.in[i]->dtype == GD_F32 || b.in[i]->dtype == GD_F64 ||
                    !gd_dtype_is_float(b.in[i]->dtype);
    static const enum gd_emulate emus[GD_NOISE_N] = {GD_EMULATE_NONE, GD_EMULATE_TF32,
                                                     GD_EMULATE_BF16, GD_EMULATE_FP16};
    struct run_outs ref, got[GD_NOISE_N];
    memset(got, 0, sizeof got);
    rc = run_on(c, &b, "cpu64", GD_EMULATE_NONE, &ref, &local);
    for (int a = 0; rc == 0 && a < (emulable ? GD_NOISE_N : 1); a++)
        rc = run_on(c, &b, "cpu", emus[a], &got[a], &local);
    for (int k = 0; rc == 0 && k < n->n_outputs && k < ref.n; k++) {
        if (ref.t[k] == NULL || got[0].t[k] == NULL)
            continue;
        struct gd_noise_probe p;
        memset(&p, 0, sizeof p);
        p.outputs = gd_tensor_numel(ref.t[k]);
        const struct kept *k0 = &c->vals[n->inputs[0]];
        p.of_rows = g->values[n->inputs[0]].constant ? 1 : k0->n_rows;
        p.rows = slot_takes_rows(g, n, 0, k0) && !k0->whole ? cut.rows : p.of_rows;
        if (cut.m > 0)
            snprintf(p.slice, sizeof p.slice, "%lld rows of A", (long long)cut.m);
        else if (cut.cols > 0)
            snprintf(p.slice, sizeof p.slice, "%s%lld %s", cut.one_group ? "group 1, " : "",
                     (long long)cut.cols, n->op == GD_OP_GEMM ? "columns" : "channels");
        else if (cut.one_group)
            snprintf(p.slice, sizeof p.slice, "group 1 of %lld", (long long)n->params.group);
        for (int a = 0; rc == 0 && a < GD_NOISE_N; a++) {
            if (got[a].t[k] == NULL)
                continue;
            rc = error_of(got[a].t[k], ref.t[k], &p.max[a], &p.median[a], &p.median_hi[a],
                          &local);
            p.has[a] = rc == 0;
        }
        if (k == 0)
            gains_of(c, n, gd_node_reduction_len(b.g1, 0), &p);
        if (k == 0 && p.n_gains == 0 && !linear_op(n->op)) {
            struct gd_err fd_err = {0};
            rc = measured_gains(c, ni, &cut, &p, &fd_err);
            if (rc == GD_ENOMEM) {
                gd_err_set(&local, GD_ENOMEM, "out of memory");
            } else if (rc != 0) {
                p.n_gains = 0; /* unmeasured: the comparison falls back on its rule */
                rc = 0;
            }
        }
        if (rc == 0) {
            struct gd_noise_probe *slot = probe_slot(c, g->values[n->outputs[k]].name);
            if (slot == NULL) {
                rc = gd_err_set(&local, GD_ENOMEM, "out of memory");
                break;
            }
            *slot = p;
        }
    }
    run_outs_fini(&ref);
    for (int a = 0; a < GD_NOISE_N; a++)
        run_outs_fini(&got[a]);
    built_fini(&b);
    if (rc == GD_ENOMEM)
        return gd_err_set(err, GD_ENOMEM, "out of memory");
    if (rc != 0)
        skip(c, ni, local.msg[0] ? local.msg : "its probe failed");
    else
        c->n_probed++;
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
            rc = probe_node(c, ni, err);
            c->seconds += (gd__now_us() - t0) * 1e-6;
        } else {
            skip(c, ni, "an input was not captured or did not fit the memory budget");
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
            kept_fill(k, t->data, layer->batch_offset, layer->piece_ndim > 0 ? layer->piece_offset : 0,
                      gd_tensor_numel(t));
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
