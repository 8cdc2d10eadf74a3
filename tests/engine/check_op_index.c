/*
 * check_op_index.c: the indexing ops (engine/cpu/op_index.c) on cpu and cpu64 against the
 * fixtures of cases_idx.py, and their run-time index errors (GD_TEST_OP_BACKENDS=cuda and
 * CK_FORK=no run it all on the GPU: tests/bench/gpu_ops-idx.sh).
 *
 * Gathers, Trilu, OneHot, EyeLike and TopK select or copy values: bitwise equal to numpy,
 * NaN and -0 included. Scatters with reduction none, max or min copy one value per element:
 * bitwise too. With add and mul an element takes the data value and at most n - 1 updates
 * (n = reduction_len: 1 + the indices' length along the axis, or 1 + the index tuples), one
 * rounding each, so |computed - exact| <= gamma_{n-1}(u) (|data| + sum |updates|) for add
 * (Higham eq. 3.5, mag0.npy holds that sum) and <= gamma_{n-1}(u) |y| for mul (n - 1
 * products, Higham lemma 3.1): of_bound_sum's gamma_n covers both.
 */
#include <stdlib.h>
#include <string.h>

#include <check.h>

#include "op_fixture.h"
#include "op_harness.h"

/* clang-format off */
#define CASES(...) (const char *const[]){__VA_ARGS__, NULL}

static const struct of_op index_ops[] = {
    {"Gather", CASES("rep", "axis1", "axis_last", "int32", "int32_const", "scalar_index",
                     "empty_indices", "embedding", "int64_data", "edge"), NULL, NULL},
    {"GatherElements", CASES("rep", "axis1", "axis_last_3d", "int32_const"), NULL, NULL},
    {"GatherND", CASES("rep", "elements", "slices", "batch1", "batch1_tuples", "int32_const"),
     NULL, NULL},
    {"ScatterElements", CASES("rep", "axis1", "duplicates_none", "max", "min", "int64_add",
                              "const_indices"), NULL, NULL},
    {"ScatterElements", CASES("add", "mul"), of_bound_sum, NULL},
    {"Scatter", CASES("rep", "axis1"), NULL, NULL},
    {"ScatterND", CASES("rep", "elements", "duplicates_none", "max", "min", "const_indices"),
     NULL, NULL},
    {"ScatterND", CASES("add", "mul"), of_bound_sum, NULL},
    {"Trilu", CASES("rep", "lower", "upper_k", "lower_k_neg", "k_runtime", "k_out_of_matrix",
                    "int64", "edge"), NULL, NULL},
    {"OneHot", CASES("rep", "axis0", "axis1_float_indices", "out_of_range", "int32_values",
                     "const_indices"), NULL, NULL},
    {"EyeLike", CASES("rep", "k_pos", "k_neg", "k_outside", "dtype_int64", "dtype_double",
                      "int32_input", "dtype_bool"), NULL, NULL},
    {"TopK", CASES("rep", "ties", "smallest_ties", "axis0", "axis1_3d", "nan", "nan_smallest",
                   "k_zero", "k_attribute"), NULL, NULL},
};
/* clang-format on */

#define N_OPS ((int)(sizeof index_ops / sizeof index_ops[0]))

static struct {
    int op, k;
} flat[256];
static int n_flat;

START_TEST(test_case)
{
    const struct of_op *o = &index_ops[flat[_i].op];
    of_check_case(o->op, o->cases[flat[_i].k], o->bound, o->user);
}
END_TEST

/* Each op's folder holds exactly the cases of its table entries together. */
START_TEST(test_listing)
{
    for (int i = 0; i < N_OPS; i++) {
        if (i > 0 && strcmp(index_ops[i].op, index_ops[i - 1].op) == 0)
            continue;
        const char *names[64];
        int n = 0;
        for (int j = i; j < N_OPS && strcmp(index_ops[j].op, index_ops[i].op) == 0; j++)
            for (int k = 0; index_ops[j].cases[k] != NULL && n < 63; k++)
                names[n++] = index_ops[j].cases[k];
        names[n] = NULL;
        of_check_listing(index_ops[i].op, names);
    }
}
END_TEST

/* ---- run-time index errors: computed indices out of range fail with GD_ERANGE ---- */

static struct gd_tensor *
ints(enum gd_dtype dtype, int ndim, const int64_t *shape, const int64_t *values)
{
    struct gd_tensor *t = gd_tensor_new(dtype, ndim, shape, NULL);
    for (int64_t i = 0; i < gd_tensor_numel(t); i++) {
        if (dtype == GD_I32)
            ((int32_t *)t->data)[i] = (int32_t)values[i];
        else
            ((int64_t *)t->data)[i] = values[i];
    }
    return t;
}

/*
 * Runs op on backend with data x (a graph input) and the given index input at position
 * slot (3 inputs for the scatters: updates last), expecting want; the message must name the
 * node and the bad index.
 */
