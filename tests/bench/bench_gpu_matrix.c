/*
 * bench_gpu_matrix.c: the cuda backend's forward time for one model and input under several
 * settings (TF32, conv algorithm choice, conv API), each in a session of its own, the input
 * staged on the device first (as a framework's benchmark has its input on the GPU): per
 * setting, the median wall clock of gd_session_forward over REPEATS runs after 3 warm-ups
 * (the first of them makes the choices: heuristics, autotuning), the median device time,
 * the first run's wall clock (the set-up cost), and how many convolutions took each engine
 * config or algorithm.
 *
 * usage: bench_gpu_matrix MODEL INPUT [--key K] [--repeats N] [--save FILE] SETTING...
 *   SETTING: TF32:HOW[:API], TF32 on|off, HOW heuristic|autotune|deterministic|fixed:X, API
 *   graph (default) or legacy: "off:autotune", "on:heuristic:legacy".
 * --save writes the graph's first output of the first setting as .npy (an end-to-end run).
 * Prints `row SETTING wall_ms W device_ms D first_ms F` and `algos SETTING COUNT:CHOICE...`
 * lines for tests/bench/gpu_cudnn.py; a setting that fails prints `error SETTING MESSAGE`.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpudiff/io.h"
#include "gpudiff/session.h"
#include "bench_model.h"
#include "bench_util.h"

#define MAX_CHOICES 64

/* Counts the choice each convolution of the session made (the chosen offer's config). */
static void
print_algos(const char *setting, struct gd_session *s, const struct gd_graph *g)
{
    char names[MAX_CHOICES][80];
    int counts[MAX_CHOICES], n = 0;
    for (int ni = 0; ni < g->n_nodes; ni++) {
        struct gd_algo_offer offers[GD_ALGO_OFFERS_MAX];
        int k = 0;
        struct gd_err err = {0};
        if (g->nodes[ni].op != GD_OP_CONV && g->nodes[ni].op != GD_OP_CONV_TRANSPOSE)
            continue;
        if (gd_session_algo_offers(s, ni, offers, GD_ALGO_OFFERS_MAX, &k, &err) != 0)
            continue;
        const char *chosen = k == 0 ? "(none listed)" : NULL;
        for (int i = 0; i < k && chosen == NULL; i++)
            if (offers[i].chosen)
                chosen = offers[i].config;
        if (chosen == NULL)
            chosen = "(not among the offers)";
        int at = 0;
        while (at < n && strcmp(names[at], chosen) != 0)
            at++;
        if (at == n && n < MAX_CHOICES) {
            snprintf(names[n], sizeof names[n], "%s", chosen);
            counts[n++] = 0;
        }
        if (at < n)
            counts[at]++;
    }
    printf("algos %s", setting);
    for (int i = 0; i < n; i++)
        printf(" %d:%s", counts[i], names[i]);
    printf("\n");
}

static int
parse_setting(const char *text, struct gd_knobs *k)
{
    char buf[128];
    snprintf(buf, sizeof buf, "%s", text);
    char *how = strchr(buf, ':');
    if (how == NULL)
        return -1;
    *how++ = '\0';
    if (strcmp(buf, "on") != 0 && strcmp(buf, "off") != 0)
        return -1;
    gd_knobs_init(k);
    k->tf32 = strcmp(buf, "on") == 0;
    /* the API is the last field, unless it is part of fixed:X */
    char *api = strrchr(how, ':');
    if (api != NULL && (strcmp(api + 1, "graph") == 0 || strcmp(api + 1, "legacy") == 0)) {
        *api++ = '\0';
        snprintf(k->conv_api, sizeof k->conv_api, "%s", api);
    }
    snprintf(k->conv_algo, sizeof k->conv_algo, "%s", how);
    return 0;
}

static int
run_setting(const char *setting, struct gd_graph *g, const struct gd_tensor *input, int repeats,
            const char *save)
{
    struct gd_knobs k;
    struct gd_err err = {0};
    if (parse_setting(setting, &k) != 0) {
        printf("error %s not TF32:HOW[:API]\n", setting);
        return 1;
    }
    struct gd_session *s = gd_session_new(g, "cuda", &k, &err);
    const struct gd_tensor *in[1] = {input};
    double *wall = calloc((size_t)repeats, sizeof *wall);
    double *dev = calloc((size_t)repeats, sizeof *dev);
    double first = 0;
    int rc = s != NULL && wall != NULL && dev != NULL ? gd_session_stage(s, 1, in, &err)
                                                      : GD_ENOMEM;
    for (int r = -3; rc == 0 && r < repeats; r++) {
        double us = 0, t0 = bench_now_ms();
        rc = gd_session_forward(s, &us, &err);
        double dt = bench_now_ms() - t0;
        if (r == -3)
            first = dt;
        if (r >= 0) {
            wall[r] = dt;
            dev[r] = us / 1e3;
        }
    }
    if (rc == 0 && save != NULL) {
        double us = 0;
        rc = gd_session_run_end_to_end(s, 1, in, &us, &err);
        const struct gd_tensor *out = rc == 0 ? gd_session_output(s, 0) : NULL;
        if (rc == 0 && out == NULL)
            rc = gd_err_set(&err, GD_EINVAL, "no output to save");
        if (rc == 0)
            rc = gd_npy_save(save, out, &err);
    }
    if (rc == 0) {
        printf("row %s wall_ms %.4f device_ms %.4f first_ms %.1f\n", setting,
               bench_median(wall, repeats), bench_median(dev, repeats), first);
        print_algos(setting, s, g);
    } else {
        printf("error %s %s\n", setting, s == NULL || err.msg[0] ? err.msg : "out of memory");
    }
    fflush(stdout);
    free(wall);
    free(dev);
    gd_session_free(s);
    return rc != 0;
}

int
main(int argc, char **argv)
{
    if (argc < 4) {
        fprintf(stderr, "usage: bench_gpu_matrix MODEL INPUT [--key K] [--repeats N] "
                        "[--save FILE] SETTING...\n");
        return 2;
    }
    const char *key = NULL, *save = NULL;
    int repeats = 20, first_setting = 3;
    while (first_setting + 1 < argc && strncmp(argv[first_setting], "--", 2) == 0) {
        if (strcmp(argv[first_setting], "--key") == 0)
            key = argv[first_setting + 1];
        else if (strcmp(argv[first_setting], "--repeats") == 0)
            repeats = atoi(argv[first_setting + 1]);
        else if (strcmp(argv[first_setting], "--save") == 0)
            save = argv[first_setting + 1];
        else
            break;
        first_setting += 2;
    }
    if (repeats < 1 || repeats > 1000)
        repeats = 20;
    struct gd_err err = {0};
    struct gd_tensor *input = NULL;
    struct gd_graph *g = NULL;
    double t0 = bench_now_ms();
    if (gd_array_load(argv[2], key, &input, &err) != 0 ||
        bench_model_load(argv[1], input, &g, &err) != 0) {
        fprintf(stderr, "bench_gpu_matrix: %s\n", err.msg);
        return 1;
    }
    printf("load_ms %.1f\nnodes %d\n", bench_now_ms() - t0, g->n_nodes);
    int failed = 0;
    for (int i = first_setting; i < argc; i++)
        failed |= run_setting(argv[i], g, input, repeats, i == first_setting ? save : NULL);
    gd_graph_free(g);
    gd_tensor_free(input);
    return failed;
}
