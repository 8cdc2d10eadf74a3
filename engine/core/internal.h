/*
 * internal.h: what the engine's parts share and callers of libgpudiff do not see: the
 * backend vtable, the op call, the shape inference call, and attribute readers.
 * Names here carry the gd__ prefix.
 */
#ifndef GPUDIFF_INTERNAL_H
#define GPUDIFF_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "gpudiff/error.h"
#include "gpudiff/fingerprint.h"
#include "gpudiff/graph.h"
#include "gpudiff/ops.h"
#include "gpudiff/session.h"
#include "gpudiff/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

#define GD__MAX_OP_INPUTS 64
#define GD__MAX_OP_OUTPUTS 64 /* Split's parts */

/*
 * One execution of one node, as a backend's op function sees it. Inputs and outputs live
 * in the backend's memory with the session's inferred shapes; absent optional inputs are
 * NULL. Outputs are allocated before the call; the op writes every element.
 */
struct gd_op_call {
    const struct gd_graph *graph;
    const struct gd_node *node;
    const struct gd_params *params;
    int n_in;
    const struct gd_tensor *in[GD__MAX_OP_INPUTS];
    int n_out;
    struct gd_tensor *out[GD__MAX_OP_OUTPUTS];
    void *ctx;                       /* the backend's session context */
    const struct gd_knobs *knobs;
    char algo[128];                  /* the op writes which algorithm it used, if any */
    char math[16];                   /* and the math mode (fp32, tf32, ...) */
    double time_us;                  /* a device time measured by the op; < 0 if none */
};

typedef int (*gd_op_fn)(struct gd_op_call *call, struct gd_err *err);

/*
 * The session hands each captured node output back through this. A backend calls it in
 * node order, with a host tensor valid during the call.
 */
struct gd__capture_req {
    int node_index;
    int output_slot;
    double time_us;
    const char *algo;
    const char *math;
    /* A piece of the output (knobs.host_memory): host holds elements [piece_offset,
     * piece_offset + its count) of an output of shape piece_shape[0 .. piece_ndim);
     * piece_ndim 0: host is the whole output. */
    int64_t piece_offset;
    int piece_ndim;
    int64_t piece_shape[GD_MAX_DIMS];
    /* fp: what the session asks of this capture, and the fingerprint the backend made */
    int want_tensor;                 /* the bytes reach deliver (else host->data is NULL) */
    int want_fingerprint;            /* the backend computes a fingerprint where t lies */
    const struct gd_fingerprint *fp; /* set by the backend when it delivers; NULL if none */
};
typedef int (*gd__deliver_fn)(void *session, const struct gd__capture_req *req,
                              const struct gd_tensor *host, struct gd_err *err);

/* A backend: a vtable plus the op table. Every function returns 0 or a GD_E* code. */
struct gd__backend {
    const char *name;
    const char *description;
    enum gd_dtype compute_dtype;     /* dtype of float activations and weights */

    /* Checks knobs, makes the context, fills env with facts about where it runs. */
    int (*open)(const struct gd_knobs *knobs, struct gd_env *env, void **ctx,
                struct gd_err *err);
    void (*close)(void *ctx);

    /* Gives t (dtype and shape set) memory for its data; sets t->data and t->device. */
    int (*alloc)(void *ctx, struct gd_tensor *t, struct gd_err *err);
    /* Releases what alloc gave; t->data becomes NULL. */
    void (*release)(void *ctx, struct gd_tensor *t);
    /* Copies a host tensor of the same dtype and size into dst. */
    int (*upload)(void *ctx, struct gd_tensor *dst, const struct gd_tensor *src,
                  struct gd_err *err);
    /*
     * Arranges for t's current contents to reach deliver(session, req, host copy), now or
     * at a later capture or at flush, always in the order of the calls.
     */
    int (*capture)(void *ctx, const struct gd_tensor *t, const struct gd__capture_req *req,
                   gd__deliver_fn deliver, void *session, struct gd_err *err);
    /* Waits for all work and delivers every pending capture. */
    int (*flush)(void *ctx, struct gd_err *err);
    /* Optional (NULL for none): called around each node's op. With `timing` (the run
     * captures, so layer times are reported) a device backend times the op; op_end also
     * reports an asynchronous fault when asked to (GPUDIFF_CUDA_SYNC=1). */
    int (*op_begin)(void *ctx, int node_index, int timing, struct gd_err *err);
    int (*op_end)(void *ctx, int node_index, int timing, struct gd_err *err);

