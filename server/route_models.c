/*
 * route_models.c: GET /api/v1/models; POST /api/v1/models/{model}/baseline, which picks the
 * run the model's other runs are compared against; GET .../matrix (every device's newest run
 * against every other's, kept whole in the matrix cache) and GET .../history (one layer's
 * difference from the baseline, run after run). Both read the diff cache, one summary row per
 * cell or point, and compute the diffs it lacks.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpudiff/hash.h"
#include "gpudiff/session.h"
#include "compare.h"
#include "db.h"
#include "server.h"

#define HISTORY_LIMIT     100
#define HISTORY_LIMIT_MAX 1000
#define DEVICE_KEY_MAX    4096
/* The layout of a cached matrix: another layout is made again (part of its signature). */
#define MATRIX_FORMAT "matrix 2"

int
srv_models_list(struct srv_req *req)
{
    static const char *const known[] = {NULL};
    if (srv_req_query_check(req, known) != 0)
        return req->err.code;
    struct srv_db *db = srv_req_db(req);
    if (db == NULL)
        return req->err.code;
    json_t *out = NULL;
    struct gd_err err;
    int rc = srv_db_models_list(db, &out, &err);
    srv_req_db_release(req, db);
    if (rc != 0)
        return srv_req_fail_err(req, &err);
    return srv_reply_json(req, 200, out);
}

/*
 * The model a request names: the {model} path segment, or ?model= in the query forms
 * (/api/v1/baseline, /api/v1/matrix, /api/v1/history), which reach any model name, one with
 * '/' too. NULL, with req failed, when it is missing, given twice or not a model name.
 */
static const char *
model_of(struct srv_req *req)
{
    const char *query = srv_req_query(req, "model");
    const char *model = req->n_params > 0 ? req->params[0] : query;
    if (req->n_params > 0 && query != NULL) {
        srv_req_fail(req, SRV_EBADREQ, "model: given in the path, not also in the query");
        return NULL;
    }
    if (model == NULL) {
        srv_req_fail(req, SRV_EBADREQ, "model: required");
        return NULL;
    }
    if (!srv_is_text(model, SRV_MODEL_NAME_MAX)) {
        srv_req_fail(req, SRV_EBADREQ, "model: " SRV_MODEL_NAME_RULE);
        return NULL;
    }
    return model;
}

int
srv_models_baseline(struct srv_req *req)
{
    static const char *const known[] = {"model", NULL};
    if (srv_req_query_check(req, known) != 0)
        return req->err.code;
    const char *model = model_of(req);
    if (model == NULL)
        return req->err.code;
    json_error_t jerr;
    json_t *body = json_loadb(req->body.data ? req->body.data : "", req->body.len,
                              JSON_REJECT_DUPLICATES, &jerr);
    if (body == NULL)
        return srv_req_fail(req, SRV_EBADJSON, "line %d, column %d: %s", jerr.line, jerr.column,
                            jerr.text);
    json_t *run = json_object_get(body, "run");
    int rc = 0;
    if (!json_is_object(body) || !json_is_string(run) || json_object_size(body) != 1)
        rc = srv_req_fail(req, SRV_EBADREQ, "the body must be {\"run\": \"RUN-ID\"}");
    else if (!srv_is_uuid(json_string_value(run)))
        rc = srv_req_fail(req, SRV_EBADREQ, "run: must be a lowercase UUID version 4");
    char run_id[40];
    if (rc == 0)
        snprintf(run_id, sizeof run_id, "%s", json_string_value(run));
    json_decref(body);
    if (rc != 0)
        return rc;
    struct srv_db *db = srv_req_db(req);
    if (db == NULL)
        return req->err.code;
    struct gd_err err;
    rc = srv_db_baseline_set(db, model, run_id, req->token_id, srv_now(), &err);
    srv_req_db_release(req, db);
    if (rc != 0)
        return srv_req_fail_err(req, &err);
    SRV_LOG(GD_LOG_INFO, req, "baseline of model %s is now run %s", model, run_id);
    srv_compare_baseline_set(req->srv->compare, model);
    return srv_reply_json(req, 200, json_pack("{s:s,s:s}", "model", model, "baseline", run_id));
}

