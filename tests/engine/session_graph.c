/* session_graph.c: the session tests' model and its expected values (session_graph.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <check.h>

#include "gpudiff/io.h"
#include "gpudiff/onnx.h"
#include "gpudiff/session.h"
#include "session_graph.h"

#define ROWS SG_ROWS
#define IN   SG_IN
#define OUT  SG_OUT

static const float W[OUT][IN] = {{1, -2, 3, 0}, {-1, 1, 1, 2}, {2, 0, -3, 1}};
static const float B[OUT] = {1, -4, 2};

static struct gd_tensor *
tensor_of(int ndim, const int64_t *shape, const float *values)
{
    struct gd_err err = {0};
    struct gd_tensor *t = gd_tensor_new(GD_F32, ndim, shape, &err);
    ck_assert_msg(t != NULL, "%s", err.msg);
    memcpy(t->data, values, gd_tensor_nbytes(t));
    return t;
}

struct gd_graph *
sg_graph(int with_conv)
{
    struct gd_err err = {0};
    struct gd_graph *g = gd_graph_new("session-test", &err);
    ck_assert_ptr_nonnull(g);
    struct gd_input_decl decl = {.dtype = GD_F32, .shape = {.ndim = 2, .dim = {-1, IN}}};
    ck_assert_int_eq(gd_graph_add_input(g, "x", &decl, &err), 0);
    int64_t ws[2] = {OUT, IN}, bs[1] = {OUT};
    ck_assert_int_eq(gd_graph_add_constant(g, "W", tensor_of(2, ws, &W[0][0]), &err), 0);
    ck_assert_int_eq(gd_graph_add_constant(g, "b", tensor_of(1, bs, B), &err), 0);
    struct gd_attr *attrs = calloc(1, sizeof *attrs);
    attrs[0].name = strdup("transB");
    attrs[0].type = GD_ATTR_INT;
    attrs[0].i = 1;
    const char *fc_in[] = {"x", "W", "b"}, *fc_out[] = {"fc"};
    ck_assert_int_eq(gd_graph_add_node(g, "fc", "Gemm", 3, fc_in, 1, fc_out, 1, attrs, &err), 0);
    free(attrs);
    const char *act_in[] = {"fc"}, *act_out[] = {"act"};
    ck_assert_int_eq(gd_graph_add_node(g, "act", "Relu", 1, act_in, 1, act_out, 0, NULL, &err), 0);
    ck_assert_int_eq(gd_graph_add_output(g, "act", &err), 0);
    if (with_conv) {
        struct gd_input_decl d4 = {.dtype = GD_F32, .shape = {.ndim = 4, .dim = {-1, 1, 4, 4}}};
        ck_assert_int_eq(gd_graph_add_input(g, "img", &d4, &err), 0);
        int64_t ks[4] = {1, 1, 3, 3};
        float k[9] = {1, 0, 1, 0, 1, 0, 1, 0, 1};
        ck_assert_int_eq(gd_graph_add_constant(g, "k", tensor_of(4, ks, k), &err), 0);
        const char *c_in[] = {"img", "k"}, *c_out[] = {"conv"};
        ck_assert_int_eq(gd_graph_add_node(g, "conv", "Conv", 2, c_in, 1, c_out, 0, NULL, &err), 0);
        ck_assert_int_eq(gd_graph_add_output(g, "conv", &err), 0);
    }
    ck_assert_msg(gd_graph_finalize(g, &err) == 0, "%s", err.msg);
    return g;
}

struct gd_tensor *
sg_input(void)
{
    float x[ROWS * IN];
    for (int i = 0; i < ROWS * IN; i++)
        x[i] = (float)((i * 7) % 11 - 5);
    int64_t shape[2] = {ROWS, IN};
    return tensor_of(2, shape, x);
}

/* relu(x W^T + b) in integers. */
static void
expected(const struct gd_tensor *x, float out[ROWS][OUT])
{
    const float *xv = x->data;
    for (int r = 0; r < ROWS; r++)
        for (int o = 0; o < OUT; o++) {
            long acc = (long)B[o];
            for (int i = 0; i < IN; i++)
                acc += (long)xv[r * IN + i] * (long)W[o][i];
            out[r][o] = acc > 0 ? (float)acc : 0.0f;
        }
}

