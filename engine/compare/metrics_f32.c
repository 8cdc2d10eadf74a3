/*
 * metrics_f32.c: the float32 block driver shared by the vector kernels: the end of a vector
 * pass, the window of codes to count, and the fold of a block into the metrics with scalar
 * rescans of the rare blocks that may hold a new maximum (their indexes).
 */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "metrics_internal.h"

/*
 * The end of a vector pass: lanes added in a fixed order. Returns 0 when every pair was
 * finite and no float32 relative error overflowed; otherwise the block goes to the scalar
 * path. Non-finite inputs are caught for free: their squares make the float64 sums NaN or
 * Inf (finite float32 squares cannot overflow a double).
 */
int
gd__metrics_block_reduce(struct f32_block *out, const double *s_abs, const double *s_sq,
                         const double *s_aa, const double *s_bb, const double *m_abs,
                         const uint32_t *m_ulp, const uint32_t *m_rel, const int32_t *n_mis,
                         const int32_t *n_diff, const int32_t *n_rzd)
{
    double sa = 0, sb = 0;
    out->sum_abs = out->sum_sq_err = 0;
    out->abs_max = 0;
    for (int j = 0; j < 8; j++) {
        out->sum_abs += s_abs[j];
        out->sum_sq_err += s_sq[j];
        sa += s_aa[j];
        sb += s_bb[j];
        if (m_abs[j] > out->abs_max)
            out->abs_max = m_abs[j];
    }
    out->sum_sq_a = sa;
    out->sum_sq_b = sb;
    out->ulp_max = 0;
    out->rel_max_bits = 0;
    out->n_mismatch = 0;
    out->n_bits_differ = 0;
    out->n_ref_zero_diff = 0;
    for (int j = 0; j < 16; j++) {
        if (m_ulp[j] > out->ulp_max)
            out->ulp_max = m_ulp[j];
        if (m_rel[j] > out->rel_max_bits)
            out->rel_max_bits = m_rel[j];
        out->n_mismatch += n_mis[j];
        out->n_bits_differ += n_diff[j];
        out->n_ref_zero_diff += n_rzd[j];
    }
    if (!isfinite(sa + sb) || out->rel_max_bits >= 0x7f800000u)
        return -1;
    return 0;
}

/*
 * Window for counting a block's codes: `nwin` (8 or 16) consecutive codes from the
 * smallest regular code (those in [reg_lo, reg_hi]; the others are special), so that with a
 * narrow spread every code gets its own counters. The window ends at reg_hi at the latest,
 * so it never takes in a special code.
 */
void
gd__metrics_window_pick(int lo, int hi, int reg_lo, int reg_hi, int *win_lo, int *nwin)
{
    int w = hi - lo < 8 ? 8 : 16;
    if (lo > hi)
        lo = reg_lo; /* no regular code: only the specials are counted */
    if (lo > reg_hi + 1 - w)
        lo = reg_hi + 1 - w;
    *win_lo = lo;
    *nwin = w;
}

/* ---- rescans of one block for the indexes of its maxima (scalar, rare) ---- */

/* Element i of a float32 array at any alignment. */
static float
f32_at(const char *p, int i)
{
    float f;
    memcpy(&f, p + 4 * (size_t)i, sizeof f);
    return f;
}

static uint32_t
f32_bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

static void
f32_rescan_abs(struct gd_metrics *m, const char *a, const char *b, int64_t offset,
               double block_max)
{
    for (int i = 0; i < BLOCK; i++) {
        if (fabs((double)f32_at(a, i) - (double)f32_at(b, i)) == block_max) {
            if (beats(block_max, offset + i, m->abs_max, m->abs_max_index)) {
                m->abs_max = block_max;
                m->abs_max_index = offset + i;
            }
            return;
        }
    }
}

static void
f32_rescan_ulp(struct gd_metrics *m, const char *a, const char *b, int64_t offset,
               uint32_t block_max)
{
    for (int i = 0; i < BLOCK; i++) {
        if (ulp_distance(f32_bits(f32_at(a, i)), f32_bits(f32_at(b, i)), 32) == block_max) {
            if (beats_u64(block_max, offset + i, m->ulp_max, m->ulp_max_index)) {
                m->ulp_max = block_max;
                m->ulp_max_index = offset + i;
            }
            return;
        }
    }
}

/*
 * Largest float64 rel of the block. The float32 rel is within 2^-22 (relative) of it, so
 * only elements whose float32 rel reaches `floor_bits` (a float32 at most 1 - 2^-20 times
 * the current maximum) can beat the maximum: this skips the divisions elsewhere.
 */
static void
f32_rescan_rel(struct gd_metrics *m, const char *a, const char *b, int64_t offset,
               const uint32_t *rel_bits, uint32_t floor_bits)
{
    for (int i = 0; i < BLOCK; i++) {
        if (rel_bits[i] < floor_bits)
            continue;
        double da = f32_at(a, i), db = f32_at(b, i);
        if (db == 0.0)
            continue;
        double rel = fabs(da - db) / fabs(db);
        if (beats(rel, offset + i, m->rel_max, m->rel_max_index)) {
            m->rel_max = rel;
            m->rel_max_index = offset + i;
        }
    }
}

static void
f32_rescan_mismatch(struct gd_metrics *m, const char *a, const char *b, int64_t offset,
                    const struct tol *t)
{
    for (int i = 0; i < BLOCK; i++) {
        if (!close_f32(GD_F32, f32_at(a, i), f32_at(b, i), t)) {
            if (m->mismatch_first_index < 0 || offset + i < m->mismatch_first_index)
                m->mismatch_first_index = offset + i;
            return;
        }
    }
}

/* Folds a block of finite pairs into m; ref_zero is its count of pairs with b == 0. */
void
gd__metrics_block_fold(struct gd_metrics *m, const char *a, const char *b, int64_t offset,
                       const struct tol *t, const struct f32_block *blk, int64_t ref_zero)
{
    m->count += BLOCK;
    m->n_finite += BLOCK;
    m->n_bits_differ += blk->n_bits_differ;
    m->n_ref_zero_diff += blk->n_ref_zero_diff;
    ksum_add(&m->sum_abs, blk->sum_abs);
    ksum_add(&m->sum_sq_err, blk->sum_sq_err);
    ksum_add(&m->sum_sq_a, blk->sum_sq_a);
    ksum_add(&m->sum_sq_b, blk->sum_sq_b);

    /* A rescan is needed only when the block may hold a new maximum (or the same one at a
     * smaller index, when chunks come out of order). */
    if (beats(blk->abs_max, offset, m->abs_max, m->abs_max_index))
        f32_rescan_abs(m, a, b, offset, blk->abs_max);
    if (beats_u64(blk->ulp_max, offset, m->ulp_max, m->ulp_max_index))
        f32_rescan_ulp(m, a, b, offset, blk->ulp_max);
    if (ref_zero < BLOCK) {
        uint32_t floor_bits = 0;
        if (m->rel_max_index >= 0) {
            double rel_floor = m->rel_max * (1.0 - 0x1p-20);
            float floor_f = (float)rel_floor;
            if ((double)floor_f > rel_floor)
                floor_f = nextafterf(floor_f, 0.0f);
            floor_bits = f32_bits(floor_f);
        }
        if (blk->rel_max_bits >= floor_bits)
            f32_rescan_rel(m, a, b, offset, blk->rel_bits, floor_bits);
    }
    if (blk->n_mismatch > 0) {
        m->n_mismatch += blk->n_mismatch;
        if (m->mismatch_first_index < 0 || offset < m->mismatch_first_index)
            f32_rescan_mismatch(m, a, b, offset, t);
    }
}
