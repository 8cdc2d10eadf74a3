/*
 * verdict.c: the rounding bound of a layer, its effective precision, and its verdict.
 *
 * err is max |a-b| over the layer divided by max |b|. Two correct float implementations of
 * a sum of n products differ by at most 2 gamma_n sum|terms| per element (gamma_n =
 * n u / (1 - n u), u the unit roundoff); sum|terms| is not known, so the bound allows
 * NOISE_CUSHION times max |y| for it. The median relative error is held to a
 * probabilistic bound, 4 sqrt(n) u: rounding errors add like a random walk. A layer is
 * noise when both are within its bound plus CARRY times what its noisy inputs carried in.
 * docs/COMPARISON.md gives the reasoning and the constants.
 */
#include <math.h>
#include <string.h>

#include "gpudiff/ops.h"
#include "diff_internal.h"

#define NOISE_CUSHION 4.0 /* allowance for sum|terms| / max|y| */
#define CARRY 4.0         /* how much a layer may scale the noise its inputs carry */
#define AMPLIFY 100.0     /* growth over the input's error that makes an amplifier */

/* Significand bits of a float dtype (24 for float32). */
static double
significand_bits(enum gd_dtype dtype)
{
    double u = gd__unit_roundoff(dtype);
    return u > 0 ? -log2(u) : 0;
}

static int
op_ulps(const char *op)
{
    enum gd_op e;
    if (op == NULL || op[0] == '\0' || gd_op_from_name(op, &e) != 0)
        return 4; /* unknown op: allow a library function's few ulps */
    return gd_op_info(e)->ulps;
}

/* What an effective precision looks like, for float32 layers and for float64 ones. */
static const char *
arithmetic_name(double bits, enum gd_dtype dtype)
{
    if (dtype == GD_F64)
        return bits >= 45 ? "FP64 reassociation" : bits >= 20 ? "FP32" : "below FP32";
    if (bits >= 20)
        return "FP32 reassociation";
    if (bits >= 13)
        return "between FP32 and TF32";
    if (bits >= 9)
        return "TF32 or FP16";
    if (bits >= 6)
        return "BF16";
    return "below BF16";
}

void
gd__layer_bounds(struct gd_diff_layer *dl)
{
    double u = gd__unit_roundoff(dl->dtype);
    double n = (double)dl->reduction_len;
    double gamma = n * u < 1 ? n * u / (1 - n * u) : INFINITY;
    int ulps = op_ulps(dl->op);
    dl->bound = NOISE_CUSHION * 2 * gamma + 2 * ulps * u;
    dl->bound_median = 4 * sqrt(n) * u + 2 * ulps * u;
    double p = significand_bits(dl->dtype);
    /* A correctly rounded result's median relative error is u/2 = 2^-(p+1): report p. */
    dl->bits = dl->err_median > 0 ? fmin(p, -log2(2 * dl->err_median)) : p;
    dl->arithmetic = u > 0 ? arithmetic_name(dl->bits, dl->dtype) : "exact (integers)";
}

static int
is_quiet(enum gd_verdict v)
{
    return v == GD_VERDICT_IDENTICAL || v == GD_VERDICT_NOISE;
}

void
gd__layer_verdict(struct gd_diff *d, int i)
{
    struct gd_diff_layer *dl = &d->layers[i];
    if (dl->verdict == GD_VERDICT_INCOMPARABLE)
        return;
    double carry = 0, carry_median = 0, in_err = 0;
    int input_diverged = 0;
    for (int k = 0; k < dl->n_inputs; k++) {
        const struct gd_diff_layer *in = &d->layers[dl->inputs[k]];
        if (in->verdict == GD_VERDICT_INCOMPARABLE)
            continue;
        in_err = fmax(in_err, in->err);
        if (is_quiet(in->verdict)) {
            carry = fmax(carry, in->err);
            carry_median = fmax(carry_median, in->err_median);
        } else {
            /* Past a divergence only the noise an input could have had is excused. */
            input_diverged = 1;
            carry = fmax(carry, in->envelope);
            carry_median = fmax(carry_median, in->envelope_median);
        }
    }
    dl->input_err = in_err;
    dl->envelope = dl->bound + CARRY * carry;
    dl->envelope_median = dl->bound_median + CARRY * carry_median;
    double base = fmax(in_err, dl->bound);
    dl->growth = base > 0 ? dl->err / base : (dl->err > 0 ? INFINITY : 0);
    if (dl->m.bitwise_equal) {
        dl->verdict = GD_VERDICT_IDENTICAL;
        dl->bits = significand_bits(dl->dtype);
    } else if (dl->m.nan_disagree > 0 || dl->m.inf_disagree > 0) {
        dl->verdict = GD_VERDICT_NONFINITE;
    } else if (dl->err <= dl->envelope && dl->err_median <= dl->envelope_median) {
        dl->verdict = GD_VERDICT_NOISE;
    } else if (dl->growth >= AMPLIFY && (input_diverged || dl->discontinuous)) {
        dl->verdict = GD_VERDICT_AMPLIFIED;
    } else {
        dl->verdict = GD_VERDICT_DIVERGENT;
    }
    if (dl->verdict == GD_VERDICT_AMPLIFIED) {
        dl->is_amplifier = 1;
        d->n_amplifiers++;
    }
    if (!is_quiet(dl->verdict) && !input_diverged && d->first_divergent < 0) {
        dl->is_first_divergent = 1;
        d->first_divergent = i;
    }
}
