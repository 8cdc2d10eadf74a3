/*
 * check_infer_index.c: shape inference of the indexing ops (engine/core/infer_index.c), the
 * losses (infer_loss.c), and Slice, Split, Expand, Tile, DepthToSpace, SpaceToDepth
 * (infer_shape.c): bad models fail at load with the right code and the node named, and the
 * batch flag (params.mixes_batch) says which nodes join rows along dim 0.
 */
#include <stdlib.h>
#include <string.h>

#include <check.h>
#include <jansson.h>

#include "gpudiff/model.h"

/* A value of the model: a weight with values, or a graph input (values NULL). */
struct value {
    const char *name;
    const char *dtype;
    const char *shape;  /* JSON list */
    const char *values; /* JSON list; NULL: a graph input */
};

struct model_case {
    const char *what;
    const char *op;
    const char *inputs;  /* JSON list of the node's inputs */
    int n_outputs;
    const char *attrs;   /* JSON object, NULL for none */
    struct value values[5];
    int want;            /* the code gd_model_parse returns */
    int mixes_batch;     /* when want is 0: the node's flag */
};

/* Parses the case's one-node model ("bad_node"); on success *out gets the graph. */
static int
parse(const struct model_case *e, struct gd_graph **out, struct gd_err *err)
{
    json_t *ins = json_array(), *ws = json_array(), *outs = json_array();
    for (int i = 0; i < 5 && e->values[i].name != NULL; i++) {
        const struct value *v = &e->values[i];
        json_t *t = json_pack("{s:s, s:s, s:o}", "name", v->name, "dtype", v->dtype, "shape",
                              json_loads(v->shape, 0, NULL));
        if (v->values != NULL) {
            json_object_set_new(t, "values", json_loads(v->values, 0, NULL));
            json_array_append_new(ws, t);
        } else {
            json_array_append_new(ins, t);
        }
    }
    for (int k = 0; k < (e->n_outputs > 0 ? e->n_outputs : 1); k++) {
        char name[16];
        snprintf(name, sizeof name, "y%d", k);
        json_array_append_new(outs, json_string(name));
    }
    json_t *node = json_pack("{s:s, s:s, s:o, s:O, s:o}", "name", "bad_node", "op", e->op,
                             "inputs", json_loads(e->inputs, 0, NULL), "outputs", outs, "attrs",
                             json_loads(e->attrs ? e->attrs : "{}", 0, NULL));
    json_t *model = json_pack("{s:s, s:i, s:s, s:o, s:o, s:[o], s:o}", "format", "gpudiff-model",
                              "version", 1, "name", "m", "inputs", ins, "weights", ws, "nodes",
                              node, "outputs", outs);
    char *text = json_dumps(model, 0);
    json_decref(model);
    int rc = gd_model_parse(text, strlen(text), "test model", ".", NULL, out, err);
    free(text);
    return rc;
}

/* clang-format off */
#define IN(name, shape) {name, "float32", shape, NULL}
#define IN_I64(name, shape) {name, "int64", shape, NULL}
#define W(name, shape, values) {name, "float32", shape, values}
#define W_I64(name, shape, values) {name, "int64", shape, values}
#define X24 IN("x", "[2, 4]")

