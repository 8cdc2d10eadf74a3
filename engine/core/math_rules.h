/*
 * math_rules.h: the float32 elementary functions of the `cpu` backend and of the `cuda`
 * backend with --repro bitwise, stated once for both, bit for bit. Compiled as host code by
 * the C compiler (engine/cpu, -ffp-contract=off) and as host and device code by nvcc
 * (engine/cuda/repro_*.cu, --fmad=false): every step is one IEEE double operation (+, -, *,
 * /, sqrt, the conversions between float, double and integers), all correctly rounded to
 * nearest on an x86-64 or AArch64 CPU and on every NVIDIA GPU, with no fused multiply-add,
 * no library call and no table that differs between the two. So the same float32 input gives
 * the same float32 output on both, whatever libm or CUDA's math library would give.
 *
 * Each function evaluates its result in double, with a relative error of a few units of
 * 2^-53 (2^-40 at worst: the argument reduction of pow and of the trigonometric functions
 * near a multiple of pi/2), and rounds it once to float: within 0.5 + 2^-12 ulp of the exact
 * value, so at most 1 ulp, and correctly rounded but where the exact value lies that close to
 * a rounding boundary. tests/engine/check_math_rules.c measures it against long double libm
 * over dense sweeps of every function's float inputs (docs/NUMERICS.md gives the figures).
 * Special values (NaN, infinities, signed zeros, the poles) follow C99's Annex F; a NaN made
 * here is the quiet NaN 0x7fc00000 on both.
 *
 * `cpu64` keeps libm's double functions: it is the float64 reference, not a copy of these.
 */
#ifndef GPUDIFF_CORE_MATH_RULES_H
#define GPUDIFF_CORE_MATH_RULES_H

#include <math.h>
#include <stdint.h>
#include <string.h>

#ifdef __CUDACC__
#define GD_MATH_FN static __host__ __device__ inline
#else
#define GD_MATH_FN static inline
#endif

/* ---- bits ---- */

GD_MATH_FN uint64_t
gd__m_dbits(double x)
{
#ifdef __CUDA_ARCH__
    return (uint64_t)__double_as_longlong(x);
#else
    uint64_t u;
    memcpy(&u, &x, sizeof u);
    return u;
#endif
}

GD_MATH_FN double
gd__m_dfrom(uint64_t u)
{
#ifdef __CUDA_ARCH__
    return __longlong_as_double((long long)u);
#else
    double x;
    memcpy(&x, &u, sizeof x);
    return x;
#endif
}

GD_MATH_FN uint32_t
gd__m_fbits(float x)
{
#ifdef __CUDA_ARCH__
    return (uint32_t)__float_as_uint(x);
#else
    uint32_t u;
    memcpy(&u, &x, sizeof u);
    return u;
#endif
}

GD_MATH_FN float
gd__m_ffrom(uint32_t u)
{
#ifdef __CUDA_ARCH__
    return __uint_as_float(u);
#else
    float x;
    memcpy(&x, &u, sizeof x);
    return x;
#endif
}

#define GD__M_FNAN 0x7fc00000u
#define GD__M_FINF 0x7f800000u

GD_MATH_FN int
gd__m_isnanf(float x)
{
    return (gd__m_fbits(x) & 0x7fffffffu) > GD__M_FINF;
}

/* x with the sign bit of neg (1: negative): exact, signed zeros included */
GD_MATH_FN float
gd__m_signed(float x, uint32_t neg)
{
    return gd__m_ffrom((gd__m_fbits(x) & 0x7fffffffu) | (neg << 31));
}

/* |x| rounded to the nearest integer, ties to even, for |x| < 2^51: the sum with 1.5 * 2^52
 * lands where the ulp is 1 (no rint(): its rounding mode is the library's business) */
GD_MATH_FN double
gd__m_rint(double x)
{
    const double magic = 6755399441055744.0;
    return (x + magic) - magic;
}

/* 2^k for -1022 <= k <= 1023 */
GD_MATH_FN double
gd__m_pow2(int k)
{
    return gd__m_dfrom((uint64_t)(k + 1023) << 52);
}

/* ---- double kernels (arguments as each caller guarantees them) ---- */

