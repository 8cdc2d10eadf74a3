/*
 * check_noise_probe.c: tests of engine/compare/noise_probe.c and noise_record.c. A graph is
 * run on cpu with its layers handed to a collector, as `gpudiff-agent run` does, and each
 * probe is checked against the same figures computed here, independently: the float32 and
 * TF32 sums in cpu's documented order (docs/NUMERICS.md: k ascending from +0, each product
 * and each sum rounded), the float64 reference, the gains from the weights' columns; a
 * LayerNormalization of rows of equal values must show its 1/sqrt(epsilon) gain; records
 * must round-trip through JSON and bad ones be refused.
 */
#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "gpudiff/noise.h"
#include "gpudiff/session.h"

/* xorshift64*, in [-1, 1). */
static double
unit(uint64_t *s)
{
    *s ^= *s >> 12;
    *s ^= *s << 25;
    *s ^= *s >> 27;
    return (double)((*s * 0x2545f4914f6cdd1dull) >> 11) * 0x1p-52 - 1.0;
}

static struct gd_tensor *
f32(int ndim, const int64_t *shape, const float *v)
{
    struct gd_tensor *t = gd_tensor_new(GD_F32, ndim, shape, NULL);
    ck_assert_ptr_nonnull(t);
    memcpy(t->data, v, gd_tensor_nbytes(t));
    return t;
}

/* An integer attribute: gd_graph_add_node moves its name, the struct stays the caller's. */
static struct gd_attr
int_attr(const char *name, int64_t v)
{
    struct gd_attr a = {.name = strdup(name), .type = GD_ATTR_INT, .i = v};
    ck_assert_ptr_nonnull(a.name);
    return a;
}

static int
feed(void *user, const struct gd_layer *layer, struct gd_err *err)
{
    return gd_noise_collector_layer(user, layer, err);
}

/* Runs g on cpu with x, feeding a collector made with opts; the caller frees it. */
static struct gd_noise_collector *
collect(struct gd_graph *g, struct gd_tensor *x, const struct gd_noise_opts *opts)
{
    struct gd_err err = {0};
    const struct gd_tensor *in[1] = {x};
    struct gd_noise_collector *c = NULL;
    ck_assert_msg(gd_noise_collector_new(g, in, opts, &c, &err) == 0, "%s", err.msg);
    struct gd_knobs k;
    gd_knobs_init(&k);
    k.threads = 1;
    struct gd_session *s = gd_session_new(g, "cpu", &k, &err);
    ck_assert_msg(s != NULL, "%s", err.msg);
    ck_assert_msg(gd_session_run(s, 1, in, feed, c, &err) == 0, "%s", err.msg);
    gd_session_free(s);
    return c;
}

/* TF32 rounding to nearest even by frexp: 11 significant bits (a different way from cpu's). */
static float
to_tf32(float v)
{
    int e;
    double m = frexp((double)v, &e); /* v = m 2^e, 0.5 <= |m| < 1 */
    return (float)ldexp(nearbyint(ldexp(m, 11)), e - 11);
}

static int
cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/*
 * Largest and median of |y - (float)ref| over the largest |.| of either, the probe's units
 * (the reference is rounded to float32 first, as the comparison rounds a float64 side).
 */
static void
errors(const float *y, const double *ref, int n, double *max, double *median)
{
    double *d = malloc((size_t)n * sizeof *d), scale = 0, m = 0;
    ck_assert_ptr_nonnull(d);
    for (int i = 0; i < n; i++) {
        float r = (float)ref[i];
        d[i] = fabs((double)y[i] - (double)r);
        scale = fmax(scale, fmax(fabs((double)y[i]), fabs((double)r)));
        m = fmax(m, d[i]);
    }
    qsort(d, (size_t)n, sizeof *d, cmp_double);
    *max = m / scale;
    *median = (n % 2 ? d[n / 2] : 0.5 * (d[n / 2 - 1] + d[n / 2])) / scale;
    free(d);
}

/* A probe's median, from its 1/16-binade histogram, against the exact one. */
static void
median_near(double got, double want, const char *what)
{
    if (want == 0) {
        ck_assert_msg(got == 0, "%s median %g, want 0", what, got);
        return;
    }
    ck_assert_msg(got <= want * pow(2.0, 1.0 / 16) && got >= want * pow(2.0, -1.0 / 16),
                  "%s median %g, want %g", what, got, want);
}

#define N 8
#define K 300
#define M 5

/*
 * y = x W + b, 8 rows of 300 terms: every row is probed (8 rows of 300 values are within the
 * 4096-output aim), and each figure is the one computed here from the same data.
 */
