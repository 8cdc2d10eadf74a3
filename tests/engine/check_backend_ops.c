/* check_backend_ops.c: every op of ops.def on every backend built, against cpu64. */
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <check.h>

#include "gpudiff/ops.h"
#include "gpudiff/session.h"
#include "op_fixture.h"
#include "op_harness.h"
#include "tolerance.h"

#define REFERENCE    "cpu64"
#define MAX_BACKENDS 8

/*
 * What the test expects of a backend. A backend that needs a device is probed first and,
 * without one, skipped (the program then exits 77 once everything else passed); a backend
 * that may lack ops reports GD_ENOTSUP for them and is not failed for it (the CPU backends
 * must have them all). A backend missing from this table gets the strict defaults.
 */
struct backend_rule {
    const char *name;
    int needs_device;
    int may_lack_ops;
};

static const struct backend_rule rules[] = {
    {"cpu", 0, 0},
    {"cpu64", 0, 0},
    {"cuda", 1, 1},
};

static const char *backends[MAX_BACKENDS];
static int n_backends, n_skipped;

static struct backend_rule
rule_of(const char *name)
{
    for (size_t i = 0; i < sizeof rules / sizeof rules[0]; i++)
        if (strcmp(rules[i].name, name) == 0)
            return rules[i];
    struct backend_rule strict = {name, 0, 0};
    return strict;
}

/* Runs a tiny Identity on backend: GD_EDEVICE means the machine has no such device. */
static int
device_present(const char *backend)
{
    int64_t shape[1] = {4};
    struct gd_tensor *x = oh_random(1, shape, 3), *out[1] = {NULL};
    struct gd_err err = {0};
    int rc = oh_run(backend, "Identity", 1, &x, 0, NULL, 1, out, NULL, &err);
    gd_tensor_free(x);
    gd_tensor_free(out[0]);
    if (rc == GD_EDEVICE)
        fprintf(stderr, "backend %s skipped: %s\n", backend, err.msg);
    return rc != GD_EDEVICE;
}

/*
 * Element i of output k: |got - ref| <= bound(backend's dtype) + bound(float64), each
 * tol_op_bound(op, reduction_len, dtype, mag): both sides' errors from the exact value.
 * Exact ops (bound 0) must agree bitwise; a NaN only with a NaN; a reference value that
 * rounds to an infinity in the backend's dtype only with that infinity.
 */
static int64_t
compare(const char *backend, enum gd_op op, int k, const struct gd_tensor *got,
        const struct gd_tensor *ref, const struct gd_tensor *mag, int64_t reduction_len)
{
    char a[96], b[96];
    int float_out = gd_dtype_is_float(ref->dtype);
    if (got->ndim != ref->ndim || gd_tensor_numel(got) != gd_tensor_numel(ref) ||
        memcmp(got->shape, ref->shape, (size_t)ref->ndim * sizeof ref->shape[0]) != 0 ||
        (!float_out && got->dtype != ref->dtype)) {
        fprintf(stderr, "%s on %s: out%d is %s %s, %s gives %s %s\n", gd_op_name(op), backend, k,
                gd_dtype_name(got->dtype), gd_shape_format(got->ndim, got->shape, a, sizeof a),
                REFERENCE, gd_dtype_name(ref->dtype),
                gd_shape_format(ref->ndim, ref->shape, b, sizeof b));
        return 1;
    }
    int64_t bad = 0;
    for (int64_t i = 0; i < gd_tensor_numel(ref); i++) {
        double g = gd_tensor_get_f64(got, i), r = gd_tensor_get_f64(ref, i);
        double m = mag != NULL ? gd_tensor_get_f64(mag, i) : fabs(r);
        double bound = float_out ? tol_op_bound(op, reduction_len, got->dtype, m) +
                                       tol_op_bound(op, reduction_len, GD_F64, m)
                                 : 0;
        double r_rounded = got->dtype == GD_F32 ? (double)(float)r : r;
        int ok;
        if (isnan(r) || isnan(g))
            ok = isnan(r) && isnan(g);
        else if (isinf(r_rounded))
            ok = g == r_rounded;
        else if (bound == 0)
            ok = g == r && signbit(g) == signbit(r);
        else
            ok = fabs(g - r) <= bound;
        if (!ok && bad++ < 8)
            fprintf(stderr,
                    "%s on %s: out%d[%lld]: got %.9g, %s %.17g, diff %.3g, bound %.3g "
                    "(reduction_len %lld, mag %.3g)\n",
                    gd_op_name(op), backend, k, (long long)i, g, REFERENCE, r, fabs(g - r), bound,
                    (long long)reduction_len, m);
    }
    return bad;
}

/* Runs case `name` of op on backend and on the reference; returns the elements outside the
 * tolerance (a backend that may lack ops and does is not counted). */