    const gd_op_fn *ops;             /* GD_OP_COUNT entries; NULL = not supported */
    /*
     * Optional (NULL: ops and half_native for every session): the op table and half_native
     * list a session with these knobs runs, for a backend whose knobs choose other kernels
     * (cuda with --repro bitwise: engine/cuda/repro_table.c). Either may be left as given.
     */
    void (*tables)(const struct gd_knobs *knobs, const gd_op_fn **ops,
                   const unsigned char **half_native);

    /* Optional, for gd_session_forward() (NULL: the session's wall clock): a device timer,
     * started before the first node and stopped after the last; stop waits for the work
     * and gives the microseconds between the two. */
    int (*timer_start)(void *ctx, struct gd_err *err);
    int (*timer_stop)(void *ctx, double *us, struct gd_err *err);
    /* Optional (NULL: t is host memory, memcpy reads it): copies t's data to host memory at
     * dst and waits for the copy. */
    int (*download)(void *ctx, void *dst, const struct gd_tensor *t, struct gd_err *err);
    /* Optional (NULL: no algorithm choices): gd_session_algo_offers() for one node. */
    int (*algo_offers)(void *ctx, int node_index, struct gd_algo_offer *out, int max, int *n,
                       struct gd_err *err);

    /*
     * Half storage. NULL convert: the backend keeps every float value in compute_dtype
     * (cpu64, the float64 reference). Otherwise a value whose logical dtype is float16 or
     * bfloat16 is stored in that dtype (gd__storage_dtype), and convert copies the float
     * tensor src into dst of the same element count and another float dtype, rounding to
     * nearest even where dst is narrower (float16's range: overflow to infinity). An op runs
     * on half tensors itself where half_native[op] is 1; the others run through
     * gd__half_call(), which widens their half inputs to float32 and rounds their float32
     * results back (so every op computes in float32 and stores its output rounded once).
     */
    int (*convert)(void *ctx, struct gd_tensor *dst, const struct gd_tensor *src,
                   struct gd_err *err);
    const unsigned char *half_native; /* GD_OP_COUNT entries, NULL: none */
    /* Optional (NULL: GD_ENOTSUP): gd_session_memory(). */
    int (*memory)(void *ctx, struct gd_memory *out, struct gd_err *err);
    /*
     * Optional (NULL: every gd_session_forward() runs its nodes): replaying a recording of
     * the forward. forward_begin is called after the timer starts, with the generation of
     * the staged inputs (the session changes it whenever they or the batch size change):
     * 1 when the backend launched its recording of that generation (the session skips the
     * nodes), 0 when the nodes are to run (the backend may be recording them), < 0 on error.
     * forward_end is called after they ran with their status rc: it ends and launches a
     * recording; *rerun set means the recording failed and was dropped, and the session
     * runs the nodes again, unrecorded. The recording is the same work on the same buffers.
     */
    int (*forward_begin)(void *ctx, uint64_t generation, struct gd_err *err);
    int (*forward_end)(void *ctx, int rc, int *rerun, struct gd_err *err);
};

/* The dtype backend be stores a value of logical dtype `logical` in: integers and bools as
 * they are; float16 and bfloat16 as they are on a backend with half storage; other floats
 * (and every float on a backend without half storage) in its compute_dtype. */
