/*
 * gemm_kernel.c: the register-tiled product C = A B that Conv, ConvTranspose, Gemm and
 * MatMul share on the CPU backends, and the vector level it runs at.
 *
 * Why every element keeps the reference order: a tile holds MR x NR elements of C in
 * registers, one element per vector lane, and walks k in ascending order, adding
 * a[i,k] * b[k,j] to each: the same operations, in the same order, as the scalar loop
 * `acc = +0; for k: acc += a[i,k] * b[k,j]`. Lanes never mix (there is no horizontal
 * sum), a vector multiply or add rounds each lane exactly as the scalar instruction does,
 * and -ffp-contract=off keeps the multiply and the add apart. When k is cut into blocks of
 * KC, a tile's sums go to memory between blocks and come back unchanged: storing a `real`
 * is exact, so the running sum is the same value the unblocked loop would hold. Columns
 * past n and rows past m are padded with zeros and computed, but never stored.
 *
 * Blocking (after Goto and van de Geijn's layered GEMM): C is cut into blocks of NC
 * columns; per block, B is packed KC rows at a time into a row-major block that tiles read
 * NR columns at a time with aligned loads, and A is packed once per call into panels of MR
 * rows. B's block is kept row-major, not in strips of NR columns, so that a convolution
 * gathers it in runs as long as an output row. The blocks are the thread pool's tasks.
 */
#include <stdlib.h>
#include <string.h>

#include "cpu.h"

#if defined(__x86_64__) && defined(__GNUC__)
#define HAVE_X86_LEVELS 1
#define TARGET_AVX2 __attribute__((target("avx2")))
#define TARGET_AVX512 __attribute__((target("avx512f")))
#endif

/* k rows per packed block of B (KC x LDB reals stay in L2), columns per task, and about
 * the most rows of C a task holds (NC x MC reals of scratch). */
#define KC 256
#define NC 256
#define MC 768
/* B's row length in the block: NC and one cache line more, so that a tile's loads down a
 * column of rows fall in different cache sets. */
#define LDB (NC + 64 / (int)sizeof(real))

/* Vectors of 16, 32 and 64 bytes; may_alias: they read and write arrays of `real`. */
typedef real v16 __attribute__((vector_size(16), may_alias));
#ifdef HAVE_X86_LEVELS
typedef real v32 __attribute__((vector_size(32), may_alias));
typedef real v64 __attribute__((vector_size(64), may_alias));
#endif

/*
 * A tile: c[r * ldc + j] for r < MR, j < NR = NV lanes-worth of vectors, over kc values of
 * k: ap[kk * MR + r] is a[r, kk], bp[kk * LDB + j] is b[kk, j]. With first, the sums start
 * at +0 (the reference's memset); otherwise they continue from c. `acc + a * b` is written
 * in the reference loops' operand order.
 */
#define TILE_FN(name, attr, vt, MR, NV)                                                         \
    attr static void name(int64_t kc, const real *restrict ap, const real *restrict bp,         \
                          real *restrict c, int64_t ldc, int first)                             \
    {                                                                                           \
        enum { VL = (int)(sizeof(vt) / sizeof(real)) };                                         \
        vt acc[MR][NV];                                                                         \
        _Pragma("GCC unroll 16") for (int r = 0; r < MR; r++)                                  \
            _Pragma("GCC unroll 4") for (int v = 0; v < NV; v++) acc[r][v] =                   \
                first ? (vt){0} : *(const vt *)(c + r * ldc + v * VL);                          \
        for (int64_t kk = 0; kk < kc; kk++) {                                                   \
            const vt *b = (const vt *)(bp + kk * LDB);                                          \
            _Pragma("GCC unroll 16") for (int r = 0; r < MR; r++)                              \
            {                                                                                   \
                real a = ap[kk * MR + r];                                                       \
                _Pragma("GCC unroll 4") for (int v = 0; v < NV; v++) acc[r][v] =               \
                    acc[r][v] + a * b[v];                                                       \
            }                                                                                   \
        }                                                                                       \
        _Pragma("GCC unroll 16") for (int r = 0; r < MR; r++)                                  \
            _Pragma("GCC unroll 4") for (int v = 0; v < NV; v++)                               \
                *(vt *)(c + r * ldc + v * VL) = acc[r][v];                                      \
    }

typedef void (*tile_fn)(int64_t kc, const real *ap, const real *bp, real *c, int64_t ldc,
                        int first);

/* The tiles of one level: a wide one, and a narrow one for the rows left of m. */
struct kernel {
    int mr, nr;
    tile_fn wide;
    int mr_narrow;
    tile_fn narrow;
};

/* 16-byte vectors: 12 accumulators, which the 16 registers of SSE2 hold (NEON has 32). */
TILE_FN(tile_portable_6, , v16, 6, 2)
TILE_FN(tile_portable_2, , v16, 2, 2)
static const struct kernel kernel_portable = {6, 2 * 16 / (int)sizeof(real), tile_portable_6, 2,
                                              tile_portable_2};

