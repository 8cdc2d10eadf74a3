/* move.c: the copy plans of the data movement ops (see move.h), shared by every backend. */
#include <string.h>

#include "move.h"

void
gd__strides_of(const struct gd_tensor *t, int64_t *stride)
{
    int64_t s = 1;
    for (int i = t->ndim - 1; i >= 0; i--) {
        stride[i] = s;
        s *= t->shape[i];
    }
}

static void
move_identity_of(const struct gd_tensor *y, struct gd__move *m)
{
    memset(m, 0, sizeof *m);
    m->ndim = y->ndim;
    for (int i = 0; i < y->ndim; i++)
        m->shape[i] = y->shape[i];
}

void
gd__move_slice(const struct gd_tensor *x, const struct gd_params *p, const struct gd_tensor *y,
               struct gd__move *m)
{
    int64_t xs[GD_MAX_DIMS];
    gd__strides_of(x, xs);
    move_identity_of(y, m);
    for (int i = 0; i < x->ndim; i++) {
        /* An axis that yields at most one element never steps (its step may be huge). */
        m->stride[i] = y->shape[i] > 1 ? p->slice_step[i] * xs[i] : 0;
        m->offset += p->slice_start[i] * xs[i];
    }
}

void
gd__move_split(const struct gd_tensor *x, int64_t axis, int64_t first, const struct gd_tensor *y,
               struct gd__move *m)
{
    int64_t xs[GD_MAX_DIMS];
    gd__strides_of(x, xs);
    move_identity_of(y, m);
    for (int i = 0; i < x->ndim; i++)
        m->stride[i] = xs[i];
    m->offset = first * xs[axis];
}

void
gd__move_expand(const struct gd_tensor *x, const struct gd_tensor *y, struct gd__move *m)
{
    int64_t xs[GD_MAX_DIMS];
    gd__strides_of(x, xs);
    move_identity_of(y, m);
    for (int i = 0; i < y->ndim; i++) {
        int xi = i - (y->ndim - x->ndim);
        m->stride[i] = xi >= 0 && x->shape[xi] != 1 ? xs[xi] : 0;
    }
}

void
gd__move_tile(const struct gd_tensor *x, const struct gd_tensor *y, struct gd__move *m)
{
    int64_t xs[GD_MAX_DIMS];
    gd__strides_of(x, xs);
    memset(m, 0, sizeof *m);
    /* y's index along d is r * len + j: the pair (r, j) in C order, r walking nothing. */
    for (int i = 0; i < x->ndim; i++) {
        int64_t len = x->shape[i], reps = len > 0 ? y->shape[i] / len : 0;
        m->shape[m->ndim] = len > 0 ? reps : 0;
        m->stride[m->ndim++] = 0;
        m->shape[m->ndim] = len;
        m->stride[m->ndim++] = xs[i];
    }
}

void
gd__move_depth_to_space(const struct gd_tensor *x, const struct gd_params *p,
                        const struct gd_tensor *y, struct gd__move *m)
{
    int64_t xs[GD_MAX_DIMS], b = p->blocksize, c_out = y->shape[1];
    gd__strides_of(x, xs);
    memset(m, 0, sizeof *m);
    /* y (N, C', H b, W b) walked as (N, C', H, b, W, b): (n, c, h, bh, w, bw) reads
     * channel (bh b + bw) C' + c (DCR) or c b^2 + bh b + bw (CRD) at (h, w). */
    int64_t shape[6] = {x->shape[0], c_out, x->shape[2], b, x->shape[3], b};
    int64_t dcr[6] = {xs[0], xs[1], xs[2], b * c_out * xs[1], xs[3], c_out * xs[1]};
    int64_t crd[6] = {xs[0], b * b * xs[1], xs[2], b * xs[1], xs[3], xs[1]};
    m->ndim = 6;
    for (int i = 0; i < 6; i++) {
        m->shape[i] = shape[i];
        m->stride[i] = p->crd ? crd[i] : dcr[i];
    }
}

void
gd__move_space_to_depth(const struct gd_tensor *x, const struct gd_params *p,
                        const struct gd_tensor *y, struct gd__move *m)
{
    int64_t xs[GD_MAX_DIMS], b = p->blocksize;
    gd__strides_of(x, xs);
    memset(m, 0, sizeof *m);
    /* y (N, b b C, H/b, W/b) walked as (N, b, b, C, H/b, W/b): (n, bh, bw, c, h, w) reads
     * x[n, c, h b + bh, w b + bw]. */
    int64_t shape[6] = {x->shape[0], b, b, x->shape[1], y->shape[2], y->shape[3]};
    int64_t stride[6] = {xs[0], xs[2], xs[3], xs[1], b * xs[2], b * xs[3]};
    m->ndim = 6;
    for (int i = 0; i < 6; i++) {
        m->shape[i] = shape[i];
        m->stride[i] = stride[i];
    }
}

void
gd__move_simplify(struct gd__move *m)
{
    int64_t numel = 1;
    for (int i = 0; i < m->ndim; i++)
        numel *= m->shape[i];
    if (numel == 0) {
        m->ndim = 1;
        m->shape[0] = 0;
        m->stride[0] = 0;
        return;
    }
    int n = 0;
    for (int i = 0; i < m->ndim; i++) {
        if (m->shape[i] == 1)
            continue;
        if (n > 0 && m->stride[n - 1] == m->stride[i] * m->shape[i]) {
            m->shape[n - 1] *= m->shape[i];
            m->stride[n - 1] = m->stride[i];
            continue;
        }
        m->shape[n] = m->shape[i];
        m->stride[n++] = m->stride[i];
    }
    m->ndim = n;
}