/*
 * The summary of one layer (NULL: the last) of the diff of key, computed if not cached.
 * SRV_EGONE (with req untouched) when it is not cached and cannot be made any more because
 * retention dropped a run's tensors; SRV_EDEFER (req untouched) when it is not cached and
 * the request is not on the compare pool; any other error fails req.
 */
int
srv_diff_summary_ensure(struct srv_req *req, const struct srv_diff_key *key, const char *layer,
                        struct srv_diff_summary *sum)
{
    struct gd_err err;
    for (int attempt = 0;; attempt++) {
        struct srv_db *db = srv_req_db(req);
        if (db == NULL)
            return req->err.code;
        int rc = srv_db_diff_summary(db, key, layer, sum, &err);
        srv_req_db_release(req, db);
        if (rc == 0 && attempt == 0)
            srv_metrics_add(SRV_M_DIFF_HITS, 1);
        if (rc != SRV_ENOTFOUND || attempt > 0)
            return rc == 0 ? 0 : srv_req_fail_err(req, &err);
        /* Not cached: computing it is for the compare pool, not a connection's thread. */
        if (!req->on_pool)
            return SRV_EDEFER;
        rc = srv_compare_ensure(req->srv->compare, key, NULL, &err);
        if (rc == SRV_EGONE)
            return rc;
        if (rc != 0)
            return srv_req_fail_err(req, &err);
    }
}

static json_t *
number_or_null(double v)
{
    return isfinite(v) ? json_real(v) : json_null();
}

/*
 * The signature of a matrix: the engine version and each device with its newest run. A new
 * run of a device, one dropped by retention (the device then shows its newest kept run, or
 * disappears), or a daemon with a newer engine gives another one.
 */
static int
matrix_signature(json_t *devices, char hex[GD_SHA256_HEX_LEN + 1], struct gd_err *err)
{
    struct gd_sha256 h;
    int rc = gd_sha256_init(&h, err);
    if (rc != 0)
        return rc;
    const char *engine = gd_version();
    rc = gd_sha256_update(&h, engine, strlen(engine) + 1, err);
    /* web: the answer's layout (devices' env, knobs, labels and nonfinite since issue 26) */
    if (rc == 0)
        rc = gd_sha256_update(&h, MATRIX_FORMAT, sizeof MATRIX_FORMAT, err);
    size_t i;
    json_t *d;
    json_array_foreach(devices, i, d)
    {
        const char *key = json_string_value(json_object_get(d, "key"));
        const char *run = json_string_value(json_object_get(d, "run"));
        if (rc == 0)
            rc = gd_sha256_update(&h, key, strlen(key) + 1, err);
        if (rc == 0)
            rc = gd_sha256_update(&h, run, strlen(run) + 1, err);
    }
    if (rc == 0)
        return gd_sha256_final(&h, hex, err);
    gd_sha256_fini(&h);
    return rc;
}

/* The matrix answer as compact text with a newline, NULL when out of memory. */
static char *
matrix_text(json_t *answer, size_t *len)
{
    char *text = json_dumps(answer, JSON_COMPACT | JSON_PRESERVE_ORDER);
    if (text == NULL)
        return NULL;
    size_t n = strlen(text);
    char *nl = realloc(text, n + 2);
    if (nl == NULL) {
        free(text);
        return NULL;
    }
    memcpy(nl + n, "\n", 2);
    *len = n + 1;
    return nl;
}

/* One cell: a against b summarized by the last layer; NULL (pending) when compute is 0 and it
 * is not cached. */
