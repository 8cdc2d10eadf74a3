/*
 * sweep_grid.c: the grid of `gpudiff-agent sweep`: SPEC parsed into settings, their names,
 * the default grids and the strict setting.
 *
 *   SPEC  := GROUP ('|' GROUP)*          the union of the groups' settings
 *   GROUP := AXIS (';' AXIS)*            the product of the group's axes
 *   AXIS  := KEY '=' VALUE (',' VALUE)*
 *
 * An axis a group does not name takes the backend's default. `batch` is not an axis of
 * settings: it lists the batch sizes every setting is run at (once in the whole SPEC).
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent.h"
#include "sweep.h"

enum axis {
    AX_CONV,
    AX_TF32,
    AX_MATH,
    AX_WORKSPACE,
    AX_EMULATE,
    AX_THREADS,
    AX_API,
    AX_BATCH,
    AX_REPRO
};

static const struct {
    const char *key;
    enum axis axis;
    const char *backends; /* where the axis exists */
} axes[] = {
    {"conv", AX_CONV, "cuda"},
    {"tf32", AX_TF32, "cuda"},
    {"math", AX_MATH, "cuda"},
    {"workspace", AX_WORKSPACE, "cuda"},
    {"emulate", AX_EMULATE, "cpu"},
    {"threads", AX_THREADS, "cpu cpu64"},
    {"api", AX_API, "cuda"},
    {"batch", AX_BATCH, "cuda cpu cpu64"},
    {"repro", AX_REPRO, "cuda"},
};

static int
backend_has(const char *list, const char *backend)
{
    size_t n = strlen(backend);
    for (const char *p = list; *p != '\0';) {
        size_t len = strcspn(p, " ");
        if (len == n && strncmp(p, backend, n) == 0)
            return 1;
        p += len;
        while (*p == ' ')
            p++;
    }
    return 0;
}

const char *
agt_grid_default(const char *backend)
{
    if (strcmp(backend, "cuda") == 0)
        return "conv=heuristic,autotune,deterministic;tf32=off,on | math=pedantic | workspace=0 | "
               "repro=bitwise";
    if (strcmp(backend, "cpu") == 0)
        return "emulate=none,tf32,tf32:conv+gemm,bf16,bf16:conv+gemm,fp16,fp16:conv+gemm";
    return "threads=auto";
}

static void
base_knobs(const char *backend, struct gd_knobs *k)
{
    gd_knobs_init(k);
    if (strcmp(backend, "cuda") == 0) {
        snprintf(k->conv_algo, sizeof k->conv_algo, "heuristic");
        k->tf32 = 0;
        snprintf(k->math_mode, sizeof k->math_mode, "default");
    }
}

void
agt_strict_knobs(const char *backend, struct gd_knobs *k)
{
    base_knobs(backend, k);
    if (strcmp(backend, "cuda") == 0)
        snprintf(k->conv_algo, sizeof k->conv_algo, "deterministic");
}

/* "tf32:gemm", "bf16:conv+gemm", "none". */
static void
emulate_text(const struct gd_knobs *k, char *out, size_t size)
{
    if (k->emulate == GD_EMULATE_NONE) {
        snprintf(out, size, "none");
        return;
    }
    unsigned c = k->emulate_classes;
    snprintf(out, size, "%s:%s%s%s", gd_emulate_name(k->emulate), c & GD_CLASS_CONV ? "conv" : "",
             (c & GD_CLASS_CONV) && (c & GD_CLASS_GEMM) ? "+" : "",
             c & GD_CLASS_GEMM ? "gemm" : "");
}

/* "a=1,b=eng0_k2=1" as "a@1+b@eng0_k2=1" (the first '=' of each pin). */
static void
pins_text(const char *pins, char *out, size_t size)
{
    size_t used = 0;
    int in_choice = 0;
    out[0] = '\0';
    for (const char *p = pins; *p != '\0' && used + 1 < size; p++) {
        char c = *p;
        if (c == ',') {
            c = '+';
            in_choice = 0;
        } else if (c == '=' && !in_choice) {
            c = '@';
            in_choice = 1;
        }
        out[used++] = c;
        out[used] = '\0';
    }
}