START_TEST(test_gemm_figures)
{
    static float x[N * K], w[K * M], b[M];
    uint64_t s = 11;
    for (int i = 0; i < N * K; i++)
        x[i] = (float)unit(&s);
    for (int i = 0; i < K * M; i++)
        w[i] = (float)(unit(&s) / sqrt(K));
    for (int j = 0; j < M; j++)
        b[j] = (float)(0.1 * unit(&s));
    struct gd_err err = {0};
    struct gd_graph *g = gd_graph_new("probe-test", &err);
    struct gd_input_decl decl = {.dtype = GD_F32, .shape = {.ndim = 2, .dim = {N, K}}};
    int64_t ws[2] = {K, M}, bs[1] = {M}, xs[2] = {N, K};
    ck_assert_int_eq(gd_graph_add_input(g, "x", &decl, &err), 0);
    ck_assert_int_eq(gd_graph_add_constant(g, "W", f32(2, ws, w), &err), 0);
    ck_assert_int_eq(gd_graph_add_constant(g, "b", f32(1, bs, b), &err), 0);
    const char *in[] = {"x", "W", "b"}, *out[] = {"y"};
    ck_assert_int_eq(gd_graph_add_node(g, "fc", "Gemm", 3, in, 1, out, 0, NULL, &err), 0);
    ck_assert_int_eq(gd_graph_add_output(g, "y", &err), 0);
    ck_assert_msg(gd_graph_finalize(g, &err) == 0, "%s", err.msg);
    struct gd_tensor *tx = f32(2, xs, x);
    struct gd_noise_collector *c = collect(g, tx, NULL);
    const struct gd_noise_probe *p = gd_noise_collector_get(c, "y");
    ck_assert_ptr_nonnull(p);
    ck_assert_int_eq(p->outputs, N * M);
    ck_assert_int_eq(p->rows, N);
    ck_assert_int_eq(p->of_rows, N);

    /* the same sums here: float32 (and TF32 operands) in cpu's order, float64 */
    float y32[N * M], ytf[N * M];
    double y64[N * M];
    for (int i = 0; i < N; i++)
        for (int j = 0; j < M; j++) {
            float acc = 0.0f, acct = 0.0f;
            double acc64 = 0.0;
            for (int k = 0; k < K; k++) {
                float prod = x[i * K + k] * w[k * M + j];
                acc = acc + prod;
                float prodt = to_tf32(x[i * K + k]) * to_tf32(w[k * M + j]);
                acct = acct + prodt;
                acc64 += (double)x[i * K + k] * (double)w[k * M + j];
            }
            y32[i * M + j] = acc + b[j];
            ytf[i * M + j] = acct + b[j];
            y64[i * M + j] = acc64 + (double)b[j];
        }
    double mx, md;
    errors(y32, y64, N * M, &mx, &md);
    ck_assert(p->has[GD_NOISE_FP32] && p->has[GD_NOISE_TF32]);
    ck_assert_msg(fabs(p->max[GD_NOISE_FP32] - mx) <= 1e-12 * mx, "fp32 max %g, want %g",
                  p->max[GD_NOISE_FP32], mx);
    median_near(p->median[GD_NOISE_FP32], md, "fp32");
    errors(ytf, y64, N * M, &mx, &md);
    ck_assert_msg(fabs(p->max[GD_NOISE_TF32] - mx) <= 1e-12 * mx, "tf32 max %g, want %g",
                  p->max[GD_NOISE_TF32], mx);
    median_near(p->median[GD_NOISE_TF32], md, "tf32");
    ck_assert(p->max[GD_NOISE_TF32] > 100 * p->max[GD_NOISE_FP32]);

    /* the gains of x: W's columns, largest sum of |w|, largest |sum of w|, largest norm */
    double l1 = 0, shift = 0, l2 = 0;
    for (int j = 0; j < M; j++) {
        double a = 0, sum = 0, q = 0;
        for (int k = 0; k < K; k++) {
            a += fabs(w[k * M + j]);
            sum += w[k * M + j];
            q += (double)w[k * M + j] * w[k * M + j];
        }
        l1 = fmax(l1, a), shift = fmax(shift, fabs(sum)), l2 = fmax(l2, sqrt(q));
    }
    ck_assert_int_eq(p->n_gains, 1);
    ck_assert_str_eq(p->gains[0].input, "x");
    ck_assert_msg(fabs(p->gains[0].l1 - l1) <= 1e-12 * l1 &&
                      fabs(p->gains[0].shift - shift) <= 1e-12 * shift &&
                      fabs(p->gains[0].l2 - l2) <= 1e-12 * l2,
                  "gains %g %g %g, want %g %g %g", p->gains[0].l1, p->gains[0].shift,
                  p->gains[0].l2, l1, shift, l2);
    gd_noise_collector_free(c);
    gd_tensor_free(tx);
    gd_graph_free(g);
}
END_TEST

