/*
 * repro.cuh: what the --repro bitwise kernels (engine/cuda/repro_*.cu) share: their launch
 * geometry and the register-tiled product that Gemm, MatMul, Conv and ConvTranspose run.
 *
 * Bitwise mode gives every output element the cpu backend's bits (docs/NUMERICS.md's orders):
 * each element is computed by one thread, in cpu's order, with cpu's roundings. These files
 * are built with --fmad=false, and the accumulations are written with __fmul_rn and
 * __fadd_rn besides, so no multiply is fused into an add. No atomics, no reduction across
 * threads, no tensor cores: which block or thread computes an element never changes its
 * value, so neither do the grid size, the SM count, the scheduling or the batch size.
 * Every kernel walks its work with a grid-stride loop, so GPUDIFF_REPRO_GRID=N (the most
 * blocks one launch may use, read at session open) runs the same work on fewer blocks, as
 * a GPU with fewer SMs would: the test of that claim.
 */
#ifndef GPUDIFF_REPRO_CUH
#define GPUDIFF_REPRO_CUH

#include <stdint.h>

#include "kernels.cuh"

/* Blocks for a grid-stride kernel over `work` items: one each, at most 65535 * 8, and at
 * most the session's GPUDIFF_REPRO_GRID. */
static inline unsigned
gd__repro_blocks(const struct gd__cuda_ctx *ctx, int64_t work)
{
    int64_t b = work < 1 ? 1 : work;
    if (b > 65535LL * 8)
        b = 65535LL * 8;
    if (ctx->repro_grid > 0 && b > ctx->repro_grid)
        b = ctx->repro_grid;
    return (unsigned)b;
}

/* Elements of a grid-stride element-wise kernel of GD_CUDA_THREADS threads. */
static inline unsigned
gd__repro_elt_blocks(const struct gd__cuda_ctx *ctx, int64_t n)
{
    return gd__repro_blocks(ctx, (n + GD_CUDA_THREADS - 1) / GD_CUDA_THREADS);
}

/*
 * ---- the tiled product ----
 *
 * For each batch b < batches: C[i, j] = sum over k of A[i, k] B[k, j], i < M, j < N, k < K,
 * every element summed from +0 for k ascending, one rounded product and one rounded sum per
 * term: cpu's order for Gemm, MatMul (k ascending) and the convolutions (k = input channel,
 * kernel depth, row, column). A block computes a BM x BN tile of C, each of its threads a
 * TM x TN sub-tile held in registers, for k in blocks of BK staged through shared memory;
 * the k loop of every element is ascending and unbroken, whatever the tile sizes, so they
 * are a choice of speed only. A k past K, a row past M and a column past N are computed on
 * zeros (adding +0 to a sum that began at +0 leaves it as it is) and never stored.
 *
 * The operands come from loaders, so that a convolution gathers its input taps on the fly.
 * The loaders stay constant (kernel parameters: indexing them never copies them to memory);
 * what a tile or a column needs is a small value they return:
 *   LA: a.at(bat), once per tile, gives v with v.get(i, k) for i < M, k < K.
 *   LB: b.col(bat, j), for the column a thread loads (per tile: its column does not change),
 *       gives v with v.get(k, careful) for k < K, `careful` saying what a tap that cpu skips
 *       gives: 0 normally, the sentinel below when the weights are not all finite.
 *   ST: s.put(bat, i, j, acc) for i < M, j < N: the epilogue (alpha, beta C, a bias).
 * A_KCONTIG / B_JCONTIG say which index walks the operand's memory, so that neighbouring
 * threads load neighbouring elements.
 *
 * A convolution's taps in the padding are skipped by cpu (its direct loops) or multiplied as
 * zeros (its tiled loops), which agree when every weight is finite (w * 0 = +-0 adds
 * nothing). With an infinite or NaN weight w * 0 would be NaN: then (a device flag the
 * launcher sets from a scan of the weights) the loader gives the padding the sentinel, an
 * sNaN no arithmetic makes (input NaNs are loaded as the quiet NaN), and the product skips
 * it, as cpu does.
 */
#define GD_REPRO_SKIP 0x7f800001u

