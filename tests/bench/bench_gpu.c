/*
 * bench_gpu.c: the cuda backend's forward time for one model and input, without capture and
 * with every layer captured to pinned host memory, plus this GPU's device-to-host bandwidth
 * from pinned memory measured in the same process, so the capture overhead can be judged
 * against what the link allows: a captured run should take at most
 * 1.3 x max(compute time, captured bytes / bandwidth).
 *
 * usage: bench_gpu MODEL INPUT [KEY] [REPEATS] [--tf32 on|off] [--conv-algo HOW]
 *                  [--conv-api graph|legacy] [--save FILE]
 * MODEL is JSON or ONNX. --save writes the last layer of one more captured run as .npy, to
 * check the numbers. first_layer_ms is the first node's compute time in the last captured
 * run: its output cannot be copied before it is done, so the input's upload, that layer and
 * the copy of every captured byte are the least a captured run can take.
 * Then the same runs with every layer's fingerprint and no tensor (what `run --capture
 * fingerprint` asks for): fingerprint_ms, the warm cost of fingerprints against forward_ms.
 * Prints `key value` lines for tests/bench/bench_cuda.py.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cuda_runtime_api.h>

#include "gpudiff/io.h"
#include "gpudiff/model.h"
#include "gpudiff/session.h"
#include "bench_model.h"
#include "bench_util.h"

struct counter {
    size_t bytes;
    int layers;
    int keep_index;            /* >= 0: keep a copy of this layer */
    struct gd_tensor *kept;
    double op_us[GD_OP_COUNT]; /* device time by op, over the captured runs */
    int n_algos;               /* device time by algorithm, of the last captured run */
    char algo[32][128];
    double algo_us[32];
    int algo_n[32];
    double first_us;           /* layer 0's compute time */
};

/* The copy is complete when this is called: that is the capture being measured. */
static int
count_layer(void *user, const struct gd_layer *layer, struct gd_err *err)
{
    struct counter *c = user;
    c->bytes += gd_tensor_nbytes(layer->value);
    c->layers++;
    if (layer->time_us > 0)
        c->op_us[layer->op] += layer->time_us;
    if (layer->index == 0)
        c->first_us = layer->time_us;
    if (layer->algo[0] != '\0') {
        int k = 0;
        while (k < c->n_algos && strcmp(c->algo[k], layer->algo) != 0)
            k++;
        if (k == c->n_algos && k < 32)
            snprintf(c->algo[c->n_algos++], sizeof c->algo[0], "%s", layer->algo);
        if (k < 32) {
            c->algo_us[k] += layer->time_us;
            c->algo_n[k]++;
        }
    }
    if (layer->index == c->keep_index && (c->kept = gd_tensor_dup(layer->value, err)) == NULL)
        return err->code;
    return 0;
}

/* Fingerprint-only runs: counts the fingerprints delivered. */
static int
count_fingerprint(void *user, const struct gd_layer *layer, struct gd_err *err)
{
    (void)err;
    if (layer->fingerprint != NULL)
        ++*(int *)user;
    return 0;
}

/* Device-to-host copy bandwidth into pinned memory, GB/s, median of 5 copies of 1 GiB. */
static double
pinned_bandwidth(void)
{
    size_t n = (size_t)1 << 30;
    void *dev = NULL, *host = NULL;
    cudaEvent_t a, b;
    double t[5];
    if (cudaMalloc(&dev, n) != cudaSuccess || cudaHostAlloc(&host, n, 0) != cudaSuccess)
        return 0;
    cudaMemset(dev, 1, n);
    cudaEventCreate(&a);
    cudaEventCreate(&b);
    cudaMemcpy(host, dev, n, cudaMemcpyDeviceToHost);
    for (int i = 0; i < 5; i++) {
        float ms = 0;
        cudaEventRecord(a, 0);
        cudaMemcpyAsync(host, dev, n, cudaMemcpyDeviceToHost, 0);
        cudaEventRecord(b, 0);
        cudaEventSynchronize(b);
        cudaEventElapsedTime(&ms, a, b);
        t[i] = (double)n / (ms * 1e-3) / 1e9;
    }
    cudaEventDestroy(a);
    cudaEventDestroy(b);
    cudaFree(dev);
    cudaFreeHost(host);
    return bench_median(t, 5);
}

