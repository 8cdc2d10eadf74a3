/*
 * check_repro.c: cuda with --repro bitwise (engine/cuda/repro_table.c, repro_*.cu) against the
 * cpu backend, bit for bit, tolerance 0:
 *   - every case of every op's fixtures (tests/fixtures/ops/<op>/<case>, the float16 and
 *     bfloat16 cases of tests/fixtures/ops/half among them; the cpu-only emulation cases
 *     aside): each output's dtype, shape and bytes, a NaN matching any NaN (arithmetic makes
 *     the GPU's canonical NaN where x86 keeps a payload), or the same error code;
 *   - each case again with GPUDIFF_REPRO_GRID=3 (every launch at most 3 blocks: a GPU with
 *     fewer SMs), and the Conv, ConvTranspose, Gemm and MatMul cases with the products one
 *     thread per element (GPUDIFF_REPRO_GEMM=naive) instead of tiles;
 *   - a small network (convolutions, pools, Gemm, Softmax, MatMul, LayerNormalization, Gelu,
 *     Tanh, Exp) at --batch 1, 3 and whole, and with the grid limited: every layer's rows the
 *     cpu backend's bits (batch invariance, and invariance to the grid);
 *   - the tiny GPT-2 and BERT of tests/fixtures/onnx/transformers in float32, float16 and
 *     bfloat16 (--dtype): every layer the cpu backend's bits.
 * A difference prints the case, the output, the first differing element (index, both values
 * and their bits) and the count. GD_TEST_OPS (a comma list) limits the op cases,
 * GD_REPRO_PASSES=1 (or 2) runs the first passes only, GD_REPRO_MODELS=0 leaves the network
 * and the transformers out (for several processes sharing the cases). CUDA does
 * not survive fork(): run with CK_FORK=no (tests/engine/repro_cuda.sh). Exits 77 without a
 * cuda backend or a GPU.
 */
#include <check.h>
#include <dirent.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpudiff/graph.h"
#include "gpudiff/io.h"
#include "gpudiff/onnx.h"
#include "gpudiff/ops.h"
#include "gpudiff/session.h"
#include "op_fixture.h"
#include "op_harness.h"

#define MAX_GROUPS 256
#define MAX_CASES  256

static char groups[MAX_GROUPS][OF_NAME_MAX];
static int n_groups;

static const char *
fixtures(void)
{
    const char *dir = getenv("GD_TEST_FIXTURES");
    return dir != NULL && dir[0] != '\0' ? dir : GD_FIXTURES;
}

static int
by_name(const void *a, const void *b)
{
    return strcmp(a, b);
}

/* The op fixture folders, sorted; the cpu-only emulation cases left out. */
static void
list_groups(void)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/ops", fixtures());
    DIR *d = opendir(path);
    struct dirent *e;
    while (d != NULL && (e = readdir(d)) != NULL && n_groups < MAX_GROUPS) {
        if (e->d_name[0] == '.' || strcmp(e->d_name, "emulate") == 0 ||
            strlen(e->d_name) >= OF_NAME_MAX)
            continue;
        char sub[1200];
        snprintf(sub, sizeof sub, "%s/%s", path, e->d_name);
        DIR *s = opendir(sub);
        if (s == NULL)
            continue;
        closedir(s);
        snprintf(groups[n_groups++], OF_NAME_MAX, "%s", e->d_name);
    }
    if (d != NULL)
        closedir(d);
    qsort(groups, (size_t)n_groups, sizeof groups[0], by_name);
}

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

/* Element i of t as its bits, widened to 64 (any dtype). */
static uint64_t
bits_at(const struct gd_tensor *t, int64_t i)
{
    size_t es = gd_dtype_size(t->dtype);
    uint64_t v = 0;
    memcpy(&v, (const char *)t->data + (size_t)i * es, es);
    return v;
}

static int
nan_at(const struct gd_tensor *t, int64_t i)
{
    return gd_dtype_is_float(t->dtype) && isnan(gd_tensor_get_f64(t, i));
}

