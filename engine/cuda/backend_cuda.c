/*
 * backend_cuda.c: the `cuda` backend's vtable: the session context (streams, cuDNN and
 * cuBLASLt handles, workspace), device memory, the environment read at run time, and the
 * capture path: each node output is copied to pinned host memory on a side stream while
 * the next nodes run, and handed to the session in order once its copy has finished.
 */
#include "config.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../core/conv_config.h"
#include "cuda.h"

/* ---- statuses ---- */

static int
device_error(struct gd_err *err, const char *lib, const char *msg, const char *what,
             const char *file, int line)
{
    const char *base = strrchr(file, '/');
    return gd_err_set(err, GD_EDEVICE, "%s: %s: %s (%s:%d)", lib, msg, what,
                      base ? base + 1 : file, line);
}

int
gd__cuda_status_rt(cudaError_t s, const char *what, const char *file, int line,
                   struct gd_err *err)
{
    if (s == cudaSuccess)
        return 0;
    return device_error(err, "CUDA", cudaGetErrorString(s), what, file, line);
}

int
gd__cuda_status_dnn(cudnnStatus_t s, const char *what, const char *file, int line,
                    struct gd_err *err)
{
    if (s == CUDNN_STATUS_SUCCESS)
        return 0;
    if (s == CUDNN_STATUS_NOT_SUPPORTED)
        return gd_err_set(err, GD_ENOTSUP, "cuDNN does not support this: %s", what);
    return device_error(err, "cuDNN", cudnnGetErrorString(s), what, file, line);
}

int
gd__cuda_status_blas(cublasStatus_t s, const char *what, const char *file, int line,
                     struct gd_err *err)
{
    if (s == CUBLAS_STATUS_SUCCESS)
        return 0;
    if (s == CUBLAS_STATUS_NOT_SUPPORTED)
        return gd_err_set(err, GD_ENOTSUP, "cuBLAS does not support this: %s", what);
    char msg[96];
    snprintf(msg, sizeof msg, "status %d", (int)s);
    return device_error(err, "cuBLAS", msg, what, file, line);
}

/* ---- knobs and environment ---- */

static int
check_knobs(const struct gd_knobs *k, struct gd_err *err)
{
    if (k->emulate != GD_EMULATE_NONE)
        return gd_err_set(err, GD_ENOTSUP, "--emulate is for the cpu backend; on cuda use "
                          "--tf32 on, which is the real thing");
    const char *api = k->conv_api[0] != '\0' ? k->conv_api : "graph";
    if (strcmp(api, "graph") != 0 && strcmp(api, "legacy") != 0)
        return gd_err_set(err, GD_EINVAL, "conv API %s is not graph or legacy", k->conv_api);
    const char *a = k->conv_algo;
    if (a[0] != '\0' && strcmp(a, "heuristic") != 0 && strcmp(a, "autotune") != 0 &&
        strcmp(a, "deterministic") != 0) {
        if (strncmp(a, "fixed:", 6) != 0)
            return gd_err_set(err, GD_EINVAL, "conv algorithm %s is not heuristic, autotune, "
                              "deterministic or fixed:CHOICE", a);
        if (gd__conv_choice_check(api, a + 6, strlen(a + 6), "conv algorithm fixed:", err) != 0)
            return err != NULL ? err->code : GD_EINVAL;
    }
    for (const char *p = k->conv_pins; *p != '\0';) {
        /* NODE=CHOICE entries; the session checked the names against the graph */
        size_t len = strcspn(p, ",");
        const char *eq = memchr(p, '=', len);
        if (eq == NULL || eq == p || eq + 1 == p + len)
            return gd_err_set(err, GD_EINVAL, "conv pin %.*s is not NODE=CHOICE", (int)len, p);
        char what[96];
        snprintf(what, sizeof what, "conv pin %.*s=", (int)(eq - p), p);
        if (gd__conv_choice_check(api, eq + 1, (size_t)(p + len - eq - 1), what, err) != 0)
            return err != NULL ? err->code : GD_EINVAL;
        p += len;
        if (*p == ',')
            p++;
    }
    const char *m = k->math_mode;
    if (m[0] != '\0' && strcmp(m, "default") != 0 && strcmp(m, "pedantic") != 0)
        return gd_err_set(err, GD_EINVAL, "math mode %s is not default or pedantic", m);
    if (strcmp(m, "pedantic") == 0 && k->tf32 == 1)
        return gd_err_set(err, GD_EINVAL, "math mode pedantic forbids TF32");
    if (strcmp(m, "pedantic") == 0 && k->reduced_reduction == 1)
        return gd_err_set(err, GD_EINVAL, "math mode pedantic forbids reduced-precision "
                          "reductions");
    if (k->reduced_reduction < -1 || k->reduced_reduction > 1)
        return gd_err_set(err, GD_EINVAL, "reduced_reduction is 0, 1 or -1 (unset), not %d",
                          k->reduced_reduction);
    if (gd_knobs_bitwise(k)) {
        /* bitwise mode runs no cuDNN convolution and no cuBLASLt product: their knobs would
         * be ignored, so they are refused */
        if (k->conv_algo[0] != '\0' || k->conv_pins[0] != '\0' || k->conv_api[0] != '\0')
            return gd_err_set(err, GD_EINVAL, "--repro bitwise runs gpudiff's own convolutions: "
                              "--conv-algo, --conv-api and conv pins do not apply");
        if (k->tf32 == 1 || k->reduced_reduction == 1)
            return gd_err_set(err, GD_EINVAL, "--repro bitwise computes in float32 in cpu's "
                              "order: TF32 and reduced-precision reductions do not apply");
    }
    return 0;
}

static void
env_version(struct gd_env *env, const char *key, int v)
{
    /* CUDA encodes 13000 as 13.0; cuDNN 91900 as 9.19.0; cuBLAS 130000 as 13.0.0 */
    if (strcmp(key, "cudnn") == 0)
        gd_env_set(env, key, "%d.%d.%d", v / 10000, (v / 100) % 100, v % 100);
    else if (strcmp(key, "cublas") == 0)
        gd_env_set(env, key, "%d.%d.%d", v / 10000, (v / 100) % 100, v % 100);
    else
        gd_env_set(env, key, "%d.%d", v / 1000, (v % 1000) / 10);
}

