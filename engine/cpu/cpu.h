/*
 * cpu.h: the CPU backends' shared declarations.
 *
 * Every file in engine/cpu/ is compiled twice: once with GD_CPU_F64=0 for the `cpu`
 * backend (float32 storage, float32 accumulation) and once with GD_CPU_F64=1 for `cpu64`
 * (float64 storage and accumulation: the reference). The loops are written once in terms
 * of `real`; CPU_FN() gives each build its own symbol names.
 *
 * Summation order is fixed and documented per op (docs/NUMERICS.md): every output element
 * is accumulated in one sequential loop in the order the comments state, so `cpu` is
 * bitwise reproducible on any x86-64 or ARM machine built with -ffp-contract=off.
 */
#ifndef GPUDIFF_CPU_H
#define GPUDIFF_CPU_H

#include "../core/internal.h"

#include <math.h>

/*
 * R(exp) is the function of the build's precision: libm's exp in cpu64 (the float64
 * reference), and engine/core/math_rules.h's gd__expf in cpu, the float32 functions stated
 * bit for bit once for cpu and for cuda's --repro bitwise kernels.
 */
#if GD_CPU_F64
typedef double real;
#define CPU_FN(name) gd__cpu64_##name
#define GD_CPU_DTYPE GD_F64
#define R(fn) fn
#else
#include "../core/math_rules.h"
typedef float real;
#define CPU_FN(name) gd__cpu32_##name
#define GD_CPU_DTYPE GD_F32
#define R(fn) gd__##fn##f
#endif

/*
 * Geometry of an (N, C, W), (N, C, H, W) or (N, C, D, H, W) tensor as (N, C, D, H, W), the
 * missing leading spatial sizes 1 (as struct gd_params holds spatial attributes).
 */
struct gd__ncdhw {
    int64_t n, c, d, h, w;
};

static inline struct gd__ncdhw
gd__ncdhw_of(const struct gd_tensor *t)
{
    int ns = t->ndim - 2;
    struct gd__ncdhw g = {t->shape[0], t->shape[1], ns >= 3 ? t->shape[t->ndim - 3] : 1,
                          ns >= 2 ? t->shape[t->ndim - 2] : 1, t->shape[t->ndim - 1]};
    return g;
}

/*
 * A function compiled for AVX-512, AVX2 and the baseline, the best picked at load time
 * (GCC's ifunc clones): for the copying loops around the tiled product (gathering a
 * convolution's taps), where wider vectors only move the same values faster.
 */
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && defined(__ELF__)
#define GD_CPU_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define GD_CPU_CLONES
#endif

/* Floor division for a possibly negative numerator and a positive divisor. */
static inline int64_t
gd__floor_div(int64_t a, int64_t b)
{
    return a >= 0 ? a / b : -((-a + b - 1) / b);
}

/* Indices i in [0, n) with 0 <= i*s + off < lim: [*lo, *hi). */
static inline void
gd__tap_range(int64_t n, int64_t s, int64_t off, int64_t lim, int64_t *lo, int64_t *hi)
{
    int64_t a = off >= 0 ? 0 : gd__floor_div(-off + s - 1, s);
    int64_t b = gd__floor_div(lim - 1 - off, s) + 1;
    if (b > n)
        b = n;
    *lo = a;
    *hi = b > a ? b : a;
}

/*
 * The vector code the tiled product may use (gemm_kernel.c), from the best the processor
 * has down to none. GPUDIFF_CPU_SIMD=off|portable|avx2|avx512 caps it, for the tests that
 * compare the levels bit for bit and for ruling the kernels out; every level gives the same
 * bits, since each vector lane is one output element with its own sequential sum.
 */
enum gd__cpu_simd {
    GD_CPU_SIMD_OFF,      /* the plain loops of each op (op_conv.c, op_gemm.c) */
    GD_CPU_SIMD_PORTABLE, /* 16-byte vectors: SSE2 on x86-64, NEON on AArch64 */
    GD_CPU_SIMD_AVX2,
    GD_CPU_SIMD_AVX512
};

/* Scratch memory kept across ops (and grown as needed). */
struct gd__cpu_scratch {
    real *data;
    size_t cap; /* in reals */
};

/* A released tensor's memory, kept for the next tensor of the same rounded size. */
struct gd__cpu_block {
    void *data;
    size_t bytes;
};

#define GD_CPU_CACHE_SLOTS 32

/* The CPU backends' session context. */
struct gd__cpu_ctx {
    struct gd_knobs knobs;
    enum gd__cpu_simd simd;
    struct gd__pool *pool; /* NULL with one thread */
    int threads;
    struct gd__cpu_scratch scratch[GD__POOL_MAX]; /* one per worker thread */
    struct gd__cpu_scratch packed_a;              /* the tiled product's packed A */
    struct gd__cpu_block cache[GD_CPU_CACHE_SLOTS]; /* released tensors' memory, oldest first */
    int n_cached;
    size_t cached_bytes;
    size_t live_bytes, peak_bytes; /* tensors held now and at most (gd_session_memory) */
};