/*
 * Compares got with want bit for bit (NaN with NaN); prints the first difference and the
 * count under `what`. Returns the number of differing elements (all of them for a dtype or
 * shape mismatch).
 */
static int64_t
compare_bits(const char *what, const struct gd_tensor *want, const struct gd_tensor *got)
{
    int64_t n = gd_tensor_numel(want);
    if (got == NULL || want->dtype != got->dtype || want->ndim != got->ndim ||
        memcmp(want->shape, got->shape, (size_t)want->ndim * sizeof want->shape[0]) != 0) {
        char a[96], b[96];
        fprintf(stderr, "REPRO-DIFF %s: cpu %s %s, cuda %s %s\n", what, gd_dtype_name(want->dtype),
                gd_shape_format(want->ndim, want->shape, a, sizeof a),
                got ? gd_dtype_name(got->dtype) : "none",
                got ? gd_shape_format(got->ndim, got->shape, b, sizeof b) : "");
        return n > 0 ? n : 1;
    }
    int64_t bad = 0, first = -1;
    for (int64_t i = 0; i < n; i++) {
        int same = nan_at(want, i) || nan_at(got, i) ? nan_at(want, i) && nan_at(got, i)
                                                     : bits_at(want, i) == bits_at(got, i);
        if (!same && bad++ == 0)
            first = i;
    }
    if (bad > 0)
        fprintf(stderr,
                "REPRO-DIFF %s: %" PRId64 " of %" PRId64 " elements differ; first at %" PRId64
                ": cpu %.9g (0x%" PRIx64 "), cuda %.9g (0x%" PRIx64 ")\n",
                what, bad, n, first, gd_tensor_get_f64(want, first), bits_at(want, first),
                gd_tensor_get_f64(got, first), bits_at(got, first));
    return bad;
}

/* One cuda pass: its name and environment. */
struct pass {
    const char *name;
    const char *grid;  /* GPUDIFF_REPRO_GRID, or NULL */
    const char *gemm;  /* GPUDIFF_REPRO_GEMM, or NULL */
    int products_only; /* only the ops that run the product */
};

static const struct pass passes[] = {
    {"bitwise", NULL, NULL, 0},
    {"bitwise grid=3", "3", NULL, 0},
    {"bitwise naive products", NULL, "naive", 1},
};
#define N_PASSES ((int)(sizeof passes / sizeof passes[0]))

static void
pass_env(const struct pass *p)
{
    if (p->grid)
        setenv("GPUDIFF_REPRO_GRID", p->grid, 1);
    else
        unsetenv("GPUDIFF_REPRO_GRID");
    if (p->gemm)
        setenv("GPUDIFF_REPRO_GEMM", p->gemm, 1);
    else
        unsetenv("GPUDIFF_REPRO_GEMM");
}

static int
runs_product(const char *op)
{
    return strcmp(op, "Conv") == 0 || strcmp(op, "ConvTranspose") == 0 || strcmp(op, "Gemm") == 0 ||
           strcmp(op, "MatMul") == 0;
}

static int64_t total_cases, total_diff;

/* Case name of group: cpu once, then each pass on cuda; the differing outputs. */
static int
check_case(const char *group, const char *name)
{
    struct of_case c;
    if (of_case_load(group, name, &c) != 0)
        return 1;
    struct gd_knobs bitwise;
    gd_knobs_init(&bitwise);
    snprintf(bitwise.repro, sizeof bitwise.repro, "bitwise");
    struct gd_tensor *want[OF_MAX_OUT] = {0};
    struct gd_err werr = {0};
    int wrc = of_case_run(&c, "cpu", NULL, want, &werr);
    int failed = 0;
    const char *np = getenv("GD_REPRO_PASSES");
    int n_passes = np != NULL && atoi(np) > 0 && atoi(np) < N_PASSES ? atoi(np) : N_PASSES;
    for (int p = 0; p < n_passes; p++) {
        if (passes[p].products_only && !runs_product(c.op))
            continue;
        pass_env(&passes[p]);
        struct gd_tensor *got[OF_MAX_OUT] = {0};
        struct gd_err gerr = {0};
        int grc = of_case_run(&c, "cuda", &bitwise, got, &gerr);
        char what[256];
        if (grc != wrc) {
            fprintf(stderr, "REPRO-DIFF %s/%s (%s, %s): cpu gives %s (%s), cuda %s (%s)\n", group,
                    name, c.op, passes[p].name, gd_err_name(wrc), werr.msg, gd_err_name(grc),
                    gerr.msg);
            failed = 1;
        } else if (wrc == 0) {
            for (int k = 0; k < c.n_out; k++) {
                snprintf(what, sizeof what, "%s/%s (%s, %s) out%d", group, name, c.op,
                         passes[p].name, k);
                failed |= compare_bits(what, want[k], got[k]) != 0;
            }
        }
        for (int k = 0; k < OF_MAX_OUT; k++)
            gd_tensor_free(got[k]);
    }
    pass_env(&(struct pass){"", NULL, NULL, 0});
    for (int k = 0; k < OF_MAX_OUT; k++)
        gd_tensor_free(want[k]);
    of_case_fini(&c);
    return failed;
}

