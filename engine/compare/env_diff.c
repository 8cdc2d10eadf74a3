/* env_diff.c: what differs between two runs' backend, environment and knobs. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "diff_internal.h"

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
    if (json_equal(va, vb) || (va == NULL && vb == NULL))
        return;
    json_array_append_new(out, json_pack("{s:s, s:o, s:o}", "key", key, "a", as_text(va), "b",
                                         as_text(vb)));
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
    json_t *out = json_array();
    add(out, "backend", json_object_get(run_a, "backend"), json_object_get(run_b, "backend"));
    add_object(out, "knobs", json_object_get(run_a, "knobs"), json_object_get(run_b, "knobs"));
    add_object(out, "env", json_object_get(run_a, "env"), json_object_get(run_b, "env"));
    return out;
}
