/*
 * sweep_setting.c: what `gpudiff-agent sweep` measures of one setting: the forward timed
 * without capture and end to end, the first capture (in memory, and as a bundle when asked),
 * the same rows at each other batch size against it, repeats in fresh sessions, and the
 * comparisons with the float64 run and the strict setting; also the float64 run itself and
 * the convolution algorithms cuDNN offers (conv=each and the document's list).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpudiff/bundle.h"
#include "agent.h"
#include "sweep_run.h"

static json_t *
num(double v)
{
    return isfinite(v) ? json_real(v) : json_null();
}

static int
cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double
median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* run.json's facts for one run of the sweep (the layers come from the capture). */
static json_t *
run_meta(const struct sweep *sw, const char *backend, const struct gd_session *s,
         const struct gd_knobs *k, const char *setting, struct gd_err *err)
{
    char id[37], now[32];
    if (gd_uuid_v4(id, err) != 0)
        return NULL;
    agt_utc_now(now, sizeof now);
    json_t *env = json_object();
    const struct gd_env *e = gd_session_env(s);
    for (int i = 0; i < e->n; i++)
        json_object_set_new(env, e->items[i].key, json_string(e->items[i].value));
    /* "input" is the first input's record (as run writes it), "inputs" all */
    json_t *first = json_deep_copy(json_array_get(sw->model.records, 0));
    json_object_del(first, "name");
    return json_pack("{s:s, s:s, s:{s:s, s:s, s:s}, s:o, s:O, s:s, s:o, "
                     "s:o, s:{s:s, s:s}, s:f}",
                     "id", id, "created_at", now, "model", "name", sw->g->name, "sha256",
                     sw->g->sha256, "file", sw->o->model, "input", first, "inputs",
                     sw->model.records, "backend", backend, "env", env, "knobs",
                     gd_knobs_json(k, backend, e), "labels", "sweep", sw->id, "setting", setting,
                     "duration_us", 0.0);
}

/* A bundle folder's name for a setting: its position and name, file-name safe. */
static void
bundle_dir(const struct sweep *sw, int index, const char *name, char *out, size_t size)
{
    char slug[96];
    size_t n = 0;
    for (const char *p = name; *p && n + 1 < sizeof slug; p++) {
        char c = *p;
        int ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                 c == '.' || c == '_' || c == '-';
        slug[n++] = ok ? c : '-';
    }
    slug[n] = '\0';
    int w = index < 0 ? snprintf(out, size, "%.3900s/float64", sw->bundles)
                      : snprintf(out, size, "%.3900s/%02d-%s", sw->bundles, index % 10000, slug);
    (void)w;
}

/* Adds a captured run's callback time, and its parts, to the sweep's account. */
static void
account_capture(struct sweep *sw, const struct agt_capture *c)
{
    sw->callback_us += c->callback_us;
    sw->store_us += c->store_us;
    sw->check_us += c->check_us;
    sw->store_bytes += c->store_bytes;
    sw->check_bytes += c->check_bytes;
}

/*
 * One captured run of session s (and, with dir, a bundle): the run the comparisons read, in
 * *out. A memrun already in *out is reused; on failure *out keeps it (it is reset).
 */
static int
capture_run(struct sweep *sw, struct gd_session *s, const char *backend, const struct gd_knobs *k,
            const char *setting, const char *dir, struct agt_memrun **out, struct gd_err *err)
{
    json_t *meta = run_meta(sw, backend, s, k, setting, err);
    if (meta == NULL)
        return err->code ? err->code : GD_ENOMEM;
    struct agt_memrun *r = *out;
    struct gd_bundle_writer *w = NULL;
    int rc = 0;
    if (r != NULL)
        agt_memrun_reset(r, meta);
    else
        rc = agt_memrun_new(sw->g, meta, &r, err);
    if (rc == 0 && dir != NULL)
        rc = gd_bundle_writer_new(dir, 0, &w, err);
    if (rc == 0) {
        struct agt_capture c = {.g = sw->g, .store = r, .writer = w};
        double t0 = agt_sweep_now_us();
        rc = gd_session_run(s, sw->n_inputs, sw->inputs, agt_capture_layer, &c, err);
        double dt = agt_sweep_now_us() - t0;
        sw->engine_us += dt - c.callback_us;
        account_capture(sw, &c);
        json_object_set_new(meta, "duration_us", json_real(dt));
        if (rc == 0 && w != NULL)
            rc = gd_bundle_writer_commit(w, meta, err);
    }
    gd_bundle_writer_free(w);
    json_decref(meta);
    *out = r;
    return rc;
}

