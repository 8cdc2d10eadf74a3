/*
 * device.c: the device key of a run: what must be equal for two runs to count as the same
 * device in the matrix and in history. Two runs of one backend on one GPU model differ in
 * numerics only through the knobs written here, so those belong to the key; the host, the
 * driver and the library versions do not (history shows their changes along one device).
 * The operator's labels of a host (env.labels, `gpudiff-agent serve --label`) do: they are
 * how hosts of one backend are told apart.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compare.h"

/* " name=value" for a knob that is a non-empty string or an integer; nothing otherwise. */
static int
knob(struct srv_buf *out, const char *name, json_t *v)
{
    if (json_is_string(v) && json_string_length(v) > 0)
        return srv_buf_printf(out, " %s=%s", name, json_string_value(v));
    if (json_is_integer(v))
        return srv_buf_printf(out, " %s=%lld", name, (long long)json_integer_value(v));
    return 0;
}

static int
by_name(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/*
 * jobsrv: " label.K=V" for each of env.labels (the operator's `serve --label K=V`), sorted
 * by K, so hosts of one backend told apart by their labels are devices of their own; a run
 * without labels keeps its key.
 */
static int
labels(struct srv_buf *out, json_t *map)
{
    size_t n = json_is_object(map) ? json_object_size(map) : 0;
    if (n == 0)
        return 0;
    const char **names = malloc(n * sizeof *names);
    if (names == NULL)
        return GD_ENOMEM;
    size_t i = 0;
    const char *k;
    json_t *v;
    json_object_foreach(map, k, v) names[i++] = k;
    qsort(names, n, sizeof *names, by_name);
    int rc = 0;
    for (i = 0; i < n && rc == 0; i++) {
        const char *value = json_string_value(json_object_get(map, names[i]));
        if (value != NULL)
            rc = srv_buf_printf(out, " label.%s=%s", names[i], value);
    }
    free(names);
    return rc;
}

int
srv_device_key(json_t *run, struct srv_buf *out)
{
    json_t *env = json_object_get(run, "env"), *knobs = json_object_get(run, "knobs");
    const char *backend = json_string_value(json_object_get(run, "backend"));
    const char *gpu = json_string_value(json_object_get(env, "gpu_name"));
    json_t *emulate = json_object_get(knobs, "emulate");
    int rc = srv_buf_printf(out, "%s", backend != NULL ? backend : "");
    if (rc == 0 && gpu != NULL && gpu[0] != '\0')
        rc = srv_buf_printf(out, " %s", gpu);
    if (rc == 0 && !(json_is_string(emulate) && strcmp(json_string_value(emulate), "none") == 0))
        rc = knob(out, "emulate", emulate);
    if (rc == 0 && json_is_true(json_object_get(knobs, "tf32")))
        rc = srv_buf_printf(out, " tf32=true");
    if (rc == 0)
        rc = knob(out, "conv_algo", json_object_get(knobs, "conv_algo"));
    if (rc == 0)
        rc = knob(out, "batch", json_object_get(knobs, "batch"));
    /* bitwise mode computes other numbers than the default mode on the same GPU (cpu's); off,
     * the default, keeps the keys of runs recorded before the knob */
    json_t *repro = json_object_get(knobs, "repro");
    if (rc == 0 && json_is_string(repro) && strcmp(json_string_value(repro), "off") != 0)
        rc = knob(out, "repro", repro);
    if (rc == 0)
        rc = labels(out, json_object_get(env, "labels"));
    return rc == 0 ? 0 : GD_ENOMEM;
}
