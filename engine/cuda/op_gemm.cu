/*
 * op_gemm.cu: Gemm and MatMul on the GPU through cuBLASLt. The compute type carries the
 * TF32 knob (CUBLAS_COMPUTE_32F, _FAST_TF32 or _PEDANTIC); the algorithm is cuBLASLt's first
 * heuristic choice for the node's shapes, and its id, tile, stages and split-K go into the
 * layer's record.
 *
 * float16 and bfloat16 operands go to cuBLASLt as they are (A, B and C of CUDA_R_16F or
 * CUDA_R_16BF) with CUBLAS_COMPUTE_32F and float32 scales, as PyTorch's half GEMMs do:
 * products and sums in float32, the result rounded once to the half format. The
 * reduced_reduction knob off limits cuBLASLt to reduction schemes that keep split-K partial
 * sums in float32 (PyTorch's allow_*_reduced_precision_reduction = False); on, cuBLASLt may
 * also sum them in the half format, and the record's math then says "fp16-rr" ("bf16-rr")
 * when the chosen algorithm does.
 *
 * Row-major Y (M x N) = A (M x K) B (K x N) is computed as the column-major product
 * Y^T = B^T A^T, so the operands pass to cuBLASLt swapped and nothing is copied.
 */
#include <stdio.h>
#include <string.h>

#include "kernels.cuh"

/* Gemm's C broadcast into Y before the product (Y = alpha*A*B + beta*Y then); T is the
 * storage type, copied as it is; I is int64_t, or uint32_t when m * n and C fit 32 bits (a
 * 64-bit division is a long sequence on the GPU). */
template <class T, class I>
static __global__ void
broadcast_c(const T *__restrict__ cv, T *__restrict__ y, I m, I n, I cs_i, I cs_j)
{
    for (I k = (I)blockIdx.x * blockDim.x + threadIdx.x; k < m * n;
         k += (I)gridDim.x * blockDim.x)
        y[k] = cv[(k / n) * cs_i + (k % n) * cs_j];
}

/* A bias row (C of n elements along Y's columns) into every row of Y in 16-byte units: n
 * units per row (n_units), each thread one unit. */
static __global__ void
broadcast_row16(const uint4 *__restrict__ cv, uint4 *__restrict__ y, uint32_t total,
                uint32_t n_units)
{
    for (uint32_t k = blockIdx.x * blockDim.x + threadIdx.x; k < total;
         k += gridDim.x * blockDim.x)
        y[k] = cv[k % n_units];
}

/* Y = C broadcast (cs_i, cs_j: C's element strides along Y's rows and columns, 0 where it
 * broadcasts), es-byte elements. */
static void
broadcast_c_launch(const void *cv, void *y, int64_t m, int64_t n, int64_t cs_i, int64_t cs_j,
                   size_t es, cudaStream_t stream)
{
    int64_t total = m * n;
    size_t row_bytes = (size_t)n * es;
    if (cs_i == 0 && cs_j == 1 && row_bytes % 16 == 0 && (uintptr_t)cv % 16 == 0 &&
        (uintptr_t)y % 16 == 0 && (int64_t)(total * es / 16) <= (int64_t)UINT32_MAX) {
        uint32_t units = (uint32_t)(total * (int64_t)es / 16);
        broadcast_row16<<<gd__cuda_blocks(units), GD_CUDA_THREADS, 0, stream>>>(
            (const uint4 *)cv, (uint4 *)y, units, (uint32_t)(row_bytes / 16));
        return;
    }
    int fits = total <= (int64_t)INT32_MAX && cs_i * m <= (int64_t)INT32_MAX;
    if (es == 2 && fits)
        broadcast_c<<<gd__cuda_blocks(total), GD_CUDA_THREADS, 0, stream>>>(
            (const uint16_t *)cv, (uint16_t *)y, (uint32_t)m, (uint32_t)n, (uint32_t)cs_i,
            (uint32_t)cs_j);
    else if (es == 2)
        broadcast_c<<<gd__cuda_blocks(total), GD_CUDA_THREADS, 0, stream>>>(
            (const uint16_t *)cv, (uint16_t *)y, m, n, cs_i, cs_j);
    else if (fits)
        broadcast_c<<<gd__cuda_blocks(total), GD_CUDA_THREADS, 0, stream>>>(
            (const float *)cv, (float *)y, (uint32_t)m, (uint32_t)n, (uint32_t)cs_i,
            (uint32_t)cs_j);
    else
        broadcast_c<<<gd__cuda_blocks(total), GD_CUDA_THREADS, 0, stream>>>(
            (const float *)cv, (float *)y, m, n, cs_i, cs_j);
}

