/*
 * bench_forward.c: the CPU forward pass of two models, with and without capturing every
 * layer, timed as the median of several runs after a warm-up:
 *   - the seed case (shared/cases/lenet-11-821, 1000 images);
 *   - a ResNet-18-shaped graph (batch 8, 3x224x224, random weights), built in code.
 * Capture is measured two ways: copying every layer into host memory (what a capture
 * callback costs), and writing the run bundle to disk (what `gpudiff-agent run` does).
 *
 * usage: bench_forward [--hashes] [--only seed|resnet18] [--threads N] [--weights-dir DIR]
 *                      SEED_MODEL SEED_INPUT_NPZ [REPEATS] [BACKEND]
 * Prints one line per measurement; tests/bench/bench_forward.py adds the numpy peer.
 * --weights-dir is the seed case's initializer folder: the model file's own relative path
 * only resolves from the main checkout. --threads sets the CPU backends' thread count (the
 * knob; default: one per core).
 * With --hashes it times nothing: it runs each model once and prints the SHA-256 of every
 * layer's bytes, so two builds can be shown to give the same bits (the ResNet-18-shaped
 * graph's layers are too large to keep as files for every build compared).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "gpudiff/bundle.h"
#include "gpudiff/hash.h"
#include "gpudiff/io.h"
#include "gpudiff/model.h"
#include "gpudiff/session.h"
#include "bench_util.h"

/* knobs.threads for every session */
static int threads;

static void
die(const char *what, const struct gd_err *err)
{
    fprintf(stderr, "bench_forward: %s: %s\n", what, err->msg);
    exit(1);
}

/* ---- capture into memory ---- */

struct mem_capture {
    size_t bytes;
    int n;
    void *bufs[512];
};

static int
to_memory(void *user, const struct gd_layer *layer, struct gd_err *err)
{
    struct mem_capture *mc = user;
    size_t n = gd_tensor_nbytes(layer->value);
    if (mc->n == 512)
        return gd_err_set(err, GD_ERANGE, "too many layers");
    void *p = malloc(n ? n : 1);
    if (p == NULL)
        return gd_err_set(err, GD_ENOMEM, "out of memory");
    memcpy(p, layer->value->data, n);
    mc->bufs[mc->n++] = p;
    mc->bytes += n;
    return 0;
}

static void
mem_release(struct mem_capture *mc)
{
    for (int i = 0; i < mc->n; i++)
        free(mc->bufs[i]);
    mc->n = 0;
}

/* ---- the hash of every layer ---- */

static int
print_hash(void *user, const struct gd_layer *layer, struct gd_err *err)
{
    const char *model = user;
    char hex[GD_SHA256_HEX_LEN + 1];
    int rc = gd_sha256_hex(layer->value->data, gd_tensor_nbytes(layer->value), hex, err);
    if (rc == 0)
        printf("%-10s %4d %-16s %s\n", model, layer->index, layer->name, hex);
    return rc;
}

static void
hashes(const char *name, struct gd_graph *g, const char *backend, const struct gd_tensor *input)
{
    struct gd_err err = {0};
    struct gd_knobs knobs;
    gd_knobs_init(&knobs);
    knobs.threads = threads;
    struct gd_session *s = gd_session_new(g, backend, &knobs, &err);
    if (s == NULL)
        die("session", &err);
    const struct gd_tensor *inputs[1] = {input};
    if (gd_session_run(s, 1, inputs, print_hash, (void *)name, &err) != 0)
        die("run", &err);
    gd_session_free(s);
}

/* ---- capture into a bundle ---- */

struct disk_capture {
    struct gd_bundle_writer *w;
    const struct gd_graph *g;
};

static int
to_disk(void *user, const struct gd_layer *layer, struct gd_err *err)
{
    struct disk_capture *dc = user;
    return gd_bundle_writer_layer(dc->w, dc->g, layer, err);
}

enum mode { NO_CAPTURE, TO_MEMORY, TO_DISK };

