/*
 * sampled.c: which layers judged from fingerprints are worth their tensors. A tensor is
 * fetched only where the fingerprints show the runs differ beyond noise and the layer is where
 * a difference begins (none of the layers it reads differs: they are identical by hash or
 * bitwise), the first divergent layer, an amplifier, or nonfinite: a layer that merely
 * inherits a difference would show again what its inputs show. Only the side(s) that lack
 * the tensor are asked.
 */
#include "diff_internal.h"

static int
starts_here(const struct gd_diff *d, const struct gd_diff_layer *dl)
{
    if (!dl->inputs_known)
        return 0;
    for (int k = 0; k < dl->n_inputs; k++)
        if (d->layers[dl->inputs[k]].verdict != GD_VERDICT_IDENTICAL)
            return 0;
    return 1;
}

void
gd__fetch_wanted(struct gd__work *w)
{
    struct gd_diff *d = w->d;
    for (int i = 0; i < d->n_layers; i++) {
        struct gd_diff_layer *dl = &d->layers[i];
        if (!dl->sampled || dl->verdict == GD_VERDICT_IDENTICAL ||
            dl->verdict == GD_VERDICT_INCOMPARABLE)
            continue;
        /* noise in the sample at a start is not asked for: the sample found nothing to show */
        int differs = dl->verdict != GD_VERDICT_NOISE;
        int wanted = (differs && starts_here(d, dl)) || dl->is_first_divergent ||
                     dl->is_amplifier || dl->verdict == GD_VERDICT_NONFINITE;
        if (!wanted)
            continue;
        dl->fetch_a = w->a->layers[dl->index_a].tensor_absent;
        dl->fetch_b = w->b->layers[dl->index_b].tensor_absent;
    }
}
