/*
 * bench_bitwise.c: cuda --repro bitwise against the cpu backend on a whole model, every
 * layer bit for bit, at several batch sizes, with the grid limited and with the executor's
 * --batch slicing; and the forward's time in the default mode against bitwise mode
 * (tests/bench/gpu_bitwise.sh runs it on the seed case, ResNet-50, vit_b_16 and GPT-2).
 *
 * For each batch size B of --batches (largest first): the first B rows of the inputs run on
 * cpu (every layer kept), then on cuda: bitwise (whole), bitwise with GPUDIFF_REPRO_GRID
 * (--grid, at --grid-batch only when given: a few blocks are slow on large element-wise
 * work), bitwise with knobs.batch (--slices, where the model keeps its rows apart) and
 * the default mode; each run's every layer is compared with cpu's as it arrives, bit for
 * bit (a NaN matches a NaN). Then the rows: each layer of the bitwise run at B against the
 * first B rows of the same layer at the largest batch (where dim 0 is the batch), for
 * bitwise and default modes: batch invariance as it is usually asked. --time R: the median
 * of R staged forwards (gd_session_forward, CUDA events) at the largest batch in both modes.
 *
 * usage: bench_bitwise MODEL [--name NAME] [--dtype float16|bfloat16] [--weights-dir DIR]
 *                      [--batches 1,7,32] [--grid N [--grid-batch B]] [--slices N] [--time R]
 *                      [--no-compare] INPUT=FILE[:KEY]...
 * Prints one line per run: "RUN name=.. dtype=.. batch=.. mode=.. layers=.. identical=..
 * first=LAYER ..." and "ROWS ...", "TIME ...", "FAIL ..." for a run that could not run.
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpudiff/graph.h"
#include "gpudiff/io.h"
#include "gpudiff/model.h"
#include "gpudiff/onnx.h"
#include "gpudiff/session.h"
#include "bench_util.h"

#define MAX_INPUTS  8
#define MAX_BATCHES 8

struct opts {
    const char *model, *name, *dtype, *weights_dir;
    int64_t batches[MAX_BATCHES];
    int n_batches;
    int grid, slices, time_repeats, compare;
    int64_t grid_batch; /* the batch the grid-limited run is made at; 0: every batch */
    int time_default;   /* --time-bitwise-only: 0 */
    int n_in;
    const char *in_name[MAX_INPUTS], *in_file[MAX_INPUTS], *in_key[MAX_INPUTS];
};

/* One run's layers: kept (the cpu reference and the largest batch's runs) or compared. */
struct layer_set {
    int n, cap;
    struct gd_tensor **t;
    char **names;
};

static void
set_free(struct layer_set *s)
{
    for (int i = 0; i < s->n; i++) {
        gd_tensor_free(s->t[i]);
        free(s->names[i]);
    }
    free(s->t);
    free(s->names);
    memset(s, 0, sizeof *s);
}

static int
same_elem(const unsigned char *a, const unsigned char *b, enum gd_dtype dt)
{
    size_t es = gd_dtype_size(dt);
    if (memcmp(a, b, es) == 0)
        return 1;
    if (!gd_dtype_is_float(dt))
        return 0;
    /* a NaN matches any NaN */
    int64_t shape[1] = {1};
    struct gd_tensor ta = {.dtype = dt, .ndim = 1}, tb = ta;
    ta.shape[0] = tb.shape[0] = shape[0];
    ta.data = (void *)a;
    tb.data = (void *)b;
    return isnan(gd_tensor_get_f64(&ta, 0)) && isnan(gd_tensor_get_f64(&tb, 0));
}

/* The comparison of one run with the reference, layer by layer. */
struct compare {
    const struct layer_set *ref; /* cpu's layers of this batch; NULL: only keep */
    struct layer_set *keep;      /* when not NULL, this run's layers are kept here */
    int64_t rows;                /* rows of this run (the reference's dim 0) */
    int layers, identical;
    int64_t bad_elems;
    char first[512];        /* the first differing layer, its element and values */
    int bad;                /* a layer that could not be compared */
    unsigned char *differs; /* per layer index: a slice of it differed */
    int differs_cap;
};

