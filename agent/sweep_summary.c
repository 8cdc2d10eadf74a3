/*
 * sweep_summary.c: the comparisons of `gpudiff-agent sweep` summed up for its document, and
 * the answers drawn from the whole document: which setting is fastest, which are
 * deterministic and batch-invariant and the cheapest of them, which change the results, and
 * what each single knob does. Every statement is made from measured fields only: a value
 * that was not measured stays null and is reported as such.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpudiff/knobs.h"
#include "sweep.h"

const char *
agt_output_layer(const struct gd_graph *g)
{
    if (g->n_outputs > 0)
        return g->values[g->outputs[0]].name;
    return g->n_values > 0 ? g->values[g->n_values - 1].name : "";
}

static json_t *
num(double v)
{
    return isfinite(v) ? json_real(v) : json_null();
}

static const struct gd_diff_layer *
find(const struct gd_diff *d, const char *name)
{
    for (int i = 0; i < d->n_layers; i++)
        if (strcmp(d->layers[i].name, name) == 0)
            return &d->layers[i];
    return d->n_layers > 0 ? &d->layers[d->n_layers - 1] : NULL;
}

/* A layer's difference: what the table shows of the model's output. */
static json_t *
layer_diff(const struct gd_diff_layer *l)
{
    if (l == NULL)
        return json_null();
    json_t *j = json_object();
    json_object_set_new(j, "layer", json_string(l->name));
    json_object_set_new(j, "op", json_string(l->op));
    json_object_set_new(j, "verdict", json_string(gd_verdict_name(l->verdict)));
    if (l->verdict == GD_VERDICT_INCOMPARABLE) {
        json_object_set_new(j, "note", json_string(l->note));
        return j;
    }
    json_object_set_new(j, "identical", json_boolean(l->m.bitwise_equal));
    json_object_set_new(j, "max_abs", num(l->m.abs_max));
    json_object_set_new(
        j, "max_ulp",
        json_integer((json_int_t)(l->m.ulp_max > INT64_MAX ? INT64_MAX : l->m.ulp_max)));
    json_object_set_new(j, "max_rel", l->m.n_rel ? num(l->m.rel_max) : json_null());
    json_object_set_new(j, "err", num(l->err));
    json_object_set_new(j, "bits", num(l->bits));
    json_object_set_new(j, "mismatches", json_integer(l->m.n_mismatch));
    json_object_set_new(j, "rows_differing", json_integer(l->rows_mismatch));
    return j;
}

json_t *
agt_diff_summary(const struct gd_diff *d, const char *output_layer)
{
    json_t *j = json_object();
    int n_ident = 0, n_noise = 0, n_bad = 0, n_incomp = 0;
    for (int i = 0; i < d->n_layers; i++) {
        switch (d->layers[i].verdict) {
        case GD_VERDICT_IDENTICAL:
            n_ident++;
            break;
        case GD_VERDICT_NOISE:
            n_noise++;
            break;
        case GD_VERDICT_INCOMPARABLE:
            n_incomp++;
            break;
        default:
            n_bad++;
        }
    }
    json_object_set_new(j, "compared", json_true());
    json_object_set_new(j, "identical", json_boolean(n_ident == d->n_layers));
    json_object_set_new(j, "layers", json_integer(d->n_layers));
    json_object_set_new(j, "layers_identical", json_integer(n_ident));
    json_object_set_new(j, "layers_noise", json_integer(n_noise));
    json_object_set_new(j, "layers_divergent", json_integer(n_bad));
    json_object_set_new(j, "layers_incomparable", json_integer(n_incomp));
    json_object_set_new(j, "output", layer_diff(find(d, output_layer)));
    if (d->first_divergent >= 0) {
        const struct gd_diff_layer *f = &d->layers[d->first_divergent];
        json_t *fj = json_object();
        json_object_set_new(fj, "layer", json_string(f->name));
        json_object_set_new(fj, "op", json_string(f->op));
        json_object_set_new(fj, "verdict", json_string(gd_verdict_name(f->verdict)));
        json_object_set_new(fj, "bits", num(f->bits));
        json_object_set_new(fj, "arithmetic", json_string(f->arithmetic ? f->arithmetic : ""));
        json_object_set_new(fj, "err", num(f->err));
        json_object_set_new(fj, "bound", num(f->bound));
        json_object_set_new(fj, "max_abs", num(f->m.abs_max));
        json_object_set_new(fj, "algo", json_string(f->algo_a ? f->algo_a : ""));
        json_object_set_new(j, "first_divergent", fj);
    } else {
        json_object_set_new(j, "first_divergent", json_null());
    }
    json_t *amps = json_array();
    for (int i = 0; i < d->n_layers; i++) {
        const struct gd_diff_layer *l = &d->layers[i];
        if (!l->is_amplifier)
            continue;
        json_t *a =
            json_pack("{s:s, s:s, s:o}", "layer", l->name, "op", l->op, "growth", num(l->growth));
        if (l->discontinuous) {
            json_object_set_new(a, "flipped", json_integer(l->flipped));
            json_object_set_new(a, "near_boundary", json_integer(l->near_boundary));
        }
        json_array_append_new(amps, a);
    }
    json_object_set_new(j, "amplifiers", amps);
    json_object_set_new(j, "explanation", json_string(d->explanation));
    return j;
}

