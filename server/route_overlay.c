/*
 * route_overlay.c: more than two runs at once (docs/SERVER.md, "Overlays and heatmaps"):
 * GET /api/v1/overlay, N runs' error layer by layer against one truth run, and
 * GET /api/v1/heatmap, every device of a model (its newest run) layer by layer against one
 * reference (the baseline unless named). Each series is a cached diff's per-layer summaries
 * (diff_layers), the diffs computed first on the compare pool when missing; the series are
 * aligned by layer name, and past `points` layers cut into bins that keep each bin's largest
 * error and worst verdict, so that an answer stays a few hundred kilobytes at 10,000 layers.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compare.h"
#include "db.h"
#include "diff_view.h"
#include "server.h"

#define OVERLAY_RUNS_MAX 16
#define POINTS_DEFAULT   2000
#define POINTS_MAX       20000
#define HEATMAP_POINTS   600

/* A verdict letter's weight when a bin keeps the worst: '-' (no such layer) lowest. */
static int
rank(char code)
{
    const char *order = "-xinudaf";
    const char *p = strchr(order, code);
    return p != NULL && code != '\0' ? (int)(p - order) : 0;
}

/* One series: what its diff says per layer, by position in the aligned list. */
struct series {
    json_t *run; /* what the answer says of the run */
    char first_divergent[256];
    size_t n;    /* layers read */
    size_t *pos; /* aligned position of each */
    double *err;
    char *codes;
    int synthetic; /* the reference itself: every layer identical, 0 */
};

struct aligned {
    json_t *index; /* name -> position */
    json_t *names;
    struct series *s; /* the series being read */
    size_t cap;
};

static int
series_layer(void *user, const char *name, const char *verdict, double err_value,
             struct gd_err *err)
{
    struct aligned *al = user;
    struct series *s = al->s;
    if (s->n == al->cap) {
        size_t cap = al->cap ? 2 * al->cap : 256;
        size_t *pos = realloc(s->pos, cap * sizeof *pos);
        if (pos != NULL)
            s->pos = pos;
        double *e = pos != NULL ? realloc(s->err, cap * sizeof *e) : NULL;
        if (e != NULL)
            s->err = e;
        char *c = e != NULL ? realloc(s->codes, cap) : NULL;
        if (c == NULL)
            return gd_err_set(err, GD_ENOMEM, "out of memory");
        s->codes = c;
        al->cap = cap;
    }
    json_t *p = json_object_get(al->index, name);
    size_t at;
    if (p != NULL) {
        at = (size_t)json_integer_value(p);
    } else {
        at = json_array_size(al->names);
        if (json_object_set_new(al->index, name, json_integer((json_int_t)at)) != 0 ||
            json_array_append_new(al->names, json_string(name)) != 0)
            return gd_err_set(err, GD_ENOMEM, "out of memory");
    }
    s->pos[s->n] = at;
    s->err[s->n] = err_value;
    s->codes[s->n] = srv_diff_view_code(verdict);
    s->n++;
    return 0;
}

static void
series_fini(struct series *s)
{
    json_decref(s->run);
    free(s->pos);
    free(s->err);
    free(s->codes);
}

/* What an answer says of a run: its id and what tells it apart. */
static json_t *
run_brief(struct srv_db *db, const char *id, const char *device)
{
    json_t *meta = NULL;
    struct gd_err err;
    json_t *out = json_pack("{s:s}", "id", id);
    if (device != NULL)
        json_object_set_new(out, "device", json_string(device));
    if (srv_db_run_meta(db, id, &meta, &err) != 0)
        return out;
    static const char *const keys[] = {"backend", "created_at", "knobs", "labels", NULL};
    for (int i = 0; keys[i] != NULL; i++) {
        json_t *v = json_object_get(meta, keys[i]);
        if (v != NULL)
            json_object_set(out, keys[i], v);
    }
    json_t *gpu = json_object_get(json_object_get(meta, "env"), "gpu_name");
    json_object_set(out, "gpu", json_is_string(gpu) ? gpu : json_null());
    json_decref(meta);
    return out;
}

/*
 * Reads the diff of key into s (computing it when the request is on the pool). SRV_EDEFER
 * (req untouched) when it must be computed and the request is not on the pool.
 */
static int
series_read(struct srv_req *req, const struct srv_diff_key *key, struct aligned *al,
            struct series *s)
{
    struct gd_err err;
    for (int attempt = 0; attempt < 2; attempt++) {
        struct srv_db *db = srv_req_db(req);
        if (db == NULL)
            return req->err.code;
        al->s = s;
        al->cap = 0;
        s->n = 0;
        int rc = srv_db_diff_layers(db, key, s->first_divergent, series_layer, al, &err);
        srv_req_db_release(req, db);
        if (rc != SRV_ENOTFOUND)
            return rc == 0 ? 0 : srv_req_fail_err(req, &err);
        if (!req->on_pool)
            return SRV_EDEFER;
        rc = srv_compare_ensure(req->srv->compare, key, NULL, &err);
        if (rc != 0)
            return srv_req_fail_err(req, &err);
    }
    return srv_req_fail(req, GD_EIO, "a diff was computed but not found in the cache");
}

