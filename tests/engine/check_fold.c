/*
 * check_fold.c: the fold evaluator (engine/core/fold.c) on constants whose values or shapes
 * sit at int64's limits: a fold either computes the exact result (written out here from
 * ONNX's definitions: numpy's slicing, arange's length) or refuses with a code, never
 * overflowing. The ONNX loader's fold tests (check_onnx.c) cover the ordinary cases.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <check.h>

#include "gpudiff/graph.h"

/* An int64 tensor of the given shape and values (NULL: zeros). */
static struct gd_tensor *
i64(int ndim, const int64_t *shape, const int64_t *values)
{
    struct gd_err err = {0};
    struct gd_tensor *t = gd_tensor_new(GD_I64, ndim, shape, &err);
    ck_assert_msg(t != NULL, "gd_tensor_new: %s", err.msg);
    if (values != NULL)
        memcpy(t->data, values, gd_tensor_nbytes(t));
    return t;
}

/* A 1-D int64 tensor of n values. */
static struct gd_tensor *
list(int64_t n, const int64_t *values)
{
    return i64(1, &n, values);
}

/* A 0-D int64 tensor. */
static struct gd_tensor *
scalar(int64_t v)
{
    return i64(0, NULL, &v);
}

static void
add_constant(struct gd_graph *g, const char *name, struct gd_tensor *t)
{
    struct gd_err err = {0};
    int rc = gd_graph_add_constant(g, name, t, &err);
    ck_assert_msg(rc == 0, "constant %s: %s", name, err.msg);
}

/*
 * Adds fold op (all its inputs constants, so it is computed now) with at most one integer
 * attribute; returns its code. On success *out is the constant it made.
 */
static int
fold(struct gd_graph *g, const char *op, int n_in, const char *const *inputs, const char *attr,
     int64_t attr_value, const struct gd_tensor **out, struct gd_err *err)
{
    struct gd_attr a = {0};
    if (attr != NULL) {
        a.name = strdup(attr);
        a.type = GD_ATTR_INT;
        a.i = attr_value;
    }
    const char *outputs[] = {"y"};
    int rc = gd_graph_add_fold(g, "f", op, n_in, inputs, 1, outputs, attr ? 1 : 0, &a, err);
    if (rc != 0) {
        gd_attr_fini(&a); /* the attributes stay the caller's on failure */
        return rc;
    }
    int v = gd_graph_find_value(g, "y");
    ck_assert_int_ge(v, 0);
    *out = g->values[v].constant;
    ck_assert_ptr_nonnull(*out);
    return 0;
}

static struct gd_graph *
graph(void)
{
    struct gd_err err = {0};
    struct gd_graph *g = gd_graph_new("fold", &err);
    ck_assert_ptr_nonnull(g);
    return g;
}

/* Slice of [0, 1, 2, 3, 4] by one start, end and step: its values must be want[0 .. n). */
static void
expect_slice(int64_t start, int64_t end, int64_t step, int n, const int64_t *want)
{
    static const int64_t data[] = {0, 1, 2, 3, 4};
    int64_t axis = 0;
    struct gd_graph *g = graph();
    add_constant(g, "x", list(5, data));
    add_constant(g, "starts", list(1, &start));
    add_constant(g, "ends", list(1, &end));
    add_constant(g, "axes", list(1, &axis));
    add_constant(g, "steps", list(1, &step));
    const char *in[] = {"x", "starts", "ends", "axes", "steps"};
    const struct gd_tensor *y = NULL;
    struct gd_err err = {0};
    int rc = fold(g, "Slice", 5, in, NULL, 0, &y, &err);
    ck_assert_msg(rc == 0, "Slice %lld:%lld:%lld: %s", (long long)start, (long long)end,
                  (long long)step, err.msg);
    ck_assert_int_eq(y->ndim, 1);
    ck_assert_msg(y->shape[0] == n, "Slice %lld:%lld:%lld: %lld values, want %d", (long long)start,
                  (long long)end, (long long)step, (long long)y->shape[0], n);
    for (int i = 0; i < n; i++)
        ck_assert_int_eq(((const int64_t *)y->data)[i], want[i]);
    gd_graph_free(g);
}

