/*
 * bench_half.c: one ONNX model's forward on one backend without capture, for models too
 * large to capture whole (tests/bench/gpu_half.sh runs the 1.5e9-parameter GPT-2 shape with
 * it): load, --dtype cast, the forward's device time (median of REPEATS after a warm-up,
 * gd_session_forward: CUDA events on the compute stream), one end-to-end run whose graph
 * output 0 is written as .npy, and the session's peak device memory.
 *
 * --fingerprint-cost (fp2): then REPEATS more pairs of warm gd_session_run()s from the host
 * inputs, alternating, the wall clock of each: without capture, and with every layer's
 * fingerprint delivered (gd_session_set_capture: fingerprints, no tensors; what `run
 * --capture fingerprint` asks for), so the cost of fingerprinting every layer is measured
 * without the process start, the load and the first run's set-up that `gpudiff-agent run`'s
 * wall and duration include. Prints run_none_ms_median, run_fingerprint_ms_median,
 * run_fingerprint_ratio, fingerprint_layers.
 *
 * --tf32 on: float32 products may round their inputs to TF32 (knobs.tf32), as PyTorch's
 * allow_tf32; off by default.
 *
 * usage: bench_half MODEL.onnx [--dtype float16|bfloat16] [--backend cuda] [--repeats N]
 *                   [--tf32 on|off] [--out OUTPUT.npy] [--fingerprint-cost] NAME=INPUT.npy...
 * Prints key=value lines on stdout (load_s, cast_s, session_s, forward_ms_median,
 * forward_ms_min, end_to_end_ms, device_peak_bytes, device_now_bytes, output); progress
 * on stderr. Exit 1 on any failure, with the engine's message.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpudiff/io.h"
#include "gpudiff/onnx.h"
#include "gpudiff/session.h"
#include "bench_util.h"

#define MAX_INPUTS 8

static void
die(const char *what, const struct gd_err *err)
{
    fprintf(stderr, "bench_half: %s: %s\n", what, err->msg);
    exit(1);
}

/* --fingerprint-cost: counts the layers whose fingerprint arrives. */
static int
count_fingerprint(void *user, const struct gd_layer *layer, struct gd_err *err)
{
    if (layer->fingerprint != NULL)
        ++*(int *)user;
    return 0;
}

/* One warm gd_session_run(), with every layer's fingerprint or without capture; its wall
 * clock in ms. */
static double
timed_run(struct gd_session *s, int n_inputs, const struct gd_tensor *const *ins, int fp,
          int *n_fp)
{
    struct gd_err err = {0};
    struct gd_capture_sel sel = {.fingerprints = fp, .last_layer = -1};
    if (gd_session_set_capture(s, &sel, &err) != 0)
        die("capture", &err);
    *n_fp = 0;
    double t0 = bench_now_s();
    if (gd_session_run(s, n_inputs, ins, fp ? count_fingerprint : NULL, n_fp, &err) != 0)
        die(fp ? "run with fingerprints" : "run without capture", &err);
    return (bench_now_s() - t0) * 1e3;
}


