/*
 * check_session_batch.c: the executor's batching (engine/core/session.c). With --batch (knobs.batch)
 * a model whose result would depend on how its input is sliced is refused with GD_ENOTSUP,
 * naming the node and why: every op that mixes rows along dim 0 (shape inference's
 * gd_params.mixes_batch), and every layer whose dim 0 is not the batch at the slice size or at
 * the whole input's. Models whose rows stay apart give the same bits sliced and whole; models
 * that mix rows run whole, with every layer delivered at its own dim 0.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <check.h>
#include <jansson.h>

#include "gpudiff/model.h"
#include "gpudiff/session.h"
#include "op_harness.h"

#define MAX_IN 5

/* One one-node model: its inputs (shapes; bit i of const_mask: a weight) and attributes. */
struct node_case {
    const char *what;
    const char *op;
    int n_in;
    int ndim[MAX_IN];
    int64_t shape[MAX_IN][4];
    unsigned const_mask;
    const char *attrs;
    const char *reason; /* a fragment of the refusal's message */
};

/* clang-format off */
static const struct node_case mixing[] = {
    {"BatchNormalization with batch statistics", "BatchNormalization", 5, {3, 1, 1, 1, 1},
     {{4, 2, 3}, {2}, {2}, {2}, {2}}, 0x1eu, "{\"training_mode\": 1}", "mean and variance"},
    {"Softmax over axis 0", "Softmax", 1, {2}, {{4, 3}}, 0u, "{\"axis\": 0}", "axis 0"},
    {"LogSoftmax over axis 0", "LogSoftmax", 1, {2}, {{4, 3}}, 0u, "{\"axis\": -2}", "axis 0"},
    {"ReduceMean over axis 0, keepdims", "ReduceMean", 1, {2}, {{4, 3}}, 0u,
     "{\"axes\": [0]}", "axis 0"},
    {"ReduceSum over every axis", "ReduceSum", 1, {2}, {{4, 3}}, 0u, "{\"keepdims\": 0}",
     "axis 0"},
    {"ArgMax over axis 0", "ArgMax", 1, {2}, {{4, 4}}, 0u, "{\"axis\": 0, \"keepdims\": 0}",
     "axis 0"},
    {"Transpose of a square batch", "Transpose", 1, {2}, {{4, 4}}, 0u, "{\"perm\": [1, 0]}",
     "moves axis 0"},
    {"Flatten with axis 0", "Flatten", 1, {2}, {{4, 3}}, 0u, "{\"axis\": 0}", "flattens"},
    {"Reshape of dim 0", "Reshape", 2, {2, 1}, {{4, 6}, {2}}, 2u, NULL, "changes dim 0"},
    {"Unsqueeze at axis 0", "Unsqueeze", 1, {2}, {{4, 3}}, 0u, "{\"axes\": [0]}",
     "before the batch"},
    {"Concat along axis 0", "Concat", 2, {2, 2}, {{4, 3}, {4, 3}}, 0u, "{\"axis\": 0}",
     "concatenates"},
    {"Pad of axis 0", "Pad", 1, {2}, {{4, 3}}, 0u, "{\"pads\": [1, 0, 0, 0]}", "pads axis 0"},
    {"Gemm with A transposed", "Gemm", 2, {2, 2}, {{4, 4}, {4, 5}}, 2u, "{\"transA\": 1}",
     "rows of an input"},
    {"Gemm of two activations", "Gemm", 2, {2, 2}, {{4, 4}, {4, 5}}, 0u, NULL,
     "rows of an input"},
    {"MatMul of two activations", "MatMul", 2, {2, 2}, {{4, 4}, {4, 4}}, 0u, NULL,
     "rows of an input"},
    {"LayerNormalization over axis 0", "LayerNormalization", 2, {2, 2}, {{4, 3}, {1, 3}}, 2u,
     "{\"axis\": 0}", "axis 0"},
    {"MeanVarianceNormalization over axis 0", "MeanVarianceNormalization", 1, {3},
     {{4, 3, 2}}, 0u, "{\"axes\": [0, 2]}", "axis 0"},
};

