/*
 * graph.h: a model as values and nodes in topological order.
 *
 * A struct gd_graph owns everything it points to: names, attributes, constant tensors.
 * Loaders (gd_model_load() for the JSON format, later ONNX) build it with the gd_graph_add_*
 * functions and finish with gd_graph_finalize(), which checks it and infers shapes; a graph
 * that passed gd_graph_finalize() is read-only for the rest of its life and can be shared
 * by several sessions.
 */
#ifndef GPUDIFF_GRAPH_H
#define GPUDIFF_GRAPH_H

#include <stdint.h>

#include "gpudiff/ops.h"
#include "gpudiff/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

enum gd_attr_type {
    GD_ATTR_INT,
    GD_ATTR_FLOAT,
    GD_ATTR_STRING,
    GD_ATTR_INTS,
    GD_ATTR_FLOATS,
    GD_ATTR_TENSOR /* ONNX's tensor attributes (ConstantOfShape's value); owned */
};

/* One node attribute as the model file wrote it, before the op checks it. */
struct gd_attr {
    char *name;
    enum gd_attr_type type;
    int64_t i;          /* GD_ATTR_INT */
    double f;           /* GD_ATTR_FLOAT */
    char *s;            /* GD_ATTR_STRING */
    int n;              /* GD_ATTR_INTS, GD_ATTR_FLOATS: element count */
    int64_t *ints;
    double *floats;
    struct gd_tensor *t;        /* GD_ATTR_TENSOR: a host tensor */
};

/* A tensor's dimensions, without its data. */
struct gd_shape {
    int ndim;
    int64_t dim[GD_MAX_DIMS];
};

struct gd_value {
    char *name;
    enum gd_dtype dtype;        /* the logical type: float32 for activations */
    struct gd_shape shape;      /* inferred at gd_graph_finalize() with free dims as 1 */
    struct gd_tensor *constant; /* weights: owned host tensor; NULL otherwise */
    int producer;               /* node index, or -1 for inputs and constants */
    int is_input;
    int is_output;
    int last_use;               /* index of the last node reading it, -1 if none */
    int fold;                   /* index of the fold that computes it at inference (a shape
                                 * computation, see struct gd_fold), or -1 */
};

struct gd_node {
    char *name;
    enum gd_op op;
    int n_inputs;
    int *inputs;                /* value indices; -1 marks an absent optional input */
    int n_outputs;
    int *outputs;
    int n_attrs;
    struct gd_attr *attrs;
    struct gd_params params;    /* filled by gd_graph_finalize() */
};

/* A graph input as declared: a dimension of -1 is free (the batch, usually). */
struct gd_input_decl {
    enum gd_dtype dtype;
    struct gd_shape shape;
};

/*
 * A node of the model that is not a layer: a shape computation (ONNX exports compute
 * Reshape targets with Shape, Gather, Unsqueeze, Concat and int64 arithmetic) or a Constant.
 * The engine's own exact evaluator computes it (engine/core/fold.c), never a backend. A
 * fold whose inputs were all constants was computed once when it was added: its outputs
 * are constants (at_load). The others read the shape of a value known only at run time;
 * gd_graph_infer() computes them again for each set of input shapes, just before node
 * `before`, and the session hands their results to the nodes reading them.
 */
struct gd_fold {
    char *name;                 /* the model's node name */
    char *op;                   /* its ONNX op ("Shape", "Gather", "Constant", ...) */
    int n_inputs;
    int *inputs;                /* value indices; -1 marks an absent optional input */
    int n_outputs;
    int *outputs;
    int n_attrs;
    struct gd_attr *attrs;
    int before;                 /* computed before inferring this node (g->n_nodes at adding) */
    int at_load;                /* 1: computed when added; its outputs are constants */
};

