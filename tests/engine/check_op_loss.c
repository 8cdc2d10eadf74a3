/*
 * check_op_loss.c: NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss
 * (engine/cpu/op_loss.c) on cpu and cpu64 against cases_idx.py's exact values, and their
 * target errors (on the GPU too with GD_TEST_OP_BACKENDS=cuda and CK_FORK=no).
 *
 * The bound (docs/NUMERICS.md, "Losses") is the ops' trait bound,
 *   (gamma_r(u) + 2 k u) mag + (r + k) denorm_min,  r = reduction_len, k = ulps of ops.def,
 * plus 2^-53 mag for the reference, with mag0.npy (and mag1.npy for the log-probabilities)
 * from the derivation: r counts the M loss terms summed (1 for reduction none) and, for
 * SoftmaxCrossEntropyLoss, the C classes of the log-softmax.
 */
#include <stdlib.h>
#include <string.h>

#include <check.h>

#include "gpudiff/ops.h"
#include "op_fixture.h"
#include "op_harness.h"
#include "tolerance.h"

static double
loss_bound(const struct of_case *c, int k, int64_t i, enum gd_dtype dtype, void *user)
{
    enum gd_op op;
    ck_assert_int_eq(gd_op_from_name(c->op, &op), 0);
    ck_assert_msg(c->mag[k] != NULL, "%s/%s has no mag%d.npy", c->group, c->name, k);
    double mag = gd_tensor_get_f64(c->mag[k], i);
    return tol_op_bound(op, c->reduction_len, dtype, mag) + TOL_REF_REL * mag;
}

/* clang-format off */
#define CASES(...) (const char *const[]){__VA_ARGS__, NULL}
#define COMMON "rep", "mean", "sum_weight", "mean_weight_ii", "mean_ii_negative", "none_d1d2", \
    "sum_high_ii", "const_targets", "all_ignored", "mean_many"

static const struct of_op loss_ops[] = {
    {"NegativeLogLikelihoodLoss", CASES(COMMON), loss_bound, NULL},
    {"SoftmaxCrossEntropyLoss", CASES(COMMON, "log_prob", "log_prob_none_weight", "wide_rows"),
     loss_bound, NULL},
};
/* clang-format on */

static struct gd_tensor *
targets(enum gd_dtype dtype, int64_t n, const int64_t *values)
{
    int64_t shape[1] = {n};
    struct gd_tensor *t = gd_tensor_new(dtype, 1, shape, NULL);
    for (int64_t i = 0; i < n; i++) {
        if (dtype == GD_I32)
            ((int32_t *)t->data)[i] = (int32_t)values[i];
        else
            ((int64_t *)t->data)[i] = values[i];
    }
    return t;
}

/* A target that is neither a class nor the ignore_index fails with GD_ERANGE, naming the
 * node and the target: when computed, as the op runs; as a weight, at load. */
START_TEST(test_target_out_of_range)
{
    static const char *const ops[] = {"NegativeLogLikelihoodLoss", "SoftmaxCrossEntropyLoss"};
    const char *backends[8];
    int n_backends = of_backends(backends, 8);
    int64_t xs[2] = {3, 4}, bad[3] = {1, 4, 0}, negative[3] = {-1, 0, 2};
    for (int o = 0; o < 2; o++) {
        for (int b = 0; b < n_backends; b++) {
            for (unsigned mask = 0; mask <= 2; mask += 2) {
                struct gd_tensor *in[2] = {oh_random(2, xs, 9), targets(GD_I64, 3, bad)};
                struct gd_tensor *out[1] = {NULL};
                struct gd_err err = {0};
                int rc = oh_run(backends[b], ops[o], 2, in, mask, NULL, 1, out, NULL, &err);
                ck_assert_msg(rc == GD_ERANGE, "%s on %s: got %s (%s)", ops[o], backends[b],
                              gd_err_name(rc), err.msg);
                ck_assert_msg(strstr(err.msg, "node node") && strstr(err.msg, "target 4"),
                              "%s: %s", ops[o], err.msg);
                gd_tensor_free(in[1]);
                /* -1 is a class of no one unless it is the ignore_index */
                in[1] = targets(GD_I32, 3, negative);
                gd_err_clear(&err);
                rc = oh_run(backends[b], ops[o], 2, in, mask, NULL, 1, out, NULL, &err);
                ck_assert_msg(rc == GD_ERANGE, "%s: -1 got %s", ops[o], gd_err_name(rc));
                rc = oh_run(backends[b], ops[o], 2, in, mask, "{\"ignore_index\": -1}", 1, out,
                            NULL, &err);
                ck_assert_msg(rc == 0, "%s with ignore_index -1: %s", ops[o], err.msg);
                gd_tensor_free(out[0]);
                gd_tensor_free(in[0]);
                gd_tensor_free(in[1]);
            }
        }
    }
}
END_TEST

int
main(void)
{
    /* of_main's loop over the table, plus the error test */
    Suite *s = suite_create("op_loss_errors");
    TCase *tc = tcase_create("errors");
    tcase_add_test(tc, test_target_out_of_range);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_ENV);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    int rc = of_main("op_loss", loss_ops, (int)(sizeof loss_ops / sizeof loss_ops[0]));
    return failed == 0 ? rc : EXIT_FAILURE;
}
