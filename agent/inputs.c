/*
 * inputs.c: `run`'s --input files: one tensor per graph input, from .npy, .npz,
 * .safetensors or ONNX TensorProto (.pb) files, matched to the model's inputs by name
 * (NAME=FILE, or an archive's member names) or, for a model of one input, taken whole.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gpudiff/hash.h"
#include "gpudiff/io.h"
#include "gpudiff/onnx.h"
#include "agent.h"
#include "inputs.h"

/* 1 when the file starts as .npy, ZIP (.npz) or safetensors do; 0 otherwise (a .pb). */
static int
is_array_file(const char *path)
{
    unsigned char head[9] = {0};
    FILE *f = fopen(path, "rb");
    if (f == NULL)
        return 1; /* let gd_array_load() report it */
    size_t n = fread(head, 1, sizeof head, f);
    fclose(f);
    if (n >= 6 && memcmp(head, "\x93NUMPY", 6) == 0)
        return 1;
    if (n >= 4 && head[0] == 'P' && head[1] == 'K')
        return 1;
    return n == 9 && head[8] == '{'; /* safetensors: an 8-byte header length, then JSON */
}

int
agt_input_add(const char *cmd, const char **specs, int *n, const char *text)
{
    if (*n == AGT_MAX_INPUTS) {
        fprintf(stderr, "gpudiff-agent %s: more than %d --input\n", cmd, AGT_MAX_INPUTS);
        return -1;
    }
    specs[(*n)++] = text;
    return 0;
}

int
agt_tensor_load(const char *path, const char *key, struct gd_tensor **out, struct gd_err *err)
{
    if (is_array_file(path))
        return gd_array_load(path, key, out, err);
    if (key != NULL)
        return gd_err_set(err, GD_EINVAL, "%s: an ONNX TensorProto holds one tensor; a member "
                          "name (%s) is for .npz and .safetensors files", path, key);
    return gd_onnx_tensor_load(path, out, NULL, err);
}

/* The index of the graph input called name, or -1. */
static int
input_index(const struct gd_graph *g, const char *name, size_t len)
{
    for (int i = 0; i < g->n_inputs; i++) {
        const char *n = g->values[g->inputs[i]].name;
        if (strlen(n) == len && strncmp(n, name, len) == 0)
            return i;
    }
    return -1;
}

static void
input_names(const struct gd_graph *g, char *buf, size_t cap)
{
    buf[0] = '\0';
    for (int i = 0; i < g->n_inputs; i++) {
        size_t len = strlen(buf);
        snprintf(buf + len, cap - len, "%s%s", i ? ", " : "", g->values[g->inputs[i]].name);
    }
}

/* Does the archive at path have a member called name? (0 for a file that is no archive.) */
static int
archive_has(const char *path, const char *name)
{
    struct gd_npz *z = NULL;
    int has = 0;
    if (gd_npz_open(path, &z, NULL) == 0) {
        for (int i = 0; i < gd_npz_count(z) && !has; i++)
            has = strcmp(gd_npz_name(z, i), name) == 0;
        gd_npz_close(z);
        return has;
    }
    struct gd_safetensors *st = NULL;
    if (gd_safetensors_open(path, &st, NULL) == 0) {
        for (int i = 0; i < gd_safetensors_count(st) && !has; i++)
            has = strcmp(gd_safetensors_name(st, i), name) == 0;
        gd_safetensors_close(st);
    }
    return has;
}

/* agt_inputs_load() and agt_inputs_load_keyed(): key for the one plain file, keys[i] for
 * input i given as NAME=FILE (either may be NULL). */
