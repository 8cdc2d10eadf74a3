/*
 * cmd_diff.c: `gpudiff-agent diff A B [--truth C] [--replay R]`: compares two run bundles layer
 * by layer on this machine (no daemon needed) and prints the table, where the difference
 * starts, the amplifiers, the truth's and a replay's findings and the explanation, or the
 * same facts as JSON.
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
            "Usage: gpudiff-agent diff A B [--truth C] [--replay R] [OPTIONS]\n\n"
            "Compares run bundles A and B layer by layer, matching layers by name (the output\n"
            "tensor's; two model files of one network compare this way too). Prints, per\n"
            "layer: the verdict (identical, noise, divergent, amplified, nonfinite, unknown,\n"
            "incomparable), max |a-b|, that difference in ULPs of the layer's largest value\n"
            "(ulp@scale), the error over what rounding and the inputs allow (x bound: above 1\n"
            "is beyond noise) and the test that decided it (max: the largest error; median:\n"
            "the typical one), the effective precision in bits of the values that differ,\n"
            "and how many values differ (with --atol or --rtol: how many are outside atol +\n"
            "rtol*|b|, B the reference side of that count, when they are not numpy's\n"
            "defaults; the verdicts are the same either way). Marks where the difference\n"
            "starts (>), or where it is first observed when the data cannot show its start\n"
            "(?), the amplifiers (!) and a replay's cause (*); lists the rows that differ in\n"
            "the last layer, what differs between the runs (and what one run does not\n"
            "record), and explains the result. docs/COMPARISON.md defines it all.\n\n"
            "Options:\n"
            "  --truth C        a third bundle taken as the truth (a cpu64 run): says, layer\n"
            "                   by layer and overall, whether A, B, both or neither is within\n"
            "                   its rounding bound of it, which is closer, and the rows off\n"
            "                   it\n"
            "  --replay R       a replay of A or B (`gpudiff-agent replay`): each layer's own\n"
            "                   error, and the cause: the first layer whose own error exceeds\n"
            "                   its bound\n"
            "  --atol X         count the values outside atol + rtol*|b| (numpy.isclose) with\n"
            "                   this absolute tolerance (default 1e-8), and list the rows of\n"
            "                   the last layer and off the truth that have one. With\n"
            "                   numpy's defaults (1e-8, 1e-5) the table counts the values\n"
            "                   that differ instead: those defaults are tighter than float32\n"
            "                   rounding of a long sum, so a correct float32 run would look\n"
            "                   wrong by them\n"
            "  --rtol Y         the relative tolerance of those counts (default 1e-5)\n"
            "  --json           print the diff as JSON (the fields the daemon serves)\n"
            "  --check          exit 7 when any layer is divergent, amplified, nonfinite,\n"
            "                   unknown or incomparable (for CI; between two model files a\n"
            "                   layer only one has is not counted)\n"
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

static const char *
side_word(char c)
{
    return c == 'a' ? "a" : c == 'b' ? "b" : c == '2' ? "both" : c == '0' ? "neither"
                                                                      : c == '=' ? "even" : "-";
}

/* '>' where it starts, '?' first observed (the start unknown), '*' the replay's cause,
 * '!' an amplifier. */
static char
mark_of(const struct gd_diff *d, int i)
{
    const struct gd_diff_layer *l = &d->layers[i];
    if (i == d->cause)
        return '*';
    if (l->is_first_divergent)
        return '>';
    if (l->is_first_observed && !d->start_known)
        return '?';
    return l->is_amplifier ? '!' : ' ';
}

static void
print_env(FILE *out, const struct gd_diff *d)
{
    size_t i;
    json_t *e;
    int n_diff = 0;
    json_array_foreach(d->env_diff, i, e) {
        if (strcmp(json_string_value(json_object_get(e, "status")), "differs") != 0)
            continue;
        if (n_diff++ == 0)
            fprintf(out, "\nwhat differs between the runs (what can change numerics first):\n");
        fprintf(out, "  %-28s %-10s a: %s\n  %-28s %-10s b: %s\n",
                json_string_value(json_object_get(e, "key")),
                json_string_value(json_object_get(e, "category")),
                json_string_value(json_object_get(e, "a")), "", "",
                json_string_value(json_object_get(e, "b")));
    }
    for (int side = 0; side < 2; side++) {
        int n = 0, width = 0;
        json_array_foreach(d->env_diff, i, e) {
            if (strcmp(json_string_value(json_object_get(e, "status")), "not recorded") != 0 ||
                !json_is_null(json_object_get(e, side == 0 ? "a" : "b")))
                continue;
            const char *key = json_string_value(json_object_get(e, "key"));
            if (n++ == 0) {
                fprintf(out, "\nnot recorded by run %c (not a difference):", side == 0 ? 'a' : 'b');
                width = 42;
            }
            if (width + (int)strlen(key) + 1 > 96) {
                fprintf(out, "\n ");
                width = 1;
            }
            fprintf(out, " %s", key);
            width += (int)strlen(key) + 1;
        }
        if (n > 0)
            fputc('\n', out);
    }
}