void
agt_setting_name(const char *backend, const struct gd_knobs *k, char *out, size_t size)
{
    char part[160];
    if (strcmp(backend, "cuda") == 0 && gd_knobs_bitwise(k)) {
        /* bitwise mode has no convolution algorithm, TF32 or workspace to name */
        snprintf(out, size, "repro=bitwise");
        return;
    }
    if (strcmp(backend, "cuda") == 0) {
        if (k->conv_pins[0] != '\0')
            pins_text(k->conv_pins, part, sizeof part);
        else
            snprintf(part, sizeof part, "%s", k->conv_algo[0] ? k->conv_algo : "heuristic");
        int used = snprintf(out, size, "%s tf32=%s", part, k->tf32 == 1 ? "on" : "off");
        if (used > 0 && (size_t)used < size && strcmp(k->math_mode, "pedantic") == 0)
            used += snprintf(out + used, size - (size_t)used, " math=pedantic");
        if (used > 0 && (size_t)used < size && k->workspace_limit >= 0)
            used += snprintf(out + used, size - (size_t)used, " workspace=%lld",
                             (long long)k->workspace_limit);
        if (used > 0 && (size_t)used < size && strcmp(k->conv_api, "legacy") == 0)
            snprintf(out + used, size - (size_t)used, " api=legacy");
        return;
    }
    if (strcmp(backend, "cpu") == 0) {
        emulate_text(k, part, sizeof part);
        if (k->threads > 0)
            snprintf(out, size, "emulate=%s threads=%d", part, k->threads);
        else
            snprintf(out, size, "emulate=%s", part);
        return;
    }
    if (k->threads > 0)
        snprintf(out, size, "threads=%d", k->threads);
    else
        snprintf(out, size, "threads=auto");
}


int
agt_grid_add(struct agt_grid *g, const char *backend, const struct gd_knobs *k)
{
    char name[sizeof g->settings[0].name];
    agt_setting_name(backend, k, name, sizeof name);
    for (int i = 0; i < g->n; i++)
        if (strcmp(g->settings[i].name, name) == 0)
            return i;
    if (g->n >= AGT_SWEEP_MAX_SETTINGS)
        return -1;
    if (g->n == g->cap) {
        int cap = g->cap ? g->cap * 2 : 16;
        struct agt_setting *s = realloc(g->settings, (size_t)cap * sizeof *s);
        if (s == NULL)
            return -1;
        g->settings = s;
        g->cap = cap;
    }
    struct agt_setting *s = &g->settings[g->n];
    memset(s, 0, sizeof *s);
    s->knobs = *k;
    s->knobs.batch = 0;
    snprintf(s->name, sizeof s->name, "%s", name);
    if (strcmp(k->conv_algo, "each") == 0 && k->conv_pins[0] == '\0')
        s->expand_each = 1;
    return g->n++;
}

int
agt_grid_mark_strict(struct agt_grid *g, const char *backend)
{
    struct gd_knobs k;
    agt_strict_knobs(backend, &k);
    int before = g->n;
    int i = agt_grid_add(g, backend, &k);
    if (i < 0)
        return -1;
    /* first: every other setting is compared with it */
    struct agt_setting s = g->settings[i];
    memmove(g->settings + 1, g->settings, (size_t)i * sizeof s);
    g->settings[0] = s;
    g->settings[0].added = g->n > before;
    g->settings[0].strict = 1;
    return 0;
}

void
agt_grid_fini(struct agt_grid *g)
{
    free(g->settings);
    memset(g, 0, sizeof *g);
}

/* ---- parsing ---- */

#define MAX_AXES   8
#define MAX_VALUES 64

struct axis_vals {
    enum axis axis;
    int n;
    char v[MAX_VALUES][160];
};