/* Stores v as element i of an integer or bool tensor t (tensor.c): truncated to its type,
 * a bool 0 or 1; other dtypes are left alone. Range checks are the caller's. */
void gd__tensor_put_int(struct gd_tensor *t, int64_t i, int64_t v);

enum gd_dtype gd__storage_dtype(const struct gd__backend *be, enum gd_dtype logical);

/* 1 when the call has a float16 or bfloat16 tensor among its inputs or outputs. */
int gd__call_has_half(const struct gd_op_call *c);

/*
 * Runs op function fn on call c, whose half tensors are float16 or bfloat16, on backend be
 * (which has convert): each distinct half input is converted to a float32 tensor of the
 * backend, each half output gets a float32 one, fn runs on those, and the results are
 * rounded into c's outputs; the temporaries are released. The algorithm, math and time fn
 * reports are c's. Errors: fn's, or the backend's allocation and conversion errors.
 */
int gd__half_call(const struct gd__backend *be, gd_op_fn fn, struct gd_op_call *c,
                  struct gd_err *err);

/*
 * View: the byte offset at which node n's output 0 (out: its storage dtype and shape) lies in
 * input 0's memory (in, as stored) when the output is the same bytes in another shape
 * (Reshape, Flatten, Squeeze, Unsqueeze, Identity; a Gather of one index, given as the host
 * tensor index_host, along an axis with only dimensions of 1 before it); -1 when the node
 * must compute its output. Offsets are multiples of 256 bytes. view.c.
 */
int64_t gd__view_offset(const struct gd_node *n, const struct gd_params *p,
                        const struct gd_tensor *in, const struct gd_tensor *out,
                        const struct gd_tensor *index_host);

/* The backends built in, NULL-terminated; defined in backend.c. */
extern const struct gd__backend *const gd__backends[];

/* A backend by name, or NULL. */
const struct gd__backend *gd__backend_find(const char *name);

/*
 * One shape inference: the input shapes (NULL for an absent optional input), the constant
 * tensor of an input that is a weight (else NULL, so Reshape can read its shape input),
 * and where the op writes its output shapes, dtypes and params.
 */
struct gd__infer_call {
    const struct gd_graph *graph;
    const struct gd_node *node;
    int n_in;
    const struct gd_shape *in[GD__MAX_OP_INPUTS];
    enum gd_dtype in_dtype[GD__MAX_OP_INPUTS];
    /* The value of an input known at inference: a weight, a fold's result, or a graph
     * input's value when the run gave it (a Reshape's shape passed as an input). */
    const struct gd_tensor *in_const[GD__MAX_OP_INPUTS];
    /* 1 when the input is a weight or a fold's result: it carries no rows of the batch
     * (a graph input's value in in_const still does; mixes_batch decisions use this). */
    int in_weight[GD__MAX_OP_INPUTS];
    int n_out;
    struct gd_shape *out[GD__MAX_OP_OUTPUTS];
    enum gd_dtype out_dtype[GD__MAX_OP_OUTPUTS];
    struct gd_params *params;
};

/* Returns 0, or GD_EMODEL / GD_ESHAPE / GD_ENOTSUP with a message (the caller adds the
 * node's name). Defined per family in engine/core/infer_<family>.c. */
typedef int (*gd__infer_fn)(struct gd__infer_call *c, struct gd_err *err);

/* GD_OP_COUNT entries, made from ops.def in ops.c. */
extern const gd__infer_fn gd__infer_table[];

#define GD_OP(e, fn, name, family, min_in, max_in, red, ulps, disc, ill, cuda) \
    int gd__infer_##family(struct gd__infer_call *c, struct gd_err *err);
#include "ops.def"
#undef GD_OP

/*
 * Attribute readers for shape inference. Each returns 0 and writes out (the default when
 * the attribute is absent), or GD_EMODEL naming the attribute when its type or length is
 * wrong.
 */
int gd__attr_int(const struct gd_node *n, const char *name, int64_t dflt, int64_t *out,
                 struct gd_err *err);
