/*
 * check_verdict.c: tests of engine/compare/verdict.c with hand-made runs: bounds from the
 * reduction length and the declared arithmetic of both runs, reduction lengths taken from
 * shapes or said to be unknown, error carried through copies without growing, verdicts the
 * same whichever run is a, and precision labels only where a layer's own arithmetic made
 * the error. docs/COMPARISON.md states each rule; the numbers below are worked out from it.
 */
#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "diff_fixture.h"

#define U32 0x1p-24

static double *
values(int64_t n, uint64_t seed, double scale)
{
    double *v = malloc((size_t)n * sizeof *v);
    ck_assert_ptr_nonnull(v);
    fx_random(v, n, seed);
    for (int64_t i = 0; i < n; i++)
        v[i] *= scale;
    return v;
}

static double *
copy_of(const double *v, int64_t n)
{
    double *c = malloc((size_t)n * sizeof *c);
    ck_assert_ptr_nonnull(c);
    memcpy(c, v, (size_t)n * sizeof *c);
    return c;
}

static double
num(json_t *o, const char *key)
{
    json_t *v = json_object_get(o, key);
    return json_is_number(v) ? json_number_value(v) : NAN;
}

/*
 * q reads x, not p (the layer before it). a records that; b, a dump, records no edges. With
 * the edges b lacks taken from a, q is judged by its own bound (7.9e-6) in both directions:
 * its 2.5e-5 difference is divergent. Taking b's "layer before" instead excused it as p's
 * noise (7.8e-3) in `diff B A` only.
 */
START_TEST(test_symmetric_in_a_and_b)
{
    const int64_t n = 256;
    struct fx_run *a = fx_run_new("a"), *b = fx_dump_new("b", "import");
    double *y = values(n, 1, 1.0), *y2 = copy_of(y, n);
    fx_perturb(y2, n, 1e-7, 2);
    fx_layer(a, "x", "Gemm", 16, "", fx_f32_of(n, 0, y));
    fx_layer(b, "x", NULL, 0, NULL, fx_f32_of(n, 0, y2));
    double *p = values(n, 3, 1.0), *p2 = copy_of(p, n);
    fx_perturb(p2, n, 1e-2, 4);
    fx_layer(a, "p", "Gemm", 4096, "x", fx_f32_of(n, 0, p));
    fx_layer(b, "p", NULL, 0, NULL, fx_f32_of(n, 0, p2));
    double *q = values(n, 5, 1.0), *q2 = copy_of(q, n);
    fx_perturb(q2, n, 2.5e-5, 6);
    fx_layer(a, "q", "Gemm", 16, "x", fx_f32_of(n, 0, q));
    fx_layer(b, "q", NULL, 0, NULL, fx_f32_of(n, 0, q2));
    json_t *ab = fx_diff_json(a, b, NULL), *ba = fx_diff_json(b, a, NULL);
    const char *names[] = {"x", "p", "q"};
    for (int i = 0; i < 3; i++) {
        const char *vab = fx_str(fx_layer_json(ab, names[i]), "verdict");
        const char *vba = fx_str(fx_layer_json(ba, names[i]), "verdict");
        ck_assert_msg(strcmp(vab, vba) == 0, "%s: diff A B says %s, diff B A says %s", names[i],
                      vab, vba);
    }
    ck_assert_str_eq(fx_str(fx_layer_json(ab, "q"), "verdict"), "divergent");
    ck_assert_str_eq(fx_str(fx_layer_json(ab, "x"), "verdict"), "noise");
    json_decref(ab);
    json_decref(ba);
    free(y), free(y2), free(p), free(p2), free(q), free(q2);
    fx_run_free(a);
    fx_run_free(b);
}
END_TEST

/* Two cuda runs with the TF32 knob on: a 256-term Gemm differing by 4e-4 (relative) per
 * value is within TF32's bound (inputs rounded to 11 bits: 2 * 2^-11 per product on each
 * side, 7.9e-3 with the cushion), which the FP32 bound (1.2e-4) is not. */
static void
tf32_pair(struct fx_run *a, struct fx_run *b)
{
    const int64_t n = 512;
    double *y = values(n, 11, 1.0), *ya = copy_of(y, n), *yb = copy_of(y, n);
    fx_perturb(ya, n, 4e-4, 12);
    fx_perturb(yb, n, 4e-4, 13);
    fx_pair(a, b, "fc", "Gemm", 256, "", n, 0, ya, yb);
    free(y), free(ya), free(yb);
}

