/*
 * noise_record.c: a noise probe (gpudiff/noise.h) as run.json records it, in a layer's
 * record: "noise": {"outputs": N, "rows": R, "of_rows": M, "slice": "...", "fp32": {"max": x,
 * "median": y}, "tf32": {...}, "bf16": {...}, "fp16": {...}}, an arithmetic absent where it
 * was not measured.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "gpudiff/noise.h"
#include "../core/internal.h"

const char *
gd_noise_arith_name(enum gd_noise_arith a)
{
    static const char *const names[GD_NOISE_N] = {"fp32", "tf32", "bf16", "fp16"};
    return a >= 0 && a < GD_NOISE_N ? names[a] : "?";
}

json_t *
gd_noise_probe_to_json(const struct gd_noise_probe *p)
{
    json_t *j = json_pack("{s:I, s:I, s:I, s:s, s:f}", "outputs", (json_int_t)p->outputs,
                          "rows", (json_int_t)p->rows, "of_rows", (json_int_t)p->of_rows,
                          "slice", p->slice, "scale", p->scale);
    for (int a = 0; j != NULL && a < GD_NOISE_N; a++) {
        if (!p->has[a])
            continue;
        json_t *e = json_pack("{s:f, s:f, s:f}", "max", p->max[a], "median", p->median[a],
                              "median_hi", p->median_hi[a]);
        if (e == NULL || json_object_set_new(j, gd_noise_arith_name((enum gd_noise_arith)a), e)) {
            json_decref(j);
            return NULL;
        }
    }
    if (j != NULL && p->n_gains > 0) {
        json_t *g = json_object();
        for (int i = 0; g != NULL && i < p->n_gains; i++)
            json_object_set_new(g, p->gains[i].input,
                                json_pack("{s:f, s:f, s:f}", "l1", p->gains[i].l1, "shift",
                                          p->gains[i].shift, "l2", p->gains[i].l2));
        if (g == NULL || json_object_set_new(j, "gains", g) != 0) {
            json_decref(j);
            return NULL;
        }
    }
    return j;
}

/* A count field: an integer >= 0. */
static int
count_field(json_t *j, const char *key, int64_t *out, struct gd_err *err)
{
    json_t *v = json_object_get(j, key);
    if (!json_is_integer(v) || json_integer_value(v) < 0)
        return gd_err_set(err, GD_EFORMAT, "noise.%s must be an integer >= 0", key);
    *out = json_integer_value(v);
    return 0;
}

int
gd_noise_probe_from_json(json_t *j, struct gd_noise_probe *out, struct gd_err *err)
{
    memset(out, 0, sizeof *out);
    if (!json_is_object(j))
        return gd_err_set(err, GD_EFORMAT, "noise must be an object");
    struct gd_noise_probe p;
    memset(&p, 0, sizeof p);
    int rc = count_field(j, "outputs", &p.outputs, err);
    if (rc == 0)
        rc = count_field(j, "rows", &p.rows, err);
    if (rc == 0)
        rc = count_field(j, "of_rows", &p.of_rows, err);
    if (rc != 0)
        return rc;
    json_t *slice = json_object_get(j, "slice");
    if (slice != NULL && !json_is_string(slice))
        return gd_err_set(err, GD_EFORMAT, "noise.slice must be a string");
    snprintf(p.slice, sizeof p.slice, "%s", slice ? json_string_value(slice) : "");
    json_t *scale = json_object_get(j, "scale");
    if (scale != NULL && (!json_is_number(scale) || !(json_number_value(scale) >= 0) ||
                          !isfinite(json_number_value(scale))))
        return gd_err_set(err, GD_EFORMAT, "noise.scale must be a finite number >= 0");
    p.scale = scale != NULL ? json_number_value(scale) : 0.0;
    for (int a = 0; a < GD_NOISE_N; a++) {
        const char *name = gd_noise_arith_name((enum gd_noise_arith)a);
        json_t *e = json_object_get(j, name);
        if (e == NULL)
            continue;
        json_t *mx = json_object_get(e, "max"), *md = json_object_get(e, "median");
        if (!json_is_number(mx) || !json_is_number(md) || !(json_number_value(mx) >= 0) ||
            !(json_number_value(md) >= 0) || !isfinite(json_number_value(mx)) ||
            !isfinite(json_number_value(md)))
            return gd_err_set(err, GD_EFORMAT,
                              "noise.%s needs max and median, finite numbers "
                              ">= 0",
                              name);
        json_t *hi = json_object_get(e, "median_hi");
        if (hi != NULL && (!json_is_number(hi) || !(json_number_value(hi) >= 0) ||
                           !isfinite(json_number_value(hi))))
            return gd_err_set(err, GD_EFORMAT, "noise.%s.median_hi must be a finite number >= 0",
                              name);
        p.has[a] = 1;
        p.max[a] = json_number_value(mx);
        p.median[a] = json_number_value(md);
        /* absent: the median itself */
        p.median_hi[a] = hi != NULL ? fmax(json_number_value(hi), p.median[a]) : p.median[a];
    }
    json_t *gains = json_object_get(j, "gains"), *g;
    const char *key;
    if (gains != NULL && !json_is_object(gains))
        return gd_err_set(err, GD_EFORMAT, "noise.gains must be an object");
    json_object_foreach(gains, key, g)
    {
        double v[3];
        static const char *const names[3] = {"l1", "shift", "l2"};
        int ok = p.n_gains < GD_NOISE_GAINS && strlen(key) < sizeof p.gains[0].input &&
                 json_is_object(g);
        for (int k = 0; ok && k < 3; k++) {
            json_t *e = json_object_get(g, names[k]);
            v[k] = json_is_number(e) ? json_number_value(e) : -1;
            ok = v[k] >= 0 && isfinite(v[k]);
        }
        if (!ok)
            return gd_err_set(err, GD_EFORMAT,
                              "noise.gains: at most %d inputs, each {l1, "
                              "shift, l2} of finite numbers >= 0",
                              GD_NOISE_GAINS);
        struct gd_noise_gain *gn = &p.gains[p.n_gains++];
        snprintf(gn->input, sizeof gn->input, "%s", key);
        gn->l1 = v[0], gn->shift = v[1], gn->l2 = v[2];
    }
    if (p.outputs > 0 && !p.has[GD_NOISE_FP32])
        return gd_err_set(err, GD_EFORMAT, "noise.fp32 is missing");
    *out = p;
    return 0;
}
