/*
 * device.c: the device key of a run: what must be equal for two runs to count as the same
 * device in the matrix and in history. Two runs of one backend on one GPU model differ in
 * numerics only through their knobs (the lines of engine/core/knobs.def that change numbers),
 * so those belong to the key; the host, the driver and the library versions do not (history shows
 * their changes along one device). The operator's labels of a host (env.labels, `gpudiff-agent
 * serve --label`) do: they are how hosts of one backend are told apart.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpudiff/knobs.h"
#include "compare.h"

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

/*
 * " name=value" for each knob of knobs.def that changes numbers (categories arithmetic,
 * algorithm, batch) and is recorded at a value other than its default, in the table's order
 * and its one spelling: a knob added to the table with a default leaves every key made
 * before it as it was. Values the table does not read (another agent's) leave that knob out.
 */
static int
knobs(struct srv_buf *out, json_t *obj)
{
    int rc = 0;
    for (int k = 0; k < GD_KNOB_COUNT && rc == 0; k++) {
        const struct gd_knob_info *i = gd_knob_info((enum gd_knob)k);
        if (i->category == GD_KNOB_CAT_OTHER)
            continue;
        json_t *v = json_object_get(obj, i->name);
        if (v == NULL || json_is_null(v))
            continue;
        json_t *one = json_pack("{s:O}", i->name, v);
        struct gd_knobs read;
        int ok = one != NULL && gd_knobs_from_json(one, &read, NULL) == 0;
        json_decref(one);
        if (!ok || !gd_knob_is_set(&read, (enum gd_knob)k))
            continue;
        char text[1100];
        gd_knob_format(&read, (enum gd_knob)k, text, sizeof text);
        if (strcmp(text, i->default_value) != 0)
            rc = srv_buf_printf(out, " %s=%s", i->name, text);
    }
    return rc;
}

int
srv_device_key(json_t *run, struct srv_buf *out)
{
    json_t *env = json_object_get(run, "env");
    const char *backend = json_string_value(json_object_get(run, "backend"));
    const char *gpu = json_string_value(json_object_get(env, "gpu_name"));
    int rc = srv_buf_printf(out, "%s", backend != NULL ? backend : "");
    if (rc == 0 && gpu != NULL && gpu[0] != '\0')
        rc = srv_buf_printf(out, " %s", gpu);
    if (rc == 0)
        rc = knobs(out, json_object_get(run, "knobs"));
    if (rc == 0)
        rc = labels(out, json_object_get(env, "labels"));
    return rc == 0 ? 0 : GD_ENOMEM;
}
