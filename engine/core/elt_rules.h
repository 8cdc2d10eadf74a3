/*
 * elt_rules.h: the element rules that the CPU backends and the CUDA kernels share, stated
 * once so that both give the same bits: how one value converts between dtypes (Cast,
 * CastLike), and the integer arithmetic of the element-wise ops and reductions. Compiled as
 * host code by the C compiler and as host and device code by nvcc.
 *
 * Integers travel as int64_t: signed types sign-extended, unsigned ones zero-extended
 * (uint64 keeps its bit pattern). Sums, differences and products are computed on the 64-bit
 * two's complement pattern and truncated when stored, which is arithmetic modulo 2^bits for
 * every width (ONNX leaves overflow undefined; this is what numpy and PyTorch give).
 *
 * The float rules of Cast are in docs/NUMERICS.md ("Cast"). Float values live in the
 * backend's compute dtype whatever their logical dtype, so a cast to float16 or bfloat16
 * rounds the value to that format and keeps it in the compute dtype; the later engineer who
 * adds real 16-bit storage extends gd__cast_float_value() and the store of the result.
 */
#ifndef GPUDIFF_CORE_ELT_RULES_H
#define GPUDIFF_CORE_ELT_RULES_H

#include <math.h>
#include <stdint.h>

#include "gpudiff/tensor.h"

#ifdef __CUDACC__
#define GD_ELT_FN static __host__ __device__ __forceinline__
#else
#define GD_ELT_FN static inline
#endif

/* 1 for the unsigned integer dtypes and bool. */
GD_ELT_FN int
gd__dtype_unsigned(enum gd_dtype t)
{
    return t == GD_U8 || t == GD_U16 || t == GD_U32 || t == GD_U64 || t == GD_BOOL;
}

/* 1 for the integer dtypes (bool excluded). */
GD_ELT_FN int
gd__dtype_integer(enum gd_dtype t)
{
    return t == GD_I8 || t == GD_I16 || t == GD_I32 || t == GD_I64 || t == GD_U8 || t == GD_U16 ||
           t == GD_U32 || t == GD_U64;
}

/* Width in bits of an integer dtype (8 for bool). */
GD_ELT_FN int
gd__dtype_bits(enum gd_dtype t)
{
    switch (t) {
    case GD_I8:
    case GD_U8:
    case GD_BOOL:
        return 8;
    case GD_I16:
    case GD_U16:
        return 16;
    case GD_I32:
    case GD_U32:
        return 32;
    default:
        return 64;
    }
}

/* Element i of integer (or bool) data p of dtype t, extended to 64 bits. */
GD_ELT_FN int64_t
gd__int_load(enum gd_dtype t, const void *p, int64_t i)
{
    switch (t) {
    case GD_I8:
        return ((const int8_t *)p)[i];
    case GD_I16:
        return ((const int16_t *)p)[i];
    case GD_I32:
        return ((const int32_t *)p)[i];
    case GD_U8:
    case GD_BOOL:
        return ((const uint8_t *)p)[i];
    case GD_U16:
        return ((const uint16_t *)p)[i];
    case GD_U32:
        return ((const uint32_t *)p)[i];
    default: /* I64, U64 */
        return ((const int64_t *)p)[i];
    }
}

/* Stores v into element i of p, truncated to t's width (bool: v != 0). */
GD_ELT_FN void
gd__int_store(enum gd_dtype t, void *p, int64_t i, int64_t v)
{
    uint64_t u = (uint64_t)v;
    switch (t) {
    case GD_I8:
    case GD_U8:
        ((uint8_t *)p)[i] = (uint8_t)u;
        break;
    case GD_BOOL:
        ((uint8_t *)p)[i] = u != 0;
        break;
    case GD_I16:
    case GD_U16:
        ((uint16_t *)p)[i] = (uint16_t)u;
        break;
    case GD_I32:
    case GD_U32:
        ((uint32_t *)p)[i] = (uint32_t)u;
        break;
    default:
        ((uint64_t *)p)[i] = u;
        break;
    }
}

/* ---- integer arithmetic ---- */