/*
 * The aligned series as {"n_layers", "bin", "layers": [the first name of each point],
 * "series": [{"run", "first_divergent", "err", "verdicts"}]}, bins of `bin` layers when
 * there are more than points.
 */
static json_t *
aligned_json(struct aligned *al, struct series *list, size_t n_series, size_t points)
{
    size_t n = json_array_size(al->names);
    size_t bin = n > points ? (n + points - 1) / points : 1;
    size_t n_points = (n + bin - 1) / bin;
    double *err = malloc((n_points ? n_points : 1) * sizeof *err);
    char *codes = malloc(n_points + 1);
    json_t *series = json_array(), *names = json_array();
    if (err == NULL || codes == NULL) {
        free(err);
        free(codes);
        json_decref(series);
        json_decref(names);
        return NULL;
    }
    for (size_t p = 0; p < n_points; p++)
        json_array_append(names, json_array_get(al->names, p * bin));
    for (size_t k = 0; k < n_series; k++) {
        struct series *s = &list[k];
        for (size_t p = 0; p < n_points; p++) {
            err[p] = s->synthetic ? 0.0 : NAN;
            codes[p] = s->synthetic ? 'i' : '-';
        }
        for (size_t i = 0; i < s->n; i++) {
            size_t p = s->pos[i] / bin;
            if (isfinite(s->err[i]) && (!isfinite(err[p]) || s->err[i] > err[p]))
                err[p] = s->err[i];
            if (rank(s->codes[i]) > rank(codes[p]))
                codes[p] = s->codes[i];
        }
        codes[n_points] = '\0';
        json_t *e = json_array();
        for (size_t p = 0; p < n_points; p++)
            json_array_append_new(e, isfinite(err[p]) ? json_real(err[p]) : json_null());
        json_array_append_new(
            series, json_pack("{s:O, s:o, s:o, s:s}", "run", s->run, "first_divergent",
                              s->first_divergent[0] ? json_string(s->first_divergent) : json_null(),
                              "err", e, "verdicts", codes));
    }
    free(err);
    free(codes);
    return json_pack("{s:I, s:I, s:o, s:o}", "n_layers", (json_int_t)n, "bin", (json_int_t)bin,
                     "layers", names, "series", series);
}

static int
points_param(struct srv_req *req, int64_t def, int64_t *out)
{
    const char *text = srv_req_query(req, "points");
    *out = def;
    if (text != NULL && srv_parse_int(text, 10, POINTS_MAX, out) != 0)
        return srv_req_fail(req, SRV_EBADREQ, "points: an integer from 10 to %d", POINTS_MAX);
    return 0;
}

/* runs=ID,ID,...: 1 to max distinct run ids, none of them `not`. */
static int
run_list(struct srv_req *req, const char *text, size_t max, const char * not, char ids[][40],
         size_t *n)
{
    *n = 0;
    if (text == NULL)
        return srv_req_fail(req, SRV_EBADREQ, "runs: a comma-separated list of run ids");
    const char *p = text;
    for (;;) {
        size_t len = strcspn(p, ",");
        if (len != 36 || *n == max)
            return srv_req_fail(req, SRV_EBADREQ,
                                "runs: 1 to %zu run ids (lowercase UUIDs) separated by commas",
                                max);
        memcpy(ids[*n], p, len);
        ids[*n][len] = '\0';
        if (!srv_is_uuid(ids[*n]))
            return srv_req_fail(req, SRV_EBADREQ, "runs: %s is not a run id", ids[*n]);
        for (size_t k = 0; k < *n; k++)
            if (strcmp(ids[k], ids[*n]) == 0)
                return srv_req_fail(req, SRV_EBADREQ, "runs: %s is given twice", ids[*n]);
        if (not != NULL && strcmp(ids[*n], not ) == 0)
            return srv_req_fail(req, SRV_EBADREQ, "runs: %s is the truth itself", ids[*n]);
        (*n)++;
        if (p[len] == '\0')
            return 0;
        p += len + 1;
    }
}