static double
run_once(struct gd_graph *g, const char *backend, const struct gd_tensor *input, enum mode mode,
         size_t *captured)
{
    struct gd_err err = {0};
    struct gd_knobs knobs;
    gd_knobs_init(&knobs);
    knobs.threads = threads;
    struct gd_session *s = gd_session_new(g, backend, &knobs, &err);
    if (s == NULL)
        die("session", &err);
    struct mem_capture mc = {0};
    struct disk_capture dc = {.g = g};
    char dir[64];
    snprintf(dir, sizeof dir, "/tmp/gpudiff-bench-%d", (int)getpid());
    if (mode == TO_DISK && gd_bundle_writer_new(dir, 1, &dc.w, &err) != 0)
        die("bundle", &err);
    const struct gd_tensor *inputs[1] = {input};
    double t0 = bench_now_ms();
    int rc = gd_session_run(s, 1, inputs, mode == NO_CAPTURE ? NULL : mode == TO_MEMORY ? to_memory
                                                                                        : to_disk,
                            mode == TO_MEMORY ? (void *)&mc : (void *)&dc, &err);
    if (rc == 0 && mode == TO_DISK) {
        json_t *meta = json_pack("{s:s}", "id", "bench");
        rc = gd_bundle_writer_commit(dc.w, meta, &err);
        json_decref(meta);
    }
    double t = bench_now_ms() - t0;
    if (rc != 0)
        die("run", &err);
    *captured = mc.bytes;
    mem_release(&mc);
    gd_bundle_writer_free(dc.w);
    gd_session_free(s);
    if (mode == TO_DISK) {
        char cmd[128];
        snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
        if (system(cmd) != 0)
            fprintf(stderr, "bench_forward: could not remove %s\n", dir);
    }
    return t;
}

static void
measure(const char *name, struct gd_graph *g, const char *backend, const struct gd_tensor *input,
        int repeats)
{
    static const char *const mode_names[] = {"no capture", "capture to memory", "capture to bundle"};
    double base = 0;
    for (int mode = NO_CAPTURE; mode <= TO_DISK; mode++) {
        double t[64];
        size_t bytes = 0;
        run_once(g, backend, input, (enum mode)mode, &bytes); /* warm-up */
        for (int r = 0; r < repeats; r++)
            t[r] = run_once(g, backend, input, (enum mode)mode, &bytes);
        qsort(t, (size_t)repeats, sizeof t[0], bench_cmp_double);
        double med = t[repeats / 2];
        if (mode == NO_CAPTURE)
            base = med;
        printf("%-10s %-8s %-18s median %9.1f ms  (min %9.1f, max %9.1f)  x%.2f", name, backend,
               mode_names[mode], med, t[0], t[repeats - 1], med / base);
        if (mode == TO_MEMORY)
            printf("  %.1f MB captured", (double)bytes / 1e6);
        printf("\n");
        fflush(stdout);
    }
}

/* ---- a ResNet-18-shaped graph ---- */

struct builder {
    struct gd_graph *g;
    unsigned seed;
    int n;
};

static struct gd_tensor *
random_tensor(struct builder *b, int ndim, const int64_t *shape, double scale)
{
    struct gd_err err = {0};
    struct gd_tensor *t = gd_tensor_new(GD_F32, ndim, shape, &err);
    if (t == NULL)
        die("tensor", &err);
    float *v = t->data;
    for (int64_t i = 0; i < gd_tensor_numel(t); i++) {
        b->seed = b->seed * 1664525u + 1013904223u;
        v[i] = (float)(((double)(b->seed >> 8) / (double)(1u << 24) * 2.0 - 1.0) * scale);
    }
    return t;
}

static void
weight(struct builder *b, const char *name, int ndim, const int64_t *shape, double scale)
{
    struct gd_err err = {0};
    if (gd_graph_add_constant(b->g, name, random_tensor(b, ndim, shape, scale), &err) != 0)
        die(name, &err);
}

static struct gd_attr
ints_attr(const char *name, int n, const int64_t *v)
{
    struct gd_attr a = {.name = strdup(name), .type = GD_ATTR_INTS, .n = n};
    a.ints = malloc((size_t)n * sizeof *a.ints);
    memcpy(a.ints, v, (size_t)n * sizeof *v);
    return a;
}

