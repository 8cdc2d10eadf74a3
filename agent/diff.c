/*
 * diff.c: `gpudiff-agent diff A B [--truth C]`: compares two run bundles layer by layer on
 * this machine (no daemon needed) and prints the table, the first divergent layer, the
 * amplifiers and the explanation, or the same facts as JSON.
 */
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpudiff/diff.h"
#include "agent.h"

static void
diff_usage(FILE *out)
{
    fprintf(out,
            "Usage: gpudiff-agent diff A B [--truth C] [OPTIONS]\n\n"
            "Compares run bundles A and B layer by layer (B is the reference side of each\n"
            "metric). Prints, per layer: the verdict (identical, noise, divergent, amplified,\n"
            "nonfinite, incomparable), max |a-b|, max ULP distance, max relative error, the\n"
            "effective precision in bits, and the count outside atol + rtol*|b|; marks the\n"
            "first divergent layer (>) and the amplifiers (!); lists the rows that differ in\n"
            "the last layer; and explains the result. docs/COMPARISON.md defines it all.\n\n"
            "Options:\n"
            "  --truth C        a third bundle taken as the truth (a cpu64 run): says which of\n"
            "                   A and B is closer to it, layer by layer\n"
            "  --atol X         absolute tolerance of the mismatch counts (default 1e-8)\n"
            "  --rtol Y         relative tolerance of the mismatch counts (default 1e-5)\n"
            "  --json           print the diff as JSON (the fields the daemon serves)\n"
            "  --check          exit 7 when any layer is divergent, amplified, nonfinite or\n"
            "                   incomparable (for CI)\n"
            "  -h, --help       this help\n\n");
    agt_print_exit_codes(out);
}

static int
parse_double(const char *s, double *out)
{
    char *end;
    double v = strtod(s, &end);
    if (*s == '\0' || *end != '\0' || !isfinite(v) || v < 0)
        return -1;
    *out = v;
    return 0;
}

static void
fmt_num(double v, char *buf, size_t size)
{
    if (isnan(v))
        snprintf(buf, size, "-");
    else
        snprintf(buf, size, "%.3g", v);
}

static void
print_wrapped(FILE *out, const char *text, int width)
{
    const char *p = text;
    while (*p) {
        int n = (int)strlen(p);
        if (n <= width) {
            fprintf(out, "%s\n", p);
            break;
        }
        int cut = width;
        while (cut > 0 && p[cut] != ' ')
            cut--;
        if (cut == 0)
            cut = width;
        fprintf(out, "%.*s\n", cut, p);
        p += cut;
        while (*p == ' ')
            p++;
    }
}

static void
print_table(FILE *out, const struct gd_diff *d, const char *pa, const char *pb, const char *pt)
{
    fprintf(out, "a: %s\nb: %s\n", pa, pb);
    if (pt != NULL)
        fprintf(out, "truth: %s\n", pt);
    fprintf(out, "\n  %4s %-16s %-14s %-12s %10s %10s %10s %6s %10s%s\n", "#", "layer", "op",
            "verdict", "max abs", "max ulp", "max rel", "bits", "mismatch",
            d->has_truth ? "  closer" : "");
    for (int i = 0; i < d->n_layers; i++) {
        const struct gd_diff_layer *l = &d->layers[i];
        char mark = l->is_first_divergent ? '>' : (l->is_amplifier ? '!' : ' ');
        if (l->verdict == GD_VERDICT_INCOMPARABLE) {
            fprintf(out, "%c %4d %-16s %-14s %-12s %s\n", mark, i, l->name, l->op,
                    gd_verdict_name(l->verdict), l->note);
            continue;
        }
        char abs_s[32], rel_s[32], bits_s[32];
        fmt_num(l->m.abs_max, abs_s, sizeof abs_s);
        fmt_num(l->m.n_rel ? l->m.rel_max : NAN, rel_s, sizeof rel_s);
        snprintf(bits_s, sizeof bits_s, "%.1f", l->bits);
        fprintf(out, "%c %4d %-16s %-14s %-12s %10s %10llu %10s %6s %10lld", mark, i, l->name,
                l->op, gd_verdict_name(l->verdict), abs_s, (unsigned long long)l->m.ulp_max,
                rel_s, bits_s, (long long)l->m.n_mismatch);
        if (d->has_truth)
            fprintf(out, "  %s", l->closer == 'a' ? "a" : l->closer == 'b' ? "b"
                                                 : l->closer == '=' ? "even" : "-");
        fputc('\n', out);
        if (strcmp(l->algo_a, l->algo_b) != 0)
            fprintf(out, "       algorithm a: %s\n       algorithm b: %s\n",
                    l->algo_a[0] ? l->algo_a : "-", l->algo_b[0] ? l->algo_b : "-");
        if (l->discontinuous && l->flipped > 0)
            fprintf(out, "       %lld outputs flipped; %lld inputs within %.3g of a step\n",
                    (long long)l->flipped, (long long)l->near_boundary, l->boundary_distance);
    }
    const struct gd_diff_layer *last = d->n_layers ? &d->layers[d->n_layers - 1] : NULL;
    if (last != NULL && last->rows_mismatch > 0) {
        fprintf(out, "\nrows of %s with a value outside atol %g + rtol %g: %lld:", last->name,
                d->atol, d->rtol, (long long)last->rows_mismatch);
        for (int i = 0; i < last->n_rows; i++)
            fprintf(out, " %lld", (long long)last->rows[i]);
        fprintf(out, "%s\n", last->rows_mismatch > last->n_rows ? " ..." : "");
    }
    if (json_array_size(d->env_diff) > 0) {
        fprintf(out, "\nwhat differs between the runs:\n");
        size_t i;
        json_t *e;
        json_array_foreach(d->env_diff, i, e) {
            fprintf(out, "  %-28s a: %s\n  %-28s b: %s\n",
                    json_string_value(json_object_get(e, "key")),
                    json_is_string(json_object_get(e, "a"))
                        ? json_string_value(json_object_get(e, "a")) : "(none)",
                    "", json_is_string(json_object_get(e, "b"))
                            ? json_string_value(json_object_get(e, "b")) : "(none)");
        }
    }
    fputc('\n', out);
    print_wrapped(out, d->explanation, 96);
}

