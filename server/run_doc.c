/*
 * run_doc.c: checks an uploaded run.json field by field. Messages name the field by its path
 * ("layers[3].shape[1]") so a client can fix its document without reading the server's code.
 */
#include <stdlib.h>
#include <string.h>

#include "gpudiff/fingerprint.h"
#include "gpudiff/noise.h"
#include "gpudiff/hash.h"
#include "compare.h"
#include "run_doc.h"
#include "server.h"

#define MAX_TEXT     1024 /* free-text fields: env values, labels, paths */
#define MAX_MAP_KEYS 256  /* entries of env, knobs, labels */
/*
 * Top-level keys run.schema.json does not name are kept (a newer agent may send fields
 * this daemon does not know yet), but only a few and small ones: they are stored with the
 * run and served back with it.
 */
#define MAX_UNKNOWN_KEYS  16
#define MAX_UNKNOWN_BYTES (64 * 1024) /* each, as compact JSON */

static const char *const known_keys[] = {
    "format",  "version", "id",    "created_at", "duration_us", "model", "input",
    "backend", "env",     "knobs", "labels",     "layers",
    "capture", "rerun", /* fp */
    "noise_probes",
    NULL};

static int
bad(struct gd_err *err, const char *path, const char *what)
{
    return gd_err_set(err, SRV_EBADREQ, "%s: %s", path, what);
}

/* A string field: *out NULL when absent and optional. */
static int
get_string(json_t *obj, const char *key, int required, size_t max, const char *path,
           const char **out, struct gd_err *err)
{
    json_t *v = json_object_get(obj, key);
    char p[160];
    snprintf(p, sizeof p, "%s%s%s", path, path[0] ? "." : "", key);
    *out = NULL;
    if (v == NULL)
        return required ? bad(err, p, "is required") : 0;
    if (!json_is_string(v))
        return bad(err, p, "must be a string");
    if (json_string_length(v) > max)
        return gd_err_set(err, SRV_EBADREQ, "%s: longer than %zu bytes", p, max);
    *out = json_string_value(v);
    return 0;
}

static int
check_number(json_t *obj, const char *key, int allow_null, const char *path, struct gd_err *err)
{
    json_t *v = json_object_get(obj, key);
    if (v == NULL || json_is_number(v) || (allow_null && json_is_null(v)))
        return 0;
    char p[160];
    snprintf(p, sizeof p, "%s%s%s", path, path[0] ? "." : "", key);
    return bad(err, p, allow_null ? "must be a number or null" : "must be a number");
}

/*
 * An object whose values are all strings (env, labels); in env, "labels" is itself such an
 * object (jobsrv: the operator's labels of `gpudiff-agent serve --label`, part of the device
 * key, device.c).
 */
static int
check_string_map(json_t *obj, const char *key, const char *path, struct gd_err *err)
{
    json_t *m = json_object_get(obj, key);
    if (m == NULL)
        return 0;
    char p[64];
    snprintf(p, sizeof p, "%.20s%.20s", path, key);
    if (!json_is_object(m))
        return bad(err, p, "must be an object");
    if (json_object_size(m) > MAX_MAP_KEYS)
        return gd_err_set(err, SRV_EBADREQ, "%s: more than %d entries", p, MAX_MAP_KEYS);
    const char *k;
    json_t *v;
    json_object_foreach(m, k, v)
    {
        char q[160];
        snprintf(q, sizeof q, "%s.%.64s", p, k);
        if (strlen(k) > 128)
            return bad(err, p, "a key is longer than 128 bytes");
        if (json_is_object(v) && strcmp(key, "env") == 0 && strcmp(k, "labels") == 0 &&
            path[0] == '\0') {
            int rc = check_string_map(m, "labels", "env.", err);
            if (rc != 0)
                return rc;
            continue;
        }
        if (!json_is_string(v))
            return bad(err, q, "must be a string");
        if (json_string_length(v) > MAX_TEXT)
            return gd_err_set(err, SRV_EBADREQ, "%s: longer than %d bytes", q, MAX_TEXT);
    }
    return 0;
}