int
main(int argc, char **argv)
{
    const char *model = NULL, *dtype = NULL, *backend = "cuda", *out = NULL;
    const char *in_names[MAX_INPUTS], *in_files[MAX_INPUTS];
    int n_in = 0, repeats = 5, fp_cost = 0, tf32 = -1;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--dtype") == 0 && i + 1 < argc)
            dtype = argv[++i];
        else if (strcmp(a, "--backend") == 0 && i + 1 < argc)
            backend = argv[++i];
        else if (strcmp(a, "--repeats") == 0 && i + 1 < argc)
            repeats = atoi(argv[++i]);
        else if (strcmp(a, "--out") == 0 && i + 1 < argc)
            out = argv[++i];
        else if (strcmp(a, "--fingerprint-cost") == 0)
            fp_cost = 1;
        else if (strcmp(a, "--tf32") == 0 && i + 1 < argc)
            tf32 = strcmp(argv[++i], "on") == 0;
        else if (model == NULL)
            model = a;
        else if (strchr(a, '=') != NULL && n_in < MAX_INPUTS) {
            in_names[n_in] = a;
            in_files[n_in++] = strchr(a, '=') + 1;
        } else {
            fprintf(stderr, "usage: bench_half MODEL.onnx [--dtype float16|bfloat16] "
                            "[--backend B] [--repeats N] [--tf32 on|off] [--out OUT.npy] "
                            "[--fingerprint-cost] "
                            "NAME=INPUT.npy...\n");
            return 2;
        }
    }
    if (model == NULL || n_in == 0 || repeats < 1) {
        fprintf(stderr, "bench_half: a model, its inputs (NAME=FILE.npy) and repeats >= 1\n");
        return 2;
    }
    struct gd_err err = {0};
    struct gd_graph *g = NULL;
    struct gd_onnx_opts oo = {.defer_finalize = 1};
    double t0 = bench_now_s();
    if (gd_onnx_load(model, &oo, NULL, &g, &err) != 0)
        die(model, &err);
    double t1 = bench_now_s();
    if (dtype != NULL && gd_graph_cast_floats(g, strcmp(dtype, "bfloat16") == 0 ? GD_BF16 : GD_F16,
                                              &err) != 0)
        die("--dtype", &err);
    double t2 = bench_now_s();
    printf("load_s=%.3f\ncast_s=%.3f\n", t1 - t0, t2 - t1);
    struct gd_tensor *inputs[MAX_INPUTS] = {0};
    for (int k = 0; k < g->n_inputs; k++) {
        const char *name = g->values[g->inputs[k]].name;
        for (int j = 0; j < n_in; j++)
            if (strncmp(in_names[j], name, strlen(name)) == 0 && in_names[j][strlen(name)] == '=' &&
                gd_npy_load(in_files[j], &inputs[k], &err) != 0)
                die(in_files[j], &err);
        if (inputs[k] == NULL) {
            fprintf(stderr, "bench_half: no input %s given\n", name);
            return 2;
        }
    }
    const struct gd_tensor *const *ins = (const struct gd_tensor *const *)inputs;
    if (gd_graph_finalize_with(g, ins, &err) != 0)
        die("finalize", &err);
    struct gd_knobs knobs;
    gd_knobs_init(&knobs);
    if (dtype != NULL)
        snprintf(knobs.dtype, sizeof knobs.dtype, "%s", dtype);
    knobs.tf32 = tf32;
    double t3 = bench_now_s();
    struct gd_session *s = gd_session_new(g, backend, &knobs, &err);
    if (s == NULL)
        die("session", &err);
    printf("session_s=%.3f\n", bench_now_s() - t3);
    fprintf(stderr, "bench_half: %s: %d layers on %s%s%s\n", model, g->n_nodes, backend,
            dtype ? " in " : "", dtype ? dtype : "");
    if (gd_session_stage(s, g->n_inputs, ins, &err) != 0)
        die("stage", &err);
    double *ms = calloc((size_t)repeats + 1, sizeof *ms);
    for (int r = 0; r <= repeats; r++) { /* r = 0: the warm-up */
        double us;
        if (gd_session_forward(s, &us, &err) != 0)
            die("forward", &err);
        ms[r] = us / 1e3;
    }
    qsort(ms + 1, (size_t)repeats, sizeof *ms, bench_cmp_double);
    printf("forward_ms_median=%.3f\nforward_ms_min=%.3f\n", ms[1 + repeats / 2], ms[1]);
    double e2e;
    if (gd_session_run_end_to_end(s, g->n_inputs, ins, &e2e, &err) != 0)
        die("end to end", &err);
    printf("end_to_end_ms=%.3f\n", e2e / 1e3);
    struct gd_memory mem;
    if (gd_session_memory(s, &mem, &err) == 0)
        printf("device_peak_bytes=%lld\ndevice_now_bytes=%lld\n", (long long)mem.device_peak,
               (long long)mem.device_now);
    const struct gd_tensor *y = gd_session_output(s, 0);
    if (out != NULL && y != NULL) {
        if (gd_npy_save(out, y, &err) != 0)
            die(out, &err);
        char shape[96];
        printf("output=%s %s %s\n", out, gd_dtype_name(y->dtype),
               gd_shape_format(y->ndim, y->shape, shape, sizeof shape));
    }
    if (fp_cost) {
        double *none = calloc((size_t)repeats, sizeof *none);
        double *fp = calloc((size_t)repeats, sizeof *fp);
        if (none == NULL || fp == NULL) {
            fprintf(stderr, "bench_half: out of memory\n");
            return 1;
        }
        int n_fp = 0;
        timed_run(s, g->n_inputs, ins, 1, &n_fp); /* warm-up: the fingerprint buffers */
        for (int r = 0; r < repeats; r++) {
            none[r] = timed_run(s, g->n_inputs, ins, 0, &n_fp);
            fp[r] = timed_run(s, g->n_inputs, ins, 1, &n_fp);
        }
        double mn = bench_median(none, repeats), mf = bench_median(fp, repeats);
        printf("run_none_ms_median=%.3f\nrun_fingerprint_ms_median=%.3f\n"
               "run_fingerprint_ratio=%.4f\nfingerprint_layers=%d\n", mn, mf, mf / mn, n_fp);
        free(none);
        free(fp);
    }
    free(ms);
    gd_session_free(s);
    for (int k = 0; k < MAX_INPUTS; k++)
        gd_tensor_free(inputs[k]);
    gd_graph_free(g);
    return 0;
}
