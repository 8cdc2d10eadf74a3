/*
 * op_norm.c: BatchNormalization (inference) on the CPU.
 *
 * Per channel a = scale / sqrt(var + eps) and b = bias - mean * a, then y = x * a + b: the
 * folded form PyTorch's CPU kernel and cuDNN's inference kernels use, so the reference
 * rounds where they do.
 */
#include "cpu.h"

int
CPU_FN(batch_norm)(struct gd_op_call *c, struct gd_err *err)
{
    const struct gd_tensor *xt = c->in[0];
    const real *scale = c->in[1]->data, *bias = c->in[2]->data;
    const real *mean = c->in[3]->data, *var = c->in[4]->data;
    int64_t n = xt->shape[0], ch = xt->shape[1];
    int64_t inner = n > 0 && ch > 0 ? gd_tensor_numel(xt) / (n * ch) : 0;
    const real *x = xt->data;
    real *y = c->out[0]->data;
    real eps = (real)c->params->epsilon;
    for (int64_t k = 0; k < ch; k++) {
        real a = scale[k] / R(sqrt)(var[k] + eps);
        real b = bias[k] - mean[k] * a;
        for (int64_t i = 0; i < n; i++) {
            const real *xp = x + (i * ch + k) * inner;
            real *yp = y + (i * ch + k) * inner;
            for (int64_t j = 0; j < inner; j++)
                yp[j] = xp[j] * a + b;
        }
    }
    return 0;
}
