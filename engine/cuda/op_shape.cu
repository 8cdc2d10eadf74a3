/* op_shape.cu: data movement on the GPU: copies, Concat, Transpose, Pad, and the copy plans of
 * engine/core/move.h (Slice, Split, Expand, Tile, DepthToSpace, SpaceToDepth), the very plans
 * the CPU runs. They move elements by their size in bytes, so they serve every dtype
 * (ArgMax's int64, comparisons' bool). */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "kernels.cuh"
#include "../core/index_rules.h"
#include "../core/move.h"

/* Flatten, Reshape, Squeeze, Unsqueeze, Identity: C order is unchanged, so a copy. */
static int
copy_input(struct gd_op_call *c, struct gd_err *err)
{
    struct gd__cuda_ctx *ctx = gd__cuda_ctx_of(c);
    size_t nbytes = gd_tensor_nbytes(c->in[0]);
    int rc = 0;
    if (nbytes == 0 || c->out[0]->data == c->in[0]->data)
        return 0;
    GD_CUDA_TRY(cudaMemcpyAsync(c->out[0]->data, c->in[0]->data, nbytes, cudaMemcpyDeviceToDevice,
                                ctx->compute));
done:
    return rc;
}

extern "C" int
gd__cuda_flatten(struct gd_op_call *c, struct gd_err *err)
{
    return copy_input(c, err);
}

extern "C" int
gd__cuda_reshape(struct gd_op_call *c, struct gd_err *err)
{
    return copy_input(c, err);
}

extern "C" int
gd__cuda_squeeze(struct gd_op_call *c, struct gd_err *err)
{
    return copy_input(c, err);
}

extern "C" int
gd__cuda_unsqueeze(struct gd_op_call *c, struct gd_err *err)
{
    return copy_input(c, err);
}

extern "C" int
gd__cuda_identity(struct gd_op_call *c, struct gd_err *err)
{
    return copy_input(c, err);
}

/* Inference: the input passes unchanged and the mask (bool, one byte each) keeps everything. */
extern "C" int
gd__cuda_dropout(struct gd_op_call *c, struct gd_err *err)
{
    struct gd__cuda_ctx *ctx = gd__cuda_ctx_of(c);
    int rc = copy_input(c, err);
    if (rc != 0)
        return rc;
    if (c->n_out > 1 && c->out[1] != NULL && gd_tensor_nbytes(c->out[1]) > 0)
        GD_CUDA_TRY(cudaMemsetAsync(c->out[1]->data, 1, gd_tensor_nbytes(c->out[1]), ctx->compute));
done:
    return rc;
}

/* ---- Concat ---- */

/*
 * One input's part of the output: `outer` runs of `chunk` units, each landing at `offset`
 * within an output run of `row` units. A unit is the widest of 16, 8, 4, 2, 1 bytes that
 * divides every size, offset and address involved, so any dtype moves in wide loads.
 */
template <class U>
static __global__ void
concat_kernel(const U *src, U *dst, int64_t outer, int64_t chunk, int64_t row, int64_t offset)
{
    int64_t n = outer * chunk;
    int64_t step = (int64_t)gridDim.x * blockDim.x;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += step) {
        int64_t o = i / chunk;
        dst[o * row + offset + (i - o * chunk)] = src[i];
    }
}

template <class U>
static void
concat_part(const void *src, void *dst, int64_t outer, size_t chunk_b, size_t row_b,
            size_t offset_b, cudaStream_t stream)
{
    int64_t chunk = (int64_t)(chunk_b / sizeof(U));
    concat_kernel<U><<<gd__cuda_blocks(outer * chunk), GD_CUDA_THREADS, 0, stream>>>(
        (const U *)src, (U *)dst, outer, chunk, (int64_t)(row_b / sizeof(U)),
        (int64_t)(offset_b / sizeof(U)));
}