enum gd__int_op {
    GD_IOP_ADD,
    GD_IOP_SUB,
    GD_IOP_MUL,
    GD_IOP_DIV,  /* truncates toward zero; x / 0 = 0; MIN / -1 wraps to MIN */
    GD_IOP_MOD,  /* Mod fmod=0: the sign of the divisor (Python's %); x mod 0 = 0 */
    GD_IOP_FMOD, /* Mod fmod=1: C's %, the sign of the dividend; x fmod 0 = 0 */
    GD_IOP_MAX,
    GD_IOP_MIN,
    GD_IOP_SHL, /* BitShift on unsigned types; a shift by the width or more gives 0 */
    GD_IOP_SHR,
    GD_IOP_AND, /* And, Or, Xor on bool (0/1) */
    GD_IOP_OR,
    GD_IOP_XOR
};

/* a op b on values of a dtype that is unsigned (uns) or not, bits wide. */
GD_ELT_FN int64_t
gd__int_binary(int op, int64_t a, int64_t b, int uns, int bits)
{
    uint64_t ua = (uint64_t)a, ub = (uint64_t)b;
    switch (op) {
    case GD_IOP_ADD:
        return (int64_t)(ua + ub);
    case GD_IOP_SUB:
        return (int64_t)(ua - ub);
    case GD_IOP_MUL:
        return (int64_t)(ua * ub);
    case GD_IOP_DIV:
        if (b == 0)
            return 0;
        if (uns)
            return (int64_t)(ua / ub);
        if (b == -1) /* INT64_MIN / -1 overflows: the wrapped negation */
            return (int64_t)(0 - ua);
        return a / b;
    case GD_IOP_MOD:
    case GD_IOP_FMOD: {
        if (b == 0)
            return 0;
        if (uns)
            return (int64_t)(ua % ub);
        if (b == -1)
            return 0;
        int64_t r = a % b;
        if (op == GD_IOP_MOD && r != 0 && ((r < 0) != (b < 0)))
            r += b;
        return r;
    }
    case GD_IOP_MAX:
        return (uns ? ua > ub : a > b) ? a : b;
    case GD_IOP_MIN:
        return (uns ? ua < ub : a < b) ? a : b;
    case GD_IOP_SHL:
        return ub >= (uint64_t)bits ? 0 : (int64_t)(ua << ub);
    case GD_IOP_SHR:
        return ub >= (uint64_t)bits ? 0 : (int64_t)(ua >> ub);
    case GD_IOP_AND:
        return (a != 0) & (b != 0);
    case GD_IOP_OR:
        return (a != 0) | (b != 0);
    case GD_IOP_XOR:
        return (a != 0) ^ (b != 0);
    }
    return 0;
}

enum gd__cmp_op { GD_CMP_GREATER, GD_CMP_LESS, GD_CMP_EQUAL, GD_CMP_GREATER_EQ, GD_CMP_LESS_EQ };

/* a op b of two integers (unsigned ones compared as such): 0 or 1. */
GD_ELT_FN int
gd__int_compare(int op, int64_t a, int64_t b, int uns)
{
    uint64_t ua = (uint64_t)a, ub = (uint64_t)b;
    int gt = uns ? ua > ub : a > b, lt = uns ? ua < ub : a < b;
    switch (op) {
    case GD_CMP_GREATER:
        return gt;
    case GD_CMP_LESS:
        return lt;
    case GD_CMP_EQUAL:
        return a == b;
    case GD_CMP_GREATER_EQ:
        return !lt;
    default:
        return !gt;
    }
}

/* |a| (wrapping: |MIN| = MIN), for a signed dtype; unsigned values are their own. */
GD_ELT_FN int64_t
gd__int_abs(int64_t a, int uns)
{
    return uns || a >= 0 ? a : (int64_t)(0 - (uint64_t)a);
}

GD_ELT_FN int64_t
gd__int_neg(int64_t a)
{
    return (int64_t)(0 - (uint64_t)a);
}

GD_ELT_FN int64_t
gd__int_sign(int64_t a, int uns)
{
    if (uns)
        return a != 0;
    return (a > 0) - (a < 0);
}

/* ---- conversions (Cast) ---- */

/*
 * x rounded to float16, round to nearest even: 11 significant bits, subnormals below 2^-14
 * in steps of 2^-24, magnitudes from 65520 (the largest value, 65504, plus half its ulp) up
 * to infinity. NaN stays NaN and a zero keeps its sign. x / q and the product back are
 * exact (q is a power of two), rint rounds half to even.
 */
