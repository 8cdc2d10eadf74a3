/*
 * bundle.h: run bundles, the folder a run leaves behind (schema/json/run.schema.json):
 *
 *   DIR/run.json               what ran, where, with which knobs, and one record per layer
 *   DIR/layers/NNNN-name.npy   each captured node output, little-endian, C order
 *
 * numpy reads every file without gpudiff. A writer builds the bundle in a hidden temporary
 * folder beside DIR and renames it into place only when run.json is complete, so a crash
 * or an error never leaves a half-written bundle under DIR.
 */
#ifndef GPUDIFF_BUNDLE_H
#define GPUDIFF_BUNDLE_H

#include <stdint.h>

#include <jansson.h>

#include "gpudiff/fingerprint.h"
#include "gpudiff/graph.h"
#include "gpudiff/session.h"
#include "gpudiff/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

#define GD_BUNDLE_FORMAT "gpudiff-run"
#define GD_BUNDLE_VERSION 1

/* Summary statistics of one layer, over its finite values. */
struct gd_layer_stats {
    double min, max, mean;      /* NaN when no value is finite */
    int64_t nan_count, inf_count;
    int64_t count;              /* elements */
};

/* ---- writing ---- */

struct gd_bundle_writer;

/*
 * Starts a bundle that will become dir. GD_EEXIST when dir exists and replace is 0; with
 * replace, an existing bundle is swapped out only at commit.
 */
int gd_bundle_writer_new(const char *dir, int replace, struct gd_bundle_writer **out,
                         struct gd_err *err);

/*
 * Records one captured layer (usable directly as the body of a gd_capture_fn). With
 * batching, slices of a layer arrive in order and are appended to one file whose header
 * already holds the whole shape; so do the pieces of an output larger than
 * knobs.host_memory (struct gd_layer's piece fields), each written and hashed as it
 * comes. Layer facts that come from the graph (reduction length,
 * discontinuous) are taken from g, which may be NULL for bundles made from dumps.
 */
int gd_bundle_writer_layer(struct gd_bundle_writer *w, const struct gd_graph *g,
                           const struct gd_layer *layer, struct gd_err *err);

/* Summary of layer i as recorded so far (NULL when there is no such layer). */
const struct gd_layer_stats *gd_bundle_writer_stats(const struct gd_bundle_writer *w, int i);

/* Number of layers recorded. */
int gd_bundle_writer_count(const struct gd_bundle_writer *w);

/* The name of layer i as recorded (borrowed; NULL when there is no such layer). */
const char *gd_bundle_writer_layer_name(const struct gd_bundle_writer *w, int i);

/* Adds field key to layer i's record before commit (value taken, also on failure):
 * what a step after the run learned of the layer, a noise probe (gpudiff/noise.h). GD_EINVAL
 * for a layer that was not written or a key the writer owns (name, shape, file, ...). */
int gd_bundle_writer_layer_note(struct gd_bundle_writer *w, int i, const char *key, json_t *value,
                                struct gd_err *err);

/*
 * Writes run.json from meta (borrowed: id, model, input, env, knobs, created_at, ...) plus
 * the "format", "version" and "layers" the writer made, flushes everything to disk, and
 * renames the folder into place.
 */
int gd_bundle_writer_commit(struct gd_bundle_writer *w, json_t *meta, struct gd_err *err);

/* The layers array as it will be written (borrowed), for printing a summary. */
json_t *gd_bundle_writer_layers(const struct gd_bundle_writer *w);

/*
 * fp: with on, commit gives every layer written with a tensor but delivered without a
 * fingerprint (slices of a --batch run, dumps) one computed from its file.
 */
void gd_bundle_writer_set_fingerprints(struct gd_bundle_writer *w, int on);

/* Frees the writer; without a commit the temporary folder and its files are removed. */
void gd_bundle_writer_free(struct gd_bundle_writer *w);

/* ---- reading ---- */

struct gd_bundle_layer {
    int index;
    const char *name;           /* borrowed from run */
    const char *node;           /* the node that made it ("" when not recorded) */
    const char *op;             /* "" when unknown (bundles made from dumps) */
    enum gd_dtype dtype;
    struct gd_shape shape;
    const char *sha256;         /* of the data bytes (C order, little-endian); NULL: no tensor */
    const char *file;           /* relative to the bundle folder; NULL: no tensor (fp) */
    double time_us;             /* < 0 when unknown */
    int64_t reduction_len;      /* 0 when unknown */
    int discontinuous;          /* -1 when unknown */
    const char *algo;           /* "" when none */
    const char *math;           /* arithmetic the backend used ("tf32", "fp32"); "" when none */
    json_t *inputs;             /* names of the layers it reads (borrowed); NULL: unknown */
    json_t *noise;              /* its noise probe (gpudiff/noise.h; borrowed); NULL: none */
    /* fp: the layer's fingerprint (owned by the bundle or the view's maker); NULL: none */
    const struct gd_fingerprint *fingerprint;
    int tensor_absent;          /* fp: 1 when only the fingerprint is there */
};

struct gd_bundle {
    char *dir;
    json_t *run;                /* run.json, owned */
    int n_layers;
    struct gd_bundle_layer *layers;
    struct gd_fingerprint **fingerprints; /* fp: per layer, NULL where none; owned */
};

/* Opens dir/run.json and checks its structure. GD_EFORMAT names what is wrong. */
int gd_bundle_open(const char *dir, struct gd_bundle **out, struct gd_err *err);

/* Loads layer i and checks that its dtype and shape match run.json. GD_ENOENT when the
 * bundle holds only its fingerprint. */
int gd_bundle_layer_load(const struct gd_bundle *b, int i, struct gd_tensor **out,
                         struct gd_err *err);

void gd_bundle_close(struct gd_bundle *b);

#ifdef __cplusplus
}
#endif
#endif