static int
matrix_cell(struct srv_req *req, const char *a, const char *b, int compute, json_t **out)
{
    struct srv_diff_summary sum;
    if (strcmp(a, b) == 0) {
        /* A run against itself: bitwise equal, nothing to compute. */
        memset(&sum, 0, sizeof sum);
        sum.layer_found = 1;
        snprintf(sum.verdict, sizeof sum.verdict, "identical");
    } else {
        struct srv_diff_key key;
        srv_diff_key_default(&key, a, b);
        if (compute) {
            int rc = srv_diff_summary_ensure(req, &key, NULL, &sum);
            if (rc != 0)
                return rc == SRV_EGONE ? srv_req_fail(req, rc, "a run's tensors are gone") : rc;
        } else {
            struct gd_err err;
            struct srv_db *db = srv_req_db(req);
            if (db == NULL)
                return req->err.code;
            int rc = srv_db_diff_summary(db, &key, NULL, &sum, &err);
            srv_req_db_release(req, db);
            if (rc == SRV_ENOTFOUND) {
                *out = json_null();
                return 0;
            }
            if (rc != 0)
                return srv_req_fail_err(req, &err);
            srv_metrics_add(SRV_M_DIFF_HITS, 1);
        }
    }
    *out = json_pack("{s:s, s:s, s:o, s:o, s:s, s:o}", "a", a, "b", b, "err",
                     number_or_null(sum.layer_found ? sum.err : NAN), "max_abs",
                     number_or_null(sum.layer_found ? sum.max_abs : NAN), "verdict",
                     sum.layer_found ? sum.verdict : "incomparable", "first_divergent",
                     sum.has_first ? json_string(sum.first_divergent) : json_null());
    return 0;
}

/*
 * Marks each device whose output holds NaN or Inf values ("nonfinite": {"nan", "inf"}; null
 * when its output cannot be read): a device beside its bitwise twin differs from it by
 * nothing, and its cell alone would read as equal and finite.
 */
static void
devices_nonfinite(struct srv_req *req, json_t *devices)
{
    size_t i;
    json_t *d;
    json_array_foreach(devices, i, d)
    {
        int64_t nan = 0, inf = 0;
        struct gd_err err;
        const char *run = json_string_value(json_object_get(d, "run"));
        if (srv_compare_output_nonfinite(req->srv->compare, run, &nan, &inf, &err) == 0)
            json_object_set_new(
                d, "nonfinite",
                json_pack("{s:I, s:I}", "nan", (json_int_t)nan, "inf", (json_int_t)inf));
        else
            json_object_set_new(d, "nonfinite", json_null());
    }
}

/*
 * GET .../matrix[?compute=none][&row=I]. The whole matrix (no row, every cell cached or
 * computed now) is kept in the matrix cache, and a later load with the same devices and runs
 * is served from it. compute=none answers at once with the cells not cached yet as null and
 * "pending" their count; row=I computes and answers row I only: a client shows the cached
 * cells, then fills the rest row by row, with progress.
 */
