/*
 * check_onnx.c: the ONNX loader (engine/io/onnx*.c) on the small models of
 * tests/fixtures/onnx (made by make_onnx_fixtures.py): every initializer storage form,
 * Constant nodes, external data and its refusals, folds, the version rules, outputs no node
 * makes, inputs read as parameters, TensorProto files, and broken or unsupported models,
 * each of which must fail with its code and a message naming what is wrong. Expected values
 * are written out from the numbers in the fixture script, or computed here in double.
 */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "gpudiff/graph.h"
#include "gpudiff/onnx.h"
#include "gpudiff/session.h"
#include "check_io.h"

static const char *
model_path(const char *name)
{
    static char path[4096];
    snprintf(path, sizeof path, "%s/onnx/%s", GD_FIXTURES, name);
    return path;
}

static struct gd_graph *
load_ok(const char *name)
{
    struct gd_err err = {0};
    struct gd_graph *g = NULL;
    int rc = gd_onnx_load(model_path(name), NULL, NULL, &g, &err);
    CHECK_OK(rc, err, name);
    return g;
}

/* Loads a model that must fail with code and a message holding fragment. */
static void
load_fails(const char *name, int code, const char *fragment, enum gd_onnx_refusal refusal)
{
    struct gd_err err = {0};
    struct gd_graph *g = NULL;
    struct gd_onnx_report report;
    int rc = gd_onnx_load(model_path(name), NULL, &report, &g, &err);
    CHECK_FAILED(rc, err, code, name, fragment);
    ck_assert_ptr_null(g);
    if (code == GD_ENOTSUP)
        ck_assert_msg(report.refusal == refusal, "%s: refusal %d, expected %d", name,
                      report.refusal, refusal);
}

/* What a capture callback collects: the graph outputs, by output slot. */
struct outs {
    const struct gd_graph *g;
    struct gd_tensor *t[8];
    char layer[16][64];
    int n_layers;
};

static int
keep_outputs(void *user, const struct gd_layer *layer, struct gd_err *err)
{
    struct outs *o = user;
    if (o->n_layers < 16)
        snprintf(o->layer[o->n_layers++], sizeof o->layer[0], "%s", layer->name);
    int v = o->g->nodes[layer->node_index].outputs[layer->output_slot];
    for (int k = 0; k < o->g->n_outputs; k++)
        if (o->g->outputs[k] == v) {
            gd_tensor_free(o->t[k]);
            o->t[k] = gd_tensor_dup(layer->value, err);
        }
    return 0;
}

/* Runs g on cpu64 with the given inputs; the outputs land in o. */
static void
run_cpu64(struct gd_graph *g, int n, const struct gd_tensor *const *in, struct outs *o)
{
    struct gd_err err = {0};
    struct gd_knobs knobs;
    gd_knobs_init(&knobs);
    knobs.threads = 1;
    struct gd_session *s = gd_session_new(g, "cpu64", &knobs, &err);
    CHECK_OK(s == NULL ? err.code : 0, err, "session");
    memset(o, 0, sizeof *o);
    o->g = g;
    int rc = gd_session_run(s, n, in, keep_outputs, o, &err);
    CHECK_OK(rc, err, "run");
    gd_session_free(s);
}

static void
outs_free(struct outs *o)
{
    for (int k = 0; k < 8; k++)
        gd_tensor_free(o->t[k]);
}

static struct gd_tensor *
f32(int ndim, const int64_t *shape, const float *v)
{
    struct gd_tensor *t = gd_tensor_new(GD_F32, ndim, shape, NULL);
    ck_assert_ptr_nonnull(t);
    memcpy(t->data, v, gd_tensor_nbytes(t));
    return t;
}

static const struct gd_tensor *
constant(const struct gd_graph *g, const char *name)
{
    int v = gd_graph_find_value(g, name);
    ck_assert_msg(v >= 0 && g->values[v].constant != NULL, "no constant %s", name);
    return g->values[v].constant;
}

