/*
 * onnx.h: ONNX models and tensors (docs/ONNX.md).
 *
 * gd_onnx_load() fills the same struct gd_graph as the JSON loader from an ONNX model file
 * (ai.onnx opsets 7 to 21): initializers become constants, Constant nodes and shape
 * computations become folds (struct gd_fold), every other node a layer named by its ONNX
 * node name. gd_onnx_tensor_load() reads one TensorProto (.pb), as the ONNX test data sets
 * store inputs and expected outputs, with the loader's tensor decoding.
 */
#ifndef GPUDIFF_ONNX_H
#define GPUDIFF_ONNX_H

#include <stddef.h>

#include "gpudiff/graph.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Why a model was refused with GD_ENOTSUP. */
enum gd_onnx_refusal {
    GD_ONNX_OK = 0,
    GD_ONNX_REFUSED_OP,       /* ops this build lacks (an unknown domain, a subgraph op) */
    GD_ONNX_REFUSED_DTYPE,    /* a data type the engine lacks (strings, complex, sequences) */
    GD_ONNX_REFUSED_FORM      /* an attribute or form of a known op, an opset outside 7..21 */
};

/* How to load; NULL asks for the defaults (all 0). */
struct gd_onnx_opts {
    /*
     * 0: the graph is finalized with gd_graph_finalize() (free dimensions as 1). 1: it is
     * returned built but not finalized, for the caller to call gd_graph_finalize_with() on
     * the inputs it will run: a model whose shape parameters are graph inputs (a Reshape's
     * shape, Slice's starts, as the ONNX tests give them) is only checked with their values.
     */
    int defer_finalize;
};

/* What the loader reports besides the graph; all optional (the pointer may be NULL). */
struct gd_onnx_report {
    enum gd_onnx_refusal refusal;   /* with GD_ENOTSUP: why */
    char missing_ops[256];          /* GD_ONNX_REFUSED_OP: "Erf,Where,com.microsoft.Gelu" */
    int opset;                      /* the model's ai.onnx opset */
};

/*
 * Loads an ONNX model. External data files are found relative to the model's folder (paths
 * that leave it are refused). On success *out is a new graph owned by the caller, its
 * sha256 that of the model file and its external data as read. Errors name the file and
 * the node, initializer or field at fault: GD_EFORMAT for a file that does not decode (the
 * field that is cut or mistyped is named), a dangling input, a cycle, a value produced
 * twice; GD_EMODEL for a bad attribute or shape; GD_ENOTSUP, with report->refusal, for
 * everything this build cannot run, listed in one message (each missing op with its node
 * count and first node names); GD_ENOENT / GD_EIO for files.
 */
int gd_onnx_load(const char *path, const struct gd_onnx_opts *opts,
                 struct gd_onnx_report *report, struct gd_graph **out, struct gd_err *err);

/* The same from a model in memory; dir is the folder external data is relative to (NULL:
 * external data is refused). `where` names it in messages. */
int gd_onnx_parse(const void *buf, size_t len, const char *where, const char *dir,
                  const struct gd_onnx_opts *opts, struct gd_onnx_report *report,
                  struct gd_graph **out, struct gd_err *err);

/*
 * Reads a serialized TensorProto (.pb). *out gets a new host tensor; *name, when name is
 * not NULL, a new string with the tensor's name ("" when it has none). External data is
 * relative to the file's folder. Errors as gd_onnx_load()'s.
 */
int gd_onnx_tensor_load(const char *path, struct gd_tensor **out, char **name,
                        struct gd_err *err);

/* The same from memory; dir as for gd_onnx_parse(). */
int gd_onnx_tensor_parse(const void *buf, size_t len, const char *what, const char *dir,
                         struct gd_tensor **out, char **name, struct gd_err *err);

#ifdef __cplusplus
}
#endif
#endif
