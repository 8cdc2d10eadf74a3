/*
 * jobs_args.c: the pure pieces of submit and serve (jobs.h): --knob and --match of submit,
 * a job's knobs as `run` flags for serve (both from knobs.def), the file cache's names, and the
 * line of a failed run's stderr that serve reports.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpudiff/knobs.h"
#include "jobs.h"

/* A run option a job may give that is no knob of knobs.def: which member of an archive
 * input to read. */
#define INPUT_KEY "input_key"

const char *
agt_knob_names(void)
{
    static char names[512];
    if (names[0] == '\0') {
        size_t used = 0;
        for (int k = 0; k < GD_KNOB_COUNT; k++) {
            int n = snprintf(names + used, sizeof names - used, "%s, ",
                             gd_knob_info((enum gd_knob)k)->name);
            if (n > 0 && (size_t)n < sizeof names - used)
                used += (size_t)n;
        }
        snprintf(names + used, sizeof names - used, "%s", INPUT_KEY);
    }
    return names;
}

/* The knob called name ('-' read as '_'): 0 and *k, 1 for input_key, -1 for neither. */
static int
knob_find(const char *name, enum gd_knob *k)
{
    if (gd_knob_find(name, k) == 0)
        return 0;
    const char *a = INPUT_KEY, *b = name;
    while (*a != '\0' && (*a == *b || (*a == '_' && *b == '-'))) {
        a++;
        b++;
    }
    return *a == '\0' && *b == '\0' ? 1 : -1;
}

/* 1 for the knobs run.json records as numbers. */
static int
numeric(enum gd_knob k)
{
    enum gd_knob_kind kind = gd_knob_info(k)->kind;
    return kind == GD_KNOB_KIND_COUNT || kind == GD_KNOB_KIND_ROWS || kind == GD_KNOB_KIND_BYTES ||
           kind == GD_KNOB_KIND_MIB;
}

int
agt_sha256_valid(const char *s)
{
    if (s == NULL || strlen(s) != 64)
        return 0;
    for (int i = 0; i < 64; i++)
        if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
            return 0;
    return 1;
}

int
agt_basename_valid(const char *s)
{
    if (s == NULL || s[0] == '\0' || strcmp(s, ".") == 0 || strcmp(s, "..") == 0 ||
        strlen(s) > 255)
        return 0;
    for (const char *p = s; *p; p++)
        if (*p == '/' || (unsigned char)*p < 0x20 || *p == 0x7f)
            return 0;
    return 1;
}

int
agt_job_name_valid(const char *s)
{
    if (!agt_basename_valid(s))
        return 0;
    for (const char *p = s; *p; p++)
        if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
              strchr("._-+@", *p) != NULL))
            return 0;
    return 1;
}

int
agt_job_path_valid(const char *s)
{
    if (s == NULL || s[0] == '\0' || strlen(s) > AGT_JOB_PATH_MAX)
        return 0;
    int depth = 0;
    for (const char *p = s;; depth++) {
        size_t n = strcspn(p, "/");
        char part[256];
        if (n == 0 || n >= sizeof part || depth >= AGT_JOB_PATH_DEPTH)
            return 0;
        memcpy(part, p, n);
        part[n] = '\0';
        if (!agt_job_name_valid(part))
            return 0;
        if (p[n] == '\0')
            return 1;
        p += n + 1;
    }
}

int
agt_job_paths_clash(const char *a, const char *b)
{
    size_t na = strlen(a), nb = strlen(b), n = na < nb ? na : nb;
    if (strncmp(a, b, n) != 0)
        return 0;
    return na == nb || (na < nb ? b[na] == '/' : a[nb] == '/');
}

int
agt_cache_path(const char *dir, const char *sha256, long pid, char *out, size_t size, char *tmp,
               size_t tmp_size, struct gd_err *err)
{
    if (!agt_sha256_valid(sha256))
        return gd_err_set(err, GD_EINVAL, "not a SHA-256 (64 lowercase hex digits): %.80s",
                          sha256 ? sha256 : "(none)");
    int n = snprintf(out, size, "%s/files/%s", dir, sha256);
    if (n < 0 || (size_t)n >= size)
        return gd_err_set(err, GD_EINVAL, "the cache folder's path is too long: %.200s", dir);
    if (tmp != NULL) {
        n = snprintf(tmp, tmp_size, "%s/files/.%s.%ld.tmp", dir, sha256, pid);
        if (n < 0 || (size_t)n >= tmp_size)
            return gd_err_set(err, GD_EINVAL, "the cache folder's path is too long: %.200s",
                              dir);
    }
    return 0;
}

