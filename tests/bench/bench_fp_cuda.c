/*
 * bench_fp_cuda.c: the fingerprint kernels' device time against a device-to-device copy of
 * the same bytes (issue 14: at most 1.5x the copy; a 4 GiB tensor in under 1 s), and their
 * result checked bit for bit against the host definition.
 *
 * For each float32 tensor of 1 MiB, 64 MiB, 1 GiB and 4 GiB (and a check-only odd size,
 * 64 MiB + 4108 bytes, whose last chunk and tree levels are partial), it fills the tensor
 * on the device with a seeded pattern (wide exponents, zeros, subnormals, NaN and Inf), then
 * times with CUDA events on one stream, median of REPEATS after WARMUP runs, alternating:
 *   - kernels: gd__cuda_fp_launch(), the kernels of engine/cuda/fingerprint.cu alone;
 *   - capture: gd__cuda_fp_enqueue(), what the cuda backend's capture calls per layer (the
 *     kernels and the download of their 17 KiB raw result to pinned memory);
 *   - copy: cudaMemcpyAsync of the same bytes, device to device.
 * A size that does not fit in free device memory (the tensor, the copy's destination and
 * the scratch) is skipped and says so. Every tensor of at most CHECK_MAX bytes (default
 * 1 GiB; at least the two smallest are always checked) is then fingerprinted once more with
 * gd__cuda_fp_enqueue() and gd__cuda_fp_finish() (the capture path), copied to the host and
 * fingerprinted there with gd_fingerprint_compute(): every field must be the same bits.
 *
 * usage: bench_fp_cuda [--repeats N] [--warmup N] [--check-max-mib M]
 * Prints one line per size; exit 0 when every check agreed, 1 on a mismatch or a failure,
 * 77 without a CUDA device.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>

#include "gpudiff/fingerprint.h"
#include "gpudiff/session.h"
#include "gpudiff/tensor.h"
#include "../../engine/cuda/cuda.h"
#include "../../engine/cuda/fingerprint.h"
#include "bench_util.h"
#include "fp_same.h"

#define MIB ((size_t)1 << 20)
#define PATTERN_BYTES (64 * MIB)   /* filled on the host, tiled on the device beyond */

struct size_case {
    const char *label;
    size_t bytes;
    int check_only;                /* the odd size: checked, not part of the target */
};

static const struct size_case sizes[] = {
    {"1 MiB", MIB, 0},
    {"64 MiB", 64 * MIB, 0},
    {"64 MiB + 4108 B", 64 * MIB + 4108, 1},
    {"1 GiB", 1024 * MIB, 0},
    {"4 GiB", 4096 * MIB, 0},
};