int
agt_cmd_diff(int argc, char **argv)
{
    enum { O_TRUTH = 256, O_ATOL, O_RTOL, O_JSON, O_CHECK };
    static const struct option longopts[] = {
        {"truth", required_argument, NULL, O_TRUTH}, {"atol", required_argument, NULL, O_ATOL},
        {"rtol", required_argument, NULL, O_RTOL},   {"json", no_argument, NULL, O_JSON},
        {"check", no_argument, NULL, O_CHECK},       {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    const char *truth_dir = NULL;
    double atol = 1e-8, rtol = 1e-5;
    int json = 0, check = 0, c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
        switch (c) {
        case O_TRUTH:
            truth_dir = optarg;
            break;
        case O_ATOL:
        case O_RTOL:
            if (parse_double(optarg, c == O_ATOL ? &atol : &rtol) != 0) {
                fprintf(stderr, "gpudiff-agent diff: %s needs a number >= 0, not %s\n",
                        c == O_ATOL ? "--atol" : "--rtol", optarg);
                return AGT_EXIT_USAGE;
            }
            break;
        case O_JSON:
            json = 1;
            break;
        case O_CHECK:
            check = 1;
            break;
        case 'h':
            diff_usage(stdout);
            return AGT_EXIT_OK;
        default:
            fprintf(stderr, "Try `gpudiff-agent diff --help`.\n");
            return AGT_EXIT_USAGE;
        }
    }
    if (argc - optind != 2) {
        fprintf(stderr, "gpudiff-agent diff: give two bundle folders (see --help)\n");
        return AGT_EXIT_USAGE;
    }
    agt_log_init(0);
    struct gd_err err = {0};
    struct gd_bundle *ba = NULL, *bb = NULL, *bt = NULL;
    struct gd_diff *d = NULL;
    int code = AGT_EXIT_OK;
    if (gd_bundle_open(argv[optind], &ba, &err) != 0 ||
        gd_bundle_open(argv[optind + 1], &bb, &err) != 0 ||
        (truth_dir != NULL && gd_bundle_open(truth_dir, &bt, &err) != 0)) {
        code = agt_fail(&err, AGT_PHASE_LOAD);
        goto done;
    }
    struct gd_run_view va, vb, vt;
    gd_bundle_view(ba, &va);
    gd_bundle_view(bb, &vb);
    if (bt != NULL)
        gd_bundle_view(bt, &vt);
    if (gd_diff_runs(&va, &vb, bt ? &vt : NULL, atol, rtol, &d, &err) != 0) {
        code = agt_fail(&err, AGT_PHASE_LOAD);
        goto done;
    }
    if (json) {
        json_t *j = gd_diff_to_json(d, &va, &vb, bt ? &vt : NULL);
        json_dumpf(j, stdout, JSON_INDENT(1) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(6));
        fputc('\n', stdout);
        json_decref(j);
    } else {
        print_table(stdout, d, argv[optind], argv[optind + 1], truth_dir);
    }
    if (check)
        for (int i = 0; i < d->n_layers; i++)
            if (d->layers[i].verdict != GD_VERDICT_IDENTICAL &&
                d->layers[i].verdict != GD_VERDICT_NOISE)
                code = AGT_EXIT_DIVERGED;
done:
    gd_diff_free(d);
    gd_bundle_close(ba);
    gd_bundle_close(bb);
    gd_bundle_close(bt);
    return code;
}