/* 1000 rows of 16 terms: 64 rows are kept, spread over the batch, and the count is said. */
START_TEST(test_rows_sampled)
{
    enum { ROWS = 1000, IN = 16, OUT = 4 };
    static float x[ROWS * IN], w[IN * OUT];
    uint64_t s = 21;
    for (int i = 0; i < ROWS * IN; i++)
        x[i] = (float)unit(&s);
    for (int i = 0; i < IN * OUT; i++)
        w[i] = (float)unit(&s);
    struct gd_err err = {0};
    struct gd_graph *g = gd_graph_new("probe-rows", &err);
    struct gd_input_decl decl = {.dtype = GD_F32, .shape = {.ndim = 2, .dim = {-1, IN}}};
    int64_t ws[2] = {IN, OUT}, xs[2] = {ROWS, IN};
    ck_assert_int_eq(gd_graph_add_input(g, "x", &decl, &err), 0);
    ck_assert_int_eq(gd_graph_add_constant(g, "W", f32(2, ws, w), &err), 0);
    const char *in[] = {"x", "W"}, *out[] = {"y"};
    ck_assert_int_eq(gd_graph_add_node(g, "mm", "MatMul", 2, in, 1, out, 0, NULL, &err), 0);
    ck_assert_int_eq(gd_graph_add_output(g, "y", &err), 0);
    ck_assert_int_eq(gd_graph_finalize(g, &err), 0);
    struct gd_tensor *tx = f32(2, xs, x);
    struct gd_noise_collector *c = collect(g, tx, NULL);
    const struct gd_noise_probe *p = gd_noise_collector_get(c, "y");
    ck_assert_ptr_nonnull(p);
    ck_assert_int_eq(p->of_rows, ROWS);
    ck_assert_int_eq(p->rows, 64);
    ck_assert_int_eq(p->outputs, 64 * OUT);
    ck_assert_int_eq(gd_noise_collector_count(c), 1);
    gd_noise_collector_free(c);
    gd_tensor_free(tx);
    gd_graph_free(g);
}
END_TEST

/*
 * Rows of equal values through LayerNormalization (epsilon 1e-5, scale 2): x - mean is
 * nothing but rounding, divided by sqrt(1e-5). A difference of independent signs in x comes
 * out about 2 / sqrt(1e-5) = 632 times larger; one common to all values does not come out.
 * A mean's gains are fixed: 1, 1 and 1/sqrt(n).
 */
START_TEST(test_measured_and_fixed_gains)
{
    enum { ROWS = 4, C = 32 };
    float x[ROWS * C], sc[C], bi[C];
    for (int i = 0; i < ROWS * C; i++)
        x[i] = 0.64765f;
    for (int i = 0; i < C; i++)
        sc[i] = 2.0f, bi[i] = 0.0f;
    struct gd_err err = {0};
    struct gd_graph *g = gd_graph_new("probe-ln", &err);
    struct gd_input_decl decl = {.dtype = GD_F32, .shape = {.ndim = 2, .dim = {ROWS, C}}};
    int64_t cs[1] = {C}, xs[2] = {ROWS, C};
    ck_assert_int_eq(gd_graph_add_input(g, "x", &decl, &err), 0);
    ck_assert_int_eq(gd_graph_add_constant(g, "s", f32(1, cs, sc), &err), 0);
    ck_assert_int_eq(gd_graph_add_constant(g, "b", f32(1, cs, bi), &err), 0);
    const char *in[] = {"x", "s", "b"}, *out[] = {"ln"}, *in2[] = {"ln"}, *out2[] = {"m"};
    ck_assert_int_eq(gd_graph_add_node(g, "ln", "LayerNormalization", 3, in, 1, out, 0, NULL,
                                       &err), 0);
    struct gd_attr keepdims = int_attr("keepdims", 1);
    ck_assert_int_eq(gd_graph_add_node(g, "m", "ReduceMean", 1, in2, 1, out2, 1, &keepdims,
                                       &err), 0);
    ck_assert_int_eq(gd_graph_add_output(g, "m", &err), 0);
    ck_assert_msg(gd_graph_finalize(g, &err) == 0, "%s", err.msg);
    struct gd_tensor *tx = f32(2, xs, x);
    struct gd_noise_collector *c = collect(g, tx, NULL);
    const struct gd_noise_probe *p = gd_noise_collector_get(c, "ln");
    ck_assert_ptr_nonnull(p);
    ck_assert_int_eq(p->n_gains, 1);
    double want = 2.0 / sqrt(1e-5);
    ck_assert_msg(p->gains[0].l2 >= 0.5 * want && p->gains[0].l2 <= 6 * want,
                  "independent differences grow %g-fold, want about %g", p->gains[0].l2, want);
    ck_assert_msg(p->gains[0].shift <= 1e-3 * p->gains[0].l2,
                  "a common difference grows %g-fold", p->gains[0].shift);
    ck_assert(p->gains[0].l1 >= p->gains[0].l2);
    const struct gd_noise_probe *pm = gd_noise_collector_get(c, "m");
    ck_assert_ptr_nonnull(pm);
    ck_assert_int_eq(pm->n_gains, 1);
    ck_assert_str_eq(pm->gains[0].input, "ln");
    ck_assert(pm->gains[0].l1 == 1.0 && pm->gains[0].shift == 1.0);
    ck_assert_msg(fabs(pm->gains[0].l2 - 1 / sqrt((double)ROWS * C)) < 1e-15,
                  "a mean of all %d values: l2 %g", ROWS * C, pm->gains[0].l2);
    gd_noise_collector_free(c);
    gd_tensor_free(tx);
    gd_graph_free(g);
}
END_TEST

