/* check_infer_errors.c: bad models fail shape inference with the right code, naming the node. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <check.h>
#include <jansson.h>

#include "gpudiff/model.h"
#include "op_harness.h"

/* A weight or extra graph input of a bad model. */
struct value {
    const char *name;
    const char *shape;  /* JSON list */
    const char *dtype;  /* "input": a float32 graph input instead of a weight */
    const char *values; /* JSON list; NULL: ones and zeros */
};

/* A tensor declaration; with_values adds values (a JSON list, or a 1, 0, 0 pattern). */
static json_t *
tensor(const struct value *v, int with_values)
{
    json_t *shape = json_loads(v->shape, 0, NULL);
    int is_input = strcmp(v->dtype, "input") == 0;
    json_t *t = json_pack("{s:s, s:s, s:o}", "name", v->name, "dtype",
                          is_input ? "float32" : v->dtype, "shape", shape);
    if (with_values && v->values != NULL) {
        json_object_set_new(t, "values", json_loads(v->values, 0, NULL));
    } else if (with_values) {
        int64_t n = 1;
        for (size_t i = 0; i < json_array_size(shape); i++)
            n *= json_integer_value(json_array_get(shape, i));
        json_t *values = json_array();
        for (int64_t i = 0; i < n; i++)
            json_array_append_new(values, json_integer(i % 3 == 0 ? 1 : 0));
        json_object_set_new(t, "values", values);
    }
    return t;
}

struct err_case {
    const char *what;
    const char *x_shape;
    const char *op;
    const char *inputs; /* JSON list of the node's inputs */
    const char *attrs;  /* JSON object, NULL for none */
    struct value values[4];
    int code;
};

/*
 * Parses a model with a float32 graph input x, the case's values and one node "bad_node".
 * Returns the code of gd_model_parse(); err gets its message.
 */
static int
parse_case(const struct err_case *e, struct gd_err *err)
{
    struct value x = {"x", e->x_shape, "input", NULL};
    json_t *ins = json_array(), *ws = json_array();
    json_array_append_new(ins, tensor(&x, 0));
    for (int i = 0; i < 4 && e->values[i].name != NULL; i++) {
        const struct value *v = &e->values[i];
        if (strcmp(v->dtype, "input") == 0)
            json_array_append_new(ins, tensor(v, 0));
        else
            json_array_append_new(ws, tensor(v, 1));
    }
    json_t *node = json_pack("{s:s, s:s, s:o, s:[s], s:o}", "name", "bad_node", "op", e->op,
                             "inputs", json_loads(e->inputs, 0, NULL), "outputs", "y", "attrs",
                             json_loads(e->attrs ? e->attrs : "{}", 0, NULL));
    json_t *model =
        json_pack("{s:s, s:i, s:s, s:o, s:o, s:[o], s:[s]}", "format", "gpudiff-model", "version",
                  1, "name", "bad", "inputs", ins, "weights", ws, "nodes", node, "outputs", "y");
    char *text = json_dumps(model, 0);
    json_decref(model);
    struct gd_graph *g = NULL;
    int rc = gd_model_parse(text, strlen(text), "bad model", ".", NULL, &g, err);
    free(text);
    gd_graph_free(g);
    return rc;
}

/* clang-format off */
#define W(name, shape) {name, shape, "float32", NULL}