/* numpy: a[1:5:2], a[4::-2] (end -6 is before the start), and steps of int64's extremes,
 * which take one element; a[4:-6:INT64_MIN] once computed -INT64_MIN. */
START_TEST(test_slice_steps)
{
    expect_slice(1, 5, 2, 2, (const int64_t[]){1, 3});
    expect_slice(4, -6, -2, 3, (const int64_t[]){4, 2, 0});
    expect_slice(0, INT64_MAX, INT64_MAX, 1, (const int64_t[]){0});
    expect_slice(2, INT64_MAX, INT64_MAX, 1, (const int64_t[]){2});
    expect_slice(4, -6, INT64_MIN, 1, (const int64_t[]){4});
    expect_slice(-1, INT64_MIN, -INT64_MAX, 1, (const int64_t[]){4});
    expect_slice(3, 1, INT64_MAX, 0, NULL);
}
END_TEST

/* The length shape inference gives a Slice layer of a float input of length 5. */
static int64_t
inferred_slice(int64_t start, int64_t end, int64_t step)
{
    int64_t axis = 0;
    struct gd_err err = {0};
    struct gd_graph *g = graph();
    struct gd_input_decl decl = {.dtype = GD_F32, .shape = {.ndim = 1, .dim = {5}}};
    ck_assert_int_eq(gd_graph_add_input(g, "x", &decl, &err), 0);
    add_constant(g, "starts", list(1, &start));
    add_constant(g, "ends", list(1, &end));
    add_constant(g, "axes", list(1, &axis));
    add_constant(g, "steps", list(1, &step));
    const char *in[] = {"x", "starts", "ends", "axes", "steps"}, *out[] = {"y"};
    ck_assert_int_eq(gd_graph_add_node(g, "s", "Slice", 5, in, 1, out, 0, NULL, &err), 0);
    ck_assert_int_eq(gd_graph_add_output(g, "y", &err), 0);
    ck_assert_msg(gd_graph_finalize(g, &err) == 0, "%s", err.msg);
    int64_t n = g->values[gd_graph_find_value(g, "y")].shape.dim[0];
    gd_graph_free(g);
    return n;
}

/*
 * One Slice rule for the folds and shape inference (engine/core/move.h), ONNX's reference
 * semantics: onnx.reference's op_slice is numpy's slicing. The values are Python's:
 * list(range(5))[start:end:step]. A negative step with a start below -dim selects nothing
 * there (shape inference took element 0, the spec's prose, while the folds took none).
 */
START_TEST(test_slice_rule)
{
    static const struct {
        int64_t start, end, step;
        int n;
        int64_t want[5];
    } cases[] = {
        {-10, -20, -1, 0, {0}},
        {-10, 3, -1, 0, {0}},
        {-6, -20, -2, 0, {0}},
        {10, -20, -1, 5, {4, 3, 2, 1, 0}},
        {10, -20, -2, 3, {4, 2, 0}},
        {2, -20, -1, 3, {2, 1, 0}},
        {-1, -6, -1, 5, {4, 3, 2, 1, 0}},
        {-10, 10, 1, 5, {0, 1, 2, 3, 4}},
        {3, 1, 1, 0, {0}},
        {-2, -9, -3, 2, {3, 0}},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        expect_slice(cases[i].start, cases[i].end, cases[i].step, cases[i].n, cases[i].want);
        int64_t n = inferred_slice(cases[i].start, cases[i].end, cases[i].step);
        ck_assert_msg(n == cases[i].n, "shape inference of %lld:%lld:%lld: %lld, Python's %d",
                      (long long)cases[i].start, (long long)cases[i].end, (long long)cases[i].step,
                      (long long)n, cases[i].n);
    }
}
END_TEST

