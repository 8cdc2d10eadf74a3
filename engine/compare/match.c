/*
 * match.c: which layer of a is which layer of b, and what each compared layer reads.
 *
 * Layers are matched by name (the output tensor's); a layer whose name the other run lacks
 * is matched by position only when both runs may be of one model file (no two different
 * model sha256) and the ops agree. The diff's layers are the matched ones and those of a
 * only, in a's order, then those of b only. A compared layer's inputs are the compared
 * layers its recorded edges lead to, through layers that only one run has; when neither run
 * records edges, the compared layer before it. docs/COMPARISON.md, "Matching".
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "diff_internal.h"

const char *
gd_run_replay_of(json_t *run)
{
    const char *of = json_string_value(json_object_get(json_object_get(run, "replay"), "of"));
    return of != NULL && of[0] != '\0' ? of : NULL;
}

static const char *
run_id(const struct gd_run_view *v)
{
    const char *id = json_string_value(json_object_get(v->run, "id"));
    return id ? id : "";
}

static const char *
model_sha(const struct gd_run_view *v)
{
    const char *s = json_string_value(json_object_get(json_object_get(v->run, "model"), "sha256"));
    return s != NULL && s[0] != '\0' ? s : NULL;
}

static enum gd_diff_mode
diff_mode(const struct gd_run_view *a, const struct gd_run_view *b)
{
    const char *of_a = gd_run_replay_of(a->run), *of_b = gd_run_replay_of(b->run);
    if ((of_a && strcmp(of_a, run_id(b)) == 0) || (of_b && strcmp(of_b, run_id(a)) == 0))
        return GD_DIFF_REPLAY;
    const char *sa = model_sha(a), *sb = model_sha(b);
    if (sa != NULL && sb != NULL && strcmp(sa, sb) != 0)
        return GD_DIFF_MODELS;
    return GD_DIFF_RUNS;
}

static int
ops_agree(const char *x, const char *y)
{
    return x[0] == '\0' || y[0] == '\0' || strcmp(x, y) == 0;
}

int
gd__match(struct gd__work *w, struct gd_err *err)
{
    const struct gd_run_view *a = w->a, *b = w->b;
    struct gd_diff *d = w->d;
    d->mode = diff_mode(a, b);
    int *to_b = malloc((size_t)(a->n_layers + 1) * sizeof *to_b);
    int *ea = malloc((size_t)(a->n_layers + 1) * sizeof *ea);
    int *eb = malloc((size_t)(b->n_layers + 1) * sizeof *eb);
    if (to_b == NULL || ea == NULL || eb == NULL) {
        free(to_b);
        free(ea);
        free(eb);
        return gd_err_set(err, GD_ENOMEM, "out of memory");
    }
    for (int j = 0; j < b->n_layers; j++)
        eb[j] = -1;
    for (int i = 0; i < a->n_layers; i++) {
        to_b[i] = gd__find_layer(b, a->layers[i].name);
        if (to_b[i] >= 0 && eb[to_b[i]] >= 0)
            to_b[i] = -1; /* a repeated name: the first one takes it */
        if (to_b[i] >= 0)
            eb[to_b[i]] = 1;
    }
    if (d->mode != GD_DIFF_MODELS)
        for (int i = 0; i < a->n_layers && i < b->n_layers; i++)
            if (to_b[i] < 0 && eb[i] < 0 && gd__find_layer(a, b->layers[i].name) < 0 &&
                ops_agree(a->layers[i].op, b->layers[i].op)) {
                to_b[i] = i;
                eb[i] = 1;
            }
    int n = a->n_layers;
    for (int j = 0; j < b->n_layers; j++)
        n += eb[j] < 0;
    d->layers = calloc((size_t)(n ? n : 1), sizeof *d->layers);
    w->extra = calloc((size_t)(n ? n : 1), sizeof *w->extra);
    if (d->layers == NULL || w->extra == NULL) {
        free(to_b);
        free(ea);
        free(eb);
        return gd_err_set(err, GD_ENOMEM, "out of memory");
    }
    d->n_layers = n;
    d->n_layers_a = a->n_layers;
    d->n_layers_b = b->n_layers;
    for (int j = 0; j < b->n_layers; j++)
        eb[j] = -1;
    int k = 0;
    for (int i = 0; i < a->n_layers; i++, k++) {
        struct gd_diff_layer *dl = &d->layers[k];
        dl->index_a = i;
        dl->index_b = to_b[i];
        dl->name = a->layers[i].name;
        ea[i] = k;
        if (to_b[i] >= 0) {
            eb[to_b[i]] = k;
            d->n_matched++;
        } else {
            d->n_only_a++;
        }
    }
    for (int j = 0; j < b->n_layers; j++) {
        if (eb[j] >= 0)
            continue;
        struct gd_diff_layer *dl = &d->layers[k];
        dl->index_a = -1;
        dl->index_b = j;
        dl->name = b->layers[j].name;
        eb[j] = k++;
        d->n_only_b++;
    }
    for (int i = 0; i < n; i++) {
        struct gd_diff_layer *dl = &d->layers[i];
        dl->verdict = GD_VERDICT_INCOMPARABLE;
        dl->truth_err_a = dl->truth_err_b = NAN;
        dl->truth_bound_a = dl->truth_bound_b = NAN;
        dl->truth_median_a = dl->truth_median_b = NAN;
        dl->truth_bound_median_a = dl->truth_bound_median_b = NAN;
        dl->bound = dl->bound_median = dl->bound_declared = NAN;
        dl->envelope = dl->envelope_median = dl->envelope_declared = NAN;
        dl->inherited = NAN;
        dl->own_err = dl->own_bound = dl->own_bits = NAN;
        dl->x_min = dl->cond = NAN;
        if (dl->index_a < 0 || dl->index_b < 0)
            snprintf(dl->note, sizeof dl->note, "only in run %c", dl->index_a < 0 ? 'b' : 'a');
        for (int s = 0; s < 2; s++) {
            w->extra[i].direct[s] = -1;
            w->extra[i].chain[s] = w->extra[i].chain_median[s] = 0;
        }
    }
    w->side[0].entry = ea;
    w->side[1].entry = eb;
    free(to_b);
    return 0;
}

