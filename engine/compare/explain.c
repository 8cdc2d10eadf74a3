/*
 * explain.c: a few short sentences assembled from the diff's facts, in this order: different
 * inputs; how the runs relate (two model files, a replay, layers one run lacks); where the
 * difference starts, or where it is first observed when the data cannot show its start, and
 * by how much it exceeds what rounding allows; what share of the values differ and, for a
 * layer's own error, what its precision looks like; the recorded differences that can change
 * these numbers (arithmetic, algorithms and the batch size or algorithm choice that changed
 * them, libraries, GPUs), never a field one run does not record; the amplifiers and why; the
 * last layer; which run the float64 reference finds right; and, with a replay, the layers
 * whose own error exceeds their bound.
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

/* 84000 as "84,000". */
static const char *
count_text(int64_t n, char *buf, size_t size)
{
    char raw[32];
    snprintf(raw, sizeof raw, "%lld", (long long)n);
    size_t len = strlen(raw), o = 0;
    for (size_t i = 0; i < len && o + 2 < size; i++) {
        if (i > 0 && raw[i] != '-' && (len - i) % 3 == 0 && raw[i - 1] != '-')
            buf[o++] = ',';
        buf[o++] = raw[i];
    }
    buf[o] = '\0';
    return buf;
}

static const char *
op_text(const struct gd_diff_layer *l)
{
    return l->op[0] ? l->op : "op not recorded";
}

/* The env_diff entry for key whose status is "differs", or NULL. */
static json_t *
differs(const struct gd_diff *d, const char *key)
{
    size_t i;
    json_t *e;
    json_array_foreach(d->env_diff, i, e) {
        if (strcmp(json_string_value(json_object_get(e, "key")), key) == 0 &&
            strcmp(json_string_value(json_object_get(e, "status")), "differs") == 0)
            return e;
    }
    return NULL;
}

static const char *
side_text(json_t *e, const char *side)
{
    json_t *v = json_object_get(e, side);
    const char *s = json_string_value(v);
    if (s == NULL || strcmp(s, "null") == 0)
        return "the whole input"; /* only batch is null when recorded: no slicing */
    return s;
}

/* The names of layers, as "conv (a vs b), fc (c vs d)" for the first few. */
static void
say_algorithms(struct gd_diff *d, const int *which, int n)
{
    for (int k = 0; k < n && k < 4; k++) {
        const struct gd_diff_layer *l = &d->layers[which[k]];
        say(d, "%s%s: %s vs %s", k ? ", " : "", l->name, l->algo_a, l->algo_b);
    }
    if (n > 4)
        say(d, ", and %d more", n - 4);
}

/* Did the two runs record the same knobs? (Both must record some.) */
static int
same_knobs(const struct gd__work *w)
{
    json_t *ka = json_object_get(w->a->run, "knobs"), *kb = json_object_get(w->b->run, "knobs");
    if (json_object_size(ka) == 0 || json_object_size(kb) == 0)
        return 0;
    size_t i;
    json_t *e;
    json_array_foreach(w->d->env_diff, i, e) {
        const char *key = json_string_value(json_object_get(e, "key"));
        if (strncmp(key, "knobs.", 6) == 0 && strcmp(key, "knobs.threads") != 0)
            return 0;
    }
    return 1;
}

/* Libraries, GPU and backend differences that can change the numbers. */
static int
say_recorded(struct gd_diff *d, const char *lead, const char *const *categories, int n_cat)
{
    int said = 0;
    size_t i;
    json_t *e;
    json_array_foreach(d->env_diff, i, e) {
        if (strcmp(json_string_value(json_object_get(e, "status")), "differs") != 0)
            continue;
        const char *cat = json_string_value(json_object_get(e, "category"));
        int wanted = 0;
        for (int c = 0; c < n_cat; c++)
            wanted |= strcmp(cat, categories[c]) == 0;
        if (!wanted || said >= 5)
            continue;
        const char *key = json_string_value(json_object_get(e, "key"));
        const char *dot = strchr(key, '.');
        /* env.backend repeats backend */
        if (strcmp(key, "env.backend") == 0 && differs(d, "backend") != NULL)
            continue;
        say(d, "%s%s %s vs %s", said ? ", " : lead, dot ? dot + 1 : key, side_text(e, "a"),
            side_text(e, "b"));
        said++;
    }
    return said;
}

