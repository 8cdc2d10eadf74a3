/*
 * op_pool.c: MaxPool, AveragePool and GlobalAveragePool on the CPU.
 *
 * Windows are walked row by row, column by column. MaxPool propagates NaN (once a NaN is
 * seen it stays), as PyTorch and cuDNN's NaN-propagating mode do. AveragePool sums in that
 * order and divides once: by the window's element count inside the input, or with
 * count_include_pad by its count inside the padded input.
 */
#include "cpu.h"

static void
window(int64_t o, int64_t s, int64_t d, int64_t k, int64_t pad, int64_t in, int64_t *lo,
       int64_t *hi)
{
    /* taps t with 0 <= o*s - pad + t*d < in */
    int64_t start = o * s - pad;
    int64_t t0 = 0, t1 = k;
    while (t0 < k && start + t0 * d < 0)
        t0++;
    while (t1 > t0 && start + (t1 - 1) * d >= in)
        t1--;
    *lo = t0;
    *hi = t1;
}

int
CPU_FN(max_pool)(struct gd_op_call *c, struct gd_err *err)
{
    const struct gd_params *p = c->params;
    struct gd__nchw xg = gd__nchw_of(c->in[0]), yg = gd__nchw_of(c->out[0]);
    const real *x = c->in[0]->data;
    real *y = c->out[0]->data;
    for (int64_t nc = 0; nc < xg.n * xg.c; nc++) {
        const real *xp = x + nc * xg.h * xg.w;
        real *yp = y + nc * yg.h * yg.w;
        for (int64_t oh = 0; oh < yg.h; oh++) {
            int64_t kh0, kh1;
            window(oh, p->strides[0], p->dilations[0], p->kernel[0], p->pads[0], xg.h, &kh0,
                   &kh1);
            for (int64_t ow = 0; ow < yg.w; ow++) {
                int64_t kw0, kw1;
                window(ow, p->strides[1], p->dilations[1], p->kernel[1], p->pads[1], xg.w, &kw0,
                       &kw1);
                real m = -INFINITY;
                for (int64_t ki = kh0; ki < kh1; ki++) {
                    int64_t ih = oh * p->strides[0] - p->pads[0] + ki * p->dilations[0];
                    for (int64_t kj = kw0; kj < kw1; kj++) {
                        real v = xp[ih * xg.w + ow * p->strides[1] - p->pads[1] +
                                    kj * p->dilations[1]];
                        if (v > m || isnan(v))
                            m = v;
                        if (isnan(m))
                            break;
                    }
                }
                yp[oh * yg.w + ow] = m;
            }
        }
    }
    return 0;
}

/* Taps of a window inside [-pad_b, in + pad_e): the count_include_pad divisor. */
static int64_t
padded_count(int64_t o, int64_t s, int64_t k, int64_t pad_b, int64_t pad_e, int64_t in)
{
    int64_t start = o * s - pad_b, end = start + k;
    if (start < -pad_b)
        start = -pad_b;
    if (end > in + pad_e)
        end = in + pad_e;
    return end - start;
}

int
CPU_FN(average_pool)(struct gd_op_call *c, struct gd_err *err)
{
    const struct gd_params *p = c->params;
    struct gd__nchw xg = gd__nchw_of(c->in[0]), yg = gd__nchw_of(c->out[0]);
    const real *x = c->in[0]->data;
    real *y = c->out[0]->data;
    for (int64_t nc = 0; nc < xg.n * xg.c; nc++) {
        const real *xp = x + nc * xg.h * xg.w;
        real *yp = y + nc * yg.h * yg.w;
        for (int64_t oh = 0; oh < yg.h; oh++) {
            int64_t kh0, kh1;
            window(oh, p->strides[0], 1, p->kernel[0], p->pads[0], xg.h, &kh0, &kh1);
            for (int64_t ow = 0; ow < yg.w; ow++) {
                int64_t kw0, kw1;
                window(ow, p->strides[1], 1, p->kernel[1], p->pads[1], xg.w, &kw0, &kw1);
                real sum = 0;
                for (int64_t ki = kh0; ki < kh1; ki++) {
                    const real *row = xp + (oh * p->strides[0] - p->pads[0] + ki) * xg.w;
                    for (int64_t kj = kw0; kj < kw1; kj++)
                        sum += row[ow * p->strides[1] - p->pads[1] + kj];
                }
                int64_t count = (kh1 - kh0) * (kw1 - kw0);
                if (p->count_include_pad)
                    count = padded_count(oh, p->strides[0], p->kernel[0], p->pads[0],
                                         p->pads[2], xg.h) *
                            padded_count(ow, p->strides[1], p->kernel[1], p->pads[1],
                                         p->pads[3], xg.w);
                yp[oh * yg.w + ow] = sum / (real)count;
            }
        }
    }
    return 0;
}

int
CPU_FN(global_average_pool)(struct gd_op_call *c, struct gd_err *err)
{
    const struct gd_tensor *xt = c->in[0];
    int64_t planes = xt->shape[0] * xt->shape[1];
    int64_t len = planes > 0 ? gd_tensor_numel(xt) / planes : 0;
    const real *x = xt->data;
    real *y = c->out[0]->data;
    for (int64_t i = 0; i < planes; i++) {
        real sum = 0;
        for (int64_t k = 0; k < len; k++)
            sum += x[i * len + k];
        y[i] = sum / (real)len;
    }
    return 0;
}
