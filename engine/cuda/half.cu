/*
 * half.cu: conversions between the float dtypes on the GPU, for float16 and bfloat16 storage
 * (engine/core/half_call.c widens an op's half inputs with them and rounds its results back):
 * widening is exact, narrowing rounds to nearest even once (cuda_fp16.h's and cuda_bf16.h's
 * _rn conversions, float16 overflowing to infinity), as the CPU's conversions in tensor.c.
 */
#include "half.cuh"
#include "kernels.cuh"

template <class S, class D>
static __global__ void
convert_kernel(const S *src, D *dst, int64_t n)
{
    int64_t step = (int64_t)gridDim.x * blockDim.x;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += step)
        gd__st(dst, i, gd__ld(src, i));
}

/* float64 sources: one rounding straight to the target, never through float32. */
static __global__ void
convert_f64_kernel(const double *src, void *dst, enum gd_dtype to, int64_t n)
{
    int64_t step = (int64_t)gridDim.x * blockDim.x;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += step) {
        if (to == GD_F16)
            ((__half *)dst)[i] = __double2half(src[i]);
        else if (to == GD_BF16)
            ((__nv_bfloat16 *)dst)[i] = __double2bfloat16(src[i]);
        else
            ((float *)dst)[i] = (float)src[i];
    }
}

template <class S>
static int
convert_from(struct gd__cuda_ctx *ctx, struct gd_tensor *dst, const S *src, int64_t n,
             struct gd_err *err)
{
    int rc = 0;
    unsigned blocks = gd__cuda_blocks(n);
    if (dst->dtype == GD_F16)
        convert_kernel<<<blocks, GD_CUDA_THREADS, 0, ctx->compute>>>(src, (__half *)dst->data, n);
    else if (dst->dtype == GD_BF16)
        convert_kernel<<<blocks, GD_CUDA_THREADS, 0, ctx->compute>>>(
            src, (__nv_bfloat16 *)dst->data, n);
    else
        convert_kernel<<<blocks, GD_CUDA_THREADS, 0, ctx->compute>>>(src, (float *)dst->data, n);
    GD_CUDA_CHECK_LAUNCH();
done:
    return rc;
}

extern "C" int
gd__cuda_convert(void *vctx, struct gd_tensor *dst, const struct gd_tensor *src,
                 struct gd_err *err)
{
    struct gd__cuda_ctx *ctx = (struct gd__cuda_ctx *)vctx;
    int64_t n = gd_tensor_numel(src);
    int rc = 0;
    if (n != gd_tensor_numel(dst) || !gd__cuda_stored_float(dst->dtype) ||
        !(gd__cuda_stored_float(src->dtype) || src->dtype == GD_F64))
        return gd_err_set(err, GD_EINVAL, "convert %s to %s on cuda: not two float tensors "
                          "of one size", gd_dtype_name(src->dtype), gd_dtype_name(dst->dtype));
    if (n == 0)
        return 0;
    switch (src->dtype) {
    case GD_F16:
        return convert_from(ctx, dst, (const __half *)src->data, n, err);
    case GD_BF16:
        return convert_from(ctx, dst, (const __nv_bfloat16 *)src->data, n, err);
    case GD_F32:
        return convert_from(ctx, dst, (const float *)src->data, n, err);
    default:
        convert_f64_kernel<<<gd__cuda_blocks(n), GD_CUDA_THREADS, 0, ctx->compute>>>(
            (const double *)src->data, dst->data, dst->dtype, n);
        GD_CUDA_CHECK_LAUNCH();
        break;
    }
done:
    return rc;
}
