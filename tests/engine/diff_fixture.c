/* diff_fixture.c: hand-made runs held in memory for the comparison's tests. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "diff_fixture.h"

#define FX_MAX_LAYERS 64

struct fx_run {
    json_t *run;
    int n;
    struct gd_bundle_layer layers[FX_MAX_LAYERS];
    struct gd_tensor *data[FX_MAX_LAYERS];
    json_t *inputs[FX_MAX_LAYERS];
    char *names[FX_MAX_LAYERS], *ops[FX_MAX_LAYERS], *algos[FX_MAX_LAYERS];
    char *maths[FX_MAX_LAYERS];
    json_t *noise[FX_MAX_LAYERS];
    struct gd_run_view view;
};

static int
fx_load(void *user, int index, struct gd_tensor **out, struct gd_err *err)
{
    struct fx_run *r = user;
    if (index < 0 || index >= r->n)
        return gd_err_set(err, GD_EINVAL, "no layer %d", index);
    *out = gd_tensor_dup(r->data[index], err);
    return *out ? 0 : GD_ENOMEM;
}

static struct fx_run *
run_alloc(json_t *run)
{
    struct fx_run *r = calloc(1, sizeof *r);
    ck_assert_ptr_nonnull(r);
    r->run = run;
    return r;
}

struct fx_run *
fx_run_new(const char *id)
{
    return run_alloc(json_pack("{s:s, s:s, s:{s:s, s:s}, s:{s:s}, s:s, s:{s:s, s:s}, "
                               "s:{s:s, s:n}}",
                               "id", id, "created_at", "2026-01-01T00:00:00Z", "model", "name",
                               "m", "sha256", "model-sha", "input", "sha256", "input-sha",
                               "backend", "cpu", "env", "host", "box", "compute_dtype",
                               "float32", "knobs", "emulate", "none", "batch"));
}

struct fx_run *
fx_dump_new(const char *id, const char *backend)
{
    return run_alloc(json_pack("{s:s, s:s, s:{s:s, s:n}, s:{}, s:s, s:{}, s:{}}", "id", id,
                               "created_at", "2026-01-01T00:00:00Z", "model", "name", "unknown",
                               "sha256", "input", "backend", backend, "env", "knobs"));
}

void
fx_run_free(struct fx_run *r)
{
    if (r == NULL)
        return;
    for (int i = 0; i < r->n; i++) {
        gd_tensor_free(r->data[i]);
        json_decref(r->inputs[i]);
        free(r->names[i]);
        free(r->ops[i]);
        free(r->algos[i]);
        free(r->maths[i]);
        json_decref(r->noise[i]);
    }
    json_decref(r->run);
    free(r);
}

json_t *
fx_json(struct fx_run *r)
{
    return r->run;
}

void
fx_set(struct fx_run *r, const char *path, json_t *v)
{
    const char *dot = strchr(path, '.');
    if (dot == NULL) {
        json_object_set_new(r->run, path, v);
        return;
    }
    char obj[64];
    snprintf(obj, sizeof obj, "%.*s", (int)(dot - path), path);
    json_t *o = json_object_get(r->run, obj);
    if (!json_is_object(o)) {
        o = json_object();
        json_object_set_new(r->run, obj, o);
    }
    if (v == NULL)
        json_object_del(o, dot + 1);
    else
        json_object_set_new(o, dot + 1, v);
}

int
fx_layer(struct fx_run *r, const char *name, const char *op, int64_t reduction_len,
         const char *inputs, struct gd_tensor *t)
{
    ck_assert_int_lt(r->n, FX_MAX_LAYERS);
    ck_assert_ptr_nonnull(t);
    int i = r->n++;
    struct gd_bundle_layer *l = &r->layers[i];
    memset(l, 0, sizeof *l);
    r->names[i] = strdup(name);
    r->ops[i] = strdup(op ? op : "");
    r->algos[i] = strdup("");
    r->maths[i] = strdup("");
    r->data[i] = t;
    if (inputs != NULL) {
        json_t *a = json_array();
        char *copy = strdup(inputs), *save = NULL;
        for (char *tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save))
            json_array_append_new(a, json_string(tok));
        free(copy);
        r->inputs[i] = a;
    }
    l->index = i;
    l->name = r->names[i];
    l->op = r->ops[i];
    l->dtype = t->dtype;
    l->shape.ndim = t->ndim;
    for (int k = 0; k < t->ndim; k++)
        l->shape.dim[k] = t->shape[k];
    l->sha256 = "";
    l->file = "";
    l->time_us = -1;
    l->reduction_len = reduction_len;
    l->discontinuous = -1;
    if (op != NULL) {
        enum gd_op e;
        if (gd_op_from_name(op, &e) == 0)
            l->discontinuous = gd_op_info(e)->discontinuous;
    }
    l->algo = r->algos[i];
    l->math = r->maths[i];
    l->inputs = r->inputs[i];
    return i;
}

void
fx_layer_noise(struct fx_run *r, int index, json_t *noise)
{
    json_decref(r->noise[index]);
    r->noise[index] = noise;
    r->layers[index].noise = noise;
}

void
fx_layer_algo(struct fx_run *r, int index, const char *algo)
{
    free(r->algos[index]);
    r->algos[index] = strdup(algo);
    r->layers[index].algo = r->algos[index];
}

void
fx_layer_math(struct fx_run *r, int index, const char *math)
{
    free(r->maths[index]);
    r->maths[index] = strdup(math);
    r->layers[index].math = r->maths[index];
}

const struct gd_run_view *
fx_view(struct fx_run *r)
{
    r->view.run = r->run;
    r->view.n_layers = r->n;
    r->view.layers = r->layers;
    r->view.load = fx_load;
    r->view.user = r;
    return &r->view;
}

struct gd_tensor *
fx_f32(int64_t rows, int64_t cols, const float *values)
{
    int64_t shape[2] = {rows, cols};
    struct gd_tensor *t = gd_tensor_new(GD_F32, cols > 0 ? 2 : 1, shape, NULL);
    ck_assert_ptr_nonnull(t);
    memcpy(t->data, values, gd_tensor_nbytes(t));
    return t;
}

struct gd_tensor *
fx_f64(int64_t rows, int64_t cols, const double *values)
{
    int64_t shape[2] = {rows, cols};
    struct gd_tensor *t = gd_tensor_new(GD_F64, cols > 0 ? 2 : 1, shape, NULL);
    ck_assert_ptr_nonnull(t);
    memcpy(t->data, values, gd_tensor_nbytes(t));
    return t;
}

struct gd_tensor *
fx_f32_of(int64_t rows, int64_t cols, const double *values)
{
    int64_t shape[2] = {rows, cols};
    struct gd_tensor *t = gd_tensor_new(GD_F32, cols > 0 ? 2 : 1, shape, NULL);
    ck_assert_ptr_nonnull(t);
    float *f = t->data;
    for (int64_t i = 0; i < gd_tensor_numel(t); i++)
        f[i] = (float)values[i];
    return t;
}

void
fx_pair(struct fx_run *a, struct fx_run *b, const char *name, const char *op,
        int64_t reduction_len, const char *inputs, int64_t rows, int64_t cols, const double *va,
        const double *vb)
{
    fx_layer(a, name, op, reduction_len, inputs, fx_f32_of(rows, cols, va));
    fx_layer(b, name, op, reduction_len, inputs, fx_f32_of(rows, cols, vb));
}

/* xorshift64*, mapped to [-1, 1). */
static double
next_unit(uint64_t *s)
{
    *s ^= *s >> 12;
    *s ^= *s << 25;
    *s ^= *s >> 27;
    uint64_t x = *s * 0x2545f4914f6cdd1dull;
    return (double)(x >> 11) * 0x1p-52 - 1.0;
}

