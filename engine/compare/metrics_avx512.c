/*
 * metrics_avx512.c: the float32 block kernel in AVX-512 intrinsics (F, BW, DQ, CD, VL),
 * chosen at run time where the CPU has them; the same codes and sums as the portable one.
 */
#include <stdint.h>
#include <string.h>

#include "metrics_internal.h"

#ifdef HAVE_AVX512_KERNEL
#include <immintrin.h>

AVX512_TARGET HOT int
avx512_block_pass(const char *a, const char *b, float atol, float rtol, struct f32_block *out)
{
    const __m512i abs32 = _mm512_set1_epi32(0x7fffffff);
    const __m512d abs64 = _mm512_castsi512_pd(_mm512_set1_epi64(0x7fffffffffffffffll));
    const __m512 v_atol = _mm512_set1_ps(atol), v_rtol = _mm512_set1_ps(rtol);
    const __m512i one = _mm512_set1_epi32(1), c32 = _mm512_set1_epi32(32);
    __m512d s_abs = _mm512_setzero_pd(), s_sq = s_abs, s_aa = s_abs, s_bb = s_abs, m_abs = s_abs;
    __m512i n_mis = _mm512_setzero_si512(), n_diff = n_mis, m_ulp = n_mis, m_rel = n_mis;
    __m512i n_rzd = n_mis;
    for (int v = 0; v < BLOCK; v += 16) {
        const char *pa = a + 4 * v, *pb = b + 4 * v;
        /* The next block into L2, so that it arrives while this one's codes are counted
         * (the hardware prefetcher stops with the loads). One line per stream per step. */
        _mm_prefetch(AHEAD(pa, 4 * BLOCK), _MM_HINT_T1);
        _mm_prefetch(AHEAD(pb, 4 * BLOCK), _MM_HINT_T1);
        __m512i ua = _mm512_loadu_si512(pa), ub = _mm512_loadu_si512(pb);
        __m512 fa = _mm512_castsi512_ps(ua), fb = _mm512_castsi512_ps(ub);
        n_diff = _mm512_mask_add_epi32(n_diff, _mm512_cmpneq_epi32_mask(ua, ub), n_diff, one);

        __m512i mag_a = _mm512_and_si512(ua, abs32), mag_b = _mm512_and_si512(ub, abs32);
        __mmask16 opposite = _mm512_movepi32_mask(_mm512_xor_si512(ua, ub));
        __m512i ulp = _mm512_sub_epi32(_mm512_max_epu32(mag_a, mag_b),
                                       _mm512_min_epu32(mag_a, mag_b));
        ulp = _mm512_mask_add_epi32(ulp, opposite, mag_a, mag_b);
        m_ulp = _mm512_max_epu32(m_ulp, ulp);
        __m512i ucode = _mm512_sub_epi32(c32, _mm512_lzcnt_epi32(ulp));

        __m512 abs_diff = _mm512_castsi512_ps(
            _mm512_and_si512(_mm512_castps_si512(_mm512_sub_ps(fa, fb)), abs32));
        __m512 abs_b = _mm512_castsi512_ps(mag_b);
        __m512 bound = _mm512_add_ps(v_atol, _mm512_mul_ps(v_rtol, abs_b));
        n_mis = _mm512_mask_add_epi32(n_mis, _mm512_cmp_ps_mask(abs_diff, bound, _CMP_GT_OQ),
                                      n_mis, one);

        __mmask16 b_zero = _mm512_testn_epi32_mask(mag_b, mag_b);
        __m512i rel_bits = _mm512_castps_si512(_mm512_div_ps(abs_diff, abs_b));
        m_rel = _mm512_mask_max_epu32(m_rel, (__mmask16)~b_zero, m_rel, rel_bits);
        _mm512_storeu_si512(out->rel_bits + v, rel_bits);
        n_rzd = _mm512_mask_add_epi32(n_rzd, _mm512_mask_test_epi32_mask(b_zero, mag_a, mag_a),
                                      n_rzd, one);
        __m512i rcode = _mm512_srli_epi32(rel_bits, 23);
        _mm_storeu_si128((__m128i *)(void *)(out->ulp_code + v), _mm512_cvtepi32_epi8(ucode));
        _mm_storeu_si128((__m128i *)(void *)(out->rel_code + v), _mm512_cvtepi32_epi8(rcode));

        for (int h = 0; h < 2; h++) {
            const float *ha = (const float *)(const void *)(pa + 32 * h);
            const float *hb = (const float *)(const void *)(pb + 32 * h);
            __m512d da = _mm512_cvtps_pd(_mm256_loadu_ps(ha));
            __m512d db = _mm512_cvtps_pd(_mm256_loadu_ps(hb));
            __m512d err = _mm512_sub_pd(da, db);
            __m512d abs_err = _mm512_and_pd(err, abs64);
            s_abs = _mm512_add_pd(s_abs, abs_err);
            s_sq = _mm512_add_pd(s_sq, _mm512_mul_pd(err, err));
            /* Squares of float32 values are exact in float64, so a fused multiply-add
             * rounds once just like the separate add: the same sums, one op fewer. */
            s_aa = _mm512_fmadd_pd(da, da, s_aa);
            s_bb = _mm512_fmadd_pd(db, db, s_bb);
            m_abs = _mm512_max_pd(m_abs, abs_err);
        }
    }
    double l_abs[8], l_sq[8], l_aa[8], l_bb[8], l_max[8];
    uint32_t l_ulp[16], l_rel[16];
    int32_t l_mis[16], l_diff[16], l_rzd[16];
    _mm512_storeu_pd(l_abs, s_abs);
    _mm512_storeu_pd(l_sq, s_sq);
    _mm512_storeu_pd(l_aa, s_aa);
    _mm512_storeu_pd(l_bb, s_bb);
    _mm512_storeu_pd(l_max, m_abs);
    _mm512_storeu_si512(l_ulp, m_ulp);
    _mm512_storeu_si512(l_rel, m_rel);
    _mm512_storeu_si512(l_mis, n_mis);
    _mm512_storeu_si512(l_diff, n_diff);
    _mm512_storeu_si512(l_rzd, n_rzd);
    return gd__metrics_block_reduce(out, l_abs, l_sq, l_aa, l_bb, l_max, l_ulp, l_rel, l_mis,
                                    l_diff, l_rzd);
}

