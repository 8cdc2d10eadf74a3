/* op_pool.cu: MaxPool, AveragePool, GlobalAveragePool and GlobalMaxPool on the GPU with
 * gpudiff's own kernels, following engine/cpu/op_pool.c. */
#include <stdint.h>
#include <stdio.h>

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

/* The window geometry of the three spatial axes (depth, height, width; 1-D and 2-D pools
 * have the leading ones of size 1), passed by value. */
struct pool_geom {
    int64_t planes;                    /* N x C */
    int64_t in[GD_MAX_SPATIAL];        /* input sizes */
    int64_t out[GD_MAX_SPATIAL];       /* output sizes */
    int64_t k[GD_MAX_SPATIAL], s[GD_MAX_SPATIAL], dil[GD_MAX_SPATIAL];
    int64_t pad_b[GD_MAX_SPATIAL], pad_e[GD_MAX_SPATIAL];
    int count_include_pad;
};

static pool_geom
pool_geom_of(const struct gd_op_call *c)
{
    const struct gd_params *p = c->params;
    gd__cuda_ncdhw xg = gd__cuda_ncdhw_of(c->in[0]), yg = gd__cuda_ncdhw_of(c->out[0]);
    pool_geom g;
    g.planes = xg.n * xg.c;
    g.in[0] = xg.d;
    g.in[1] = xg.h;
    g.in[2] = xg.w;
    g.out[0] = yg.d;
    g.out[1] = yg.h;
    g.out[2] = yg.w;
    for (int a = 0; a < GD_MAX_SPATIAL; a++) {
        g.k[a] = p->kernel[a];
        g.s[a] = p->strides[a];
        g.dil[a] = p->dilations[a];
        g.pad_b[a] = p->pads[a];
        g.pad_e[a] = p->pads[a + GD_MAX_SPATIAL];
    }
    g.count_include_pad = p->count_include_pad;
    return g;
}

/* Output i's plane and position (od, oh, ow), and its window's taps [lo, hi) per axis. */
static __device__ __forceinline__ void
pool_window(const pool_geom &g, int64_t i, int64_t *plane, int64_t *o, int64_t *lo, int64_t *hi)
{
    o[2] = i % g.out[2];
    int64_t t = i / g.out[2];
    o[1] = t % g.out[1];
    t /= g.out[1];
    o[0] = t % g.out[0];
    *plane = t / g.out[0];
    for (int a = 0; a < GD_MAX_SPATIAL; a++)
        gd__window_taps(o[a], g.s[a], g.dil[a], g.k[a], g.pad_b[a], g.in[a], &lo[a], &hi[a]);
}

/*
 * Depth by depth, row by row, column by column from -inf; a NaN, once seen, ends the row and
 * stays. Later rows are still visited, as on the CPU, so a later row's first NaN replaces it:
 * the same NaN the CPU keeps. With ind (the Indices output), the position of the element
 * kept, by the CPU's rule (engine/cpu/op_pool.c, max_plane_scalar).
 */
static __global__ void
max_pool_kernel(const float *x, float *y, int64_t *ind, int storage_order, pool_geom g)
{
    int64_t n = g.planes * g.out[0] * g.out[1] * g.out[2];
    int64_t step = (int64_t)gridDim.x * blockDim.x;
    int64_t in_len = g.in[0] * g.in[1] * g.in[2];
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += step) {
        int64_t plane, o[3], lo[3], hi[3];
        pool_window(g, i, &plane, o, lo, hi);
        const float *xp = x + plane * in_len;
        float m = -INFINITY;
        int64_t at = -1;
        for (int64_t kz = lo[0]; kz < hi[0]; kz++) {
            int64_t id = o[0] * g.s[0] - g.pad_b[0] + kz * g.dil[0];
            for (int64_t ki = lo[1]; ki < hi[1]; ki++) {
                int64_t ih = o[1] * g.s[1] - g.pad_b[1] + ki * g.dil[1];
                const float *row = xp + (id * g.in[1] + ih) * g.in[2];
                for (int64_t kj = lo[2]; kj < hi[2]; kj++) {
                    int64_t iw = o[2] * g.s[2] - g.pad_b[2] + kj * g.dil[2];
                    float v = row[iw];
                    if (at < 0)
                        at = (id * g.in[1] + ih) * g.in[2] + iw;
                    if (v > m || isnan(v)) {
                        m = v;
                        at = (id * g.in[1] + ih) * g.in[2] + iw;
                    }
                    if (isnan(m))
                        break;
                }
            }
        }
        y[i] = m;
        if (ind != NULL) {
            if (at >= 0 && storage_order == 1) {
                int64_t iw = at % g.in[2], ih = at / g.in[2] % g.in[1];
                int64_t id = at / (g.in[2] * g.in[1]);
                at = (iw * g.in[1] + ih) * g.in[0] + id;
            }
            ind[i] = at >= 0 ? plane * in_len + at : -1;
        }
    }
}

/* Sums from +0 depth by depth, row by row, column by column, then divides once, as the CPU
 * does. */
