/*
 * backend_cpu.c: the `cpu` and `cpu64` backends (this file is compiled once for each):
 * host memory, synchronous capture, and the op table.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "cpu.h"

/*
 * Large buffers are aligned to 2 MiB and offered to transparent huge pages: a fresh 4 KiB
 * page costs a fault on first touch, and an op's output is always fresh memory (tensors of
 * tens of MB are mmap'ed by malloc and unmapped on release). On the virtual machines the
 * benchmarks ran on a 24 MB output paid about 80 ms in faults with 4 KiB pages and under
 * 2 ms with huge pages (docs/PERFORMANCE.md).
 */
#define HUGE_PAGE GD_CPU_HUGE_PAGE

static size_t
round_up(size_t n, size_t step)
{
    return (n + step - 1) / step * step;
}

void *
CPU_FN(mem_alloc)(size_t n)
{
    void *p = NULL;
    /* 64 bytes: the vector tiles of gemm_kernel.c load their buffers aligned. */
    if (n < HUGE_PAGE)
        return posix_memalign(&p, 64, n ? n : 1) == 0 ? p : NULL;
    size_t rounded = round_up(n, HUGE_PAGE);
    if (posix_memalign(&p, HUGE_PAGE, rounded) != 0)
        return NULL;
#ifdef MADV_HUGEPAGE
    /* Only advice: where THP is off or unavailable the buffer keeps small pages. */
    (void)madvise(p, rounded, MADV_HUGEPAGE);
#endif
    return p;
}

static int
cpu_open(const struct gd_knobs *knobs, struct gd_env *env, void **ctx, struct gd_err *err)
{
    /* gd_session_new() refused the knobs knobs.def does not list for this backend (cpu64,
     * the float64 reference, takes no emulation and no bitwise mode) */
    if (knobs->threads < 0 || knobs->threads > GD__POOL_MAX)
        return gd_err_set(err, GD_EINVAL, "threads must be 0 (one per core) to %d, not %d",
                          GD__POOL_MAX, knobs->threads);
    struct gd__cpu_ctx *c = calloc(1, sizeof *c);
    if (c == NULL)
        return gd_err_set(err, GD_ENOMEM, "out of memory");
    c->knobs = *knobs;
    c->simd = CPU_FN(simd_pick)();
    c->threads = knobs->threads > 0 ? knobs->threads : gd__pool_threads_default();
    int rc = c->threads > 1 ? gd__pool_new(c->threads, &c->pool, err) : 0;
    if (rc != 0) {
        free(c);
        return rc;
    }
    gd_env_set(env, "compute_dtype", "%s", gd_dtype_name(GD_CPU_DTYPE));
    gd_env_set(env, "cpu_simd", "%s", CPU_FN(simd_name)(c->simd));
    gd_env_set(env, "cpu_threads", "%d", c->threads);
    if (gd_knobs_bitwise(knobs)) /* what cpu always is: recorded as asked */
        gd_env_set(env, "repro", "bitwise");
    *ctx = c;
    return 0;
}

static void
cpu_close(void *ctx)
{
    struct gd__cpu_ctx *c = ctx;
    gd__pool_free(c->pool);
    for (int w = 0; w < GD__POOL_MAX; w++)
        free(c->scratch[w].data);
    free(c->packed_a.data);
    for (int i = 0; i < c->n_cached; i++)
        free(c->cache[i].data);
    free(c);
}

/*
 * Tensors of CACHE_MIN bytes or more keep their memory for reuse when released: a
 * network's layers repeat a few shapes, and reused memory is already mapped, where fresh
 * memory costs the kernel a page fault and a page clear on first touch (docs/PERFORMANCE.md).
 * Blocks are allocated and matched by size class (64 KiB steps, 2 MiB from 2 MiB on); the
 * oldest are freed when the cache would pass its slots or CACHE_MAX bytes. Ops write every
 * element of their outputs, so what the memory held before never shows.
 */
#define CACHE_MIN ((size_t)256 << 10)
#define CACHE_MAX ((size_t)512 << 20)

static size_t
size_class(size_t n)
{
    return n >= HUGE_PAGE ? round_up(n, HUGE_PAGE) : round_up(n, (size_t)64 << 10);
}