int
srv_overlay_get(struct srv_req *req)
{
    static const char *const known[] = {"truth", "runs", "points", NULL};
    if (srv_req_query_check(req, known) != 0)
        return req->err.code;
    const char *truth = srv_req_query(req, "truth");
    if (truth == NULL || !srv_is_uuid(truth))
        return srv_req_fail(req, SRV_EBADREQ, "truth: the id of a run (a lowercase UUID)");
    char ids[OVERLAY_RUNS_MAX][40];
    size_t n = 0;
    int64_t points;
    if (run_list(req, srv_req_query(req, "runs"), OVERLAY_RUNS_MAX, truth, ids, &n) != 0 ||
        points_param(req, POINTS_DEFAULT, &points) != 0)
        return req->err.code;
    struct series list[OVERLAY_RUNS_MAX];
    memset(list, 0, sizeof list);
    struct aligned al = {json_object(), json_array(), NULL, 0};
    int rc = 0;
    for (size_t k = 0; rc == 0 && k < n; k++) {
        struct srv_diff_key key;
        srv_diff_key_default(&key, ids[k], truth);
        rc = series_read(req, &key, &al, &list[k]);
    }
    json_t *answer = NULL;
    if (rc == 0) {
        struct srv_db *db = srv_req_db(req);
        if (db == NULL) {
            rc = req->err.code;
        } else {
            for (size_t k = 0; k < n; k++)
                list[k].run = run_brief(db, ids[k], NULL);
            json_t *t = run_brief(db, truth, NULL);
            srv_req_db_release(req, db);
            answer = aligned_json(&al, list, n, (size_t)points);
            if (answer != NULL)
                json_object_set_new(answer, "truth", t);
            else
                json_decref(t);
            rc = srv_reply_json_compact(req, 200, answer, 4);
        }
    }
    for (size_t k = 0; k < n; k++)
        series_fini(&list[k]);
    json_decref(al.index);
    json_decref(al.names);
    return rc;
}

int
srv_heatmap_get(struct srv_req *req)
{
    static const char *const known[] = {"model", "ref", "points", NULL};
    if (srv_req_query_check(req, known) != 0)
        return req->err.code;
    const char *model = srv_req_query(req, "model"), *ref_text = srv_req_query(req, "ref");
    int64_t points;
    if (model == NULL || !srv_is_text(model, SRV_MODEL_NAME_MAX))
        return srv_req_fail(req, SRV_EBADREQ, "model: " SRV_MODEL_NAME_RULE);
    if (ref_text != NULL && !srv_is_uuid(ref_text))
        return srv_req_fail(req, SRV_EBADREQ, "ref: the id of a run (a lowercase UUID)");
    if (points_param(req, HEATMAP_POINTS, &points) != 0)
        return req->err.code;
    char ref[40] = "";
    json_t *devices = NULL;
    struct gd_err err;
    struct srv_db *db = srv_req_db(req);
    if (db == NULL)
        return req->err.code;
    int rc = srv_db_model_devices(db, model, &devices, &err);
    if (rc == 0 && ref_text != NULL)
        snprintf(ref, sizeof ref, "%s", ref_text);
    else if (rc == 0 && (rc = srv_db_model_baseline(db, model, ref, &err)) == 0 && ref[0] == '\0')
        rc = gd_err_set(&err, SRV_ECONFLICT,
                        "model %s has no baseline to compare its devices with: name one with "
                        "ref= or pick a baseline",
                        model);
    srv_req_db_release(req, db);
    if (rc != 0) {
        json_decref(devices);
        return srv_req_fail_err(req, &err);
    }
    size_t n = json_array_size(devices);
    struct series *list = calloc(n > 0 ? n : 1, sizeof *list);
    struct aligned al = {json_object(), json_array(), NULL, 0};
    if (list == NULL)
        rc = srv_req_fail(req, GD_ENOMEM, "out of memory");
    for (size_t k = 0; rc == 0 && k < n; k++) {
        const char *run = json_string_value(json_object_get(json_array_get(devices, k), "run"));
        if (strcmp(run, ref) == 0) {
            list[k].synthetic = 1;
            continue;
        }
        struct srv_diff_key key;
        srv_diff_key_default(&key, run, ref);
        rc = series_read(req, &key, &al, &list[k]);
    }
    if (rc == 0) {
        db = srv_req_db(req);
        if (db == NULL) {
            rc = req->err.code;
        } else {
            for (size_t k = 0; k < n; k++) {
                json_t *d = json_array_get(devices, k);
                list[k].run = run_brief(db, json_string_value(json_object_get(d, "run")),
                                        json_string_value(json_object_get(d, "key")));
            }
            json_t *r = run_brief(db, ref, NULL);
            srv_req_db_release(req, db);
            json_t *answer = aligned_json(&al, list, n, (size_t)points);
            if (answer != NULL) {
                json_object_set_new(answer, "model", json_string(model));
                json_object_set_new(answer, "ref", r);
            } else {
                json_decref(r);
            }
            rc = srv_reply_json_compact(req, 200, answer, 4);
        }
    }
    for (size_t k = 0; list != NULL && k < n; k++)
        series_fini(&list[k]);
    free(list);
    json_decref(devices);
    json_decref(al.index);
    json_decref(al.names);
    return rc;
}
