/*
 * metrics_portable.c: the float32 block kernel in GNU C vector types, built for AVX2 and
 * for the baseline (target_clones); it gives the same codes and sums as the AVX-512 one.
 */
#include <stdint.h>
#include <string.h>

#include "metrics_internal.h"

/*
 * 32-byte vectors, one AVX2 register or two SSE2 ones, and only the operations both have
 * (signed comparisons; unsigned ones are biased by the sign bit), so GCC neither splits nor
 * scalarizes them. Lane j of the float64 sums takes elements j, j + 8, j + 16, ... as in
 * the AVX-512 kernel.
 */
typedef float v8f __attribute__((vector_size(32)));
typedef float v4f __attribute__((vector_size(16)));
typedef int32_t v8i __attribute__((vector_size(32)));
typedef uint32_t v8u __attribute__((vector_size(32)));
typedef double v4d __attribute__((vector_size(32)));
typedef int64_t v4l __attribute__((vector_size(32)));

/* Lane-wise select of a where the mask is set, else b (masks are 0 or -1). */
#define PV_SEL(T, mask, a, b) ((T)(((v8i)(a) & (mask)) | ((v8i)(b) & ~(mask))))

HOT int
pv_block_pass(const char *a, const char *b, float atol, float rtol, struct f32_block *out)
{
    v4d s_abs[2] = {{0}}, s_sq[2] = {{0}}, s_aa[2] = {{0}}, s_bb[2] = {{0}}, m_abs[2] = {{0}};
    v8i n_mis = {0}, n_diff = {0}, n_rzd = {0};
    v8i m_ulp_biased = {INT32_MIN, INT32_MIN, INT32_MIN, INT32_MIN, INT32_MIN, INT32_MIN,
                        INT32_MIN, INT32_MIN};
    v8i m_rel = {0};
    for (int v = 0; v < BLOCK; v += 32) {
        v8u ucodes = {0}, rcodes = {0};
        /* The next block, two 64-byte lines per stream per 32 elements (see the AVX-512
         * pass). Prefetches never fault, also past the end of the data. */
        __builtin_prefetch(AHEAD(a, 4 * (v + BLOCK)), 0, 2);
        __builtin_prefetch(AHEAD(a, 4 * (v + BLOCK) + 64), 0, 2);
        __builtin_prefetch(AHEAD(b, 4 * (v + BLOCK)), 0, 2);
        __builtin_prefetch(AHEAD(b, 4 * (v + BLOCK) + 64), 0, 2);
        for (int q = 0; q < 4; q++) {
            const char *pa = a + 4 * (v + 8 * q), *pb = b + 4 * (v + 8 * q);
            v8f fa, fb;
            memcpy(&fa, pa, sizeof fa);
            memcpy(&fb, pb, sizeof fb);
            v8u ua = (v8u)fa, ub = (v8u)fb;
            n_diff -= (v8i)(ua != ub);

            /* ULP distance: |mag_a - mag_b| with equal signs, mag_a + mag_b across zero. */
            v8i mag_a = (v8i)(ua & 0x7fffffffu), mag_b = (v8i)(ub & 0x7fffffffu);
            v8i opposite = (v8i)(ua ^ ub) >> 31;
            v8i a_big = mag_a > mag_b;
            v8i hi = PV_SEL(v8i, a_big, mag_a, mag_b);
            v8i lo = (mag_a ^ mag_b) ^ hi;
            v8u ulp = PV_SEL(v8u, opposite, (v8u)mag_a + (v8u)mag_b, hi - lo);
            v8i ulp_biased = (v8i)(ulp ^ 0x80000000u);
            m_ulp_biased = PV_SEL(v8i, ulp_biased > m_ulp_biased, ulp_biased, m_ulp_biased);
            /* Bit length: keep the top bit, clear the one below it so the int-to-float
             * conversion cannot round up, and read the exponent; 2^31 and up is 32. */
            v8u top = ulp & ~(ulp >> 1);
            v8f topf = __builtin_convertvector((v8i)top, v8f);
            v8i ucode = (v8i)(((v8u)topf >> 23) & 0xffu) - 126;
            ucode &= ~(ucode >> 31);
            v8i huge = (v8i)ulp >> 31;
            ucode = (ucode & ~huge) | (huge & 32);

            /* Tolerance, exactly as numpy evaluates float32. */
            v8f diff = fa - fb;
            v8i abs_diff = (v8i)diff & 0x7fffffff;
            n_mis -= (v8i)((v8f)abs_diff > atol + rtol * (v8f)mag_b);

            /* Relative error in float32; its exponent makes the code. */
            v8f rel = (v8f)abs_diff / (v8f)mag_b;
            v8i b_zero = mag_b == 0;
            v8i rel_bits = (v8i)rel & ~b_zero;
            m_rel = PV_SEL(v8i, rel_bits > m_rel, rel_bits, m_rel);
            memcpy(out->rel_bits + v + 8 * q, &rel_bits, sizeof rel_bits);
            n_rzd -= b_zero & (mag_a != 0);

            ucodes |= (v8u)ucode << (8 * q);
            rcodes |= (((v8u)rel >> 23) & 0xffu) << (8 * q);

            /* float64: squares exact, differences exact unless the exponents are far apart. */
            for (int h = 0; h < 2; h++) {
                v4f ha, hb;
                memcpy(&ha, pa + 16 * h, sizeof ha);
                memcpy(&hb, pb + 16 * h, sizeof hb);
                v4d da = __builtin_convertvector(ha, v4d), db = __builtin_convertvector(hb, v4d);
                v4d err = da - db;
                v4d abs_err = (v4d)((v4l)err & 0x7fffffffffffffffll);
                s_abs[h] += abs_err;
                s_sq[h] += err * err;
                s_aa[h] += da * da;
                s_bb[h] += db * db;
                v4l g = abs_err > m_abs[h];
                m_abs[h] = (v4d)(((v4l)abs_err & g) | ((v4l)m_abs[h] & ~g));
            }
        }
        /* The codes of 32 elements in one store, permuted (counting needs no order). */
        memcpy(out->ulp_code + v, &ucodes, sizeof ucodes);
        memcpy(out->rel_code + v, &rcodes, sizeof rcodes);
    }
    double l_abs[8], l_sq[8], l_aa[8], l_bb[8], l_max[8];
    uint32_t l_ulp[16], l_rel[16];
    int32_t l_mis[16], l_diff[16], l_rzd[16];
    for (int h = 0; h < 2; h++) {
        memcpy(l_abs + 4 * h, &s_abs[h], sizeof s_abs[h]);
        memcpy(l_sq + 4 * h, &s_sq[h], sizeof s_sq[h]);
        memcpy(l_aa + 4 * h, &s_aa[h], sizeof s_aa[h]);
        memcpy(l_bb + 4 * h, &s_bb[h], sizeof s_bb[h]);
        memcpy(l_max + 4 * h, &m_abs[h], sizeof m_abs[h]);
    }
    memset(l_ulp, 0, sizeof l_ulp);
    memset(l_rel, 0, sizeof l_rel);
    memset(l_mis, 0, sizeof l_mis);
    memset(l_diff, 0, sizeof l_diff);
    memset(l_rzd, 0, sizeof l_rzd);
    for (int j = 0; j < 8; j++) {
        l_ulp[j] = (uint32_t)m_ulp_biased[j] ^ 0x80000000u;
        l_rel[j] = (uint32_t)m_rel[j];
        l_mis[j] = n_mis[j];
        l_diff[j] = n_diff[j];
        l_rzd[j] = n_rzd[j];
    }
    return gd__metrics_block_reduce(out, l_abs, l_sq, l_aa, l_bb, l_max, l_ulp, l_rel, l_mis,
                                    l_diff, l_rzd);
}

