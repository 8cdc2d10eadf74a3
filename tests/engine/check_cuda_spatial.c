/*
 * check_cuda_spatial.c: what docs/CUDA_KERNELS.md promises of the cuda backend's pools,
 * Resize and normalizations, on every fixture case (not only the `rep` one that
 * check_backend_ops runs by default):
 *   - MaxPool (with its Indices), AveragePool, GlobalMaxPool, Resize and Upsample give the
 *     CPU's bits (`cpu`, float32), NaN as NaN;
 *   - the tree-reduced normalizations give the same bits on two runs;
 *   - Conv and ConvTranspose in 3-D (and every other Conv case) stay within the trait bound
 *     of cpu64 with each algorithm choice (heuristic, deterministic, autotune), TF32 off;
 *     the algorithm cuDNN ran is printed per case.
 * Exits 77 without a GPU or a cuda backend.
 */
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpudiff/ops.h"
#include "gpudiff/session.h"
#include "op_fixture.h"
#include "op_harness.h"
#include "tolerance.h"

static int failures;

static const char *
fixtures(void)
{
    const char *d = getenv("GD_TEST_FIXTURES");
    return d != NULL && d[0] != '\0' ? d : GD_FIXTURES;
}

/* Runs the case on backend with knobs; exits 77 when there is no GPU. */
static int
run(const struct of_case *c, const char *backend, const struct gd_knobs *k,
    struct gd_tensor **out)
{
    struct gd_err err = {0};
    int rc = of_case_run(c, backend, k, out, &err);
    if (rc == GD_EDEVICE || (rc == GD_ENOENT && strcmp(backend, "cuda") == 0)) {
        printf("SKIP: %s\n", err.msg);
        exit(77);
    }
    if (rc != 0) {
        fprintf(stderr, "FAIL: %s/%s on %s: %s\n", c->group, c->name, backend, err.msg);
        failures++;
    }
    return rc;
}

static int
same(const struct gd_tensor *a, const struct gd_tensor *b)
{
    if (a->dtype != b->dtype || a->ndim != b->ndim ||
        gd_tensor_numel(a) != gd_tensor_numel(b))
        return 0;
    for (int64_t i = 0; i < gd_tensor_numel(a); i++) {
        if (a->dtype == GD_I64) {
            if (((const int64_t *)a->data)[i] != ((const int64_t *)b->data)[i])
                return 0;
            continue;
        }
        float x = ((const float *)a->data)[i], y = ((const float *)b->data)[i];
        if (isnan(x) || isnan(y) ? !(isnan(x) && isnan(y)) : memcmp(&x, &y, sizeof x) != 0)
            return 0;
    }
    return 1;
}

static void
free_outs(struct gd_tensor **t, int n)
{
    for (int k = 0; k < n; k++)
        gd_tensor_free(t[k]);
}

/* Calls fn(op, case) for every case folder of op. */
static void
each_case(const char *op, void (*fn)(const char *op, const char *name))
{
    char path[1024];
    snprintf(path, sizeof path, "%s/ops/%s", fixtures(), op);
    DIR *d = opendir(path);
    if (d == NULL) {
        fprintf(stderr, "FAIL: no fixture folder %s\n", path);
        failures++;
        return;
    }
    struct dirent *e;
    while ((e = readdir(d)) != NULL)
        if (e->d_name[0] != '.')
            fn(op, e->d_name);
    closedir(d);
}

/* cuda against cpu, bit for bit, or cuda against itself (twice) when self. */
static void
check_bits(const char *op, const char *name, int self)
{
    struct of_case c;
    if (of_case_load(op, name, &c) != 0) {
        failures++;
        return;
    }
    struct gd_tensor *a[OF_MAX_OUT] = {0}, *b[OF_MAX_OUT] = {0};
    if (run(&c, "cuda", NULL, a) == 0 && run(&c, self ? "cuda" : "cpu", NULL, b) == 0) {
        for (int k = 0; k < c.n_out; k++) {
            if (!same(a[k], b[k])) {
                fprintf(stderr, "FAIL: %s/%s out%d: cuda differs from %s\n", op, name, k,
                        self ? "its own first run" : "cpu");
                failures++;
            }
        }
        printf("%s/%s: cuda %s %s\n", op, name, self ? "run twice" : "and cpu",
               "give the same bits");
    }
    free_outs(a, c.n_out);
    free_outs(b, c.n_out);
    of_case_fini(&c);
}

static void
bits_vs_cpu(const char *op, const char *name)
{
    check_bits(op, name, 0);
}

static void
bits_twice(const char *op, const char *name)
{
    check_bits(op, name, 1);
}

/* cuda with each conv_algo choice (TF32 off) within the trait bound of cpu64. */
static void
conv_choices(const char *op, const char *name)
{
    static const char *const choices[] = {"heuristic", "deterministic", "autotune"};
    struct of_case c;
    enum gd_op e;
    if (of_case_load(op, name, &c) != 0 || gd_op_from_name(op, &e) != 0) {
        failures++;
        return;
    }
    struct gd_tensor *ref[OF_MAX_OUT] = {0};
    if (run(&c, "cpu64", NULL, ref) != 0) {
        of_case_fini(&c);
        return;
    }
    for (int i = 0; i < 3; i++) {
        struct gd_knobs k;
        gd_knobs_init(&k);
        k.tf32 = 0;
        snprintf(k.conv_algo, sizeof k.conv_algo, "%s", choices[i]);
        struct gd_tensor *got[OF_MAX_OUT] = {0};
        if (run(&c, "cuda", &k, got) != 0)
            continue;
        int64_t bad = 0;
        double worst = 0;
        for (int64_t j = 0; j < gd_tensor_numel(ref[0]); j++) {
            double m = gd_tensor_get_f64(c.mag[0], j), r = gd_tensor_get_f64(ref[0], j);
            double g = gd_tensor_get_f64(got[0], j);
            double bound = tol_op_bound(e, c.reduction_len, GD_F32, m) +
                           tol_op_bound(e, c.reduction_len, GD_F64, m);
            if (!(fabs(g - r) <= bound))
                bad++;
            if (bound > 0)
                worst = fmax(worst, fabs(g - r) / bound);
        }
        printf("%s/%s %s: %s, worst error %.3f of the bound%s\n", op, name, choices[i],
               oh_last_algo, worst, bad ? " FAIL" : "");
        if (bad) {
            fprintf(stderr, "FAIL: %s/%s with %s: %lld elements beyond the bound\n", op, name,
                    choices[i], (long long)bad);
            failures++;
        }
        free_outs(got, c.n_out);
    }
    free_outs(ref, c.n_out);
    of_case_fini(&c);
}

int
main(void)
{
    static const char *const exact[] = {"MaxPool", "AveragePool", "GlobalMaxPool", "Resize",
                                        "Upsample"};
    static const char *const trees[] = {"BatchNormalization", "InstanceNormalization",
                                        "LayerNormalization", "GroupNormalization",
                                        "MeanVarianceNormalization", "GlobalAveragePool", "LRN"};
    for (size_t i = 0; i < sizeof exact / sizeof exact[0]; i++)
        each_case(exact[i], bits_vs_cpu);
    for (size_t i = 0; i < sizeof trees / sizeof trees[0]; i++)
        each_case(trees[i], bits_twice);
    each_case("Conv", conv_choices);
    each_case("ConvTranspose", conv_choices);
    printf("%s: %d failures\n", failures ? "FAIL" : "PASS", failures);
    return failures ? 1 : 0;
}
