/*
 * op_conv.c: Conv and ConvTranspose on the CPU.
 *
 * Summation order (both ops): each output element starts at +0, adds w*x for input channel
 * of its group ascending, then kernel row ascending, then kernel column ascending (taps
 * that fall in the padding are skipped), and the bias is added last. The loops run over a
 * whole output plane for each (channel, tap) so the innermost loop is vectorizable, but
 * every element still sees its terms in that order, so the result does not depend on the
 * plane size, the batch size or the machine.
 */
#include <stdlib.h>
#include <string.h>

#include "cpu.h"

/* Floor division for a possibly negative numerator and a positive divisor. */
static int64_t
floor_div(int64_t a, int64_t b)
{
    return a >= 0 ? a / b : -((-a + b - 1) / b);
}

/* Indices i in [0, n) with 0 <= i*s + off < lim: [*lo, *hi). */
static void
tap_range(int64_t n, int64_t s, int64_t off, int64_t lim, int64_t *lo, int64_t *hi)
{
    int64_t a = off >= 0 ? 0 : floor_div(-off + s - 1, s);
    int64_t b = floor_div(lim - 1 - off, s) + 1;
    if (b > n)
        b = n;
    *lo = a;
    *hi = b > a ? b : a;
}

static void
add_bias(real *plane, int64_t len, const real *bias, int64_t m)
{
    if (bias == NULL)
        return;
    real b = bias[m];
    for (int64_t i = 0; i < len; i++)
        plane[i] += b;
}

int
CPU_FN(conv)(struct gd_op_call *c, struct gd_err *err)
{
    const struct gd_params *p = c->params;
    struct gd__nchw xg = gd__nchw_of(c->in[0]), yg = gd__nchw_of(c->out[0]);
    const real *bias = c->n_in > 2 && c->in[2] ? c->in[2]->data : NULL;
    real *y = c->out[0]->data;
    const real *x, *w;
    real *x_copy, *w_copy = NULL;
    int rc = CPU_FN(emulated_input)(c, GD_CLASS_CONV, c->in[0], &x, &x_copy, err);
    if (rc == 0)
        rc = CPU_FN(emulated_input)(c, GD_CLASS_CONV, c->in[1], &w, &w_copy, err);
    if (rc != 0)
        goto done;
    int64_t groups = p->group, cg = xg.c / groups, mg = yg.c / groups;
    int64_t kh = p->kernel[0], kw = p->kernel[1];
    int64_t sh = p->strides[0], sw = p->strides[1], dh = p->dilations[0], dw = p->dilations[1];
    int64_t plane = yg.h * yg.w;
    for (int64_t n = 0; n < xg.n; n++) {
        for (int64_t m = 0; m < yg.c; m++) {
            int64_t g = m / mg;
            real *o = y + (n * yg.c + m) * plane;
            memset(o, 0, (size_t)plane * sizeof *o);
            for (int64_t ci = 0; ci < cg; ci++) {
                const real *xp = x + ((n * xg.c + g * cg + ci) * xg.h) * xg.w;
                const real *wp = w + (m * cg + ci) * kh * kw;
                for (int64_t ki = 0; ki < kh; ki++) {
                    int64_t oh_lo, oh_hi;
                    tap_range(yg.h, sh, ki * dh - p->pads[0], xg.h, &oh_lo, &oh_hi);
                    for (int64_t kj = 0; kj < kw; kj++) {
                        real wv = wp[ki * kw + kj];
                        int64_t off_w = kj * dw - p->pads[1];
                        int64_t ow_lo, ow_hi;
                        tap_range(yg.w, sw, off_w, xg.w, &ow_lo, &ow_hi);
                        for (int64_t oh = oh_lo; oh < oh_hi; oh++) {
                            const real *xr = xp + (oh * sh + ki * dh - p->pads[0]) * xg.w;
                            real *orow = o + oh * yg.w;
                            if (sw == 1) {
                                for (int64_t ow = ow_lo; ow < ow_hi; ow++)
                                    orow[ow] += wv * xr[ow + off_w];
                            } else {
                                for (int64_t ow = ow_lo; ow < ow_hi; ow++)
                                    orow[ow] += wv * xr[ow * sw + off_w];
                            }
                        }
                    }
                }
            }
            add_bias(o, plane, bias, m);
        }
    }
done:
    free(x_copy);
    free(w_copy);
    return rc;
}

int
CPU_FN(conv_transpose)(struct gd_op_call *c, struct gd_err *err)
{
    const struct gd_params *p = c->params;
    struct gd__nchw xg = gd__nchw_of(c->in[0]), yg = gd__nchw_of(c->out[0]);
    const real *bias = c->n_in > 2 && c->in[2] ? c->in[2]->data : NULL;
    real *y = c->out[0]->data;
    const real *x, *w;
    real *x_copy, *w_copy = NULL;
    int rc = CPU_FN(emulated_input)(c, GD_CLASS_CONV, c->in[0], &x, &x_copy, err);
    if (rc == 0)
        rc = CPU_FN(emulated_input)(c, GD_CLASS_CONV, c->in[1], &w, &w_copy, err);
    if (rc != 0)
        goto done;
    int64_t groups = p->group, cg = xg.c / groups, mg = yg.c / groups;
    int64_t kh = p->kernel[0], kw = p->kernel[1];
    int64_t sh = p->strides[0], sw = p->strides[1], dh = p->dilations[0], dw = p->dilations[1];
    int64_t plane = yg.h * yg.w;
    for (int64_t n = 0; n < xg.n; n++) {
        for (int64_t m = 0; m < yg.c; m++) {
            int64_t g = m / mg, ml = m % mg;
            real *o = y + (n * yg.c + m) * plane;
            memset(o, 0, (size_t)plane * sizeof *o);
            for (int64_t ci = 0; ci < cg; ci++) {
                const real *xp = x + ((n * xg.c + g * cg + ci) * xg.h) * xg.w;
                /* weight (C, M/group, kH, kW) */
                const real *wp = w + ((g * cg + ci) * mg + ml) * kh * kw;
                for (int64_t ki = 0; ki < kh; ki++) {
                    int64_t off_h = ki * dh - p->pads[0];
                    int64_t ih_lo, ih_hi;
                    tap_range(xg.h, sh, off_h, yg.h, &ih_lo, &ih_hi);
                    for (int64_t kj = 0; kj < kw; kj++) {
                        real wv = wp[ki * kw + kj];
                        int64_t off_w = kj * dw - p->pads[1];
                        int64_t iw_lo, iw_hi;
                        tap_range(xg.w, sw, off_w, yg.w, &iw_lo, &iw_hi);
                        for (int64_t ih = ih_lo; ih < ih_hi; ih++) {
                            const real *xr = xp + ih * xg.w;
                            real *orow = o + (ih * sh + off_h) * yg.w;
                            if (sw == 1) {
                                for (int64_t iw = iw_lo; iw < iw_hi; iw++)
                                    orow[iw + off_w] += wv * xr[iw];
                            } else {
                                for (int64_t iw = iw_lo; iw < iw_hi; iw++)
                                    orow[iw * sw + off_w] += wv * xr[iw];
                            }
                        }
                    }
                }
            }
            add_bias(o, plane, bias, m);
        }
    }
done:
    free(x_copy);
    free(w_copy);
    return rc;
}