static int
fill_env(struct gd__cuda_ctx *ctx, struct gd_env *env, struct gd_err *err)
{
    int rc = 0, v = 0;
    struct cudaDeviceProp p;
    GD_CUDA_TRY(cudaGetDeviceProperties(&p, ctx->device));
    gd_env_set(env, "gpu_name", "%s", p.name);
    gd_env_set(env, "compute_capability", "%d.%d", p.major, p.minor);
    gd_env_set(env, "sm_count", "%d", p.multiProcessorCount);
    gd_env_set(env, "gpu_memory_bytes", "%zu", p.totalGlobalMem);
    gd_env_set(env, "ecc", "%s", p.ECCEnabled ? "on" : "off");
    gd_env_set(env, "pci_bus", "%04x:%02x:%02x", p.pciDomainID, p.pciBusID, p.pciDeviceID);
    char uuid[40];
    const unsigned char *u = (const unsigned char *)p.uuid.bytes;
    snprintf(uuid, sizeof uuid, "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
             u[0], u[1], u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11], u[12], u[13],
             u[14], u[15]);
    gd_env_set(env, "gpu_uuid", "GPU-%s", uuid);
    GD_CUDA_TRY(cudaDriverGetVersion(&v));
    env_version(env, "cuda_driver_api", v);
    GD_CUDA_TRY(cudaRuntimeGetVersion(&v));
    env_version(env, "cuda_runtime", v);
    env_version(env, "cudnn", (int)cudnnGetVersion());
    env_version(env, "cublas", (int)cublasLtGetVersion());
    /* The kernel driver's own version is only in /proc, not in the runtime API. */
    FILE *f = fopen("/proc/driver/nvidia/version", "r");
    if (f != NULL) {
        char line[256];
        char ver[32];
        /* "Kernel Module  535.129.03" or "Open Kernel Module for x86_64  570.86.15": the
         * version is the first word of digits and dots, not the word after "Module". */
        if (fgets(line, sizeof line, f) != NULL &&
            gd__driver_version_parse(line, ver, sizeof ver) == 0)
            gd_env_set(env, "driver", "%s", ver);
        fclose(f);
    }
    const char *ov = getenv("NVIDIA_TF32_OVERRIDE");
    if (ov != NULL)
        gd_env_set(env, "NVIDIA_TF32_OVERRIDE", "%s", ov);
    const char *ws = getenv("CUBLAS_WORKSPACE_CONFIG");
    if (ws != NULL)
        gd_env_set(env, "CUBLAS_WORKSPACE_CONFIG", "%s", ws);
    gd_env_set(env, "compute_dtype", "float32");
    gd_env_set(env, "tf32", "%s", ctx->tf32 ? "on" : "off");
    gd_env_set(env, "conv_algo", "%s", ctx->knobs.conv_algo[0] ? ctx->knobs.conv_algo : "heuristic");
    gd_env_set(env, "conv_api", "%s", ctx->graph_api ? "graph" : "legacy");
    gd_env_set(env, "cuda_graphs", "%s", ctx->graphs_off ? "off" : "on");
    gd_env_set(env, "math_mode", "%s", ctx->knobs.math_mode[0] ? ctx->knobs.math_mode : "default");
    gd_env_set(env, "reduced_reduction", "%s", ctx->reduced_reduction ? "on" : "off");
    if (ctx->knobs.conv_pins[0] != '\0')
        gd_env_set(env, "conv_pins", "%s", ctx->knobs.conv_pins);
    gd_env_set(env, "repro", "%s", ctx->repro_bitwise ? "bitwise" : "off");
    if (ctx->repro_grid > 0)
        gd_env_set(env, "repro_grid", "%d", ctx->repro_grid);
    if (ctx->repro_naive)
        gd_env_set(env, "repro_gemm", "naive");
done:
    return rc;
}

/* ---- context ---- */

static void cuda_close(void *vctx);

/* Destroys the forward's recording and the host copies it reads. */
static void
recording_drop(struct gd__cuda_ctx *ctx)
{
    if (ctx->graph_exec != NULL) {
        /* a launch may still read the pinned copies */
        cudaStreamSynchronize(ctx->compute);
        cudaGraphExecDestroy(ctx->graph_exec);
    }
    ctx->graph_exec = NULL;
    for (int i = 0; i < ctx->graph_host_n; i++)
        cudaFreeHost(ctx->graph_host[i]);
    free(ctx->graph_host);
    ctx->graph_host = NULL;
    ctx->graph_host_n = ctx->graph_host_cap = 0;
}

static int
cuda_open(const struct gd_knobs *knobs, struct gd_env *env, void **out, struct gd_err *err)
{
    int rc = check_knobs(knobs, err), count = 0;
    if (rc != 0)
        return rc;
    cudaError_t s = cudaGetDeviceCount(&count);
    if (s != cudaSuccess || count == 0)
        return gd_err_set(err, GD_EDEVICE, "no CUDA device: %s",
                          s != cudaSuccess ? cudaGetErrorString(s) : "none found");
    struct gd__cuda_ctx *ctx = calloc(1, sizeof *ctx);
    if (ctx == NULL)
        return gd_err_set(err, GD_ENOMEM, "out of memory");
    ctx->knobs = *knobs;
    ctx->tf32 = knobs->tf32 == 1;
    /* PyTorch's default allows it; pedantic math allows no reduced precision anywhere. */
    ctx->reduced_reduction = knobs->reduced_reduction == 1 ||
                             (knobs->reduced_reduction < 0 &&
                              strcmp(knobs->math_mode, "pedantic") != 0);
    ctx->graph_api = strcmp(knobs->conv_api, "legacy") != 0;
    ctx->repro_bitwise = gd_knobs_bitwise(knobs);
    const char *grid = getenv("GPUDIFF_REPRO_GRID");
    ctx->repro_grid = grid != NULL && atoi(grid) > 0 ? atoi(grid) : 0;
    const char *gemm = getenv("GPUDIFF_REPRO_GEMM");
    ctx->repro_naive = gemm != NULL && strcmp(gemm, "naive") == 0;
    ctx->workspace_limit = knobs->workspace_limit >= 0 ? (size_t)knobs->workspace_limit : SIZE_MAX;
    const char *sync = getenv("GPUDIFF_CUDA_SYNC");
    ctx->sync_each_op = sync != NULL && strcmp(sync, "1") == 0;
    const char *graphs = getenv("GPUDIFF_CUDA_GRAPHS");
    ctx->graphs_off = ctx->sync_each_op || (graphs != NULL && strcmp(graphs, "0") == 0);
    const char *staged = getenv("GPUDIFF_CUDA_STAGED_UPLOAD");
    ctx->stage_off = staged != NULL && strcmp(staged, "0") == 0;
    const char *dev = getenv("GPUDIFF_CUDA_DEVICE");
    ctx->device = dev != NULL ? atoi(dev) : 0;
    if (ctx->device < 0 || ctx->device >= count) {
        free(ctx);
        return gd_err_set(err, GD_EINVAL, "GPUDIFF_CUDA_DEVICE=%s: there are %d devices", dev,
                          count);
    }
    GD_CUDA_TRY(cudaSetDevice(ctx->device));
    {
        /* Keep freed memory in the pool across synchronizations, as framework allocators do:
         * the default threshold (0) would hand it back to the driver at every run's end and
         * make the next run map it again. */
        cudaMemPool_t pool;
        uint64_t keep = UINT64_MAX;
        GD_CUDA_TRY(cudaDeviceGetDefaultMemPool(&pool, ctx->device));
        GD_CUDA_TRY(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep));
        /* the high-water mark counts from this session's start (gd_session_memory) */
        uint64_t zero = 0;
        GD_CUDA_TRY(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrUsedMemHigh, &zero));
    }
    GD_CUDA_TRY(cudaStreamCreateWithFlags(&ctx->compute, cudaStreamNonBlocking));
    GD_CUDA_TRY(cudaStreamCreateWithFlags(&ctx->copy, cudaStreamNonBlocking));
    if (!ctx->repro_bitwise) { /* bitwise mode calls neither library */
        GD_CUDA_TRY(cudnnCreate(&ctx->cudnn));
        GD_CUDA_TRY(cudnnSetStream(ctx->cudnn, ctx->compute));
        GD_CUDA_TRY(cublasLtCreate(&ctx->lt));
    }
    rc = fill_env(ctx, env, err);
    if (ctx->knobs.workspace_limit >= 0)
        gd_env_set(env, "workspace_limit", "%lld", (long long)ctx->knobs.workspace_limit);