#define GD__M_LN2      0.6931471805599453
#define GD__M_LN2_HI   0.6931471803691238 /* 33 significant bits: k * GD__M_LN2_HI is exact */
#define GD__M_LN2_LO   1.9082149292705877e-10
#define GD__M_LOG2E    1.4426950408889634
#define GD__M_PI       3.141592653589793
#define GD__M_PI_2     1.5707963267948966
#define GD__M_2_PI     0.6366197723675814
#define GD__M_SQRT2    1.4142135623730951
#define GD__M_2_SQRTPI 1.1283791670955126
#define GD__M_1_SQRTPI 0.5641895835477563

/* e^r for |r| <= 0.35: Taylor to r^13 (the next term is below 2^-57) */
GD_MATH_FN double
gd__m_exp_poly(double r)
{
    double p = 1.6059043836821613e-10; /* 1/13! */
    p = 2.08767569878681e-09 + r * p;  /* 1/12! */
    p = 2.505210838544172e-08 + r * p;
    p = 2.755731922398589e-07 + r * p;
    p = 2.7557319223985893e-06 + r * p;
    p = 2.48015873015873e-05 + r * p;
    p = 0.0001984126984126984 + r * p;
    p = 0.001388888888888889 + r * p;
    p = 0.008333333333333333 + r * p;
    p = 0.041666666666666664 + r * p;
    p = 0.16666666666666666 + r * p;
    p = 0.5 + r * p;
    p = 1.0 + r * p;
    return 1.0 + r * p;
}

/* e^x for -740 < x < 709 */
GD_MATH_FN double
gd__m_exp_d(double x)
{
    double k = gd__m_rint(x * GD__M_LOG2E);
    double r = (x - k * GD__M_LN2_HI) - k * GD__M_LN2_LO;
    int ki = (int)k;
    if (ki < -1021) /* a subnormal double: two exact scalings */
        return gd__m_exp_poly(r) * gd__m_pow2(ki + 600) * gd__m_pow2(-600);
    return gd__m_exp_poly(r) * gd__m_pow2(ki);
}

/* 2^t for -1000 < t < 1000 */
GD_MATH_FN double
gd__m_exp2_d(double t)
{
    double k = gd__m_rint(t);
    int ki = (int)k;
    double p = gd__m_exp_poly((t - k) * GD__M_LN2);
    if (ki < -1021)
        return p * gd__m_pow2(ki + 600) * gd__m_pow2(-600);
    return p * gd__m_pow2(ki);
}

/* e^x - 1 for -740 < x < 709, relative: Taylor below 0.35 (no cancellation), else exp - 1 */
GD_MATH_FN double
gd__m_expm1_d(double x)
{
    if (x > 0.35 || x < -0.35)
        return gd__m_exp_d(x) - 1.0;
    double p = 1.1470745597729725e-11; /* 1/14! */
    p = 1.6059043836821613e-10 + x * p;
    p = 2.08767569878681e-09 + x * p;
    p = 2.505210838544172e-08 + x * p;
    p = 2.755731922398589e-07 + x * p;
    p = 2.7557319223985893e-06 + x * p;
    p = 2.48015873015873e-05 + x * p;
    p = 0.0001984126984126984 + x * p;
    p = 0.001388888888888889 + x * p;
    p = 0.008333333333333333 + x * p;
    p = 0.041666666666666664 + x * p;
    p = 0.16666666666666666 + x * p;
    p = 0.5 + x * p;
    return x + x * (x * p);
}

/* 2 atanh(s) = log((1 + s) / (1 - s)) for |s| <= 0.172: 2s (1 + s^2/3 + s^4/5 + ...) to s^22 */
GD_MATH_FN double
gd__m_log_series(double s)
{
    double z = s * s;
    double p = 0.043478260869565216; /* 1/23 */
    p = 0.047619047619047616 + z * p;
    p = 0.05263157894736842 + z * p;
    p = 0.058823529411764705 + z * p;
    p = 0.06666666666666667 + z * p;
    p = 0.07692307692307693 + z * p;
    p = 0.09090909090909091 + z * p;
    p = 0.1111111111111111 + z * p;
    p = 0.14285714285714285 + z * p;
    p = 0.2 + z * p;
    p = 0.3333333333333333 + z * p;
    return 2.0 * s + 2.0 * s * (z * p);
}

/* log x for a positive normal double x: x = m 2^e with m in [sqrt(2)/2, sqrt(2)), then
 * log m = 2 atanh((m - 1) / (m + 1)), m - 1 exact */
