/* diff_json.c: a diff as JSON: the fields `gpudiff-agent diff --json` prints and the daemon
 * serves (docs/COMPARISON.md lists them). Non-finite numbers become null. */
#include <math.h>
#include <string.h>

#include "diff_internal.h"

static json_t *
num(double v)
{
    return isfinite(v) ? json_real(v) : json_null();
}

static json_t *
run_ref(const struct gd_run_view *v)
{
    if (v == NULL)
        return json_null();
    json_t *model = json_object_get(v->run, "model");
    return json_pack("{s:O?, s:O?, s:O?, s:O?}", "id", json_object_get(v->run, "id"), "backend",
                     json_object_get(v->run, "backend"), "model",
                     json_object_get(model, "name"), "created_at",
                     json_object_get(v->run, "created_at"));
}

/* The ULP histogram without its empty tail. */
static json_t *
ulp_hist(const struct gd_metrics *m)
{
    int last = GD_METRICS_ULP_BINS - 1;
    while (last > 0 && m->ulp_hist[last] == 0)
        last--;
    json_t *a = json_array();
    for (int i = 0; i <= last; i++)
        json_array_append_new(a, json_integer(m->ulp_hist[i]));
    return a;
}

static json_t *
side_char(char c)
{
    switch (c) {
    case 'a':
        return json_string("a");
    case 'b':
        return json_string("b");
    case '2':
        return json_string("both");
    case '0':
        return json_string("neither");
    case '=':
        return json_string("even");
    default:
        return json_string("unknown");
    }
}

static json_t *
str_or_null(const char *s)
{
    return s != NULL ? json_string(s) : json_null();
}

static void
set_facts(json_t *o, const struct gd_diff_layer *l)
{
    json_object_set_new(o, "op", json_string(l->op));
    if (l->op_a[0] && l->op_b[0] && strcmp(l->op_a, l->op_b) != 0) {
        json_object_set_new(o, "op_a", json_string(l->op_a));
        json_object_set_new(o, "op_b", json_string(l->op_b));
    }
    if (l->algo_a[0] || l->algo_b[0])
        json_object_set_new(o, "algo", json_pack("{s:s, s:s}", "a", l->algo_a, "b", l->algo_b));
    json_object_set_new(o, "math",
                        json_pack("{s:s, s:s, s:s, s:s}", "a", gd_arith_name(l->arith_a), "b",
                                  gd_arith_name(l->arith_b), "a_from", l->arith_from_a, "b_from",
                                  l->arith_from_b));
    json_object_set_new(o, "reduction_len",
                        l->reduction_len > 0 ? json_integer(l->reduction_len) : json_null());
    json_object_set_new(o, "reduction_from", json_string(l->reduction_from));
    json_object_set_new(o, "discontinuous", json_boolean(l->discontinuous));
    json_object_set_new(o, "ill_conditioned", json_boolean(l->ill_conditioned));
}