struct gd_session *
agt_sweep_open(struct sweep *sw, const char *backend, const struct gd_knobs *k, struct gd_err *err)
{
    double t0 = agt_sweep_now_us();
    struct gd_session *s = gd_session_new(sw->g, backend, k, err);
    sw->engine_us += agt_sweep_now_us() - t0;
    return s;
}

void
agt_sweep_close(struct sweep *sw, struct gd_session *s)
{
    double t0 = agt_sweep_now_us();
    gd_session_free(s);
    sw->engine_us += agt_sweep_now_us() - t0;
}

/* gd_diff_runs of a against b, summed up; with batch > 0, a at that batch size against b
 * at the whole batch (agt_batch_compare). NULL and err on failure. */
static json_t *
compare(struct sweep *sw, struct agt_memrun *a, struct agt_memrun *b, int64_t batch,
        struct gd_err *err)
{
    json_t *j = NULL;
    double t0 = agt_sweep_now_us();
    if (batch > 0) {
        if (agt_batch_compare(a, b, batch, agt_output_layer(sw->g), sw->o->atol, sw->o->rtol, &j,
                              err) != 0)
            j = NULL;
    } else {
        struct gd_run_view va, vb;
        agt_memrun_view(a, &va);
        agt_memrun_view(b, &vb);
        struct gd_diff *d = NULL;
        if (gd_diff_runs(&va, &vb, NULL, sw->o->atol, sw->o->rtol, &d, err) == 0)
            j = agt_diff_summary(d, agt_output_layer(sw->g));
        gd_diff_free(d);
    }
    sw->compare_us += agt_sweep_now_us() - t0;
    return j;
}

static json_t *
not_compared(const char *why)
{
    return json_pack("{s:b, s:s}", "compared", 0, "why", why);
}

static json_t *
failure(const char *phase, const struct gd_err *err)
{
    return json_pack("{s:s, s:s, s:s}", "status", "failed", "failed_at", phase, "error",
                     err->msg[0] ? err->msg : gd_strerror(err->code));
}

static void
set_failure(json_t *res, const char *phase, const struct gd_err *err)
{
    json_t *f = failure(phase, err);
    json_object_update(res, f);
    json_decref(f);
}

static void
doc_env(struct sweep *sw, const struct gd_env *e)
{
    json_t *env = json_object();
    for (int i = 0; i < e->n; i++)
        json_object_set_new(env, e->items[i].key, json_string(e->items[i].value));
    json_object_set_new(sw->doc, "env", env);
}

/* ---- one setting ---- */

/* Timed forwards (staged input) and end-to-end runs; the e2e outputs are compared run to
 * run. Fills time and run_to_run.outputs_*. */
