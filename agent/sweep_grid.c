/*
 * sweep_grid.c: the grid of `gpudiff-agent sweep`: SPEC parsed into settings, their names,
 * the default grids and the strict setting.
 *
 *   SPEC  := GROUP ('|' GROUP)*          the union of the groups' settings
 *   GROUP := AXIS (';' AXIS)*            the product of the group's axes
 *   AXIS  := KEY '=' VALUE (',' VALUE)*
 *
 * KEY is a knob of engine/core/knobs.def that the backend takes and that is a sweep axis
 * ('-' read as '_'), VALUE one of its values as run takes it; conv_algo also takes each
 * (one setting per convolution and algorithm cuDNN offers it) and NODE@CHOICE (that
 * convolution pinned, conv_pins). An axis a group does not name takes the knob's default.
 * `batch` is not an axis of settings: it lists the batch sizes every setting is run at (once
 * in the whole SPEC). A setting is named by its knobs that are not at their default.
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent.h"
#include "sweep.h"

const char *
agt_grid_default(const char *backend)
{
    if (strcmp(backend, "cuda") == 0)
        return "conv_algo=heuristic,autotune,deterministic;tf32=off,on | math_mode=pedantic | "
               "workspace_limit=0 | repro=bitwise";
    if (strcmp(backend, "cpu") == 0)
        return "emulate=none,tf32,tf32:conv+gemm,bf16,bf16:conv+gemm,fp16,fp16:conv+gemm";
    return "threads=auto";
}

void
agt_strict_knobs(const char *backend, const struct gd_knobs *base, struct gd_knobs *k)
{
    if (base != NULL)
        *k = *base;
    else
        gd_knobs_init(k);
    if (strcmp(backend, "cuda") == 0)
        snprintf(k->conv_algo, sizeof k->conv_algo, "deterministic");
}

/* "a=1,b=eng0_k2=1" as "a@1+b@eng0_k2=1" (the first '=' of each pin): the grid's spelling. */
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

/* 1 when the knob is a grid axis (a deployment's choice or a what-if) on backend. */
static int
is_axis(enum gd_knob k, const char *backend)
{
    const struct gd_knob_info *i = gd_knob_info(k);
    return (i->sweep == GD_KNOB_SWEEP_AXIS || i->sweep == GD_KNOB_SWEEP_WHATIF) &&
           gd_knob_applies(k, backend);
}

