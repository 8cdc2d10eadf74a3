/*
 * diff_fixture.h: hand-made runs for the comparison's unit tests (check_verdict.c,
 * check_boundary.c, check_truth.c, check_explain.c, check_env_diff.c, check_diff.c). A
 * struct fx_run is a run.json and its layers held in memory, seen by gd_diff_runs() through
 * a struct gd_run_view as a bundle on disk or a run in the daemon would be.
 */
#ifndef GPUDIFF_DIFF_FIXTURE_H
#define GPUDIFF_DIFF_FIXTURE_H

#include <jansson.h>
#include <stdint.h>

#include "gpudiff/diff.h"

struct fx_run;

/*
 * A run called id (also its run.json "id") of model "m" with model sha256 "model-sha" and
 * input sha256 "input-sha", backend "cpu", knobs {"emulate": "none", "batch": null}, an env
 * with a host: what `gpudiff-agent run` records on the CPU.
 */
struct fx_run *fx_run_new(const char *id);

/* A run as `gpudiff-agent bundle` makes one from framework dumps: backend name, model
 * "unknown" with a null sha256, no knobs, an empty env, no input sha256. */
struct fx_run *fx_dump_new(const char *id, const char *backend);

void fx_run_free(struct fx_run *r);

/* run.json itself (borrowed), to set or delete fields. */
json_t *fx_json(struct fx_run *r);

/* Sets run.json's field at "obj.key" (one level of nesting at most), creating obj; takes v. */
void fx_set(struct fx_run *r, const char *path, json_t *v);

/*
 * Appends a layer. op NULL for unknown (as a dump), reduction_len 0 for unknown, inputs
 * NULL when not recorded, else a comma list of layer names ("" for none). Takes t. Returns
 * the layer's index.
 */
int fx_layer(struct fx_run *r, const char *name, const char *op, int64_t reduction_len,
             const char *inputs, struct gd_tensor *t);

/* The layer's noise probe record (run.json's "noise", gpudiff/noise.h), taken. */
void fx_layer_noise(struct fx_run *r, int index, json_t *noise);

/* The per-layer algorithm and math records. */
void fx_layer_algo(struct fx_run *r, int index, const char *algo);
void fx_layer_math(struct fx_run *r, int index, const char *math);

/* The view gd_diff_runs() reads (valid while r lives and gets no more layers). */
const struct gd_run_view *fx_view(struct fx_run *r);

/* A float32 tensor of shape (rows, cols) (cols 0: 1-D of rows) from values (copied). */
struct gd_tensor *fx_f32(int64_t rows, int64_t cols, const float *values);
struct gd_tensor *fx_f64(int64_t rows, int64_t cols, const double *values);

/* A float32 tensor of shape (rows, cols) (cols 0: 1-D) from double values (rounded). */
struct gd_tensor *fx_f32_of(int64_t rows, int64_t cols, const double *values);

/*
 * The same layer on both runs, with values va on a and vb on b (rounded to float32); op,
 * reduction_len and inputs as fx_layer() takes them, the same on both sides.
 */
void fx_pair(struct fx_run *a, struct fx_run *b, const char *name, const char *op,
             int64_t reduction_len, const char *inputs, int64_t rows, int64_t cols,
             const double *va, const double *vb);

/* n pseudo-random values in [-1, 1), the same for the same seed. */
void fx_random(double *out, int64_t n, uint64_t seed);

/* Each value times (1 + rel * r_i), r_i pseudo-random in [-1, 1): rounding-like noise. */
void fx_perturb(double *values, int64_t n, double rel, uint64_t seed);

/* The diff of a against b (truth and replay may be NULL); fails the test on an error. */
struct gd_diff *fx_diff(struct fx_run *a, struct fx_run *b, struct fx_run *truth);

/* The same diff as JSON (a new reference), through gd_diff_to_json(). */
json_t *fx_diff_json(struct fx_run *a, struct fx_run *b, struct fx_run *truth);

/* The same with the mismatch tolerances atol and rtol. */
json_t *fx_diff_json_tol(struct fx_run *a, struct fx_run *b, struct fx_run *truth, double atol,
                         double rtol);

/* The JSON object of the layer called name in a diff's JSON (borrowed; fails when absent). */
json_t *fx_layer_json(json_t *diff, const char *name);

/* A string field of a JSON object, "" when absent or not a string. */
const char *fx_str(json_t *obj, const char *key);

#endif
