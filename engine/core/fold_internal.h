/*
 * fold_internal.h: what the parts of the fold evaluator share (struct gd_fold, graph.h): the
 * call an op sees, the element and tensor helpers (fold_tensor.c), the ops' tables
 * (fold_move.c, fold_int.c), looked up and run by fold.c, which also adds folds to graphs.
 */
#ifndef GPUDIFF_CORE_FOLD_INTERNAL_H
#define GPUDIFF_CORE_FOLD_INTERNAL_H

#include <stdint.h>

#include "internal.h"

/* What an op of the evaluator needs of its inputs. */
enum gd__fold_kind {
    GD__FOLD_SHAPE, /* reads only the shape of input 0: it may be a value known at run time */
    GD__FOLD_MOVE,  /* moves or converts data of any dtype */
    GD__FOLD_INT    /* arithmetic: integer or bool inputs only */
};

struct gd__fold_call {
    const struct gd_fold *f;
    struct gd_node view; /* the fold as a node, for the attribute readers */
    int n_in;
    const struct gd_shape *const *in_shape;
    const struct gd_tensor *const *in;
    int n_out;
    struct gd_tensor **out;
};

typedef int (*gd__fold_fn)(struct gd__fold_call *c, struct gd_err *err);

/* ---- element access and tensors (fold_tensor.c) ---- */

/*
 * The largest result a fold may make: shape computations are small, and the biggest data a
 * fold makes (a mask by ConstantOfShape or Expand) stays far below this. A model asking for
 * more is refused rather than allowed to exhaust memory at load.
 */
#define GD__FOLD_MAX_BYTES ((int64_t)1 << 30)

/* Stores v as element i of an integer or bool tensor; GD_ERANGE when it does not fit. */
int gd__fold_put_int(struct gd_tensor *t, int64_t i, int64_t v, struct gd_err *err);
int gd__fold_is_int_dtype(enum gd_dtype d);
/* GD_ERANGE for a uint64 element above INT64_MAX: it cannot be computed with exactly. */
int gd__fold_check_u64(const struct gd_tensor *t, struct gd_err *err);
void gd__fold_shape_of(const struct gd_tensor *t, struct gd_shape *s);
/* A new tensor of at most GD__FOLD_MAX_BYTES (GD_ERANGE beyond). */
struct gd_tensor *gd__fold_tensor(enum gd_dtype dtype, int ndim, const int64_t *dims,
                                  struct gd_err *err);
struct gd_tensor *gd__fold_new_tensor(enum gd_dtype dtype, const struct gd_shape *s,
                                      struct gd_err *err);
/* Input i as at most max integers. */
int gd__fold_input_ints(struct gd__fold_call *c, int i, const char *what, int max, int64_t *out,
                        int *n, struct gd_err *err);
/* The element of t (broadcast to ndim) at multi-index idx. */
int64_t gd__fold_bcast_offset(const struct gd_tensor *t, int ndim, const int64_t *idx);
/* The next multi-index of s in C order. */
void gd__fold_index_next(const struct gd_shape *s, int64_t *idx);

/* ONNX's TensorProto.DataType code as a dtype (Cast's `to`, ConstantOfShape's value). */
int gd__fold_onnx_dtype(int64_t code, enum gd_dtype *out, struct gd_err *err);
/* Numpy broadcasting of the shapes of inputs first .. first + n - 1. */
int gd__fold_broadcast_all(struct gd__fold_call *c, int first, int n, struct gd_shape *out,
                           struct gd_err *err);
/* Axes from attribute "axes" or input 1, each normalized for rank and sorted. */
int gd__fold_read_axes(struct gd__fold_call *c, int rank, int64_t *axes, int *n,
                       struct gd_err *err);

/* Identity (fold_move.c): a reduction over no axis with noop_with_empty_axes is one. */
int gd__fold_identity(struct gd__fold_call *c, struct gd_err *err);

/* An op the evaluator computes. */
struct gd__fold_op {
    const char *op;
    gd__fold_fn fn;
    enum gd__fold_kind kind;
    int min_in, max_in;
};

/* The ops of fold_move.c (shapes read, data made or moved) and fold_int.c (integer
 * arithmetic). */
extern const struct gd__fold_op gd__fold_move_ops[];
extern const int gd__fold_move_ops_count;
extern const struct gd__fold_op gd__fold_int_ops[];
extern const int gd__fold_int_ops_count;

#endif