START_TEST(test_op_group)
{
    const char *group = groups[_i];
    const char *only = getenv("GD_TEST_OPS");
    if (only != NULL && only[0] != '\0' && !in_list(only, group))
        return;
    static char names[MAX_CASES][OF_NAME_MAX];
    int n = of_case_names(group, names, MAX_CASES);
    ck_assert_msg(n > 0, "%s: no fixture cases", group);
    int bad = 0;
    for (int k = 0; k < n; k++)
        bad += check_case(group, names[k]);
    total_cases += n;
    total_diff += bad;
    fprintf(stderr, "REPRO-GROUP %s: %d cases, %d differ\n", group, n, bad);
    ck_assert_msg(bad == 0, "%s: %d of %d cases differ from cpu under --repro bitwise", group, bad,
                  n);
}
END_TEST

/* ---- a small network at several batch sizes ---- */

#define NET_ROWS 7

/* A float32 constant of the given shape, pseudo-random in [-scale, scale). */
static void
add_weight(struct gd_graph *g, const char *name, int ndim, const int64_t *shape, unsigned seed,
           float scale)
{
    struct gd_tensor *t = oh_random(ndim, shape, seed);
    float *v = t->data;
    for (int64_t i = 0; i < gd_tensor_numel(t); i++)
        v[i] *= scale;
    struct gd_err err = {0};
    ck_assert_msg(gd_graph_add_constant(g, name, t, &err) == 0, "%s", err.msg);
}

static struct gd_attr
attr_ints(const char *name, int n, const int64_t *v)
{
    struct gd_attr a = {0};
    a.name = strdup(name);
    a.type = GD_ATTR_INTS;
    a.n = n;
    a.ints = malloc((size_t)n * sizeof *a.ints);
    memcpy(a.ints, v, (size_t)n * sizeof *v);
    return a;
}

static struct gd_attr
attr_int(const char *name, int64_t v)
{
    struct gd_attr a = {0};
    a.name = strdup(name);
    a.type = GD_ATTR_INT;
    a.i = v;
    return a;
}

static void
node(struct gd_graph *g, const char *op, int n_in, const char *const *in, const char *out,
     int n_attrs, struct gd_attr *attrs)
{
    struct gd_err err = {0};
    const char *outs[1] = {out};
    ck_assert_msg(gd_graph_add_node(g, out, op, n_in, in, 1, outs, n_attrs, attrs, &err) == 0,
                  "%s: %s", out, err.msg);
}

/*
 * img (N, 3, 9, 9): conv1 3x3 pad 1 -> relu -> conv2 3x3 stride 2 dilation 1 -> pool
 * (AveragePool 2x2) -> gap (GlobalAveragePool) -> flat -> fc (Gemm, transB) -> sm (Softmax);
 * and flat_img (Flatten of img) -> mm (MatMul by W3) -> ln (LayerNormalization) -> ge (Gelu)
 * -> th (Tanh) -> ex (Exp). Every node keeps rows apart, so --batch may slice it.
 */
