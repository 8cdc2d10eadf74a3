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
#include "gpudiff/ops.h"

#define GD__CUSHION 4.0  /* allowance for sum|terms| / max|y| */
#define GD__CARRY 4.0    /* how much an op may scale the relative error its inputs carry */
#define GD__AMPLIFY 100.0 /* growth over the input's error that makes an amplifier */
#define GD__SPARSE 0.01  /* below this fraction of values differing, a difference is sparse */

/* What a run declares about its arithmetic, read once from run.json. */
struct gd__side {
    const struct gd_run_view *v;
    enum gd_arith emulate;       /* knobs.emulate's format (UNKNOWN: none or not recorded) */
    unsigned emulate_classes;    /* GD_CLASS_* it applies to */
    int tf32;                    /* knobs.tf32 / env.tf32: 1 on, 0 off, -1 not recorded */
    int has_edges;               /* some layer records its inputs */
    int *entry;                  /* the diff layer of each of its layers (-1: none) */
};

/* Per compared layer, what each side's own computation may add, in err's units. */
struct gd__extra {
    double own[2], own_median[2];     /* the layer alone; [0] is a, [1] is b; NAN unknown */
    double own_same[2], own_median_same[2]; /* reduced-precision inputs only if both declare it */
    double own_truth[2];              /* own_same, its storage rounding counted: from the truth */
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

/* measure.c: largest finite |value| of a host tensor (0 when none). */
double gd__abs_max(const struct gd_tensor *t);

/* measure.c: measures every matched pair (and each side against the truth run). */
int gd__measure_all(struct gd__work *w, struct gd_err *err);

/* truth.c: a loaded pair's errors against the truth run's layer of the same name. */
int gd__truth_layer(struct gd__work *w, int i, struct gd_tensor *ta, struct gd_tensor *tb,
                    struct gd_err *err);

/* truth.c: which side is within its bound of the truth, per layer and overall. */
void gd__truth_outcomes(struct gd__work *w);

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