static int
check_model(json_t *root, struct srv_run_doc *doc, struct gd_err *err)
{
    json_t *model = json_object_get(root, "model");
    if (model == NULL)
        return bad(err, "model", "is required");
    if (!json_is_object(model))
        return bad(err, "model", "must be an object");
    const char *file;
    int rc = get_string(model, "name", 1, 128, "model", &doc->model_name, err);
    if (rc == 0 && !srv_is_text(doc->model_name, SRV_MODEL_NAME_MAX))
        rc = bad(err, "model.name", "must be " SRV_MODEL_NAME_RULE);
    /* null: a bundle made from another framework's dumps has no model file to hash. */
    json_t *sha = json_object_get(model, "sha256");
    if (rc == 0 && sha == NULL)
        rc = bad(err, "model.sha256", "is required (null when there is no model file)");
    if (rc == 0 && json_is_null(sha))
        doc->model_sha256 = "";
    else if (rc == 0 && (!json_is_string(sha) || !srv_is_sha256(json_string_value(sha))))
        rc = bad(err, "model.sha256", "must be 64 lowercase hex digits or null");
    else if (rc == 0)
        doc->model_sha256 = json_string_value(sha);
    if (rc == 0)
        rc = get_string(model, "file", 0, MAX_TEXT, "model", &file, err);
    return rc;
}

static int
check_input(json_t *root, struct gd_err *err)
{
    json_t *in = json_object_get(root, "input");
    if (in == NULL)
        return 0;
    if (!json_is_object(in))
        return bad(err, "input", "must be an object");
    const char *s;
    int rc = get_string(in, "file", 0, MAX_TEXT, "input", &s, err);
    if (rc == 0 && !json_is_null(json_object_get(in, "key")))
        rc = get_string(in, "key", 0, MAX_TEXT, "input", &s, err);
    if (rc == 0)
        rc = get_string(in, "sha256", 0, 64, "input", &s, err);
    if (rc == 0 && s != NULL && !srv_is_sha256(s))
        rc = bad(err, "input.sha256", "must be 64 lowercase hex digits");
    if (rc == 0)
        rc = get_string(in, "dtype", 0, 32, "input", &s, err);
    json_t *shape = json_object_get(in, "shape");
    if (rc == 0 && shape != NULL) {
        if (!json_is_array(shape) || json_array_size(shape) > GD_MAX_DIMS)
            return bad(err, "input.shape", "must be an array of at most 8 integers");
        size_t i;
        json_t *d;
        json_array_foreach(shape, i, d)
        {
            if (!json_is_integer(d))
                return bad(err, "input.shape", "must be an array of integers");
        }
    }
    return rc;
}

static int
check_knobs(json_t *root, struct gd_err *err)
{
    json_t *knobs = json_object_get(root, "knobs");
    if (knobs == NULL)
        return 0;
    if (!json_is_object(knobs))
        return bad(err, "knobs", "must be an object");
    if (json_object_size(knobs) > MAX_MAP_KEYS)
        return bad(err, "knobs", "has too many entries");
    const char *s;
    int rc = get_string(knobs, "emulate", 0, 128, "knobs", &s, err);
    json_t *batch = json_object_get(knobs, "batch");
    if (rc == 0 && batch != NULL && !json_is_null(batch) &&
        !(json_is_integer(batch) && json_integer_value(batch) > 0))
        rc = bad(err, "knobs.batch", "must be a positive integer or null");
    return rc;
}

/* layers/NNNN-name.npy: run.schema.json's pattern for layers[].file. */
static int
is_layer_file(const char *s)
{
    if (strncmp(s, "layers/", 7) != 0)
        return 0;
    const char *p = s + 7;
    size_t n = strlen(p);
    if (n < 5 || strcmp(p + n - 4, ".npy") != 0 || p[0] == '.')
        return 0;
    for (size_t i = 0; i < n - 4; i++)
        if (!srv_is_name((char[]){p[i], '\0'}, 1, "._-"))
            return 0;
    return 1;
}