START_TEST(test_both_tf32_is_noise)
{
    struct fx_run *a = fx_run_new("a"), *b = fx_run_new("b");
    fx_set(a, "backend", json_string("cuda"));
    fx_set(b, "backend", json_string("cuda"));
    fx_set(a, "knobs.tf32", json_true());
    fx_set(b, "knobs.tf32", json_true());
    tf32_pair(a, b);
    json_t *d = fx_diff_json(a, b, NULL);
    json_t *fc = fx_layer_json(d, "fc");
    ck_assert_msg(strcmp(fx_str(fc, "verdict"), "noise") == 0,
                  "two TF32 runs: fc is %s (err %g, bound %g)", fx_str(fc, "verdict"),
                  num(fc, "err"), num(fc, "bound"));
    ck_assert_msg(num(fc, "bound") > 7e-3, "the bound %g is TF32's", num(fc, "bound"));
    json_decref(d);
    fx_run_free(a);
    fx_run_free(b);
}
END_TEST

/* The per-layer math record says TF32 as well as the knob does. */
START_TEST(test_both_tf32_by_math_record)
{
    struct fx_run *a = fx_run_new("a"), *b = fx_run_new("b");
    tf32_pair(a, b);
    fx_layer_math(a, 0, "tf32");
    fx_layer_math(b, 0, "tf32");
    json_t *d = fx_diff_json(a, b, NULL);
    ck_assert_str_eq(fx_str(fx_layer_json(d, "fc"), "verdict"), "noise");
    json_decref(d);
    fx_run_free(a);
    fx_run_free(b);
}
END_TEST

/* One TF32 run against an FP32 one: the arithmetic differs, so the difference is not noise. */
START_TEST(test_one_tf32_is_divergent)
{
    struct fx_run *a = fx_run_new("a"), *b = fx_run_new("b");
    fx_set(a, "backend", json_string("cuda"));
    fx_set(a, "knobs.tf32", json_true());
    tf32_pair(a, b);
    json_t *d = fx_diff_json(a, b, NULL);
    ck_assert_str_eq(fx_str(fx_layer_json(d, "fc"), "verdict"), "divergent");
    ck_assert_str_eq(fx_str(d, "first_divergent"), "fc");
    json_decref(d);
    fx_run_free(a);
    fx_run_free(b);
}
END_TEST

/*
 * Two dumps know no reduction length; fc, given as a Gemm, reads the layer before it,
 * shaped (2, 131200): K = 131200, whose rounding (bound 0.063, median 8.6e-5) covers a 5e-5
 * difference per value. With a length of 1 it was called divergent.
 */
START_TEST(test_reduction_from_shapes)
{
    struct fx_run *a = fx_dump_new("a", "pytorch"), *b = fx_dump_new("b", "paddle");
    const int64_t k = 131200;
    double *flat = values(2 * k, 21, 1.0);
    fx_pair(a, b, "flat", NULL, 0, NULL, 2, k, flat, flat);
    double *y = values(20, 22, 1.0), *y2 = copy_of(y, 20);
    fx_perturb(y2, 20, 5e-5, 23);
    fx_pair(a, b, "fc", "Gemm", 0, NULL, 2, 10, y, y2);
    json_t *d = fx_diff_json(a, b, NULL);
    json_t *fc = fx_layer_json(d, "fc");
    ck_assert_int_eq(json_integer_value(json_object_get(fc, "reduction_len")), k);
    ck_assert_str_eq(fx_str(fc, "reduction_from"), "shapes");
    ck_assert_msg(strcmp(fx_str(fc, "verdict"), "noise") == 0, "fc is %s (err %g, bound %g)",
                  fx_str(fc, "verdict"), num(fc, "err"), num(fc, "bound"));
    json_decref(d);
    free(flat), free(y), free(y2);
    fx_run_free(a);
    fx_run_free(b);
}
END_TEST