/* ---- edges ---- */

/* What following one side's edges back from a layer found. */
struct walk {
    int inputs[GD_DIFF_MAX_INPUTS];
    int n;
    int unknown;      /* an edge led to a layer without recorded edges, or to a missing name */
    int crossed;      /* it passed a layer the other run lacks */
    double chain, chain_median; /* the largest own rounding of those one-sided layers */
};

static void
walk_add(struct walk *wk, int entry)
{
    for (int k = 0; k < wk->n; k++)
        if (wk->inputs[k] == entry)
            return;
    if (wk->n < GD_DIFF_MAX_INPUTS)
        wk->inputs[wk->n++] = entry;
}

/* The own rounding of one-sided layer j of side s, in err's units (NAN when unknown). */
static double
one_sided_bound(const struct gd__work *w, int s, int j, int median)
{
    const struct gd_bundle_layer *l = &w->side[s].v->layers[j];
    const struct gd_op_info *info = gd__op_of(l->op);
    enum gd_arith ar = gd__arith_of(&w->side[s], l, NULL);
    return gd__own_bound(info, l->reduction_len > 0 ? l->reduction_len
                                : info && info->reduction == GD_RED_NONE ? 1 : 0,
                         ar, l->dtype, l->dtype, 1, 1, median);
}

/* Follows side s's edges from its layer `index`, through layers only s has. */
static void
walk_back(const struct gd__work *w, int s, int index, int depth, struct walk *wk)
{
    const struct gd_bundle_layer *l = &w->side[s].v->layers[index];
    if (l->inputs == NULL || depth > 64) {
        wk->unknown = 1;
        return;
    }
    size_t k;
    json_t *name;
    json_array_foreach(l->inputs, k, name) {
        int j = json_is_string(name) ? gd__find_layer(w->side[s].v, json_string_value(name)) : -1;
        if (j < 0 || j >= index) {
            wk->unknown = 1;
            continue;
        }
        int e = w->side[s].entry[j];
        const struct gd_diff_layer *in = &w->d->layers[e];
        if (in->index_a >= 0 && in->index_b >= 0) {
            walk_add(wk, e);
            continue;
        }
        /* A layer the other run lacks: its own rounding joins the chain, then its inputs. */
        wk->crossed = 1;
        const struct gd_op_info *info = gd__op_of(l->op);
        double factor = gd__op_copies(info) ? 1.0 : GD__CARRY;
        struct walk sub = {.n = 0};
        walk_back(w, s, j, depth + 1, &sub);
        for (int q = 0; q < sub.n; q++)
            walk_add(wk, sub.inputs[q]);
        wk->unknown |= sub.unknown;
        double own = one_sided_bound(w, s, j, 0), own_m = one_sided_bound(w, s, j, 1);
        wk->chain = fmax(wk->chain, factor * (own + sub.chain));
        wk->chain_median = fmax(wk->chain_median, factor * (own_m + sub.chain_median));
    }
}