static int
time_setting(struct sweep *sw, struct gd_session *s, json_t *res, struct gd_err *err)
{
    const struct sweep_opts *o = sw->o;
    int n = o->repeats;
    double *fwd = calloc((size_t)n, sizeof *fwd), *e2e = calloc((size_t)n, sizeof *e2e);
    struct gd_tensor *first[8] = {NULL};
    int n_out = sw->g->n_outputs < 8 ? sw->g->n_outputs : 8, same = 1, rc = 0;
    if (fwd == NULL || e2e == NULL) {
        rc = gd_err_set(err, GD_ENOMEM, "out of memory");
        goto done;
    }
    double t0 = agt_sweep_now_us();
    rc = gd_session_stage(s, sw->n_inputs, sw->inputs, err);
    for (int r = -o->warmup; r < n && rc == 0; r++) {
        double us = 0;
        rc = gd_session_forward(s, &us, err);
        if (r >= 0)
            fwd[r] = us / 1e3;
    }
    for (int r = -1; r < n && rc == 0; r++) {
        double us = 0;
        rc = gd_session_run_end_to_end(s, sw->n_inputs, sw->inputs, &us, err);
        if (rc != 0 || r < 0)
            continue;
        e2e[r] = us / 1e3;
        for (int i = 0; i < n_out; i++) {
            const struct gd_tensor *y = gd_session_output(s, i);
            if (y == NULL)
                continue;
            if (first[i] == NULL) {
                if ((first[i] = gd_tensor_dup(y, err)) == NULL)
                    rc = err->code;
            } else if (gd_tensor_nbytes(y) != gd_tensor_nbytes(first[i]) ||
                       memcmp(y->data, first[i]->data, gd_tensor_nbytes(y)) != 0) {
                same = 0;
            }
        }
    }
    sw->engine_us += agt_sweep_now_us() - t0;
    if (rc != 0)
        goto done;
    const char *timer = strcmp(gd_session_backend(s), "cuda") == 0 ? "cuda events" : "wall clock";
    /* median and range of each: the range is what tells two settings apart from noise
     * (sweep_summary.c) */
    double fwd_med = median(fwd, n), e2e_med = median(e2e, n); /* sorts them */
    json_object_set_new(
        res, "time",
        json_pack("{s:o, s:o, s:o, s:o, s:o, s:o, s:i, s:i, s:s}", "forward_ms", num(fwd_med),
                  "forward_min_ms", num(fwd[0]), "forward_max_ms", num(fwd[n - 1]), "end_to_end_ms",
                  num(e2e_med), "end_to_end_min_ms", num(e2e[0]), "end_to_end_max_ms",
                  num(e2e[n - 1]), "repeats", n, "warmup", o->warmup, "forward_timer", timer));
    json_t *rr = json_object_get(res, "run_to_run");
    json_object_set_new(rr, "outputs_runs", json_integer(n));
    json_object_set_new(rr, "outputs_identical", json_boolean(same));
done:
    for (int i = 0; i < 8; i++)
        gd_tensor_free(first[i]);
    free(fwd);
    free(e2e);
    return rc;
}

/* The first capture's rows at each batch size of the grid, against the whole batch. */
static void
batch_setting(struct sweep *sw, struct gd_session *s, const struct agt_setting *st,
              struct agt_memrun *ref, json_t *res)
{
    json_t *sizes = json_array();
    for (int i = 0; i < sw->n_batches; i++) {
        struct gd_err err = {0};
        json_t *b = NULL;
        int rc = gd_session_set_batch(s, sw->batches[i], &err);
        if (rc == 0)
            rc = capture_run(sw, s, gd_session_backend(s), &st->knobs, st->name, NULL, &sw->scratch,
                             &err);
        if (rc == 0 && (b = compare(sw, sw->scratch, ref, sw->batches[i], &err)) == NULL)
            rc = err.code ? err.code : GD_ENOMEM;
        if (rc != 0) {
            b = failure("batch", &err);
            json_object_set_new(b, "batch", json_integer(sw->batches[i]));
        }
        json_array_append_new(sizes, b);
    }
    struct gd_err err = {0};
    gd_session_set_batch(s, 0, &err);
    json_object_set_new(
        res, "batch",
        json_pack("{s:I, s:o}", "reference", (json_int_t)sw->input->shape[0], "sizes", sizes));
}

/* Captures 2..K, each in a fresh session, against the first: bytes and algorithms. */
static void
repeat_setting(struct sweep *sw, const struct agt_setting *st, struct agt_memrun *ref, json_t *res)
{
    const char *backend = sw->o->backend;
    int n = ref->n_layers;
    unsigned char *bytes = calloc((size_t)n + 1, 1), *algo = calloc((size_t)n + 1, 1);
    char(*seen)[64] = calloc((size_t)n + 1, sizeof *seen);
    json_t *rr = json_object_get(res, "run_to_run");
    json_object_set_new(rr, "captures", json_integer(1));
    json_object_set_new(rr, "fresh_sessions", json_true());
    if (bytes == NULL || algo == NULL || seen == NULL)
        goto done;
    int done_k = 1;
    for (int k = 1; k < sw->o->captures; k++) {
        struct gd_err err = {0};
        struct gd_session *s = agt_sweep_open(sw, backend, &st->knobs, &err);
        int rc = s != NULL ? 0 : err.code;
        if (rc == 0) {
            struct agt_capture c = {.g = sw->g,
                                    .check = ref,
                                    .bytes_differ = bytes,
                                    .algo_differs = algo,
                                    .algo_seen = seen};
            double t0 = agt_sweep_now_us();
            rc = gd_session_run(s, sw->n_inputs, sw->inputs, agt_capture_layer, &c, &err);
            sw->engine_us += agt_sweep_now_us() - t0 - c.callback_us;
            account_capture(sw, &c);
        }
        agt_sweep_close(sw, s);
        if (rc != 0) {
            json_object_set_new(rr, "error", json_string(err.msg));
            break;
        }
        done_k++;
    }
    json_object_set_new(rr, "captures", json_integer(done_k));
    json_t *differ = json_array(), *changes = json_array();
    for (int i = 0; i < n; i++) {
        if (bytes[i])
            json_array_append_new(differ, json_string(ref->layers[i].name));
        if (algo[i])
            json_array_append_new(changes,
                                  json_pack("{s:s, s:s, s:s}", "layer", ref->layers[i].name,
                                            "first", ref->layers[i].algo, "other", seen[i]));
    }
    json_object_set_new(rr, "layers_identical",
                        done_k > 1 ? json_boolean(json_array_size(differ) == 0) : json_null());
    json_object_set_new(rr, "differing_layers", differ);
    json_object_set_new(rr, "algorithm_changes", changes);
done:
    free(bytes);
    free(algo);
    free(seen);
}

