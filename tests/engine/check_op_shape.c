/* check_op_shape.c: data movement ops (engine/cpu/op_shape.c): every result bitwise. */
#include <stdlib.h>

#include <check.h>

#include "op_fixture.h"

struct shape_op {
    const char *op;
    const char *const *cases;
};

/* clang-format off */
#define CASES(...) (const char *const[]){__VA_ARGS__, NULL}

/* These ops copy values: the result must equal numpy's, bit for bit, NaN and -0 included. */
static const struct shape_op shape_ops[] = {
    {"Concat", CASES("rep", "axis1", "axis_last", "axis_negative", "weight", "one_input")},
    {"Flatten", CASES("rep", "axis0", "axis_negative", "axis_rank", "axis2")},
    {"Reshape", CASES("rep", "zero", "minus_one", "zero_and_minus_one", "allowzero",
                      "allowzero_off", "scalar_out", "attr")},
    {"Transpose", CASES("rep", "perm", "perm4", "identity_perm")},
    {"Squeeze", CASES("rep", "all", "negative", "input")},
    {"Unsqueeze", CASES("rep", "several", "negative", "input")},
    {"Pad", CASES("rep", "value", "inputs", "reflect", "edge", "axes", "zero", "rank4")},
    {"Identity", CASES("rep", "edge")},
    {"Dropout", CASES("rep", "no_mask", "training_false")},
};
/* clang-format on */

#define N_OPS ((int)(sizeof shape_ops / sizeof shape_ops[0]))

static struct {
    int op, k;
} flat[256];
static int n_flat;

START_TEST(test_shape)
{
    const struct shape_op *s = &shape_ops[flat[_i].op];
    of_check_case(s->op, s->cases[flat[_i].k], NULL, NULL);
}
END_TEST

START_TEST(test_listing)
{
    for (int i = 0; i < N_OPS; i++)
        of_check_listing(shape_ops[i].op, shape_ops[i].cases);
}
END_TEST

int
main(void)
{
    for (int i = 0; i < N_OPS; i++)
        for (int k = 0; shape_ops[i].cases[k] != NULL; k++)
            flat[n_flat].op = i, flat[n_flat++].k = k;
    Suite *s = suite_create("op_shape");
    TCase *tc = tcase_create("shape");
    tcase_set_timeout(tc, 60);
    tcase_add_loop_test(tc, test_shape, 0, n_flat);
    tcase_add_test(tc, test_listing);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_ENV);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