static uint64_t
splitmix64(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

/* Element i of the pattern: mostly finite values of exponents 2^-60 .. 2^19 (so every
 * histogram bin, including the two ends, is reached), one in 4096 a special value. */
static uint32_t
pattern_bits(uint64_t seed, uint64_t i)
{
    uint64_t u = splitmix64(seed ^ (i * 0x2545f4914f6cdd1dull));
    uint32_t sign = (uint32_t)(u >> 63) << 31;
    if (u % 4096 == 0) {
        switch ((u >> 12) % 6) {
        case 0: return 0x7fc00000u;                          /* NaN */
        case 1: return 0x7f800000u;                          /* +Inf */
        case 2: return 0xff800000u;                          /* -Inf */
        case 3: return sign;                                 /* +-0 */
        case 4: return sign | (uint32_t)((u >> 20) & 0x7fffffu) | 1u; /* subnormal */
        default: return sign | 0x7f7fffffu;                  /* +-FLT_MAX */
        }
    }
    uint32_t exp = (uint32_t)(127 - 60 + (u >> 40) % 80);
    return sign | exp << 23 | (uint32_t)(u & 0x7fffffu);
}

static int
cuda_ok(cudaError_t s, const char *what)
{
    if (s == cudaSuccess)
        return 1;
    fprintf(stderr, "bench_fp_cuda: %s: %s\n", what, cudaGetErrorString(s));
    return 0;
}

/* Fills bytes of device memory d: the pattern on the host (pinned), uploaded, then the
 * device's own copies of what is there, doubling. */
static int
fill(void *d, size_t bytes, uint64_t seed, uint32_t *pinned)
{
    size_t first = bytes < PATTERN_BYTES ? bytes : PATTERN_BYTES;
    for (size_t i = 0; i < first / 4; i++)
        pinned[i] = pattern_bits(seed, i);
    if (!cuda_ok(cudaMemcpy(d, pinned, first, cudaMemcpyHostToDevice), "upload"))
        return 0;
    for (size_t have = first; have < bytes;) {
        size_t n = bytes - have < have ? bytes - have : have;
        if (!cuda_ok(cudaMemcpy((char *)d + have, d, n, cudaMemcpyDeviceToDevice), "tile"))
            return 0;
        have += n;
    }
    return cuda_ok(cudaDeviceSynchronize(), "fill");
}

struct timer {
    cudaEvent_t start, stop;
    cudaStream_t stream;
};

static int
timer_begin(struct timer *t)
{
    return cuda_ok(cudaEventRecord(t->start, t->stream), "event");
}

static int
timer_end(struct timer *t, double *ms)
{
    float f = 0;
    if (!cuda_ok(cudaEventRecord(t->stop, t->stream), "event") ||
        !cuda_ok(cudaEventSynchronize(t->stop), "kernels or copy") ||
        !cuda_ok(cudaEventElapsedTime(&f, t->start, t->stop), "elapsed"))
        return 0;
    *ms = f;
    return 1;
}

struct bench {
    int repeats, warmup;
    size_t check_max;
    struct gd__cuda_ctx ctx;       /* only the copy stream and the fingerprint buffers */
    struct timer tm;
    void *raw_host;                /* pinned: the capture path's raw result */
    uint32_t *pinned;              /* PATTERN_BYTES, the fill's staging */
    struct gd_fingerprint *host_fp, *dev_fp;
    int n_checked, n_bad, n_skipped, n_failed;
};

/* The device fingerprint of t through the capture path against the host's of a copy. */
static int
check_size(struct bench *b, const struct gd_tensor *t, const char *label)
{
    struct gd_err err = {0};
    size_t bytes = gd_tensor_nbytes(t);
    void *h = malloc(bytes);
    if (h == NULL) {
        printf("  %s: host check skipped: no %zu bytes of host memory\n", label, bytes);
        return 1;
    }
    int ok = 0;
    if (gd__cuda_fp_enqueue(&b->ctx, t, b->raw_host, &err) != 0) {
        fprintf(stderr, "bench_fp_cuda: %s: %s\n", label, err.msg);
        goto done;
    }
    if (!cuda_ok(cudaStreamSynchronize(b->ctx.copy), "fingerprint"))
        goto done;
    const struct gd_fingerprint *d = gd__cuda_fp_finish(&b->ctx, b->raw_host, t);
    if (d == NULL) {
        fprintf(stderr, "bench_fp_cuda: %s: gd__cuda_fp_finish failed\n", label);
        goto done;
    }
    *b->dev_fp = *d;
    if (!cuda_ok(cudaMemcpy(h, t->data, bytes, cudaMemcpyDeviceToHost), "download"))
        goto done;
    struct gd_tensor ht = *t;
    ht.data = h;
    ht.device = 0;
    ht.owns_data = 0;
    double t0 = bench_now_s();
    if (gd_fingerprint_compute(&ht, b->host_fp, &err) != 0) {
        fprintf(stderr, "bench_fp_cuda: %s: host: %s\n", label, err.msg);
        goto done;
    }
    double host_s = bench_now_s() - t0;
    b->n_checked++;
    const char *diff = fp_first_difference(b->host_fp, b->dev_fp);
    char hex[GD_FINGERPRINT_HASH_HEX_LEN + 1];
    gd_fingerprint_hash_hex(b->dev_fp, hex);
    if (diff != NULL) {
        b->n_bad++;
        printf("  %s: MISMATCH: the device fingerprint's %s differs from the host's "
               "(sum %.17g / %.17g, min %.9g / %.9g, nan %" PRId64 " / %" PRId64 ")\n",
               label, diff, b->dev_fp->sum, b->host_fp->sum, b->dev_fp->min, b->host_fp->min,
               b->dev_fp->nan_count, b->host_fp->nan_count);
        fprintf(stderr, "bench_fp_cuda: %s: MISMATCH in %s\n", label, diff);
    } else {
        printf("  %s: host check: every field the same bits (blake3 %.16s..., %" PRId64
               " NaN, %" PRId64 " Inf, mean %.6g; host %.2f s)\n",
               label, hex, b->dev_fp->nan_count, b->dev_fp->inf_count,
               gd_fingerprint_mean(b->dev_fp), host_s);
    }
    ok = 1;
done:
    free(h);
    return ok;
}

/* Times and checks one size; 0 on a CUDA failure (the size is then counted as failed). */
static int
run_size(struct bench *b, const struct size_case *sc, int index)
{
    struct gd_err err = {0};
    size_t bytes = sc->bytes;
    size_t scratch_size = gd__cuda_fp_scratch_size(bytes);
    size_t need = 2 * bytes + 2 * scratch_size + 2 * sizeof(struct gd__fp_raw) + 256 * MIB;
    size_t free_b = 0, total_b = 0;
    if (!cuda_ok(cudaMemGetInfo(&free_b, &total_b), "cudaMemGetInfo"))
        return 0;
    if (need > free_b) {
        printf("%s: SKIPPED: needs %.2f GiB of device memory (tensor, copy, scratch), "
               "%.2f GiB free\n", sc->label, (double)need / (1 << 30),
               (double)free_b / (1 << 30));
        b->n_skipped++;
        return 1;
    }
    void *x = NULL, *y = NULL, *scratch = NULL;
    struct gd__fp_raw *raw = NULL;
    double *ms = NULL;
    int ok = 0;
    if (!cuda_ok(cudaMalloc(&x, bytes), "cudaMalloc") ||
        !cuda_ok(cudaMalloc(&y, bytes), "cudaMalloc") ||
        !cuda_ok(cudaMalloc((void **)&raw, sizeof *raw), "cudaMalloc") ||
        (scratch_size > 0 && !cuda_ok(cudaMalloc(&scratch, scratch_size), "cudaMalloc")))
        goto done;
    if (!fill(x, bytes, 0x5eed0000u + (uint64_t)index, b->pinned))
        goto done;
    struct gd_tensor t = {.dtype = GD_F32, .ndim = 2, .data = x, .device = 1};
    t.shape[1] = 1024;
    t.shape[0] = (int64_t)(bytes / 4 / 1024);
    if (bytes % (4 * 1024) != 0) { /* the odd size: one row */
        t.ndim = 1;
        t.shape[0] = (int64_t)(bytes / 4);
    }
    int n = b->repeats;
    ms = calloc((size_t)3 * (size_t)n, sizeof *ms);
    if (ms == NULL)
        goto done;
    double *k_ms = ms, *c_ms = ms + n, *cp_ms = ms + 2 * n;
    for (int r = -b->warmup; r < n; r++) {
        double a = 0, c = 0, d = 0;
        if (!timer_begin(&b->tm))
            goto done;
        if (gd__cuda_fp_launch(x, bytes, GD__FP_F32, 4, t.ndim, t.shape, raw, scratch,
                               b->tm.stream, &err) != 0) {
            fprintf(stderr, "bench_fp_cuda: %s: %s\n", sc->label, err.msg);
            goto done;
        }
        if (!timer_end(&b->tm, &a) || !timer_begin(&b->tm))
            goto done;
        if (gd__cuda_fp_enqueue(&b->ctx, &t, b->raw_host, &err) != 0) {
            fprintf(stderr, "bench_fp_cuda: %s: %s\n", sc->label, err.msg);
            goto done;
        }
        if (!timer_end(&b->tm, &c) || !timer_begin(&b->tm))
            goto done;
        if (!cuda_ok(cudaMemcpyAsync(y, x, bytes, cudaMemcpyDeviceToDevice, b->tm.stream),
                     "copy") ||
            !timer_end(&b->tm, &d))
            goto done;
        if (r >= 0) {
            k_ms[r] = a;
            c_ms[r] = c;
            cp_ms[r] = d;
        }
    }
    double km = bench_median(k_ms, n), cm = bench_median(c_ms, n), pm = bench_median(cp_ms, n);
    double ratio = km / pm;
    printf("%s%s: bytes %zu, fingerprint %.4f ms (kernels; %.4f ms with its result's "
           "download, as captured), copy %.4f ms, ratio %.2fx (target <= 1.5x: %s); "
           "%.0f GB/s read by the kernels, %.0f GB/s copied",
           sc->label, sc->check_only ? " (odd size, not part of the target)" : "", bytes, km,
           cm, pm, ratio, ratio <= 1.5 ? "met" : "MISSED", (double)bytes / km / 1e6,
           (double)bytes / pm / 1e6);
    if (bytes >= 4096 * MIB)
        printf("; under 1 s: %s (%.3f s)", km < 1000.0 ? "yes" : "NO", km / 1e3);
    printf("\n");
    fflush(stdout);
    if (bytes <= b->check_max || index < 2) {
        if (!check_size(b, &t, sc->label))
            goto done;
    } else {
        printf("  %s: host check not run (over --check-max-mib %zu)\n", sc->label,
               b->check_max / MIB);
    }
    ok = 1;
done:
    free(ms);
    cudaFree(x);
    cudaFree(y);
    cudaFree(raw);
    cudaFree(scratch);
    return ok;
}

int
main(int argc, char **argv)
{
    struct bench b;
    memset(&b, 0, sizeof b);
    b.repeats = 20;
    b.warmup = 3;
    b.check_max = 1024 * MIB;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--repeats") == 0 && i + 1 < argc)
            b.repeats = atoi(argv[++i]);
        else if (strcmp(argv[i], "--warmup") == 0 && i + 1 < argc)
            b.warmup = atoi(argv[++i]);
        else if (strcmp(argv[i], "--check-max-mib") == 0 && i + 1 < argc)
            b.check_max = (size_t)atoll(argv[++i]) * MIB;
        else {
            fprintf(stderr, "usage: bench_fp_cuda [--repeats N] [--warmup N] "
                            "[--check-max-mib M]\n");
            return 2;
        }
    }
    if (b.repeats < 1 || b.warmup < 0) {
        fprintf(stderr, "bench_fp_cuda: --repeats at least 1, --warmup at least 0\n");
        return 2;
    }
    /* the registry also links in what the kernels the capture path brings read */
    int built = 0;
    for (const char *const *be = gd_backend_names(); *be != NULL; be++)
        built |= strcmp(*be, "cuda") == 0;
    if (!built) {
        fprintf(stderr, "bench_fp_cuda: this build has no cuda backend: skipped\n");
        return 77;
    }
    int n_dev = 0;
    cudaError_t s = cudaGetDeviceCount(&n_dev);
    if (s != cudaSuccess || n_dev == 0) {
        fprintf(stderr, "bench_fp_cuda: no CUDA device (%s): skipped\n",
                s != cudaSuccess ? cudaGetErrorString(s) : "none found");
        return 77;
    }
    struct cudaDeviceProp prop;
    if (cuda_ok(cudaGetDeviceProperties(&prop, 0), "device"))
        printf("device: %s, %.1f GiB; repeats %d after %d warm-up runs, medians\n", prop.name,
               (double)prop.totalGlobalMem / (1 << 30), b.repeats, b.warmup);
    int rc = 1;
    b.host_fp = malloc(sizeof *b.host_fp);
    b.dev_fp = malloc(sizeof *b.dev_fp);
    if (b.host_fp == NULL || b.dev_fp == NULL ||
        !cuda_ok(cudaStreamCreateWithFlags(&b.ctx.copy, cudaStreamNonBlocking), "stream") ||
        !cuda_ok(cudaEventCreate(&b.tm.start), "event") ||
        !cuda_ok(cudaEventCreate(&b.tm.stop), "event") ||
        !cuda_ok(cudaMallocHost(&b.raw_host, gd__cuda_fp_ring_bytes()), "cudaMallocHost") ||
        !cuda_ok(cudaMallocHost((void **)&b.pinned, PATTERN_BYTES), "cudaMallocHost"))
        goto done;
    b.tm.stream = b.ctx.copy; /* everything timed runs on the capture's stream */
    int n_sizes = (int)(sizeof sizes / sizeof sizes[0]);
    for (int i = 0; i < n_sizes; i++)
        if (!run_size(&b, &sizes[i], i)) {
            printf("%s: FAILED (see stderr)\n", sizes[i].label);
            b.n_failed++;
            cudaGetLastError(); /* a failed size leaves no error behind for the next */
        }
    printf("bench_fp_cuda: %d sizes, %d skipped, %d failed; %d checked against the host, "
           "%d mismatches\n", n_sizes, b.n_skipped, b.n_failed, b.n_checked, b.n_bad);
    rc = b.n_bad == 0 && b.n_failed == 0 && b.n_checked >= 2 ? 0 : 1;
done:
    gd__cuda_fp_free(&b.ctx);
    if (b.pinned != NULL)
        cudaFreeHost(b.pinned);
    if (b.raw_host != NULL)
        cudaFreeHost(b.raw_host);
    if (b.tm.start != NULL)
        cudaEventDestroy(b.tm.start);
    if (b.tm.stop != NULL)
        cudaEventDestroy(b.tm.stop);
    if (b.ctx.copy != NULL)
        cudaStreamDestroy(b.ctx.copy);
    free(b.host_fp);
    free(b.dev_fp);
    return rc;
}
