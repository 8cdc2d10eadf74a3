/*
 * knobs.c: the knob table made from knobs.def (gpudiff/knobs.h): each knob's spelling,
 * parsing, printing and JSON records; emulation specs; and the environment record.
 */
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpudiff/knobs.h"
#include "gpudiff/session.h"
#include "internal.h"

#define GD__KNOB_OFFSET2_ONOFF(name)   0
#define GD__KNOB_OFFSET2_CHOICE(name)  0
#define GD__KNOB_OFFSET2_TEXT(name)    0
#define GD__KNOB_OFFSET2_EMULATE(name) offsetof(struct gd_knobs, name##_classes)
#define GD__KNOB_OFFSET2_COUNT(name)   0
#define GD__KNOB_OFFSET2_ROWS(name)    0
#define GD__KNOB_OFFSET2_BYTES(name)   0
#define GD__KNOB_OFFSET2_MIB(name)     0
#define GD__KNOB_OFFSET3(kind, name)   GD__KNOB_OFFSET3_##kind(name)
#define GD__KNOB_OFFSET3_ONOFF(name)   0
#define GD__KNOB_OFFSET3_CHOICE(name)  0
#define GD__KNOB_OFFSET3_TEXT(name)    0
#define GD__KNOB_OFFSET3_EMULATE(name) offsetof(struct gd_knobs, name##_nodes)
#define GD__KNOB_OFFSET3_COUNT(name)   0
#define GD__KNOB_OFFSET3_ROWS(name)    0
#define GD__KNOB_OFFSET3_BYTES(name)   0
#define GD__KNOB_OFFSET3_MIB(name)     0

/* knobs.def's lines, and where each knob's field lies (an emulation's classes and node
 * list: its second and third; the list's size is the line's SIZE). */
static const struct {
    struct gd_knob_info info;
    size_t offset2, offset3, size3;
} knob_table[GD_KNOB_COUNT] = {
#define GD_KNOB(e, name, kind, size, values, dflt, backends, cat, sweep, help)                     \
    [GD_KNOB_##e] = {{#name, GD_KNOB_KIND_##kind, values, dflt, backends, GD_KNOB_CAT_##cat,       \
                      GD_KNOB_SWEEP_##sweep, help, offsetof(struct gd_knobs, name),                \
                      sizeof(((struct gd_knobs *)0)->name)},                                       \
                     GD__KNOB_OFFSET2_##kind(name), GD__KNOB_OFFSET3(kind, name), size},
#include "knobs.def"
#undef GD_KNOB
};

const struct gd_knob_info *
gd_knob_info(enum gd_knob k)
{
    return (unsigned)k < GD_KNOB_COUNT ? &knob_table[k].info : NULL;
}

int
gd_knob_find(const char *name, enum gd_knob *out)
{
    for (int k = 0; name != NULL && k < GD_KNOB_COUNT; k++) {
        const char *a = knob_table[k].info.name, *b = name;
        while (*a != '\0' && (*a == *b || (*a == '_' && *b == '-'))) {
            a++;
            b++;
        }
        if (*a == '\0' && *b == '\0') {
            *out = (enum gd_knob)k;
            return 0;
        }
    }
    return GD_ENOENT;
}

void
gd_knob_flag(enum gd_knob k, char *out, size_t size)
{
    const struct gd_knob_info *i = gd_knob_info(k);
    int n = snprintf(out, size, "--%s", i ? i->name : "?");
    for (int j = 2; j < n && (size_t)j < size; j++)
        if (out[j] == '_')
            out[j] = '-';
}

const char *
gd_knob_category_name(enum gd_knob_category c)
{
    switch (c) {
    case GD_KNOB_CAT_ARITHMETIC:
        return "arithmetic";
    case GD_KNOB_CAT_ALGORITHM:
        return "algorithm";
    case GD_KNOB_CAT_BATCH:
        return "batch";
    case GD_KNOB_CAT_OTHER:
        break;
    }
    return "other";
}

const char *
gd_knob_sweep_name(enum gd_knob_sweep s)
{
    switch (s) {
    case GD_KNOB_SWEEP_AXIS:
        return "axis";
    case GD_KNOB_SWEEP_WHATIF:
        return "whatif";
    case GD_KNOB_SWEEP_SIZES:
        return "sizes";
    case GD_KNOB_SWEEP_NONE:
        break;
    }
    return "none";
}

