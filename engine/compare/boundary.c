/*
 * boundary.c: what the inputs of discontinuous and ill-conditioned layers come close to.
 *
 * A discontinuous layer (Floor, Ceil, Round, Sign, comparisons, ArgMax): how many outputs
 * flipped, and how many inputs lie within the observed input difference of a step, on either
 * run: the values any rounding difference upstream can push across it.
 *
 * An ill-conditioned layer (ops.def's ill trait: Div, Log, Sqrt, Pow, Reciprocal, ...) that
 * differs beyond noise: how many inputs lie within the input difference of the pole at 0,
 * the smallest |x|, and cond = input difference / smallest |x|, the largest relative change
 * an input value saw. Near a pole a relative input change comes out of the op at least as
 * large, so when GD__CARRY cond covers the error the layer is amplified, with that reason,
 * not divergent. In a replay the input difference is the rounding of the captured inputs.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "diff_internal.h"

/* Distance from x to the nearest point where op's output jumps; NAN when op has none that
 * depends on one input alone. */
static double
step_distance(const char *op, double x)
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
    return strcmp(op, "Greater") == 0 || strcmp(op, "Less") == 0 || strcmp(op, "Equal") == 0 ||
           strcmp(op, "GreaterOrEqual") == 0 || strcmp(op, "LessOrEqual") == 0;
}

/* A compared layer's tensors on both sides. */
struct pair {
    struct gd_tensor *a, *b;
};

static int
load_pair(struct gd__work *w, const struct gd_diff_layer *in, struct pair *p, struct gd_err *err)
{
    p->a = p->b = NULL;
    int rc = w->a->load(w->a->user, in->index_a, &p->a, err);
    if (rc == 0)
        rc = w->b->load(w->b->user, in->index_b, &p->b, err);
    if (rc == 0 && gd_tensor_numel(p->a) != gd_tensor_numel(p->b))
        rc = gd_err_set(err, GD_ESHAPE, "layer %s: sizes differ", in->name);
    if (rc != 0) {
        gd_tensor_free(p->a);
        gd_tensor_free(p->b);
        p->a = p->b = NULL;
    }
    return rc;
}

static void
pair_free(struct pair *p)
{
    gd_tensor_free(p->a);
    gd_tensor_free(p->b);
}

/*
 * The difference an input brought into this layer: in a replay, the rounding of the captured
 * value to the replay's dtype (the float64 side against itself rounded); otherwise the
 * input's max |a-b|.
 */
static double
input_difference(const struct gd__work *w, const struct gd_diff_layer *in, const struct pair *p)
{
    if (w->d->mode != GD_DIFF_REPLAY)
        return in->m.abs_max;
    const struct gd_tensor *wide = in->rounded_side == 'a' ? p->a : in->rounded_side == 'b'
                                                                        ? p->b
                                                                        : NULL;
    if (wide == NULL)
        return 0;
    double eps = 0;
    for (int64_t i = 0; i < gd_tensor_numel(wide); i++) {
        double x = gd_tensor_get_f64(wide, i);
        double r = in->dtype == GD_F32 ? (double)(float)x : x;
        if (isfinite(x) && fabs(x - r) > eps)
            eps = fabs(x - r);
    }
    return eps;
}

static int
near_steps(struct gd__work *w, struct gd_diff_layer *dl, struct gd_err *err)
{
    const struct gd_diff_layer *in0 = &w->d->layers[dl->inputs[0]];
    struct pair p0, p1 = {NULL, NULL};
    int rc = load_pair(w, in0, &p0, err);
    if (rc != 0)
        return rc;
    double eps = input_difference(w, in0, &p0);
    int64_t n = gd_tensor_numel(p0.a);
    if (is_comparison(dl->op)) {
        /* a comparison flips where its two inputs meet: broadcast-free case only */
        if (dl->n_inputs >= 2) {
            const struct gd_diff_layer *in1 = &w->d->layers[dl->inputs[1]];
            rc = load_pair(w, in1, &p1, err);
            if (rc == 0 && gd_tensor_numel(p1.a) == n) {
                eps += input_difference(w, in1, &p1);
                for (int64_t i = 0; i < n; i++) {
                    double da = fabs(gd_tensor_get_f64(p0.a, i) - gd_tensor_get_f64(p1.a, i));
                    double db = fabs(gd_tensor_get_f64(p0.b, i) - gd_tensor_get_f64(p1.b, i));
                    dl->near_boundary += da <= eps || db <= eps;
                }
            }
        }
    } else if (!isnan(step_distance(dl->op, 0.0))) {
        for (int64_t i = 0; i < n; i++)
            dl->near_boundary += step_distance(dl->op, gd_tensor_get_f64(p0.a, i)) <= eps ||
                                 step_distance(dl->op, gd_tensor_get_f64(p0.b, i)) <= eps;
    }
    dl->boundary_distance = eps;
    if (dl->verdict == GD_VERDICT_AMPLIFIED) {
        if (w->d->mode == GD_DIFF_REPLAY)
            snprintf(dl->reason, sizeof dl->reason,
                     "a step: its captured inputs were rounded to %s for the replay, %lld of "
                     "them lie within that rounding (%.3g) of a step, and %lld outputs flipped",
                     gd_dtype_name(in0->dtype), (long long)dl->near_boundary, eps,
                     (long long)dl->flipped);
        else
            snprintf(dl->reason, sizeof dl->reason,
                     "a step: %lld of its %lld outputs flipped, and %lld of its inputs lie "
                     "within %.3g (the input's difference) of a step",
                     (long long)dl->flipped, (long long)dl->m.count,
                     (long long)dl->near_boundary, eps);
    }
    pair_free(&p0);
    pair_free(&p1);
    return rc;
}

