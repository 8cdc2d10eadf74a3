/*
 * device.c: the device key of a run: what must be equal for two runs to count as the same
 * device in the matrix and in history. Two runs of one backend on one GPU model differ in
 * numerics only through the knobs written here, so those belong to the key; the host, the
 * driver and the library versions do not (history shows their changes along one device).
 */
#include <stdio.h>
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
    return rc == 0 ? 0 : GD_ENOMEM;
}