int
gd_knob_applies(enum gd_knob k, const char *backend)
{
    const struct gd_knob_info *i = gd_knob_info(k);
    if (i == NULL)
        return 0;
    if (i->backends[0] == '\0')
        return 1;
    size_t n = strlen(backend ? backend : "cpu");
    for (const char *p = i->backends; *p != '\0';) {
        size_t len = strcspn(p, " ");
        if (len == n && strncmp(p, backend ? backend : "cpu", n) == 0)
            return 1;
        p += len;
        while (*p == ' ')
            p++;
    }
    return 0;
}

/* The knob's field(s) in k. */
static void *
field(const struct gd_knobs *k, enum gd_knob which)
{
    return (char *)k + knob_table[which].info.offset;
}

static unsigned *
classes_field(const struct gd_knobs *k, enum gd_knob which)
{
    return (unsigned *)((char *)k + knob_table[which].offset2);
}

static char *
nodes_field(const struct gd_knobs *k, enum gd_knob which)
{
    return (char *)k + knob_table[which].offset3;
}

void
gd_knob_unset(struct gd_knobs *k, enum gd_knob which)
{
    const struct gd_knob_info *i = gd_knob_info(which);
    if (i == NULL)
        return;
    void *f = field(k, which);
    switch (i->kind) {
    case GD_KNOB_KIND_ONOFF:
        *(int *)f = -1;
        break;
    case GD_KNOB_KIND_CHOICE:
    case GD_KNOB_KIND_TEXT:
        memset(f, 0, i->size);
        break;
    case GD_KNOB_KIND_EMULATE:
        *(enum gd_emulate *)f = GD_EMULATE_NONE;
        *classes_field(k, which) = GD_CLASS_GEMM;
        memset(nodes_field(k, which), 0, knob_table[which].size3);
        break;
    case GD_KNOB_KIND_COUNT:
        *(int *)f = 0;
        break;
    case GD_KNOB_KIND_ROWS:
    case GD_KNOB_KIND_MIB:
        *(int64_t *)f = 0;
        break;
    case GD_KNOB_KIND_BYTES:
        *(int64_t *)f = -1;
        break;
    }
}

void
gd_knobs_init(struct gd_knobs *k)
{
    memset(k, 0, sizeof *k);
    for (int i = 0; i < GD_KNOB_COUNT; i++)
        gd_knob_unset(k, (enum gd_knob)i);
}

int
gd_knob_is_set(const struct gd_knobs *k, enum gd_knob which)
{
    const struct gd_knob_info *i = gd_knob_info(which);
    if (i == NULL)
        return 0;
    const void *f = field(k, which);
    switch (i->kind) {
    case GD_KNOB_KIND_ONOFF:
        return *(const int *)f >= 0;
    case GD_KNOB_KIND_CHOICE:
    case GD_KNOB_KIND_TEXT:
        return ((const char *)f)[0] != '\0';
    case GD_KNOB_KIND_EMULATE:
        return *(const enum gd_emulate *)f != GD_EMULATE_NONE;
    case GD_KNOB_KIND_COUNT:
        return *(const int *)f != 0;
    case GD_KNOB_KIND_ROWS:
    case GD_KNOB_KIND_MIB:
        return *(const int64_t *)f != 0;
    case GD_KNOB_KIND_BYTES:
        return *(const int64_t *)f >= 0;
    }
    return 0;
}

/* "a, b or c" of a '|' list, into out. */
static void
values_words(const char *values, char *out, size_t size)
{
    size_t used = 0, n = strlen(values);
    out[0] = '\0';
    for (size_t at = 0; at <= n && used < size;) {
        size_t len = strcspn(values + at, "|");
        int last = at + len >= n;
        const char *sep = at == 0 ? "" : last ? " or " : ", ";
        const char *v = values + at, *dots = strstr(v, "..");
        int w;
        if (dots != NULL && dots < v + len && dots + 2 == v + len) /* lo.. */
            w = snprintf(out + used, size - used, "%s%.*s or more", sep, (int)(dots - v), v);
        else if (dots != NULL && dots < v + len) /* lo..hi */
            w = snprintf(out + used, size - used, "%s%.*s to %.*s", sep, (int)(dots - v), v,
                         (int)(v + len - dots - 2), dots + 2);
        else
            w = snprintf(out + used, size - used, "%s%.*s", sep, (int)len, v);
        if (w < 0)
            break;
        used += (size_t)w;
        at += len + 1;
    }
}

