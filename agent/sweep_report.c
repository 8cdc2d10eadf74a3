/*
 * sweep_report.c: the report of `gpudiff-agent sweep` on stdout, made from its document:
 * the three questions (why the results move, how to prevent it, what that costs) in plain
 * words, the table of settings, the batch-size details and the settings that could not run.
 * It states only what the document measured: a value not measured is said to be so.
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "sweep.h"

static json_t *
get(json_t *o, const char *path)
{
    char key[64];
    const char *p = path;
    json_t *v = o;
    while (v != NULL && *p) {
        size_t n = strcspn(p, ".");
        snprintf(key, sizeof key, "%.*s", (int)n, p);
        v = json_object_get(v, key);
        p += n;
        if (*p == '.')
            p++;
    }
    return v;
}

static double
get_num(json_t *o, const char *path)
{
    json_t *v = get(o, path);
    return json_is_number(v) ? json_number_value(v) : NAN;
}

static const char *
get_str(json_t *o, const char *path)
{
    const char *s = json_string_value(get(o, path));
    return s ? s : "";
}

static int
is_ok(json_t *s)
{
    return strcmp(get_str(s, "status"), "ok") == 0;
}

static void
fmt_g(double v, char *buf, size_t size)
{
    if (isnan(v))
        snprintf(buf, size, "-");
    else
        snprintf(buf, size, "%.3g", v);
}

static void
fmt_ms(double v, char *buf, size_t size)
{
    if (isnan(v))
        snprintf(buf, size, "-");
    else if (v >= 100)
        snprintf(buf, size, "%.1f", v);
    else
        snprintf(buf, size, "%.3f", v);
}

/* "2.1e-07 (3 ulp)", "identical", or "not compared". */
static void
fmt_vs(json_t *v, char *abs_s, size_t asize, char *ulp_s, size_t usize)
{
    if (!json_is_true(json_object_get(v, "compared"))) {
        snprintf(abs_s, asize, "-");
        snprintf(ulp_s, usize, "-");
        return;
    }
    json_t *out = json_object_get(v, "output");
    if (json_is_true(json_object_get(out, "identical"))) {
        snprintf(abs_s, asize, "0");
        snprintf(ulp_s, usize, "0");
        return;
    }
    fmt_g(get_num(out, "max_abs"), abs_s, asize);
    json_t *u = json_object_get(out, "max_ulp");
    if (json_is_integer(u) && json_integer_value(u) < 1000000)
        snprintf(ulp_s, usize, "%lld", (long long)json_integer_value(u));
    else if (json_is_integer(u))
        snprintf(ulp_s, usize, "%.2g", (double)json_integer_value(u));
    else
        snprintf(ulp_s, usize, "-");
}

/* " (what-if)" for a setting that is one, "" otherwise. */
static const char *
what_if_tag(json_t *s)
{
    return json_is_true(json_object_get(s, "what_if")) ? " (what-if)" : "";
}

static const char *
tristate(json_t *v, const char *yes, const char *no)
{
    return json_is_true(v) ? yes : json_is_false(v) ? no : "not measured";
}

/* Words wrapped at width, each line after the first indented by indent. */
static void
wrap(FILE *out, const char *lead, const char *text, int width, int indent)
{
    int col = fprintf(out, "%s", lead);
    const char *p = text;
    while (*p) {
        while (*p == ' ')
            p++;
        size_t n = strcspn(p, " ");
        if (n == 0)
            break;
        if (col + 1 + (int)n > width && col > indent) {
            fprintf(out, "\n%*s", indent, "");
            col = indent;
        } else if (col > (int)strlen(lead)) {
            fputc(' ', out);
            col++;
        }
        fprintf(out, "%.*s", (int)n, p);
        col += (int)n;
        p += n;
    }
    fputc('\n', out);
}

