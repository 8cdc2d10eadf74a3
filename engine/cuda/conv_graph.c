/*
 * conv_graph.c: Conv and ConvTranspose through cuDNN's graph API (the backend descriptor
 * API of cuDNN 9, what PyTorch reaches through cudnn-frontend): a one-operation graph per
 * geometry (a forward convolution, or backward data for ConvTranspose), engine configs from
 * the heuristics (CUDNN_HEUR_MODE_A, then CUDNN_HEUR_MODE_FALLBACK when none of those
 * builds), filtered by their numerical notes as PyTorch filters them, one of them chosen
 * (the first that builds, the fastest of up to GRAPH_AUTOTUNE_MAX timed, or a fixed one),
 * and its execution plan cached per geometry for the session: every node of that geometry,
 * and every later run, executes the same plan. op_conv.cu does the padding, the crop and
 * the bias around it, for both APIs alike.
 *
 * Every enum used here exists in cuDNN 9.0's cudnn_graph.h (the floor of the V100 build);
 * the numerical notes are read by value, with names for the values 0..9 of cuDNN 9.19.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../core/conv_config.h"
#include "cuda.h"

/* PyTorch's torch.backends.cudnn.benchmark_limit default: autotune times at most this many
 * plans, in the heuristics' order. */
#define GRAPH_AUTOTUNE_MAX 10
/* Engine configs read from one heuristics query. */
#define GRAPH_CANDIDATES_MAX 64
/* Descriptors a plan keeps alive: its graph (3 tensors, the convolution, the operation,
 * the graph), its engine config with the engine and knob choices of a fixed one. */
#define GRAPH_KEEP_MAX (8 + GD__CONV_KNOBS_MAX)

/* Bits of the numerical notes (1u << cudnnBackendNumericalNote_t) and their record tags. */
static const char *const note_tags[] = {"tc", "dci", "rpr", "fft", "nondet", "winograd",
                                        "wino4x4", "wino6x6", "wino13x13", "strictnan"};
enum { NOTE_TC = 0, NOTE_DCI = 1, NOTE_NONDET = 4 };
/* The behaviour note recorded: CUDNN_BEHAVIOR_NOTE_RUNTIME_COMPILATION (0). */
#define BEHAVIOR_RTC 1u

struct gd__conv_plan {
    struct gd__conv_geom geom;
    enum gd__conv_how how;
    char fixed[80];                 /* the fixed choice's text; "" otherwise */
    cudnnBackendDescriptor_t keep[GRAPH_KEEP_MAX];
    int n_keep;
    cudnnBackendDescriptor_t plan;
    int64_t workspace;
    char config[80];                /* the engine config run */
    unsigned notes, behavior;
    int n_offers;
    struct gd_algo_offer offers[GD_ALGO_OFFERS_MAX];
};

/* One engine config the heuristics gave, described. */
struct candidate {
    cudnnBackendDescriptor_t cfg;
    struct gd__conv_config c;
    char text[80];
    unsigned notes, behavior;
    int64_t workspace;              /* -1 until built */
    double time_us;                 /* -1 until timed */
    int failed;                     /* its plan did not build, or too much workspace */
};

/* ---- statuses ---- */

static int
graph_status(cudnnStatus_t s, const char *what, const char *file, int line, struct gd_err *err)
{
    if (s == CUDNN_STATUS_SUCCESS)
        return 0;
    char last[160];
    last[0] = '\0';
    cudnnGetLastErrorString(last, sizeof last);
    const char *base = strrchr(file, '/');
    int code = s / 1000 * 1000 == CUDNN_STATUS_NOT_SUPPORTED ? GD_ENOTSUP : GD_EDEVICE;
    return gd_err_set(err, code, "cuDNN: %s%s%s: %s (%s:%d)", cudnnGetErrorString(s),
                      last[0] ? ": " : "", last, what, base ? base + 1 : file, line);
}