#ifdef HAVE_X86_LEVELS
/* AVX2: 16 ymm registers, 12 accumulators. */
TILE_FN(tile_avx2_6, TARGET_AVX2, v32, 6, 2)
TILE_FN(tile_avx2_2, TARGET_AVX2, v32, 2, 2)
static const struct kernel kernel_avx2 = {6, 2 * 32 / (int)sizeof(real), tile_avx2_6, 2,
                                          tile_avx2_2};

/* AVX-512: 32 zmm registers, 24 accumulators (an add's latency times two adders, and more). */
TILE_FN(tile_avx512_12, TARGET_AVX512, v64, 12, 2)
TILE_FN(tile_avx512_4, TARGET_AVX512, v64, 4, 2)
static const struct kernel kernel_avx512 = {12, 2 * 64 / (int)sizeof(real), tile_avx512_12, 4,
                                            tile_avx512_4};
#endif

static const struct kernel *
kernel_for(enum gd__cpu_simd simd)
{
#ifdef HAVE_X86_LEVELS
    if (simd == GD_CPU_SIMD_AVX512)
        return &kernel_avx512;
    if (simd == GD_CPU_SIMD_AVX2)
        return &kernel_avx2;
#endif
    (void)simd;
    return &kernel_portable;
}

static const char *const simd_names[] = {"off", "portable", "avx2", "avx512"};

const char *
CPU_FN(simd_name)(enum gd__cpu_simd simd)
{
    return simd_names[simd];
}

enum gd__cpu_simd
CPU_FN(simd_pick)(void)
{
    enum gd__cpu_simd best = GD_CPU_SIMD_PORTABLE;
#ifdef HAVE_X86_LEVELS
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f"))
        best = GD_CPU_SIMD_AVX512;
    else if (__builtin_cpu_supports("avx2"))
        best = GD_CPU_SIMD_AVX2;
#endif
    const char *env = getenv("GPUDIFF_CPU_SIMD");
    for (int i = GD_CPU_SIMD_OFF; env != NULL && i <= GD_CPU_SIMD_AVX512; i++)
        if (strcmp(env, simd_names[i]) == 0 && (enum gd__cpu_simd)i < best)
            best = (enum gd__cpu_simd)i;
    return best;
}

real *
CPU_FN(scratch)(struct gd__cpu_scratch *s, size_t n)
{
    if (s->cap >= n)
        return s->data;
    free(s->data);
    s->cap = 0;
    if ((s->data = CPU_FN(mem_alloc)(n * sizeof(real))) != NULL)
        s->cap = n;
    return s->data;
}

void
CPU_FN(pack_b_strided)(const void *user, int64_t k0, int64_t kc, int64_t j0, int64_t nc,
                       int64_t ncp, int64_t ldb, real *dst)
{
    const struct gd__cpu_strided *s = user;
    for (int64_t kk = 0; kk < kc; kk++) {
        const real *src = s->b + (k0 + kk) * s->rs + j0 * s->cs;
        real *d = dst + kk * ldb;
        if (s->cs == 1)
            for (int64_t jj = 0; jj < nc; jj++)
                d[jj] = src[jj];
        else
            for (int64_t jj = 0; jj < nc; jj++)
                d[jj] = src[jj * s->cs];
        for (int64_t jj = nc; jj < ncp; jj++)
            d[jj] = 0;
    }
}

/* A panel of rows: rows [i0, i0 + mr) of A (zeros past m), all of k, at a_off in the
 * packed A. */
struct row_block {
    int64_t i0, a_off;
    int mr;
    tile_fn fn;
};

struct mm_job {
    struct gd__cpu_ctx *ctx;
    const struct gd__cpu_mm *mm;
    const struct kernel *kern;
    const real *ap;
    const struct row_block *blocks;
    int64_t n_blocks, blocks_per_part, col_blocks;
    int64_t c_rows; /* rows of the C scratch: the most any part pads to */
};

static void
mm_task(void *arg, int64_t task, int worker)
{
    const struct mm_job *job = arg;
    const struct gd__cpu_mm *mm = job->mm;
    int nr = job->kern->nr;
    int64_t part = task / job->col_blocks, col = task % job->col_blocks;
    int64_t b0 = part * job->blocks_per_part, b1 = b0 + job->blocks_per_part;
    if (b1 > job->n_blocks)
        b1 = job->n_blocks;
    int64_t i0 = job->blocks[b0].i0;
    int64_t j0 = col * NC, nc = mm->n - j0 < NC ? mm->n - j0 : NC;
    int64_t strips = (nc + nr - 1) / nr;
    /* scratch holds C first, then the packed B: mm_run sized it (and it is aligned). */
    real *cbuf = job->ctx->scratch[worker].data, *bbuf = cbuf + job->c_rows * NC;
    for (int64_t k0 = 0; k0 == 0 || k0 < mm->k; k0 += KC) {
        int64_t kc = mm->k - k0 < KC ? mm->k - k0 : KC;
        mm->pack_b(mm->b_user, k0, kc, j0, nc, strips * nr, LDB, bbuf);
        for (int64_t b = b0; b < b1; b++) {
            const struct row_block *rb = &job->blocks[b];
            const real *ap = job->ap + rb->a_off + k0 * rb->mr;
            real *crow = cbuf + (rb->i0 - i0) * NC;
            for (int64_t s = 0; s < strips; s++)
                rb->fn(kc, ap, bbuf + s * nr, crow + s * nr, NC, k0 == 0);
        }
    }
    int64_t i_end = job->blocks[b1 - 1].i0 + job->blocks[b1 - 1].mr;
    if (i_end > mm->m)
        i_end = mm->m;
    mm->store(mm->store_user, i0, i_end - i0, j0, nc, cbuf, NC);
}

