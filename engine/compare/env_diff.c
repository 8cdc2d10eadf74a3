/*
 * env_diff.c: what differs between two runs' backend, environment and knobs, ranked by
 * whether it can change the numbers. A field one run does not record (or records as
 * something that is not a value of it, like a driver version "for") is "not recorded": not a
 * difference, and never a cause. Categories, in this order: arithmetic (TF32, emulation,
 * math mode, compute dtype), algorithm (convolution algorithm, workspace), library (cuDNN,
 * cuBLAS, CUDA runtime, driver, engine), gpu (name, compute capability, SMs), batch, backend,
 * then other (host, PCI bus, UUID, OS, threads: facts that change no result).
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpudiff/knobs.h"
#include "diff_internal.h"

/* The knobs (knobs.*, and env.* where a backend records what it resolved under the knob's
 * name) take their category from knobs.def; these are the other fields. */
static const struct {
    const char *key;
    const char *category;
} CATEGORIES[] = {
    {"env.compute_dtype", "arithmetic"},
    {"env.NVIDIA_TF32_OVERRIDE", "arithmetic"},
    {"env.CUBLAS_WORKSPACE_CONFIG", "algorithm"},
    {"env.cudnn", "library"},
    {"env.cublas", "library"},
    {"env.cublaslt", "library"},
    {"env.cuda_runtime", "library"},
    {"env.driver", "library"},
    {"env.engine_version", "library"},
    {"env.gpu_name", "gpu"},
    {"env.compute_capability", "gpu"},
    {"env.sm_count", "gpu"},
    {"knobs.batch", "batch"},
    {"backend", "backend"},
    {"env.backend", "backend"},
};

static const char *const RANKS[] = {"arithmetic", "algorithm", "library", "gpu", "batch",
                                    "backend", "other"};

static const char *
category_of(const char *key)
{
    const char *name = strncmp(key, "knobs.", 6) == 0 ? key + 6
                       : strncmp(key, "env.", 4) == 0 ? key + 4
                                                      : NULL;
    enum gd_knob k;
    if (name != NULL && gd_knob_find(name, &k) == 0)
        return gd_knob_category_name(gd_knob_info(k)->category);
    for (size_t i = 0; i < sizeof CATEGORIES / sizeof CATEGORIES[0]; i++)
        if (strcmp(CATEGORIES[i].key, key) == 0)
            return CATEGORIES[i].category;
    return "other";
}

static int
rank_of(const char *category)
{
    for (size_t i = 0; i < sizeof RANKS / sizeof RANKS[0]; i++)
        if (strcmp(RANKS[i], category) == 0)
            return (int)i;
    return (int)(sizeof RANKS / sizeof RANKS[0]);
}

/* A driver version is digits and dots ("570.86.15"); anything else was misread. */
static int
readable(const char *key, json_t *v)
{
    if (strcmp(key, "env.driver") != 0)
        return 1;
    const char *s = json_string_value(v);
    if (s == NULL || !isdigit((unsigned char)s[0]))
        return 0;
    for (; *s; s++)
        if (!isdigit((unsigned char)*s) && *s != '.')
            return 0;
    return 1;
}

/* A JSON value as short text: strings as they are, other values as JSON. */
static json_t *
as_text(json_t *v)
{
    if (v == NULL)
        return json_null();
    if (json_is_string(v))
        return json_incref(v);
    char *s = json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT);
    json_t *t = json_string(s ? s : "");
    free(s);
    return t;
}

static void
add(json_t *out, const char *key, json_t *va, json_t *vb)
{
    if (va == NULL && vb == NULL)
        return;
    int ra = va != NULL && readable(key, va), rb = vb != NULL && readable(key, vb);
    const char *status;
    if (ra && rb) {
        if (json_equal(va, vb))
            return;
        status = "differs";
    } else {
        status = "not recorded";
    }
    json_array_append_new(out, json_pack("{s:s, s:o, s:o, s:s, s:s}", "key", key, "a",
                                         ra ? as_text(va) : json_null(), "b",
                                         rb ? as_text(vb) : json_null(), "status", status,
                                         "category", category_of(key)));
}

/* Keys of prefix.object on either side, in a's order then b's. */
static void
add_object(json_t *out, const char *prefix, json_t *oa, json_t *ob)
{
    const char *key;
    json_t *v;
    char full[128];
    json_object_foreach(oa, key, v) {
        snprintf(full, sizeof full, "%s.%s", prefix, key);
        add(out, full, v, json_object_get(ob, key));
    }
    json_object_foreach(ob, key, v) {
        if (json_object_get(oa, key) != NULL)
            continue;
        snprintf(full, sizeof full, "%s.%s", prefix, key);
        add(out, full, NULL, v);
    }
}

json_t *
gd__env_diff(json_t *run_a, json_t *run_b)
{
    json_t *all = json_array(), *out = json_array();
    if (all == NULL || out == NULL) {
        json_decref(all);
        json_decref(out);
        return NULL;
    }
    add(all, "backend", json_object_get(run_a, "backend"), json_object_get(run_b, "backend"));
    add_object(all, "knobs", json_object_get(run_a, "knobs"), json_object_get(run_b, "knobs"));
    add_object(all, "env", json_object_get(run_a, "env"), json_object_get(run_b, "env"));
    /* A stable order by rank: what can change numerics first. */
    for (size_t r = 0; r <= sizeof RANKS / sizeof RANKS[0]; r++) {
        size_t i;
        json_t *e;
        json_array_foreach(all, i, e) {
            if ((size_t)rank_of(json_string_value(json_object_get(e, "category"))) == r)
                json_array_append(out, e);
        }
    }
    json_decref(all);
    return out;
}

const char *
gd__run_field(json_t *run, const char *key, char *buf, size_t size)
{
    json_t *v;
    if (strncmp(key, "env.", 4) == 0)
        v = json_object_get(json_object_get(run, "env"), key + 4);
    else if (strncmp(key, "knobs.", 6) == 0)
        v = json_object_get(json_object_get(run, "knobs"), key + 6);
    else
        v = json_object_get(run, key);
    if (v == NULL || !readable(key, v))
        return NULL;
    if (json_is_string(v)) {
        snprintf(buf, size, "%s", json_string_value(v));
    } else {
        char *s = json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT);
        snprintf(buf, size, "%s", s ? s : "");
        free(s);
    }
    return buf;
}