int
main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: bench_gpu MODEL INPUT [KEY] [REPEATS] [--tf32 on|off] "
                        "[--conv-algo HOW] [--conv-api graph|legacy] [--save FILE]\n");
        return 2;
    }
    const char *key = argc > 3 && strncmp(argv[3], "--", 2) != 0 && strcmp(argv[3], "-") != 0
                          ? argv[3] : NULL;
    int repeats = argc > 4 && strncmp(argv[4], "--", 2) != 0 ? atoi(argv[4]) : 20;
    if (repeats < 1 || repeats > 1000)
        repeats = 20;
    const char *save = NULL;
    struct gd_knobs knobs;
    gd_knobs_init(&knobs);
    knobs.tf32 = 0;
    snprintf(knobs.conv_algo, sizeof knobs.conv_algo, "autotune");
    for (int i = 3; i + 1 < argc; i++) {
        if (strcmp(argv[i], "--tf32") == 0)
            knobs.tf32 = strcmp(argv[i + 1], "on") == 0;
        else if (strcmp(argv[i], "--conv-algo") == 0)
            snprintf(knobs.conv_algo, sizeof knobs.conv_algo, "%s", argv[i + 1]);
        else if (strcmp(argv[i], "--conv-api") == 0)
            snprintf(knobs.conv_api, sizeof knobs.conv_api, "%s", argv[i + 1]);
        else if (strcmp(argv[i], "--save") == 0)
            save = argv[i + 1];
    }
    struct gd_err err = {0};
    struct gd_graph *g = NULL;
    struct gd_tensor *input = NULL;
    struct gd_session *s = NULL;
    if (gd_array_load(argv[2], key, &input, &err) != 0 ||
        bench_model_load(argv[1], input, &g, &err) != 0 ||
        (s = gd_session_new(g, "cuda", &knobs, &err)) == NULL) {
        fprintf(stderr, "bench_gpu: %s\n", err.msg);
        return 1;
    }
    const struct gd_tensor *inputs[1] = {input};
    double *t = calloc((size_t)repeats, sizeof *t);
    struct counter c = {.keep_index = -1};
    /* The input is uploaded inside every run (from pageable memory), as the agent does. */
    for (int mode = 0; mode < 2; mode++) {
        for (int r = -2; r < repeats; r++) { /* two warm-ups: autotuning, then allocation */
            c.bytes = 0;
            c.layers = 0;
            memset(c.op_us, 0, sizeof c.op_us);
            c.n_algos = 0;
            memset(c.algo_us, 0, sizeof c.algo_us);
            memset(c.algo_n, 0, sizeof c.algo_n);
            double t0 = bench_now_ms();
            int rc = gd_session_run(s, 1, inputs, mode ? count_layer : NULL, &c, &err);
            double dt = bench_now_ms() - t0;
            if (rc != 0) {
                fprintf(stderr, "bench_gpu: %s\n", err.msg);
                return 1;
            }
            if (r >= 0)
                t[r] = dt;
        }
        printf("%s_ms %.3f\n", mode ? "capture" : "forward", bench_median(t, repeats));
        if (mode)
            printf("captured_bytes %zu\ncaptured_layers %d\nfirst_layer_ms %.4f\n", c.bytes,
                   c.layers, c.first_us / 1e3);
        if (mode) /* the last run's device time per op kind */
            for (int op = 0; op < GD_OP_COUNT; op++)
                if (c.op_us[op] > 0)
                    printf("op_ms_%s %.3f\n", gd_op_name((enum gd_op)op), c.op_us[op] / 1e3);
        for (int k = 0; mode && k < c.n_algos; k++)
            printf("algo_%d %d %.3f %s\n", k, c.algo_n[k], c.algo_us[k] / 1e3, c.algo[k]);
    }
    {
        struct gd_capture_sel fp_only = {.fingerprints = 1, .last_layer = -1};
        struct gd_capture_sel every = {.tensors = 1, .last_layer = -1};
        int n_fp = 0;
        if (gd_session_set_capture(s, &fp_only, &err) != 0) {
            fprintf(stderr, "bench_gpu: %s\n", err.msg);
            return 1;
        }
        for (int r = -1; r < repeats; r++) {
            n_fp = 0;
            double t0 = bench_now_ms();
            if (gd_session_run(s, 1, inputs, count_fingerprint, &n_fp, &err) != 0) {
                fprintf(stderr, "bench_gpu: fingerprints: %s\n", err.msg);
                return 1;
            }
            if (r >= 0)
                t[r] = bench_now_ms() - t0;
        }
        printf("fingerprint_ms %.3f\nfingerprint_layers %d\n", bench_median(t, repeats), n_fp);
        if (gd_session_set_capture(s, &every, &err) != 0) {
            fprintf(stderr, "bench_gpu: %s\n", err.msg);
            return 1;
        }
    }
    if (save != NULL) {
        c.keep_index = c.layers - 1;
        if (gd_session_run(s, 1, inputs, count_layer, &c, &err) != 0 || c.kept == NULL ||
            gd_npy_save(save, c.kept, &err) != 0) {
            fprintf(stderr, "bench_gpu: --save: %s\n", err.msg);
            return 1;
        }
        gd_tensor_free(c.kept);
    }
    double t_upload[5];
    for (int r = 0; r < 5; r++) {
        void *dev = NULL;
        double t0 = bench_now_ms();
        cudaMalloc(&dev, gd_tensor_nbytes(input));
        cudaMemcpy(dev, input->data, gd_tensor_nbytes(input), cudaMemcpyHostToDevice);
        t_upload[r] = bench_now_ms() - t0;
        cudaFree(dev);
    }
    printf("input_upload_ms %.3f\n", bench_median(t_upload, 5));
    printf("pinned_d2h_gbps %.2f\n", pinned_bandwidth());
    const struct gd_env *env = gd_session_env(s);
    printf("gpu %s\n", gd_env_get(env, "gpu_name") ? gd_env_get(env, "gpu_name") : "?");
    printf("cudnn %s\n", gd_env_get(env, "cudnn") ? gd_env_get(env, "cudnn") : "?");
    free(t);
    gd_session_free(s);
    gd_tensor_free(input);
    gd_graph_free(g);
    return 0;
}