/* Neither dump says what op made "out": its rounding cannot be bounded, and is not guessed. */
START_TEST(test_reduction_unknown)
{
    struct fx_run *a = fx_dump_new("a", "pytorch"), *b = fx_dump_new("b", "paddle");
    double *y = values(40, 31, 1.0), *y2 = copy_of(y, 40);
    fx_perturb(y2, 40, 1e-3, 32);
    fx_pair(a, b, "out", NULL, 0, NULL, 4, 10, y, y2);
    json_t *d = fx_diff_json(a, b, NULL);
    json_t *out = fx_layer_json(d, "out");
    ck_assert_str_eq(fx_str(out, "verdict"), "unknown");
    ck_assert(json_is_null(json_object_get(out, "reduction_len")));
    ck_assert(json_is_null(json_object_get(out, "bound")));
    ck_assert_str_eq(fx_str(out, "reduction_from"), "unknown");
    json_decref(d);
    free(y), free(y2);
    fx_run_free(a);
    fx_run_free(b);
}
END_TEST

/*
 * x (a 4096-term Gemm, bound B = 2e-3) is off by 3B; f, its Flatten, copies it; out (a
 * 16-term Gemm) is off by 8B. A copy adds nothing: f's envelope is x's (B), f is not noise,
 * and out may carry 4B from it, so out is divergent. Growing f's envelope to 4B had made f
 * noise and let out carry 4 times f's whole error.
 */
START_TEST(test_flatten_adds_nothing)
{
    struct fx_run *a = fx_run_new("a"), *b = fx_run_new("b");
    const int64_t n = 1000;
    double *x = values(n, 41, 1.0), *xa = copy_of(x, n);
    fx_perturb(xa, n, 3e-5, 42);
    xa[10] += 6e-3, xa[500] -= 6e-3, xa[900] += 6e-3;
    fx_layer(a, "x", "Gemm", 4096, "", fx_f32_of(10, 100, xa));
    fx_layer(b, "x", "Gemm", 4096, "", fx_f32_of(10, 100, x));
    fx_layer(a, "f", "Flatten", 1, "x", fx_f32_of(10, 100, xa));
    fx_layer(b, "f", "Flatten", 1, "x", fx_f32_of(10, 100, x));
    double *z = values(n, 43, 1.0), *za = copy_of(z, n);
    fx_perturb(za, n, 2e-5, 44);
    za[77] += 1.6e-2;
    fx_layer(a, "out", "Gemm", 16, "f", fx_f32_of(10, 100, za));
    fx_layer(b, "out", "Gemm", 16, "f", fx_f32_of(10, 100, z));
    json_t *d = fx_diff_json(a, b, NULL);
    json_t *lx = fx_layer_json(d, "x"), *lf = fx_layer_json(d, "f"), *lo = fx_layer_json(d, "out");
    ck_assert_str_eq(fx_str(lx, "verdict"), "divergent");
    ck_assert_msg(strcmp(fx_str(lf, "verdict"), "noise") != 0, "a copy of a divergent layer");
    ck_assert_msg(fabs(num(lf, "envelope") - num(lx, "envelope")) <= 1e-12 + 1e-9 *
                  num(lx, "envelope"), "f's envelope %g is x's %g", num(lf, "envelope"),
                  num(lx, "envelope"));
    ck_assert_msg(strcmp(fx_str(lo, "verdict"), "divergent") == 0,
                  "out is %s (err %g, envelope %g)", fx_str(lo, "verdict"), num(lo, "err"),
                  num(lo, "envelope"));
    json_decref(d);
    free(x), free(xa), free(z), free(za);
    fx_run_free(a);
    fx_run_free(b);
}
END_TEST

/* 3 of 84,000 values differ, by 1 in 10: a sparse difference, not a precision. */
START_TEST(test_sparse_is_not_a_precision)
{
    struct fx_run *a = fx_run_new("a"), *b = fx_run_new("b");
    const int64_t n = 84000;
    double *y = values(n, 51, 10.0), *ya = copy_of(y, n);
    ya[5] += 1, ya[40000] += 1, ya[83999] -= 1;
    fx_pair(a, b, "fc", "Gemm", 16, "", 1000, 84, ya, y);
    json_t *d = fx_diff_json(a, b, NULL);
    json_t *fc = fx_layer_json(d, "fc");
    ck_assert_str_eq(fx_str(fc, "verdict"), "divergent");
    ck_assert_int_eq(json_integer_value(json_object_get(fc, "values_differ")), 3);
    ck_assert(json_is_true(json_object_get(fc, "sparse")));
    ck_assert_msg(json_is_null(json_object_get(fc, "arithmetic")), "a sparse layer is labelled %s",
                  fx_str(fc, "arithmetic"));
    ck_assert_msg(num(fc, "bits") < 8, "bits %g from the 3 values that differ", num(fc, "bits"));
    json_decref(d);
    free(y), free(ya);
    fx_run_free(a);
    fx_run_free(b);
}
END_TEST

