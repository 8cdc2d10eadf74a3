/*
 * noise_internal.h: what the noise probe's files share (gpudiff/noise.h): noise_probe.c
 * keeps the captured rows and decides when a node is ready, noise_node.c cuts a node to its
 * budget and runs it alone on the CPU backends, noise_gains.c says how much an input's
 * difference grows through it.
 */
#ifndef GPUDIFF_NOISE_INTERNAL_H
#define GPUDIFF_NOISE_INTERNAL_H

#include "gpudiff/noise.h"

#define ROWS_MAX 64 /* most rows kept of one value */

/* What the collector keeps of one value. */
struct kept {
    int consumers;   /* probed nodes reading it that are not done */
    int whole;       /* a node that mixes rows reads it: keep every row */
    int state;       /* 0 not seen yet, 1 filling, 2 complete, -1 not kept */
    int64_t n_rows;  /* the layer's dim 0 (1 for a scalar) */
    int64_t per_row; /* elements per row */
    int ndim;
    int64_t shape[GD_MAX_DIMS]; /* the whole layer's */
    int64_t k;                  /* rows kept */
    int64_t *rows;              /* which, in the order kept */
    struct gd_tensor *data;     /* (k, shape[1], ...) */
    int64_t filled;             /* elements written so far */
};

struct probe_out {
    char *name;
    struct gd_noise_probe p;
};

struct gd_noise_collector {
    const struct gd_graph *g;
    const struct gd_tensor *const *inputs;
    struct gd_noise_opts opts;
    struct kept *vals; /* per value */
    int *waiting;      /* per node: runtime inputs not complete; -1 not probed */
    struct probe_out *outs;
    int n_outs, cap_outs;
    int started; /* the nodes reading only graph inputs were probed */
    int n_probed, n_skipped;
    char first_skip[192];
    double seconds;
    int64_t bytes; /* held in kept rows */
};

/* How a node's probe is cut to its budget. */
struct cut {
    int64_t rows;  /* rows of the sliced inputs */
    int64_t m;     /* MatMul: rows of A's second-to-last axis kept (0: all) */
    int64_t cols;  /* Gemm: output columns kept; Conv, ConvTranspose: channels (0: all) */
    int one_group; /* Conv, ConvTranspose: group 0 only, as a group-1 node */
};

/* The three gains of an input (struct gd_noise_gain without its name). */
struct gd__gain3 {
    double l1, shift, l2;
};

/* noise_probe.c: the first k distinct rows of [0, n) in van der Corput order (0, n/2, n/4,
 * 3n/4, ...): the same rows for every value of n rows. Returns k, or -1 without memory. */
int64_t gd__rows_pick(int64_t n, int64_t k, int64_t *out);

/* noise_probe.c: node was not probed, and why (the first reason is kept). */
void gd__noise_skip(struct gd_noise_collector *c, int node, const char *why);

/* noise_probe.c: a new probe record for the layer called name; NULL without memory. */
struct gd_noise_probe *gd__noise_probe_slot(struct gd_noise_collector *c, const char *name);

/* noise_node.c: node ni's inputs are kept: cuts it to the budget, runs it and records its
 * probes. A failure of its own leaves it unprobed (gd__noise_skip); only GD_ENOMEM returns. */
int gd__noise_probe_node(struct gd_noise_collector *c, int ni, struct gd_err *err);

/* noise_gains.c: 1 for the ops whose gains come from their coefficients. */
int gd__noise_linear_op(enum gd_op op);

/* noise_gains.c: adds g times factor to probe p's gains of input name (summed when the
 * input is read twice). */
void gd__noise_gain_add(struct gd_noise_probe *p, const char *name, struct gd__gain3 g,
                        double factor);

/* noise_gains.c: the gains of node n's layer inputs, for an op linear in them; terms is the
 * cut node's reduction length. */
void gd__noise_gains(const struct gd_noise_collector *c, const struct gd_node *n, int64_t terms,
                     struct gd_noise_probe *p);

#endif