static __device__ __forceinline__ int
gd__repro_is_skip(float v)
{
    return __float_as_uint(v) == GD_REPRO_SKIP;
}

/* A matrix product's shape and work: M x N per batch, K terms, in tiles. */
struct gd__repro_mm {
    int64_t m, n, k, batches;
    int64_t tiles_m, tiles_n;
    const int *careful; /* device flag: 1 when the skip rule applies; NULL never */
};

template <int BM, int BN, int BK, int TM, int TN> struct gd__repro_tile {
    enum { NT = (BM / TM) * (BN / TN), PAD = 4 };
};

/* Row (or column) of C that entry r of a thread's TM (TN) values is, for a thread at t in
 * its dimension: TM = 8 splits into two runs of 4, half a tile apart (conflict-free float4
 * reads of shared memory); smaller TM are one run. */
template <int BM, int TM>
static __device__ __forceinline__ int
gd__repro_sub(int t, int r)
{
    if (TM == 8)
        return (r < 4 ? 0 : BM / 2) + t * 4 + (r & 3);
    return t * TM + r;
}

template <int BM, int TM>
static __device__ __forceinline__ void
gd__repro_frag(const float *row, int t, float *v)
{
    if (TM == 8) {
        float4 lo = *(const float4 *)(row + t * 4);
        float4 hi = *(const float4 *)(row + BM / 2 + t * 4);
        v[0] = lo.x;
        v[1] = lo.y;
        v[2] = lo.z;
        v[3] = lo.w;
        v[4] = hi.x;
        v[5] = hi.y;
        v[6] = hi.z;
        v[7] = hi.w;
    } else if (TM == 4) {
        float4 q = *(const float4 *)(row + t * 4);
        v[0] = q.x;
        v[1] = q.y;
        v[2] = q.z;
        v[3] = q.w;
    } else {
#pragma unroll
        for (int r = 0; r < TM; r++)
            v[r] = row[t * TM + r];
    }
}

/* Registers: the 128 x 128 tile keeps its 64 sums and operands in up to 255 registers, one
 * block per SM (at two, ptxas spilled); the smaller tiles fit two and three blocks. */
template <int BM, int BN, int BK, int TM, int TN, bool A_KCONTIG, bool B_JCONTIG, class LA,
          class LB, class ST>
