/*
 * fuzz_onnx.c: libFuzzer entry point over the ONNX loader: gd_onnx_parse() (decoding,
 * initializers, the version rules, folds, shape inference) and gd_onnx_tensor_parse().
 *
 * Not part of the automake build. From the top of the source tree, after a build in build/
 * (for the protobuf code protoc-c generated there), with clang 14 or later:
 *
 *   clang -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
 *       -Iengine/include -Ibuild -Ibuild/engine/io build/engine/io/onnx.pb-c.c \
 *       engine/io/onnx*.c engine/io/file.c engine/core/attr.c engine/core/error.c \
 *       engine/core/fold.c engine/core/graph.c engine/core/hash.c engine/core/infer_*.c \
 *       engine/core/log.c engine/core/ops.c engine/core/tensor.c tests/fuzz/fuzz_onnx.c \
 *       $(pkg-config --cflags --libs libprotobuf-c libcrypto) -lm -o fuzz_onnx
 *   mkdir -p corpus_onnx && ./fuzz_onnx -max_total_time=60 corpus_onnx tests/fuzz/corpus/onnx
 *
 * External data is refused (no folder is given), so a model cannot make it read files.
 * Besides the sanitizers' findings it aborts when a result breaks what the API promises: a
 * graph whose nodes read values that do not exist or come later, outputs that are no
 * values, a failure that leaves an output behind or gives no message.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "gpudiff/graph.h"
#include "gpudiff/onnx.h"

static void
check_graph(const struct gd_graph *g)
{
    for (int ni = 0; ni < g->n_nodes; ni++) {
        const struct gd_node *n = &g->nodes[ni];
        for (int i = 0; i < n->n_inputs; i++) {
            int v = n->inputs[i];
            if (v < -1 || v >= g->n_values)
                abort();
            /* topological: what a node reads was made before it */
            if (v >= 0 && g->values[v].producer >= ni)
                abort();
        }
        for (int k = 0; k < n->n_outputs; k++)
            if (n->outputs[k] < 0 || n->outputs[k] >= g->n_values ||
                g->values[n->outputs[k]].producer != ni)
                abort();
    }
    for (int i = 0; i < g->n_outputs; i++)
        if (g->outputs[i] < 0 || g->outputs[i] >= g->n_values)
            abort();
    for (int f = 0; f < g->n_folds; f++)
        if (g->folds[f].before < 0 || g->folds[f].before > g->n_nodes)
            abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct gd_err err = {0};
    struct gd_graph *g = NULL;
    struct gd_onnx_report report;
    int rc = gd_onnx_parse(data, size, "fuzz", NULL, NULL, &report, &g, &err);
    if (rc == 0) {
        if (g == NULL)
            abort();
        check_graph(g);
        gd_graph_free(g);
    } else if (g != NULL || err.code != rc || strstr(err.msg, "fuzz") == NULL) {
        abort();
    }
    struct gd_tensor *t = NULL;
    char *name = NULL;
    rc = gd_onnx_tensor_parse(data, size, "fuzz", NULL, &t, &name, &err);
    if (rc == 0) {
        if (t == NULL || name == NULL || (t->ndim > 0 && t->data == NULL && gd_tensor_nbytes(t)))
            abort();
        free(name);
        gd_tensor_free(t);
    } else if (t != NULL || err.code != rc) {
        abort();
    }
    return 0;
}