int
agt_knob_kv(const char *arg, json_t *knobs, struct gd_err *err)
{
    char key[64];
    const char *v;
    if (agt_kv_split(arg, key, sizeof key, &v, err) != 0)
        return gd_err_prefix(err, "--knob ");
    enum gd_knob which;
    int found = knob_find(key, &which);
    if (found < 0)
        return gd_err_set(err, GD_EINVAL, "--knob %s: no such knob (there are: %s)", key,
                          agt_knob_names());
    const char *name = found == 1 ? INPUT_KEY : gd_knob_info(which)->name;
    if (json_object_get(knobs, name) != NULL)
        return gd_err_set(err, GD_EINVAL, "--knob %s is given twice", name);
    if (*v == '\0')
        return gd_err_set(err, GD_EINVAL, "--knob %s= needs a value", name);
    if (found == 1) {
        json_object_set_new(knobs, name, json_string(v));
        return 0;
    }
    /* checked here, so a mistake is found before the job goes out; sent in its one
     * spelling, a number for the knobs run.json records as numbers */
    struct gd_knobs k;
    gd_knobs_init(&k);
    if (gd_knob_parse(&k, which, v, err) != 0)
        return gd_err_prefix(err, "--knob %s ", name);
    char text[1100];
    gd_knob_format(&k, which, text, sizeof text);
    if (!gd_knob_is_set(&k, which) || !numeric(which) || text[0] < '0' || text[0] > '9')
        json_object_set_new(knobs, name, json_string(gd_knob_is_set(&k, which) ? text : v));
    else
        json_object_set_new(knobs, name, json_integer((json_int_t)strtoll(text, NULL, 10)));
    return 0;
}

/* 1 when key may be matched on. */
static int
match_key_valid(const char *key)
{
    if (strcmp(key, "backend") == 0 || strcmp(key, "host") == 0 || strcmp(key, "key") == 0)
        return 1;
    const char *rest = NULL;
    if (strncmp(key, "env.", 4) == 0)
        rest = key + 4;
    else if (strncmp(key, "labels.", 7) == 0)
        rest = key + 7;
    return rest != NULL && *rest != '\0' && strchr(rest, '.') == NULL;
}

int
agt_match_kv(const char *arg, json_t *match, struct gd_err *err)
{
    char key[128];
    const char *v;
    if (agt_kv_split(arg, key, sizeof key, &v, err) != 0)
        return gd_err_prefix(err, "--match ");
    if (!match_key_valid(key))
        return gd_err_set(err, GD_EINVAL,
                          "--match %s: a key is backend, host, key, env.FIELD or labels.NAME",
                          key);
    if (json_object_get(match, key) != NULL)
        return gd_err_set(err, GD_EINVAL, "--match %s is given twice (give its values as "
                                          "one comma list: %s=A,B)", key, key);
    json_t *values = json_array();
    const char *p = v;
    for (;;) {
        size_t n = strcspn(p, ",");
        if (n == 0) {
            json_decref(values);
            return gd_err_set(err, GD_EINVAL, "--match %.200s: an empty value", arg);
        }
        json_array_append_new(values, json_stringn(p, n));
        if (p[n] == '\0')
            break;
        p += n + 1;
    }
    if (json_array_size(values) == 1) {
        json_object_set(match, key, json_array_get(values, 0));
        json_decref(values);
    } else {
        json_object_set_new(match, key, values);
    }
    return 0;
}