/* Ops whose rows stay apart: sliced runs give the unsliced bits. */
static const struct node_case rowwise[] = {
    {"BatchNormalization in inference", "BatchNormalization", 5, {3, 1, 1, 1, 1},
     {{7, 2, 3}, {2}, {2}, {2}, {2}}, 0x1eu, NULL, NULL},
    {"Softmax over axis 1", "Softmax", 1, {2}, {{7, 5}}, 0u, "{\"axis\": 1}", NULL},
    {"LayerNormalization over the last axis", "LayerNormalization", 3, {3, 1, 1},
     {{7, 2, 6}, {6}, {6}}, 6u, NULL, NULL},
    {"InstanceNormalization", "InstanceNormalization", 3, {3, 1, 1}, {{7, 2, 5}, {2}, {2}},
     6u, NULL, NULL},
    {"Gemm of rows and a weight", "Gemm", 2, {2, 2}, {{7, 4}, {4, 3}}, 2u, NULL, NULL},
    {"Reshape keeping dim 0", "Reshape", 2, {3, 1}, {{7, 2, 3}, {2}}, 2u, NULL, NULL},
    {"Conv in 3-D", "Conv", 2, {4, 4}, {{7, 1, 3, 4}, {2, 1, 2, 2}}, 2u, NULL, NULL},
};
/* clang-format on */

#define N_MIXING ((int)(sizeof mixing / sizeof mixing[0]))
#define N_ROWWISE ((int)(sizeof rowwise / sizeof rowwise[0]))

/* The inputs of a case, pseudo-random; a Reshape's target keeps dim 0 (0, -1) or doubles
 * it (-1, 3); a variance is positive. */
static void
make_inputs(const struct node_case *nc, struct gd_tensor **in)
{
    for (int i = 0; i < nc->n_in; i++) {
        if (strcmp(nc->op, "Reshape") == 0 && i == 1) {
            int64_t two = 2;
            in[i] = gd_tensor_new(GD_I64, 1, &two, NULL);
            int64_t *v = in[i]->data;
            v[0] = nc->ndim[0] == 3 ? 0 : -1; /* keep dim 0, or (N, 6) -> (2N, 3) */
            v[1] = nc->ndim[0] == 3 ? -1 : 3;
            continue;
        }
        in[i] = oh_random(nc->ndim[i], nc->shape[i], 17u + (unsigned)i);
        if (strcmp(nc->op, "BatchNormalization") == 0 && i == 4) {
            float *v = in[i]->data;
            for (int64_t k = 0; k < gd_tensor_numel(in[i]); k++)
                v[k] = 1.5f + v[k];
        }
    }
}

static void
free_inputs(const struct node_case *nc, struct gd_tensor **in)
{
    for (int i = 0; i < nc->n_in; i++)
        gd_tensor_free(in[i]);
}

/*
 * The one-node model of a case as JSON text (caller frees). Graph inputs have dim 0 free,
 * except where the model would not load with it taken as 1 (gd_graph_finalize): the
 * operands of the products, and a second input other than Concat's, keep their shape (and
 * a slice of them is then refused as unlike the declaration, or for mixing rows).
 */
static int
free_dim0(const struct node_case *nc, int i)
{
    if (strcmp(nc->op, "Gemm") == 0 || strcmp(nc->op, "MatMul") == 0)
        return i == 0 && (nc->const_mask & 2u) && nc->attrs == NULL; /* x W */
    return i == 0 || strcmp(nc->op, "Concat") == 0;
}

