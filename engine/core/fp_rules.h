/*
 * fp_rules.h: the definitions of a layer fingerprint that the CPU code and the CUDA kernels
 * share, stated once so that both give the same bits (docs/COMPARISON.md, "Fingerprints"):
 *
 * - the hash: BLAKE3 (the 2020 specification, unkeyed, 32-byte output) of the data bytes,
 *   C order, little-endian. Its 1 KiB chunks are hashed independently and joined in a
 *   binary tree whose left subtrees are full, which is what lets a GPU hash in parallel;
 *   gd__b3_compress() is the one compression function both sides call;
 * - the sums: over each chunk's finite elements in element order, in float64, then joined
 *   in the same tree as the hash (a parent's sum is left + right), so the order of every
 *   addition is fixed by the byte length alone;
 * - min and max by the IEEE total order of the finite values (-0 below +0), through keys
 *   that order as unsigned integers;
 * - the log2 histogram bin of a finite value;
 * - the sample: GD_FP_SAMPLES element indices that depend on the shape only.
 *
 * Compiled as host code by the C compiler and as host and device code by nvcc.
 */
#ifndef GPUDIFF_CORE_FP_RULES_H
#define GPUDIFF_CORE_FP_RULES_H

#include <stdint.h>

#ifdef __CUDACC__
#define GD_FP_FN static __host__ __device__ __forceinline__
#else
#define GD_FP_FN static inline
#endif

#define GD__B3_CHUNK 1024
#define GD__B3_BLOCK 64
#define GD__B3_CHUNK_START 1u
#define GD__B3_CHUNK_END 2u
#define GD__B3_PARENT 4u
#define GD__B3_ROOT 8u

#define GD__B3_IV0 0x6A09E667u
#define GD__B3_IV1 0xBB67AE85u
#define GD__B3_IV2 0x3C6EF372u
#define GD__B3_IV3 0xA54FF53Au
#define GD__B3_IV4 0x510E527Fu
#define GD__B3_IV5 0x9B05688Cu
#define GD__B3_IV6 0x1F83D9ABu
#define GD__B3_IV7 0x5BE0CD19u

GD_FP_FN uint32_t
gd__b3_rotr(uint32_t x, int n)
{
    return (x >> n) | (x << (32 - n));
}

#define GD__B3_G(a, b, c, d, x, y)                                                          \
    do {                                                                                    \
        v[a] = v[a] + v[b] + (x);                                                           \
        v[d] = gd__b3_rotr(v[d] ^ v[a], 16);                                                \
        v[c] = v[c] + v[d];                                                                 \
        v[b] = gd__b3_rotr(v[b] ^ v[c], 12);                                                \
        v[a] = v[a] + v[b] + (y);                                                           \
        v[d] = gd__b3_rotr(v[d] ^ v[a], 8);                                                 \
        v[c] = v[c] + v[d];                                                                 \
        v[b] = gd__b3_rotr(v[b] ^ v[c], 7);                                                 \
    } while (0)

/* One round with the message words in the order s0..s15 (the spec's permutation applied
 * r times, written out so that nvcc keeps every word in a register). */
#define GD__B3_ROUND(s0, s1, s2, s3, s4, s5, s6, s7, s8, s9, s10, s11, s12, s13, s14, s15)  \
    do {                                                                                    \
        GD__B3_G(0, 4, 8, 12, m[s0], m[s1]);                                                \
        GD__B3_G(1, 5, 9, 13, m[s2], m[s3]);                                                \
        GD__B3_G(2, 6, 10, 14, m[s4], m[s5]);                                               \
        GD__B3_G(3, 7, 11, 15, m[s6], m[s7]);                                               \
        GD__B3_G(0, 5, 10, 15, m[s8], m[s9]);                                               \
        GD__B3_G(1, 6, 11, 12, m[s10], m[s11]);                                             \
        GD__B3_G(2, 7, 8, 13, m[s12], m[s13]);                                              \
        GD__B3_G(3, 4, 9, 14, m[s14], m[s15]);                                              \
    } while (0)

/*
 * BLAKE3's compression of one 64-byte block m (16 little-endian words) into the chaining
 * value cv (8 words, updated in place): the first 8 words of the output, which are also the
 * hash when the ROOT flag is set.
 */
