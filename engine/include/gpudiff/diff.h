/*
 * diff.h: run against run, layer by layer: metrics per layer, a verdict per layer, where the
 * difference starts (or where it is first observed, when the data cannot show the start),
 * the amplifiers after it, effective precision, steps and poles near the inputs of
 * discontinuous and ill-conditioned ops, the differences of environment and knobs, each
 * side's distance from a float64 reference, each layer's own error from a replay, and a
 * short explanation. docs/COMPARISON.md gives the rules.
 *
 * The runs are read through struct gd_run_view, so the same code compares bundles on disk
 * (gd_bundle_view) and runs stored by the daemon. Every verdict is the same whichever run
 * is a and which b.
 */
#ifndef GPUDIFF_DIFF_H
#define GPUDIFF_DIFF_H

#include <stdint.h>

#include <jansson.h>

#include "gpudiff/bundle.h"
#include "gpudiff/metrics.h"

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
    XX(NOISE, "noise", "within the rounding its op, its arithmetic and its inputs explain") \
    XX(DIVERGENT, "divergent", "beyond rounding noise")                                    \
    XX(AMPLIFIED, "amplified", "an input's difference grown far beyond it by a step or a pole") \
    XX(NONFINITE, "nonfinite", "NaN or infinity on one side only")                         \
    XX(INCOMPARABLE, "incomparable", "shapes differ, or the layer is on one side only")    \
    XX(UNKNOWN, "unknown", "values differ; no rounding bound is known (op or length not recorded)")

enum gd_verdict {
#define GD__VERDICT_ENUM(e, name, text) GD_VERDICT_##e,
    GD_VERDICT_MAP(GD__VERDICT_ENUM)
#undef GD__VERDICT_ENUM
};

const char *gd_verdict_name(enum gd_verdict v);

/* The arithmetic a run declares for a layer (its math record, knobs or env), or its dtype's. */
enum gd_arith {
    GD_ARITH_UNKNOWN,
    GD_ARITH_FP64,
    GD_ARITH_FP32,
    GD_ARITH_TF32, /* float32 accumulation of products of inputs rounded to 11 bits */
    GD_ARITH_BF16, /* ... to 8 bits */
    GD_ARITH_FP16  /* ... to 11 bits, with float16's range */
};

/* "fp64", "fp32", "tf32", "bf16", "fp16", "unknown". */
const char *gd_arith_name(enum gd_arith a);

/* How a diff's runs relate. */
enum gd_diff_mode {
    GD_DIFF_RUNS,   /* two runs of one model (or of unknown models) */
    GD_DIFF_MODELS, /* two model files: layers matched by their output tensors' names */
    GD_DIFF_REPLAY  /* one run is a replay of the other: every difference is a layer's own */
};

/* numpy.isclose's default tolerances, the diff's when none are given */
#define GD_DIFF_ATOL 1e-8
#define GD_DIFF_RTOL 1e-5

#define GD_DIFF_MAX_INPUTS 8
#define GD_DIFF_MAX_ROWS 64

