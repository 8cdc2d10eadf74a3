/*
 * capture_fp.c: the cuda backend's side of fingerprint capture. backend_cuda.c's capture
 * calls gd__cuda_fp_enqueue() on the copy stream once the node is done: the kernels
 * (fingerprint.cu) read the layer where it lies and leave a raw result of about 17 KiB,
 * which is all that is copied to the pinned ring; gd__cuda_fp_finish() turns it into the
 * struct gd_fingerprint the session delivers. The device buffers are the context's, reused
 * layer after layer: the copy stream runs one fingerprint after the other.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cuda.h"
#include "fingerprint.h"

struct gd__cuda_fp {
    struct gd__fp_raw *raw;         /* device */
    void *scratch;                  /* device, for the tree's nodes */
    size_t scratch_size;
    struct gd_fingerprint out;      /* the one being delivered */
};

size_t
gd__cuda_fp_ring_bytes(void)
{
    return (sizeof(struct gd__fp_raw) + 255) / 256 * 256;
}

static enum gd__fp_kind
kind_of(enum gd_dtype dt)
{
    switch (dt) {
    case GD_F32: return GD__FP_F32;
    case GD_F16: return GD__FP_F16;
    case GD_BF16: return GD__FP_BF16;
    case GD_F64: return GD__FP_F64;
    default: return GD__FP_BYTES;
    }
}

int
gd__cuda_fp_enqueue(struct gd__cuda_ctx *ctx, const struct gd_tensor *t, void *host_raw,
                    struct gd_err *err)
{
    int rc = 0;
    size_t nbytes = gd_tensor_nbytes(t);
    if (nbytes == 0)
        return 0; /* gd__cuda_fp_finish() computes an empty tensor's on the host */
    if (ctx->fp == NULL) {
        ctx->fp = calloc(1, sizeof *ctx->fp);
        if (ctx->fp == NULL)
            return gd_err_set(err, GD_ENOMEM, "out of memory");
    }
    struct gd__cuda_fp *f = ctx->fp;
    if (f->raw == NULL)
        GD_CUDA_TRY(cudaMallocAsync((void **)&f->raw, sizeof *f->raw, ctx->copy));
    size_t need = gd__cuda_fp_scratch_size(nbytes);
    if (need > f->scratch_size) {
        /* stream-ordered: the kernels already queued keep the old buffer until they end */
        if (f->scratch != NULL)
            GD_CUDA_TRY(cudaFreeAsync(f->scratch, ctx->copy));
        f->scratch = NULL;
        f->scratch_size = 0;
        GD_CUDA_TRY(cudaMallocAsync(&f->scratch, need, ctx->copy));
        f->scratch_size = need;
    }
    rc = gd__cuda_fp_launch(t->data, nbytes, kind_of(t->dtype), (int)gd_dtype_size(t->dtype),
                            t->ndim, t->shape, f->raw, f->scratch, ctx->copy, err);
    if (rc != 0)
        goto done;
    GD_CUDA_TRY(cudaMemcpyAsync(host_raw, f->raw, sizeof *f->raw, cudaMemcpyDeviceToHost,
                                ctx->copy));
done:
    return rc;
}

static double
value32(uint32_t key)
{
    uint32_t bits = gd__fp_unkey32(key);
    float v;
    memcpy(&v, &bits, 4);
    return v;
}

static double
value64(unsigned long long key)
{
    uint64_t bits = gd__fp_unkey64(key);
    double v;
    memcpy(&v, &bits, 8);
    return v;
}

const struct gd_fingerprint *
gd__cuda_fp_finish(struct gd__cuda_ctx *ctx, const void *host_raw, const struct gd_tensor *t)
{
    struct gd_fingerprint *o;
    if (gd_tensor_nbytes(t) == 0) {
        static struct gd_fingerprint empty; /* no data: the host definitions, no device */
        struct gd_tensor h = *t;
        h.data = NULL;
        return gd_fingerprint_compute(&h, &empty, NULL) == 0 ? &empty : NULL;
    }
    o = &ctx->fp->out;
    const struct gd__fp_raw *r = host_raw;
    memset(o, 0, offsetof(struct gd_fingerprint, samples));
    o->dtype = t->dtype;
    o->ndim = t->ndim;
    memcpy(o->shape, t->shape, sizeof o->shape);
    o->count = gd_tensor_numel(t);
    for (int i = 0; i < 8; i++)
        for (int b = 0; b < 4; b++)
            o->hash[4 * i + b] = (unsigned char)(r->hash[i] >> (8 * b));
    enum gd__fp_kind kind = kind_of(t->dtype);
    o->has_stats = kind != GD__FP_BYTES;
    o->min = o->max = NAN;
    if (o->has_stats) {
        o->sum = r->sum;
        o->sumsq = r->sumsq;
        o->nan_count = (int64_t)r->nan_count;
        o->inf_count = (int64_t)r->inf_count;
        for (int b = 0; b < GD_FP_HIST_BINS; b++)
            o->hist[b] = (int64_t)r->hist[b];
        if (o->count - o->nan_count - o->inf_count > 0) {
            o->min = kind == GD__FP_F64 ? value64(r->min64) : value32(r->min32);
            o->max = kind == GD__FP_F64 ? value64(r->max64) : value32(r->max32);
        }
    }
    o->n_samples = gd__fp_sample_count(o->count);
    memcpy(o->samples, r->samples, (size_t)o->n_samples * gd_dtype_size(t->dtype));
    return o;
}

void
gd__cuda_fp_free(struct gd__cuda_ctx *ctx)
{
    if (ctx->fp == NULL)
        return;
    if (ctx->fp->raw != NULL)
        cudaFree(ctx->fp->raw);
    if (ctx->fp->scratch != NULL)
        cudaFree(ctx->fp->scratch);
    free(ctx->fp);
    ctx->fp = NULL;
}