static void
print_table(FILE *out, const struct gd_diff *d, const char *pa, const char *pb, const char *pt,
            const char *pr, int tol_given)
{
    fprintf(out, "a: %s\nb: %s\n", pa, pb);
    if (pt != NULL)
        fprintf(out, "truth: %s\n", pt);
    if (pr != NULL)
        fprintf(out, "replay: %s\n", pr);
    fprintf(out, "layers: %d matched of %d in a and %d in b", d->n_matched, d->n_layers_a,
            d->n_layers_b);
    if (d->mode == GD_DIFF_MODELS)
        fprintf(out, " (two model files: matched by output tensor names)");
    if (d->mode == GD_DIFF_REPLAY)
        fprintf(out, " (a replay: every difference is the layer's own)");
    fprintf(out, "\n\n  %4s %-16s %-14s %-12s %10s %10s %8s %-6s %5s %10s%s%s\n", "#", "layer",
            "op", "verdict", "max abs", "ulp@scale", "x bound", "test", "bits",
            tol_given ? "mismatch" : "differ", d->has_truth ? "  right" : "",
            d->has_replay ? "  own of err (bits)" : "");
    for (int i = 0; i < d->n_layers; i++) {
        const struct gd_diff_layer *l = &d->layers[i];
        char mark = mark_of(d, i);
        if (l->verdict == GD_VERDICT_INCOMPARABLE) {
            fprintf(out, "%c %4d %-16s %-14s %-12s %s\n", mark, i, l->name,
                    l->op[0] ? l->op : "-", gd_verdict_name(l->verdict), l->note);
            continue;
        }
        char abs_s[32], ratio_s[32], bits_s[32], ulp_s[32];
        fmt_num(l->m.abs_max, abs_s, sizeof abs_s);
        fmt_num(l->ratio, ratio_s, sizeof ratio_s);
        fmt_num(l->ulp_scaled, ulp_s, sizeof ulp_s);
        /* a step's or a sparse difference's bits say nothing of an arithmetic */
        snprintf(bits_s, sizeof bits_s, l->n_differ > 0 && !l->discontinuous ? "%.1f" : "-",
                 l->bits);
        /* fp: a verdict from fingerprints is marked ~, its max abs is a lower bound (>=) */
        char verdict_s[24];
        snprintf(verdict_s, sizeof verdict_s, "%s%s", gd_verdict_name(l->verdict),
                 l->sampled ? "~" : "");
        if (l->sampled) {
            char lb[32];
            fmt_num(l->m.abs_max, lb, sizeof lb - 2);
            snprintf(abs_s, sizeof abs_s, ">=%.29s", lb);
        }
        fprintf(out, "%c %4d %-16s %-14s %-12s %10s %10s %8s %-6s %5s %10lld", mark, i, l->name,
                l->op[0] ? l->op : "-", verdict_s, abs_s, ulp_s, ratio_s,
                l->decided_by ? l->decided_by : "-", bits_s,
                (long long)(tol_given ? l->m.n_mismatch : l->n_differ));
        if (d->has_truth)
            fprintf(out, "  %-5s", side_word(l->right));
        if (d->has_replay) {
            if (l->has_own && l->own_verdict != GD_VERDICT_DIVERGENT &&
                l->own_verdict != GD_VERDICT_NONFINITE)
                fprintf(out, "  none");
            else if (l->has_own)
                fprintf(out, "  %.3g of %.3g (%.1f)", l->own_err, l->err, l->own_bits);
            else
                fprintf(out, "  -");
        }
        fputc('\n', out);
        if (strcmp(l->algo_a, l->algo_b) != 0)
            fprintf(out, "       algorithm a: %s\n       algorithm b: %s\n",
                    l->algo_a[0] ? l->algo_a : "-", l->algo_b[0] ? l->algo_b : "-");
        if (l->reason[0])
            fprintf(out, "       %s\n", l->reason);
        else if (l->note[0])
            fprintf(out, "       %s\n", l->note);
    }
    if (d->n_sampled > 0)
        fprintf(out, "\n~ judged from fingerprints: max abs is a lower bound and the other "
                     "figures are over %d sampled values\n",
                GD_FINGERPRINT_SAMPLES);
    const struct gd_diff_layer *last = NULL;
    for (int i = 0; i < d->n_layers; i++)
        if (d->layers[i].verdict != GD_VERDICT_INCOMPARABLE)
            last = &d->layers[i];
    if (last != NULL && last->rows_mismatch > 0 && tol_given) {
        fprintf(out, "\nrows of %s with a value outside atol %g + rtol %g: %lld:", last->name,
                d->atol, d->rtol, (long long)last->rows_mismatch);
        for (int i = 0; i < last->n_rows; i++)
            fprintf(out, " %lld", (long long)last->rows[i]);
        fprintf(out, "%s\n", last->rows_mismatch > last->n_rows ? " ..." : "");
        if (d->has_truth)
            fprintf(out, "rows off the truth: %lld in a, %lld in b\n",
                    (long long)last->truth_rows_a, (long long)last->truth_rows_b);
    }
    print_env(out, d);
    fputc('\n', out);
    print_wrapped(out, d->explanation, 96);
}