struct gd_graph {
    char *name;
    char sha256[65];            /* of the model file and its weights, as gd_model_load() saw */
    int n_values, n_nodes, n_inputs, n_outputs;
    struct gd_value *values;
    struct gd_node *nodes;
    int *inputs;                /* value indices of the graph inputs */
    struct gd_input_decl *input_decls; /* parallel to inputs */
    int *outputs;               /* value indices of the graph outputs */
    int cap_values, cap_nodes;  /* allocated lengths, for the builders */
    int n_folds, cap_folds;
    struct gd_fold *folds;      /* in model order */
};

/* An empty graph named name. NULL and err on failure. */
struct gd_graph *gd_graph_new(const char *name, struct gd_err *err);

/* Frees the graph and everything it owns. Accepts NULL. */
void gd_graph_free(struct gd_graph *g);

/* Index of the value called name, or -1. */
int gd_graph_find_value(const struct gd_graph *g, const char *name);

/* Index of the node called name, or -1. */
int gd_graph_find_node(const struct gd_graph *g, const char *name);

/* Declares a graph input. Fails with GD_EEXIST when the name is taken. */
int gd_graph_add_input(struct gd_graph *g, const char *name, const struct gd_input_decl *decl,
                       struct gd_err *err);

/* Adds a constant value; takes ownership of t (also on failure). */
int gd_graph_add_constant(struct gd_graph *g, const char *name, struct gd_tensor *t,
                          struct gd_err *err);

/*
 * Appends a node reading the named values (NULL or "" for an absent optional input) and
 * producing new values with the output names. Inputs must already exist: nodes come in
 * topological order. attrs are taken over (their contents move into the graph, also on
 * failure); the caller frees only the array itself.
 */
int gd_graph_add_node(struct gd_graph *g, const char *name, const char *op_name, int n_inputs,
                      const char *const *inputs, int n_outputs, const char *const *outputs,
                      int n_attrs, struct gd_attr *attrs, struct gd_err *err);

/*
 * Adds a fold (struct gd_fold): op computed by the engine's own evaluator on the named
 * inputs (NULL or "" for an absent optional one), producing values with the output names.
 * When every input is a constant it is computed now and its outputs become constants;
 * otherwise it is computed at each inference. Its inputs must then be constants, other
 * folds' results or integer and bool graph inputs (whose values each run gives; not
 * together with a float input, whose data a fold would move out of the layers), except the
 * input of Shape and Size, which may be any value. The evaluator does integer and bool arithmetic
 * exactly in int64 and moves data of any dtype; it computes nothing on floats. GD_ENOTSUP,
 * with nothing added, when it cannot take this node (an op it lacks, a float operand of
 * arithmetic, an input known only at run time): the caller may add the node as a layer.
 * Other failures (a bad attribute, a shape error while computing) are GD_EMODEL or
 * GD_ESHAPE. attrs are taken over (their contents move into the graph) on success only: on
 * failure they stay the caller's, so it can add the node as a layer with them.
 */
int gd_graph_add_fold(struct gd_graph *g, const char *name, const char *op, int n_inputs,
                      const char *const *inputs, int n_outputs, const char *const *outputs,
                      int n_attrs, struct gd_attr *attrs, struct gd_err *err);

/* Op i of those gd_graph_add_fold() computes ("Shape", "Gather", ...); NULL past the last. */
const char *gd_fold_op_name(int i);

/* Records a Constant node of the model as a fold computed at load: value becomes constant
 * `output` (t is taken over, also on failure). */
int gd_graph_add_constant_node(struct gd_graph *g, const char *name, const char *output,
                               struct gd_tensor *t, struct gd_err *err);

/* Marks a value as a graph output. */
int gd_graph_add_output(struct gd_graph *g, const char *name, struct gd_err *err);

/*
 * Checks the graph and infers every shape, with each free input dimension taken as 1.
 * Errors name the node at fault (GD_EMODEL, GD_ESHAPE, GD_ENOTSUP).
 */
int gd_graph_finalize(struct gd_graph *g, struct gd_err *err);

