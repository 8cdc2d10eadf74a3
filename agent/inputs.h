/*
 * inputs.h: reading `run`'s --input files into one tensor per graph input (inputs.c).
 */
#ifndef GPUDIFF_AGENT_INPUTS_H
#define GPUDIFF_AGENT_INPUTS_H

#include <jansson.h>

#include "gpudiff/graph.h"

#define AGT_MAX_INPUTS 64

/*
 * Appends one --input text (FILE or NAME=FILE) to specs (*n of AGT_MAX_INPUTS): 0, or -1
 * with "gpudiff-agent CMD: more than 64 --input" on stderr when they are full.
 */
int agt_input_add(const char *cmd, const char **specs, int *n, const char *text);

/*
 * Reads one tensor: .npy, .npz and .safetensors (key picks an archive's member, as
 * gd_array_load() does) or an ONNX TensorProto .pb, told apart by content.
 */
int agt_tensor_load(const char *path, const char *key, struct gd_tensor **out,
                    struct gd_err *err);

/*
 * Fills out[i] (g->n_inputs entries, caller-owned tensors) for each graph input from the
 * --input texts: "NAME=FILE" when NAME is an input of g, else a file. One file for a model
 * of one input (key, or the member named like the input, or the only member); one archive
 * whose members are named like the inputs for a model of several. *records gets a JSON
 * array of {name, file, key, sha256, dtype, shape}. GD_EINVAL naming the inputs the model
 * has when the texts do not give each exactly once.
 */
int agt_inputs_load(const struct gd_graph *g, const char *const *specs, int n_specs,
                    const char *key, struct gd_tensor **out, json_t **records,
                    struct gd_err *err);

/* The same with keys[i] (may be NULL) the member to read for input i when it is given as
 * NAME=FILE: run.json's records of a run's inputs name their archive members so. */
int agt_inputs_load_keyed(const struct gd_graph *g, const char *const *specs, int n_specs,
                          const char *const *keys, struct gd_tensor **out, json_t **records,
                          struct gd_err *err);

#endif
