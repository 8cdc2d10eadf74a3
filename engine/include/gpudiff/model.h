/*
 * model.h: loading a model from the project's JSON graph format
 * (schema/json/model.schema.json) and its weight files.
 */
#ifndef GPUDIFF_MODEL_H
#define GPUDIFF_MODEL_H

#include <stddef.h>

#include "gpudiff/graph.h"

#ifdef __cplusplus
extern "C" {
#endif

struct gd_model_opts {
    /* Folder weight paths are relative to; NULL: the model's "weights_dir", itself relative
     * to the model file's folder (default: that folder). */
    const char *weights_dir;
};

/*
 * Reads the model file, loads and casts every weight, builds the graph and infers its
 * shapes. On success *out is a new graph owned by the caller, with sha256 set to the hash
 * of the model file and of every weight as loaded (name, dtype, shape, data). Errors name
 * the file, and the node or weight at fault: GD_EFORMAT (not JSON, wrong structure),
 * GD_EMODEL (bad attribute, missing weight), GD_ENOTSUP (an op this build does not have,
 * as for ONNX models: the agent's exit 5), GD_ESHAPE, GD_ENOENT.
 */
int gd_model_load(const char *path, const struct gd_model_opts *opts, struct gd_graph **out,
                  struct gd_err *err);

/*
 * The same from model text in memory: `where` names it in messages, dir is the folder its
 * relative paths start from (NULL: the current folder).
 */
int gd_model_parse(const char *text, size_t len, const char *where, const char *dir,
                   const struct gd_model_opts *opts, struct gd_graph **out, struct gd_err *err);

#ifdef __cplusplus
}
#endif
#endif
