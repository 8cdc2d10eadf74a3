/*
 * own_error.c: each layer's own error, from a replay. A replay (gpudiff-agent replay) ran every
 * node of a run's model with that run's captured layers as its inputs, on another backend or
 * with other knobs; its run.json says which run in "replay.of". Compared with that run it
 * differs in each layer only by what the layer itself computes (a diff in replay mode: no
 * error is inherited), so the first layer whose own error exceeds its bound is the cause of a
 * difference however it spreads after it. Here that replay diff is made and its per-layer
 * figures are joined to the diff of the two runs by layer name.
 */
#include <string.h>

#include "diff_internal.h"

static const char *
id_of(const struct gd_run_view *v)
{
    const char *id = json_string_value(json_object_get(v->run, "id"));
    return id ? id : "";
}

int
gd__replay_own(struct gd__work *w, struct gd_err *err)
{
    struct gd_diff *d = w->d;
    const char *of = gd_run_replay_of(w->replay->run);
    const struct gd_run_view *src = NULL;
    if (of != NULL && strcmp(of, id_of(w->a)) == 0)
        src = w->a;
    else if (of != NULL && strcmp(of, id_of(w->b)) == 0)
        src = w->b;
    if (src == NULL)
        return gd_err_set(err, GD_EINVAL, "run %s replays %s, which is neither run compared",
                          id_of(w->replay), of ? of : "no run");
    struct gd_diff *r = NULL;
    int rc = gd_diff_runs(w->replay, src, NULL, d->atol, d->rtol, &r, err);
    if (rc != 0)
        return gd_err_prefix(err, "the replay %s: ", id_of(w->replay));
    d->has_replay = 1;
    snprintf(d->replay_id, sizeof d->replay_id, "%s", id_of(w->replay));
    snprintf(d->replay_of, sizeof d->replay_of, "%s", of);
    d->cause = -1;
    for (int i = 0; i < d->n_layers; i++) {
        struct gd_diff_layer *dl = &d->layers[i];
        if (dl->index_a < 0 || dl->index_b < 0)
            continue;
        for (int k = 0; k < r->n_layers; k++) {
            const struct gd_diff_layer *rl = &r->layers[k];
            if (!rl->has_own || strcmp(rl->name, dl->name) != 0)
                continue;
            dl->has_own = 1;
            dl->own_err = rl->own_err;
            dl->own_bound = rl->own_bound;
            dl->own_bits = rl->own_bits;
            dl->own_verdict = rl->own_verdict;
            dl->own_arithmetic = rl->own_arithmetic;
            if (d->cause < 0 && (rl->own_verdict == GD_VERDICT_DIVERGENT ||
                                 rl->own_verdict == GD_VERDICT_NONFINITE))
                d->cause = i;
            break;
        }
    }
    gd_diff_free(r);
    return 0;
}