START_TEST(test_valid_model)
{
    struct gd_graph *g = load_ok("add_relu.onnx");
    ck_assert_int_eq(g->n_nodes, 2);
    ck_assert_str_eq(g->nodes[1].name, "act");
    /* One output per node: the value is named after the node, so is the layer. */
    ck_assert_str_eq(g->values[g->nodes[1].outputs[0]].name, "act");
    ck_assert_int_eq(g->n_inputs, 1);
    int64_t shape[2] = {2, 3};
    float x[6] = {0.5f, 1, -3.5f, 4, -5.5f, 7};
    float w[6] = {1, -2, 3, -4, 5, -6};
    struct gd_tensor *in = f32(2, shape, x);
    struct outs o;
    run_cpu64(g, 1, (const struct gd_tensor *const *)&in, &o);
    ck_assert_str_eq(o.layer[0], "plus");
    ck_assert_str_eq(o.layer[1], "act");
    for (int i = 0; i < 6; i++) {
        double want = x[i] + w[i] > 0 ? (double)x[i] + w[i] : 0;
        ck_assert_msg(((double *)o.t[0]->data)[i] == want, "y[%d] = %g, expected %g", i,
                      ((double *)o.t[0]->data)[i], want);
    }
    outs_free(&o);
    gd_tensor_free(in);
    gd_graph_free(g);
}
END_TEST

START_TEST(test_broken_files)
{
    load_fails("truncated.onnx", GD_EFORMAT, "field graph is cut", GD_ONNX_OK);
    load_fails("wrong_type.onnx", GD_EFORMAT, "field graph (7) has wire type varint", GD_ONNX_OK);
    load_fails("dangling.onnx", GD_EFORMAT, "reads nowhere, which no node", GD_ONNX_OK);
    load_fails("cycle.onnx", GD_EFORMAT, "the nodes form a cycle", GD_ONNX_OK);
    load_fails("dup_output.onnx", GD_EFORMAT, "value y is produced twice: by node one and node two",
               GD_ONNX_OK);
    load_fails("raw_short.onnx", GD_EFORMAT, "raw_data holds 8 bytes, float32 needs 12",
               GD_ONNX_OK);
    /* Every prefix of a valid file fails cleanly or, for the empty prefix, as a model
     * without a graph; none crashes (the sanitized build checks the memory). */
    size_t len;
    unsigned char *buf = slurp(model_path("add_relu.onnx"), &len);
    for (size_t cut = 0; cut < len; cut++) {
        struct gd_err err = {0};
        struct gd_graph *g = NULL;
        int rc = gd_onnx_parse(buf, cut, "prefix", NULL, NULL, NULL, &g, &err);
        ck_assert_msg(rc != 0 && g == NULL, "a prefix of %zu bytes loaded", cut);
        ck_assert_msg(rc == GD_EFORMAT || rc == GD_EMODEL, "prefix %zu: %s", cut, err.msg);
    }
    free(buf);
}
END_TEST

START_TEST(test_unsupported)
{
    struct gd_err err = {0};
    struct gd_graph *g = NULL;
    struct gd_onnx_report report;
    int rc = gd_onnx_load(model_path("missing_ops.onnx"), NULL, &report, &g, &err);
    /* Every missing op in one message, with its node count and first nodes. */
    CHECK_FAILED(rc, err, GD_ENOTSUP, "FooBar (2 nodes: foo1, foo2)", "BazQux (1 node: baz1)");
    ck_assert_str_eq(report.missing_ops, "FooBar,BazQux");
    ck_assert_int_eq(report.refusal, GD_ONNX_REFUSED_OP);
    load_fails("domain.onnx", GD_ENOTSUP, "com.microsoft.Gelu (1 node: ms)", GD_ONNX_REFUSED_OP);
    load_fails("if.onnx", GD_ENOTSUP, "If (a subgraph op) (1 node: choice)", GD_ONNX_REFUSED_OP);
    load_fails("opset22.onnx", GD_ENOTSUP, "opset 22; this loader takes 1 to 21",
               GD_ONNX_REFUSED_FORM);
    load_fails("string_init.onnx", GD_ENOTSUP, "no STRING tensors", GD_ONNX_REFUSED_DTYPE);
}
END_TEST

