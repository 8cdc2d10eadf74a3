/*
 * cli_args.c: values every command parses alike: KEY=VALUE (run --label and --env-label,
 * replay --label, bundle --op, --env and --label, serve --label, submit --knob and --match)
 * and byte counts with K, M or G (serve --max-download-rate).
 */
#include <ctype.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent.h"

int
agt_kv_split(const char *arg, char *key, size_t size, const char **value, struct gd_err *err)
{
    const char *eq = strchr(arg, '=');
    if (eq == NULL || eq == arg)
        return gd_err_set(err, GD_EINVAL, "needs KEY=VALUE, not %.200s", arg);
    size_t n = (size_t)(eq - arg);
    if (n >= size)
        return gd_err_set(err, GD_EINVAL, "the key of %.200s is longer than %zu bytes", arg,
                          size - 1);
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)arg[i] <= ' ' || arg[i] == 0x7f)
            return gd_err_set(err, GD_EINVAL,
                              "%.200s: a key has no spaces or control "
                              "characters",
                              arg);
    memcpy(key, arg, n);
    key[n] = '\0';
    *value = eq + 1;
    return 0;
}

int
agt_kv_set(json_t *obj, const char *cmd, const char *flag, const char *arg)
{
    char key[AGT_KV_KEY_MAX];
    const char *value;
    struct gd_err err = {0};
    if (agt_kv_split(arg, key, sizeof key, &value, &err) != 0) {
        fprintf(stderr, "gpudiff-agent %s: %s %s\n", cmd, flag, err.msg);
        return -1;
    }
    json_object_set_new(obj, key, json_string(value));
    return 0;
}

int
agt_parse_size(const char *s, int64_t *out)
{
    char *end;
    long long v = strtoll(s, &end, 10);
    if (*s == '\0' || !isdigit((unsigned char)s[0]) || v < 0)
        return -1;
    long long mul = 1;
    if (*end == 'K' || *end == 'k')
        mul = 1024;
    else if (*end == 'M' || *end == 'm')
        mul = 1024 * 1024;
    else if (*end == 'G' || *end == 'g')
        mul = 1024LL * 1024 * 1024;
    else if (*end != '\0')
        return -1;
    if (mul > 1 && end[1] != '\0')
        return -1;
    if (v > INT64_MAX / mul)
        return -1;
    *out = v * mul;
    return 0;
}
