/*
 * diff_view.c: a diff's view (diff_view.h) from its JSON: the summary document and a
 * row per layer. The rules that pick the layers the summary names in full are the
 * dashboard's (web/js/diff_facts.js): where the difference starts or is first observed, the
 * cause and the layers with an error of their own (replay), the amplifiers, the last
 * compared layer, and who is right against the truth over the layers where the runs differ
 * beyond noise (all compared layers when they do not), told at the first of those where a
 * side is not right.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "diff_view.h"

/* Digits of a row's numbers: a float32's round trip, more than any table shows. */
#define ROW_DIGITS 9
/* The overview's numbers only set a bar's height. */
#define OVERVIEW_DIGITS 3

char
srv_diff_view_code(const char *verdict)
{
    static const char *const names[] = {"identical", "noise",        "divergent", "amplified",
                                        "nonfinite", "incomparable", NULL};
    static const char codes[] = "indafx";
    for (int i = 0; verdict != NULL && names[i] != NULL; i++)
        if (strcmp(verdict, names[i]) == 0)
            return codes[i];
    return 'u';
}

static const char *
str_of(json_t *o, const char *key)
{
    const char *s = json_string_value(json_object_get(o, key));
    return s != NULL ? s : "";
}

static int
quiet(const char *verdict)
{
    return strcmp(verdict, "identical") == 0 || strcmp(verdict, "noise") == 0;
}

static int
beyond(const char *verdict)
{
    return strcmp(verdict, "divergent") == 0 || strcmp(verdict, "amplified") == 0 ||
           strcmp(verdict, "nonfinite") == 0;
}

static double
num_of(json_t *o, const char *key)
{
    json_t *v = json_object_get(o, key);
    return json_is_number(v) ? json_number_value(v) : NAN;
}

/* A list (borrowed; NULL or not a list: empty) capped at SRV_DIFF_VIEW_LIST_MAX, its length
 * beside it as "n_" + key. */
static void
set_capped(json_t *o, const char *key, json_t *list)
{
    if (!json_is_array(list)) {
        json_object_set_new(o, key, json_array());
        list = NULL;
    }
    char n_key[64];
    snprintf(n_key, sizeof n_key, "n_%s", key);
    size_t n = json_array_size(list);
    json_object_set_new(o, n_key, json_integer((json_int_t)n));
    if (list == NULL)
        return;
    if (n <= SRV_DIFF_VIEW_LIST_MAX) {
        json_object_set(o, key, list);
        return;
    }
    json_t *cut = json_array();
    for (size_t i = 0; i < SRV_DIFF_VIEW_LIST_MAX; i++)
        json_array_append(cut, json_array_get(list, i));
    json_object_set_new(o, key, cut);
}

/* Significand bits of a float dtype; 0 for others. */
static int
precision_of(const char *dtype)
{
    return strcmp(dtype, "float32") == 0    ? 24
           : strcmp(dtype, "float64") == 0  ? 53
           : strcmp(dtype, "float16") == 0  ? 11
           : strcmp(dtype, "bfloat16") == 0 ? 8
                                            : 0;
}

/*
 * The largest difference in ULPs at the layer's scale: the engine's ulp_scaled when the diff
 * has it, else max |a-b| over the spacing of floats of the layer's dtype at its scale
 * (max(|a|, |b|)). A raw ULP count across a sign change is the distance through every float
 * between them (2^31 for -x against +x in float32): it says nothing of the error's size.
 */
static json_t *
ulps_at_scale(json_t *l)
{
    json_t *u = json_object_get(l, "ulp_scaled");
    if (json_is_number(u))
        return json_real(json_number_value(u));
    double max_abs = num_of(l, "max_abs"), scale = num_of(l, "scale");
    int p = precision_of(str_of(l, "dtype"));
    if (!isfinite(max_abs) || !isfinite(scale) || scale <= 0 || p == 0)
        return json_null();
    int e;
    frexp(scale, &e); /* scale = m 2^e, m in [0.5, 1): its spacing is 2^(e - p) */
    return json_real(ldexp(max_abs, p - e));
}