GD_ELT_FN double
gd__round_f16(double x)
{
    double a = fabs(x);
    int e;
    if (x != x)
        return x;
    if (a >= 65520.0)
        return copysign((double)INFINITY, x);
    frexp(a, &e); /* a in [2^(e-1), 2^e): the step there is 2^(e-1-10) */
    int qe = e - 11 < -24 ? -24 : e - 11;
    double q = ldexp(1.0, qe);
    return copysign(rint(a / q) * q, x);
}

/*
 * x rounded to bfloat16, round to nearest even: 8 significant bits, float32's exponent
 * range (subnormals in steps of 2^-133), infinity from (2 - 2^-8) 2^127 up. NaN stays NaN.
 */
GD_ELT_FN double
gd__round_bf16(double x)
{
    double a = fabs(x);
    int e;
    if (x != x)
        return x;
    if (a >= ldexp(2.0 - ldexp(1.0, -8), 127))
        return copysign((double)INFINITY, x);
    frexp(a, &e);
    int qe = e - 8 < -133 ? -133 : e - 8;
    double q = ldexp(1.0, qe);
    return copysign(rint(a / q) * q, x);
}

/*
 * The value a cast to float dtype `to` gives for the float x: float16 and bfloat16 round to
 * their format; float32 and float64 are both the backend's compute dtype, which keeps x.
 */
GD_ELT_FN double
gd__cast_float_value(double x, enum gd_dtype to)
{
    if (to == GD_F16)
        return gd__round_f16(x);
    if (to == GD_BF16)
        return gd__round_bf16(x);
    return x;
}

/*
 * The integer v as a double rounded to odd: exact below 2^53; above, the bits that do not fit
 * are folded into the last one kept (sticky), so that rounding the result once more to
 * float16 or bfloat16 (far fewer than 51 bits) rounds v correctly, never twice.
 */
GD_ELT_FN double
gd__int_to_double_odd(int64_t v, int uns)
{
    int neg = !uns && v < 0;
    uint64_t m = neg ? 0 - (uint64_t)v : (uint64_t)v;
    int shift = 0;
    while ((m >> shift) >= ((uint64_t)1 << 53))
        shift++;
    uint64_t kept = m >> shift;
    if (shift > 0 && (m & (((uint64_t)1 << shift) - 1)) != 0)
        kept |= 1;
    double d = ldexp((double)kept, shift);
    return neg ? -d : d;
}

/* The integer v as the nearest double and the nearest float (one rounding each). */
GD_ELT_FN double
gd__int_to_double(int64_t v, int uns)
{
    return uns ? (double)(uint64_t)v : (double)v;
}

GD_ELT_FN float
gd__int_to_float(int64_t v, int uns)
{
    return uns ? (float)(uint64_t)v : (float)v;
}

/*
 * The float x as integer dtype t: truncated toward zero, saturated to t's range (so +-inf go
 * to the largest and smallest values), NaN to 0; bool is x != 0 (NaN is true). ONNX leaves
 * out-of-range conversions undefined; saturation is what CUDA's conversion instructions do
 * for int32 and int64, and the CPU does the same for every width.
 */
GD_ELT_FN int64_t
gd__float_to_int(double x, enum gd_dtype t)
{
    if (t == GD_BOOL)
        return x != 0;
    if (x != x)
        return 0;
    double v = trunc(x);
    switch (t) {
    case GD_I64:
        if (v >= 9223372036854775808.0)
            return INT64_MAX;
        if (v <= -9223372036854775808.0)
            return INT64_MIN;
        return (int64_t)v;
    case GD_U64:
        if (v >= 18446744073709551616.0)
            return (int64_t)UINT64_MAX;
        if (v <= 0)
            return 0;
        return (int64_t)(uint64_t)v;
    default: {
        int bits = gd__dtype_bits(t);
        double lo = gd__dtype_unsigned(t) ? 0 : -ldexp(1.0, bits - 1);
        double hi = gd__dtype_unsigned(t) ? ldexp(1.0, bits) - 1 : ldexp(1.0, bits - 1) - 1;
        return (int64_t)(v < lo ? lo : (v > hi ? hi : v));
    }
    }
}

#endif
