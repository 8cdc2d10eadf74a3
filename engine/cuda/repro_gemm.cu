/*
 * repro_gemm.cu: Gemm and MatMul under --repro bitwise: repro.cuh's tiled product, every
 * element acc = +0, acc += a[i,k] * b[k,j] for k ascending (one rounded product, one rounded
 * sum per term), then for Gemm alpha * acc and + beta * C: engine/cpu/op_gemm.c's order
 * and roundings, so the bits of the cpu backend. MatMul's batch axes broadcast as numpy's
 * matmul (a 1-D operand is a row or a column), as on the CPU; when B is one matrix for every
 * batch and A's batches lie one after another, they are one product of batches x M rows
 * (the same sums of the same terms per element, a larger grid).
 */
#include <stdio.h>

#include "repro.cuh"
#include "repro.h"

/* MatMul's broadcast batch axes: each operand's stride, in matrices, along each. */
struct mm_batches {
    int nd;
    int64_t shape[GD_MAX_DIMS];
    int64_t stride[GD_MAX_DIMS];
    int64_t mat; /* elements per matrix */
};

static __device__ __forceinline__ int64_t
batch_offset(const mm_batches &b, int64_t bat)
{
    int64_t off = 0;
    for (int d = b.nd - 1; d >= 0; d--) {
        off += bat % b.shape[d] * b.stride[d];
        bat /= b.shape[d];
    }
    return off * b.mat;
}

/* An operand's batch matrix: element (r, c) at base[r * rs + c * cs]. */
struct mat_view {
    const float *base;
    int64_t rs, cs;
    __device__ float get(int64_t r, int64_t c) const
    {
        return base[r * rs + c * cs];
    }
};

/* A[i, k] = a[i * rs + k * cs] of batch matrix bat. */
struct load_a {
    const float *a;
    int64_t rs, cs;
    mm_batches bt;
    __device__ mat_view at(int64_t bat) const
    {
        return mat_view{a + batch_offset(bt, bat), rs, cs};
    }
};

/* B's column j of batch matrix bat: B[k, j] = b[k * rs + j * cs] (no skipped terms). */
struct col_view {
    const float *col;
    int64_t rs;
    __device__ float get(int64_t k, int careful) const
    {
        return col[k * rs];
    }
};

struct load_b {
    const float *b;
    int64_t rs, cs;
    mm_batches bt;
    __device__ col_view col(int64_t bat, int64_t j) const
    {
        return col_view{b + batch_offset(bt, bat) + j * cs, rs};
    }
};

/* Gemm: y = alpha acc, then + beta C[i * cs_i + j * cs_j] when there is a C. */
struct store_gemm {
    float *y;
    int64_t n;
    float alpha, beta;
    const float *c;
    int64_t cs_i, cs_j;
    __device__ void put(int64_t bat, int64_t i, int64_t j, float acc) const
    {
        float v = __fmul_rn(alpha, acc);
        if (c != NULL)
            v = __fadd_rn(v, __fmul_rn(beta, c[i * cs_i + j * cs_j]));
        y[i * n + j] = v;
    }
};

struct store_matmul {
    float *y;
    int64_t mn, n;
    __device__ void put(int64_t bat, int64_t i, int64_t j, float acc) const
    {
        y[bat * mn + i * n + j] = acc;
    }
};

template <bool AK, bool BJ, class ST>
static void
launch(const struct gd__cuda_ctx *ctx, enum gd__repro_tile_kind kind, int64_t m, int64_t n,
       int64_t k, int64_t batches, const load_a &la, const load_b &lb, const ST &st)
{
    gd__repro_product<AK, BJ>(ctx, kind, m, n, k, batches, NULL, la, lb, st);
}

static void
record(struct gd_op_call *c, const char *what, enum gd__repro_tile_kind kind, int64_t batches)
{
    if (batches > 1)
        snprintf(c->algo, sizeof c->algo, "gpudiff bitwise %s %s, %lld products", what,
                 gd__repro_tile_name(kind), (long long)batches);
    else
        snprintf(c->algo, sizeof c->algo, "gpudiff bitwise %s %s", what, gd__repro_tile_name(kind));
    snprintf(c->math, sizeof c->math, "fp32");
}

