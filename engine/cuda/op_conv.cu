/*
 * op_conv.cu: Conv and ConvTranspose on the GPU through cuDNN, as the frameworks call it:
 * through the graph API (conv_graph.c: engine configs, what PyTorch runs; the default) or
 * the legacy convolution API (cudnnConvolutionForward and algorithm ids, what Paddle and
 * TensorFlow run; knobs.conv_api legacy). The choice (cuDNN's first heuristic one, the
 * fastest measured, the first deterministic one, or a fixed one) is made once per node and
 * shape and recorded in the layer's record with the math it ran with. ConvTranspose is
 * cuDNN's backward-data convolution. Padding cuDNN cannot express (different at the two
 * ends of an axis) is applied exactly by a copy into a zero-padded buffer (Conv) or a crop
 * of the unpadded result (ConvTranspose), and the bias is added after, for both APIs alike.
 * 1-D and 2-D ops use 4-D (NCHW) tensors, a 1-D op as height 1; 3-D ops use 5-D ones.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels.cuh"

/* Copies each (D, H, W) volume of src into the middle of a zero-filled (D+pd, H+ph, W+pw)
 * volume of dst at (off_d, off_h, off_w), or (crop) copies the window at those offsets of
 * each volume of src into dst, 0 where the window leaves src (a ConvTranspose whose
 * output_shape is larger than its full result has negative pads). */
static __global__ void
volume_copy(const float *__restrict__ src, float *__restrict__ dst, int64_t planes,
            gd__cuda_ncdhw sg, gd__cuda_ncdhw dg, int64_t off_d, int64_t off_h, int64_t off_w,
            int crop)
{
    /* crop: dst[p][i][j][k] = src[p][i+off_d][j+off_h][k+off_w]; pad: the reverse */
    int64_t d = crop ? dg.d : sg.d, h = crop ? dg.h : sg.h, w = crop ? dg.w : sg.w;
    int64_t n = planes * d * h * w;
    for (int64_t e = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; e < n;
         e += (int64_t)gridDim.x * blockDim.x) {
        int64_t k = e % w, j = (e / w) % h, i = (e / (w * h)) % d, p = e / (w * h * d);
        if (crop) {
            int64_t si = i + off_d, sj = j + off_h, sk = k + off_w;
            int inside = si >= 0 && si < sg.d && sj >= 0 && sj < sg.h && sk >= 0 && sk < sg.w;
            dst[((p * dg.d + i) * dg.h + j) * dg.w + k] =
                inside ? src[((p * sg.d + si) * sg.h + sj) * sg.w + sk] : 0.f;
        } else
            dst[((p * dg.d + i + off_d) * dg.h + j + off_h) * dg.w + k + off_w] =
                src[((p * sg.d + i) * sg.h + j) * sg.w + k];
    }
}

/* One algorithm choice, from either of cuDNN's perf structs. */
struct algo_perf {
    int algo;
    cudnnStatus_t status;
    float time;
    size_t memory;
    cudnnDeterminism_t determinism;
    cudnnMathType_t math;
};

enum choice { CHOOSE_HEURISTIC, CHOOSE_AUTOTUNE, CHOOSE_DETERMINISTIC, CHOOSE_FIXED };

static enum choice
choice_of(const struct gd_knobs *k, int *fixed)
{
    const char *a = k->conv_algo;
    if (strcmp(a, "autotune") == 0)
        return CHOOSE_AUTOTUNE;
    if (strcmp(a, "deterministic") == 0)
        return CHOOSE_DETERMINISTIC;
    if (strncmp(a, "fixed:", 6) == 0) {
        *fixed = atoi(a + 6);
        return CHOOSE_FIXED;
    }
    return CHOOSE_HEURISTIC;
}

/* The first usable result: cuDNN returns them best first (fastest, for the measured ones). */
static int
pick(const struct algo_perf *r, int n, int deterministic_only, size_t limit)
{
    for (int i = 0; i < n; i++) {
        if (r[i].status != CUDNN_STATUS_SUCCESS || r[i].memory > limit)
            continue;
        if (deterministic_only && r[i].determinism != CUDNN_DETERMINISTIC)
            continue;
        return i;
    }
    return -1;
}

