/* diff_internal.h: the steps of gd_diff_runs(), one file each. */
#ifndef GPUDIFF_DIFF_INTERNAL_H
#define GPUDIFF_DIFF_INTERNAL_H

#include "gpudiff/diff.h"

/* Unit roundoff of a floating dtype (2^-24 for float32); 0 for integers and bool. */
double gd__unit_roundoff(enum gd_dtype dtype);

/* Rounds a float64 side to the other side's float dtype; a2 and b2 may be new tensors. */
int gd__reconcile(struct gd_tensor *a, struct gd_tensor *b, struct gd_tensor **a2,
                  struct gd_tensor **b2, int *rounded_side, struct gd_err *err);

/* Largest finite |value| of a host tensor (0 when none). */
double gd__abs_max(const struct gd_tensor *t);

/* verdict.c: the layer's rounding bound and effective precision, from its metrics. */
void gd__layer_bounds(struct gd_diff_layer *dl);

/* verdict.c: layer i's verdict from its error and its inputs' (layers before it). */
void gd__layer_verdict(struct gd_diff *d, int i);

/* boundary.c: near-boundary and flip counts of the discontinuous layers that diverge. */
int gd__boundaries(struct gd_diff *d, const struct gd_run_view *b, struct gd_err *err);

/* diff.c: the index of the layer named name in v, -1 when there is none. */
int gd__find_layer(const struct gd_run_view *v, const char *name);

/*
 * truth.c: a measured layer's err on each side (tensors ta and tb) against the reference
 * run's layer of the same name, and which side is closer. A layer the truth lacks, or whose
 * size or dtype it cannot be compared in, keeps NAN errors; a truth layer that cannot be
 * loaded is an error.
 */
int gd__truth_layer(struct gd_diff_layer *dl, struct gd_tensor *ta, struct gd_tensor *tb,
                    const struct gd_run_view *truth, struct gd_err *err);
/* env_diff.c: [{"key", "a", "b"}] for backend, env.* and knobs.* that differ. */
json_t *gd__env_diff(json_t *run_a, json_t *run_b);

/* explain.c: d->explanation, in plain words, from the facts above. */
void gd__explain(struct gd_diff *d, const struct gd_run_view *a, const struct gd_run_view *b,
                 const struct gd_run_view *truth);

#endif