extern "C" int
gd__cuda_concat(struct gd_op_call *c, struct gd_err *err)
{
    struct gd__cuda_ctx *ctx = gd__cuda_ctx_of(c);
    const struct gd_tensor *y = c->out[0];
    int64_t axis = c->params->axis;
    size_t es = gd_dtype_size(y->dtype);
    int64_t outer = 1, inner = 1;
    size_t row_b, offset_b = 0;
    int rc = 0;
    for (int i = 0; i < y->ndim; i++) {
        if (i < axis)
            outer *= y->shape[i];
        else if (i > axis)
            inner *= y->shape[i];
    }
    row_b = (size_t)(y->shape[axis] * inner) * es;
    for (int k = 0; k < c->n_in; k++) {
        size_t chunk_b = (size_t)(c->in[k]->shape[axis] * inner) * es;
        uintptr_t bits =
            (uintptr_t)c->in[k]->data | (uintptr_t)y->data | chunk_b | row_b | offset_b;
        if (outer > 0 && chunk_b > 0) {
            if (bits % 16 == 0)
                concat_part<uint4>(c->in[k]->data, y->data, outer, chunk_b, row_b, offset_b,
                                   ctx->compute);
            else if (bits % 8 == 0)
                concat_part<uint64_t>(c->in[k]->data, y->data, outer, chunk_b, row_b, offset_b,
                                      ctx->compute);
            else if (bits % 4 == 0)
                concat_part<uint32_t>(c->in[k]->data, y->data, outer, chunk_b, row_b, offset_b,
                                      ctx->compute);
            else if (bits % 2 == 0)
                concat_part<uint16_t>(c->in[k]->data, y->data, outer, chunk_b, row_b, offset_b,
                                      ctx->compute);
            else
                concat_part<uint8_t>(c->in[k]->data, y->data, outer, chunk_b, row_b, offset_b,
                                     ctx->compute);
            GD_CUDA_CHECK_LAUNCH();
        }
        offset_b += chunk_b;
    }
done:
    return rc;
}

/* ---- Transpose ---- */

/* y[i] = x[offset of i]: the walk has y's shape and, per axis, x's stride along perm. */
template <class U>
static __global__ void
transpose_kernel(const U *x, U *y, int64_t n, gd__cuda_walk w)
{
    int64_t step = (int64_t)gridDim.x * blockDim.x;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += step) {
        int64_t off;
        gd__cuda_walk_offsets(w, i, 1, &off);
        y[i] = x[off];
    }
}

/* The same walk in 32-bit arithmetic (gd__cuda_walk_fits32). */
template <class U>
static __global__ void
transpose32_kernel(const U *x, U *y, uint32_t n, gd__cuda_walk w)
{
    uint32_t step = gridDim.x * blockDim.x;
    for (uint32_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += step) {
        uint32_t off;
        gd__cuda_walk_offsets32(w, i, 1, &off);
        y[i] = x[off];
    }
}

/* The walk w (coalesced) in units of U, n of them. */
template <class U>
static void
transpose_launch(const void *x, void *y, int64_t n, const gd__cuda_walk &w, cudaStream_t stream)
{
    unsigned blocks = gd__cuda_blocks(n);
    if (gd__cuda_walk_fits32(&w, 1, n))
        transpose32_kernel<<<blocks, GD_CUDA_THREADS, 0, stream>>>((const U *)x, (U *)y,
                                                                   (uint32_t)n, w);
    else
        transpose_kernel<<<blocks, GD_CUDA_THREADS, 0, stream>>>((const U *)x, (U *)y, n, w);
}

/* Runs walk w of n elements of es bytes with a unit of ub bytes (a multiple or a divisor of
 * es that divides every run and stride: the walk is rescaled to it). */
static void
transpose_units(const void *x, void *y, int64_t n, gd__cuda_walk w, size_t es, size_t ub,
                cudaStream_t stream)
{
    if (ub != es) {
        int last = w.ndim - 1;
        for (int d = 0; d < w.ndim; d++)
            w.stride[0][d] = d == last ? 1 : (int64_t)((size_t)w.stride[0][d] * es / ub);
        w.shape[last] = (int64_t)((size_t)w.shape[last] * es / ub);
        n = (int64_t)((size_t)n * es / ub);
    }
    switch (ub) {
    case 16:
        transpose_launch<uint4>(x, y, n, w, stream);
        break;
    case 8:
        transpose_launch<uint64_t>(x, y, n, w, stream);
        break;
    case 4:
        transpose_launch<uint32_t>(x, y, n, w, stream);
        break;
    case 2:
        transpose_launch<uint16_t>(x, y, n, w, stream);
        break;
    default:
        transpose_launch<uint8_t>(x, y, n, w, stream);
        break;
    }
}