void
agt_setting_name(const char *backend, const struct gd_knobs *k, char *out, size_t size)
{
    size_t used = 0;
    out[0] = '\0';
    for (int w = 0; w < GD_KNOB_COUNT; w++) {
        const struct gd_knob_info *i = gd_knob_info((enum gd_knob)w);
        if (!is_axis((enum gd_knob)w, backend))
            continue;
        char value[1100];
        gd_knob_format(k, (enum gd_knob)w, value, sizeof value);
        if (w == GD_KNOB_CONV_ALGO && k->conv_pins[0] != '\0')
            pins_text(k->conv_pins, value, sizeof value);
        else if (strcmp(value, i->default_value) == 0)
            continue;
        int n = snprintf(out + used, size - used, "%s%s=%s", used ? " " : "", i->name, value);
        if (n < 0 || (size_t)n >= size - used)
            break;
        used += (size_t)n;
    }
    if (used == 0)
        snprintf(out, size, "defaults");
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
agt_grid_mark_strict(struct agt_grid *g, const char *backend, const struct gd_knobs *base)
{
    struct gd_knobs k;
    agt_strict_knobs(backend, base, &k);
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
    enum gd_knob knob;
    int n;
    char v[MAX_VALUES][160];
};

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

/* Applies one value of an axis to k: the knob's own values, and conv_algo's each and
 * NODE@CHOICE. Bitwise mode (repro=bitwise) unsets the knobs it has no use for, whichever
 * axis comes first: the settings of a product that differ only in those are one. */
static int
apply(enum gd_knob knob, const char *v, struct gd_knobs *k, struct gd_err *err)
{
    if (knob == GD_KNOB_CONV_ALGO) {
        if (strcmp(v, "each") == 0) {
            snprintf(k->conv_algo, sizeof k->conv_algo, "each");
            return 0;
        }
        const char *at = strrchr(v, '@');
        if (at != NULL && strncmp(v, "fixed:", 6) != 0) {
            /* NODE@CHOICE: that node pinned, the others heuristic */
            if (at == v || !choice_text(at + 1))
                return gd_err_set(err, GD_EINVAL,
                                  "%s: NODE@CHOICE takes an algorithm id or an "
                                  "engine config after '@'",
                                  v);
            if (memchr(v, ',', (size_t)(at - v)) != NULL || memchr(v, '=', (size_t)(at - v)))
                return gd_err_set(err, GD_EINVAL,
                                  "%s: a node name for a pin may not hold ',' or '='", v);
            snprintf(k->conv_algo, sizeof k->conv_algo, "heuristic");
            snprintf(k->conv_pins, sizeof k->conv_pins, "%.*s=%s", (int)(at - v), v, at + 1);
            return 0;
        }
        if (strncmp(v, "fixed:", 6) == 0 && !choice_text(v + 6))
            return gd_err_set(err, GD_EINVAL,
                              "%s: fixed: takes an algorithm id or an engine "
                              "config",
                              v);
    }
    if (gd_knob_parse(k, knob, v, err) != 0) {
        if (knob == GD_KNOB_CONV_ALGO)
            return gd_err_set(err, GD_EINVAL,
                              "takes heuristic, autotune, deterministic, "
                              "fixed:CHOICE, each or NODE@CHOICE, not %s",
                              v);
        return err != NULL ? err->code : GD_EINVAL;
    }
    if (gd_knobs_bitwise(k)) {
        /* gpudiff's own kernels: no cuDNN algorithm, pin or API to choose, no TF32 */
        gd_knob_unset(k, GD_KNOB_CONV_ALGO);
        gd_knob_unset(k, GD_KNOB_CONV_PINS);
        gd_knob_unset(k, GD_KNOB_CONV_API);
        gd_knob_unset(k, GD_KNOB_TF32);
    }
    return 0;
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
    const struct gd_knobs *base;
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
            struct gd_knobs k;
            gd_knobs_init(&k);
            if (gd_knob_parse(&k, GD_KNOB_BATCH, a->v[i], NULL) != 0)
                return gd_err_set(err, GD_EINVAL,
                                  "batch=%s: a batch size is a positive integer or all", a->v[i]);
            b = k.batch;
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

/* The axes of backend, comma separated, for messages. */
static void
axis_names(const char *backend, char *out, size_t size)
{
    size_t used = 0;
    out[0] = '\0';
    for (int k = 0; k < GD_KNOB_COUNT; k++) {
        const struct gd_knob_info *i = gd_knob_info((enum gd_knob)k);
        if (!is_axis((enum gd_knob)k, backend) && i->sweep != GD_KNOB_SWEEP_SIZES)
            continue;
        int n = snprintf(out + used, size - used, "%s%s", used ? ", " : "", i->name);
        if (n < 0 || (size_t)n >= size - used)
            break;
        used += (size_t)n;
    }
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
    char key[64], names[512];
    snprintf(key, sizeof key, "%.*s", (int)(klen < sizeof key ? klen : sizeof key - 1), s);
    axis_names(c->backend, names, sizeof names);
    enum gd_knob knob;
    if (gd_knob_find(key, &knob) != 0)
        return gd_err_set(err, GD_EINVAL, "unknown axis %s (the %s backend's: %s)", key, c->backend,
                          names);
    const struct gd_knob_info *info = gd_knob_info(knob);
    if (!gd_knob_applies(knob, c->backend))
        return gd_err_set(err, GD_EINVAL, "axis %s is not for the %s backend (it is for: %s)",
                          info->name, c->backend, info->backends);
    if (info->sweep == GD_KNOB_SWEEP_NONE)
        return gd_err_set(err, GD_EINVAL, "%s is not an axis of the grid (%s)%s", info->name, names,
                          knob == GD_KNOB_DTYPE       ? ": it casts the model at load, for every "
                                                        "setting (sweep --dtype)"
                          : knob == GD_KNOB_CONV_PINS ? ": pins are conv_algo=NODE@CHOICE"
                                                      : "");
    for (int i = 0; i < c->n_axes; i++)
        if (c->ax[i].knob == knob)
            return gd_err_set(err, GD_EINVAL, "axis %s twice in one group", info->name);
    struct axis_vals a = {.knob = knob};
    const char *vals = eq + 1;
    int rc = split(vals, (size_t)(s + len - vals), ',', add_value, &a, err);
    if (rc != 0)
        return gd_err_prefix(err, "%s: ", info->name);
    if (info->sweep == GD_KNOB_SWEEP_SIZES) {
        if (*c->batch_seen)
            return gd_err_set(err, GD_EINVAL,
                              "batch is given twice (it applies to every setting: give it "
                              "once)");
        *c->batch_seen = 1;
        return take_batches(c->g, &a, err);
    }
    /* each value is checked now, so an error names it wherever it stands */
    for (int i = 0; i < a.n; i++) {
        struct gd_knobs k = *c->base;
        rc = apply(knob, a.v[i], &k, err);
        if (rc != 0)
            return gd_err_prefix(err, "%s ", info->name);
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
        struct gd_knobs k = *c->base;
        for (int i = 0; i < c->n_axes; i++)
            apply(c->ax[i].knob, c->ax[i].v[at[i]], &k, NULL);
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
agt_grid_parse(const char *spec, const char *backend, const struct gd_knobs *base,
               struct agt_grid *g, struct gd_err *err)
{
    int batch_seen = 0;
    struct gd_knobs none;
    gd_knobs_init(&none);
    struct group_ctx *c = calloc(1, sizeof *c);
    if (c == NULL)
        return gd_err_set(err, GD_ENOMEM, "out of memory");
    c->g = g;
    c->backend = backend;
    c->base = base != NULL ? base : &none;
    c->batch_seen = &batch_seen;
    int rc = split(spec, strlen(spec), '|', add_group, c, err);
    free(c);
    if (rc == 0 && g->n == 0) {
        /* only batch sizes: the default settings at those sizes */
        struct agt_grid d = {0};
        rc = agt_grid_parse(agt_grid_default(backend), backend, base, &d, err);
        for (int i = 0; rc == 0 && i < d.n; i++)
            if (agt_grid_add(g, backend, &d.settings[i].knobs) < 0)
                rc = gd_err_set(err, GD_EINVAL, "the grid is full");
        agt_grid_fini(&d);
    }
    if (rc != 0)
        return gd_err_prefix(err, "--grid: ");
    return 0;
}
