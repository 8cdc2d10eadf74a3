/*
 * repro_conv.cu: Conv and ConvTranspose under --repro bitwise, 1 to 3 spatial axes, groups,
 * strides, dilations, pads (unequal ends and negative ones included) and output_padding: per
 * group the product C[m, j] = sum over k of W[m, k] B[k, j] of repro.cuh, k = (input channel
 * of the group, kernel depth, row, column) ascending and j an output position of any image,
 * the bias added last: engine/cpu/op_conv.c's order. B is gathered from the input as the
 * product loads it (no im2col), through a table of the K taps made on the device; a tap in
 * the padding is a 0, or skipped when a weight is not finite (repro.cuh), as on the CPU.
 * ConvTranspose's weight (C, M/group, k...) is first rearranged into (group, M/group, K), as
 * the CPU does; its output (z, r, q) takes input (tz/sd, th/sh, tw/sw) with tz = z + pd -
 * kz dd (and so on) where the divisions are exact and land inside the input.
 */
#include <stdio.h>

#include "repro.cuh"
#include "repro.h"

/* One term k = (ci, kz, ki, kj): its input offset from the window's corner and the tap's
 * offsets along depth, rows and columns. */
struct tap {
    long long off;
    int dz, dh, dw, pad;
};

struct geom {
    int64_t n, c, xd, xh, xw;  /* input */
    int64_t m, yd, yh, yw;     /* output channels and volume */
    int64_t groups, cg, mg, k; /* per group: input and output channels, terms */
    int64_t kd, kh, kw, sd, sh, sw, dd, dh, dw, pd, ph, pw;
};

static __global__ void
make_taps(geom g, int transposed, tap *t)
{
    for (int64_t k = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; k < g.k;
         k += (int64_t)gridDim.x * blockDim.x) {
        int64_t kvol = g.kd * g.kh * g.kw, ci = k / kvol, r = k % kvol;
        int64_t kz = r / (g.kh * g.kw), ki = r / g.kw % g.kh, kj = r % g.kw;
        tap v;
        v.dz = (int)(kz * g.dd);
        v.dh = (int)(ki * g.dh);
        v.dw = (int)(kj * g.dw);
        v.off =
            transposed ? ci * g.xd * g.xh * g.xw : ((ci * g.xd + v.dz) * g.xh + v.dh) * g.xw + v.dw;
        v.pad = 0;
        t[k] = v;
    }
}

/* flag = 1 when a weight is infinite or NaN (every thread that finds one writes 1) */
static __global__ void
scan_finite(const float *w, int64_t n, int *flag)
{
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x)
        if (!isfinite(w[i]))
            *flag = 1;
}

/* ConvTranspose's A: wt[grp][ml][ci * kvol + t] = w[((grp * cg + ci) * mg + ml) * kvol + t] */
static __global__ void
rearrange(const float *w, float *wt, geom g)
{
    int64_t kvol = g.kd * g.kh * g.kw, total = g.groups * g.mg * g.k;
    for (int64_t e = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; e < total;
         e += (int64_t)gridDim.x * blockDim.x) {
        int64_t k = e % g.k, ml = e / g.k % g.mg, grp = e / (g.k * g.mg);
        int64_t ci = k / kvol, t = k % kvol;
        wt[e] = w[((grp * g.cg + ci) * g.mg + ml) * kvol + t];
    }
}

/* A[i, k] of group grp: the weights (Conv) or their rearranged copy, (M/group, K) each */
struct w_view {
    const float *base;
    int64_t k;
    __device__ float get(int64_t i, int64_t kk) const
    {
        return base[i * k + kk];
    }
};

struct load_w {
    const float *w;
    int64_t k;
    int64_t mg;
    __device__ w_view at(int64_t grp) const
    {
        return w_view{w + grp * mg * k, k};
    }
};

/* The value a tap reads, as the product takes it: input NaNs as the quiet NaN in careful
 * mode, so that no input is the skip sentinel. */
static __device__ __forceinline__ float
tap_value(float v, int careful)
{
    return careful && isnan(v) ? __uint_as_float(0x7fc00000u) : v;
}

