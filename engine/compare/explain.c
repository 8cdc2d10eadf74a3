/*
 * explain.c: a few sentences in plain words assembled from the diff's facts: where the
 * divergence starts and how far it is above rounding noise, what arithmetic its precision
 * looks like, which differences between the runs can explain it, which layers amplified it,
 * what it does to the output, and which run the float64 reference agrees with.
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "diff_internal.h"

static void
say(struct gd_diff *d, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void
say(struct gd_diff *d, const char *fmt, ...)
{
    size_t used = strlen(d->explanation);
    if (used + 1 >= sizeof d->explanation)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(d->explanation + used, sizeof d->explanation - used, fmt, ap);
    va_end(ap);
}

/* The env_diff entry for key, or NULL. */
static json_t *
differs(const struct gd_diff *d, const char *key)
{
    size_t i;
    json_t *e;
    json_array_foreach(d->env_diff, i, e) {
        if (strcmp(json_string_value(json_object_get(e, "key")), key) == 0)
            return e;
    }
    return NULL;
}

static const char *
side_text(json_t *e, const char *side)
{
    const char *s = json_string_value(json_object_get(e, side));
    return s ? s : "(none)";
}

/* "run a (cpu)" and the like: the backend plus the knobs that differ. */
static void
run_label(const struct gd_diff *d, json_t *run, const char *side, char *out, size_t size)
{
    const char *backend = json_string_value(json_object_get(run, "backend"));
    int n = snprintf(out, size, "run %s (%s", side, backend ? backend : "?");
    size_t i;
    json_t *e;
    json_array_foreach(d->env_diff, i, e) {
        const char *key = json_string_value(json_object_get(e, "key"));
        if (strncmp(key, "knobs.", 6) != 0 || n < 0 || (size_t)n >= size)
            continue;
        n += snprintf(out + n, size - (size_t)n, ", %s %s", key + 6, side_text(e, side));
    }
    if (n >= 0 && (size_t)n < size)
        snprintf(out + n, size - (size_t)n, ")");
}

/* Differences in the runs' setup that can change these numbers, most specific first. */
static void
causes(struct gd_diff *d, const struct gd_diff_layer *f)
{
    json_t *e;
    int low_precision = f->bits < 13.5;
    int tf32 = (e = differs(d, "knobs.tf32")) != NULL || differs(d, "env.tf32") != NULL;
    json_t *emulate = differs(d, "knobs.emulate");
    if (tf32 && low_precision) {
        say(d, " The runs differ in TF32 (%s vs %s) and this precision is what TF32 gives: "
               "TF32 is the cause.",
            e ? side_text(e, "a") : "?", e ? side_text(e, "b") : "?");
    } else if (emulate != NULL && low_precision) {
        say(d, " The runs differ in emulated precision (%s vs %s), which gives this precision: "
               "that reduced-precision arithmetic is the cause.",
            side_text(emulate, "a"), side_text(emulate, "b"));
    }
    if ((e = differs(d, "knobs.conv_algo")) != NULL)
        say(d, " The convolution algorithm choice differs (%s vs %s).", side_text(e, "a"),
            side_text(e, "b"));
    if ((e = differs(d, "knobs.batch")) != NULL)
        say(d, " The batch size differs (%s vs %s): libraries pick other kernels, and another "
               "summation order, for other sizes.",
            side_text(e, "a"), side_text(e, "b"));
    if ((e = differs(d, "env.gpu_name")) != NULL ||
        (e = differs(d, "env.compute_capability")) != NULL)
        say(d, " The runs come from different GPUs (%s vs %s).", side_text(e, "a"),
            side_text(e, "b"));
    static const char *const libs[] = {"env.cudnn", "env.cublas", "env.cuda_runtime",
                                       "env.driver"};
    for (size_t k = 0; k < sizeof libs / sizeof libs[0]; k++)
        if ((e = differs(d, libs[k])) != NULL)
            say(d, " %s differs (%s vs %s).", libs[k] + 4, side_text(e, "a"), side_text(e, "b"));
    if ((e = differs(d, "backend")) != NULL)
        say(d, " The backends differ (%s vs %s).", side_text(e, "a"), side_text(e, "b"));
}

