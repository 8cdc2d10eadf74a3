/* check_backend_ops.c: every op of ops.def on every backend built, against cpu64. */
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <check.h>

#include "gpudiff/ops.h"
#include "gpudiff/run.h"
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

/* 1 when name is in the comma list `list` (NULL or empty: every name). */
static int
listed(const char *list, const char *name)
{
    if (list == NULL || list[0] == '\0')
        return 1;
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

/* Runs one case of op on backend and on the reference; returns the elements out of bound. */
static int64_t
check_case(const char *backend, enum gd_op op, const char *case_name)
{
    const char *name = gd_op_name(op);
    struct of_case c;
    ck_assert_msg(of_case_load(name, case_name, &c) == 0,
                  "op %s has no case tests/fixtures/ops/%s/%s (make_op_fixtures.py)", name, name,
                  case_name);
    struct gd_err err = {0};
    int64_t reduction_len = 0;
    int rc = oh_reduction_len(c.op, c.n_in, c.in, c.const_mask, c.attrs_json, c.n_out,
                              &reduction_len, &err);
    ck_assert_msg(rc == 0, "%s/%s: %s", name, case_name, err.msg);
    const struct gd_op_info *info = gd_op_info(op);
    for (int k = 0; k < c.n_out; k++)
        ck_assert_msg(c.mag[k] != NULL || (info->ulps == 0 && info->reduction == GD_RED_NONE) ||
                          !gd_dtype_is_float(c.want[k]->dtype),
                      "%s/%s has no mag%d.npy for its tolerance", name, case_name, k);
    struct gd_tensor *ref[OF_MAX_OUT] = {0}, *got[OF_MAX_OUT] = {0};
    rc = of_case_run(&c, REFERENCE, NULL, ref, &err);
    ck_assert_msg(rc == 0, "%s/%s on %s: %s", name, case_name, REFERENCE, err.msg);
    gd_err_clear(&err);
    rc = of_case_run(&c, backend, NULL, got, &err);
    int64_t bad = 0;
    if (rc == GD_ENOTSUP && rule_of(backend).may_lack_ops) {
        fprintf(stderr, "%s/%s on %s: not supported (%s)\n", name, case_name, backend, err.msg);
    } else {
        ck_assert_msg(rc == 0, "%s/%s on %s: %s (%s)", name, case_name, backend, err.msg,
                      gd_err_name(rc));
        for (int k = 0; k < c.n_out; k++)
            bad += compare(backend, op, k, got[k], ref[k], c.mag[k], reduction_len);
    }
    for (int k = 0; k < c.n_out; k++) {
        gd_tensor_free(ref[k]);
        gd_tensor_free(got[k]);
    }
    of_case_fini(&c);
    if (bad != 0)
        fprintf(stderr, "%s/%s on %s: %lld elements outside the tolerance\n", name, case_name,
                backend, (long long)bad);
    return bad;
}

/*
 * Every op's `rep` case; with GD_TEST_CASES=all every case of its fixture folder (for the
 * GPU machine's run of the ops GD_TEST_OPS lists, a comma list; default every op).
 */
START_TEST(test_op_on_backend)
{
    const char *backend = backends[_i / GD_OP_COUNT];
    enum gd_op op = (enum gd_op)(_i % GD_OP_COUNT);
    const char *name = gd_op_name(op);
    const char *all = getenv("GD_TEST_CASES");
    if (!listed(getenv("GD_TEST_OPS"), name))
        return;
    int64_t bad = 0;
    int n_cases = 0;
    if (all != NULL && strcmp(all, "all") == 0) {
        const char *dir = getenv("GD_TEST_FIXTURES");
        char path[1024];
        snprintf(path, sizeof path, "%s/ops/%s", dir != NULL && dir[0] ? dir : GD_FIXTURES, name);
        DIR *d = opendir(path);
        ck_assert_msg(d != NULL, "no fixture folder %s", path);
        struct dirent *e;
        while ((e = readdir(d)) != NULL) {
            if (e->d_name[0] == '.')
                continue;
            bad += check_case(backend, op, e->d_name);
            n_cases++;
        }
        closedir(d);
    } else {
        bad = check_case(backend, op, "rep");
        n_cases = 1;
    }
    ck_assert_msg(bad == 0, "%s on %s: %lld elements outside the tolerance of %s (%d cases)", name,
                  backend, (long long)bad, REFERENCE, n_cases);
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
