/*
 * fingerprint.cu: a layer's fingerprint computed where it lies (fp_rules.h defines every
 * number; docs/CUDA_KERNELS.md, "Fingerprints", the launch plan):
 *
 *   fp_sample   clears the result and gathers the sampled elements (one thread each);
 *   fp_chunks   one thread per 1 KiB chunk: the chunk's BLAKE3 chaining value and, from
 *               the same words in registers, its float64 sums, min and max keys, NaN and
 *               Inf counts and histogram; each block of 128 chunks then joins its chunks
 *               in the tree, in shared memory;
 *   fp_reduce   joins 512 nodes per block, level by level, until one (the root) is left.
 *
 * Integer counts and keys go through atomics (their totals do not depend on the order);
 * every floating-point sum follows the tree, so the result is the CPU's to the bit.
 */
#include <cuda_fp16.h>

#include "../core/fp_rules.h"
#include "cuda.h"
#include "fingerprint.h"

#define FP_CHUNK_THREADS 128
#define FP_REDUCE_NODES 512

struct fp_node {
    uint32_t cv[8];
    double sum, sumsq;
};

/*
 * Warp-wide integer reductions: the sm_80 instructions where the device has them, butterfly
 * shuffles on sm_75 (Turing). Integer sums, minima and maxima are exact in any order, so both
 * give the same bits.
 */
__device__ __forceinline__ unsigned
warp_add_u32(unsigned v)
{
#if __CUDA_ARCH__ >= 800
    return __reduce_add_sync(0xffffffffu, v);
#else
    for (int d = 16; d > 0; d /= 2)
        v += __shfl_xor_sync(0xffffffffu, v, d);
    return v;
#endif
}

__device__ __forceinline__ uint32_t
warp_min_u32(uint32_t v)
{
#if __CUDA_ARCH__ >= 800
    return __reduce_min_sync(0xffffffffu, v);
#else
    for (int d = 16; d > 0; d /= 2)
        v = min(v, (uint32_t)__shfl_xor_sync(0xffffffffu, v, d));
    return v;
#endif
}

__device__ __forceinline__ uint32_t
warp_max_u32(uint32_t v)
{
#if __CUDA_ARCH__ >= 800
    return __reduce_max_sync(0xffffffffu, v);
#else
    for (int d = 16; d > 0; d /= 2)
        v = max(v, (uint32_t)__shfl_xor_sync(0xffffffffu, v, d));
    return v;
#endif
}

__global__ static void
fp_sample(const unsigned char *data, int64_t n, int esize, uint64_t seed, int64_t count,
          struct gd__fp_raw *raw)
{
    int64_t k = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (blockIdx.x == 0) {
        for (int b = threadIdx.x; b < GD_FP_HIST_BINS; b += blockDim.x)
            raw->hist[b] = 0;
        if (threadIdx.x == 0) {
            raw->min32 = 0xffffffffu;
            raw->max32 = 0;
            raw->min64 = ~0ull;
            raw->max64 = 0;
            raw->nan_count = raw->inf_count = 0;
        }
    }
    if (k >= count)
        return;
    int64_t i = gd__fp_sample_index(seed, n, k);
    const unsigned char *p = data + i * esize;
    unsigned char *o = raw->samples + k * esize;
    switch (esize) {
    case 1: *o = *p; break;
    case 2: *(uint16_t *)o = *(const uint16_t *)p; break;
    case 4: *(uint32_t *)o = *(const uint32_t *)p; break;
    default: *(uint64_t *)o = *(const uint64_t *)p; break;
    }
}

/* Per-thread statistics of one chunk. */
struct fp_acc {
    double sum, sumsq;
    uint32_t lo32, hi32;
    unsigned long long lo64, hi64;
    unsigned nan, inf;
};

static __device__ __forceinline__ void
acc_bits32(fp_acc &a, uint32_t bits, unsigned *hist)
{
    if ((bits & 0x7f800000u) == 0x7f800000u) {
        if (bits & 0x007fffffu)
            a.nan++;
        else
            a.inf++;
        return;
    }
    uint32_t k = gd__fp_key32(bits);
    a.lo32 = min(a.lo32, k);
    a.hi32 = max(a.hi32, k);
    hist[gd__fp_bin32(bits) * FP_CHUNK_THREADS]++;
    double d = (double)__uint_as_float(bits);
    a.sum = __dadd_rn(a.sum, d);
    a.sumsq = __dadd_rn(a.sumsq, __dmul_rn(d, d));
}