/* What the recorded setup says about the difference: algorithms, knobs, libraries. */
static void
setup_facts(struct gd__work *w)
{
    struct gd_diff *d = w->d;
    int changed[64], n_changed = 0, n_recorded = 0;
    for (int i = 0; i < d->n_layers; i++) {
        const struct gd_diff_layer *l = &d->layers[i];
        if (l->index_a < 0 || l->index_b < 0 || !l->algo_a[0] || !l->algo_b[0])
            continue;
        n_recorded++;
        if (strcmp(l->algo_a, l->algo_b) != 0 && n_changed < 64)
            changed[n_changed++] = i;
    }
    json_t *e;
    const char *tail = n_changed == 1 ? "its summation order" : "their summation order";
    if ((e = differs(d, "knobs.batch")) != NULL || (e = differs(d, "knobs.conv_algo")) != NULL) {
        int batch = strcmp(json_string_value(json_object_get(e, "key")), "knobs.batch") == 0;
        say(d, " The %s differs (%s vs %s)", batch ? "batch size" : "convolution algorithm choice",
            side_text(e, "a"), side_text(e, "b"));
        if (n_changed > 0) {
            say(d, "; with it %d layer%s changed algorithm (", n_changed,
                n_changed == 1 ? "" : "s");
            say_algorithms(d, changed, n_changed);
            say(d, "), and so %s.", tail);
        } else {
            say(d, "; no layer records a different algorithm.");
        }
    } else if (same_knobs(w)) {
        say(d, " The runs have the same knobs");
        if (n_changed > 0) {
            say(d, "; the algorithms differ in %d layer%s (", n_changed, n_changed == 1 ? "" : "s");
            say_algorithms(d, changed, n_changed);
            say(d, "), and with them %s.", tail);
        } else {
            if (n_recorded > 0)
                say(d, " and the same algorithms in every layer");
            static const char *const libs[] = {"library"};
            say_recorded(d, "; library versions differ: ", libs, 1);
            say(d, ".");
        }
    } else if (n_changed > 0) {
        say(d, " The algorithms differ in %d layer%s (", n_changed, n_changed == 1 ? "" : "s");
        say_algorithms(d, changed, n_changed);
        say(d, "), and with them %s.", tail);
    }
    static const char *const other[] = {"gpu", "library", "backend"};
    if (!same_knobs(w) || n_changed > 0) {
        if (say_recorded(d, " Also recorded as different: ", other, 3))
            say(d, ".");
    } else {
        static const char *const gpu[] = {"gpu", "backend"};
        if (say_recorded(d, " Also recorded as different: ", gpu, 2))
            say(d, ".");
    }
}

static const char *
arith_upper(enum gd_arith a)
{
    switch (a) {
    case GD_ARITH_FP64:
        return "FP64";
    case GD_ARITH_FP32:
        return "FP32";
    case GD_ARITH_TF32:
        return "TF32";
    case GD_ARITH_BF16:
        return "BF16";
    case GD_ARITH_FP16:
        return "FP16";
    default:
        return "an unknown arithmetic";
    }
}

/* The unit roundoff of the operands an arithmetic rounds to (BF16 2^-8, TF32 and FP16 2^-11). */
static double
arith_roundoff(enum gd_arith a)
{
    return a == GD_ARITH_BF16 ? 0x1p-8 : a == GD_ARITH_TF32 || a == GD_ARITH_FP16 ? 0x1p-11 : 0;
}

static int
declared(const char *from)
{
    return from[0] != '\0' && strcmp(from, "dtype") != 0;
}

/* The arithmetic each run declares for the layer where the difference shows first. */
static void
arithmetic_facts(struct gd_diff *d, const struct gd_diff_layer *f)
{
    int da = declared(f->arith_from_a), db = declared(f->arith_from_b);
    int reduced_a = f->arith_a >= GD_ARITH_TF32, reduced_b = f->arith_b >= GD_ARITH_TF32;
    if (f->arith_a != f->arith_b && (reduced_a || reduced_b)) {
        /* the side with the reduced format; of two, the coarser (BF16 before FP16 and TF32),
         * whose rounding is the difference's size */
        int s = reduced_a && reduced_b ? (arith_roundoff(f->arith_b) > arith_roundoff(f->arith_a))
                : reduced_a            ? 0
                                       : 1;
        enum gd_arith ar = s == 0 ? f->arith_a : f->arith_b, other = s == 0 ? f->arith_b
                                                                           : f->arith_a;
        int other_declared = s == 0 ? db : da;
        say(d, " Run %c computed %s in %s (%s)", s == 0 ? 'a' : 'b', f->name, arith_upper(ar),
            s == 0 ? f->arith_from_a : f->arith_from_b);
        if (other_declared)
            say(d, " and run %c in %s.", s == 0 ? 'b' : 'a', arith_upper(other));
        else
            say(d, "; run %c does not record its arithmetic.", s == 0 ? 'b' : 'a');
        if (f->explained_by_arith)
            say(d, " The difference is within what %s's rounding allows: %s explains it.",
                arith_upper(ar), arith_upper(ar));
        else if (f->verdict == GD_VERDICT_DIVERGENT)
            say(d, " %s's rounding alone does not explain a difference this large.",
                arith_upper(ar));
    }
}