/* The best level this processor runs, capped by GPUDIFF_CPU_SIMD. */
enum gd__cpu_simd CPU_FN(simd_pick)(void);

/* "off", "portable", "avx2", "avx512". */
const char *CPU_FN(simd_name)(enum gd__cpu_simd simd);

/* s's memory, grown to at least n reals, aligned to 64 bytes; NULL when out of memory. */
real *CPU_FN(scratch)(struct gd__cpu_scratch *s, size_t n);

/*
 * C = A B with every element of C summed as the reference loops do: from +0, adding
 * A[i,k] * B[k,j] for k ascending, each product and each sum rounded (no fused multiply-add).
 * The product is computed in register tiles, vector lanes running across j, and split
 * into tasks over blocks of C for the thread pool; none of that touches the order of any
 * one element's sum (see gemm_kernel.c).
 *
 * A is read as a[i * a_rs + k * a_cs]. B is gathered by pack_b, so that a convolution's
 * B (the taps of its input, im2col) is never built whole: pack_b writes B[k0 + kk, j0 + jj]
 * for kk < kc, jj < nc into dst[kk * ldb + jj], and zeros for nc <= jj < ncp. store
 * receives the finished C[i0 .. i0 + mc, j0 .. j0 + nc] as c[(i - i0) * ldc + (j - j0)].
 * Both are called from worker threads, for disjoint blocks.
 */
typedef void (*gd__cpu_pack_b_fn)(const void *user, int64_t k0, int64_t kc, int64_t j0,
                                  int64_t nc, int64_t ncp, int64_t ldb, real *dst);
typedef void (*gd__cpu_store_fn)(const void *user, int64_t i0, int64_t mc, int64_t j0,
                                 int64_t nc, const real *c, int64_t ldc);

struct gd__cpu_mm {
    int64_t m, n, k;
    const real *a;
    int64_t a_rs, a_cs;
    gd__cpu_pack_b_fn pack_b;
    const void *b_user;
    gd__cpu_store_fn store;
    const void *store_user;
};

/* Runs mm; GD_ENOMEM is the only failure. */
int CPU_FN(mm_run)(struct gd__cpu_ctx *ctx, const struct gd__cpu_mm *mm, struct gd_err *err);

/* pack_b for a B read as b[k * rs + j * cs] (user: a struct gd__cpu_strided). */
struct gd__cpu_strided {
    const real *b;
    int64_t rs, cs;
};
void CPU_FN(pack_b_strided)(const void *user, int64_t k0, int64_t kc, int64_t j0, int64_t nc,
                            int64_t ncp, int64_t ldb, real *dst);

/* Runs fn over n_tasks tasks on the session's threads (engine/core/pool.c). */
static inline void
gd__cpu_parallel(struct gd__cpu_ctx *ctx, int64_t n_tasks, gd__task_fn fn, void *arg)
{
    gd__pool_run(ctx->pool, n_tasks, fn, arg);
}

/*
 * malloc for the backend's tensors and scratch: blocks of GD_CPU_HUGE_PAGE bytes or more
 * come aligned to it and advised to use huge pages (fewer page faults on first touch, fewer
 * TLB misses), smaller ones aligned to 64 bytes. Freed with free().
 */
#define GD_CPU_HUGE_PAGE ((size_t)2 << 20)
void *CPU_FN(mem_alloc)(size_t n);

/* One entry point per op: the names the backend table in backend_cpu.c lists. */
#define GD_OP(e, fn, name, family, min_in, max_in, red, ulps, disc, ill, cuda) \
    int CPU_FN(fn)(struct gd_op_call *c, struct gd_err *err);
#include "../core/ops.def"
#undef GD_OP

/*
 * With the `--emulate` knob, rounds n values of src into dst (which may be src) to the
 * emulated format's precision, round to nearest even, keeping them as `real`. Returns 1
 * when the op class is emulated and dst was written, 0 when nothing applies.
 */
int CPU_FN(emulate_round)(const struct gd_op_call *c, unsigned op_class, const real *src,
                          real *dst, int64_t n);

/*
 * The data an op of op_class should read for input t: t's own, or (with --emulate applying
 * to the class) a rounded copy returned in *scratch, which the caller frees.
 */
int CPU_FN(emulated_input)(const struct gd_op_call *c, unsigned op_class, const struct gd_tensor *t,
                           const real **data, real **scratch, struct gd_err *err);

#endif