/* Conv's column j = (image, oz, oh, ow): the window's corner at (oz sd - pd, oh sh - ph,
 * ow sw - pw) of the group's first channel, and the input's extent. */
struct conv_col {
    const float *corner;
    const tap *taps;
    int iz0, ih0, iw0, xd, xh, xw;
    __device__ float get(int64_t k, int careful) const
    {
        tap t = taps[k];
        int iz = iz0 + t.dz, ih = ih0 + t.dh, iw = iw0 + t.dw;
        if (iz < 0 || iz >= xd || ih < 0 || ih >= xh || iw < 0 || iw >= xw)
            return careful ? __uint_as_float(GD_REPRO_SKIP) : 0.0f;
        return tap_value(corner[t.off], careful);
    }
};

struct load_conv {
    const float *x;
    const tap *taps;
    geom g;
    __device__ conv_col col(int64_t grp, int64_t j) const
    {
        int64_t vol = g.yd * g.yh * g.yw, n = j / vol, p = j % vol;
        int64_t oz = p / (g.yh * g.yw), oh = p / g.yw % g.yh, ow = p % g.yw;
        int iz0 = (int)(oz * g.sd - g.pd), ih0 = (int)(oh * g.sh - g.ph),
            iw0 = (int)(ow * g.sw - g.pw);
        long long corner = (((n * g.c + grp * g.cg) * g.xd + iz0) * g.xh + ih0) * g.xw + iw0;
        return conv_col{x + corner, taps, iz0, ih0, iw0, (int)g.xd, (int)g.xh, (int)g.xw};
    }
};

/* ConvTranspose's column j = (image, z, r, q) of the output, offset by the pads. */
struct convt_col {
    const float *base;
    const tap *taps;
    int z, r, q, sd, sh, sw, xd, xh, xw;
    __device__ float get(int64_t k, int careful) const
    {
        tap t = taps[k];
        int tz = z - t.dz, th = r - t.dh, tw = q - t.dw;
        int ok = tz >= 0 && th >= 0 && tw >= 0 && tz % sd == 0 && th % sh == 0 && tw % sw == 0;
        if (ok) {
            tz /= sd;
            th /= sh;
            tw /= sw;
            ok = tz < xd && th < xh && tw < xw;
        }
        if (!ok)
            return careful ? __uint_as_float(GD_REPRO_SKIP) : 0.0f;
        return tap_value(base[t.off + ((long long)tz * xh + th) * xw + tw], careful);
    }
};

struct load_convt {
    const float *x;
    const tap *taps;
    geom g;
    __device__ convt_col col(int64_t grp, int64_t j) const
    {
        int64_t vol = g.yd * g.yh * g.yw, n = j / vol, p = j % vol;
        return convt_col{x + (n * g.c + grp * g.cg) * g.xd * g.xh * g.xw,
                         taps,
                         (int)(p / (g.yh * g.yw) + g.pd),
                         (int)(p / g.yw % g.yh + g.ph),
                         (int)(p % g.yw + g.pw),
                         (int)g.sd,
                         (int)g.sh,
                         (int)g.sw,
                         (int)g.xd,
                         (int)g.xh,
                         (int)g.xw};
    }
};

/* y[(n M + grp mg + i) vol + p] = acc (+ bias) for j = n vol + p */
struct store_conv {
    float *y;
    const float *bias;
    int64_t m, mg, vol;
    __device__ void put(int64_t grp, int64_t i, int64_t j, float acc) const
    {
        int64_t ch = grp * mg + i, n = j / vol, p = j % vol;
        y[(n * m + ch) * vol + p] = bias != NULL ? __fadd_rn(acc, bias[ch]) : acc;
    }
};