/* fc1 makes a TF32-sized error (11 bits); r1, a Relu after it, only passes it on. */
START_TEST(test_no_precision_label_on_copies)
{
    struct fx_run *a = fx_run_new("a"), *b = fx_run_new("b");
    const int64_t n = 600;
    double *y = values(n, 61, 1.0), *ya = copy_of(y, n);
    fx_perturb(ya, n, 4e-4, 62);
    fx_pair(a, b, "fc1", "Gemm", 16, "", 6, 100, ya, y);
    double *ra = copy_of(ya, n), *rb = copy_of(y, n);
    for (int64_t i = 0; i < n; i++) {
        ra[i] = fmax(ra[i], 0);
        rb[i] = fmax(rb[i], 0);
    }
    fx_pair(a, b, "r1", "Relu", 1, "fc1", 6, 100, ra, rb);
    json_t *d = fx_diff_json(a, b, NULL);
    ck_assert_str_eq(fx_str(d, "first_divergent"), "fc1");
    ck_assert_str_eq(fx_str(fx_layer_json(d, "fc1"), "arithmetic"), "TF32 or FP16");
    json_t *r1 = fx_layer_json(d, "r1");
    ck_assert_msg(json_is_null(json_object_get(r1, "arithmetic")), "the Relu is labelled %s",
                  fx_str(r1, "arithmetic"));
    json_decref(d);
    free(y), free(ya), free(ra), free(rb);
    fx_run_free(a);
    fx_run_free(b);
}
END_TEST

/*
 * A max pool after a Relu picks the large values, whose errors are the large ones, and drops
 * the zeros, whose errors are nil: its median error is about the Gemm's median, while the
 * Relu's median, half of it exact zeros, is much smaller. A selection passes its input's
 * errors on unchanged but may pick any of them, so its median is bounded by its input's
 * largest error, not by its median (on the H200 a ResNet-50's maxpool, after conv, batch
 * normalization and Relu, was called divergent at 21.6 bits this way).
 */
START_TEST(test_selection_takes_any_input_error)
{
    struct fx_run *a = fx_run_new("a"), *b = fx_run_new("b");
    const int64_t n = 4096, m = n / 4;
    double *g = values(n, 71, 1.0), *ga = copy_of(g, n);
    fx_perturb(ga, n, 1e-6, 72);
    fx_pair(a, b, "g", "Gemm", 4096, "", 64, 64, ga, g);
    double *ra = copy_of(ga, n), *rb = copy_of(g, n);
    for (int64_t i = 0; i < n; i++) {
        ra[i] = fmax(ra[i], 0);
        rb[i] = fmax(rb[i], 0);
    }
    fx_pair(a, b, "r", "Relu", 1, "g", 64, 64, ra, rb);
    double *ma = malloc((size_t)m * sizeof *ma), *mb = malloc((size_t)m * sizeof *mb);
    ck_assert(ma != NULL && mb != NULL);
    for (int64_t i = 0; i < m; i++) {
        ma[i] = fmax(fmax(ra[4 * i], ra[4 * i + 1]), fmax(ra[4 * i + 2], ra[4 * i + 3]));
        mb[i] = fmax(fmax(rb[4 * i], rb[4 * i + 1]), fmax(rb[4 * i + 2], rb[4 * i + 3]));
    }
    fx_pair(a, b, "mp", "MaxPool", 1, "r", 32, 32, ma, mb);
    json_t *d = fx_diff_json(a, b, NULL);
    json_t *lr = fx_layer_json(d, "r"), *lm = fx_layer_json(d, "mp");
    ck_assert_str_eq(fx_str(fx_layer_json(d, "g"), "verdict"), "noise");
    ck_assert_str_eq(fx_str(lr, "verdict"), "noise");
    /* the case is the one described: the pool's median error is above the Relu's */
    ck_assert_msg(num(lm, "err_median") > num(lr, "err_median"), "pool %g, relu %g",
                  num(lm, "err_median"), num(lr, "err_median"));
    ck_assert_msg(strcmp(fx_str(lm, "verdict"), "noise") == 0, "the pool is %s (median %g)",
                  fx_str(lm, "verdict"), num(lm, "err_median"));
    ck_assert(json_is_null(json_object_get(d, "first_divergent")));
    json_decref(d);
    free(g), free(ga), free(ra), free(rb), free(ma), free(mb);
    fx_run_free(a);
    fx_run_free(b);
}
END_TEST


