/* check_ops.c: the op list's traits and each backend's coverage (engine/core/ops.c). */
#include <string.h>

#include <check.h>

#include "gpudiff/ops.h"
#include "gpudiff/session.h"

START_TEST(names_round_trip)
{
    for (int i = 0; i < GD_OP_COUNT; i++) {
        enum gd_op op;
        const char *name = gd_op_name((enum gd_op)i);
        ck_assert_int_eq(gd_op_from_name(name, &op), 0);
        ck_assert_msg((int)op == i, "%s maps to %d, not %d", name, (int)op, i);
    }
    enum gd_op op;
    ck_assert_int_eq(gd_op_from_name("NoSuchOp", &op), GD_ENOENT);
    ck_assert_ptr_null(gd_op_info(GD_OP_COUNT));
    ck_assert_str_eq(gd_op_name(GD_OP_COUNT), "?");
}
END_TEST

/* Ill-conditioned: the ops whose derivative is unbounded near a point of their domain. */
START_TEST(ill_conditioned_ops)
{
    static const char *const ill[] = {"Div", "Pow", "Sqrt", "Log"};
    static const char *const well[] = {"Add", "Mul", "Relu", "Conv", "Floor", "Exp"};
    for (size_t i = 0; i < sizeof ill / sizeof ill[0]; i++) {
        enum gd_op op;
        ck_assert_int_eq(gd_op_from_name(ill[i], &op), 0);
        ck_assert_msg(gd_op_info(op)->ill_conditioned, "%s should be ill-conditioned", ill[i]);
    }
    for (size_t i = 0; i < sizeof well / sizeof well[0]; i++) {
        enum gd_op op;
        ck_assert_int_eq(gd_op_from_name(well[i], &op), 0);
        ck_assert_msg(!gd_op_info(op)->ill_conditioned, "%s is not ill-conditioned", well[i]);
    }
}
END_TEST

/* The CPU backends have every op; a built cuda backend has exactly those ops.def marks. */
START_TEST(backend_coverage)
{
    for (int i = 0; i < GD_OP_COUNT; i++) {
        ck_assert_int_eq(gd_backend_has_op("cpu", (enum gd_op)i), 1);
        ck_assert_int_eq(gd_backend_has_op("cpu64", (enum gd_op)i), 1);
    }
    int cuda_built = 0;
    for (const char *const *b = gd_backend_names(); *b != NULL; b++)
        cuda_built |= strcmp(*b, "cuda") == 0;
    for (int i = 0; i < GD_OP_COUNT; i++) {
        int has = gd_backend_has_op("cuda", (enum gd_op)i);
        if (cuda_built)
            ck_assert_msg(has == gd_op_info((enum gd_op)i)->cuda, "cuda and %s: %d",
                          gd_op_name((enum gd_op)i), has);
        else
            ck_assert_int_eq(has, GD_ENOENT);
    }
    ck_assert_int_eq(gd_backend_has_op("nosuch", GD_OP_ADD), GD_ENOENT);
    ck_assert_int_eq(gd_backend_has_op("cpu", GD_OP_COUNT), 0);
}
END_TEST

int
main(void)
{
    Suite *s = suite_create("ops");
    TCase *tc = tcase_create("ops");
    tcase_add_test(tc, names_round_trip);
    tcase_add_test(tc, ill_conditioned_ops);
    tcase_add_test(tc, backend_coverage);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? 0 : 1;
}