#define GT(expr)                                                              \
    do {                                                                      \
        rc = graph_status((expr), #expr, __FILE__, __LINE__, err);            \
        if (rc != 0)                                                          \
            goto done;                                                        \
    } while (0)

static void
destroy(cudnnBackendDescriptor_t *d)
{
    if (*d != NULL)
        cudnnBackendDestroyDescriptor(*d);
    *d = NULL;
}

static int
set_i64(cudnnBackendDescriptor_t d, cudnnBackendAttributeName_t a, int n, const int64_t *v)
{
    return cudnnBackendSetAttribute(d, a, CUDNN_TYPE_INT64, n, v);
}

/* ---- the operation graph ---- */

/* A packed tensor of rank dims with unique id uid and the given byte alignment. */
static int
make_tensor(cudnnBackendDescriptor_t *out, int rank, const int64_t *dims, int64_t uid,
            int64_t align, struct gd_err *err)
{
    int rc = 0;
    int64_t strides[5];
    cudnnDataType_t dt = CUDNN_DATA_FLOAT;
    strides[rank - 1] = 1;
    for (int i = rank - 2; i >= 0; i--)
        strides[i] = strides[i + 1] * dims[i + 1];
    GT(cudnnBackendCreateDescriptor(CUDNN_BACKEND_TENSOR_DESCRIPTOR, out));
    GT(cudnnBackendSetAttribute(*out, CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &dt));
    GT(set_i64(*out, CUDNN_ATTR_TENSOR_DIMENSIONS, rank, dims));
    GT(set_i64(*out, CUDNN_ATTR_TENSOR_STRIDES, rank, strides));
    GT(set_i64(*out, CUDNN_ATTR_TENSOR_UNIQUE_ID, 1, &uid));
    GT(set_i64(*out, CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, 1, &align));
    GT(cudnnBackendFinalize(*out));
done:
    return rc;
}

/* The graph of one convolution; its descriptors go to p->keep (the graph last). */
static int
make_graph(struct gd__cuda_ctx *ctx, struct gd__conv_plan *p, struct gd_err *err)
{
    int rc = 0;
    const struct gd__conv_geom *g = &p->geom;
    cudnnBackendDescriptor_t x = NULL, w = NULL, y = NULL, conv = NULL, op = NULL, graph = NULL;
    int64_t nsp = g->rank - 2, sp = 3 - nsp; /* rank 4 uses (h, w), rank 5 (d, h, w) */
    cudnnDataType_t comp = CUDNN_DATA_FLOAT;
    cudnnConvolutionMode_t mode = CUDNN_CROSS_CORRELATION;
    float alpha = 1.0f, beta = 0.0f;
    rc = make_tensor(&x, g->rank, g->x, 'x', g->align[0], err);
    if (rc == 0)
        rc = make_tensor(&w, g->rank, g->w, 'w', g->align[1], err);
    if (rc == 0)
        rc = make_tensor(&y, g->rank, g->y, 'y', g->align[2], err);
    if (rc != 0)
        goto done;
    /* The compute type is float32 with TF32 on or off: TF32 is a matter of the engine
     * (its tensor-core note), as in PyTorch, not of the operation. */
    GT(cudnnBackendCreateDescriptor(CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR, &conv));
    GT(cudnnBackendSetAttribute(conv, CUDNN_ATTR_CONVOLUTION_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1,
                                &comp));
    GT(cudnnBackendSetAttribute(conv, CUDNN_ATTR_CONVOLUTION_CONV_MODE,
                                CUDNN_TYPE_CONVOLUTION_MODE, 1, &mode));
    GT(set_i64(conv, CUDNN_ATTR_CONVOLUTION_SPATIAL_DIMS, 1, &nsp));
    GT(set_i64(conv, CUDNN_ATTR_CONVOLUTION_DILATIONS, (int)nsp, g->dilation + sp));
    GT(set_i64(conv, CUDNN_ATTR_CONVOLUTION_FILTER_STRIDES, (int)nsp, g->stride + sp));
    GT(set_i64(conv, CUDNN_ATTR_CONVOLUTION_PRE_PADDINGS, (int)nsp, g->pad + sp));
    GT(set_i64(conv, CUDNN_ATTR_CONVOLUTION_POST_PADDINGS, (int)nsp, g->pad + sp));
    GT(cudnnBackendFinalize(conv));
    if (!g->transpose) {
        GT(cudnnBackendCreateDescriptor(CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR,
                                        &op));
        GT(cudnnBackendSetAttribute(op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_ALPHA,
                                    CUDNN_TYPE_FLOAT, 1, &alpha));
        GT(cudnnBackendSetAttribute(op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_BETA,
                                    CUDNN_TYPE_FLOAT, 1, &beta));
        GT(cudnnBackendSetAttribute(op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_CONV_DESC,
                                    CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &conv));
        GT(cudnnBackendSetAttribute(op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X,
                                    CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &x));
        GT(cudnnBackendSetAttribute(op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W,
                                    CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &w));
        GT(cudnnBackendSetAttribute(op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y,
                                    CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &y));
    } else {
        GT(cudnnBackendCreateDescriptor(
            CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_DATA_DESCRIPTOR, &op));
        GT(cudnnBackendSetAttribute(op, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_ALPHA,
                                    CUDNN_TYPE_FLOAT, 1, &alpha));
        GT(cudnnBackendSetAttribute(op, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_BETA,
                                    CUDNN_TYPE_FLOAT, 1, &beta));
        GT(cudnnBackendSetAttribute(op, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_CONV_DESC,
                                    CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &conv));
        GT(cudnnBackendSetAttribute(op, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DY,
                                    CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &x));
        GT(cudnnBackendSetAttribute(op, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_W,
                                    CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &w));
        GT(cudnnBackendSetAttribute(op, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DX,
                                    CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &y));
    }
    GT(cudnnBackendFinalize(op));
    GT(cudnnBackendCreateDescriptor(CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR, &graph));
    GT(cudnnBackendSetAttribute(graph, CUDNN_ATTR_OPERATIONGRAPH_HANDLE, CUDNN_TYPE_HANDLE, 1,
                                &ctx->cudnn));
    GT(cudnnBackendSetAttribute(graph, CUDNN_ATTR_OPERATIONGRAPH_OPS,
                                CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &op));
    GT(cudnnBackendFinalize(graph));
done:
    {
        cudnnBackendDescriptor_t made[6] = {x, w, y, conv, op, graph};
        for (int i = 0; i < 6; i++)
            if (made[i] != NULL)
                p->keep[p->n_keep++] = made[i];
    }
    return rc;
}

static cudnnBackendDescriptor_t
graph_of(const struct gd__conv_plan *p)
{
    return p->keep[5];
}

/* ---- engine configs ---- */

/* The engine index, knobs and notes of an engine config. */
static int
describe(cudnnBackendDescriptor_t cfg, struct candidate *c, struct gd_err *err)
{
    int rc = 0;
    cudnnBackendDescriptor_t engine = NULL, knobs[GD__CONV_KNOBS_MAX] = {NULL};
    int64_t n = 0;
    int32_t notes[16];
    memset(&c->c, 0, sizeof c->c);
    c->notes = c->behavior = 0;
    GT(cudnnBackendCreateDescriptor(CUDNN_BACKEND_ENGINE_DESCRIPTOR, &engine));
    GT(cudnnBackendGetAttribute(cfg, CUDNN_ATTR_ENGINECFG_ENGINE, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1,
                                &n, &engine));
    GT(cudnnBackendGetAttribute(engine, CUDNN_ATTR_ENGINE_GLOBAL_INDEX, CUDNN_TYPE_INT64, 1, &n,
                                &c->c.engine));
    /* cudnnBackendNumericalNote_t and cudnnBackendBehaviorNote_t are enums: int-sized */
    GT(cudnnBackendGetAttribute(engine, CUDNN_ATTR_ENGINE_NUMERICAL_NOTE,
                                CUDNN_TYPE_NUMERICAL_NOTE, 16, &n, notes));
    for (int64_t i = 0; i < n && i < 16; i++)
        if (notes[i] >= 0 && notes[i] < 32)
            c->notes |= 1u << notes[i];
    GT(cudnnBackendGetAttribute(engine, CUDNN_ATTR_ENGINE_BEHAVIOR_NOTE, CUDNN_TYPE_BEHAVIOR_NOTE,
                                16, &n, notes));
    for (int64_t i = 0; i < n && i < 16; i++)
        if (notes[i] == 0)
            c->behavior |= BEHAVIOR_RTC;
    for (int i = 0; i < GD__CONV_KNOBS_MAX; i++)
        GT(cudnnBackendCreateDescriptor(CUDNN_BACKEND_KNOB_CHOICE_DESCRIPTOR, &knobs[i]));
    GT(cudnnBackendGetAttribute(cfg, CUDNN_ATTR_ENGINECFG_KNOB_CHOICES,
                                CUDNN_TYPE_BACKEND_DESCRIPTOR, GD__CONV_KNOBS_MAX, &n, knobs));
    for (int64_t i = 0; i < n && i < GD__CONV_KNOBS_MAX; i++) {
        int32_t type = 0;
        int64_t value = 0, got = 0;
        GT(cudnnBackendGetAttribute(knobs[i], CUDNN_ATTR_KNOB_CHOICE_KNOB_TYPE,
                                    CUDNN_TYPE_KNOB_TYPE, 1, &got, &type));
        GT(cudnnBackendGetAttribute(knobs[i], CUDNN_ATTR_KNOB_CHOICE_KNOB_VALUE, CUDNN_TYPE_INT64,
                                    1, &got, &value));
        int at = c->c.n_knobs++;
        while (at > 0 && c->c.knob_type[at - 1] > type) {
            c->c.knob_type[at] = c->c.knob_type[at - 1];
            c->c.knob_value[at] = c->c.knob_value[at - 1];
            at--;
        }
        c->c.knob_type[at] = type;
        c->c.knob_value[at] = value;
    }
    gd__conv_config_format(&c->c, c->text, sizeof c->text);
done:
    destroy(&engine);
    for (int i = 0; i < GD__CONV_KNOBS_MAX; i++)
        destroy(&knobs[i]);
    return rc;
}

/* "tc,nondet" for the notes that are set (and "rtc" for runtime compilation). */
static void
notes_text(unsigned notes, unsigned behavior, char *buf, size_t size)
{
    size_t at = 0;
    buf[0] = '\0';
    for (unsigned i = 0; i < sizeof note_tags / sizeof note_tags[0]; i++)
        if (notes & (1u << i)) {
            int k = snprintf(buf + at, size - at, "%s%s", at ? "," : "", note_tags[i]);
            at = k > 0 && at + (size_t)k < size ? at + (size_t)k : at;
        }
    if (behavior & BEHAVIOR_RTC)
        snprintf(buf + at, size - at, "%srtc", at ? "," : "");
}

/* 1 when the choice may not run: inputs converted to a narrower type (always, as PyTorch
 * filters float32 convolutions), tensor cores with TF32 off (their float32 path rounds the
 * inputs to TF32), a non-deterministic engine when deterministic is asked for. */
static int
filtered_out(const struct gd__cuda_ctx *ctx, unsigned notes, int deterministic)
{
    if (notes & (1u << NOTE_DCI))
        return 1;
    if (!ctx->tf32 && (notes & (1u << NOTE_TC)))
        return 1;
    return deterministic && (notes & (1u << NOTE_NONDET));
}

/* Appends the configs heuristics mode `mode` gives, described, skipping texts already in
 * the list and the filtered ones (counted in *dropped). */
static int
heuristics(struct gd__cuda_ctx *ctx, struct gd__conv_plan *p, cudnnBackendHeurMode_t mode,
           struct candidate *cand, int *n_cand, int *dropped, struct gd_err *err)
{
    int rc = 0;
    cudnnBackendDescriptor_t heur = NULL, graph = graph_of(p);
    cudnnBackendDescriptor_t cfgs[GRAPH_CANDIDATES_MAX] = {NULL};
    int64_t count = 0;
    GT(cudnnBackendCreateDescriptor(CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR, &heur));
    GT(cudnnBackendSetAttribute(heur, CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH,
                                CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &graph));
    GT(cudnnBackendSetAttribute(heur, CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE, 1, &mode));
    GT(cudnnBackendFinalize(heur));
    GT(cudnnBackendGetAttribute(heur, CUDNN_ATTR_ENGINEHEUR_RESULTS, CUDNN_TYPE_BACKEND_DESCRIPTOR,
                                0, &count, NULL));
    if (count > GRAPH_CANDIDATES_MAX)
        count = GRAPH_CANDIDATES_MAX;
    for (int64_t i = 0; i < count; i++)
        GT(cudnnBackendCreateDescriptor(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR, &cfgs[i]));
    GT(cudnnBackendGetAttribute(heur, CUDNN_ATTR_ENGINEHEUR_RESULTS, CUDNN_TYPE_BACKEND_DESCRIPTOR,
                                count, &count, cfgs));
    for (int64_t i = 0; i < count && *n_cand < GRAPH_CANDIDATES_MAX; i++) {
        struct candidate c = {.cfg = cfgs[i], .workspace = -1, .time_us = -1};
        rc = describe(cfgs[i], &c, err);
        if (rc != 0)
            goto done;
        int dup = 0;
        for (int k = 0; k < *n_cand; k++)
            dup |= strcmp(cand[k].text, c.text) == 0;
        if (dup)
            continue;
        if (filtered_out(ctx, c.notes, p->how == GD__CONV_DETERMINISTIC)) {
            (*dropped)++;
            continue;
        }
        cand[(*n_cand)++] = c;
        cfgs[i] = NULL; /* the candidate owns it now */
    }
done:
    destroy(&heur);
    for (int i = 0; i < GRAPH_CANDIDATES_MAX; i++)
        destroy(&cfgs[i]);
    return rc;
}

/* The execution plan of cfg and its workspace; GD_ENOTSUP when cuDNN cannot build it. */
static int
build_plan(struct gd__cuda_ctx *ctx, cudnnBackendDescriptor_t cfg, cudnnBackendDescriptor_t *out,
           int64_t *workspace, struct gd_err *err)
{
    int rc = 0;
    int64_t n = 0;
    cudnnBackendDescriptor_t plan = NULL;
    GT(cudnnBackendCreateDescriptor(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR, &plan));
    GT(cudnnBackendSetAttribute(plan, CUDNN_ATTR_EXECUTION_PLAN_HANDLE, CUDNN_TYPE_HANDLE, 1,
                                &ctx->cudnn));
    GT(cudnnBackendSetAttribute(plan, CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG,
                                CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &cfg));
    GT(cudnnBackendFinalize(plan));
    GT(cudnnBackendGetAttribute(plan, CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE, CUDNN_TYPE_INT64, 1,
                                &n, workspace));
    *out = plan;
    plan = NULL;
done:
    destroy(&plan);
    return rc;
}

/* A variant pack of x, w, y and the workspace. */
static int
make_vpack(cudnnBackendDescriptor_t *out, const void *x, const void *w, void *y, void *ws,
           struct gd_err *err)
{
    int rc = 0;
    int64_t uids[3] = {'x', 'w', 'y'};
    void *ptrs[3] = {(void *)x, (void *)w, y};
    cudnnBackendDescriptor_t vp = NULL;
    GT(cudnnBackendCreateDescriptor(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR, &vp));
    GT(set_i64(vp, CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, 3, uids));
    GT(cudnnBackendSetAttribute(vp, CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR, 3,
                                ptrs));
    GT(cudnnBackendSetAttribute(vp, CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, 1,
                                &ws));
    GT(cudnnBackendFinalize(vp));
    *out = vp;
    vp = NULL;
done:
    destroy(&vp);
    return rc;
}

static int
cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The device time of plan on x, w, y: the median of 3 runs after one warm-up, as
 * cudnn-frontend's median-of-three sampling. */
static int
time_plan(struct gd__cuda_ctx *ctx, cudnnBackendDescriptor_t plan, int64_t workspace,
          const void *x, const void *w, void *y, double *us, struct gd_err *err)
{
    int rc = 0;
    cudnnBackendDescriptor_t vp = NULL;
    cudaEvent_t a = NULL, b = NULL;
    double t[3];
    rc = gd__cuda_workspace(ctx, (size_t)workspace, err);
    if (rc == 0)
        rc = make_vpack(&vp, x, w, y, ctx->workspace, err);
    if (rc != 0)
        goto done;
    rc = gd__cuda_status_rt(cudaEventCreate(&a), "cudaEventCreate", __FILE__, __LINE__, err);
    if (rc == 0)
        rc = gd__cuda_status_rt(cudaEventCreate(&b), "cudaEventCreate", __FILE__, __LINE__, err);
    if (rc != 0)
        goto done;
    GT(cudnnBackendExecute(ctx->cudnn, plan, vp));
    for (int i = 0; i < 3; i++) {
        float ms = 0;
        cudaEventRecord(a, ctx->compute);
        GT(cudnnBackendExecute(ctx->cudnn, plan, vp));
        cudaEventRecord(b, ctx->compute);
        rc = gd__cuda_status_rt(cudaEventSynchronize(b), "cudaEventSynchronize", __FILE__,
                                __LINE__, err);
        if (rc == 0)
            rc = gd__cuda_status_rt(cudaEventElapsedTime(&ms, a, b), "cudaEventElapsedTime",
                                    __FILE__, __LINE__, err);
        if (rc != 0)
            goto done;
        t[i] = ms * 1e3;
    }
    qsort(t, 3, sizeof t[0], cmp_double);
    *us = t[1];
done:
    if (a != NULL)
        cudaEventDestroy(a);
    if (b != NULL)
        cudaEventDestroy(b);
    destroy(&vp);
    return rc;
}

/* ---- choosing ---- */

/* The engine config text names: its engine on this graph with those knobs. */
static int
fixed_config(struct gd__cuda_ctx *ctx, struct gd__conv_plan *p, struct candidate *out,
             struct gd_err *err)
{
    int rc = 0;
    struct gd__conv_config want;
    cudnnBackendDescriptor_t engine = NULL, cfg = NULL, graph = graph_of(p);
    cudnnBackendDescriptor_t knobs[GD__CONV_KNOBS_MAX] = {NULL};
    int64_t count = 0, n = 0;
    rc = gd__conv_config_parse(p->fixed, strlen(p->fixed), &want, err);
    if (rc != 0)
        return rc;
    GT(cudnnBackendGetAttribute(graph, CUDNN_ATTR_OPERATIONGRAPH_ENGINE_GLOBAL_COUNT,
                                CUDNN_TYPE_INT64, 1, &n, &count));
    if (want.engine >= count)
        return gd_err_set(err, GD_ENOTSUP, "engine config %s: cuDNN has engines 0 to %lld for "
                          "this convolution", p->fixed, (long long)count - 1);
    GT(cudnnBackendCreateDescriptor(CUDNN_BACKEND_ENGINE_DESCRIPTOR, &engine));
    GT(cudnnBackendSetAttribute(engine, CUDNN_ATTR_ENGINE_OPERATION_GRAPH,
                                CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &graph));
    GT(set_i64(engine, CUDNN_ATTR_ENGINE_GLOBAL_INDEX, 1, &want.engine));
    {
        cudnnStatus_t s = cudnnBackendFinalize(engine);
        if (s != CUDNN_STATUS_SUCCESS) {
            rc = graph_status(s, "cudnnBackendFinalize(engine)", __FILE__, __LINE__, err);
            gd_err_prefix(err, "engine config %s does not apply to this convolution: ",
                          p->fixed);
            goto done;
        }
    }
    for (int i = 0; i < want.n_knobs; i++) {
        int32_t type = (int32_t)want.knob_type[i];
        GT(cudnnBackendCreateDescriptor(CUDNN_BACKEND_KNOB_CHOICE_DESCRIPTOR, &knobs[i]));
        GT(cudnnBackendSetAttribute(knobs[i], CUDNN_ATTR_KNOB_CHOICE_KNOB_TYPE,
                                    CUDNN_TYPE_KNOB_TYPE, 1, &type));
        GT(set_i64(knobs[i], CUDNN_ATTR_KNOB_CHOICE_KNOB_VALUE, 1, &want.knob_value[i]));
        GT(cudnnBackendFinalize(knobs[i]));
    }
    GT(cudnnBackendCreateDescriptor(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR, &cfg));
    GT(cudnnBackendSetAttribute(cfg, CUDNN_ATTR_ENGINECFG_ENGINE, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1,
                                &engine));
    if (want.n_knobs > 0)
        GT(cudnnBackendSetAttribute(cfg, CUDNN_ATTR_ENGINECFG_KNOB_CHOICES,
                                    CUDNN_TYPE_BACKEND_DESCRIPTOR, want.n_knobs, knobs));
    {
        cudnnStatus_t s = cudnnBackendFinalize(cfg);
        if (s != CUDNN_STATUS_SUCCESS) {
            rc = graph_status(s, "cudnnBackendFinalize(engine config)", __FILE__, __LINE__, err);
            gd_err_prefix(err, "engine config %s: cuDNN refuses its knobs: ", p->fixed);
            goto done;
        }
    }
    memset(out, 0, sizeof *out);
    rc = describe(cfg, out, err);
    if (rc != 0)
        goto done;
    /* the knobs asked for, as asked (the unnamed ones take the engine's defaults) */
    out->c = want;
    gd__conv_config_format(&want, out->text, sizeof out->text);
    out->cfg = cfg;
    out->workspace = -1;
    out->time_us = -1;
    cfg = NULL;
done:
    /* the engine and knob choices stay with the plan, which holds the config */
    if (rc == 0) {
        p->keep[p->n_keep++] = engine;
        for (int i = 0; i < want.n_knobs; i++)
            p->keep[p->n_keep++] = knobs[i];
    } else {
        destroy(&engine);
        for (int i = 0; i < GD__CONV_KNOBS_MAX; i++)
            destroy(&knobs[i]);
    }
    destroy(&cfg);
    return rc;
}

static void
offer_of(const struct gd__cuda_ctx *ctx, const struct candidate *c, int chosen,
         struct gd_algo_offer *o)
{
    memset(o, 0, sizeof *o);
    o->id = (int)c->c.engine;
    snprintf(o->name, sizeof o->name, "eng%lld", (long long)c->c.engine);
    snprintf(o->config, sizeof o->config, "%s", c->text);
    notes_text(c->notes, c->behavior, o->notes, sizeof o->notes);
    o->deterministic = !(c->notes & (1u << NOTE_NONDET));
    o->workspace = c->workspace;
    snprintf(o->math, sizeof o->math, "%s",
             ctx->tf32 && (c->notes & (1u << NOTE_TC)) ? "tf32" : "fp32");
    o->time_us = c->time_us;
    o->chosen = chosen;
}

/* The reason nothing was left, for the error. */
static int
none_left(const struct gd__cuda_ctx *ctx, const struct gd__conv_plan *p, int n_cand, int dropped,
          const struct gd_err *last, struct gd_err *err)
{
    return gd_err_set(err, GD_ENOTSUP, "cuDNN's graph API has no usable engine config for this "
                      "convolution: %d offered after filtering (%d dropped for their notes: "
                      "%s%s), none built within the workspace limit%s%s",
                      n_cand, dropped, ctx->tf32 ? "" : "TF32 off, ",
                      p->how == GD__CONV_DETERMINISTIC ? "deterministic" : "down-converting",
                      last && last->msg[0] ? "; last: " : "", last ? last->msg : "");
}

/* Chooses p's plan: heuristic, deterministic and autotune from the heuristics' configs,
 * fixed from its text. The candidates' descriptors are destroyed here except the chosen. */
static int
choose(struct gd__cuda_ctx *ctx, struct gd__conv_plan *p, const void *x, const void *w, void *y,
       struct gd_err *err)
{
    int rc = 0, n_cand = 0, dropped = 0, best = -1, built = 0;
    struct candidate *cand = calloc(GRAPH_CANDIDATES_MAX, sizeof *cand);
    cudnnBackendDescriptor_t plans[GRAPH_AUTOTUNE_MAX] = {NULL};
    int plan_of[GRAPH_AUTOTUNE_MAX];
    struct gd_err last = {0};
    if (cand == NULL)
        return gd_err_set(err, GD_ENOMEM, "out of memory");
    if (p->how == GD__CONV_FIXED) {
        rc = fixed_config(ctx, p, &cand[0], err);
        if (rc != 0)
            goto done;
        n_cand = 1;
        if (filtered_out(ctx, cand[0].notes, 0)) {
            rc = gd_err_set(err, GD_ENOTSUP, "engine config %s %s", p->fixed,
                            cand[0].notes & (1u << NOTE_DCI)
                                ? "converts the float32 inputs to a narrower type"
                                : "runs on tensor cores, which round float32 inputs to TF32, "
                                  "and TF32 is off (--tf32 on allows it)");
            goto done;
        }
        rc = build_plan(ctx, cand[0].cfg, &plans[0], &cand[0].workspace, err);
        if (rc != 0) {
            gd_err_prefix(err, "engine config %s does not build for this convolution: ", p->fixed);
            goto done;
        }
        if ((size_t)cand[0].workspace > ctx->workspace_limit) {
            rc = gd_err_set(err, GD_ENOTSUP, "engine config %s needs %lld bytes of workspace, "
                            "beyond the limit", p->fixed, (long long)cand[0].workspace);
            goto done;
        }
        plan_of[0] = 0;
        built = 1;
        best = 0;
    } else {
        int autotune = p->how == GD__CONV_AUTOTUNE;
        /* a heuristics query that fails leaves the other mode to try */
        if (heuristics(ctx, p, CUDNN_HEUR_MODE_A, cand, &n_cand, &dropped, &last) != 0)
            gd_err_prefix(&last, "heuristics mode A: ");
        if (autotune &&
            heuristics(ctx, p, CUDNN_HEUR_MODE_FALLBACK, cand, &n_cand, &dropped, &last) != 0)
            gd_err_prefix(&last, "heuristics mode fallback: ");
        for (int pass = 0; pass < 2 && best < 0; pass++) {
            if (pass == 1) {
                /* heuristic and deterministic: none of mode A's built; try the fallback's */
                if (autotune)
                    break;
                int before = n_cand;
                if (heuristics(ctx, p, CUDNN_HEUR_MODE_FALLBACK, cand, &n_cand, &dropped,
                               &last) != 0)
                    gd_err_prefix(&last, "heuristics mode fallback: ");
                if (n_cand == before)
                    break;
            }
            for (int i = 0; i < n_cand && built < GRAPH_AUTOTUNE_MAX; i++) {
                if (cand[i].failed || cand[i].workspace >= 0)
                    continue;
                cudnnBackendDescriptor_t plan = NULL;
                struct gd_err e = {0};
                if (build_plan(ctx, cand[i].cfg, &plan, &cand[i].workspace, &e) != 0) {
                    cand[i].failed = 1;
                    cand[i].workspace = -1;
                    last = e;
                    continue;
                }
                if ((size_t)cand[i].workspace > ctx->workspace_limit) {
                    cand[i].failed = 1;
                    snprintf(last.msg, sizeof last.msg, "%s needs %lld bytes of workspace",
                             cand[i].text, (long long)cand[i].workspace);
                    destroy(&plan);
                    continue;
                }
                plans[built] = plan;
                plan_of[built++] = i;
                if (!autotune) {
                    best = built - 1;
                    break;
                }
                struct gd_err te = {0};
                if (time_plan(ctx, plan, cand[i].workspace, x, w, y, &cand[i].time_us, &te) != 0) {
                    /* a plan that builds and fails to run is not a choice */
                    cand[i].failed = 1;
                    last = te;
                    gd_err_prefix(&last, "timing engine config %s: ", cand[i].text);
                    continue;
                }
                if (best < 0 || cand[i].time_us < cand[plan_of[best]].time_us)
                    best = built - 1;
            }
        }
        if (best < 0) {
            rc = none_left(ctx, p, n_cand, dropped, &last, err);
            goto done;
        }
    }
    {
        struct candidate *c = &cand[plan_of[best]];
        p->plan = plans[best];
        plans[best] = NULL;
        p->keep[p->n_keep++] = c->cfg;
        c->cfg = NULL;
        p->workspace = c->workspace;
        snprintf(p->config, sizeof p->config, "%s", c->text);
        p->notes = c->notes;
        p->behavior = c->behavior;
        p->n_offers = 0;
        for (int i = 0; i < n_cand && p->n_offers < GD_ALGO_OFFERS_MAX; i++)
            if (!cand[i].failed)
                offer_of(ctx, &cand[i], i == plan_of[best], &p->offers[p->n_offers++]);
    }
done:
    for (int i = 0; i < GRAPH_AUTOTUNE_MAX; i++)
        destroy(&plans[i]);
    for (int i = 0; i < GRAPH_CANDIDATES_MAX; i++)
        destroy(&cand[i].cfg);
    free(cand);
    return rc;
}

static void
plan_free(struct gd__conv_plan *p)
{
    if (p == NULL)
        return;
    destroy(&p->plan);
    /* the config first, then the graph's pieces, the graph last of them */
    for (int i = p->n_keep - 1; i >= 0; i--)
        destroy(&p->keep[i]);
    free(p);
}

int
gd__cuda_graph_prepare(struct gd__cuda_ctx *ctx, struct gd__cuda_node *nd,
                       const struct gd__conv_geom *g, enum gd__conv_how how, const char *fixed,
                       int pinned, void *x, const void *w, void *y, struct gd_err *err)
{
    int rc = 0;
    const char *f = how == GD__CONV_FIXED && fixed != NULL ? fixed : "";
    struct gd__conv_plan *p = NULL;
    for (int i = 0; i < ctx->n_plans && p == NULL; i++) {
        struct gd__conv_plan *q = ctx->plans[i];
        if (q->how == how && strcmp(q->fixed, f) == 0 && memcmp(&q->geom, g, sizeof *g) == 0)
            p = q;
    }
    if (p == NULL) {
        if (ctx->n_plans == ctx->plans_cap) {
            int cap = ctx->plans_cap ? ctx->plans_cap * 2 : 32;
            struct gd__conv_plan **grown = realloc(ctx->plans, (size_t)cap * sizeof *grown);
            if (grown == NULL)
                return gd_err_set(err, GD_ENOMEM, "out of memory");
            ctx->plans = grown;
            ctx->plans_cap = cap;
        }
        p = calloc(1, sizeof *p);
        if (p == NULL)
            return gd_err_set(err, GD_ENOMEM, "out of memory");
        p->geom = *g;
        p->how = how;
        snprintf(p->fixed, sizeof p->fixed, "%s", f);
        rc = make_graph(ctx, p, err);
        if (rc == 0)
            rc = choose(ctx, p, x, w, y, err);
        if (rc != 0) {
            plan_free(p);
            return rc;
        }
        ctx->plans[ctx->n_plans++] = p;
    }
    nd->plan = p;
    nd->workspace = (size_t)p->workspace;
    nd->n_offers = 0;
    if (!pinned && how != GD__CONV_FIXED) {
        nd->n_offers = p->n_offers;
        memcpy(nd->offers, p->offers, (size_t)p->n_offers * sizeof p->offers[0]);
    }
    return 0;
}

int
gd__cuda_graph_execute(struct gd__cuda_ctx *ctx, struct gd__cuda_node *nd, const void *x,
                       const void *w, void *y, struct gd_err *err)
{
    int rc = gd__cuda_workspace(ctx, nd->workspace, err);
    if (rc != 0)
        return rc;
    void *now[4] = {(void *)x, (void *)w, y, ctx->workspace};
    /* A run of the same buffers (the staged forward of a sweep or benchmark) reuses the
     * variant pack; it holds only pointers, so the computation is the same either way. */
    if (nd->vpack == NULL || memcmp(now, nd->vpack_ptr, sizeof now) != 0) {
        cudnnBackendDescriptor_t vp = nd->vpack;
        destroy(&vp);
        nd->vpack = NULL;
        rc = make_vpack(&vp, x, w, y, ctx->workspace, err);
        if (rc != 0)
            return rc;
        nd->vpack = vp;
        memcpy(nd->vpack_ptr, now, sizeof now);
    }
    GT(cudnnBackendExecute(ctx->cudnn, nd->plan->plan, (cudnnBackendDescriptor_t)nd->vpack));
done:
    return rc;
}

void
gd__cuda_graph_record(const struct gd__cuda_ctx *ctx, const struct gd__cuda_node *nd, char *algo,
                      size_t algo_size, char *math, size_t math_size)
{
    static const char *const how[] = {"heuristic", "autotune", "deterministic", "fixed"};
    const struct gd__conv_plan *p = nd->plan;
    char notes[64];
    notes_text(p->notes, p->behavior, notes, sizeof notes);
    snprintf(algo, algo_size, "cudnn graph %s %s%s%s%s (%s)", p->geom.transpose ? "bwd_data" : "fwd",
             p->config, notes[0] ? " [" : "", notes, notes[0] ? "]" : "",
             nd->pin_text[0] ? "pinned" : how[p->how]);
    snprintf(math, math_size, "%s", ctx->tf32 && (p->notes & (1u << NOTE_TC)) ? "tf32" : "fp32");
}

void
gd__cuda_graph_node_fini(struct gd__cuda_node *nd)
{
    cudnnBackendDescriptor_t vp = nd->vpack;
    destroy(&vp);
    nd->vpack = NULL;
    nd->plan = NULL;
}

void
gd__cuda_graph_fini(struct gd__cuda_ctx *ctx)
{
    for (int i = 0; i < ctx->n_plans; i++)
        plan_free(ctx->plans[i]);
    free(ctx->plans);
    ctx->plans = NULL;
    ctx->n_plans = ctx->plans_cap = 0;
}