done:
    if (rc != 0) {
        cuda_close(ctx);
        return rc;
    }
    *out = ctx;
    return 0;
}

static void
node_fini(struct gd__cuda_node *n)
{
    gd__cuda_graph_node_fini(n);
    if (n->x_desc)
        cudnnDestroyTensorDescriptor(n->x_desc);
    if (n->y_desc)
        cudnnDestroyTensorDescriptor(n->y_desc);
    if (n->b_desc)
        cudnnDestroyTensorDescriptor(n->b_desc);
    if (n->w_desc)
        cudnnDestroyFilterDescriptor(n->w_desc);
    if (n->conv_desc)
        cudnnDestroyConvolutionDescriptor(n->conv_desc);
    if (n->mm_desc)
        cublasLtMatmulDescDestroy(n->mm_desc);
    if (n->a_layout)
        cublasLtMatrixLayoutDestroy(n->a_layout);
    if (n->b_layout)
        cublasLtMatrixLayoutDestroy(n->b_layout);
    if (n->c_layout)
        cublasLtMatrixLayoutDestroy(n->c_layout);
    memset(n, 0, sizeof *n);
}

static void
cuda_close(void *vctx)
{
    struct gd__cuda_ctx *ctx = vctx;
    if (ctx == NULL)
        return;
    if (ctx->compute)
        cudaStreamSynchronize(ctx->compute);
    if (ctx->copy)
        cudaStreamSynchronize(ctx->copy);
    for (int i = 0; i < ctx->n_nodes; i++) {
        node_fini(&ctx->nodes[i]);
        cudaEventDestroy(ctx->node_start[i]);
        cudaEventDestroy(ctx->node_end[i]);
    }
    gd__cuda_graph_fini(ctx);
    recording_drop(ctx);
    for (int i = 0; i < ctx->event_pool_n; i++)
        cudaEventDestroy(ctx->event_pool[i]);
    if (ctx->timer_start)
        cudaEventDestroy(ctx->timer_start);
    if (ctx->timer_stop)
        cudaEventDestroy(ctx->timer_stop);
    if (ctx->workspace)
        cudaFree(ctx->workspace);
    gd__cuda_fp_free(ctx);
    if (ctx->ring)
        cudaFreeHost(ctx->ring);
    for (int i = 0; ctx->stage != NULL && i < GD__CUDA_STAGE_SLOTS; i++)
        if (ctx->stage_done[i])
            cudaEventDestroy(ctx->stage_done[i]);
    if (ctx->stage)
        cudaFreeHost(ctx->stage);
    if (ctx->lt)
        cublasLtDestroy(ctx->lt);
    if (ctx->cudnn)
        cudnnDestroy(ctx->cudnn);
    if (ctx->compute)
        cudaStreamDestroy(ctx->compute);
    if (ctx->copy)
        cudaStreamDestroy(ctx->copy);
    free(ctx->nodes);
    free(ctx->node_start);
    free(ctx->node_end);
    free(ctx->pending);
    free(ctx->event_pool);
    free(ctx);
}

/* Per-node state, sized to the graph on the first op. */
static int
nodes_ensure(struct gd__cuda_ctx *ctx, int n_nodes, struct gd_err *err)
{
    int rc = 0;
    if (ctx->n_nodes >= n_nodes)
        return 0;
    struct gd__cuda_node *nodes = calloc((size_t)n_nodes, sizeof *nodes);
    cudaEvent_t *starts = calloc((size_t)n_nodes, sizeof *starts);
    cudaEvent_t *ends = calloc((size_t)n_nodes, sizeof *ends);
    if (nodes == NULL || starts == NULL || ends == NULL) {
        free(nodes);
        free(starts);
        free(ends);
        return gd_err_set(err, GD_ENOMEM, "out of memory");
    }
    if (ctx->n_nodes > 0) {
        memcpy(nodes, ctx->nodes, (size_t)ctx->n_nodes * sizeof *nodes);
        memcpy(starts, ctx->node_start, (size_t)ctx->n_nodes * sizeof *starts);
        memcpy(ends, ctx->node_end, (size_t)ctx->n_nodes * sizeof *ends);
    }
    int first_new = ctx->n_nodes;
    free(ctx->nodes);
    free(ctx->node_start);
    free(ctx->node_end);
    ctx->nodes = nodes;
    ctx->node_start = starts;
    ctx->node_end = ends;
    for (int i = first_new; i < n_nodes; i++) {
        GD_CUDA_TRY(cudaEventCreate(&ctx->node_start[i]));
        GD_CUDA_TRY(cudaEventCreate(&ctx->node_end[i]));
        ctx->n_nodes = i + 1;
    }
done:
    return rc;
}

struct gd__cuda_node *
gd__cuda_node_of(const struct gd_op_call *c)
{
    struct gd__cuda_ctx *ctx = gd__cuda_ctx_of(c);
    int i = (int)(c->node - c->graph->nodes);
    return i < ctx->n_nodes ? &ctx->nodes[i] : NULL;
}