static const struct err_case cases[] = {
    {"unknown op", "[2, 3]", "Frobnicate", "[\"x\"]", NULL, {{0}}, GD_ENOTSUP},
    {"two inputs to Relu", "[2, 3]", "Relu", "[\"x\", \"x\"]", NULL, {{0}}, GD_EMODEL},
    {"Conv without a weight", "[1, 2, 5, 5]", "Conv", "[\"x\"]", NULL, {{0}}, GD_EMODEL},
    {"group as a list", "[1, 2, 5, 5]", "Conv", "[\"x\", \"w\"]", "{\"group\": [1]}",
     {W("w", "[2, 2, 3, 3]")}, GD_EMODEL},
    {"alpha as a string", "[2, 3]", "Gemm", "[\"x\", \"w\"]", "{\"alpha\": \"two\"}",
     {W("w", "[3, 4]")}, GD_EMODEL},
    {"strides as an integer", "[1, 2, 5, 5]", "MaxPool", "[\"x\"]",
     "{\"kernel_shape\": [2, 2], \"strides\": 2}", {{0}}, GD_EMODEL},
    {"unknown attribute of Relu", "[2, 3]", "Relu", "[\"x\"]", "{\"alpha\": 0.5}", {{0}},
     GD_EMODEL},
    {"unknown attribute of Conv", "[1, 2, 5, 5]", "Conv", "[\"x\", \"w\"]",
     "{\"padding\": [1, 1, 1, 1]}", {W("w", "[2, 2, 3, 3]")}, GD_EMODEL},
    {"group does not divide the input channels", "[1, 3, 5, 5]", "Conv", "[\"x\", \"w\"]",
     "{\"group\": 2}", {W("w", "[4, 1, 3, 3]")}, GD_ESHAPE},
    {"group does not divide the output channels", "[1, 4, 5, 5]", "Conv", "[\"x\", \"w\"]",
     "{\"group\": 2}", {W("w", "[3, 2, 3, 3]")}, GD_ESHAPE},
    {"ConvTranspose group does not divide the channels", "[1, 3, 4, 4]", "ConvTranspose",
     "[\"x\", \"w\"]", "{\"group\": 2}", {W("w", "[3, 1, 3, 3]")}, GD_ESHAPE},
    {"Conv weight of another rank", "[1, 2, 5, 5]", "Conv", "[\"x\", \"w\"]", NULL,
     {W("w", "[2, 2, 3]")}, GD_ESHAPE},
    {"ConvTranspose output_padding not below the stride", "[1, 2, 4, 4]", "ConvTranspose",
     "[\"x\", \"w\"]", "{\"strides\": [2, 2], \"output_padding\": [2, 0]}",
     {W("w", "[2, 2, 3, 3]")}, GD_EMODEL},
    {"Gemm inner dimensions differ", "[2, 3]", "Gemm", "[\"x\", \"w\"]", NULL,
     {W("w", "[4, 5]")}, GD_ESHAPE},
    {"Gemm inner dimensions differ after transB", "[2, 3]", "Gemm", "[\"x\", \"w\"]",
     "{\"transB\": 1}", {W("w", "[3, 5]")}, GD_ESHAPE},
    {"Gemm C does not broadcast", "[2, 3]", "Gemm", "[\"x\", \"w\", \"c\"]", NULL,
     {W("w", "[3, 4]"), W("c", "[3]")}, GD_ESHAPE},
    {"MatMul inner dimensions differ", "[2, 3]", "MatMul", "[\"x\", \"w\"]", NULL,
     {W("w", "[4, 2]")}, GD_ESHAPE},
    {"Add shapes do not broadcast", "[2, 3]", "Add", "[\"x\", \"w\"]", NULL,
     {W("w", "[2]")}, GD_ESHAPE},
    {"Reshape to a wrong element count", "[2, 3]", "Reshape", "[\"x\", \"s\"]", NULL,
     {{"s", "[2]", "int64", "[4, 2]"}}, GD_ESHAPE},
    {"Reshape with two -1", "[2, 3]", "Reshape", "[\"x\", \"s\"]", NULL,
     {{"s", "[2]", "int64", "[-1, -1]"}}, GD_EMODEL},
    {"Reshape shape that is not a constant", "[2, 3]", "Reshape", "[\"x\", \"s\"]", NULL,
     {{"s", "[2]", "input", NULL}}, GD_ENOTSUP},
    {"Reshape whose known sizes overflow int64", "[2, 3]", "Reshape", "[\"x\", \"s\"]", NULL,
     {{"s", "[2]", "int64", "[4, 9223372036854775807]"}}, GD_ESHAPE},
    {"Conv group whose channel product overflows int64", "[1, 2, 5, 5]", "Conv",
     "[\"x\", \"w\"]", "{\"group\": 4611686018427387904}", {W("w", "[2, 2, 3, 3]")},
     GD_ESHAPE},
    {"Conv with an empty kernel", "[1, 2, 5, 5]", "Conv", "[\"x\", \"w\"]", NULL,
     {W("w", "[2, 2, 0, 3]")}, GD_EMODEL},
    {"Conv dilation above 2^31 - 1", "[1, 2, 5, 5]", "Conv", "[\"x\", \"w\"]",
     "{\"dilations\": [9223372036854775807, 1]}", {W("w", "[2, 2, 3, 3]")}, GD_ENOTSUP},
    {"MaxPool stride above 2^31 - 1", "[1, 2, 5, 5]", "MaxPool", "[\"x\"]",
     "{\"kernel_shape\": [2, 2], \"strides\": [2147483648, 1]}", {{0}}, GD_ENOTSUP},
    {"MaxPool kernel above 2^31 - 1", "[1, 2, 5, 5]", "MaxPool", "[\"x\"]",
     "{\"kernel_shape\": [4294967296, 2]}", {{0}}, GD_ENOTSUP},
    {"AveragePool pads above 2^31 - 1", "[1, 2, 5, 5]", "AveragePool", "[\"x\"]",
     "{\"kernel_shape\": [2, 2], \"pads\": [0, 0, 4611686018427387904, 0]}", {{0}},
     GD_ENOTSUP},
    {"ConvTranspose stride x input past int64", "[1, 2, 1099511627776]", "ConvTranspose",
     "[\"x\", \"w\"]", "{\"strides\": [2147483647]}", {W("w", "[2, 2, 3]")}, GD_ESHAPE},
    {"ConvTranspose output_shape not positive", "[1, 2, 4, 4]", "ConvTranspose",
     "[\"x\", \"w\"]", "{\"output_shape\": [8, -8]}", {W("w", "[2, 2, 3, 3]")}, GD_EMODEL},
    {"Pad past int64", "[2, 3]", "Pad", "[\"x\"]",
     "{\"pads\": [0, 9223372036854775807, 0, 1]}", {{0}}, GD_ESHAPE},
    {"Pad reflect larger than the axis", "[2, 3]", "Pad", "[\"x\"]",
     "{\"mode\": \"reflect\", \"pads\": [0, 3, 0, 0]}", {{0}}, GD_EMODEL},
    {"Pad mode wrap", "[2, 3]", "Pad", "[\"x\"]", "{\"mode\": \"wrap\", \"pads\": [0, 1, 0, 0]}",
     {{0}}, GD_ENOTSUP},
    {"Softmax axis 2 of a 2-D input", "[2, 3]", "Softmax", "[\"x\"]", "{\"axis\": 2}", {{0}},
     GD_EMODEL},
    {"Softmax axis -3 of a 2-D input", "[2, 3]", "Softmax", "[\"x\"]", "{\"axis\": -3}", {{0}},
     GD_EMODEL},
    {"MaxPool without kernel_shape", "[1, 2, 5, 5]", "MaxPool", "[\"x\"]", "{}", {{0}},
     GD_EMODEL},
    {"AveragePool with dilations", "[1, 2, 5, 5]", "AveragePool", "[\"x\"]",
     "{\"kernel_shape\": [2, 2], \"dilations\": [2, 2]}", {{0}}, GD_ENOTSUP},
    {"Concat of mismatched shapes", "[2, 3]", "Concat", "[\"x\", \"w\"]", "{\"axis\": 0}",
     {W("w", "[2, 4]")}, GD_ESHAPE},
    {"Concat without axis", "[2, 3]", "Concat", "[\"x\", \"x\"]", NULL, {{0}}, GD_EMODEL},
    {"Transpose perm repeats an axis", "[2, 3]", "Transpose", "[\"x\"]", "{\"perm\": [0, 0]}",
     {{0}}, GD_EMODEL},
    {"Squeeze of an axis of size 3", "[2, 3]", "Squeeze", "[\"x\"]", "{\"axes\": [1]}", {{0}},
     GD_ESHAPE},
    {"Clip min that is not a constant", "[2, 3]", "Clip", "[\"x\", \"m\"]", NULL,
     {{"m", "[]", "input", NULL}}, GD_ENOTSUP},
    {"BatchNormalization with spatial=0", "[1, 2, 3, 3]", "BatchNormalization",
     "[\"x\", \"s\", \"b\", \"m\", \"v\"]", "{\"spatial\": 0}",
     {W("s", "[2]"), W("b", "[2]"), W("m", "[2]"), W("v", "[2]")}, GD_ENOTSUP},
    /* ops-spatial: windows in 1 to 3 axes, pools, normalizations */
    {"Conv of a 4-D image", "[1, 1, 2, 2, 2, 2]", "Conv", "[\"x\", \"w\"]", NULL,
     {W("w", "[1, 1, 1, 1, 1, 1]")}, GD_ENOTSUP},
    {"3-D Conv kernel_shape unlike the weight", "[1, 2, 4, 4, 4]", "Conv", "[\"x\", \"w\"]",
     "{\"kernel_shape\": [2, 2, 3]}", {W("w", "[2, 2, 2, 2, 2]")}, GD_ESHAPE},
    {"3-D Conv pads of a 2-D one", "[1, 2, 4, 4, 4]", "Conv", "[\"x\", \"w\"]",
     "{\"pads\": [1, 1, 1, 1]}", {W("w", "[2, 2, 2, 2, 2]")}, GD_EMODEL},
    {"3-D ConvTranspose output_shape of a 2-D one", "[1, 2, 3, 3, 3]", "ConvTranspose",
     "[\"x\", \"w\"]", "{\"output_shape\": [5, 5]}", {W("w", "[2, 2, 3, 3, 3]")},
     GD_EMODEL},
    {"MaxPool storage_order 2", "[1, 2, 5, 5]", "MaxPool", "[\"x\"]",
     "{\"kernel_shape\": [2, 2], \"storage_order\": 2}", {{0}}, GD_EMODEL},
    {"3-D AveragePool with dilations", "[1, 2, 5, 5, 5]", "AveragePool", "[\"x\"]",
     "{\"kernel_shape\": [2, 2, 2], \"dilations\": [1, 2, 1]}", {{0}}, GD_ENOTSUP},
    {"GlobalMaxPool of a 2-D input", "[2, 3]", "GlobalMaxPool", "[\"x\"]", NULL, {{0}},
     GD_ESHAPE},
    {"BatchNormalization momentum as a string", "[1, 2, 3, 3]", "BatchNormalization",
     "[\"x\", \"s\", \"b\", \"m\", \"v\"]",
     "{\"training_mode\": 1, \"momentum\": \"high\"}",
     {W("s", "[2]"), W("b", "[2]"), W("m", "[2]"), W("v", "[2]")}, GD_EMODEL},
    {"BatchNormalization mean of the wrong length", "[1, 2, 3, 3]", "BatchNormalization",
     "[\"x\", \"s\", \"b\", \"m\", \"v\"]", "{\"training_mode\": 1}",
     {W("s", "[2]"), W("b", "[2]"), W("m", "[3]"), W("v", "[2]")}, GD_ESHAPE},
    {"LRN without size", "[1, 3, 2, 2]", "LRN", "[\"x\"]", NULL, {{0}}, GD_EMODEL},
    {"LRN of size 0", "[1, 3, 2, 2]", "LRN", "[\"x\"]", "{\"size\": 0}", {{0}}, GD_EMODEL},
    {"InstanceNormalization scale of the wrong length", "[1, 3, 4, 4]", "InstanceNormalization",
     "[\"x\", \"s\", \"b\"]", NULL, {W("s", "[2]"), W("b", "[3]")}, GD_ESHAPE},
    {"InstanceNormalization of a 2-D input", "[4, 3]", "InstanceNormalization",
     "[\"x\", \"s\", \"b\"]", NULL, {W("s", "[3]"), W("b", "[3]")}, GD_ESHAPE},
    {"LayerNormalization axis 2 of a 2-D input", "[2, 3]", "LayerNormalization",
     "[\"x\", \"s\"]", "{\"axis\": 2}", {W("s", "[3]")}, GD_EMODEL},
    {"LayerNormalization Scale that does not broadcast", "[2, 3, 4]", "LayerNormalization",
     "[\"x\", \"s\"]", "{\"axis\": 1}", {W("s", "[4, 4]")}, GD_ESHAPE},
    {"LayerNormalization stash_type 11", "[2, 3]", "LayerNormalization", "[\"x\", \"s\"]",
     "{\"stash_type\": 11}", {W("s", "[3]")}, GD_ENOTSUP},
    {"MeanVarianceNormalization axis twice", "[2, 3, 4]", "MeanVarianceNormalization",
     "[\"x\"]", "{\"axes\": [1, -2]}", {{0}}, GD_EMODEL},
    {"MeanVarianceNormalization default axes of a 3-D input", "[2, 3, 4]",
     "MeanVarianceNormalization", "[\"x\"]", NULL, {{0}}, GD_EMODEL},
    {"GroupNormalization without num_groups", "[1, 4, 3]", "GroupNormalization",
     "[\"x\", \"s\", \"b\"]", NULL, {W("s", "[2]"), W("b", "[2]")}, GD_EMODEL},
    {"GroupNormalization num_groups not dividing C", "[1, 4, 3]", "GroupNormalization",
     "[\"x\", \"s\", \"b\"]", "{\"num_groups\": 3}", {W("s", "[3]"), W("b", "[3]")},
     GD_ESHAPE},
    {"GroupNormalization scale of neither length", "[1, 4, 3]", "GroupNormalization",
     "[\"x\", \"s\", \"b\"]", "{\"num_groups\": 2}", {W("s", "[3]"), W("b", "[2]")},
     GD_ESHAPE},
    {"Resize with scales and sizes", "[1, 1, 2, 2]", "Resize",
     "[\"x\", \"\", \"s\", \"z\"]", NULL,
     {{"s", "[4]", "float32", "[1, 1, 2, 2]"}, {"z", "[4]", "int64", "[1, 1, 4, 4]"}}, GD_EMODEL},
    {"Resize with neither scales nor sizes", "[1, 1, 2, 2]", "Resize", "[\"x\"]", NULL, {{0}},
     GD_EMODEL},
    {"Resize scales that are not a constant", "[1, 1, 2, 2]", "Resize",
     "[\"x\", \"\", \"s\"]", NULL, {{"s", "[4]", "input", NULL}}, GD_ENOTSUP},
    {"Resize scales of the wrong length", "[1, 1, 2, 2]", "Resize", "[\"x\", \"\", \"s\"]",
     NULL, {{"s", "[3]", "float32", "[1, 2, 2]"}}, GD_EMODEL},
    {"Resize scale 0", "[1, 1, 2, 2]", "Resize", "[\"x\", \"\", \"s\"]", NULL,
     {{"s", "[4]", "float32", "[1, 1, 0, 2]"}}, GD_EMODEL},
    {"Resize mode bicubic", "[1, 1, 2, 2]", "Resize", "[\"x\", \"\", \"s\"]",
     "{\"mode\": \"bicubic\"}", {{"s", "[4]", "float32", "[1, 1, 2, 2]"}}, GD_EMODEL},
    {"Resize coordinate mode unknown", "[1, 1, 2, 2]", "Resize", "[\"x\", \"\", \"s\"]",
     "{\"coordinate_transformation_mode\": \"centered\"}",
     {{"s", "[4]", "float32", "[1, 1, 2, 2]"}}, GD_EMODEL},
    {"Resize with antialias", "[1, 1, 4, 4]", "Resize", "[\"x\", \"\", \"s\"]",
     "{\"antialias\": 1, \"mode\": \"linear\"}",
     {{"s", "[4]", "float32", "[1, 1, 0.5, 0.5]"}}, GD_ENOTSUP},
    {"Resize sizes of 0", "[1, 1, 2, 2]", "Resize", "[\"x\", \"\", \"\", \"z\"]", NULL,
     {{"z", "[4]", "int64", "[1, 1, 0, 4]"}}, GD_EMODEL},
    {"Resize scale that empties an axis", "[1, 1, 2, 2]", "Resize",
     "[\"x\", \"\", \"s\"]", NULL, {{"s", "[4]", "float32", "[1, 1, 0.25, 1]"}},
     GD_ESHAPE},
    {"Resize axes twice", "[1, 1, 2, 2]", "Resize", "[\"x\", \"\", \"s\"]",
     "{\"axes\": [2, -2]}", {{"s", "[2]", "float32", "[2, 2]"}}, GD_EMODEL},
    {"Upsample without scales", "[1, 1, 2, 2]", "Upsample", "[\"x\"]", NULL, {{0}},
     GD_EMODEL},
    {"ReduceSum axes twice", "[2, 3]", "ReduceSum", "[\"x\"]", "{\"axes\": [1, -1]}", {{0}},
     GD_EMODEL},
    /* element-wise, logical, cast and reduction ops */
    {"Cast without to", "[2, 3]", "Cast", "[\"x\"]", NULL, {{0}}, GD_EMODEL},
    {"Cast to STRING", "[2, 3]", "Cast", "[\"x\"]", "{\"to\": 8}", {{0}}, GD_ENOTSUP},
    {"Cast to no ONNX type", "[2, 3]", "Cast", "[\"x\"]", "{\"to\": 99}", {{0}}, GD_EMODEL},
    {"Cast to a string name", "[2, 3]", "Cast", "[\"x\"]", "{\"to\": \"float16\"}", {{0}},
     GD_EMODEL},
    {"Mod of floats without fmod", "[2, 3]", "Mod", "[\"x\", \"x\"]", NULL, {{0}}, GD_EMODEL},
    {"Mod with fmod 2", "[2, 3]", "Mod", "[\"x\", \"x\"]", "{\"fmod\": 2}", {{0}},
     GD_EMODEL},
    {"Add of int32 and float32", "[2]", "Add", "[\"x\", \"w\"]", NULL,
     {{"w", "[2]", "int32", "[1, 2]"}}, GD_EDTYPE},
    {"Pow of integers", "[2]", "Pow", "[\"w\", \"w\"]", NULL, {{"w", "[2]", "int32", "[1, 2]"}},
     GD_EDTYPE},
    {"BitShift without direction", "[2]", "BitShift", "[\"w\", \"w\"]", NULL,
     {{"w", "[2]", "uint8", "[1, 2]"}}, GD_EMODEL},
    {"BitShift direction UP", "[2]", "BitShift", "[\"w\", \"w\"]", "{\"direction\": \"UP\"}",
     {{"w", "[2]", "uint8", "[1, 2]"}}, GD_EMODEL},
    {"BitShift of int32", "[2]", "BitShift", "[\"w\", \"w\"]", "{\"direction\": \"LEFT\"}",
     {{"w", "[2]", "int32", "[1, 2]"}}, GD_EDTYPE},
    {"And of floats", "[2, 3]", "And", "[\"x\", \"x\"]", NULL, {{0}}, GD_EDTYPE},
    {"Not of int8", "[2]", "Not", "[\"w\"]", NULL, {{"w", "[2]", "int8", "[1, 0]"}}, GD_EDTYPE},
    {"Where with a float condition", "[2, 3]", "Where", "[\"x\", \"x\", \"x\"]", NULL, {{0}},
     GD_EDTYPE},
    {"Where of float32 and int64", "[2, 3]", "Where", "[\"c\", \"x\", \"w\"]", NULL,
     {{"c", "[3]", "bool", "[1, 0, 1]"}, {"w", "[3]", "int64", "[1, 2, 3]"}}, GD_EDTYPE},
    {"Where shapes do not broadcast", "[2, 3]", "Where", "[\"c\", \"x\", \"x\"]", NULL,
     {{"c", "[2]", "bool", "[1, 0]"}}, GD_ESHAPE},
    {"IsInf of int32", "[2]", "IsInf", "[\"w\"]", NULL, {{"w", "[2]", "int32", "[1, 0]"}},
     GD_EDTYPE},
    {"Celu with alpha 0", "[2, 3]", "Celu", "[\"x\"]", "{\"alpha\": 0.0}", {{0}}, GD_EMODEL},
    {"Shrink with alpha", "[2, 3]", "Shrink", "[\"x\"]", "{\"alpha\": 1.0}", {{0}}, GD_EMODEL},
    {"Neg of uint8", "[2]", "Neg", "[\"w\"]", NULL, {{"w", "[2]", "uint8", "[1, 0]"}}, GD_EDTYPE},
    {"Sin of int32", "[2]", "Sin", "[\"w\"]", NULL, {{"w", "[2]", "int32", "[1, 0]"}}, GD_EDTYPE},
    {"ReduceL2 of int32", "[2]", "ReduceL2", "[\"w\"]", NULL, {{"w", "[2]", "int32", "[1, 0]"}},
     GD_EDTYPE},
    {"ReduceProd axis 2 of a 2-D input", "[2, 3]", "ReduceProd", "[\"x\"]",
     "{\"axes\": [2]}", {{0}}, GD_EMODEL},
    {"ReduceMin axes both ways", "[2, 3]", "ReduceMin", "[\"x\", \"a\"]", "{\"axes\": [0]}",
     {{"a", "[1]", "int64", "[1]"}}, GD_EMODEL},
    {"ArgMin over an empty axis", "[2, 0]", "ArgMin", "[\"x\"]", "{\"axis\": 1}", {{0}},
     GD_ESHAPE},
    {"Hardmax axis 2 of a 2-D input", "[2, 3]", "Hardmax", "[\"x\"]", "{\"axis\": 2}", {{0}},
     GD_EMODEL},
    {"CumSum without an axis", "[2, 3]", "CumSum", "[\"x\"]", NULL, {{0}}, GD_EMODEL},
    {"CumSum axis that is not a constant", "[2, 3]", "CumSum", "[\"x\", \"a\"]", NULL,
     {{"a", "[]", "input", NULL}}, GD_ENOTSUP},
    {"CumSum axis 2 of a 2-D input", "[2, 3]", "CumSum", "[\"x\", \"a\"]", NULL,
     {{"a", "[]", "int64", "[2]"}}, GD_EMODEL},
    {"CumSum axis of two values", "[2, 3]", "CumSum", "[\"x\", \"a\"]", NULL,
     {{"a", "[2]", "int64", "[0, 1]"}}, GD_EMODEL},
    {"CumSum axis of floats", "[2, 3]", "CumSum", "[\"x\", \"a\"]", NULL,
     {{"a", "[]", "float32", "[1]"}}, GD_EDTYPE},
    {"Sum without inputs", "[2, 3]", "Sum", "[]", NULL, {{0}}, GD_EMODEL},
    /* constants' contents at int64's limits (a float's conversion past it is undefined) */
    {"ReduceSum axes of a float past int64", "[2, 3]", "ReduceSum", "[\"x\", \"a\"]", NULL,
     {{"a", "[1]", "float32", "[1e30]"}}, GD_EMODEL},
    {"Reshape shape of a float past int64", "[2, 3]", "Reshape", "[\"x\", \"s\"]", NULL,
     {{"s", "[2]", "float64", "[-1e300, 6]"}}, GD_EMODEL},
};
/* clang-format on */