static void item(FILE *out, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void
item(FILE *out, const char *fmt, ...)
{
    char buf[4096];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    wrap(out, "  - ", buf, 100, 4);
}

/* The batch sizes as "1, 8 and 32". */
static void
list_batches(json_t *doc, char *buf, size_t size)
{
    json_t *b = json_object_get(doc, "batch_sizes");
    size_t i, n = json_array_size(b), used = 0;
    json_t *v;
    buf[0] = '\0';
    json_array_foreach(b, i, v) {
        int w = snprintf(buf + used, size - used, "%s%lld",
                         i == 0       ? ""
                         : i + 1 == n ? " and "
                                      : ", ",
                         (long long)json_integer_value(v));
        if (w < 0 || (size_t)w >= size - used)
            break;
        used += (size_t)w;
    }
    if (n == 0)
        snprintf(buf, size, "none");
}

/*
 * The algorithm changes of one batch size, in words: first those at layers whose output
 * differs (the ones that can have moved the result, in graph order), up to four; then how
 * many more did, and how many layers changed algorithm with their output still identical.
 */
static void
algo_changes(json_t *changes, char *out, size_t size)
{
    size_t used = 0, c, shown = 0, more = 0, same = 0;
    json_t *ch;
    out[0] = '\0';
    json_array_foreach(changes, c, ch) {
        if (json_is_true(json_object_get(ch, "identical"))) {
            same++;
            continue;
        }
        if (shown == 4) {
            more++;
            continue;
        }
        int w = snprintf(out + used, size - used, "%s%s changed algorithm from \"%s\" to \"%s\"",
                         shown ? "; " : "", get_str(ch, "layer"), get_str(ch, "reference"),
                         get_str(ch, "this"));
        if (w > 0 && (size_t)w < size - used)
            used += (size_t)w;
        shown++;
    }
    int w = 0;
    if (more > 0)
        w = snprintf(out + used, size - used, "; and %zu more layers whose output differs", more);
    if (w > 0 && (size_t)w < size - used)
        used += (size_t)w;
    if (same > 0)
        snprintf(out + used, size - used, "%s%zu layer%s changed algorithm with %s output "
                 "identical", used ? "; " : "", same, same == 1 ? "" : "s",
                 same == 1 ? "its" : "their");
}

static void
why(FILE *out, json_t *doc)
{
    json_t *settings = json_object_get(doc, "settings");
    size_t i;
    json_t *s;
    char quiet[2048] = "";
    size_t qused = 0;
    int n_compared = 0;
    fprintf(out, "Why do the results move?\n");
    json_array_foreach(settings, i, s) {
        if (!is_ok(s) || !json_is_true(get(s, "vs_float64.compared")))
            continue;
        n_compared++;
        char a[32], u[32];
        fmt_vs(json_object_get(s, "vs_float64"), a, sizeof a, u, sizeof u);
        json_t *first = get(s, "vs_float64.first_divergent");
        if (!json_is_object(first)) {
            int w = snprintf(quiet + qused, sizeof quiet - qused, "%s%s (output %s, %s ULP)",
                             qused ? ", " : "", get_str(s, "name"), a, u);
            if (w > 0 && (size_t)w < sizeof quiet - qused)
                qused += (size_t)w;
            continue;
        }
        char amps[1024] = "";
        size_t used = 0, k;
        json_t *amp;
        json_array_foreach(get(s, "vs_float64.amplifiers"), k, amp) {
            json_t *fl = json_object_get(amp, "flipped");
            char flips[64] = "";
            if (json_is_integer(fl))
                snprintf(flips, sizeof flips, ", %lld outputs flipped",
                         (long long)json_integer_value(fl));
            int w = snprintf(amps + used, sizeof amps - used, "; %s (%s) amplifies it%s",
                             get_str(amp, "layer"), get_str(amp, "op"), flips);
            if (w > 0 && (size_t)w < sizeof amps - used)
                used += (size_t)w;
        }
        /* the arithmetic is named only where the comparison could tell it */
        const char *arith = get_str(first, "arithmetic");
        char named[96] = "";
        if (arith[0] != '\0')
            snprintf(named, sizeof named, " (%s)", arith);
        item(out,
             "%s%s: the difference from float64 starts at %s (%s), at %.1f bits of "
             "precision%s%s; the output moves by %s (%s ULP).",
             get_str(s, "name"), what_if_tag(s), get_str(first, "layer"), get_str(first, "op"),
             get_num(first, "bits"), named, amps, a, u);
    }
    if (quiet[0])
        item(out, "Within rounding noise of float64 at every layer: %s.", quiet);
    if (n_compared == 0 && !is_ok(json_object_get(doc, "float64")))
        item(out, "No setting was compared with float64: the float64 run failed (%s).",
             get_str(doc, "float64.error"));
    else if (n_compared == 0)
        item(out, "No setting was compared with float64: none of the settings ran.");
    /* batch size */
    int n_var = 0, n_inv = 0;
    json_array_foreach(settings, i, s) {
        json_t *inv = json_object_get(s, "batch_invariant");
        if (json_is_true(inv))
            n_inv++;
        if (!json_is_false(inv))
            continue;
        n_var++;
        size_t k;
        json_t *b;
        json_array_foreach(get(s, "batch.sizes"), k, b) {
            if (!json_is_false(json_object_get(b, "identical")))
                continue;
            char extra[1024] = "";
            algo_changes(json_object_get(b, "algo_changes"), extra, sizeof extra);
            char ma[32];
            fmt_g(get_num(b, "output.max_abs"), ma, sizeof ma);
            item(out,
                 "%s at batch %lld: %zu of %lld layers differ from the whole batch, the "
                 "first %s (%s); the output moves by %s. %s%s%s",
                 get_str(s, "name"), (long long)json_integer_value(json_object_get(b, "batch")),
                 json_array_size(json_object_get(b, "differing_layers")),
                 (long long)json_integer_value(json_object_get(b, "layers")),
                 get_str(b, "first_differing.layer"), get_str(b, "first_differing.op"), ma,
                 extra[0] ? "With the batch size, " : "No layer's recorded algorithm changed.",
                 extra, extra[0] ? "." : "");
        }
    }
    char sizes[256];
    list_batches(doc, sizes, sizeof sizes);
    if (n_var == 0 && n_inv > 0)
        item(out,
             "The batch size moves nothing: in every setting measured, every layer is "
             "bitwise identical at batch sizes %s and at the whole %lld.",
             sizes, (long long)json_integer_value(json_object_get(doc, "reference_batch")));
    else if (n_var == 0)
        item(out, "Batch invariance was not measured (batch sizes: %s).", sizes);
    /* run to run */
    json_t *nondet = json_array();
    int n_det = 0;
    json_array_foreach(settings, i, s) {
        json_t *d = json_object_get(s, "deterministic");
        if (json_is_true(d))
            n_det++;
        else if (json_is_false(d))
            json_array_append(nondet, s);
    }
    json_array_foreach(nondet, i, s) {
        json_t *rr = json_object_get(s, "run_to_run");
        size_t nl = json_array_size(json_object_get(rr, "differing_layers"));
        item(out,
             "%s is not reproducible: %s%zu layers differ between captures in fresh "
             "sessions%s%s.",
             get_str(s, "name"),
             json_is_false(json_object_get(rr, "outputs_identical"))
                 ? "its outputs differ between timed runs; "
                 : "",
             nl, nl ? ", the first " : "",
             nl ? json_string_value(json_array_get(json_object_get(rr, "differing_layers"), 0))
                : "");
    }
    if (json_array_size(nondet) == 0 && n_det > 0)
        item(out,
             "Run to run nothing moves: every setting measured gives the same bits in "
             "each of its %lld captures (fresh sessions) and %lld timed runs.",
             (long long)json_integer_value(json_object_get(doc, "captures")),
             (long long)json_integer_value(json_object_get(doc, "repeats")));
    json_decref(nondet);
    /* one knob at a time */
    json_array_foreach(get(doc, "answers.knob_effects"), i, s) {
        char fa[32], ta[32], cost_words[160];
        fmt_g(get_num(s, "from_max_abs"), fa, sizeof fa);
        fmt_g(get_num(s, "to_max_abs"), ta, sizeof ta);
        json_t *fd = json_object_get(s, "to_first_divergent");
        if (json_is_true(json_object_get(s, "within_noise")))
            snprintf(cost_words, sizeof cost_words,
                     "the times are within timing noise of each other (%.3f -> %.3f ms, their "
                     "ranges overlap)",
                     get_num(s, "from_ms"), get_num(s, "to_ms"));
        else
            snprintf(cost_words, sizeof cost_words, "%.2fx the time (%.3f -> %.3f ms)",
                     get_num(s, "time_ratio"), get_num(s, "from_ms"), get_num(s, "to_ms"));
        if (strcmp(get_str(s, "knob"), "tf32") == 0) {
            /* the question users ask of TF32: what it moves, and what turning it off costs */
            char off_cost[160];
            if (json_is_true(json_object_get(s, "within_noise")))
                snprintf(off_cost, sizeof off_cost,
                         "turning it off costs nothing measurable (within timing noise)");
            else
                snprintf(off_cost, sizeof off_cost,
                         "turning it off costs %.2fx the time (%.3f -> %.3f ms)",
                         1 / get_num(s, "time_ratio"), get_num(s, "to_ms"), get_num(s, "from_ms"));
            item(out, "TF32 (%s): on, the output moves by %s against float64%s%s (off: %s); %s.",
                 get_str(s, "changed"), ta,
                 json_is_string(fd) ? ", the difference starting at " : "",
                 json_is_string(fd) ? json_string_value(fd) : "", fa, off_cost);
            continue;
        }
        item(out, "%s -> %s%s: %s; output against float64 %s -> %s%s%s.", get_str(s, "base"),
             get_str(s, "changed"), json_is_true(json_object_get(s, "what_if")) ? " (what-if)" : "",
             cost_words, fa, ta, json_is_string(fd) ? ", first divergent " : "",
             json_is_string(fd) ? json_string_value(fd) : "");
    }
}

/* "1.234 ms (1.200 to 1.300)" of a pick or a setting's time. */
static void
fmt_time(double med, double lo, double hi, char *out, size_t size)
{
    if (isfinite(lo) && isfinite(hi) && hi > lo)
        snprintf(out, size, "%.3f ms (%.3f to %.3f)", med, lo, hi);
    else
        snprintf(out, size, "%.3f ms", med);
}

/* "2.38e-07 against float64 (376 ULP)", "exact against float64", "not compared". */
static void
fmt_error(json_t *p, char *out, size_t size)
{
    double e = get_num(p, "vs_float64_max_abs");
    json_t *u = json_object_get(p, "vs_float64_max_ulp");
    if (!isfinite(e))
        snprintf(out, size, "not compared with float64");
    else if (e == 0)
        snprintf(out, size, "the output equal to float64's rounding");
    else if (json_is_integer(u))
        snprintf(out, size, "the output %.3g from float64 (%lld ULP)", e,
                 (long long)json_integer_value(u));
    else
        snprintf(out, size, "the output %.3g from float64", e);
}

/* The names of a JSON array of strings as "a, b and c". */
static void
names_text(json_t *names, char *out, size_t size)
{
    size_t i, n = json_array_size(names), used = 0;
    json_t *v;
    out[0] = '\0';
    json_array_foreach(names, i, v)
    {
        int w = snprintf(out + used, size - used, "%s%s",
                         i == 0       ? ""
                         : i + 1 == n ? " and "
                                      : ", ",
                         json_string_value(v) ? json_string_value(v) : "?");
        if (w < 0 || (size_t)w >= size - used)
            break;
        used += (size_t)w;
    }
}

static void
pick_line(FILE *out, json_t *p, const char *what, const char *none)
{
    if (!json_is_object(p)) {
        item(out, "%s: %s.", what, none);
        return;
    }
    char t[96], e[128], ties[1024] = "";
    fmt_time(get_num(p, "forward_ms"), get_num(p, "forward_min_ms"), get_num(p, "forward_max_ms"),
             t, sizeof t);
    fmt_error(p, e, sizeof e);
    json_t *others = json_object_get(p, "within_noise");
    if (json_array_size(others) > 0) {
        char names[900];
        names_text(others, names, sizeof names);
        snprintf(ties, sizeof ties,
                 " %s within timing noise of it (the min-max ranges overlap): the times do "
                 "not rank them, so it is the one closest to float64 of them",
                 json_array_size(others) == 1 ? "is" : "are");
        char both[1024];
        snprintf(both, sizeof both, " %s%s.", names, ties);
        snprintf(ties, sizeof ties, "%s", both);
    }
    item(out, "%s: %s, %s, %s.%s", what, get_str(p, "setting"), t, e, ties);
}

static void
prevent(FILE *out, json_t *doc)
{
    json_t *ans = json_object_get(doc, "answers");
    fprintf(out, "\nHow to prevent it? (settings a deployment can use; what-ifs apart)\n");
    pick_line(out, json_object_get(ans, "cheapest_deterministic"),
              "The cheapest setting that is bitwise reproducible (every layer, every capture)",
              "none of the settings measured is, or it was not measured");
    json_t *inv = json_object_get(ans, "cheapest_batch_invariant");
    if (json_is_object(inv)) {
        pick_line(out, inv, "The cheapest setting whose rows do not depend on the batch size", "");
    } else {
        char layers[1024] = "";
        size_t used = 0;
        const char *key;
        json_t *v;
        json_object_foreach(json_object_get(ans, "batch_breaking_layers"), key, v) {
            int w = snprintf(layers + used, sizeof layers - used, "%s%s (in %lld)",
                             used ? ", " : "", key, (long long)json_integer_value(v));
            if (w > 0 && (size_t)w < sizeof layers - used)
                used += (size_t)w;
        }
        if (layers[0])
            item(out,
                 "No setting of the grid is batch-invariant; the first layer to break it "
                 "is %s: pin those layers' algorithms or run at a fixed batch size.",
                 layers);
        else
            item(out, "Batch invariance was not measured: no setting ran at another batch "
                      "size.");
    }
    pick_line(out, json_object_get(ans, "cheapest_deterministic_and_batch_invariant"),
              "The cheapest that is both", "none measured");
    json_t *settings = json_object_get(doc, "settings");
    size_t i;
    json_t *s;
    /* bitwise mode: the prevention that also holds across GPUs, measured like the others */
    json_array_foreach(settings, i, s)
    {
        if (strcmp(get_str(s, "name"), "repro=bitwise") != 0)
            continue;
        if (!is_ok(s)) {
            item(out, "Bitwise mode (--repro bitwise) could not run: %s.", get_str(s, "error"));
            continue;
        }
        char t[96], x[48];
        fmt_time(get_num(s, "time.forward_ms"), get_num(s, "time.forward_min_ms"),
                 get_num(s, "time.forward_max_ms"), t, sizeof t);
        if (json_is_true(get(s, "time.within_noise_of_fastest")))
            snprintf(x, sizeof x, "within timing noise of the fastest setting");
        else
            snprintf(x, sizeof x, "%.2fx the fastest setting", get_num(s, "time.x_fastest"));
        item(out,
             "Bitwise mode (--repro bitwise: gpudiff's own kernels, every layer the cpu "
             "backend's bits on any GPU and at any batch size): run to run %s, batch-invariant "
             "%s here, %s a forward, %s.",
             tristate(json_object_get(s, "deterministic"), "identical", "differs"),
             tristate(json_object_get(s, "batch_invariant"), "yes", "no"), t, x);
    }
    /* what-ifs: what a reduced format would do, never a fix */
    int header = 0;
    json_array_foreach(settings, i, s)
    {
        if (!is_ok(s) || !json_is_true(json_object_get(s, "what_if")))
            continue;
        if (!header++)
            fprintf(out, "\nWhat if? (emulated on the CPU: not settings a deployment can use, "
                         "never advised as a fix)\n");
        char a[32], u[32];
        fmt_vs(json_object_get(s, "vs_float64"), a, sizeof a, u, sizeof u);
        const char *fd = get_str(s, "vs_float64.first_divergent.layer");
        item(out, "%s: the output would move by %s against float64 (%s ULP)%s%s.",
             get_str(s, "name"), a, u, fd[0] ? ", the difference starting at " : "", fd);
    }
}

static void
cost(FILE *out, json_t *doc)
{
    json_t *ans = json_object_get(doc, "answers");
    json_t *fast = json_object_get(ans, "fastest");
    fprintf(out, "\nWhat does it cost?\n");
    if (!json_is_object(fast)) {
        item(out, "Nothing: no setting a deployment can use ran.");
        return;
    }
    json_t *settings = json_object_get(doc, "settings");
    size_t i;
    json_t *s;
    json_t *strict = NULL;
    json_array_foreach(settings, i, s) {
        if (json_is_true(json_object_get(s, "strict")))
            strict = s;
    }
    char t[96], ties[1024] = "";
    fmt_time(get_num(fast, "forward_ms"), get_num(fast, "forward_min_ms"),
             get_num(fast, "forward_max_ms"), t, sizeof t);
    if (json_array_size(json_object_get(fast, "within_noise")) > 0) {
        char names[900];
        names_text(json_object_get(fast, "within_noise"), names, sizeof names);
        snprintf(ties, sizeof ties, "; %s %s within timing noise of it", names,
                 json_array_size(json_object_get(fast, "within_noise")) == 1 ? "is" : "are");
    }
    item(out, "The fastest setting is %s: %s a forward with the input on the device%s.",
         get_str(fast, "setting"), t, ties);
    static const char *const picks[] = {"cheapest_deterministic", "cheapest_batch_invariant",
                                        "cheapest_deterministic_and_batch_invariant"};
    static const char *const words[] = {"Reproducible bits", "Batch invariance", "Both"};
    for (int k = 0; k < 3; k++) {
        json_t *p = json_object_get(ans, picks[k]);
        if (!json_is_object(p))
            continue;
        if (json_is_true(json_object_get(p, "within_noise_of_fastest")))
            item(out, "%s (%s) cost nothing measurable: its times overlap the fastest's.", words[k],
                 get_str(p, "setting"));
        else
            item(out, "%s (%s) cost %.2fx the fastest: %+.3f ms a forward.", words[k],
                 get_str(p, "setting"), get_num(p, "x_fastest"),
                 get_num(p, "forward_ms") - get_num(fast, "forward_ms"));
    }
    if (strict != NULL && is_ok(strict)) {
        if (json_is_true(get(strict, "time.within_noise_of_fastest")))
            item(out, "The strict setting (%s) is within timing noise of the fastest.",
                 get_str(strict, "name"));
        else
            item(out, "The strict setting (%s) costs %.2fx the fastest.", get_str(strict, "name"),
                 get_num(strict, "time.x_fastest"));
    }
}

static void
table(FILE *out, json_t *doc)
{
    size_t i;
    json_t *s;
    int w = 20; /* the names' column: as wide as the longest name */
    json_array_foreach(json_object_get(doc, "settings"), i, s) {
        int n = (int)strlen(get_str(s, "name"));
        w = n > w ? (n < 64 ? n : 64) : w;
    }
    fprintf(out, "\n%-*s %-7s %9s %19s %6s %9s %6s | %9s %6s | %-10s | %-11s | %-14s | %s\n", w,
            "setting", "use", "ms", "min to max", "x fast", "vs f64", "ulp", "vs strict", "ulp",
            "run-to-run", "batch-invar", "first diverg.", "cause");
    json_array_foreach(json_object_get(doc, "settings"), i, s) {
        if (!is_ok(s)) {
            fprintf(out, "%-*s %s: %s\n", w, get_str(s, "name"),
                    strcmp(get_str(s, "status"), "failed") == 0 ? "cannot run" : "not run",
                    get_str(s, "error"));
            continue;
        }
        char ms[32], range[64], x[32], fa[32], fu[32], sa[32], su[32];
        fmt_ms(get_num(s, "time.forward_ms"), ms, sizeof ms);
        char lo[24], hi[24];
        fmt_ms(get_num(s, "time.forward_min_ms"), lo, sizeof lo);
        fmt_ms(get_num(s, "time.forward_max_ms"), hi, sizeof hi);
        snprintf(range, sizeof range, "%s to %s", lo, hi);
        if (json_is_true(get(s, "time.within_noise_of_fastest")))
            snprintf(x, sizeof x, "~1");
        else
            snprintf(x, sizeof x, "%.2f", get_num(s, "time.x_fastest"));
        fmt_vs(json_object_get(s, "vs_float64"), fa, sizeof fa, fu, sizeof fu);
        if (json_is_true(json_object_get(s, "strict"))) {
            snprintf(sa, sizeof sa, "(strict)");
            su[0] = '\0';
        } else {
            fmt_vs(json_object_get(s, "vs_strict"), sa, sizeof sa, su, sizeof su);
        }
        const char *fd = get_str(s, "vs_float64.first_divergent.layer");
        fprintf(out, "%-*s %-7s %9s %19s %6s %9s %6s | %9s %6s | %-10s | %-11s | %-14s | %s\n", w,
                get_str(s, "name"),
                json_is_true(json_object_get(s, "what_if")) ? "what-if" : "deploy", ms, range, x,
                fa, fu, sa, su,
                tristate(json_object_get(s, "deterministic"), "identical", "differs"),
                tristate(json_object_get(s, "batch_invariant"), "yes", "no"), fd[0] ? fd : "-",
                get_str(s, "cause"));
    }
}

void
agt_sweep_print(FILE *out, json_t *doc)
{
    char sizes[256];
    list_batches(doc, sizes, sizeof sizes);
    json_t *shape = get(doc, "input.shape");
    char in_shape[96] = "";
    size_t i, used = 0;
    json_t *d;
    json_array_foreach(shape, i, d) {
        int w = snprintf(in_shape + used, sizeof in_shape - used, i ? "x%lld" : "%lld",
                         (long long)json_integer_value(d));
        if (w > 0 && (size_t)w < sizeof in_shape - used)
            used += (size_t)w;
    }
    const char *gpu = get_str(doc, "env.gpu_name"), *cpu = get_str(doc, "env.cpu");
    const char *where = gpu[0] ? gpu : cpu;
    fprintf(out,
            "Sweep of %s on %s%s%s%s, input %s: %zu settings, %lld timed runs each, "
            "%lld captures, batch sizes %s against the whole %lld.\n",
            get_str(doc, "model.name"), get_str(doc, "backend"), where[0] ? " (" : "", where,
            where[0] ? ")" : "", in_shape,
            json_array_size(json_object_get(doc, "settings")),
            (long long)json_integer_value(json_object_get(doc, "repeats")),
            (long long)json_integer_value(json_object_get(doc, "captures")), sizes,
            (long long)json_integer_value(json_object_get(doc, "reference_batch")));
    fprintf(out, "Grid: %s. Float64 reference: %s.\n\n", get_str(doc, "grid"),
            is_ok(json_object_get(doc, "float64")) ? "a cpu64 run" : "failed");
    why(out, doc);
    prevent(out, doc);
    cost(out, doc);
    table(out, doc);
    fputc('\n', out);
    wrap(out, "",
         "use: deploy (a setting a deployment can use) or what-if (emulated on the CPU: never "
         "advised); ms: median forward without capture, input on the device, and the least "
         "and most of the timed runs; x fast: against the fastest setting to deploy, ~1 where "
         "the ranges overlap (within timing noise: the times do not rank them); vs f64, vs "
         "strict: the output layer's max |a-b| and max ULP; run-to-run: every layer of each "
         "capture and every timed output bitwise equal; batch-invar: every layer's rows "
         "bitwise equal at each batch size.",
         100, 0);
}