int
CPU_FN(mm_run)(struct gd__cpu_ctx *ctx, const struct gd__cpu_mm *mm, struct gd_err *err)
{
    if (mm->m == 0 || mm->n == 0)
        return 0;
    const struct kernel *kern = kernel_for(ctx->simd);
    /* Row panels: wide ones, then for the rest one wide panel when it would be nearly full,
     * else narrow ones. */
    int64_t full = mm->m / kern->mr, rest = mm->m % kern->mr;
    int64_t n_narrow = rest > kern->mr - kern->mr_narrow ? 0 : (rest + kern->mr_narrow - 1) /
                                                                 kern->mr_narrow;
    int64_t n_blocks = full + (rest > 0 && n_narrow == 0) + n_narrow;
    struct row_block *blocks = malloc((size_t)n_blocks * sizeof *blocks);
    if (blocks == NULL)
        return gd_err_set(err, GD_ENOMEM, "out of memory for a matrix product");
    int64_t i0 = 0, a_len = 0;
    for (int64_t b = 0; b < n_blocks; b++) {
        int narrow = b >= n_blocks - n_narrow;
        blocks[b].i0 = i0;
        blocks[b].a_off = a_len;
        blocks[b].mr = narrow ? kern->mr_narrow : kern->mr;
        blocks[b].fn = narrow ? kern->narrow : kern->wide;
        i0 += blocks[b].mr;
        a_len += blocks[b].mr * mm->k;
    }
    real *ap = CPU_FN(scratch)(&ctx->packed_a, (size_t)(a_len > 0 ? a_len : 1));
    if (ap == NULL) {
        free(blocks);
        return gd_err_set(err, GD_ENOMEM, "out of memory for a matrix product");
    }
    for (int64_t b = 0; b < n_blocks; b++) {
        real *dst = ap + blocks[b].a_off;
        int mr = blocks[b].mr;
        for (int64_t kk = 0; kk < mm->k; kk++)
            for (int r = 0; r < mr; r++) {
                int64_t i = blocks[b].i0 + r;
                dst[kk * mr + r] = i < mm->m ? mm->a[i * mm->a_rs + kk * mm->a_cs] : 0;
            }
    }
    /* Tasks: column blocks, and row parts when there are too few column blocks to keep
     * every thread busy or a part would pass MC rows (each part packs its own B: the price
     * of the extra parallelism, and of a C scratch that stays in cache). */
    int threads = gd__pool_size(ctx->pool);
    int64_t col_blocks = (mm->n + NC - 1) / NC, parts = (mm->m + MC - 1) / MC;
    if (threads > 1 && col_blocks * parts < 2 * threads)
        parts = (2 * threads + col_blocks - 1) / col_blocks;
    if (parts > n_blocks)
        parts = n_blocks;
    int64_t per_part = (n_blocks + parts - 1) / parts;
    parts = (n_blocks + per_part - 1) / per_part;
    int64_t c_rows = 0;
    for (int64_t p = 0; p < parts; p++) {
        int64_t b1 = (p + 1) * per_part < n_blocks ? (p + 1) * per_part : n_blocks;
        int64_t rows = blocks[b1 - 1].i0 + blocks[b1 - 1].mr - blocks[p * per_part].i0;
        c_rows = rows > c_rows ? rows : c_rows;
    }
    int rc = 0;
    for (int w = 0; w < threads && rc == 0; w++)
        if (CPU_FN(scratch)(&ctx->scratch[w], (size_t)c_rows * NC + (size_t)KC * LDB) == NULL)
            rc = gd_err_set(err, GD_ENOMEM, "out of memory for a matrix product");
    if (rc == 0) {
        struct mm_job job = {.ctx = ctx, .mm = mm, .kern = kern, .ap = ap, .blocks = blocks,
                             .n_blocks = n_blocks, .blocks_per_part = per_part,
                             .col_blocks = col_blocks, .c_rows = c_rows};
        gd__cpu_parallel(ctx, parts * col_blocks, mm_task, &job);
    }
    free(blocks);
    return rc;
}