static __device__ __forceinline__ void
acc_bits64(fp_acc &a, uint64_t bits, unsigned *hist)
{
    if ((bits & 0x7ff0000000000000ull) == 0x7ff0000000000000ull) {
        if (bits & 0x000fffffffffffffull)
            a.nan++;
        else
            a.inf++;
        return;
    }
    unsigned long long k = gd__fp_key64(bits);
    a.lo64 = min(a.lo64, k);
    a.hi64 = max(a.hi64, k);
    hist[gd__fp_bin64(bits) * FP_CHUNK_THREADS]++;
    double d = __longlong_as_double((long long)bits);
    a.sum = __dadd_rn(a.sum, d);
    a.sumsq = __dadd_rn(a.sumsq, __dmul_rn(d, d));
}

/* The statistics of the first `valid` bytes of a block. */
template <int KIND>
static __device__ __forceinline__ void
acc_block(fp_acc &a, const uint32_t m[16], int valid, unsigned *hist)
{
    if (KIND == GD__FP_F32) {
#pragma unroll
        for (int i = 0; i < 16; i++)
            if (4 * i < valid)
                acc_bits32(a, m[i], hist);
    } else if (KIND == GD__FP_F16 || KIND == GD__FP_BF16) {
#pragma unroll
        for (int i = 0; i < 32; i++) {
            if (2 * i >= valid)
                continue;
            uint16_t h = (uint16_t)(m[i / 2] >> (16 * (i & 1)));
            /* the hardware's float16 widening: exact, the bits of gd__fp_f16_bits32 for every
             * number (a NaN may lose its payload, but is counted as a NaN either way) */
            acc_bits32(a, KIND == GD__FP_F16 ? __float_as_uint(__half2float(__ushort_as_half(h)))
                                             : gd__fp_bf16_bits32(h),
                       hist);
        }
    } else if (KIND == GD__FP_F64) {
#pragma unroll
        for (int i = 0; i < 8; i++)
            if (8 * i < valid)
                acc_bits64(a, (uint64_t)m[2 * i] | (uint64_t)m[2 * i + 1] << 32, hist);
    }
}

/* Joins cnt nodes (cnt <= blockDim.x * per) in shared memory, level by level, into nodes[0];
 * the last join is the root when `whole` (these are all the nodes there are). */
static __device__ void
join_levels(fp_node *nodes, int cnt, int whole)
{
    while (cnt > 1) {
        int pairs = cnt / 2;
        fp_node mine[FP_REDUCE_NODES / 256 + 1];
        int n_mine = 0;
        for (int i = threadIdx.x; i < pairs; i += blockDim.x) {
            fp_node out;
            gd__b3_parent(out.cv, nodes[2 * i].cv, nodes[2 * i + 1].cv, whole && cnt == 2);
            out.sum = __dadd_rn(nodes[2 * i].sum, nodes[2 * i + 1].sum);
            out.sumsq = __dadd_rn(nodes[2 * i].sumsq, nodes[2 * i + 1].sumsq);
            mine[n_mine++] = out;
        }
        fp_node carry;
        if (cnt & 1)
            carry = nodes[cnt - 1];
        __syncthreads();
        n_mine = 0;
        for (int i = threadIdx.x; i < pairs; i += blockDim.x)
            nodes[i] = mine[n_mine++];
        if ((cnt & 1) && threadIdx.x == 0)
            nodes[pairs] = carry;
        __syncthreads();
        cnt = pairs + (cnt & 1);
    }
}