/* The pole of one input: how near its values come to 0 against the difference it carried. */
static int
near_pole(struct gd__work *w, struct gd_diff_layer *dl, struct gd_err *err)
{
    double best_cond = -1;
    for (int k = 0; k < dl->n_inputs; k++) {
        const struct gd_diff_layer *in = &w->d->layers[dl->inputs[k]];
        if (in->verdict == GD_VERDICT_INCOMPARABLE)
            continue;
        struct pair p;
        int rc = load_pair(w, in, &p, err);
        if (rc != 0)
            return rc;
        double delta = input_difference(w, in, &p), x_min = INFINITY;
        int64_t close = 0;
        for (int64_t i = 0; i < gd_tensor_numel(p.a); i++) {
            double xa = fabs(gd_tensor_get_f64(p.a, i)), xb = fabs(gd_tensor_get_f64(p.b, i));
            double x = fmin(xa, xb);
            if (!isfinite(x))
                continue;
            x_min = fmin(x_min, x);
            close += x <= delta;
        }
        pair_free(&p);
        double cond = delta == 0 ? 0 : x_min > 0 ? delta / x_min : INFINITY;
        if (cond > best_cond) {
            best_cond = cond;
            dl->near_pole = close;
            dl->x_min = x_min;
            dl->cond = cond;
            dl->has_conditioning = 1;
        }
    }
    if (!dl->has_conditioning)
        return 0;
    const char *in_name = "its input";
    if (dl->verdict == GD_VERDICT_DIVERGENT && dl->cond > 0 &&
        dl->err <= GD__CARRY * dl->cond + dl->envelope) {
        dl->verdict = GD_VERDICT_AMPLIFIED;
        snprintf(dl->reason, sizeof dl->reason,
                 "near its pole: %lld input%s within the input's difference of 0, the "
                 "smallest |x| is %.3g, so a relative change of up to %.3g reaches the output "
                 "(growth %.3g)",
                 (long long)dl->near_pole, dl->near_pole == 1 ? " lies" : "s lie", dl->x_min,
                 dl->cond, dl->growth);
    } else if (dl->verdict == GD_VERDICT_DIVERGENT) {
        snprintf(dl->reason, sizeof dl->reason,
                 "not near its pole: the smallest |x| of %s is %.3g, too far from 0 for the "
                 "input's difference to explain this error", in_name, dl->x_min);
    }
    return 0;
}

/* fp: 1 when both runs hold the tensors of every layer dl reads. */
static int
inputs_have_tensors(const struct gd__work *w, const struct gd_diff_layer *dl)
{
    for (int k = 0; k < dl->n_inputs; k++) {
        const struct gd_diff_layer *in = &w->d->layers[dl->inputs[k]];
        if (in->index_a < 0 || in->index_b < 0 || w->a->layers[in->index_a].tensor_absent ||
            w->b->layers[in->index_b].tensor_absent)
            return 0;
    }
    return 1;
}

int
gd__boundaries(struct gd__work *w, struct gd_err *err)
{
    struct gd_diff *d = w->d;
    for (int i = 0; i < d->n_layers; i++) {
        struct gd_diff_layer *dl = &d->layers[i];
        if (dl->verdict == GD_VERDICT_INCOMPARABLE || dl->verdict == GD_VERDICT_IDENTICAL ||
            dl->n_inputs == 0)
            continue;
        if (dl->sampled || !inputs_have_tensors(w, dl))
            continue; /* fp: steps and poles need every value of the inputs */
        int rc = 0;
        if (dl->discontinuous) {
            /* outputs that differ at all: equal pairs are ULP bin 0 or agreeing NaN/Inf */
            dl->flipped = dl->m.count - dl->m.ulp_hist[0] - dl->m.nan_both - dl->m.inf_both;
            rc = near_steps(w, dl, err);
        } else if (dl->ill_conditioned && (dl->verdict == GD_VERDICT_DIVERGENT ||
                                           dl->verdict == GD_VERDICT_AMPLIFIED)) {
            rc = near_pole(w, dl, err);
        }
        if (rc != 0)
            return gd_err_prefix(err, "layer %s: ", dl->name);
    }
    return 0;
}
