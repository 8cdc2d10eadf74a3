/*
 * bcast.h: a walk over the output of a broadcasting op with up to GD_BCAST_MAX inputs, in C
 * order, keeping each input's element offset (numpy broadcasting: an input's stride is 0
 * along the axes where it has size 1 or is missing). Used by the element-wise paths that are
 * not the vectorized float rows of op_eltwise.c: integer and bool data, Where, the logical ops.
 */
#ifndef GPUDIFF_CPU_BCAST_H
#define GPUDIFF_CPU_BCAST_H

#include <stdint.h>

#include "gpudiff/tensor.h"

#define GD_BCAST_MAX 3

struct gd__bcast {
    int n_in, ndim;
    int64_t shape[GD_MAX_DIMS];
    int64_t stride[GD_BCAST_MAX][GD_MAX_DIMS];
    int64_t idx[GD_MAX_DIMS];
    int64_t off[GD_BCAST_MAX]; /* element offsets of the current output element */
};

/* Starts a walk over y's elements for inputs in[0 .. n_in), n_in <= GD_BCAST_MAX. */
static inline void
gd__bcast_init(struct gd__bcast *w, int n_in, const struct gd_tensor *const *in,
               const struct gd_tensor *y)
{
    w->n_in = n_in;
    w->ndim = y->ndim;
    for (int d = 0; d < y->ndim; d++) {
        w->shape[d] = y->shape[d];
        w->idx[d] = 0;
    }
    for (int k = 0; k < n_in; k++) {
        int64_t s = 1;
        for (int d = y->ndim - 1; d >= 0; d--) {
            int td = d - (y->ndim - in[k]->ndim);
            int64_t len = td >= 0 ? in[k]->shape[td] : 1;
            w->stride[k][d] = len == 1 ? 0 : s;
            s *= len;
        }
        w->off[k] = 0;
    }
}

/* Moves to the next output element. */
static inline void
gd__bcast_next(struct gd__bcast *w)
{
    for (int d = w->ndim - 1; d >= 0; d--) {
        for (int k = 0; k < w->n_in; k++)
            w->off[k] += w->stride[k][d];
        if (++w->idx[d] < w->shape[d])
            return;
        for (int k = 0; k < w->n_in; k++)
            w->off[k] -= w->stride[k][d] * w->shape[d];
        w->idx[d] = 0;
    }
}

#endif
