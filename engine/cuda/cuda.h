/*
 * cuda.h: what the CUDA backend's files share (C for backend_cuda.c, C++ for the .cu op
 * files): the session context, status checking, and one entry point per op.
 *
 * Only engine/cuda/ calls cudaMalloc/cudaFree. Every CUDA, cuDNN and cuBLAS status goes
 * through GD_CUDA_TRY, which turns a failure into GD_EDEVICE with the library's message,
 * file and line. GPUDIFF_CUDA_SYNC=1 synchronizes after each op so an asynchronous fault is
 * reported at the op that caused it.
 */
#ifndef GPUDIFF_CUDA_H
#define GPUDIFF_CUDA_H

#include <cublasLt.h>
#include <cuda_runtime_api.h>
#include <cudnn.h>

#include "../core/internal.h"

#ifdef __cplusplus
extern "C" {
#endif

/*
 * A convolution's geometry as cuDNN's graph API sees it (conv_graph.c): rank-4 (1-D and 2-D
 * ops, NCHW) or rank-5 (3-D, NCDHW) packed tensors, the padding cuDNN applies at both ends,
 * and the byte alignment of the three buffers (part of what a plan was made for, as
 * PyTorch keys its plans). transpose: backward data, x is dy and y is dx.
 */
struct gd__conv_geom {
    int transpose;
    int rank;
    int64_t x[5], w[5], y[5];
    int64_t pad[3], stride[3], dilation[3];
    int64_t align[3];
};

struct gd__conv_plan; /* conv_graph.c: an execution plan and what it was chosen from */

/* Pinned slots of the staged uploads (backend_cuda.c). */
#define GD__CUDA_STAGE_SLOTS 8

/* Per node, what the backend keeps between runs: descriptors and the algorithm chosen for
 * the shapes it last saw. Made on the node's first run, destroyed at close. */
struct gd__cuda_node {
    int ready;                      /* descriptors made for the shapes below */
    int64_t key[19];                /* the shapes, params and alignments the choice was for */
    cudnnTensorDescriptor_t x_desc, y_desc, b_desc;
    cudnnFilterDescriptor_t w_desc;
    cudnnConvolutionDescriptor_t conv_desc;
    int algo;                       /* cuDNN algorithm id */
    cudnnMathType_t math;           /* math type of that algorithm */
    size_t workspace;               /* bytes the algorithm needs */
    cublasLtMatmulDesc_t mm_desc;
    cublasLtMatrixLayout_t a_layout, b_layout, c_layout;
    cublasLtMatmulAlgo_t mm_algo;
    char algo_text[128];            /* what the per-layer record says */
    int reduced_half;               /* a half GEMM whose split-K sums are in the half format */
    int pin;                        /* cuDNN id from knobs.conv_pins; -1 none */
    char pin_text[80];              /* the pin's text (graph: an engine config); "" none */
    struct gd__conv_plan *plan;     /* graph API: the session's plan for this geometry */
    void *vpack;                    /* graph API: the variant pack of the last execution */
    void *vpack_ptr[4];             /* and the x, w, y, workspace it holds */
    int n_offers;                   /* what cuDNN offered at the last choice (op_conv.cu) */
    struct gd_algo_offer offers[GD_ALGO_OFFERS_MAX];
};

/* One captured output on its way to the host. */
struct gd__cuda_pending {
    struct gd__capture_req req;
    char algo[128];
    char math[16];
    struct gd_tensor host;          /* header; data points into the pinned ring */
    size_t ring_off, ring_len;
    cudaEvent_t done;               /* the copy finished */
    cudaEvent_t start, end;         /* the node's compute, for its time */
    gd__deliver_fn deliver;
    void *session;
    void *fp_raw;                   /* fp: where the fingerprint's raw result lands; NULL none */
};

struct gd__cuda_ctx {
    struct gd_knobs knobs;
    int device;
    int sync_each_op;               /* GPUDIFF_CUDA_SYNC=1 */
    int tf32;                       /* the knob resolved: 1 tensor cores may round to TF32 */
    int reduced_reduction;          /* the knob resolved: 1 half GEMMs may reduce in half */
    cudaStream_t compute, copy;
    cudnnHandle_t cudnn;
    cublasLtHandle_t lt;
    void *workspace;
    size_t workspace_size;
    size_t workspace_limit;         /* the knob; SIZE_MAX when unset */
    struct gd__cuda_node *nodes;
    int n_nodes;
    cudaEvent_t *node_start, *node_end; /* per node, recorded around its op */
    /* capture: a ring of pinned host memory and a FIFO of copies in flight */
    unsigned char *ring;
    size_t ring_size, ring_head, ring_used;
    int ring_tensors;               /* the ring was made for tensors, not fingerprints only */
    struct gd__cuda_pending *pending;
    int pending_cap, pending_first, pending_n;
    cudaEvent_t *event_pool;
    int event_pool_n, event_pool_cap;
    int capturing;                  /* this run's outputs go to the host */
    cudaEvent_t timer_start, timer_stop; /* gd_session_forward's, made on first use */
    int graph_api;                  /* knobs.conv_api: 1 graph (the default), 0 legacy */
    /* gd_session_forward's recording, a CUDA graph of its nodes (backend_cuda.c) */
    int graphs_off;                 /* GPUDIFF_CUDA_GRAPHS=0, GPUDIFF_CUDA_SYNC=1, or a
                                     * recording failed: every forward runs its nodes */
    int recording;                  /* the compute stream is being captured */
    int have_seen;                  /* a forward of generation seen_gen ran unrecorded */
    uint64_t seen_gen, graph_gen;   /* and the generation graph_exec holds */
    cudaGraphExec_t graph_exec;
    void **graph_host;              /* pinned copies of host data the recording reads */
    int graph_host_n, graph_host_cap;
    struct gd__conv_plan **plans;   /* graph API: plans by geometry, shared by the nodes */
    int n_plans, plans_cap;
    struct gd__cuda_fp *fp;         /* fp: fingerprint buffers (capture_fp.c); NULL until used */
    /* uploads through pinned slots (backend_cuda.c, staged_upload); NULL until the first */
    void *stage;
    cudaEvent_t stage_done[GD__CUDA_STAGE_SLOTS]; /* each slot's last copy */
    int stage_next;
    int stage_off;                  /* GPUDIFF_CUDA_STAGED_UPLOAD=0: pageable copies */
    /* --repro bitwise (repro_table.c, repro_*.cu) */
    int repro_bitwise;              /* knobs.repro is bitwise: the session runs repro_ops */
    int repro_grid;                 /* GPUDIFF_REPRO_GRID: most blocks a repro launch uses; 0 any */
    int repro_naive;                /* GPUDIFF_REPRO_GEMM=naive: products one thread per element */
};

/* The tables of a session with these knobs (struct gd__backend's tables): the bitwise ones
 * for --repro bitwise (repro_table.c), else as given. */
void gd__cuda_repro_tables(const struct gd_knobs *knobs, const gd_op_fn **ops,
                           const unsigned char **half_native);

/* ---- fp: fingerprints of captured layers, computed on the copy stream (capture_fp.c) ---- */

/* Pinned ring bytes a fingerprint's result takes. */
size_t gd__cuda_fp_ring_bytes(void);
/* Enqueues on ctx->copy (which already waits for the node) the fingerprint of t, its raw
 * result copied to host_raw (pinned). */
int gd__cuda_fp_enqueue(struct gd__cuda_ctx *ctx, const struct gd_tensor *t, void *host_raw,
                        struct gd_err *err);
/* The fingerprint of t from the raw result at host_raw (copy finished); borrowed from ctx
 * until the next call. */
const struct gd_fingerprint *gd__cuda_fp_finish(struct gd__cuda_ctx *ctx, const void *host_raw,
                                                const struct gd_tensor *t);
/* Frees the buffers (streams synchronized). */
void gd__cuda_fp_free(struct gd__cuda_ctx *ctx);

/* Maps a status to 0 or GD_EDEVICE with "what: library message (file:line)". */
int gd__cuda_status_rt(cudaError_t s, const char *what, const char *file, int line,
                       struct gd_err *err);
int gd__cuda_status_dnn(cudnnStatus_t s, const char *what, const char *file, int line,
                        struct gd_err *err);
int gd__cuda_status_blas(cublasStatus_t s, const char *what, const char *file, int line,
                         struct gd_err *err);

#ifdef __cplusplus
}
static inline int
gd__cuda_status(cudaError_t s, const char *w, const char *f, int l, struct gd_err *e)
{
    return gd__cuda_status_rt(s, w, f, l, e);
}
static inline int
gd__cuda_status(cudnnStatus_t s, const char *w, const char *f, int l, struct gd_err *e)
{
    return gd__cuda_status_dnn(s, w, f, l, e);
}
static inline int
gd__cuda_status(cublasStatus_t s, const char *w, const char *f, int l, struct gd_err *e)
{
    return gd__cuda_status_blas(s, w, f, l, e);
}
#else
#define gd__cuda_status(s, w, f, l, e)                                   \
    _Generic((s), cudaError_t: gd__cuda_status_rt,                      \
             cudnnStatus_t: gd__cuda_status_dnn,                        \
             cublasStatus_t: gd__cuda_status_blas)((s), (w), (f), (l), (e))