static const char *
fwd_algo_name(int a)
{
    static const char *const names[] = {"implicit_gemm", "implicit_precomp_gemm", "gemm", "direct",
                                        "fft", "fft_tiling", "winograd", "winograd_nonfused"};
    return a >= 0 && a < 8 ? names[a] : "?";
}

static const char *
bwd_algo_name(int a)
{
    static const char *const names[] = {"algo_0", "algo_1", "fft", "fft_tiling", "winograd",
                                        "winograd_nonfused"};
    return a >= 0 && a < 6 ? names[a] : "?";
}

static const char *
math_name(cudnnMathType_t m, int tf32)
{
    /* FMA math never uses tensor cores; the others let cuDNN use them, which for float32
     * data on compute capability 8.0 and newer means inputs rounded to TF32. */
    if (m == CUDNN_FMA_MATH || !tf32)
        return "fp32";
    return "tf32";
}

/* The byte alignment of a buffer, up to 16 (what cuDNN's graph API is told). */
static int64_t
alignment(const void *p)
{
    int64_t a = 1;
    while (a < 16 && (uintptr_t)p % (uintptr_t)(a * 2) == 0)
        a *= 2;
    return a;
}

#define KEY_LEN 19

/* Geometry a convolution node is set up for, with the alignment of the buffers the product
 * runs on; a change re-creates the descriptors and the choice. */
static void
make_key(const struct gd_op_call *c, const void *x_run, const void *y_run, int64_t *key)
{
    const struct gd_tensor *x = c->in[0], *w = c->in[1], *y = c->out[0];
    memset(key, 0, KEY_LEN * sizeof *key);
    for (int i = 0; i < 5; i++) {
        key[i] = i < x->ndim ? x->shape[i] : 1;
        key[5 + i] = i < w->ndim ? w->shape[i] : 1;
        key[10 + i] = i < y->ndim ? y->shape[i] : 1;
    }
    key[15] = x->ndim;
    key[16] = alignment(x_run);
    key[17] = alignment(w->data);
    key[18] = alignment(y_run);
}

/*
 * A tensor descriptor of (n, c, d, h, w): 4-D NCHW (d = 1) for 1-D and 2-D ops, as they
 * always had, and 5-D packed NCDHW (cudnnSetTensorNdDescriptor) for 3-D ones (nd = 5).
 */
static int
set_tensor(cudnnTensorDescriptor_t *desc, int nd, gd__cuda_ncdhw g, struct gd_err *err)
{
    int rc = 0;
    int64_t v[5] = {g.n, g.c, g.d, g.h, g.w}, total = 1;
    for (int i = 0; i < 5; i++) {
        if (v[i] > INT32_MAX)
            total = INT64_MAX;
        else if (total <= INT32_MAX)
            total *= v[i];
    }
    if (total > INT32_MAX)
        return gd_err_set(err, GD_ENOTSUP, "a tensor of %lldx%lldx%lldx%lldx%lld is beyond "
                          "cuDNN's 32-bit sizes", (long long)g.n, (long long)g.c, (long long)g.d,
                          (long long)g.h, (long long)g.w);
    if (*desc == NULL)
        GD_CUDA_TRY(cudnnCreateTensorDescriptor(desc));
    if (nd == 4) {
        GD_CUDA_TRY(cudnnSetTensor4dDescriptor(*desc, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT,
                                               (int)g.n, (int)g.c, (int)g.h, (int)g.w));
    } else {
        int dims[5], strides[5];
        for (int i = 0; i < 5; i++)
            dims[i] = (int)v[i];
        strides[4] = 1;
        for (int i = 3; i >= 0; i--)
            strides[i] = strides[i + 1] * dims[i + 1];
        GD_CUDA_TRY(cudnnSetTensorNdDescriptor(*desc, CUDNN_DATA_FLOAT, 5, dims, strides));
    }
done:
    return rc;
}

/* 4 for the ops cuDNN sees as 2-D (1-D ones with height 1), 5 for 3-D ones. */
static int
descriptor_rank(const struct gd_params *p)
{
    return p->n_spatial == 3 ? 5 : 4;
}