template <int KIND>
__global__ static void __launch_bounds__(FP_CHUNK_THREADS)
fp_chunks(const unsigned char *__restrict__ data, uint64_t nbytes, uint64_t n_chunks,
          fp_node *out, struct gd__fp_raw *raw)
{
    __shared__ unsigned hist_all[GD_FP_HIST_BINS * FP_CHUNK_THREADS];
    __shared__ fp_node nodes[FP_CHUNK_THREADS];
    unsigned *hist = hist_all + threadIdx.x;
    if (KIND != GD__FP_BYTES)
        for (int b = 0; b < GD_FP_HIST_BINS; b++)
            hist[b * FP_CHUNK_THREADS] = 0;
    uint64_t c = (uint64_t)blockIdx.x * FP_CHUNK_THREADS + threadIdx.x;
    fp_acc a = {0.0, 0.0, 0xffffffffu, 0u, ~0ull, 0ull, 0u, 0u};
    if (c < n_chunks) {
        uint64_t off = c * GD__B3_CHUNK;
        uint64_t len = nbytes - off < GD__B3_CHUNK ? nbytes - off : GD__B3_CHUNK;
        int n_blocks = (int)((len + GD__B3_BLOCK - 1) / GD__B3_BLOCK);
        uint32_t cv[8];
        gd__b3_iv(cv);
        for (int blk = 0; blk < n_blocks; blk++) {
            uint64_t bo = off + (uint64_t)blk * GD__B3_BLOCK;
            int bl = nbytes - bo < GD__B3_BLOCK ? (int)(nbytes - bo) : GD__B3_BLOCK;
            uint32_t m[16];
            if (bl == GD__B3_BLOCK) {
                const uint4 *q = (const uint4 *)(data + bo);
#pragma unroll
                for (int i = 0; i < 4; i++) {
                    uint4 w = __ldg(q + i);
                    m[4 * i] = w.x;
                    m[4 * i + 1] = w.y;
                    m[4 * i + 2] = w.z;
                    m[4 * i + 3] = w.w;
                }
            } else {
                for (int i = 0; i < 16; i++)
                    m[i] = 0;
                for (int i = 0; i < bl; i++)
                    m[i / 4] |= (uint32_t)data[bo + i] << (8 * (i % 4));
            }
            acc_block<KIND>(a, m, bl, hist);
            gd__b3_compress(cv, m, c, (uint32_t)bl,
                            gd__b3_block_flags(blk, n_blocks, n_chunks == 1));
        }
        for (int i = 0; i < 8; i++)
            nodes[threadIdx.x].cv[i] = cv[i];
        nodes[threadIdx.x].sum = a.sum;
        nodes[threadIdx.x].sumsq = a.sumsq;
    }
    __syncthreads();
    uint64_t first = (uint64_t)blockIdx.x * FP_CHUNK_THREADS;
    int cnt = n_chunks - first < FP_CHUNK_THREADS ? (int)(n_chunks - first) : FP_CHUNK_THREADS;
    int whole = n_chunks <= FP_CHUNK_THREADS;
    join_levels(nodes, cnt, whole);
    if (threadIdx.x == 0) {
        if (whole) {
            for (int i = 0; i < 8; i++)
                raw->hash[i] = nodes[0].cv[i];
            raw->sum = nodes[0].sum;
            raw->sumsq = nodes[0].sumsq;
        } else {
            out[blockIdx.x] = nodes[0];
        }
    }
    if (KIND == GD__FP_BYTES)
        return;
    for (int b = threadIdx.x; b < GD_FP_HIST_BINS; b += FP_CHUNK_THREADS) {
        unsigned long long s = 0;
        for (int t = 0; t < FP_CHUNK_THREADS; t++)
            s += hist_all[b * FP_CHUNK_THREADS + t];
        if (s)
            atomicAdd(&raw->hist[b], s);
    }
    unsigned nan = warp_add_u32(a.nan);
    unsigned inf = warp_add_u32(a.inf);
    int lane = threadIdx.x & 31;
    if (KIND == GD__FP_F64) {
        for (int d = 16; d > 0; d /= 2) {
            a.lo64 = min(a.lo64, __shfl_xor_sync(0xffffffffu, a.lo64, d));
            a.hi64 = max(a.hi64, __shfl_xor_sync(0xffffffffu, a.hi64, d));
        }
        if (lane == 0 && a.lo64 != ~0ull) {
            atomicMin(&raw->min64, a.lo64);
            atomicMax(&raw->max64, a.hi64);
        }
    } else {
        uint32_t lo = warp_min_u32(a.lo32);
        uint32_t hi = warp_max_u32(a.hi32);
        if (lane == 0 && lo != 0xffffffffu) {
            atomicMin(&raw->min32, lo);
            atomicMax(&raw->max32, hi);
        }
    }
    if (lane == 0 && nan)
        atomicAdd(&raw->nan_count, (unsigned long long)nan);
    if (lane == 0 && inf)
        atomicAdd(&raw->inf_count, (unsigned long long)inf);
}

