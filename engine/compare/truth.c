/*
 * truth.c: with a third run taken as the truth (a cpu64 run: float64 throughout), each
 * side's error against it per layer, in the diff's units (max |x - t| / max |t|), the rows
 * each side has outside atol + rtol*|t|, and whether each side is right: within the rounding
 * bound its own arithmetic allows from the exact value, plus what its inputs carried in from
 * their own distance to the truth. A side can be closer without being right; both can be
 * right (they agree), or neither. The truth is rounded to each side's dtype first, so a side
 * that computed the correctly rounded value has error 0.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "diff_internal.h"

/* err of x against the truth t, its median and largest relative error, and the rows of x
 * outside atol + rtol |t|. */
static int
against(struct gd_tensor *x, struct gd_tensor *t, double atol, double rtol, double *out,
        double *median, int64_t *rows_off, struct gd_err *err)
{
    struct gd_tensor *x2, *t2;
    int side;
    int rc = gd__reconcile(x, t, &x2, &t2, &side, err);
    if (rc != 0)
        return rc;
    struct gd_metrics m;
    struct gd__pair_stats ps;
    rc = gd_metrics_compute(x2, t2, atol, rtol, &m, err);
    if (rc == 0)
        rc = gd__pair_stats(x2, t2, &ps, err);
    if (rc == 0) {
        double scale = gd__abs_max(t2);
        int bad = m.nan_disagree || m.inf_disagree;
        *out = bad ? INFINITY : m.abs_max / (scale > 0 ? scale : 1.0);
        /* in the truth's scale, as err is */
        *median = bad ? INFINITY : ps.err_median * ps.scale / (scale > 0 ? scale : 1.0);
        int64_t n = gd_tensor_numel(x2), rows = x2->ndim > 0 ? x2->shape[0] : 1;
        int64_t per_row = rows > 0 ? n / rows : 0;
        *rows_off = 0;
        for (int64_t r = 0; r < rows && m.n_mismatch > 0; r++)
            for (int64_t k = 0; k < per_row; k++) {
                double xv = gd_tensor_get_f64(x2, r * per_row + k);
                double tv = gd_tensor_get_f64(t2, r * per_row + k);
                if (!(xv == tv || fabs(xv - tv) <= atol + rtol * fabs(tv))) {
                    (*rows_off)++;
                    break;
                }
            }
    }
    if (x2 != x)
        gd_tensor_free(x2);
    if (t2 != t)
        gd_tensor_free(t2);
    return rc;
}

int
gd__truth_layer(struct gd__work *w, int i, struct gd_tensor *ta, struct gd_tensor *tb,
                struct gd_err *err)
{
    struct gd_diff_layer *dl = &w->d->layers[i];
    int it = gd__find_layer(w->truth, dl->name);
    if (it < 0 || w->truth->layers[it].tensor_absent)
        return 0; /* fp: a truth held as a fingerprint is not one to measure against */
    struct gd_tensor *tt = NULL;
    if (w->truth->load(w->truth->user, it, &tt, err) != 0)
        return gd_err_prefix(err, "layer %s against the truth: ", dl->name);
    struct gd_err local = {0};
    double atol = w->d->atol, rtol = w->d->rtol;
    int ok = gd_tensor_numel(ta) == gd_tensor_numel(tt) &&
             against(ta, tt, atol, rtol, &dl->truth_err_a, &dl->truth_median_a,
                     &dl->truth_rows_a, &local) == 0 &&
             against(tb, tt, atol, rtol, &dl->truth_err_b, &dl->truth_median_b,
                     &dl->truth_rows_b, &local) == 0;
    gd_tensor_free(tt);
    if (!ok) {
        dl->truth_err_a = dl->truth_err_b = NAN;
        return 0;
    }
    /* Within 10% of each other, neither side is closer. */
    double ea = dl->truth_err_a, eb = dl->truth_err_b;
    dl->closer = ea < 0.9 * eb ? 'a' : eb < 0.9 * ea ? 'b' : '=';
    return 0;
}

/*
 * Side s's bound from the exact value at layer i: its own rounding (reduced-precision inputs
 * counted only when both runs declare that arithmetic, as for noise; the rounding to its
 * own storage format always, since the truth is rounded to it), plus what its inputs
 * carry in: their error against the truth where they are right, else their bound. The
 * median bound the same way from the median figures (a copy may carry its inputs' largest
 * error, as for the pair: a selection may keep only its inputs' largest errors).
 */
