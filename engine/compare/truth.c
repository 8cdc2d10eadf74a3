/*
 * truth.c: with a third run taken as the truth (a cpu64 run: float64 throughout), each
 * side's error against it, per layer, in the same normalized units as the diff, and which
 * side is closer. The truth is rounded to each side's dtype first, so a side that computed
 * the correctly rounded value has error 0.
 */
#include <math.h>
#include <string.h>

#include "diff_internal.h"

/* err of x against the truth t: max |x - t| / max |t|. */
static int
err_against(struct gd_tensor *x, struct gd_tensor *t, double *out, struct gd_err *err)
{
    struct gd_tensor *x2, *t2;
    int side;
    int rc = gd__reconcile(x, t, &x2, &t2, &side, err);
    if (rc != 0)
        return rc;
    struct gd_metrics m;
    rc = gd_metrics_compute(x2, t2, 0, 0, &m, err);
    if (rc == 0) {
        double scale = gd__abs_max(t2);
        *out = (m.nan_disagree || m.inf_disagree) ? INFINITY
                                                  : m.abs_max / (scale > 0 ? scale : 1.0);
    }
    if (x2 != x)
        gd_tensor_free(x2);
    if (t2 != t)
        gd_tensor_free(t2);
    return rc;
}

static int
find_layer(const struct gd_run_view *v, const char *name)
{
    for (int i = 0; i < v->n_layers; i++)
        if (strcmp(v->layers[i].name, name) == 0)
            return i;
    return -1;
}

int
gd__truth(struct gd_diff *d, const struct gd_run_view *a, const struct gd_run_view *b,
          const struct gd_run_view *truth, struct gd_err *err)
{
    d->has_truth = 1;
    for (int i = 0; i < d->n_layers; i++) {
        struct gd_diff_layer *dl = &d->layers[i];
        int it = find_layer(truth, dl->name);
        dl->truth_err_a = dl->truth_err_b = NAN;
        if (it < 0 || dl->index_b < 0 || dl->verdict == GD_VERDICT_INCOMPARABLE)
            continue;
        struct gd_tensor *ta = NULL, *tb = NULL, *tt = NULL;
        int rc = truth->load(truth->user, it, &tt, err);
        if (rc == 0)
            rc = a->load(a->user, dl->index_a, &ta, err);
        if (rc == 0)
            rc = b->load(b->user, dl->index_b, &tb, err);
        struct gd_err local = {0};
        int ok = rc == 0 && gd_tensor_numel(ta) == gd_tensor_numel(tt) &&
                 err_against(ta, tt, &dl->truth_err_a, &local) == 0 &&
                 err_against(tb, tt, &dl->truth_err_b, &local) == 0;
        gd_tensor_free(ta);
        gd_tensor_free(tb);
        gd_tensor_free(tt);
        if (rc != 0)
            return gd_err_prefix(err, "layer %s against the truth: ", dl->name);
        if (!ok) {
            dl->truth_err_a = dl->truth_err_b = NAN;
            continue;
        }
        /* Within 10% of each other, neither side is closer. */
        double ea = dl->truth_err_a, eb = dl->truth_err_b;
        if (ea < 0.9 * eb)
            dl->closer = 'a';
        else if (eb < 0.9 * ea)
            dl->closer = 'b';
        else
            dl->closer = '=';
    }
    return 0;
}