GD_MATH_FN double
gd__m_log_d(double x)
{
    uint64_t u = gd__m_dbits(x);
    int e = (int)((u >> 52) & 0x7ff) - 1023;
    double m = gd__m_dfrom((u & 0x000fffffffffffffull) | 0x3ff0000000000000ull);
    if (m > GD__M_SQRT2) {
        m = m * 0.5;
        e++;
    }
    double f = m - 1.0;
    return (double)e * GD__M_LN2 + gd__m_log_series(f / (2.0 + f));
}

/* log(1 + x) for x > -1 (finite): the series on x / (2 + x) near 0, else log of 1 + x */
GD_MATH_FN double
gd__m_log1p_d(double x)
{
    if (x < 0.25 && x > -0.25)
        return gd__m_log_series(x / (2.0 + x));
    return gd__m_log_d(1.0 + x);
}

/* atan t for any t (infinities included): atan(1/|t|) for |t| > 1, two halvings
 * atan(a) = 2 atan(a / (1 + sqrt(1 + a^2))) down to |a| <= tan(pi/16), then the series */
GD_MATH_FN double
gd__m_atan_d(double t)
{
    double a = t < 0 ? -t : t;
    int inv = a > 1.0;
    if (inv)
        a = 1.0 / a;
    a = a / (1.0 + sqrt(1.0 + a * a));
    a = a / (1.0 + sqrt(1.0 + a * a));
    double z = a * a;
    double p = 0.04; /* 1/25, alternating signs */
    p = 0.043478260869565216 - z * p;
    p = 0.047619047619047616 - z * p;
    p = 0.05263157894736842 - z * p;
    p = 0.058823529411764705 - z * p;
    p = 0.06666666666666667 - z * p;
    p = 0.07692307692307693 - z * p;
    p = 0.09090909090909091 - z * p;
    p = 0.1111111111111111 - z * p;
    p = 0.14285714285714285 - z * p;
    p = 0.2 - z * p;
    p = 0.3333333333333333 - z * p;
    double r = 4.0 * (a - a * (z * p));
    if (inv)
        r = GD__M_PI_2 - r;
    return t < 0 ? -r : r;
}

/* sin r and cos r for |r| <= pi/4 (a little more after the reduction): Taylor to r^17, r^18 */
GD_MATH_FN double
gd__m_sin_poly(double r)
{
    double z = r * r;
    double p = 2.8114572543455206e-15;  /* 1/17! */
    p = -7.647163731819816e-13 + z * p; /* -1/15! */
    p = 1.6059043836821613e-10 + z * p;
    p = -2.505210838544172e-08 + z * p;
    p = 2.7557319223985893e-06 + z * p;
    p = -0.0001984126984126984 + z * p;
    p = 0.008333333333333333 + z * p;
    p = -0.16666666666666666 + z * p;
    return r + r * (z * p);
}

GD_MATH_FN double
gd__m_cos_poly(double r)
{
    double z = r * r;
    double p = 1.5619206968586225e-16;  /* 1/18! */
    p = -4.779477332387385e-14 + z * p; /* -1/16! */
    p = 1.1470745597729725e-11 + z * p;
    p = -2.08767569878681e-09 + z * p;
    p = 2.755731922398589e-07 + z * p;
    p = -2.48015873015873e-05 + z * p;
    p = 0.001388888888888889 + z * p;
    p = -0.041666666666666664 + z * p;
    p = 0.5 + z * p;
    return 1.0 - z * p;
}

/*
 * |x| = n pi/2 + r for a finite float x, |r| <= pi/4 (about): returns n mod 4 and r. Below
 * 2^24: n = rint(|x| 2/pi) and r = ((|x| - n P1) - n P2) - n P3, pi/2 = P1 + P2 + P3 + 2^-110
 * with P1, P2 of 29 bits (n P1 and |x| - n P1 exact, n P2 exact). From 2^24 (Payne and
 * Hanek): |x| = M 2^E with M < 2^24 and E >= 1, and |x| 2/pi mod 4 comes from the 96 bits of
 * 2/pi from bit E - 1 on (the earlier bits add multiples of 4): an integer product of M and
 * those bits, whose top gives n and the rest the fraction, exact but for the bits of 2/pi
 * beyond the window (below 2^-70 of a quadrant).
 */