static void
truth_bound(const struct gd__work *w, int i, int s, double *max, double *median)
{
    const struct gd_diff_layer *dl = &w->d->layers[i];
    const struct gd__extra *x = &w->extra[i];
    double own = x->own_truth[s] + x->chain[s];
    double own_m = x->own_truth_median[s] + x->chain_median[s];
    *max = *median = NAN;
    if (!isfinite(own) || !isfinite(own_m))
        return;
    double carry = 0, carry_m = 0;
    for (int k = 0; k < dl->n_inputs; k++) {
        const struct gd_diff_layer *in = &w->d->layers[dl->inputs[k]];
        double e = s == 0 ? in->truth_err_a : in->truth_err_b;
        double b = s == 0 ? in->truth_bound_a : in->truth_bound_b;
        double em = s == 0 ? in->truth_median_a : in->truth_median_b;
        double bm = s == 0 ? in->truth_bound_median_a : in->truth_bound_median_b;
        if (!isfinite(e) || !isfinite(b) || !isfinite(em) || !isfinite(bm))
            continue;
        carry = fmax(carry, e <= b ? e : b);
        carry_m = fmax(carry_m, dl->copies ? (e <= b ? e : b) : (em <= bm ? em : bm));
    }
    *max = own + (dl->copies ? 1.0 : GD__CARRY) * carry;
    *median = own_m + (dl->copies ? 1.0 : GD__CARRY) * carry_m;
}

static int
quiet(enum gd_verdict v)
{
    return v == GD_VERDICT_IDENTICAL || v == GD_VERDICT_NOISE;
}

void
gd__truth_describe(struct gd__work *w)
{
    struct gd_diff *d = w->d;
    if (w->truth == NULL)
        return;
    json_t *run = w->truth->run, *knobs = json_object_get(run, "knobs");
    const char *backend = json_string_value(json_object_get(run, "backend"));
    const char *emu = json_string_value(json_object_get(knobs, "emulate"));
    int emulated = emu != NULL && strcmp(emu, "none") != 0 && emu[0] != '\0';
    d->truth_float64 = backend != NULL && strcmp(backend, "cpu64") == 0 && !emulated;
    if (d->truth_float64)
        snprintf(d->truth_desc, sizeof d->truth_desc, "the float64 reference");
    else
        snprintf(d->truth_desc, sizeof d->truth_desc, "the reference run (%.24s%s%.24s)",
                 backend ? backend : "backend not recorded", emulated ? ", emulating " : "",
                 emulated ? emu : "");
}

int
gd__truth_quiet(struct gd__work *w)
{
    struct gd_diff *d = w->d;
    int changed = 0;
    if (!d->truth_float64)
        return 0;
    for (int i = 0; i < d->n_layers; i++) {
        struct gd_diff_layer *dl = &d->layers[i];
        if (dl->right == '2' && !dl->truth_quiet &&
            (dl->verdict == GD_VERDICT_DIVERGENT || dl->verdict == GD_VERDICT_AMPLIFIED)) {
            dl->truth_quiet = 1;
            changed = 1;
        }
    }
    return changed;
}

void
gd__truth_outcomes(struct gd__work *w)
{
    struct gd_diff *d = w->d;
    if (w->truth == NULL)
        return;
    int any = 0, any_diverged = 0;
    for (int i = 0; i < d->n_layers; i++) {
        struct gd_diff_layer *dl = &d->layers[i];
        if (isnan(dl->truth_err_a) || isnan(dl->truth_err_b))
            continue;
        truth_bound(w, i, 0, &dl->truth_bound_a, &dl->truth_bound_median_a);
        truth_bound(w, i, 1, &dl->truth_bound_b, &dl->truth_bound_median_b);
        if (!isfinite(dl->truth_bound_a) || !isfinite(dl->truth_bound_b))
            continue;
        int ra = dl->truth_err_a <= dl->truth_bound_a &&
                 dl->truth_median_a <= dl->truth_bound_median_a;
        int rb = dl->truth_err_b <= dl->truth_bound_b &&
                 dl->truth_median_b <= dl->truth_bound_median_b;
        dl->right = ra && rb ? '2' : ra ? 'a' : rb ? 'b' : '0';
        any = 1;
        any_diverged |= !quiet(dl->verdict) && dl->verdict != GD_VERDICT_INCOMPARABLE;
    }
    if (!any)
        return;
    /* Overall: over the layers where the runs differ beyond noise (all when none do), a side
     * is right when it is right at every one of them. */
    int all_a = 1, all_b = 1;
    for (int i = 0; i < d->n_layers; i++) {
        const struct gd_diff_layer *dl = &d->layers[i];
        if (dl->right == 0 || (any_diverged && quiet(dl->verdict)))
            continue;
        all_a &= dl->right == 'a' || dl->right == '2';
        all_b &= dl->right == 'b' || dl->right == '2';
    }
    d->truth_outcome = all_a && all_b ? '2' : all_a ? 'a' : all_b ? 'b' : '0';
}
