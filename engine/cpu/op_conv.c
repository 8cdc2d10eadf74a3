/*
 * op_conv.c: Conv and ConvTranspose on the CPU.
 *
 * Summation order (both ops): each output element starts at +0, adds w*x for input channel
 * of its group ascending, then kernel depth (3-D only), then kernel row (2-D and 3-D), then
 * kernel column, each ascending (taps that fall in the padding are skipped), and the bias is
 * added last. 1-D and 2-D ops are computed as 3-D ones of depth (and height) 1, which adds
 * no term and so does not change that order.
 *
 * Two implementations keep that order. The tiled one (conv_tiled) is a matrix product per
 * group, C[m, j] = sum over k of W[m, k] * B[k, j], with k = (input channel, kernel depth,
 * kernel row, kernel column) in that order and j an output position (of any image in the
 * batch): the
 * product (gemm_kernel.c) sums each element over k ascending from +0, and B is gathered
 * block by block from the input (im2col without the whole matrix). A tap in the padding
 * gathers a 0, which contributes w * 0 = +-0: adding +-0 leaves a sum unchanged unless the
 * sum is -0, and a sum that starts at +0 is never -0 (x + y rounds to -0 only when both
 * are -0). So the zeros skip those taps exactly, provided every weight is finite: with an
 * infinite or NaN weight, w * 0 would be NaN, and those convolutions (and the ones the
 * tiled product does not pay for: one output channel per group) take the direct loops.
 *
 * The direct loops (conv_direct) run over a whole output volume for each (channel, tap), so
 * the innermost loop is vectorizable; every element still sees its terms in the order
 * above. Output planes are the thread pool's tasks. Neither implementation's result
 * depends on the plane size, the batch size, the thread count or the machine.
 */
#include <stdlib.h>
#include <string.h>

#include "cpu.h"

static void
add_bias(real *plane, int64_t len, const real *bias, int64_t m)
{
    if (bias == NULL)
        return;
    real b = bias[m];
    for (int64_t i = 0; i < len; i++)
        plane[i] += b;
}

/* What both implementations read: the op's inputs (emulated where asked) and geometry. */
struct conv_geom {
    const real *x, *w, *bias;
    real *y;
    struct gd__ncdhw xg, yg;
    int64_t groups, cg, mg;
    int64_t kd, kh, kw, sd, sh, sw, dd, dh, dw, pd, ph, pw;
    int transposed;
};

/* ---- direct loops ---- */

/* Output volume (n, m) of Conv. */
static void
conv_plane(const struct conv_geom *g, int64_t n, int64_t m)
{
    struct gd__ncdhw xg = g->xg, yg = g->yg;
    int64_t plane = yg.d * yg.h * yg.w, grp = m / g->mg;
    real *o = g->y + (n * yg.c + m) * plane;
    memset(o, 0, (size_t)plane * sizeof *o);
    for (int64_t ci = 0; ci < g->cg; ci++) {
        const real *xp = g->x + (n * xg.c + grp * g->cg + ci) * xg.d * xg.h * xg.w;
        const real *wp = g->w + (m * g->cg + ci) * g->kd * g->kh * g->kw;
        for (int64_t kz = 0; kz < g->kd; kz++) {
            int64_t od_lo, od_hi;
            gd__tap_range(yg.d, g->sd, kz * g->dd - g->pd, xg.d, &od_lo, &od_hi);
            for (int64_t ki = 0; ki < g->kh; ki++) {
                int64_t oh_lo, oh_hi;
                gd__tap_range(yg.h, g->sh, ki * g->dh - g->ph, xg.h, &oh_lo, &oh_hi);
                for (int64_t kj = 0; kj < g->kw; kj++) {
                    real wv = wp[(kz * g->kh + ki) * g->kw + kj];
                    int64_t off_w = kj * g->dw - g->pw;
                    int64_t ow_lo, ow_hi;
                    gd__tap_range(yg.w, g->sw, off_w, xg.w, &ow_lo, &ow_hi);
                    for (int64_t od = od_lo; od < od_hi; od++) {
                        const real *xs = xp + (od * g->sd + kz * g->dd - g->pd) * xg.h * xg.w;
                        real *os = o + od * yg.h * yg.w;
                        for (int64_t oh = oh_lo; oh < oh_hi; oh++) {
                            const real *xr = xs + (oh * g->sh + ki * g->dh - g->ph) * xg.w;
                            real *orow = os + oh * yg.w;
                            if (g->sw == 1) {
                                for (int64_t ow = ow_lo; ow < ow_hi; ow++)
                                    orow[ow] += wv * xr[ow + off_w];
                            } else {
                                for (int64_t ow = ow_lo; ow < ow_hi; ow++)
                                    orow[ow] += wv * xr[ow * g->sw + off_w];
                            }
                        }
                    }
                }
            }
        }
    }
    add_bias(o, plane, g->bias, m);
}