/* The knobs where a setting differs from the strict one, "tf32=on conv_algo=autotune". */
static void
knob_diff(const struct sweep *sw, json_t *knobs, char *out, size_t size)
{
    size_t used = 0;
    const char *key;
    json_t *v;
    out[0] = '\0';
    json_object_foreach(knobs, key, v) {
        if (!agt_knob_sets_setting(key))
            continue;
        json_t *sv = json_object_get(sw->strict_knobs, key);
        if (sv != NULL && json_equal(v, sv))
            continue;
        char *text =
            json_is_string(v) ? strdup(json_string_value(v)) : json_dumps(v, JSON_ENCODE_ANY);
        int w =
            snprintf(out + used, size - used, "%s%s=%s", used ? " " : "", key, text ? text : "?");
        free(text);
        if (w < 0 || (size_t)w >= size - used)
            break;
        used += (size_t)w;
    }
}

/* What the table's "cause" column says: the knobs against strict, then where the
 * difference from float64 starts and what amplifies it. */
static void
set_cause(const struct sweep *sw, json_t *res)
{
    char knobs[256], cause[768];
    knob_diff(sw, json_object_get(res, "knobs"), knobs, sizeof knobs);
    json_t *v = json_object_get(res, "vs_float64");
    json_t *first = json_object_get(v, "first_divergent");
    size_t used = 0;
    cause[0] = '\0';
    if (knobs[0])
        used += (size_t)snprintf(cause, sizeof cause, "%s: ", knobs);
    if (!json_is_true(json_object_get(v, "compared"))) {
        snprintf(cause + used, sizeof cause - used, "not compared with float64");
    } else if (json_is_object(first)) {
        used += (size_t)snprintf(cause + used, sizeof cause - used, "%s (%s) at %.1f bits, %s",
                                 json_string_value(json_object_get(first, "layer")),
                                 json_string_value(json_object_get(first, "op")),
                                 json_number_value(json_object_get(first, "bits")),
                                 json_string_value(json_object_get(first, "arithmetic")));
        size_t i;
        json_t *a;
        json_array_foreach(json_object_get(v, "amplifiers"), i, a) {
            if (used >= sizeof cause)
                break;
            json_t *fl = json_object_get(a, "flipped");
            if (json_is_integer(fl))
                used += (size_t)snprintf(cause + used, sizeof cause - used,
                                         "; %s (%s) amplifies it, %lld outputs flipped",
                                         json_string_value(json_object_get(a, "layer")),
                                         json_string_value(json_object_get(a, "op")),
                                         (long long)json_integer_value(fl));
            else
                used +=
                    (size_t)snprintf(cause + used, sizeof cause - used, "; %s (%s) amplifies it",
                                     json_string_value(json_object_get(a, "layer")),
                                     json_string_value(json_object_get(a, "op")));
        }
    } else {
        snprintf(cause + used, sizeof cause - used,
                 "every layer within rounding noise of "
                 "float64");
    }
    json_object_set_new(res, "cause", json_string(cause));
}