static struct gd_attr
int_attr(const char *name, int64_t v)
{
    struct gd_attr a = {.name = strdup(name), .type = GD_ATTR_INT, .i = v};
    return a;
}

static void
node(struct builder *b, const char *op, const char *out, int n_in, const char **ins, int n_attrs,
     struct gd_attr *attrs)
{
    struct gd_err err = {0};
    const char *outs[1] = {out};
    if (gd_graph_add_node(b->g, out, op, n_in, ins, 1, outs, n_attrs, attrs, &err) != 0)
        die(out, &err);
}

/* conv (no bias) -> batch norm [-> relu]; returns the output name in out. */
static void
conv_bn(struct builder *b, const char *in, int64_t cin, int64_t cout, int64_t k, int64_t stride,
        int relu, char *out)
{
    char w[64], conv[64], bn[64], names[4][64];
    int id = b->n++;
    snprintf(w, sizeof w, "w%d", id);
    int64_t wshape[4] = {cout, cin, k, k};
    weight(b, w, 4, wshape, 1.0 / (double)(cin * k * k));
    snprintf(conv, sizeof conv, "conv%d", id);
    int64_t p = k / 2, pads[4] = {p, p, p, p}, strides[2] = {stride, stride};
    struct gd_attr attrs[2] = {ints_attr("pads", 4, pads), ints_attr("strides", 2, strides)};
    const char *cins[2] = {in, w};
    node(b, "Conv", conv, 2, cins, 2, attrs);
    const char *parts[4] = {"scale", "bias", "mean", "var"};
    const char *bins[5] = {conv, names[0], names[1], names[2], names[3]};
    for (int i = 0; i < 4; i++) {
        snprintf(names[i], sizeof names[i], "bn%d.%s", id, parts[i]);
        struct gd_err err = {0};
        struct gd_tensor *t = random_tensor(b, 1, &cout, 0.5);
        float *v = t->data;
        for (int64_t c = 0; c < cout; c++)
            v[c] = i == 3 ? 1.0f + 0.5f * v[c] : (i == 0 ? 1.0f + v[c] : v[c]);
        if (gd_graph_add_constant(b->g, names[i], t, &err) != 0)
            die(names[i], &err);
    }
    snprintf(bn, sizeof bn, "bn%d", id);
    node(b, "BatchNormalization", bn, 5, bins, 0, NULL);
    if (!relu) {
        strcpy(out, bn);
        return;
    }
    snprintf(out, 64, "relu%d", id);
    const char *rins[1] = {bn};
    node(b, "Relu", out, 1, rins, 0, NULL);
}

static void
basic_block(struct builder *b, const char *in, int64_t cin, int64_t cout, int64_t stride,
            char *out)
{
    char a[64], c2[64], shortcut[64], sum[64];
    conv_bn(b, in, cin, cout, 3, stride, 1, a);
    conv_bn(b, a, cout, cout, 3, 1, 0, c2);
    if (stride != 1 || cin != cout)
        conv_bn(b, in, cin, cout, 1, stride, 0, shortcut);
    else
        strcpy(shortcut, in);
    snprintf(sum, sizeof sum, "add%d", b->n++);
    const char *ains[2] = {c2, shortcut};
    node(b, "Add", sum, 2, ains, 0, NULL);
    snprintf(out, 64, "blockrelu%d", b->n++);
    const char *rins[1] = {sum};
    node(b, "Relu", out, 1, rins, 0, NULL);
}

