/*
 * diff.c: compares two runs layer by layer. Layers are matched by name, then by position;
 * each pair is measured in one pass (metrics.c); verdicts follow the layers' input edges so
 * that a layer is only called divergent when its error is more than its own rounding plus
 * what its inputs carried in. docs/COMPARISON.md states the rules and their reasoning.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "gpudiff/diff.h"
#include "../core/internal.h"
#include "diff_internal.h"

const char *
gd_verdict_name(enum gd_verdict v)
{
    switch (v) {
#define GD__VERDICT_NAME(e, name, text) \
    case GD_VERDICT_##e:                \
        return name;
        GD_VERDICT_MAP(GD__VERDICT_NAME)
#undef GD__VERDICT_NAME
    }
    return "?";
}

static int
bundle_load(void *user, int index, struct gd_tensor **out, struct gd_err *err)
{
    return gd_bundle_layer_load(user, index, out, err);
}

void
gd_bundle_view(const struct gd_bundle *b, struct gd_run_view *out)
{
    out->run = b->run;
    out->n_layers = b->n_layers;
    out->layers = b->layers;
    out->load = bundle_load;
    out->user = (void *)b;
}

int
gd__find_layer(const struct gd_run_view *v, const char *name)
{
    for (int i = 0; i < v->n_layers; i++)
        if (strcmp(v->layers[i].name, name) == 0)
            return i;
    return -1;
}

/* Pairs every layer of a with one of b: same name first, else the same position. */
static int *
match_layers(const struct gd_run_view *a, const struct gd_run_view *b)
{
    int *to_b = malloc((size_t)(a->n_layers ? a->n_layers : 1) * sizeof *to_b);
    char *taken = calloc((size_t)(b->n_layers ? b->n_layers : 1), 1);
    if (to_b == NULL || taken == NULL) {
        free(to_b);
        free(taken);
        return NULL;
    }
    for (int i = 0; i < a->n_layers; i++) {
        to_b[i] = gd__find_layer(b, a->layers[i].name);
        if (to_b[i] >= 0)
            taken[to_b[i]] = 1;
    }
    for (int i = 0; i < a->n_layers; i++)
        if (to_b[i] < 0 && i < b->n_layers && !taken[i] &&
            gd__find_layer(a, b->layers[i].name) < 0) {
            to_b[i] = i;
            taken[i] = 1;
        }
    free(taken);
    return to_b;
}

/* Unit roundoff of a dtype: half the distance from 1 to the next value. */
double
gd__unit_roundoff(enum gd_dtype dtype)
{
    switch (dtype) {
    case GD_F64:
        return 0x1p-53;
    case GD_F32:
        return 0x1p-24;
    case GD_F16:
        return 0x1p-11;
    case GD_BF16:
        return 0x1p-8;
    default:
        return 0.0;
    }
}

/*
 * Brings a pair to one dtype: a float64 side is rounded to the other side's float type (the
 * correctly rounded value is what an exact computation in that type would give). Returns
 * 0 with a2 and b2 set (possibly to new tensors the caller frees), or GD_EDTYPE.
 */
int
gd__reconcile(struct gd_tensor *a, struct gd_tensor *b, struct gd_tensor **a2,
              struct gd_tensor **b2, int *rounded_side, struct gd_err *err)
{
    *a2 = a;
    *b2 = b;
    *rounded_side = 0;
    if (a->dtype == b->dtype)
        return 0;
    if (a->dtype == GD_F64 && gd_dtype_is_float(b->dtype)) {
        *a2 = gd_tensor_cast(a, b->dtype, err);
        *rounded_side = 'a';
        return *a2 ? 0 : GD_ENOMEM;
    }
    if (b->dtype == GD_F64 && gd_dtype_is_float(a->dtype)) {
        *b2 = gd_tensor_cast(b, a->dtype, err);
        *rounded_side = 'b';
        return *b2 ? 0 : GD_ENOMEM;
    }
    return gd_err_set(err, GD_EDTYPE, "dtypes %s and %s cannot be compared",
                      gd_dtype_name(a->dtype), gd_dtype_name(b->dtype));
}

double
gd__abs_max(const struct gd_tensor *t)
{
    double m = 0;
    int64_t n = gd_tensor_numel(t);
    for (int64_t i = 0; i < n; i++) {
        double v = fabs(gd_tensor_get_f64(t, i));
        if (isfinite(v) && v > m)
            m = v;
    }
    return m;
}