/* A noise probe record: outputs n, the float32 entry (max, median), and gains (NULL: none). */
static json_t *
probe(int64_t n, double max, double median, json_t *gains)
{
    json_t *j = json_pack("{s:I, s:I, s:I, s:s, s:{s:f, s:f}}", "outputs", (json_int_t)n,
                          "rows", (json_int_t)1, "of_rows", (json_int_t)1, "slice", "", "fp32",
                          "max", max, "median", median);
    ck_assert_ptr_nonnull(j);
    if (gains != NULL)
        json_object_set_new(j, "gains", gains);
    return j;
}

/*
 * x, a 4096-term Gemm, differs by an absolute 1e-7 in every value, its values spread over
 * [1e-3, 1]: noise. f copies it. Each value's relative error, 1e-7 / |y|, has a median far
 * above x's largest error over its scale (1e-7): the old median rule, which held a copy's
 * median of |a-b| / max(|a|, |b|) to its input's largest error, called f where the
 * difference starts. A copy computes nothing; with its input quiet it is noise.
 */
START_TEST(test_copy_never_starts)
{
    struct fx_run *a = fx_run_new("a"), *b = fx_run_new("b");
    const int64_t n = 1024;
    double *x = values(n, 81, 1.0), *xa = malloc((size_t)n * sizeof *xa);
    ck_assert_ptr_nonnull(xa);
    for (int64_t i = 0; i < n; i++) {
        x[i] = copysign(pow(10.0, -3.0 * fabs(x[i])), x[i]); /* |x| in [1e-3, 1] */
        xa[i] = x[i] + 1e-7 * (i % 2 ? 1 : -1);
    }
    fx_pair(a, b, "x", "Gemm", 4096, "", 32, 32, xa, x);
    fx_pair(a, b, "f", "Flatten", 1, "x", 1, n, xa, x);
    json_t *d = fx_diff_json(a, b, NULL);
    ck_assert_str_eq(fx_str(fx_layer_json(d, "x"), "verdict"), "noise");
    json_t *f = fx_layer_json(d, "f");
    ck_assert_msg(strcmp(fx_str(f, "verdict"), "noise") == 0, "the copy is %s (median %g of %g)",
                  fx_str(f, "verdict"), num(f, "err_median"), num(f, "envelope_median"));
    ck_assert(json_is_null(json_object_get(d, "first_divergent")));
    ck_assert(json_is_null(json_object_get(d, "first_observed")));
    json_decref(d);
    free(x), free(xa);
    fx_run_free(a);
    fx_run_free(b);
}
END_TEST

/*
 * Every value of "g" differs by 1.1e-6 of 1.0: the median of the differences is 1.1e-6, their
 * largest 1.1e-6. The old histogram, a bin per binade, interpolated its median to 1.43e-6
 * (half way through [2^-20, 2^-19)), above the largest error it is the median of. The median
 * is now read from bins 1/16 of a binade wide and never exceeds the largest.
 */
START_TEST(test_median_not_above_max)
{
    struct fx_run *a = fx_run_new("a"), *b = fx_run_new("b");
    const int64_t n = 1000;
    double *one = malloc((size_t)n * sizeof *one), *off = malloc((size_t)n * sizeof *off);
    ck_assert(one != NULL && off != NULL);
    for (int64_t i = 0; i < n; i++) {
        one[i] = 1.0;
        off[i] = 1.0 + 1.1e-6;
    }
    fx_layer(a, "g", "Gemm", 4096, "", fx_f64(1, n, off));
    fx_layer(b, "g", "Gemm", 4096, "", fx_f64(1, n, one));
    json_t *d = fx_diff_json(a, b, NULL);
    json_t *g = fx_layer_json(d, "g");
    double err = num(g, "err"), med = num(g, "err_median");
    ck_assert_msg(med <= err * (1 + 1e-12), "median %.9g above the largest %.9g", med, err);
    ck_assert_msg(med >= err * pow(2.0, -0.0625), "median %.6g, not within 1/16 binade of %.6g", med,
                  err);
    json_decref(d);
    free(one), free(off);
    fx_run_free(a);
    fx_run_free(b);
}
END_TEST

