/*
 * session_graph.h: the small model the session tests run, y = relu(x W^T + b) on small
 * integers (float32 computes it exactly, whatever the summation order, so the expected
 * values are integer arithmetic here, not the engine's), optionally with a 3x3 Conv beside
 * it on an input of its own.
 */
#ifndef GD_TEST_SESSION_GRAPH_H
#define GD_TEST_SESSION_GRAPH_H

#include "gpudiff/graph.h"
#include "gpudiff/tensor.h"

#define SG_ROWS 5
#define SG_IN   4
#define SG_OUT  3

/* x (SG_ROWS x SG_IN) -> fc (Gemm, transB) -> act (Relu), outputs act; with_conv adds
 * img (N x 1 x 4 x 4) -> conv (Conv 3x3, one filter) as a second input and output. */
struct gd_graph *sg_graph(int with_conv);

/* An input x of SG_ROWS rows (owned). */
struct gd_tensor *sg_input(void);

/* An input img of n rows (owned). */
struct gd_tensor *sg_image(int64_t n);

/* Fails the test unless y is relu(x W^T + b), exactly. */
void sg_check_output(const struct gd_tensor *y, const struct gd_tensor *x, const char *what);

/*
 * Runs the tiny BERT fixture (tests/fixtures/onnx/transformers: its attention mask goes
 * through arithmetic the folds compute on the host) on backend: from host inputs, then
 * staged and forwarded three times, then from host inputs again, whose output must be the
 * first run's. A staged input in device memory once gave its folds no value ("input 0 is
 * missing").
 */
void sg_check_staged_folds(const char *backend);

#endif