/* Also serve's --max-download-rate (agent.h). */
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

/* A fixed choice's text as the grid takes it: a legacy id (digits) or what an engine
 * config is made of ("eng", digits, then '_', 'k', '=', '-', digits), under 80 characters;
 * the backend checks it against its conv API. */
static int
choice_text(const char *v)
{
    size_t n = strlen(v);
    if (n == 0 || n >= 80)
        return 0;
    if (strspn(v, "0123456789") == n)
        return 1;
    return strncmp(v, "eng", 3) == 0 && v[3] >= '0' && v[3] <= '9' &&
           strspn(v + 3, "0123456789_k=-") == n - 3;
}

/* Applies one value of an axis to k. */
static int
apply(enum axis axis, const char *v, struct gd_knobs *k, struct gd_err *err)
{
    char *end;
    long n;
    switch (axis) {
    case AX_CONV:
        if (strcmp(v, "heuristic") == 0 || strcmp(v, "autotune") == 0 ||
            strcmp(v, "deterministic") == 0 || strcmp(v, "each") == 0) {
            snprintf(k->conv_algo, sizeof k->conv_algo, "%s", v);
            return 0;
        }
        if (strncmp(v, "fixed:", 6) == 0) {
            /* a legacy id or an engine config: the backend checks it against its API */
            if (!choice_text(v + 6))
                break;
            snprintf(k->conv_algo, sizeof k->conv_algo, "%s", v);
            return 0;
        }
        {
            /* NODE@CHOICE: that node pinned, the others heuristic */
            const char *at = strrchr(v, '@');
            if (at == NULL || at == v || !choice_text(at + 1))
                break;
            if (memchr(v, ',', (size_t)(at - v)) != NULL || memchr(v, '=', (size_t)(at - v)))
                return gd_err_set(err, GD_EINVAL,
                                  "conv=%s: a node name for a pin may not "
                                  "hold ',' or '='",
                                  v);
            snprintf(k->conv_algo, sizeof k->conv_algo, "heuristic");
            snprintf(k->conv_pins, sizeof k->conv_pins, "%.*s=%s", (int)(at - v), v, at + 1);
            return 0;
        }
    case AX_API:
        if (strcmp(v, "graph") != 0 && strcmp(v, "legacy") != 0)
            break;
        snprintf(k->conv_api, sizeof k->conv_api, "%s", v);
        return 0;
    case AX_TF32:
        if (strcmp(v, "on") != 0 && strcmp(v, "off") != 0)
            break;
        k->tf32 = strcmp(v, "on") == 0;
        return 0;
    case AX_MATH:
        if (strcmp(v, "default") != 0 && strcmp(v, "pedantic") != 0)
            break;
        snprintf(k->math_mode, sizeof k->math_mode, "%s", v);
        return 0;
    case AX_WORKSPACE:
        if (strcmp(v, "none") == 0) {
            k->workspace_limit = -1;
            return 0;
        }
        if (agt_parse_size(v, &k->workspace_limit) != 0)
            break;
        return 0;
    case AX_EMULATE: {
        char text[64];
        snprintf(text, sizeof text, "%s", v);
        for (char *p = text; *p; p++)
            if (*p == '+')
                *p = ',';
        if (gd_emulate_parse(text, &k->emulate, &k->emulate_classes, err) != 0)
            return gd_err_prefix(err, "emulate=%s: ", v);
        return 0;
    }
    case AX_THREADS:
        if (strcmp(v, "auto") == 0) {
            k->threads = 0;
            return 0;
        }
        n = strtol(v, &end, 10);
        if (*v == '\0' || *end != '\0' || n < 1 || n > 256)
            break;
        k->threads = (int)n;
        return 0;
    case AX_BATCH:
        break;
    case AX_REPRO:
        if (strcmp(v, "off") == 0) {
            k->repro[0] = '\0';
            return 0;
        }
        if (strcmp(v, "bitwise") != 0)
            break;
        /* gpudiff's own kernels: no cuDNN algorithm or API to choose, no TF32 */
        snprintf(k->repro, sizeof k->repro, "bitwise");
        k->conv_algo[0] = '\0';
        k->conv_api[0] = '\0';
        k->tf32 = -1;
        return 0;
    }
    static const char *const expect[] = {
        "heuristic, autotune, deterministic, fixed:CHOICE, each or NODE@CHOICE",
        "on or off",
        "default or pedantic",
        "none or a byte count (K, M, G)",
        "",
        "auto or 1 to 256",
        "graph or legacy",
        "",
        "off or bitwise"};
    return gd_err_set(err, GD_EINVAL, "%s is not a value of this axis (%s)", v, expect[axis]);
}