/*
 * Makes the descriptors of a (forward or backward-data) convolution. For Conv, x is the
 * (possibly padded) input and y the output; for ConvTranspose, x is the input (dy) and y
 * the full or final output (dx). pads are the (depth, height, width) padding cuDNN applies
 * at both ends.
 */
static int
setup(struct gd__cuda_ctx *ctx, struct gd__cuda_node *nd, const struct gd_op_call *c,
      gd__cuda_ncdhw xg, gd__cuda_ncdhw yg, const int *pads, struct gd_err *err)
{
    int rc = 0;
    const struct gd_params *p = c->params;
    const struct gd_tensor *w = c->in[1];
    int rank = descriptor_rank(p);
    gd__cuda_ncdhw bg = {1, yg.c, 1, 1, 1};
    /* both APIs add the bias with y_desc and b_desc */
    rc = set_tensor(&nd->y_desc, rank, yg, err);
    if (rc == 0)
        rc = set_tensor(&nd->b_desc, rank, bg, err);
    if (rc == 0 && !ctx->graph_api)
        rc = set_tensor(&nd->x_desc, rank, xg, err);
    if (rc != 0 || ctx->graph_api)
        return rc;
    if (nd->w_desc == NULL)
        GD_CUDA_TRY(cudnnCreateFilterDescriptor(&nd->w_desc));
    if (nd->conv_desc == NULL)
        GD_CUDA_TRY(cudnnCreateConvolutionDescriptor(&nd->conv_desc));
    if (rank == 4) {
        GD_CUDA_TRY(cudnnSetFilter4dDescriptor(nd->w_desc, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW,
                                               (int)w->shape[0], (int)w->shape[1],
                                               (int)p->kernel[1], (int)p->kernel[2]));
        GD_CUDA_TRY(cudnnSetConvolution2dDescriptor(
            nd->conv_desc, pads[1], pads[2], (int)p->strides[1], (int)p->strides[2],
            (int)p->dilations[1], (int)p->dilations[2], CUDNN_CROSS_CORRELATION,
            CUDNN_DATA_FLOAT));
    } else {
        int fdims[5] = {(int)w->shape[0], (int)w->shape[1], (int)p->kernel[0], (int)p->kernel[1],
                        (int)p->kernel[2]};
        int strides[3], dilations[3];
        for (int a = 0; a < 3; a++) {
            strides[a] = (int)p->strides[a];
            dilations[a] = (int)p->dilations[a];
        }
        GD_CUDA_TRY(cudnnSetFilterNdDescriptor(nd->w_desc, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, 5,
                                               fdims));
        GD_CUDA_TRY(cudnnSetConvolutionNdDescriptor(nd->conv_desc, 3, pads, strides, dilations,
                                                    CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT));
    }
    GD_CUDA_TRY(cudnnSetConvolutionGroupCount(nd->conv_desc, (int)p->group));
    GD_CUDA_TRY(cudnnSetConvolutionMathType(nd->conv_desc,
                                            ctx->tf32 ? CUDNN_DEFAULT_MATH : CUDNN_FMA_MATH));
done:
    return rc;
}

#define MAX_ALGOS 16

/* Keeps what cuDNN offered (the usable ones, in its order) for gd_session_algo_offers(). */
static void
keep_offers(struct gd__cuda_node *nd, const struct algo_perf *r, int n, int chosen, int transpose,
            int measured)
{
    nd->n_offers = 0;
    for (int i = 0; i < n && nd->n_offers < GD_ALGO_OFFERS_MAX; i++) {
        if (r[i].status != CUDNN_STATUS_SUCCESS)
            continue;
        struct gd_algo_offer *o = &nd->offers[nd->n_offers++];
        memset(o, 0, sizeof *o);
        o->id = r[i].algo;
        snprintf(o->config, sizeof o->config, "%d", r[i].algo);
        snprintf(o->name, sizeof o->name, "%s",
                 transpose ? bwd_algo_name(r[i].algo) : fwd_algo_name(r[i].algo));
        o->deterministic = r[i].determinism == CUDNN_DETERMINISTIC;
        o->workspace = (int64_t)r[i].memory;
        snprintf(o->math, sizeof o->math, "%s", r[i].math == CUDNN_FMA_MATH ? "fp32" : "tf32");
        o->time_us = measured ? (double)r[i].time * 1e3 : -1.0;
        o->chosen = i == chosen;
    }
}