#endif

/* Evaluates a CUDA, cuDNN or cuBLAS call; on failure sets rc and jumps to `done`. */
#define GD_CUDA_TRY(expr)                                                         \
    do {                                                                          \
        rc = gd__cuda_status((expr), #expr, __FILE__, __LINE__, err);             \
        if (rc != 0)                                                              \
            goto done;                                                            \
    } while (0)

/* Checks the last kernel launch. */
#define GD_CUDA_CHECK_LAUNCH() GD_CUDA_TRY(cudaGetLastError())

#ifdef __cplusplus
extern "C" {
#endif

/* The session context and the node's cache entry of an op call. */
static inline struct gd__cuda_ctx *
gd__cuda_ctx_of(const struct gd_op_call *c)
{
    return (struct gd__cuda_ctx *)c->ctx;
}

struct gd__cuda_node *gd__cuda_node_of(const struct gd_op_call *c);

/* The choice knobs.conv_pins gives the node called name into out (cut at size): 1 when
 * there is one, 0 when the node is not pinned. */
int gd__cuda_conv_pin(const struct gd__cuda_ctx *ctx, const char *name, char *out, size_t size);

/* ---- cuDNN's graph API for convolutions (conv_graph.c) ---- */

/* How a convolution's engine config is chosen (knobs.conv_algo, or a pin). */
enum gd__conv_how { GD__CONV_HEURISTIC, GD__CONV_AUTOTUNE, GD__CONV_DETERMINISTIC,
                    GD__CONV_FIXED };

/*
 * Points nd->plan at the session's plan for geometry g chosen as `how` says (fixed: the
 * engine config text `fixed`), making it when there is none: heuristics, filtering by the
 * numerical notes, timing for autotune (on the buffers x, w, y, which it overwrites), and
 * the offers kept in nd. GD_ENOTSUP when nothing usable is left, naming why.
 */
int gd__cuda_graph_prepare(struct gd__cuda_ctx *ctx, struct gd__cuda_node *nd,
                           const struct gd__conv_geom *g, enum gd__conv_how how,
                           const char *fixed, int pinned, void *x, const void *w, void *y,
                           struct gd_err *err);

/* Runs nd->plan on x, w, y (stream-ordered on the compute stream). */
int gd__cuda_graph_execute(struct gd__cuda_ctx *ctx, struct gd__cuda_node *nd, const void *x,
                           const void *w, void *y, struct gd_err *err);

/* The layer record of nd->plan: algo (docs/CUDA_KERNELS.md's format) and math. */
void gd__cuda_graph_record(const struct gd__cuda_ctx *ctx, const struct gd__cuda_node *nd,
                           char *algo, size_t algo_size, char *math, size_t math_size);

/* Frees the node's variant pack, and (at close) every plan of the session. */
void gd__cuda_graph_node_fini(struct gd__cuda_node *nd);
void gd__cuda_graph_fini(struct gd__cuda_ctx *ctx);

/* Makes ctx->workspace at least `bytes` large (stream-ordered on the compute stream). */
int gd__cuda_workspace(struct gd__cuda_ctx *ctx, size_t bytes, struct gd_err *err);

/* A temporary device buffer on the compute stream, and its release. */
int gd__cuda_scratch(struct gd__cuda_ctx *ctx, size_t bytes, void **out, struct gd_err *err);
void gd__cuda_scratch_free(struct gd__cuda_ctx *ctx, void *p);

/* Converts between float tensors of one element count in device memory (half.cu): the
 * backend's struct gd__backend convert. */
int gd__cuda_convert(void *ctx, struct gd_tensor *dst, const struct gd_tensor *src,
                     struct gd_err *err);

/*
 * Runs call c with this backend's entry for its op on float32 copies of its half tensors
 * (engine/core/half_call.c): what an entry that takes half tensors itself (half_native in
 * backend_cuda.c) does with the cases its kernels do not cover (float inputs of two dtypes,
 * an axis the kernel does not walk). The entry then sees float32 tensors only.
 */
int gd__cuda_half_fallback(struct gd_op_call *c, struct gd_err *err);

/* Entry points, one per op (NULL in the table where the backend lacks one). */
#define GD_OP(e, fn, name, family, min_in, max_in, red, ulps, disc, ill, cuda) \
    int gd__cuda_##fn(struct gd_op_call *c, struct gd_err *err);
#include "../core/ops.def"
#undef GD_OP

#ifdef __cplusplus
}
#endif
#endif
