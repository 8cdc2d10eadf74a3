/*
 * ops.h: the operator list (made from engine/core/ops.def), each op's traits, and the
 * parameters that shape inference reads from a node's attributes.
 */
#ifndef GPUDIFF_OPS_H
#define GPUDIFF_OPS_H

#include <stdint.h>

#include "gpudiff/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

enum gd_op {
#define GD_OP(e, fn, name, family, min_in, max_in, red, ulps, disc, ill, cuda) GD_OP_##e,
#include "../../core/ops.def"
#undef GD_OP
    GD_OP_COUNT
};

/* How many terms each output element of an op sums: the rule behind reduction_len. */
enum gd_reduction {
    GD_RED_NONE,    /* 1: a pointwise function or a data movement */
    GD_RED_CONV,    /* input channels per group x the kernel's taps (kH x kW, or kW) */
    GD_RED_CONVT,   /* input channels per group x ceil(k / (s / gcd(s, d))) per axis */
    GD_RED_GEMM,    /* the inner dimension K */
    GD_RED_WINDOW,  /* the pooling window's area */
    GD_RED_SPATIAL, /* height x width of the input */
    GD_RED_AXES,    /* the product of the reduced dimensions */
    GD_RED_AXIS,    /* the length of the op's axis (CumSum: an upper bound, see NUMERICS.md) */
    GD_RED_SCATTER, /* reduction add or mul: the data element and the updates that may land
                     * on it (1 + indices' length along the axis, or 1 + the index tuples of
                     * ScatterND); 1 for none, max and min, which copy one value */
    GD_RED_LOSS,    /* the loss terms summed (every target position for sum and mean, 1 for
                     * none), plus the classes for SoftmaxCrossEntropyLoss's log-softmax */
    GD_RED_INPUTS   /* the number of inputs (Sum, Mean: one term per input) */
};

struct gd_op_info {
    const char *name;       /* ONNX name */
    const char *family;     /* conv, pool, norm, gemm, act, eltwise, reduce, shape */
    int min_inputs;
    int max_inputs;
    enum gd_reduction reduction;
    int ulps;               /* rounding added beyond the reduction, in units in the last place */
    int discontinuous;
    int ill_conditioned;    /* 1/x, log, sqrt, pow: unbounded growth of errors near a pole */
    int cuda;               /* 1 when the cuda backend has the op (in builds with CUDA) */
};

/* The traits of op; NULL for a value outside the enum. */
const struct gd_op_info *gd_op_info(enum gd_op op);

/* The ONNX name of op ("?" outside the enum). */
const char *gd_op_name(enum gd_op op);

/* Looks up an ONNX op name (case-sensitive). Returns 0 or GD_ENOENT. */
int gd_op_from_name(const char *name, enum gd_op *out);

enum gd_pad_mode { GD_PAD_CONSTANT, GD_PAD_REFLECT, GD_PAD_EDGE };

/* ScatterElements' and ScatterND's reduction attribute. */
enum gd_scatter_reduction {
    GD_SCATTER_NONE,
    GD_SCATTER_ADD,
    GD_SCATTER_MUL,
    GD_SCATTER_MAX,
    GD_SCATTER_MIN
};

/* The losses' reduction attribute. */
enum gd_loss_reduction { GD_LOSS_NONE, GD_LOSS_SUM, GD_LOSS_MEAN };

/*
 * A node's attributes after checking, in the op's own terms; filled by shape inference.
 * Fields an op does not use stay at their defaults. Spatial geometry is 2-D (NCHW).
 */
struct gd_params {
    int64_t kernel[2];          /* kH, kW */
    int64_t strides[2];
    int64_t dilations[2];
    int64_t pads[4];            /* begin_h, begin_w, end_h, end_w (ONNX order) */
    int64_t output_padding[2];  /* ConvTranspose */
    int64_t group;
    int ceil_mode;              /* pools */
    int count_include_pad;      /* AveragePool */
    int trans_a, trans_b;       /* Gemm */
    double alpha, beta, gamma;  /* Gemm; LeakyRelu, Elu, Selu, HardSigmoid, ThresholdedRelu, Celu */
    double epsilon;             /* BatchNormalization */
    double clip_min, clip_max;  /* Clip (infinite when absent) */
    int gelu_tanh;              /* Gelu approximate="tanh" */
    int64_t axis;               /* Softmax, Concat, Flatten, ArgMax/Min, Hardmax, CumSum; >= 0 */
    int keepdims;               /* reductions, ArgMax */
    int select_last_index;      /* ArgMax, ArgMin */
    int n_axes;                 /* reductions, Squeeze, Unsqueeze: sorted, >= 0 */
    int64_t axes[GD_MAX_DIMS];
    int64_t perm[GD_MAX_DIMS];  /* Transpose */
    int64_t pads_nd[2 * GD_MAX_DIMS]; /* Pad: begins of each axis, then ends */
    enum gd_pad_mode pad_mode;
    double pad_value;
    /* Indexing, data movement and losses (infer_index.c, infer_shape.c, infer_loss.c). The
     * axis of Gather, GatherElements, ScatterElements, Split, OneHot and TopK is `axis`. */
    int64_t batch_dims;                 /* GatherND */
    enum gd_scatter_reduction scatter_reduction; /* ScatterElements, ScatterND */
    int64_t slice_start[GD_MAX_DIMS];   /* Slice: the first source index, per axis */
    int64_t slice_step[GD_MAX_DIMS];    /* Slice: the step, per axis (1 where not sliced) */
    int64_t blocksize;                  /* DepthToSpace, SpaceToDepth */
    int crd;                            /* DepthToSpace mode="CRD" (else "DCR") */
    int upper;                          /* Trilu */
    int64_t diagonal;                   /* Trilu's k (when a weight or absent), EyeLike's k */
    int diagonal_runtime;               /* Trilu: k is computed, read at run time */
    int largest;                        /* TopK */
    enum gd_loss_reduction loss_reduction;
    int has_ignore_index;               /* the losses' ignore_index is given */
    int64_t ignore_index;
    /*
     * Set by shape inference when an output's row along dim 0 depends on input rows other
     * than its own: a reduction, Softmax or ArgMax over axis 0, BatchNormalization with
     * batch statistics, a loss averaged over rows, a Transpose, Reshape or Flatten that
     * moves dim 0. Such a node makes a graph's result depend on how its input is sliced,
     * so `--batch` refuses it (naming the node).
     */
    int mixes_batch;
    /* Element-wise, logical, cast and reduction ops (engine/core/infer_{act,eltwise,logic}.c) */
    enum gd_dtype cast_to;      /* Cast, CastLike: the target dtype (the output's) */
    int fmod;                   /* Mod: 1 C fmod (sign of the dividend), 0 integer mod (divisor's) */
    int shift_left;             /* BitShift: 1 LEFT, 0 RIGHT */
    int exclusive, reverse;     /* CumSum */
    int detect_positive, detect_negative; /* IsInf */
    double lambd, bias;         /* Shrink */
};

#ifdef __cplusplus
}
#endif
#endif