#define TILE 32
#define TILE_ROWS 8

/*
 * A transpose that moves x's innermost axis: 32 x 32 tiles of the plane of y's innermost
 * axis (a: contiguous in y, stride xa in x) and the axis that is x's innermost (b: contiguous
 * in x, stride yb in y), read along b and written along a through shared memory, so both
 * sides are coalesced; the other axes (batch) are a loop of whole planes.
 */
struct tile_geom {
    int nb;
    int64_t bshape[GD_MAX_DIMS], bx[GD_MAX_DIMS], by[GD_MAX_DIMS];
    int64_t len_a, len_b, xa, yb;
    int64_t tiles_a, tiles_b, tiles;
};

template <class U>
static __global__ void
transpose_tiled_kernel(const U *__restrict__ x, U *__restrict__ y, tile_geom g)
{
    __shared__ U tile[TILE][TILE + 1];
    for (int64_t t = blockIdx.x; t < g.tiles; t += gridDim.x) {
        int64_t ta = t % g.tiles_a, rest = t / g.tiles_a;
        int64_t tb = rest % g.tiles_b, batch = rest / g.tiles_b;
        int64_t xo = 0, yo = 0;
        for (int d = g.nb - 1; d >= 0; d--) {
            int64_t i = batch % g.bshape[d];
            batch /= g.bshape[d];
            xo += i * g.bx[d];
            yo += i * g.by[d];
        }
        int64_t a0 = ta * TILE, b0 = tb * TILE;
        for (int r = threadIdx.y; r < TILE; r += TILE_ROWS) {
            int64_t a = a0 + r, b = b0 + threadIdx.x;
            if (a < g.len_a && b < g.len_b)
                tile[r][threadIdx.x] = x[xo + a * g.xa + b];
        }
        __syncthreads();
        for (int r = threadIdx.y; r < TILE; r += TILE_ROWS) {
            int64_t b = b0 + r, a = a0 + threadIdx.x;
            if (a < g.len_a && b < g.len_b)
                y[yo + b * g.yb + a] = tile[threadIdx.x][r];
        }
        __syncthreads();
    }
}

/* The tiled transpose of coalesced walk w: y's innermost axis is not x's, which is output
 * axis ax_b. */
template <class U>
static void
transpose_tiled(const void *x, void *y, const gd__cuda_walk &w, int ax_b, cudaStream_t stream)
{
    tile_geom g;
    int last = w.ndim - 1;
    int64_t ystride[GD_MAX_DIMS], s = 1;
    for (int d = last; d >= 0; d--) {
        ystride[d] = s;
        s *= w.shape[d];
    }
    g.nb = 0;
    int64_t batches = 1;
    for (int d = 0; d < w.ndim; d++) {
        if (d == last || d == ax_b)
            continue;
        g.bshape[g.nb] = w.shape[d];
        g.bx[g.nb] = w.stride[0][d];
        g.by[g.nb] = ystride[d];
        g.nb++;
        batches *= w.shape[d];
    }
    g.len_a = w.shape[last];
    g.len_b = w.shape[ax_b];
    g.xa = w.stride[0][last];
    g.yb = ystride[ax_b];
    g.tiles_a = (g.len_a + TILE - 1) / TILE;
    g.tiles_b = (g.len_b + TILE - 1) / TILE;
    g.tiles = batches * g.tiles_a * g.tiles_b;
    int64_t blocks = g.tiles < 65535LL * 8 ? g.tiles : 65535LL * 8;
    transpose_tiled_kernel<U><<<(unsigned)blocks, dim3(TILE, TILE_ROWS), 0, stream>>>(
        (const U *)x, (U *)y, g);
}

/*
 * y = x with its axes in perm's order. The walk (y's shape, x's strides) is coalesced first;
 * then: nothing moved, one copy; x's innermost axis stays innermost, runs of it move in the
 * widest unit (up to 16 bytes) that every run, stride and address allows; else 32 x 32
 * tiles through shared memory. Every kind moves the same bytes to the same places.
 */