static int
load_specs(const struct gd_graph *g, const char *const *specs, int n_specs, const char *key,
           const char *const *keys, struct gd_tensor **out, json_t **records, struct gd_err *err)
{
    const char *path[AGT_MAX_INPUTS] = {0}, *member[AGT_MAX_INPUTS] = {0};
    const char *plain[AGT_MAX_INPUTS];
    char names[512];
    int n_plain = 0, rc = 0;
    input_names(g, names, sizeof names);
    if (g->n_inputs > AGT_MAX_INPUTS)
        return gd_err_set(err, GD_ENOTSUP, "the model has %d inputs (at most %d)", g->n_inputs,
                          AGT_MAX_INPUTS);
    /* NAME=FILE where NAME is an input of the model; anything else is a file name. */
    for (int s = 0; s < n_specs; s++) {
        const char *eq = strchr(specs[s], '=');
        int i = eq ? input_index(g, specs[s], (size_t)(eq - specs[s])) : -1;
        if (i < 0 && eq != NULL && access(specs[s], F_OK) != 0)
            return gd_err_set(err, GD_EINVAL, "--input %s: %.*s is not an input of the model "
                              "(it has: %s)", specs[s], (int)(eq - specs[s]), specs[s], names);
        if (i < 0) {
            plain[n_plain++] = specs[s];
            continue;
        }
        if (path[i] != NULL)
            return gd_err_set(err, GD_EINVAL, "--input gives %s twice",
                              g->values[g->inputs[i]].name);
        path[i] = eq + 1;
        member[i] = keys != NULL ? keys[i] : NULL;
    }
    int n_open = 0;
    for (int i = 0; i < g->n_inputs; i++)
        n_open += path[i] == NULL;
    if (n_plain == 1 && n_open == 1) {
        /* The usual case: one input, one file (an archive's member by --input-key, by the
         * input's name, or its only one). */
        for (int i = 0; i < g->n_inputs; i++)
            if (path[i] == NULL) {
                path[i] = plain[0];
                member[i] = key ? key
                            : archive_has(plain[0], g->values[g->inputs[i]].name)
                                ? g->values[g->inputs[i]].name
                                : NULL;
            }
    } else if (n_plain == 1 && n_open > 1) {
        /* One archive holding the inputs by name. */
        if (key != NULL)
            return gd_err_set(err, GD_EINVAL, "--input-key picks one member, but the model has "
                              "%d inputs to fill (%s)", n_open, names);
        for (int i = 0; i < g->n_inputs; i++) {
            if (path[i] != NULL)
                continue;
            const char *name = g->values[g->inputs[i]].name;
            if (!archive_has(plain[0], name))
                return gd_err_set(err, GD_EINVAL, "%s has no member %s: the model's inputs are "
                                  "%s; give each as --input NAME=FILE", plain[0], name, names);
            path[i] = plain[0];
            member[i] = name;
        }
    } else if (n_plain > 1) {
        return gd_err_set(err, GD_EINVAL, "%d --input files without a name: name each as "
                          "--input NAME=FILE (the model's inputs: %s)", n_plain, names);
    } else if (n_plain == 1) {
        const char *eq = strchr(plain[0], '=');
        if (eq != NULL)
            return gd_err_set(err, GD_EINVAL, "--input %s: %.*s is not an input of the model "
                              "(it has: %s)", plain[0], (int)(eq - plain[0]), plain[0], names);
        return gd_err_set(err, GD_EINVAL, "--input %s: every input of the model is given "
                          "already (%s)", plain[0], names);
    }
    for (int i = 0; i < g->n_inputs; i++)
        if (path[i] == NULL)
            return gd_err_set(err, GD_EINVAL, "no --input for input %s (the model's inputs: %s)",
                              g->values[g->inputs[i]].name, names);
    json_t *recs = json_array();
    for (int i = 0; i < g->n_inputs && rc == 0; i++) {
        char sha[65];
        const char *name = g->values[g->inputs[i]].name;
        rc = agt_tensor_load(path[i], member[i], &out[i], err);
        if (rc == 0)
            rc = gd_tensor_sha256(out[i], sha, err);
        if (rc != 0) {
            gd_err_prefix(err, "input %s: ", name);
            break;
        }
        json_t *shape = json_array();
        for (int d = 0; d < out[i]->ndim; d++)
            json_array_append_new(shape, json_integer(out[i]->shape[d]));
        json_array_append_new(recs, json_pack("{s:s, s:s, s:s?, s:s, s:s, s:o}", "name", name,
                                              "file", path[i], "key", member[i], "sha256", sha,
                                              "dtype", gd_dtype_name(out[i]->dtype), "shape",
                                              shape));
    }
    if (rc != 0) {
        for (int i = 0; i < g->n_inputs; i++) {
            gd_tensor_free(out[i]);
            out[i] = NULL;
        }
        json_decref(recs);
        return rc;
    }
    *records = recs;
    return 0;
}

int
agt_inputs_load(const struct gd_graph *g, const char *const *specs, int n_specs, const char *key,
                struct gd_tensor **out, json_t **records, struct gd_err *err)
{
    return load_specs(g, specs, n_specs, key, NULL, out, records, err);
}

int
agt_inputs_load_keyed(const struct gd_graph *g, const char *const *specs, int n_specs,
                      const char *const *keys, struct gd_tensor **out, json_t **records,
                      struct gd_err *err)
{
    return load_specs(g, specs, n_specs, NULL, keys, out, records, err);
}
