/*
 * op_gemm.cu: Gemm and MatMul on the GPU through cuBLASLt. The compute type carries the
 * TF32 knob (CUBLAS_COMPUTE_32F, _FAST_TF32 or _PEDANTIC); the algorithm is cuBLASLt's first
 * heuristic choice for the node's shapes, and its id, tile, stages and split-K go into the
 * layer's record.
 *
 * Row-major Y (M x N) = A (M x K) B (K x N) is computed as the column-major product
 * Y^T = B^T A^T, so the operands pass to cuBLASLt swapped and nothing is copied.
 */
#include <stdio.h>
#include <string.h>

#include "kernels.cuh"

/* Gemm's C broadcast into Y before the product (Y = alpha*A*B + beta*Y then). */
static __global__ void
broadcast_c(const float *__restrict__ cv, float *__restrict__ y, int64_t m, int64_t n,
            int64_t cs_i, int64_t cs_j)
{
    for (int64_t k = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; k < m * n;
         k += (int64_t)gridDim.x * blockDim.x)
        y[k] = cv[(k / n) * cs_i + (k % n) * cs_j];
}

static cublasComputeType_t
compute_type(const struct gd__cuda_ctx *ctx)
{
    if (strcmp(ctx->knobs.math_mode, "pedantic") == 0)
        return CUBLAS_COMPUTE_32F_PEDANTIC;
    return ctx->tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
}

/* Workspace cuBLASLt may use: 32 MiB (what PyTorch gives it on Hopper), within the knob. */
static size_t
lt_workspace(const struct gd__cuda_ctx *ctx)
{
    size_t ws = (size_t)32 << 20;
    return ws < ctx->workspace_limit ? ws : ctx->workspace_limit;
}

static int
layout(cublasLtMatrixLayout_t *l, int64_t rows, int64_t cols, int64_t ld, int64_t batch,
       int64_t stride, struct gd_err *err)
{
    int rc = 0;
    if (*l != NULL) {
        cublasLtMatrixLayoutDestroy(*l);
        *l = NULL;
    }
    GD_CUDA_TRY(cublasLtMatrixLayoutCreate(l, CUDA_R_32F, (uint64_t)rows, (uint64_t)cols, ld));
    if (batch > 1) {
        int32_t count = (int32_t)batch;
        GD_CUDA_TRY(cublasLtMatrixLayoutSetAttribute(*l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT,
                                                     &count, sizeof count));
        GD_CUDA_TRY(cublasLtMatrixLayoutSetAttribute(
            *l, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride, sizeof stride));
    }
done:
    return rc;
}

/*
 * Sets up the node for Y(batch, M x N) = op(A)(M x K) op(B)(K x N), all row-major, with
 * per-batch element strides (0: the operand is shared by every batch), and picks the
 * algorithm.
 */
