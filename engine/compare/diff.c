/*
 * diff.c: compares two runs layer by layer: the layers are paired (match.c), each pair's
 * facts read (facts.c) and measured in one pass (measure.c), then judged in network order
 * (verdict.c) so that a layer is only called divergent when its error is more than its own
 * rounding plus what its inputs carried in; steps and poles (boundary.c), the truth
 * (truth.c), a replay (own_error.c), the environment (env_diff.c) and the explanation
 * (explain.c) follow. docs/COMPARISON.md states the rules and their reasoning.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "gpudiff/diff.h"
#include "../core/internal.h"
#include "diff_internal.h"

const char *
gd_verdict_name(enum gd_verdict v)
{
    switch (v) {
#define GD__VERDICT_NAME(e, name, text) \
    case GD_VERDICT_##e:                \
        return name;
        GD_VERDICT_MAP(GD__VERDICT_NAME)
#undef GD__VERDICT_NAME
    }
    return "?";
}

static int
bundle_load(void *user, int index, struct gd_tensor **out, struct gd_err *err)
{
    return gd_bundle_layer_load(user, index, out, err);
}

void
gd_bundle_view(const struct gd_bundle *b, struct gd_run_view *out)
{
    out->run = b->run;
    out->n_layers = b->n_layers;
    out->layers = b->layers;
    out->load = bundle_load;
    out->user = (void *)b;
}

int
gd__find_layer(const struct gd_run_view *v, const char *name)
{
    for (int i = 0; i < v->n_layers; i++)
        if (strcmp(v->layers[i].name, name) == 0)
            return i;
    return -1;
}

/* 1 when both runs record an input sha256 and they differ, 0 when equal, -1 unknown. */
static int
inputs_differ(const struct gd_run_view *a, const struct gd_run_view *b)
{
    const char *sa = json_string_value(json_object_get(json_object_get(a->run, "input"), "sha256"));
    const char *sb = json_string_value(json_object_get(json_object_get(b->run, "input"), "sha256"));
    if (sa == NULL || sb == NULL || sa[0] == '\0' || sb[0] == '\0')
        return -1;
    return strcmp(sa, sb) != 0;
}

int
gd_diff_runs_replay(const struct gd_run_view *a, const struct gd_run_view *b,
                    const struct gd_run_view *truth, const struct gd_run_view *replay,
                    double atol, double rtol, struct gd_diff **out, struct gd_err *err)
{
    if (!(atol >= 0) || !(rtol >= 0) || !isfinite(atol) || !isfinite(rtol))
        return gd_err_set(err, GD_EINVAL, "atol and rtol must be finite and not negative");
    struct gd__work w = {.a = a, .b = b, .truth = truth, .replay = replay};
    struct gd_diff *d = calloc(1, sizeof *d);
    int rc = 0;
    if (d == NULL) {
        rc = gd_err_set(err, GD_ENOMEM, "out of memory");
        goto done;
    }
    w.d = d;
    d->atol = atol;
    d->rtol = rtol;
    d->tolerance_given = atol != GD_DIFF_ATOL || rtol != GD_DIFF_RTOL;
    d->first_divergent = d->first_observed = d->cause = -1;
    d->has_truth = truth != NULL;
    gd__side_init(&w.side[0], a);
    gd__side_init(&w.side[1], b);
    rc = gd__match(&w, err);
    if (rc == 0)
        rc = gd__edges(&w, err);
    if (rc != 0)
        goto done;
    d->inputs_differ = d->mode == GD_DIFF_REPLAY ? 0 : inputs_differ(a, b);
    gd__facts(&w);
    rc = gd__measure_all(&w, err);
    if (rc != 0)
        goto done;
    gd__truth_describe(&w);
    /* Judged twice at most: a float64 truth that finds both runs right at a layer makes it
     * noise, which changes what the layers after it carry. */
    for (int pass = 0; pass < 2; pass++) {
        gd__verdicts(&w);
        rc = gd__boundaries(&w, err);
        if (rc != 0)
            goto done;
        gd__starts(&w);
        gd__truth_outcomes(&w);
        if (!gd__truth_quiet(&w))
            break;
    }
    gd__fetch_wanted(&w);
    if (replay != NULL && (rc = gd__replay_own(&w, err)) != 0)
        goto done;
    d->env_diff = gd__env_diff(a->run, b->run);
    if (d->env_diff == NULL) {
        rc = gd_err_set(err, GD_ENOMEM, "out of memory");
        goto done;
    }
    gd__explain(&w);
done:
    free(w.extra);
    free(w.side[0].entry);
    free(w.side[1].entry);
    if (rc != 0) {
        gd_diff_free(d);
        return rc;
    }
    *out = d;
    return 0;
}

int
gd_diff_runs(const struct gd_run_view *a, const struct gd_run_view *b,
             const struct gd_run_view *truth, double atol, double rtol, struct gd_diff **out,
             struct gd_err *err)
{
    return gd_diff_runs_replay(a, b, truth, NULL, atol, rtol, out, err);
}

void
gd_diff_free(struct gd_diff *d)
{
    if (d == NULL)
        return;
    json_decref(d->env_diff);
    free(d->layers);
    free(d);
}