static void
note_first(struct compare *c, const struct gd_layer *l, int64_t i, int64_t n_bad,
           const struct gd_tensor *want, const unsigned char *got)
{
    if (c->first[0] != '\0')
        return;
    size_t es = gd_dtype_size(want->dtype);
    uint64_t wb = 0, gb = 0;
    memcpy(&wb, (const char *)want->data + (size_t)i * es, es);
    memcpy(&gb, got, es);
    struct gd_tensor g1 = {.dtype = want->dtype, .ndim = 1, .data = (void *)got};
    g1.shape[0] = 1;
    double wv = gd_tensor_get_f64(want, i), gv = gd_tensor_get_f64(&g1, 0);
    snprintf(c->first, sizeof c->first,
             "%s(%s)[%" PRId64 "]:cpu=%.9g(0x%" PRIx64 "),cuda=%.9g(0x%" PRIx64 "),%" PRId64
             "_of_%" PRId64,
             l->name, gd_op_name(l->op), i, wv, wb, gv, gb, n_bad, gd_tensor_numel(want));
}

static int
on_layer(void *user, const struct gd_layer *l, struct gd_err *err)
{
    struct compare *c = user;
    const struct gd_tensor *v = l->value;
    if (c->keep != NULL) {
        struct layer_set *k = c->keep;
        if (l->index >= k->cap) {
            int cap = l->index * 2 + 64;
            k->t = realloc(k->t, (size_t)cap * sizeof *k->t);
            k->names = realloc(k->names, (size_t)cap * sizeof *k->names);
            for (int i = k->cap; i < cap; i++) {
                k->t[i] = NULL;
                k->names[i] = NULL;
            }
            k->cap = cap;
        }
        if (k->t[l->index] == NULL) {
            int64_t shape[GD_MAX_DIMS];
            memcpy(shape, v->shape, sizeof shape);
            if (v->ndim > 0)
                shape[0] = l->batch_total;
            k->t[l->index] = gd_tensor_new(v->dtype, v->ndim, shape, NULL);
            k->names[l->index] = strdup(l->name);
            if (k->t[l->index] == NULL)
                return gd_err_set(err, GD_ENOMEM, "out of memory keeping layer %s", l->name);
            if (l->index >= k->n)
                k->n = l->index + 1;
        }
        size_t row = v->ndim > 0 && v->shape[0] > 0 ? gd_tensor_nbytes(v) / (size_t)v->shape[0] : 0;
        memcpy((char *)k->t[l->index]->data + (size_t)l->batch_offset * row, v->data,
               gd_tensor_nbytes(v));
    }
    if (c->ref == NULL)
        return 0;
    if (l->batch_offset == 0)
        c->layers++;
    const struct gd_tensor *w = l->index < c->ref->n ? c->ref->t[l->index] : NULL;
    int ok = w != NULL && w->dtype == v->dtype && w->ndim == v->ndim;
    for (int d = 1; ok && d < v->ndim; d++)
        ok = w->shape[d] == v->shape[d];
    if (!ok) {
        if (c->first[0] == '\0')
            snprintf(c->first, sizeof c->first, "%s(%s):shape_or_dtype", l->name,
                     gd_op_name(l->op));
        c->bad++;
        return 0;
    }
    size_t es = gd_dtype_size(v->dtype);
    size_t row = v->ndim > 0 && w->shape[0] > 0 ? gd_tensor_nbytes(w) / (size_t)w->shape[0] : 0;
    const unsigned char *want = (const unsigned char *)w->data + (size_t)l->batch_offset * row;
    const unsigned char *got = v->data;
    int64_t n = gd_tensor_numel(v), bad = 0, first = -1;
    if (memcmp(want, got, gd_tensor_nbytes(v)) != 0)
        for (int64_t i = 0; i < n; i++)
            if (!same_elem(want + (size_t)i * es, got + (size_t)i * es, v->dtype) && bad++ == 0)
                first = i;
    if (l->index >= c->differs_cap) {
        int cap = l->index * 2 + 64;
        unsigned char *d = realloc(c->differs, (size_t)cap);
        if (d == NULL)
            return gd_err_set(err, GD_ENOMEM, "out of memory");
        memset(d + c->differs_cap, 0, (size_t)(cap - c->differs_cap));
        c->differs = d;
        c->differs_cap = cap;
    }
    if (bad > 0) {
        int64_t at = first + (int64_t)(l->batch_offset * row / es);
        note_first(c, l, at, bad, w, got + (size_t)first * es);
        c->bad_elems += bad;
        c->differs[l->index] = 1;
    }
    /* a layer is identical when its last slice (the whole layer, unsliced) has arrived and
     * no slice of it differed */
    int last = v->ndim == 0 || l->batch_offset + v->shape[0] >= l->batch_total;
    if (last && !c->differs[l->index])
        c->identical++;
    return 0;
}

static void
die(const char *what, const struct gd_err *err)
{
    fprintf(stderr, "bench_bitwise: %s: %s\n", what, err->msg);
    exit(1);
}