static void
amplifiers(struct gd_diff *d)
{
    for (int i = 0; i < d->n_layers; i++) {
        const struct gd_diff_layer *l = &d->layers[i];
        if (!l->is_amplifier)
            continue;
        say(d, " %s (%s) amplified it: the error grew %.3g-fold, from %.3g to %.3g of the "
               "layer's scale.",
            l->name, l->op[0] ? l->op : "op unknown", l->growth, l->input_err, l->err);
        if (l->discontinuous)
            say(d, " %lld of its %lld outputs flipped; %lld of its inputs lie within %.3g (the "
                   "input's difference) of a step.",
                (long long)l->flipped, (long long)l->m.count, (long long)l->near_boundary,
                l->boundary_distance);
    }
}

static void
truth_summary(struct gd_diff *d, const char *la, const char *lb)
{
    int from = d->first_divergent >= 0 ? d->first_divergent : 0;
    int n_a = 0, n_b = 0, n_eq = 0;
    for (int i = from; i < d->n_layers; i++) {
        char c = d->layers[i].closer;
        n_a += c == 'a';
        n_b += c == 'b';
        n_eq += c == '=';
    }
    if (n_a + n_b + n_eq == 0) {
        say(d, " The reference run has none of these layers.");
        return;
    }
    say(d, " Against the float64 reference, from %s on, %s is closer on %d layers and %s on "
           "%d (%d even).",
        d->layers[from].name, la, n_a, lb, n_b, n_eq);
    if (d->first_divergent >= 0) {
        const struct gd_diff_layer *f = &d->layers[d->first_divergent];
        if (n_a > n_b && n_a > n_eq)
            say(d, " %s is the right one: at %s its error is %.3g against %.3g.", la, f->name,
                f->truth_err_a, f->truth_err_b);
        else if (n_b > n_a && n_b > n_eq)
            say(d, " %s is the right one: at %s its error is %.3g against %.3g.", lb, f->name,
                f->truth_err_b, f->truth_err_a);
        else
            say(d, " Neither run is clearly closer.");
    }
}

void
gd__explain(struct gd_diff *d, const struct gd_run_view *a, const struct gd_run_view *b,
            const struct gd_run_view *truth)
{
    char la[160], lb[160];
    d->explanation[0] = '\0';
    run_label(d, a->run, "a", la, sizeof la);
    run_label(d, b->run, "b", lb, sizeof lb);
    int identical = 1, noisy = -1;
    for (int i = 0; i < d->n_layers; i++) {
        identical &= d->layers[i].verdict == GD_VERDICT_IDENTICAL;
        if (d->layers[i].verdict == GD_VERDICT_NOISE &&
            (noisy < 0 || d->layers[i].err > d->layers[noisy].err))
            noisy = i;
    }
    if (d->first_divergent < 0) {
        if (identical)
            say(d, "%s and %s are bitwise identical in every layer.", la, lb);
        else if (noisy >= 0)
            say(d, "%s and %s agree within rounding noise in every layer: the largest "
                   "difference, %.3g of the layer's scale at %s, is within what its op's "
                   "rounding and its inputs explain.",
                la, lb, d->layers[noisy].err, d->layers[noisy].name);
        else
            say(d, "No layer of %s and %s could be compared.", la, lb);
    } else {
        const struct gd_diff_layer *f = &d->layers[d->first_divergent];
        say(d, "The divergence starts at %s (%s): max |a-b| = %.3g, %.3g of the layer's largest "
               "value, %.3g times the rounding noise its op allows.",
            f->name, f->op[0] ? f->op : "op unknown", f->m.abs_max, f->err,
            f->bound > 0 ? f->err / f->bound : INFINITY);
        if (f->verdict == GD_VERDICT_NONFINITE)
            say(d, " It has %lld NaN and %lld infinity disagreements.",
                (long long)f->m.nan_disagree, (long long)f->m.inf_disagree);
        else if (f->bound > 0)
            say(d, " Its effective precision is %.1f bits, which looks like %s.", f->bits,
                f->arithmetic);
        causes(d, f);
        amplifiers(d);
        const struct gd_diff_layer *last = &d->layers[d->n_layers - 1];
        if (last->verdict != GD_VERDICT_INCOMPARABLE)
            say(d, " At the last layer, %s, the runs differ by up to %.3g; %lld of %lld values "
                   "are outside atol %g + rtol %g.",
                last->name, last->m.abs_max, (long long)last->m.n_mismatch,
                (long long)last->m.count, d->atol, d->rtol);
    }
    if (truth != NULL)
        truth_summary(d, la, lb);
}
