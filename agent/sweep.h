/*
 * sweep.h: what the parts of `gpudiff-agent sweep` share: the grid of settings
 * (sweep_grid.c), runs captured into memory and read back by the engine's comparison
 * (sweep_capture.c), the comparisons summed up and the answers drawn from them
 * (sweep_summary.c), the text report (sweep_report.c), and the upload of the sweep and its
 * runs (sweep_upload.c). cmd_sweep.c runs the settings. docs/AGENT.md describes the command,
 * schema/json/sweep.schema.json the document it makes.
 */
#ifndef GPUDIFF_AGENT_SWEEP_H
#define GPUDIFF_AGENT_SWEEP_H

#include <stdint.h>
#include <stdio.h>

#include <jansson.h>

#include "gpudiff/bundle.h"
#include "gpudiff/diff.h"
#include "gpudiff/graph.h"
#include "gpudiff/session.h"

#define AGT_SWEEP_FORMAT       "gpudiff-sweep"
#define AGT_SWEEP_VERSION      1
#define AGT_SWEEP_MAX_BATCHES  16
#define AGT_SWEEP_MAX_SETTINGS 4096

/* ---- the grid (sweep_grid.c) ---- */

struct agt_setting {
    char name[192];        /* "conv_algo=autotune tf32=on", "emulate=bf16:conv+gemm", "defaults" */
    struct gd_knobs knobs; /* batch 0: the whole input */
    int strict;            /* the strict setting every other is compared with */
    int added;             /* not in the grid: added because the strict setting was missing */
    int expand_each;       /* conv=each: replaced by one setting per layer and offered id */
};

struct agt_grid {
    int n, cap;
    struct agt_setting *settings;
    int n_batches;                          /* 0: none given, the sweep picks */
    int64_t batches[AGT_SWEEP_MAX_BATCHES]; /* 0 stands for "all": the whole input */
};

/* The grid a sweep on backend runs when none is given (docs/AGENT.md explains it). */
const char *agt_grid_default(const char *backend);

/*
 * Parses SPEC for backend into g (which must be zeroed): groups separated by '|', each a
 * product of axes KEY=V1,V2,... separated by ';', KEY a knob of knobs.def that is a sweep
 * axis. Each setting starts from base (NULL: every knob unset): the sweep's own knobs, such
 * as --dtype. Duplicates are dropped. GD_EINVAL with a message naming the part at fault.
 */
int agt_grid_parse(const char *spec, const char *backend, const struct gd_knobs *base,
                   struct agt_grid *g, struct gd_err *err);

/* Appends a setting (its name made from its knobs) unless one of that name is there; returns
 * its index, or -1 when the grid is full. */
int agt_grid_add(struct agt_grid *g, const char *backend, const struct gd_knobs *k);

/* The strict setting of backend from base (NULL: nothing set): FP32 and deterministic
 * algorithms (cuda: conv_algo deterministic, TF32 off; cpu: no emulation; cpu64 as it is). */
void agt_strict_knobs(const char *backend, const struct gd_knobs *base, struct gd_knobs *k);

/* Marks the grid's strict setting and moves it first (it runs before the others, which are
 * compared with it), adding it (added = 1) when the grid lacks it. Returns its index (0),
 * -1 when the grid is full. */
int agt_grid_mark_strict(struct agt_grid *g, const char *backend, const struct gd_knobs *base);

/* The setting's name from its knobs: "name=value" for each axis of the backend not at its
 * default, in knobs.def's order ("conv_algo=autotune tf32=on"), "defaults" for none. */
void agt_setting_name(const char *backend, const struct gd_knobs *k, char *out, size_t size);


void agt_grid_fini(struct agt_grid *g);

/* ---- runs in memory (sweep_capture.c) ---- */

/* A captured run held in memory, readable by the comparison as a struct gd_run_view. */
struct agt_memrun {
    json_t *run;                    /* run.json's facts: id, backend, env, knobs */
    int n_layers;                   /* of the graph (every node output) */
    struct gd_bundle_layer *layers; /* the records the comparison reads */
    struct gd_tensor **tensors;     /* every row of each layer */
    char **algos;                   /* owned; layers[i].algo points here or at "" */
    json_t **inputs;                /* owned; layers[i].inputs */
    int *seen;                      /* slices received per layer */
};

int agt_memrun_new(const struct gd_graph *g, json_t *run, struct agt_memrun **out,
                   struct gd_err *err);
void agt_memrun_free(struct agt_memrun *r);

/* Makes r ready for another run of the same graph (run: its new facts), keeping the layers'
 * memory for layers of the same shapes. */
void agt_memrun_reset(struct agt_memrun *r, json_t *run);

/* A view for gd_diff_runs(): layers are lent as tensors that borrow the run's memory. */
void agt_memrun_view(struct agt_memrun *r, struct gd_run_view *out);

