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
int gd__boundaries(struct gd_diff *d, const struct gd_run_view *a, const struct gd_run_view *b,
                   struct gd_err *err);

/* truth.c: each side's error against the reference run, and which is closer. */
int gd__truth(struct gd_diff *d, const struct gd_run_view *a, const struct gd_run_view *b,
              const struct gd_run_view *truth, struct gd_err *err);

/* env_diff.c: [{"key", "a", "b"}] for backend, env.* and knobs.* that differ. */
json_t *gd__env_diff(json_t *run_a, json_t *run_b);

/* explain.c: d->explanation, in plain words, from the facts above. */
void gd__explain(struct gd_diff *d, const struct gd_run_view *a, const struct gd_run_view *b,
                 const struct gd_run_view *truth);

#endif