static struct gd_graph *
net(void)
{
    struct gd_err err = {0};
    struct gd_graph *g = gd_graph_new("repro-net", &err);
    struct gd_input_decl decl = {.dtype = GD_F32, .shape = {.ndim = 4, .dim = {-1, 3, 9, 9}}};
    ck_assert_int_eq(gd_graph_add_input(g, "img", &decl, &err), 0);
    int64_t w1[4] = {8, 3, 3, 3}, b1[1] = {8}, w2[4] = {6, 8, 3, 3}, b2[1] = {6};
    int64_t wf[2] = {10, 6}, bf[1] = {10}, w3[2] = {243, 37}, s3[1] = {37};
    add_weight(g, "w1", 4, w1, 11, 0.5f);
    add_weight(g, "b1", 1, b1, 12, 0.1f);
    add_weight(g, "w2", 4, w2, 13, 0.5f);
    add_weight(g, "b2", 1, b2, 14, 0.1f);
    add_weight(g, "wf", 2, wf, 15, 1.0f);
    add_weight(g, "bf", 1, bf, 16, 0.1f);
    add_weight(g, "w3", 2, w3, 17, 0.2f);
    add_weight(g, "g3", 1, s3, 18, 1.0f);
    add_weight(g, "h3", 1, s3, 19, 0.5f);
    int64_t one[2] = {1, 1}, three[2] = {3, 3}, two[2] = {2, 2}, pads1[4] = {1, 1, 1, 1};
    struct gd_attr a1[2] = {attr_ints("kernel_shape", 2, three), attr_ints("pads", 4, pads1)};
    node(g, "Conv", 3, (const char *[]){"img", "w1", "b1"}, "conv1", 2, a1);
    node(g, "Relu", 1, (const char *[]){"conv1"}, "relu1", 0, NULL);
    struct gd_attr a2[2] = {attr_ints("strides", 2, two), attr_ints("dilations", 2, one)};
    node(g, "Conv", 3, (const char *[]){"relu1", "w2", "b2"}, "conv2", 2, a2);
    struct gd_attr a3[1] = {attr_ints("kernel_shape", 2, two)};
    node(g, "AveragePool", 1, (const char *[]){"conv2"}, "pool", 1, a3);
    node(g, "GlobalAveragePool", 1, (const char *[]){"pool"}, "gap", 0, NULL);
    node(g, "Flatten", 1, (const char *[]){"gap"}, "flat", 0, NULL);
    struct gd_attr a4[1] = {attr_int("transB", 1)};
    node(g, "Gemm", 3, (const char *[]){"flat", "wf", "bf"}, "fc", 1, a4);
    node(g, "Softmax", 1, (const char *[]){"fc"}, "sm", 0, NULL);
    node(g, "Flatten", 1, (const char *[]){"img"}, "flat_img", 0, NULL);
    node(g, "MatMul", 2, (const char *[]){"flat_img", "w3"}, "mm", 0, NULL);
    node(g, "LayerNormalization", 3, (const char *[]){"mm", "g3", "h3"}, "ln", 0, NULL);
    node(g, "Gelu", 1, (const char *[]){"ln"}, "ge", 0, NULL);
    node(g, "Tanh", 1, (const char *[]){"ge"}, "th", 0, NULL);
    node(g, "Exp", 1, (const char *[]){"th"}, "ex", 0, NULL);
    ck_assert_int_eq(gd_graph_add_output(g, "sm", &err), 0);
    ck_assert_int_eq(gd_graph_add_output(g, "ex", &err), 0);
    ck_assert_msg(gd_graph_finalize(g, &err) == 0, "%s", err.msg);
    return g;
}

/* Every layer of a run, its slices appended in order (the whole layer in the end). */
#define LAYERS_MAX 1024
struct layers {
    int n;
    struct gd_tensor *t[LAYERS_MAX];
    int64_t filled[LAYERS_MAX];
};