/* Output volume (n, m) of ConvTranspose. */
static void
conv_transpose_plane(const struct conv_geom *g, int64_t n, int64_t m)
{
    struct gd__ncdhw xg = g->xg, yg = g->yg;
    int64_t plane = yg.d * yg.h * yg.w, grp = m / g->mg, ml = m % g->mg;
    real *o = g->y + (n * yg.c + m) * plane;
    memset(o, 0, (size_t)plane * sizeof *o);
    for (int64_t ci = 0; ci < g->cg; ci++) {
        const real *xp = g->x + (n * xg.c + grp * g->cg + ci) * xg.d * xg.h * xg.w;
        /* weight (C, M/group, k...) */
        const real *wp = g->w + ((grp * g->cg + ci) * g->mg + ml) * g->kd * g->kh * g->kw;
        for (int64_t kz = 0; kz < g->kd; kz++) {
            int64_t off_d = kz * g->dd - g->pd;
            int64_t id_lo, id_hi;
            gd__tap_range(xg.d, g->sd, off_d, yg.d, &id_lo, &id_hi);
            for (int64_t ki = 0; ki < g->kh; ki++) {
                int64_t off_h = ki * g->dh - g->ph;
                int64_t ih_lo, ih_hi;
                gd__tap_range(xg.h, g->sh, off_h, yg.h, &ih_lo, &ih_hi);
                for (int64_t kj = 0; kj < g->kw; kj++) {
                    real wv = wp[(kz * g->kh + ki) * g->kw + kj];
                    int64_t off_w = kj * g->dw - g->pw;
                    int64_t iw_lo, iw_hi;
                    gd__tap_range(xg.w, g->sw, off_w, yg.w, &iw_lo, &iw_hi);
                    for (int64_t id = id_lo; id < id_hi; id++) {
                        const real *xs = xp + id * xg.h * xg.w;
                        real *os = o + (id * g->sd + off_d) * yg.h * yg.w;
                        for (int64_t ih = ih_lo; ih < ih_hi; ih++) {
                            const real *xr = xs + ih * xg.w;
                            real *orow = os + (ih * g->sh + off_h) * yg.w;
                            if (g->sw == 1) {
                                for (int64_t iw = iw_lo; iw < iw_hi; iw++)
                                    orow[iw + off_w] += wv * xr[iw];
                            } else {
                                for (int64_t iw = iw_lo; iw < iw_hi; iw++)
                                    orow[iw * g->sw + off_w] += wv * xr[iw];
                            }
                        }
                    }
                }
            }
        }
    }
    add_bias(o, plane, g->bias, m);
}

/* Task n * M + m: one output volume, whole. */
static void
direct_task(void *arg, int64_t task, int worker)
{
    const struct conv_geom *g = arg;
    (void)worker;
    if (g->transposed)
        conv_transpose_plane(g, task / g->yg.c, task % g->yg.c);
    else
        conv_plane(g, task / g->yg.c, task % g->yg.c);
}

/* ---- the tiled product ---- */

/*
 * One group's product: B's columns j are output positions
 * n * (OD * OH * OW) + od * (OH * OW) + oh * OW + ow.
 */
struct conv_group {
    const struct conv_geom *g;
    int64_t grp;
    /* Conv: the output columns that tap column kj reads inside the input, [lo, hi) */
    const int64_t *col_lo, *col_hi;
};