extern "C" int
gd__cuda_repro_gemm(struct gd_op_call *c, struct gd_err *err)
{
    struct gd__cuda_ctx *ctx = gd__cuda_ctx_of(c);
    const struct gd_params *p = c->params;
    const struct gd_tensor *at = c->in[0], *bt = c->in[1];
    const struct gd_tensor *ct = c->n_in > 2 ? c->in[2] : NULL;
    int64_t m = c->out[0]->shape[0], n = c->out[0]->shape[1];
    int64_t k = p->trans_a ? at->shape[0] : at->shape[1];
    int rc = 0;
    if (m == 0 || n == 0)
        return 0;
    load_a la = {};
    la.a = (const float *)at->data;
    la.rs = p->trans_a ? 1 : k;
    la.cs = p->trans_a ? m : 1;
    load_b lb = {};
    lb.b = (const float *)bt->data;
    lb.rs = p->trans_b ? 1 : n;
    lb.cs = p->trans_b ? k : 1;
    store_gemm st = {(float *)c->out[0]->data, n, (float)p->alpha, (float)p->beta, NULL, 0, 0};
    if (ct != NULL) {
        /* C broadcasts to (m, n): strides 0 along its size-1 or missing axes, as on the CPU */
        st.c = (const float *)ct->data;
        if (ct->ndim == 2) {
            st.cs_i = ct->shape[0] == 1 ? 0 : ct->shape[1];
            st.cs_j = ct->shape[1] == 1 ? 0 : 1;
        } else if (ct->ndim == 1) {
            st.cs_j = ct->shape[0] == 1 ? 0 : 1;
        }
    }
    enum gd__repro_tile_kind kind = gd__repro_pick(ctx, m, n, 1);
    if (!p->trans_a && !p->trans_b)
        launch<true, true>(ctx, kind, m, n, k, 1, la, lb, st);
    else if (!p->trans_a)
        launch<true, false>(ctx, kind, m, n, k, 1, la, lb, st);
    else if (!p->trans_b)
        launch<false, true>(ctx, kind, m, n, k, 1, la, lb, st);
    else
        launch<false, false>(ctx, kind, m, n, k, 1, la, lb, st);
    GD_CUDA_CHECK_LAUNCH();
    record(c, "gemm", kind, 1);
done:
    return rc;
}

extern "C" int
gd__cuda_repro_matmul(struct gd_op_call *c, struct gd_err *err)
{
    struct gd__cuda_ctx *ctx = gd__cuda_ctx_of(c);
    const struct gd_tensor *at = c->in[0], *bt = c->in[1], *yt = c->out[0];
    int rc = 0;
    /* matrix shapes after numpy's 1-D promotion */
    int64_t m = at->ndim == 1 ? 1 : at->shape[at->ndim - 2];
    int64_t k = at->shape[at->ndim - 1];
    int64_t n = bt->ndim == 1 ? 1 : bt->shape[bt->ndim - 1];
    int a_batch = at->ndim > 2 ? at->ndim - 2 : 0, b_batch = bt->ndim > 2 ? bt->ndim - 2 : 0;
    int nb = a_batch > b_batch ? a_batch : b_batch;
    load_a la = {};
    load_b lb = {};
    la.a = (const float *)at->data;
    la.rs = k;
    la.cs = 1;
    la.bt.mat = m * k;
    lb.b = (const float *)bt->data;
    lb.rs = n;
    lb.cs = 1;
    lb.bt.mat = k * n;
    int64_t batches = 1, stride_a = 1, stride_b = 1;
    int a_whole = 1, b_shared = 1; /* A never broadcast; B the same matrix for every batch */
    for (int i = nb - 1; i >= 0; i--) {
        int ia = i - (nb - a_batch), ib = i - (nb - b_batch);
        int64_t da = ia >= 0 ? at->shape[ia] : 1, db = ib >= 0 ? bt->shape[ib] : 1;
        int64_t len = da > db ? da : db;
        la.bt.shape[i] = lb.bt.shape[i] = len;
        la.bt.stride[i] = da == 1 ? 0 : stride_a;
        lb.bt.stride[i] = db == 1 ? 0 : stride_b;
        a_whole &= da == len;
        b_shared &= db == 1;
        stride_a *= da;
        stride_b *= db;
        batches *= len;
    }
    la.bt.nd = lb.bt.nd = nb;
    if (gd_tensor_numel(yt) == 0)
        return 0;
    store_matmul st = {(float *)yt->data, m * n, n};
    if (b_shared && a_whole && batches > 1) {
        /* (batches x M) rows of one product: A's and Y's batches are consecutive rows */
        m *= batches;
        batches = 1;
        la.bt.nd = lb.bt.nd = 0;
        st.mn = m * n;
    }
    enum gd__repro_tile_kind kind = gd__repro_pick(ctx, m, n, batches);
    launch<true, true>(ctx, kind, m, n, k, batches, la, lb, st);
    GD_CUDA_CHECK_LAUNCH();
    record(c, "matmul", kind, batches);
done:
    return rc;
}