/* Chooses the algorithm for a forward (transpose = 0) or backward-data convolution. */
static int
choose(struct gd__cuda_ctx *ctx, struct gd__cuda_node *nd, int transpose, struct gd_err *err)
{
    int rc = 0, n = 0, fixed = -1;
    struct algo_perf r[MAX_ALGOS];
    enum choice how = choice_of(&ctx->knobs, &fixed);
    if (nd->pin >= 0) {
        how = CHOOSE_FIXED;
        fixed = nd->pin;
    }
    nd->n_offers = 0;
    if (how == CHOOSE_FIXED) {
        size_t ws = 0;
        cudnnStatus_t s =
            transpose ? cudnnGetConvolutionBackwardDataWorkspaceSize(
                            ctx->cudnn, nd->w_desc, nd->x_desc, nd->conv_desc, nd->y_desc,
                            (cudnnConvolutionBwdDataAlgo_t)fixed, &ws)
                      : cudnnGetConvolutionForwardWorkspaceSize(
                            ctx->cudnn, nd->x_desc, nd->w_desc, nd->conv_desc, nd->y_desc,
                            (cudnnConvolutionFwdAlgo_t)fixed, &ws);
        if (s != CUDNN_STATUS_SUCCESS)
            return gd_err_set(err, GD_ENOTSUP, "cuDNN %s algorithm %d does not apply to this "
                              "convolution: %s", transpose ? "backward-data" : "forward", fixed,
                              cudnnGetErrorString(s));
        nd->algo = fixed;
        nd->workspace = ws;
        nd->math = ctx->tf32 ? CUDNN_DEFAULT_MATH : CUDNN_FMA_MATH;
        return 0;
    }
    /* Only autotune times the algorithms: deterministic takes cuDNN's heuristic order, so the
     * choice, like the algorithm, is the same on every run (the fastest deterministic one by
     * timing could differ between two runs, and with it the bits). */
    int measured = how == CHOOSE_AUTOTUNE;
    if (!transpose) {
        cudnnConvolutionFwdAlgoPerf_t perf[MAX_ALGOS];
        if (measured)
            GD_CUDA_TRY(cudnnFindConvolutionForwardAlgorithm(ctx->cudnn, nd->x_desc, nd->w_desc,
                                                             nd->conv_desc, nd->y_desc, MAX_ALGOS,
                                                             &n, perf));
        else
            GD_CUDA_TRY(cudnnGetConvolutionForwardAlgorithm_v7(ctx->cudnn, nd->x_desc,
                                                               nd->w_desc, nd->conv_desc,
                                                               nd->y_desc, MAX_ALGOS, &n, perf));
        for (int i = 0; i < n; i++)
            r[i] = (struct algo_perf){(int)perf[i].algo, perf[i].status, perf[i].time,
                                      perf[i].memory, perf[i].determinism, perf[i].mathType};
    } else {
        cudnnConvolutionBwdDataAlgoPerf_t perf[MAX_ALGOS];
        if (measured)
            GD_CUDA_TRY(cudnnFindConvolutionBackwardDataAlgorithm(
                ctx->cudnn, nd->w_desc, nd->x_desc, nd->conv_desc, nd->y_desc, MAX_ALGOS, &n,
                perf));
        else
            GD_CUDA_TRY(cudnnGetConvolutionBackwardDataAlgorithm_v7(
                ctx->cudnn, nd->w_desc, nd->x_desc, nd->conv_desc, nd->y_desc, MAX_ALGOS, &n,
                perf));
        for (int i = 0; i < n; i++)
            r[i] = (struct algo_perf){(int)perf[i].algo, perf[i].status, perf[i].time,
                                      perf[i].memory, perf[i].determinism, perf[i].mathType};
    }
    {
        int i = pick(r, n, how == CHOOSE_DETERMINISTIC, ctx->workspace_limit);
        if (i < 0)
            return gd_err_set(err, GD_ENOTSUP, "cuDNN offers no %salgorithm for this "
                              "convolution within the workspace limit",
                              how == CHOOSE_DETERMINISTIC ? "deterministic " : "");
        keep_offers(nd, r, n, i, transpose, measured);
        nd->algo = r[i].algo;
        nd->workspace = r[i].memory;
        nd->math = r[i].math;
        /* Run with the math type the choice was made for, as the frameworks do. */
        GD_CUDA_TRY(cudnnSetConvolutionMathType(nd->conv_desc, nd->math));
    }
done:
    return rc;
}