START_TEST(test_initializer_forms)
{
    struct gd_graph *g = load_ok("init_forms.onnx");
    const struct gd_tensor *t;
    t = constant(g, "raw_f32");
    ck_assert(t->dtype == GD_F32 && ((float *)t->data)[0] == 1.5f &&
              ((float *)t->data)[1] == -2.25f);
    t = constant(g, "typed_f32");
    ck_assert(t->dtype == GD_F32 && ((float *)t->data)[0] == 0.5f && ((float *)t->data)[1] == 4);
    t = constant(g, "typed_f64");
    ck_assert(t->dtype == GD_F64 && ((double *)t->data)[0] == 1.0 / 3.0);
    t = constant(g, "typed_i64");
    ck_assert(t->dtype == GD_I64 && ((int64_t *)t->data)[0] == -7 &&
              ((int64_t *)t->data)[1] == (int64_t)1 << 40);
    t = constant(g, "typed_i8");
    ck_assert(t->dtype == GD_I8 && ((int8_t *)t->data)[0] == -128 &&
              ((int8_t *)t->data)[1] == 127);
    t = constant(g, "typed_f16");
    ck_assert(t->dtype == GD_F16 && ((uint16_t *)t->data)[0] == 0x3c00 &&
              ((uint16_t *)t->data)[1] == 0xc000);
    t = constant(g, "raw_bf16");
    ck_assert(t->dtype == GD_BF16 && ((uint16_t *)t->data)[0] == 0x3f80 &&
              ((uint16_t *)t->data)[1] == 0x4040);
    t = constant(g, "typed_bool");
    ck_assert(t->dtype == GD_BOOL && ((uint8_t *)t->data)[0] == 1 &&
              ((uint8_t *)t->data)[1] == 0 && ((uint8_t *)t->data)[2] == 1);
    /* Initializers that are not graph inputs are weights; x is the only input. */
    ck_assert_int_eq(g->n_inputs, 1);
    gd_graph_free(g);
}
END_TEST

/* Copies fixture name into dir; returns the copy's path (static). */
static const char *
copy_to(const char *dir, const char *name)
{
    static char path[4096];
    size_t len;
    unsigned char *buf = slurp(model_path(name), &len);
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    ck_assert_ptr_nonnull(f);
    ck_assert(fwrite(buf, 1, len, f) == len);
    fclose(f);
    free(buf);
    return path;
}

START_TEST(test_external_data)
{
    struct gd_graph *g = load_ok("external.onnx");
    const struct gd_tensor *t = constant(g, "E");
    ck_assert(((float *)t->data)[0] == 10 && ((float *)t->data)[1] == 20 &&
              ((float *)t->data)[2] == 30);
    gd_graph_free(g);
    load_fails("external_abs.onnx", GD_EINVAL, "is absolute", GD_ONNX_OK);
    load_fails("external_dotdot.onnx", GD_EINVAL, "leaves the model's folder (..)", GD_ONNX_OK);
    load_fails("external_past_end.onnx", GD_EFORMAT, "do not fit", GD_ONNX_OK);
    /* A symbolic link inside the folder that points outside it is refused; a missing file
     * is GD_ENOENT. */
    char *dir = scratch_dir(), *outside = scratch_dir(), link[4096], target[4096];
    const char *model = copy_to(dir, "external_link.onnx");
    char model_copy[4096];
    snprintf(model_copy, sizeof model_copy, "%s", model);
    struct gd_err err = {0};
    int rc = gd_onnx_load(model_copy, NULL, NULL, &g, &err);
    CHECK_FAILED(rc, err, GD_ENOENT, "link.bin", "no such file");
    snprintf(target, sizeof target, "%s/ext.bin", outside);
    copy_to(outside, "ext.bin");
    snprintf(link, sizeof link, "%s/link.bin", dir);
    ck_assert(symlink(target, link) == 0);
    rc = gd_onnx_load(model_copy, NULL, NULL, &g, &err);
    CHECK_FAILED(rc, err, GD_EINVAL, "link.bin", "outside the model's folder");
    scratch_remove(dir);
    scratch_remove(outside);
}
END_TEST