int
srv_models_matrix(struct srv_req *req)
{
    static const char *const known[] = {"model", "compute", "row", NULL};
    const char *model = NULL;
    if (srv_req_query_check(req, known) != 0 || (model = model_of(req)) == NULL)
        return req->err.code;
    const char *compute_text = srv_req_query(req, "compute"), *row_text = srv_req_query(req, "row");
    if (compute_text != NULL && strcmp(compute_text, "none") != 0 &&
        strcmp(compute_text, "all") != 0)
        return srv_req_fail(req, SRV_EBADREQ, "compute: all (the default) or none");
    int compute = compute_text == NULL || strcmp(compute_text, "all") == 0;
    int64_t row = -1;
    if (row_text != NULL && srv_parse_int(row_text, 0, 100000, &row) != 0)
        return srv_req_fail(req, SRV_EBADREQ, "row: a row index from 0");
    double t0 = srv_clock();
    struct srv_db *db = srv_req_db(req);
    if (db == NULL)
        return req->err.code;
    json_t *devices = NULL;
    char signature[GD_SHA256_HEX_LEN + 1];
    char *text = NULL;
    size_t len = 0;
    struct gd_err err;
    int rc = srv_db_model_devices(db, model, &devices, &err);
    if (rc == 0)
        rc = matrix_signature(devices, signature, &err);
    int hit = 0;
    if (rc == 0 && row < 0) {
        rc = srv_db_matrix_get(db, model, signature, &text, &len, &err);
        hit = rc == 0;
        if (rc == SRV_ENOTFOUND)
            rc = 0;
    }
    srv_req_db_release(req, db);
    if (rc != 0) {
        json_decref(devices);
        return srv_req_fail_err(req, &err);
    }
    if (hit) {
        json_decref(devices);
        rc = srv_reply_json_text(req, 200, text, len);
        if (rc == 0)
            MHD_add_response_header(req->resp, "X-Cache", "hit");
        return rc;
    }
    size_t n = json_array_size(devices);
    if (row >= (int64_t)n) {
        json_decref(devices);
        return srv_req_fail(req, SRV_EBADREQ, "row: %lld is past the last of %zu devices",
                            (long long)row, n);
    }
    if (row < 0) {
        /* web: each device's NaN and Inf outputs, read on the compare pool. */
        if (!req->on_pool) {
            json_decref(devices);
            return SRV_EDEFER;
        }
        devices_nonfinite(req, devices);
    }
    json_t *cells = json_array();
    int64_t pending = 0;
    size_t from = row < 0 ? 0 : (size_t)row, to = row < 0 ? n : (size_t)row + 1;
    for (size_t i = from; rc == 0 && i < to; i++) {
        json_t *cells_row = json_array();
        json_array_append_new(cells, cells_row);
        const char *a = json_string_value(json_object_get(json_array_get(devices, i), "run"));
        for (size_t j = 0; rc == 0 && j < n; j++) {
            const char *b = json_string_value(json_object_get(json_array_get(devices, j), "run"));
            json_t *cell = NULL;
            rc = matrix_cell(req, a, b, compute || row >= 0, &cell);
            if (rc == 0) {
                pending += json_is_null(cell);
                json_array_append_new(cells_row, cell);
            }
        }
    }
    if (rc != 0) {
        json_decref(devices);
        json_decref(cells);
        return rc;
    }
    json_t *answer = json_pack("{s:s, s:o, s:o, s:I}", "model", model, "devices", devices, "cells",
                               cells, "pending", (json_int_t)pending);
    if (row >= 0)
        json_object_set_new(answer, "row", json_integer(row));
    text = answer != NULL ? matrix_text(answer, &len) : NULL;
    json_decref(answer);
    if (text == NULL)
        return srv_req_fail(req, GD_ENOMEM, "out of memory");
    if (row < 0 && pending == 0) {
        /* Complete: kept for the next load. A failure to keep it costs only that. */
        db = srv_req_db(req);
        if (db == NULL) {
            free(text);
            return req->err.code;
        }
        if (srv_db_matrix_put(db, model, signature, (int)n, text, srv_clock() - t0, srv_now(),
                              &err) != 0)
            SRV_LOG(GD_LOG_WARN, req, "matrix of %s not cached: %s", model, err.msg);
        srv_req_db_release(req, db);
    }
    rc = srv_reply_json_text(req, 200, text, len);
    if (rc == 0 && row < 0)
        MHD_add_response_header(req->resp, "X-Cache", "miss");
    return rc;
}

/* The env values history marks changes of; null when the run does not record them. */
static json_t *
history_env(json_t *env)
{
    static const char *const keys[] = {"driver", "cuda_runtime", "cudnn", "cublas"};
    json_t *out = json_object();
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
        json_t *v = json_object_get(env, keys[i]);
        json_object_set_new(out, keys[i], json_is_string(v) ? json_incref(v) : json_null());
    }
    return out;
}

