/* op_pool.cu: MaxPool, AveragePool and GlobalAveragePool on the GPU with gpudiff's own kernels,
 * following engine/cpu/op_pool.c. */
#include <stdint.h>

#include "kernels.cuh"
#include "../core/index_rules.h"

/*
 * These do not go through cuDNN's pooling: PyTorch runs its own pooling kernels too (so do
 * we, to be compared with it on equal terms), and cuDNN's pooling has no ceil_mode and no
 * dilation; emulating ceil_mode with extra end padding would also change what
 * count_include_pad counts. Our kernels state the ONNX rules once, the CPU's.
 *
 * MaxPool and AveragePool give one thread one output and walk its window in the CPU's order,
 * so they give the CPU's bits. GlobalAveragePool sums each plane with a block and a fixed
 * tree, so it is the same run to run but reassociates the CPU's sequential sum.
 */

/* The window geometry of both spatial axes, passed by value. */
struct pool_geom {
    int64_t planes; /* N x C */
    int64_t h, w;   /* input */
    int64_t oh, ow; /* output */
    int64_t kh, kw, sh, sw, dh, dw;
    int64_t pad_t, pad_l, pad_b, pad_r;
    int count_include_pad;
};

static pool_geom
pool_geom_of(const struct gd_op_call *c)
{
    const struct gd_params *p = c->params;
    gd__cuda_nchw xg = gd__cuda_nchw_of(c->in[0]), yg = gd__cuda_nchw_of(c->out[0]);
    pool_geom g;
    g.planes = xg.n * xg.c;
    g.h = xg.h;
    g.w = xg.w;
    g.oh = yg.h;
    g.ow = yg.w;
    g.kh = p->kernel[0];
    g.kw = p->kernel[1];
    g.sh = p->strides[0];
    g.sw = p->strides[1];
    g.dh = p->dilations[0];
    g.dw = p->dilations[1];
    g.pad_t = p->pads[0];
    g.pad_l = p->pads[1];
    g.pad_b = p->pads[2];
    g.pad_r = p->pads[3];
    g.count_include_pad = p->count_include_pad;
    return g;
}

/*
 * Row by row, column by column from -inf; a NaN, once seen, ends the row and stays. Later rows
 * are still visited, as on the CPU, so a later row's first NaN replaces it: the same NaN
 * the CPU keeps.
 */
static __global__ void
max_pool_kernel(const float *x, float *y, pool_geom g)
{
    int64_t n = g.planes * g.oh * g.ow;
    int64_t step = (int64_t)gridDim.x * blockDim.x;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += step) {
        int64_t ow = i % g.ow, t = i / g.ow;
        int64_t oh = t % g.oh, plane = t / g.oh;
        const float *xp = x + plane * g.h * g.w;
        int64_t kh0, kh1, kw0, kw1;
        gd__window_taps(oh, g.sh, g.dh, g.kh, g.pad_t, g.h, &kh0, &kh1);
        gd__window_taps(ow, g.sw, g.dw, g.kw, g.pad_l, g.w, &kw0, &kw1);
        float m = -INFINITY;
        for (int64_t ki = kh0; ki < kh1; ki++) {
            int64_t ih = oh * g.sh - g.pad_t + ki * g.dh;
            for (int64_t kj = kw0; kj < kw1; kj++) {
                float v = xp[ih * g.w + ow * g.sw - g.pad_l + kj * g.dw];
                if (v > m || isnan(v))
                    m = v;
                if (isnan(m))
                    break;
            }
        }
        y[i] = m;
    }
}

