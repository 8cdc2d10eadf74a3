/* knobs.c: numerics knobs, their parsing, and the environment record. */
#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "gpudiff/run.h"
#include "internal.h"

/* 1 when name is an item of the comma list. */
static int
in_list(const char *list, const char *name)
{
    size_t n = strlen(name);
    for (const char *p = list; *p != '\0';) {
        size_t len = strcspn(p, ",");
        if (len == n && strncmp(p, name, n) == 0)
            return 1;
        p += len;
        if (*p == ',')
            p++;
    }
    return 0;
}

int
gd_knobs_set_emulate(struct gd_knobs *k, const char *text, struct gd_err *err)
{
    const char *at = strchr(text, '@');
    char head[32];
    size_t n = at ? (size_t)(at - text) : strlen(text);
    if (n >= sizeof head)
        return gd_err_set(err, GD_EINVAL, "unknown emulation %s (tf32, bf16, fp16, none)", text);
    memcpy(head, text, n);
    head[n] = '\0';
    enum gd_emulate e;
    unsigned classes;
    int rc = gd_emulate_parse(head, &e, &classes, err);
    if (rc != 0)
        return rc;
    if (at != NULL) {
        if (e == GD_EMULATE_NONE || strchr(head, ':') != NULL)
            return gd_err_set(err, GD_EINVAL, "%s: @NODES follows a format alone (tf32@fc2), "
                              "not none or classes", text);
        if (at[1] == '\0' || strlen(at + 1) >= sizeof k->emulate_nodes ||
            strstr(at + 1, ",,") != NULL || at[strlen(at) - 1] == ',')
            return gd_err_set(err, GD_EINVAL, "%s: give node names after @, comma separated "
                              "(at most %zu characters)", text, sizeof k->emulate_nodes - 1);
        classes = GD_CLASS_GEMM | GD_CLASS_CONV;
    }
    k->emulate = e;
    k->emulate_classes = classes;
    snprintf(k->emulate_nodes, sizeof k->emulate_nodes, "%s", at ? at + 1 : "");
    return 0;
}

void
gd_knobs_emulate_text(const struct gd_knobs *k, char *out, size_t size)
{
    unsigned c = k->emulate_classes;
    if (k->emulate == GD_EMULATE_NONE)
        snprintf(out, size, "none");
    else if (k->emulate_nodes[0] != '\0')
        snprintf(out, size, "%s@%s", gd_emulate_name(k->emulate), k->emulate_nodes);
    else
        snprintf(out, size, "%s:%s%s%s", gd_emulate_name(k->emulate),
                 c & GD_CLASS_CONV ? "conv" : "",
                 (c & GD_CLASS_CONV) && (c & GD_CLASS_GEMM) ? "," : "",
                 c & GD_CLASS_GEMM ? "gemm" : "");
}

int
gd_knobs_emulates(const struct gd_knobs *k, const char *name, unsigned op_class)
{
    if (k->emulate == GD_EMULATE_NONE || !(k->emulate_classes & op_class))
        return 0;
    return k->emulate_nodes[0] == '\0' || (name != NULL && in_list(k->emulate_nodes, name));
}

void
gd_knobs_init(struct gd_knobs *k)
{
    memset(k, 0, sizeof *k);
    k->emulate = GD_EMULATE_NONE;
    k->emulate_classes = GD_CLASS_GEMM;
    k->tf32 = -1;
    k->workspace_limit = -1;
    k->reduced_reduction = -1;
}

const char *
gd_emulate_name(enum gd_emulate e)
{
    switch (e) {
    case GD_EMULATE_NONE:
        return "none";
    case GD_EMULATE_TF32:
        return "tf32";
    case GD_EMULATE_BF16:
        return "bf16";
    case GD_EMULATE_FP16:
        return "fp16";
    }
    return "?";
}

int
gd_emulate_parse(const char *text, enum gd_emulate *e, unsigned *classes, struct gd_err *err)
{
    char fmt[16];
    const char *colon = strchr(text, ':');
    size_t n = colon ? (size_t)(colon - text) : strlen(text);
    if (n >= sizeof fmt)
        return gd_err_set(err, GD_EINVAL, "unknown emulation %s (tf32, bf16, fp16, none)", text);
    memcpy(fmt, text, n);
    fmt[n] = '\0';
    enum gd_emulate which;
    if (strcmp(fmt, "tf32") == 0)
        which = GD_EMULATE_TF32;
    else if (strcmp(fmt, "bf16") == 0)
        which = GD_EMULATE_BF16;
    else if (strcmp(fmt, "fp16") == 0)
        which = GD_EMULATE_FP16;
    else if (strcmp(fmt, "none") == 0 && colon == NULL)
        which = GD_EMULATE_NONE;
    else
        return gd_err_set(err, GD_EINVAL, "unknown emulation %s (tf32, bf16, fp16, none)", fmt);
    unsigned cls = GD_CLASS_GEMM;
    if (colon != NULL) {
        cls = 0;
        const char *p = colon + 1;
        while (*p != '\0') {
            size_t len = strcspn(p, ",");
            if (len == 4 && strncmp(p, "gemm", 4) == 0)
                cls |= GD_CLASS_GEMM;
            else if (len == 4 && strncmp(p, "conv", 4) == 0)
                cls |= GD_CLASS_CONV;
            else
                return gd_err_set(err, GD_EINVAL, "unknown op class %.*s in %s (gemm, conv)",
                                  (int)len, p, text);
            p += len;
            if (*p == ',')
                p++;
        }
        if (cls == 0)
            return gd_err_set(err, GD_EINVAL, "no op class after ':' in %s", text);
    }
    *e = which;
    *classes = cls;
    return 0;
}

int
gd_repro_check(const char *text, struct gd_err *err)
{
    if (strcmp(text, "off") == 0 || strcmp(text, "bitwise") == 0)
        return 0;
    return gd_err_set(err, GD_EINVAL, "repro mode %s is not off or bitwise", text);
}

int
gd_knobs_bitwise(const struct gd_knobs *knobs)
{
    return strcmp(knobs->repro, "bitwise") == 0;
}

void
gd_env_set(struct gd_env *env, const char *key, const char *fmt, ...)
{
    struct gd_env_item *it = NULL;
    for (int i = 0; i < env->n && it == NULL; i++)
        if (strcmp(env->items[i].key, key) == 0)
            it = &env->items[i];
    if (it == NULL) {
        if (env->n == GD_ENV_MAX)
            return;
        it = &env->items[env->n++];
        snprintf(it->key, sizeof it->key, "%s", key);
    }
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(it->value, sizeof it->value, fmt, ap);
    va_end(ap);
}

const char *
gd_env_get(const struct gd_env *env, const char *key)
{
    for (int i = 0; i < env->n; i++)
        if (strcmp(env->items[i].key, key) == 0)
            return env->items[i].value;
    return NULL;
}

int
gd__driver_version_parse(const char *line, char *out, size_t size)
{
    const char *p = line;
    while (*p != '\0') {
        while (*p == ' ' || *p == '\t')
            p++;
        size_t len = strcspn(p, " \t\n");
        int digits = 0, dots = 0, other = 0;
        for (size_t i = 0; i < len; i++) {
            if (isdigit((unsigned char)p[i]))
                digits++;
            else if (p[i] == '.')
                dots++;
            else
                other++;
        }
        if (len > 0 && isdigit((unsigned char)p[0]) && dots > 0 && other == 0 && digits > dots &&
            len < size) {
            memcpy(out, p, len);
            out[len] = '\0';
            return 0;
        }
        p += len;
        while (*p == '\n')
            p++;
    }
    return GD_ENOENT;
}