/*
 * x sums 4096 equal terms, so its float32 rounding errors add up like 4096 u, not like
 * sqrt(4096) u: every value of the cpu run is off by 2.4e-5 of it, the same way. The random-
 * rounding model allows a median of 2 sqrt(4096) u + 2 u = 7.7e-6 and calls it divergent
 * (false); a noise probe of the layer measured exactly that error (2.8e-5 on its sample),
 * and the band made from it holds.
 */
START_TEST(test_coherent_rounding_from_probe)
{
    const int64_t n = 512;
    double *y = malloc((size_t)n * sizeof *y), *ya = malloc((size_t)n * sizeof *ya);
    ck_assert(y != NULL && ya != NULL);
    for (int64_t i = 0; i < n; i++) {
        y[i] = 4.096;
        ya[i] = 4.096 * (1 - 2.4e-5);
    }
    for (int with_probe = 0; with_probe < 2; with_probe++) {
        struct fx_run *a = fx_run_new("a"), *b = fx_run_new("b");
        fx_set(b, "backend", json_string("cpu64"));
        int la = fx_layer(a, "x", "Gemm", 4096, "", fx_f32_of(8, 64, ya));
        fx_layer(b, "x", "Gemm", 4096, "", fx_f64(8, 64, y));
        if (with_probe)
            fx_layer_noise(a, la, probe(64, 2.8e-5, 2.8e-5, NULL));
        json_t *d = fx_diff_json(a, b, NULL);
        json_t *x = fx_layer_json(d, "x");
        ck_assert_msg(strcmp(fx_str(x, "verdict"), with_probe ? "noise" : "divergent") == 0,
                      "%s probe: %s (median %g of %g, from %s)", with_probe ? "with" : "without",
                      fx_str(x, "verdict"), num(x, "err_median"), num(x, "envelope_median"),
                      fx_str(x, "noise_from"));
        ck_assert_str_eq(fx_str(x, "noise_from"), with_probe ? "probe a" : "model");
        json_decref(d);
        fx_run_free(a);
        fx_run_free(b);
    }
    free(y), free(ya);
}
END_TEST

/*
 * The other way: a sum of positive terms, whose float32 errors the probe measured at 4e-7,
 * far below the model's 2 sqrt(n) u (4.1e-6 per side for n = 1167). A reduced format made a
 * median difference of 6e-6 of the scale: within the model's band (8.4e-6), beyond the
 * probe's (2 (2 x 4e-7 + 2 u)).
 */
START_TEST(test_probe_narrows_the_band)
{
    const int64_t n = 512;
    double *y = values(n, 91, 1.0), *ya = copy_of(y, n);
    for (int64_t i = 0; i < n; i++) {
        y[i] = 1.5 + 0.5 * y[i];
        ya[i] = y[i] * (1 + 8e-6 * (i % 3 == 0 ? -1 : 1));
    }
    for (int with_probe = 0; with_probe < 2; with_probe++) {
        struct fx_run *a = fx_run_new("a"), *b = fx_run_new("b");
        int la = fx_layer(a, "x", "Gemm", 1167, "", fx_f32_of(8, 64, ya));
        int lb = fx_layer(b, "x", "Gemm", 1167, "", fx_f32_of(8, 64, y));
        if (with_probe) {
            fx_layer_noise(a, la, probe(64, 5e-7, 4e-7, NULL));
            fx_layer_noise(b, lb, probe(64, 5e-7, 4e-7, NULL));
        }
        json_t *d = fx_diff_json(a, b, NULL);
        json_t *x = fx_layer_json(d, "x");
        ck_assert_msg(strcmp(fx_str(x, "verdict"), with_probe ? "divergent" : "noise") == 0,
                      "%s probe: %s (median %g of %g)", with_probe ? "with" : "without",
                      fx_str(x, "verdict"), num(x, "err_median"), num(x, "envelope_median"));
        json_decref(d);
        fx_run_free(a);
        fx_run_free(b);
    }
    free(y), free(ya);
}
END_TEST