/* A probe goes through its JSON unchanged; damaged records are refused, naming the field. */
START_TEST(test_record)
{
    struct gd_noise_probe p, q;
    memset(&p, 0, sizeof p);
    p.outputs = 40, p.rows = 8, p.of_rows = 1000;
    snprintf(p.slice, sizeof p.slice, "3 rows of A");
    p.has[GD_NOISE_FP32] = p.has[GD_NOISE_BF16] = 1;
    p.max[GD_NOISE_FP32] = 1.5e-7, p.median[GD_NOISE_FP32] = 2.25e-8;
    p.median_hi[GD_NOISE_FP32] = 3e-8;
    p.max[GD_NOISE_BF16] = 3e-3, p.median[GD_NOISE_BF16] = 1e-3;
    p.median_hi[GD_NOISE_BF16] = 1.5e-3;
    p.n_gains = 1;
    snprintf(p.gains[0].input, sizeof p.gains[0].input, "x");
    p.gains[0].l1 = 7.5, p.gains[0].shift = 0.25, p.gains[0].l2 = 1.125;
    json_t *j = gd_noise_probe_to_json(&p);
    ck_assert_ptr_nonnull(j);
    struct gd_err err = {0};
    ck_assert_msg(gd_noise_probe_from_json(j, &q, &err) == 0, "%s", err.msg);
    ck_assert(memcmp(&p, &q, sizeof p) == 0);
    json_decref(j);
    static const char *const bad[] = {
        "[]",
        "{\"outputs\": 4, \"rows\": 1, \"of_rows\": 1}",
        "{\"outputs\": -1, \"rows\": 1, \"of_rows\": 1, \"fp32\": {\"max\": 0, \"median\": 0}}",
        "{\"outputs\": 4, \"rows\": 1, \"of_rows\": 1, \"fp32\": {\"max\": -1, \"median\": 0}}",
        "{\"outputs\": 4, \"rows\": 1, \"of_rows\": 1, \"fp32\": {\"max\": 0}}",
        "{\"outputs\": 4, \"rows\": 1, \"of_rows\": 1, \"fp32\": {\"max\": 0, \"median\": 0}, "
        "\"gains\": {\"x\": 3}}",
        "{\"outputs\": 4, \"rows\": 1, \"of_rows\": 1, \"fp32\": {\"max\": 0, \"median\": 0}, "
        "\"gains\": {\"a\": {\"l1\": 1, \"shift\": 1, \"l2\": 1}, \"b\": {\"l1\": 1, \"shift\": "
        "1, \"l2\": 1}, \"c\": {\"l1\": 1, \"shift\": 1, \"l2\": 1}, \"d\": {\"l1\": 1, "
        "\"shift\": 1, \"l2\": 1}, \"e\": {\"l1\": 1, \"shift\": 1, \"l2\": 1}}}",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        json_t *b = json_loads(bad[i], 0, NULL);
        ck_assert_ptr_nonnull(b);
        ck_assert_msg(gd_noise_probe_from_json(b, &q, &err) == GD_EFORMAT, "accepted %s", bad[i]);
        ck_assert_int_eq(q.outputs, 0);
        json_decref(b);
    }
}
END_TEST

int
main(void)
{
    Suite *s = suite_create("noise_probe");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_gemm_figures);
    tcase_add_test(tc, test_rows_sampled);
    tcase_add_test(tc, test_measured_and_fixed_gains);
    tcase_add_test(tc, test_record);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