/*
 * The gathering helpers are always inlined: pack_conv is compiled once per instruction set
 * (GD_CPU_CLONES), and a call out of a clone would run the baseline code.
 */
static inline __attribute__((always_inline)) void
zero(real *d, int64_t n)
{
    for (int64_t i = 0; i < n; i++)
        d[i] = 0;
}

/*
 * A run of B's columns that lie in one output row (image n, depth z, row r): output
 * columns [q0, q0 + len), at dst in each row of the packed block.
 */
struct segment {
    const real *xn; /* image n's first channel of the group */
    int64_t z, r, q0, len, dst;
};

/*
 * Conv: row k = (ci, kz, ki, kj) of B over a segment is input row r * sh - ph + ki * dh of
 * depth z * sd - pd + kz * dd of channel ci, read at columns q * sw + kj * dw - pw; 0 where
 * that falls in the padding.
 */
static inline __attribute__((always_inline)) void
gather_conv(const struct conv_group *cg, const struct segment *sg, int64_t ci, int64_t kz,
            int64_t ki, int64_t kj, real *d)
{
    const struct conv_geom *g = cg->g;
    int64_t ih = sg->r * g->sh - g->ph + ki * g->dh, q0 = sg->q0, q1 = q0 + sg->len;
    int64_t iz = sg->z * g->sd - g->pd + kz * g->dd;
    if (ih < 0 || ih >= g->xg.h || iz < 0 || iz >= g->xg.d) {
        zero(d, sg->len);
        return;
    }
    const real *row = sg->xn + ((ci * g->xg.d + iz) * g->xg.h + ih) * g->xg.w;
    int64_t off = kj * g->dw - g->pw;
    /* [a, b): the segment's columns that read the input, clamped into [q0, q1] */
    int64_t a = cg->col_lo[kj] > q0 ? cg->col_lo[kj] : q0;
    int64_t b = cg->col_hi[kj] < q1 ? cg->col_hi[kj] : q1;
    if (a > q1)
        a = q1;
    if (b < a)
        b = a;
    zero(d, a - q0);
    /* constant strides, so the compiler can vectorize the reads */
    if (g->sw == 1)
        for (int64_t q = a; q < b; q++)
            d[q - q0] = row[q + off];
    else if (g->sw == 2)
        for (int64_t q = a; q < b; q++)
            d[q - q0] = row[2 * q + off];
    else
        for (int64_t q = a; q < b; q++)
            d[q - q0] = row[q * g->sw + off];
    zero(d + (b - q0), q1 - b);
}

/*
 * ConvTranspose: output (z, r, q) takes input (tz / sd, th / sh, tw / sw), tz = z + pd -
 * kz * dd, th = r + ph - ki * dh and tw = q + pw - kj * dw, where all three divide exactly
 * and land inside the input; else 0. The columns that read the input are every sw-th from
 * the first, found without a division per column.
 */
static inline __attribute__((always_inline)) void
gather_conv_transpose(const struct conv_group *cg, const struct segment *sg, int64_t ci,
                      int64_t kz, int64_t ki, int64_t kj, real *d)
{
    const struct conv_geom *g = cg->g;
    int64_t th = sg->r + g->ph - ki * g->dh, q0 = sg->q0, q1 = q0 + sg->len;
    int64_t tz = sg->z + g->pd - kz * g->dd;
    if (th < 0 || th % g->sh != 0 || th / g->sh >= g->xg.h || tz < 0 || tz % g->sd != 0 ||
        tz / g->sd >= g->xg.d) {
        zero(d, sg->len);
        return;
    }
    const real *row = sg->xn + ((ci * g->xg.d + tz / g->sd) * g->xg.h + th / g->sh) * g->xg.w;
    int64_t off = g->pw - kj * g->dw;
    /* columns q with 0 <= q + off < sw * W, the first of them with (q + off) % sw == 0 */
    int64_t end = g->sw * g->xg.w - off;
    int64_t a = -off > q0 ? -off : q0, b = end < q1 ? end : q1;
    if (a > q1)
        a = q1;
    if (b < a)
        b = a;
    if (g->sw == 1) {
        zero(d, a - q0);
        for (int64_t q = a; q < b; q++)
            d[q - q0] = row[q + off];
        zero(d + (b - q0), q1 - b);
        return;
    }
    zero(d, sg->len);
    int64_t first = a + (g->sw - (a + off) % g->sw) % g->sw;
    for (int64_t q = first, iw = (first + off) / g->sw; q < b; q += g->sw, iw++)
        d[q - q0] = row[iw];
}