struct gd_diff_layer {
    int index_a, index_b;        /* positions in each run (-1 when absent) */
    /* The compared layers it reads (indexes into gd_diff.layers), directly or through
     * layers that only one run has; inputs_known is 0 when that cannot be told. */
    int n_inputs;
    int inputs[GD_DIFF_MAX_INPUTS];
    int inputs_known;
    const char *name;            /* borrowed from run a (or b) */
    const char *op;              /* the op (a's, else b's); "" when unknown */
    const char *op_a, *op_b;     /* each run's ("" when unknown or absent) */
    const char *algo_a, *algo_b; /* the algorithm each run's backend used ("" when none) */
    enum gd_arith arith_a, arith_b;
    const char *arith_from_a, *arith_from_b; /* "math record", "knobs.tf32", ... "dtype" */
    int64_t reduction_len;       /* terms per output; 0 when unknown */
    const char *reduction_from;  /* "a", "b", "a and b", "truth", "op", "shapes", "unknown" */
    int discontinuous;
    int ill_conditioned;         /* ops.def's ill trait: a pole near which errors grow */
    int copies;                  /* the op only moves, selects or compares values */
    enum gd_dtype dtype;         /* the dtype compared in (float64 is rounded to the other) */
    int rounded_side;            /* 'a' or 'b' when that side was float64 rounded, else 0 */
    struct gd_metrics m;         /* a against b, b the reference (numpy's isclose order) */
    double scale;                /* max(|a|, |b|) over finite values (1 when 0) */
    double err;                  /* max |a-b| / scale */
    double err_median;           /* median of |a-b| / scale over all values (at most err) */
    double mean_diff;            /* the mean of a - b (signed): the part common to all values */
    double ulp_scaled;           /* max |a-b| in ULPs of the layer's scale (its largest value) */
    int64_t n_differ;            /* values that differ (NaN against anything included) */
    double differ_fraction;
    int sparse;                  /* fewer than 1% of the values differ */
    double bound;                /* rounding both sides' ops and arithmetic may add (NAN unknown) */
    double bound_median;
    double bound_declared;       /* the same with each side's own reduced-precision inputs */
    double envelope;             /* bound plus what the inputs carry in */
    double envelope_median;
    double envelope_declared;
    double inherited;            /* what the inputs carry in (same units as err) */
    double input_err;            /* the largest err among the layers it reads */
    double growth;               /* err / max(input_err, bound) */
    /* the test that decides: err / envelope ("max") or err_median / envelope_median
     * ("median"), whichever is larger, and that ratio (above 1: beyond noise) */
    double ratio;
    const char *decided_by;      /* "max", "median"; NULL when no bound is known */
    double ratio_max, ratio_median; /* each test's own ratio */
    /* where the median bound's own part comes from: "probe a", "probe b", "probe truth"
     * (a noise probe a run recorded: its own rounding measured on a sample of its outputs),
     * or "model" (rounding errors taken as random: no probe) */
    const char *noise_from;
    double bits;                 /* -log2(2 median relative error of the values that differ) */
    const char *arithmetic;      /* what that precision looks like; NULL unless own error */
    enum gd_verdict verdict;
    int is_first_divergent;
    int is_first_observed;
    int is_amplifier;
    int explained_by_arith;      /* beyond noise, within the declared arithmetic's bound */
    char reason[192];            /* why amplified (a step, a pole, a replay's rounding) */
    /* discontinuous ops: inputs within the input difference of a step; flipped outputs */
    int64_t near_boundary;
    int64_t flipped;
    double boundary_distance;    /* the input difference used (max |a-b| of the input) */
    /* ill-conditioned ops: inputs within the input difference of the pole, the smallest
     * |x|, and input difference / smallest |x| */
    int has_conditioning;
    int64_t near_pole;
    double x_min, cond;
    /* with a truth run: each side's err against it and its bound from float64, which side
     * is within it ('a', 'b', '2' both, '0' neither, 0 unknown), which is closer ('a', 'b',
     * '=' within 10%), and the rows each side has outside atol + rtol*|truth| */
    double truth_err_a, truth_err_b, truth_bound_a, truth_bound_b;
    /* the same for the median of |x - t| / the truth's scale, which a side must meet too */
    double truth_median_a, truth_median_b, truth_bound_median_a, truth_bound_median_b;
    char right;
    char closer;
    int64_t truth_rows_a, truth_rows_b;
    /* with a replay: this layer's own error, measured with the captured inputs */
    int has_own;
    double own_err, own_bound, own_bits;
    enum gd_verdict own_verdict;
    const char *own_arithmetic;
    /* rows (indexes along dim 0) holding an element outside atol + rtol*|b| */
    int64_t rows_mismatch;
    int n_rows;                  /* how many of them are listed in rows[] */
    int64_t rows[GD_DIFF_MAX_ROWS];
    char note[160];              /* why incomparable or unknown, and similar */
    int truth_quiet;             /* noise because both sides are right against a float64 truth */
    /* fp: a side had only its fingerprint. Then m and the figures above are over the
     * sample (GD_FINGERPRINT_SAMPLES elements at the same indices on both sides), except
     * m.abs_max and err, which are the largest lower bound of max |a-b| that the sample and
     * the statistics give, m.count (every element) and scale (from the statistics). A
     * divergent or nonfinite verdict is then certain, a noise verdict only the sample's. */
    int sampled;
    int64_t n_sampled;
    const char *bound_from;      /* which fact gave err: "sample", "max", "min", "mean", "l2" */
    int fetch_a, fetch_b;        /* worth fetching this side's tensor (sampled, differs, and
                                    where a difference starts, amplifies or is nonfinite) */
};