#define N_CASES ((int)(sizeof cases / sizeof cases[0]))

START_TEST(test_bad_model)
{
    const struct err_case *e = &cases[_i];
    struct gd_err err = {0};
    int rc = parse_case(e, &err);
    ck_assert_msg(rc == e->code, "%s: got %s (%s), want %s", e->what, gd_err_name(rc), err.msg,
                  gd_err_name(e->code));
    ck_assert_msg(strstr(err.msg, "node bad_node") != NULL,
                  "%s: the message does not name the node: %s", e->what, err.msg);
}
END_TEST

/* The same errors reach a caller of oh_run(), whose node is called "node". */
START_TEST(test_oh_run_errors)
{
    int64_t shape[2] = {2, 3};
    struct gd_tensor *x = oh_random(2, shape, 7);
    struct gd_tensor *out[1];
    struct gd_err err = {0};
    int rc = oh_run("cpu", "Relu", 1, &x, 0, "{\"alpha\": 1.5}", 1, out, NULL, &err);
    ck_assert_msg(rc == GD_EMODEL, "unknown attribute: got %s (%s)", gd_err_name(rc), err.msg);
    ck_assert_msg(strstr(err.msg, "node node") != NULL, "message: %s", err.msg);
    gd_err_clear(&err);
    rc = oh_run("cpu", "Softmax", 1, &x, 0, "{\"axis\": 5}", 1, out, NULL, &err);
    ck_assert_msg(rc == GD_EMODEL, "Softmax axis 5: got %s (%s)", gd_err_name(rc), err.msg);
    ck_assert_msg(strstr(err.msg, "node node") != NULL, "message: %s", err.msg);
    gd_err_clear(&err);
    rc = oh_run("cpu", "Frobnicate", 1, &x, 0, NULL, 1, out, NULL, &err);
    /* sec: an op the build lacks is GD_ENOTSUP (exit 5), as the ONNX loader has it */
    ck_assert_msg(rc == GD_ENOTSUP, "unknown op: got %s (%s)", gd_err_name(rc), err.msg);
    ck_assert_msg(strstr(err.msg, "Frobnicate") != NULL, "message: %s", err.msg);
    gd_tensor_free(x);
}
END_TEST

