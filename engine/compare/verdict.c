/*
 * verdict.c: the rounding bound of each compared layer, what its inputs carry in, its
 * verdict, where the difference starts, and which layers' precision may be named.
 *
 * err is max |a-b| over the layer divided by max(|a|, |b|). Each side's own computation of a
 * sum of n products with unit roundoff u is within gamma_n = n u / (1 - n u) of the exact
 * value, relative to sum|terms|, plus 2 u_in per product when its inputs were rounded to a
 * reduced format (TF32, BF16, FP16), plus the op's ulps; sum|terms| is not known, so the
 * bound allows GD__CUSHION times max |y| for it. The bound is the sum of both sides' (and,
 * between two model files, of the layers only one side has on the way). Reduced-precision
 * inputs count only when both runs declare the same arithmetic: a difference between TF32 and
 * FP32 is the effect of that setting, not noise. The median relative error is held to a
 * probabilistic bound, 2 sqrt(n) u per side. A layer is noise when both are within the bound
 * plus what its inputs carry in: a copy carries its inputs' absolute error 1:1, other ops up
 * to GD__CARRY times their relative error. docs/COMPARISON.md gives the reasoning.
 */
#include <math.h>
#include <string.h>

#include "diff_internal.h"

static int
is_quiet(enum gd_verdict v)
{
    return v == GD_VERDICT_IDENTICAL || v == GD_VERDICT_NOISE;
}

static int
is_diverged(enum gd_verdict v)
{
    return v == GD_VERDICT_DIVERGENT || v == GD_VERDICT_AMPLIFIED || v == GD_VERDICT_NONFINITE;
}

/* The sum of both sides' values, NAN when either is unknown. */
static double
both(const double v[2])
{
    return v[0] + v[1];
}

static void
bounds(struct gd__work *w, int i)
{
    struct gd_diff_layer *dl = &w->d->layers[i];
    gd__probe_bounds(w, i);
    const struct gd__extra *x = &w->extra[i];
    double chain = both(x->chain), chain_m = both(x->chain_median);
    /* each side's rounding to the format compared in cannot be finer than half its smallest
     * subnormal: on a layer of tiny values (float16 below 6e-5) that, not u, is the step */
    double sub = 2 * gd__subnormal_half(dl->dtype) / dl->scale;
    dl->bound = both(x->own_same) + chain + sub;
    dl->bound_median = both(x->own_median_same) + chain_m + sub;
    dl->bound_declared = both(x->own) + chain + sub;
    if (!isfinite(dl->bound) || !isfinite(dl->bound_median)) {
        dl->bound = dl->bound_median = dl->bound_declared = NAN;
        snprintf(dl->note, sizeof dl->note, "%s",
                 dl->op[0] == '\0' ? "no rounding bound: neither run records the op"
                                   : "no rounding bound: the reduction length is not known");
    }
}

/* What the inputs carry in, for a layer judged in replay mode: only the rounding of its
 * captured inputs to the replay's dtype (none when both sides have one dtype). */
static void
replay_carry(const struct gd_diff *d, const struct gd_diff_layer *dl, double *norm, double *med)
{
    *norm = *med = 0;
    for (int k = 0; k < dl->n_inputs; k++) {
        const struct gd_diff_layer *in = &d->layers[dl->inputs[k]];
        if (in->rounded_side) {
            *norm = fmax(*norm, gd__unit_roundoff(in->dtype));
            *med = fmax(*med, gd__unit_roundoff(in->dtype));
        }
    }
}

/* A product of two layers (attention's scores, a Gemm of two activations): GEMM family. */
static int
is_product(const struct gd_diff_layer *dl)
{
    const struct gd_op_info *info = gd__op_of(dl->op);
    return info != NULL && info->reduction == GD_RED_GEMM && dl->n_inputs == 2;
}

/* Layer i reads tensors that are not layers and that the two runs may not share. */
static int
copy_reads_differing(const struct gd__work *w, int i)
{
    const struct gd__extra *x = &w->extra[i];
    return x->reads_non_layers && (!x->same_store || w->d->inputs_differ == 1);
}