/*
 * What the capture callback does with each layer: store it in `store` (and, with a writer,
 * write it to a bundle), or compare it bit for bit with `check` (a repeat), marking the
 * layers whose bytes or algorithm differ.
 */
struct agt_capture {
    const struct gd_graph *g;
    struct agt_memrun *store;
    struct gd_bundle_writer *writer;
    const struct agt_memrun *check;
    unsigned char *bytes_differ; /* per layer, with check */
    unsigned char *algo_differs; /* per layer, with check */
    char (*algo_seen)[64];       /* per layer, with check: this run's algorithm */
    double callback_us;          /* time spent in the callback: the sweep's own work */
    double store_us, check_us;   /* of it: layers copied into memory, compared bit for bit */
    double store_bytes, check_bytes;
};

/* A gd_capture_fn over struct agt_capture. */
int agt_capture_layer(void *user, const struct gd_layer *layer, struct gd_err *err);

/* The monotonic clock in microseconds. */
double agt_sweep_now_us(void);
/* sweep_copy.c: memcpy and memcmp (returns 1 where the bytes differ) of captured layers,
 * spread over up to 8 threads when n is large (4 MiB or more per thread); the threads are
 * started at the first such call and stopped by agt_sweep_copy_fini() (then started again
 * if needed). */
void agt_sweep_copy(void *dst, const void *src, size_t n);
int agt_sweep_differ(const void *a, const void *b, size_t n);
void agt_sweep_copy_fini(void);

/* ---- comparisons and answers (sweep_summary.c) ---- */

/* The layer a comparison reports for the model's result: the graph's first output. */
const char *agt_output_layer(const struct gd_graph *g);

/*
 * A diff of a setting's run (a) against a reference (b) summed up for the document:
 * identical or not, counts of verdicts, the first divergent layer and its arithmetic, the
 * amplifiers, the output layer's max abs, ULP and relative error. New reference.
 */
json_t *agt_diff_summary(const struct gd_diff *d, const char *output_layer);

/*
 * A run at another batch size (a) against the reference batch size (b), both of the same
 * rows, layer by layer: bit for bit (memcmp), the metrics of the layers that differ and of
 * the output layer (gd_metrics_compute), and every layer whose recorded algorithm changed
 * with the batch size. *out (new reference) gets the document's batch-size record.
 */
int agt_batch_compare(const struct agt_memrun *a, const struct agt_memrun *b, int64_t batch,
                      const char *output_layer, double atol, double rtol, json_t **out,
                      struct gd_err *err);

/* 1 when run.json records knob key at its default value (knobs.def), in any spelling a run
 * wrote; 0 otherwise or for a key that is no knob. */
int agt_knob_at_default(const char *key, json_t *v);

/* 1 when knob key makes a setting of its own: it changes how numbers are rounded or which
 * algorithm computes them (not the batch, the time or what is kept). */
int agt_knob_sets_setting(const char *key);

/* A setting's timed forwards: median, least and most (ms). */
struct agt_timing {
    double med, lo, hi;
};

/* Setting s's forward timing from its document; -1 when it has none. A document without a
 * range (older agents) has lo = hi = med. */
int agt_timing_of(json_t *s, struct agt_timing *t);

/* 1 when a and b are within timing noise of each other: their min-max ranges overlap. Such
 * settings are not ranked by time; the measurements cannot tell which is faster. */
int agt_within_noise(const struct agt_timing *a, const struct agt_timing *b);

/* 1 when setting s is a what-if: a knob of its is a sweep what-if (knobs.def's WHATIF, the
 * CPU's emulation) not at its default. A what-if is reported, never advised as a fix. */
int agt_setting_what_if(json_t *s);

/*
 * Fills doc's per-setting "what_if", "deterministic"/"batch_invariant" verdicts, time's
 * "x_fastest" and "within_noise_of_fastest", and its "answers": the fastest, cheapest
 * deterministic, cheapest batch-invariant and cheapest of both among the settings a
 * deployment can use (what-ifs never), each the fastest of those that qualify unless others
 * are within timing noise of it, in which case the one closest to float64 among them (the
 * first in the grid of equals) and the others listed; the what-ifs, the settings that change
 * the results, the layers that break batch invariance and the one-knob effects.
 */
void agt_sweep_answers(json_t *doc);

/* ---- the report (sweep_report.c) ---- */

/* The three questions in plain words, the table, and the details, from the document. */
void agt_sweep_print(FILE *out, json_t *doc);

/* ---- uploading (sweep_upload.c) ---- */

struct agt_upload_opts;

/*
 * Uploads every bundle the document names (settings[].bundle, float64.bundle) as ordinary
 * runs, then POSTs the document to /api/v1/sweeps, the runs linked by their ids. Returns an
 * exit code (AGT_EXIT_*), with the failure in err.
 */
int agt_sweep_upload(json_t *doc, const struct agt_upload_opts *o, struct gd_err *err);

#endif
