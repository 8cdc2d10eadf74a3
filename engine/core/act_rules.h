/*
 * act_rules.h: the formulas of the pointwise float ops (the unary ones of engine/cpu/op_act.c
 * and Pow), stated once for the CPU backends and for the cuda backend's --repro bitwise
 * kernels (engine/cuda/repro_act.cu). The includer defines `real` (float, or double for
 * cpu64) and R(fn), the function fn in that precision: engine/cpu/cpu.h's R() is libm's for
 * cpu64 and engine/core/math_rules.h's for cpu; the CUDA kernels take math_rules.h's. Each
 * step is one operation rounded to `real` as written (-ffp-contract=off on the CPU,
 * --fmad=false for the kernels), so `cpu` and `cuda --repro bitwise` give the same bits.
 *
 * Formulas are chosen for accuracy where the textbook one loses it: expm1 for Elu, Selu and
 * Celu, a split Softplus and Sigmoid that never overflow, Gelu in forms that do not cancel.
 * Float attributes come in as `real` (the float32 attribute converted once by the caller).
 */
#ifndef GPUDIFF_CORE_ACT_RULES_H
#define GPUDIFF_CORE_ACT_RULES_H

#ifdef __CUDACC__
#define GD_ACT_FN static __host__ __device__ inline
#else
#define GD_ACT_FN static inline
#endif

GD_ACT_FN real
gd__act_relu(real x)
{
    /* x for x > 0 and for NaN, +0 otherwise (-0 included); as one comparison it vectorizes */
    return !(x <= 0) ? x : 0;
}

GD_ACT_FN real
gd__act_leaky_relu(real x, real alpha)
{
    return x >= 0 ? x : alpha * x;
}

GD_ACT_FN real
gd__act_elu(real x, real alpha)
{
    return x > 0 ? x : alpha * R(expm1)(x);
}

GD_ACT_FN real
gd__act_selu(real x, real alpha, real gamma)
{
    return gamma * (x > 0 ? x : alpha * R(expm1)(x));
}

GD_ACT_FN real
gd__act_sigmoid(real x)
{
    if (x >= 0)
        return 1 / (1 + R(exp)(-x));
    real e = R(exp)(x);
    return e / (1 + e);
}

GD_ACT_FN real
gd__act_softplus(real x)
{
    /* log(1 + e^x) = max(x, 0) + log1p(e^-|x|) */
    return (x > 0 ? x : 0) + R(log1p)(R(exp)(-R(fabs)(x)));
}

GD_ACT_FN real
gd__act_hard_sigmoid(real x, real alpha, real beta)
{
    real v = alpha * x + beta;
    return v < 0 ? 0 : (v > 1 ? 1 : v);
}

GD_ACT_FN real
gd__act_hard_swish(real x)
{
    /*
     * ONNX: x * max(0, min(1, x/6 + 1/2)), computed as x * max(0, min(6, x + 3)) / 6: near
     * the kink at x = -3, x/6 + 1/2 cancels and keeps the rounding error of x/6 whole, while
     * x + 3 is exact there (Sterbenz), so the result stays within a few ulps.
     */
    real v = x + 3;
    return x * (v < 0 ? 0 : (v > 6 ? 6 : v)) / 6;
}

GD_ACT_FN real
gd__act_gelu(real x, int tanh_form)
{
    if (tanh_form) {
        /*
         * 0.5 x (1 + tanh(w)) = x sigmoid(2w), w = sqrt(2/pi) (x + 0.044715 x^3): as
         * 1 + tanh(w) the error of tanh (ulps of 1) is relative to a sum that vanishes as
         * x -> -inf; the sigmoid form, split on the sign as in sigmoid(), keeps it relative.
         */
        const real k = (real)0.7978845608028654; /* sqrt(2/pi) */
        real w2 = 2 * (k * (x + (real)0.044715 * x * x * x));
        if (w2 >= 0)
            return x / (1 + R(exp)(-w2));
        real e = R(exp)(w2);
        return x * e / (1 + e);
    }
    /* 0.5 x (1 + erf(x / sqrt 2)) = 0.5 x erfc(-x / sqrt 2), which does not cancel for x < 0 */
    return (real)0.5 * x * R(erfc)(-(x * (real)0.7071067811865476));
}

GD_ACT_FN real
gd__act_sign(real x)
{
    return x > 0 ? 1 : (x < 0 ? -1 : x); /* keeps 0, -0 and NaN */
}

GD_ACT_FN real
gd__act_clip(real x, real lo, real hi)
{
    if (x < lo)
        x = lo;
    if (x > hi)
        x = hi;
    return x;
}

/* x / (1 + |x|), two roundings; +-inf give inf / inf = NaN, as ONNX's reference and PyTorch
 * compute the formula. */
GD_ACT_FN real
gd__act_softsign(real x)
{
    return x / (1 + R(fabs)(x));
}

GD_ACT_FN real
gd__act_thresholded_relu(real x, real alpha)
{
    return x > alpha ? x : 0; /* NaN gives 0, as ONNX's where(x > alpha, x, 0) */
}

/* max(0, x) + min(0, alpha (exp(x / alpha) - 1)), with expm1 for x <= 0 (no cancellation) */
GD_ACT_FN real
gd__act_celu(real x, real alpha)
{
    return x > 0 ? x : alpha * R(expm1)(x / alpha);
}

/* x + bias below -lambd, x - bias above lambd, 0 between (and for NaN, as ONNX's where()s) */
GD_ACT_FN real
gd__act_shrink(real x, real lambd, real bias)
{
    return x < -lambd ? x + bias : (x > lambd ? x - bias : 0);
}

/* x tanh(softplus(x)), softplus in the accurate form above; -inf gives -inf * 0 = NaN, as the
 * formula does in ONNX's reference and PyTorch */
GD_ACT_FN real
gd__act_mish(real x)
{
    return x * R(tanh)(gd__act_softplus(x));
}

#endif