static void
record(struct gd_op_call *c, struct gd__cuda_ctx *ctx, struct gd__cuda_node *nd, int transpose)
{
    static const char *const how[] = {"heuristic", "autotune", "deterministic", "fixed"};
    int fixed;
    if (ctx->graph_api) {
        gd__cuda_graph_record(ctx, nd, nd->algo_text, sizeof nd->algo_text, c->math,
                              sizeof c->math);
    } else {
        snprintf(nd->algo_text, sizeof nd->algo_text, "cudnn %s %d %s (%s)",
                 transpose ? "bwd_data" : "fwd", nd->algo,
                 transpose ? bwd_algo_name(nd->algo) : fwd_algo_name(nd->algo),
                 nd->pin >= 0 ? "pinned" : how[choice_of(&ctx->knobs, &fixed)]);
        snprintf(c->math, sizeof c->math, "%s", math_name(nd->math, ctx->tf32));
    }
    snprintf(c->algo, sizeof c->algo, "%s", nd->algo_text);
}

/* Equal pads at both ends map onto cuDNN's padding; otherwise (or when negative, as a
 * ConvTranspose's output_shape can make them) the padded side of the product (the input of a
 * Conv, the output of a ConvTranspose) is widened by the pads and the padding is done (or
 * undone) by a copy. */
static int
symmetric_pads(const struct gd_params *p)
{
    for (int a = 0; a < GD_MAX_SPATIAL; a++)
        if (p->pads[a] != p->pads[a + GD_MAX_SPATIAL] || p->pads[a] < 0)
            return 0;
    return 1;
}

static gd__cuda_ncdhw
widened(gd__cuda_ncdhw g, const struct gd_params *p)
{
    if (!symmetric_pads(p)) {
        g.d += p->pads[0] + p->pads[GD_MAX_SPATIAL];
        g.h += p->pads[1] + p->pads[GD_MAX_SPATIAL + 1];
        g.w += p->pads[2] + p->pads[GD_MAX_SPATIAL + 2];
    }
    return g;
}

static int64_t
volume(gd__cuda_ncdhw g)
{
    return g.n * g.c * g.d * g.h * g.w;
}

/* The graph API's geometry of the product x -> y (xg, yg as the product runs: padded
 * input, full ConvTranspose output), pads the ones cuDNN applies. */
static void
graph_geom(const struct gd_op_call *c, gd__cuda_ncdhw xg, gd__cuda_ncdhw yg, const int *pads,
           int transpose, const void *x, const void *y, struct gd__conv_geom *g)
{
    const struct gd_params *p = c->params;
    const struct gd_tensor *w = c->in[1];
    memset(g, 0, sizeof *g);
    g->transpose = transpose;
    g->rank = descriptor_rank(p);
    int64_t xv[5] = {xg.n, xg.c, xg.d, xg.h, xg.w}, yv[5] = {yg.n, yg.c, yg.d, yg.h, yg.w};
    int64_t wv[5] = {w->shape[0], w->shape[1], p->kernel[0], p->kernel[1], p->kernel[2]};
    for (int i = 0, k = 0; i < 5; i++) {
        if (g->rank == 4 && i == 2)
            continue; /* no depth */
        g->x[k] = xv[i];
        g->w[k] = wv[i];
        g->y[k] = yv[i];
        k++;
    }
    for (int a = 0; a < 3; a++) {
        g->pad[a] = pads[a];
        g->stride[a] = p->strides[a];
        g->dilation[a] = p->dilations[a];
    }
    g->align[0] = alignment(x);
    g->align[1] = alignment(w->data);
    g->align[2] = alignment(y);
}

/*
 * Sets the node up for x -> y (descriptors and the algorithm or engine config) unless it
 * was for the same shapes, attributes and alignments, and records its choice and math in
 * the call. x and y are the buffers the product runs on (autotune times on them).
 */
