/*
 * check_cuda_tf32.c: with --tf32 on, the cuda backend's Gemm and MatMul (4-D batches, one
 * strided batch and a loop of them where a batch axis broadcasts), and its Conv where the
 * algorithm ran on tensor cores (the layer's math says "tf32"), err like a 10-bit mantissa:
 * each output is within (2 u_t + u_t^2 + gamma_n(2^-24)) sum|a_k b_k| of the float64 result,
 * u_t = 2^-11 the TF32 unit roundoff (both inputs rounded, products exact, float32
 * accumulation), and its error is larger than float32 arithmetic alone could make it, so
 * the knob did take effect. With TF32 off the same ops stay within float32's bound.
 * Exits 77 without a GPU or a cuda backend.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpudiff/session.h"
#include "op_harness.h"

static const double u32 = 0x1p-24, ut = 0x1p-11;

static double
gamma_n(double n, double u)
{
    return n * u / (1 - n * u);
}

/* Runs op on backend with tf32, returning output 0. */
static struct gd_tensor *
run(const char *backend, const char *op, int n_in, struct gd_tensor **in, const char *attrs,
    int tf32)
{
    struct gd_knobs k;
    gd_knobs_init(&k);
    if (strcmp(backend, "cuda") == 0)
        k.tf32 = tf32;
    struct gd_tensor *out[1] = {NULL};
    struct gd_err err = {0};
    int rc = oh_run(backend, op, n_in, in, 0x2u, attrs, 1, out, &k, &err);
    if (rc == GD_EDEVICE || (rc == GD_ENOENT && strcmp(backend, "cuda") == 0)) {
        /* no GPU here, or a build without the cuda backend */
        printf("SKIP: %s\n", err.msg);
        exit(77);
    }
    if (rc != 0) {
        fprintf(stderr, "FAIL: %s on %s: %s\n", op, backend, err.msg);
        exit(1);
    }
    return out[0];
}

/*
 * Worst normalized error max_i |got - ref| / mag_i, where mag_i = sum_k |a_k b_k| of output
 * i (computed by the same op in float64 on |a| and |b|).
 */
static double
worst(const struct gd_tensor *got, const struct gd_tensor *ref, const struct gd_tensor *mag)
{
    double w = 0;
    for (int64_t i = 0; i < gd_tensor_numel(ref); i++) {
        double m = gd_tensor_get_f64(mag, i);
        double e = fabs(gd_tensor_get_f64(got, i) - gd_tensor_get_f64(ref, i));
        if (m > 0 && e / m > w)
            w = e / m;
    }
    return w;
}

static struct gd_tensor *
abs_copy(const struct gd_tensor *t)
{
    struct gd_tensor *c = gd_tensor_dup(t, NULL);
    float *v = c->data;
    for (int64_t i = 0; i < gd_tensor_numel(c); i++)
        v[i] = fabsf(v[i]);
    return c;
}

static int
check(const char *op, int n_in, struct gd_tensor **in, const char *attrs, double n_terms)
{
    struct gd_tensor *abs_in[2] = {abs_copy(in[0]), abs_copy(in[1])};
    struct gd_tensor *ref = run("cpu64", op, n_in, in, attrs, 0);
    struct gd_tensor *mag = run("cpu64", op, n_in, abs_in, attrs, 0);
    int failed = 0;
    double w_fp32 = 0;
    for (int tf32 = 0; tf32 <= 1; tf32++) {
        struct gd_tensor *got = run("cuda", op, n_in, in, attrs, tf32);
        double w = worst(got, ref, mag);
        int tensor_cores = strcmp(oh_last_math, "tf32") == 0;
        double fp32_bound = gamma_n(n_terms, u32) + u32;
        double tf32_bound = 2 * ut + ut * ut + gamma_n(n_terms, u32) + u32;
        double bound = tensor_cores ? tf32_bound : fp32_bound;
        if (!tf32)
            w_fp32 = w;
        /* Rounding the inputs to TF32 leaves errors of order u_t / 64 or more (averaging over
         * the sum shrinks them from u_t); float32 arithmetic alone, measured in the run with
         * TF32 off, stays a hundred times smaller. Both must hold for a "tf32" record. */
        int engaged = !tensor_cores || (w > ut / 64 && w > 64 * w_fp32);
        int ok = w <= bound && engaged && (tf32 || !tensor_cores);
        printf("%s %-6s tf32 %-3s math %-5s algo %-40s err/mag %.3e  bound %.3e  %s\n",
               ok ? "ok  " : "FAIL", op, tf32 ? "on" : "off", oh_last_math, oh_last_algo, w, bound,
               tensor_cores ? "(TF32 range)" : "(FP32 range)");
        failed |= !ok;
        if (strcmp(op, "Conv") != 0 && tf32 && !tensor_cores) {
            printf("FAIL %s with tf32 on did not report tf32 math\n", op);
            failed = 1;
        }
        gd_tensor_free(got);
    }
    gd_tensor_free(ref);
    gd_tensor_free(mag);
    gd_tensor_free(abs_in[0]);
    gd_tensor_free(abs_in[1]);
    return failed;
}

int
main(void)
{
    int failed = 0;
    int64_t a_shape[2] = {64, 512}, b_shape[2] = {512, 64};
    struct gd_tensor *gemm_in[2] = {oh_random(2, a_shape, 1), oh_random(2, b_shape, 2)};
    failed |= check("Gemm", 2, gemm_in, NULL, 512);
    int64_t x_shape[4] = {2, 64, 16, 16}, w_shape[4] = {64, 64, 3, 3};
    struct gd_tensor *conv_in[2] = {oh_random(4, x_shape, 3), oh_random(4, w_shape, 4)};
    failed |= check("Conv", 2, conv_in, "{\"pads\": [1, 1, 1, 1]}", 64 * 9);
    /* MatMul's batches: one strided batch, and a loop of them (B broadcast from 1) */
    int64_t qa[4] = {2, 3, 64, 256}, kb[4] = {2, 3, 256, 64}, kb1[4] = {1, 3, 256, 64};
    int64_t qa2[4] = {2, 1, 64, 256};
    struct gd_tensor *mm_in[2] = {oh_random(4, qa, 5), oh_random(4, kb, 6)};
    failed |= check("MatMul", 2, mm_in, NULL, 256);
    gd_tensor_free(mm_in[1]);
    mm_in[1] = oh_random(4, kb1, 7);
    failed |= check("MatMul", 2, mm_in, NULL, 256);
    gd_tensor_free(mm_in[0]);
    mm_in[0] = oh_random(4, qa2, 8);
    failed |= check("MatMul", 2, mm_in, NULL, 256);
    for (int i = 0; i < 2; i++) {
        gd_tensor_free(gemm_in[i]);
        gd_tensor_free(conv_in[i]);
        gd_tensor_free(mm_in[i]);
    }
    return failed ? 1 : 0;
}
