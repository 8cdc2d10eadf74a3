/*
 * check_gemm_kernel.c: the tiled product (engine/cpu/gemm_kernel.c) and the thread pool
 * give the plain loops' bits: Conv, ConvTranspose, Gemm and MatMul on cpu and cpu64, at
 * every vector level (GPUDIFF_CPU_SIMD) and thread count, against GPUDIFF_CPU_SIMD=off with
 * one thread, compared bit for bit (any NaN matching any NaN: payloads are not part of the
 * documented order).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <check.h>

#include "gpudiff/session.h"
#include "op_harness.h"

#define MAX_IN 3

struct order_case {
    const char *name;
    const char *op;
    int n_in;
    int ndim[MAX_IN];
    int64_t shape[MAX_IN][5];
    unsigned const_mask;
    const char *attrs;
    int specials; /* NaN, infinities, -0, subnormals and huge values in input 0 */
    int bad_weight; /* a NaN and an infinity in input 1 (Conv: the direct loops' path); a
                     * graph input then, since a model's weights hold numbers only */
};

/* clang-format off */
static const struct order_case cases[] = {
    /* Conv: output channels below one tile, asymmetric pads, k past one block of 256 */
    {"conv_narrow", "Conv", 3, {4, 4, 1}, {{2, 3, 9, 11}, {5, 3, 3, 3}, {5}}, 6u,
     "{\"pads\": [1, 1, 1, 1]}", 1, 0},
    {"conv_stride_asym", "Conv", 3, {4, 4, 1}, {{2, 8, 20, 20}, {13, 8, 3, 3}, {13}}, 6u,
     "{\"strides\": [2, 2], \"pads\": [1, 0, 2, 1]}", 1, 0},
    {"conv_deep", "Conv", 2, {4, 4}, {{1, 32, 12, 12}, {16, 32, 3, 3}}, 2u,
     "{\"pads\": [1, 1, 1, 1]}", 0, 0},
    {"conv_dilation", "Conv", 3, {4, 4, 1}, {{3, 4, 17, 19}, {24, 4, 5, 5}, {24}}, 6u,
     "{\"dilations\": [2, 2], \"pads\": [3, 3, 3, 3], \"strides\": [1, 2]}", 1, 0},
    {"conv_groups", "Conv", 3, {4, 4, 1}, {{2, 8, 10, 10}, {8, 4, 3, 3}, {8}}, 6u,
     "{\"group\": 2, \"pads\": [1, 1, 1, 1]}", 0, 0},
    {"conv_depthwise", "Conv", 3, {4, 4, 1}, {{2, 6, 9, 9}, {6, 1, 3, 3}, {6}}, 6u,
     "{\"group\": 6, \"pads\": [1, 1, 1, 1]}", 0, 0},
    {"conv_1d", "Conv", 3, {3, 3, 1}, {{2, 5, 30}, {7, 5, 4}, {7}}, 6u,
     "{\"strides\": [3], \"pads\": [2, 1]}", 1, 0},
    {"conv_pointwise", "Conv", 3, {4, 4, 1}, {{2, 16, 7, 7}, {40, 16, 1, 1}, {40}}, 6u, NULL,
     0, 0},
    {"conv_many_columns", "Conv", 3, {4, 4, 1}, {{4, 3, 30, 30}, {12, 3, 3, 3}, {12}}, 6u,
     "{\"pads\": [1, 1, 1, 1]}", 1, 0},
    {"conv_wide_kernel", "Conv", 2, {4, 4}, {{1, 2, 3, 3}, {4, 2, 5, 5}}, 2u,
     "{\"pads\": [2, 2, 2, 2]}", 0, 0},
    {"conv_bad_weight", "Conv", 3, {4, 4, 1}, {{2, 3, 8, 8}, {6, 3, 3, 3}, {6}}, 4u,
     "{\"pads\": [1, 1, 1, 1]}", 0, 1},
    /* 3-D: taps over depth too, an output row per (image, depth, row), k past 256 */
    {"conv_3d", "Conv", 3, {5, 5, 1}, {{2, 4, 6, 9, 8}, {6, 4, 3, 3, 3}, {6}}, 6u,
     "{\"strides\": [2, 1, 2], \"pads\": [1, 1, 0, 2, 1, 1], \"dilations\": [1, 2, 1]}", 1,
     0},
    {"conv_3d_deep", "Conv", 2, {5, 5}, {{1, 12, 4, 5, 5}, {9, 12, 3, 3, 3}}, 2u,
     "{\"pads\": [1, 1, 1, 1, 1, 1]}", 0, 0},
    /* ConvTranspose */
    {"convt_stride", "ConvTranspose", 3, {4, 4, 1}, {{2, 3, 6, 7}, {3, 5, 3, 3}, {5}}, 6u,
     "{\"strides\": [2, 2], \"pads\": [1, 1, 1, 1], \"output_padding\": [1, 1]}", 1, 0},
    {"convt_dilation", "ConvTranspose", 2, {4, 4}, {{1, 4, 5, 5}, {4, 6, 4, 4}}, 2u,
     "{\"strides\": [2, 3], \"dilations\": [1, 2]}", 0, 0},
    {"convt_groups", "ConvTranspose", 3, {4, 4, 1}, {{2, 6, 4, 4}, {6, 2, 3, 3}, {6}}, 6u,
     "{\"group\": 3}", 0, 0},
    {"convt_seed_shape", "ConvTranspose", 3, {4, 4, 1}, {{3, 1, 8, 8}, {1, 6, 5, 5}, {6}}, 6u,
     NULL, 1, 0},
    {"convt_1d", "ConvTranspose", 2, {3, 3}, {{2, 3, 10}, {3, 4, 3}}, 2u,
     "{\"strides\": [2]}", 0, 0},
    {"convt_3d", "ConvTranspose", 3, {5, 5, 1}, {{2, 3, 3, 4, 3}, {3, 4, 3, 2, 3}, {4}}, 6u,
     "{\"strides\": [2, 2, 3], \"pads\": [1, 0, 1, 0, 1, 2], \"dilations\": [2, 1, 1]}", 1,
     0},
    /* Gemm: every transpose, alpha and beta, C broadcast both ways, k past 256, m past the
     * rows one task holds */
    {"gemm", "Gemm", 2, {2, 2}, {{37, 300}, {300, 50}}, 2u, NULL, 1, 0},
    {"gemm_trans_a", "Gemm", 3, {2, 2, 1}, {{300, 37}, {300, 50}, {50}}, 6u,
     "{\"transA\": 1, \"alpha\": 0.5, \"beta\": 2.0}", 0, 0},
    {"gemm_trans_b", "Gemm", 3, {2, 2, 2}, {{13, 20}, {700, 20}, {13, 1}}, 6u,
     "{\"transB\": 1, \"beta\": -1.5}", 1, 0},
    {"gemm_row", "Gemm", 3, {2, 2, 1}, {{1, 9}, {9, 3}, {3}}, 4u, NULL, 0, 1},
    {"gemm_tall", "Gemm", 3, {2, 2, 1}, {{1000, 20}, {7, 20}, {7}}, 6u, "{\"transB\": 1}", 1,
     0},
    /* MatMul: broadcast batches, the 1-D forms, more columns than one block of 256 */
    {"matmul_batch", "MatMul", 2, {4, 3}, {{2, 1, 13, 70}, {3, 70, 29}}, 0u, NULL, 1, 0},
    {"matmul_vector", "MatMul", 2, {1, 2}, {{70}, {70, 5}}, 2u, NULL, 0, 0},
    {"matmul_wide", "MatMul", 2, {2, 2}, {{4, 300}, {300, 600}}, 2u, NULL, 0, 0},
};
/* clang-format on */