int
agt_cmd_diff(int argc, char **argv)
{
    enum { O_TRUTH = 256, O_ATOL, O_RTOL, O_JSON, O_CHECK, O_REPLAY };
    static const struct option longopts[] = {
        {"truth", required_argument, NULL, O_TRUTH}, {"atol", required_argument, NULL, O_ATOL},
        {"replay", required_argument, NULL, O_REPLAY},
        {"rtol", required_argument, NULL, O_RTOL},   {"json", no_argument, NULL, O_JSON},
        {"check", no_argument, NULL, O_CHECK},       {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    const char *truth_dir = NULL, *replay_dir = NULL;
    double atol = GD_DIFF_ATOL, rtol = GD_DIFF_RTOL;
    int json = 0, check = 0, c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
        switch (c) {
        case O_TRUTH:
            truth_dir = optarg;
            break;
        case O_REPLAY:
            replay_dir = optarg;
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
    struct gd_bundle *ba = NULL, *bb = NULL, *bt = NULL, *br = NULL;
    struct gd_diff *d = NULL;
    int code = AGT_EXIT_OK;
    if (gd_bundle_open(argv[optind], &ba, &err) != 0 ||
        gd_bundle_open(argv[optind + 1], &bb, &err) != 0 ||
        (truth_dir != NULL && gd_bundle_open(truth_dir, &bt, &err) != 0) ||
        (replay_dir != NULL && gd_bundle_open(replay_dir, &br, &err) != 0)) {
        code = agt_fail(&err, AGT_PHASE_LOAD);
        goto done;
    }
    struct gd_run_view va, vb, vt, vr;
    gd_bundle_view(ba, &va);
    gd_bundle_view(bb, &vb);
    if (bt != NULL)
        gd_bundle_view(bt, &vt);
    if (br != NULL)
        gd_bundle_view(br, &vr);
    if (gd_diff_runs_replay(&va, &vb, bt ? &vt : NULL, br ? &vr : NULL, atol, rtol, &d, &err) !=
        0) {
        code = agt_fail(&err, AGT_PHASE_LOAD);
        goto done;
    }
    if (json) {
        json_t *j = gd_diff_to_json(d, &va, &vb, bt ? &vt : NULL);
        json_dumpf(j, stdout, JSON_INDENT(1) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(6));
        fputc('\n', stdout);
        json_decref(j);
    } else {
        print_table(stdout, d, argv[optind], argv[optind + 1], truth_dir, replay_dir,
                    d->tolerance_given);
    }
    if (check)
        for (int i = 0; i < d->n_layers; i++)
            if (d->layers[i].verdict != GD_VERDICT_IDENTICAL &&
                d->layers[i].verdict != GD_VERDICT_NOISE &&
                !(d->layers[i].verdict == GD_VERDICT_INCOMPARABLE && d->mode == GD_DIFF_MODELS &&
                  (d->layers[i].index_a < 0 || d->layers[i].index_b < 0)))
                code = AGT_EXIT_DIVERGED;
done:
    gd_diff_free(d);
    gd_bundle_close(ba);
    gd_bundle_close(bb);
    gd_bundle_close(bt);
    gd_bundle_close(br);
    return code;
}
