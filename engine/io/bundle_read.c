/*
 * bundle_read.c: opens a run bundle and loads its layers, checking run.json's structure,
 * that layer files stay inside the bundle, and that each tensor matches its record.
 */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "gpudiff/bundle.h"
#include "gpudiff/hash.h"
#include "gpudiff/noise.h"
#include "gpudiff/io.h"
#include "../core/internal.h"

/* A layer file must be layers/<plain name>.npy: nothing that leaves the bundle. */
static int
safe_layer_path(const char *file)
{
    if (strncmp(file, "layers/", 7) != 0)
        return 0;
    const char *name = file + 7;
    size_t n = strlen(name);
    if (n < 5 || strcmp(name + n - 4, ".npy") != 0 || name[0] == '.')
        return 0;
    for (const char *p = name; *p; p++) {
        char ch = *p;
        int ok = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
                 ch == '.' || ch == '_' || ch == '-';
        if (!ok)
            return 0;
    }
    return 1;
}

static int
read_layer(json_t *rec, size_t i, struct gd_bundle_layer *l, struct gd_err *err)
{
    json_t *idx = json_object_get(rec, "index"), *shape = json_object_get(rec, "shape");
    const char *dtype = json_string_value(json_object_get(rec, "dtype"));
    l->name = json_string_value(json_object_get(rec, "name"));
    l->file = json_string_value(json_object_get(rec, "file"));
    l->sha256 = json_string_value(json_object_get(rec, "sha256"));
    json_t *fpj = json_object_get(rec, "fingerprint");
    if (!json_is_object(rec) || !json_is_integer(idx) || l->name == NULL ||
        (l->file == NULL && fpj == NULL) || dtype == NULL || !json_is_array(shape))
        return gd_err_set(err, GD_EFORMAT, "layer %zu needs index, name, dtype, shape and a "
                          "file or a fingerprint", i);
    l->tensor_absent = l->file == NULL;
    if (json_integer_value(idx) != (json_int_t)i)
        return gd_err_set(err, GD_EFORMAT, "layer %zu has index %lld: layers must be listed in "
                          "order from 0", i, (long long)json_integer_value(idx));
    l->index = (int)i;
    if (gd_dtype_from_name(dtype, &l->dtype) != 0)
        return gd_err_set(err, GD_EFORMAT, "layer %s: unknown dtype %s", l->name, dtype);
    if (l->file != NULL && !safe_layer_path(l->file))
        return gd_err_set(err, GD_EFORMAT, "layer %s: file %s is not layers/<name>.npy", l->name,
                          l->file);
    if (json_array_size(shape) > GD_MAX_DIMS)
        return gd_err_set(err, GD_EFORMAT, "layer %s: too many dimensions", l->name);
    l->shape.ndim = (int)json_array_size(shape);
    for (int k = 0; k < l->shape.ndim; k++) {
        json_t *d = json_array_get(shape, (size_t)k);
        if (!json_is_integer(d) || json_integer_value(d) < 0)
            return gd_err_set(err, GD_EFORMAT, "layer %s: bad shape", l->name);
        l->shape.dim[k] = json_integer_value(d);
    }
    if (gd_shape_check(l->shape.ndim, l->shape.dim, gd_dtype_size(l->dtype), err) != 0)
        return gd_err_prefix(err, "layer %s: ", l->name);
    const char *op = json_string_value(json_object_get(rec, "op"));
    const char *algo = json_string_value(json_object_get(rec, "algo"));
    const char *math = json_string_value(json_object_get(rec, "math"));
    json_t *t = json_object_get(rec, "time_us"), *red = json_object_get(rec, "reduction_len");
    json_t *disc = json_object_get(rec, "discontinuous");
    l->op = op ? op : "";
    const char *node = json_string_value(json_object_get(rec, "node"));
    l->node = node != NULL ? node : "";
    l->algo = algo ? algo : "";
    l->math = math ? math : "";
    l->time_us = json_is_number(t) ? json_number_value(t) : -1.0;
    l->reduction_len = json_is_integer(red) ? json_integer_value(red) : 0;
    l->discontinuous = json_is_boolean(disc) ? json_is_true(disc) : -1;
    json_t *ins = json_object_get(rec, "inputs");
    l->inputs = json_is_array(ins) ? ins : NULL;
    json_t *noise = json_object_get(rec, "noise");
    struct gd_noise_probe probe;
    if (noise != NULL && gd_noise_probe_from_json(noise, &probe, err) != 0)
        return gd_err_prefix(err, "layer %s: ", l->name);
    l->noise = noise;
    return 0;
}

/* fp: the layer's fingerprint, when run.json records one. */
static int
read_fingerprint(json_t *rec, struct gd_bundle_layer *l, struct gd_fingerprint **out,
                 struct gd_err *err)
{
    json_t *j = json_object_get(rec, "fingerprint");
    if (j == NULL)
        return 0;
    struct gd_fingerprint *fp = malloc(sizeof *fp);
    if (fp == NULL)
        return gd_err_set(err, GD_ENOMEM, "out of memory");
    int rc = gd_fingerprint_from_json(j, l->dtype, l->shape.ndim, l->shape.dim, fp, err);
    if (rc != 0) {
        free(fp);
        return gd_err_prefix(err, "layer %s: ", l->name);
    }
    *out = fp;
    l->fingerprint = fp;
    return 0;
}