int
gd__cuda_workspace(struct gd__cuda_ctx *ctx, size_t bytes, struct gd_err *err)
{
    int rc = 0;
    if (bytes <= ctx->workspace_size)
        return 0;
    /* A recording holds the workspace's address: it cannot change under one, and a new one
     * makes the recording stale (its forward then runs unrecorded, and is recorded again). */
    if (ctx->recording)
        return gd_err_set(err, GD_EDEVICE, "the workspace cannot grow while a forward is "
                          "recorded");
    recording_drop(ctx);
    if (ctx->workspace != NULL)
        GD_CUDA_TRY(cudaFreeAsync(ctx->workspace, ctx->compute));
    ctx->workspace = NULL;
    ctx->workspace_size = 0;
    GD_CUDA_TRY(cudaMallocAsync(&ctx->workspace, bytes, ctx->compute));
    ctx->workspace_size = bytes;
done:
    return rc;
}

int
gd__cuda_scratch(struct gd__cuda_ctx *ctx, size_t bytes, void **out, struct gd_err *err)
{
    int rc = 0;
    GD_CUDA_TRY(cudaMallocAsync(out, bytes ? bytes : 1, ctx->compute));
done:
    return rc;
}

void
gd__cuda_scratch_free(struct gd__cuda_ctx *ctx, void *p)
{
    if (p != NULL)
        cudaFreeAsync(p, ctx->compute);
}

/* ---- memory ---- */

static int
cuda_alloc(void *vctx, struct gd_tensor *t, struct gd_err *err)
{
    struct gd__cuda_ctx *ctx = vctx;
    int rc = 0;
    size_t n = gd_tensor_nbytes(t);
    t->data = NULL;
    GD_CUDA_TRY(cudaMallocAsync(&t->data, n ? n : 1, ctx->compute));
    t->owns_data = 0;
    t->device = 1;
done:
    return rc;
}

static void
cuda_release(void *vctx, struct gd_tensor *t)
{
    struct gd__cuda_ctx *ctx = vctx;
    if (t->data == NULL)
        return;
    if (ctx->capturing) {
        /* The copy stream may still read it: free after both streams are past it. */
        cudaEvent_t ev;
        if (cudaEventCreateWithFlags(&ev, cudaEventDisableTiming) == cudaSuccess) {
            cudaEventRecord(ev, ctx->compute);
            cudaStreamWaitEvent(ctx->copy, ev, 0);
            cudaEventDestroy(ev);
        }
        cudaFreeAsync(t->data, ctx->copy);
    } else {
        cudaFreeAsync(t->data, ctx->compute);
    }
    t->data = NULL;
}

/*
 * Uploads of STAGE_MIN bytes or more go through pinned memory of the context's own, in
 * slots of STAGE_SLOT bytes: the host copies a piece into a free slot while the DMA engine
 * moves the piece before, at the link's pinned speed, and returns once the last piece is
 * queued (the caller's memory is read by then, so it may free it). A pageable copy makes
 * the driver stage the bytes the same way, but in its own steps and with a
 * synchronization at the end; here the first node can be queued while the last piece moves.
 */
#define STAGE_MIN ((size_t)256 << 10)
#define STAGE_SLOT ((size_t)1 << 20)

static int
staged_upload(struct gd__cuda_ctx *ctx, void *dst, const void *src, size_t n,
              struct gd_err *err)
{
    int rc = 0;
    if (ctx->stage == NULL) {
        GD_CUDA_TRY(cudaHostAlloc(&ctx->stage, STAGE_SLOT * GD__CUDA_STAGE_SLOTS,
                                  cudaHostAllocDefault));
        for (int i = 0; i < GD__CUDA_STAGE_SLOTS; i++)
            GD_CUDA_TRY(cudaEventCreateWithFlags(&ctx->stage_done[i], cudaEventDisableTiming));
    }
    for (size_t off = 0; off < n; off += STAGE_SLOT) {
        size_t len = n - off < STAGE_SLOT ? n - off : STAGE_SLOT;
        int slot = ctx->stage_next;
        char *buf = (char *)ctx->stage + (size_t)slot * STAGE_SLOT;
        ctx->stage_next = (slot + 1) % GD__CUDA_STAGE_SLOTS;
        /* the slot's previous piece has left it (an event never recorded is complete) */
        GD_CUDA_TRY(cudaEventSynchronize(ctx->stage_done[slot]));
        memcpy(buf, (const char *)src + off, len);
        GD_CUDA_TRY(cudaMemcpyAsync((char *)dst + off, buf, len, cudaMemcpyHostToDevice,
                                    ctx->compute));
        GD_CUDA_TRY(cudaEventRecord(ctx->stage_done[slot], ctx->compute));
    }
done:
    return rc;
}

static int
cuda_upload(void *vctx, struct gd_tensor *dst, const struct gd_tensor *src, struct gd_err *err)
{
    struct gd__cuda_ctx *ctx = vctx;
    int rc = 0;
    if (gd_tensor_nbytes(dst) != gd_tensor_nbytes(src) || dst->dtype != src->dtype)
        return gd_err_set(err, GD_EINVAL, "upload between tensors of different size or dtype");
    if (ctx->recording) {
        /* A recording cannot read pageable memory: the bytes go to pinned memory kept with
         * it, and every replay copies those same bytes. */
        void *pinned = NULL;
        size_t n = gd_tensor_nbytes(src);
        if (ctx->graph_host_n == ctx->graph_host_cap) {
            int cap = ctx->graph_host_cap ? ctx->graph_host_cap * 2 : 16;
            void **grown = realloc(ctx->graph_host, (size_t)cap * sizeof *grown);
            if (grown == NULL)
                return gd_err_set(err, GD_ENOMEM, "out of memory");
            ctx->graph_host = grown;
            ctx->graph_host_cap = cap;
        }
        GD_CUDA_TRY(cudaHostAlloc(&pinned, n ? n : 1, cudaHostAllocDefault));
        ctx->graph_host[ctx->graph_host_n++] = pinned;
        memcpy(pinned, src->data, n);
        GD_CUDA_TRY(cudaMemcpyAsync(dst->data, pinned, n, cudaMemcpyHostToDevice, ctx->compute));
        return 0;
    }
    if (gd_tensor_nbytes(src) >= STAGE_MIN && !ctx->stage_off)
        return staged_upload(ctx, dst->data, src->data, gd_tensor_nbytes(src), err);
    GD_CUDA_TRY(cudaMemcpyAsync(dst->data, src->data, gd_tensor_nbytes(src),
                                cudaMemcpyHostToDevice, ctx->compute));
    /* The source is pageable host memory the caller may free at once. */
    GD_CUDA_TRY(cudaStreamSynchronize(ctx->compute));
done:
    return rc;
}

/* ---- timing and faults ---- */