int
agt_knob_args(json_t *knobs, char **argv, int *argc, int max, struct gd_err *err)
{
    if (knobs == NULL || json_is_null(knobs))
        return 0;
    if (!json_is_object(knobs))
        return gd_err_set(err, GD_EINVAL, "the job's knobs are not a JSON object");
    const char *key;
    json_t *v;
    int start = *argc;
    json_object_foreach(knobs, key, v) {
        enum gd_knob which;
        int found = knob_find(key, &which);
        if (found < 0) {
            gd_err_set(err, GD_EINVAL, "unknown knob \"%.60s\" (this agent knows: %s)", key,
                       agt_knob_names());
            goto fail;
        }
        const char *name = found == 1 ? INPUT_KEY : gd_knob_info(which)->name;
        int onoff = found == 0 && gd_knob_info(which)->kind == GD_KNOB_KIND_ONOFF;
        int number = found == 0 && numeric(which);
        char value[1100];
        if (json_is_string(v) && json_string_length(v) < sizeof value &&
            strlen(json_string_value(v)) == json_string_length(v)) {
            snprintf(value, sizeof value, "%s", json_string_value(v));
        } else if (json_is_integer(v) && number) {
            snprintf(value, sizeof value, "%" JSON_INTEGER_FORMAT, json_integer_value(v));
        } else if (json_is_boolean(v) && onoff) {
            snprintf(value, sizeof value, "%s", json_is_true(v) ? "on" : "off");
        } else {
            gd_err_set(err, GD_EINVAL, "knob %s takes %s", name,
                       onoff    ? "on, off or a boolean"
                       : number ? "an integer"
                                : "a string (of at most 1099 bytes)");
            goto fail;
        }
        if (*argc + 2 > max) {
            gd_err_set(err, GD_EINVAL, "the job has too many knobs");
            goto fail;
        }
        char flag[80];
        if (found == 1)
            snprintf(flag, sizeof flag, "--input-key");
        else
            gd_knob_flag(which, flag, sizeof flag);
        argv[(*argc)++] = strdup(flag);
        argv[(*argc)++] = strdup(value);
        if (argv[*argc - 1] == NULL || argv[*argc - 2] == NULL) {
            gd_err_set(err, GD_ENOMEM, "out of memory");
            goto fail;
        }
    }
    return 0;
fail:
    while (*argc > start)
        free(argv[--(*argc)]);
    return err->code;
}

void
agt_last_line(const char *text, size_t len, char *out, size_t size)
{
    out[0] = '\0';
    if (text == NULL || size == 0)
        return;
    size_t end = len;
    while (end > 0 && (text[end - 1] == '\n' || text[end - 1] == '\r' || text[end - 1] == ' '))
        end--;
    size_t start = end;
    while (start > 0 && text[start - 1] != '\n')
        start--;
    size_t n = end - start < size - 1 ? end - start : size - 1;
    for (size_t i = 0; i < n; i++) {
        unsigned char ch = (unsigned char)text[start + i];
        out[i] = ch < 0x20 && ch != '\t' ? '?' : (char)ch;
    }
    out[n] = '\0';
}

static int
by_name(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

int
agt_device_key(const char *device_id, int n_backends, const char *host, const char *backend,
               json_t *env, json_t *labels, size_t max, char *out, size_t size, struct gd_err *err)
{
    char key[2048];
    size_t n = 0;
    if (device_id != NULL) {
        n = (size_t)snprintf(key, sizeof key, n_backends > 1 ? "%s/%s" : "%s", device_id, backend);
    } else {
        const char *uuid = json_string_value(json_object_get(env, "gpu_uuid"));
        n = (size_t)snprintf(key, sizeof key, "%s/%s", host, backend);
        if (strcmp(backend, "cuda") == 0 && n < sizeof key)
            n += (size_t)snprintf(key + n, sizeof key - n, ":%s",
                                  uuid != NULL && uuid[0] != '\0' ? uuid : "0");
        size_t count = json_is_object(labels) ? json_object_size(labels) : 0;
        const char *names[64];
        size_t k = 0;
        const char *name;
        json_t *v;
        json_object_foreach(labels, name, v)
        {
            if (k < 64)
                names[k++] = name;
        }
        if (count > 64)
            return gd_err_set(err, GD_EINVAL, "more than 64 labels: give --device-id");
        qsort(names, k, sizeof *names, by_name);
        for (size_t i = 0; i < k && n < sizeof key; i++)
            n += (size_t)snprintf(key + n, sizeof key - n, " label.%s=%s", names[i],
                                  json_string_value(json_object_get(labels, names[i])));
    }
    if (n >= sizeof key || n > max || n >= size)
        return gd_err_set(err, GD_EINVAL,
                          "the device key of %s would be %zu bytes, over the daemon's %zu: give "
                          "a shorter --device-id (or fewer labels)",
                          backend, n, max);
    memcpy(out, key, n + 1);
    return 0;
}