#define N_CASES ((int)(sizeof cases / sizeof cases[0]))

/* The special values, placed at a few spread indexes. */
static void
add_specials(struct gd_tensor *t)
{
    static const float specials[] = {NAN, INFINITY, -INFINITY, -0.0f, 1e-40f, -3e-39f,
                                     3e38f, -2e38f, 0.0f};
    float *v = t->data;
    int64_t n = gd_tensor_numel(t);
    for (size_t i = 0; i < sizeof specials / sizeof specials[0]; i++)
        v[(int64_t)(i * 7919u) % n] = specials[i];
}

static void
make_inputs(const struct order_case *oc, struct gd_tensor **in)
{
    for (int i = 0; i < oc->n_in; i++) {
        in[i] = oh_random(oc->ndim[i], oc->shape[i], 101u + (unsigned)i);
        ck_assert_ptr_nonnull(in[i]);
    }
    if (oc->specials)
        add_specials(in[0]);
    if (oc->bad_weight) {
        float *w = in[1]->data;
        w[0] = NAN;
        w[gd_tensor_numel(in[1]) - 1] = INFINITY;
    }
}

/* Runs the case on backend with GPUDIFF_CPU_SIMD=simd and threads threads. */
static struct gd_tensor *
run_case(const struct order_case *oc, struct gd_tensor **in, const char *backend,
         const char *simd, int threads, const char *emulate)
{
    struct gd_knobs knobs;
    gd_knobs_init(&knobs);
    knobs.threads = threads;
    struct gd_err err = {0};
    if (emulate != NULL)
        ck_assert_msg(gd_emulate_parse(emulate, &knobs.emulate, &knobs.emulate_classes, &err) ==
                          0,
                      "%s", err.msg);
    setenv("GPUDIFF_CPU_SIMD", simd, 1);
    struct gd_tensor *out = NULL;
    int rc = oh_run(backend, oc->op, oc->n_in, in, oc->const_mask, oc->attrs, 1, &out, &knobs,
                    &err);
    unsetenv("GPUDIFF_CPU_SIMD");
    ck_assert_msg(rc == 0, "%s on %s (simd %s, %d threads): %s", oc->name, backend, simd,
                  threads, err.msg);
    return out;
}