static int
bad_value(const struct gd_knob_info *i, const char *text, struct gd_err *err)
{
    char words[256];
    values_words(i->values, words, sizeof words);
    if (i->kind == GD_KNOB_KIND_EMULATE)
        snprintf(words, sizeof words,
                 "none, tf32, bf16 or fp16, optionally :gemm, :conv or :conv+gemm, or "
                 "@NODE,... (those GEMM and convolution nodes only)");
    else if (i->kind == GD_KNOB_KIND_BYTES)
        snprintf(words, sizeof words, "none or a byte count (K, M, G: powers of 1024)");
    else if (i->kind == GD_KNOB_KIND_MIB) {
        char range[128];
        values_words(i->values, range, sizeof range);
        snprintf(words, sizeof words, "a size in MiB, %s", range);
    }
    return gd_err_set(err, GD_EINVAL, "takes %s, not %.200s", words, text);
}

/* An integer of the values' range "lo..hi" (hi may be left out) in *out. */
static int
in_range(const char *values, const char *text, long long *out)
{
    const char *r = strstr(values, "..");
    if (r == NULL)
        return -1;
    const char *lo_at = r;
    while (lo_at > values && lo_at[-1] >= '0' && lo_at[-1] <= '9')
        lo_at--;
    long long lo = strtoll(lo_at, NULL, 10);
    long long hi = r[2] >= '0' && r[2] <= '9' ? strtoll(r + 2, NULL, 10) : INT64_MAX;
    char *end;
    errno = 0;
    long long v = strtoll(text, &end, 10);
    if (text[0] < '0' || text[0] > '9' || *end != '\0' || errno != 0 || v < lo || v > hi)
        return -1;
    *out = v;
    return 0;
}