/* The first input side s records for its layer index, as a layer index of s; else -1. */
static int
first_recorded_input(const struct gd__side *s, int index)
{
    json_t *ins = s->v->layers[index].inputs;
    if (ins == NULL || json_array_size(ins) == 0)
        return -1;
    const char *name = json_string_value(json_array_get(ins, 0));
    return name ? gd__find_layer(s->v, name) : -1;
}

/* The matched entry before entry i in the diff's order, -1 when none. */
static int
previous_matched(const struct gd_diff *d, int i)
{
    for (int k = i - 1; k >= 0; k--)
        if (d->layers[k].index_a >= 0 && d->layers[k].index_b >= 0)
            return k;
    return -1;
}

/*
 * The edges the truth run records for the layer named as dl, when it has them: the compared
 * layers among them become dl's inputs, known only when every one of them was compared.
 * Returns 0 when the truth has no such record.
 */
static int
truth_edges(const struct gd__work *w, struct gd_diff_layer *dl)
{
    if (w->truth == NULL)
        return 0;
    int t = gd__find_layer(w->truth, dl->name);
    json_t *ins = t >= 0 ? w->truth->layers[t].inputs : NULL;
    if (ins == NULL)
        return 0;
    dl->inputs_known = 1;
    size_t k;
    json_t *name;
    json_array_foreach(ins, k, name) {
        int j = json_is_string(name) ? gd__find_layer(w->a, json_string_value(name)) : -1;
        int e = j >= 0 ? w->side[0].entry[j] : -1;
        if (e >= 0 && w->d->layers[e].index_b >= 0 && dl->n_inputs < GD_DIFF_MAX_INPUTS)
            dl->inputs[dl->n_inputs++] = e;
        else
            dl->inputs_known = 0;
    }
    return 1;
}

int
gd__edges(struct gd__work *w, struct gd_err *err)
{
    (void)err;
    struct gd_diff *d = w->d;
    int models = d->mode == GD_DIFF_MODELS;
    for (int i = 0; i < d->n_layers; i++) {
        struct gd_diff_layer *dl = &d->layers[i];
        struct gd__extra *x = &w->extra[i];
        int idx[2] = {dl->index_a, dl->index_b};
        for (int s = 0; s < 2; s++)
            if (idx[s] >= 0)
                x->direct[s] = w->side[s].v->layers[idx[s]].inputs != NULL
                                   ? first_recorded_input(&w->side[s], idx[s])
                                   : idx[s] - 1;
        if (idx[0] < 0 || idx[1] < 0)
            continue;
        int recorded[2] = {w->side[0].v->layers[idx[0]].inputs != NULL,
                           w->side[1].v->layers[idx[1]].inputs != NULL};
        if (recorded[0] || recorded[1]) {
            int known = 1;
            for (int s = 0; s < 2; s++) {
                if (!recorded[s])
                    continue;
                struct walk wk = {.n = 0};
                walk_back(w, s, idx[s], 0, &wk);
                for (int q = 0; q < wk.n; q++) {
                    int seen = 0;
                    for (int r = 0; r < dl->n_inputs; r++)
                        seen |= dl->inputs[r] == wk.inputs[q];
                    if (!seen && dl->n_inputs < GD_DIFF_MAX_INPUTS)
                        dl->inputs[dl->n_inputs++] = wk.inputs[q];
                }
                /* One-sided layers on the way are the structure of a model file; in runs of
                 * one model they are layers one run did not capture: data that is missing. */
                if (wk.unknown || (wk.crossed && !models))
                    known = 0;
                if (models) {
                    x->chain[s] = wk.chain;
                    x->chain_median[s] = wk.chain_median;
                }
            }
            dl->inputs_known = known;
        } else if (truth_edges(w, dl)) {
            /* Neither run records edges; the reference run's graph does. */
        } else {
            /* Neither run records edges (framework dumps): the layer compared before it is
             * presumed to be its input, for what it carries in, but never known to be: a dump
             * does not say which layers it left out, so where a difference starts is not
             * known either (only where it is first observed). */
            int p = previous_matched(d, i);
            if (p >= 0)
                dl->inputs[dl->n_inputs++] = p;
            dl->inputs_known = 0;
        }
    }
    return 0;
}