static char *
model_json(const struct node_case *nc, struct gd_tensor **in)
{
    json_t *inputs = json_array(), *weights = json_array(), *names = json_array();
    char name[16];
    for (int i = 0; i < nc->n_in; i++) {
        snprintf(name, sizeof name, "in%d", i);
        json_array_append_new(names, json_string(name));
        json_t *shape = json_array();
        for (int k = 0; k < in[i]->ndim; k++)
            json_array_append_new(shape, json_integer(k == 0 && !(nc->const_mask & (1u << i)) &&
                                                              free_dim0(nc, i)
                                                          ? -1
                                                          : in[i]->shape[k]));
        json_t *t = json_pack("{s:s, s:s, s:o}", "name", name, "dtype",
                              gd_dtype_name(in[i]->dtype), "shape", shape);
        if (nc->const_mask & (1u << i)) {
            json_t *values = json_array();
            for (int64_t k = 0; k < gd_tensor_numel(in[i]); k++)
                json_array_append_new(values, in[i]->dtype == GD_I64
                                                  ? json_integer(((int64_t *)in[i]->data)[k])
                                                  : json_real(gd_tensor_get_f64(in[i], k)));
            json_object_set_new(t, "values", values);
            json_array_append_new(weights, t);
        } else {
            json_array_append_new(inputs, t);
        }
    }
    json_t *model = json_pack(
        "{s:s, s:i, s:s, s:o, s:o, s:[{s:s, s:s, s:o, s:[s], s:o}], s:[s]}", "format",
        "gpudiff-model", "version", 1, "name", "one-op", "inputs", inputs, "weights", weights,
        "nodes", "name", "node", "op", nc->op, "inputs", names, "outputs", "y", "attrs",
        json_loads(nc->attrs ? nc->attrs : "{}", 0, NULL), "outputs", "y");
    char *text = json_dumps(model, JSON_REAL_PRECISION(17));
    json_decref(model);
    return text;
}

static int
keep_output(void *user, const struct gd_layer *layer, struct gd_err *err)
{
    struct gd_tensor **out = user;
    if (*out != NULL && layer->batch_offset == 0) {
        gd_tensor_free(*out);
        *out = NULL;
    }
    if (*out == NULL) { /* the first slice: a tensor of the whole shape, rows filled later */
        int64_t shape[GD_MAX_DIMS];
        memcpy(shape, layer->value->shape, sizeof shape);
        shape[0] = layer->batch_total;
        *out = gd_tensor_new(layer->value->dtype, layer->value->ndim, shape, err);
        if (*out == NULL)
            return err ? err->code : GD_ENOMEM;
    }
    if (layer->value->ndim == 0) {
        memcpy((*out)->data, layer->value->data, gd_tensor_nbytes(layer->value));
        return 0;
    }
    size_t row = gd_tensor_nbytes(layer->value) / (size_t)layer->value->shape[0];
    memcpy((char *)(*out)->data + (size_t)layer->batch_offset * row, layer->value->data,
           gd_tensor_nbytes(layer->value));
    return 0;
}

/* Runs the case on cpu with knobs.batch = batch; *out gets the node's output, whole. */
static int
run_batched(const struct node_case *nc, struct gd_tensor **in, int64_t batch,
            struct gd_tensor **out, struct gd_err *err)
{
    char *text = model_json(nc, in);
    struct gd_graph *g = NULL;
    struct gd_session *s = NULL;
    const struct gd_tensor *feed[MAX_IN];
    int n_feed = 0;
    for (int i = 0; i < nc->n_in; i++)
        if (!(nc->const_mask & (1u << i)))
            feed[n_feed++] = in[i];
    struct gd_knobs knobs;
    gd_knobs_init(&knobs);
    knobs.batch = batch;
    *out = NULL;
    int rc = gd_model_parse(text, strlen(text), "one-op", ".", NULL, &g, err);
    free(text);
    if (rc == 0 && (s = gd_session_new(g, "cpu", &knobs, err)) == NULL)
        rc = err->code;
    if (rc == 0)
        rc = gd_session_run(s, n_feed, feed, keep_output, out, err);
    gd_session_free(s);
    gd_graph_free(g);
    if (rc != 0) {
        gd_tensor_free(*out);
        *out = NULL;
    }
    return rc;
}