__global__ static void __launch_bounds__(FP_REDUCE_NODES / 2)
fp_reduce(const fp_node *in, uint64_t m, fp_node *out, struct gd__fp_raw *raw)
{
    __shared__ fp_node nodes[FP_REDUCE_NODES];
    uint64_t first = (uint64_t)blockIdx.x * FP_REDUCE_NODES;
    int cnt = m - first < FP_REDUCE_NODES ? (int)(m - first) : FP_REDUCE_NODES;
    for (int i = threadIdx.x; i < cnt; i += blockDim.x)
        nodes[i] = in[first + i];
    __syncthreads();
    int whole = m <= FP_REDUCE_NODES;
    join_levels(nodes, cnt, whole);
    if (threadIdx.x != 0)
        return;
    if (whole) {
        for (int i = 0; i < 8; i++)
            raw->hash[i] = nodes[0].cv[i];
        raw->sum = nodes[0].sum;
        raw->sumsq = nodes[0].sumsq;
    } else {
        out[blockIdx.x] = nodes[0];
    }
}

static uint64_t
div_up(uint64_t a, uint64_t b)
{
    return (a + b - 1) / b;
}

extern "C" size_t
gd__cuda_fp_scratch_size(size_t nbytes)
{
    uint64_t groups = div_up(div_up(nbytes, GD__B3_CHUNK), FP_CHUNK_THREADS);
    if (groups <= 1)
        return 0;
    return (size_t)(groups + div_up(groups, FP_REDUCE_NODES)) * sizeof(fp_node);
}

extern "C" int
gd__cuda_fp_launch(const void *data, size_t nbytes, enum gd__fp_kind kind, int esize, int ndim,
                   const int64_t *shape, struct gd__fp_raw *raw, void *scratch,
                   cudaStream_t stream, struct gd_err *err)
{
    int rc = 0;
    const unsigned char *p = (const unsigned char *)data;
    int64_t n = (int64_t)(nbytes / (size_t)esize);
    int64_t count = gd__fp_sample_count(n);
    uint64_t seed = gd__fp_seed(ndim, shape);
    uint64_t n_chunks = div_up(nbytes, GD__B3_CHUNK);
    uint64_t groups = div_up(n_chunks, FP_CHUNK_THREADS);
    fp_node *a = (fp_node *)scratch, *b = a + groups;
    fp_sample<<<(unsigned)div_up(count > 0 ? count : 1, 256), 256, 0, stream>>>(p, n, esize, seed,
                                                                              count, raw);
    GD_CUDA_CHECK_LAUNCH();
    switch (kind) {
#define FP_LAUNCH(K)                                                                           \
    case K:                                                                                    \
        fp_chunks<K><<<(unsigned)groups, FP_CHUNK_THREADS, 0, stream>>>(p, nbytes, n_chunks, a, \
                                                                       raw);                   \
        break;
        FP_LAUNCH(GD__FP_BYTES)
        FP_LAUNCH(GD__FP_F32)
        FP_LAUNCH(GD__FP_F16)
        FP_LAUNCH(GD__FP_BF16)
        FP_LAUNCH(GD__FP_F64)
#undef FP_LAUNCH
    }
    GD_CUDA_CHECK_LAUNCH();
    for (uint64_t m = groups; m > 1;) {
        uint64_t next = div_up(m, FP_REDUCE_NODES);
        fp_reduce<<<(unsigned)next, FP_REDUCE_NODES / 2, 0, stream>>>(a, m, b, raw);
        GD_CUDA_CHECK_LAUNCH();
        fp_node *t = a;
        a = b;
        b = t;
        m = next;
    }
done:
    return rc;
}
