/* op_fixture.c: loading, running and comparing the op cases of tests/fixtures/ops/. */
#include <dirent.h>
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <check.h>
#include <jansson.h>

#include "gpudiff/io.h"
#include "op_fixture.h"
#include "op_harness.h"
#include "tolerance.h"

const char *
of_fixtures_dir(void)
{
    const char *dir = getenv("GD_TEST_FIXTURES");
    return dir != NULL && dir[0] != '\0' ? dir : GD_FIXTURES;
}

#define OF_PRINT_MAX 8

static int
case_path(char *out, size_t size, const char *group, const char *name, const char *file)
{
    int n = snprintf(out, size, "%s/ops/%s/%s%s%s", of_fixtures_dir(), group, name, file ? "/" : "",
                     file ? file : "");
    return n > 0 && (size_t)n < size ? 0 : -1;
}

static int
load_npy(const char *group, const char *name, const char *file, struct gd_tensor **out)
{
    char path[1024];
    struct gd_err err = {0};
    if (case_path(path, sizeof path, group, name, file) != 0)
        return -1;
    if (gd_npy_load(path, out, &err) != 0) {
        fprintf(stderr, "%s: %s\n", path, err.msg);
        return -1;
    }
    return 0;
}

void
of_case_fini(struct of_case *c)
{
    free(c->attrs_json);
    for (int i = 0; i < OF_MAX_IN; i++)
        gd_tensor_free(c->in[i]);
    for (int k = 0; k < OF_MAX_OUT; k++) {
        gd_tensor_free(c->want[k]);
        gd_tensor_free(c->mag[k]);
    }
    memset(c, 0, sizeof *c);
}

int
of_case_load(const char *group, const char *name, struct of_case *c)
{
    char path[1024], file[32];
    json_error_t jerr;
    memset(c, 0, sizeof *c);
    snprintf(c->group, sizeof c->group, "%s", group);
    snprintf(c->name, sizeof c->name, "%s", name);
    if (case_path(path, sizeof path, group, name, "case.json") != 0)
        return -1;
    json_t *meta = json_load_file(path, 0, &jerr);
    if (meta == NULL) {
        fprintf(stderr, "%s: %s\n", path, jerr.text);
        return -1;
    }
    int rc = -1;
    json_t *inputs = json_object_get(meta, "inputs"), *constants = json_object_get(meta, "const");
    json_t *op = json_object_get(meta, "op"), *emulate = json_object_get(meta, "emulate");
    if (!json_is_string(op) || !json_is_array(inputs) || json_array_size(inputs) > OF_MAX_IN ||
        !json_is_array(constants)) {
        fprintf(stderr, "%s: op, inputs or const missing or malformed\n", path);
        goto done;
    }
    snprintf(c->op, sizeof c->op, "%s", json_string_value(op));
    if (json_is_string(emulate))
        snprintf(c->emulate, sizeof c->emulate, "%s", json_string_value(emulate));
    json_t *attrs = json_object_get(meta, "attrs");
    c->attrs_json = json_dumps(attrs ? attrs : json_object(), JSON_REAL_PRECISION(17));
    c->n_in = (int)json_array_size(inputs);
    for (int i = 0; i < c->n_in; i++) {
        json_t *f = json_array_get(inputs, (size_t)i);
        if (json_is_string(f) && load_npy(group, name, json_string_value(f), &c->in[i]) != 0)
            goto done;
    }
    for (size_t i = 0; i < json_array_size(constants); i++)
        c->const_mask |= 1u << json_integer_value(json_array_get(constants, i));
    /* "dtypes": the dtype the model declares an input as, when its .npy cannot hold it */
    json_t *dtypes = json_object_get(meta, "dtypes");
    for (int i = 0; json_is_array(dtypes) && i < c->n_in; i++) {
        json_t *d = json_array_get(dtypes, (size_t)i);
        enum gd_dtype dt;
        struct gd_err err = {0};
        if (!json_is_string(d) || c->in[i] == NULL)
            continue;
        struct gd_tensor *cast = NULL;
        if (gd_dtype_from_name(json_string_value(d), &dt) != 0 ||
            (cast = gd_tensor_cast(c->in[i], dt, &err)) == NULL) {
            fprintf(stderr, "%s: input %d as %s: %s\n", path, i, json_string_value(d), err.msg);
            goto done;
        }
        gd_tensor_free(c->in[i]);
        c->in[i] = cast;
    }
    c->n_out = (int)json_integer_value(json_object_get(meta, "outputs"));
    c->reduction_len = json_integer_value(json_object_get(meta, "reduction_len"));
    if (c->n_out < 1 || c->n_out > OF_MAX_OUT) {
        fprintf(stderr, "%s: %d outputs\n", path, c->n_out);
        goto done;
    }
    for (int k = 0; k < c->n_out; k++) {
        snprintf(file, sizeof file, "out%d.npy", k);
        if (load_npy(group, name, file, &c->want[k]) != 0)
            goto done;
        snprintf(file, sizeof file, "mag%d.npy", k);
        if (case_path(path, sizeof path, group, name, file) == 0 && access(path, R_OK) == 0 &&
            load_npy(group, name, file, &c->mag[k]) != 0)
            goto done;
    }
    rc = 0;
done:
    json_decref(meta);
    if (rc != 0)
        of_case_fini(c);
    return rc;
}