int gd__attr_float(const struct gd_node *n, const char *name, double dflt, double *out,
                   struct gd_err *err);
/* out points into the node (or is dflt). */
int gd__attr_string(const struct gd_node *n, const char *name, const char *dflt,
                    const char **out, struct gd_err *err);
/* Reads exactly `count` ints, or any count up to max when count < 0 (*n_out gets it).
 * Absent: *n_out = 0 and out untouched. */
int gd__attr_ints(const struct gd_node *n, const char *name, int count, int max, int64_t *out,
                  int *n_out, struct gd_err *err);

/*
 * Reads a constant input holding integers (any integer dtype, or floats with integral
 * values) into out: at most max values, *n_out gets the count. `what` names it in errors.
 */
int gd__const_ints(const struct gd_tensor *t, const char *what, int max, int64_t *out,
                   int *n_out, struct gd_err *err);

/* Reads a constant input holding one number (any numeric dtype, any shape of one element). */
int gd__const_scalar(const struct gd_tensor *t, const char *what, double *out, struct gd_err *err);

/* Fails with GD_EMODEL naming any attribute of n that is not in the NULL-terminated list. */
int gd__attr_check_known(const struct gd_node *n, const char *const *known, struct gd_err *err);

/* Normalizes a possibly negative axis for rank ndim; GD_EMODEL when out of range. */
int gd__axis_norm(int64_t axis, int ndim, int64_t *out, struct gd_err *err);

/* Numpy broadcasting of a and b into out; GD_ESHAPE when they do not broadcast. */
int gd__broadcast_shape(const struct gd_shape *a, const struct gd_shape *b, struct gd_shape *out,
                        struct gd_err *err);

/* ---- window geometry of convolutions and pools (infer_window.c) ---- */

enum gd__auto_pad { GD__PAD_NOTSET, GD__PAD_SAME_UPPER, GD__PAD_SAME_LOWER, GD__PAD_VALID };

int gd__auto_pad_read(const struct gd_node *n, enum gd__auto_pad *out, struct gd_err *err);

/*
 * Reads a spatial attribute of ns (1 to 3) values into out[GD_MAX_SPATIAL], right-aligned
 * (see struct gd_params): the leading GD_MAX_SPATIAL - ns axes take `fill`; absent: the ns
 * axes take dflt.
 */
int gd__spatial_ints(const struct gd_node *n, const char *name, int ns, int64_t dflt,
                     int64_t fill, int64_t *out, struct gd_err *err);

/* Sets p->n_spatial and reads strides, dilations (or 1 when the op has none) and pads. */
int gd__spatial_geometry(const struct gd_node *n, int ns, int with_dilations, struct gd_params *p,
                         struct gd_err *err);

/* auto_pad SAME_*: output = ceil(in / stride); the odd pixel of padding goes to the end
 * (UPPER) or the beginning (LOWER). Needs p->kernel, strides, dilations; in as from
 * gd__spatial_in(). */
void gd__same_pads(int mode_upper, const int64_t *in, struct gd_params *p);
/*
 * The largest stride, dilation, pad and kernel size a window takes (gd__spatial_geometry and
 * gd__window_kernel check them), and the largest spatial input (gd__spatial_in): with those,
 * no window length (dilation x (kernel - 1) + 1, input + pads, the SAME pads) overflows
 * int64. ConvTranspose's stride x input is checked where it is made.
 */
#define GD__WINDOW_MAX ((int64_t)INT32_MAX)
#define GD__WINDOW_INPUT_MAX (INT64_C(1) << 61)
/* Checks that every kernel[GD_MAX_SPATIAL] size is from 1 to GD__WINDOW_MAX. */
int gd__window_kernel(const int64_t *kernel, struct gd_err *err);