/* Splits s[0..len) at sep into trimmed pieces, calling fn on each. */
static int
split(const char *s, size_t len, char sep, int (*fn)(void *, const char *, size_t, struct gd_err *),
      void *user, struct gd_err *err)
{
    const char *end = s + len;
    while (s <= end) {
        const char *p = memchr(s, sep, (size_t)(end - s));
        if (p == NULL)
            p = end;
        const char *a = s, *b = p;
        while (a < b && isspace((unsigned char)*a))
            a++;
        while (b > a && isspace((unsigned char)b[-1]))
            b--;
        int rc = fn(user, a, (size_t)(b - a), err);
        if (rc != 0)
            return rc;
        s = p + 1;
    }
    return 0;
}

struct group_ctx {
    struct agt_grid *g;
    const char *backend;
    int n_axes;
    struct axis_vals ax[MAX_AXES];
    int *batch_seen;
};

static int
add_value(void *user, const char *v, size_t len, struct gd_err *err)
{
    struct axis_vals *a = user;
    if (len == 0)
        return gd_err_set(err, GD_EINVAL, "an empty value in a list");
    if (len >= sizeof a->v[0])
        return gd_err_set(err, GD_EINVAL, "a value of %zu characters is too long", len);
    if (a->n == MAX_VALUES)
        return gd_err_set(err, GD_EINVAL, "more than %d values on one axis", MAX_VALUES);
    memcpy(a->v[a->n], v, len);
    a->v[a->n][len] = '\0';
    a->n++;
    return 0;
}

static int
take_batches(struct agt_grid *g, const struct axis_vals *a, struct gd_err *err)
{
    for (int i = 0; i < a->n; i++) {
        int64_t b = 0;
        if (strcmp(a->v[i], "all") != 0) {
            char *end;
            long long v = strtoll(a->v[i], &end, 10);
            if (a->v[i][0] == '\0' || *end != '\0' || v < 1)
                return gd_err_set(err, GD_EINVAL,
                                  "batch=%s: a batch size is a positive "
                                  "integer or all",
                                  a->v[i]);
            b = v;
        }
        int dup = 0;
        for (int j = 0; j < g->n_batches; j++)
            dup |= g->batches[j] == b;
        if (dup)
            continue;
        if (g->n_batches == AGT_SWEEP_MAX_BATCHES)
            return gd_err_set(err, GD_EINVAL, "more than %d batch sizes", AGT_SWEEP_MAX_BATCHES);
        g->batches[g->n_batches++] = b;
    }
    return 0;
}

