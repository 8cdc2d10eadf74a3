/* bench_metrics.c: times gd_metrics_compute() over two float32 arrays against memcpy, and
 * writes the arrays as .npy for bench_metrics.py to time numpy on the same data. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gpudiff/metrics.h"
#include "bench_util.h"

#define REPS 5

static uint64_t
next_rand(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

/*
 * a: normal-ish values (the sum of four uniforms, centred); b: a with some elements moved by
 * a few ULPs. "sparse" (the default) moves one element in 8 by 1 to 4 ULPs, as a rerun
 * differing in a few places; "dense" moves every element by up to 2^12 ULPs with a spread of
 * magnitudes, as a float32 GPU run against a CPU run.
 */
static void
make_data(float *a, float *b, size_t n, int dense)
{
    uint64_t s = 0x2545f4914f6cdd1dull;
    for (size_t i = 0; i < n; i++) {
        uint64_t r = next_rand(&s);
        double u = (double)(r & 0xffff) + (double)((r >> 16) & 0xffff) +
                   (double)((r >> 32) & 0xffff) + (double)((r >> 48) & 0xffff);
        a[i] = (float)((u / 65536.0 - 2.0) * 1.7320508075688772);
        uint32_t bits;
        memcpy(&bits, &a[i], sizeof bits);
        uint64_t p = next_rand(&s);
        if (dense && (bits & 0x7fffffffu) >= 0x00800000u) /* zero stays: no wrap past it */
            bits += (uint32_t)(p & ((1u << ((p >> 8) % 13)) - 1)) * ((p >> 20) & 1 ? 1u : -1u);
        else if ((p & 7) == 0)
            bits += 1 + (uint32_t)((p >> 8) & 3);
        memcpy(&b[i], &bits, sizeof bits);
    }
}

/* An .npy v1.0 file: magic, version, a header padded to 128 bytes in all, the data. */
static int
write_npy(const char *path, const float *data, size_t n)
{
    char header[128];
    int len = snprintf(header + 10, sizeof header - 10,
                       "{'descr': '<f4', 'fortran_order': False, 'shape': (%zu,), }", n);
    if (len < 0 || len > 117)
        return -1;
    memcpy(header, "\x93NUMPY\x01\x00", 8);
    header[8] = 118;
    header[9] = 0;
    memset(header + 10 + len, ' ', (size_t)(117 - len));
    header[127] = '\n';
    FILE *f = fopen(path, "wb");
    if (f == NULL)
        return -1;
    int ok = fwrite(header, 1, sizeof header, f) == sizeof header &&
             fwrite(data, sizeof *data, n, f) == n;
    ok = fclose(f) == 0 && ok;
    return ok ? 0 : -1;
}

static void
usage(void)
{
    fprintf(stderr, "usage: bench_metrics [--elements N] [--dense] [--npy-dir DIR]\n");
}

int
main(int argc, char **argv)
{
    size_t n = (size_t)64 << 20; /* 256 MiB of float32 per array */
    int dense = 0;
    const char *npy_dir = NULL;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--elements") == 0 && i + 1 < argc) {
            n = strtoull(argv[++i], NULL, 10);
        } else if (strcmp(argv[i], "--dense") == 0) {
            dense = 1;
        } else if (strcmp(argv[i], "--npy-dir") == 0 && i + 1 < argc) {
            npy_dir = argv[++i];
        } else {
            usage();
            return 2;
        }
    }
    size_t bytes = n * sizeof(float);
    float *a = malloc(bytes), *b = malloc(bytes);
    char *copy = malloc(bytes);
    if (a == NULL || b == NULL || copy == NULL || n == 0) {
        fprintf(stderr, "bench_metrics: cannot allocate 3 x %zu bytes\n", bytes);
        return 1;
    }
    make_data(a, b, n, dense);
    memset(copy, 0, bytes); /* fault the pages in before timing */

    struct gd_err err = {0};
    int64_t shape = (int64_t)n;
    struct gd_tensor *ta = gd_tensor_wrap(GD_F32, 1, &shape, a, &err);
    struct gd_tensor *tb = gd_tensor_wrap(GD_F32, 1, &shape, b, &err);
    if (ta == NULL || tb == NULL) {
        fprintf(stderr, "bench_metrics: %s\n", err.msg);
        return 1;
    }

    /* Warm-up, then memcpy and the metric pass in turns, so both see the same machine. */
    struct gd_metrics m;
    double t_copy[REPS], t_metrics[REPS];
    memcpy(copy, a, bytes);
    if (gd_metrics_compute(ta, tb, 1e-8, 1e-5, &m, &err) != 0) {
        fprintf(stderr, "bench_metrics: %s\n", err.msg);
        return 1;
    }
    for (int r = 0; r < REPS; r++) {
        double t0 = bench_now_s();
        memcpy(copy, r % 2 ? a : b, bytes);
        double t1 = bench_now_s();
        gd_metrics_compute(ta, tb, 1e-8, 1e-5, &m, &err);
        double t2 = bench_now_s();
        t_copy[r] = t1 - t0;
        t_metrics[r] = t2 - t1;
    }
    double copy_s = bench_median(t_copy, REPS), metrics_s = bench_median(t_metrics, REPS);

    if (npy_dir != NULL) {
        char path_a[4096], path_b[4096];
        snprintf(path_a, sizeof path_a, "%s/bench_a.npy", npy_dir);
        snprintf(path_b, sizeof path_b, "%s/bench_b.npy", npy_dir);
        if (write_npy(path_a, a, n) != 0 || write_npy(path_b, b, n) != 0) {
            fprintf(stderr, "bench_metrics: cannot write %s: %s\n", path_a, strerror(errno));
            return 1;
        }
    }

    /* key value lines for bench_metrics.py, then what the pass found (checked there). */
    printf("elements %zu\n", n);
    printf("data %s\n", dense ? "dense" : "sparse");
    printf("memcpy_s %.6f\n", copy_s);
    printf("memcpy_gbps %.3f\n", 2.0 * (double)bytes / copy_s / 1e9);
    printf("metrics_s %.6f\n", metrics_s);
    printf("metrics_gbps %.3f\n", 2.0 * (double)bytes / metrics_s / 1e9);
    printf("abs_max %.17g\n", m.abs_max);
    printf("abs_mean %.17g\n", m.abs_mean);
    printf("n_mismatch %lld\n", (long long)m.n_mismatch);
    printf("ulp_max %llu\n", (unsigned long long)m.ulp_max);
    printf("rel_median %.6g\n", gd_metrics_rel_quantile(&m, 0.5));

    gd_tensor_free(ta);
    gd_tensor_free(tb);
    free(a);
    free(b);
    free(copy);
    return 0;
}