static void
judge(struct gd__work *w, int i)
{
    struct gd_diff *d = w->d;
    struct gd_diff_layer *dl = &d->layers[i];
    if (dl->verdict == GD_VERDICT_INCOMPARABLE)
        return;
    dl->reason[0] = '\0';
    dl->explained_by_arith = 0;
    bounds(w, i);
    /*
     * What the inputs carry in. Per input: its largest absolute difference (max |a-b| when
     * it is quiet; past a divergence only the noise it could have had, its envelope) and its
     * typical one (the RMS of its differences, which exact zeros do not hide as a median
     * would). A copy passes them on unchanged, but a selection (MaxPool, Gather, Slice) may
     * pass any subset: the largest values a pool keeps after a Relu carry the large errors,
     * the zeros it drops the nil ones, so its typical error may reach its input's largest.
     * An op whose noise probe gives its inputs' gains carries, as its largest difference, the
     * sum of l1 gain times largest difference, which holds however much the op cancels (a
     * mean of values of both signs); as its typical one, the part of the inputs' difference
     * common to all values through the shift gain plus the rest through the l2 gain times
     * the square root of the terms an output sums (Cauchy-Schwarz), GD__TYPICAL times, at
     * most the largest; a product of two layers adds the product of their differences.
     * Another op, up to GD__CARRY times the largest relative difference of its inputs.
     */
    double carry_abs = 0, carry = 0, carry_median = 0, in_err = 0;
    double gain_abs = 0, gain_typ = 0, cross = 0, prev_abs = 0;
    int n_products = 0;
    int input_diverged = 0, input_unknown = !dl->inputs_known;
    int gains_known = !dl->copies && d->mode != GD_DIFF_REPLAY && dl->n_inputs > 0;
    if (d->mode == GD_DIFF_REPLAY) {
        replay_carry(d, dl, &carry, &carry_median);
        carry_abs = carry * dl->scale;
    }
    for (int k = 0; k < dl->n_inputs; k++) {
        const struct gd_diff_layer *in = &d->layers[dl->inputs[k]];
        if (in->verdict == GD_VERDICT_INCOMPARABLE || in->verdict == GD_VERDICT_UNKNOWN ||
            !isfinite(in->envelope)) {
            input_unknown = 1;
            gains_known = 0;
            continue;
        }
        in_err = fmax(in_err, in->err);
        if (d->mode == GD_DIFF_REPLAY)
            continue; /* its captured input, not its own result, went in */
        /* in_abs: the largest difference; in_shift and in_spread: the part common to all
         * values (the signed mean) and the rest (its RMS about the mean) */
        double in_abs, in_typ, in_shift, in_spread;
        if (is_quiet(in->verdict) && !in->sampled) {
            /* a float64 side compared after rounding to the other's format fed this layer
             * its own, unrounded values: that rounding is a difference too */
            double rounding = in->rounded_side ? gd__unit_roundoff(in->dtype) * in->scale : 0;
            in_abs = in->m.abs_max + rounding;
            in_typ = in->m.rms + rounding;
            in_shift = fabs(in->mean_diff);
            in_spread = sqrt(fmax(0.0, in->m.rms * in->m.rms - in->mean_diff * in->mean_diff)) +
                        rounding;
        } else {
            /* fp: noise seen in a sample may hide more; past a divergence only the noise an
             * input could have had is excused, typical noise may be common to all values */
            input_diverged |= !is_quiet(in->verdict);
            in_abs = in->envelope * in->scale;
            in_typ = (in->sampled ? in->envelope : in->envelope_median) * in->scale;
            in_shift = in_spread = in_typ;
        }
        carry_abs = fmax(carry_abs, in_abs);
        carry = fmax(carry, in_abs / in->scale);
        carry_median = fmax(carry_median, in_typ / in->scale);
        const struct gd_noise_gain *g = gains_known ? gd__input_gain(w, i, in->name) : NULL;
        if (g != NULL) {
            /* the typical difference: the common part through the shift gain, the rest
             * through the l2 gain over the terms an output sums (Cauchy-Schwarz: whatever
             * pattern the rest has), never more than the largest can make */
            double terms = dl->reduction_len > 0 ? (double)dl->reduction_len : 1.0;
            gain_abs += g->l1 * in_abs;
            gain_typ += fmin(g->l1 * in_abs, GD__TYPICAL * (g->shift * in_shift +
                                                           g->l2 * sqrt(terms) * in_spread));
            /* a product of two layers also carries the product of their differences, which
             * no gain (from one run's values) holds: the terms times both largest */
            if (n_products++ > 0)
                cross = fmax(cross, terms * prev_abs * in_abs);
            prev_abs = in_abs;
        } else {
            gains_known = 0;
        }
    }
    if (dl->copies) {
        dl->inherited = carry_abs / dl->scale;
        dl->envelope_median = dl->bound_median + dl->inherited;
    } else if (gains_known) {
        if (!is_product(dl))
            cross = 0;
        dl->inherited = (gain_abs + cross) / dl->scale;
        dl->envelope_median = dl->bound_median + (gain_typ + cross) / dl->scale;
    } else {
        dl->inherited = GD__CARRY * carry;
        dl->envelope_median = dl->bound_median + GD__CARRY * carry_median;
    }
    dl->envelope = dl->bound + dl->inherited;
    dl->envelope_declared = dl->bound_declared + dl->inherited;
    dl->input_err = d->mode == GD_DIFF_REPLAY ? carry : in_err;
    double base = fmax(dl->input_err, isfinite(dl->bound) ? dl->bound : 0);
    dl->growth = base > 0 ? dl->err / base : (dl->err > 0 ? INFINITY : 0);
    double env_median_declared = dl->envelope_median - both(w->extra[i].own_median_same) +
                                 both(w->extra[i].own_median);
    double r_max = dl->envelope > 0 ? dl->err / dl->envelope : dl->err > 0 ? INFINITY : 0;
    double r_med = dl->envelope_median > 0 ? dl->err_median / dl->envelope_median
                   : dl->err_median > 0    ? INFINITY
                                           : 0;
    if (isfinite(dl->bound)) {
        dl->decided_by = r_med > r_max ? "median" : "max";
        dl->ratio = fmax(r_max, r_med);
        dl->ratio_max = r_max;
        dl->ratio_median = r_med;
    } else {
        dl->decided_by = NULL;
        dl->ratio = dl->ratio_max = dl->ratio_median = NAN;
    }
    /* A copy that is not a step (data movement, a selection, Relu) computes nothing: its
     * own error is zero, so with every input it reads known and quiet it is quiet too.
     * Unless it reads tensors that are not layers and that the runs may hold differently:
     * weights or inputs loaded in two formats (float16 against bfloat16), or other inputs;
     * then it is where that difference shows first (a token embedding's Gather). */
    int moves_only = dl->copies && !dl->discontinuous && !copy_reads_differing(w, i);
    int inputs_quiet_known = dl->inputs_known && !input_unknown && !input_diverged &&
                             dl->n_inputs > 0;
    if (dl->m.bitwise_equal) {
        dl->verdict = GD_VERDICT_IDENTICAL;
    } else if (dl->m.nan_disagree > 0 || dl->m.inf_disagree > 0) {
        dl->verdict = GD_VERDICT_NONFINITE;
    } else if (!isfinite(dl->bound)) {
        dl->verdict = GD_VERDICT_UNKNOWN;
    } else if ((dl->err <= dl->envelope && dl->err_median <= dl->envelope_median) ||
               (moves_only && inputs_quiet_known && d->mode != GD_DIFF_MODELS)) {
        dl->verdict = GD_VERDICT_NOISE;
    } else if (dl->truth_quiet) {
        dl->verdict = GD_VERDICT_NOISE;
        snprintf(dl->reason, sizeof dl->reason, "both runs are within their rounding of the "
                 "float64 reference");
    } else if (dl->growth >= GD__AMPLIFY && dl->discontinuous && dl->input_err > 0) {
        dl->verdict = GD_VERDICT_AMPLIFIED;
        snprintf(dl->reason, sizeof dl->reason, "a step: the error grew %.3g-fold over %s",
                 dl->growth, dl->inputs_known ? "its input's" : "the layer compared before it");
    } else if (dl->discontinuous && dl->copies && !dl->inputs_known) {
        /* A step computes exactly: its output moves only where its input did. Its input was
         * not compared (or not recorded), so what it amplified lies before it, unseen. */
        dl->verdict = GD_VERDICT_AMPLIFIED;
        snprintf(dl->reason, sizeof dl->reason, "a step, exact in itself: its input moved, and "
                 "that input was not compared");
    } else if (dl->growth >= GD__AMPLIFY && input_diverged && !input_unknown) {
        dl->verdict = GD_VERDICT_AMPLIFIED;
        snprintf(dl->reason, sizeof dl->reason, "the error grew %.3g-fold over its input's",
                 dl->growth);
    } else {
        dl->verdict = GD_VERDICT_DIVERGENT;
        dl->explained_by_arith = dl->arith_a != dl->arith_b && dl->err <= dl->envelope_declared &&
                                 dl->err_median <= env_median_declared;
    }
}