/* The layer's record in the summary's "layers" map (once), with its position. */
static void
name_layer(json_t *named, json_t *layers, int i)
{
    if (i < 0)
        return;
    json_t *l = json_array_get(layers, (size_t)i);
    const char *name = json_string_value(json_object_get(l, "name"));
    if (name == NULL || json_object_get(named, name) != NULL)
        return;
    json_t *copy = json_copy(l);
    json_object_set_new(copy, "i", json_integer(i));
    json_object_set_new(named, name, copy);
}

static int
index_of(json_t *layers, const char *name)
{
    size_t i;
    json_t *l;
    if (name == NULL)
        return -1;
    json_array_foreach(layers, i, l)
    {
        if (strcmp(str_of(l, "name"), name) == 0)
            return (int)i;
    }
    return -1;
}

static int
right_of(json_t *l, char side)
{
    const char *r = str_of(json_object_get(l, "truth"), "right");
    return strcmp(r, "both") == 0 || (r[0] == side && r[1] == '\0');
}

/* Who is right over which layers (diff_facts.js truthSummary); NULL without a truth. */
static json_t *
truth_summary(json_t *diff, json_t *layers, json_t *named)
{
    if (!json_is_object(json_object_get(diff, "truth")))
        return NULL;
    size_t i, n = json_array_size(layers);
    json_t *l;
    int diverged = 0;
    json_array_foreach(layers, i, l)
    {
        const char *v = str_of(l, "verdict");
        if (str_of(json_object_get(l, "truth"), "right")[0] != '\0' && !quiet(v) &&
            strcmp(v, "incomparable") != 0)
            diverged = 1;
    }
    int64_t scope = 0, n_a = 0, n_b = 0;
    int at = -1, last = -1;
    for (i = 0; i < n; i++) {
        l = json_array_get(layers, i);
        if (str_of(json_object_get(l, "truth"), "right")[0] == '\0')
            continue;
        if (diverged && quiet(str_of(l, "verdict")))
            continue;
        scope++;
        int ra = right_of(l, 'a'), rb = right_of(l, 'b');
        n_a += ra;
        n_b += rb;
        if (at < 0 && !(ra && rb))
            at = (int)i;
        last = (int)i;
    }
    if (at < 0)
        at = last;
    name_layer(named, layers, at);
    json_t *at_layer = json_array_get(layers, at >= 0 ? (size_t)at : n);
    return json_pack("{s:I, s:b, s:I, s:I, s:o}", "scope", (json_int_t)scope, "diverged", diverged,
                     "n_a", (json_int_t)n_a, "n_b", (json_int_t)n_b, "at",
                     at_layer != NULL ? json_incref(json_object_get(at_layer, "name"))
                                      : json_null());
}

/* The overview: a verdict letter per layer and three figures per layer to draw bars from. */
static char *
overview_text(json_t *layers)
{
    size_t n = json_array_size(layers);
    char *codes = malloc(n + 1);
    json_t *err = json_array(), *max_abs = json_array(), *ulp = json_array();
    char *out = NULL;
    if (codes == NULL || err == NULL || max_abs == NULL || ulp == NULL)
        goto done;
    for (size_t i = 0; i < n; i++) {
        json_t *l = json_array_get(layers, i);
        codes[i] = srv_diff_view_code(str_of(l, "verdict"));
        json_t *e = json_object_get(l, "err"), *m = json_object_get(l, "max_abs");
        json_t *u = json_object_get(l, "ulps_at_scale");
        json_array_append(err, json_is_number(e) ? e : json_null());
        json_array_append(max_abs, json_is_number(m) ? m : json_null());
        json_array_append(ulp, json_is_number(u) ? u : json_null());
    }
    codes[n] = '\0';
    json_t *o = json_pack("{s:s, s:o, s:o, s:o}", "verdicts", codes, "err", err, "max_abs", max_abs,
                          "ulps_at_scale", ulp);
    err = max_abs = ulp = NULL;
    if (o != NULL)
        out = json_dumps(o, JSON_COMPACT | JSON_REAL_PRECISION(OVERVIEW_DIGITS));
    json_decref(o);
done:
    free(codes);
    json_decref(err);
    json_decref(max_abs);
    json_decref(ulp);
    return out;
}

