/*
 * op_harness.h: runs one op on one backend for the unit tests: the inputs flagged as
 * constant become the node's weights, the others graph inputs, and the node's outputs come
 * back as host tensors.
 */
#ifndef GPUDIFF_TESTS_OP_HARNESS_H
#define GPUDIFF_TESTS_OP_HARNESS_H

#include <stdint.h>

#include "gpudiff/session.h"
#include "gpudiff/tensor.h"

/*
 * Runs op with inputs in[0..n_in) (NULL for an absent optional input); bit i of const_mask
 * makes in[i] a weight. attrs_json is the node's "attrs" object ("{...}", or NULL for none).
 * knobs may be NULL (defaults). On success out[0..n_out) are new tensors owned by the caller.
 * When every input is a weight the model gets a float32 graph input of one element that no
 * node reads (a model needs an input; integer and bool data can only be weights so far).
 */
int oh_run(const char *backend, const char *op, int n_in, struct gd_tensor *const *in,
           unsigned const_mask, const char *attrs_json, int n_out, struct gd_tensor **out,
           const struct gd_knobs *knobs, struct gd_err *err);

/*
 * Builds the same one-node model as oh_run() (the graph's input shapes are those of in)
 * and gives the node's reduction length, gd_node_reduction_len(), in *len.
 */
int oh_reduction_len(const char *op, int n_in, struct gd_tensor *const *in, unsigned const_mask,
                     const char *attrs_json, int n_out, int64_t *len, struct gd_err *err);

/* The math mode and algorithm the backend reported for the last oh_run's node ("" none). */
extern char oh_last_math[16];
extern char oh_last_algo[128];

/* A float32 tensor of the given shape holding values (numel of them). */
struct gd_tensor *oh_f32(int ndim, const int64_t *shape, const float *values);

/* A float32 tensor with deterministic pseudo-random values in [-1, 1) (seeded). */
struct gd_tensor *oh_random(int ndim, const int64_t *shape, unsigned seed);

#endif
