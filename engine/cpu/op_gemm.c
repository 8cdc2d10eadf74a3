/*
 * op_gemm.c: Gemm and MatMul on the CPU.
 *
 * Summation order: each output element starts at +0 and adds a[i,k] * b[k,j] for k
 * ascending. Gemm then computes alpha * acc and adds beta * C (each product rounded, no
 * fused multiply-add). The product runs in gemm_kernel.c's register tiles, vector lanes
 * across j and k ascending in each lane; with GPUDIFF_CPU_SIMD=off, in matmul_rows(): rows
 * of the output built with k in the outer loop and j in the inner one. Neither changes any
 * element's order, so both give the same bits.
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

/* The tiled product's store: C rows into the row-major (m x n) output. */
struct rows_out {
    real *y;
    int64_t n;
};

static void
store_rows(const void *user, int64_t i0, int64_t mc, int64_t j0, int64_t nc, const real *c,
           int64_t ldc)
{
    const struct rows_out *o = user;
    for (int64_t i = 0; i < mc; i++)
        memcpy(o->y + (i0 + i) * o->n + j0, c + i * ldc, (size_t)nc * sizeof *c);
}

/*
 * out (m x n) = A B, A read as a[i * a_rs + k * a_cs], B as b[k * b_rs + j * b_cs]: through
 * the tiled product, or (SIMD off) matmul_rows on row-major copies made by the caller.
 */
static int
product(struct gd_op_call *c, const real *a, int64_t a_rs, int64_t a_cs, const real *b,
        int64_t b_rs, int64_t b_cs, real *out, int64_t m, int64_t k, int64_t n,
        struct gd_err *err)
{
    struct gd__cpu_strided bs = {b, b_rs, b_cs};
    struct rows_out o = {out, n};
    struct gd__cpu_mm mm = {.m = m, .n = n, .k = k, .a = a, .a_rs = a_rs, .a_cs = a_cs,
                            .pack_b = CPU_FN(pack_b_strided), .b_user = &bs,
                            .store = store_rows, .store_user = &o};
    return CPU_FN(mm_run)(c->ctx, &mm, err);
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
    struct gd__cpu_ctx *ctx = c->ctx;
    if (ctx->simd != GD_CPU_SIMD_OFF) {
        /* The tiles read a transposed operand through its strides: no copy. */
        rc = product(c, a, p->trans_a ? 1 : k, p->trans_a ? m : 1, b, p->trans_b ? 1 : n,
                     p->trans_b ? k : 1, y, m, k, n, err);
        if (rc != 0)
            goto done;
    } else {
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
    }
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
        const real *am = a + oa * m * k, *bm = b + ob * k * n;
        if (((struct gd__cpu_ctx *)c->ctx)->simd == GD_CPU_SIMD_OFF)
            matmul_rows(am, bm, y + t * m * n, m, k, n);
        else if ((rc = product(c, am, k, 1, bm, n, 1, y + t * m * n, m, k, n, err)) != 0)
            goto done;
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