static int64_t
check_case(const char *backend, enum gd_op op, const char *name)
{
    const char *op_name = gd_op_name(op);
    struct of_case c;
    /* Every op of ops.def needs its representative case: a new op cannot be forgotten. */
    ck_assert_msg(of_case_load(op_name, name, &c) == 0,
                  "op %s has no case tests/fixtures/ops/%s/%s (make_op_fixtures.py)", op_name,
                  op_name, name);
    struct gd_err err = {0};
    int64_t reduction_len = 0;
    int rc = oh_reduction_len(c.op, c.n_in, c.in, c.const_mask, c.attrs_json, c.n_out,
                              &reduction_len, &err);
    ck_assert_msg(rc == 0, "%s/%s: %s", op_name, name, err.msg);
    const struct gd_op_info *info = gd_op_info(op);
    for (int k = 0; k < c.n_out; k++)
        ck_assert_msg(c.mag[k] != NULL || (info->ulps == 0 && info->reduction == GD_RED_NONE) ||
                          !gd_dtype_is_float(c.want[k]->dtype),
                      "%s/%s has no mag%d.npy for its tolerance", op_name, name, k);
    struct gd_tensor *ref[OF_MAX_OUT] = {0}, *got[OF_MAX_OUT] = {0};
    rc = of_case_run(&c, REFERENCE, NULL, ref, &err);
    ck_assert_msg(rc == 0, "%s/%s on %s: %s", op_name, name, REFERENCE, err.msg);
    gd_err_clear(&err);
    rc = of_case_run(&c, backend, NULL, got, &err);
    int64_t bad = 0;
    if (rc == GD_ENOTSUP && rule_of(backend).may_lack_ops) {
        fprintf(stderr, "%s/%s on %s: not supported (%s)\n", op_name, name, backend, err.msg);
    } else {
        ck_assert_msg(rc == 0, "%s/%s on %s: %s (%s)", op_name, name, backend, err.msg,
                      gd_err_name(rc));
        for (int k = 0; k < c.n_out; k++) {
            int64_t b = compare(backend, op, k, got[k], ref[k], c.mag[k], reduction_len);
            if (b > 0)
                fprintf(stderr, "  (case %s/%s)\n", op_name, name);
            bad += b;
        }
    }
    for (int k = 0; k < c.n_out; k++) {
        gd_tensor_free(ref[k]);
        gd_tensor_free(got[k]);
    }
    of_case_fini(&c);
    return bad;
}

/*
 * GD_TEST_OPS (a comma list of op names) limits the test to those ops; GD_TEST_ALL_CASES=1
 * runs every case of each op's fixture folder instead of its "rep" case (the GPU scripts
 * use both, tests/bench/gpu_ops-elt.sh), but for the cases named *_outside_trait: inputs
 * where the trait formula is known not to hold (docs/NUMERICS.md says which and why), which
 * only their unit test checks.
 */
static int
in_list(const char *list, const char *name)
{
    size_t n = strlen(name);
    for (const char *p = list; *p != '\0';) {
        size_t len = strcspn(p, ",");
        if (len == n && strncmp(p, name, n) == 0)
            return 1;
        p += len;
        if (*p == ',')
            p++;
    }
    return 0;
}

START_TEST(test_op_on_backend)
{
    const char *backend = backends[_i / GD_OP_COUNT];
    enum gd_op op = (enum gd_op)(_i % GD_OP_COUNT);
    const char *ops = getenv("GD_TEST_OPS"), *all = getenv("GD_TEST_ALL_CASES");
    if (ops != NULL && ops[0] != '\0' && !in_list(ops, gd_op_name(op)))
        return;
    static char names[256][OF_NAME_MAX];
    int n = 1;
    snprintf(names[0], OF_NAME_MAX, "rep");
    if (all != NULL && strcmp(all, "1") == 0) {
        n = of_case_names(gd_op_name(op), names, 256);
        ck_assert_msg(n > 0, "%s: no fixture cases", gd_op_name(op));
    }
    int64_t bad = 0;
    for (int k = 0; k < n; k++)
        if (strstr(names[k], "_outside_trait") == NULL)
            bad += check_case(backend, op, names[k]);
    ck_assert_msg(bad == 0, "%s on %s: %lld elements outside the tolerance of %s", gd_op_name(op),
                  backend, (long long)bad, REFERENCE);
}
END_TEST

/* The reference itself is built and runs. */
START_TEST(test_reference_present)
{
    int found = 0;
    for (const char *const *n = gd_backend_names(); *n != NULL; n++)
        found |= strcmp(*n, REFERENCE) == 0;
    ck_assert_msg(found, "no backend %s in this build", REFERENCE);
}
END_TEST

/* GD_TEST_BACKENDS picks backends (a comma list); by default those that need no device, so
 * that the GPU run is its own test (tests/engine/backend_ops_cuda.sh) and skips alone. */
static int
selected(const char *name)
{
    const char *want = getenv("GD_TEST_BACKENDS");
    if (want == NULL || want[0] == '\0')
        return !rule_of(name).needs_device;
    size_t n = strlen(name);
    for (const char *p = want; *p != '\0';) {
        size_t len = strcspn(p, ",");
        if (len == n && strncmp(p, name, n) == 0)
            return 1;
        p += len;
        if (*p == ',')
            p++;
    }
    return 0;
}

int
main(void)
{
    for (const char *const *n = gd_backend_names(); *n != NULL; n++) {
        if (!selected(*n))
            continue;
        if (rule_of(*n).needs_device && !device_present(*n)) {
            n_skipped++;
            continue;
        }
        if (n_backends < MAX_BACKENDS)
            backends[n_backends++] = *n;
    }
    Suite *s = suite_create("backend_ops");
    TCase *tc = tcase_create("ops");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_reference_present);
    tcase_add_loop_test(tc, test_op_on_backend, 0, n_backends * GD_OP_COUNT);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_ENV);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    if (failed != 0)
        return EXIT_FAILURE;
    return n_skipped > 0 ? 77 : EXIT_SUCCESS;
}