/* Everything measured of one setting, into a new object of the document. */
json_t *
agt_sweep_run_setting(struct sweep *sw, int index, const struct agt_setting *st)
{
    const char *backend = sw->o->backend;
    struct gd_err err = {0};
    json_t *res = json_object();
    json_object_set_new(res, "name", json_string(st->name));
    json_object_set_new(res, "strict", json_boolean(st->strict));
    json_object_set_new(res, "added", json_boolean(st->added));
    json_object_set_new(res, "run_to_run", json_object());
    struct agt_memrun *ref = NULL;
    struct gd_session *s = agt_sweep_open(sw, backend, &st->knobs, &err);
    json_object_set_new(res, "knobs",
                        gd_knobs_json(&st->knobs, backend, s ? gd_session_env(s) : NULL));
    if (s == NULL) {
        set_failure(res, "open", &err);
        goto done;
    }
    if (json_object_get(sw->doc, "env") == NULL)
        doc_env(sw, gd_session_env(s));
    if (time_setting(sw, s, res, &err) != 0) {
        set_failure(res, "time", &err);
        goto done;
    }
    char dir[PATH_MAX];
    if (sw->bundles[0])
        bundle_dir(sw, index, st->name, dir, sizeof dir);
    ref = sw->spare;
    sw->spare = NULL;
    if (capture_run(sw, s, backend, &st->knobs, st->name, sw->bundles[0] ? dir : NULL, &ref,
                    &err) != 0) {
        set_failure(res, "capture", &err);
        goto done;
    }
    json_object_set_new(res, "status", json_string("ok"));
    json_object_set_new(res, "run",
                        json_string(json_string_value(json_object_get(ref->run, "id"))));
    if (sw->bundles[0]) {
        json_object_set_new(res, "bundle", json_string(dir));
        sw->n_bundles++;
    }
    json_t *algos = json_object();
    for (int i = 0; i < ref->n_layers; i++)
        if (ref->layers[i].algo[0] != '\0')
            json_object_set_new(algos, ref->layers[i].name, json_string(ref->layers[i].algo));
    json_object_set_new(res, "algorithms", algos);
    batch_setting(sw, s, st, ref, res);
    agt_sweep_close(sw, s);
    s = NULL;
    repeat_setting(sw, st, ref, res);
    json_t *v = sw->f64 ? compare(sw, ref, sw->f64, 0, &err)
                        : json_incref(not_compared("the float64 run failed"));
    json_object_set_new(res, "vs_float64", v ? v : not_compared(err.msg));
    if (st->strict) {
        json_object_set_new(res, "vs_strict", not_compared("this is the strict setting"));
        sw->strict = ref;
        ref = NULL;
    } else {
        v = sw->strict ? compare(sw, ref, sw->strict, 0, &err)
                       : json_incref(not_compared("the strict setting failed"));
        json_object_set_new(res, "vs_strict", v ? v : not_compared(err.msg));
    }
    set_cause(sw, res);
done:
    agt_sweep_close(sw, s);
    if (ref != NULL && sw->spare == NULL)
        sw->spare = ref;
    else
        agt_memrun_free(ref);
    return res;
}

/* ---- conv=each: one setting per convolution and offered algorithm ---- */

int
agt_sweep_expand_each(struct sweep *sw, struct agt_grid *out)
{
    const char *backend = sw->o->backend;
    for (int i = 0; i < sw->grid.n; i++) {
        struct agt_setting *st = &sw->grid.settings[i];
        if (!st->expand_each) {
            int k = agt_grid_add(out, backend, &st->knobs);
            if (k < 0)
                return -1;
            out->settings[k].strict = st->strict;
            out->settings[k].added = st->added;
            continue;
        }
        struct gd_knobs k = st->knobs;
        snprintf(k.conv_algo, sizeof k.conv_algo, "heuristic");
        struct gd_err err = {0};
        struct gd_session *s = agt_sweep_open(sw, backend, &k, &err);
        int rc = s != NULL ? gd_session_run(s, sw->n_inputs, sw->inputs, NULL, NULL, &err) : err.code;
        agt_sweep_progress(sw,
                           "conv=each: listing the algorithms cuDNN offers each "
                           "convolution%s%s",
                           rc ? ": " : "", rc ? err.msg : "");
        for (int ni = 0; rc == 0 && ni < sw->g->n_nodes; ni++) {
            const struct gd_node *n = &sw->g->nodes[ni];
            if (n->op != GD_OP_CONV && n->op != GD_OP_CONV_TRANSPOSE)
                continue;
            struct gd_algo_offer offers[GD_ALGO_OFFERS_MAX];
            int count = 0;
            if (gd_session_algo_offers(s, ni, offers, GD_ALGO_OFFERS_MAX, &count, &err) != 0)
                break;
            for (int a = 0; a < count; a++) {
                int dup = 0;
                for (int b = 0; b < a; b++)
                    dup |= strcmp(offers[b].config, offers[a].config) == 0;
                if (dup)
                    continue;
                struct gd_knobs p = k;
                snprintf(p.conv_pins, sizeof p.conv_pins, "%s=%s", n->name, offers[a].config);
                if (agt_grid_add(out, backend, &p) < 0) {
                    agt_sweep_close(sw, s);
                    return -1;
                }
            }
        }
        agt_sweep_close(sw, s);
    }
    return 0;
}