static int
check_stats(json_t *rec, const char *path, struct gd_err *err)
{
    json_t *stats = json_object_get(rec, "stats");
    if (stats == NULL || json_is_null(stats))
        return 0;
    char p[96];
    snprintf(p, sizeof p, "%s.stats", path);
    if (!json_is_object(stats))
        return bad(err, p, "must be an object");
    static const char *const numbers[] = {"min", "max", "mean"};
    for (int i = 0; i < 3; i++) {
        int rc = check_number(stats, numbers[i], 1, p, err);
        if (rc != 0)
            return rc;
    }
    static const char *const counts[] = {"nan", "inf"};
    for (int i = 0; i < 2; i++) {
        json_t *v = json_object_get(stats, counts[i]);
        if (v != NULL && !(json_is_integer(v) && json_integer_value(v) >= 0)) {
            char q[128];
            snprintf(q, sizeof q, "%s.%s", p, counts[i]);
            return bad(err, q, "must be an integer >= 0");
        }
    }
    return 0;
}

/* fp: a "fingerprint" record (gd_fingerprint_from_json) must fit the layer's dtype and shape. */
static int
check_fingerprint(json_t *rec, const struct srv_layer_doc *l, const char *path, struct gd_err *err)
{
    json_t *j = json_object_get(rec, "fingerprint");
    if (j == NULL)
        return 0;
    struct gd_fingerprint *f = malloc(sizeof *f);
    if (f == NULL)
        return gd_err_set(err, GD_ENOMEM, "out of memory");
    struct gd_err e;
    int rc = gd_fingerprint_from_json(j, l->dtype, l->ndim, l->shape, f, &e);
    free(f);
    return rc == 0 ? 0 : gd_err_set(err, SRV_EBADREQ, "%s.fingerprint: %s", path, e.msg);
}

/* A "noise" record (gpudiff/noise.h): the comparison reads it as the layer's float32 noise. */
static int
check_noise(json_t *rec, const char *path, struct gd_err *err)
{
    json_t *j = json_object_get(rec, "noise");
    if (j == NULL)
        return 0;
    struct gd_noise_probe probe;
    struct gd_err e;
    int rc = gd_noise_probe_from_json(j, &probe, &e);
    return rc == 0 ? 0 : gd_err_set(err, SRV_EBADREQ, "%s.noise: %s", path, e.msg);
}