extern "C" int
gd__cuda_transpose(struct gd_op_call *c, struct gd_err *err)
{
    struct gd__cuda_ctx *ctx = gd__cuda_ctx_of(c);
    const struct gd_tensor *x = c->in[0];
    const struct gd_tensor *y = c->out[0];
    size_t es = gd_dtype_size(x->dtype);
    int64_t n = gd_tensor_numel(y);
    int64_t stride[GD_MAX_DIMS], s = 1;
    gd__cuda_walk w;
    int rc = 0;
    if (n == 0)
        return 0;
    if (es != 1 && es != 2 && es != 4 && es != 8)
        return gd_err_set(err, GD_EDTYPE, "Transpose of %s (%zu-byte elements)",
                          gd_dtype_name(x->dtype), es);
    for (int i = x->ndim - 1; i >= 0; i--) {
        stride[i] = s;
        s *= x->shape[i];
    }
    w.ndim = y->ndim;
    for (int i = 0; i < y->ndim; i++) {
        w.shape[i] = y->shape[i];
        w.stride[0][i] = stride[c->params->perm[i]];
    }
    gd__cuda_walk_coalesce(&w, 1);
    int last = w.ndim - 1;
    if (w.ndim == 0 || (w.ndim == 1 && w.stride[0][0] == 1)) {
        GD_CUDA_TRY(cudaMemcpyAsync(y->data, x->data, (size_t)n * es, cudaMemcpyDeviceToDevice,
                                    ctx->compute));
        return 0;
    }
    if (w.stride[0][last] == 1) {
        size_t ub = 16;
        uintptr_t bits = (uintptr_t)x->data | (uintptr_t)y->data;
        for (; ub > es; ub /= 2) {
            int ok = bits % ub == 0 && ((size_t)w.shape[last] * es) % ub == 0;
            for (int d = 0; d < last && ok; d++)
                ok = ((size_t)w.stride[0][d] * es) % ub == 0;
            if (ok)
                break;
        }
        transpose_units(x->data, y->data, n, w, es, ub, ctx->compute);
    } else {
        int ax_b = -1;
        for (int d = 0; d < last; d++)
            if (w.stride[0][d] == 1)
                ax_b = d;
        switch (ax_b < 0 ? 0 : es) {
        case 1:
            transpose_tiled<uint8_t>(x->data, y->data, w, ax_b, ctx->compute);
            break;
        case 2:
            transpose_tiled<uint16_t>(x->data, y->data, w, ax_b, ctx->compute);
            break;
        case 4:
            transpose_tiled<uint32_t>(x->data, y->data, w, ax_b, ctx->compute);
            break;
        case 8:
            transpose_tiled<uint64_t>(x->data, y->data, w, ax_b, ctx->compute);
            break;
        default: /* x's innermost axis was of length 1: no plane to tile */
            transpose_units(x->data, y->data, n, w, es, es, ctx->compute);
            break;
        }
    }
    GD_CUDA_CHECK_LAUNCH();
done:
    return rc;
}

/* ---- Pad ---- */

struct pad_geom {
    int ndim;
    enum gd_pad_mode mode;
    int64_t out_shape[GD_MAX_DIMS];
    int64_t in_shape[GD_MAX_DIMS];
    int64_t in_stride[GD_MAX_DIMS];
    int64_t before[GD_MAX_DIMS];
};

template <class U>
static __global__ void
pad_kernel(const U *x, U *y, int64_t n, pad_geom g, U value)
{
    int64_t step = (int64_t)gridDim.x * blockDim.x;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += step) {
        int64_t rest = i, off = 0;
        bool inside = true;
        for (int d = g.ndim - 1; d >= 0; d--) {
            int64_t si = gd__pad_source(g.mode, rest % g.out_shape[d], g.before[d], g.in_shape[d]);
            rest /= g.out_shape[d];
            inside = inside && si >= 0;
            off += si * g.in_stride[d];
        }
        y[i] = inside ? x[off] : value;
    }
}

