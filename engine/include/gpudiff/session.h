/*
 * session.h: backends, sessions that execute a graph node by node with a set of knobs
 * (gpudiff/knobs.h), handing every node output to the caller's capture callback.
 */
#ifndef GPUDIFF_SESSION_H
#define GPUDIFF_SESSION_H

#include <stdint.h>

#include "gpudiff/fingerprint.h"
#include "gpudiff/graph.h"
#include "gpudiff/knobs.h"
#include "gpudiff/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Names of the backends built into this library, NULL-terminated ("cpu", "cpu64", ...). */
const char *const *gd_backend_names(void);

/* 1 when the backend called name runs op, 0 when it lacks it; GD_ENOENT for a backend this
 * library was built without. */
int gd_backend_has_op(const char *backend, enum gd_op op);

/* One fact about the machine and software a session ran on ("gpu_name": "NVIDIA H200"). */
struct gd_env_item {
    char key[48];
    char value[208];
};

#define GD_ENV_MAX 48

struct gd_env {
    int n;
    struct gd_env_item items[GD_ENV_MAX];
};

/* Adds or replaces key. Values longer than the field are cut. */
void gd_env_set(struct gd_env *env, const char *key, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* The value of key, or NULL. */
const char *gd_env_get(const struct gd_env *env, const char *key);

/* What the capture callback receives for each node output, in node order. */
struct gd_layer {
    int index;                   /* position among captured layers, from 0 */
    int node_index;
    int output_slot;
    const char *name;            /* the value's name */
    const char *node_name;
    enum gd_op op;
    const struct gd_tensor *value; /* host tensor, valid during the callback only */
    int64_t batch_offset;        /* with knobs.batch: where this slice starts in dim 0 */
    int64_t batch_total;         /* the whole dim 0 (== value->shape[0] without slicing) */
    double time_us;              /* the node's compute time for this slice */
    const char *algo;            /* algorithm the backend used, "" when none applies */
    const char *math;            /* math mode used (e.g. "fp32", "tf32"), "" when none */
    /* With knobs.host_memory, an output larger than the limit comes in pieces: value is
     * then a 1-D run of elements starting at element piece_offset (C order) of the output
     * (of this slice, with --batch), whose own shape is piece_shape[0 .. piece_ndim); the
     * pieces of one output come one after another, and the time is on the first.
     * piece_ndim 0: value is the whole output. */
    int64_t piece_offset;
    int piece_ndim;
    const int64_t *piece_shape;
    /* With gd_session_set_capture(): value->data is NULL when the tensor was not asked for
     * (dtype and shape are still set), and fingerprint is the layer's (NULL when not asked),
     * computed by the backend where the tensor lies. */
    const struct gd_fingerprint *fingerprint;
    /* Without a graph (a framework's dump, gpudiff-agent bundle): > 0, the terms each output
     * element sums, recorded with the op's discontinuity for the comparison; 0 not known.
     * Sessions leave it 0: the graph gives it. */
    int64_t reduction_len;
};

/* Returning non-zero stops the run with that code. */
typedef int (*gd_capture_fn)(void *user, const struct gd_layer *layer, struct gd_err *err);

struct gd_session;

/*
 * Opens backend `backend` ("cpu", "cpu64", "cuda") for graph g, which must stay alive and
 * unchanged until gd_session_free(). Knobs are copied. GD_ENOENT for an unknown backend,
 * GD_ENOTSUP for a knob it cannot honour or for ops it lacks (err names every one, with its
 * node count and first node names).
 */
struct gd_session *gd_session_new(struct gd_graph *g, const char *backend,
                                  const struct gd_knobs *knobs, struct gd_err *err);

void gd_session_free(struct gd_session *s);

/* Facts about where the session runs: backend, host, CPU or GPU, library versions. */
const struct gd_env *gd_session_env(const struct gd_session *s);

/* The backend's name. */
const char *gd_session_backend(const struct gd_session *s);

/*
 * Runs the graph on host inputs, one per graph input in order: a float input (any float
 * dtype) is cast to the backend's compute type; an integer or bool input (token ids,
 * indices, masks) keeps its values in the dtype the model declares (GD_ERANGE when one does
 * not fit), and a float given for an integer input or the reverse is GD_EDTYPE. The folds
 * (struct gd_fold) are computed again whenever the input shapes change. capture, when not
 * NULL, is called for every node output in node order (with knobs.batch, once per slice).
 * Returns 0 or the first error.
 */
int gd_session_run(struct gd_session *s, int n_inputs, const struct gd_tensor *const *inputs,
                   gd_capture_fn capture, void *user, struct gd_err *err);

/*
 * What the capture callback gets (fp). Without a call to gd_session_set_capture() every
 * layer's tensor and no fingerprint. A layer asked for neither is not delivered at all.
 */
struct gd_capture_sel {
    int fingerprints;            /* 1: every layer's fingerprint */
    int tensors;                 /* 1: every layer's tensor; 0: those `only` marks */
    const unsigned char *only;   /* per layer index (n_only entries): 1 = its tensor; copied */
    int n_only;
    int last_layer;              /* >= 0: stop after the node that makes this layer; -1 run all */
};

/*
 * Sets what the following runs capture. A fingerprint covers a whole layer, so a run with
 * fingerprints and knobs.batch > 0 (slices) is refused with GD_ENOTSUP by gd_session_run().
 * GD_EINVAL for a negative n_only or last_layer below -1.
 */
int gd_session_set_capture(struct gd_session *s, const struct gd_capture_sel *sel,
                           struct gd_err *err);

/* Number of layers (node outputs) a run of this session's graph delivers at most. */
int gd_session_n_layers(const struct gd_session *s);

/* ---- timing without capture, batch sizes, algorithm choices (gpudiff-agent sweep) ---- */

/*
 * Copies the inputs into backend memory (in the compute dtype) and keeps them there for
 * gd_session_forward(), replacing any staged before; the host tensors may be freed after.
 * The same checks as gd_session_run(). Staged memory is released by gd_session_free().
 */
int gd_session_stage(struct gd_session *s, int n_inputs, const struct gd_tensor *const *inputs,
                     struct gd_err *err);

/*
 * Runs the graph on the staged inputs without capture, exactly as gd_session_run() computes
 * (slice by slice with knobs.batch), and writes the forward's time in microseconds to *us:
 * on cuda the device time between CUDA events recorded on the compute stream before the
 * first node and after the last; on the CPU backends (which compute synchronously) the wall
 * clock. No input is copied inside the time. GD_EINVAL when nothing is staged.
 */
int gd_session_forward(struct gd_session *s, double *us, struct gd_err *err);

/*
 * End to end: gd_session_run() without capture from host inputs, and the graph outputs
 * copied back to host memory as they are made; *us is the wall clock of all of it (input
 * upload, forward, output download). The outputs stay readable through gd_session_output()
 * until the next run of any kind.
 */
int gd_session_run_end_to_end(struct gd_session *s, int n_inputs,
                              const struct gd_tensor *const *inputs, double *us,
                              struct gd_err *err);

/* Graph output i of the last gd_session_run_end_to_end() as a host tensor in the compute
 * dtype, every row of it (borrowed); NULL when there is none. */
const struct gd_tensor *gd_session_output(const struct gd_session *s, int i);

/* Sets knobs.batch for the runs that follow (0: the whole input at once) without reloading
 * anything; shapes are inferred again at the next run. GD_EINVAL for a negative size. */
int gd_session_set_batch(struct gd_session *s, int64_t batch, struct gd_err *err);

/* One algorithm a backend offers for a node's shapes. */
struct gd_algo_offer {
    int id;                      /* legacy: cuDNN's algorithm id; graph: the engine's index */
    char name[32];               /* legacy: "implicit_gemm", "winograd", ...; graph: "eng3" */
    char config[80];             /* what conv_algo fixed: and conv_pins take to run it: the
                                  * id as digits (legacy), the engine config (graph) */
    char notes[48];              /* graph: cuDNN's notes on it, "tc,nondet" (docs/
                                  * CUDA_KERNELS.md); "" none or legacy */
    int deterministic;           /* 1: the library says it gives the same bits every run */
    int64_t workspace;           /* bytes of scratch memory it needs; -1 not known (graph:
                                  * known once its plan is built) */
    char math[16];               /* "fp32" or "tf32" */
    double time_us;              /* measured (conv_algo autotune); < 0 when not measured */
    int chosen;                  /* 1 for the one the node ran with */
};

#define GD_ALGO_OFFERS_MAX 16

/*
 * The algorithms the backend offered for node node_index at its shapes the last time the
 * node chose one (in a run of this session whose conv_algo is heuristic, deterministic or
 * autotune), in the library's order, best first: up to max of them in out, their number in
 * *n (0 when the node has made no such choice: not a convolution, not run yet, or pinned to
 * a fixed id). GD_ENOTSUP for a backend without algorithm choices (cpu, cpu64), GD_EINVAL
 * for a node index out of range.
 */
int gd_session_algo_offers(const struct gd_session *s, int node_index, struct gd_algo_offer *out,
                           int max, int *n, struct gd_err *err);

/* Memory a session's backend has used (gd_session_memory()); -1 where it cannot tell. */
struct gd_memory {
    /* cuda: the most device memory the session's tensors held at once since it opened (the
     * stream-ordered pool's high-water mark: weights, live layer outputs, workspaces and
     * temporaries); the CPU backends: -1 */
    int64_t device_peak;
    int64_t device_now;          /* cuda: what they hold now; -1 on the CPU backends */
    /* cpu and cpu64: the most bytes of tensors held at once (weights included); cuda: -1 */
    int64_t host_peak;
    /* cuda: pinned host memory the capture ring holds (what capturing costs the host);
     * 0 before any capture and on the CPU backends (they hand over their own tensors) */
    int64_t capture_buffer;
};

/* Fills out for session s. GD_ENOTSUP for a backend that keeps no account (none now). */
int gd_session_memory(const struct gd_session *s, struct gd_memory *out, struct gd_err *err);

/* Engine version string ("0.1.0"). */
const char *gd_version(void);

#ifdef __cplusplus
}
#endif
#endif
