/*
 * check_op_norm.c: the normalizations (engine/cpu/op_norm.c): BatchNormalization (inference
 * and training_mode), LRN, InstanceNormalization, LayerNormalization,
 * MeanVarianceNormalization, GroupNormalization.
 */
#include <math.h>
#include <stdlib.h>

#include <check.h>

#include "gpudiff/ops.h"
#include "op_fixture.h"
#include "tolerance.h"

/* clang-format off */
static const char *const bn_cases[] = {"rep", "default_epsilon", "rank2", "rank3", "cancel",
                                       NULL};
static const char *const bn_training_cases[] = {
    "training", "training_y_only", "training_rank2", "training_momentum_small", "is_test_0",
    NULL};
static const char *const ln_cases[] = {"rep", "axis1", "broadcast", "no_bias", "axis0", "wide",
                                       "offset", NULL};
static const char *const in_cases[] = {"rep", "epsilon", "conv1d", "conv3d", NULL};
static const char *const mvn_cases[] = {"rep", "spatial", "channels", "negative_axes", NULL};
static const char *const gn_cases[] = {"rep", "per_channel", "one_group", "group_per_channel",
                                       NULL};
static const char *const lrn_cases[] = {"rep", "default", "even_size", "wide_window", NULL};
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

/*
 * The statistics ops. docs/NUMERICS.md ("Normalizations") derives, for each output, a bound
 * |computed - exact| <= (gamma_n(u) + 2 k u) mag, with n the elements of a group (the case's
 * reduction_len: the mean's n - 1 additions and one division, the variance's subtraction,
 * square, n - 1 additions and division), k the op's ulps in ops.def (the rounding of the
 * normalizing steps: 4 for BatchNormalization, Instance-, Layer- and GroupNormalization, 5
 * for MeanVarianceNormalization, whose square root is not damped by a variance + eps; 3 for
 * LRN's pow), and mag the per-element magnitude the fixture writes (mag<k>.npy): the terms
 * the mean's and the variance's errors enter through, the cancellation in var + eps
 * (M1^2 / (var + eps)) and |y|. Plus 2^-53 |y| for the reference and the subnormal floor.
 */
static double
trait_bound(const struct of_case *c, int k, int64_t i, enum gd_dtype dtype, void *user)
{
    enum gd_op op;
    ck_assert_int_eq(gd_op_from_name(c->op, &op), 0);
    (void)user;
    int ulps = gd_op_info(op)->ulps;
    int64_t n = c->reduction_len;
    ck_assert_msg(c->mag[k] != NULL, "%s/%s has no mag%d.npy", c->group, c->name, k);
    double u = tol_unit_roundoff(dtype), mag = of_get(c->mag[k], i);
    return (tol_gamma(n, u) + 2 * ulps * u) * mag + TOL_REF_REL * fabs(of_get(c->want[k], i)) +
           (double)(n + ulps) * tol_denorm_min(dtype);
}

START_TEST(test_batch_norm_training)
{
    of_check_case("BatchNormalization", bn_training_cases[_i], trait_bound, NULL);
}
END_TEST

START_TEST(test_layer_norm)
{
    of_check_case("LayerNormalization", ln_cases[_i], trait_bound, NULL);
}
END_TEST

START_TEST(test_instance_norm)
{
    of_check_case("InstanceNormalization", in_cases[_i], trait_bound, NULL);
}
END_TEST

START_TEST(test_mvn)
{
    of_check_case("MeanVarianceNormalization", mvn_cases[_i], trait_bound, NULL);
}
END_TEST

START_TEST(test_group_norm)
{
    of_check_case("GroupNormalization", gn_cases[_i], trait_bound, NULL);
}
END_TEST

START_TEST(test_lrn)
{
    of_check_case("LRN", lrn_cases[_i], trait_bound, NULL);
}
END_TEST

START_TEST(test_listing)
{
    static const char *const bn_all[] = {"rep", "default_epsilon", "rank2", "rank3", "cancel",
                                         "training", "training_y_only", "training_rank2",
                                         "training_momentum_small", "is_test_0", NULL};
    of_check_listing("BatchNormalization", bn_all);
    of_check_listing("LayerNormalization", ln_cases);
    of_check_listing("InstanceNormalization", in_cases);
    of_check_listing("MeanVarianceNormalization", mvn_cases);
    of_check_listing("GroupNormalization", gn_cases);
    of_check_listing("LRN", lrn_cases);
}
END_TEST

int
main(void)
{
    Suite *s = suite_create("op_norm");
    TCase *tc = tcase_create("normalizations");
    tcase_set_timeout(tc, 60);
    tcase_add_loop_test(tc, test_batch_norm, 0, of_count(bn_cases));
    tcase_add_loop_test(tc, test_batch_norm_training, 0, of_count(bn_training_cases));
    tcase_add_loop_test(tc, test_layer_norm, 0, of_count(ln_cases));
    tcase_add_loop_test(tc, test_instance_norm, 0, of_count(in_cases));
    tcase_add_loop_test(tc, test_mvn, 0, of_count(mvn_cases));
    tcase_add_loop_test(tc, test_group_norm, 0, of_count(gn_cases));
    tcase_add_loop_test(tc, test_lrn, 0, of_count(lrn_cases));
    tcase_add_test(tc, test_listing);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_ENV);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