/* What the table shows of a layer measured without the run-level comparison. */
static json_t *
metrics_json(const char *name, const char *op, const struct gd_metrics *m)
{
    json_t *j = json_pack("{s:s, s:s, s:b, s:o, s:I, s:o, s:I}", "layer", name, "op", op,
                          "identical", m->bitwise_equal, "max_abs", num(m->abs_max), "max_ulp",
                          (json_int_t)(m->ulp_max > INT64_MAX ? INT64_MAX : m->ulp_max), "max_rel",
                          m->n_rel ? num(m->rel_max) : json_null(), "mismatches",
                          (json_int_t)m->n_mismatch);
    return j;
}

int
agt_batch_compare(const struct agt_memrun *a, const struct agt_memrun *b, int64_t batch,
                  const char *output_layer, double atol, double rtol, json_t **out,
                  struct gd_err *err)
{
    json_t *differ = json_array(), *changes = json_array(), *first = json_null();
    json_t *output = json_null();
    int rc = 0;
    for (int i = 0; i < a->n_layers && rc == 0; i++) {
        const struct gd_bundle_layer *la = &a->layers[i], *lb = &b->layers[i];
        const struct gd_tensor *ta = a->tensors[i], *tb = b->tensors[i];
        if (ta == NULL || tb == NULL || ta->dtype != tb->dtype || ta->ndim != tb->ndim ||
            gd_tensor_nbytes(ta) != gd_tensor_nbytes(tb)) {
            rc = gd_err_set(err, GD_EINVAL, "layer %s: not captured alike at both batch sizes",
                            la->name);
            break;
        }
        /* bitwise first: most layers of most settings are equal, and memcmp is the cheapest
         * answer; the metrics only where they differ, and for the output */
        int same = memcmp(ta->data, tb->data, gd_tensor_nbytes(ta)) == 0;
        int is_output = strcmp(la->name, output_layer) == 0;
        struct gd_metrics m;
        if ((!same || is_output) && (rc = gd_metrics_compute(ta, tb, atol, rtol, &m, err)) != 0)
            break;
        if (!same) {
            json_array_append_new(differ, json_string(la->name));
            if (json_is_null(first)) {
                json_decref(first);
                first = metrics_json(la->name, la->op, &m);
                json_object_set_new(first, "algo", json_string(la->algo));
                json_object_set_new(first, "reference_algo", json_string(lb->algo));
            }
        }
        if (is_output && json_is_null(output)) {
            json_decref(output);
            output = metrics_json(la->name, la->op, &m);
        }
        if (strcmp(la->algo, lb->algo) != 0)
            json_array_append_new(changes, json_pack("{s:s, s:s, s:s, s:s, s:b}", "layer", la->name,
                                                     "op", la->op, "reference", lb->algo, "this",
                                                     la->algo, "identical", same));
    }
    if (rc != 0) {
        json_decref(differ);
        json_decref(changes);
        json_decref(first);
        json_decref(output);
        return rc;
    }
    *out = json_pack("{s:I, s:s, s:b, s:i, s:o, s:o, s:o, s:o}", "batch", (json_int_t)batch,
                     "status", "ok", "identical", json_array_size(differ) == 0, "layers",
                     a->n_layers, "differing_layers", differ, "first_differing", first, "output",
                     output, "algo_changes", changes);
    return *out != NULL ? 0 : gd_err_set(err, GD_ENOMEM, "out of memory");
}