/*
 * gd__cpu_pack_b_fn: the block's columns are cut into output-row segments once, then each
 * row k of B is gathered segment by segment.
 */
GD_CPU_CLONES static void
pack_conv(const void *user, int64_t k0, int64_t kc, int64_t j0, int64_t nc, int64_t ncp,
          int64_t ldb, real *dst)
{
    const struct conv_group *cg = user;
    const struct conv_geom *g = cg->g;
    int64_t area = g->yg.h * g->yg.w, vol = g->yg.d * area;
    int64_t khw = g->kh * g->kw, kvol = g->kd * khw;
    /* a segment ends at each output row: at most nc of them */
    struct segment segs[nc];
    int64_t n_segs = 0;
    for (int64_t j = j0; j < j0 + nc;) {
        struct segment *sg = &segs[n_segs++];
        int64_t n = j / vol, rem = j % vol;
        sg->xn = g->x + (n * g->xg.c + cg->grp * g->cg) * g->xg.d * g->xg.h * g->xg.w;
        sg->z = rem / area;
        sg->r = rem % area / g->yg.w;
        sg->q0 = j % g->yg.w;
        sg->len = g->yg.w - sg->q0 < j0 + nc - j ? g->yg.w - sg->q0 : j0 + nc - j;
        sg->dst = j - j0;
        j += sg->len;
    }
    int64_t ci = k0 / kvol, kz = k0 / khw % g->kd, ki = k0 / g->kw % g->kh, kj = k0 % g->kw;
    for (int64_t kk = 0; kk < kc; kk++) {
        real *drow = dst + kk * ldb;
        for (int64_t i = 0; i < n_segs; i++) {
            if (g->transposed)
                gather_conv_transpose(cg, &segs[i], ci, kz, ki, kj, drow + segs[i].dst);
            else
                gather_conv(cg, &segs[i], ci, kz, ki, kj, drow + segs[i].dst);
        }
        zero(drow + nc, ncp - nc);
        if (++kj == g->kw) {
            kj = 0;
            if (++ki == g->kh) {
                ki = 0;
                if (++kz == g->kd) {
                    kz = 0;
                    ci++;
                }
            }
        }
    }
}

/* gd__cpu_store_fn: the finished sums into the output volumes, the bias added last. */
static void
store_conv(const void *user, int64_t i0, int64_t mc, int64_t j0, int64_t nc, const real *c,
           int64_t ldc)
{
    const struct conv_group *cg = user;
    const struct conv_geom *g = cg->g;
    int64_t plane = g->yg.d * g->yg.h * g->yg.w;
    for (int64_t j = j0; j < j0 + nc;) {
        int64_t n = j / plane, p = j % plane;
        int64_t len = plane - p < j0 + nc - j ? plane - p : j0 + nc - j;
        for (int64_t i = 0; i < mc; i++) {
            int64_t m = cg->grp * g->mg + i0 + i;
            real *dst = g->y + (n * g->yg.c + m) * plane + p;
            const real *src = c + i * ldc + (j - j0);
            if (g->bias != NULL) {
                real b = g->bias[m];
                for (int64_t t = 0; t < len; t++)
                    dst[t] = src[t] + b;
            } else {
                memcpy(dst, src, (size_t)len * sizeof *dst);
            }
        }
        j += len;
    }
}

