/* conv_config.c: the text of a fixed convolution choice (engine configs, legacy ids). */
#include <stdio.h>
#include <string.h>

#include "conv_config.h"
#include "internal.h"

/* Reads a decimal integer (an optional '-' when negative is allowed) from p[0..end). */
static const char *
read_int(const char *p, const char *end, int negative, int64_t *v)
{
    int sign = 1, digits = 0;
    int64_t x = 0;
    if (negative && p < end && *p == '-') {
        sign = -1;
        p++;
    }
    while (p < end && *p >= '0' && *p <= '9') {
        if (x > (INT64_MAX - 9) / 10)
            return NULL;
        x = x * 10 + (*p - '0');
        p++;
        digits++;
    }
    if (digits == 0)
        return NULL;
    *v = sign * x;
    return p;
}

int
gd__conv_config_parse(const char *text, size_t len, struct gd__conv_config *out,
                      struct gd_err *err)
{
    const char *p = text, *end = text + len;
    struct gd__conv_config c;
    memset(&c, 0, sizeof c);
    if (len < 4 || strncmp(p, "eng", 3) != 0 || (p = read_int(p + 3, end, 0, &c.engine)) == NULL)
        return gd_err_set(err, GD_EINVAL, "%.*s is not an engine config: engN or "
                          "engN_kTYPE=VALUE... (N the engine's index)", (int)len, text);
    while (p < end) {
        int64_t type, value;
        const char *q = p;
        if (end - p < 2 || p[0] != '_' || p[1] != 'k' ||
            (q = read_int(p + 2, end, 0, &type)) == NULL || q == end || *q != '=' ||
            (q = read_int(q + 1, end, 1, &value)) == NULL)
            return gd_err_set(err, GD_EINVAL, "engine config %.*s: \"%.*s\" is not a knob "
                              "_kTYPE=VALUE", (int)len, text, (int)(end - p), p);
        if (c.n_knobs == GD__CONV_KNOBS_MAX)
            return gd_err_set(err, GD_EINVAL, "engine config %.*s: more than %d knobs",
                              (int)len, text, GD__CONV_KNOBS_MAX);
        int at = c.n_knobs;
        while (at > 0 && c.knob_type[at - 1] > type) {
            c.knob_type[at] = c.knob_type[at - 1];
            c.knob_value[at] = c.knob_value[at - 1];
            at--;
        }
        if (at > 0 && c.knob_type[at - 1] == type)
            return gd_err_set(err, GD_EINVAL, "engine config %.*s sets knob %lld twice",
                              (int)len, text, (long long)type);
        c.knob_type[at] = type;
        c.knob_value[at] = value;
        c.n_knobs++;
        p = q;
    }
    *out = c;
    return 0;
}

int
gd__conv_config_format(const struct gd__conv_config *c, char *buf, size_t size)
{
    int n = snprintf(buf, size, "eng%lld", (long long)c->engine);
    for (int i = 0; i < c->n_knobs && n >= 0; i++) {
        size_t at = (size_t)n < size ? (size_t)n : size;
        int k = snprintf(buf + at, size - at, "_k%lld=%lld", (long long)c->knob_type[i],
                         (long long)c->knob_value[i]);
        n = k < 0 ? k : n + k;
    }
    return n;
}

int
gd__conv_legacy_id(const char *text, size_t len, int *id)
{
    int64_t v;
    const char *p = read_int(text, text + len, 0, &v);
    if (p == NULL || p != text + len || v > 1000)
        return 0;
    *id = (int)v;
    return 1;
}

int
gd__conv_choice_check(const char *api, const char *text, size_t len, const char *what,
                      struct gd_err *err)
{
    int id;
    if (strcmp(api, "legacy") == 0) {
        if (gd__conv_legacy_id(text, len, &id))
            return 0;
        return gd_err_set(err, GD_EINVAL, "%s%.*s: under --conv-api legacy a fixed choice is "
                          "a cuDNN algorithm id N%s", what, (int)len, text,
                          strncmp(text, "eng", 3) == 0 ? " (engine configs are for --conv-api "
                                                         "graph)" : "");
    }
    if (gd__conv_legacy_id(text, len, &id))
        return gd_err_set(err, GD_EINVAL, "%s%.*s: under --conv-api graph a fixed choice is an "
                          "engine config, engN or engN_kTYPE=VALUE... (algorithm ids are for "
                          "--conv-api legacy)", what, (int)len, text);
    struct gd__conv_config c;
    int rc = gd__conv_config_parse(text, len, &c, err);
    if (rc != 0)
        gd_err_prefix(err, "%s", what);
    return rc;
}