static struct gd_graph *
resnet18(int64_t batch)
{
    struct gd_err err = {0};
    struct builder b = {.seed = 12345};
    b.g = gd_graph_new("resnet18-shaped", &err);
    struct gd_input_decl decl = {.dtype = GD_F32, .shape = {4, {-1, 3, 224, 224}}};
    if (gd_graph_add_input(b.g, "input", &decl, &err) != 0)
        die("input", &err);
    char x[64], y[64];
    conv_bn(&b, "input", 3, 64, 7, 2, 1, x);
    int64_t k3[2] = {3, 3}, s2[2] = {2, 2}, p1[4] = {1, 1, 1, 1};
    struct gd_attr pool[3] = {ints_attr("kernel_shape", 2, k3), ints_attr("strides", 2, s2),
                              ints_attr("pads", 4, p1)};
    const char *pins[1] = {x};
    node(&b, "MaxPool", "maxpool", 1, pins, 3, pool);
    strcpy(x, "maxpool");
    int64_t widths[4] = {64, 128, 256, 512}, cin = 64;
    for (int stage = 0; stage < 4; stage++) {
        for (int blk = 0; blk < 2; blk++) {
            basic_block(&b, x, cin, widths[stage], blk == 0 && stage > 0 ? 2 : 1, y);
            cin = widths[stage];
            strcpy(x, y);
        }
    }
    const char *gins[1] = {x};
    node(&b, "GlobalAveragePool", "gap", 1, gins, 0, NULL);
    struct gd_attr flat[1] = {int_attr("axis", 1)};
    const char *fins[1] = {"gap"};
    node(&b, "Flatten", "flatten", 1, fins, 1, flat);
    int64_t fcw[2] = {1000, 512}, fcb[1] = {1000};
    weight(&b, "fc.weight", 2, fcw, 1.0 / 512);
    weight(&b, "fc.bias", 1, fcb, 0.1);
    struct gd_attr gemm[1] = {int_attr("transB", 1)};
    const char *gemm_ins[3] = {"flatten", "fc.weight", "fc.bias"};
    node(&b, "Gemm", "fc", 3, gemm_ins, 1, gemm);
    if (gd_graph_add_output(b.g, "fc", &err) != 0 || gd_graph_finalize(b.g, &err) != 0)
        die("resnet18", &err);
    (void)batch;
    return b.g;
}

int
main(int argc, char **argv)
{
    int only_hashes = 0;
    const char *only = NULL;
    struct gd_model_opts opts = {0};
    while (argc > 1 && strncmp(argv[1], "--", 2) == 0) {
        if (strcmp(argv[1], "--hashes") == 0) {
            only_hashes = 1;
        } else if (strcmp(argv[1], "--only") == 0 && argc > 2) {
            only = argv[2];
            argv++;
            argc--;
        } else if (strcmp(argv[1], "--threads") == 0 && argc > 2) {
            threads = atoi(argv[2]);
            argv++;
            argc--;
        } else if (strcmp(argv[1], "--weights-dir") == 0 && argc > 2) {
            opts.weights_dir = argv[2];
            argv++;
            argc--;
        } else {
            argc = 0; /* an unknown option: print the usage */
            break;
        }
        argv++;
        argc--;
    }
    if (argc < 3) {
        fprintf(stderr,
                "usage: bench_forward [--hashes] [--only seed|resnet18] [--threads N] "
                "[--weights-dir DIR] SEED_MODEL SEED_INPUT_NPZ [REPEATS] [BACKEND]\n");
        return 2;
    }
    int repeats = argc > 3 ? atoi(argv[3]) : 5;
    const char *backend = argc > 4 ? argv[4] : "cpu";
    if (repeats < 1 || repeats > 64)
        repeats = 5;
    struct gd_err err = {0};
    struct gd_graph *seed = NULL;
    struct gd_tensor *input = NULL;
    if (gd_model_load(argv[1], &opts, &seed, &err) != 0)
        die(argv[1], &err);
    if (gd_array_load(argv[2], "inp", &input, &err) != 0)
        die(argv[2], &err);
    if (only == NULL || strcmp(only, "seed") == 0) {
        if (only_hashes)
            hashes("seed", seed, backend, input);
        else
            measure("seed", seed, backend, input, repeats);
    }
    if (only == NULL || strcmp(only, "resnet18") == 0) {
        struct gd_graph *resnet = resnet18(8);
        int64_t shape[4] = {8, 3, 224, 224};
        struct builder b = {.seed = 777};
        struct gd_tensor *image = random_tensor(&b, 4, shape, 1.0);
        if (only_hashes)
            hashes("resnet18", resnet, backend, image);
        else
            measure("resnet18", resnet, backend, image, repeats);
        gd_tensor_free(image);
        gd_graph_free(resnet);
    }
    gd_tensor_free(input);
    gd_graph_free(seed);
    return 0;
}