static int
collect(void *user, const struct gd_layer *l, struct gd_err *err)
{
    struct layers *ls = user;
    ck_assert_int_lt(l->index, LAYERS_MAX);
    if (ls->t[l->index] == NULL) {
        int64_t shape[GD_MAX_DIMS];
        memcpy(shape, l->value->shape, sizeof shape);
        shape[0] = l->batch_total;
        ls->t[l->index] = gd_tensor_new(l->value->dtype, l->value->ndim, shape, NULL);
        if (l->index >= ls->n)
            ls->n = l->index + 1;
    }
    size_t bytes = gd_tensor_nbytes(l->value);
    memcpy((char *)ls->t[l->index]->data + ls->filled[l->index], l->value->data, bytes);
    ls->filled[l->index] += (int64_t)bytes;
    return 0;
}

static void
run_net(struct gd_graph *g, const char *backend, int64_t batch, const char *grid,
        struct layers *out)
{
    struct gd_knobs k;
    gd_knobs_init(&k);
    k.batch = batch;
    if (strcmp(backend, "cuda") == 0)
        snprintf(k.repro, sizeof k.repro, "bitwise");
    if (grid != NULL)
        setenv("GPUDIFF_REPRO_GRID", grid, 1);
    else
        unsetenv("GPUDIFF_REPRO_GRID");
    struct gd_err err = {0};
    struct gd_session *s = gd_session_new(g, backend, &k, &err);
    ck_assert_msg(s != NULL, "%s: %s", backend, err.msg);
    int64_t shape[4] = {NET_ROWS, 3, 9, 9};
    struct gd_tensor *x = oh_random(4, shape, 99);
    const struct gd_tensor *in[1] = {x};
    memset(out, 0, sizeof *out);
    ck_assert_msg(gd_session_run(s, 1, in, collect, out, &err) == 0, "%s: %s", backend, err.msg);
    gd_session_free(s);
    gd_tensor_free(x);
    unsetenv("GPUDIFF_REPRO_GRID");
}

static void
layers_free(struct layers *ls)
{
    for (int i = 0; i < ls->n; i++)
        gd_tensor_free(ls->t[i]);
}

START_TEST(test_net_batches)
{
    struct gd_graph *g = net();
    static struct layers want, got;
    run_net(g, "cpu", 0, NULL, &want);
    ck_assert_int_gt(want.n, 10);
    static const struct {
        int64_t batch;
        const char *grid;
    } runs[] = {{0, NULL}, {1, NULL}, {3, NULL}, {0, "1"}, {3, "2"}};
    int64_t bad = 0;
    for (size_t r = 0; r < sizeof runs / sizeof runs[0]; r++) {
        run_net(g, "cuda", runs[r].batch, runs[r].grid, &got);
        ck_assert_int_eq(got.n, want.n);
        for (int i = 0; i < want.n; i++) {
            char what[128];
            snprintf(what, sizeof what, "net layer %d, --batch %lld, grid %s", i,
                     (long long)runs[r].batch, runs[r].grid ? runs[r].grid : "any");
            bad += compare_bits(what, want.t[i], got.t[i]);
        }
        layers_free(&got);
    }
    layers_free(&want);
    gd_graph_free(g);
    ck_assert_msg(bad == 0, "%lld layer elements of the network differ from cpu", (long long)bad);
}
END_TEST

/* ---- the tiny transformers of tests/fixtures/onnx/transformers, in each float format ---- */

static void
run_onnx(struct gd_graph *g, const char *backend, int n_in, const struct gd_tensor *const *in,
         struct layers *out)
{
    struct gd_knobs k;
    gd_knobs_init(&k);
    if (strcmp(backend, "cuda") == 0)
        snprintf(k.repro, sizeof k.repro, "bitwise");
    struct gd_err err = {0};
    struct gd_session *s = gd_session_new(g, backend, &k, &err);
    ck_assert_msg(s != NULL, "%s: %s", backend, err.msg);
    memset(out, 0, sizeof *out);
    ck_assert_msg(gd_session_run(s, n_in, in, collect, out, &err) == 0, "%s: %s", backend, err.msg);
    gd_session_free(s);
}