/* Range(start, limit, delta) must fail with code (0: succeed with n values from start). */
static void
expect_range(int64_t start, int64_t limit, int64_t delta, int code, int64_t n)
{
    struct gd_graph *g = graph();
    add_constant(g, "start", scalar(start));
    add_constant(g, "limit", scalar(limit));
    add_constant(g, "delta", scalar(delta));
    const char *in[] = {"start", "limit", "delta"};
    const struct gd_tensor *y = NULL;
    struct gd_err err = {0};
    int rc = fold(g, "Range", 3, in, NULL, 0, &y, &err);
    ck_assert_msg(rc == code, "Range(%lld, %lld, %lld): got %s (%s), want %s", (long long)start,
                  (long long)limit, (long long)delta, gd_err_name(rc), err.msg, gd_err_name(code));
    if (code == 0) {
        ck_assert_int_eq(y->shape[0], n);
        for (int64_t i = 0; i < n; i++)
            ck_assert_int_eq(((const int64_t *)y->data)[i], start + i * delta);
    }
    gd_graph_free(g);
}

/* A span of INT64_MIN by a delta of -1 once divided INT64_MIN by -1 (SIGFPE on x86). */
START_TEST(test_range_limits)
{
    expect_range(0, INT64_MIN, -1, GD_ERANGE, 0);
    expect_range(-1, INT64_MIN, -1, GD_ENOTSUP, 0); /* 2^63 - 1 values: past the fold bound */
    expect_range(INT64_MAX, INT64_MIN, -1, GD_ERANGE, 0);
    expect_range(5, -1, -2, 0, 3); /* arange(5, -1, -2) = 5, 3, 1 */
    expect_range(INT64_MIN, INT64_MIN + 3, 1, 0, 3);
}
END_TEST

/* Two empty uint8 constants of 2^62 along axis 1: each fits, their concatenation's 2^63 does
 * not fit int64 (the sum once overflowed). */
START_TEST(test_concat_too_long)
{
    struct gd_err err = {0};
    int64_t shape[2] = {0, INT64_C(1) << 62};
    struct gd_graph *g = graph();
    for (int i = 0; i < 2; i++) {
        struct gd_tensor *t = gd_tensor_new(GD_U8, 2, shape, &err);
        ck_assert_msg(t != NULL, "gd_tensor_new: %s", err.msg);
        add_constant(g, i ? "b" : "a", t);
    }
    const char *in[] = {"a", "b"};
    const struct gd_tensor *y = NULL;
    int rc = fold(g, "Concat", 2, in, "axis", 1, &y, &err);
    ck_assert_msg(rc == GD_ESHAPE, "got %s (%s)", gd_err_name(rc), err.msg);
    ck_assert_msg(strstr(err.msg, "axis 1") != NULL, "message: %s", err.msg);
    gd_graph_free(g);
    /* and one of them alone is kept as it is */
    g = graph();
    add_constant(g, "a", gd_tensor_new(GD_U8, 2, shape, &err));
    rc = fold(g, "Concat", 1, in, "axis", 1, &y, &err);
    ck_assert_msg(rc == 0, "one input: %s", err.msg);
    ck_assert_int_eq(y->shape[1], shape[1]);
    gd_graph_free(g);
}
END_TEST

/* A variadic op's missing input ("" in ONNX, a name of one NUL byte from the fuzzer):
 * Concat, Min and Max read every input, so one missing is refused, not dereferenced. */
START_TEST(test_variadic_missing_input)
{
    static const char *const ops[] = {"Concat", "Min", "Max"};
    for (int k = 0; k < 3; k++) {
        struct gd_err err = {0};
        int64_t v = 7;
        struct gd_graph *g = graph();
        add_constant(g, "a", list(1, &v));
        const char *in[] = {"a", ""};
        const struct gd_tensor *y = NULL;
        int rc = fold(g, ops[k], 2, in, k == 0 ? "axis" : NULL, 0, &y, &err);
        ck_assert_msg(rc == GD_EMODEL, "%s: got %s (%s)", ops[k], gd_err_name(rc), err.msg);
        ck_assert_msg(strstr(err.msg, "input 1 is missing") != NULL, "%s: %s", ops[k],
                      err.msg);
        gd_graph_free(g);
    }
}
END_TEST

int
main(void)
{
    Suite *s = suite_create("fold");
    TCase *tc = tcase_create("limits");
    tcase_add_test(tc, test_slice_steps);
    tcase_add_test(tc, test_slice_rule);
    tcase_add_test(tc, test_range_limits);
    tcase_add_test(tc, test_concat_too_long);
    tcase_add_test(tc, test_variadic_missing_input);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