static int
check_layer(json_t *rec, int i, uint64_t max_bytes, struct srv_layer_doc *l, struct gd_err *err)
{
    char path[48];
    snprintf(path, sizeof path, "layers[%d]", i);
    if (!json_is_object(rec))
        return bad(err, path, "must be an object");
    char p[96];
    json_t *index = json_object_get(rec, "index");
    snprintf(p, sizeof p, "%s.index", path);
    if (index == NULL)
        return bad(err, p, "is required");
    if (!json_is_integer(index) || json_integer_value(index) != i)
        return gd_err_set(err, SRV_EBADREQ, "%s: must be the integer %d, its position", p, i);
    l->index = i;

    const char *s;
    int rc = get_string(rec, "name", 1, 200, path, &l->name, err);
    if (rc == 0 && !srv_is_name(l->name, 200, SRV_LAYER_NAME_CHARS)) {
        snprintf(p, sizeof p, "%s.name", path);
        rc = bad(err, p, "must be 1 to 200 of A-Z a-z 0-9 and ._:/-+@#[]");
    }
    if (rc == 0)
        rc = get_string(rec, "node", 0, 200, path, &s, err);
    if (rc == 0)
        rc = get_string(rec, "op", 0, 64, path, &l->op, err);
    if (rc == 0 && l->op != NULL && l->op[0] != '\0' && !srv_is_name(l->op, 64, "._:-")) {
        snprintf(p, sizeof p, "%s.op", path);
        rc = bad(err, p, "must be empty or 1 to 64 of A-Z a-z 0-9 and ._:-");
    }
    if (l->op == NULL)
        l->op = "";
    const char *dtype = NULL;
    if (rc == 0)
        rc = get_string(rec, "dtype", 1, 32, path, &dtype, err);
    if (rc != 0)
        return rc;
    snprintf(p, sizeof p, "%s.dtype", path);
    if (gd_dtype_from_name(dtype, &l->dtype) != 0)
        return gd_err_set(err, SRV_EBADREQ, "%s: \"%.32s\" is not a dtype gpudiff knows", p, dtype);
    if (l->dtype == GD_BF16)
        return bad(err, p, "bfloat16 has no .npy form, so its data could not be uploaded");

    json_t *shape = json_object_get(rec, "shape");
    snprintf(p, sizeof p, "%s.shape", path);
    if (shape == NULL)
        return bad(err, p, "is required");
    if (!json_is_array(shape) || json_array_size(shape) > GD_MAX_DIMS)
        return bad(err, p, "must be an array of at most 8 integers");
    l->ndim = (int)json_array_size(shape);
    for (int d = 0; d < l->ndim; d++) {
        json_t *v = json_array_get(shape, (size_t)d);
        if (!json_is_integer(v) || json_integer_value(v) < 0) {
            snprintf(p, sizeof p, "%s.shape[%d]", path, d);
            return bad(err, p, "must be an integer >= 0");
        }
        l->shape[d] = json_integer_value(v);
    }
    struct gd_err shape_err;
    if (gd_shape_check(l->ndim, l->shape, gd_dtype_size(l->dtype), &shape_err) != 0)
        return gd_err_set(err, SRV_EBADREQ, "%s: %s", p, shape_err.msg);
    uint64_t numel = 1;
    for (int d = 0; d < l->ndim; d++)
        numel *= (uint64_t)l->shape[d];
    l->raw_size = numel * gd_dtype_size(l->dtype);
    /* The .npy header takes at most 256 bytes more (gd_npy_header_write). */
    if (l->raw_size > max_bytes || max_bytes - l->raw_size < 256)
        return gd_err_set(err, GD_ERANGE,
                          "%s: %llu bytes of data, more than --max-body (%llu) lets through", p,
                          (unsigned long long)l->raw_size, (unsigned long long)max_bytes);

    /* fp: a layer captured as a fingerprint has neither file nor sha256 until it is fetched */
    rc = check_fingerprint(rec, l, path, err);
    if (rc == 0)
        rc = check_noise(rec, path, err);
    int fp_only = rc == 0 && json_object_get(rec, "fingerprint") != NULL &&
                  json_object_get(rec, "file") == NULL;
    if (rc == 0 && fp_only) {
        l->sha256 = "";
        if (json_object_get(rec, "sha256") != NULL) {
            snprintf(p, sizeof p, "%s.sha256", path);
            rc = bad(err, p, "must be absent for a layer without a file (a fingerprint)");
        }
    }
    if (rc == 0 && !fp_only)
        rc = get_string(rec, "file", 1, 256, path, &s, err);
    if (rc == 0 && !fp_only && !is_layer_file(s)) {
        snprintf(p, sizeof p, "%s.file", path);
        rc = bad(err, p, "must match layers/[A-Za-z0-9_-][A-Za-z0-9._-]*.npy");
    }
    if (rc == 0 && !fp_only)
        rc = get_string(rec, "sha256", 1, 64, path, &l->sha256, err);
    if (rc == 0 && !fp_only && !srv_is_sha256(l->sha256)) {
        snprintf(p, sizeof p, "%s.sha256", path);
        rc = bad(err, p, "must be 64 lowercase hex digits");
    }
    if (rc == 0)
        rc = check_number(rec, "time_us", 1, path, err);
    if (rc == 0)
        rc = get_string(rec, "algo", 0, 128, path, &s, err);
    if (rc == 0)
        rc = get_string(rec, "math", 0, 32, path, &s, err);
    if (rc != 0)
        return rc;
    json_t *red = json_object_get(rec, "reduction_len");
    l->reduction_len = 0;
    if (red != NULL) {
        if (!json_is_integer(red) || json_integer_value(red) < 1) {
            snprintf(p, sizeof p, "%s.reduction_len", path);
            return bad(err, p, "must be an integer >= 1");
        }
        l->reduction_len = json_integer_value(red);
    }
    json_t *disc = json_object_get(rec, "discontinuous");
    l->discontinuous = -1;
    if (disc != NULL) {
        if (!json_is_boolean(disc)) {
            snprintf(p, sizeof p, "%s.discontinuous", path);
            return bad(err, p, "must be true or false");
        }
        l->discontinuous = json_is_true(disc);
    }
    return check_stats(rec, path, err);
}