static int
cuda_op_begin(void *vctx, int node_index, int timing, struct gd_err *err)
{
    struct gd__cuda_ctx *ctx = vctx;
    /* Nodes running outside a recording may set up anew (other shapes, descriptors): a
     * recording made before is not replayed after them. */
    if (ctx->graph_exec != NULL && !ctx->recording)
        recording_drop(ctx);
    int rc = nodes_ensure(ctx, node_index + 1, err);
    if (rc != 0)
        return rc;
    if (timing)
        GD_CUDA_TRY(cudaEventRecord(ctx->node_start[node_index], ctx->compute));
done:
    return rc;
}

static int
cuda_op_end(void *vctx, int node_index, int timing, struct gd_err *err)
{
    struct gd__cuda_ctx *ctx = vctx;
    int rc = 0;
    /* The end event is also what a capture's copy waits for. */
    if (timing)
        GD_CUDA_TRY(cudaEventRecord(ctx->node_end[node_index], ctx->compute));
    if (ctx->sync_each_op) {
        GD_CUDA_TRY(cudaStreamSynchronize(ctx->compute));
        GD_CUDA_TRY(cudaGetLastError());
    }
done:
    return rc;
}

/* ---- capture ---- */

static int
event_get(struct gd__cuda_ctx *ctx, cudaEvent_t *out, struct gd_err *err)
{
    int rc = 0;
    if (ctx->event_pool_n > 0) {
        *out = ctx->event_pool[--ctx->event_pool_n];
        return 0;
    }
    GD_CUDA_TRY(cudaEventCreateWithFlags(out, cudaEventDisableTiming));
done:
    return rc;
}

static void
event_put(struct gd__cuda_ctx *ctx, cudaEvent_t ev)
{
    if (ctx->event_pool_n == ctx->event_pool_cap) {
        int cap = ctx->event_pool_cap ? ctx->event_pool_cap * 2 : 64;
        cudaEvent_t *p = realloc(ctx->event_pool, (size_t)cap * sizeof *p);
        if (p == NULL) {
            cudaEventDestroy(ev);
            return;
        }
        ctx->event_pool = p;
        ctx->event_pool_cap = cap;
    }
    ctx->event_pool[ctx->event_pool_n++] = ev;
}

/* Hands the oldest pending copy to the session (waiting for it when `wait`). Returns 1 when
 * one was delivered, 0 when none was ready, < 0 on error. */
static int
deliver_oldest(struct gd__cuda_ctx *ctx, int wait, struct gd_err *err)
{
    int rc = 0;
    if (ctx->pending_n == 0)
        return 0;
    struct gd__cuda_pending *p = &ctx->pending[ctx->pending_first];
    if (!wait) {
        cudaError_t q = cudaEventQuery(p->done);
        if (q == cudaErrorNotReady)
            return 0;
        GD_CUDA_TRY(q);
    } else {
        GD_CUDA_TRY(cudaEventSynchronize(p->done));
    }
    float ms = 0;
    /* the node's time goes with its first output, or that output's first piece */
    int first = p->req.output_slot == 0 && p->req.piece_offset == 0;
    if (first && cudaEventElapsedTime(&ms, ctx->node_start[p->req.node_index],
                                      ctx->node_end[p->req.node_index]) == cudaSuccess)
        p->req.time_us = ms * 1e3;
    else if (!first)
        p->req.time_us = 0;
    p->req.algo = p->algo;
    p->req.math = p->math;
    if (p->fp_raw != NULL) {
        /* the fingerprint covers the whole output, whose first piece carries it */
        struct gd_tensor whole = p->host;
        if (p->req.piece_ndim > 0) {
            whole.ndim = p->req.piece_ndim;
            memcpy(whole.shape, p->req.piece_shape, sizeof whole.shape);
        }
        p->req.fp = gd__cuda_fp_finish(ctx, p->fp_raw, &whole);
    } else {
        p->req.fp = NULL;
    }
    rc = p->deliver(p->session, &p->req, &p->host, err);
    event_put(ctx, p->done);
    ctx->ring_used -= p->ring_len;
    ctx->pending_first = (ctx->pending_first + 1) % ctx->pending_cap;
    ctx->pending_n--;
    if (rc != 0)
        return rc;
    return 1;
done:
    return rc;
}

/* Waits for every copy and delivers them all, in order. */
static int
drain(struct gd__cuda_ctx *ctx, struct gd_err *err)
{
    int rc;
    while ((rc = deliver_oldest(ctx, 1, err)) == 1)
        ;
    return rc;
}

/* The pinned ring of a run that captures fingerprints only: each layer's slot is the
 * kernels' raw result (about 17 KiB), so 16 MiB keeps some 900 layers in flight. */
#define FP_RING_BYTES ((size_t)16 << 20)

/* Space for n bytes in the pinned ring, delivering older copies to make room; *len gets the
 * rounded length. For tensors (`tensors`) the ring starts at knobs.host_memory (whose
 * pieces always fit), else at 1 GiB or GPUDIFF_CUDA_PINNED_MB; for fingerprints only at
 * FP_RING_BYTES, and it is made again at the tensors' size when a layer's tensor is asked
 * for later. Without a limit it grows (after a full drain) when one layer is larger than it. */
static int
ring_reserve(struct gd__cuda_ctx *ctx, size_t n, int tensors, size_t *off, size_t *len,
             struct gd_err *err)
{
    int rc = 0;
    size_t align = 256;
    n = (n + align - 1) / align * align;
    if (n > ctx->ring_size || (tensors && !ctx->ring_tensors)) {
        rc = drain(ctx, err);
        if (rc < 0)
            return rc;
        if (ctx->ring)
            GD_CUDA_TRY(cudaFreeHost(ctx->ring));
        ctx->ring = NULL;
        ctx->ring_size = 0;
        size_t size = FP_RING_BYTES;
        if (tensors) {
            const char *mb = getenv("GPUDIFF_CUDA_PINNED_MB");
            size = (size_t)1 << 30;
            if (mb != NULL && atol(mb) > 0)
                size = (size_t)atol(mb) << 20;
            if (ctx->knobs.host_memory > 0)
                size = ((size_t)ctx->knobs.host_memory + align - 1) / align * align;
        }
        while (size < n)
            size *= 2;
        GD_CUDA_TRY(cudaHostAlloc((void **)&ctx->ring, size, cudaHostAllocDefault));
        ctx->ring_size = size;
        ctx->ring_tensors = ctx->ring_tensors || tensors;
        ctx->ring_head = 0;
        ctx->ring_used = 0;
    }
    for (;;) {
        /* Contiguous space at the head, or at the start when the tail end is too short. */
        size_t tail = ctx->pending_n ? ctx->pending[ctx->pending_first].ring_off : 0;
        size_t head = ctx->ring_head;
        if (ctx->pending_n == 0) {
            ctx->ring_head = 0;
            head = 0;
            tail = 0;
        }
        int wrapped = ctx->pending_n > 0 && head <= tail;
        if (!wrapped && head + n <= ctx->ring_size) {
            *off = head;
            break;
        }
        if (!wrapped && n <= tail) {
            /* skip the short end: account it to the newest copy so it is freed with it */
            ctx->pending[(ctx->pending_first + ctx->pending_n - 1) % ctx->pending_cap].ring_len +=
                ctx->ring_size - head;
            ctx->ring_used += ctx->ring_size - head;
            ctx->ring_head = 0;
            *off = 0;
            break;
        }
        if (wrapped && head + n <= tail) {
            *off = head;
            break;
        }
        rc = deliver_oldest(ctx, 1, err);
        if (rc < 0)
            return rc;
    }
    ctx->ring_head = *off + n;
    ctx->ring_used += n;
    *len = n;
    return 0;
done:
    return rc;
}