/* A byte count with an optional K, M or G (powers of 1024). */
static int
parse_bytes(const char *s, int64_t *out)
{
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (*s < '0' || *s > '9' || errno != 0 || v < 0)
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

/* 1 when text is one of a CHOICE's values: a literal, or a prefix ending in ':' or '='
 * followed by an UPPERCASE placeholder and then any text of printable characters. */
static int
choice_ok(const char *values, const char *text)
{
    size_t n = strlen(values), tlen = strlen(text);
    for (size_t at = 0; at < n;) {
        size_t len = strcspn(values + at, "|");
        const char *v = values + at;
        size_t pre = 0;
        while (pre < len && v[pre] != ':' && v[pre] != '=')
            pre++;
        int placeholder = pre < len && v[pre + 1] >= 'A' && v[pre + 1] <= 'Z';
        if (!placeholder && len == tlen && strncmp(v, text, len) == 0)
            return 1;
        if (placeholder && tlen > pre + 1 && strncmp(v, text, pre + 1) == 0) {
            for (const char *p = text + pre + 1; *p; p++)
                if ((unsigned char)*p <= ' ' || *p == 0x7f)
                    return 0;
            return 1;
        }
        at += len + 1;
    }
    return 0;
}

int
gd_knob_parse(struct gd_knobs *k, enum gd_knob which, const char *text, struct gd_err *err)
{
    const struct gd_knob_info *i = gd_knob_info(which);
    if (i == NULL)
        return gd_err_set(err, GD_EINVAL, "no such knob");
    if (text == NULL)
        text = "";
    void *f = field(k, which);
    long long v;
    int64_t bytes;
    switch (i->kind) {
    case GD_KNOB_KIND_ONOFF:
        if (strcmp(text, "on") != 0 && strcmp(text, "off") != 0)
            return bad_value(i, text, err);
        *(int *)f = strcmp(text, "on") == 0;
        return 0;
    case GD_KNOB_KIND_CHOICE:
        if (!choice_ok(i->values, text))
            return bad_value(i, text, err);
        if (strlen(text) >= i->size)
            return gd_err_set(err, GD_EINVAL, "takes at most %zu characters, not %zu", i->size - 1,
                              strlen(text));
        snprintf(f, i->size, "%s", text);
        return 0;
    case GD_KNOB_KIND_TEXT:
        if (text[0] == '\0')
            return bad_value(i, text, err);
        for (const char *p = text; *p; p++)
            if ((unsigned char)*p <= ' ' || *p == 0x7f)
                return bad_value(i, text, err);
        if (strlen(text) >= i->size)
            return gd_err_set(err, GD_EINVAL, "takes at most %zu characters, not %zu", i->size - 1,
                              strlen(text));
        snprintf(f, i->size, "%s", text);
        return 0;
    case GD_KNOB_KIND_EMULATE: {
        /* FORMAT[:CLASSES], or FORMAT@NODE,NODE...: only those nodes, whatever their class */
        const char *at = strchr(text, '@');
        char head[32];
        size_t n = at != NULL ? (size_t)(at - text) : strlen(text);
        enum gd_emulate e;
        unsigned classes;
        if (n >= sizeof head)
            return bad_value(i, text, err);
        memcpy(head, text, n);
        head[n] = '\0';
        if (gd_emulate_parse(head, &e, &classes, NULL) != 0)
            return bad_value(i, text, err);
        size_t size3 = knob_table[which].size3;
        if (at != NULL) {
            const char *nodes = at + 1;
            size_t len = strlen(nodes);
            if (e == GD_EMULATE_NONE || strchr(head, ':') != NULL)
                return gd_err_set(err, GD_EINVAL,
                                  "takes @NODE,... after a format alone (tf32@fc2), not %.200s",
                                  text);
            if (len == 0 || nodes[0] == ',' || nodes[len - 1] == ',' ||
                strstr(nodes, ",,") != NULL || strpbrk(nodes, " \t\n@") != NULL)
                return gd_err_set(err, GD_EINVAL,
                                  "takes node names after @, comma separated, not %.200s", text);
            if (len >= size3)
                return gd_err_set(err, GD_EINVAL, "takes at most %zu characters of node names, "
                                  "not %zu", size3 - 1, len);
            classes = GD_CLASS_GEMM | GD_CLASS_CONV;
        }
        *(enum gd_emulate *)f = e;
        *classes_field(k, which) = classes;
        snprintf(nodes_field(k, which), size3, "%s", at != NULL ? at + 1 : "");
        return 0;
    }
    case GD_KNOB_KIND_COUNT:
        if (strcmp(text, "auto") == 0) {
            *(int *)f = 0;
            return 0;
        }
        if (in_range(i->values, text, &v) != 0 || v > INT32_MAX)
            return bad_value(i, text, err);
        *(int *)f = (int)v;
        return 0;
    case GD_KNOB_KIND_ROWS:
        if (in_range(i->values, text, &v) != 0)
            return bad_value(i, text, err);
        *(int64_t *)f = v;
        return 0;
    case GD_KNOB_KIND_BYTES:
        if (strcmp(text, "none") == 0) {
            *(int64_t *)f = -1;
            return 0;
        }
        if (parse_bytes(text, &bytes) != 0)
            return bad_value(i, text, err);
        *(int64_t *)f = bytes;
        return 0;
    case GD_KNOB_KIND_MIB:
        if (in_range(i->values, text, &v) != 0)
            return bad_value(i, text, err);
        *(int64_t *)f = (int64_t)v << 20;
        return 0;
    }
    return bad_value(i, text, err);
}

void
gd_knob_format(const struct gd_knobs *k, enum gd_knob which, char *out, size_t size)
{
    const struct gd_knob_info *i = gd_knob_info(which);
    if (size == 0)
        return;
    out[0] = '\0';
    if (i == NULL)
        return;
    if (!gd_knob_is_set(k, which)) {
        snprintf(out, size, "%s", i->default_value);
        return;
    }
    const void *f = field(k, which);
    switch (i->kind) {
    case GD_KNOB_KIND_ONOFF:
        snprintf(out, size, "%s", *(const int *)f ? "on" : "off");
        break;
    case GD_KNOB_KIND_CHOICE:
    case GD_KNOB_KIND_TEXT:
        snprintf(out, size, "%s", (const char *)f);
        break;
    case GD_KNOB_KIND_EMULATE: {
        unsigned c = *classes_field(k, which);
        const char *nodes = nodes_field(k, which);
        if (nodes[0] != '\0') {
            snprintf(out, size, "%s@%s", gd_emulate_name(*(const enum gd_emulate *)f), nodes);
            break;
        }
        snprintf(out, size, "%s:%s%s%s", gd_emulate_name(*(const enum gd_emulate *)f),
                 c & GD_CLASS_CONV ? "conv" : "",
                 (c & GD_CLASS_CONV) && (c & GD_CLASS_GEMM) ? "+" : "",
                 c & GD_CLASS_GEMM ? "gemm" : "");
        break;
    }
    case GD_KNOB_KIND_COUNT:
        snprintf(out, size, "%d", *(const int *)f);
        break;
    case GD_KNOB_KIND_ROWS:
    case GD_KNOB_KIND_BYTES:
        snprintf(out, size, "%lld", (long long)*(const int64_t *)f);
        break;
    case GD_KNOB_KIND_MIB:
        snprintf(out, size, "%lld", (long long)(*(const int64_t *)f >> 20));
        break;
    }
}

/* 1 for the kinds recorded as numbers. */
static int
numeric(enum gd_knob_kind kind)
{
    return kind == GD_KNOB_KIND_COUNT || kind == GD_KNOB_KIND_ROWS || kind == GD_KNOB_KIND_BYTES ||
           kind == GD_KNOB_KIND_MIB;
}

/* The JSON record of a formatted value: a number for the numeric kinds (null for a word
 * such as none or auto, or nothing), a string otherwise (null for nothing). */
static json_t *
record(const struct gd_knob_info *i, const char *text)
{
    if (text[0] == '\0')
        return json_null();
    if (!numeric(i->kind))
        return json_string(text);
    if (text[0] < '0' || text[0] > '9')
        return json_null();
    return json_integer((json_int_t)strtoll(text, NULL, 10));
}

json_t *
gd_knobs_json(const struct gd_knobs *k, const char *backend, const struct gd_env *env)
{
    json_t *j = json_object();
    for (int w = 0; j != NULL && w < GD_KNOB_COUNT; w++) {
        enum gd_knob which = (enum gd_knob)w;
        const struct gd_knob_info *i = gd_knob_info(which);
        if (!gd_knob_applies(which, backend))
            continue;
        struct gd_knobs resolved = *k;
        /* as the session resolved it: the backend records what it used under the knob's
         * name (the CPU backends their thread count as cpu_threads) */
        const char *from_env = NULL;
        if (env != NULL)
            from_env = gd_env_get(env, which == GD_KNOB_THREADS ? "cpu_threads" : i->name);
        if (from_env != NULL && gd_knob_parse(&resolved, which, from_env, NULL) != 0)
            resolved = *k;
        char text[1100];
        gd_knob_format(&resolved, which, text, sizeof text);
        json_object_set_new(j, i->name, record(i, text));
    }
    return j;
}

static const char *
kind_name(enum gd_knob_kind kind)
{
    switch (kind) {
    case GD_KNOB_KIND_ONOFF:
        return "onoff";
    case GD_KNOB_KIND_CHOICE:
        return "choice";
    case GD_KNOB_KIND_TEXT:
        return "text";
    case GD_KNOB_KIND_EMULATE:
        return "emulate";
    case GD_KNOB_KIND_COUNT:
        return "count";
    case GD_KNOB_KIND_ROWS:
        return "rows";
    case GD_KNOB_KIND_BYTES:
        return "bytes";
    case GD_KNOB_KIND_MIB:
        return "mib";
    }
    return "?";
}

json_t *
gd_knobs_table_json(void)
{
    json_t *list = json_array();
    for (int k = 0; list != NULL && k < GD_KNOB_COUNT; k++) {
        const struct gd_knob_info *i = gd_knob_info((enum gd_knob)k);
        char flag[64];
        gd_knob_flag((enum gd_knob)k, flag, sizeof flag);
        json_t *backends = json_array();
        for (const char *p = i->backends; *p != '\0';) {
            size_t len = strcspn(p, " ");
            json_array_append_new(backends, json_stringn(p, len));
            p += len;
            while (*p == ' ')
                p++;
        }
        json_array_append_new(list, json_pack("{s:s, s:s, s:s, s:s, s:s, s:o, s:s, s:s, s:b, s:s}",
                                              "name", i->name, "flag", flag, "kind",
                                              kind_name(i->kind), "values", i->values, "default",
                                              i->default_value, "backends", backends, "category",
                                              gd_knob_category_name(i->category), "sweep",
                                              gd_knob_sweep_name(i->sweep), "numeric",
                                              numeric(i->kind), "help", i->help));
    }
    return list;
}

int
gd_knobs_from_json(json_t *obj, struct gd_knobs *out, struct gd_err *err)
{
    gd_knobs_init(out);
    if (obj == NULL || json_is_null(obj))
        return 0;
    if (!json_is_object(obj))
        return gd_err_set(err, GD_EINVAL, "knobs are not an object");
    const char *key;
    json_t *v;
    json_object_foreach(obj, key, v)
    {
        enum gd_knob which;
        if (gd_knob_find(key, &which) != 0 || json_is_null(v))
            continue;
        const struct gd_knob_info *i = gd_knob_info(which);
        char text[1100];
        if (json_is_boolean(v) && i->kind == GD_KNOB_KIND_ONOFF) {
            snprintf(text, sizeof text, "%s", json_is_true(v) ? "on" : "off");
        } else if (json_is_integer(v) && numeric(i->kind)) {
            snprintf(text, sizeof text, "%" JSON_INTEGER_FORMAT, json_integer_value(v));
        } else if (json_is_string(v) && json_string_length(v) < sizeof text) {
            snprintf(text, sizeof text, "%s", json_string_value(v));
            /* runs before knobs.def joined an emulation's classes with ',' (the node list
             * after '@' keeps its commas) */
            for (char *p = text; i->kind == GD_KNOB_KIND_EMULATE && *p && *p != '@'; p++)
                if (*p == ',')
                    *p = '+';
        } else {
            return gd_err_set(err, GD_EINVAL, "knobs.%s: a value of the wrong type", key);
        }
        if (gd_knob_parse(out, which, text, err) != 0)
            return gd_err_prefix(err, "knobs.%s ", key);
    }
    return 0;
}

int
gd_knobs_check(const struct gd_knobs *k, struct gd_err *err)
{
    for (int w = 0; w < GD_KNOB_COUNT; w++) {
        enum gd_knob which = (enum gd_knob)w;
        enum gd_knob_kind kind = knob_table[w].info.kind;
        /* the numbers are checked by the backends that read them (threads, sizes) */
        if (!gd_knob_is_set(k, which) || (kind != GD_KNOB_KIND_ONOFF &&
                                          kind != GD_KNOB_KIND_CHOICE &&
                                          kind != GD_KNOB_KIND_TEXT &&
                                          kind != GD_KNOB_KIND_EMULATE))
            continue;
        if (kind == GD_KNOB_KIND_ONOFF && *(const int *)field(k, which) > 1)
            return gd_err_set(err, GD_EINVAL, "knob %s is 0, 1 or -1 (unset), not %d",
                              knob_table[w].info.name, *(const int *)field(k, which));
        /* a set value prints in its one spelling, which parses back when it is a value */
        char text[1400];
        struct gd_knobs scratch;
        gd_knobs_init(&scratch);
        gd_knob_format(k, which, text, sizeof text);
        if (gd_knob_parse(&scratch, which, text, err) != 0) {
            char flag[64];
            gd_knob_flag(which, flag, sizeof flag);
            return gd_err_prefix(err, "%s ", flag);
        }
    }
    return 0;
}

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
gd_knobs_emulates(const struct gd_knobs *k, const char *name, unsigned op_class)
{
    if (k->emulate == GD_EMULATE_NONE || !(k->emulate_classes & op_class))
        return 0;
    return k->emulate_nodes[0] == '\0' || (name != NULL && in_list(k->emulate_nodes, name));
}

int
gd_knobs_bitwise(const struct gd_knobs *k)
{
    return strcmp(k->repro, "bitwise") == 0;
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
        if (*p == '\0')
            return gd_err_set(err, GD_EINVAL, "no op class after ':' in %s", text);
        for (;;) {
            size_t len = strcspn(p, "+");
            if (len == 4 && strncmp(p, "gemm", 4) == 0)
                cls |= GD_CLASS_GEMM;
            else if (len == 4 && strncmp(p, "conv", 4) == 0)
                cls |= GD_CLASS_CONV;
            else
                return gd_err_set(err, GD_EINVAL,
                                  "unknown op class %.*s in %s (gemm, conv, conv+gemm)", (int)len,
                                  p, text);
            p += len;
            if (*p == '\0')
                break;
            p++; /* '+' */
        }
    }
    *e = which;
    *classes = cls;
    return 0;
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
