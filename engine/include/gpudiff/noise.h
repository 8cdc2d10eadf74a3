/*
 * noise.h: noise probes, a layer's own rounding measured on its own data.
 *
 * How much float32 rounding a sum can make depends on the data: random terms give errors
 * that grow like sqrt(n), equal terms (constant weights, constant inputs) errors that grow
 * like n, and no bound made from n alone is right for both. A noise probe measures it: after
 * a run, a sample of each reducing node's outputs (a few rows, and for a matrix product a
 * few of its rows, for a grouped convolution one group) is computed again on the CPU from
 * the inputs that run captured, in float64 (the reference) and in float32, and, for matrix
 * products and convolutions, with their operands rounded to TF32, BF16 and FP16 as cpu's
 * emulation does. Each arithmetic's error against float64 is recorded in the units of the
 * comparison (docs/COMPARISON.md, "Noise probes"): the largest |y - ref| over the sample's
 * largest |ref| ("max"), and the median of |y - ref| over the same scale ("median"). The
 * comparison takes the float32 entry as that layer's float32 noise, and the others to name
 * the arithmetic a difference looks like.
 *
 * A probe is recorded in run.json's layer record as "noise" (gd_noise_probe_to_json()); the
 * comparison reads it back with gd_noise_probe_from_json().
 */
#ifndef GPUDIFF_NOISE_H
#define GPUDIFF_NOISE_H

#include <stdint.h>

#include <jansson.h>

#include "gpudiff/graph.h"
#include "gpudiff/session.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The arithmetics a probe measures, in this order (names "fp32", "tf32", "bf16", "fp16"). */
enum gd_noise_arith { GD_NOISE_FP32, GD_NOISE_TF32, GD_NOISE_BF16, GD_NOISE_FP16, GD_NOISE_N };

#define GD_NOISE_GAINS 4 /* inputs a probe gives gains for, at most */

const char *gd_noise_arith_name(enum gd_noise_arith a);

struct gd_noise_probe {
    int64_t outputs;             /* output elements measured; 0: no probe */
    int64_t rows, of_rows;       /* rows (dim 0) taken, of the layer's */
    char slice[48];              /* what else was cut: "4 of 1024 rows of A", "group 1 of 32", "" */
    double scale;                /* the sample's largest |ref|, which max and median are over
                                    (0: not recorded, taken as the layer's) */
    int has[GD_NOISE_N];         /* which arithmetics were measured */
    double max[GD_NOISE_N];      /* max |y - ref| / max |ref| over the sample */
    double median[GD_NOISE_N];   /* median of |y - ref| / max |ref| over the sample */
    /* the sample's 99% upper confidence bound of the median of all outputs (the order
     * statistic of rank n/2 + 1.165 sqrt(n)): what the comparison takes for the layer */
    double median_hi[GD_NOISE_N];
    /*
     * How much each layer input's difference can grow through the op, by the input's value
     * name, as three gains over the outputs (the largest of each): l1, the sum of
     * |coefficients| (a bound: any difference); shift, |sum of coefficients| (a difference
     * the same on every input element); l2, their root sum of squares (differences that are
     * independent of each other). Exact from the weights, or fixed (a mean's 1/n each), for
     * ops linear in the input; measured by float64 finite differences for the others.
     */
    int n_gains;
    struct gd_noise_gain {
        char input[64];
        double l1, shift, l2;
    } gains[GD_NOISE_GAINS];
};

/* {"outputs", "rows", "of_rows", "slice", "fp32": {"max", "median"}, ..., "gains": {NAME:
 * {"l1", "shift", "l2"}}}; a new reference, NULL without memory. */
json_t *gd_noise_probe_to_json(const struct gd_noise_probe *p);

/* Reads a "noise" record. GD_EFORMAT (naming the field) for one that is not of that form;
 * out is zeroed first (outputs 0: none) and written only on success. */
int gd_noise_probe_from_json(json_t *j, struct gd_noise_probe *out, struct gd_err *err);

/* What the probes of one run may cost. */
struct gd_noise_opts {
    int64_t outputs;             /* aim for this many outputs per layer (default 4096) */
    int64_t max_terms;           /* at most this many products per arithmetic and layer
                                    (outputs x reduction length; default 2^26) */
    int64_t max_bytes;           /* host memory the captured rows may hold at once (default
                                    256 MiB); a layer whose inputs do not fit is not probed */
    int threads;                 /* cpu threads of the probe's sessions (default 1; 0: one
                                    per core) */
};

void gd_noise_opts_init(struct gd_noise_opts *o);

struct gd_noise_collector;

/*
 * A collector for runs of g, which must stay alive, finalized and with its weights (it
 * reads the weights of the nodes it probes: call gd_graph_release_weights() only after
 * gd_noise_collector_free()). inputs are the run's graph inputs (g->n_inputs host tensors,
 * borrowed for the collector's life). Options are copied (NULL: defaults). GD_ENOMEM.
 */
int gd_noise_collector_new(const struct gd_graph *g, const struct gd_tensor *const *inputs,
                           const struct gd_noise_opts *opts, struct gd_noise_collector **out,
                           struct gd_err *err);

/*
 * Hands the collector one captured layer, as a capture callback receives it (a whole layer,
 * a slice of rows with knobs.batch, or a piece): it keeps the rows it needs, and as soon as
 * every input of a node it probes is complete, computes that node's probe. A layer without
 * its tensor (fingerprint capture) leaves the nodes reading it unprobed. Errors of the
 * probe's own sessions are not the run's: the node is left unprobed and the reason kept
 * (gd_noise_collector_skipped()); only GD_ENOMEM is returned.
 */
int gd_noise_collector_layer(struct gd_noise_collector *c, const struct gd_layer *layer,
                             struct gd_err *err);

/* The probe of the node output called name (a layer's name), NULL when none was made. */
const struct gd_noise_probe *gd_noise_collector_get(const struct gd_noise_collector *c,
                                                   const char *name);

/* How many nodes were probed, and how many reducing nodes were not (with the first reason). */
int gd_noise_collector_count(const struct gd_noise_collector *c);
int gd_noise_collector_skipped(const struct gd_noise_collector *c, const char **first_reason);

/* Seconds spent computing probes. */
double gd_noise_collector_seconds(const struct gd_noise_collector *c);

void gd_noise_collector_free(struct gd_noise_collector *c);

#ifdef __cplusplus
}
#endif
#endif