static int
setup(struct gd__cuda_ctx *ctx, struct gd__cuda_node *nd, int64_t m, int64_t n, int64_t k,
      int trans_a, int trans_b, int64_t batch, int64_t sa, int64_t sb, struct gd_err *err)
{
    int rc = 0;
    cublasLtMatmulPreference_t pref = NULL;
    cublasLtMatmulHeuristicResult_t result;
    int returned = 0;
    if (nd->mm_desc != NULL) {
        cublasLtMatmulDescDestroy(nd->mm_desc);
        nd->mm_desc = NULL;
    }
    GD_CUDA_TRY(cublasLtMatmulDescCreate(&nd->mm_desc, compute_type(ctx), CUDA_R_32F));
    {
        /* cuBLASLt's first operand is our B, its second our A (see the file comment). */
        cublasOperation_t op_first = trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
        cublasOperation_t op_second = trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
        GD_CUDA_TRY(cublasLtMatmulDescSetAttribute(nd->mm_desc, CUBLASLT_MATMUL_DESC_TRANSA,
                                                   &op_first, sizeof op_first));
        GD_CUDA_TRY(cublasLtMatmulDescSetAttribute(nd->mm_desc, CUBLASLT_MATMUL_DESC_TRANSB,
                                                   &op_second, sizeof op_second));
    }
    /* B stored row-major is column-major B^T: (N x K) untransposed, (K x N) when trans_b. */
    rc = layout(&nd->a_layout, trans_b ? k : n, trans_b ? n : k, trans_b ? k : n, batch, sb,
                err);
    if (rc == 0)
        rc = layout(&nd->b_layout, trans_a ? m : k, trans_a ? k : m, trans_a ? m : k, batch, sa,
                    err);
    if (rc == 0)
        rc = layout(&nd->c_layout, n, m, n, batch, m * n, err);
    if (rc != 0)
        goto done;
    GD_CUDA_TRY(cublasLtMatmulPreferenceCreate(&pref));
    {
        size_t ws = lt_workspace(ctx);
        GD_CUDA_TRY(cublasLtMatmulPreferenceSetAttribute(
            pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof ws));
    }
    GD_CUDA_TRY(cublasLtMatmulAlgoGetHeuristic(ctx->lt, nd->mm_desc, nd->a_layout, nd->b_layout,
                                               nd->c_layout, nd->c_layout, pref, 1, &result,
                                               &returned));
    if (returned < 1) {
        rc = gd_err_set(err, GD_ENOTSUP, "cuBLASLt has no algorithm for this %lldx%lldx%lld "
                        "product", (long long)m, (long long)n, (long long)k);
        goto done;
    }
    nd->mm_algo = result.algo;
    nd->workspace = result.workspaceSize;
    {
        int id = -1, tile = -1, stages = -1, splitk = -1;
        size_t got;
        cublasLtMatmulAlgoConfigGetAttribute(&nd->mm_algo, CUBLASLT_ALGO_CONFIG_ID, &id,
                                             sizeof id, &got);
        cublasLtMatmulAlgoConfigGetAttribute(&nd->mm_algo, CUBLASLT_ALGO_CONFIG_TILE_ID, &tile,
                                             sizeof tile, &got);
        cublasLtMatmulAlgoConfigGetAttribute(&nd->mm_algo, CUBLASLT_ALGO_CONFIG_STAGES_ID,
                                             &stages, sizeof stages, &got);
        cublasLtMatmulAlgoConfigGetAttribute(&nd->mm_algo, CUBLASLT_ALGO_CONFIG_SPLITK_NUM,
                                             &splitk, sizeof splitk, &got);
        snprintf(nd->algo_text, sizeof nd->algo_text, "cublasLt algo %d tile %d stages %d "
                 "splitk %d", id, tile, stages, splitk);
    }
done:
    if (pref != NULL)
        cublasLtMatmulPreferenceDestroy(pref);
    return rc;
}

static const char *
math_of(const struct gd__cuda_ctx *ctx)
{
    return ctx->tf32 ? "tf32" : (strcmp(ctx->knobs.math_mode, "pedantic") == 0 ? "fp32-pedantic"
                                                                               : "fp32");
}

/* Runs the node's product: y = alpha * A B + beta * y. */
static int
run(struct gd__cuda_ctx *ctx, struct gd__cuda_node *nd, const void *a, const void *b, void *y,
    float alpha, float beta, struct gd_err *err)
{
    int rc = gd__cuda_workspace(ctx, lt_workspace(ctx), err);
    if (rc != 0)
        return rc;
    GD_CUDA_TRY(cublasLtMatmul(ctx->lt, nd->mm_desc, &alpha, b, nd->a_layout, a, nd->b_layout,
                               &beta, y, nd->c_layout, y, nd->c_layout, &nd->mm_algo,
                               ctx->workspace, lt_workspace(ctx), ctx->compute));
done:
    return rc;
}

/*
 * Sets the node up for the product that key describes, {m, n, k, trans_a, trans_b, batch,
 * stride of A's batches, stride of B's}, unless it was for the same one, and records its
 * algorithm and math in the call.
 */
static int
prepare(struct gd_op_call *c, struct gd__cuda_ctx *ctx, struct gd__cuda_node *nd,
        const int64_t key[16], struct gd_err *err)
{
    if (!nd->ready || memcmp(key, nd->key, sizeof nd->key) != 0) {
        nd->ready = 0;
        int rc = setup(ctx, nd, key[0], key[1], key[2], (int)key[3], (int)key[4], key[5], key[6],
                       key[7], err);
        if (rc != 0)
            return rc;
        memcpy(nd->key, key, sizeof nd->key);
        nd->ready = 1;
    }
    snprintf(c->algo, sizeof c->algo, "%s", nd->algo_text);
    snprintf(c->math, sizeof c->math, "%s", math_of(ctx));
    return 0;
}

