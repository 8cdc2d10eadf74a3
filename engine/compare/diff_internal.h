/*
 * diff_internal.h: the steps of gd_diff_runs(), one file each, and the working state they
 * share: match.c pairs the layers and follows their input edges, facts.c says what each
 * layer is on each side (op, reduction length, arithmetic), measure.c measures each pair,
 * verdict.c bounds and judges, boundary.c looks at steps and poles, truth.c compares each
 * side with a reference, own_error.c takes each layer's own error from a replay, env_diff.c and
 * explain.c say what differs and why, diff_json.c writes it out. docs/COMPARISON.md.
 */
#ifndef GPUDIFF_DIFF_INTERNAL_H
#define GPUDIFF_DIFF_INTERNAL_H

#include "gpudiff/diff.h"
#include "gpudiff/noise.h"
#include "gpudiff/ops.h"

#define GD__CUSHION 4.0  /* allowance for sum|terms| / max|y| */
#define GD__CARRY 4.0    /* how much an op may scale the relative error its inputs carry */
#define GD__AMPLIFY 100.0 /* growth over the input's error that makes an amplifier */
#define GD__SPARSE 0.01  /* below this fraction of values differing, a difference is sparse */
/* A noise probe measured one run's own rounding on a sample: the bounds take this many times
 * its largest and its median error, for the elements and the order it did not see. */
#define GD__PROBE_MAX 4.0
#define GD__PROBE_MEDIAN 2.0
/* How far above the typical difference an input carries in (its common part through the
 * shift gain, the rest through the l2 gain) the median an op shows may lie: the largest
 * outputs' gains are taken, and a median is not a mean. */
#define GD__TYPICAL 2.0

/* What a run declares about its arithmetic, read once from run.json. */
struct gd__side {
    const struct gd_run_view *v;
    enum gd_arith emulate;       /* knobs.emulate's format (UNKNOWN: none or not recorded) */
    unsigned emulate_classes;    /* GD_CLASS_* it applies to */
    char emulate_nodes[256];     /* only these nodes ("" every node of the classes) */
    int tf32;                    /* knobs.tf32 / env.tf32: 1 on, 0 off, -1 not recorded */
    int has_edges;               /* some layer records its inputs */
    int *entry;                  /* the diff layer of each of its layers (-1: none) */
};

/* Per compared layer, what each side's own computation may add, in err's units. */
struct gd__extra {
    double own[2], own_median[2];     /* the layer alone; [0] is a, [1] is b; NAN unknown */
    double own_same[2], own_median_same[2]; /* reduced-precision inputs only if both declare it */
    double own_truth[2];              /* own_same, its storage rounding counted: from the truth */
    double own_truth_median[2];
    /* a side reads tensors that are not layers (weights, graph inputs): fewer recorded layer
     * inputs than its op takes, or none recorded */
    int reads_non_layers;
    int same_store;                   /* both sides store the layer's format (or one is f64) */
    /* the noise probes the runs recorded for the layer: [0] a's, [1] b's, [2] the truth's */
    struct gd_noise_probe probe[3];
    /* what the probes are applied to: the analytic bounds, whether both sides declare one
     * arithmetic, the dtype compared in */
    double own_base[2], own_truth_base[2], own_decl_base[2];
    int same_arith;
    enum gd_dtype cmp;
    double chain[2], chain_median[2]; /* the layers of that side only on the way to it */
    int direct[2];                    /* its first input on that side (layer index), -1 */
};

struct gd__work {
    struct gd_diff *d;
    const struct gd_run_view *a, *b, *truth, *replay;
    struct gd__side side[2];
    struct gd__extra *extra;          /* one per diff layer */
};

/* facts.c: unit roundoff of a floating dtype (2^-24 for float32); 0 for integers. */
double gd__unit_roundoff(enum gd_dtype dtype);

/* facts.c: the op's traits, NULL when the name is not in ops.def. */
const struct gd_op_info *gd__op_of(const char *name);

/* facts.c: 1 when the op only moves, selects or compares values (its error is its input's). */
int gd__op_copies(const struct gd_op_info *info);

/* facts.c: what run v declares (emulation, TF32), into s (entry left to the caller). */
void gd__side_init(struct gd__side *s, const struct gd_run_view *v);

/* facts.c: the arithmetic side s declares for its layer l; *from says where it was read
 * ("math record", "knobs.emulate", "knobs.tf32", "env.tf32"), or "dtype" when the run
 * declares nothing and the layer's dtype is taken. from may be NULL. */
enum gd_arith gd__arith_of(const struct gd__side *s, const struct gd_bundle_layer *l,
                           const char **from);

/*
 * facts.c: the rounding one side's layer may add, relative to the layer's scale: with op
 * info, reduction length n, arithmetic and the dtype compared in (same: count reduced-
 * precision inputs; else only the accumulation). `stored` is the side's own dtype: a
 * float16 or bfloat16 layer computed in a wider arithmetic was rounded to it once more (its
 * u), counted when `stored_rounding` is set (both sides store that dtype). NAN when info is
 * NULL or n is 0.
 */
double gd__own_bound(const struct gd_op_info *info, int64_t n, enum gd_arith arith,
                     enum gd_dtype dtype, enum gd_dtype stored, int reduced_inputs,
                     int stored_rounding, int median);

/* facts.c: op, reduction length, traits and arithmetic of every compared layer. */
void gd__facts(struct gd__work *w);