/*
 * m, the mean of x's 128 values of both signs, is small next to them (1e-3 against 1): the
 * noise x carries (1e-7 of its scale, 1e-7 absolute) is 1e-4 of m's scale. x's relative
 * error times GD__CARRY (4e-7) does not cover it; the mean's gain, 1 (the sum of its
 * coefficients' |1/n|), from the probe, carries x's absolute difference over m's scale.
 */
START_TEST(test_gain_carries_through_cancellation)
{
    const int64_t n = 128;
    double *x = values(n, 95, 1.0), *xa = copy_of(x, n);
    double mean = 0;
    for (int64_t i = 0; i < n; i++)
        mean += x[i];
    mean /= n;
    for (int64_t i = 0; i < n; i++) {
        x[i] += 1e-3 - mean; /* the mean is 1e-3 */
        xa[i] = x[i] + (i % 2 ? 1e-7 : 0);
    }
    double ma = 0, mb = 0;
    for (int64_t i = 0; i < n; i++)
        ma += xa[i], mb += x[i];
    ma /= n, mb /= n;
    for (int with_gain = 0; with_gain < 2; with_gain++) {
        struct fx_run *a = fx_run_new("a"), *b = fx_run_new("b");
        fx_pair(a, b, "x", "Gemm", 16, "", 1, n, xa, x);
        fx_layer(a, "m", "ReduceMean", n, "x", fx_f64(1, 1, &ma));
        int lb = fx_layer(b, "m", "ReduceMean", n, "x", fx_f64(1, 1, &mb));
        if (with_gain)
            fx_layer_noise(b, lb, probe(1, 0, 0, json_pack("{s:{s:f, s:f, s:f}}", "x", "l1", 1.0,
                                                           "shift", 1.0, "l2", 1 / sqrt(n))));
        json_t *d = fx_diff_json(a, b, NULL);
        ck_assert_str_eq(fx_str(fx_layer_json(d, "x"), "verdict"), "noise");
        json_t *m = fx_layer_json(d, "m");
        ck_assert_msg(strcmp(fx_str(m, "verdict"), with_gain ? "noise" : "divergent") == 0,
                      "%s gain: m is %s (err %g of %g)", with_gain ? "with" : "without",
                      fx_str(m, "verdict"), num(m, "err"), num(m, "envelope"));
        json_decref(d);
        fx_run_free(a);
        fx_run_free(b);
    }
    free(x), free(xa);
}
END_TEST

/*
 * A float64 run against a bfloat16 one: s, the same row of equal values on both once the
 * float64 side is rounded to bfloat16, is identical as compared; but the float64 run's
 * LayerNormalization read its own, unrounded values, whose mean rounds, and made 1e-13 where
 * the bfloat16 run made 0. That input rounding (u of bfloat16 times s's scale) is a
 * difference ln read, and ln's measured gain (1 / sqrt(epsilon) for a row of equal values)
 * carries it: noise. Counting s as no difference at all had made ln divergent.
 */
START_TEST(test_rounding_of_a_float64_side_is_carried)
{
    struct fx_run *a = fx_run_new("a"), *b = fx_run_new("b");
    fx_set(b, "backend", json_string("cpu64"));
    const int64_t n = 32;
    double *s64 = malloc((size_t)n * sizeof *s64), *zero = calloc((size_t)n, sizeof *zero);
    double *ln64 = malloc((size_t)n * sizeof *ln64);
    ck_assert(s64 != NULL && zero != NULL && ln64 != NULL);
    uint16_t bf[32], lnb[32];
    for (int64_t i = 0; i < n; i++) {
        s64[i] = 0.64765;
        bf[i] = gd_f64_to_bf16(s64[i]);
        ln64[i] = 1.76e-13;
        lnb[i] = 0;
    }
    int64_t shape[2] = {1, n};
    struct gd_tensor *ta = gd_tensor_new(GD_BF16, 2, shape, NULL);
    struct gd_tensor *la = gd_tensor_new(GD_BF16, 2, shape, NULL);
    memcpy(ta->data, bf, sizeof bf);
    memcpy(la->data, lnb, sizeof lnb);
    fx_layer(a, "s", "Sigmoid", 1, "", ta);
    fx_layer(b, "s", "Sigmoid", 1, "", fx_f64(1, n, s64));
    int ia = fx_layer(a, "ln", "LayerNormalization", n, "s", la);
    fx_layer(b, "ln", "LayerNormalization", n, "s", fx_f64(1, n, ln64));
    fx_layer_noise(a, ia, probe(32, 0, 0, json_pack("{s:{s:f, s:f, s:f}}", "s", "l1", 632.0,
                                                   "shift", 0.0, "l2", 105.0)));
    json_t *d = fx_diff_json(a, b, NULL);
    ck_assert_str_eq(fx_str(fx_layer_json(d, "s"), "verdict"), "identical");
    json_t *ln = fx_layer_json(d, "ln");
    ck_assert_msg(strcmp(fx_str(ln, "verdict"), "noise") == 0, "ln is %s (err %g of %g)",
                  fx_str(ln, "verdict"), num(ln, "err"), num(ln, "envelope"));
    json_decref(d);
    free(s64), free(zero), free(ln64);
    fx_run_free(a);
    fx_run_free(b);
}
END_TEST