static int
cpu_alloc(void *ctx, struct gd_tensor *t, struct gd_err *err)
{
    struct gd__cpu_ctx *c = ctx;
    size_t n = gd_tensor_nbytes(t);
    t->data = NULL;
    if (n >= CACHE_MIN) {
        n = size_class(n);
        for (int i = 0; i < c->n_cached; i++) {
            if (c->cache[i].bytes == n) {
                t->data = c->cache[i].data;
                c->cached_bytes -= n;
                memmove(c->cache + i, c->cache + i + 1,
                        (size_t)(c->n_cached - i - 1) * sizeof c->cache[0]);
                c->n_cached--;
                break;
            }
        }
    }
    if (t->data == NULL && (t->data = CPU_FN(mem_alloc)(n)) == NULL)
        return gd_err_set(err, GD_ENOMEM, "out of memory for %zu bytes", n);
    t->owns_data = 0;
    t->device = 0;
    c->live_bytes += gd_tensor_nbytes(t);
    if (c->live_bytes > c->peak_bytes)
        c->peak_bytes = c->live_bytes;
    return 0;
}

static void
cpu_release(void *ctx, struct gd_tensor *t)
{
    struct gd__cpu_ctx *c = ctx;
    size_t n = gd_tensor_nbytes(t);
    c->live_bytes -= n < c->live_bytes ? n : c->live_bytes;
    if (n < CACHE_MIN || size_class(n) > CACHE_MAX) {
        free(t->data);
        t->data = NULL;
        return;
    }
    n = size_class(n);
    while (c->n_cached > 0 &&
           (c->n_cached == GD_CPU_CACHE_SLOTS || c->cached_bytes + n > CACHE_MAX)) {
        free(c->cache[0].data);
        c->cached_bytes -= c->cache[0].bytes;
        memmove(c->cache, c->cache + 1, (size_t)(c->n_cached - 1) * sizeof c->cache[0]);
        c->n_cached--;
    }
    c->cache[c->n_cached].data = t->data;
    c->cache[c->n_cached++].bytes = n;
    c->cached_bytes += n;
    t->data = NULL;
}

static int
cpu_upload(void *ctx, struct gd_tensor *dst, const struct gd_tensor *src, struct gd_err *err)
{
    (void)ctx;
    if (gd_tensor_nbytes(dst) != gd_tensor_nbytes(src) || dst->dtype != src->dtype)
        return gd_err_set(err, GD_EINVAL, "upload between tensors of different size or dtype");
    memcpy(dst->data, src->data, gd_tensor_nbytes(src));
    return 0;
}

static int
cpu_capture(void *ctx, const struct gd_tensor *t, const struct gd__capture_req *req,
            gd__deliver_fn deliver, void *session, struct gd_err *err)
{
    (void)ctx;
    if (!req->want_fingerprint && req->want_tensor)
        return deliver(session, req, t, err);
    /* fp: the fingerprint by the host definitions, which are the CPU backends' own */
    struct gd__capture_req r = *req;
    struct gd_tensor h = *t;
    struct gd_fingerprint *fp = NULL;
    int rc = 0;
    if (req->want_fingerprint) {
        fp = malloc(sizeof *fp);
        if (fp == NULL)
            return gd_err_set(err, GD_ENOMEM, "out of memory");
        rc = gd_fingerprint_compute(t, fp, err);
        r.fp = fp;
    }
    if (!req->want_tensor)
        h.data = NULL;
    if (rc == 0)
        rc = deliver(session, &r, &h, err);
    free(fp);
    return rc;
}

static int
cpu_flush(void *ctx, struct gd_err *err)
{
    (void)ctx;
    (void)err;
    return 0;
}

#if !GD_CPU_F64
/*
 * Half storage on `cpu`: float16 and bfloat16 values stay in 16 bits between ops; the ops
 * compute in float32 on copies widened exactly (engine/core/half_call.c), and each result is
 * rounded once, to nearest even, into its half output. Ops that only move elements run on
 * the 16-bit data itself (their loops copy by element size), bit for bit the same.
 */
struct convert_task {
    const struct gd_tensor *src;
    struct gd_tensor *dst;
    int64_t n, chunk;
};