/* Distinct ops with their counts, by name. */
static json_t *
op_counts(json_t *layers)
{
    json_t *counts = json_object();
    size_t i;
    json_t *l;
    json_array_foreach(layers, i, l)
    {
        const char *op = str_of(l, "op");
        if (op[0] == '\0')
            continue;
        json_t *c = json_object_get(counts, op);
        json_object_set_new(counts, op, json_integer(c != NULL ? json_integer_value(c) + 1 : 1));
    }
    return counts;
}

static json_t *
verdict_counts(json_t *layers)
{
    json_t *counts = json_object();
    size_t i;
    json_t *l;
    json_array_foreach(layers, i, l)
    {
        const char *v = str_of(l, "verdict");
        json_t *c = json_object_get(counts, v);
        json_object_set_new(counts, v, json_integer(c != NULL ? json_integer_value(c) + 1 : 1));
    }
    return counts;
}

static json_t *
summary_object(json_t *diff, json_t *runs)
{
    json_t *layers = json_object_get(diff, "layers");
    json_t *s = json_object(), *named = json_object();
    const char *key;
    json_t *v;
    json_object_foreach(diff, key, v)
    {
        if (strcmp(key, "layers") == 0 || strcmp(key, "amplifiers") == 0 ||
            strcmp(key, "matched") == 0)
            continue;
        json_object_set(s, key, v);
    }
    json_t *amps = json_object_get(diff, "amplifiers");
    set_capped(s, "amplifiers", amps);
    json_t *matched = json_copy(json_object_get(diff, "matched"));
    if (json_is_object(matched)) {
        json_t *only_a = json_incref(json_object_get(matched, "only_a"));
        json_t *only_b = json_incref(json_object_get(matched, "only_b"));
        set_capped(matched, "only_a", only_a);
        set_capped(matched, "only_b", only_b);
        json_decref(only_a);
        json_decref(only_b);
    }
    json_object_set_new(s, "matched", matched != NULL ? matched : json_null());
    size_t n = json_array_size(layers);
    json_object_set_new(s, "n_layers", json_integer((json_int_t)n));
    json_object_set_new(s, "verdicts", verdict_counts(layers));
    json_object_set_new(s, "ops", op_counts(layers));
    json_object_set(s, "runs", runs);

    /* The layers the summary names in full. */
    name_layer(named, layers,
               index_of(layers, json_string_value(json_object_get(diff, "first_divergent"))));
    name_layer(named, layers,
               index_of(layers, json_string_value(json_object_get(diff, "first_observed"))));
    name_layer(named, layers, index_of(layers, json_string_value(json_object_get(diff, "cause"))));
    int last = -1, n_amps = 0;
    json_t *own = json_array();
    for (size_t i = 0; i < n; i++) {
        json_t *l = json_array_get(layers, i);
        const char *verdict = str_of(l, "verdict");
        if (strcmp(verdict, "incomparable") != 0)
            last = (int)i;
        if (json_is_true(json_object_get(l, "amplifier")) && n_amps < SRV_DIFF_VIEW_LIST_MAX) {
            n_amps++;
            name_layer(named, layers, (int)i);
        }
        json_t *o = json_object_get(l, "own");
        if (json_is_object(o) && beyond(str_of(o, "verdict"))) {
            if (json_array_size(own) < SRV_DIFF_VIEW_LIST_MAX)
                name_layer(named, layers, (int)i);
            json_array_append(own, json_object_get(l, "name"));
        }
    }
    /* Amplifiers the diff lists without the layer flag (older engines) are named too. */
    size_t k;
    json_array_foreach(amps, k, v)
    {
        if (k >= SRV_DIFF_VIEW_LIST_MAX)
            break;
        name_layer(named, layers, index_of(layers, json_string_value(v)));
    }
    name_layer(named, layers, last);
    json_object_set_new(
        s, "last_compared",
        last >= 0 ? json_incref(json_object_get(json_array_get(layers, (size_t)last), "name"))
                  : json_null());
    set_capped(s, "own_error", own);
    json_decref(own);
    json_t *ts = truth_summary(diff, layers, named);
    json_object_set_new(s, "truth_summary", ts != NULL ? ts : json_null());
    json_object_set_new(s, "layers", named);
    return s;
}

/* A row is the layer as the diff has it, with its position: every field a table, the
 * layer view or a CSV reads, new fields included. */
