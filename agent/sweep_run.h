/*
 * sweep_run.h: the sweep in progress, shared by the command (cmd_sweep.c: options, the order of
 * things, the document's start and end) and the runs it makes (sweep_setting.c: one setting
 * measured, the float64 reference, the convolution algorithms cuDNN offers).
 */
#ifndef GPUDIFF_AGENT_SWEEP_RUN_H
#define GPUDIFF_AGENT_SWEEP_RUN_H

#include <limits.h>

#include "model_load.h"
#include "sweep.h"
#include "upload.h"

struct sweep_opts {
    const char *model, *input_key, *weights_dir, *backend, *grid, *out;
    const char *inputs[AGT_MAX_INPUTS]; /* --input, as run takes them */
    int n_inputs;
    /* the sweep's own knobs (--dtype, --host-memory: knobs.def's lines that are no axis),
     * which every setting starts from */
    struct gd_knobs base;
    const char *report; /* --report FILE: print a saved document's report, run nothing */
    int repeats, warmup, captures, json, quiet, verbose;
    double atol, rtol;
    struct agt_upload_opts upload; /* upload.server NULL: no upload */
};

/* One sweep in progress. */
struct sweep {
    const struct sweep_opts *o;
    struct agt_model model;             /* the model and its inputs (agt_model_load) */
    struct gd_graph *g;                 /* model.g */
    int n_inputs;                       /* g->n_inputs */
    const struct gd_tensor *const *inputs; /* model.inputs */
    const struct gd_tensor *input;      /* the first input: its rows are the batch */
    char id[37];
    struct agt_grid grid;
    int n_batches;
    int64_t batches[AGT_SWEEP_MAX_BATCHES]; /* the sizes other than the whole input */
    struct agt_memrun *f64, *strict;
    struct agt_memrun *spare, *scratch; /* memory reused by the next captures */
    json_t *strict_knobs;
    json_t *doc, *settings;
    char bundles[PATH_MAX]; /* where bundles go; "" none */
    int own_bundles;        /* made for --server without --out: removed at the end */
    int n_bundles;
    /* time accounting, microseconds */
    double t0, engine_us, compare_us, callback_us, upload_us;
    double store_us, check_us, store_bytes, check_bytes; /* of callback_us (struct agt_capture) */
};

/* A line of progress on stderr (unless --quiet). */
void agt_sweep_progress(const struct sweep *sw, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* A session of the sweep's graph, its time counted as the engine's; _close accepts NULL. */
struct gd_session *agt_sweep_open(struct sweep *sw, const char *backend, const struct gd_knobs *k,
                                  struct gd_err *err);
void agt_sweep_close(struct sweep *sw, struct gd_session *s);

/* The float64 reference: one cpu64 capture into sw->f64 (NULL when it failed), and the
 * document's "float64". */
void agt_sweep_float64(struct sweep *sw);

/* Everything measured of setting st (the index-th), as a new object of the document. A
 * setting that cannot run is an object with its error, never a failure of the sweep. */
json_t *agt_sweep_run_setting(struct sweep *sw, int index, const struct agt_setting *st);

/* The grid with each conv=each setting replaced by one setting per convolution and cuDNN
 * algorithm it offers (a heuristic run lists them), into out; -1 when out is full. */
int agt_sweep_expand_each(struct sweep *sw, struct agt_grid *out);

/* cuda: each convolution's offered algorithms, for the document; null elsewhere. */
json_t *agt_sweep_list_offers(struct sweep *sw);

#endif
