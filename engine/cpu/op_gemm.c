/*
 * op_gemm.c: Gemm and MatMul on the CPU.
 *
 * Summation order: each output element starts at +0 and adds a[i,k] * b[k,j] for k
 * ascending. Gemm then computes alpha * acc and adds beta * C (each product rounded, no
 * fused multiply-add). Rows of the output are built with k in the outer loop and j in the
 * inner one, which vectorizes across j without changing any element's order.
 */
#include <stdlib.h>
#include <string.h>

#include "cpu.h"

/* out (m x n) = a (m x k) b (k x n), all row-major. */
static void
matmul_rows(const real *a, const real *b, real *out, int64_t m, int64_t k, int64_t n)
{
    for (int64_t i = 0; i < m; i++) {
        real *o = out + i * n;
        memset(o, 0, (size_t)n * sizeof *o);
        for (int64_t kk = 0; kk < k; kk++) {
            real av = a[i * k + kk];
            const real *br = b + kk * n;
            for (int64_t j = 0; j < n; j++)
                o[j] += av * br[j];
        }
    }
}

/* A row-major copy of the (rows x cols) matrix src transposed. */
static real *
transposed(const real *src, int64_t rows, int64_t cols, struct gd_err *err)
{
    real *t = malloc((size_t)(rows > 0 && cols > 0 ? rows * cols : 1) * sizeof *t);
    if (t == NULL) {
        gd_err_set(err, GD_ENOMEM, "out of memory for a transposed operand");
        return NULL;
    }
    for (int64_t r = 0; r < rows; r++)
        for (int64_t q = 0; q < cols; q++)
            t[q * rows + r] = src[r * cols + q];
    return t;
}

int
CPU_FN(gemm)(struct gd_op_call *c, struct gd_err *err)
{
    const struct gd_params *p = c->params;
    const struct gd_tensor *at = c->in[0], *bt = c->in[1];
    const struct gd_tensor *ct = c->n_in > 2 ? c->in[2] : NULL;
    int64_t m = c->out[0]->shape[0], n = c->out[0]->shape[1];
    int64_t k = p->trans_a ? at->shape[0] : at->shape[1];
    const real *a, *b;
    real *a_copy, *b_copy = NULL, *a_t = NULL, *b_t = NULL;
    real *y = c->out[0]->data;
    int rc = CPU_FN(emulated_input)(c, GD_CLASS_GEMM, at, &a, &a_copy, err);
    if (rc == 0)
        rc = CPU_FN(emulated_input)(c, GD_CLASS_GEMM, bt, &b, &b_copy, err);
    if (rc != 0)
        goto done;
    if (p->trans_a) {
        if ((a_t = transposed(a, k, m, err)) == NULL) {
            rc = GD_ENOMEM;
            goto done;
        }
        a = a_t;
    }
    if (p->trans_b) {
        if ((b_t = transposed(b, n, k, err)) == NULL) {
            rc = GD_ENOMEM;
            goto done;
        }
        b = b_t;
    }
    matmul_rows(a, b, y, m, k, n);
    real alpha = (real)p->alpha, beta = (real)p->beta;
    const real *cv = ct ? ct->data : NULL;
    /* C broadcasts to (m, n): its strides are 0 along size-1 or missing axes. */
    int64_t cs_i = 0, cs_j = 0;
    if (ct != NULL && ct->ndim == 2) {
        cs_i = ct->shape[0] == 1 ? 0 : ct->shape[1];
        cs_j = ct->shape[1] == 1 ? 0 : 1;
    } else if (ct != NULL && ct->ndim == 1) {
        cs_j = ct->shape[0] == 1 ? 0 : 1;
    }
    for (int64_t i = 0; i < m; i++) {
        for (int64_t j = 0; j < n; j++) {
            real v = alpha * y[i * n + j];
            if (cv != NULL)
                v += beta * cv[i * cs_i + j * cs_j];
            y[i * n + j] = v;
        }
    }
done:
    free(a_copy);
    free(b_copy);
    free(a_t);
    free(b_t);
    return rc;
}

int
CPU_FN(matmul)(struct gd_op_call *c, struct gd_err *err)
{
    const struct gd_tensor *at = c->in[0], *bt = c->in[1], *yt = c->out[0];
    const real *a, *b;
    real *a_copy, *b_copy = NULL;
    int rc = CPU_FN(emulated_input)(c, GD_CLASS_GEMM, at, &a, &a_copy, err);
    if (rc == 0)
        rc = CPU_FN(emulated_input)(c, GD_CLASS_GEMM, bt, &b, &b_copy, err);
    if (rc != 0)
        goto done;
    /* Matrix shapes after numpy's 1-D promotion. */
    int64_t m = at->ndim == 1 ? 1 : at->shape[at->ndim - 2];
    int64_t k = at->shape[at->ndim - 1];
    int64_t n = bt->ndim == 1 ? 1 : bt->shape[bt->ndim - 1];
    int a_batch = at->ndim > 2 ? at->ndim - 2 : 0;
    int b_batch = bt->ndim > 2 ? bt->ndim - 2 : 0;
    int nb = a_batch > b_batch ? a_batch : b_batch;
    int64_t batch_shape[GD_MAX_DIMS], sa[GD_MAX_DIMS], sb[GD_MAX_DIMS], batches = 1;
    /* Each operand's stride, in matrices, along each broadcast batch axis. */
    int64_t stride_a = 1, stride_b = 1;
    for (int i = nb - 1; i >= 0; i--) {
        int ia = i - (nb - a_batch), ib = i - (nb - b_batch);
        int64_t da = ia >= 0 ? at->shape[ia] : 1, db = ib >= 0 ? bt->shape[ib] : 1;
        batch_shape[i] = da > db ? da : db;
        sa[i] = da == 1 ? 0 : stride_a;
        sb[i] = db == 1 ? 0 : stride_b;
        stride_a *= da;
        stride_b *= db;
        batches *= batch_shape[i];
    }
    int64_t idx[GD_MAX_DIMS] = {0};
    real *y = yt->data;
    for (int64_t t = 0; t < batches; t++) {
        int64_t oa = 0, ob = 0;
        for (int i = 0; i < nb; i++) {
            oa += idx[i] * sa[i];
            ob += idx[i] * sb[i];
        }
        matmul_rows(a + oa * m * k, b + ob * k * n, y + t * m * n, m, k, n);
        for (int i = nb - 1; i >= 0; i--) {
            if (++idx[i] < batch_shape[i])
                break;
            idx[i] = 0;
        }
    }
done:
    free(a_copy);
    free(b_copy);
    return rc;
}