/* --batch 2 (and 1) of 4 rows: refused, naming the node and why; unbatched it runs. */
START_TEST(test_mixing_refused)
{
    const struct node_case *nc = &mixing[_i];
    struct gd_tensor *in[MAX_IN] = {0}, *out[1] = {NULL};
    make_inputs(nc, in);
    for (int64_t batch = 1; batch <= 2; batch++) {
        struct gd_err err = {0};
        int rc = run_batched(nc, in, batch, out, &err);
        ck_assert_msg(rc == GD_ENOTSUP, "%s, --batch %lld: got %s (%s), want ENOTSUP", nc->what,
                      (long long)batch, gd_err_name(rc), err.msg);
        ck_assert_msg(strstr(err.msg, "node node") != NULL && strstr(err.msg, nc->reason) != NULL,
                      "%s, --batch %lld: the message lacks the node or \"%s\": %s", nc->what,
                      (long long)batch, nc->reason, err.msg);
    }
    struct gd_err err = {0};
    int rc = run_batched(nc, in, 0, out, &err);
    ck_assert_msg(rc == 0, "%s without --batch: %s", nc->what, err.msg);
    gd_tensor_free(out[0]);
    free_inputs(nc, in);
}
END_TEST

/*
 * The check at the whole input's row count: a Reshape to (1, -1) keeps dim 0 for a slice of
 * one row, (1, 3) -> (1, 3), so the slice alone looks batchable; for the 4 rows it is
 * (4, 3) -> (1, 12).
 */
START_TEST(test_refused_at_total_rows)
{
    static const struct node_case reshape = {"Reshape to (1, -1)", "Reshape", 2, {2, 1},
                                             {{4, 3}, {2}}, 2u, NULL, NULL};
    int64_t xs[2] = {4, 3}, two = 2;
    struct gd_tensor *in[2] = {oh_random(2, xs, 5), gd_tensor_new(GD_I64, 1, &two, NULL)};
    int64_t *target = in[1]->data;
    target[0] = 1;
    target[1] = -1;
    struct gd_tensor *out = NULL;
    struct gd_err err = {0};
    int rc = run_batched(&reshape, in, 1, &out, &err);
    ck_assert_msg(rc == GD_ENOTSUP && strstr(err.msg, "node node") != NULL,
                  "Reshape to (1, -1) with --batch 1: got %s (%s)", gd_err_name(rc), err.msg);
    gd_tensor_free(in[0]);
    gd_tensor_free(in[1]);
}
END_TEST

/* Rows kept apart: slices of 3 (3 + 3 + 1 of 7 rows) give the unsliced run's bits. */
START_TEST(test_rowwise_sliced_equals_whole)
{
    const struct node_case *nc = &rowwise[_i];
    struct gd_tensor *in[MAX_IN] = {0}, *whole[1] = {NULL}, *sliced[1] = {NULL};
    make_inputs(nc, in);
    struct gd_err err = {0};
    int rc = run_batched(nc, in, 0, whole, &err);
    ck_assert_msg(rc == 0, "%s: %s", nc->what, err.msg);
    rc = run_batched(nc, in, 3, sliced, &err);
    ck_assert_msg(rc == 0, "%s with --batch 3: %s", nc->what, err.msg);
    ck_assert_msg(gd_tensor_nbytes(whole[0]) == gd_tensor_nbytes(sliced[0]) &&
                      memcmp(whole[0]->data, sliced[0]->data, gd_tensor_nbytes(whole[0])) == 0,
                  "%s: sliced and whole runs differ", nc->what);
    gd_tensor_free(whole[0]);
    gd_tensor_free(sliced[0]);
    free_inputs(nc, in);
}
END_TEST

/* What the capture callback saw of each layer. */
struct seen {
    int n;
    int64_t dim0[4], offset[4], total[4];
};