/* Counts json_dumpb's output without keeping it. */
static int
count_bytes(const char *buffer, size_t size, void *data)
{
    (void)buffer;
    size_t *n = data;
    *n += size;
    return *n > MAX_UNKNOWN_BYTES ? -1 : 0;
}

static int
check_unknown_keys(json_t *root, struct gd_err *err)
{
    int n_unknown = 0;
    const char *k;
    json_t *v;
    json_object_foreach(root, k, v)
    {
        const char *const *known = known_keys;
        while (*known != NULL && strcmp(*known, k) != 0)
            known++;
        if (*known != NULL)
            continue;
        char p[80];
        snprintf(p, sizeof p, "%.64s", k);
        if (++n_unknown > MAX_UNKNOWN_KEYS)
            return gd_err_set(err, SRV_EBADREQ,
                              "more than %d top-level keys that run.schema.json does not name "
                              "(\"%s\" is one)",
                              MAX_UNKNOWN_KEYS, p);
        size_t n = 0;
        if (json_dump_callback(v, count_bytes, &n, JSON_COMPACT | JSON_ENCODE_ANY) != 0 ||
            n > MAX_UNKNOWN_BYTES)
            return gd_err_set(err, SRV_EBADREQ,
                              "%s: a key run.schema.json does not name may hold at most %d "
                              "bytes of JSON",
                              p, MAX_UNKNOWN_BYTES);
    }
    return 0;
}

static int
check_top(json_t *root, struct srv_run_doc *doc, struct gd_err *err)
{
    if (!json_is_object(root))
        return bad(err, "(document)", "must be a JSON object");
    json_t *format = json_object_get(root, "format");
    if (!json_is_string(format) || strcmp(json_string_value(format), "gpudiff-run") != 0)
        return bad(err, "format", "must be \"gpudiff-run\"");
    json_t *version = json_object_get(root, "version");
    if (!json_is_integer(version) || json_integer_value(version) != 1)
        return bad(err, "version", "must be 1");
    int rc = get_string(root, "id", 1, 36, "", &doc->id, err);
    if (rc == 0 && !srv_is_uuid(doc->id))
        rc = bad(err, "id", "must be a lowercase UUID version 4");
    if (rc == 0)
        rc = get_string(root, "created_at", 1, 64, "", &doc->created_at, err);
    if (rc == 0 && srv_time_parse(doc->created_at, 0, &doc->created_ts) != 0)
        rc = bad(err, "created_at", "must be an RFC 3339 date-time");
    if (rc == 0)
        rc = check_number(root, "duration_us", 0, "", err);
    if (rc == 0)
        rc = check_model(root, doc, err);
    if (rc == 0)
        rc = check_input(root, err);
    if (rc == 0)
        rc = get_string(root, "backend", 1, 64, "", &doc->backend, err);
    if (rc == 0 && !srv_is_name(doc->backend, 64, "._-"))
        rc = bad(err, "backend", "must be 1 to 64 of A-Z a-z 0-9 and ._-");
    if (rc == 0)
        rc = check_string_map(root, "env", "", err);
    if (rc == 0)
        rc = check_knobs(root, err);
    if (rc == 0)
        rc = check_string_map(root, "labels", "", err);
    if (rc != 0)
        return rc;
    if (rc == 0)
        rc = check_unknown_keys(root, err);
    if (rc != 0)
        return rc;
    json_t *env = json_object_get(root, "env");
    doc->gpu = json_string_value(json_object_get(env, "gpu_name"));
    doc->host = json_string_value(json_object_get(env, "host"));
    if (doc->gpu == NULL)
        doc->gpu = "";
    if (doc->host == NULL)
        doc->host = "";
    return 0;
}

void
srv_run_doc_fini(struct srv_run_doc *doc)
{
    if (doc == NULL)
        return;
    for (int i = 0; i < doc->n_layers; i++) {
        free(doc->layers[i].record);
        free(doc->layers[i].shape_json);
    }
    free(doc->layers);
    free(doc->meta);
    free(doc->device);
    json_decref(doc->root);
    memset(doc, 0, sizeof *doc);
}

