/*
 * repro.h: the ops whose --repro bitwise kernel is not the default one, and their entry
 * points (engine/cuda/repro_*.cu). Every other op's default kernel already gives the cpu
 * backend's bits by construction (docs/CUDA_KERNELS.md, "exact"), so bitwise mode runs it
 * as it is. repro_table.c makes the bitwise op table from this list.
 */
#ifndef GPUDIFF_REPRO_H
#define GPUDIFF_REPRO_H

#include "cuda.h"

/* X(ENUM, fn): GD_OP_<ENUM> runs gd__cuda_repro_<fn> in bitwise mode. */
/* clang-format off */
#define GD_REPRO_OPS(X)                                                                          \
    X(CONV, conv) X(CONV_TRANSPOSE, conv_transpose) X(GEMM, gemm) X(MATMUL, matmul)             \
    X(ELU, elu) X(SELU, selu) X(SIGMOID, sigmoid) X(TANH, tanh) X(SOFTPLUS, softplus)          \
    X(GELU, gelu) X(EXP, exp) X(LOG, log) X(ERF, erf) X(SIN, sin) X(COS, cos) X(TAN, tan)      \
    X(ASIN, asin) X(ACOS, acos) X(ATAN, atan) X(SINH, sinh) X(COSH, cosh) X(ASINH, asinh)      \
    X(ACOSH, acosh) X(ATANH, atanh) X(CELU, celu) X(MISH, mish) X(POW, pow)                    \
    X(HARD_SIGMOID, hard_sigmoid) X(HARD_SWISH, hard_swish) X(LEAKY_RELU, leaky_relu)          \
    X(SOFTSIGN, softsign) X(THRESHOLDED_RELU, thresholded_relu) X(SHRINK, shrink)              \
    X(SOFTMAX, softmax) X(LOG_SOFTMAX, log_softmax) X(REDUCE_MEAN, reduce_mean)                \
    X(REDUCE_SUM, reduce_sum) X(REDUCE_PROD, reduce_prod) X(REDUCE_L1, reduce_l1)              \
    X(REDUCE_L2, reduce_l2) X(REDUCE_SUM_SQUARE, reduce_sum_square)                            \
    X(REDUCE_LOG_SUM, reduce_log_sum) X(REDUCE_LOG_SUM_EXP, reduce_log_sum_exp)                \
    X(GLOBAL_AVERAGE_POOL, global_average_pool) X(BATCH_NORM, batch_norm)                      \
    X(INSTANCE_NORM, instance_norm) X(LAYER_NORM, layer_norm) X(GROUP_NORM, group_norm)        \
    X(MEAN_VARIANCE_NORM, mean_variance_norm) X(LRN, lrn) X(NLL_LOSS, nll_loss)                \
    X(SCE_LOSS, sce_loss)
/* clang-format on */

#ifdef __cplusplus
extern "C" {
#endif

#define GD_REPRO_DECL(e, fn) int gd__cuda_repro_##fn(struct gd_op_call *c, struct gd_err *err);
GD_REPRO_OPS(GD_REPRO_DECL)
#undef GD_REPRO_DECL

#ifdef __cplusplus
}
#endif
#endif