/* "which looks like TF32 or FP16", "which lies between FP32 and TF32", ... */
static const char *
precision_verb(const char *label)
{
    if (strncmp(label, "between", 7) == 0)
        return "which lies";
    if (strncmp(label, "below", 5) == 0)
        return "which is";
    return "which looks like";
}

/* fp: what "of M values" counts: every value, or the sample's. */
static int64_t
of_count(const struct gd_diff_layer *l)
{
    return l->sampled ? l->n_sampled : l->m.count;
}

static const char *
values_word(const struct gd_diff_layer *l)
{
    return l->sampled ? "sampled values" : "values";
}

/* "N of M values differ" and, for a layer's own error, the precision they carry. */
static void
precision_facts(struct gd_diff *d, const struct gd_diff_layer *f)
{
    char n1[32], n2[32];
    count_text(f->n_differ, n1, sizeof n1);
    count_text(of_count(f), n2, sizeof n2);
    const char *verb = f->n_differ == 1 ? "differs" : "differ";
    if (f->sparse) {
        say(d, " %s of %s %s %s (sparse): single values moved, not the arithmetic of all.",
            n1, n2, values_word(f), verb);
        return;
    }
    if (f->arithmetic == NULL) {
        say(d, " %s of %s %s %s.", n1, n2, values_word(f), verb);
        return;
    }
    if (f->n_differ == of_count(f))
        say(d, " Every %s differs; they carry %.1f bits, %s %s",
            f->sampled ? "sampled value" : "value", f->bits, precision_verb(f->arithmetic),
            f->arithmetic);
    else
        say(d, " %s of %s %s %s; those carry %.1f bits, %s %s", n1, n2, values_word(f), verb,
            f->bits, precision_verb(f->arithmetic), f->arithmetic);
    int reduced = f->arith_a >= GD_ARITH_TF32 || f->arith_b >= GD_ARITH_TF32;
    if (f->bits < 13 && !reduced && strstr(f->arithmetic, "FP32") == NULL)
        say(d, ", though neither run records such arithmetic.");
    else
        say(d, ".");
}

/* "2.3 times what its rounding and its inputs allow": the ratio of the test that decided. */
static void
say_excess(struct gd_diff *d, const struct gd_diff_layer *f)
{
    if (f->verdict == GD_VERDICT_NONFINITE) {
        say(d, "; it has %lld NaN and %lld infinity disagreements.",
            (long long)f->m.nan_disagree, (long long)f->m.inf_disagree);
    } else if (f->decided_by != NULL && f->ratio > 1) {
        const char *what = f->inherited > 0 ? "its rounding and its inputs allow"
                                            : "its rounding allows";
        if (f->ratio_max > 1 && f->ratio_median > 1)
            say(d, ", %.3g times what %s (its median error %.3g times the median).",
                f->ratio_max, what, f->ratio_median);
        else if (f->ratio_max > 1)
            say(d, ", %.3g times what %s.", f->ratio_max, what);
        else
            say(d, "; its largest error is within its bound, but its median error is %.3g "
                   "times the median %s.",
                f->ratio_median, what);
    } else {
        say(d, ".");
    }
}

static void
amplifiers(struct gd_diff *d)
{
    for (int i = 0; i < d->n_layers; i++) {
        const struct gd_diff_layer *l = &d->layers[i];
        if (l->is_amplifier)
            say(d, " %s (%s) amplified it, %s.", l->name, op_text(l),
                l->reason[0] ? l->reason : "growing it far beyond its input's difference");
    }
}