/* Spatial sizes of an (N, C, spatial...) shape of 1 to 3 spatial axes as (D, H, W),
 * right-aligned with 1 for the missing leading axes; an axis above GD__WINDOW_INPUT_MAX is
 * refused (GD_ENOTSUP). */
int gd__spatial_in(const struct gd_shape *x, int64_t *dhw, struct gd_err *err);

/* Product of dims (1 for a scalar). */
int64_t gd__shape_numel(const struct gd_shape *s);

/*
 * v as one element of dtype, in out (at least 8 bytes): integers truncate toward zero
 * (a non-finite v gives 0), bool is v != 0, floats round to nearest (once, for the 16-bit
 * formats). The Pad ops' constant.
 */
void gd__scalar_bytes(enum gd_dtype dtype, double v, unsigned char *out);

/* Monotonic clock in microseconds. */
double gd__now_us(void);

/* snprintf into a path buffer; GD_ERANGE (with a message) when it does not fit. */
int gd__pathf(char *out, size_t size, struct gd_err *err, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* Duplicates a string; NULL on allocation failure. */
char *gd__strdup(const char *s);

/* A deep copy of an attribute into dst (zeroed first); GD_ENOMEM, with dst left empty. */
int gd__attr_copy(const struct gd_attr *src, struct gd_attr *dst);

/* ---- the graph's builders and folds (graph.c, fold.c) ---- */

/* Appends a value called name (unique, non-empty); returns its index or a negative code. */
int gd__value_add(struct gd_graph *g, const char *name, struct gd_err *err);

/* 1 when the fold evaluator has op (it may still refuse a node of it, see
 * gd_graph_add_fold()). */
int gd__fold_has(const char *op);

/* Frees what a fold owns (not the struct). */
void gd__fold_fini(struct gd_fold *f);

/*
 * Computes fold f at inference: in_shape[i] is input i's shape, in_val[i] its tensor when it
 * is a constant or a fold's result (NULL for a value known only at run time, which only
 * Shape and Size accept; NULL entries for absent inputs). out[k] gets a new host tensor for
 * each output. Errors as the infer functions' (the caller names the node).
 */
int gd__fold_eval(const struct gd_fold *f, const struct gd_shape *const *in_shape,
                  const struct gd_tensor *const *in_val, struct gd_tensor **out,
                  struct gd_err *err);

/* ---- a pool of worker threads (pool.c) ---- */

#define GD__POOL_MAX 256

struct gd__pool;

/* One task of a job; worker is 0 for the calling thread, 1 .. size - 1 for the workers. */
typedef void (*gd__task_fn)(void *arg, int64_t task, int worker);

/* The number of online processors, at least 1 and at most GD__POOL_MAX. */
int gd__pool_threads_default(void);

/* Starts threads - 1 workers (the caller is the last thread). GD_EINVAL, GD_ENOMEM. */
int gd__pool_new(int threads, struct gd__pool **out, struct gd_err *err);

/* Stops and joins the workers. Accepts NULL. */
void gd__pool_free(struct gd__pool *p);

/* Threads that take tasks (1 for NULL). */
int gd__pool_size(const struct gd__pool *p);

/*
 * Runs fn(arg, t, worker) for every t in [0, n_tasks) on the pool's threads, the caller's
 * included, and returns when all have finished. Tasks run in no fixed order or thread.
 * p may be NULL: then the caller runs them all, in order.
 */
void gd__pool_run(struct gd__pool *p, int64_t n_tasks, gd__task_fn fn, void *arg);

/*
 * The kernel driver's version from the first line of /proc/driver/nvidia/version, the first
 * word made of digits and dots with at least one dot ("570.86.15" from "NVRM version: NVIDIA
 * UNIX Open Kernel Module for x86_64  570.86.15  Release Build ..."; the older line has no
 * "for x86_64"). Returns 0 and writes out (size bytes), or GD_ENOENT when there is none.
 */
int gd__driver_version_parse(const char *line, char *out, size_t size);

#ifdef __cplusplus
}
#endif
#endif