/*
 * gd_graph_finalize() for the given inputs (host tensors, one per graph input; NULL, or a
 * NULL entry, takes that input's free dimensions as 1): the shapes are inferred for their
 * shapes, and an input's values stand for the run's wherever a node reads it as a
 * parameter (a Reshape's shape, Slice's starts, Clip's bounds given as graph inputs,
 * as the ONNX tests do). A graph finalized this way still takes other inputs: each
 * inference reads the run's (gd_graph_infer_folds()).
 */
int gd_graph_finalize_with(struct gd_graph *g, const struct gd_tensor *const *inputs,
                           struct gd_err *err);

/*
 * Infers every value's shape and every node's params for the given input shapes (one per
 * graph input, in order), writing them to value_shapes (g->n_values entries) and
 * node_params (g->n_nodes entries); the graph itself is not changed, so sessions with
 * other batch sizes can share it. Each input must match its declaration where that is
 * fixed. Errors name the node at fault.
 */
int gd_graph_infer(const struct gd_graph *g, const struct gd_shape *input_shapes,
                   struct gd_shape *value_shapes, struct gd_params *node_params,
                   struct gd_err *err);

/*
 * gd_graph_infer() that reads the inputs' values (input_values, host tensors, one per graph
 * input; may be NULL or hold NULL entries) where nodes take an input as a parameter (a
 * Reshape's shape, Clip's bounds) and folds compute with integer inputs, and hands over
 * what the folds computed: folded (NULL, or g->n_values entries, all NULL on entry) gets on
 * success a new host tensor for each value a fold computed for these inputs (the caller
 * frees them), the others stay NULL; on failure every entry is NULL again. *values_read
 * (when not NULL) is set to 1 when some input's value was read: the result then holds for
 * those values only, not for any input of the same shapes.
 */
int gd_graph_infer_folds(const struct gd_graph *g, const struct gd_shape *input_shapes,
                         const struct gd_tensor *const *input_values,
                         struct gd_shape *value_shapes, struct gd_params *node_params,
                         struct gd_tensor **folded, int *values_read, struct gd_err *err);

/*
 * Runs a float32 (or float64) model in float16 or bfloat16, as PyTorch's model.half() and
 * model.bfloat16() do: every float32 or float64 weight becomes `dtype`, rounded once to
 * nearest even, except a weight read only where ONNX types a parameter as float whatever the
 * model's data (Resize's and Upsample's roi and scales, Dropout's ratio); float32 and float64
 * graph inputs are declared `dtype` (a run rounds its float input to it); Cast and EyeLike
 * to float32 or float64, and ConstantOfShape values computed at inference, aim at `dtype`
 * instead. Integer and bool tensors stay. Call it before gd_graph_finalize() (or finalize
 * again after it). GD_EINVAL for a dtype other than float16 and bfloat16; on another failure
 * (GD_ENOMEM) the graph may be partly cast and should be freed.
 */
int gd_graph_cast_floats(struct gd_graph *g, enum gd_dtype dtype, struct gd_err *err);

/*
 * Frees the data of every float weight of at least min_bytes that no fold reads, keeping
 * its dtype and shape; returns the bytes freed. For a caller whose sessions are made (each
 * backend holds its own copy of the weights): the parameters shape inference reads are
 * integers or a few floats, so inference and the sessions made go on, but a session made
 * after this fails (GD_EINVAL, naming the weight).
 */
int64_t gd_graph_release_weights(struct gd_graph *g, size_t min_bytes);

/* The attribute called name, or NULL. */
const struct gd_attr *gd_node_attr(const struct gd_node *n, const char *name);

/*
 * How many terms each output element of node n sums (1 for pointwise ops), from the op's
 * reduction rule and the shapes and params of gd_graph_finalize().
 */
int64_t gd_node_reduction_len(const struct gd_graph *g, int n);

/* Frees the contents of one attribute (not the struct). */
void gd_attr_fini(struct gd_attr *a);

#ifdef __cplusplus
}
#endif
#endif