/* The conv algorithms cuDNN offered each convolution (from the strict setting's session
 * kind: a heuristic listing with the same TF32 choice), for the document. */
json_t *
agt_sweep_list_offers(struct sweep *sw)
{
    if (strcmp(sw->o->backend, "cuda") != 0)
        return json_null();
    struct gd_knobs k;
    agt_strict_knobs("cuda", &sw->o->base, &k);
    snprintf(k.conv_algo, sizeof k.conv_algo, "heuristic");
    struct gd_err err = {0};
    struct gd_session *s = agt_sweep_open(sw, "cuda", &k, &err);
    json_t *out = json_array();
    if (s == NULL || gd_session_run(s, sw->n_inputs, sw->inputs, NULL, NULL, &err) != 0) {
        agt_sweep_close(sw, s);
        json_decref(out);
        return json_pack("{s:s}", "error", err.msg);
    }
    for (int ni = 0; ni < sw->g->n_nodes; ni++) {
        const struct gd_node *n = &sw->g->nodes[ni];
        if (n->op != GD_OP_CONV && n->op != GD_OP_CONV_TRANSPOSE)
            continue;
        struct gd_algo_offer offers[GD_ALGO_OFFERS_MAX];
        int count = 0;
        if (gd_session_algo_offers(s, ni, offers, GD_ALGO_OFFERS_MAX, &count, &err) != 0)
            continue;
        json_t *list = json_array();
        for (int a = 0; a < count; a++)
            json_array_append_new(
                list, json_pack("{s:i, s:s, s:s, s:s, s:b, s:I, s:s, s:b}", "id", offers[a].id,
                                "name", offers[a].name, "config", offers[a].config, "notes",
                                offers[a].notes, "deterministic", offers[a].deterministic,
                                "workspace", (json_int_t)offers[a].workspace, "math",
                                offers[a].math, "chosen", offers[a].chosen));
        json_array_append_new(out, json_pack("{s:s, s:s, s:o}", "layer", n->name, "op",
                                             gd_op_name(n->op), "offers", list));
    }
    agt_sweep_close(sw, s);
    return out;
}

void
agt_sweep_float64(struct sweep *sw)
{
    struct gd_err err = {0};
    struct gd_knobs k;
    k = sw->o->base;
    double t0 = agt_sweep_now_us();
    agt_sweep_progress(sw, "float64 reference (cpu64): one capture");
    struct gd_session *s = agt_sweep_open(sw, "cpu64", &k, &err);
    char dir[PATH_MAX];
    if (sw->bundles[0])
        bundle_dir(sw, -1, "float64", dir, sizeof dir);
    int rc = s != NULL ? capture_run(sw, s, "cpu64", &k, "float64", sw->bundles[0] ? dir : NULL,
                                     &sw->f64, &err)
                       : err.code;
    agt_sweep_close(sw, s);
    json_t *f = json_object();
    json_object_set_new(f, "backend", json_string("cpu64"));
    if (rc == 0) {
        json_object_set_new(f, "status", json_string("ok"));
        json_object_set_new(f, "run",
                            json_string(json_string_value(json_object_get(sw->f64->run, "id"))));
        if (sw->bundles[0]) {
            json_object_set_new(f, "bundle", json_string(dir));
            sw->n_bundles++;
        }
    } else {
        agt_memrun_free(sw->f64);
        sw->f64 = NULL;
        set_failure(f, "capture", &err);
        agt_sweep_progress(sw, "float64 reference failed: %s", err.msg);
    }
    json_object_set_new(sw->doc, "float64", f);
    agt_sweep_progress(sw, "float64 reference: %.1f s", (agt_sweep_now_us() - t0) / 1e6);
}