static json_t *
layer_json(const struct gd_diff *d, const struct gd_diff_layer *l)
{
    json_t *o = json_object();
    json_object_set_new(o, "name", json_string(l->name));
    json_object_set_new(o, "index_a", json_integer(l->index_a));
    json_object_set_new(o, "index_b", json_integer(l->index_b));
    json_object_set_new(o, "verdict", json_string(gd_verdict_name(l->verdict)));
    json_object_set_new(o, "first_divergent", json_boolean(l->is_first_divergent));
    json_object_set_new(o, "first_observed", json_boolean(l->is_first_observed));
    json_object_set_new(o, "amplifier", json_boolean(l->is_amplifier));
    if (l->note[0])
        json_object_set_new(o, "note", json_string(l->note));
    set_facts(o, l);
    if (l->verdict == GD_VERDICT_INCOMPARABLE)
        return o;
    const struct gd_metrics *m = &l->m;
    json_object_set_new(o, "inputs_known", json_boolean(l->inputs_known));
    json_t *ins = json_array();
    for (int k = 0; k < l->n_inputs; k++)
        json_array_append_new(ins, json_string(d->layers[l->inputs[k]].name));
    json_object_set_new(o, "inputs", ins);
    json_object_set_new(o, "dtype", json_string(gd_dtype_name(l->dtype)));
    if (l->rounded_side)
        json_object_set_new(o, "rounded_from_float64",
                            json_stringn(&(char){(char)l->rounded_side}, 1));
    json_object_set_new(o, "count", json_integer(m->count));
    json_object_set_new(o, "bitwise_equal", json_boolean(m->bitwise_equal));
    json_object_set_new(o, "values_differ", json_integer(l->n_differ));
    json_object_set_new(o, "differ_fraction", num(l->differ_fraction));
    json_object_set_new(o, "sparse", json_boolean(l->sparse));
    json_object_set_new(o, "max_abs", num(m->abs_max));
    json_object_set_new(o, "max_abs_index", json_integer(m->abs_max_index));
    json_object_set_new(o, "mean_abs", num(m->abs_mean));
    json_object_set_new(o, "rms", num(m->rms));
    json_object_set_new(o, "max_rel", num(m->rel_max));
    json_object_set_new(o, "max_ulp", json_integer((json_int_t)(m->ulp_max > INT64_MAX
                                                                    ? INT64_MAX
                                                                    : m->ulp_max)));
    json_object_set_new(o, "ulp_hist", ulp_hist(m));
    json_object_set_new(o, "ulp_scaled", num(l->ulp_scaled));
    json_object_set_new(o, "mismatches", json_integer(m->n_mismatch));
    json_object_set_new(o, "cosine", num(m->cosine));
    json_object_set_new(o, "sqnr_db", num(m->sqnr_db));
    json_object_set_new(o, "nan_disagree", json_integer(m->nan_disagree));
    json_object_set_new(o, "inf_disagree", json_integer(m->inf_disagree));
    json_object_set_new(o, "scale", num(l->scale));
    json_object_set_new(o, "err", num(l->err));
    json_object_set_new(o, "err_median", num(l->err_median));
    json_object_set_new(o, "mean_diff", num(l->mean_diff));
    json_object_set_new(o, "bound", num(l->bound));
    json_object_set_new(o, "bound_median", num(l->bound_median));
    json_object_set_new(o, "bound_declared", num(l->bound_declared));
    json_object_set_new(o, "inherited", num(l->inherited));
    json_object_set_new(o, "envelope", num(l->envelope));
    json_object_set_new(o, "envelope_median", num(l->envelope_median));
    json_object_set_new(o, "growth", num(l->growth));
    json_object_set_new(o, "ratio", num(l->ratio));
    json_object_set_new(o, "decided_by", str_or_null(l->decided_by));
    json_object_set_new(o, "ratio_max", num(l->ratio_max));
    json_object_set_new(o, "ratio_median", num(l->ratio_median));
    json_object_set_new(o, "noise_from", str_or_null(l->noise_from));
    json_object_set_new(o, "bits", num(l->bits));
    json_object_set_new(o, "arithmetic", str_or_null(l->arithmetic));
    json_object_set_new(o, "explained_by_arithmetic", json_boolean(l->explained_by_arith));
    if (l->reason[0])
        json_object_set_new(o, "reason", json_string(l->reason));
    if (l->discontinuous) {
        json_object_set_new(o, "flipped", json_integer(l->flipped));
        json_object_set_new(o, "near_boundary", json_integer(l->near_boundary));
        json_object_set_new(o, "boundary_distance", num(l->boundary_distance));
    }
    if (l->has_conditioning)
        json_object_set_new(o, "conditioning",
                            json_pack("{s:I, s:o, s:o}", "near_pole", (json_int_t)l->near_pole,
                                      "x_min", num(l->x_min), "cond", num(l->cond)));
    json_object_set_new(o, "mismatch_rows", json_integer(l->rows_mismatch));
    json_t *rows = json_array();
    for (int i = 0; i < l->n_rows; i++)
        json_array_append_new(rows, json_integer(l->rows[i]));
    json_object_set_new(o, "rows", rows);
    if (d->has_truth)
        json_object_set_new(o, "truth",
                            json_pack("{s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:I, "
                                      "s:I}",
                                      "err_a", num(l->truth_err_a), "err_b", num(l->truth_err_b),
                                      "bound_a", num(l->truth_bound_a), "bound_b",
                                      num(l->truth_bound_b), "median_a", num(l->truth_median_a),
                                      "median_b", num(l->truth_median_b), "bound_median_a",
                                      num(l->truth_bound_median_a), "bound_median_b",
                                      num(l->truth_bound_median_b), "right", side_char(l->right),
                                      "closer", side_char(l->closer), "rows_a",
                                      (json_int_t)l->truth_rows_a, "rows_b",
                                      (json_int_t)l->truth_rows_b));
    /* fp: a verdict from fingerprints says so, and which side's tensor is worth fetching */
    json_object_set_new(o, "sampled", json_boolean(l->sampled));
    if (l->sampled) {
        json_object_set_new(o, "samples", json_integer(l->n_sampled));
        json_object_set_new(o, "max_abs_from", json_string(l->bound_from ? l->bound_from : ""));
        json_t *f = json_array();
        if (l->fetch_a)
            json_array_append_new(f, json_string("a"));
        if (l->fetch_b)
            json_array_append_new(f, json_string("b"));
        json_object_set_new(o, "fetch", f);
    }
    if (l->has_own)
        json_object_set_new(o, "own",
                            json_pack("{s:o, s:o, s:o, s:s, s:o}", "err", num(l->own_err),
                                      "bound", num(l->own_bound), "bits", num(l->own_bits),
                                      "verdict", gd_verdict_name(l->own_verdict), "arithmetic",
                                      str_or_null(l->own_arithmetic)));
    return o;
}

