/*
 * op_resize.cu: Resize and Upsample on the GPU. The taps and weights come from
 * engine/core/resize_rules.c on the host (exact source coordinates, weights rounded once to
 * float), the same tables the CPU uses; one thread per output runs the CPU's loop
 * (engine/cpu/op_resize.c): nearest copies, linear and cubic sum the taps' terms
 * (((w_0 w_1) w_2) ...) x from +0 in the same order with __fmul_rn / __fadd_rn, skipping
 * terms of weight 0. So the result is the CPU's bits.
 */
#include <stdio.h>
#include <string.h>

#include "kernels.cuh"
#include "../core/resize_rules.h"

struct resize_geom {
    int ndim, n_axes, taps, nearest;
    unsigned resized;
    int64_t in_stride[GD_MAX_DIMS], out_shape[GD_MAX_DIMS];
    int axis[GD_MAX_DIMS];          /* the tensor axis of resized axis k */
    int64_t table[GD_MAX_DIMS];     /* resized axis k's first entry in the tables */
    float extrap;
};

static __global__ void
resize_kernel(const float *__restrict__ x, float *__restrict__ y,
              const int64_t *__restrict__ index, const float *__restrict__ weight,
              resize_geom g, int64_t n)
{
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x) {
        int64_t rest = i, base = 0, o[GD_MAX_DIMS];
        for (int a = g.ndim - 1; a >= 0; a--) {
            int64_t c = rest % g.out_shape[a];
            rest /= g.out_shape[a];
            o[a] = c;
            if (!(g.resized & (1u << a)))
                base += c * g.in_stride[a];
        }
        int64_t row[GD_MAX_DIMS];
        int outside = 0;
        for (int k = 0; k < g.n_axes; k++) {
            row[k] = g.table[k] + o[g.axis[k]] * g.taps;
            outside |= index[row[k]] < 0;
        }
        if (outside) {
            y[i] = g.extrap;
            continue;
        }
        if (g.nearest) {
            int64_t off = base;
            for (int k = 0; k < g.n_axes; k++)
                off += index[row[k]] * g.in_stride[g.axis[k]];
            y[i] = x[off];
            continue;
        }
        int t[GD_MAX_DIMS] = {0};
        float sum = 0.f;
        for (;;) {
            float wt = weight[row[0] + t[0]];
            int64_t off = base + index[row[0] + t[0]] * g.in_stride[g.axis[0]];
            for (int k = 1; k < g.n_axes; k++) {
                wt = __fmul_rn(wt, weight[row[k] + t[k]]);
                off += index[row[k] + t[k]] * g.in_stride[g.axis[k]];
            }
            if (wt != 0.f)
                sum = __fadd_rn(sum, __fmul_rn(wt, x[off]));
            int k = g.n_axes - 1;
            while (k >= 0 && ++t[k] == g.taps)
                t[k--] = 0;
            if (k < 0)
                break;
        }
        y[i] = sum;
    }
}

static int
resize_run(struct gd_op_call *c, struct gd_err *err)
{
    struct gd__cuda_ctx *ctx = gd__cuda_ctx_of(c);
    const struct gd_tensor *xt = c->in[0];
    struct gd_tensor *yt = c->out[0];
    int64_t n = gd_tensor_numel(yt);
    struct gd__resize_plan plan;
    void *dev = NULL;
    int rc = gd__resize_plan_make(c->params, xt->ndim, xt->shape, yt->shape, &plan, err);
    if (rc != 0)
        return rc;
    snprintf(c->algo, sizeof c->algo, "gpudiff taps");
    if (n == 0)
        goto done;
    if (plan.n_axes == 0) { /* every axis is the identity */
        GD_CUDA_TRY(cudaMemcpyAsync(yt->data, xt->data, (size_t)n * sizeof(float),
                                    cudaMemcpyDeviceToDevice, ctx->compute));
        goto done;
    }
    {
        resize_geom g;
        memset(&g, 0, sizeof g);
        g.ndim = xt->ndim;
        g.n_axes = plan.n_axes;
        g.taps = plan.taps;
        g.nearest = c->params->resize_mode == GD_RESIZE_NEAREST;
        g.resized = c->params->resized_axes;
        g.extrap = (float)c->params->extrapolation_value;
        int64_t s = 1;
        for (int a = xt->ndim - 1; a >= 0; a--) {
            g.in_stride[a] = s;
            g.out_shape[a] = yt->shape[a];
            s *= xt->shape[a];
        }
        /* the host tables hold indices, then double weights, then float weights */
        const int64_t *index0 = plan.axis[0].index;
        size_t entries = 0;
        for (int k = 0; k < plan.n_axes; k++) {
            g.axis[k] = plan.axis[k].axis;
            g.table[k] = plan.axis[k].index - index0;
            entries += (size_t)plan.axis[k].out_len * (size_t)plan.taps;
        }
        size_t index_bytes = entries * sizeof(int64_t), weight_bytes = entries * sizeof(float);
        rc = gd__cuda_scratch(ctx, index_bytes + weight_bytes, &dev, err);
        if (rc != 0)
            goto done;
        GD_CUDA_TRY(cudaMemcpyAsync(dev, index0, index_bytes, cudaMemcpyHostToDevice,
                                    ctx->compute));
        if (!g.nearest)
            GD_CUDA_TRY(cudaMemcpyAsync((char *)dev + index_bytes, plan.axis[0].weight32,
                                        weight_bytes, cudaMemcpyHostToDevice, ctx->compute));
        resize_kernel<<<gd__cuda_blocks(n), GD_CUDA_THREADS, 0, ctx->compute>>>(
            (const float *)xt->data, (float *)yt->data, (const int64_t *)dev,
            (const float *)((char *)dev + index_bytes), g, n);
        GD_CUDA_CHECK_LAUNCH();
    }
done:
    gd__cuda_scratch_free(ctx, dev);
    gd__resize_plan_free(&plan);
    return rc;
}

extern "C" int
gd__cuda_resize(struct gd_op_call *c, struct gd_err *err)
{
    return resize_run(c, err);
}

extern "C" int
gd__cuda_upsample(struct gd_op_call *c, struct gd_err *err)
{
    return resize_run(c, err);
}