static json_t *
attrs_of(const struct of_case *c)
{
    return json_loads(c->attrs_json, 0, NULL);
}

int64_t
of_attr_int(const struct of_case *c, const char *name, int64_t dflt)
{
    json_t *a = attrs_of(c);
    json_t *v = json_object_get(a, name);
    int64_t out = json_is_integer(v) ? json_integer_value(v) : dflt;
    json_decref(a);
    return out;
}

double
of_attr_float(const struct of_case *c, const char *name, double dflt)
{
    json_t *a = attrs_of(c);
    json_t *v = json_object_get(a, name);
    double out = json_is_number(v) ? json_number_value(v) : dflt;
    json_decref(a);
    return out;
}

int
of_attr_is(const struct of_case *c, const char *name, const char *value)
{
    json_t *a = attrs_of(c);
    json_t *v = json_object_get(a, name);
    int out = json_is_string(v) && strcmp(json_string_value(v), value) == 0;
    json_decref(a);
    return out;
}

int
of_case_run(const struct of_case *c, const char *backend, const struct gd_knobs *knobs,
            struct gd_tensor **out, struct gd_err *err)
{
    return oh_run(backend, c->op, c->n_in, c->in, c->const_mask, c->attrs_json, c->n_out, out,
                  knobs, err);
}

double
of_get(const struct gd_tensor *t, int64_t i)
{
    return gd_tensor_get_f64(t, i);
}

static int
same_shape(const struct gd_tensor *a, const struct gd_tensor *b)
{
    if (a->ndim != b->ndim)
        return 0;
    for (int i = 0; i < a->ndim; i++)
        if (a->shape[i] != b->shape[i])
            return 0;
    return 1;
}

/* Bitwise equality of two doubles, every NaN equal to every NaN. */
static int
same_bits(double a, double b)
{
    if (isnan(a) || isnan(b))
        return isnan(a) && isnan(b);
    return memcmp(&a, &b, sizeof a) == 0;
}

static int
expected_dtype_ok(const struct gd_tensor *want, const struct gd_tensor *got)
{
    if (want->dtype == GD_F64) /* float16 and bfloat16: half storage (cpu, cuda) */
        return gd_dtype_is_float(got->dtype);
    return want->dtype == got->dtype;
}

