/*
 * sweep_doc.c: checks an uploaded sweep document. Only what the daemon files and serves is
 * held to types and ranges (messages name the field by its path); the rest is stored as it
 * came, in canonical form. The summary and table rows are copies of checked fields only, so
 * a client reading them gets numbers where numbers are promised, whatever was sent.
 */
#include <stdlib.h>
#include <string.h>

#include "gpudiff/hash.h"
#include "server.h"
#include "sweep_doc.h"

#define MAX_NAME 200  /* a setting's name */
#define MAX_TEXT 4096 /* causes, errors */

static int
bad(struct gd_err *err, const char *path, const char *what)
{
    return gd_err_set(err, SRV_EBADREQ, "%s: %s", path, what);
}

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
    if (!srv_is_text(json_string_value(v), max) && json_string_length(v) > 0)
        return bad(err, p, "must be UTF-8 text without control characters");
    *out = json_string_value(v);
    return 0;
}

/* A run id field: absent or null gives NULL. */
static int
get_run(json_t *obj, const char *path, const char **out, struct gd_err *err)
{
    json_t *v = json_object_get(obj, "run");
    *out = NULL;
    if (v == NULL || json_is_null(v))
        return 0;
    char p[160];
    snprintf(p, sizeof p, "%s.run", path);
    if (!json_is_string(v) || !srv_is_uuid(json_string_value(v)))
        return bad(err, p, "must be null or a run id (a lowercase UUID version 4)");
    *out = json_string_value(v);
    return 0;
}

/* Copies obj[key] into row[as] when it is a number (else null). */
static void
copy_num(json_t *row, const char *as, json_t *obj, const char *key)
{
    json_t *v = json_object_get(obj, key);
    json_object_set_new(row, as, json_is_number(v) ? json_real(json_number_value(v)) : json_null());
}

static void
copy_bool(json_t *row, const char *as, json_t *obj, const char *key)
{
    json_t *v = json_object_get(obj, key);
    json_object_set_new(row, as, json_is_boolean(v) ? json_boolean(json_is_true(v)) : json_null());
}

static void
copy_str(json_t *row, const char *as, json_t *obj, const char *key)
{
    json_t *v = json_object_get(obj, key);
    const char *s = json_string_value(v);
    json_object_set_new(row, as,
                        s != NULL && strlen(s) <= MAX_TEXT && srv_is_text(s, MAX_TEXT)
                            ? json_string(s)
                            : json_null());
}

/* A comparison's output difference: {max_abs, max_ulp, identical, first_divergent}. */
static json_t *
vs_row(json_t *v)
{
    json_t *row = json_object();
    json_t *out = json_object_get(v, "output");
    copy_bool(row, "compared", v, "compared");
    copy_num(row, "max_abs", out, "max_abs");
    copy_num(row, "max_ulp", out, "max_ulp");
    copy_bool(row, "identical", v, "identical");
    copy_str(row, "first_divergent", json_object_get(v, "first_divergent"), "layer");
    return row;
}

/* The table row of a setting: what a table and a cost-versus-error plot need. */
static json_t *
table_row(json_t *s)
{
    json_t *row = json_object(), *time = json_object_get(s, "time");
    copy_str(row, "setting", s, "name");
    copy_str(row, "status", s, "status");
    copy_str(row, "run", s, "run");
    copy_bool(row, "strict", s, "strict");
    copy_num(row, "forward_ms", time, "forward_ms");
    copy_num(row, "end_to_end_ms", time, "end_to_end_ms");
    copy_num(row, "x_fastest", time, "x_fastest");
    json_object_set_new(row, "vs_float64", vs_row(json_object_get(s, "vs_float64")));
    json_object_set_new(row, "vs_strict", vs_row(json_object_get(s, "vs_strict")));
    copy_bool(row, "deterministic", s, "deterministic");
    copy_bool(row, "batch_invariant", s, "batch_invariant");
    copy_str(row, "cause", s, "cause");
    copy_str(row, "error", s, "error");
    return row;
}

static json_t *
pick_row(json_t *p)
{
    if (!json_is_object(p))
        return json_null();
    json_t *row = json_object();
    copy_str(row, "setting", p, "setting");
    copy_num(row, "forward_ms", p, "forward_ms");
    copy_num(row, "x_fastest", p, "x_fastest");
    return row;
}