/*
 * Counting uses 16-byte vectors: GCC 12 scalarizes 32-byte byte comparisons on SSE2.
 * Unsigned byte comparisons go through the signed ones with the sign bits flipped, and
 * every operand is a vector (scalar operands get scalarized too).
 */
typedef uint8_t v16b __attribute__((vector_size(16)));
typedef int8_t v16sb __attribute__((vector_size(16)));
typedef uint16_t v8s __attribute__((vector_size(16)));
typedef uint32_t v4u __attribute__((vector_size(16)));
typedef uint64_t v2q __attribute__((vector_size(16)));

#define PV_BYTES(c) ((v16b){0} + (uint8_t)(c))
#define PV_ULE(x, y) ((v16b)((v16sb)((x) ^ PV_BYTES(0x80)) <= (v16sb)((y) ^ PV_BYTES(0x80))))

/* Sum of 16 byte counters. */
HOT uint64_t
pv_sum_bytes(const v16b *v)
{
    v8s s16 = ((v8s)*v & 0xff) + ((v8s)*v >> 8);
    v4u s32 = ((v4u)s16 & 0xffff) + ((v4u)s16 >> 16);
    v2q s64 = ((v2q)s32 & 0xffffffffu) + ((v2q)s32 >> 32);
    return s64[0] + s64[1];
}

/*
 * Counting a block's codes into counts[code]. A scatter would cost a memory round trip per
 * element; instead each code of the window gets 16 byte counters (a compare and a subtract
 * per 16 elements), four codes per pass over the codes so the counters stay in registers.
 * One more pass counts the special codes 194, 254 and 255 and, one by one, the regular
 * codes outside the window (rare when a block's codes span few bins).
 */
/* Byte counters of 16 lanes take one increment per 16 codes: flushed every 2048 codes,
 * they stay below 256. */
#define PV_COUNT_RUN 2048