/*
 * Two dumps of three layers each, no edges: q is noise, r differs beyond noise, s (a Floor)
 * flipped. A dump does not say which layers it left out, so r is where the difference is
 * first observed, not where it starts, and s, exact in itself, amplified what moved its
 * input.
 */
START_TEST(test_dumps_show_only_where_first_observed)
{
    struct fx_run *a = fx_dump_new("a", "pytorch"), *b = fx_dump_new("b", "paddle");
    const int64_t n = 200;
    double *q = values(n, 101, 1.0), *qa = copy_of(q, n);
    fx_perturb(qa, n, 1e-8, 102);
    fx_pair(a, b, "q", "Gemm", 16, NULL, 10, 20, qa, q);
    double *r = values(n, 103, 3.0), *ra = copy_of(r, n);
    fx_perturb(ra, n, 1e-3, 104);
    r[5] = 1.0 - 1e-4, ra[5] = 1.0 + 1e-4; /* one value crosses a step */
    fx_pair(a, b, "r", "Gemm", 16, NULL, 10, 20, ra, r);
    double *fa = malloc((size_t)n * sizeof *fa), *fb = malloc((size_t)n * sizeof *fb);
    ck_assert(fa != NULL && fb != NULL);
    for (int64_t i = 0; i < n; i++) {
        fa[i] = floor(ra[i]);
        fb[i] = floor(r[i]);
    }
    fx_pair(a, b, "s", "Floor", 1, NULL, 10, 20, fa, fb);
    json_t *d = fx_diff_json(a, b, NULL);
    ck_assert(json_is_null(json_object_get(d, "first_divergent")));
    ck_assert_str_eq(fx_str(d, "first_observed"), "r");
    ck_assert(json_is_false(json_object_get(d, "start_known")));
    json_t *ls = fx_layer_json(d, "s");
    ck_assert_msg(strcmp(fx_str(ls, "verdict"), "amplified") == 0, "s is %s",
                  fx_str(ls, "verdict"));
    ck_assert_msg(strstr(fx_str(d, "explanation"), "may lie before it") != NULL, "%s",
                  fx_str(d, "explanation"));
    json_decref(d);
    free(q), free(qa), free(r), free(ra), free(fa), free(fb);
    fx_run_free(a);
    fx_run_free(b);
}
END_TEST

int
main(void)
{
    Suite *s = suite_create("verdict");
    TCase *tc = tcase_create("verdict");
    tcase_set_timeout(tc, 30);
    tcase_add_test(tc, test_symmetric_in_a_and_b);
    tcase_add_test(tc, test_both_tf32_is_noise);
    tcase_add_test(tc, test_both_tf32_by_math_record);
    tcase_add_test(tc, test_one_tf32_is_divergent);
    tcase_add_test(tc, test_reduction_from_shapes);
    tcase_add_test(tc, test_reduction_unknown);
    tcase_add_test(tc, test_flatten_adds_nothing);
    tcase_add_test(tc, test_sparse_is_not_a_precision);
    tcase_add_test(tc, test_no_precision_label_on_copies);
    tcase_add_test(tc, test_selection_takes_any_input_error);
    tcase_add_test(tc, test_copy_never_starts);
    tcase_add_test(tc, test_median_not_above_max);
    tcase_add_test(tc, test_coherent_rounding_from_probe);
    tcase_add_test(tc, test_probe_narrows_the_band);
    tcase_add_test(tc, test_gain_carries_through_cancellation);
    tcase_add_test(tc, test_rounding_of_a_float64_side_is_carried);
    tcase_add_test(tc, test_dumps_show_only_where_first_observed);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