GD_MATH_FN int
gd__m_rem_pio2f(float x, double *r)
{
    uint32_t ux = gd__m_fbits(x) & 0x7fffffffu;
    double a = (double)gd__m_ffrom(ux);
    if (ux < 0x3f490fdbu) { /* below pi/4 */
        *r = a;
        return 0;
    }
    if (ux < 0x4b800000u) { /* below 2^24 */
        double n = gd__m_rint(a * GD__M_2_PI);
        *r = ((a - n * 1.570796325802803) - n * 9.920935774287987e-10) - n * 2.2517417741562176e-18;
        return (int)n & 3;
    }
    /* bits 0..223 of 2/pi, bit 0 its integer part (0), most significant first */
    const uint32_t two_over_pi[7] = {0x517cc1b7u, 0x27220a94u, 0xfe13abe8u, 0xfa9a6ee0u,
                                     0x6db14accu, 0x9e21c820u, 0xff28b1d5u};
    int e = (int)(ux >> 23) - 150; /* |x| = M 2^e, e >= 1 */
    uint64_t m = (ux & 0x7fffffu) | 0x800000u;
    int s = e - 1, q = s / 32, o = s % 32;
    uint32_t w[3];
    for (int i = 0; i < 3; i++)
        w[i] = o == 0 ? two_over_pi[q + i]
                      : (two_over_pi[q + i] << o) | (two_over_pi[q + i + 1] >> (32 - o));
    /* P = M * (w0 w1 w2) = top:p2:p1:p0 in 32-bit words; |x| 2/pi = P / 2^94 mod 4 */
    uint64_t t = m * w[2];
    uint64_t p0 = t & 0xffffffffu;
    t = m * w[1] + (t >> 32);
    uint64_t p1 = t & 0xffffffffu;
    t = m * w[0] + (t >> 32);
    uint64_t p2 = t & 0xffffffffu, top = t >> 32;
    /* the quadrant: bits 94, 95 of P; the fraction: bits 0..93, as hi (bits 30..93) and
     * lo (bits 0..29), rounded to the nearest quadrant */
    int n = (int)((top << 2 | p2 >> 30) & 3);
    uint64_t hi = (p2 & 0x3fffffffu) << 34 | p1 << 2 | p0 >> 30, lo = p0 & 0x3fffffffu;
    int neg = 0;
    if (hi >> 63) { /* at least half a quadrant: r = (F - 2^94) pi/2 / 2^94 */
        n = (n + 1) & 3;
        neg = 1;
        /* 2^94 - F in the same two parts */
        lo = (0x40000000u - lo) & 0x3fffffffu;
        hi = ~hi + (lo == 0 ? 1u : 0u);
    }
    double f = (double)hi * 5.421010862427522e-20 + (double)lo * 5.048709793414476e-29;
    *r = (neg ? -f : f) * GD__M_PI_2;
    return n;
}

/* erf x for |x| < 2: (2/sqrt(pi)) e^(-x^2) sum of 2^n x^(2n+1) / (1 3 5 ... (2n+1)), terms all
 * of one sign, summed until they no longer change the sum (30 terms at x = 2) */
GD_MATH_FN double
gd__m_erf_series(double x)
{
    double x2 = 2.0 * x * x, t = x, s = x;
    for (int n = 0; n < 60; n++) {
        t = t * x2 / (double)(2 * n + 3);
        double s2 = s + t;
        if (s2 == s)
            break;
        s = s2;
    }
    return GD__M_2_SQRTPI * gd__m_exp_d(-x * x) * s;
}

/* erfc z for z >= 2: the continued fraction e^(-z^2) / sqrt(pi) / (z + (1/2) / (z + 1 / (z +
 * (3/2) / (z + ...)))), evaluated from a fixed depth (60 terms below 4, 30 above: within
 * 2^-52 there) */
GD_MATH_FN double
gd__m_erfc_cf(double z)
{
    int depth = z < 4.0 ? 60 : 30;
    double k = z;
    for (int n = depth; n >= 1; n--)
        k = z + (0.5 * (double)n) / k;
    return GD__M_1_SQRTPI * gd__m_exp_d(-z * z) / k;
}

/* ---- the float functions ---- */

GD_MATH_FN float
gd__expf(float x)
{
    if (gd__m_isnanf(x))
        return gd__m_ffrom(GD__M_FNAN);
    if (x > 100.0f)
        return gd__m_ffrom(GD__M_FINF);
    if (x < -150.0f)
        return 0.0f;
    return (float)gd__m_exp_d((double)x);
}

