/*
 * model_load.c: agt_model_load() (model_load.h), the model and input reading every command
 * of the agent shares, so that what `run` takes every other command takes too.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gpudiff/hash.h"
#include "gpudiff/log.h"
#include "gpudiff/model.h"
#include "gpudiff/onnx.h"
#include "model_load.h"

int
agt_model_is_onnx(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (f == NULL)
        return 0; /* gd_model_load() says what is wrong with it */
    int c;
    while ((c = fgetc(f)) == ' ' || c == '\t' || c == '\n' || c == '\r')
        ;
    fclose(f);
    return c != EOF && c != '{';
}

/* The graph input called name, or -1. */
static int
input_of(const struct gd_graph *g, const char *name)
{
    for (int i = 0; i < g->n_inputs; i++)
        if (strcmp(g->values[g->inputs[i]].name, name) == 0)
            return i;
    return -1;
}

/* --dtype on the loaded graph: the cast, or the check that float32 is what it holds. */
static int
apply_dtype(struct gd_graph *g, const char *dtype, int onnx, struct gd_err *err)
{
    if (dtype == NULL || dtype[0] == '\0')
        return 0;
    if (strcmp(dtype, "float32") == 0) {
        for (int v = 0; v < g->n_values; v++)
            if (g->values[v].dtype == GD_F16 || g->values[v].dtype == GD_BF16)
                return gd_err_set(err, GD_ENOTSUP,
                                  "--dtype float32: the model holds %s values (%s); a model "
                                  "exported in a half format runs in it without --dtype",
                                  gd_dtype_name(g->values[v].dtype), g->values[v].name);
        return 0;
    }
    enum gd_dtype dt;
    if (strcmp(dtype, "float16") == 0)
        dt = GD_F16;
    else if (strcmp(dtype, "bfloat16") == 0)
        dt = GD_BF16;
    else
        return gd_err_set(err, GD_EINVAL, "--dtype takes float32, float16 or bfloat16, not %s",
                          dtype);
    int rc = gd_graph_cast_floats(g, dt, err);
    /* a JSON model was finalized in float32 by its loader: once more in the new dtype */
    if (rc == 0 && !onnx)
        rc = gd_graph_finalize(g, err);
    if (rc != 0)
        gd_err_prefix(err, "--dtype %s: ", dtype);
    return rc;
}

/* The inputs from run.json's records: each record's file (and member) for its input. */
static int
load_records(const struct gd_graph *g, json_t *records, struct gd_tensor **out, json_t **recs,
             struct gd_err *err)
{
    const char *specs[AGT_MAX_INPUTS];
    const char *keys[AGT_MAX_INPUTS] = {0};
    char *owned[AGT_MAX_INPUTS] = {0};
    int n = 0, rc = 0;
    size_t i;
    json_t *rec;
    if (!json_is_array(records) || json_array_size(records) == 0)
        return gd_err_set(err, GD_ENOENT, "the run records no input files: give --input");
    json_array_foreach(records, i, rec)
    {
        const char *name = json_string_value(json_object_get(rec, "name"));
        const char *file = json_string_value(json_object_get(rec, "file"));
        if (n == AGT_MAX_INPUTS || file == NULL) {
            rc = gd_err_set(err, GD_EINVAL, "the run's input %zu has no file: give --input", i);
            break;
        }
        if (access(file, R_OK) != 0) {
            rc = gd_err_set(err, GD_ENOENT, "the run's input %s is not here: give --input", file);
            break;
        }
        /* a record without a name is a model of one input's */
        if (name == NULL && json_array_size(records) == 1 && g->n_inputs == 1)
            name = g->values[g->inputs[0]].name;
        if (name == NULL || input_of(g, name) < 0) {
            rc = gd_err_set(err, GD_EINVAL, "the run's input %s is not an input of the model",
                            name ? name : "(unnamed)");
            break;
        }
        size_t len = strlen(name) + strlen(file) + 2;
        if ((owned[n] = malloc(len)) == NULL) {
            rc = gd_err_set(err, GD_ENOMEM, "out of memory");
            break;
        }
        snprintf(owned[n], len, "%s=%s", name, file);
        specs[n] = owned[n];
        keys[input_of(g, name)] = json_string_value(json_object_get(rec, "key"));
        n++;
    }
    if (rc == 0)
        rc = agt_inputs_load_keyed(g, specs, n, keys, out, recs, err);
    for (int k = 0; k < n; k++)
        free(owned[k]);
    return rc;
}

/* Each input's SHA-256 against the record of its name in expect. */
static int
check_expected(const struct gd_graph *g, json_t *records, json_t *expect, struct gd_err *err)
{
    size_t i;
    json_t *want;
    json_array_foreach(expect, i, want)
    {
        const char *name = json_string_value(json_object_get(want, "name"));
        const char *sha = json_string_value(json_object_get(want, "sha256"));
        if (name == NULL && json_array_size(expect) == 1 && g->n_inputs == 1)
            name = g->values[g->inputs[0]].name;
        int k = name != NULL ? input_of(g, name) : -1;
        if (sha == NULL || k < 0)
            continue;
        const char *got =
            json_string_value(json_object_get(json_array_get(records, (size_t)k), "sha256"));
        if (got == NULL || strcmp(got, sha) != 0)
            return gd_err_set(err, GD_EINVAL,
                              "input %s has sha256 %.16s..., the run's was %.16s...: it must "
                              "be the run's own input",
                              name, got ? got : "?", sha);
    }
    return 0;
}

int
agt_model_load(const struct agt_model_req *r, struct agt_model *out, struct gd_err *err)
{
    struct agt_model m;
    memset(&m, 0, sizeof m);
    memset(out, 0, sizeof *out);
    m.onnx = agt_model_is_onnx(r->model);
    if (m.onnx && r->weights_dir != NULL)
        return gd_err_set(err, GD_EINVAL,
                          "--weights-dir is for JSON models; %s is ONNX, whose external data "
                          "is relative to its folder",
                          r->model);
    struct gd_model_opts mo = {.weights_dir = r->weights_dir};
    struct gd_onnx_opts oo = {.defer_finalize = 1};
    int rc = m.onnx ? gd_onnx_load(r->model, &oo, NULL, &m.g, err)
                    : gd_model_load(r->model, &mo, &m.g, err);
    if (rc == 0)
        rc = apply_dtype(m.g, r->dtype, m.onnx, err);
    if (rc == 0 && r->n_inputs == 0 && r->input_records != NULL)
        rc = load_records(m.g, r->input_records, m.inputs, &m.records, err);
    else if (rc == 0)
        rc = agt_inputs_load(m.g, r->inputs, r->n_inputs, r->input_key, m.inputs, &m.records, err);
    if (rc == 0 && r->expect != NULL)
        rc = check_expected(m.g, m.records, r->expect, err);
    if (rc == 0 && m.onnx)
        rc = gd_graph_finalize_with(m.g, (const struct gd_tensor *const *)m.inputs, err);
    if (rc != 0) {
        agt_model_fini(&m);
        return rc;
    }
    if (m.onnx)
        gd_log(GD_LOG_DEBUG, "%s: %d layers, %d folds, %d inputs", r->model, m.g->n_nodes,
               m.g->n_folds, m.g->n_inputs);
    *out = m;
    return 0;
}

void
agt_model_fini(struct agt_model *m)
{
    for (int i = 0; i < AGT_MAX_INPUTS; i++)
        gd_tensor_free(m->inputs[i]);
    json_decref(m->records);
    gd_graph_free(m->g);
    memset(m, 0, sizeof *m);
}