/* Bitwise equality, any NaN matching any NaN; prints the first mismatch. */
static int
same_bits(const struct gd_tensor *want, const struct gd_tensor *got, char *why, size_t size)
{
    if (want->dtype != got->dtype || gd_tensor_numel(want) != gd_tensor_numel(got)) {
        snprintf(why, size, "dtype or size differs");
        return 0;
    }
    for (int64_t i = 0; i < gd_tensor_numel(want); i++) {
        double a = gd_tensor_get_f64(want, i), b = gd_tensor_get_f64(got, i);
        size_t es = gd_tensor_nbytes(want) / (size_t)gd_tensor_numel(want);
        if (isnan(a) && isnan(b))
            continue;
        if (memcmp((const char *)want->data + (size_t)i * es, (const char *)got->data +
                   (size_t)i * es, es) != 0) {
            snprintf(why, size, "element %lld: want %a, got %a", (long long)i, a, b);
            return 0;
        }
    }
    return 1;
}

static const char *const levels[] = {"portable", "avx2", "avx512"};
static const int thread_counts[] = {1, 2, 3};

static void
check_case(const struct order_case *oc, const char *backend, const char *emulate)
{
    struct gd_tensor *in[MAX_IN] = {NULL};
    make_inputs(oc, in);
    struct gd_tensor *want = run_case(oc, in, backend, "off", 1, emulate);
    for (size_t l = 0; l < sizeof levels / sizeof levels[0]; l++) {
        for (size_t t = 0; t < sizeof thread_counts / sizeof thread_counts[0]; t++) {
            struct gd_tensor *got = run_case(oc, in, backend, levels[l], thread_counts[t],
                                             emulate);
            char why[160];
            int same = same_bits(want, got, why, sizeof why);
            gd_tensor_free(got);
            ck_assert_msg(same, "%s on %s%s%s, simd %s, %d threads: %s", oc->name, backend,
                          emulate ? " --emulate " : "", emulate ? emulate : "", levels[l],
                          thread_counts[t], why);
        }
    }
    gd_tensor_free(want);
    for (int i = 0; i < oc->n_in; i++)
        gd_tensor_free(in[i]);
}

START_TEST(test_cpu)
{
    check_case(&cases[_i], "cpu", NULL);
}
END_TEST

START_TEST(test_cpu64)
{
    check_case(&cases[_i], "cpu64", NULL);
}
END_TEST

/* The emulated formats round the inputs first; the product must not care. */
START_TEST(test_cpu_emulated)
{
    check_case(&cases[_i], "cpu", "bf16:conv+gemm");
}
END_TEST

/* A level the processor lacks is capped to what it has, never refused or faulting. */
START_TEST(test_unknown_level)
{
    struct gd_tensor *in[MAX_IN] = {NULL};
    make_inputs(&cases[0], in);
    struct gd_tensor *want = run_case(&cases[0], in, "cpu", "off", 1, NULL);
    struct gd_tensor *got = run_case(&cases[0], in, "cpu", "no-such-level", 2, NULL);
    char why[160];
    ck_assert_msg(same_bits(want, got, why, sizeof why), "%s", why);
    gd_tensor_free(want);
    gd_tensor_free(got);
    for (int i = 0; i < cases[0].n_in; i++)
        gd_tensor_free(in[i]);
}
END_TEST

int
main(void)
{
    Suite *s = suite_create("gemm_kernel");
    TCase *tc = tcase_create("order");
    tcase_set_timeout(tc, 120);
    tcase_add_loop_test(tc, test_cpu, 0, N_CASES);
    tcase_add_loop_test(tc, test_cpu64, 0, N_CASES);
    tcase_add_loop_test(tc, test_cpu_emulated, 0, N_CASES);
    tcase_add_test(tc, test_unknown_level);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_ENV);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
