/* check_op_gemm.c: Gemm and MatMul (engine/cpu/op_gemm.c) on cpu and cpu64. */
#include <stdlib.h>

#include <check.h>

#include "op_fixture.h"

/* clang-format off */
static const char *const gemm_cases[] = {
    "rep", "trans_a", "trans_b", "trans_ab", "c_1n", "c_m1", "c_mn", "c_scalar", "c_one",
    "c_input", "no_c", "alpha_beta", "beta_zero", "large_k", NULL};

static const char *const matmul_cases[] = {
    "rep", "batched", "broadcast", "broadcast_2d", "broadcast_a", "vec_mat", "mat_vec",
    "vec_vec", "batched_vec", "vec_batched", "large_k",
    /* cases_idx.py: 4-D batches, batch dims of 1 against N, operands computed at run time */
    "attention_4d", "batch1_against_n", "partial_broadcast", "vec_4d", "4d_vec", "weight_a",
    NULL};
/* clang-format on */

/*
 * Gemm: y = fl(fl(alpha * acc) + fl(beta * C)), acc the K-term dot product. Every product
 * a*b passes its own rounding and at most K - 1 additions, then alpha * acc and the final
 * addition: K + 2 roundings; beta * C passes two. So
 *   |computed - exact| <= gamma_{K+2}(u) (|alpha| sum|a b| + |beta C|)
 * (mag0.npy holds that sum), plus 2^-53 of it for the reference: of_bound_sum() with two
 * roundings after the K of the sum. alpha and beta are float32 values, exact in both
 * backends.
 */
static int gemm_after = 2;

START_TEST(test_gemm)
{
    of_check_case("Gemm", gemm_cases[_i], of_bound_sum, &gemm_after);
}
END_TEST

/* MatMul: the K-term dot product alone: gamma_K(u) sum|a b| (Higham eq. 3.5). */
START_TEST(test_matmul)
{
    of_check_case("MatMul", matmul_cases[_i], of_bound_sum, NULL);
}
END_TEST

START_TEST(test_listing)
{
    of_check_listing("Gemm", gemm_cases);
    of_check_listing("MatMul", matmul_cases);
}
END_TEST

int
main(void)
{
    Suite *s = suite_create("op_gemm");
    TCase *tc = tcase_create("gemm");
    tcase_set_timeout(tc, 60);
    tcase_add_loop_test(tc, test_gemm, 0, of_count(gemm_cases));
    tcase_add_loop_test(tc, test_matmul, 0, of_count(matmul_cases));
    tcase_add_test(tc, test_listing);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_ENV);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