static void
expect_error(const char *backend, const char *op, const char *attrs, struct gd_tensor **in,
             int n_in, unsigned const_mask, int want, const char *bad)
{
    struct gd_tensor *out[1] = {NULL};
    struct gd_err err = {0};
    int rc = oh_run(backend, op, n_in, in, const_mask, attrs, 1, out, NULL, &err);
    ck_assert_msg(rc == want, "%s on %s: got %s (%s), want %s", op, backend, gd_err_name(rc),
                  err.msg, gd_err_name(want));
    ck_assert_msg(strstr(err.msg, "node node") != NULL, "%s: the message does not name the "
                  "node: %s", op, err.msg);
    ck_assert_msg(strstr(err.msg, bad) != NULL, "%s: the message does not name %s: %s", op,
                  bad, err.msg);
    gd_tensor_free(out[0]);
}

/* The backends of of_backends(), one per loop iteration. */
static const char *
backend_of(int i)
{
    const char *names[8];
    int n = of_backends(names, 8);
    return i < n ? names[i] : NULL;
}

START_TEST(test_gather_out_of_range)
{
    const char *be = backend_of(_i);
    int64_t xs[2] = {4, 3}, is[1] = {3};
    int64_t bad_hi[3] = {0, 4, 1}, bad_lo[3] = {-5, 0, 1};
    struct gd_tensor *in[2] = {oh_random(2, xs, 1), ints(GD_I64, 1, is, bad_hi)};
    /* computed indices: checked when the op runs */
    expect_error(be, "Gather", NULL, in, 2, 0, GD_ERANGE, "index 4");
    /* indices that are a weight: refused at load */
    expect_error(be, "Gather", NULL, in, 2, 2u, GD_ERANGE, "index 4");
    gd_tensor_free(in[1]);
    in[1] = ints(GD_I32, 1, is, bad_lo);
    expect_error(be, "Gather", NULL, in, 2, 0, GD_ERANGE, "index -5");
    gd_tensor_free(in[1]);
    int64_t along1[3] = {2, -3, 3};
    in[1] = ints(GD_I64, 1, is, along1);
    expect_error(be, "Gather", "{\"axis\": 1}", in, 2, 0, GD_ERANGE, "index 3");
    gd_tensor_free(in[0]);
    gd_tensor_free(in[1]);
}
END_TEST

START_TEST(test_gather_elements_nd_out_of_range)
{
    const char *be = backend_of(_i);
    int64_t xs[2] = {2, 3}, is[2] = {2, 2}, ndis[2] = {1, 2};
    int64_t ge[4] = {0, 1, 2, 0}, nd[2] = {1, 3};
    struct gd_tensor *in[2] = {oh_random(2, xs, 2), ints(GD_I64, 2, is, ge)};
    expect_error(be, "GatherElements", NULL, in, 2, 0, GD_ERANGE, "index 2");
    gd_tensor_free(in[1]);
    in[1] = ints(GD_I64, 2, ndis, nd);
    expect_error(be, "GatherND", NULL, in, 2, 0, GD_ERANGE, "index 3");
    expect_error(be, "GatherND", NULL, in, 2, 2u, GD_ERANGE, "index 3");
    gd_tensor_free(in[0]);
    gd_tensor_free(in[1]);
}
END_TEST

START_TEST(test_scatter_out_of_range)
{
    const char *be = backend_of(_i);
    int64_t xs[2] = {3, 2}, is[2] = {1, 2}, nds[2] = {2, 1};
    int64_t se[2] = {0, -4}, nd[2] = {1, 3};
    struct gd_tensor *in[3] = {oh_random(2, xs, 3), ints(GD_I64, 2, is, se), oh_random(2, is, 4)};
    expect_error(be, "ScatterElements", NULL, in, 3, 0, GD_ERANGE, "index -4");
    expect_error(be, "ScatterElements", "{\"reduction\": \"add\"}", in, 3, 2u, GD_ERANGE,
                 "index -4");
    gd_tensor_free(in[1]);
    gd_tensor_free(in[2]);
    int64_t us[2] = {2, 2};
    in[1] = ints(GD_I32, 2, nds, nd);
    in[2] = oh_random(2, us, 5);
    expect_error(be, "ScatterND", NULL, in, 3, 0, GD_ERANGE, "index 3");
    for (int i = 0; i < 3; i++)
        gd_tensor_free(in[i]);
}
END_TEST

int
main(void)
{
    n_flat = 0;
    for (int i = 0; i < N_OPS; i++)
        for (int k = 0; index_ops[i].cases[k] != NULL; k++) {
            flat[n_flat].op = i;
            flat[n_flat++].k = k;
        }
    Suite *s = suite_create("op_index");
    TCase *tc = tcase_create("index");
    tcase_set_timeout(tc, 60);
    tcase_add_loop_test(tc, test_case, 0, n_flat);
    tcase_add_test(tc, test_listing);
    const char *names[8];
    int n_backends = of_backends(names, 8);
    tcase_add_loop_test(tc, test_gather_out_of_range, 0, n_backends);
    tcase_add_loop_test(tc, test_gather_elements_nd_out_of_range, 0, n_backends);
    tcase_add_loop_test(tc, test_scatter_out_of_range, 0, n_backends);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_ENV);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
