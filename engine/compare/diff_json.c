/* diff_json.c: a diff as JSON: the fields `gpudiff-agent diff --json` prints and the daemon
 * serves (docs/COMPARISON.md lists them). Non-finite numbers become null. */
#include <math.h>

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
layer_json(const struct gd_diff *d, const struct gd_diff_layer *l)
{
    json_t *o = json_object();
    json_object_set_new(o, "name", json_string(l->name));
    json_object_set_new(o, "op", json_string(l->op));
    json_object_set_new(o, "index_a", json_integer(l->index_a));
    json_object_set_new(o, "index_b", json_integer(l->index_b));
    json_object_set_new(o, "verdict", json_string(gd_verdict_name(l->verdict)));
    json_object_set_new(o, "first_divergent", json_boolean(l->is_first_divergent));
    json_object_set_new(o, "amplifier", json_boolean(l->is_amplifier));
    if (l->note[0])
        json_object_set_new(o, "note", json_string(l->note));
    if (l->algo_a[0] || l->algo_b[0])
        json_object_set_new(o, "algo", json_pack("{s:s, s:s}", "a", l->algo_a, "b", l->algo_b));
    if (l->verdict == GD_VERDICT_INCOMPARABLE)
        return o;
    const struct gd_metrics *m = &l->m;
    json_object_set_new(o, "dtype", json_string(gd_dtype_name(l->dtype)));
    if (l->rounded_side)
        json_object_set_new(o, "rounded_from_float64", json_stringn(&(char){(char)l->rounded_side}, 1));
    json_object_set_new(o, "reduction_len", json_integer(l->reduction_len));
    json_object_set_new(o, "discontinuous", json_boolean(l->discontinuous));
    json_object_set_new(o, "count", json_integer(m->count));
    json_object_set_new(o, "bitwise_equal", json_boolean(m->bitwise_equal));
    json_object_set_new(o, "max_abs", num(m->abs_max));
    json_object_set_new(o, "max_abs_index", json_integer(m->abs_max_index));
    json_object_set_new(o, "mean_abs", num(m->abs_mean));
    json_object_set_new(o, "rms", num(m->rms));
    json_object_set_new(o, "max_rel", num(m->rel_max));
    json_object_set_new(o, "max_ulp", json_integer((json_int_t)(m->ulp_max > INT64_MAX
                                                                    ? INT64_MAX
                                                                    : m->ulp_max)));
    json_object_set_new(o, "ulp_hist", ulp_hist(m));
    json_object_set_new(o, "mismatches", json_integer(m->n_mismatch));
    json_object_set_new(o, "cosine", num(m->cosine));
    json_object_set_new(o, "sqnr_db", num(m->sqnr_db));
    json_object_set_new(o, "nan_disagree", json_integer(m->nan_disagree));
    json_object_set_new(o, "inf_disagree", json_integer(m->inf_disagree));
    json_object_set_new(o, "scale", num(l->scale));
    json_object_set_new(o, "err", num(l->err));
    json_object_set_new(o, "err_median", num(l->err_median));
    json_object_set_new(o, "bound", num(l->bound));
    json_object_set_new(o, "envelope", num(l->envelope));
    json_object_set_new(o, "growth", num(l->growth));
    json_object_set_new(o, "bits", num(l->bits));
    json_object_set_new(o, "arithmetic", json_string(l->arithmetic ? l->arithmetic : ""));
    if (l->discontinuous) {
        json_object_set_new(o, "flipped", json_integer(l->flipped));
        json_object_set_new(o, "near_boundary", json_integer(l->near_boundary));
        json_object_set_new(o, "boundary_distance", num(l->boundary_distance));
    }
    json_object_set_new(o, "mismatch_rows", json_integer(l->rows_mismatch));
    json_t *rows = json_array();
    for (int i = 0; i < l->n_rows; i++)
        json_array_append_new(rows, json_integer(l->rows[i]));
    json_object_set_new(o, "rows", rows);
    if (d->has_truth)
        json_object_set_new(o, "truth",
                            json_pack("{s:o, s:o, s:s}", "err_a", num(l->truth_err_a), "err_b",
                                      num(l->truth_err_b), "closer",
                                      l->closer == 'a'   ? "a"
                                      : l->closer == 'b' ? "b"
                                      : l->closer == '=' ? "even"
                                                         : "unknown"));
    return o;
}

json_t *
gd_diff_to_json(const struct gd_diff *d, const struct gd_run_view *a, const struct gd_run_view *b,
                const struct gd_run_view *truth)
{
    json_t *layers = json_array(), *amps = json_array();
    for (int i = 0; i < d->n_layers; i++) {
        json_array_append_new(layers, layer_json(d, &d->layers[i]));
        if (d->layers[i].is_amplifier)
            json_array_append_new(amps, json_string(d->layers[i].name));
    }
    const struct gd_diff_layer *f = d->first_divergent >= 0 ? &d->layers[d->first_divergent]
                                                            : NULL;
    return json_pack("{s:o, s:o, s:o, s:f, s:f, s:o, s:o, s:s, s:O, s:o}", "a", run_ref(a), "b",
                     run_ref(b), "truth", run_ref(truth), "atol", d->atol, "rtol", d->rtol,
                     "first_divergent", f ? json_string(f->name) : json_null(), "amplifiers",
                     amps, "explanation", d->explanation, "env_diff", d->env_diff, "layers",
                     layers);
}