START_TEST(test_transformers)
{
    static const char *const models[] = {"gpt2_tiny", "bert_tiny"};
    static const enum gd_dtype dtypes[] = {GD_F32, GD_F16, GD_BF16};
    const char *m = models[_i / 3];
    enum gd_dtype dt = dtypes[_i % 3];
    char path[1024], ids[1024], mask[1024];
    snprintf(path, sizeof path, "%s/onnx/transformers/%s.onnx", fixtures(), m);
    snprintf(ids, sizeof ids, "%s/onnx/transformers/%s.input_ids.npy", fixtures(), m);
    snprintf(mask, sizeof mask, "%s/onnx/transformers/%s.attention_mask.npy", fixtures(), m);
    struct gd_err err = {0};
    struct gd_graph *g = NULL;
    struct gd_onnx_opts oo = {.defer_finalize = 1};
    ck_assert_msg(gd_onnx_load(path, &oo, NULL, &g, &err) == 0, "%s: %s", path, err.msg);
    if (dt != GD_F32)
        ck_assert_int_eq(gd_graph_cast_floats(g, dt, &err), 0);
    struct gd_tensor *in[2] = {NULL, NULL};
    ck_assert_msg(gd_npy_load(ids, &in[0], &err) == 0, "%s", err.msg);
    int n_in = g->n_inputs;
    if (n_in > 1)
        ck_assert_msg(gd_npy_load(mask, &in[1], &err) == 0, "%s", err.msg);
    ck_assert_msg(gd_graph_finalize_with(g, (const struct gd_tensor *const *)in, &err) == 0, "%s",
                  err.msg);
    static struct layers want, got;
    run_onnx(g, "cpu", n_in, (const struct gd_tensor *const *)in, &want);
    run_onnx(g, "cuda", n_in, (const struct gd_tensor *const *)in, &got);
    ck_assert_int_eq(got.n, want.n);
    int64_t bad = 0;
    for (int i = 0; i < want.n; i++) {
        char what[160];
        snprintf(what, sizeof what, "%s %s layer %d", m, gd_dtype_name(dt), i);
        bad += compare_bits(what, want.t[i], got.t[i]);
    }
    fprintf(stderr, "REPRO-MODEL %s %s: %d layers, %lld elements differ\n", m, gd_dtype_name(dt),
            want.n, (long long)bad);
    layers_free(&want);
    layers_free(&got);
    for (int k = 0; k < 2; k++)
        gd_tensor_free(in[k]);
    gd_graph_free(g);
    ck_assert_msg(bad == 0, "%s in %s: %lld layer elements differ from cpu", m, gd_dtype_name(dt),
                  (long long)bad);
}
END_TEST

int
main(void)
{
    struct gd_err err = {0};
    int has_cuda = 0;
    for (const char *const *n = gd_backend_names(); *n != NULL; n++)
        has_cuda |= strcmp(*n, "cuda") == 0;
    if (!has_cuda) {
        fprintf(stderr, "SKIP: no cuda backend in this build\n");
        return 77;
    }
    int64_t shape[1] = {4};
    struct gd_tensor *x = oh_random(1, shape, 3), *out[1] = {NULL};
    int rc = oh_run("cuda", "Identity", 1, &x, 0, NULL, 1, out, NULL, &err);
    gd_tensor_free(x);
    gd_tensor_free(out[0]);
    if (rc == GD_EDEVICE) {
        fprintf(stderr, "SKIP: no GPU: %s\n", err.msg);
        return 77;
    }
    list_groups();
    Suite *s = suite_create("repro");
    TCase *tc = tcase_create("bitwise");
    tcase_set_timeout(tc, 600);
    tcase_add_loop_test(tc, test_op_group, 0, n_groups);
    const char *models = getenv("GD_REPRO_MODELS");
    int with_models = models == NULL || strcmp(models, "0") != 0;
    if (with_models) {
        tcase_add_test(tc, test_net_batches);
        tcase_add_loop_test(tc, test_transformers, 0, 6);
    }
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_ENV);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    fprintf(stderr, "REPRO-SUMMARY %lld op cases, %lld differ; %d of %d tests failed\n",
            (long long)total_cases, (long long)total_diff, failed, n_groups + 7 * with_models);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
