/*
 * noise_node.c: one node of a noise probe, alone (noise_internal.h): its kept inputs cut to
 * the budget (rows, a matrix product's rows of A, a Gemm's output columns or a convolution's
 * channels spread over them, one group of a grouped convolution), a graph of that node on
 * them, run on cpu64 (the reference) and on cpu in float32 and, for GEMMs and convolutions,
 * with TF32, BF16 and FP16 emulation, and each one's error against the reference; the gains
 * of an op that is not linear, measured by finite differences.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../core/internal.h"
#include "diff_internal.h"
#include "noise_internal.h"

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
    if (idx == NULL || gd__rows_pick(total, count, idx) != count)
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
        if (idx == NULL || gd__rows_pick(m_all, cut->m, idx) != cut->m)
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
        if (i == 0 && cut->one_group) { /* X: the first group's channels */
            o = prefix_axis(t, 1, t->shape[1] / g_n, err);
        } else if (i == 1) { /* W */
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
        } else if (i == 2) { /* B: the same channels */
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
    int rc =
        gd_session_run(s, b->n_in, (const struct gd_tensor *const *)b->in, keep_output, o, err);
    gd_session_free(s);
    if (rc != 0)
        run_outs_fini(o);
    return rc;
}

/* Error of y against the reference ref in the comparison's units: max, median and the
 * median's upper confidence bound over the sample's scale, and that scale. */
static int
error_of(struct gd_tensor *y, struct gd_tensor *ref, double *max, double *median, double *median_hi,
         double *scale, struct gd_err *err)
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
        *scale = ps.scale;
        if (!isfinite(*max) || !isfinite(*median_hi))
            rc = gd_err_set(err, GD_ERANGE, "a non-finite value");
    }
    if (y2 != y)
        gd_tensor_free(y2);
    if (r2 != ref)
        gd_tensor_free(r2);
    return rc;
}

/*
 * The gains of a node that is not linear in its inputs (a normalization, Softmax), measured:
 * each float input is moved by d S (S its largest |value|) with alternating and with random
 * signs (the response to differences that are not a shift: the l2 gain, about 3 times the
 * root sum of squares for the largest output), and all of one sign (the shift gain), and the
 * node computed again in float64. l1 is taken as twice the larger. A LayerNormalization of a row of equal values divides the rounding
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
        double s = 0, best[3] = {0, 0, 0};
        const double *x = t->data;
        for (int64_t k = 0; k < n; k++)
            if (isfinite(x[k]))
                s = fmax(s, fabs(x[k]));
        if (!(s > 0))
            s = 1;
        struct gd_tensor *orig = t, *pert = NULL;
        /* 0: alternating signs (never a shift, however few the values), 1: random signs,
         * 2: a shift */
        for (int draw = 0; rc == 0 && draw < 3; draw++) {
            if ((pert = gd_tensor_dup(orig, err)) == NULL) {
                rc = GD_ENOMEM;
                break;
            }
            double *y = pert->data;
            for (int64_t k = 0; k < n; k++) {
                state ^= state << 13, state ^= state >> 7, state ^= state << 17;
                int up = draw == 0 ? (int)(k & 1) : draw == 1 ? (int)(state & 1u) : 1;
                y[k] += (up ? d : -d) * s;
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
            double spread = fmax(best[0], best[1]);
            struct gd__gain3 gm = {2 * fmax(spread, best[2]), best[2], spread};
            gd__noise_gain_add(p, b.g1->values[b.g1->inputs[q]].name, gm, 1.0);
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
int
gd__noise_probe_node(struct gd_noise_collector *c, int ni, struct gd_err *err)
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
        gd__noise_skip(c, ni, local.msg[0] ? local.msg : "its graph could not be built");
        return rc == GD_ENOMEM ? gd_err_set(err, GD_ENOMEM, "out of memory") : 0;
    }
    const struct gd_op_info *info = gd_op_info(n->op);
    int emulable = info->reduction == GD_RED_GEMM || info->reduction == GD_RED_CONV ||
                   info->reduction == GD_RED_CONVT;
    /* a node of one term sums nothing; its probe would only say what the op's ulps do,
     * except for a GEMM or convolution, whose operands the reduced formats round */
    if (terms_of(&b) > 2 * budget || (gd_node_reduction_len(b.g1, 0) <= 1 && !emulable)) {
        if (terms_of(&b) > 2 * budget)
            gd__noise_skip(c, ni, "too large to probe within the budget");
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
            double sc = 0;
            rc = error_of(got[a].t[k], ref.t[k], &p.max[a], &p.median[a], &p.median_hi[a], &sc,
                          &local);
            if (a == GD_NOISE_FP32)
                p.scale = sc;
            p.has[a] = rc == 0;
        }
        if (k == 0)
            gd__noise_gains(c, n, gd_node_reduction_len(b.g1, 0), &p);
        if (k == 0 && p.n_gains == 0 && !gd__noise_linear_op(n->op)) {
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
            struct gd_noise_probe *slot = gd__noise_probe_slot(c, g->values[n->outputs[k]].name);
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
        gd__noise_skip(c, ni, local.msg[0] ? local.msg : "its probe failed");
    else
        c->n_probed++;
    return 0;
}