static const struct model_case cases[] = {
    /* Gather */
    {"Gather of a scalar", "Gather", "[\"s\", \"i\"]", 1, NULL,
     {IN("s", "[]"), W_I64("i", "[1]", "[0]")}, GD_ESHAPE, 0},
    {"Gather with float indices", "Gather", "[\"x\", \"i\"]", 1, NULL,
     {X24, W("i", "[1]", "[0]")}, GD_EDTYPE, 0},
    {"Gather axis 2 of a 2-D input", "Gather", "[\"x\", \"i\"]", 1, "{\"axis\": 2}",
     {X24, IN_I64("i", "[3]")}, GD_EMODEL, 0},
    {"Gather weight index out of range", "Gather", "[\"x\", \"i\"]", 1, "{\"axis\": 1}",
     {X24, W_I64("i", "[2]", "[1, -5]")}, GD_ERANGE, 0},
    {"Gather rows of the input", "Gather", "[\"x\", \"i\"]", 1, NULL,
     {X24, W_I64("i", "[2]", "[1, 0]")}, 0, 1},
    {"Gather columns by fixed indices", "Gather", "[\"x\", \"i\"]", 1, "{\"axis\": 1}",
     {X24, W_I64("i", "[2]", "[3, 0]")}, 0, 0},
    {"Gather of token ids into a table", "Gather", "[\"t\", \"i\"]", 1, NULL,
     {W("t", "[3, 2]", "[1, 2, 3, 4, 5, 6]"), IN_I64("i", "[2, 5]")}, 0, 0},
    {"Gather along axis 1 by computed indices", "Gather", "[\"x\", \"i\"]", 1, "{\"axis\": 1}",
     {X24, IN_I64("i", "[2, 2]")}, 0, 1},
    /* GatherElements, GatherND */
    {"GatherElements of another rank", "GatherElements", "[\"x\", \"i\"]", 1, NULL,
     {X24, IN_I64("i", "[2]")}, GD_ESHAPE, 0},
    {"GatherElements indices wider than the data", "GatherElements", "[\"x\", \"i\"]", 1,
     "{\"axis\": 0}", {X24, IN_I64("i", "[2, 5]")}, GD_ESHAPE, 0},
    {"GatherElements along axis 1", "GatherElements", "[\"x\", \"i\"]", 1, "{\"axis\": 1}",
     {X24, IN_I64("i", "[2, 6]")}, 0, 0},
    {"GatherElements along axis 0", "GatherElements", "[\"x\", \"i\"]", 1, NULL,
     {X24, IN_I64("i", "[2, 4]")}, 0, 1},
    {"GatherND tuples longer than the rank", "GatherND", "[\"x\", \"i\"]", 1, NULL,
     {X24, IN_I64("i", "[1, 3]")}, GD_ESHAPE, 0},
    {"GatherND batch_dims as large as the rank", "GatherND", "[\"x\", \"i\"]", 1,
     "{\"batch_dims\": 2}", {X24, IN_I64("i", "[2, 1]")}, GD_EMODEL, 0},
    {"GatherND batch dimensions differ", "GatherND", "[\"x\", \"i\"]", 1, "{\"batch_dims\": 1}",
     {X24, IN_I64("i", "[3, 1]")}, GD_ESHAPE, 0},
    {"GatherND weight tuple out of range", "GatherND", "[\"x\", \"i\"]", 1, NULL,
     {X24, W_I64("i", "[1, 2]", "[1, 4]")}, GD_ERANGE, 0},
    {"GatherND with a batch axis", "GatherND", "[\"x\", \"i\"]", 1, "{\"batch_dims\": 1}",
     {X24, IN_I64("i", "[2, 1]")}, 0, 0},
    {"GatherND without one", "GatherND", "[\"x\", \"i\"]", 1, NULL,
     {X24, IN_I64("i", "[2, 1]")}, 0, 1},
    /* ScatterElements, ScatterND */
    {"ScatterElements reduction sub", "ScatterElements", "[\"x\", \"i\", \"u\"]", 1,
     "{\"reduction\": \"sub\"}", {X24, IN_I64("i", "[1, 2]"), IN("u", "[1, 2]")}, GD_EMODEL,
     0},
    {"Scatter (opset 9) has no reduction", "Scatter", "[\"x\", \"i\", \"u\"]", 1,
     "{\"reduction\": \"add\"}", {X24, IN_I64("i", "[1, 2]"), IN("u", "[1, 2]")}, GD_EMODEL,
     0},
    {"ScatterElements updates of another shape", "ScatterElements", "[\"x\", \"i\", \"u\"]", 1,
     NULL, {X24, IN_I64("i", "[1, 2]"), IN("u", "[2, 1]")}, GD_ESHAPE, 0},
    {"ScatterElements along axis 1", "ScatterElements", "[\"x\", \"i\", \"u\"]", 1,
     "{\"axis\": 1, \"reduction\": \"max\"}", {X24, IN_I64("i", "[2, 6]"), IN("u", "[2, 6]")},
     0, 0},
    {"ScatterElements along axis 0", "ScatterElements", "[\"x\", \"i\", \"u\"]", 1, NULL,
     {X24, IN_I64("i", "[1, 4]"), IN("u", "[1, 4]")}, 0, 1},
    {"ScatterND updates of another shape", "ScatterND", "[\"x\", \"i\", \"u\"]", 1, NULL,
     {X24, IN_I64("i", "[3, 1]"), IN("u", "[3, 3]")}, GD_ESHAPE, 0},
    {"ScatterND", "ScatterND", "[\"x\", \"i\", \"u\"]", 1, "{\"reduction\": \"mul\"}",
     {X24, IN_I64("i", "[3, 1]"), IN("u", "[3, 4]")}, 0, 1},
    /* Trilu, OneHot, EyeLike, TopK */
    {"Trilu of a vector", "Trilu", "[\"v\"]", 1, NULL, {IN("v", "[4]")}, GD_ESHAPE, 0},
    {"Trilu k of two values", "Trilu", "[\"x\", \"k\"]", 1, NULL,
     {X24, W_I64("k", "[2]", "[1, 2]")}, GD_ESHAPE, 0},
    {"Trilu of a matrix", "Trilu", "[\"x\"]", 1, NULL, {X24}, 0, 1},
    {"Trilu of a batch of matrices", "Trilu", "[\"b\", \"k\"]", 1, "{\"upper\": 0}",
     {IN("b", "[2, 3, 3]"), IN_I64("k", "[]")}, 0, 0},
    {"OneHot depth computed", "OneHot", "[\"i\", \"d\", \"v\"]", 1, NULL,
     {IN_I64("i", "[3]"), IN("d", "[]"), W("v", "[2]", "[0, 1]")}, GD_ENOTSUP, 0},
    {"OneHot depth 0", "OneHot", "[\"i\", \"d\", \"v\"]", 1, NULL,
     {IN_I64("i", "[3]"), W("d", "[]", "[0.5]"), W("v", "[2]", "[0, 1]")}, GD_EMODEL, 0},
    {"OneHot three values", "OneHot", "[\"i\", \"d\", \"v\"]", 1, NULL,
     {IN_I64("i", "[3]"), W("d", "[]", "[4]"), W("v", "[3]", "[0, 1, 2]")}, GD_ESHAPE, 0},
    {"OneHot axis 0", "OneHot", "[\"i\", \"d\", \"v\"]", 1, "{\"axis\": 0}",
     {IN_I64("i", "[3]"), W("d", "[]", "[4]"), W("v", "[2]", "[0, 1]")}, 0, 1},
    {"OneHot last axis", "OneHot", "[\"i\", \"d\", \"v\"]", 1, NULL,
     {IN_I64("i", "[3]"), W("d", "[]", "[4]"), W("v", "[2]", "[0, 1]")}, 0, 0},
    {"EyeLike of a 3-D input", "EyeLike", "[\"b\"]", 1, NULL, {IN("b", "[2, 2, 2]")},
     GD_ESHAPE, 0},
    {"EyeLike dtype string of no type", "EyeLike", "[\"x\"]", 1, "{\"dtype\": 8}", {X24},
     GD_ENOTSUP, 0},
    {"EyeLike", "EyeLike", "[\"x\"]", 1, "{\"k\": -1, \"dtype\": \"int32\"}", {X24}, 0, 1},
    {"TopK K larger than the axis", "TopK", "[\"x\", \"k\"]", 2, NULL,
     {X24, W_I64("k", "[1]", "[5]")}, GD_EMODEL, 0},
    {"TopK K computed", "TopK", "[\"x\", \"k\"]", 2, NULL, {X24, IN_I64("k", "[1]")},
     GD_ENOTSUP, 0},
    {"TopK with one output", "TopK", "[\"x\", \"k\"]", 1, NULL,
     {X24, W_I64("k", "[1]", "[2]")}, GD_EMODEL, 0},
    {"TopK K twice", "TopK", "[\"x\", \"k\"]", 2, "{\"k\": 2}",
     {X24, W_I64("k", "[1]", "[2]")}, GD_EMODEL, 0},
    {"TopK of int64", "TopK", "[\"j\", \"k\"]", 2, NULL,
     {IN_I64("j", "[2, 4]"), W_I64("k", "[1]", "[2]")}, GD_ENOTSUP, 0},
    {"TopK along axis 1", "TopK", "[\"x\", \"k\"]", 2, NULL, {X24, W_I64("k", "[1]", "[2]")},
     0, 0},
    {"TopK along axis 0", "TopK", "[\"x\"]", 2, "{\"axis\": 0, \"k\": 1}", {X24}, 0, 1},
    /* Slice, Split, Expand, Tile, DepthToSpace, SpaceToDepth */
    {"Slice step 0", "Slice", "[\"x\", \"s\", \"e\", \"a\", \"t\"]", 1, NULL,
     {X24, W_I64("s", "[1]", "[0]"), W_I64("e", "[1]", "[2]"), W_I64("a", "[1]", "[1]"),
      W_I64("t", "[1]", "[0]")}, GD_EMODEL, 0},
    {"Slice ends computed", "Slice", "[\"x\", \"s\", \"e\"]", 1, NULL,
     {X24, W_I64("s", "[1]", "[0]"), IN_I64("e", "[1]")}, GD_ENOTSUP, 0},
    {"Slice starts and ends of other lengths", "Slice", "[\"x\"]", 1,
     "{\"starts\": [0, 1], \"ends\": [2]}", {X24}, GD_EMODEL, 0},
    {"Slice axis twice", "Slice", "[\"x\"]", 1,
     "{\"starts\": [0, 1], \"ends\": [2, 3], \"axes\": [1, -1]}", {X24}, GD_EMODEL, 0},
    {"Slice of columns", "Slice", "[\"x\"]", 1, "{\"starts\": [1], \"ends\": [3], \"axes\": [1]}",
     {X24}, 0, 0},
    {"Slice of rows", "Slice", "[\"x\", \"s\", \"e\"]", 1, NULL,
     {X24, W_I64("s", "[1]", "[1]"), W_I64("e", "[1]", "[2]")}, 0, 1},
    {"Slice of a weight's rows (no batch in it)", "Slice", "[\"t\", \"s\", \"e\"]", 1, NULL,
     {X24, W("t", "[3, 2]", "[1, 2, 3, 4, 5, 6]"), W_I64("s", "[1]", "[1]"),
      W_I64("e", "[1]", "[2]")}, 0, 0},
    {"EyeLike of a weight", "EyeLike", "[\"t\"]", 1, NULL,
     {X24, W("t", "[2, 2]", "[1, 2, 3, 4]")}, 0, 0},
    {"Slice of every row", "Slice", "[\"x\", \"s\", \"e\"]", 1, NULL,
     {X24, W_I64("s", "[1]", "[0]"), W_I64("e", "[1]", "[9223372036854775807]")}, 0, 0},
    {"Split sizes not adding up", "Split", "[\"x\", \"s\"]", 2, "{\"axis\": 1}",
     {X24, W_I64("s", "[2]", "[1, 2]")}, GD_ESHAPE, 0},
    {"Split into unequal parts", "Split", "[\"x\"]", 3, "{\"axis\": 1}", {X24}, GD_ESHAPE, 0},
    {"Split num_outputs for other outputs", "Split", "[\"x\"]", 2, "{\"num_outputs\": 3}",
     {X24}, GD_EMODEL, 0},
    {"Split along axis 1", "Split", "[\"x\"]", 2, "{\"axis\": 1}", {X24}, 0, 0},
    {"Split along axis 0", "Split", "[\"x\"]", 2, NULL, {X24}, 0, 1},
    {"Expand to a shape that does not broadcast", "Expand", "[\"x\", \"s\"]", 1, NULL,
     {X24, W_I64("s", "[2]", "[3, 4]")}, GD_ESHAPE, 0},
    {"Expand shape computed", "Expand", "[\"x\", \"s\"]", 1, NULL,
     {X24, IN_I64("s", "[2]")}, GD_ENOTSUP, 0},
    {"Expand of the columns", "Expand", "[\"c\", \"s\"]", 1, NULL,
     {IN("c", "[2, 1]"), W_I64("s", "[2]", "[2, 5]")}, 0, 0},
    {"Expand adding a leading dimension", "Expand", "[\"x\", \"s\"]", 1, NULL,
     {X24, W_I64("s", "[3]", "[3, 2, 4]")}, 0, 1},
    {"Tile repeats of another length", "Tile", "[\"x\", \"r\"]", 1, NULL,
     {X24, W_I64("r", "[1]", "[2]")}, GD_EMODEL, 0},
    {"Tile negative repeats", "Tile", "[\"x\", \"r\"]", 1, NULL,
     {X24, W_I64("r", "[2]", "[1, -1]")}, GD_EMODEL, 0},
    {"Tile of the columns", "Tile", "[\"x\", \"r\"]", 1, NULL,
     {X24, W_I64("r", "[2]", "[1, 3]")}, 0, 0},
    {"Tile of the rows", "Tile", "[\"x\", \"r\"]", 1, NULL,
     {X24, W_I64("r", "[2]", "[2, 1]")}, 0, 1},
    {"DepthToSpace channels not a multiple", "DepthToSpace", "[\"f\"]", 1,
     "{\"blocksize\": 2}", {IN("f", "[1, 6, 2, 2]")}, GD_ESHAPE, 0},
    {"DepthToSpace mode RCD", "DepthToSpace", "[\"f\"]", 1,
     "{\"blocksize\": 2, \"mode\": \"RCD\"}", {IN("f", "[1, 8, 2, 2]")}, GD_EMODEL, 0},
    {"DepthToSpace without blocksize", "DepthToSpace", "[\"f\"]", 1, NULL,
     {IN("f", "[1, 8, 2, 2]")}, GD_EMODEL, 0},
    {"SpaceToDepth width not a multiple", "SpaceToDepth", "[\"f\"]", 1, "{\"blocksize\": 2}",
     {IN("f", "[1, 2, 4, 3]")}, GD_ESHAPE, 0},
    {"SpaceToDepth", "SpaceToDepth", "[\"f\"]", 1, "{\"blocksize\": 2}",
     {IN("f", "[3, 2, 4, 4]")}, 0, 0},
    /* losses */
    {"NLL targets of another shape", "NegativeLogLikelihoodLoss", "[\"x\", \"t\"]", 1, NULL,
     {X24, IN_I64("t", "[3]")}, GD_ESHAPE, 0},
    {"NLL float targets", "NegativeLogLikelihoodLoss", "[\"x\", \"t\"]", 1, NULL,
     {X24, IN("t", "[2]")}, GD_EDTYPE, 0},
    {"NLL weight of the wrong length", "NegativeLogLikelihoodLoss", "[\"x\", \"t\", \"w\"]", 1,
     NULL, {X24, IN_I64("t", "[2]"), W("w", "[3]", "[1, 1, 1]")}, GD_ESHAPE, 0},
    {"NLL reduction max", "NegativeLogLikelihoodLoss", "[\"x\", \"t\"]", 1,
     "{\"reduction\": \"max\"}", {X24, IN_I64("t", "[2]")}, GD_EMODEL, 0},
    {"NLL target weight out of range", "NegativeLogLikelihoodLoss", "[\"x\", \"t\"]", 1, NULL,
     {X24, W_I64("t", "[2]", "[0, 4]")}, GD_ERANGE, 0},
    {"SoftmaxCrossEntropyLoss three outputs", "SoftmaxCrossEntropyLoss", "[\"x\", \"t\"]", 3,
     NULL, {X24, IN_I64("t", "[2]")}, GD_EMODEL, 0},
    {"SoftmaxCrossEntropyLoss of a vector", "SoftmaxCrossEntropyLoss", "[\"v\", \"t\"]", 1,
     NULL, {IN("v", "[4]"), IN_I64("t", "[]")}, GD_ESHAPE, 0},
    {"NLL per position", "NegativeLogLikelihoodLoss", "[\"x\", \"t\"]", 1,
     "{\"reduction\": \"none\"}", {X24, IN_I64("t", "[2]")}, 0, 0},
    {"SoftmaxCrossEntropyLoss mean", "SoftmaxCrossEntropyLoss", "[\"x\", \"t\"]", 2, NULL,
     {X24, IN_I64("t", "[2]")}, 0, 1},
    /* the shape family's older ops */
    {"Transpose moving dim 0", "Transpose", "[\"x\"]", 1, NULL, {X24}, 0, 1},
    {"Transpose keeping dim 0", "Transpose", "[\"b\"]", 1, "{\"perm\": [0, 2, 1]}",
     {IN("b", "[2, 3, 4]")}, 0, 0},
    {"Reshape keeping the rows", "Reshape", "[\"b\", \"s\"]", 1, NULL,
     {IN("b", "[2, 3, 4]"), W_I64("s", "[2]", "[2, -1]")}, 0, 0},
    {"Reshape joining rows", "Reshape", "[\"b\", \"s\"]", 1, NULL,
     {IN("b", "[2, 3, 4]"), W_I64("s", "[2]", "[3, -1]")}, 0, 1},
    {"Flatten from axis 0", "Flatten", "[\"b\"]", 1, "{\"axis\": 0}", {IN("b", "[2, 3, 4]")}, 0,
     1},
    {"Flatten from axis 1", "Flatten", "[\"b\"]", 1, NULL, {IN("b", "[2, 3, 4]")}, 0, 0},
    {"Concat of rows", "Concat", "[\"x\", \"x\"]", 1, "{\"axis\": 0}", {X24}, 0, 1},
    {"Unsqueeze at axis 0", "Unsqueeze", "[\"x\"]", 1, "{\"axes\": [0]}", {X24}, 0, 1},
    {"Squeeze of axis 1", "Squeeze", "[\"c\"]", 1, "{\"axes\": [1]}", {IN("c", "[2, 1]")}, 0, 0},
    {"Pad of the rows", "Pad", "[\"x\"]", 1, "{\"pads\": [1, 0, 0, 0]}", {X24}, 0, 1},
    /* MatMul and Gemm */
    {"MatMul of rows by a weight", "MatMul", "[\"x\", \"w\"]", 1, NULL,
     {X24, W("w", "[4, 1]", "[1, 2, 3, 4]")}, 0, 0},
    {"MatMul of a weight by the input", "MatMul", "[\"w\", \"x\"]", 1, NULL,
     {X24, W("w", "[1, 2]", "[1, 2]")}, 0, 1},
    {"MatMul of two batches", "MatMul", "[\"a\", \"b\"]", 1, NULL,
     {IN("a", "[2, 3, 4]"), IN("b", "[2, 4, 5]")}, 0, 0},
    {"MatMul of batches broadcast from 1", "MatMul", "[\"a\", \"b\"]", 1, NULL,
     {IN("a", "[1, 3, 4]"), IN("b", "[2, 4, 5]")}, 0, 1},
    {"MatMul of two computed matrices", "MatMul", "[\"x\", \"c\"]", 1, NULL,
     {X24, IN("c", "[4, 3]")}, 0, 1},
    {"Gemm with transA", "Gemm", "[\"c\", \"w\"]", 1, "{\"transA\": 1}",
     {IN("c", "[4, 2]"), W("w", "[4, 1]", "[1, 2, 3, 4]")}, 0, 1},
    {"Gemm of rows", "Gemm", "[\"x\", \"w\", \"b\"]", 1, NULL,
     {X24, W("w", "[4, 1]", "[1, 2, 3, 4]"), W("b", "[1]", "[0.5]")}, 0, 0},
};
/* clang-format on */

#define N_CASES ((int)(sizeof cases / sizeof cases[0]))

START_TEST(test_model)
{
    const struct model_case *e = &cases[_i];
    struct gd_graph *g = NULL;
    struct gd_err err = {0};
    int rc = parse(e, &g, &err);
    ck_assert_msg(rc == e->want, "%s: got %s (%s), want %s", e->what, gd_err_name(rc), err.msg,
                  gd_err_name(e->want));
    if (rc != 0) {
        ck_assert_msg(strstr(err.msg, "node bad_node") != NULL,
                      "%s: the message does not name the node: %s", e->what, err.msg);
    } else {
        int ni = gd_graph_find_node(g, "bad_node");
        ck_assert_msg(g->nodes[ni].params.mixes_batch == e->mixes_batch,
                      "%s: mixes_batch is %d, want %d", e->what, g->nodes[ni].params.mixes_batch,
                      e->mixes_batch);
    }
    gd_graph_free(g);
}
END_TEST

int
main(void)
{
    Suite *s = suite_create("infer_index");
    TCase *tc = tcase_create("models");
    tcase_add_loop_test(tc, test_model, 0, N_CASES);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_ENV);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