static int
check_settings(struct srv_sweep_doc *doc, json_t *settings, json_t *table, struct gd_err *err)
{
    size_t n = json_array_size(settings), i;
    if (!json_is_array(settings) || n == 0)
        return bad(err, "settings", "must be an array of at least one setting");
    if (n > SRV_SWEEP_MAX_SETTINGS)
        return gd_err_set(err, SRV_EBADREQ, "settings: more than %d", SRV_SWEEP_MAX_SETTINGS);
    json_t *s;
    json_array_foreach(settings, i, s) {
        char path[64];
        snprintf(path, sizeof path, "settings[%zu]", i);
        if (!json_is_object(s))
            return bad(err, path, "must be an object");
        const char *name, *status, *run;
        int rc = get_string(s, "name", 1, MAX_NAME, path, &name, err);
        if (rc == 0)
            rc = get_string(s, "status", 1, 16, path, &status, err);
        if (rc == 0)
            rc = get_run(s, path, &run, err);
        if (rc != 0)
            return rc;
        if (name[0] == '\0')
            return gd_err_set(err, SRV_EBADREQ, "%s.name: must not be empty", path);
        if (strcmp(status, "ok") != 0 && strcmp(status, "failed") != 0 &&
            strcmp(status, "not run") != 0)
            return gd_err_set(err, SRV_EBADREQ, "%s.status: must be ok, failed or not run", path);
        if (strcmp(status, "ok") == 0 && run == NULL)
            return gd_err_set(err, SRV_EBADREQ, "%s.run: a setting that ran names its run", path);
        json_t *time = json_object_get(s, "time");
        if (time != NULL && !json_is_object(time))
            return gd_err_set(err, SRV_EBADREQ, "%s.time: must be an object", path);
        json_t *ms = json_object_get(time, "forward_ms");
        if (ms != NULL && !json_is_null(ms) && (!json_is_number(ms) || json_number_value(ms) < 0))
            return gd_err_set(err, SRV_EBADREQ, "%s.time.forward_ms: must be a number >= 0", path);
        for (size_t j = 0; j < i; j++) {
            const char *other =
                json_string_value(json_object_get(json_array_get(settings, j), "name"));
            if (other != NULL && strcmp(other, name) == 0)
                return gd_err_set(err, SRV_EBADREQ, "%s.name: %s is given twice", path, name);
        }
        if (run != NULL) {
            for (int k = 0; k < doc->n_runs; k++)
                if (strcmp(doc->runs[k].run_id, run) == 0)
                    return gd_err_set(err, SRV_EBADREQ, "%s.run: run %s is named twice", path, run);
            doc->runs[doc->n_runs++] = (struct srv_sweep_run){run, "setting", name};
        }
        json_array_append_new(table, table_row(s));
    }
    doc->n_settings = (int)n;
    return 0;
}