START_TEST(test_constants)
{
    struct gd_graph *g = load_ok("constants.onnx");
    /* Constants are folds computed at load, and the Reshape of a constant too: only the
     * three Adds are layers. */
    ck_assert_int_eq(g->n_nodes, 3);
    ck_assert_int_eq(g->n_folds, 5);
    int64_t shape[1] = {2};
    float x[2] = {0.25f, -8};
    struct gd_tensor *in = f32(1, shape, x);
    struct outs o;
    run_cpu64(g, 1, (const struct gd_tensor *const *)&in, &o);
    double want[2] = {0.25 + 2.5 + 1 + 3, -8 + 2.5 + 2 + 4};
    for (int i = 0; i < 2; i++)
        ck_assert_msg(((double *)o.t[0]->data)[i] == want[i], "y[%d] = %g, expected %g", i,
                      ((double *)o.t[0]->data)[i], want[i]);
    outs_free(&o);
    gd_tensor_free(in);
    gd_graph_free(g);
}
END_TEST

START_TEST(test_fold_per_input_shape)
{
    struct gd_graph *g = load_ok("fold.onnx");
    /* Shape, Gather, Unsqueeze, Concat and the Constants fold; Reshape and Relu are layers. */
    ck_assert_int_eq(g->n_nodes, 2);
    ck_assert_str_eq(g->nodes[0].name, "flatten");
    ck_assert_str_eq(g->nodes[1].name, "act");
    int shape_folds = 0;
    for (int f = 0; f < g->n_folds; f++)
        shape_folds += !g->folds[f].at_load;
    ck_assert_int_eq(shape_folds, 4); /* Shape, Gather, Unsqueeze, Concat: per input shape */
    struct gd_err err = {0};
    struct gd_knobs knobs;
    gd_knobs_init(&knobs);
    knobs.threads = 1;
    struct gd_session *s = gd_session_new(g, "cpu", &knobs, &err);
    CHECK_OK(s == NULL ? err.code : 0, err, "session");
    /* The same session, two batch sizes: the target [N, -1] is folded again for each. */
    for (int64_t n = 1; n <= 3; n += 2) {
        int64_t shape[3] = {n, 3, 4};
        struct gd_tensor *in = gd_tensor_new(GD_F32, 3, shape, NULL);
        for (int64_t i = 0; i < 12 * n; i++)
            ((float *)in->data)[i] = (float)(i % 5) - 2;
        struct outs o;
        memset(&o, 0, sizeof o);
        o.g = g;
        int rc = gd_session_run(s, 1, (const struct gd_tensor *const *)&in, keep_outputs, &o,
                                &err);
        CHECK_OK(rc, err, "run");
        ck_assert_int_eq(o.n_layers, 2);
        ck_assert(o.t[0]->ndim == 2 && o.t[0]->shape[0] == n && o.t[0]->shape[1] == 12);
        for (int64_t i = 0; i < 12 * n; i++) {
            float v = ((float *)in->data)[i];
            ck_assert(((float *)o.t[0]->data)[i] == (v > 0 ? v : 0));
        }
        outs_free(&o);
        gd_tensor_free(in);
    }
    gd_session_free(s);
    gd_graph_free(g);
}
END_TEST

/* Softmax over the last axis of rows of `len`, in double. */
static void
softmax_rows(const float *x, int rows, int len, double *y)
{
    for (int r = 0; r < rows; r++) {
        double m = -INFINITY, sum = 0;
        for (int i = 0; i < len; i++)
            m = fmax(m, x[r * len + i]);
        for (int i = 0; i < len; i++)
            sum += exp(x[r * len + i] - m);
        for (int i = 0; i < len; i++)
            y[r * len + i] = exp(x[r * len + i] - m) / sum;
    }
}