/* cuBLASLt's type of the operands' storage: float32, float16 or bfloat16. */
static cudaDataType_t
data_type(enum gd_dtype dt)
{
    return dt == GD_F16 ? CUDA_R_16F : dt == GD_BF16 ? CUDA_R_16BF : CUDA_R_32F;
}

/* Half operands accumulate in float32 (TF32 concerns float32 operands only). */
static cublasComputeType_t
compute_type(const struct gd__cuda_ctx *ctx, enum gd_dtype dt)
{
    if (strcmp(ctx->knobs.math_mode, "pedantic") == 0)
        return CUBLAS_COMPUTE_32F_PEDANTIC;
    if (dt == GD_F16 || dt == GD_BF16)
        return CUBLAS_COMPUTE_32F;
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
layout(cublasLtMatrixLayout_t *l, cudaDataType_t type, int64_t rows, int64_t cols, int64_t ld,
       int64_t batch, int64_t stride, struct gd_err *err)
{
    int rc = 0;
    if (*l != NULL) {
        cublasLtMatrixLayoutDestroy(*l);
        *l = NULL;
    }
    GD_CUDA_TRY(cublasLtMatrixLayoutCreate(l, type, (uint64_t)rows, (uint64_t)cols, ld));
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
 * Sets up the node for Y(batch, M x N) = op(A)(M x K) op(B)(K x N), all row-major and of
 * storage dtype dt, with per-batch element strides (0: the operand is shared by every
 * batch), and picks the algorithm.
 */
static int
setup(struct gd__cuda_ctx *ctx, struct gd__cuda_node *nd, int64_t m, int64_t n, int64_t k,
      int trans_a, int trans_b, int64_t batch, int64_t sa, int64_t sb, enum gd_dtype dt,
      struct gd_err *err)
{
    cudaDataType_t type = data_type(dt);
    int half = dt == GD_F16 || dt == GD_BF16;
    int rc = 0;
    cublasLtMatmulPreference_t pref = NULL;
    cublasLtMatmulHeuristicResult_t result;
    int returned = 0;
    if (nd->mm_desc != NULL) {
        cublasLtMatmulDescDestroy(nd->mm_desc);
        nd->mm_desc = NULL;
    }
    GD_CUDA_TRY(cublasLtMatmulDescCreate(&nd->mm_desc, compute_type(ctx, dt), CUDA_R_32F));
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
    rc = layout(&nd->a_layout, type, trans_b ? k : n, trans_b ? n : k, trans_b ? k : n, batch,
                sb, err);
    if (rc == 0)
        rc = layout(&nd->b_layout, type, trans_a ? m : k, trans_a ? k : m, trans_a ? m : k,
                    batch, sa, err);
    if (rc == 0)
        rc = layout(&nd->c_layout, type, n, m, n, batch, m * n, err);
    if (rc != 0)
        goto done;
    GD_CUDA_TRY(cublasLtMatmulPreferenceCreate(&pref));
    {
        size_t ws = lt_workspace(ctx);
        GD_CUDA_TRY(cublasLtMatmulPreferenceSetAttribute(
            pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof ws));
    }
    if (half && !ctx->reduced_reduction) {
        /* PyTorch's allow_*_reduced_precision_reduction = False (split-K still allowed) */
        uint32_t mask = CUBLASLT_REDUCTION_SCHEME_COMPUTE_TYPE | CUBLASLT_REDUCTION_SCHEME_NONE;
        GD_CUDA_TRY(cublasLtMatmulPreferenceSetAttribute(
            pref, CUBLASLT_MATMUL_PREF_REDUCTION_SCHEME_MASK, &mask, sizeof mask));
    }
    {
        cublasStatus_t st = cublasLtMatmulAlgoGetHeuristic(ctx->lt, nd->mm_desc, nd->a_layout,
                                                           nd->b_layout, nd->c_layout,
                                                           nd->c_layout, pref, 1, &result,
                                                           &returned);
        /* "not supported" is no algorithm for this form: GD_ENOTSUP, which MatMul answers
         * by running the batch one product at a time */
        if (st == CUBLAS_STATUS_NOT_SUPPORTED || (st == CUBLAS_STATUS_SUCCESS && returned < 1)) {
            rc = gd_err_set(err, GD_ENOTSUP, "cuBLASLt has no algorithm for this %s "
                            "%lldx%lldx%lld product of %lld batches", gd_dtype_name(dt),
                            (long long)m, (long long)n, (long long)k, (long long)batch);
            goto done;
        }
        GD_CUDA_TRY(st);
    }
    nd->mm_algo = result.algo;
    nd->workspace = result.workspaceSize;
    {
        int id = -1, tile = -1, stages = -1, splitk = -1;
        uint32_t scheme = 0;
        size_t got;
        cublasLtMatmulAlgoConfigGetAttribute(&nd->mm_algo, CUBLASLT_ALGO_CONFIG_ID, &id,
                                             sizeof id, &got);
        cublasLtMatmulAlgoConfigGetAttribute(&nd->mm_algo, CUBLASLT_ALGO_CONFIG_TILE_ID, &tile,
                                             sizeof tile, &got);
        cublasLtMatmulAlgoConfigGetAttribute(&nd->mm_algo, CUBLASLT_ALGO_CONFIG_STAGES_ID,
                                             &stages, sizeof stages, &got);
        cublasLtMatmulAlgoConfigGetAttribute(&nd->mm_algo, CUBLASLT_ALGO_CONFIG_SPLITK_NUM,
                                             &splitk, sizeof splitk, &got);
        cublasLtMatmulAlgoConfigGetAttribute(&nd->mm_algo, CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME,
                                             &scheme, sizeof scheme, &got);
        snprintf(nd->algo_text, sizeof nd->algo_text, "cublasLt algo %d tile %d stages %d "
                 "splitk %d", id, tile, stages, splitk);
        /* the partial sums of a split-K product reduced in the output's (half) format */
        nd->reduced_half = half && splitk > 1 && (scheme & CUBLASLT_REDUCTION_SCHEME_OUTPUT_TYPE);
    }
done:
    if (pref != NULL)
        cublasLtMatmulPreferenceDestroy(pref);
    return rc;
}

static const char *
math_of(const struct gd__cuda_ctx *ctx, const struct gd__cuda_node *nd, enum gd_dtype dt)
{
    if (dt == GD_F16)
        return nd->reduced_half ? "fp16-rr" : "fp16";
    if (dt == GD_BF16)
        return nd->reduced_half ? "bf16-rr" : "bf16";
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
 * stride of A's batches, stride of B's, storage dtype}, unless it was for the same one, and
 * records its algorithm and math in the call.
 */
static int
prepare(struct gd_op_call *c, struct gd__cuda_ctx *ctx, struct gd__cuda_node *nd,
        const int64_t key[19], struct gd_err *err)
{
    if (!nd->ready || memcmp(key, nd->key, sizeof nd->key) != 0) {
        nd->ready = 0;
        int rc = setup(ctx, nd, key[0], key[1], key[2], (int)key[3], (int)key[4], key[5], key[6],
                       key[7], (enum gd_dtype)key[8], err);
        if (rc != 0)
            return rc;
        memcpy(nd->key, key, sizeof nd->key);
        nd->ready = 1;
    }
    snprintf(c->algo, sizeof c->algo, "%s", nd->algo_text);
    snprintf(c->math, sizeof c->math, "%s", math_of(ctx, nd, (enum gd_dtype)key[8]));
    return 0;
}

/* The operands and the result share one storage dtype: float32, float16 or bfloat16. */
static int
one_dtype(const struct gd_op_call *c, struct gd_err *err)
{
    enum gd_dtype dt = c->out[0]->dtype;
    for (int i = 0; i < c->n_in; i++)
        if (c->in[i] != NULL && c->in[i]->dtype != dt)
            return gd_err_set(err, GD_ENOTSUP, "%s of %s and %s operands on cuda: cuBLASLt "
                              "takes one storage dtype here", gd_op_name(c->node->op),
                              gd_dtype_name(c->in[i]->dtype), gd_dtype_name(dt));
    if (dt != GD_F32 && dt != GD_F16 && dt != GD_BF16)
        return gd_err_set(err, GD_ENOTSUP, "%s of %s on cuda", gd_op_name(c->node->op),
                          gd_dtype_name(dt));
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
    enum gd_dtype dt = c->out[0]->dtype;
    int64_t key[19] = {m, n, k, p->trans_a, p->trans_b, 1, 0, 0, dt}; /* nd->key's length */
    rc = one_dtype(c, err);
    if (rc == 0)
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
        broadcast_c_launch(ct->data, c->out[0]->data, m, n, cs_i, cs_j, gd_dtype_size(dt),
                           ctx->compute);
        GD_CUDA_CHECK_LAUNCH();
        beta = (float)p->beta;
    }
    if (m * n > 0)
        rc = run(ctx, nd, a->data, c->in[1]->data, c->out[0]->data, (float)p->alpha, beta, err);
done:
    return rc;
}

/*
 * MatMul's batch axes (numpy broadcasting) as one strided batch, or as a loop of strided
 * batches: the longest run of trailing batch axes over which each operand's matrices are
 * evenly spaced (stride 0 where it broadcasts) becomes cuBLASLt's batch, the axes before it
 * a loop on the host, every product with the same descriptor and algorithm.
 */
struct mm_batches {
    int nb;                          /* output batch axes */
    int64_t shape[GD_MAX_DIMS];
    int64_t sa[GD_MAX_DIMS], sb[GD_MAX_DIMS]; /* each operand's stride, in matrices */
    int split;                       /* axes [split, nb) are the strided batch */
    int64_t inner, outer;            /* batches per product, products */
};

static void
mm_batches_of(const struct gd_tensor *a, const struct gd_tensor *b, struct mm_batches *mb)
{
    int a_batch = a->ndim > 2 ? a->ndim - 2 : 0, b_batch = b->ndim > 2 ? b->ndim - 2 : 0;
    int64_t stride_a = 1, stride_b = 1;
    mb->nb = a_batch > b_batch ? a_batch : b_batch;
    for (int i = mb->nb - 1; i >= 0; i--) {
        int ia = i - (mb->nb - a_batch), ib = i - (mb->nb - b_batch);
        int64_t da = ia >= 0 ? a->shape[ia] : 1, db = ib >= 0 ? b->shape[ib] : 1;
        mb->shape[i] = da > db ? da : db;
        mb->sa[i] = da == 1 ? 0 : stride_a;
        mb->sb[i] = db == 1 ? 0 : stride_b;
        stride_a *= da;
        stride_b *= db;
    }
    /* Grow the strided run from the innermost axis while both operands stay evenly spaced:
     * axis i joins when its strides are the next inner axis of length > 1 (j) times that
     * length; axes of length 1 join freely. */
    mb->split = mb->nb;
    mb->inner = 1;
    for (int j = -1; mb->split > 0; mb->split--) {
        int i = mb->split - 1;
        if (mb->shape[i] == 1)
            continue;
        if (j >= 0 && (mb->sa[i] != mb->sa[j] * mb->shape[j] ||
                       mb->sb[i] != mb->sb[j] * mb->shape[j]))
            break;
        mb->inner *= mb->shape[i];
        j = i;
    }
    mb->outer = 1;
    for (int i = 0; i < mb->split; i++)
        mb->outer *= mb->shape[i];
}

/* The stride, in matrices, between consecutive batches of the strided run. */
static int64_t
mm_run_stride(const struct mm_batches *mb, const int64_t *s)
{
    for (int i = mb->nb - 1; i >= mb->split; i--)
        if (mb->shape[i] > 1)
            return s[i];
    return 0;
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
    struct mm_batches mb;
    mm_batches_of(a, b, &mb);
    if (mb.inner > INT32_MAX)
        return gd_err_set(err, GD_ENOTSUP, "MatMul of %lld batches on cuda (cuBLASLt takes at "
                          "most %d)", (long long)mb.inner, INT32_MAX);
    int64_t sa = mm_run_stride(&mb, mb.sa) * m * k, sb = mm_run_stride(&mb, mb.sb) * k * n;
    enum gd_dtype dt = y->dtype;
    size_t es = gd_dtype_size(dt);
    /* B shared by every batch and A not broadcast along any: A's batches and rows are one
     * (batches x M) x K matrix and Y's one (batches x M) x N, so the product is one GEMM of
     * that many rows, as torch.matmul folds them (a linear layer of a transformer), rather
     * than a batch of small ones: each output element is the same sum, and no stride-0
     * batch is asked of cuBLASLt (the H200 has no half algorithm for one). */
    int fold = mb.nb > 0;
    for (int i = 0; i < mb.nb; i++)
        fold &= mb.sb[i] == 0 && (mb.sa[i] != 0 || mb.shape[i] == 1);
    if (fold) {
        m *= mb.inner * mb.outer;
        mb.inner = mb.outer = 1;
        mb.split = 0;
        sa = sb = 0;
    }
    int64_t key[19] = {m, n, k, 0, 0, mb.inner, sa, sb, dt}; /* nd->key's length */
    int64_t loop = 1; /* products per strided run when cuBLASLt has no batched algorithm */
    rc = one_dtype(c, err);
    if (rc == 0)
        rc = prepare(c, ctx, nd, key, err);
    if (rc == GD_ENOTSUP && mb.inner > 1) {
        /* no batched algorithm for this form: each matrix of the run on its own */
        loop = mb.inner;
        key[5] = 1;
        key[6] = key[7] = 0;
        rc = prepare(c, ctx, nd, key, err);
    }
    if (rc != 0)
        return rc;
    if (mb.outer * loop > 1)
        snprintf(c->algo, sizeof c->algo, "%.32s, %lld products", nd->algo_text,
                 (long long)(mb.outer * loop));
    if (gd_tensor_numel(y) == 0)
        return 0;
    if (k == 0) {
        GD_CUDA_TRY(cudaMemsetAsync(y->data, 0, gd_tensor_nbytes(y), ctx->compute));
        return 0;
    }
    {
        int64_t idx[GD_MAX_DIMS] = {0};
        for (int64_t t = 0; t < mb.outer && rc == 0; t++) {
            int64_t oa = 0, ob = 0;
            for (int i = 0; i < mb.split; i++) {
                oa += idx[i] * mb.sa[i];
                ob += idx[i] * mb.sb[i];
            }
            for (int64_t j = 0; j < loop && rc == 0; j++)
                rc = run(ctx, nd, (const char *)a->data + (size_t)(oa * m * k + j * sa) * es,
                         (const char *)b->data + (size_t)(ob * k * n + j * sb) * es,
                         (char *)y->data + (size_t)((t * mb.inner + j) * m * n) * es, 1.0f,
                         0.0f, err);
            for (int i = mb.split - 1; i >= 0; i--) {
                if (++idx[i] < mb.shape[i])
                    break;
                idx[i] = 0;
            }
        }
    }
done:
    return rc;
}