/* ---- answers ---- */

static double
get_num(json_t *o, const char *path)
{
    /* "a.b.c" */
    char key[64];
    const char *p = path;
    json_t *v = o;
    while (v != NULL && *p) {
        size_t n = strcspn(p, ".");
        snprintf(key, sizeof key, "%.*s", (int)n, p);
        v = json_object_get(v, key);
        p += n;
        if (*p == '.')
            p++;
    }
    return json_is_number(v) ? json_number_value(v) : NAN;
}

static json_t *
get(json_t *o, const char *path)
{
    char key[64];
    const char *p = path;
    json_t *v = o;
    while (v != NULL && *p) {
        size_t n = strcspn(p, ".");
        snprintf(key, sizeof key, "%.*s", (int)n, p);
        v = json_object_get(v, key);
        p += n;
        if (*p == '.')
            p++;
    }
    return v;
}

static int
is_ok(json_t *s)
{
    const char *st = json_string_value(json_object_get(s, "status"));
    return st != NULL && strcmp(st, "ok") == 0;
}

/* true, false or null (not measured) from the run-to-run record. */
static json_t *
deterministic(json_t *s)
{
    json_t *rr = json_object_get(s, "run_to_run");
    json_t *layers = json_object_get(rr, "layers_identical");
    json_t *outputs = json_object_get(rr, "outputs_identical");
    if (json_is_false(layers) || json_is_false(outputs))
        return json_false();
    if (json_is_true(layers))
        return json_true();
    return json_null();
}

static json_t *
batch_invariant(json_t *s)
{
    json_t *sizes = get(s, "batch.sizes");
    size_t i;
    json_t *b;
    int any = 0, unknown = 0;
    json_array_foreach(sizes, i, b) {
        json_t *ident = json_object_get(b, "identical");
        if (json_is_false(ident))
            return json_false();
        if (json_is_true(ident))
            any = 1;
        else
            unknown = 1;
    }
    return any && !unknown ? json_true() : json_null();
}

int
agt_knob_at_default(const char *key, json_t *v)
{
    enum gd_knob k;
    if (gd_knob_find(key, &k) != 0)
        return 0;
    json_t *one = json_pack("{s:O?}", key, v);
    struct gd_knobs knobs;
    int ok = gd_knobs_from_json(one, &knobs, NULL) == 0;
    json_decref(one);
    if (!ok)
        return 0;
    char text[1100];
    gd_knob_format(&knobs, k, text, sizeof text);
    return strcmp(text, gd_knob_info(k)->default_value) == 0;
}

int
agt_knob_sets_setting(const char *key)
{
    enum gd_knob k;
    if (gd_knob_find(key, &k) != 0)
        return 0;
    enum gd_knob_category c = gd_knob_info(k)->category;
    return c == GD_KNOB_CAT_ARITHMETIC || c == GD_KNOB_CAT_ALGORITHM;
}