struct gd_diff {
    int n_layers;                /* matched layers, then those of a only, then of b only */
    struct gd_diff_layer *layers;
    enum gd_diff_mode mode;
    int n_matched, n_layers_a, n_layers_b, n_only_a, n_only_b;
    int first_divergent;         /* where the difference starts, -1 when unknown or none */
    int first_observed;          /* the first layer that differs beyond noise, -1 when none */
    int start_known;             /* first_divergent is that layer and its inputs are known */
    int cause;                   /* replay: first layer whose own error exceeds its bound */
    int n_amplifiers;
    int n_sampled;               /* fp: layers judged from fingerprints */
    int inputs_differ;           /* the runs' input sha256: 1 differ, 0 same, -1 unknown */
    int has_truth;
    /* the truth is a float64 run (cpu64, no emulation): "right" is then within rounding of
     * the exact values, and a layer where both runs are right is noise whatever the pair's
     * own band says; another truth is only a reference, and the explanation says so */
    int truth_float64;
    char truth_desc[96];         /* "the float64 reference", "the reference run (cpu, ...)" */
    char truth_outcome;          /* 'a', 'b', '2', '0' as per layer; 0 without a truth */
    int has_replay;
    char replay_id[64];          /* the replay run's id and the run it replays */
    char replay_of[64];
    double atol, rtol;
    /* atol and rtol are not numpy's defaults (GD_DIFF_ATOL, GD_DIFF_RTOL): the explanation
     * then counts the values outside them; with the defaults, which float32 rounding of a
     * long sum exceeds in a correct run, it says how many values differ instead */
    int tolerance_given;
    json_t *env_diff;            /* [{"key", "a", "b", "status", "category"}]; owned */
    char explanation[4096];
};

/*
 * How many threads gd_diff_runs() measures layer pairs with (process-wide, default 1; at
 * most 256): each thread loads one pair's tensors at a time, so with views that copy on load
 * (bundles on disk) up to `threads` pairs are in memory at once. The results do not depend on
 * it. GD_EINVAL outside 1..256.
 */
int gd_diff_set_threads(int threads);

/*
 * Compares run a against run b (b is the reference side of the tensor metrics), optionally
 * against a third run `truth` (a cpu64 run, or any reference). atol and rtol are numpy's
 * isclose tolerances for the mismatch counts. *out is owned by the caller.
 */
int gd_diff_runs(const struct gd_run_view *a, const struct gd_run_view *b,
                 const struct gd_run_view *truth, double atol, double rtol, struct gd_diff **out,
                 struct gd_err *err);

/*
 * The same with a replay: a run whose run.json "replay.of" is a's or b's id, made by running
 * every node of that run's model with that run's captured layers as inputs (gpudiff-agent
 * replay), so its layers differ from its source's only by what each layer computes itself.
 * Each layer then gets its own error, and the diff's cause is the first layer whose own error
 * exceeds its bound. GD_EINVAL when replay replays neither run. replay may be NULL.
 */
int gd_diff_runs_replay(const struct gd_run_view *a, const struct gd_run_view *b,
                        const struct gd_run_view *truth, const struct gd_run_view *replay,
                        double atol, double rtol, struct gd_diff **out, struct gd_err *err);

void gd_diff_free(struct gd_diff *d);

/* The diff as JSON (the fields the daemon serves); a new reference. */
json_t *gd_diff_to_json(const struct gd_diff *d, const struct gd_run_view *a,
                        const struct gd_run_view *b, const struct gd_run_view *truth);

/* The run a replay bundle replays (run.json "replay.of"), or NULL for other runs. */
const char *gd_run_replay_of(json_t *run);

#ifdef __cplusplus
}
#endif
#endif