static void
truth_facts(struct gd_diff *d)
{
    int any = 0, first_bad = -1, last = -1, n_quiet = 0, first_quiet = -1;
    for (int i = 0; i < d->n_layers; i++) {
        const struct gd_diff_layer *l = &d->layers[i];
        if (l->truth_quiet && n_quiet++ == 0)
            first_quiet = i;
        if (l->right == 0)
            continue;
        any = 1;
        last = i;
        if (first_bad < 0 && l->right != '2' && l->verdict != GD_VERDICT_IDENTICAL &&
            l->verdict != GD_VERDICT_NOISE)
            first_bad = i;
    }
    const char *ref = d->truth_desc[0] ? d->truth_desc : "the reference";
    if (!d->truth_float64)
        say(d, " The reference run is not a float64 run: \"right\" below means within rounding "
               "of it, not of the exact values.");
    if (!any) {
        say(d, " The reference run has none of these layers, or none it can bound.");
        return;
    }
    if (n_quiet > 0)
        say(d, " At %s%s the runs differ by more than the noise band of a pair, yet each is "
               "within its own rounding bound of %s there: that is rounding, and %s counted as "
               "noise.",
            d->layers[first_quiet].name, n_quiet > 1 ? " and later layers" : "", ref,
            n_quiet > 1 ? "they are" : "it is");
    const struct gd_diff_layer *l = &d->layers[first_bad >= 0 ? first_bad : last];
    switch (d->truth_outcome) {
    case '2':
        say(d, " Against %s both runs are right: within their rounding bounds.", ref);
        break;
    case 'a':
    case 'b': {
        char s = d->truth_outcome, o = s == 'a' ? 'b' : 'a';
        double e = o == 'a' ? l->truth_err_a : l->truth_err_b;
        double b = o == 'a' ? l->truth_bound_a : l->truth_bound_b;
        say(d, " Run %c is right against %s, within its rounding bound wherever the runs "
               "differ; run %c is not: at %s its error is %.3g, %.3g times its bound.",
            s, ref, o, l->name, e, b > 0 ? e / b : INFINITY);
        break;
    }
    default:
        say(d, " Neither run is right against %s: at %s run a is %.3g of the layer's scale "
               "away (%.3g times its bound, %lld rows off) and run b %.3g (%.3g times, %lld rows "
               "off)",
            ref, l->name, l->truth_err_a,
            l->truth_bound_a > 0 ? l->truth_err_a / l->truth_bound_a : INFINITY,
            (long long)l->truth_rows_a, l->truth_err_b,
            l->truth_bound_b > 0 ? l->truth_err_b / l->truth_bound_b : INFINITY,
            (long long)l->truth_rows_b);
        if (l->closer == 'a' || l->closer == 'b')
            say(d, "; run %c is closer, and still not right.", l->closer);
        else
            say(d, ".");
    }
}

static void
replay_facts(struct gd_diff *d)
{
    int n = 0;
    for (int i = 0; i < d->n_layers; i++) {
        const struct gd_diff_layer *l = &d->layers[i];
        if (!l->has_own || (l->own_verdict != GD_VERDICT_DIVERGENT &&
                            l->own_verdict != GD_VERDICT_NONFINITE))
            continue;
        if (n == 0)
            say(d, " In the replay, the layers with an error of their own beyond their bound "
                   "are ");
        if (n < 8) {
            say(d, "%s%s (%.1f bits", n ? ", " : "", l->name, l->own_bits);
            if (l->own_arithmetic)
                say(d, ", %s", l->own_arithmetic);
            say(d, ")");
        }
        n++;
    }
    if (n > 8)
        say(d, " and %d more", n - 8);
    if (n == 0) {
        say(d, " In the replay every layer computes within its bound from the inputs it was "
               "given%s.", d->mode == GD_DIFF_REPLAY ? ""
                                                     : ": the difference between the runs is "
                                                       "rounding that grew through the layers");
        return;
    }
    say(d, "; every other layer computes within its bound from the inputs it was given.");
    if (d->cause >= 0)
        say(d, " The first of them, %s, is where the difference is made: the cause.",
            d->layers[d->cause].name);
}

/* The run ran in bitwise mode (run.json's knobs.repro): cuda computing the cpu backend's bits. */
static int
bitwise_mode(json_t *run)
{
    const char *r = json_string_value(json_object_get(json_object_get(run, "knobs"), "repro"));
    return r != NULL && strcmp(r, "bitwise") == 0;
}

static int
quiet(enum gd_verdict v)
{
    return v == GD_VERDICT_IDENTICAL || v == GD_VERDICT_NOISE;
}

