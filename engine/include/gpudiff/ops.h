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
    GD_RED_CONV,    /* input channels per group x the kernel's taps (kD x kH x kW, 1-3 axes) */
    GD_RED_CONVT,   /* input channels per group x ceil(k / (s / gcd(s, d))) per axis */
    GD_RED_GEMM,    /* the inner dimension K */
    GD_RED_WINDOW,  /* the pooling window's area */
    GD_RED_SPATIAL, /* the product of the input's spatial sizes (D x H x W) */
    GD_RED_AXES,    /* the product of the reduced dimensions */
    GD_RED_AXIS,    /* the length of the op's axis (CumSum: an upper bound, see NUMERICS.md) */
    GD_RED_SCATTER, /* reduction add or mul: the data element and the updates that may land
                     * on it (1 + indices' length along the axis, or 1 + the index tuples of
                     * ScatterND); 1 for none, max and min, which copy one value */
    GD_RED_LOSS,    /* the loss terms summed (every target position for sum and mean, 1 for
                     * none), plus the classes for SoftmaxCrossEntropyLoss's log-softmax */
    GD_RED_INPUTS,  /* the number of inputs (Sum, Mean: one term per input) */
    GD_RED_INFERRED /* counted by shape inference into gd_params.reduction_terms */
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

/* The reduction rule's name ("conv", "axes", ...; "?" outside the enum), as listings and the
 * API spell it. */
const char *gd_reduction_name(enum gd_reduction r);

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

/* Resize and Upsample (ONNX names in the comments). */
enum gd_resize_mode { GD_RESIZE_NEAREST, GD_RESIZE_LINEAR, GD_RESIZE_CUBIC };
enum gd_resize_coord {
    GD_COORD_HALF_PIXEL,           /* "half_pixel" (the default) */
    GD_COORD_HALF_PIXEL_SYMMETRIC, /* "half_pixel_symmetric" (opset 19) */
    GD_COORD_PYTORCH_HALF_PIXEL,   /* "pytorch_half_pixel" */
    GD_COORD_ALIGN_CORNERS,        /* "align_corners" */
    GD_COORD_ASYMMETRIC,           /* "asymmetric"; Upsample and Resize-10 */
    GD_COORD_TF_HALF_PIXEL_FOR_NN, /* "tf_half_pixel_for_nn" (opset 11) */
    GD_COORD_TF_CROP_AND_RESIZE    /* "tf_crop_and_resize" */
};
enum gd_nearest_mode {
    GD_NEAREST_ROUND_PREFER_FLOOR, GD_NEAREST_ROUND_PREFER_CEIL, GD_NEAREST_FLOOR,
    GD_NEAREST_CEIL
};

/* The most spatial axes of a convolution or pool: (depth, height, width). */
#define GD_MAX_SPATIAL 3

/*
 * A node's attributes after checking, in the op's own terms; filled by shape inference.
 * Fields an op does not use stay at their defaults.
 *
 * Spatial geometry (Conv, ConvTranspose, the pools) is always 3-D, (depth, height, width),
 * right-aligned: an op with n_spatial < 3 axes has its axes last and the leading ones are
 * size 1 with kernel, stride and dilation 1 and no padding, so a 2-D op is a 3-D one of
 * depth 1 and a 1-D op one of depth and height 1 (gd__spatial_in() gives an input's sizes
 * the same way). Index a = 0, 1, 2 is depth, height, width; pads[a] is the padding before
 * axis a and pads[GD_MAX_SPATIAL + a] after it.
 */
struct gd_params {
    int n_spatial;                          /* 1, 2 or 3: the op's own spatial axes */
    int64_t kernel[GD_MAX_SPATIAL];         /* kD, kH, kW */
    int64_t strides[GD_MAX_SPATIAL];
    int64_t dilations[GD_MAX_SPATIAL];
    int64_t pads[2 * GD_MAX_SPATIAL];       /* begin d, h, w, then end d, h, w */
    int64_t output_padding[GD_MAX_SPATIAL]; /* ConvTranspose */
    int64_t group;
    int ceil_mode;              /* pools */
    int storage_order;          /* MaxPool's Indices: 0 row major, 1 column major */
    int count_include_pad;      /* AveragePool */
    int trans_a, trans_b;       /* Gemm */
    double alpha, beta, gamma;  /* Gemm; LeakyRelu, Elu, Selu, HardSigmoid, ThresholdedRelu, Celu */
    double epsilon;             /* BatchNormalization and the other normalizations */
    double clip_min, clip_max;  /* Clip (infinite when absent) */
    int gelu_tanh;              /* Gelu approximate="tanh" */
    int64_t axis;               /* Softmax, Concat, Flatten, ArgMax/Min, Hardmax, CumSum,
                                 * LayerNormalization; >= 0 */
    int keepdims;               /* reductions, ArgMax */
    int select_last_index;      /* ArgMax, ArgMin */
    int n_axes;                 /* reductions, Squeeze, Unsqueeze, normalizations: sorted, >= 0 */
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
    /* normalizations (BatchNormalization, LRN, the mean and variance ones) */
    int training_mode;          /* BatchNormalization: statistics of the batch itself */
    double momentum;            /* BatchNormalization: weight of the running statistics */
    double lrn_bias;            /* LRN's bias (its alpha and beta are alpha, beta above) */
    int64_t lrn_size;           /* LRN: channels in the window */
    /* GD_RED_INFERRED: the terms each output element sums, counted by shape inference */
    int64_t reduction_terms;
    /* Resize, Upsample: per axis, scale = scale_num / scale_den exactly (a float32 scale's
     * value, or sizes / input); roi[a] and roi[GD_MAX_DIMS + a] the float32 roi of axis a
     * (0 and 1 when absent); bit a of resized_axes: axis a's mapping is not the identity */
    enum gd_resize_mode resize_mode;
    enum gd_resize_coord coord_mode;
    enum gd_nearest_mode nearest_mode;
    int exclude_outside;
    double cubic_coeff_a, extrapolation_value;
    int64_t scale_num[GD_MAX_DIMS], scale_den[GD_MAX_DIMS];
    double roi[2 * GD_MAX_DIMS];
    unsigned resized_axes;
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