START_TEST(test_softmax_opset11)
{
    int64_t shape[3] = {2, 3, 4};
    float x[24];
    for (int i = 0; i < 24; i++)
        x[i] = (float)((i * 7) % 11) / 4 - 1;
    struct gd_tensor *in = f32(3, shape, x);
    double want[24];
    /* axis 1 before opset 13: each of the 2 rows of 3 x 4 = 12 values is one softmax. */
    softmax_rows(x, 2, 12, want);
    struct gd_graph *g = load_ok("softmax11.onnx");
    ck_assert_int_eq(g->n_nodes, 3); /* Flatten, Softmax(axis -1), Reshape */
    ck_assert_str_eq(g->nodes[2].name, "sm");
    struct outs o;
    run_cpu64(g, 1, (const struct gd_tensor *const *)&in, &o);
    ck_assert(o.t[0]->ndim == 3 && o.t[0]->shape[2] == 4);
    for (int i = 0; i < 24; i++)
        ck_assert_msg(fabs(((double *)o.t[0]->data)[i] - want[i]) <= 1e-15,
                      "y[%d] = %.17g, expected %.17g", i, ((double *)o.t[0]->data)[i], want[i]);
    outs_free(&o);
    gd_graph_free(g);
    /* axis 2, the last: the same meaning as today's Softmax, one node. */
    softmax_rows(x, 6, 4, want);
    g = load_ok("softmax11_last.onnx");
    ck_assert_int_eq(g->n_nodes, 1);
    run_cpu64(g, 1, (const struct gd_tensor *const *)&in, &o);
    for (int i = 0; i < 24; i++)
        ck_assert(fabs(((double *)o.t[0]->data)[i] - want[i]) <= 1e-15);
    outs_free(&o);
    gd_graph_free(g);
    gd_tensor_free(in);
}
END_TEST

START_TEST(test_version_rules)
{
    /* Opset 6's broadcast=1, axis=1: B [3] adds along dimension 1 of x [2, 3, 2]. */
    struct gd_graph *g = load_ok("broadcast6.onnx");
    int64_t shape[3] = {2, 3, 2};
    float x[12];
    for (int i = 0; i < 12; i++)
        x[i] = (float)i;
    struct gd_tensor *in = f32(3, shape, x);
    struct outs o;
    run_cpu64(g, 1, (const struct gd_tensor *const *)&in, &o);
    for (int i = 0; i < 12; i++) {
        double want = x[i] + 10.0 * (1 + (i / 2) % 3);
        ck_assert_msg(((double *)o.t[0]->data)[i] == want, "y[%d] = %g, expected %g", i,
                      ((double *)o.t[0]->data)[i], want);
    }
    outs_free(&o);
    gd_tensor_free(in);
    gd_graph_free(g);
    /* An axis of 2^63 - 1 fits no rank (rank - axis - rank overflowed int64). */
    load_fails("broadcast6_axis_max.onnx", GD_EMODEL, "from axis 9223372036854775807",
               GD_ONNX_OK);
    /* Upsample-7 becomes Resize; without a Resize op the message names Resize. */
    enum gd_op resize;
    if (gd_op_from_name("Resize", &resize) != 0)
        load_fails("upsample7.onnx", GD_ENOTSUP, "Resize (1 node: up)", GD_ONNX_REFUSED_OP);
}
END_TEST

START_TEST(test_input_as_parameter)
{
    struct gd_err err = {0};
    struct gd_graph *g = NULL;
    struct gd_onnx_opts opts = {.defer_finalize = 1};
    int rc = gd_onnx_load(model_path("reshape_input.onnx"), &opts, NULL, &g, &err);
    CHECK_OK(rc, err, "reshape_input.onnx");
    int64_t xs[2] = {2, 3}, ss[1] = {2};
    float x[6] = {1, 2, 3, 4, 5, 6};
    struct gd_tensor *in[2] = {f32(2, xs, x), gd_tensor_new(GD_I64, 1, ss, NULL)};
    ((int64_t *)in[1]->data)[0] = 3;
    ((int64_t *)in[1]->data)[1] = -1;
    rc = gd_graph_finalize_with(g, (const struct gd_tensor *const *)in, &err);
    CHECK_OK(rc, err, "finalize");
    struct outs o;
    run_cpu64(g, 2, (const struct gd_tensor *const *)in, &o);
    ck_assert(o.t[0]->ndim == 2 && o.t[0]->shape[0] == 3 && o.t[0]->shape[1] == 2);
    /* Another shape value in the same graph: the inference reads the run's. */
    ((int64_t *)in[1]->data)[0] = 1;
    ((int64_t *)in[1]->data)[1] = 6;
    outs_free(&o);
    run_cpu64(g, 2, (const struct gd_tensor *const *)in, &o);
    ck_assert(o.t[0]->ndim == 2 && o.t[0]->shape[0] == 1 && o.t[0]->shape[1] == 6);
    for (int i = 0; i < 6; i++)
        ck_assert(((double *)o.t[0]->data)[i] == x[i]);
    outs_free(&o);
    gd_tensor_free(in[0]);
    gd_tensor_free(in[1]);
    gd_graph_free(g);
}
END_TEST

