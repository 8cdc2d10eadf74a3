/*
 * run.h: backends, the knobs that change numerics, and sessions that execute a graph
 * node by node, handing every node output to the caller's capture callback.
 */
#ifndef GPUDIFF_RUN_H
#define GPUDIFF_RUN_H

#include <stdint.h>

#include "gpudiff/graph.h"
#include "gpudiff/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Reduced-precision formats the CPU backend can emulate on the inputs of GEMMs and convs. */
enum gd_emulate { GD_EMULATE_NONE = 0, GD_EMULATE_TF32, GD_EMULATE_BF16, GD_EMULATE_FP16 };

/* Op classes an emulation applies to (bit flags). */
#define GD_CLASS_GEMM 1u /* Gemm, MatMul */
#define GD_CLASS_CONV 2u /* Conv, ConvTranspose */

/*
 * Every choice that can change the numbers. A knob left at its "unset" value means the
 * backend's default; a backend refuses (GD_ENOTSUP) a set knob it cannot honour, so a
 * run never silently ignores what was asked. All are recorded in run.json.
 */
struct gd_knobs {
    enum gd_emulate emulate;     /* cpu: round GEMM/conv inputs to this format */
    unsigned emulate_classes;    /* GD_CLASS_* bits the emulation applies to */
    int64_t batch;               /* run dim 0 in slices of this size; 0 = whole input */
    int threads;                 /* cpu worker threads; 0 = one per online core */
    char conv_algo[32];          /* cuda: heuristic, autotune, deterministic, fixed:N; "" unset */
    int tf32;                    /* cuda: 0 off, 1 on; -1 unset */
    char math_mode[32];          /* cuda: cuBLAS math mode; "" unset */
    int64_t workspace_limit;     /* cuda: bytes; -1 unset */
};

/* Fills knobs with "unset" everywhere (emulate_classes preset to GD_CLASS_GEMM). */
void gd_knobs_init(struct gd_knobs *knobs);

/* "none", "tf32", "bf16", "fp16". */
const char *gd_emulate_name(enum gd_emulate e);

/* Parses "tf32", "bf16:conv,gemm", "none". Returns 0 or GD_EINVAL with a message. */
int gd_emulate_parse(const char *text, enum gd_emulate *e, unsigned *classes, struct gd_err *err);

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

/* Engine version string ("0.1.0"). */
const char *gd_version(void);

#ifdef __cplusplus
}
#endif
#endif