static void
value_text(json_t *v, char *out, size_t size)
{
    if (json_is_string(v))
        snprintf(out, size, "%s", json_string_value(v));
    else if (json_is_true(v))
        snprintf(out, size, "on");
    else if (json_is_false(v))
        snprintf(out, size, "off");
    else if (json_is_integer(v))
        snprintf(out, size, "%lld", (long long)json_integer_value(v));
    else
        snprintf(out, size, "none");
}

/*
 * For every two settings that differ in one knob, one of them at that knob's default: what
 * the change does to the time and to the output's error against float64.
 */
/* ---- timing noise ---- */

int
agt_timing_of(json_t *s, struct agt_timing *t)
{
    t->med = get_num(s, "time.forward_ms");
    t->lo = get_num(s, "time.forward_min_ms");
    t->hi = get_num(s, "time.forward_max_ms");
    if (!isfinite(t->med))
        return -1;
    /* a document without a range (older agents): the median alone, noise unknown */
    if (!isfinite(t->lo) || !isfinite(t->hi) || t->lo > t->med || t->hi < t->med)
        t->lo = t->hi = t->med;
    return 0;
}

int
agt_within_noise(const struct agt_timing *a, const struct agt_timing *b)
{
    return fmax(a->lo, b->lo) <= fmin(a->hi, b->hi);
}

int
agt_setting_what_if(json_t *s)
{
    const char *key;
    json_t *v;
    json_object_foreach(json_object_get(s, "knobs"), key, v)
    {
        enum gd_knob k;
        if (gd_knob_find(key, &k) == 0 && gd_knob_info(k)->sweep == GD_KNOB_SWEEP_WHATIF &&
            !agt_knob_at_default(key, v))
            return 1;
    }
    return 0;
}

/* The output's max |a-b| against float64, +inf when not compared (a worse error than any). */
static double
error_of(json_t *s)
{
    if (!json_is_true(get(s, "vs_float64.compared")))
        return INFINITY;
    if (json_is_true(get(s, "vs_float64.output.identical")))
        return 0;
    double e = get_num(s, "vs_float64.output.max_abs");
    return isfinite(e) ? e : INFINITY;
}

/* The requirement a pick meets. */
enum want { WANT_ANY, WANT_DET, WANT_INV, WANT_BOTH };

static int
meets(json_t *s, enum want w)
{
    int det = json_is_true(json_object_get(s, "deterministic"));
    int inv = json_is_true(json_object_get(s, "batch_invariant"));
    switch (w) {
    case WANT_ANY:
        return 1;
    case WANT_DET:
        return det;
    case WANT_INV:
        return inv;
    case WANT_BOTH:
        return det && inv;
    }
    return 0;
}

/*
 * The setting a deployment can use (no what-if knob) that meets w and is fastest; the
 * settings within timing noise of it (min-max ranges that overlap its own) are as fast as
 * far as the measurements tell, so among them the one closest to float64 is taken (the first
 * in the grid's order of equals): a choice that does not follow the noise. NULL: none.
 */
