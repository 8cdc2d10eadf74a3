/* report.c: the agent's human-readable summaries on stdout. */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "agent.h"

static void
shape_str(json_t *shape, char *buf, size_t size)
{
    size_t used = 0, i;
    json_t *d;
    buf[0] = '\0';
    json_array_foreach(shape, i, d) {
        int w = snprintf(buf + used, size - used, i ? "x%lld" : "%lld",
                         (long long)json_integer_value(d));
        if (w < 0 || (size_t)w >= size - used)
            break;
        used += (size_t)w;
    }
    if (json_array_size(shape) == 0)
        snprintf(buf, size, "scalar");
}

static void
num_str(json_t *v, char *buf, size_t size)
{
    if (json_is_number(v))
        snprintf(buf, size, "%.6g", json_number_value(v));
    else
        snprintf(buf, size, "-");
}

void
agt_report_table(FILE *out, json_t *run, const char *bundle_dir)
{
    json_t *layers = json_object_get(run, "layers");
    json_t *model = json_object_get(run, "model"), *input = json_object_get(run, "input");
    char in_shape[96];
    if (json_is_array(json_object_get(input, "shape")))
        shape_str(json_object_get(input, "shape"), in_shape, sizeof in_shape);
    else
        snprintf(in_shape, sizeof in_shape, "(not recorded)");
    fprintf(out, "model %s on %s, input %s, %zu layers",
            json_string_value(json_object_get(model, "name")),
            json_string_value(json_object_get(run, "backend")), in_shape,
            json_array_size(layers));
    json_t *duration = json_object_get(run, "duration_us");
    if (json_is_number(duration))
        fprintf(out, " in %.1f ms", json_number_value(duration) / 1e3);
    fputc('\n', out);
    fprintf(out, "bundle %s (run %s)\n\n", bundle_dir,
            json_string_value(json_object_get(run, "id")));
    fprintf(out, "%4s  %-16s %-18s %-16s %13s %13s %13s %10s\n", "#", "layer", "op", "shape",
            "min", "max", "mean", "time ms");
    size_t i;
    json_t *l;
    json_array_foreach(layers, i, l) {
        char shape[64], mn[32], mx[32], mean[32];
        json_t *stats = json_object_get(l, "stats");
        shape_str(json_object_get(l, "shape"), shape, sizeof shape);
        num_str(json_object_get(stats, "min"), mn, sizeof mn);
        num_str(json_object_get(stats, "max"), mx, sizeof mx);
        num_str(json_object_get(stats, "mean"), mean, sizeof mean);
        char ms[32];
        json_t *t = json_object_get(l, "time_us");
        if (json_is_number(t))
            snprintf(ms, sizeof ms, "%.3f", json_number_value(t) / 1e3);
        else
            snprintf(ms, sizeof ms, "-");
        fprintf(out, "%4zu  %-16s %-18s %-16s %13s %13s %13s %10s\n", i,
                json_string_value(json_object_get(l, "name")),
                json_string_value(json_object_get(l, "op")), shape, mn, mx, mean, ms);
        json_int_t nan = json_integer_value(json_object_get(stats, "nan"));
        json_int_t inf = json_integer_value(json_object_get(stats, "inf"));
        if (nan || inf)
            fprintf(out, "      (%lld NaN, %lld Inf)\n", (long long)nan, (long long)inf);
    }
}

void
agt_utc_now(char *buf, size_t size)
{
    struct timespec ts;
    struct tm tm;
    clock_gettime(CLOCK_REALTIME, &ts);
    gmtime_r(&ts.tv_sec, &tm);
    strftime(buf, size, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

int
agt_bundle_commit(struct gd_bundle_writer *w, json_t *meta, const char *dir, int as_json,
                  struct gd_err *err)
{
    int rc = gd_bundle_writer_commit(w, meta, err);
    if (rc != 0)
        return rc;
    json_object_set(meta, "layers", gd_bundle_writer_layers(w));
    if (as_json) {
        json_object_set_new(meta, "bundle", json_string(dir));
        json_dumpf(meta, stdout, JSON_INDENT(1) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(17));
        fputc('\n', stdout);
    } else {
        agt_report_table(stdout, meta, dir);
    }
    fflush(stdout);
    return 0;
}