int
srv_run_doc_parse(const char *text, size_t len, uint64_t max_layer_bytes, struct srv_run_doc *out,
                  struct gd_err *err)
{
    struct srv_run_doc doc;
    memset(&doc, 0, sizeof doc);
    json_error_t jerr;
    int rc = 0;
    char *canon = NULL;
    json_t *meta = NULL, *names = NULL;
    doc.root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &jerr);
    if (doc.root == NULL) {
        rc = gd_err_set(err, SRV_EBADJSON, "line %d, column %d: %s", jerr.line, jerr.column,
                        jerr.text);
        goto done;
    }
    rc = check_top(doc.root, &doc, err);
    if (rc != 0)
        goto done;
    json_t *layers = json_object_get(doc.root, "layers");
    if (layers == NULL) {
        rc = bad(err, "layers", "is required");
        goto done;
    }
    if (!json_is_array(layers)) {
        rc = bad(err, "layers", "must be an array");
        goto done;
    }
    if (json_array_size(layers) > SRV_RUN_MAX_LAYERS) {
        rc = gd_err_set(err, SRV_EBADREQ, "layers: more than %d", SRV_RUN_MAX_LAYERS);
        goto done;
    }
    doc.n_layers = (int)json_array_size(layers);
    doc.layers = calloc(doc.n_layers > 0 ? (size_t)doc.n_layers : 1, sizeof *doc.layers);
    names = json_object();
    if (doc.layers == NULL || names == NULL) {
        rc = gd_err_set(err, GD_ENOMEM, "out of memory for %d layers", doc.n_layers);
        goto done;
    }
    for (int i = 0; i < doc.n_layers; i++) {
        json_t *rec = json_array_get(layers, (size_t)i);
        struct srv_layer_doc *l = &doc.layers[i];
        rc = check_layer(rec, i, max_layer_bytes, l, err);
        if (rc != 0)
            goto done;
        /* A name is a layer's identity: a diff pairs the layers of two runs by it. */
        json_t *first = json_object_get(names, l->name);
        if (first != NULL) {
            rc = gd_err_set(err, SRV_EBADREQ,
                            "layers[%d].name: \"%.200s\" is the name of layers[%d] already "
                            "(names are unique within a run)",
                            i, l->name, (int)json_integer_value(first));
            goto done;
        }
        if (json_object_set_new(names, l->name, json_integer(i)) != 0) {
            rc = gd_err_set(err, GD_ENOMEM, "out of memory");
            goto done;
        }
        l->record = json_dumps(rec, JSON_COMPACT | JSON_SORT_KEYS);
        l->shape_json = json_dumps(json_object_get(rec, "shape"), JSON_COMPACT);
        if (l->record == NULL || l->shape_json == NULL) {
            rc = gd_err_set(err, GD_ENOMEM, "out of memory");
            goto done;
        }
    }
    /* Canonical form (compact, keys sorted): the same document always hashes the same. */
    canon = json_dumps(doc.root, JSON_COMPACT | JSON_SORT_KEYS);
    meta = json_copy(doc.root);
    if (canon == NULL || meta == NULL) {
        rc = gd_err_set(err, GD_ENOMEM, "out of memory");
        goto done;
    }
    rc = gd_sha256_hex(canon, strlen(canon), doc.content_sha256, err);
    if (rc != 0)
        goto done;
    json_object_del(meta, "layers");
    doc.meta = json_dumps(meta, JSON_COMPACT | JSON_SORT_KEYS);
    struct srv_buf device = {0};
    if (doc.meta == NULL || srv_device_key(doc.root, &device) != 0) {
        srv_buf_fini(&device);
        rc = gd_err_set(err, GD_ENOMEM, "out of memory");
        goto done;
    }
    doc.device = device.data;
done:
    free(canon);
    json_decref(meta);
    json_decref(names);
    if (rc != 0) {
        srv_run_doc_fini(&doc);
        return rc;
    }
    *out = doc;
    return 0;
}