GD_MATH_FN float
gd__expm1f(float x)
{
    if (gd__m_isnanf(x))
        return gd__m_ffrom(GD__M_FNAN);
    if (x > 100.0f)
        return gd__m_ffrom(GD__M_FINF);
    if (x < -30.0f)
        return -1.0f;
    if (x == 0.0f) /* +-0: the series would give +0 for -0 */
        return x;
    return (float)gd__m_expm1_d((double)x);
}

GD_MATH_FN float
gd__logf(float x)
{
    uint32_t u = gd__m_fbits(x);
    if (gd__m_isnanf(x) || (u >> 31 && (u & 0x7fffffffu) != 0))
        return gd__m_ffrom(GD__M_FNAN);
    if ((u & 0x7fffffffu) == 0)
        return gd__m_ffrom(GD__M_FINF | 0x80000000u);
    if (u == GD__M_FINF)
        return x;
    return (float)gd__m_log_d((double)x);
}

GD_MATH_FN float
gd__log1pf(float x)
{
    if (gd__m_isnanf(x) || x < -1.0f)
        return gd__m_ffrom(GD__M_FNAN);
    if (x == -1.0f)
        return gd__m_ffrom(GD__M_FINF | 0x80000000u);
    if (gd__m_fbits(x) == GD__M_FINF)
        return x;
    return (float)gd__m_log1p_d((double)x);
}

/* tanh |x| = expm1(2|x|) / (expm1(2|x|) + 2) below 0.55 (no cancellation), else
 * 1 - 2 / (e^(2|x|) + 1); the sign of x after */
GD_MATH_FN float
gd__tanhf(float x)
{
    if (gd__m_isnanf(x))
        return gd__m_ffrom(GD__M_FNAN);
    uint32_t neg = gd__m_fbits(x) >> 31;
    double a = (double)gd__m_signed(x, 0), t;
    if (a > 20.0)
        t = 1.0;
    else if (a < 0.55) {
        double e = gd__m_expm1_d(2.0 * a);
        t = e / (e + 2.0);
    } else {
        t = 1.0 - 2.0 / (gd__m_exp_d(2.0 * a) + 1.0);
    }
    return gd__m_signed((float)t, neg);
}

GD_MATH_FN float
gd__erff(float x)
{
    if (gd__m_isnanf(x))
        return gd__m_ffrom(GD__M_FNAN);
    uint32_t neg = gd__m_fbits(x) >> 31;
    double a = (double)gd__m_signed(x, 0), y;
    if (a < 2.0)
        y = gd__m_erf_series(a);
    else if (a < 6.0)
        y = 1.0 - gd__m_erfc_cf(a);
    else
        y = 1.0;
    return gd__m_signed((float)y, neg);
}

/* erfc: 1 + erf|x| for x <= 0 (2 - erfc|x| beyond 2), 1 - erf x below 2 (erfc(2) = 0.0047:
 * the series' error grows 214-fold, to 2^-43), the continued fraction from 2 */
GD_MATH_FN float
gd__erfcf(float x)
{
    if (gd__m_isnanf(x))
        return gd__m_ffrom(GD__M_FNAN);
    double a = (double)x, y;
    if (a <= 0.0) {
        a = -a;
        y = a < 2.0 ? 1.0 + gd__m_erf_series(a) : (a < 10.0 ? 2.0 - gd__m_erfc_cf(a) : 2.0);
    } else if (a < 2.0) {
        y = 1.0 - gd__m_erf_series(a);
    } else {
        y = a < 11.0 ? gd__m_erfc_cf(a) : 0.0;
    }
    return (float)y;
}

/* 1 when the float y is an odd integer (|y| >= 2^24 are even) */
GD_MATH_FN int
gd__m_odd_integer(float y)
{
    double d = (double)y;
    if (d >= 16777216.0 || d <= -16777216.0)
        return 0;
    double r = gd__m_rint(d);
    if (r != d)
        return 0;
    return ((int64_t)r & 1) != 0;
}

GD_MATH_FN int
gd__m_integer(float y)
{
    double d = (double)y;
    if (d >= 16777216.0 || d <= -16777216.0)
        return 1;
    return gd__m_rint(d) == d;
}

/* pow with C99's special cases; otherwise 2^(y log2|x|), negative for x < 0 and an odd
 * integer y, NaN for x < 0 and a y that is not an integer */
