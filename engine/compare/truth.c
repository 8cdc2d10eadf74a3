/*
 * truth.c: with a third run taken as the truth (a cpu64 run: float64 throughout), each
 * side's error against it, per layer, in the same normalized units as the diff, and which
 * side is closer. The truth is rounded to each side's dtype first, so a side that computed
 * the correctly rounded value has error 0.
 */
#include <math.h>

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

int
gd__truth_layer(struct gd_diff_layer *dl, struct gd_tensor *ta, struct gd_tensor *tb,
                const struct gd_run_view *truth, struct gd_err *err)
{
    int it = gd__find_layer(truth, dl->name);
    if (it < 0)
        return 0;
    struct gd_tensor *tt = NULL;
    if (truth->load(truth->user, it, &tt, err) != 0)
        return gd_err_prefix(err, "layer %s against the truth: ", dl->name);
    struct gd_err local = {0};
    int ok = gd_tensor_numel(ta) == gd_tensor_numel(tt) &&
             err_against(ta, tt, &dl->truth_err_a, &local) == 0 &&
             err_against(tb, tt, &dl->truth_err_b, &local) == 0;
    gd_tensor_free(tt);
    if (!ok) {
        dl->truth_err_a = dl->truth_err_b = NAN;
        return 0;
    }
    /* Within 10% of each other, neither side is closer. */
    double ea = dl->truth_err_a, eb = dl->truth_err_b;
    if (ea < 0.9 * eb)
        dl->closer = 'a';
    else if (eb < 0.9 * ea)
        dl->closer = 'b';
    else
        dl->closer = '=';
    return 0;
}