static int
prepare(struct gd_op_call *c, struct gd__cuda_ctx *ctx, struct gd__cuda_node *nd,
        gd__cuda_ncdhw xg, gd__cuda_ncdhw yg, int transpose, void *x, void *y,
        struct gd_err *err)
{
    const struct gd_params *p = c->params;
    int64_t key[KEY_LEN];
    make_key(c, x, y, key);
    int pinned = gd__cuda_conv_pin(ctx, c->node->name, nd->pin_text, sizeof nd->pin_text);
    nd->pin = pinned && !ctx->graph_api ? atoi(nd->pin_text) : -1;
    if (!nd->ready || memcmp(key, nd->key, sizeof key) != 0) {
        nd->ready = 0;
        int symmetric = symmetric_pads(p);
        int pads[3];
        for (int a = 0; a < 3; a++)
            pads[a] = symmetric ? (int)p->pads[a] : 0;
        int rc = setup(ctx, nd, c, xg, yg, pads, err);
        if (rc == 0 && ctx->graph_api) {
            struct gd__conv_geom g;
            graph_geom(c, xg, yg, pads, transpose, x, y, &g);
            int fixed_id;
            enum choice how = choice_of(&ctx->knobs, &fixed_id);
            const char *fixed = pinned ? nd->pin_text
                                       : how == CHOOSE_FIXED ? ctx->knobs.conv_algo + 6 : NULL;
            enum gd__conv_how gh = fixed != NULL               ? GD__CONV_FIXED
                                   : how == CHOOSE_AUTOTUNE      ? GD__CONV_AUTOTUNE
                                   : how == CHOOSE_DETERMINISTIC ? GD__CONV_DETERMINISTIC
                                                                 : GD__CONV_HEURISTIC;
            rc = gd__cuda_graph_prepare(ctx, nd, &g, gh, fixed, pinned, x, c->in[1]->data, y,
                                        err);
        } else if (rc == 0) {
            rc = choose(ctx, nd, transpose, err);
        }
        if (rc != 0)
            return rc;
        memcpy(nd->key, key, sizeof key);
        nd->ready = 1;
    }
    record(c, ctx, nd, transpose);
    return 0;
}

static int
add_bias(struct gd__cuda_ctx *ctx, struct gd__cuda_node *nd, const struct gd_op_call *c,
         struct gd_err *err)
{
    int rc = 0;
    const float one = 1.0f;
    if (c->n_in > 2 && c->in[2] != NULL)
        GD_CUDA_TRY(cudnnAddTensor(ctx->cudnn, &one, nd->b_desc, c->in[2]->data, &one,
                                   nd->y_desc, c->out[0]->data));
done:
    return rc;
}

/* The product itself: y = conv(x, w), or y = conv_transpose(x, w) (backward data). */
static int
product(struct gd__cuda_ctx *ctx, struct gd__cuda_node *nd, const struct gd_op_call *c,
        const void *x, void *y, int transpose, struct gd_err *err)
{
    int rc = 0;
    const float one = 1.0f, zero = 0.0f;
    if (ctx->graph_api)
        return gd__cuda_graph_execute(ctx, nd, x, c->in[1]->data, y, err);
    rc = gd__cuda_workspace(ctx, nd->workspace, err);
    if (rc != 0)
        return rc;
    if (!transpose)
        GD_CUDA_TRY(cudnnConvolutionForward(ctx->cudnn, &one, nd->x_desc, x, nd->w_desc,
                                            c->in[1]->data, nd->conv_desc,
                                            (cudnnConvolutionFwdAlgo_t)nd->algo, ctx->workspace,
                                            nd->workspace, &zero, nd->y_desc, y));
    else
        GD_CUDA_TRY(cudnnConvolutionBackwardData(ctx->cudnn, &one, nd->w_desc, c->in[1]->data,
                                                 nd->x_desc, x, nd->conv_desc,
                                                 (cudnnConvolutionBwdDataAlgo_t)nd->algo,
                                                 ctx->workspace, nd->workspace, &zero,
                                                 nd->y_desc, y));
done:
    return rc;
}