static int
record(void *user, const struct gd_layer *layer, struct gd_err *err)
{
    struct seen *s = user;
    (void)err;
    if (s->n < 4) {
        s->dim0[s->n] = layer->value->ndim > 0 ? layer->value->shape[0] : 1;
        s->offset[s->n] = layer->batch_offset;
        s->total[s->n] = layer->batch_total;
    }
    s->n++;
    return 0;
}

/*
 * Unsliced, an op that changes dim 0 is delivered with its own dim 0 as batch_total (the
 * bundle writer takes batch_total rows of each layer): BatchNormalization's running mean
 * has 2 rows (channels) for an input of 4, ReduceMean over axis 0 one.
 */
START_TEST(test_unsliced_layers_have_their_own_rows)
{
    static const char *const model =
        "{\"format\": \"gpudiff-model\", \"version\": 1, \"name\": \"mix\","
        " \"inputs\": [{\"name\": \"x\", \"dtype\": \"float32\", \"shape\": [-1, 2, 3]}],"
        " \"weights\": ["
        "  {\"name\": \"s\", \"dtype\": \"float32\", \"shape\": [2], \"values\": [1, 2]},"
        "  {\"name\": \"b\", \"dtype\": \"float32\", \"shape\": [2], \"values\": [0, 1]},"
        "  {\"name\": \"m\", \"dtype\": \"float32\", \"shape\": [2], \"values\": [0, 0]},"
        "  {\"name\": \"v\", \"dtype\": \"float32\", \"shape\": [2], \"values\": [1, 1]}],"
        " \"nodes\": ["
        "  {\"name\": \"bn\", \"op\": \"BatchNormalization\", \"inputs\": [\"x\", \"s\", \"b\","
        "   \"m\", \"v\"], \"outputs\": [\"y\", \"rm\", \"rv\"], \"attrs\": {\"training_mode\": 1}},"
        "  {\"name\": \"mean\", \"op\": \"ReduceMean\", \"inputs\": [\"y\"], \"outputs\": [\"z\"],"
        "   \"attrs\": {\"axes\": [0]}}],"
        " \"outputs\": [\"z\", \"rm\", \"rv\"]}";
    struct gd_graph *g = NULL;
    struct gd_err err = {0};
    int rc = gd_model_parse(model, strlen(model), "mix", ".", NULL, &g, &err);
    ck_assert_msg(rc == 0, "%s", err.msg);
    struct gd_knobs knobs;
    gd_knobs_init(&knobs);
    struct gd_session *s = gd_session_new(g, "cpu", &knobs, &err);
    ck_assert_msg(s != NULL, "%s", err.msg);
    int64_t xs[3] = {4, 2, 3};
    struct gd_tensor *x = oh_random(3, xs, 9);
    const struct gd_tensor *feed[1] = {x};
    struct seen seen = {0};
    rc = gd_session_run(s, 1, feed, record, &seen, &err);
    ck_assert_msg(rc == 0, "%s", err.msg);
    static const int64_t want[4] = {4, 2, 2, 1}; /* y, rm, rv, z */
    ck_assert_int_eq(seen.n, 4);
    for (int i = 0; i < 4; i++)
        ck_assert_msg(seen.dim0[i] == want[i] && seen.total[i] == want[i] && seen.offset[i] == 0,
                      "layer %d: dim 0 %lld, batch_total %lld, offset %lld; want %lld", i,
                      (long long)seen.dim0[i], (long long)seen.total[i],
                      (long long)seen.offset[i], (long long)want[i]);
    gd_tensor_free(x);
    gd_session_free(s);
    gd_graph_free(g);
}
END_TEST

int
main(void)
{
    Suite *s = suite_create("session");
    TCase *tc = tcase_create("batch");
    tcase_add_loop_test(tc, test_mixing_refused, 0, N_MIXING);
    tcase_add_test(tc, test_refused_at_total_rows);
    tcase_add_loop_test(tc, test_rowwise_sliced_equals_whole, 0, N_ROWWISE);
    tcase_add_test(tc, test_unsliced_layers_have_their_own_rows);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_ENV);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