int
srv_models_history(struct srv_req *req)
{
    static const char *const known[] = {"model", "layer", "device", "limit", NULL};
    const char *model = NULL;
    if (srv_req_query_check(req, known) != 0 || (model = model_of(req)) == NULL)
        return req->err.code;
    const char *layer = srv_req_query(req, "layer"), *device = srv_req_query(req, "device");
    const char *limit_text = srv_req_query(req, "limit");
    int64_t limit = HISTORY_LIMIT;
    if (layer == NULL)
        return srv_req_fail(req, SRV_EBADREQ, "layer: the name of a layer is required");
    if (!srv_is_name(layer, 200, SRV_LAYER_NAME_CHARS))
        return srv_req_fail(req, SRV_EBADREQ,
                            "layer: a layer name is 1 to 200 of A-Z a-z 0-9 ._:/-+@#[]");
    if (device != NULL && (device[0] == '\0' || strlen(device) > DEVICE_KEY_MAX))
        return srv_req_fail(req, SRV_EBADREQ, "device: a device key of 1 to %d bytes",
                            DEVICE_KEY_MAX);
    if (limit_text != NULL && srv_parse_int(limit_text, 1, HISTORY_LIMIT_MAX, &limit) != 0)
        return srv_req_fail(req, SRV_EBADREQ, "limit: an integer from 1 to %d", HISTORY_LIMIT_MAX);

    struct srv_db *db = srv_req_db(req);
    if (db == NULL)
        return req->err.code;
    char baseline[40];
    int found = 0;
    json_t *runs = NULL;
    struct gd_err err;
    int rc = srv_db_model_baseline(db, model, baseline, &err);
    if (rc == 0 && baseline[0] == '\0')
        rc = gd_err_set(&err, SRV_ECONFLICT,
                        "model %s has no baseline to compare with: pick one with POST "
                        "/api/v1/models/%s/baseline",
                        model, model);
    if (rc == 0)
        rc = srv_db_layer_named(db, baseline, layer, &found, &err);
    if (rc == 0 && !found)
        rc = gd_err_set(&err, SRV_ENOTFOUND, "the baseline run %s of model %s has no layer %s",
                        baseline, model, layer);
    if (rc == 0)
        rc = srv_db_model_history_runs(db, model, device, limit, &runs, &err);
    srv_req_db_release(req, db);
    if (rc != 0)
        return srv_req_fail_err(req, &err);

    json_t *series = json_array(), *points = NULL;
    const char *series_device = NULL;
    size_t i;
    json_t *run;
    json_array_foreach(runs, i, run)
    {
        const char *dev = json_string_value(json_object_get(run, "device"));
        const char *id = json_string_value(json_object_get(run, "run"));
        struct srv_diff_summary sum;
        if (strcmp(id, baseline) == 0) {
            memset(&sum, 0, sizeof sum);
            sum.layer_found = 1;
            snprintf(sum.verdict, sizeof sum.verdict, "identical");
        } else {
            struct srv_diff_key key;
            srv_diff_key_default(&key, id, baseline);
            rc = srv_diff_summary_ensure(req, &key, layer, &sum);
            if (rc == SRV_EGONE) {
                /* Never compared before retention dropped its tensors: left out. */
                rc = 0;
                continue;
            }
            if (rc != 0)
                break;
        }
        if (series_device == NULL || strcmp(series_device, dev) != 0) {
            points = json_array();
            json_array_append_new(series, json_pack("{s:s, s:o}", "device", dev, "points", points));
            series_device = dev;
        }
        json_array_append_new(points,
                              json_pack("{s:s, s:O, s:o, s:o, s:s, s:o}", "run", id, "created_at",
                                        json_object_get(run, "created_at"), "err",
                                        number_or_null(sum.layer_found ? sum.err : NAN), "max_abs",
                                        number_or_null(sum.layer_found ? sum.max_abs : NAN),
                                        "verdict", sum.layer_found ? sum.verdict : "incomparable",
                                        "env", history_env(json_object_get(run, "env"))));
    }
    json_decref(runs);
    if (rc != 0) {
        json_decref(series);
        return rc;
    }
    return srv_reply_json(req, 200,
                          json_pack("{s:s, s:s, s:s, s:o}", "model", model, "baseline", baseline,
                                    "layer", layer, "series", series));
}