extern "C" int
gd__cuda_conv(struct gd_op_call *c, struct gd_err *err)
{
    int rc = 0;
    struct gd__cuda_ctx *ctx = gd__cuda_ctx_of(c);
    struct gd__cuda_node *nd = gd__cuda_node_of(c);
    const struct gd_params *p = c->params;
    gd__cuda_ncdhw xg = gd__cuda_ncdhw_of(c->in[0]), yg = gd__cuda_ncdhw_of(c->out[0]);
    void *padded = NULL;
    void *x = c->in[0]->data;
    int symmetric = symmetric_pads(p);
    gd__cuda_ncdhw pg = widened(xg, p);
    if (!symmetric) {
        size_t bytes = (size_t)volume(pg) * sizeof(float);
        rc = gd__cuda_scratch(ctx, bytes, &padded, err);
        if (rc != 0)
            goto done;
        GD_CUDA_TRY(cudaMemsetAsync(padded, 0, bytes, ctx->compute));
        int64_t n = volume(xg);
        if (n > 0) {
            volume_copy<<<gd__cuda_blocks(n), GD_CUDA_THREADS, 0, ctx->compute>>>(
                (const float *)x, (float *)padded, xg.n * xg.c, xg, pg, p->pads[0], p->pads[1],
                p->pads[2], 0);
            GD_CUDA_CHECK_LAUNCH();
        }
        x = padded;
    }
    rc = prepare(c, ctx, nd, pg, yg, 0, x, c->out[0]->data, err);
    if (rc == 0)
        rc = product(ctx, nd, c, x, c->out[0]->data, 0, err);
    if (rc == 0)
        rc = add_bias(ctx, nd, c, err);
done:
    gd__cuda_scratch_free(ctx, padded);
    return rc;
}

extern "C" int
gd__cuda_conv_transpose(struct gd_op_call *c, struct gd_err *err)
{
    int rc = 0;
    struct gd__cuda_ctx *ctx = gd__cuda_ctx_of(c);
    struct gd__cuda_node *nd = gd__cuda_node_of(c);
    const struct gd_params *p = c->params;
    gd__cuda_ncdhw xg = gd__cuda_ncdhw_of(c->in[0]), yg = gd__cuda_ncdhw_of(c->out[0]);
    const float one = 1.0f;
    void *full = NULL;
    /* Unequal pads: compute the unpadded result and crop it. output_padding is the
     * output's size, which cuDNN takes as given. */
    int symmetric = symmetric_pads(p);
    gd__cuda_ncdhw fg = widened(yg, p);
    void *y = c->out[0]->data;
    if (!symmetric) {
        rc = gd__cuda_scratch(ctx, (size_t)volume(fg) * sizeof(float), &full, err);
        if (rc != 0)
            goto done;
        y = full;
    }
    rc = prepare(c, ctx, nd, xg, fg, 1, c->in[0]->data, y, err);
    if (rc == 0)
        rc = product(ctx, nd, c, c->in[0]->data, y, 1, err);
    if (rc != 0)
        goto done;
    if (!symmetric) {
        int64_t n = volume(yg);
        if (n > 0) {
            volume_copy<<<gd__cuda_blocks(n), GD_CUDA_THREADS, 0, ctx->compute>>>(
                (const float *)full, (float *)c->out[0]->data, yg.n * yg.c, fg, yg, p->pads[0],
                p->pads[1], p->pads[2], 1);
            GD_CUDA_CHECK_LAUNCH();
        }
        /* the bias descriptor pairs with y_desc, the full shape: add it after the crop on a
         * descriptor of the final shape */
        if (c->n_in > 2 && c->in[2] != NULL) {
            cudnnTensorDescriptor_t final_desc = NULL;
            rc = set_tensor(&final_desc, descriptor_rank(p), yg, err);
            cudnnStatus_t s = CUDNN_STATUS_SUCCESS;
            if (rc == 0)
                s = cudnnAddTensor(ctx->cudnn, &one, nd->b_desc, c->in[2]->data, &one,
                                   final_desc, c->out[0]->data);
            if (final_desc != NULL)
                cudnnDestroyTensorDescriptor(final_desc);
            if (rc != 0)
                goto done;
            GD_CUDA_TRY(s);
        }
    } else {
        rc = add_bias(ctx, nd, c, err);
    }
done:
    gd__cuda_scratch_free(ctx, full);
    return rc;
}