/* Queues the copy of elements [first, first + count) of t (all of it when `piece` is 0)
 * into the ring when the session asked for the tensor, and with the first piece the
 * fingerprint of the whole of t when it asked for that (fp); delivers what has arrived. */
static int
capture_piece(struct gd__cuda_ctx *ctx, const struct gd_tensor *t,
              const struct gd__capture_req *req, gd__deliver_fn deliver, void *session,
              int piece, int64_t first, int64_t count, struct gd_err *err)
{
    int rc = 0;
    size_t es = gd_dtype_size(t->dtype);
    size_t bytes = !req->want_tensor ? 0 : piece ? (size_t)count * es : gd_tensor_nbytes(t);
    int with_fp = req->want_fingerprint && first == 0;
    /* the ring slot holds the tensor's bytes, then the fingerprint kernels' result */
    size_t tensor_bytes = (bytes + 255) / 256 * 256;
    size_t slot_bytes = tensor_bytes + (with_fp ? gd__cuda_fp_ring_bytes() : 0);
    if (ctx->pending_n == ctx->pending_cap) {
        int cap = ctx->pending_cap ? ctx->pending_cap * 2 : 64;
        struct gd__cuda_pending *p = malloc((size_t)cap * sizeof *p);
        if (p == NULL)
            return gd_err_set(err, GD_ENOMEM, "out of memory");
        for (int i = 0; i < ctx->pending_n; i++)
            p[i] = ctx->pending[(ctx->pending_first + i) % ctx->pending_cap];
        free(ctx->pending);
        ctx->pending = p;
        ctx->pending_cap = cap;
        ctx->pending_first = 0;
    }
    size_t off = 0, len = 0;
    rc = ring_reserve(ctx, slot_bytes, req->want_tensor, &off, &len, err);
    if (rc < 0)
        return rc;
    struct gd__cuda_pending *p =
        &ctx->pending[(ctx->pending_first + ctx->pending_n) % ctx->pending_cap];
    memset(p, 0, sizeof *p);
    p->req = *req;
    if (piece) {
        p->req.piece_offset = first;
        p->req.piece_ndim = t->ndim;
        memcpy(p->req.piece_shape, t->shape, sizeof p->req.piece_shape);
    }
    snprintf(p->algo, sizeof p->algo, "%s", req->algo ? req->algo : "");
    snprintf(p->math, sizeof p->math, "%s", req->math ? req->math : "");
    p->host = *t;
    if (piece) {
        p->host.ndim = 1;
        p->host.shape[0] = count;
    }
    p->host.data = req->want_tensor ? ctx->ring + off : NULL;
    p->fp_raw = with_fp ? ctx->ring + off + tensor_bytes : NULL;
    p->host.device = 0;
    p->host.owns_data = 0;
    p->ring_off = off;
    p->ring_len = len;
    p->deliver = deliver;
    p->session = session;
    rc = event_get(ctx, &p->done, err);
    if (rc != 0)
        return rc;
    /* The copy waits for the node (its end event), then runs beside the next nodes. */
    GD_CUDA_TRY(cudaStreamWaitEvent(ctx->copy, ctx->node_end[req->node_index], 0));
    if (p->fp_raw != NULL && (rc = gd__cuda_fp_enqueue(ctx, t, p->fp_raw, err)) != 0)
        goto done;
    if (req->want_tensor)
        GD_CUDA_TRY(cudaMemcpyAsync(p->host.data, (const char *)t->data + (size_t)first * es,
                                    bytes, cudaMemcpyDeviceToHost, ctx->copy));
    GD_CUDA_TRY(cudaEventRecord(p->done, ctx->copy));
    ctx->pending_n++;
    /* Hand over whatever has already arrived, without waiting. */
    while ((rc = deliver_oldest(ctx, 0, err)) == 1)
        ;
    return rc < 0 ? rc : 0;
done:
    /* The copy was not queued: this failure ends the run, and the session with it. */
    event_put(ctx, p->done);
    return rc;
}

static int
cuda_capture(void *vctx, const struct gd_tensor *t, const struct gd__capture_req *req,
             gd__deliver_fn deliver, void *session, struct gd_err *err)
{
    struct gd__cuda_ctx *ctx = vctx;
    ctx->capturing = 1;
    size_t bytes = gd_tensor_nbytes(t);
    size_t limit = ctx->knobs.host_memory > 0 ? (size_t)ctx->knobs.host_memory : 0;
    size_t fp_bytes = req->want_fingerprint ? gd__cuda_fp_ring_bytes() : 0;
    /* a fingerprint alone is a few kilobytes: never in pieces */
    if (limit == 0 || !req->want_tensor || bytes + fp_bytes <= limit)
        return capture_piece(ctx, t, req, deliver, session, 0, 0, 0, err);
    /* Too large for the limit: pieces of at most half the ring each, so one can be copied
     * while the one before is written */
    if (limit < 4096)
        limit = 4096;
    int64_t n = gd_tensor_numel(t), per = (int64_t)(limit / 2 / gd_dtype_size(t->dtype));
    int rc = 0;
    for (int64_t e0 = 0; e0 < n && rc == 0; e0 += per)
        rc = capture_piece(ctx, t, req, deliver, session, 1, e0, n - e0 < per ? n - e0 : per,
                           err);
    return rc;
}

static int
cuda_flush(void *vctx, struct gd_err *err)
{
    struct gd__cuda_ctx *ctx = vctx;
    int rc = 0;
    if (ctx->recording) /* nothing was captured to the host; the launch comes after */
        return 0;
    GD_CUDA_TRY(cudaStreamSynchronize(ctx->compute));
    rc = drain(ctx, err);
    if (rc < 0)
        goto done;
    rc = 0;
    GD_CUDA_TRY(cudaStreamSynchronize(ctx->copy));
    ctx->capturing = 0;
done:
    return rc;
}