void
gd__explain(struct gd__work *w)
{
    struct gd_diff *d = w->d;
    d->explanation[0] = '\0';
    const char *ba = json_string_value(json_object_get(w->a->run, "backend"));
    const char *bb = json_string_value(json_object_get(w->b->run, "backend"));
    char la[96], lb[96];
    snprintf(la, sizeof la, "Run a (%s%s)", ba ? ba : "backend not recorded",
             bitwise_mode(w->a->run) ? ", bitwise mode" : "");
    snprintf(lb, sizeof lb, "run b (%s%s)", bb ? bb : "backend not recorded",
             bitwise_mode(w->b->run) ? ", bitwise mode" : "");
    if (d->inputs_differ == 1) {
        const char *ia = json_string_value(json_object_get(json_object_get(w->a->run, "input"),
                                                           "sha256"));
        const char *ib = json_string_value(json_object_get(json_object_get(w->b->run, "input"),
                                                           "sha256"));
        say(d, "The runs had different inputs (input sha256 %.12s vs %.12s): every difference "
               "below may come from that. ",
            ia, ib);
    }
    int max_layers = d->n_layers_a > d->n_layers_b ? d->n_layers_a : d->n_layers_b;
    if (d->mode == GD_DIFF_MODELS) {
        say(d, "The runs are of two model files; %d layers were matched by the names of their "
               "output tensors",
            d->n_matched);
        for (int side = 0; side < 2; side++) {
            int n = side == 0 ? d->n_only_a : d->n_only_b, k = 0;
            if (n == 0)
                continue;
            say(d, "; %d only in run %c (", n, side == 0 ? 'a' : 'b');
            for (int i = 0; i < d->n_layers; i++) {
                const struct gd_diff_layer *l = &d->layers[i];
                if ((side == 0 ? l->index_b : l->index_a) >= 0 || k >= 5)
                    continue;
                say(d, "%s%s", k++ ? ", " : "", l->name);
            }
            say(d, "%s)", n > 5 ? ", ..." : "");
        }
        say(d, ". ");
    } else if (d->mode == GD_DIFF_REPLAY) {
        int a_replays = gd_run_replay_of(w->a->run) != NULL;
        say(d, "Run %c replays run %c: each of its layers ran from run %c's captured inputs, so "
               "each difference is that layer's own. ",
            a_replays ? 'a' : 'b', a_replays ? 'b' : 'a', a_replays ? 'b' : 'a');
    } else if (d->n_matched < max_layers && d->n_matched > 0) {
        say(d, "Only %d of %d layers could be matched; the others are in one run only. ",
            d->n_matched, max_layers);
    } else if (w->truth != NULL && w->truth->n_layers > d->n_matched && d->n_matched > 0) {
        say(d, "Only %d of the reference run's %d layers %s in both runs. ", d->n_matched,
            w->truth->n_layers, d->n_matched == 1 ? "is" : "are");
    }
    if (d->n_sampled > 0) {
        /* fp: what fingerprints can and cannot show */
        int n_fetch = 0;
        for (int i = 0; i < d->n_layers; i++)
            n_fetch += d->layers[i].fetch_a || d->layers[i].fetch_b;
        say(d, "%d layer%s differ%s by hash and %s judged from fingerprints (a sample of %d "
               "values at the same indices, and the statistics): their max |a-b| is a lower "
               "bound, so a divergent verdict is certain and a noise verdict only what the "
               "sample shows",
            d->n_sampled, d->n_sampled == 1 ? "" : "s", d->n_sampled == 1 ? "s" : "",
            d->n_sampled == 1 ? "is" : "are", GD_FINGERPRINT_SAMPLES);
        if (n_fetch > 0)
            say(d, "; the tensors of %d of them, where a difference begins, are worth fetching",
                n_fetch);
        say(d, ". ");
    }
    int identical = 1, any_unknown = 0, noisy = -1, last = -1;
    for (int i = 0; i < d->n_layers; i++) {
        const struct gd_diff_layer *l = &d->layers[i];
        if (l->verdict == GD_VERDICT_INCOMPARABLE)
            continue;
        last = i;
        identical &= l->verdict == GD_VERDICT_IDENTICAL;
        any_unknown |= l->verdict == GD_VERDICT_UNKNOWN;
        if (l->verdict == GD_VERDICT_NOISE && (noisy < 0 || l->err > d->layers[noisy].err))
            noisy = i;
    }
    if (last < 0) {
        say(d, "No layer of run a and run b could be compared.");
        return;
    }
    const struct gd_diff_layer *f = NULL;
    if (d->first_observed < 0 && !any_unknown) {
        if (identical)
            say(d, "%s and %s are bitwise identical in every compared layer.", la, lb);
        else
            say(d, "%s and %s agree within rounding noise in every compared layer: the largest "
                   "difference, %.3g of the layer's scale at %s, is within its bound.",
                la, lb, d->layers[noisy].err, d->layers[noisy].name);
    } else if (d->first_observed >= 0) {
        if (d->mode == GD_DIFF_REPLAY && d->first_divergent >= 0) {
            f = &d->layers[d->first_divergent];
            say(d, "The first layer with an error of its own beyond its bound is %s (%s): "
                   "max |a-b| = %.3g, %.3g of the layer's largest value",
                f->name, op_text(f), f->m.abs_max, f->err);
        } else if (d->start_known) {
            f = &d->layers[d->first_divergent];
            say(d, "The difference starts at %s (%s): max |a-b| %s %.3g, %.3g of the layer's "
                   "largest value",
                f->name, op_text(f), f->sampled ? ">=" : "=", f->m.abs_max, f->err);
        } else {
            f = &d->layers[d->first_observed];
            say(d, "The first observed difference beyond noise is at %s (%s): max |a-b| %s "
                   "%.3g, %.3g of the layer's largest value",
                f->name, op_text(f), f->sampled ? ">=" : "=", f->m.abs_max, f->err);
        }
        say_excess(d, f);
        if (d->mode != GD_DIFF_REPLAY && !d->start_known)
            say(d, " The start may lie before it, in layers that were not compared.");
        precision_facts(d, f);
        arithmetic_facts(d, f);
    }
    if (any_unknown) {
        int n = 0;
        for (int i = 0; i < d->n_layers; i++)
            n += d->layers[i].verdict == GD_VERDICT_UNKNOWN;
        say(d, " %d compared layer%s differ%s with no known bound (neither run records the op "
               "or its reduction length):",
            n, n == 1 ? "" : "s", n == 1 ? "s" : "");
        int k = 0;
        for (int i = 0; i < d->n_layers && k < 5; i++)
            if (d->layers[i].verdict == GD_VERDICT_UNKNOWN)
                say(d, "%s %s", k++ ? "," : "", d->layers[i].name);
        say(d, "%s.", n > 5 ? ", ..." : "");
        if (f == NULL) {
            f = &d->layers[last];
            precision_facts(d, f);
        }
    }
    if (!identical && d->mode != GD_DIFF_REPLAY)
        setup_facts(w);
    amplifiers(d);
    const struct gd_diff_layer *l = &d->layers[last];
    if (!quiet(l->verdict) && l != f && !d->tolerance_given) {
        char n1[32], n2[32];
        say(d, " At the last compared layer, %s, the runs differ by %s %.3g; %s of %s %s "
               "differ.",
            l->name, l->sampled ? "at least" : "up to", l->m.abs_max,
            count_text(l->n_differ, n1, sizeof n1), count_text(of_count(l), n2, sizeof n2),
            values_word(l));
    } else if (!quiet(l->verdict) && l != f) {
        char n1[32], n2[32];
        say(d, " At the last compared layer, %s, the runs differ by %s %.3g; %s of %s "
               "%s %s outside atol %g + rtol %g",
            l->name, l->sampled ? "at least" : "up to", l->m.abs_max,
            count_text(l->m.n_mismatch, n1, sizeof n1), count_text(of_count(l), n2, sizeof n2),
            values_word(l), l->m.n_mismatch == 1 ? "is" : "are", d->atol, d->rtol);
        if (l->sampled)
            say(d, ".");
        else
            say(d, ", in %lld row%s.", (long long)l->rows_mismatch,
                l->rows_mismatch == 1 ? "" : "s");
    } else if (l == f && l->m.n_mismatch > 0 && d->tolerance_given) {
        char n1[32], n2[32];
        say(d, " %s of its %s %s %s outside atol %g + rtol %g",
            count_text(l->m.n_mismatch, n1, sizeof n1), count_text(of_count(l), n2, sizeof n2),
            values_word(l), l->m.n_mismatch == 1 ? "is" : "are", d->atol, d->rtol);
        if (l->sampled)
            say(d, ".");
        else
            say(d, ", in %lld row%s.", (long long)l->rows_mismatch,
                l->rows_mismatch == 1 ? "" : "s");
    }
    if (d->has_truth)
        truth_facts(d);
    if (d->has_replay || d->mode == GD_DIFF_REPLAY)
        replay_facts(d);
}