static void
convert_range(void *arg, int64_t task, int worker)
{
    (void)worker;
    const struct convert_task *t = arg;
    int64_t lo = task * t->chunk, hi = lo + t->chunk < t->n ? lo + t->chunk : t->n;
    const void *sp = t->src->data;
    void *dp = t->dst->data;
    enum gd_dtype sd = t->src->dtype, dd = t->dst->dtype;
    for (int64_t i = lo; i < hi; i++) {
        if (sd == GD_F64) { /* rounded once, as gd_tensor_cast does */
            double v = ((const double *)sp)[i];
            if (dd == GD_F16)
                ((uint16_t *)dp)[i] = gd_f64_to_f16(v);
            else if (dd == GD_BF16)
                ((uint16_t *)dp)[i] = gd_f64_to_bf16(v);
            else
                ((float *)dp)[i] = (float)v;
            continue;
        }
        float v = sd == GD_F32   ? ((const float *)sp)[i]
                  : sd == GD_F16 ? gd_f16_to_f32(((const uint16_t *)sp)[i])
                                 : gd_bf16_to_f32(((const uint16_t *)sp)[i]);
        if (dd == GD_F16)
            ((uint16_t *)dp)[i] = gd_f32_to_f16(v);
        else if (dd == GD_BF16)
            ((uint16_t *)dp)[i] = gd_f32_to_bf16(v);
        else if (dd == GD_F64)
            ((double *)dp)[i] = v;
        else
            ((float *)dp)[i] = v;
    }
}

static int
cpu_convert(void *ctx, struct gd_tensor *dst, const struct gd_tensor *src, struct gd_err *err)
{
    struct gd__cpu_ctx *c = ctx;
    int64_t n = gd_tensor_numel(src);
    if (n != gd_tensor_numel(dst) || !gd_dtype_is_float(src->dtype) ||
        !gd_dtype_is_float(dst->dtype))
        return gd_err_set(err, GD_EINVAL, "convert %s to %s: not two float tensors of one size",
                          gd_dtype_name(src->dtype), gd_dtype_name(dst->dtype));
    struct convert_task t = {.src = src, .dst = dst, .n = n, .chunk = (int64_t)1 << 16};
    int64_t tasks = (n + t.chunk - 1) / t.chunk;
    if (tasks > 1)
        gd__cpu_parallel(c, tasks, convert_range, &t);
    else if (tasks == 1)
        convert_range(&t, 0, 0);
    return 0;
}

/* The ops whose CPU loops move elements by their size, whatever the dtype. */
static const unsigned char cpu_half_native[GD_OP_COUNT] = {
    [GD_OP_RESHAPE] = 1, [GD_OP_FLATTEN] = 1, [GD_OP_SQUEEZE] = 1, [GD_OP_UNSQUEEZE] = 1,
    [GD_OP_IDENTITY] = 1, [GD_OP_TRANSPOSE] = 1, [GD_OP_CONCAT] = 1, [GD_OP_SLICE] = 1,
    [GD_OP_SPLIT] = 1, [GD_OP_EXPAND] = 1, [GD_OP_TILE] = 1, [GD_OP_DEPTH_TO_SPACE] = 1,
    [GD_OP_SPACE_TO_DEPTH] = 1, [GD_OP_GATHER] = 1, [GD_OP_GATHER_ELEMENTS] = 1,
    [GD_OP_GATHER_ND] = 1, [GD_OP_WHERE] = 1, [GD_OP_TRILU] = 1,
};
#endif

static int
cpu_memory(void *ctx, struct gd_memory *out, struct gd_err *err)
{
    (void)err;
    const struct gd__cpu_ctx *c = ctx;
    out->host_peak = (int64_t)c->peak_bytes;
    return 0;
}

static const gd_op_fn cpu_ops[GD_OP_COUNT] = {
#define GD_OP(e, fn, name, family, min_in, max_in, red, ulps, disc, ill, cuda) [GD_OP_##e] = CPU_FN(fn),
#include "../core/ops.def"
#undef GD_OP
};

#if GD_CPU_F64
const struct gd__backend gd__backend_cpu64 = {
    .name = "cpu64",
    .description = "CPU, float64 storage and accumulation: the reference",
#else
const struct gd__backend gd__backend_cpu = {
    .name = "cpu",
    .description = "CPU, float32, fixed summation order",
#endif
    .compute_dtype = GD_CPU_DTYPE,
    .open = cpu_open,
    .close = cpu_close,
    .alloc = cpu_alloc,
    .release = cpu_release,
    .upload = cpu_upload,
    .capture = cpu_capture,
    .flush = cpu_flush,
    .ops = cpu_ops,
    .memory = cpu_memory,
#if !GD_CPU_F64
    .convert = cpu_convert,
    .half_native = cpu_half_native,
#endif
};