/* match.c: pairs the layers of a and b into d->layers (and d's counts and mode). */
int gd__match(struct gd__work *w, struct gd_err *err);

/* match.c: each compared layer's inputs and the chains of one-sided layers before it. */
int gd__edges(struct gd__work *w, struct gd_err *err);

/* measure.c: rounds a float64 side to the other's float dtype; a2, b2 may be new tensors. */
int gd__reconcile(struct gd_tensor *a, struct gd_tensor *b, struct gd_tensor **a2,
                  struct gd_tensor **b2, int *rounded_side, struct gd_err *err);

/* measure.c: what the verdict reads of a pair of tensors of one dtype and element count,
 * whichever is a: the scale max(|a|, |b|), the median of |a - b| / scale over all values
 * (from a log-linear histogram 1/16 of a binade wide, never above the largest: the median
 * of the quantity err is the largest of), the values that differ and the bits those carry. */
struct gd__pair_stats {
    double scale;       /* max(|a|, |b|) over finite values, 1 when all are 0 */
    double err_median;  /* median of |a - b| / scale over all values */
    double err_median_hi; /* taken as a sample: the 99% upper confidence bound of the median */
    double abs_max;     /* max |a - b| over finite pairs */
    double mean_diff;   /* the mean of a - b over finite pairs (signed) */
    int64_t n_differ;   /* NaN against anything included, -0 against +0 not */
    double bits;        /* -log2(2 median |a - b| / max(|a|, |b|)) of the values that differ,
                           within [0, p] */
};
int gd__pair_stats(const struct gd_tensor *a, const struct gd_tensor *b, struct gd__pair_stats *out,
                   struct gd_err *err);

/* facts.c: half the smallest subnormal of a float dtype (the finest rounding step); 0 for
 * integers. */
double gd__subnormal_half(enum gd_dtype dtype);

/* facts.c: abs_diff in units in the last place of `scale` in dtype: the ULP distance at the
 * layer's largest value, which a sign crossing near 0 does not inflate (integers: abs_diff). */
double gd__ulps_at(double abs_diff, double scale, enum gd_dtype dtype);

/* measure.c: largest finite |value| of a host tensor (0 when none). */
double gd__abs_max(const struct gd_tensor *t);

/* measure.c: measures every matched pair (and each side against the truth run). */
int gd__measure_all(struct gd__work *w, struct gd_err *err);

/* truth.c: a loaded pair's errors against the truth run's layer of the same name. */
int gd__truth_layer(struct gd__work *w, int i, struct gd_tensor *ta, struct gd_tensor *tb,
                    struct gd_err *err);

/* truth.c: which side is within its bound of the truth, per layer and overall. */
void gd__truth_outcomes(struct gd__work *w);

/* truth.c: whether the truth run is float64, and its name for the explanation. */
void gd__truth_describe(struct gd__work *w);

/* truth.c: with a float64 truth, marks the divergent or amplified layers where both runs are
 * right against it (truth_quiet: the verdict is to be noise); 1 when it marked any. */
int gd__truth_quiet(struct gd__work *w);

/* facts.c: the gains of layer i's input called name from a noise probe of the layer (a's,
 * b's or the truth's); NULL when none gives them. */
const struct gd_noise_gain *gd__input_gain(const struct gd__work *w, int i, const char *name);

/* facts.c: layer i's own bounds made from its noise probes, once its scale is measured
 * (docs/COMPARISON.md, "Noise probes"); idempotent. */
void gd__probe_bounds(struct gd__work *w, int i);

/* facts.c: a probe's median for entry, in units of layer i's scale. */
double gd__probe_median(const struct gd__work *w, int i, const struct gd_noise_probe *p,
                        int entry);

/* verdict.c: bounds, envelopes and verdicts in network order, then where it starts. */
void gd__verdicts(struct gd__work *w);

/* verdict.c: first divergent, first observed and the precision labels. */
void gd__starts(struct gd__work *w);

/* measure.c (fp): a pair where a side has only its fingerprint, measured on the samples and
 * bounded by the statistics (gd_diff_layer.sampled). */
int gd__measure_sampled(struct gd_diff_layer *dl, const struct gd_bundle_layer *la,
                        const struct gd_bundle_layer *lb, double atol, double rtol,
                        struct gd_err *err);

/* sampled.c (fp): marks the sampled layers worth fetching tensors for. */
void gd__fetch_wanted(struct gd__work *w);

/* boundary.c: steps of discontinuous layers; poles of ill-conditioned ones (which may turn
 * a divergent layer into an amplified one). */
int gd__boundaries(struct gd__work *w, struct gd_err *err);

/* own_error.c: with w->replay, each layer's own error and the diff's cause. */
int gd__replay_own(struct gd__work *w, struct gd_err *err);

/* diff.c: the index of the layer named name in v, -1 when there is none. */
int gd__find_layer(const struct gd_run_view *v, const char *name);

/* env_diff.c: [{"key", "a", "b", "status", "category"}] for backend, env.* and knobs.*. */
json_t *gd__env_diff(json_t *run_a, json_t *run_b);

/* env_diff.c: the value of a run.json field "env.x" / "knobs.x" / "backend" as text, or
 * NULL when not recorded (or, for a driver version, unreadable). */
const char *gd__run_field(json_t *run, const char *key, char *buf, size_t size);

/* explain.c: d->explanation, in plain words, from the facts above. */
void gd__explain(struct gd__work *w);

#endif