void
gd__verdicts(struct gd__work *w)
{
    for (int i = 0; i < w->d->n_layers; i++)
        judge(w, i);
}

/*
 * What an effective precision looks like when only the bits and the reduction length say it:
 * FP32's own rounding of a sum of n terms can lose up to log2(n) bits when its errors add up
 * (equal terms), so below 20 bits FP32 is named too while the bits are within that range.
 */
static const char *
arithmetic_from_bits(double bits, enum gd_dtype dtype, int64_t n)
{
    if (dtype == GD_F64)
        return bits >= 45 ? "FP64 reassociation" : bits >= 20 ? "FP32" : "below FP32";
    double fp32_floor = 23.0 - log2((double)(n > 1 ? n : 1)); /* equal terms: n u */
    int fp32_possible = bits >= fp32_floor;
    if (bits >= 20)
        return "FP32 reassociation";
    if (bits >= 13)
        return fp32_possible ? "FP32 rounding of a long sum" : "between FP32 and TF32";
    if (bits >= 9)
        return fp32_possible ? "TF32 or FP16, or FP32 rounding of this long sum"
                             : "TF32 or FP16";
    if (bits >= 6)
        return fp32_possible ? "BF16, or FP32 rounding of this long sum" : "BF16";
    return "below BF16";
}

