/*
 * onnx_internal.h: what the ONNX loader's files share: the protobuf-c types generated at
 * build time from onnx.proto, tensor decoding (initializers, Constant values, .pb files),
 * the explanation of a protobuf that does not decode, and the per-op version rules.
 */
#ifndef GPUDIFF_ONNX_INTERNAL_H
#define GPUDIFF_ONNX_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "onnx.pb-c.h"

#include "gpudiff/graph.h"
#include "gpudiff/onnx.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ONNX's name of TensorProto.DataType code ("FLOAT", "STRING", ...), "?" when unknown. */
const char *gd__onnx_dtype_name(int64_t code);

/*
 * The engine's dtype for an ONNX TensorProto.DataType code. GD_ENOTSUP naming the type for
 * one ONNX has and the engine lacks (strings, complex, 8- and 4-bit floats and integers),
 * GD_EFORMAT for a code ONNX does not define. `what` starts the message.
 */
int gd__onnx_dtype(int64_t code, const char *what, enum gd_dtype *out, struct gd_err *err);

/*
 * Decodes tp into a new host tensor in native byte order (bools 0 or 1), from raw_data,
 * the typed fields or external data. dir is the folder external data locations are
 * relative to; NULL refuses external data. When raw_data holds the data as the engine
 * stores it, its buffer becomes the tensor's (tp->raw_data is emptied): no copy. `what`
 * names the tensor in messages. GD_EFORMAT for data that disagrees with the dims, GD_ENOTSUP
 * for a dtype or storage the engine lacks, GD_ENOENT / GD_EIO / GD_EINVAL for external data
 * that is missing, unreadable or outside dir.
 */
int gd__onnx_tensor(Onnx__TensorProto *tp, const char *what, const char *dir,
                    struct gd_tensor **out, struct gd_err *err);

/*
 * Why protobuf-c could not unpack len bytes of buf as a message of type desc: the path of
 * the first field that runs past its end, is cut, or has another wire type than its
 * declaration ("graph.node[3].attribute[0].t: field 9 (raw_data) is cut: 1200 bytes
 * declared, 80 left"), written into out.
 */
void gd__onnx_wire_explain(const ProtobufCMessageDescriptor *desc, const uint8_t *buf, size_t len,
                           char *out, size_t cap);

/* malloc and free, with huge pages for large tensors' buffers (onnx_tensor.c). */
extern ProtobufCAllocator gd__onnx_allocator;

/* Unpacks a message, with the explanation above as GD_EFORMAT when it does not decode;
 * `what` (NULL: nothing) starts the message. */
ProtobufCMessage *gd__onnx_unpack(const ProtobufCMessageDescriptor *desc, const uint8_t *buf,
                                  size_t len, const char *what, struct gd_err *err);

/* Reads a whole file into memory: mapped (*mapped = 1, release with munmap) or read. */
int gd__onnx_map(const char *path, const uint8_t **data, size_t *len, int *mapped,
                 struct gd_err *err);
void gd__onnx_unmap(const uint8_t *data, size_t len, int mapped);

/* ---- per-op version rules (onnx_opset.c) ---- */

#define GD__ONNX_MAX_IO 64
#define GD__ONNX_MAX_ATTRS 32

/* A node on its way into the graph: what the rules may change. */
struct gd__onnx_node {
    char name[256];             /* the graph node's name */
    char op[64];
    int n_inputs;
    char *inputs[GD__ONNX_MAX_IO];  /* graph value names; NULL for an absent input */
    int n_outputs;
    char *outputs[GD__ONNX_MAX_IO];
    int n_attrs;
    struct gd_attr attrs[GD__ONNX_MAX_ATTRS];
};

/* What the rules can do to the graph while a node is rewritten. */
struct gd__onnx_build {
    struct gd_graph *g;
    int opset;                  /* the model's ai.onnx version */
    /* Adds a node (a layer or a fold, as the loader decides), consuming n's attributes. */
    int (*add)(struct gd__onnx_build *b, struct gd__onnx_node *n, struct gd_err *err);
    /* The rank of a value, by inferring the graph built so far with free dimensions as 1;
     * -1 when it cannot be known. */
    int (*rank)(struct gd__onnx_build *b, const char *value);
    void *loader;
};

/*
 * Applies the version rules of n's op for b->opset and adds the result through b->add:
 * attributes that later opsets made inputs become constant inputs, ops that changed
 * meaning become what means the same today (pre-13 Softmax coerced to 2-D, Upsample and
 * Resize-10 as Resize with the old coordinate rule). GD_ENOTSUP for a form the engine
 * cannot express (BatchNormalization spatial=0).
 */
int gd__onnx_rewrite(struct gd__onnx_build *b, struct gd__onnx_node *n, struct gd_err *err);

/* Frees the attributes and names of n (not the struct). */
void gd__onnx_node_fini(struct gd__onnx_node *n);

#ifdef __cplusplus
}
#endif
#endif
