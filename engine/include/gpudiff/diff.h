/*
 * diff.h: run against run, layer by layer: metrics per layer, a verdict per layer, the
 * first divergent layer and the amplifiers after it, effective precision, boundary counts
 * for discontinuous ops, the differences of environment and knobs, which run is closer to
 * a float64 reference, and a short explanation. docs/COMPARISON.md gives the rules.
 *
 * The runs are read through struct gd_run_view, so the same code compares bundles on disk
 * (gd_bundle_view) and runs stored by the daemon.
 */
#ifndef GPUDIFF_DIFF_H
#define GPUDIFF_DIFF_H

#include <stdint.h>

#include <jansson.h>

#include "gpudiff/bundle.h"
#include "gpudiff/compare.h"

#ifdef __cplusplus
extern "C" {
#endif

/* What the comparison needs of a run, wherever it is stored. Everything is borrowed. */
struct gd_run_view {
    json_t *run;                          /* run.json: id, backend, env, knobs, labels */
    int n_layers;
    const struct gd_bundle_layer *layers; /* name, op, dtype, shape, inputs, traits */
    /* Loads layer i as a new host tensor. */
    int (*load)(void *user, int index, struct gd_tensor **out, struct gd_err *err);
    void *user;
};

/* A view of an opened bundle (valid while b is). */
void gd_bundle_view(const struct gd_bundle *b, struct gd_run_view *out);

#define GD_VERDICT_MAP(XX)                                                                 \
    XX(IDENTICAL, "identical", "bitwise equal")                                            \
    XX(NOISE, "noise", "within the rounding its op and the layers before it explain")      \
    XX(DIVERGENT, "divergent", "beyond rounding noise")                                    \
    XX(AMPLIFIED, "amplified", "the error grew far beyond what the op does to its input's") \
    XX(NONFINITE, "nonfinite", "NaN or infinity on one side only")                         \
    XX(INCOMPARABLE, "incomparable", "shapes differ, or the layer is on one side only")

enum gd_verdict {
#define GD__VERDICT_ENUM(e, name, text) GD_VERDICT_##e,
    GD_VERDICT_MAP(GD__VERDICT_ENUM)
#undef GD__VERDICT_ENUM
};

const char *gd_verdict_name(enum gd_verdict v);

#define GD_DIFF_MAX_INPUTS 8
#define GD_DIFF_MAX_ROWS 64

struct gd_diff_layer {
    int index_a, index_b;        /* positions in each run (-1 when absent) */
    int n_inputs;                /* the layers it reads (indexes into gd_diff.layers) */
    int inputs[GD_DIFF_MAX_INPUTS];
    const char *name;            /* borrowed from run a (or b) */
    const char *op;              /* "" when unknown */
    const char *algo_a, *algo_b; /* the algorithm each run's backend used ("" when none) */
    int64_t reduction_len;       /* terms per output (1 when unknown) */
    int discontinuous;
    enum gd_dtype dtype;         /* the dtype compared in (float64 is rounded to the other) */
    int rounded_side;            /* 'a' or 'b' when that side was float64 rounded, else 0 */
    struct gd_metrics m;
    double scale;                /* max |b| over finite values (1 when 0) */
    double err;                  /* max |a-b| / scale */
    double err_median;           /* median relative error |a-b|/|b| */
    double bound;                /* rounding this layer's op may add (same units as err) */
    double bound_median;         /* the same for err_median */
    double envelope;             /* bound plus what noisy inputs carry in */
    double envelope_median;
    double input_err;            /* the largest err among the layers it reads */
    double growth;               /* err / max(input_err, bound) */
    double bits;                 /* effective precision, -log2(err_median); 0 when identical */
    const char *arithmetic;      /* what that precision looks like */
    enum gd_verdict verdict;
    int is_first_divergent;
    int is_amplifier;
    /* discontinuous ops: inputs within the input difference of a boundary; flipped outputs */
    int64_t near_boundary;
    int64_t flipped;
    double boundary_distance;    /* the input difference used (max |a-b| of the input) */
    /* with a truth run: each side's err against it, and which is closer ('a', 'b', '=') */
    double truth_err_a, truth_err_b;
    char closer;
    /* rows (indexes along dim 0) holding an element outside atol + rtol*|b| */
    int64_t rows_mismatch;
    int n_rows;                  /* how many of them are listed in rows[] */
    int64_t rows[GD_DIFF_MAX_ROWS];
    char note[160];              /* why incomparable, and similar */
};

struct gd_diff {
    int n_layers;
    struct gd_diff_layer *layers;
    int first_divergent;         /* index into layers, -1 when none */
    int n_amplifiers;
    int has_truth;
    double atol, rtol;
    json_t *env_diff;            /* [{"key", "a", "b"}] for env, knobs, backend; owned */
    char explanation[2048];
};

/*
 * Compares run a against run b (b is the reference side of each metric), optionally
 * against a third run `truth` (a cpu64 run, or any reference). atol and rtol are numpy's
 * isclose tolerances for the mismatch counts. *out is owned by the caller.
 */
int gd_diff_runs(const struct gd_run_view *a, const struct gd_run_view *b,
                 const struct gd_run_view *truth, double atol, double rtol, struct gd_diff **out,
                 struct gd_err *err);

void gd_diff_free(struct gd_diff *d);

/* The diff as JSON (the fields the daemon serves); a new reference. */
json_t *gd_diff_to_json(const struct gd_diff *d, const struct gd_run_view *a,
                        const struct gd_run_view *b, const struct gd_run_view *truth);

#ifdef __cplusplus
}
#endif
#endif