/*
 * What the layer's own error looks like, matched against what its noise probes measured
 * each arithmetic to make on this layer's data: the reduced format whose median error is
 * nearest (within a factor of 3), both of TF32 and FP16 when their figures are within 25%
 * of each other (the data cannot tell them apart: FP16 differs only where values are
 * outside its range). NULL when no probe measured reduced formats or none is near.
 */
static const char *
arithmetic_from_probes(const struct gd__work *w, int i)
{
    const struct gd_diff_layer *dl = &w->d->layers[i];
    const struct gd_noise_probe *p = NULL;
    for (int k = 0; k < 3 && p == NULL; k++)
        if (w->extra[i].probe[k].outputs > 0 && w->extra[i].probe[k].has[GD_NOISE_TF32])
            p = &w->extra[i].probe[k];
    double m = dl->err_median;
    if (p == NULL || !(m > 0))
        return NULL;
    double pm[GD_NOISE_N];
    for (int a = 0; a < GD_NOISE_N; a++)
        pm[a] = gd__probe_median(w, i, p, a);
    static const char *const names[GD_NOISE_N] = {"FP32", "TF32", "BF16", "FP16"};
    int best = -1;
    double best_score = INFINITY;
    for (int a = GD_NOISE_TF32; a < GD_NOISE_N; a++) {
        if (!p->has[a] || !(pm[a] > 0) ||
            !(pm[a] > 2 * pm[GD_NOISE_FP32])) /* a format FP32 rounding hides */
            continue;
        double score = fabs(log2(m / pm[a]));
        if (score < best_score) {
            best_score = score;
            best = a;
        }
    }
    if (best < 0 || best_score > log2(3.0))
        return NULL;
    if ((best == GD_NOISE_TF32 || best == GD_NOISE_FP16) && p->has[GD_NOISE_TF32] &&
        p->has[GD_NOISE_FP16] && pm[GD_NOISE_TF32] > 0 && pm[GD_NOISE_FP16] > 0 &&
        fabs(log2(pm[GD_NOISE_TF32] / pm[GD_NOISE_FP16])) < log2(1.25))
        return "TF32 or FP16";
    return names[best];
}