/* The first rows of each input (views of the loaded tensors). */
static void
first_rows(struct gd_tensor **full, int n, int64_t rows, struct gd_tensor *view,
           const struct gd_tensor **out)
{
    for (int i = 0; i < n; i++) {
        view[i] = *full[i];
        view[i].owns_data = 0;
        if (view[i].ndim > 0 && rows > 0 && rows < view[i].shape[0])
            view[i].shape[0] = rows;
        out[i] = &view[i];
    }
}

/* The device backend: cuda, or BENCH_BITWISE_DEVICE (cpu, to check this program itself on a
 * machine without a GPU: every run must then be identical). */
static const char *
device(void)
{
    const char *d = getenv("BENCH_BITWISE_DEVICE");
    return d != NULL && d[0] != '\0' ? d : "cuda";
}

static void
knobs_for(const struct opts *o, const char *mode, int64_t slice, struct gd_knobs *k)
{
    gd_knobs_init(k);
    if (o->dtype != NULL)
        snprintf(k->dtype, sizeof k->dtype, "%s", o->dtype);
    if (strcmp(mode, "default") != 0)
        snprintf(k->repro, sizeof k->repro, "bitwise");
    k->batch = slice;
}

/* One run of mode on backend: compared with ref (when not NULL), kept in keep (when not
 * NULL); prints its RUN line. */
static void
run_one(struct gd_graph *g, const struct opts *o, const char *backend, const char *mode,
        int64_t rows, int n_in, const struct gd_tensor **in, const struct layer_set *ref,
        struct layer_set *keep)
{
    struct gd_knobs k;
    int64_t slice = strcmp(mode, "bitwise-slices") == 0 ? o->slices : 0;
    knobs_for(o, ref == NULL ? "default" : mode, slice, &k);
    if (strcmp(mode, "bitwise-grid") == 0) {
        char v[16];
        snprintf(v, sizeof v, "%d", o->grid);
        setenv("GPUDIFF_REPRO_GRID", v, 1);
    } else {
        unsetenv("GPUDIFF_REPRO_GRID");
    }
    struct gd_err err = {0};
    struct compare c = {.ref = ref, .keep = keep, .rows = rows};
    double t0 = bench_now_s();
    struct gd_session *s = gd_session_new(g, backend, &k, &err);
    int rc = s == NULL ? err.code : gd_session_run(s, n_in, in, on_layer, &c, &err);
    double secs = bench_now_s() - t0;
    gd_session_free(s);
    free(c.differs);
    unsetenv("GPUDIFF_REPRO_GRID");
    const char *label = ref == NULL ? "cpu" : mode;
    if (rc != 0) {
        printf("FAIL name=%s dtype=%s batch=%" PRId64 " mode=%s error=\"%s\"\n", o->name,
               o->dtype ? o->dtype : "float32", rows, label, err.msg);
        fflush(stdout);
        return;
    }
    if (ref != NULL)
        printf("RUN name=%s dtype=%s batch=%" PRId64 " mode=%s layers=%d identical=%d "
               "bad_elements=%" PRId64 " seconds=%.2f first=%s\n",
               o->name, o->dtype ? o->dtype : "float32", rows, label, c.layers, c.identical,
               c.bad_elems, secs, c.first[0] ? c.first : "-");
    else
        fprintf(stderr, "bench_bitwise: %s batch %" PRId64 " on %s: %.2f s\n", o->name, rows, label,
                secs);
    fflush(stdout);
}

/* Layers of small (B rows) whose rows equal the first B rows of the same layer of big. */
static void
rows_line(const struct opts *o, const char *mode, int64_t b, int64_t big_b,
          const struct layer_set *small, const struct layer_set *big)
{
    int batch_layers = 0, same = 0;
    char first[256] = "-";
    for (int i = 0; i < small->n && i < big->n; i++) {
        const struct gd_tensor *s = small->t[i], *l = big->t[i];
        if (s == NULL || l == NULL || s->ndim == 0 || s->ndim != l->ndim || s->dtype != l->dtype ||
            s->shape[0] != b || l->shape[0] != big_b)
            continue;
        int rest = 1;
        for (int d = 1; d < s->ndim; d++)
            rest &= s->shape[d] == l->shape[d];
        if (!rest)
            continue;
        batch_layers++;
        size_t es = gd_dtype_size(s->dtype);
        int64_t n = gd_tensor_numel(s), bad = 0;
        if (memcmp(s->data, l->data, gd_tensor_nbytes(s)) != 0)
            for (int64_t e = 0; e < n; e++)
                bad += !same_elem((const unsigned char *)s->data + (size_t)e * es,
                                  (const unsigned char *)l->data + (size_t)e * es, s->dtype);
        if (bad == 0)
            same++;
        else if (first[0] == '-')
            snprintf(first, sizeof first, "%s:%" PRId64 "_of_%" PRId64, small->names[i], bad, n);
    }
    printf("ROWS name=%s dtype=%s mode=%s batch=%" PRId64 " vs=%" PRId64 " batch_layers=%d "
           "row_identical=%d first=%s\n",
           o->name, o->dtype ? o->dtype : "float32", mode, b, big_b, batch_layers, same, first);
    fflush(stdout);
}