void
fx_random(double *out, int64_t n, uint64_t seed)
{
    uint64_t s = seed * 0x9e3779b97f4a7c15ull + 1;
    for (int64_t i = 0; i < n; i++)
        out[i] = next_unit(&s);
}

void
fx_perturb(double *values, int64_t n, double rel, uint64_t seed)
{
    uint64_t s = seed * 0x9e3779b97f4a7c15ull + 7;
    for (int64_t i = 0; i < n; i++)
        values[i] *= 1.0 + rel * next_unit(&s);
}

static struct gd_diff *
diff_tol(struct fx_run *a, struct fx_run *b, struct fx_run *truth, double atol, double rtol)
{
    struct gd_diff *d = NULL;
    struct gd_err err = {0};
    int rc = gd_diff_runs(fx_view(a), fx_view(b), truth ? fx_view(truth) : NULL, atol, rtol, &d,
                          &err);
    ck_assert_msg(rc == 0, "gd_diff_runs: %d %s", rc, err.msg);
    return d;
}

struct gd_diff *
fx_diff(struct fx_run *a, struct fx_run *b, struct fx_run *truth)
{
    return diff_tol(a, b, truth, 1e-8, 1e-5);
}

json_t *
fx_diff_json(struct fx_run *a, struct fx_run *b, struct fx_run *truth)
{
    return fx_diff_json_tol(a, b, truth, 1e-8, 1e-5);
}

json_t *
fx_diff_json_tol(struct fx_run *a, struct fx_run *b, struct fx_run *truth, double atol,
                 double rtol)
{
    struct gd_diff *d = diff_tol(a, b, truth, atol, rtol);
    json_t *j = gd_diff_to_json(d, fx_view(a), fx_view(b), truth ? fx_view(truth) : NULL);
    gd_diff_free(d);
    ck_assert_ptr_nonnull(j);
    /* GD_TEST_VERBOSE=1 shows each explanation, to read them. */
    if (getenv("GD_TEST_VERBOSE") != NULL)
        fprintf(stderr, "--- %s vs %s:\n%s\n", fx_str(a->run, "id"), fx_str(b->run, "id"),
                fx_str(j, "explanation"));
    return j;
}

json_t *
fx_layer_json(json_t *diff, const char *name)
{
    size_t i;
    json_t *l;
    json_array_foreach(json_object_get(diff, "layers"), i, l) {
        if (strcmp(fx_str(l, "name"), name) == 0)
            return l;
    }
    ck_abort_msg("the diff has no layer %s", name);
    return NULL;
}

const char *
fx_str(json_t *obj, const char *key)
{
    const char *s = json_string_value(json_object_get(obj, key));
    return s ? s : "";
}