int
srv_sweep_doc_parse(const char *text, size_t len, struct srv_sweep_doc *out, struct gd_err *err)
{
    struct srv_sweep_doc doc = {0};
    json_error_t jerr;
    json_t *table = NULL, *summary = NULL;
    char *canon = NULL;
    int rc = 0;
    doc.root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &jerr);
    if (doc.root == NULL)
        return gd_err_set(err, SRV_EBADJSON, "not JSON: %s (line %d, column %d)", jerr.text,
                          jerr.line, jerr.column);
    json_t *root = doc.root;
    const char *format;
    if (!json_is_object(root)) {
        rc = bad(err, "(document)", "must be an object");
        goto done;
    }
    if ((rc = get_string(root, "format", 1, 32, "", &format, err)) != 0)
        goto done;
    if (strcmp(format, "gpudiff-sweep") != 0) {
        rc = bad(err, "format", "must be \"gpudiff-sweep\"");
        goto done;
    }
    json_t *version = json_object_get(root, "version");
    if (!json_is_integer(version) || json_integer_value(version) != 1) {
        rc = bad(err, "version", "must be 1");
        goto done;
    }
    if ((rc = get_string(root, "id", 1, 36, "", &doc.id, err)) != 0)
        goto done;
    if (!srv_is_uuid(doc.id)) {
        rc = bad(err, "id", "must be a lowercase UUID version 4");
        goto done;
    }
    if ((rc = get_string(root, "created_at", 1, 64, "", &doc.created_at, err)) != 0)
        goto done;
    if (srv_time_parse(doc.created_at, 0, &doc.created_ts) != 0) {
        rc = bad(err, "created_at", "must be an RFC 3339 date-time");
        goto done;
    }
    json_t *model = json_object_get(root, "model");
    if (!json_is_object(model)) {
        rc = bad(err, "model", "must be an object with a name");
        goto done;
    }
    if ((rc = get_string(model, "name", 1, SRV_MODEL_NAME_MAX, "model", &doc.model, err)) != 0)
        goto done;
    if (!srv_is_text(doc.model, SRV_MODEL_NAME_MAX)) {
        rc = bad(err, "model.name", SRV_MODEL_NAME_RULE);
        goto done;
    }
    if ((rc = get_string(root, "backend", 1, 64, "", &doc.backend, err)) != 0)
        goto done;
    if (!srv_is_name(doc.backend, 64, "._-")) {
        rc = bad(err, "backend", "1 to 64 of A-Z a-z 0-9 ._-");
        goto done;
    }
    json_t *env = json_object_get(root, "env");
    if (env != NULL && !json_is_object(env)) {
        rc = bad(err, "env", "must be an object");
        goto done;
    }
    if ((rc = get_string(env, "gpu_name", 0, 1024, "env", &doc.gpu, err)) != 0)
        goto done;
    if (doc.gpu == NULL)
        doc.gpu = "";
    json_t *settings = json_object_get(root, "settings");
    doc.runs = calloc(json_array_size(settings) + 1, sizeof *doc.runs);
    table = json_array();
    if (doc.runs == NULL || table == NULL) {
        rc = gd_err_set(err, GD_ENOMEM, "out of memory");
        goto done;
    }
    json_t *f64 = json_object_get(root, "float64");
    if (f64 != NULL && !json_is_object(f64)) {
        rc = bad(err, "float64", "must be an object");
        goto done;
    }
    const char *f64_run = NULL;
    if (f64 != NULL && (rc = get_run(f64, "float64", &f64_run, err)) != 0)
        goto done;
    if (f64_run != NULL)
        doc.runs[doc.n_runs++] = (struct srv_sweep_run){f64_run, "float64", ""};
    if ((rc = check_settings(&doc, settings, table, err)) != 0)
        goto done;
    json_t *ans = json_object_get(root, "answers");
    summary = json_pack(
        "{s:s, s:s, s:s, s:s, s:i, s:o, s:o, s:o}", "id", doc.id, "model", doc.model, "backend",
        doc.backend, "created_at", doc.created_at, "settings", doc.n_settings, "fastest",
        pick_row(json_object_get(ans, "fastest")), "cheapest_deterministic",
        pick_row(json_object_get(ans, "cheapest_deterministic")), "cheapest_batch_invariant",
        pick_row(json_object_get(ans, "cheapest_batch_invariant")));
    if (summary != NULL)
        json_object_set_new(summary, "gpu", doc.gpu[0] ? json_string(doc.gpu) : json_null());
    canon = json_dumps(root, JSON_COMPACT | JSON_SORT_KEYS);
    doc.summary = summary ? json_dumps(summary, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
    doc.table = json_dumps(table, JSON_COMPACT | JSON_PRESERVE_ORDER);
    if (canon == NULL || doc.summary == NULL || doc.table == NULL) {
        rc = gd_err_set(err, GD_ENOMEM, "out of memory");
        goto done;
    }
    rc = gd_sha256_hex(canon, strlen(canon), doc.content_sha256, err);
    if (rc == 0) {
        doc.doc = canon;
        canon = NULL;
    }
done:
    free(canon);
    json_decref(table);
    json_decref(summary);
    if (rc != 0) {
        srv_sweep_doc_fini(&doc);
        return rc;
    }
    *out = doc;
    return 0;
}

void
srv_sweep_doc_fini(struct srv_sweep_doc *doc)
{
    json_decref(doc->root);
    free(doc->doc);
    free(doc->summary);
    free(doc->table);
    free(doc->runs);
    memset(doc, 0, sizeof *doc);
}