extern "C" int
gd__cuda_gemm(struct gd_op_call *c, struct gd_err *err)
{
    int rc = 0;
    struct gd__cuda_ctx *ctx = gd__cuda_ctx_of(c);
    struct gd__cuda_node *nd = gd__cuda_node_of(c);
    const struct gd_params *p = c->params;
    const struct gd_tensor *a = c->in[0], *ct = c->n_in > 2 ? c->in[2] : NULL;
    int64_t m = c->out[0]->shape[0], n = c->out[0]->shape[1];
    int64_t k = p->trans_a ? a->shape[0] : a->shape[1];
    int64_t key[16] = {m, n, k, p->trans_a, p->trans_b, 1, 0, 0};
    rc = prepare(c, ctx, nd, key, err);
    if (rc != 0)
        return rc;
    float beta = 0.0f;
    if (ct != NULL && m * n > 0) {
        int64_t cs_i = 0, cs_j = 0;
        if (ct->ndim == 2) {
            cs_i = ct->shape[0] == 1 ? 0 : ct->shape[1];
            cs_j = ct->shape[1] == 1 ? 0 : 1;
        } else if (ct->ndim == 1) {
            cs_j = ct->shape[0] == 1 ? 0 : 1;
        }
        broadcast_c<<<gd__cuda_blocks(m * n), GD_CUDA_THREADS, 0, ctx->compute>>>(
            (const float *)ct->data, (float *)c->out[0]->data, m, n, cs_i, cs_j);
        GD_CUDA_CHECK_LAUNCH();
        beta = (float)p->beta;
    }
    if (m * n > 0)
        rc = run(ctx, nd, a->data, c->in[1]->data, c->out[0]->data, (float)p->alpha, beta, err);
done:
    return rc;
}

extern "C" int
gd__cuda_matmul(struct gd_op_call *c, struct gd_err *err)
{
    int rc = 0;
    struct gd__cuda_ctx *ctx = gd__cuda_ctx_of(c);
    struct gd__cuda_node *nd = gd__cuda_node_of(c);
    const struct gd_tensor *a = c->in[0], *b = c->in[1], *y = c->out[0];
    int64_t m = a->ndim == 1 ? 1 : a->shape[a->ndim - 2];
    int64_t k = a->shape[a->ndim - 1];
    int64_t n = b->ndim == 1 ? 1 : b->shape[b->ndim - 1];
    int64_t batch = 1;
    for (int i = 0; i + 2 < y->ndim + (a->ndim == 1) + (b->ndim == 1); i++)
        batch *= y->shape[i];
    /* Each operand's batch dims must be all of the output's or none (stride 0); other
     * broadcasts loop over the output batches one product at a time. */
    int64_t a_batch = a->ndim > 2 ? gd_tensor_numel(a) / (m * k > 0 ? m * k : 1) : 1;
    int64_t b_batch = b->ndim > 2 ? gd_tensor_numel(b) / (k * n > 0 ? k * n : 1) : 1;
    int strided = (a_batch == batch || a_batch == 1) && (b_batch == batch || b_batch == 1);
    if (!strided)
        return gd_err_set(err, GD_ENOTSUP, "MatMul with partly broadcast batch dimensions "
                          "(%lld and %lld batches into %lld) is not supported on cuda",
                          (long long)a_batch, (long long)b_batch, (long long)batch);
    int64_t sa = a_batch == 1 ? 0 : m * k, sb = b_batch == 1 ? 0 : k * n;
    int64_t key[16] = {m, n, k, 0, 0, batch, sa, sb};
    rc = prepare(c, ctx, nd, key, err);
    if (rc != 0)
        return rc;
    if (m * n * batch > 0 && k == 0)
        GD_CUDA_TRY(cudaMemsetAsync(y->data, 0, gd_tensor_nbytes(y), ctx->compute));
    else if (m * n * batch > 0)
        rc = run(ctx, nd, a->data, b->data, y->data, 1.0f, 0.0f, err);
done:
    return rc;
}