static __global__ void
average_pool_kernel(const float *x, float *y, pool_geom g)
{
    int64_t n = g.planes * g.out[0] * g.out[1] * g.out[2];
    int64_t step = (int64_t)gridDim.x * blockDim.x;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += step) {
        int64_t plane, o[3], lo[3], hi[3];
        pool_window(g, i, &plane, o, lo, hi);
        const float *xp = x + plane * g.in[0] * g.in[1] * g.in[2];
        float sum = 0.f;
        for (int64_t kz = lo[0]; kz < hi[0]; kz++) {
            int64_t id = o[0] * g.s[0] - g.pad_b[0] + kz;
            for (int64_t ki = lo[1]; ki < hi[1]; ki++) {
                const float *row = xp + (id * g.in[1] + o[1] * g.s[1] - g.pad_b[1] + ki) * g.in[2];
                for (int64_t kj = lo[2]; kj < hi[2]; kj++)
                    sum += row[o[2] * g.s[2] - g.pad_b[2] + kj];
            }
        }
        int64_t count = (hi[0] - lo[0]) * (hi[1] - lo[1]) * (hi[2] - lo[2]);
        if (g.count_include_pad) {
            count = 1;
            for (int a = 0; a < GD_MAX_SPATIAL; a++)
                count *= gd__window_padded_count(o[a], g.s[a], g.k[a], g.pad_b[a], g.pad_e[a],
                                                 g.in[a]);
        }
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

/*
 * GlobalMaxPool, one block per (n, c) plane. Thread t folds terms t, t + 256, ... with the
 * CPU's loop (from -inf, a greater value or a NaN replaces the kept one, a NaN ends the
 * walk), keeping the term's index; partials are then joined by index in a fixed tree: a NaN
 * beats any number and the earlier NaN wins; otherwise the greater value wins, and on equal
 * values (-0 equals +0) the earlier term. That is the term the CPU's sequential walk keeps,
 * whatever the grouping, so the result is the CPU's bits (its NaN payload and sign of zero
 * included). A partial without terms is (-inf, no index), which loses every join it can.
 */
static __global__ void
global_max_pool_kernel(const float *x, float *y, int64_t planes, int64_t len)
{
    __shared__ float val[GAP_THREADS];
    __shared__ int64_t at[GAP_THREADS];
    int tid = threadIdx.x;
    for (int64_t plane = blockIdx.x; plane < planes; plane += gridDim.x) {
        const float *xp = x + plane * len;
        float m = -INFINITY;
        int64_t mi = INT64_MAX;
        for (int64_t k = tid; k < len; k += GAP_THREADS) {
            if (xp[k] > m || isnan(xp[k])) {
                m = xp[k];
                mi = k;
            }
            if (isnan(m))
                break;
        }
        val[tid] = m;
        at[tid] = mi;
        __syncthreads();
        for (int s = GAP_THREADS / 2; s > 0; s >>= 1) {
            if (tid < s) {
                float a = val[tid], b = val[tid + s];
                int64_t ia = at[tid], ib = at[tid + s];
                int take_b;
                if (isnan(a) || isnan(b))
                    take_b = isnan(b) && (!isnan(a) || ib < ia);
                else
                    take_b = b > a || (b == a && ib < ia);
                if (take_b) {
                    val[tid] = b;
                    at[tid] = ib;
                }
            }
            __syncthreads();
        }
        if (tid == 0)
            y[plane] = val[0];
        __syncthreads();
    }
}

/* ---- entry points ---- */

static int
launch_window_pool(struct gd_op_call *c, int is_max, struct gd_err *err)
{
    struct gd__cuda_ctx *ctx = gd__cuda_ctx_of(c);
    pool_geom g = pool_geom_of(c);
    int64_t n = gd_tensor_numel(c->out[0]);
    int rc = 0;
    if (n == 0)
        return 0;
    const float *x = (const float *)c->in[0]->data;
    float *y = (float *)c->out[0]->data;
    if (is_max) {
        int64_t *ind = c->n_out > 1 && c->out[1] != NULL ? (int64_t *)c->out[1]->data : NULL;
        max_pool_kernel<<<gd__cuda_blocks(n), GD_CUDA_THREADS, 0, ctx->compute>>>(
            x, y, ind, c->params->storage_order, g);
    } else {
        average_pool_kernel<<<gd__cuda_blocks(n), GD_CUDA_THREADS, 0, ctx->compute>>>(x, y, g);
    }
    GD_CUDA_CHECK_LAUNCH();
done:
    return rc;
}

extern "C" int
gd__cuda_max_pool(struct gd_op_call *c, struct gd_err *err)
{
    return launch_window_pool(c, 1, err);
}

extern "C" int
gd__cuda_average_pool(struct gd_op_call *c, struct gd_err *err)
{
    return launch_window_pool(c, 0, err);
}

/* The global pools: one block per plane. */
static int
launch_global_pool(struct gd_op_call *c, int is_max, struct gd_err *err)
{
    struct gd__cuda_ctx *ctx = gd__cuda_ctx_of(c);
    const struct gd_tensor *xt = c->in[0];
    int64_t planes = xt->shape[0] * xt->shape[1];
    /* an empty plane gives 0 / 0 = NaN (average) or -inf (max), as on the CPU */
    int64_t len = planes > 0 ? gd_tensor_numel(xt) / planes : 0;
    int64_t grid = planes < 65535LL * 8 ? planes : 65535LL * 8;
    int rc = 0;
    if (planes == 0)
        return 0;
    if (is_max)
        global_max_pool_kernel<<<(unsigned)grid, GAP_THREADS, 0, ctx->compute>>>(
            (const float *)xt->data, (float *)c->out[0]->data, planes, len);
    else
        global_average_pool_kernel<<<(unsigned)grid, GAP_THREADS, 0, ctx->compute>>>(
            (const float *)xt->data, (float *)c->out[0]->data, planes, len);
    GD_CUDA_CHECK_LAUNCH();
    snprintf(c->algo, sizeof c->algo, "%s", is_max ? "tree256 by index" : "tree256");
done:
    return rc;
}

extern "C" int
gd__cuda_global_average_pool(struct gd_op_call *c, struct gd_err *err)
{
    return launch_global_pool(c, 0, err);
}

extern "C" int
gd__cuda_global_max_pool(struct gd_op_call *c, struct gd_err *err)
{
    return launch_global_pool(c, 1, err);
}