GD_MATH_FN float
gd__powf(float x, float y)
{
    uint32_t ux = gd__m_fbits(x), uy = gd__m_fbits(y);
    uint32_t ax = ux & 0x7fffffffu, ay = uy & 0x7fffffffu;
    if (ay == 0 || ux == 0x3f800000u) /* pow(x, +-0) = 1, pow(1, y) = 1, NaNs too */
        return 1.0f;
    if (gd__m_isnanf(x) || gd__m_isnanf(y))
        return gd__m_ffrom(GD__M_FNAN);
    int yneg = (int)(uy >> 31), odd = gd__m_odd_integer(y);
    if (ay == GD__M_FINF) {
        if (ax == 0x3f800000u) /* pow(-1, +-inf) = 1 */
            return 1.0f;
        int big = ax > 0x3f800000u;
        return big != yneg ? gd__m_ffrom(GD__M_FINF) : 0.0f;
    }
    uint32_t sign = (ux >> 31) && odd ? 1u : 0u;
    if (ax == 0) /* pow(+-0, y): +-inf for y < 0, +-0 for y > 0 (the sign only for odd y) */
        return gd__m_signed(gd__m_ffrom(yneg ? GD__M_FINF : 0u), sign);
    if (ax == GD__M_FINF)
        return gd__m_signed(gd__m_ffrom(yneg ? 0u : GD__M_FINF), sign);
    if ((ux >> 31) && !gd__m_integer(y))
        return gd__m_ffrom(GD__M_FNAN);
    double t = (double)y * (gd__m_log_d((double)gd__m_ffrom(ax)) * GD__M_LOG2E);
    double r;
    if (t > 200.0)
        r = 1e300;
    else if (t < -200.0)
        r = 0.0;
    else
        r = gd__m_exp2_d(t);
    return gd__m_signed((float)r, sign);
}

/* sin, cos and tan through gd__m_rem_pio2f: sin x = (s, c, -s, -c)[n], cos x = (c, -s, -c,
 * s)[n], tan x = s / c for n even and -c / s for n odd, s and c of r */
GD_MATH_FN float
gd__sinf(float x)
{
    if ((gd__m_fbits(x) & 0x7fffffffu) >= GD__M_FINF)
        return gd__m_ffrom(GD__M_FNAN);
    double r;
    int n = gd__m_rem_pio2f(x, &r);
    double v = n & 1 ? gd__m_cos_poly(r) : gd__m_sin_poly(r);
    if (n & 2)
        v = -v;
    float y = (float)v;
    return gd__m_fbits(x) >> 31 ? -y : y;
}

GD_MATH_FN float
gd__cosf(float x)
{
    if ((gd__m_fbits(x) & 0x7fffffffu) >= GD__M_FINF)
        return gd__m_ffrom(GD__M_FNAN);
    double r;
    int n = gd__m_rem_pio2f(x, &r);
    double v = n & 1 ? -gd__m_sin_poly(r) : gd__m_cos_poly(r);
    if (n & 2)
        v = -v;
    return (float)v;
}

GD_MATH_FN float
gd__tanf(float x)
{
    if ((gd__m_fbits(x) & 0x7fffffffu) >= GD__M_FINF)
        return gd__m_ffrom(GD__M_FNAN);
    double r;
    int n = gd__m_rem_pio2f(x, &r);
    double s = gd__m_sin_poly(r), c = gd__m_cos_poly(r);
    float y = (float)(n & 1 ? -c / s : s / c);
    return gd__m_fbits(x) >> 31 ? -y : y;
}

GD_MATH_FN float
gd__atanf(float x)
{
    if (gd__m_isnanf(x))
        return gd__m_ffrom(GD__M_FNAN);
    uint32_t neg = gd__m_fbits(x) >> 31;
    return gd__m_signed((float)gd__m_atan_d((double)gd__m_signed(x, 0)), neg);
}

/* asin x = atan(x / sqrt(1 - x^2)): x^2 is exact in double and 1 - x^2 exact for |x| >= 1/2 */
GD_MATH_FN float
gd__asinf(float x)
{
    uint32_t neg = gd__m_fbits(x) >> 31;
    double a = (double)gd__m_signed(x, 0);
    if (gd__m_isnanf(x) || a > 1.0)
        return gd__m_ffrom(GD__M_FNAN);
    return gd__m_signed((float)gd__m_atan_d(a / sqrt(1.0 - a * a)), neg);
}