AVX512_TARGET HOT uint64_t
avx512_sum_bytes(__m512i v)
{
    return (uint64_t)_mm512_reduce_add_epi64(_mm512_sad_epu8(v, _mm512_setzero_si512()));
}

/* As pv_count8(), 64 codes at a time (64 per lane at most in a block: no flush needed). */
AVX512_TARGET HOT void
avx512_count8(const uint8_t *codes, int base, int64_t *counts)
{
    const __m512i one = _mm512_set1_epi8(1), v_base = _mm512_set1_epi8((char)base);
    __m512i c[8];
    for (int j = 0; j < 8; j++)
        c[j] = _mm512_setzero_si512();
    for (int v = 0; v < BLOCK; v += 64) {
        __m512i t = _mm512_sub_epi8(_mm512_loadu_si512(codes + v), v_base);
#pragma GCC unroll 8
        for (int j = 0; j < 8; j++)
            c[j] = _mm512_mask_add_epi8(
                c[j], _mm512_cmpeq_epi8_mask(t, _mm512_set1_epi8((char)j)), c[j], one);
    }
    for (int j = 0; j < 8; j++)
        counts[base + j] += (int64_t)avx512_sum_bytes(c[j]);
}

/* As pv_count_rest(); the regular codes outside the window are found through a bit mask. */
AVX512_TARGET HOT void
avx512_count_rest(const uint8_t *codes, int lo, int nwin, int specials, int64_t *counts)
{
    const __m512i one = _mm512_set1_epi8(1), v_lo = _mm512_set1_epi8((char)lo);
    const __m512i v_last = _mm512_set1_epi8((char)(nwin - 1));
    const __m512i c_zero = _mm512_set1_epi8((char)REL_CODE_ZERO);
    const __m512i c_ref = _mm512_set1_epi8((char)REL_CODE_REF_ZERO);
    __m512i s_zero = _mm512_setzero_si512(), s_ref = s_zero;
    for (int v = 0; v < BLOCK; v += 64) {
        __m512i x = _mm512_loadu_si512(codes + v);
        __mmask64 outside = _mm512_cmpgt_epu8_mask(_mm512_sub_epi8(x, v_lo), v_last);
        if (specials) {
            __mmask64 is_zero = _mm512_cmpeq_epi8_mask(x, c_zero);
            __mmask64 is_ref = _mm512_cmpeq_epi8_mask(x, c_ref);
            s_zero = _mm512_mask_add_epi8(s_zero, is_zero, s_zero, one);
            s_ref = _mm512_mask_add_epi8(s_ref, is_ref, s_ref, one);
            outside &= ~(is_zero | is_ref);
        }
        while (outside) {
            counts[codes[v + __builtin_ctzll(outside)]]++;
            outside &= outside - 1;
        }
    }
    if (specials) {
        counts[REL_CODE_ZERO] += (int64_t)avx512_sum_bytes(s_zero);
        counts[REL_CODE_REF_ZERO] += (int64_t)avx512_sum_bytes(s_ref);
    }
}

AVX512_TARGET HOT void
avx512_count(const uint8_t *codes, int specials, int64_t *counts)
{
    int reg_lo = specials ? 1 : 0, reg_hi = specials ? 254 : 255;
    const __m512i v_first = _mm512_set1_epi8((char)reg_lo);
    const __m512i v_span = _mm512_set1_epi8((char)(reg_hi - reg_lo));
    __m512i mn = _mm512_set1_epi8((char)0xff), mx = _mm512_setzero_si512();
    for (int v = 0; v < BLOCK; v += 64) {
        __m512i x = _mm512_loadu_si512(codes + v);
        __mmask64 regular = _mm512_cmple_epu8_mask(_mm512_sub_epi8(x, v_first), v_span);
        mn = _mm512_mask_min_epu8(mn, regular, mn, x);
        mx = _mm512_mask_max_epu8(mx, regular, mx, x);
    }
    uint8_t l_mn[64], l_mx[64];
    _mm512_storeu_si512(l_mn, mn);
    _mm512_storeu_si512(l_mx, mx);
    int lo = 255, hi = 0;
    for (int j = 0; j < 64; j++) {
        lo = l_mn[j] < lo ? l_mn[j] : lo;
        hi = l_mx[j] > hi ? l_mx[j] : hi;
    }
    int win_lo, nwin;
    gd__metrics_window_pick(lo, hi, reg_lo, reg_hi, &win_lo, &nwin);
    for (int base = win_lo; base < win_lo + nwin; base += 8)
        avx512_count8(codes, base, counts);
    avx512_count_rest(codes, win_lo, nwin, specials, counts);
}

AVX512_TARGET void
gd__metrics_blocks_avx512(struct gd_metrics *m, const char *a, const char *b,
                          int64_t n_blocks, int64_t offset, const struct tol *t,
                          struct f32_block *blk, struct f32_counts *counts)
{
    F32_BLOCKS_BODY(avx512_block_pass, avx512_count)
}
#endif