/* The precision of a layer's own error may be named: not of a copy, a step, a sparse few. */
static const char *
own_label(const struct gd__work *w, int i)
{
    const struct gd_diff_layer *dl = &w->d->layers[i];
    if (dl->verdict != GD_VERDICT_DIVERGENT || dl->copies || dl->discontinuous || dl->sparse ||
        gd__unit_roundoff(dl->dtype) == 0)
        return NULL;
    const char *from_probes = dl->dtype == GD_F32 ? arithmetic_from_probes(w, i) : NULL;
    return from_probes ? from_probes
                       : arithmetic_from_bits(dl->bits, dl->dtype, dl->reduction_len);
}

static int
inputs_quiet(const struct gd_diff *d, const struct gd_diff_layer *dl)
{
    if (!dl->inputs_known)
        return 0;
    for (int k = 0; k < dl->n_inputs; k++)
        if (!is_quiet(d->layers[dl->inputs[k]].verdict))
            return 0;
    return 1;
}

void
gd__starts(struct gd__work *w)
{
    struct gd_diff *d = w->d;
    d->first_divergent = d->first_observed = d->cause = -1;
    d->n_amplifiers = 0;
    for (int i = 0; i < d->n_layers; i++) {
        struct gd_diff_layer *dl = &d->layers[i];
        dl->is_amplifier = dl->verdict == GD_VERDICT_AMPLIFIED;
        d->n_amplifiers += dl->is_amplifier;
        if (!is_diverged(dl->verdict))
            continue;
        if (d->first_observed < 0)
            d->first_observed = i;
        /* In a replay every layer starts from captured inputs: the start is the first layer
         * with an error of its own (a step flipped by the inputs' rounding is not one). */
        int starts = d->mode == GD_DIFF_REPLAY ? dl->verdict != GD_VERDICT_AMPLIFIED
                                               : inputs_quiet(d, dl);
        /* data movement adds no error of its own: what it shows, it was given */
        if (dl->copies && !dl->discontinuous && dl->verdict != GD_VERDICT_NONFINITE &&
            !copy_reads_differing(w, i))
            starts = 0;
        if (starts && d->first_divergent < 0)
            d->first_divergent = i;
    }
    if (d->first_divergent >= 0)
        d->layers[d->first_divergent].is_first_divergent = 1;
    if (d->first_observed >= 0)
        d->layers[d->first_observed].is_first_observed = 1;
    d->start_known = d->first_divergent >= 0 && d->first_divergent == d->first_observed;
    for (int i = 0; i < d->n_layers; i++) {
        struct gd_diff_layer *dl = &d->layers[i];
        int own = d->mode == GD_DIFF_REPLAY || i == d->first_divergent;
        dl->arithmetic = own ? own_label(w, i) : NULL;
        if (d->mode == GD_DIFF_REPLAY && dl->verdict != GD_VERDICT_INCOMPARABLE) {
            dl->has_own = 1;
            dl->own_err = dl->verdict == GD_VERDICT_AMPLIFIED ? 0 : dl->err;
            dl->own_bound = dl->envelope;
            dl->own_bits = dl->bits;
            dl->own_verdict = dl->verdict;
            dl->own_arithmetic = dl->arithmetic;
        }
    }
    if (d->mode == GD_DIFF_REPLAY)
        d->cause = d->first_divergent;
}