/* Counts codes base .. base+7, with byte counters flushed every PV_COUNT_RUN codes. */
HOT void
pv_count8(const uint8_t *codes, int base, int64_t *counts)
{
    const v16b v_base = PV_BYTES(base);
    for (int run = 0; run < BLOCK; run += PV_COUNT_RUN) {
        v16b c[8] = {{0}};
        for (int v = run; v < run + PV_COUNT_RUN; v += 16) {
            v16b x;
            memcpy(&x, codes + v, sizeof x);
            v16b t = x - v_base;
#pragma GCC unroll 8
            for (int j = 0; j < 8; j++)
                c[j] -= (v16b)(t == PV_BYTES(j));
        }
        for (int j = 0; j < 8; j++)
            counts[base + j] += (int64_t)pv_sum_bytes(&c[j]);
    }
}

/* The rel codes 0 and 255 (with specials), and regular codes outside the window. */
HOT void
pv_count_rest(const uint8_t *codes, int lo, int nwin, int specials, int64_t *counts)
{
    const v16b last = PV_BYTES(nwin - 1), v_lo = PV_BYTES(lo);
    const v16b c_zero = PV_BYTES(REL_CODE_ZERO), c_ref = PV_BYTES(REL_CODE_REF_ZERO);
    for (int run = 0; run < BLOCK; run += PV_COUNT_RUN) {
        v16b s_zero = {0}, s_ref = {0};
        for (int v = run; v < run + PV_COUNT_RUN; v += 16) {
            v16b x;
            memcpy(&x, codes + v, sizeof x);
            v16b outside = ~PV_ULE(x - v_lo, last);
            if (specials) {
                v16b is_zero = (v16b)(x == c_zero), is_ref = (v16b)(x == c_ref);
                s_zero -= is_zero;
                s_ref -= is_ref;
                outside &= ~(is_zero | is_ref);
            }
            v2q o = (v2q)outside;
            if ((o[0] | o[1]) != 0) {
                for (int k = 0; k < 16; k++) {
                    int c = codes[v + k];
                    int special = specials && (c == REL_CODE_ZERO || c == REL_CODE_REF_ZERO);
                    if (!special && (c < lo || c >= lo + nwin))
                        counts[c]++;
                }
            }
        }
        if (specials) {
            counts[REL_CODE_ZERO] += (int64_t)pv_sum_bytes(&s_zero);
            counts[REL_CODE_REF_ZERO] += (int64_t)pv_sum_bytes(&s_ref);
        }
    }
}

/*
 * Counts a block's codes into counts[code]. With specials (the rel codes) 0 and 255 are
 * special and 1..254 regular; without, every code is regular.
 */
HOT void
pv_count(const uint8_t *codes, int specials, int64_t *counts)
{
    int reg_lo = specials ? 1 : 0, reg_hi = specials ? 254 : 255;
    /* Smallest and largest regular code, in the sign-flipped (signed) domain. */
    const v16sb top = (v16sb){0} + (int8_t)127, bottom = (v16sb){0} + (int8_t)-128;
    const v16b reg_first = PV_BYTES(reg_lo), reg_span = PV_BYTES(reg_hi - reg_lo);
    v16sb mn = top, mx = bottom;
    for (int v = 0; v < BLOCK; v += 16) {
        v16b x;
        memcpy(&x, codes + v, sizeof x);
        v16sb regular = (v16sb)PV_ULE(x - reg_first, reg_span);
        v16sb xs = (v16sb)(x ^ PV_BYTES(0x80));
        v16sb x_lo = (xs & regular) | (top & ~regular), x_hi = (xs & regular) | (bottom & ~regular);
        v16sb lt = x_lo < mn, gt = x_hi > mx;
        mn = (x_lo & lt) | (mn & ~lt);
        mx = (x_hi & gt) | (mx & ~gt);
    }
    int lo = 255, hi = 0;
    for (int j = 0; j < 16; j++) {
        int l = (uint8_t)(mn[j] ^ 0x80), h = (uint8_t)(mx[j] ^ 0x80);
        lo = l < lo ? l : lo;
        hi = h > hi ? h : hi;
    }
    int win_lo, nwin;
    gd__metrics_window_pick(lo, hi, reg_lo, reg_hi, &win_lo, &nwin);
    for (int base = win_lo; base < win_lo + nwin; base += 8)
        pv_count8(codes, base, counts);
    pv_count_rest(codes, win_lo, nwin, specials, counts);
}

#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && defined(__ELF__)
#define PORTABLE_CLONES __attribute__((target_clones("avx2", "default")))
#else
#define PORTABLE_CLONES
#endif

PORTABLE_CLONES void
gd__metrics_blocks_portable(struct gd_metrics *m, const char *a, const char *b,
                            int64_t n_blocks, int64_t offset, const struct tol *t,
                            struct f32_block *blk, struct f32_counts *counts)
{
    F32_BLOCKS_BODY(pv_block_pass, pv_count)
}
