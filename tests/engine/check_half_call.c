/*
 * check_half_call.c: float16 and bfloat16 storage (engine/core/half_call.c, the storage
 * dtype of engine/core/session.c): the cases of tests/fixtures/ops/half (made by
 * cases_half.py from the ONNX definitions on exact half inputs) on cpu and cpu64, or on the
 * backends GD_TEST_OP_BACKENDS names (cuda on the GPU machine).
 *
 * The bound (docs/NUMERICS.md, "Half storage"). cpu and cuda compute every op in float32
 * and round the result once to the half format: the float32 result y32 is within the op's
 * trait bound B32 = (gamma_r(2^-24) + 2 k 2^-24) mag + (r + k) denorm_min(float32) of the
 * exact y (the trait bound of the cross-backend test, which covers cpu's and cuda's float32
 * arithmetic), and rounding it to the half format (unit roundoff u_h: 2^-11, 2^-8) moves it
 * by at most u_h |y32| <= u_h (|y| + B32), or half the format's smallest subnormal below its
 * normal range:
 *
 *     |got - y| <= B32 + u_h (|y| + B32) + denorm_min(half) / 2      (+ 2^-53 |y|, the
 *                                                                     fixture's own rounding)
 *
 * An output the backend keeps in float32 (LayerNormalization's Mean and InvStdDev, a Cast to
 * float32) is held to B32, cpu64's float64 outputs to the float64 trait bound. Ops that only
 * move, select or cast ("exact" in case.json) must give the expected bits.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <check.h>
#include <jansson.h>

#include "gpudiff/session.h"
#include "../../engine/core/internal.h"
#include "op_fixture.h"
#include "tolerance.h"

#define MAX_CASES 256

static char names[MAX_CASES][OF_NAME_MAX];
static int n_names;

/*
 * user: an int, 1 when the run let cuBLASLt add split-K partial sums in the half format
 * (cuda's --reduced-reduction on, the default). A Gemm or MatMul's sum is then held to the
 * format's unit roundoff instead of float32's: float32 partial sums (gamma(2^-24)), each
 * rounded to the format (u_h) and added in it (gamma_s(u_h) for s parts), all within
 * gamma_r(u_h) of the terms' magnitude for r >= s terms; then the one rounding of the
 * output as below.
 */
static double
half_bound(const struct of_case *c, int k, int64_t i, enum gd_dtype dtype, void *user)
{
    int rr = user != NULL && *(const int *)user;
    enum gd_op op;
    if (gd_op_from_name(c->op, &op) != 0)
        return 0;
    double w = fabs(of_get(c->want[k], i));
    double mag = c->mag[k] != NULL ? of_get(c->mag[k], i) : w;
    if (dtype == GD_F64)
        return tol_op_bound(op, c->reduction_len, GD_F64, mag) + TOL_REF_REL * w;
    int half_sums = rr && (op == GD_OP_GEMM || op == GD_OP_MATMUL) &&
                    (dtype == GD_F16 || dtype == GD_BF16);
    double b32 = tol_op_bound(op, c->reduction_len, half_sums ? dtype : GD_F32, mag) +
                 TOL_REF_REL * w;
    if (dtype == GD_F32)
        return b32;
    return b32 + tol_unit_roundoff(dtype) * (w + b32) + 0.5 * tol_denorm_min(dtype);
}

/* The dtype backend `be` must give output k of the case: half storage keeps the format,
 * except where the op makes float32 (LayerNormalization's statistics) or a cast says. */
static enum gd_dtype
want_dtype(const struct of_case *c, const char *be, int k, enum gd_dtype fmt)
{
    const struct gd_tensor *w = c->want[k];
    if (w->dtype != GD_F64)
        return w->dtype; /* integers and bools keep their dtype */
    if (strcmp(be, "cpu64") == 0)
        return GD_F64;
    if (strcmp(c->op, "LayerNormalization") == 0 && k > 0)
        return GD_F32;
    if (strcmp(c->op, "Cast") == 0)
        return of_attr_int(c, "to", 0) == 1 ? GD_F32 : fmt;
    return fmt;
}

