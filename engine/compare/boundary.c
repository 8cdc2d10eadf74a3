/*
 * boundary.c: for a discontinuous layer (Floor, Ceil, Round, Sign, comparisons, ArgMax),
 * how many outputs flipped, and how many of its inputs lie within the observed input
 * difference of the op's boundary: the values any rounding difference upstream can push
 * across it. Distances are measured on run b's input, the reference side.
 */
#include <math.h>
#include <string.h>

#include "diff_internal.h"

/* Distance from x to the nearest point where op's output jumps; NAN when op has none that
 * depends on one input alone. */
static double
boundary_distance(const char *op, double x)
{
    if (strcmp(op, "Floor") == 0 || strcmp(op, "Ceil") == 0)
        return fabs(x - nearbyint(x));
    if (strcmp(op, "Round") == 0) /* jumps at the halves */
        return fabs(x - (floor(x) + 0.5));
    if (strcmp(op, "Sign") == 0)
        return fabs(x);
    return NAN;
}

static int
is_comparison(const char *op)
{
    return strcmp(op, "Greater") == 0 || strcmp(op, "Less") == 0 || strcmp(op, "Equal") == 0;
}

/* Counts elements of run b's input(s) within eps of the boundary. */
static int
count_near(struct gd_diff *d, struct gd_diff_layer *dl, const struct gd_run_view *b,
           struct gd_err *err)
{
    int rc = 0;
    struct gd_tensor *x0 = NULL, *x1 = NULL;
    const struct gd_diff_layer *in0 = &d->layers[dl->inputs[0]];
    if (in0->index_b < 0)
        return 0;
    rc = b->load(b->user, in0->index_b, &x0, err);
    if (rc != 0)
        goto done;
    double eps = in0->m.abs_max;
    if (is_comparison(dl->op)) {
        /* a comparison flips where its two inputs meet: broadcast-free case only */
        if (dl->n_inputs < 2)
            goto done;
        const struct gd_diff_layer *in1 = &d->layers[dl->inputs[1]];
        if (in1->index_b < 0)
            goto done;
        rc = b->load(b->user, in1->index_b, &x1, err);
        if (rc != 0 || gd_tensor_numel(x0) != gd_tensor_numel(x1))
            goto done;
        eps += in1->m.abs_max;
        for (int64_t i = 0; i < gd_tensor_numel(x0); i++)
            if (fabs(gd_tensor_get_f64(x0, i) - gd_tensor_get_f64(x1, i)) <= eps)
                dl->near_boundary++;
    } else if (!isnan(boundary_distance(dl->op, 0.0))) {
        for (int64_t i = 0; i < gd_tensor_numel(x0); i++) {
            double dist = boundary_distance(dl->op, gd_tensor_get_f64(x0, i));
            if (dist <= eps)
                dl->near_boundary++;
        }
    }
    dl->boundary_distance = eps;
done:
    gd_tensor_free(x0);
    gd_tensor_free(x1);
    return rc;
}

int
gd__boundaries(struct gd_diff *d, const struct gd_run_view *b, struct gd_err *err)
{
    for (int i = 0; i < d->n_layers; i++) {
        struct gd_diff_layer *dl = &d->layers[i];
        if (!dl->discontinuous || dl->verdict == GD_VERDICT_INCOMPARABLE)
            continue;
        /* outputs that differ at all: equal pairs are ULP bin 0 or agreeing NaN/Inf */
        dl->flipped = dl->m.count - dl->m.ulp_hist[0] - dl->m.nan_both - dl->m.inf_both;
        if (dl->n_inputs == 0 || dl->verdict == GD_VERDICT_IDENTICAL)
            continue;
        int rc = count_near(d, dl, b, err);
        if (rc != 0)
            return gd_err_prefix(err, "layer %s: ", dl->name);
    }
    return 0;
}