void
sg_check_output(const struct gd_tensor *y, const struct gd_tensor *x, const char *what)
{
    float want[ROWS][OUT];
    expected(x, want);
    ck_assert_ptr_nonnull(y);
    ck_assert_int_eq(y->dtype, GD_F32);
    ck_assert_int_eq(y->ndim, 2);
    ck_assert_int_eq(y->shape[0], ROWS);
    ck_assert_int_eq(y->shape[1], OUT);
    const float *yv = y->data;
    for (int r = 0; r < ROWS; r++)
        for (int o = 0; o < OUT; o++)
            ck_assert_msg(yv[r * OUT + o] == want[r][o], "%s: row %d col %d is %g, not %g", what, r,
                          o, yv[r * OUT + o], want[r][o]);
}

struct gd_tensor *
sg_image(int64_t n)
{
    int64_t shape[4] = {n, 1, 4, 4};
    struct gd_err err = {0};
    struct gd_tensor *t = gd_tensor_new(GD_F32, 4, shape, &err);
    ck_assert_msg(t != NULL, "%s", err.msg);
    float *v = t->data;
    for (int64_t i = 0; i < n * 16; i++)
        v[i] = (float)((i * 5) % 9 - 4);
    return t;
}

/* tests/fixtures, as configured; GD_TEST_FIXTURES overrides it for a build copied to the GPU
 * machine. */
static const char *
fixtures_dir(void)
{
    const char *d = getenv("GD_TEST_FIXTURES");
    return d != NULL && d[0] != '\0' ? d : GD_FIXTURES;
}

void
sg_check_staged_folds(const char *backend)
{
    struct gd_err err = {0};
    struct gd_graph *g = NULL;
    char path[4096], ids_path[4096], mask_path[4096];
    const char *dir = fixtures_dir();
    snprintf(path, sizeof path, "%s/onnx/transformers/bert_tiny.onnx", dir);
    snprintf(ids_path, sizeof ids_path, "%s/onnx/transformers/bert_tiny.input_ids.npy", dir);
    snprintf(mask_path, sizeof mask_path, "%s/onnx/transformers/bert_tiny.attention_mask.npy",
             dir);
    struct gd_onnx_opts oo = {.defer_finalize = 1};
    ck_assert_msg(gd_onnx_load(path, &oo, NULL, &g, &err) == 0, "%s", err.msg);
    struct gd_tensor *ids = NULL, *mask = NULL;
    ck_assert_msg(gd_npy_load(ids_path, &ids, &err) == 0, "%s", err.msg);
    ck_assert_msg(gd_npy_load(mask_path, &mask, &err) == 0, "%s", err.msg);
    const struct gd_tensor *in[2] = {ids, mask};
    ck_assert_msg(gd_graph_finalize_with(g, in, &err) == 0, "%s", err.msg);
    struct gd_knobs k;
    gd_knobs_init(&k);
    struct gd_session *s = gd_session_new(g, backend, &k, &err);
    ck_assert_msg(s != NULL, "%s", err.msg);
    double us = -1;
    ck_assert_msg(gd_session_run_end_to_end(s, 2, in, &us, &err) == 0, "%s", err.msg);
    struct gd_tensor *want = gd_tensor_dup(gd_session_output(s, 0), &err);
    ck_assert_ptr_nonnull(want);
    ck_assert_msg(gd_session_stage(s, 2, in, &err) == 0, "%s", err.msg);
    /* the first forward runs the nodes, the second records them (cuda), the third replays */
    for (int rep = 0; rep < 3; rep++)
        ck_assert_msg(gd_session_forward(s, &us, &err) == 0, "%s forward %d: %s", backend, rep,
                      err.msg);
    ck_assert_msg(gd_session_run_end_to_end(s, 2, in, &us, &err) == 0, "%s", err.msg);
    const struct gd_tensor *got = gd_session_output(s, 0);
    ck_assert_int_eq((long)gd_tensor_nbytes(got), (long)gd_tensor_nbytes(want));
    ck_assert(memcmp(got->data, want->data, gd_tensor_nbytes(want)) == 0);
    gd_tensor_free(want);
    gd_session_free(s);
    gd_tensor_free(ids);
    gd_tensor_free(mask);
    gd_graph_free(g);
}