int
gd_bundle_open(const char *dir, struct gd_bundle **out, struct gd_err *err)
{
    char path[PATH_MAX];
    int rc = gd__pathf(path, sizeof path, err, "%s/run.json", dir);
    if (rc != 0)
        return rc;
    json_error_t jerr;
    json_t *run = json_load_file(path, JSON_REJECT_DUPLICATES, &jerr);
    if (run == NULL)
        return gd_err_set(err, jerr.line < 0 || jerr.position == 0 ? GD_ENOENT : GD_EFORMAT,
                          "%s: %s", path, jerr.text);
    struct gd_bundle *b = calloc(1, sizeof *b);
    if (b == NULL || (b->dir = gd__strdup(dir)) == NULL) {
        free(b);
        json_decref(run);
        return gd_err_set(err, GD_ENOMEM, "out of memory");
    }
    b->run = run;
    const char *format = json_string_value(json_object_get(run, "format"));
    json_t *layers = json_object_get(run, "layers");
    if (format == NULL || strcmp(format, GD_BUNDLE_FORMAT) != 0) {
        rc = gd_err_set(err, GD_EFORMAT, "%s: \"format\" is not \"%s\"", path, GD_BUNDLE_FORMAT);
        goto done;
    }
    if (!json_is_array(layers)) {
        rc = gd_err_set(err, GD_EFORMAT, "%s: \"layers\" must be a list", path);
        goto done;
    }
    b->n_layers = (int)json_array_size(layers);
    b->layers = calloc((size_t)(b->n_layers ? b->n_layers : 1), sizeof *b->layers);
    b->fingerprints = calloc((size_t)(b->n_layers ? b->n_layers : 1), sizeof *b->fingerprints);
    if (b->layers == NULL || b->fingerprints == NULL) {
        rc = gd_err_set(err, GD_ENOMEM, "out of memory");
        goto done;
    }
    for (int i = 0; i < b->n_layers && rc == 0; i++) {
        rc = read_layer(json_array_get(layers, (size_t)i), (size_t)i, &b->layers[i], err);
        if (rc == 0)
            rc = read_fingerprint(json_array_get(layers, (size_t)i), &b->layers[i],
                                  &b->fingerprints[i], err);
        if (rc != 0)
            gd_err_prefix(err, "%s: ", path);
    }
done:
    if (rc != 0) {
        gd_bundle_close(b);
        return rc;
    }
    *out = b;
    return 0;
}

int
gd_bundle_layer_load(const struct gd_bundle *b, int i, struct gd_tensor **out,
                     struct gd_err *err)
{
    if (i < 0 || i >= b->n_layers)
        return gd_err_set(err, GD_ERANGE, "%s: no layer %d (it has %d)", b->dir, i,
                          b->n_layers);
    const struct gd_bundle_layer *l = &b->layers[i];
    if (l->file == NULL)
        return gd_err_set(err, GD_ENOENT, "%s: layer %s was captured as a fingerprint only",
                          b->dir, l->name);
    char path[PATH_MAX];
    int rc = gd__pathf(path, sizeof path, err, "%s/%s", b->dir, l->file);
    if (rc != 0)
        return rc;
    struct gd_tensor *t = NULL;
    rc = gd_npy_load(path, &t, err);
    if (rc != 0)
        return rc;
    int same = t->dtype == l->dtype && t->ndim == l->shape.ndim;
    for (int k = 0; same && k < t->ndim; k++)
        same = t->shape[k] == l->shape.dim[k];
    if (!same) {
        char a[96], c[96];
        rc = gd_err_set(err, GD_EFORMAT, "%s: %s %s, but run.json says %s %s", path,
                        gd_dtype_name(t->dtype), gd_shape_format(t->ndim, t->shape, a, sizeof a),
                        gd_dtype_name(l->dtype),
                        gd_shape_format(l->shape.ndim, l->shape.dim, c, sizeof c));
    }
    if (rc == 0 && l->sha256 != NULL) {
        char hex[65];
        rc = gd_tensor_sha256(t, hex, err);
        if (rc == 0 && strcmp(hex, l->sha256) != 0)
            rc = gd_err_set(err, GD_EFORMAT, "%s: data does not match the sha256 in run.json",
                            path);
    }
    if (rc != 0) {
        gd_tensor_free(t);
        return rc;
    }
    *out = t;
    return 0;
}

void
gd_bundle_close(struct gd_bundle *b)
{
    if (b == NULL)
        return;
    json_decref(b->run);
    for (int i = 0; b->fingerprints != NULL && i < b->n_layers; i++)
        free(b->fingerprints[i]);
    free(b->fingerprints);
    free(b->layers);
    free(b->dir);
    free(b);
}
