/*
 * model_load.h: the one way every command of the agent (run, sweep, replay, fetch-layers's
 * re-run, and the runs serve makes for jobs) reads a model and its inputs: the JSON graph
 * (with its weights folder) or ONNX (with its external data), told apart by content; the
 * --dtype cast; the inputs from .npy, .npz, .safetensors or ONNX TensorProto (.pb) files,
 * matched to the model's inputs by name (inputs.c); an ONNX model then checked with them.
 */
#ifndef GPUDIFF_AGENT_MODEL_LOAD_H
#define GPUDIFF_AGENT_MODEL_LOAD_H

#include <jansson.h>

#include "gpudiff/graph.h"
#include "inputs.h"

/* What to load. */
struct agt_model_req {
    const char *model;         /* the model file */
    const char *weights_dir;   /* JSON models: the folder weight paths are relative to; NULL:
                                * the model's "weights_dir" (an ONNX model's external data is
                                * always relative to its own folder) */
    const char *const *inputs; /* --input texts, FILE or NAME=FILE (inputs.h) */
    int n_inputs;
    const char *input_key; /* --input-key: the member of an archive input */
    /* Instead of inputs: run.json's "inputs" records ({name, file, key}), each file read
     * for the input of its name (replay reads a run's own inputs so). */
    json_t *input_records;
    /* When not NULL: run.json's "inputs" records of a run whose inputs these must be; an
     * input whose SHA-256 is not its record's is refused (GD_EINVAL). */
    json_t *expect;
    /* knobs.dtype: "" or "float32" the model's own dtypes (float32 refuses a model holding
     * float16 or bfloat16 values), "float16" or "bfloat16" the float32 model cast to it as
     * PyTorch's model.half() does (gd_graph_cast_floats()) */
    const char *dtype;
};

/* What was loaded; agt_model_fini() frees it. */
struct agt_model {
    struct gd_graph *g;                       /* finalized with the inputs */
    struct gd_tensor *inputs[AGT_MAX_INPUTS]; /* one per graph input, in order */
    json_t *records;                          /* run.json's "inputs" records */
    int onnx;                                 /* 1: the file was ONNX */
};

/* 1 when the file is ONNX (a protobuf), 0 when it is the JSON graph (starts with '{') or
 * cannot be read (the loader says why). */
int agt_model_is_onnx(const char *path);

/*
 * Loads r's model and inputs into *out (zeroed first; filled only on success). Errors name
 * the file, input or node at fault: GD_EFORMAT, GD_EMODEL, GD_ESHAPE, GD_ENOENT for files,
 * GD_EINVAL for inputs that do not fit the model (the model's input names listed), for
 * --weights-dir with an ONNX model and for a bad dtype, GD_ENOTSUP for what this build
 * lacks.
 */
int agt_model_load(const struct agt_model_req *r, struct agt_model *out, struct gd_err *err);

/* Frees what agt_model_load() made; accepts a zeroed struct. */
void agt_model_fini(struct agt_model *m);

#endif
