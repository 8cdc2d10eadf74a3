/* check_op_norm.c: BatchNormalization in inference mode (engine/cpu/op_norm.c). */
#include <math.h>
#include <stdlib.h>

#include <check.h>

#include "op_fixture.h"
#include "tolerance.h"

/* clang-format off */
static const char *const bn_cases[] = {"rep", "default_epsilon", "rank2", "rank3", "cancel",
                                       NULL};
/* clang-format on */

/*
 * The op folds per channel: a = scale / sqrt(var + eps), b = B - mean * a, y = x * a + b.
 * Relative errors: var + eps (u, halved by the square root), sqrt (u), the division (u):
 * a carries at most 2.5u. Then m * a (u) and B - m a (u) for b; x * a (u) and + b (u):
 *   y' - y = x a (e_a + d1 + d2) - m a (e_a + d3 + d4 + d2) + B (d4 + d2) + O(u^2)
 *   |y' - y| <= 4.5u |x a| + 5.5u |m a| + 2u |B| <= 6u (|x a| + |m a| + |B|)
 * with 0.5u to spare for the second-order terms, plus 2^-53 |y| for the reference. a is
 * computed here in double from the inputs; eps is the attribute, or ONNX's default 1e-5 as
 * the float32 an ONNX float attribute holds.
 */
static double
bn_bound(const struct of_case *c, int k, int64_t i, enum gd_dtype dtype, void *user)
{
    const struct gd_tensor *x = c->in[0];
    int64_t channels = x->shape[1], inner = 1;
    for (int d = 2; d < x->ndim; d++)
        inner *= x->shape[d];
    int64_t ch = (i / inner) % channels;
    double eps = of_attr_float(c, "epsilon", (double)1e-5f);
    double a = of_get(c->in[1], ch) / sqrt(of_get(c->in[4], ch) + eps);
    double mag =
        fabs(of_get(x, i) * a) + fabs(of_get(c->in[3], ch) * a) + fabs(of_get(c->in[2], ch));
    double want = fabs(of_get(c->want[k], i));
    return 6 * tol_unit_roundoff(dtype) * mag + TOL_REF_REL * want + 4 * tol_denorm_min(dtype);
}

START_TEST(test_batch_norm)
{
    of_check_case("BatchNormalization", bn_cases[_i], bn_bound, NULL);
}
END_TEST

START_TEST(test_listing)
{
    of_check_listing("BatchNormalization", bn_cases);
}
END_TEST

int
main(void)
{
    Suite *s = suite_create("op_norm");
    TCase *tc = tcase_create("BatchNormalization");
    tcase_set_timeout(tc, 60);
    tcase_add_loop_test(tc, test_batch_norm, 0, of_count(bn_cases));
    tcase_add_test(tc, test_listing);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_ENV);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
