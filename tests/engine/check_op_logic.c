/* check_op_logic.c: And, Or, Xor, Not, BitShift, IsNaN, IsInf, Where, Cast and CastLike
 * (engine/cpu/op_logic.c) on cpu and cpu64. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include <check.h>

#include "op_fixture.h"
#include "tolerance.h"

/*
 * Cast to a float type. The fixtures hold the exact result of the cast: float16 and
 * bfloat16 results rounded to nearest even, a cast to float32 or float64 the value itself
 * (for an integer, the float64 nearest it). Float values live in the backend's compute dtype,
 * so cpu64 must give that value exactly and cpu the float32 nearest it: the bound is the
 * distance from the expected value to the float32 it rounds to (0 when it is one), which
 * admits exactly the correctly rounded float32, the fixtures holding no float32 ties.
 */
static double
bound_cast(const struct of_case *c, int k, int64_t i, enum gd_dtype dtype, void *user)
{
    double w = of_get(c->want[k], i);
    return dtype == GD_F32 ? fabs((double)(float)w - w) : 0;
}

/* clang-format off */
#define CASES(...) (const char *const[]){__VA_ARGS__, NULL}

/* Everything but the casts to float is exact: bool and integer outputs must match bit for
 * bit, IsNaN and IsInf give bool, Where copies its elements' bytes. */
static const struct of_op logic_ops[] = {
    {"IsNaN", CASES("rep", "edge"), NULL, NULL},
    {"IsInf", CASES("rep", "positive", "negative", "neither", "edge"), NULL, NULL},
    {"And", CASES("rep", "bcast3v1d", "bcast4v2d", "bcast_both"), NULL, NULL},
    {"Or", CASES("rep", "bcast3v1d", "bcast4v2d", "bcast_both"), NULL, NULL},
    {"Xor", CASES("rep", "bcast3v1d", "bcast4v2d", "bcast_both"), NULL, NULL},
    {"Not", CASES("rep", "3d", "scalar"), NULL, NULL},
    {"BitShift", CASES("rep", "left_uint8", "left_uint16", "left_uint32", "left_uint64",
                       "right_uint8", "right_uint16", "right_uint32", "right_uint64"), NULL,
     NULL},
    {"Where", CASES("rep", "broadcast", "int64", "int32_broadcast", "bool", "edge"), NULL, NULL},
    {"Cast", CASES("rep", "float32_to_float16", "float32_to_bfloat16",
                   "float32_to_bfloat16_random", "float32_to_float64", "float32_to_int8",
                   "float32_to_int16", "float32_to_int32", "float32_to_int64", "float32_to_uint8",
                   "float32_to_uint16", "float32_to_uint32", "float32_to_uint64",
                   "float32_to_bool", "float16_to_float32", "float64_to_float32",
                   "int64_to_float32", "int64_to_float16", "int64_to_bfloat16",
                   "uint64_to_float32", "int32_to_uint8", "int64_to_int32", "uint16_to_int16",
                   "int8_to_int64", "int8_to_uint32", "int32_to_bool", "bool_to_float32",
                   "bool_to_int64", "int32_to_float64"), bound_cast, NULL},
    {"CastLike", CASES("rep", "bfloat16", "float32_to_int32", "int64_to_float32",
                       "float16_to_float64"), bound_cast, NULL},
};
/* clang-format on */

/*
 * A bound compares magnitudes, so the casts' signs of zero are checked here: a zero keeps
 * its sign through float32 -> float16, -> bfloat16 and float16 -> float32.
 */
START_TEST(cast_keeps_the_sign_of_zero)
{
    static const char *const names[] = {"float32_to_float16", "float32_to_bfloat16",
                                        "float16_to_float32"};
    static const char *const backends[] = {"cpu", "cpu64"};
    int checked = 0;
    for (int n = 0; n < 3; n++) {
        struct of_case c;
        ck_assert_int_eq(of_case_load("Cast", names[n], &c), 0);
        for (int b = 0; b < 2; b++) {
            struct gd_tensor *out[OF_MAX_OUT] = {0};
            struct gd_err err = {0};
            ck_assert_msg(of_case_run(&c, backends[b], NULL, out, &err) == 0, "%s", err.msg);
            for (int64_t i = 0; i < gd_tensor_numel(c.want[0]); i++) {
                double w = of_get(c.want[0], i), g = of_get(out[0], i);
                if (w != 0)
                    continue;
                ck_assert_msg(g == 0 && signbit(g) == signbit(w),
                              "Cast/%s on %s: element %lld is %g, want %g", names[n], backends[b],
                              (long long)i, g, w);
                checked++;
            }
            gd_tensor_free(out[0]);
        }
        of_case_fini(&c);
    }
    ck_assert_int_ge(checked, 6);
}
END_TEST

int
main(void)
{
    int rc = of_main("op_logic", logic_ops, (int)(sizeof logic_ops / sizeof logic_ops[0]));
    Suite *s = suite_create("op_logic_signs");
    TCase *tc = tcase_create("signs");
    tcase_add_test(tc, cast_keeps_the_sign_of_zero);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_ENV);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return rc == EXIT_SUCCESS && failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