/* ---- timing without capture, outputs to the host, algorithm offers ---- */

static int
cuda_timer_start(void *vctx, struct gd_err *err)
{
    struct gd__cuda_ctx *ctx = vctx;
    int rc = 0;
    if (ctx->timer_start == NULL)
        GD_CUDA_TRY(cudaEventCreate(&ctx->timer_start));
    if (ctx->timer_stop == NULL)
        GD_CUDA_TRY(cudaEventCreate(&ctx->timer_stop));
    GD_CUDA_TRY(cudaEventRecord(ctx->timer_start, ctx->compute));
done:
    return rc;
}

static int
cuda_timer_stop(void *vctx, double *us, struct gd_err *err)
{
    struct gd__cuda_ctx *ctx = vctx;
    int rc = 0;
    float ms = 0;
    if (ctx->timer_start == NULL || ctx->timer_stop == NULL)
        return gd_err_set(err, GD_EINVAL, "the device timer was not started");
    GD_CUDA_TRY(cudaEventRecord(ctx->timer_stop, ctx->compute));
    GD_CUDA_TRY(cudaEventSynchronize(ctx->timer_stop));
    GD_CUDA_TRY(cudaEventElapsedTime(&ms, ctx->timer_start, ctx->timer_stop));
    *us = (double)ms * 1e3;
done:
    return rc;
}

static int
cuda_download(void *vctx, void *dst, const struct gd_tensor *t, struct gd_err *err)
{
    struct gd__cuda_ctx *ctx = vctx;
    int rc = 0;
    size_t n = gd_tensor_nbytes(t);
    if (n == 0)
        return 0;
    /* Into the caller's pageable memory, as a framework's .cpu() copies a result. */
    GD_CUDA_TRY(cudaMemcpyAsync(dst, t->data, n, cudaMemcpyDeviceToHost, ctx->compute));
    GD_CUDA_TRY(cudaStreamSynchronize(ctx->compute));
done:
    return rc;
}

static int
cuda_algo_offers(void *vctx, int node_index, struct gd_algo_offer *out, int max, int *n,
                 struct gd_err *err)
{
    struct gd__cuda_ctx *ctx = vctx;
    (void)err;
    int have = node_index < ctx->n_nodes ? ctx->nodes[node_index].n_offers : 0;
    int k = have < max ? have : max;
    if (k > 0)
        memcpy(out, ctx->nodes[node_index].offers, (size_t)k * sizeof *out);
    *n = k;
    return 0;
}

int
gd__cuda_conv_pin(const struct gd__cuda_ctx *ctx, const char *name, char *out, size_t size)
{
    size_t name_len = strlen(name);
    for (const char *p = ctx->knobs.conv_pins; *p != '\0';) {
        size_t len = strcspn(p, ",");
        const char *eq = memchr(p, '=', len);
        if (eq != NULL && (size_t)(eq - p) == name_len && strncmp(p, name, name_len) == 0) {
            snprintf(out, size, "%.*s", (int)(p + len - eq - 1), eq + 1);
            return 1;
        }
        p += len;
        if (*p == ',')
            p++;
    }
    if (size > 0)
        out[0] = '\0';
    return 0;
}

/* ---- gd_session_forward's recording ---- */

/*
 * The first forward of a generation runs its nodes; the second runs them under stream
 * capture (the choices were all made in the first, so nothing is timed or synchronized in
 * it) and launches the CUDA graph made of them; later ones launch that graph. The graph is
 * the same kernels, copies and allocations on the same buffers in the same order, so it
 * computes the same bits; it saves the host's work per node (launches, allocations).
 */
static int
cuda_forward_begin(void *vctx, uint64_t generation, struct gd_err *err)
{
    struct gd__cuda_ctx *ctx = vctx;
    int rc = 0;
    if (ctx->graphs_off)
        return 0;
    if (ctx->graph_exec != NULL && ctx->graph_gen == generation) {
        GD_CUDA_TRY(cudaGraphLaunch(ctx->graph_exec, ctx->compute));
        return 1;
    }
    if (ctx->graph_exec != NULL) {
        /* of other inputs: it may not run any more, and they need the stream idle */
        GD_CUDA_TRY(cudaStreamSynchronize(ctx->compute));
        recording_drop(ctx);
    }
    if (ctx->have_seen && ctx->seen_gen == generation) {
        if (cudaStreamBeginCapture(ctx->compute, cudaStreamCaptureModeRelaxed) != cudaSuccess) {
            cudaGetLastError();
            ctx->graphs_off = 1;
            return 0;
        }
        ctx->recording = 1;
        ctx->graph_gen = generation;
        return 0;
    }
    ctx->have_seen = 1;
    ctx->seen_gen = generation;
done:
    return rc;
}

static int
cuda_forward_end(void *vctx, int run_rc, int *rerun, struct gd_err *err)
{
    struct gd__cuda_ctx *ctx = vctx;
    int rc = 0;
    *rerun = 0;
    if (!ctx->recording)
        return 0;
    ctx->recording = 0;
    cudaGraph_t graph = NULL;
    cudaGraphExec_t exec = NULL;
    cudaError_t s = cudaStreamEndCapture(ctx->compute, &graph);
    if (run_rc == 0 && s == cudaSuccess && graph != NULL)
        s = cudaGraphInstantiate(&exec, graph, 0);
    if (graph != NULL)
        cudaGraphDestroy(graph);
    if (run_rc != 0 || s != cudaSuccess || exec == NULL) {
        /* Something in the forward cannot be recorded (an op that waits for the device, a
         * copy from pageable memory): a capture's failure is not sticky, so clear it, and
         * run every forward of this session node by node. */
        cudaGetLastError();
        if (exec != NULL)
            cudaGraphExecDestroy(exec);
        recording_drop(ctx);
        ctx->graphs_off = 1;
        *rerun = 1;
        return 0;
    }
    ctx->graph_exec = exec;
    GD_CUDA_TRY(cudaGraphLaunch(exec, ctx->compute));
done:
    return rc;
}

/* ---- the op table: NULL where the backend has no such op ---- */

extern const struct gd__backend gd__backend_cuda;

/* ops.def's CUDA column picks the entry: gd__cuda_<fn> where it is 1, NULL where it is 0. */
#define GD__CUDA_ENTRY_1(fn) gd__cuda_##fn
#define GD__CUDA_ENTRY_0(fn) NULL
#define GD__CUDA_ENTRY(has, fn) GD__CUDA_ENTRY_##has(fn)

