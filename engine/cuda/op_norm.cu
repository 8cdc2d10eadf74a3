/*
 * op_norm.cu: BatchNormalization (inference) on the GPU: cuDNN's spatial batch norm, as
 * the frameworks use it, for an epsilon cuDNN accepts (>= CUDNN_BN_MIN_EPSILON); below that,
 * a kernel with the CPU's folded formula y = x * a + b, a = scale / sqrt(var + eps),
 * b = bias - mean * a.
 */
#include <stdio.h>

#include "kernels.cuh"

static __global__ void
batch_norm_folded(const float *__restrict__ x, float *__restrict__ y,
                  const float *__restrict__ scale, const float *__restrict__ bias,
                  const float *__restrict__ mean, const float *__restrict__ var, float eps,
                  int64_t channels, int64_t inner, int64_t n)
{
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x) {
        int64_t ch = (i / inner) % channels;
        float a = scale[ch] / sqrtf(var[ch] + eps);
        float b = bias[ch] - mean[ch] * a;
        y[i] = x[i] * a + b;
    }
}

extern "C" int
gd__cuda_batch_norm(struct gd_op_call *c, struct gd_err *err)
{
    int rc = 0;
    struct gd__cuda_ctx *ctx = gd__cuda_ctx_of(c);
    const struct gd_tensor *x = c->in[0];
    int64_t n = x->shape[0], ch = x->shape[1];
    int64_t inner = n > 0 && ch > 0 ? gd_tensor_numel(x) / (n * ch) : 0;
    int64_t total = gd_tensor_numel(x);
    cudnnTensorDescriptor_t xd = NULL, pd = NULL;
    int fits = c->params->epsilon >= CUDNN_BN_MIN_EPSILON && n <= INT32_MAX && ch <= INT32_MAX &&
               inner <= INT32_MAX && total <= INT32_MAX && total > 0;
    snprintf(c->algo, sizeof c->algo, "%s", fits ? "cudnn batchnorm spatial" : "gpudiff folded");
    if (total == 0)
        return 0;
    if (!fits) {
        batch_norm_folded<<<gd__cuda_blocks(total), GD_CUDA_THREADS, 0, ctx->compute>>>(
            (const float *)x->data, (float *)c->out[0]->data, (const float *)c->in[1]->data,
            (const float *)c->in[2]->data, (const float *)c->in[3]->data,
            (const float *)c->in[4]->data, (float)c->params->epsilon, ch, inner, total);
        GD_CUDA_CHECK_LAUNCH();
        return 0;
    }
    {
        const float one = 1.0f, zero = 0.0f;
        GD_CUDA_TRY(cudnnCreateTensorDescriptor(&xd));
        GD_CUDA_TRY(cudnnCreateTensorDescriptor(&pd));
        /* the inner dimensions fold into H: spatial statistics are per channel either way */
        GD_CUDA_TRY(cudnnSetTensor4dDescriptor(xd, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, (int)n,
                                               (int)ch, (int)inner, 1));
        GD_CUDA_TRY(cudnnDeriveBNTensorDescriptor(pd, xd, CUDNN_BATCHNORM_SPATIAL));
        GD_CUDA_TRY(cudnnBatchNormalizationForwardInference(
            ctx->cudnn, CUDNN_BATCHNORM_SPATIAL, &one, &zero, xd, x->data, xd, c->out[0]->data,
            pd, c->in[1]->data, c->in[2]->data, c->in[3]->data, c->in[4]->data,
            c->params->epsilon));
    }
done:
    if (xd != NULL)
        cudnnDestroyTensorDescriptor(xd);
    if (pd != NULL)
        cudnnDestroyTensorDescriptor(pd);
    return rc;
}