START_TEST(test_outputs_no_node_makes)
{
    struct gd_graph *g = load_ok("outputs.onnx");
    ck_assert_int_eq(g->n_outputs, 4);
    int64_t shape[2] = {2, 2};
    float x[4] = {-1, 2, -3, 4};
    struct gd_tensor *in = f32(2, shape, x);
    struct outs o;
    run_cpu64(g, 1, (const struct gd_tensor *const *)&in, &o);
    /* Each becomes an Identity layer named after the output. */
    ck_assert_str_eq(g->values[g->outputs[0]].name, "x/output");
    ck_assert_str_eq(g->values[g->outputs[1]].name, "k");
    for (int i = 0; i < 4; i++)
        ck_assert(((double *)o.t[0]->data)[i] == x[i]);
    ck_assert(((double *)o.t[1]->data)[0] == 7);
    ck_assert(o.t[2]->dtype == GD_I64 && ((int64_t *)o.t[2]->data)[0] == 2 &&
              ((int64_t *)o.t[2]->data)[1] == 2);
    for (int i = 0; i < 4; i++)
        ck_assert(((double *)o.t[3]->data)[i] == (x[i] > 0 ? x[i] : 0));
    outs_free(&o);
    gd_tensor_free(in);
    gd_graph_free(g);
}
END_TEST

START_TEST(test_tensor_files)
{
    struct gd_err err = {0};
    struct gd_tensor *t = NULL;
    char *name = NULL;
    int rc = gd_onnx_tensor_load(model_path("tensor_f32.pb"), &t, &name, &err);
    CHECK_OK(rc, err, "tensor_f32.pb");
    int64_t shape[2] = {2, 3};
    check_shape(t, GD_F32, 2, shape);
    for (int i = 0; i < 6; i++)
        ck_assert(((float *)t->data)[i] == (float)(i + 1));
    ck_assert_str_eq(name, "t");
    free(name);
    gd_tensor_free(t);
    rc = gd_onnx_tensor_load(model_path("tensor_i64.pb"), &t, NULL, &err);
    CHECK_OK(rc, err, "tensor_i64.pb");
    ck_assert(t->dtype == GD_I64 && ((int64_t *)t->data)[0] == -1 &&
              ((int64_t *)t->data)[1] == 5);
    gd_tensor_free(t);
    /* A model is no TensorProto it can decode into data. */
    rc = gd_onnx_tensor_load(model_path("truncated.onnx"), &t, NULL, &err);
    ck_assert_msg(rc == GD_EFORMAT, "truncated.onnx as a tensor: %d %s", rc, err.msg);
    rc = gd_onnx_tensor_load(model_path("no-such.pb"), &t, NULL, &err);
    ck_assert_int_eq(rc, GD_ENOENT);
}
END_TEST

static Suite *
onnx_suite(void)
{
    Suite *s = suite_create("onnx");
    TCase *tc = tcase_create("loader");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_valid_model);
    tcase_add_test(tc, test_broken_files);
    tcase_add_test(tc, test_unsupported);
    tcase_add_test(tc, test_initializer_forms);
    tcase_add_test(tc, test_external_data);
    tcase_add_test(tc, test_constants);
    tcase_add_test(tc, test_fold_per_input_shape);
    tcase_add_test(tc, test_softmax_opset11);
    tcase_add_test(tc, test_version_rules);
    tcase_add_test(tc, test_input_as_parameter);
    tcase_add_test(tc, test_outputs_no_node_makes);
    tcase_add_test(tc, test_tensor_files);
    suite_add_tcase(s, tc);
    return s;
}

int
main(void)
{
    SRunner *r = srunner_create(onnx_suite());
    srunner_run_all(r, CK_NORMAL);
    int failed = srunner_ntests_failed(r);
    srunner_free(r);
    return failed == 0 ? 0 : 1;
}