/*
 * Whole models at int64's limits: declared shapes and weights that no tensor can have, and a
 * Split of an axis of 2^63 - 1 (empty) bytes. code 0: the model parses.
 */
struct model_case {
    const char *what;
    const char *inputs, *weights, *nodes, *outputs; /* the model's JSON lists */
    int code;
    const char *fragment; /* in the message */
};

/* clang-format off */
static const struct model_case model_cases[] = {
    {"an input declared past the byte bound",
     "[{\"name\": \"x\", \"shape\": [4611686018427387904, 4611686018427387904]}]", "[]",
     "[{\"name\": \"n\", \"op\": \"Flatten\", \"inputs\": [\"x\"], \"outputs\": [\"y\"], "
     "\"attrs\": {\"axis\": 2}}]", "[\"y\"]", GD_ERANGE, "input x"},
    {"a weight shaped past the byte bound", "[{\"name\": \"x\", \"shape\": [2]}]",
     "[{\"name\": \"w\", \"shape\": [4611686018427387904, 4611686018427387904], "
     "\"values\": []}]",
     "[{\"name\": \"n\", \"op\": \"Relu\", \"inputs\": [\"x\"], \"outputs\": [\"y\"]}]",
     "[\"y\"]", GD_ERANGE, "weight w"},
    {"an int64 weight value past int64", "[{\"name\": \"x\", \"shape\": [2]}]",
     "[{\"name\": \"w\", \"dtype\": \"int64\", \"values\": [1, 1e30]}]",
     "[{\"name\": \"n\", \"op\": \"Relu\", \"inputs\": [\"x\"], \"outputs\": [\"y\"]}]",
     "[\"y\"]", GD_ERANGE, "value 1"},
    {"Split num_outputs of an axis of 2^63 - 1",
     "[{\"name\": \"x\", \"dtype\": \"uint8\", \"shape\": [1, 9223372036854775807]}]", "[]",
     "[{\"name\": \"n\", \"op\": \"Split\", \"inputs\": [\"x\"], \"outputs\": [\"a\", \"b\"], "
     "\"attrs\": {\"axis\": 1, \"num_outputs\": 2}}]", "[\"a\", \"b\"]", 0, NULL},
};
/* clang-format on */