GD_FP_FN void
gd__b3_compress(uint32_t cv[8], const uint32_t m[16], uint64_t counter, uint32_t block_len,
                uint32_t flags)
{
    uint32_t v[16] = {cv[0], cv[1], cv[2], cv[3], cv[4], cv[5], cv[6], cv[7],
                      GD__B3_IV0, GD__B3_IV1, GD__B3_IV2, GD__B3_IV3,
                      (uint32_t)counter, (uint32_t)(counter >> 32), block_len, flags};
    GD__B3_ROUND(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    GD__B3_ROUND(2, 6, 3, 10, 7, 0, 4, 13, 1, 11, 12, 5, 9, 14, 15, 8);
    GD__B3_ROUND(3, 4, 10, 12, 13, 2, 7, 14, 6, 5, 9, 0, 11, 15, 8, 1);
    GD__B3_ROUND(10, 7, 12, 9, 14, 3, 13, 15, 4, 0, 11, 2, 5, 8, 1, 6);
    GD__B3_ROUND(12, 13, 9, 11, 15, 10, 14, 8, 7, 2, 5, 3, 0, 1, 6, 4);
    GD__B3_ROUND(9, 14, 11, 5, 8, 12, 15, 1, 13, 3, 0, 10, 2, 6, 4, 7);
    GD__B3_ROUND(11, 15, 5, 0, 1, 9, 8, 6, 14, 10, 2, 12, 3, 4, 7, 13);
    for (int i = 0; i < 8; i++)
        cv[i] = v[i] ^ v[i + 8];
}

GD_FP_FN void
gd__b3_iv(uint32_t cv[8])
{
    cv[0] = GD__B3_IV0;
    cv[1] = GD__B3_IV1;
    cv[2] = GD__B3_IV2;
    cv[3] = GD__B3_IV3;
    cv[4] = GD__B3_IV4;
    cv[5] = GD__B3_IV5;
    cv[6] = GD__B3_IV6;
    cv[7] = GD__B3_IV7;
}

/* A parent node: the chaining value of left || right, ROOT when it is the last one. */
GD_FP_FN void
gd__b3_parent(uint32_t out[8], const uint32_t left[8], const uint32_t right[8], int root)
{
    uint32_t m[16];
    for (int i = 0; i < 8; i++) {
        m[i] = left[i];
        m[i + 8] = right[i];
    }
    gd__b3_iv(out);
    gd__b3_compress(out, m, 0, GD__B3_BLOCK, GD__B3_PARENT | (root ? GD__B3_ROOT : 0u));
}

/* The flags of block `blk` of a chunk that has n_blocks blocks (root: the only chunk). */
GD_FP_FN uint32_t
gd__b3_block_flags(int blk, int n_blocks, int root)
{
    uint32_t f = 0;
    if (blk == 0)
        f |= GD__B3_CHUNK_START;
    if (blk == n_blocks - 1)
        f |= GD__B3_CHUNK_END | (root ? GD__B3_ROOT : 0u);
    return f;
}

/* ---- statistics ---- */

/* The histogram of |x| over finite values: bin 0 zeros, bin 1 0 < |x| < 2^-48, bin
 * 2 + (e + 48) for 2^e <= |x| < 2^(e+1), e = -48..15, the last bin |x| >= 2^16. */
#define GD_FP_HIST_EXP_MIN (-48)
#define GD_FP_HIST_EXP_MAX 15
#define GD_FP_HIST_BINS (4 + GD_FP_HIST_EXP_MAX - GD_FP_HIST_EXP_MIN)

/* Bin of a finite float32 (float16 and bfloat16 widen to it exactly), from its bits. */
GD_FP_FN int
gd__fp_bin32(uint32_t bits)
{
    uint32_t mag = bits & 0x7fffffffu;
    if (mag == 0)
        return 0;
    int e = (int)(mag >> 23) - 127; /* a subnormal (field 0) is far below 2^-48 */
    if (e < GD_FP_HIST_EXP_MIN)
        return 1;
    if (e > GD_FP_HIST_EXP_MAX)
        return GD_FP_HIST_BINS - 1;
    return 2 + e - GD_FP_HIST_EXP_MIN;
}

/* Bin of a finite float64, from its bits. */
GD_FP_FN int
gd__fp_bin64(uint64_t bits)
{
    uint64_t mag = bits & 0x7fffffffffffffffull;
    if (mag == 0)
        return 0;
    int e = (int)(mag >> 52) - 1023;
    if (e < GD_FP_HIST_EXP_MIN)
        return 1;
    if (e > GD_FP_HIST_EXP_MAX)
        return GD_FP_HIST_BINS - 1;
    return 2 + e - GD_FP_HIST_EXP_MIN;
}

/* Keys that order finite floats as IEEE totalOrder does (-0 < +0) when compared unsigned. */
GD_FP_FN uint32_t
gd__fp_key32(uint32_t bits)
{
    return (bits & 0x80000000u) ? ~bits : bits | 0x80000000u;
}

GD_FP_FN uint32_t
gd__fp_unkey32(uint32_t key)
{
    return (key & 0x80000000u) ? key & 0x7fffffffu : ~key;
}

GD_FP_FN uint64_t
gd__fp_key64(uint64_t bits)
{
    return (bits & 0x8000000000000000ull) ? ~bits : bits | 0x8000000000000000ull;
}

GD_FP_FN uint64_t
gd__fp_unkey64(uint64_t key)
{
    return (key & 0x8000000000000000ull) ? key & 0x7fffffffffffffffull : ~key;
}

/* float16 and bfloat16 bits widened to float32 bits (exact). */
GD_FP_FN uint32_t
gd__fp_f16_bits32(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t exp = (h >> 10) & 0x1fu, man = h & 0x3ffu;
    if (exp == 0x1f)
        return sign | 0x7f800000u | (man << 13);
    if (exp != 0)
        return sign | ((exp + 112u) << 23) | (man << 13);
    if (man == 0)
        return sign;
    int shift = 0; /* a subnormal becomes normal in float32 */
    while ((man & 0x400u) == 0) {
        man <<= 1;
        shift++;
    }
    return sign | ((uint32_t)(113 - shift) << 23) | ((man & 0x3ffu) << 13);
}

GD_FP_FN uint32_t
gd__fp_bf16_bits32(uint16_t h)
{
    return (uint32_t)h << 16;
}

/* ---- the sample ---- */

#define GD_FP_SAMPLES 2048

GD_FP_FN uint64_t
gd__fp_splitmix64(uint64_t x)
{
    x += 0x9E3779B97F4A7C15ull;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    return x ^ (x >> 31);
}

/* The sample's seed: splitmix64 folded over the number of dimensions and each dimension. */
GD_FP_FN uint64_t
gd__fp_seed(int ndim, const int64_t *shape)
{
    uint64_t s = gd__fp_splitmix64(0x6770756469666670ull ^ (uint64_t)ndim); /* "gpudiffp" */
    for (int i = 0; i < ndim; i++)
        s = gd__fp_splitmix64(s ^ (uint64_t)shape[i]);
    return s;
}

/* The number of sampled elements of a tensor of n elements. */
GD_FP_FN int64_t
gd__fp_sample_count(int64_t n)
{
    return n < GD_FP_SAMPLES ? n : GD_FP_SAMPLES;
}

/*
 * The flat index of sample k (0 <= k < gd__fp_sample_count(n)): every element when n is at
 * most GD_FP_SAMPLES; otherwise [0, n) cut into GD_FP_SAMPLES strata [floor(k n / S),
 * floor((k + 1) n / S)) and one element of stratum k, at splitmix64(seed + k) modulo its
 * length. The indices increase with k and are distinct.
 */
GD_FP_FN int64_t
gd__fp_sample_index(uint64_t seed, int64_t n, int64_t k)
{
    const int64_t S = GD_FP_SAMPLES;
    if (n <= S)
        return k;
    int64_t q = n / S, r = n % S; /* floor(k n / S) = k q + floor(k r / S), no overflow */
    int64_t lo = k * q + (k * r) / S;
    int64_t hi = (k + 1) * q + ((k + 1) * r) / S;
    uint64_t len = (uint64_t)(hi - lo);
    return lo + (int64_t)(gd__fp_splitmix64(seed + (uint64_t)k) % len);
}

#endif