START_TEST(half_case)
{
    const char *name = names[_i];
    struct of_case c;
    ck_assert_msg(of_case_load("half", name, &c) == 0, "cannot load half/%s", name);
    enum gd_dtype fmt = strstr(name, "_bf16") != NULL ? GD_BF16 : GD_F16;
    char path[4096];
    snprintf(path, sizeof path, "%s/ops/half/%s/case.json", of_fixtures_dir(), name);
    json_t *meta = json_load_file(path, 0, NULL);
    ck_assert_msg(meta != NULL, "cannot read %s", path);
    int bitwise = json_is_true(json_object_get(meta, "exact"));
    json_decref(meta);
    const char *backends[8];
    int n_backends = of_backends(backends, 8);
    int64_t bad = 0;
    int gemm = strcmp(c.op, "Gemm") == 0 || strcmp(c.op, "MatMul") == 0;
    /* cuda's GEMMs twice: as by default (half split-K sums allowed) and with
     * reduced_reduction off, held to float32 sums */
    for (int run = 0; run < 2 * n_backends; run++) {
        int b = run / 2, strict = run % 2;
        int is_cuda = strcmp(backends[b], "cuda") == 0;
        if (strict && !(is_cuda && gemm))
            continue;
        struct gd_knobs knobs;
        gd_knobs_init(&knobs);
        if (strict)
            knobs.reduced_reduction = 0;
        int rr = is_cuda && !strict;
        struct gd_tensor *out[OF_MAX_OUT] = {0};
        struct gd_err err = {0};
        int rc = of_case_run(&c, backends[b], &knobs, out, &err);
        ck_assert_msg(rc == 0, "half/%s on %s: %s", name, backends[b], err.msg);
        if (strict)
            fprintf(stderr, "half/%s on cuda with reduced_reduction off:\n", name);
        for (int k = 0; k < c.n_out; k++) {
            enum gd_dtype want = want_dtype(&c, backends[b], k, fmt);
            if (out[k]->dtype != want) {
                fprintf(stderr, "half/%s on %s: out%d is %s, want %s\n", name, backends[b], k,
                        gd_dtype_name(out[k]->dtype), gd_dtype_name(want));
                bad++;
            }
            bad += of_compare(&c, backends[b], k, out[k], bitwise ? NULL : half_bound, &rr);
            gd_tensor_free(out[k]);
        }
    }
    of_case_fini(&c);
    ck_assert_msg(bad == 0, "half/%s: %lld elements outside the bound (printed above)", name,
                  (long long)bad);
}
END_TEST

/* Where values live: integers as they are, halves in 16 bits where the backend has half
 * storage, every other float in the compute dtype. */
START_TEST(storage_dtypes)
{
    const struct gd__backend *cpu = gd__backend_find("cpu"), *cpu64 = gd__backend_find("cpu64");
    ck_assert_ptr_nonnull(cpu);
    ck_assert_ptr_nonnull(cpu64);
    ck_assert_int_eq(gd__storage_dtype(cpu, GD_F16), GD_F16);
    ck_assert_int_eq(gd__storage_dtype(cpu, GD_BF16), GD_BF16);
    ck_assert_int_eq(gd__storage_dtype(cpu, GD_F64), GD_F32);
    ck_assert_int_eq(gd__storage_dtype(cpu, GD_I64), GD_I64);
    ck_assert_int_eq(gd__storage_dtype(cpu64, GD_F16), GD_F64);
    ck_assert_int_eq(gd__storage_dtype(cpu64, GD_BF16), GD_F64);
    ck_assert_int_eq(gd__storage_dtype(cpu64, GD_F32), GD_F64);
    ck_assert_int_eq(gd__storage_dtype(cpu64, GD_BOOL), GD_BOOL);
}
END_TEST

/* Every case folder made by cases_half.py is run above: the family list the generator
 * documents is all there. */
START_TEST(every_family)
{
    static const char *const ops[] = {"Tanh", "Erf", "Exp", "Sqrt", "Gelu", "Relu", "Neg",
                                      "Add", "Sub", "Mul", "Div", "Pow", "MatMul", "Gemm",
                                      "LayerNormalization", "Softmax", "ReduceSum",
                                      "ReduceMean", "Conv", "MaxPool", "AveragePool",
                                      "Transpose", "Reshape", "Concat", "Slice", "Gather",
                                      "Where", "Trilu", "Cast"};
    for (size_t o = 0; o < sizeof ops / sizeof ops[0]; o++) {
        int found[2] = {0, 0};
        for (int i = 0; i < n_names; i++) {
            struct of_case c;
            ck_assert_int_eq(of_case_load("half", names[i], &c), 0);
            if (strcmp(c.op, ops[o]) == 0)
                found[strstr(names[i], "_bf16") != NULL] = 1;
            of_case_fini(&c);
        }
        ck_assert_msg(found[0] && found[1], "no float16 and bfloat16 cases of %s", ops[o]);
    }
}
END_TEST

int
main(void)
{
    n_names = of_case_names("half", names, MAX_CASES);
    if (n_names <= 0) {
        fprintf(stderr, "no cases under tests/fixtures/ops/half\n");
        return 1;
    }
    Suite *s = suite_create("half_call");
    TCase *tc = tcase_create("cases");
    tcase_set_timeout(tc, 120);
    tcase_add_loop_test(tc, half_case, 0, n_names);
    tcase_add_test(tc, storage_dtypes);
    tcase_add_test(tc, every_family);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? 0 : 1;
}