static double
forward_ms(struct gd_graph *g, const struct opts *o, const char *mode, int n_in,
           const struct gd_tensor **in, int repeats)
{
    struct gd_knobs k;
    knobs_for(o, mode, 0, &k);
    struct gd_err err = {0};
    struct gd_session *s = gd_session_new(g, device(), &k, &err);
    if (s == NULL || gd_session_stage(s, n_in, in, &err) != 0) {
        printf("FAIL name=%s time mode=%s error=\"%s\"\n", o->name, mode, err.msg);
        gd_session_free(s);
        return -1;
    }
    double *ms = calloc((size_t)repeats + 2, sizeof *ms);
    for (int r = 0; r < repeats + 2; r++) { /* two warm-ups: the first runs, the second records */
        double us = 0;
        if (gd_session_forward(s, &us, &err) != 0) {
            printf("FAIL name=%s time mode=%s error=\"%s\"\n", o->name, mode, err.msg);
            free(ms);
            gd_session_free(s);
            return -1;
        }
        ms[r] = us / 1e3;
    }
    double med = bench_median(ms + 2, repeats);
    free(ms);
    gd_session_free(s);
    return med;
}

static int
parse(int argc, char **argv, struct opts *o)
{
    memset(o, 0, sizeof *o);
    o->compare = 1;
    o->time_default = 1;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--name") == 0 && i + 1 < argc)
            o->name = argv[++i];
        else if (strcmp(a, "--dtype") == 0 && i + 1 < argc)
            o->dtype = argv[++i];
        else if (strcmp(a, "--weights-dir") == 0 && i + 1 < argc)
            o->weights_dir = argv[++i];
        else if (strcmp(a, "--grid") == 0 && i + 1 < argc)
            o->grid = atoi(argv[++i]);
        else if (strcmp(a, "--grid-batch") == 0 && i + 1 < argc)
            o->grid_batch = atoll(argv[++i]);
        else if (strcmp(a, "--slices") == 0 && i + 1 < argc)
            o->slices = atoi(argv[++i]);
        else if (strcmp(a, "--time") == 0 && i + 1 < argc)
            o->time_repeats = atoi(argv[++i]);
        else if (strcmp(a, "--no-compare") == 0)
            o->compare = 0;
        else if (strcmp(a, "--time-bitwise-only") == 0)
            o->time_default = 0;
        else if (strcmp(a, "--batches") == 0 && i + 1 < argc) {
            for (const char *p = argv[++i]; *p != '\0' && o->n_batches < MAX_BATCHES;) {
                o->batches[o->n_batches++] = atoll(p);
                p += strcspn(p, ",");
                if (*p == ',')
                    p++;
            }
        } else if (o->model == NULL && a[0] != '-')
            o->model = a;
        else if (strchr(a, '=') != NULL && o->n_in < MAX_INPUTS) {
            char *name = strdup(a), *eq = strchr(name, '=');
            *eq = '\0';
            o->in_name[o->n_in] = name;
            o->in_file[o->n_in] = eq + 1;
            char *colon = strrchr(eq + 1, ':');
            o->in_key[o->n_in] = NULL;
            if (colon != NULL) {
                *colon = '\0';
                o->in_key[o->n_in] = colon + 1;
            }
            o->n_in++;
        } else
            return -1;
    }
    if (o->name == NULL)
        o->name = o->model;
    return o->model != NULL && o->n_in > 0 ? 0 : -1;
}

static int
cmp_desc(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x < y) - (x > y);
}