int64_t
of_compare(const struct of_case *c, const char *backend, int k, const struct gd_tensor *got,
           of_bound_fn bound, void *user)
{
    const struct gd_tensor *want = c->want[k];
    char a[96], b[96];
    if (got == NULL || !same_shape(want, got) || !expected_dtype_ok(want, got)) {
        fprintf(stderr, "%s/%s on %s: out%d is %s %s, expected %s %s\n", c->group, c->name, backend,
                k, got ? gd_dtype_name(got->dtype) : "missing",
                got ? gd_shape_format(got->ndim, got->shape, a, sizeof a) : "",
                gd_dtype_name(want->dtype), gd_shape_format(want->ndim, want->shape, b, sizeof b));
        return gd_tensor_numel(want) > 0 ? gd_tensor_numel(want) : 1;
    }
    int is_float = want->dtype == GD_F64;
    int digits = got->dtype == GD_F32 ? 9 : got->dtype == GD_F64 ? 17 : 5;
    int64_t bad = 0, n = gd_tensor_numel(want);
    for (int64_t i = 0; i < n; i++) {
        double w = gd_tensor_get_f64(want, i), g = gd_tensor_get_f64(got, i);
        double limit = 0, diff = fabs(g - w);
        int ok;
        if (!is_float) { /* integers and bools: the same value, every bit of it */
            size_t size = gd_dtype_size(want->dtype);
            ok = memcmp((const char *)want->data + (size_t)i * size,
                        (const char *)got->data + (size_t)i * size, size) == 0;
        } else if (bound == NULL) {
            ok = same_bits(w, g);
        } else if (isnan(w)) {
            ok = isnan(g);
        } else {
            double w_rounded = got->dtype == GD_F32    ? (double)(float)w
                               : got->dtype == GD_F16  ? gd_f16_to_f32(gd_f64_to_f16(w))
                               : got->dtype == GD_BF16 ? gd_bf16_to_f32(gd_f64_to_bf16(w))
                                                       : w;
            if (isinf(w_rounded)) {
                ok = g == w_rounded;
            } else {
                limit = bound(c, k, i, got->dtype, user);
                ok = isfinite(g) && diff <= limit;
            }
        }
        if (ok)
            continue;
        if (bad < OF_PRINT_MAX)
            fprintf(stderr,
                    "%s/%s on %s: out%d[%lld]: got %.*g, want %.17g, diff %.3g, bound %.3g%s\n",
                    c->group, c->name, backend, k, (long long)i, digits, g, w, diff, limit,
                    bound == NULL && is_float ? " (must be bitwise equal)" : "");
        bad++;
    }
    if (bad > OF_PRINT_MAX)
        fprintf(stderr, "%s/%s on %s: out%d: %lld of %lld elements failed\n", c->group, c->name,
                backend, k, (long long)bad, (long long)n);
    return bad;
}

int
of_backends(const char **out, int max)
{
    static char list[256];
    const char *want = getenv("GD_TEST_OP_BACKENDS");
    int n = 0;
    if (want == NULL || want[0] == '\0' || max < 2) {
        out[0] = "cpu";
        out[1] = "cpu64";
        return max < 2 ? 1 : 2;
    }
    snprintf(list, sizeof list, "%s", want);
    for (char *save = NULL, *tok = strtok_r(list, ",", &save); tok != NULL && n < max;
         tok = strtok_r(NULL, ",", &save))
        out[n++] = tok;
    return n;
}

void
of_check_case(const char *op, const char *name, of_bound_fn bound, void *user)
{
    const char *backends[8];
    int n_backends = of_backends(backends, 8);
    struct of_case c;
    ck_assert_msg(of_case_load(op, name, &c) == 0, "cannot load the case %s/%s", op, name);
    int64_t bad = 0;
    for (int b = 0; b < n_backends; b++) {
        struct gd_tensor *out[OF_MAX_OUT] = {0};
        struct gd_err err = {0};
        int rc = of_case_run(&c, backends[b], NULL, out, &err);
        if (rc != 0) {
            fprintf(stderr, "%s/%s on %s: %s (%s)\n", op, name, backends[b], err.msg,
                    gd_err_name(rc));
            bad++;
            continue;
        }
        for (int k = 0; k < c.n_out; k++) {
            bad += of_compare(&c, backends[b], k, out[k], bound, user);
            gd_tensor_free(out[k]);
        }
    }
    of_case_fini(&c);
    ck_assert_msg(bad == 0, "%s/%s: %lld elements outside the bound (printed above)", op, name,
                  (long long)bad);
}