static json_t *
layer_name(const struct gd_diff *d, int i)
{
    return i >= 0 ? json_string(d->layers[i].name) : json_null();
}

json_t *
gd_diff_to_json(const struct gd_diff *d, const struct gd_run_view *a, const struct gd_run_view *b,
                const struct gd_run_view *truth)
{
    json_t *layers = json_array(), *amps = json_array();
    json_t *only_a = json_array(), *only_b = json_array();
    for (int i = 0; i < d->n_layers; i++) {
        const struct gd_diff_layer *l = &d->layers[i];
        json_array_append_new(layers, layer_json(d, l));
        if (l->is_amplifier)
            json_array_append_new(amps, json_string(l->name));
        if (l->index_b < 0)
            json_array_append_new(only_a, json_string(l->name));
        if (l->index_a < 0)
            json_array_append_new(only_b, json_string(l->name));
    }
    static const char *const modes[] = {"runs", "models", "replay"};
    json_t *matched = json_pack("{s:i, s:i, s:i, s:o, s:o}", "layers", d->n_matched, "of_a",
                                d->n_layers_a, "of_b", d->n_layers_b, "only_a", only_a,
                                "only_b", only_b);
    json_t *replay = d->has_replay ? json_pack("{s:s, s:s}", "id", d->replay_id, "of",
                                               d->replay_of)
                                   : json_null();
    json_t *j = json_pack("{s:o, s:o, s:o, s:o, s:s, s:f, s:f, s:o, s:o, s:o, s:b, s:o, s:o, "
                          "s:o, s:o, s:s, s:O, s:o}",
                          "a", run_ref(a), "b", run_ref(b), "truth", run_ref(truth), "replay",
                          replay, "mode", modes[d->mode], "atol", d->atol, "rtol", d->rtol,
                          "matched", matched, "first_divergent", layer_name(d, d->first_divergent),
                          "first_observed", layer_name(d, d->first_observed), "start_known",
                          d->start_known, "cause", layer_name(d, d->cause), "inputs_differ",
                          d->inputs_differ < 0 ? json_null() : json_boolean(d->inputs_differ),
                          "truth_outcome", d->has_truth ? side_char(d->truth_outcome)
                                                        : json_null(),
                          "amplifiers", amps, "explanation", d->explanation, "env_diff",
                          d->env_diff, "layers", layers);
    if (j != NULL) {
        json_object_set_new(j, "sampled_layers", json_integer(d->n_sampled));
        json_object_set_new(j, "tolerance_given", json_boolean(d->tolerance_given));
        json_object_set_new(j, "truth_float64",
                            d->has_truth ? json_boolean(d->truth_float64) : json_null());
    }
    return j;
}