/* acos x = 2 atan(sqrt((1 - x) / (1 + x))): no cancellation near 1 (1 - x is exact) */
GD_MATH_FN float
gd__acosf(float x)
{
    double a = (double)x;
    if (gd__m_isnanf(x) || a > 1.0 || a < -1.0)
        return gd__m_ffrom(GD__M_FNAN);
    return (float)(2.0 * gd__m_atan_d(sqrt((1.0 - a) / (1.0 + a))));
}

/* sinh |x| = (e + e / (e + 1)) / 2, e = expm1|x|, below 1; else (E - 1/E) / 2, E = e^|x| */
GD_MATH_FN float
gd__sinhf(float x)
{
    if (gd__m_isnanf(x))
        return gd__m_ffrom(GD__M_FNAN);
    uint32_t neg = gd__m_fbits(x) >> 31;
    double a = (double)gd__m_signed(x, 0), y;
    if (a > 100.0)
        y = 1e300;
    else if (a < 1.0) {
        double e = gd__m_expm1_d(a);
        y = 0.5 * (e + e / (e + 1.0));
    } else {
        double e = gd__m_exp_d(a);
        y = 0.5 * (e - 1.0 / e);
    }
    return gd__m_signed((float)y, neg);
}

GD_MATH_FN float
gd__coshf(float x)
{
    if (gd__m_isnanf(x))
        return gd__m_ffrom(GD__M_FNAN);
    double a = (double)gd__m_signed(x, 0);
    if (a > 100.0)
        return gd__m_ffrom(GD__M_FINF);
    double e = gd__m_exp_d(a);
    return (float)(0.5 * (e + 1.0 / e));
}

/* asinh |x| = log1p(|x| + x^2 / (1 + sqrt(1 + x^2))): no cancellation near 0 */
GD_MATH_FN float
gd__asinhf(float x)
{
    if (gd__m_isnanf(x))
        return gd__m_ffrom(GD__M_FNAN);
    uint32_t neg = gd__m_fbits(x) >> 31;
    double a = (double)gd__m_signed(x, 0);
    if (a == (double)gd__m_ffrom(GD__M_FINF))
        return x;
    double y = a > 1e10 ? gd__m_log_d(a) + GD__M_LN2
                        : gd__m_log1p_d(a + a * a / (1.0 + sqrt(1.0 + a * a)));
    return gd__m_signed((float)y, neg);
}

/* acosh x = log1p(t + sqrt(t (x + 1))), t = x - 1 (exact): no cancellation near 1 */
GD_MATH_FN float
gd__acoshf(float x)
{
    double a = (double)x;
    if (gd__m_isnanf(x) || a < 1.0)
        return gd__m_ffrom(GD__M_FNAN);
    if (gd__m_fbits(x) == GD__M_FINF)
        return x;
    if (a > 1e10)
        return (float)(gd__m_log_d(a) + GD__M_LN2);
    double t = a - 1.0;
    return (float)gd__m_log1p_d(t + sqrt(t * (a + 1.0)));
}

/* atanh |x| = log1p(2|x| / (1 - |x|)) / 2, 1 - |x| exact */
GD_MATH_FN float
gd__atanhf(float x)
{
    uint32_t neg = gd__m_fbits(x) >> 31;
    double a = (double)gd__m_signed(x, 0);
    if (gd__m_isnanf(x) || a > 1.0)
        return gd__m_ffrom(GD__M_FNAN);
    if (a == 1.0)
        return gd__m_signed(gd__m_ffrom(GD__M_FINF), neg);
    return gd__m_signed((float)(0.5 * gd__m_log1p_d(2.0 * a / (1.0 - a))), neg);
}

/* The exact functions under the same names, so a caller names every function one way
 * (engine/cpu/cpu.h's R()): IEEE operations or selections, the same bits everywhere. */
GD_MATH_FN float
gd__sqrtf(float x)
{
    return sqrtf(x);
}

GD_MATH_FN float
gd__fabsf(float x)
{
    return gd__m_signed(x, 0);
}

GD_MATH_FN float
gd__floorf(float x)
{
    return floorf(x);
}

GD_MATH_FN float
gd__ceilf(float x)
{
    return ceilf(x);
}

GD_MATH_FN float
gd__rintf(float x)
{
    return rintf(x);
}

GD_MATH_FN float
gd__fmodf(float x, float y)
{
    return fmodf(x, y);
}

#endif