static __global__ void __launch_bounds__((BM / TM) * (BN / TN), BM >= 128  ? 1
                                                                : BM >= 64 ? 2
                                                                           : 3)
    gd__repro_tiled(gd__repro_mm mm, LA la, LB lb, ST st)
{
    enum { NT = (BM / TM) * (BN / TN), EA = BM * BK / NT, EB = BK * BN / NT, PAD = 4 };
    static_assert(EA * NT == BM * BK && EB * NT == BK * BN, "tile sizes");
    static_assert(!B_JCONTIG || NT % BN == 0, "a thread's B column must stay fixed");
    __shared__ __align__(16) float as[BK][BM + PAD];
    __shared__ __align__(16) float bs[BK][BN + PAD];
    const int tid = threadIdx.x, tx = tid % (BN / TN), ty = tid / (BN / TN);
    const int careful = mm.careful != NULL ? *mm.careful : 0;
    const float pad = careful ? __uint_as_float(GD_REPRO_SKIP) : 0.0f;
    const int64_t per_batch = mm.tiles_m * mm.tiles_n, work = per_batch * mm.batches;
    for (int64_t w = blockIdx.x; w < work; w += gridDim.x) {
        const int64_t bat = w / per_batch, r = w % per_batch;
        const int64_t i0 = (r % mm.tiles_m) * BM, j0 = (r / mm.tiles_m) * BN;
        const auto va = la.at(bat);
        auto vb = lb.col(bat, j0 + tid % BN); /* B_JCONTIG: the thread's column */
        float ra[EA], rb[EB];
        float acc[TM][TN];
#pragma unroll
        for (int i = 0; i < TM; i++)
#pragma unroll
            for (int j = 0; j < TN; j++)
                acc[i][j] = 0.0f;
        /* loads of the k block at k0 into registers, and their stores into shared memory */
        auto load = [&](int64_t k0) {
#pragma unroll
            for (int e = 0; e < EA; e++) {
                int idx = tid + NT * e;
                int kk = A_KCONTIG ? idx % BK : idx / BM, ii = A_KCONTIG ? idx / BK : idx % BM;
                int64_t i = i0 + ii, k = k0 + kk;
                ra[e] = i < mm.m && k < mm.k ? va.get(i, k) : 0.0f;
            }
#pragma unroll
            for (int e = 0; e < EB; e++) {
                int idx = tid + NT * e;
                int kk = B_JCONTIG ? idx / BN : idx % BK, jj = B_JCONTIG ? idx % BN : idx / BK;
                int64_t j = j0 + jj, k = k0 + kk;
                if (!B_JCONTIG)
                    vb = lb.col(bat, j);
                rb[e] = j < mm.n && k < mm.k ? vb.get(k, careful) : pad;
            }
        };
        auto store = [&]() {
#pragma unroll
            for (int e = 0; e < EA; e++) {
                int idx = tid + NT * e;
                int kk = A_KCONTIG ? idx % BK : idx / BM, ii = A_KCONTIG ? idx / BK : idx % BM;
                as[kk][ii] = ra[e];
            }
#pragma unroll
            for (int e = 0; e < EB; e++) {
                int idx = tid + NT * e;
                int kk = B_JCONTIG ? idx / BN : idx % BK, jj = B_JCONTIG ? idx % BN : idx / BK;
                bs[kk][jj] = rb[e];
            }
        };
        load(0);
        store();
        __syncthreads();
        for (int64_t k0 = 0; k0 < mm.k; k0 += BK) {
            int more = k0 + BK < mm.k;
            if (more)
                load(k0 + BK);
            if (!careful) {
#pragma unroll
                for (int kk = 0; kk < BK; kk++) {
                    float a[TM], b[TN];
                    gd__repro_frag<BM, TM>(&as[kk][0], ty, a);
                    gd__repro_frag<BN, TN>(&bs[kk][0], tx, b);
#pragma unroll
                    for (int i = 0; i < TM; i++)
#pragma unroll
                        for (int j = 0; j < TN; j++)
                            acc[i][j] = __fadd_rn(acc[i][j], __fmul_rn(a[i], b[j]));
                }
            } else {
                /* unrolled too: a register array indexed at run time would live in memory */
#pragma unroll
                for (int kk = 0; kk < BK; kk++) {
                    float a[TM], b[TN];
                    gd__repro_frag<BM, TM>(&as[kk][0], ty, a);
                    gd__repro_frag<BN, TN>(&bs[kk][0], tx, b);
#pragma unroll
                    for (int i = 0; i < TM; i++)
#pragma unroll
                        for (int j = 0; j < TN; j++)
                            if (!gd__repro_is_skip(b[j]))
                                acc[i][j] = __fadd_rn(acc[i][j], __fmul_rn(a[i], b[j]));
                }
            }
            __syncthreads();
            if (more) {
                store();
                __syncthreads();
            }
        }
#pragma unroll
        for (int i = 0; i < TM; i++) {
            int64_t gi = i0 + gd__repro_sub<BM, TM>(ty, i);
#pragma unroll
            for (int j = 0; j < TN; j++) {
                int64_t gj = j0 + gd__repro_sub<BN, TN>(tx, j);
                if (gi < mm.m && gj < mm.n)
                    st.put(bat, gi, gj, acc[i][j]);
            }
        }
        __syncthreads(); /* the next tile's first stores wait for every read of this one */
    }
}

/*
 * The same product one thread per element (GPUDIFF_REPRO_GEMM=naive): the loaders and the
 * epilogue of the tiled kernel with the k loop written out, the skip rule included. Slow; it
 * is there to check the tiled kernel against (both must give cpu's bits) and as a fallback.
 */