int
main(int argc, char **argv)
{
    struct opts o;
    if (parse(argc, argv, &o) != 0) {
        fprintf(stderr, "usage: bench_bitwise MODEL [--name N] [--dtype float16|bfloat16] "
                        "[--weights-dir DIR] [--batches 1,7,32] [--grid N [--grid-batch B]] "
                        "[--slices N] [--time R] [--no-compare] INPUT=FILE[:KEY]...\n");
        return 2;
    }
    struct gd_err err = {0};
    struct gd_tensor *full[MAX_INPUTS] = {0};
    struct gd_graph *g = NULL;
    FILE *f = fopen(o.model, "rb");
    int c0 = EOF;
    if (f != NULL) {
        while ((c0 = fgetc(f)) == ' ' || c0 == '\n' || c0 == '\t' || c0 == '\r')
            ;
        fclose(f);
    }
    int onnx = c0 != '{';
    struct gd_onnx_opts oo = {.defer_finalize = 1};
    struct gd_model_opts mo = {.weights_dir = o.weights_dir};
    if (onnx ? gd_onnx_load(o.model, &oo, NULL, &g, &err) : gd_model_load(o.model, &mo, &g, &err))
        die(o.model, &err);
    /* a JSON model is finalized at load: cast, then finalized again */
    if (o.dtype != NULL &&
        (gd_graph_cast_floats(g, strcmp(o.dtype, "bfloat16") == 0 ? GD_BF16 : GD_F16, &err) != 0 ||
         (!onnx && gd_graph_finalize(g, &err) != 0)))
        die("--dtype", &err);
    if (g->n_inputs > MAX_INPUTS)
        return 2;
    for (int k = 0; k < g->n_inputs; k++) {
        const char *name = g->values[g->inputs[k]].name;
        for (int j = 0; j < o.n_in; j++)
            if (strcmp(o.in_name[j], name) == 0 &&
                gd_array_load(o.in_file[j], o.in_key[j], &full[k], &err) != 0)
                die(o.in_file[j], &err);
        if (full[k] == NULL) {
            fprintf(stderr, "bench_bitwise: no input %s given\n", name);
            return 2;
        }
    }
    int n_in = g->n_inputs;
    int64_t all = full[0]->ndim > 0 ? full[0]->shape[0] : 1;
    if (o.n_batches == 0)
        o.batches[o.n_batches++] = all;
    for (int b = 0; b < o.n_batches; b++)
        if (o.batches[b] <= 0 || o.batches[b] > all)
            o.batches[b] = all;
    qsort(o.batches, (size_t)o.n_batches, sizeof o.batches[0], cmp_desc);
    struct gd_tensor view[MAX_INPUTS];
    const struct gd_tensor *in[MAX_INPUTS];
    first_rows(full, n_in, o.batches[0], view, in);
    if (onnx && gd_graph_finalize_with(g, in, &err) != 0)
        die("finalize", &err);
    struct layer_set big_bitwise = {0}, big_default = {0};
    for (int b = 0; o.compare && b < o.n_batches; b++) {
        int64_t rows = o.batches[b];
        if (b > 0 && rows == o.batches[b - 1])
            continue;
        first_rows(full, n_in, rows, view, in);
        struct layer_set ref = {0}, bw = {0}, df = {0};
        run_one(g, &o, "cpu", "default", rows, n_in, in, NULL, &ref);
        const char *dev = device();
        run_one(g, &o, dev, "bitwise", rows, n_in, in, &ref, b == 0 ? &big_bitwise : &bw);
        if (o.grid > 0 && (o.grid_batch == 0 || o.grid_batch == rows))
            run_one(g, &o, dev, "bitwise-grid", rows, n_in, in, &ref, NULL);
        if (o.slices > 0 && o.slices < rows)
            run_one(g, &o, dev, "bitwise-slices", rows, n_in, in, &ref, NULL);
        run_one(g, &o, dev, "default", rows, n_in, in, &ref, b == 0 ? &big_default : &df);
        if (b > 0) {
            rows_line(&o, "bitwise", rows, o.batches[0], &bw, &big_bitwise);
            rows_line(&o, "default", rows, o.batches[0], &df, &big_default);
        }
        set_free(&ref);
        set_free(&bw);
        set_free(&df);
    }
    set_free(&big_bitwise);
    set_free(&big_default);
    if (o.time_repeats > 0) {
        first_rows(full, n_in, o.batches[0], view, in);
        double d = o.time_default ? forward_ms(g, &o, "default", n_in, in, o.time_repeats) : -1;
        double w = forward_ms(g, &o, "bitwise", n_in, in, o.time_repeats);
        printf("TIME name=%s dtype=%s batch=%" PRId64 " default_ms=%.3f bitwise_ms=%.3f "
               "ratio=%.3f\n",
               o.name, o.dtype ? o.dtype : "float32", o.batches[0], d, w, d > 0 ? w / d : -1.0);
    }
    for (int k = 0; k < MAX_INPUTS; k++)
        gd_tensor_free(full[k]);
    gd_graph_free(g);
    return 0;
}