static int
conv_run(struct gd_op_call *c, int transposed, struct gd_err *err)
{
    struct gd__cuda_ctx *ctx = gd__cuda_ctx_of(c);
    const struct gd_params *p = c->params;
    const struct gd_tensor *xt = c->in[0], *wt = c->in[1], *yt = c->out[0];
    gd__cuda_ncdhw xg = gd__cuda_ncdhw_of(xt), yg = gd__cuda_ncdhw_of(yt);
    geom g = {xg.n, xg.c, xg.d, xg.h, xg.w, yg.c, yg.d, yg.h, yg.w, p->group};
    g.cg = g.c / g.groups;
    g.mg = g.m / g.groups;
    g.kd = p->kernel[0];
    g.kh = p->kernel[1];
    g.kw = p->kernel[2];
    g.sd = p->strides[0];
    g.sh = p->strides[1];
    g.sw = p->strides[2];
    g.dd = p->dilations[0];
    g.dh = p->dilations[1];
    g.dw = p->dilations[2];
    g.pd = p->pads[0];
    g.ph = p->pads[1];
    g.pw = p->pads[2];
    g.k = g.cg * g.kd * g.kh * g.kw;
    int64_t cols = g.n * g.yd * g.yh * g.yw, wn = gd_tensor_numel(wt);
    tap *taps = NULL;
    int *flag = NULL;
    float *wr = NULL;
    int rc = 0;
    if (gd_tensor_numel(yt) == 0)
        return 0;
    enum gd__repro_tile_kind kind = gd__repro_pick(ctx, g.mg, cols, g.groups);
    if ((rc = gd__cuda_scratch(ctx, (size_t)(g.k > 0 ? g.k : 1) * sizeof *taps, (void **)&taps,
                               err)) != 0 ||
        (rc = gd__cuda_scratch(ctx, sizeof *flag, (void **)&flag, err)) != 0)
        goto done;
    GD_CUDA_TRY(cudaMemsetAsync(flag, 0, sizeof *flag, ctx->compute));
    if (g.k > 0) {
        make_taps<<<gd__repro_elt_blocks(ctx, g.k), GD_CUDA_THREADS, 0, ctx->compute>>>(
            g, transposed, taps);
        GD_CUDA_CHECK_LAUNCH();
    }
    if (wn > 0) {
        scan_finite<<<gd__repro_elt_blocks(ctx, wn), GD_CUDA_THREADS, 0, ctx->compute>>>(
            (const float *)wt->data, wn, flag);
        GD_CUDA_CHECK_LAUNCH();
    }
    {
        load_w la = {(const float *)wt->data, g.k, g.mg};
        store_conv st = {(float *)yt->data,
                         c->n_in > 2 && c->in[2] != NULL ? (const float *)c->in[2]->data : NULL,
                         g.m, g.mg, g.yd * g.yh * g.yw};
        if (transposed) {
            if ((rc = gd__cuda_scratch(ctx, (size_t)(wn > 0 ? wn : 1) * sizeof *wr, (void **)&wr,
                                       err)) != 0)
                goto done;
            if (wn > 0) {
                rearrange<<<gd__repro_elt_blocks(ctx, wn), GD_CUDA_THREADS, 0, ctx->compute>>>(
                    (const float *)wt->data, wr, g);
                GD_CUDA_CHECK_LAUNCH();
            }
            la.w = wr;
            load_convt lb = {(const float *)xt->data, taps, g};
            gd__repro_product<true, true>(ctx, kind, g.mg, cols, g.k, g.groups, flag, la, lb, st);
        } else {
            load_conv lb = {(const float *)xt->data, taps, g};
            gd__repro_product<true, true>(ctx, kind, g.mg, cols, g.k, g.groups, flag, la, lb, st);
        }
        GD_CUDA_CHECK_LAUNCH();
    }
    snprintf(c->algo, sizeof c->algo, "gpudiff bitwise %s %s",
             transposed ? "conv_transpose" : "conv", gd__repro_tile_name(kind));
    snprintf(c->math, sizeof c->math, "fp32");
done:
    gd__cuda_scratch_free(ctx, taps);
    gd__cuda_scratch_free(ctx, flag);
    gd__cuda_scratch_free(ctx, wr);
    return rc;
}

extern "C" int
gd__cuda_repro_conv(struct gd_op_call *c, struct gd_err *err)
{
    return conv_run(c, 0, err);
}

extern "C" int
gd__cuda_repro_conv_transpose(struct gd_op_call *c, struct gd_err *err)
{
    return conv_run(c, 1, err);
}