static const gd_op_fn cuda_ops[GD_OP_COUNT] = {
#define GD_OP(e, fn, name, family, min_in, max_in, red, ulps, disc, ill, cuda) \
    [GD_OP_##e] = GD__CUDA_ENTRY(cuda, fn),
#include "../core/ops.def"
#undef GD_OP
};

int
gd__cuda_half_fallback(struct gd_op_call *c, struct gd_err *err)
{
    return gd__half_call(&gd__backend_cuda, cuda_ops[c->node->op], c, err);
}

static int
cuda_memory(void *vctx, struct gd_memory *out, struct gd_err *err)
{
    struct gd__cuda_ctx *ctx = vctx;
    int rc = 0;
    cudaMemPool_t pool;
    uint64_t high = 0, now = 0;
    GD_CUDA_TRY(cudaDeviceGetDefaultMemPool(&pool, ctx->device));
    GD_CUDA_TRY(cudaMemPoolGetAttribute(pool, cudaMemPoolAttrUsedMemHigh, &high));
    GD_CUDA_TRY(cudaMemPoolGetAttribute(pool, cudaMemPoolAttrUsedMemCurrent, &now));
    out->device_peak = (int64_t)high;
    out->device_now = (int64_t)now;
    out->capture_buffer = (int64_t)ctx->ring_size;
done:
    return rc;
}

/*
 * The ops that take float16 and bfloat16 tensors themselves: the data movement kernels (they
 * copy by element size, any dtype), the GEMMs (cuBLASLt with half operands), and the kernels
 * templated on the storage type (half.cuh: each element loaded as float32, the float32
 * arithmetic, one rounding on the store, which is what float32 copies gave, so the same
 * bits): the unary and binary element-wise ops, the comparisons, the normalizations of
 * op_norm.cu's tree, Softmax and LogSoftmax (the warp kernel along the last axis). An entry
 * sends the cases its kernels do not take through gd__cuda_half_fallback(). The others run
 * through engine/core/half_call.c.
 */
static const unsigned char cuda_half_native[GD_OP_COUNT] = {
    [GD_OP_RESHAPE] = 1, [GD_OP_FLATTEN] = 1, [GD_OP_SQUEEZE] = 1, [GD_OP_UNSQUEEZE] = 1,
    [GD_OP_IDENTITY] = 1, [GD_OP_TRANSPOSE] = 1, [GD_OP_CONCAT] = 1, [GD_OP_SLICE] = 1,
    [GD_OP_SPLIT] = 1, [GD_OP_EXPAND] = 1, [GD_OP_TILE] = 1, [GD_OP_DEPTH_TO_SPACE] = 1,
    [GD_OP_SPACE_TO_DEPTH] = 1, [GD_OP_GATHER] = 1, [GD_OP_GATHER_ELEMENTS] = 1,
    [GD_OP_GATHER_ND] = 1, [GD_OP_WHERE] = 1, [GD_OP_TRILU] = 1,
    [GD_OP_GEMM] = 1, [GD_OP_MATMUL] = 1,
    /* op_act.cu */
    [GD_OP_RELU] = 1, [GD_OP_LEAKY_RELU] = 1, [GD_OP_ELU] = 1, [GD_OP_SELU] = 1,
    [GD_OP_SIGMOID] = 1, [GD_OP_TANH] = 1, [GD_OP_SOFTPLUS] = 1, [GD_OP_HARD_SIGMOID] = 1,
    [GD_OP_HARD_SWISH] = 1, [GD_OP_GELU] = 1, [GD_OP_FLOOR] = 1, [GD_OP_CEIL] = 1,
    [GD_OP_ROUND] = 1, [GD_OP_SIGN] = 1, [GD_OP_ABS] = 1, [GD_OP_NEG] = 1, [GD_OP_SQRT] = 1,
    [GD_OP_EXP] = 1, [GD_OP_LOG] = 1, [GD_OP_CLIP] = 1, [GD_OP_ERF] = 1,
    [GD_OP_RECIPROCAL] = 1, [GD_OP_SOFTSIGN] = 1, [GD_OP_THRESHOLDED_RELU] = 1,
    [GD_OP_SIN] = 1, [GD_OP_COS] = 1, [GD_OP_TAN] = 1, [GD_OP_ASIN] = 1, [GD_OP_ACOS] = 1,
    [GD_OP_ATAN] = 1, [GD_OP_SINH] = 1, [GD_OP_COSH] = 1, [GD_OP_ASINH] = 1,
    [GD_OP_ACOSH] = 1, [GD_OP_ATANH] = 1, [GD_OP_CELU] = 1, [GD_OP_SHRINK] = 1,
    [GD_OP_MISH] = 1,
    /* op_eltwise.cu */
    [GD_OP_ADD] = 1, [GD_OP_SUB] = 1, [GD_OP_MUL] = 1, [GD_OP_DIV] = 1, [GD_OP_MOD] = 1,
    [GD_OP_POW] = 1, [GD_OP_PRELU] = 1, [GD_OP_GREATER] = 1, [GD_OP_LESS] = 1,
    [GD_OP_EQUAL] = 1, [GD_OP_GREATER_OR_EQUAL] = 1, [GD_OP_LESS_OR_EQUAL] = 1,
    /* op_norm.cu, op_reduce.cu */
    [GD_OP_LAYER_NORM] = 1, [GD_OP_INSTANCE_NORM] = 1, [GD_OP_GROUP_NORM] = 1,
    [GD_OP_MEAN_VARIANCE_NORM] = 1, [GD_OP_SOFTMAX] = 1, [GD_OP_LOG_SOFTMAX] = 1,
};

const struct gd__backend gd__backend_cuda = {
    .name = "cuda",
    .description = "NVIDIA GPU through cuDNN, cuBLASLt and gpudiff's own kernels",
    .compute_dtype = GD_F32,
    .open = cuda_open,
    .close = cuda_close,
    .alloc = cuda_alloc,
    .release = cuda_release,
    .upload = cuda_upload,
    .capture = cuda_capture,
    .flush = cuda_flush,
    .op_begin = cuda_op_begin,
    .op_end = cuda_op_end,
    .ops = cuda_ops,
    .timer_start = cuda_timer_start,
    .timer_stop = cuda_timer_stop,
    .download = cuda_download,
    .algo_offers = cuda_algo_offers,
    .convert = gd__cuda_convert,
    .half_native = cuda_half_native,
    .memory = cuda_memory,
    .forward_begin = cuda_forward_begin,
    .forward_end = cuda_forward_end,
    .tables = gd__cuda_repro_tables,
};