START_TEST(test_bad_whole_model)
{
    const struct model_case *m = &model_cases[_i];
    char text[2048];
    snprintf(text, sizeof text, "{\"format\": \"gpudiff-model\", \"version\": 1, \"name\": "
             "\"limits\", \"inputs\": %s, \"weights\": %s, \"nodes\": %s, \"outputs\": %s}",
             m->inputs, m->weights, m->nodes, m->outputs);
    struct gd_graph *g = NULL;
    struct gd_err err = {0};
    int rc = gd_model_parse(text, strlen(text), "limits", ".", NULL, &g, &err);
    ck_assert_msg(rc == m->code, "%s: got %s (%s), want %s", m->what, gd_err_name(rc), err.msg,
                  gd_err_name(m->code));
    if (m->fragment != NULL)
        ck_assert_msg(strstr(err.msg, m->fragment) != NULL, "%s: the message lacks \"%s\": %s",
                      m->what, m->fragment, err.msg);
    if (m->code == 0) { /* the parts of the split: ceil((2^63 - 1) / 2) = 2^62, 2^62 - 1 */
        struct gd_shape in = {.ndim = 2, .dim = {1, INT64_MAX}}, *shapes;
        struct gd_params *params = calloc((size_t)g->n_nodes, sizeof *params);
        shapes = calloc((size_t)g->n_values, sizeof *shapes);
        rc = gd_graph_infer(g, &in, shapes, params, &err);
        ck_assert_msg(rc == 0, "%s: %s", m->what, err.msg);
        ck_assert_int_eq(shapes[gd_graph_find_value(g, "a")].dim[1], INT64_C(1) << 62);
        ck_assert_int_eq(shapes[gd_graph_find_value(g, "b")].dim[1], (INT64_C(1) << 62) - 1);
        free(shapes);
        free(params);
    }
    gd_graph_free(g);
}
END_TEST

int
main(void)
{
    Suite *s = suite_create("infer_errors");
    TCase *tc = tcase_create("errors");
    tcase_add_loop_test(tc, test_bad_model, 0, N_CASES);
    tcase_add_test(tc, test_oh_run_errors);
    tcase_add_loop_test(tc, test_bad_whole_model, 0,
                        (int)(sizeof model_cases / sizeof model_cases[0]));
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_ENV);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