template <class LA, class LB, class ST>
static __global__ void
gd__repro_naive(gd__repro_mm mm, LA la, LB lb, ST st)
{
    const int careful = mm.careful != NULL ? *mm.careful : 0;
    const int64_t total = mm.batches * mm.m * mm.n;
    for (int64_t t = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; t < total;
         t += (int64_t)gridDim.x * blockDim.x) {
        int64_t bat = t / (mm.m * mm.n), r = t % (mm.m * mm.n), i = r / mm.n, j = r % mm.n;
        const auto va = la.at(bat);
        const auto vb = lb.col(bat, j);
        float acc = 0.0f;
        for (int64_t k = 0; k < mm.k; k++) {
            float bv = vb.get(k, careful);
            if (careful && gd__repro_is_skip(bv))
                continue;
            acc = __fadd_rn(acc, __fmul_rn(va.get(i, k), bv));
        }
        st.put(bat, i, j, acc);
    }
}

/* Which kernel and tile a product runs: "naive", or the largest tile that the matrix fills
 * and that still gives at least 264 tiles (two per SM of a 132-SM GPU), else the smallest: a
 * choice of speed, not of bits. */
enum gd__repro_tile_kind { GD_REPRO_TILE_128, GD_REPRO_TILE_64, GD_REPRO_TILE_32, GD_REPRO_NAIVE };

static inline int64_t
gd__repro_ceil(int64_t a, int64_t b)
{
    return (a + b - 1) / b;
}

static inline enum gd__repro_tile_kind
gd__repro_pick(const struct gd__cuda_ctx *ctx, int64_t m, int64_t n, int64_t batches)
{
    if (ctx->repro_naive)
        return GD_REPRO_NAIVE;
    if (m >= 128 && n >= 128 && gd__repro_ceil(m, 128) * gd__repro_ceil(n, 128) * batches >= 264)
        return GD_REPRO_TILE_128;
    if (m >= 64 && n >= 64 && gd__repro_ceil(m, 64) * gd__repro_ceil(n, 64) * batches >= 264)
        return GD_REPRO_TILE_64;
    return GD_REPRO_TILE_32;
}

static inline const char *
gd__repro_tile_name(enum gd__repro_tile_kind k)
{
    static const char *const names[] = {"128x128", "64x64", "32x32", "naive"};
    return names[k];
}

/*
 * Launches the product on the compute stream with the chosen kernel; the caller checks the
 * launch. careful: a device flag or NULL (mm.careful).
 */
template <bool A_KCONTIG, bool B_JCONTIG, class LA, class LB, class ST>
static void
gd__repro_product(const struct gd__cuda_ctx *ctx, enum gd__repro_tile_kind kind, int64_t m,
                  int64_t n, int64_t k, int64_t batches, const int *careful, const LA &la,
                  const LB &lb, const ST &st)
{
    gd__repro_mm mm = {m, n, k, batches, 0, 0, careful};
    switch (kind) {
    case GD_REPRO_TILE_128:
        mm.tiles_m = gd__repro_ceil(m, 128);
        mm.tiles_n = gd__repro_ceil(n, 128);
        gd__repro_tiled<128, 128, 8, 8, 8, A_KCONTIG, B_JCONTIG>
            <<<gd__repro_blocks(ctx, mm.tiles_m * mm.tiles_n * batches), 256, 0, ctx->compute>>>(
                mm, la, lb, st);
        break;
    case GD_REPRO_TILE_64:
        mm.tiles_m = gd__repro_ceil(m, 64);
        mm.tiles_n = gd__repro_ceil(n, 64);
        gd__repro_tiled<64, 64, 8, 4, 4, A_KCONTIG, B_JCONTIG>
            <<<gd__repro_blocks(ctx, mm.tiles_m * mm.tiles_n * batches), 256, 0, ctx->compute>>>(
                mm, la, lb, st);
        break;
    case GD_REPRO_TILE_32:
        mm.tiles_m = gd__repro_ceil(m, 32);
        mm.tiles_n = gd__repro_ceil(n, 32);
        gd__repro_tiled<32, 32, 8, 2, 2, A_KCONTIG, B_JCONTIG>
            <<<gd__repro_blocks(ctx, mm.tiles_m * mm.tiles_n * batches), 256, 0, ctx->compute>>>(
                mm, la, lb, st);
        break;
    case GD_REPRO_NAIVE:
        gd__repro_naive<<<gd__repro_elt_blocks(ctx, batches * m * n), GD_CUDA_THREADS, 0,
                          ctx->compute>>>(mm, la, lb, st);
        break;
    }
}