static int
add_axis(void *user, const char *s, size_t len, struct gd_err *err)
{
    struct group_ctx *c = user;
    if (len == 0)
        return 0; /* "a=1;" */
    const char *eq = memchr(s, '=', len);
    if (eq == NULL)
        return gd_err_set(err, GD_EINVAL, "%.*s is not KEY=VALUES", (int)len, s);
    size_t klen = (size_t)(eq - s);
    while (klen > 0 && isspace((unsigned char)s[klen - 1]))
        klen--;
    int found = -1;
    for (size_t i = 0; i < sizeof axes / sizeof axes[0]; i++)
        if (strlen(axes[i].key) == klen && strncmp(axes[i].key, s, klen) == 0)
            found = (int)i;
    if (found < 0)
        return gd_err_set(err, GD_EINVAL,
                          "unknown axis %.*s (conv, tf32, math, workspace, api, repro, "
                          "emulate, threads, batch)",
                          (int)klen, s);
    if (!backend_has(axes[found].backends, c->backend))
        return gd_err_set(err, GD_EINVAL, "axis %s is not for the %s backend (it is for: %s)",
                          axes[found].key, c->backend, axes[found].backends);
    for (int i = 0; i < c->n_axes; i++)
        if (c->ax[i].axis == axes[found].axis)
            return gd_err_set(err, GD_EINVAL, "axis %s twice in one group", axes[found].key);
    struct axis_vals a = {.axis = axes[found].axis};
    const char *vals = eq + 1;
    int rc = split(vals, (size_t)(s + len - vals), ',', add_value, &a, err);
    if (rc != 0)
        return gd_err_prefix(err, "%s: ", axes[found].key);
    if (a.axis == AX_BATCH) {
        if (*c->batch_seen)
            return gd_err_set(err, GD_EINVAL,
                              "batch is given twice (it applies to every "
                              "setting: give it once)");
        *c->batch_seen = 1;
        return take_batches(c->g, &a, err);
    }
    /* each value is checked now, so an error names it wherever it stands */
    for (int i = 0; i < a.n; i++) {
        struct gd_knobs k;
        base_knobs(c->backend, &k);
        rc = apply(a.axis, a.v[i], &k, err);
        if (rc != 0)
            return gd_err_prefix(err, "%s: ", axes[found].key);
    }
    if (c->n_axes == MAX_AXES)
        return gd_err_set(err, GD_EINVAL, "too many axes in one group");
    c->ax[c->n_axes++] = a;
    return 0;
}

static int
add_group(void *user, const char *s, size_t len, struct gd_err *err)
{
    struct group_ctx *c = user;
    c->n_axes = 0;
    if (len == 0)
        return gd_err_set(err, GD_EINVAL, "an empty group (between two '|')");
    int rc = split(s, len, ';', add_axis, c, err);
    if (rc != 0)
        return rc;
    if (c->n_axes == 0)
        return 0; /* a group of only batch= adds no settings of its own */
    int at[MAX_AXES] = {0};
    for (;;) {
        struct gd_knobs k;
        base_knobs(c->backend, &k);
        for (int i = 0; i < c->n_axes; i++)
            apply(c->ax[i].axis, c->ax[i].v[at[i]], &k, NULL);
        if (agt_grid_add(c->g, c->backend, &k) < 0)
            return gd_err_set(err, GD_EINVAL, "the grid has more than %d settings",
                              AGT_SWEEP_MAX_SETTINGS);
        int i = c->n_axes - 1;
        while (i >= 0 && ++at[i] == c->ax[i].n)
            at[i--] = 0;
        if (i < 0)
            break;
    }
    return 0;
}

int
agt_grid_parse(const char *spec, const char *backend, struct agt_grid *g, struct gd_err *err)
{
    int batch_seen = 0;
    struct group_ctx *c = calloc(1, sizeof *c);
    if (c == NULL)
        return gd_err_set(err, GD_ENOMEM, "out of memory");
    c->g = g;
    c->backend = backend;
    c->batch_seen = &batch_seen;
    int rc = split(spec, strlen(spec), '|', add_group, c, err);
    free(c);
    if (rc == 0 && g->n == 0) {
        /* only batch sizes: the default settings at those sizes */
        struct agt_grid d = {0};
        rc = agt_grid_parse(agt_grid_default(backend), backend, &d, err);
        for (int i = 0; rc == 0 && i < d.n; i++)
            if (agt_grid_add(g, backend, &d.settings[i].knobs) < 0)
                rc = gd_err_set(err, GD_EINVAL, "the grid is full");
        agt_grid_fini(&d);
    }
    if (rc != 0)
        return gd_err_prefix(err, "--grid: ");
    return 0;
}
