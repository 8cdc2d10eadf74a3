/*
 * bench_onnx_load.c: how fast gd_onnx_load() reads a large model, against a plain read of
 * the same file into memory (open, read into one buffer, close) measured in the same run,
 * interleaved, the page cache warm for both (one untimed read first). Prints the median of
 * each over the repeats, in ms and MB/s of the file's size, and their ratio; with --json one
 * object, for tests/bench/gpu_onnx.py to set beside onnxruntime's session creation.
 *
 * usage: bench_onnx_load MODEL.onnx [REPEATS (5)] [--json]   (docs/PERFORMANCE.md)
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "gpudiff/graph.h"
#include "gpudiff/onnx.h"
#include "bench_util.h"

/* The peer: the file read whole into a new buffer. Returns the bytes read, or -1. */
static long long
plain_read(const char *path)
{
    int fd = open(path, O_RDONLY);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0)
        return -1;
    char *buf = malloc((size_t)st.st_size ? (size_t)st.st_size : 1);
    long long got = 0;
    while (buf != NULL && got < st.st_size) {
        ssize_t n = read(fd, buf + got, (size_t)(st.st_size - got));
        if (n <= 0)
            break;
        got += n;
    }
    close(fd);
    /* Touch the data so the read cannot be optimized away. */
    volatile char sink = buf != NULL && got > 0 ? buf[got - 1] : 0;
    (void)sink;
    free(buf);
    return got;
}

int
main(int argc, char **argv)
{
    const char *path = NULL;
    int repeats = 5, json = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--json") == 0)
            json = 1;
        else if (path == NULL)
            path = argv[i];
        else
            repeats = atoi(argv[i]);
    }
    if (path == NULL || repeats < 1 || repeats > 100) {
        fprintf(stderr, "usage: bench_onnx_load MODEL.onnx [REPEATS (1-100, default 5)] "
                        "[--json]\n");
        return 2;
    }
    long long size = plain_read(path); /* warms the page cache */
    if (size < 0) {
        perror(path);
        return 1;
    }
    double load_ms[100], read_ms[100];
    int nodes = 0, folds = 0, values = 0;
    for (int r = 0; r < repeats; r++) {
        double t0 = bench_now_ms();
        if (plain_read(path) != size) {
            fprintf(stderr, "bench_onnx_load: %s: short read\n", path);
            return 1;
        }
        double t1 = bench_now_ms();
        struct gd_err err = {0};
        struct gd_graph *g = NULL;
        if (gd_onnx_load(path, NULL, NULL, &g, &err) != 0) {
            fprintf(stderr, "bench_onnx_load: %s\n", err.msg);
            return 1;
        }
        double t2 = bench_now_ms();
        nodes = g->n_nodes, folds = g->n_folds, values = g->n_values;
        gd_graph_free(g);
        read_ms[r] = t1 - t0;
        load_ms[r] = t2 - t1;
    }
    double load = bench_median(load_ms, repeats), rd = bench_median(read_ms, repeats);
    double mb = (double)size / 1e6;
    if (json) {
        printf("{\"file\": \"%s\", \"bytes\": %lld, \"repeats\": %d, \"layers\": %d, \"folds\": "
               "%d, \"values\": %d, \"gpudiff_load_ms\": %.2f, \"plain_read_ms\": %.2f}\n",
               path, size, repeats, nodes, folds, values, load, rd);
    } else {
        printf("%s: %.1f MB, %d layers, %d folds, %d values; median of %d\n", path, mb, nodes,
               folds, values, repeats);
        printf("  gd_onnx_load   %8.1f ms  %7.0f MB/s\n", load, mb / (load / 1e3));
        printf("  plain read     %8.1f ms  %7.0f MB/s\n", rd, mb / (rd / 1e3));
        printf("  load / read    %8.2f\n", load / rd);
    }
    return 0;
}