template <class U>
static void
pad_launch(const struct gd_tensor *x, struct gd_tensor *y, int64_t n, const pad_geom &g,
           const unsigned char *value, cudaStream_t stream)
{
    U v;
    memcpy(&v, value, sizeof v);
    pad_kernel<U><<<gd__cuda_blocks(n), GD_CUDA_THREADS, 0, stream>>>((const U *)x->data,
                                                                      (U *)y->data, n, g, v);
}

extern "C" int
gd__cuda_pad(struct gd_op_call *c, struct gd_err *err)
{
    struct gd__cuda_ctx *ctx = gd__cuda_ctx_of(c);
    const struct gd_tensor *x = c->in[0];
    struct gd_tensor *y = c->out[0];
    const struct gd_params *p = c->params;
    size_t es = gd_dtype_size(x->dtype);
    int64_t n = gd_tensor_numel(y), s = 1;
    unsigned char value[8] = {0};
    pad_geom g;
    /* float tensors on this backend are float32 */
    if (gd_dtype_is_float(x->dtype) && x->dtype != GD_F32)
        return gd_err_set(err, GD_EDTYPE, "Pad of %s: float tensors on cuda are float32",
                          gd_dtype_name(x->dtype));
    gd__scalar_bytes(x->dtype, p->pad_value, value);
    if (n == 0)
        return 0;
    int rc = 0;
    g.ndim = x->ndim;
    g.mode = p->pad_mode;
    for (int i = x->ndim - 1; i >= 0; i--) {
        g.out_shape[i] = y->shape[i];
        g.in_shape[i] = x->shape[i];
        g.in_stride[i] = s;
        g.before[i] = p->pads_nd[i];
        s *= x->shape[i];
    }
    switch (es) {
    case 1:
        pad_launch<uint8_t>(x, y, n, g, value, ctx->compute);
        break;
    case 2:
        pad_launch<uint16_t>(x, y, n, g, value, ctx->compute);
        break;
    case 4:
        pad_launch<uint32_t>(x, y, n, g, value, ctx->compute);
        break;
    case 8:
        pad_launch<uint64_t>(x, y, n, g, value, ctx->compute);
        break;
    default:
        return gd_err_set(err, GD_EDTYPE, "Pad of %s (%zu-byte elements)", gd_dtype_name(x->dtype),
                          es);
    }
    GD_CUDA_CHECK_LAUNCH();
done:
    return rc;
}

/* ---- Slice, Split, Expand, Tile, DepthToSpace, SpaceToDepth: the CPU's copy plans ---- */

/* y[i] = x[offset + sum idx_d stride_d], idx the multi-index of i over the plan's shape. */
template <class U>
static __global__ void
move_kernel(const U *x, U *y, int64_t n, gd__move m)
{
    int64_t step = (int64_t)gridDim.x * blockDim.x;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += step) {
        int64_t rest = i, off = m.offset;
        for (int d = m.ndim - 1; d >= 0; d--) {
            off += rest % m.shape[d] * m.stride[d];
            rest /= m.shape[d];
        }
        y[i] = x[off];
    }
}

/*
 * Runs a plan (simplified first, as the CPU runs it) from x into y. A plan whose strides are
 * none of them negative (every one but a Slice with a negative step) is Transpose's walk
 * from x's element `offset` on, in units up to 16 bytes and 32-bit index arithmetic where
 * it fits; the others take the plan's own 64-bit walk. Both move the same elements.
 */