int
of_count(const char *const *names)
{
    int n = 0;
    while (names[n] != NULL)
        n++;
    return n;
}

static int
cmp_name(const void *a, const void *b)
{
    return strcmp((const char *)a, (const char *)b);
}

int
of_case_names(const char *op, char (*names)[OF_NAME_MAX], int max)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/ops/%s", of_fixtures_dir(), op);
    DIR *d = opendir(path);
    if (d == NULL)
        return -1;
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.' || strlen(e->d_name) >= OF_NAME_MAX)
            continue;
        if (n == max) {
            n = -1;
            break;
        }
        snprintf(names[n++], OF_NAME_MAX, "%s", e->d_name);
    }
    closedir(d);
    if (n > 0)
        qsort(names, (size_t)n, sizeof names[0], cmp_name);
    return n;
}

void
of_check_listing(const char *op, const char *const *names)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/ops/%s", of_fixtures_dir(), op);
    DIR *d = opendir(path);
    ck_assert_msg(d != NULL, "no fixture folder %s", path);
    int found = 0, unknown = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.')
            continue;
        int listed = 0;
        for (int i = 0; names[i] != NULL && !listed; i++)
            listed = strcmp(names[i], e->d_name) == 0;
        if (listed) {
            found++;
        } else {
            fprintf(stderr, "%s: case %s is not in the test's list\n", path, e->d_name);
            unknown++;
        }
    }
    closedir(d);
    ck_assert_msg(unknown == 0 && found == of_count(names),
                  "%s: %d cases listed, %d found, %d not listed", path, of_count(names), found,
                  unknown);
}

double
of_bound_sum(const struct of_case *c, int k, int64_t i, enum gd_dtype dtype, void *extra_roundings)
{
    int64_t n = c->reduction_len + (extra_roundings ? *(const int *)extra_roundings : 0);
    ck_assert_msg(c->mag[k] != NULL, "%s/%s has no mag%d.npy", c->group, c->name, k);
    double mag = gd_tensor_get_f64(c->mag[k], i);
    return (tol_gamma(n, tol_unit_roundoff(dtype)) + TOL_REF_REL) * mag +
           (double)n * tol_denorm_min(dtype);
}

/* of_main's table, flattened into (op, case) pairs for Check's loop test. */
static const struct of_op *main_ops;
static int main_n_ops;
static struct {
    int op, k;
} main_flat[512];
static int main_n_flat;

START_TEST(test_case)
{
    const struct of_op *o = &main_ops[main_flat[_i].op];
    of_check_case(o->op, o->cases[main_flat[_i].k], o->bound, o->user);
}
END_TEST

START_TEST(test_listing)
{
    for (int i = 0; i < main_n_ops; i++)
        of_check_listing(main_ops[i].op, main_ops[i].cases);
}
END_TEST

int
of_main(const char *suite, const struct of_op *ops, int n_ops)
{
    main_ops = ops;
    main_n_ops = n_ops;
    main_n_flat = 0;
    for (int i = 0; i < n_ops; i++)
        for (int k = 0; ops[i].cases[k] != NULL; k++) {
            if (main_n_flat == (int)(sizeof main_flat / sizeof main_flat[0])) {
                fprintf(stderr, "%s: more than %d cases; raise main_flat's size\n", suite,
                        main_n_flat);
                return EXIT_FAILURE;
            }
            main_flat[main_n_flat].op = i;
            main_flat[main_n_flat++].k = k;
        }
    Suite *s = suite_create(suite);
    TCase *tc = tcase_create(suite);
    tcase_set_timeout(tc, 60);
    tcase_add_loop_test(tc, test_case, 0, main_n_flat);
    tcase_add_test(tc, test_listing);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_ENV);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