/* Lists the rows (dim 0) with an element that is not close, by numpy.isclose's rule. */
static void
mismatch_rows(struct gd_diff_layer *dl, const struct gd_tensor *a, const struct gd_tensor *b,
              double atol, double rtol)
{
    int64_t n = gd_tensor_numel(a);
    int64_t rows = a->ndim > 0 ? a->shape[0] : 1;
    int64_t per_row = rows > 0 ? n / rows : 0;
    for (int64_t r = 0; r < rows; r++) {
        for (int64_t k = 0; k < per_row; k++) {
            double x = gd_tensor_get_f64(a, r * per_row + k);
            double y = gd_tensor_get_f64(b, r * per_row + k);
            int close = x == y || fabs(x - y) <= atol + rtol * fabs(y);
            if (!close) {
                if (dl->n_rows < GD_DIFF_MAX_ROWS)
                    dl->rows[dl->n_rows++] = r;
                dl->rows_mismatch++;
                break;
            }
        }
    }
}

/* Measures one pair of tensors into the layer's metrics and normalized errors. */
static int
measure(struct gd_diff_layer *dl, struct gd_tensor *ta, struct gd_tensor *tb, double atol,
        double rtol, struct gd_err *err)
{
    struct gd_tensor *a = NULL, *b = NULL;
    int rc = gd__reconcile(ta, tb, &a, &b, &dl->rounded_side, err);
    if (rc != 0)
        return rc;
    dl->dtype = a->dtype;
    rc = gd_metrics_compute(a, b, atol, rtol, &dl->m, err);
    if (rc == 0) {
        dl->scale = gd__abs_max(b);
        if (!(dl->scale > 0))
            dl->scale = 1.0;
        dl->err = dl->m.abs_max / dl->scale;
        dl->err_median = dl->m.n_rel > 0 ? gd_metrics_rel_quantile(&dl->m, 0.5) : 0.0;
        if (dl->m.n_mismatch > 0)
            mismatch_rows(dl, a, b, atol, rtol);
    }
    if (a != ta)
        gd_tensor_free(a);
    if (b != tb)
        gd_tensor_free(b);
    return rc;
}

static int
load_pair(const struct gd_run_view *a, int ia, const struct gd_run_view *b, int ib,
          struct gd_tensor **ta, struct gd_tensor **tb, struct gd_err *err)
{
    *ta = *tb = NULL;
    int rc = a->load(a->user, ia, ta, err);
    if (rc == 0)
        rc = b->load(b->user, ib, tb, err);
    if (rc != 0) {
        gd_tensor_free(*ta);
        *ta = NULL;
    }
    return rc;
}

static int
same_shape(const struct gd_bundle_layer *x, const struct gd_bundle_layer *y)
{
    if (x->shape.ndim != y->shape.ndim)
        return 0;
    for (int i = 0; i < x->shape.ndim; i++)
        if (x->shape.dim[i] != y->shape.dim[i])
            return 0;
    return 1;
}

/* Measures every matched pair: metrics, normalized errors, bounds, precision, and with a
 * truth run each side's error against it, while the pair is loaded. */