static int
move_run(struct gd_op_call *c, const struct gd__move *plan, const struct gd_tensor *x,
         struct gd_tensor *y, struct gd_err *err)
{
    struct gd__cuda_ctx *ctx = gd__cuda_ctx_of(c);
    int64_t n = gd_tensor_numel(y);
    unsigned blocks = gd__cuda_blocks(n);
    struct gd__move m = *plan;
    size_t es = gd_dtype_size(x->dtype);
    int rc = 0, forward = 1;
    if (n == 0)
        return 0;
    gd__move_simplify(&m);
    for (int d = 0; d < m.ndim; d++)
        forward = forward && m.stride[d] >= 0;
    if (forward && m.ndim <= GD_MAX_DIMS && (es == 1 || es == 2 || es == 4 || es == 8)) {
        gd__cuda_walk w;
        w.ndim = m.ndim;
        for (int d = 0; d < m.ndim; d++) {
            w.shape[d] = m.shape[d];
            w.stride[0][d] = m.stride[d];
        }
        gd__cuda_walk_coalesce(&w, 1);
        const char *from = (const char *)x->data + (size_t)m.offset * es;
        int last = w.ndim - 1;
        size_t ub = es;
        if (w.ndim > 0 && w.stride[0][last] == 1) {
            uintptr_t bits = (uintptr_t)from | (uintptr_t)y->data;
            for (ub = 16; ub > es; ub /= 2) {
                int ok = bits % ub == 0 && ((size_t)w.shape[last] * es) % ub == 0;
                for (int d = 0; d < last && ok; d++)
                    ok = ((size_t)w.stride[0][d] * es) % ub == 0;
                if (ok)
                    break;
            }
        }
        transpose_units(from, y->data, n, w, es, ub, ctx->compute);
        GD_CUDA_CHECK_LAUNCH();
        return 0;
    }
    switch (gd_dtype_size(x->dtype)) {
    case 1:
        move_kernel<<<blocks, GD_CUDA_THREADS, 0, ctx->compute>>>((const uint8_t *)x->data,
                                                                  (uint8_t *)y->data, n, m);
        break;
    case 2:
        move_kernel<<<blocks, GD_CUDA_THREADS, 0, ctx->compute>>>((const uint16_t *)x->data,
                                                                  (uint16_t *)y->data, n, m);
        break;
    case 4:
        move_kernel<<<blocks, GD_CUDA_THREADS, 0, ctx->compute>>>((const uint32_t *)x->data,
                                                                  (uint32_t *)y->data, n, m);
        break;
    case 8:
        move_kernel<<<blocks, GD_CUDA_THREADS, 0, ctx->compute>>>((const uint64_t *)x->data,
                                                                  (uint64_t *)y->data, n, m);
        break;
    default:
        return gd_err_set(err, GD_EDTYPE, "%s of %s", gd_op_name(c->node->op),
                          gd_dtype_name(x->dtype));
    }
    GD_CUDA_CHECK_LAUNCH();
done:
    return rc;
}

extern "C" int
gd__cuda_slice(struct gd_op_call *c, struct gd_err *err)
{
    struct gd__move m;
    gd__move_slice(c->in[0], c->params, c->out[0], &m);
    return move_run(c, &m, c->in[0], c->out[0], err);
}

extern "C" int
gd__cuda_split(struct gd_op_call *c, struct gd_err *err)
{
    int64_t first = 0, axis = c->params->axis;
    for (int k = 0; k < c->n_out; k++) {
        struct gd__move m;
        gd__move_split(c->in[0], axis, first, c->out[k], &m);
        int rc = move_run(c, &m, c->in[0], c->out[k], err);
        if (rc != 0)
            return rc;
        first += c->out[k]->shape[axis];
    }
    return 0;
}

extern "C" int
gd__cuda_expand(struct gd_op_call *c, struct gd_err *err)
{
    struct gd__move m;
    gd__move_expand(c->in[0], c->out[0], &m);
    return move_run(c, &m, c->in[0], c->out[0], err);
}

extern "C" int
gd__cuda_tile(struct gd_op_call *c, struct gd_err *err)
{
    struct gd__move m;
    gd__move_tile(c->in[0], c->out[0], &m);
    return move_run(c, &m, c->in[0], c->out[0], err);
}

extern "C" int
gd__cuda_depth_to_space(struct gd_op_call *c, struct gd_err *err)
{
    struct gd__move m;
    gd__move_depth_to_space(c->in[0], c->params, c->out[0], &m);
    return move_run(c, &m, c->in[0], c->out[0], err);
}

extern "C" int
gd__cuda_space_to_depth(struct gd_op_call *c, struct gd_err *err)
{
    struct gd__move m;
    gd__move_space_to_depth(c->in[0], c->params, c->out[0], &m);
    return move_run(c, &m, c->in[0], c->out[0], err);
}