static int
conv_tiled(struct gd__cpu_ctx *ctx, const struct conv_geom *g, struct gd_err *err)
{
    int64_t kvol = g->kd * g->kh * g->kw, k = g->cg * kvol;
    int64_t *cols = malloc((size_t)(2 * g->kw) * sizeof *cols);
    /* ConvTranspose's weight is (C, M/group, k...): its A is a rearranged copy. */
    real *wt = g->transposed ? malloc((size_t)(g->mg * k > 0 ? g->mg * k : 1) * sizeof *wt)
                             : NULL;
    int rc = 0;
    if (cols == NULL || (g->transposed && wt == NULL)) {
        rc = gd_err_set(err, GD_ENOMEM, "out of memory for a convolution");
        goto done;
    }
    for (int64_t kj = 0; kj < g->kw; kj++)
        gd__tap_range(g->yg.w, g->sw, kj * g->dw - g->pw, g->xg.w, &cols[kj], &cols[g->kw + kj]);
    for (int64_t grp = 0; grp < g->groups && rc == 0; grp++) {
        struct conv_group cg = {.g = g, .grp = grp, .col_lo = cols, .col_hi = cols + g->kw};
        const real *a = g->w + grp * g->mg * k;
        if (g->transposed) {
            for (int64_t ml = 0; ml < g->mg; ml++)
                for (int64_t ci = 0; ci < g->cg; ci++)
                    memcpy(wt + ml * k + ci * kvol,
                           g->w + ((grp * g->cg + ci) * g->mg + ml) * kvol,
                           (size_t)kvol * sizeof *wt);
            a = wt;
        }
        struct gd__cpu_mm mm = {.m = g->mg, .n = g->yg.n * g->yg.d * g->yg.h * g->yg.w, .k = k,
                                .a = a, .a_rs = k, .a_cs = 1, .pack_b = pack_conv, .b_user = &cg,
                                .store = store_conv, .store_user = &cg};
        rc = CPU_FN(mm_run)(ctx, &mm, err);
    }
done:
    free(cols);
    free(wt);
    return rc;
}

static int
all_finite(const real *v, int64_t n)
{
    int finite = 1;
    for (int64_t i = 0; i < n; i++)
        finite &= isfinite(v[i]) != 0;
    return finite;
}

/*
 * The tiled product computes MR output channels of a group at a time: with a single one
 * it does several times the work, and the direct loops are faster.
 */
#define TILED_MIN_CHANNELS 2

static int
conv_run(struct gd_op_call *c, int transposed, struct gd_err *err)
{
    const struct gd_params *p = c->params;
    struct gd__cpu_ctx *ctx = c->ctx;
    const real *x, *w;
    real *x_copy, *w_copy = NULL;
    int rc = CPU_FN(emulated_input)(c, GD_CLASS_CONV, c->in[0], &x, &x_copy, err);
    if (rc == 0)
        rc = CPU_FN(emulated_input)(c, GD_CLASS_CONV, c->in[1], &w, &w_copy, err);
    if (rc != 0)
        goto done;
    struct conv_geom g = {
        .x = x, .w = w, .bias = c->n_in > 2 && c->in[2] ? c->in[2]->data : NULL,
        .y = c->out[0]->data, .xg = gd__ncdhw_of(c->in[0]), .yg = gd__ncdhw_of(c->out[0]),
        .groups = p->group, .kd = p->kernel[0], .kh = p->kernel[1], .kw = p->kernel[2],
        .sd = p->strides[0], .sh = p->strides[1], .sw = p->strides[2], .dd = p->dilations[0],
        .dh = p->dilations[1], .dw = p->dilations[2], .pd = p->pads[0], .ph = p->pads[1],
        .pw = p->pads[2], .transposed = transposed};
    g.cg = g.xg.c / g.groups;
    g.mg = g.yg.c / g.groups;
    if (ctx->simd != GD_CPU_SIMD_OFF && g.mg >= TILED_MIN_CHANNELS &&
        all_finite(w, gd_tensor_numel(c->in[1])))
        rc = conv_tiled(ctx, &g, err);
    else
        gd__cpu_parallel(ctx, g.yg.n * g.yg.c, direct_task, &g);
done:
    free(x_copy);
    free(w_copy);
    return rc;
}

int
CPU_FN(conv)(struct gd_op_call *c, struct gd_err *err)
{
    return conv_run(c, 0, err);
}

int
CPU_FN(conv_transpose)(struct gd_op_call *c, struct gd_err *err)
{
    return conv_run(c, 1, err);
}