/* Sums from +0 row by row, column by column, then divides once, as the CPU does. */
static __global__ void
average_pool_kernel(const float *x, float *y, pool_geom g)
{
    int64_t n = g.planes * g.oh * g.ow;
    int64_t step = (int64_t)gridDim.x * blockDim.x;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += step) {
        int64_t ow = i % g.ow, t = i / g.ow;
        int64_t oh = t % g.oh, plane = t / g.oh;
        const float *xp = x + plane * g.h * g.w;
        int64_t kh0, kh1, kw0, kw1;
        gd__window_taps(oh, g.sh, 1, g.kh, g.pad_t, g.h, &kh0, &kh1);
        gd__window_taps(ow, g.sw, 1, g.kw, g.pad_l, g.w, &kw0, &kw1);
        float sum = 0.f;
        for (int64_t ki = kh0; ki < kh1; ki++) {
            const float *row = xp + (oh * g.sh - g.pad_t + ki) * g.w;
            for (int64_t kj = kw0; kj < kw1; kj++)
                sum += row[ow * g.sw - g.pad_l + kj];
        }
        int64_t count = (kh1 - kh0) * (kw1 - kw0);
        if (g.count_include_pad)
            count = gd__window_padded_count(oh, g.sh, g.kh, g.pad_t, g.pad_b, g.h) *
                    gd__window_padded_count(ow, g.sw, g.kw, g.pad_l, g.pad_r, g.w);
        y[i] = sum / (float)count;
    }
}

/* Threads per plane of GlobalAveragePool; the reduction tree below is built on this. */
#define GAP_THREADS 256

/*
 * One block per (n, c) plane (grid-stride over planes). Thread t sums elements t, t + 256,
 * t + 512, ... of the plane from +0 in order; then a shared-memory tree adds partial t + s
 * into partial t for s = 128, 64, ..., 1. The order depends only on the plane length, never on
 * timing, so every run gives the same bits.
 */
static __global__ void
global_average_pool_kernel(const float *x, float *y, int64_t planes, int64_t len)
{
    __shared__ float partial[GAP_THREADS];
    int tid = threadIdx.x;
    for (int64_t plane = blockIdx.x; plane < planes; plane += gridDim.x) {
        const float *xp = x + plane * len;
        float sum = 0.f;
        for (int64_t k = tid; k < len; k += GAP_THREADS)
            sum += xp[k];
        partial[tid] = sum;
        __syncthreads();
        for (int s = GAP_THREADS / 2; s > 0; s >>= 1) {
            if (tid < s)
                partial[tid] = partial[tid] + partial[tid + s];
            __syncthreads();
        }
        if (tid == 0)
            y[plane] = partial[0] / (float)len;
        /* partial[0] is read before the next plane overwrites it */
        __syncthreads();
    }
}

/* ---- entry points ---- */

/* One thread per output of a windowed pool. */
typedef void (*window_kernel)(const float *x, float *y, pool_geom g);

static int
launch_window_pool(struct gd_op_call *c, window_kernel kernel, struct gd_err *err)
{
    struct gd__cuda_ctx *ctx = gd__cuda_ctx_of(c);
    pool_geom g = pool_geom_of(c);
    int64_t n = gd_tensor_numel(c->out[0]);
    int rc = 0;
    if (n == 0)
        return 0;
    kernel<<<gd__cuda_blocks(n), GD_CUDA_THREADS, 0, ctx->compute>>>((const float *)c->in[0]->data,
                                                                     (float *)c->out[0]->data, g);
    GD_CUDA_CHECK_LAUNCH();
done:
    return rc;
}

extern "C" int
gd__cuda_max_pool(struct gd_op_call *c, struct gd_err *err)
{
    return launch_window_pool(c, max_pool_kernel, err);
}

extern "C" int
gd__cuda_average_pool(struct gd_op_call *c, struct gd_err *err)
{
    return launch_window_pool(c, average_pool_kernel, err);
}

extern "C" int
gd__cuda_global_average_pool(struct gd_op_call *c, struct gd_err *err)
{
    struct gd__cuda_ctx *ctx = gd__cuda_ctx_of(c);
    const struct gd_tensor *xt = c->in[0];
    int64_t planes = xt->shape[0] * xt->shape[1];
    /* an empty plane gives 0 / 0 = NaN, as on the CPU */
    int64_t len = planes > 0 ? gd_tensor_numel(xt) / planes : 0;
    int64_t grid = planes < 65535LL * 8 ? planes : 65535LL * 8;
    int rc = 0;
    if (planes == 0)
        return 0;
    global_average_pool_kernel<<<(unsigned)grid, GAP_THREADS, 0, ctx->compute>>>(
        (const float *)xt->data, (float *)c->out[0]->data, planes, len);
    GD_CUDA_CHECK_LAUNCH();
done:
    return rc;
}