static int
measure_all(struct gd_diff *d, const struct gd_run_view *a, const struct gd_run_view *b,
            const struct gd_run_view *truth, const int *to_b, struct gd_err *err)
{
    for (int i = 0; i < a->n_layers; i++) {
        struct gd_diff_layer *dl = &d->layers[i];
        const struct gd_bundle_layer *la = &a->layers[i];
        dl->index_a = i;
        dl->index_b = to_b[i];
        dl->name = la->name;
        dl->op = la->op;
        dl->algo_a = la->algo;
        dl->algo_b = "";
        dl->reduction_len = la->reduction_len > 0 ? la->reduction_len : 1;
        dl->discontinuous = la->discontinuous > 0;
        dl->closer = 0;
        dl->truth_err_a = dl->truth_err_b = NAN;
        if (to_b[i] < 0) {
            dl->verdict = GD_VERDICT_INCOMPARABLE;
            snprintf(dl->note, sizeof dl->note, "only in run a");
            continue;
        }
        const struct gd_bundle_layer *lb = &b->layers[to_b[i]];
        dl->algo_b = lb->algo;
        if (dl->op[0] == '\0')
            dl->op = lb->op;
        if (la->reduction_len <= 0 && lb->reduction_len > 0)
            dl->reduction_len = lb->reduction_len;
        if (la->discontinuous < 0)
            dl->discontinuous = lb->discontinuous > 0;
        if (!same_shape(la, lb)) {
            char sa[96], sb[96];
            dl->verdict = GD_VERDICT_INCOMPARABLE;
            snprintf(dl->note, sizeof dl->note, "shapes differ: %s and %s",
                     gd_shape_format(la->shape.ndim, la->shape.dim, sa, sizeof sa),
                     gd_shape_format(lb->shape.ndim, lb->shape.dim, sb, sizeof sb));
            continue;
        }
        struct gd_tensor *ta, *tb;
        int rc = load_pair(a, i, b, to_b[i], &ta, &tb, err);
        if (rc != 0)
            return gd_err_prefix(err, "layer %s: ", la->name);
        struct gd_err merr = {0};
        rc = measure(dl, ta, tb, d->atol, d->rtol, &merr);
        if (rc == 0) {
            gd__layer_bounds(dl);
            if (truth != NULL)
                rc = gd__truth_layer(dl, ta, tb, truth, err);
        } else if (rc == GD_EDTYPE) {
            dl->verdict = GD_VERDICT_INCOMPARABLE;
            snprintf(dl->note, sizeof dl->note, "%.150s", merr.msg);
            rc = 0;
        } else {
            if (err != NULL)
                *err = merr;
            rc = gd_err_prefix(err, "layer %s: ", la->name);
        }
        gd_tensor_free(ta);
        gd_tensor_free(tb);
        if (rc != 0)
            return rc;
    }
    return 0;
}

/* Indexes (into a's layers) of the layers layer i reads: its recorded inputs, else the
 * layer before it. Returns the count (at most max). */
static int
inputs_of(const struct gd_run_view *a, int i, int *out, int max)
{
    json_t *ins = a->layers[i].inputs;
    if (ins == NULL) {
        if (i == 0)
            return 0;
        out[0] = i - 1;
        return 1;
    }
    int n = 0;
    size_t k;
    json_t *name;
    json_array_foreach(ins, k, name) {
        int j = json_is_string(name) ? gd__find_layer(a, json_string_value(name)) : -1;
        if (j >= 0 && j < i && n < max)
            out[n++] = j;
    }
    return n;
}

int
gd_diff_runs(const struct gd_run_view *a, const struct gd_run_view *b,
             const struct gd_run_view *truth, double atol, double rtol, struct gd_diff **out,
             struct gd_err *err)
{
    if (!(atol >= 0) || !(rtol >= 0) || !isfinite(atol) || !isfinite(rtol))
        return gd_err_set(err, GD_EINVAL, "atol and rtol must be finite and not negative");
    struct gd_diff *d = calloc(1, sizeof *d);
    int *to_b = match_layers(a, b);
    int rc = 0;
    if (d == NULL || to_b == NULL) {
        rc = gd_err_set(err, GD_ENOMEM, "out of memory");
        goto done;
    }
    d->atol = atol;
    d->rtol = rtol;
    d->first_divergent = -1;
    d->n_layers = a->n_layers;
    d->layers = calloc((size_t)(a->n_layers ? a->n_layers : 1), sizeof *d->layers);
    if (d->layers == NULL) {
        rc = gd_err_set(err, GD_ENOMEM, "out of memory");
        goto done;
    }
    d->has_truth = truth != NULL;
    rc = measure_all(d, a, b, truth, to_b, err);
    if (rc != 0)
        goto done;
    for (int i = 0; i < d->n_layers; i++) {
        struct gd_diff_layer *dl = &d->layers[i];
        dl->n_inputs = inputs_of(a, i, dl->inputs, GD_DIFF_MAX_INPUTS);
        gd__layer_verdict(d, i);
    }
    rc = gd__boundaries(d, b, err);
    if (rc == 0)
        d->env_diff = gd__env_diff(a->run, b->run);
    if (rc == 0)
        gd__explain(d, a, b, truth);
done:
    free(to_b);
    if (rc != 0) {
        gd_diff_free(d);
        return rc;
    }
    *out = d;
    return 0;
}

void
gd_diff_free(struct gd_diff *d)
{
    if (d == NULL)
        return;
    json_decref(d->env_diff);
    free(d->layers);
    free(d);
}