static json_t *
pick(json_t *settings, enum want w, const struct agt_timing *fastest)
{
    size_t i;
    json_t *s, *best = NULL;
    struct agt_timing tb = {0}, t;
    json_array_foreach(settings, i, s)
    {
        if (!is_ok(s) || agt_setting_what_if(s) || !meets(s, w) || agt_timing_of(s, &t) != 0)
            continue;
        if (best == NULL || t.med < tb.med) {
            best = s;
            tb = t;
        }
    }
    if (best == NULL)
        return json_null();
    json_t *chosen = NULL, *ties = json_array();
    double chosen_err = INFINITY;
    struct agt_timing tc = tb;
    json_array_foreach(settings, i, s)
    {
        if (!is_ok(s) || agt_setting_what_if(s) || !meets(s, w) || agt_timing_of(s, &t) != 0 ||
            !agt_within_noise(&t, &tb))
            continue;
        json_array_append(ties, json_object_get(s, "name"));
        double e = error_of(s);
        if (chosen == NULL || e < chosen_err) {
            chosen = s;
            chosen_err = e;
            tc = t;
        }
    }
    /* the others of the group, without the one chosen */
    json_t *others = json_array();
    json_array_foreach(ties, i, s)
    {
        if (!json_equal(s, json_object_get(chosen, "name")))
            json_array_append(others, s);
    }
    json_decref(ties);
    json_t *p = json_object();
    json_object_set(p, "setting", json_object_get(chosen, "name"));
    json_object_set_new(p, "forward_ms", num(tc.med));
    json_object_set_new(p, "forward_min_ms", num(tc.lo));
    json_object_set_new(p, "forward_max_ms", num(tc.hi));
    json_object_set_new(p, "x_fastest", num(tc.med / fastest->med));
    json_object_set_new(p, "within_noise_of_fastest", json_boolean(agt_within_noise(&tc, fastest)));
    json_object_set_new(p, "vs_float64_max_abs", num(chosen_err));
    json_object_set(p, "vs_float64_max_ulp",
                    get(chosen, "vs_float64.output.max_ulp")
                        ? get(chosen, "vs_float64.output.max_ulp")
                        : json_null());
    json_object_set_new(p, "chosen_by",
                        json_string(json_array_size(others) > 0
                                        ? "error against float64, among settings within "
                                          "timing noise of each other"
                                        : "time"));
    json_object_set_new(p, "within_noise", others);
    return p;
}

static json_t *
knob_effects(json_t *settings)
{
    json_t *out = json_array();
    size_t i, j;
    json_t *a, *b;
    json_array_foreach(settings, i, a) {
        if (!is_ok(a))
            continue;
        json_array_foreach(settings, j, b) {
            if (i == j || !is_ok(b))
                continue;
            json_t *ka = json_object_get(a, "knobs"), *kb = json_object_get(b, "knobs");
            const char *key, *differ = NULL;
            json_t *va;
            int n_diff = 0;
            json_object_foreach(ka, key, va) {
                if (!agt_knob_sets_setting(key))
                    continue;
                json_t *vb = json_object_get(kb, key);
                if (!json_equal(va, vb)) {
                    n_diff++;
                    differ = key;
                }
            }
            if (json_object_size(kb) != json_object_size(ka)) {
                /* a key on one side only (conv_pins): not a one-knob pair */
                n_diff += 2;
            }
            if (n_diff != 1 || !agt_knob_at_default(differ, json_object_get(ka, differ)))
                continue;
            char from[64], to[64];
            value_text(json_object_get(ka, differ), from, sizeof from);
            value_text(json_object_get(kb, differ), to, sizeof to);
            double ta = get_num(a, "time.forward_ms"), tb = get_num(b, "time.forward_ms");
            struct agt_timing na, nb;
            int noise = agt_timing_of(a, &na) == 0 && agt_timing_of(b, &nb) == 0 &&
                        agt_within_noise(&na, &nb);
            json_t *e = json_object();
            json_object_set_new(e, "knob", json_string(differ));
            json_object_set_new(e, "from", json_string(from));
            json_object_set_new(e, "to", json_string(to));
            json_object_set(e, "base", json_object_get(a, "name"));
            json_object_set(e, "changed", json_object_get(b, "name"));
            json_object_set_new(e, "time_ratio", num(tb / ta));
            json_object_set_new(e, "within_noise", json_boolean(noise));
            json_object_set_new(e, "what_if", json_boolean(agt_setting_what_if(b)));
            json_object_set_new(e, "from_ms", num(ta));
            json_object_set_new(e, "to_ms", num(tb));
            json_object_set_new(e, "from_max_abs", num(get_num(a, "vs_float64.output.max_abs")));
            json_object_set_new(e, "to_max_abs", num(get_num(b, "vs_float64.output.max_abs")));
            json_t *fd = get(b, "vs_float64.first_divergent.layer");
            json_object_set_new(e, "to_first_divergent",
                                json_is_string(fd) ? json_incref(fd) : json_null());
            json_array_append_new(out, e);
        }
    }
    return out;
}