static char *
row_text(json_t *l, int i)
{
    json_t *r = json_copy(l);
    if (r == NULL)
        return NULL;
    json_object_set_new(r, "i", json_integer(i));
    char *text = json_dumps(r, JSON_COMPACT | JSON_REAL_PRECISION(ROW_DIGITS));
    json_decref(r);
    return text;
}

void
srv_diff_view_fini(struct srv_diff_view *v)
{
    if (v == NULL)
        return;
    for (int i = 0; v->rows != NULL && i < v->n_layers; i++)
        free(v->rows[i].row);
    free(v->rows);
    free(v->summary);
    json_decref(v->diff);
    memset(v, 0, sizeof *v);
}

/* The summary's text: its object at full precision, then the overview at three digits. */
static char *
summary_text(json_t *s, json_t *layers)
{
    char *head = json_dumps(s, JSON_COMPACT);
    char *ov = overview_text(layers);
    char *out = NULL;
    if (head != NULL && ov != NULL) {
        size_t h = strlen(head), o = strlen(ov);
        out = malloc(h + o + 16);
        if (out != NULL) {
            /* head ends with its closing brace: the overview goes in before it */
            memcpy(out, head, h - 1);
            memcpy(out + h - 1, ",\"overview\":", 12);
            memcpy(out + h + 11, ov, o);
            memcpy(out + h + 11 + o, "}", 2);
        }
    }
    free(head);
    free(ov);
    return out;
}

/* {"a", "b", "truth", "replay"}: each run's document, or null. */
static json_t *
runs_object(json_t *diff, srv_diff_view_meta_fn *meta, void *user)
{
    static const char *const sides[] = {"a", "b", "truth", "replay"};
    json_t *runs = json_object();
    for (size_t i = 0; i < sizeof sides / sizeof sides[0]; i++) {
        const char *id = json_string_value(json_object_get(json_object_get(diff, sides[i]), "id"));
        json_object_set_new(runs, sides[i], id != NULL ? meta(user, id) : json_null());
    }
    return runs;
}

int
srv_diff_view_make(const char *text, size_t len, srv_diff_view_meta_fn *meta, void *user,
                   struct srv_diff_view *out, struct gd_err *err)
{
    json_error_t jerr;
    struct srv_diff_view v;
    memset(&v, 0, sizeof v);
    v.diff = json_loadb(text, len, 0, &jerr);
    json_t *layers = json_object_get(v.diff, "layers");
    if (!json_is_object(v.diff) || !json_is_array(layers)) {
        json_decref(v.diff);
        return gd_err_set(err, GD_EIO, "a cached diff is not a diff: %s",
                          v.diff == NULL ? jerr.text : "no layers");
    }
    int rc = 0;
    v.n_layers = (int)json_array_size(layers);
    for (int i = 0; i < v.n_layers; i++) {
        json_t *l = json_array_get(layers, (size_t)i);
        if (json_is_object(l) && strcmp(str_of(l, "verdict"), "incomparable") != 0)
            json_object_set_new(l, "ulps_at_scale", ulps_at_scale(l));
    }
    v.rows = calloc(v.n_layers > 0 ? (size_t)v.n_layers : 1, sizeof *v.rows);
    if (v.rows == NULL)
        rc = gd_err_set(err, GD_ENOMEM, "out of memory for a view of %d layers", v.n_layers);
    for (int i = 0; rc == 0 && i < v.n_layers; i++) {
        json_t *l = json_array_get(layers, (size_t)i);
        struct srv_diff_view_row *r = &v.rows[i];
        r->name = str_of(l, "name");
        r->op = str_of(l, "op");
        r->verdict = str_of(l, "verdict");
        r->err = num_of(l, "err");
        r->row = row_text(l, i);
        if (r->row == NULL)
            rc = gd_err_set(err, GD_ENOMEM, "out of memory for a view of %d layers", v.n_layers);
    }
    if (rc == 0) {
        json_t *runs = runs_object(v.diff, meta, user);
        json_t *s = summary_object(v.diff, runs);
        json_decref(runs);
        v.summary = s != NULL ? summary_text(s, layers) : NULL;
        json_decref(s);
        if (v.summary == NULL)
            rc = gd_err_set(err, GD_ENOMEM, "out of memory for a diff's summary");
    }
    if (rc != 0) {
        srv_diff_view_fini(&v);
        return rc;
    }
    *out = v;
    return 0;
}