/*
 * ---- rows streamed through a warp ----
 *
 * Many cpu loops are one sequential walk along each row of a row-major (rows x len) matrix
 * (a softmax over the last axis, a layer norm, a global pool). One thread per row keeps that
 * order; reading its row alone, a warp's 32 threads would touch 32 rows at once. So a warp
 * takes 32 rows and walks them 32 columns at a time: each column block is read into the
 * warp's tile row by row (coalesced), then lane l takes row l's 32 values in order from the
 * tile. The order of each row's terms is cpu's; only the loads are shared.
 */
#define GD_REPRO_ROW_WARPS 4 /* warps per block of the row kernels */

typedef float gd__repro_tile_t[32][33];

/* Columns c0 .. c0 + 31 of rows row0 .. row0 + 31 into the warp's tile, row by row (each row's
 * 32 values one coalesced load), 0 past the matrix. */
static __device__ __forceinline__ void
gd__repro_tile_fill(const float *__restrict__ x, int64_t rows, int64_t len, int64_t row0,
                    int64_t c0, gd__repro_tile_t &tile)
{
    const int lane = threadIdx.x & 31;
    for (int r = 0; r < 32; r++) {
        int64_t row = row0 + r, col = c0 + lane;
        tile[r][lane] = row < rows && col < len ? x[row * len + col] : 0.0f;
    }
    __syncwarp();
}

/* Calls f(v) for the values of row row0 + lane in column order (lanes past rows call none). */
template <class F>
static __device__ __forceinline__ void
gd__repro_rows(const float *__restrict__ x, int64_t rows, int64_t len, int64_t row0,
               gd__repro_tile_t &tile, F &&f)
{
    const int lane = threadIdx.x & 31;
    const int mine = row0 + lane < rows;
    for (int64_t c0 = 0; c0 < len; c0 += 32) {
        gd__repro_tile_fill(x, rows, len, row0, c0, tile);
        int cend = len - c0 < 32 ? (int)(len - c0) : 32;
        if (mine)
            for (int c = 0; c < cend; c++)
                f(tile[lane][c]);
        __syncwarp();
    }
}

/* y's row row0 + lane gets g(v, column) of x's row, element by element in column order. */
template <class G>
static __device__ __forceinline__ void
gd__repro_rows_map(const float *__restrict__ x, float *__restrict__ y, int64_t rows, int64_t len,
                   int64_t row0, gd__repro_tile_t &tile, G &&g)
{
    const int lane = threadIdx.x & 31;
    const int mine = row0 + lane < rows;
    for (int64_t c0 = 0; c0 < len; c0 += 32) {
        gd__repro_tile_fill(x, rows, len, row0, c0, tile);
        int cend = len - c0 < 32 ? (int)(len - c0) : 32;
        if (mine)
            for (int c = 0; c < cend; c++)
                tile[lane][c] = g(tile[lane][c], c0 + c);
        __syncwarp();
        for (int r = 0; r < 32; r++) {
            int64_t row = row0 + r, col = c0 + lane;
            if (row < rows && col < len)
                y[row * len + col] = tile[r][lane];
        }
        __syncwarp();
    }
}

/* Blocks of the row kernels for `rows` rows: 32 rows a warp. */
static inline unsigned
gd__repro_row_blocks(const struct gd__cuda_ctx *ctx, int64_t rows)
{
    return gd__repro_blocks(ctx, gd__repro_ceil(gd__repro_ceil(rows, 32), GD_REPRO_ROW_WARPS));
}

/* The loop of a row kernel: row0 takes each block of 32 rows this warp owns. */
#define GD_REPRO_FOR_ROWS(row0, rows)                                                              \
    for (int64_t row0 = ((int64_t)blockIdx.x * GD_REPRO_ROW_WARPS + threadIdx.x / 32) * 32;        \
         row0 < (rows); row0 += (int64_t)gridDim.x * GD_REPRO_ROW_WARPS * 32)

#endif