void
agt_sweep_answers(json_t *doc)
{
    json_t *settings = json_object_get(doc, "settings");
    size_t i;
    json_t *s;
    json_t *ans = json_object();
    json_t *changes = json_array(), *breaking = json_object(), *what_ifs = json_array();
    int n_ok = 0, n_failed = 0;
    /* the verdicts first: the picks read them */
    json_array_foreach(settings, i, s) {
        json_object_set_new(s, "what_if", json_boolean(agt_setting_what_if(s)));
        if (!is_ok(s)) {
            if (json_object_get(s, "status") != NULL &&
                strcmp(json_string_value(json_object_get(s, "status")), "failed") == 0)
                n_failed++;
            json_object_set_new(s, "deterministic", json_null());
            json_object_set_new(s, "batch_invariant", json_null());
            continue;
        }
        n_ok++;
        json_object_set_new(s, "deterministic", deterministic(s));
        json_object_set_new(s, "batch_invariant", batch_invariant(s));
        if (json_is_false(json_object_get(s, "batch_invariant"))) {
            /* which layer first breaks invariance, over the batch sizes of this setting */
            size_t k;
            json_t *b;
            json_array_foreach(get(s, "batch.sizes"), k, b) {
                json_t *f = get(b, "first_differing.layer");
                if (!json_is_string(f))
                    continue;
                json_t *c = json_object_get(breaking, json_string_value(f));
                json_object_set_new(breaking, json_string_value(f),
                                    json_integer(c ? json_integer_value(c) + 1 : 1));
            }
        }
        if (json_is_false(get(s, "vs_strict.identical")))
            json_array_append(changes, json_object_get(s, "name"));
        if (json_is_true(json_object_get(s, "what_if")))
            json_array_append(what_ifs, json_object_get(s, "name"));
    }
    /* the fastest setting a deployment can use: every time is against it */
    json_t *fast = pick(settings, WANT_ANY, &(struct agt_timing){1, 1, 1});
    struct agt_timing tf = {get_num(fast, "forward_ms"), get_num(fast, "forward_min_ms"),
                            get_num(fast, "forward_max_ms")};
    if (json_is_object(fast)) {
        json_object_set_new(fast, "x_fastest", json_real(1.0));
        json_object_set_new(fast, "within_noise_of_fastest", json_true());
    }
    json_array_foreach(settings, i, s)
    {
        struct agt_timing t;
        if (!is_ok(s) || agt_timing_of(s, &t) != 0)
            continue;
        json_t *time = json_object_get(s, "time");
        json_object_set_new(time, "x_fastest",
                            json_is_object(fast) ? num(t.med / tf.med) : json_null());
        json_object_set_new(time, "within_noise_of_fastest",
                            json_boolean(json_is_object(fast) && agt_within_noise(&t, &tf)));
    }
    json_object_set_new(ans, "settings_ok", json_integer(n_ok));
    json_object_set_new(ans, "settings_failed", json_integer(n_failed));
    json_object_set_new(ans, "fastest", fast);
    json_object_set_new(ans, "cheapest_deterministic", pick(settings, WANT_DET, &tf));
    json_object_set_new(ans, "cheapest_batch_invariant", pick(settings, WANT_INV, &tf));
    json_object_set_new(ans, "cheapest_deterministic_and_batch_invariant",
                        pick(settings, WANT_BOTH, &tf));
    json_object_set_new(ans, "noise_rule",
                        json_string("two settings are within timing noise of each other when "
                                    "the min-max ranges of their timed forwards overlap"));
    json_object_set_new(ans, "what_ifs", what_ifs);
    json_object_set_new(ans, "batch_breaking_layers", breaking);
    json_object_set_new(ans, "differ_from_strict", changes);
    json_object_set_new(ans, "knob_effects", knob_effects(settings));
    json_object_set_new(doc, "answers", ans);
}
