/*
 * onnx_conformance.c: runs ONNX backend test cases (a folder per test: model.onnx and
 * test_data_set_N/{input,output}_K.pb, as onnx/backend/test/data and Debian's
 * libonnx-testdata ship them) through libgpudiff on cpu and cpu64, compares every output
 * with the expected one, and classifies each test and backend:
 *
 *   passed            every output within ONNX's rule |a - b| <= atol + rtol |b| (rtol 1e-3,
 *                     atol 1e-7) and within the engine's own rounding bound (docs/ONNX.md)
 *   failed            an output outside either, a shape or dtype that differs, or an error
 *                     other than "not supported" (the worst element or the error is shown)
 *   unsupported op    the model needs ops this build lacks (named)
 *   unsupported dtype a data type the engine lacks (strings, complex, sequences, ...)
 *   unsupported form  an attribute or form of a known op (GD_ENOTSUP from the loader or
 *                     from shape inference)
 *   bad test data     an input or output file that does not decode, or an input that
 *                     contradicts the model's declaration of it (a fixed shape it lacks)
 *
 * Data before ONNX 1.14 stores bfloat16 tensors as uint16 bit patterns: a uint16 tensor
 * where the model declares bfloat16 is read as those bits.
 *
 * It prints one line per test and backend, then totals per category and per suite, and the
 * missing ops by how many tests need them. --write-pass-list writes "suite/test backend" for
 * every pass; --check FILE fails (exit 1) when a test of FILE no longer passes or when a
 * float test whose ops the engine all has fails, and lists passes FILE does not have.
 *
 * usage: onnx_conformance [options] SUITE=DIR...   (docs/ONNX.md, "Conformance")
 */
#include <dirent.h>
#include <errno.h>
#include <stdarg.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "gpudiff/graph.h"
#include "gpudiff/onnx.h"
#include "gpudiff/ops.h"
#include "gpudiff/session.h"
#include "gpudiff/tensor.h"

#define RTOL 1e-3
#define ATOL 1e-7
#define CARRY 4.0          /* docs/COMPARISON.md: how much a layer may scale carried noise */
#define NOISE_CUSHION 4.0  /* docs/COMPARISON.md: sum|terms| taken as 4 max|y| */
#define MAX_IO 64
#define MAX_BACKENDS 4

enum category { C_PASS, C_FAIL, C_OP, C_DTYPE, C_FORM, C_DATA, C_COUNT };
static const char *const category_name[] = {"passed", "failed", "unsupported op",
                                            "unsupported dtype", "unsupported form",
                                            "bad test data"};

struct result {
    enum category cat;
    char detail[512];
    int float_test;          /* every expected output is floating point */
    int numeric;             /* failed: an output differs (not an error) */
};

struct opts {
    const char *backends[MAX_BACKENDS];
    int n_backends;
    const char *write_pass;
    const char *check;
    const char *known;     /* --known: failures explained in that file, not fatal */
    const char *filter;
    int quiet;
    int threads;
};

/* snprintf that may cut: the messages and paths here are short or only shown. */
static void fmt(char *buf, size_t cap, const char *f, ...) __attribute__((format(printf, 3, 4)));

static void
fmt(char *buf, size_t cap, const char *f, ...)
{
    va_list ap;
    va_start(ap, f);
    vsnprintf(buf, cap, f, ap);
    va_end(ap);
}

/* ---- the pass list ---- */

struct list {
    char **lines;
    int n, cap;
};

static void
list_add(struct list *l, const char *s)
{
    if (l->n == l->cap) {
        l->cap = l->cap ? 2 * l->cap : 256;
        l->lines = realloc(l->lines, (size_t)l->cap * sizeof *l->lines);
        if (l->lines == NULL) {
            perror("onnx_conformance");
            exit(2);
        }
    }
    l->lines[l->n++] = strdup(s);
}

static void
list_free(struct list *l)
{
    for (int i = 0; i < l->n; i++)
        free(l->lines[i]);
    free(l->lines);
    memset(l, 0, sizeof *l);
}

static int
list_has(const struct list *l, const char *s)
{
    for (int i = 0; i < l->n; i++)
        if (strcmp(l->lines[i], s) == 0)
            return 1;
    return 0;
}

static int
list_read(const char *path, struct list *l)
{
    FILE *f = fopen(path, "r");
    if (f == NULL)
        return -1;
    char line[512];
    while (fgets(line, sizeof line, f) != NULL) {
        line[strcspn(line, "\r\n")] = '\0';
        if (line[0] != '\0' && line[0] != '#')
            list_add(l, line);
    }
    fclose(f);
    return 0;
}

static int
cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* ---- comparing ---- */

static double
unit_roundoff(enum gd_dtype d)
{
    switch (d) {
    case GD_F64:
        return 0x1p-53;
    case GD_F16:
        return 0x1p-11;
    case GD_BF16:
        return 0x1p-8;
    default:
        return 0x1p-24;
    }
}

static double
denorm_min(enum gd_dtype d)
{
    switch (d) {
    case GD_F64:
        return 0x1p-1074;
    case GD_F16:
        return 0x1p-24;
    case GD_BF16:
        return 0x1p-133;
    default:
        return 0x1p-149;
    }
}

/* x rounded to dtype (the expected output's). */
static double
round_to(double x, enum gd_dtype d)
{
    switch (d) {
    case GD_F32:
        return (double)(float)x;
    case GD_F16:
        return (double)gd_f16_to_f32(gd_f64_to_f16(x));
    case GD_BF16:
        return (double)gd_bf16_to_f32(gd_f64_to_bf16(x));
    default:
        return x;
    }
}

/*
 * The engine's rounding envelope of each node's output, relative to the output's largest
 * value, as docs/COMPARISON.md defines it for two runs: a node's own bound
 * (4 * 2 gamma_n(u) + 2 ulps u, n its reduction length) plus CARRY times the largest
 * envelope of the nodes it reads. The expected output is taken as the other run.
 */
static void
envelopes(const struct gd_graph *g, double u, double *env)
{
    for (int ni = 0; ni < g->n_nodes; ni++) {
        const struct gd_node *n = &g->nodes[ni];
        const struct gd_op_info *info = gd_op_info(n->op);
        double len = info->reduction == GD_RED_NONE ? 0 : (double)gd_node_reduction_len(g, ni);
        double gamma = len * u < 1 ? len * u / (1 - len * u) : INFINITY;
        double carried = 0;
        for (int i = 0; i < n->n_inputs; i++) {
            int v = n->inputs[i];
            if (v >= 0 && g->values[v].producer >= 0 && env[g->values[v].producer] > carried)
                carried = env[g->values[v].producer];
        }
        env[ni] = NOISE_CUSHION * 2 * gamma + 2 * info->ulps * u + CARRY * carried;
    }
}

/*
 * Compares got (the backend's output) with want. On failure writes the worst element into
 * why: the one furthest beyond its allowance.
 */
static int
compare(const struct gd_tensor *got, const struct gd_tensor *want, double envelope,
        double reduction_terms, char *why, size_t cap)
{
    char a[96], b[96];
    if (got->ndim != want->ndim || memcmp(got->shape, want->shape,
                                          (size_t)got->ndim * sizeof got->shape[0]) != 0) {
        fmt(why, cap, "shape %s, expected %s", gd_shape_format(got->ndim, got->shape, a,
                                                                    sizeof a),
                 gd_shape_format(want->ndim, want->shape, b, sizeof b));
        return 0;
    }
    int64_t n = gd_tensor_numel(want);
    if (!gd_dtype_is_float(want->dtype)) {
        if (gd_dtype_is_float(got->dtype)) {
            fmt(why, cap, "dtype %s, expected %s", gd_dtype_name(got->dtype),
                     gd_dtype_name(want->dtype));
            return 0;
        }
        for (int64_t i = 0; i < n; i++)
            if (gd_tensor_get_f64(got, i) != gd_tensor_get_f64(want, i)) {
                fmt(why, cap, "element %lld is %.17g, expected %.17g", (long long)i,
                         gd_tensor_get_f64(got, i), gd_tensor_get_f64(want, i));
                return 0;
            }
        return 1;
    }
    if (!gd_dtype_is_float(got->dtype)) {
        fmt(why, cap, "dtype %s, expected %s", gd_dtype_name(got->dtype),
                 gd_dtype_name(want->dtype));
        return 0;
    }
    double max_b = 0;
    for (int64_t i = 0; i < n; i++) {
        double y = gd_tensor_get_f64(want, i);
        if (isfinite(y) && fabs(y) > max_b)
            max_b = fabs(y);
    }
    double engine_allow = envelope * max_b + reduction_terms * denorm_min(want->dtype);
    double worst = 0;
    int64_t worst_i = -1;
    const char *rule = "";
    for (int64_t i = 0; i < n; i++) {
        double x = gd_tensor_get_f64(got, i), y = gd_tensor_get_f64(want, i);
        if (isnan(y) || isnan(x) || isinf(y) || isinf(x)) {
            if ((isnan(x) && isnan(y)) || x == y)
                continue;
            worst = INFINITY, worst_i = i, rule = "a NaN or infinity on one side";
            break;
        }
        double d = fabs(x - y);
        double onnx_allow = ATOL + RTOL * fabs(y);
        double rounded = fabs(round_to(x, want->dtype) - y);
        double excess_onnx = d > onnx_allow ? d / onnx_allow : 0;
        double excess_engine = rounded > engine_allow
                                   ? (engine_allow > 0 ? rounded / engine_allow : INFINITY)
                                   : 0;
        if (excess_onnx > worst) {
            worst = excess_onnx, worst_i = i, rule = "ONNX's rtol 1e-3, atol 1e-7";
        }
        if (excess_engine > worst) {
            worst = excess_engine, worst_i = i, rule = "the engine's rounding bound";
        }
    }
    if (worst_i < 0)
        return 1;
    double x = gd_tensor_get_f64(got, worst_i), y = gd_tensor_get_f64(want, worst_i);
    fmt(why, cap, "element %lld is %.9g, expected %.9g: |diff| %.3g beyond %s "
             "(engine bound %.3g)", (long long)worst_i, x, y, fabs(x - y), rule, engine_allow);
    return 0;
}

/* ---- running one test ---- */

struct capture {
    const struct gd_graph *g;
    int *out_index;             /* per value: its graph output slot, or -1 */
    struct gd_tensor **outputs; /* per graph output */
};

static int
capture(void *user, const struct gd_layer *layer, struct gd_err *err)
{
    struct capture *c = user;
    int v = c->g->nodes[layer->node_index].outputs[layer->output_slot];
    int k = c->out_index[v];
    if (k < 0)
        return 0;
    gd_tensor_free(c->outputs[k]);
    c->outputs[k] = gd_tensor_dup(layer->value, err);
    return c->outputs[k] ? 0 : (err ? err->code : GD_ENOMEM);
}

static enum category
error_category(int code, const struct gd_onnx_report *r)
{
    if (code == GD_EDTYPE)
        return C_DTYPE;
    if (code != GD_ENOTSUP)
        return C_FAIL;
    if (r != NULL && r->refusal == GD_ONNX_REFUSED_OP)
        return C_OP;
    if (r != NULL && r->refusal == GD_ONNX_REFUSED_DTYPE)
        return C_DTYPE;
    return C_FORM;
}

/* Reads dir/<prefix>_0.pb, _1.pb, ... into t; returns the count or -1 with err set. */
static int
read_pbs(const char *dir, const char *prefix, struct gd_tensor **t, struct gd_err *err)
{
    int n = 0;
    for (; n < MAX_IO; n++) {
        char path[4096];
        struct stat st;
        fmt(path, sizeof path, "%s/%s_%d.pb", dir, prefix, n);
        if (stat(path, &st) != 0)
            break;
        if (gd_onnx_tensor_load(path, &t[n], NULL, err) != 0) {
            for (int i = 0; i < n; i++)
                gd_tensor_free(t[i]);
            return -1;
        }
    }
    return n;
}

static int
is_data_set(const struct dirent *e)
{
    return strncmp(e->d_name, "test_data_set_", 14) == 0;
}

/*
 * ONNX's test data before 1.14 stores bfloat16 tensors as uint16 (their bit patterns): a
 * uint16 tensor where the model declares bfloat16 is taken as those bits.
 */
static void
bf16_stored_as_u16(struct gd_tensor *t, enum gd_dtype declared)
{
    if (t != NULL && t->dtype == GD_U16 && declared == GD_BF16)
        t->dtype = GD_BF16;
}

/*
 * 1 when a test input contradicts the model's declaration of it (a fixed shape it does not
 * have): the test's data is wrong, not the engine. *why says how.
 */
static int
input_contradicts(const struct gd_tensor *t, const struct gd_input_decl *d, const char *name,
                  char *why, size_t cap)
{
    if (t == NULL || d->shape.ndim == 0)
        return 0;
    int differs = t->ndim != d->shape.ndim;
    for (int k = 0; !differs && k < t->ndim; k++)
        differs = d->shape.dim[k] >= 0 && d->shape.dim[k] != t->shape[k];
    if (!differs)
        return 0;
    char a[96], b[96];
    fmt(why, cap, "input %s has shape %s where the model declares %s", name,
        gd_shape_format(t->ndim, t->shape, a, sizeof a),
        gd_shape_format(d->shape.ndim, d->shape.dim, b, sizeof b));
    return 1;
}

static void
run_test(const char *dir, const struct opts *o, struct result *res)
{
    struct gd_err err = {0};
    struct gd_onnx_report report;
    struct gd_graph *g = NULL;
    char path[4096];
    for (int b = 0; b < o->n_backends; b++) {
        res[b].cat = C_PASS;
        res[b].detail[0] = '\0';
        res[b].float_test = 1;
        res[b].numeric = 0;
    }
    fmt(path, sizeof path, "%s/model.onnx", dir);
    struct gd_onnx_opts lo = {.defer_finalize = 1};
    if (gd_onnx_load(path, &lo, &report, &g, &err) != 0) {
        for (int b = 0; b < o->n_backends; b++) {
            res[b].cat = error_category(err.code, &report);
            fmt(res[b].detail, sizeof res[b].detail, "%s",
                     res[b].cat == C_OP ? report.missing_ops : err.msg);
        }
        return;
    }
    double *env = calloc((size_t)(g->n_nodes ? g->n_nodes : 1), sizeof *env);
    int *out_index = malloc((size_t)g->n_values * sizeof *out_index);
    struct dirent **sets = NULL;
    int n_sets = scandir(dir, &sets, is_data_set, alphasort);
    if (env == NULL || out_index == NULL) {
        perror("onnx_conformance");
        exit(2);
    }
    for (int v = 0; v < g->n_values; v++)
        out_index[v] = -1;
    for (int k = 0; k < g->n_outputs; k++)
        out_index[g->outputs[k]] = k;
    if (n_sets <= 0) {
        for (int b = 0; b < o->n_backends; b++) {
            res[b].cat = C_DATA;
            fmt(res[b].detail, sizeof res[b].detail, "no test_data_set_* folder");
        }
    }
    int finalized = 0;
    for (int s = 0; s < n_sets; s++) {
        struct gd_tensor *in[MAX_IO] = {0}, *want[MAX_IO] = {0};
        char set_dir[4096];
        fmt(set_dir, sizeof set_dir, "%s/%s", dir, sets[s]->d_name);
        int n_in = read_pbs(set_dir, "input", in, &err);
        int n_want = n_in < 0 ? -1 : read_pbs(set_dir, "output", want, &err);
        enum category data_cat = err.code == GD_ENOTSUP ? C_DTYPE : C_DATA;
        char data_why[300] = "";
        for (int k = 0; n_in == g->n_inputs && k < n_in && !data_why[0]; k++) {
            const struct gd_input_decl *dcl = &g->input_decls[k];
            bf16_stored_as_u16(in[k], dcl->dtype);
            input_contradicts(in[k], dcl, g->values[g->inputs[k]].name, data_why,
                              sizeof data_why);
        }
        /* The model is checked with the first data set's inputs (their values where nodes
         * read inputs as parameters); the later sets re-infer at run time. */
        if (!finalized && !data_why[0] && n_in == g->n_inputs && n_want >= 0) {
            finalized = 1;
            if (gd_graph_finalize_with(g, (const struct gd_tensor *const *)in, &err) != 0) {
                for (int b = 0; b < o->n_backends; b++) {
                    res[b].cat = error_category(err.code, NULL);
                    fmt(res[b].detail, sizeof res[b].detail, "%s", err.msg);
                }
            }
        }
        /* outputs after the graph is finalized: then its values have their dtypes */
        for (int k = 0; n_want == g->n_outputs && k < n_want; k++)
            bf16_stored_as_u16(want[k], g->values[g->outputs[k]].dtype);
        for (int b = 0; b < o->n_backends; b++) {
            struct result *r = &res[b];
            if (r->cat != C_PASS)
                continue;
            if (n_in < 0 || n_want < 0) {
                r->cat = data_cat;
                fmt(r->detail, sizeof r->detail, "%s: %s", sets[s]->d_name, err.msg);
                continue;
            }
            if (data_why[0]) {
                r->cat = C_DATA;
                fmt(r->detail, sizeof r->detail, "%s: %s", sets[s]->d_name, data_why);
                continue;
            }
            if (n_in != g->n_inputs || n_want != g->n_outputs) {
                r->cat = C_DATA;
                fmt(r->detail, sizeof r->detail, "%s: %d inputs and %d outputs for a "
                         "model of %d and %d", sets[s]->d_name, n_in, n_want, g->n_inputs,
                         g->n_outputs);
                continue;
            }
            for (int k = 0; k < n_want; k++)
                r->float_test &= gd_dtype_is_float(want[k]->dtype);
            struct gd_knobs knobs;
            gd_knobs_init(&knobs);
            knobs.threads = o->threads;
            struct gd_session *sess = gd_session_new(g, o->backends[b], &knobs, &err);
            struct gd_tensor *got[MAX_IO] = {0};
            struct capture cap = {.g = g, .out_index = out_index, .outputs = got};
            int rc = sess == NULL ? err.code
                                  : gd_session_run(sess, n_in, (const struct gd_tensor *const *)in,
                                                   capture, &cap, &err);
            if (rc != 0) {
                r->cat = error_category(rc, NULL);
                fmt(r->detail, sizeof r->detail, "%s", err.msg);
            }
            for (int k = 0; k < n_want && r->cat == C_PASS; k++) {
                char why[400];
                if (got[k] == NULL) {
                    r->cat = C_FAIL;
                    fmt(r->detail, sizeof r->detail, "output %d was not captured", k);
                    break;
                }
                /* A float64 model on a float32 backend is not the model's arithmetic. */
                if (gd_dtype_is_float(want[k]->dtype) && gd_dtype_is_float(got[k]->dtype) &&
                    unit_roundoff(got[k]->dtype) > unit_roundoff(want[k]->dtype)) {
                    r->cat = C_DTYPE;
                    fmt(r->detail, sizeof r->detail, "output %d is %s; backend %s computes in "
                        "%s", k, gd_dtype_name(want[k]->dtype), o->backends[b],
                        gd_dtype_name(got[k]->dtype));
                    break;
                }
                double u = unit_roundoff(want[k]->dtype);
                envelopes(g, u, env);
                int producer = g->values[g->outputs[k]].producer;
                double terms = 0;
                if (producer >= 0)
                    terms = (double)gd_node_reduction_len(g, producer) +
                            gd_op_info(g->nodes[producer].op)->ulps;
                if (!compare(got[k], want[k], producer >= 0 ? env[producer] : 0, 2 * terms, why,
                             sizeof why)) {
                    r->cat = C_FAIL;
                    r->numeric = 1;
                    fmt(r->detail, sizeof r->detail, "%s output %d (%s): %s",
                             sets[s]->d_name, k, g->values[g->outputs[k]].name, why);
                }
            }
            for (int k = 0; k < MAX_IO; k++)
                gd_tensor_free(got[k]);
            gd_session_free(sess);
        }
        for (int k = 0; k < MAX_IO; k++) {
            gd_tensor_free(in[k]);
            gd_tensor_free(want[k]);
        }
        free(sets[s]);
    }
    free(sets);
    free(env);
    free(out_index);
    gd_graph_free(g);
}

/* ---- suites ---- */

struct tally {
    int count[C_COUNT];
};

struct op_count {
    char op[96];
    int tests;
};

static void
count_ops(struct op_count *ops, int *n_ops, const char *list)
{
    char buf[256];
    fmt(buf, sizeof buf, "%s", list);
    for (char *save = NULL, *op = strtok_r(buf, ",", &save); op != NULL;
         op = strtok_r(NULL, ",", &save)) {
        int i = 0;
        while (i < *n_ops && strcmp(ops[i].op, op) != 0)
            i++;
        if (i == *n_ops) {
            if (*n_ops == 512)
                continue;
            fmt(ops[i].op, sizeof ops[i].op, "%s", op);
            ops[i].tests = 0;
            (*n_ops)++;
        }
        ops[i].tests++;
    }
}

static int
cmp_op_count(const void *a, const void *b)
{
    const struct op_count *x = a, *y = b;
    return x->tests != y->tests ? y->tests - x->tests : strcmp(x->op, y->op);
}

static int
is_test_dir(const struct dirent *e)
{
    return strncmp(e->d_name, "test_", 5) == 0;
}

static void
usage(FILE *out)
{
    fprintf(out,
            "Usage: onnx_conformance [OPTIONS] SUITE=DIR...\n\n"
            "Runs every ONNX backend test (DIR/test_*/model.onnx with test_data_set_*/) of each\n"
            "suite on the CPU backends and compares the outputs (docs/ONNX.md).\n\n"
            "  --backend LIST        comma list of backends (default cpu,cpu64)\n"
            "  --write-pass-list F   write \"suite/test backend\" for every pass to F\n"
            "  --check F             exit 1 when a test listed in F no longer passes, or a\n"
            "                        float test whose ops the engine all has fails; print the\n"
            "                        passes F does not list\n"
            "  --known F             with --check: the float failures F lists (\"suite/test\n"
            "                        backend\", each with its reason in a comment) are printed\n"
            "                        as known, not fatal; one of them passing is fatal, so the\n"
            "                        file stays true\n"
            "  --filter TEXT         only tests whose \"suite/test\" contains TEXT\n"
            "  --threads N           worker threads of the CPU backends (default 1)\n"
            "  --quiet               no line per test, only the totals\n"
            "  -h, --help            this help\n");
}

int
main(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"backend", required_argument, NULL, 'b'}, {"write-pass-list", required_argument, NULL, 'w'},
        {"check", required_argument, NULL, 'c'},   {"filter", required_argument, NULL, 'f'},
        {"threads", required_argument, NULL, 't'}, {"quiet", no_argument, NULL, 'q'},
        {"known", required_argument, NULL, 'k'},   {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    struct opts o = {.backends = {"cpu", "cpu64"}, .n_backends = 2, .threads = 1};
    char backend_buf[256];
    int c;
    while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
        switch (c) {
        case 'b':
            fmt(backend_buf, sizeof backend_buf, "%s", optarg);
            o.n_backends = 0;
            for (char *save = NULL, *b = strtok_r(backend_buf, ",", &save);
                 b != NULL && o.n_backends < MAX_BACKENDS; b = strtok_r(NULL, ",", &save))
                o.backends[o.n_backends++] = b;
            break;
        case 'w':
            o.write_pass = optarg;
            break;
        case 'c':
            o.check = optarg;
            break;
        case 'f':
            o.filter = optarg;
            break;
        case 'k':
            o.known = optarg;
            break;
        case 't':
            o.threads = atoi(optarg);
            break;
        case 'q':
            o.quiet = 1;
            break;
        case 'h':
            usage(stdout);
            return 0;
        default:
            usage(stderr);
            return 2;
        }
    }
    if (optind == argc || o.n_backends == 0) {
        usage(stderr);
        return 2;
    }
    struct list expected = {0}, passes = {0}, fatal = {0}, known = {0};
    if (o.check != NULL && list_read(o.check, &expected) != 0) {
        fprintf(stderr, "onnx_conformance: %s: %s\n", o.check, strerror(errno));
        return 2;
    }
    if (o.known != NULL && list_read(o.known, &known) != 0) {
        fprintf(stderr, "onnx_conformance: %s: %s\n", o.known, strerror(errno));
        return 2;
    }
    struct tally total[MAX_BACKENDS] = {0};
    static struct op_count ops[512];
    int n_ops = 0, n_tests = 0;
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (int a = optind; a < argc; a++) {
        char suite[256], *eq = strchr(argv[a], '=');
        const char *dir = eq ? eq + 1 : argv[a];
        fmt(suite, sizeof suite, "%.*s", eq ? (int)(eq - argv[a]) : (int)strlen(argv[a]),
                 argv[a]);
        struct dirent **tests = NULL;
        int n = scandir(dir, &tests, is_test_dir, alphasort);
        if (n < 0) {
            fprintf(stderr, "onnx_conformance: %s: %s\n", dir, strerror(errno));
            return 2;
        }
        struct tally t[MAX_BACKENDS] = {0};
        for (int i = 0; i < n; i++) {
            char id[512], path[4096];
            fmt(id, sizeof id, "%s/%s", suite, tests[i]->d_name);
            fmt(path, sizeof path, "%s/%s", dir, tests[i]->d_name);
            free(tests[i]);
            if (o.filter != NULL && strstr(id, o.filter) == NULL)
                continue;
            struct result res[MAX_BACKENDS];
            run_test(path, &o, res);
            n_tests++;
            for (int b = 0; b < o.n_backends; b++) {
                char line[600];
                fmt(line, sizeof line, "%s %s", id, o.backends[b]);
                t[b].count[res[b].cat]++;
                total[b].count[res[b].cat]++;
                if (!o.quiet)
                    printf("%s: %s%s%s\n", line, category_name[res[b].cat],
                           res[b].detail[0] ? ": " : "", res[b].detail);
                if (res[b].cat == C_PASS)
                    list_add(&passes, line);
                if (res[b].cat == C_OP && b == 0)
                    count_ops(ops, &n_ops, res[b].detail);
                if (o.check != NULL && res[b].cat == C_FAIL && res[b].float_test &&
                    res[b].numeric) {
                    char msg[1200];
                    fmt(msg, sizeof msg, "%s: %s", line, res[b].detail);
                    if (list_has(&known, line))
                        printf("known failure (%s): %s\n", o.known, msg);
                    else
                        list_add(&fatal, msg);
                }
            }
        }
        free(tests);
        for (int b = 0; b < o.n_backends; b++) {
            printf("suite %s %s:", suite, o.backends[b]);
            for (int k = 0; k < C_COUNT; k++)
                printf(" %s %d%s", category_name[k], t[b].count[k], k + 1 < C_COUNT ? "," : "");
            printf("\n");
        }
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    for (int b = 0; b < o.n_backends; b++) {
        printf("total %s:", o.backends[b]);
        for (int k = 0; k < C_COUNT; k++)
            printf(" %s %d%s", category_name[k], total[b].count[k], k + 1 < C_COUNT ? "," : "");
        printf("\n");
    }
    qsort(ops, (size_t)n_ops, sizeof ops[0], cmp_op_count);
    printf("missing ops by tests that need them:");
    for (int i = 0; i < n_ops; i++)
        printf(" %s %d%s", ops[i].op, ops[i].tests, i + 1 < n_ops ? "," : "");
    printf("\n%d tests in %.1f s\n", n_tests,
           (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9);
    int status = 0;
    if (o.write_pass != NULL) {
        qsort(passes.lines, (size_t)passes.n, sizeof passes.lines[0], cmp_str);
        FILE *f = fopen(o.write_pass, "w");
        if (f == NULL) {
            fprintf(stderr, "onnx_conformance: %s: %s\n", o.write_pass, strerror(errno));
            return 2;
        }
        fprintf(f, "# ONNX backend tests that pass (suite/test backend); made by\n"
                   "# `make onnx-pass-list` (tests/onnx/onnx_conformance.c)\n");
        for (int i = 0; i < passes.n; i++)
            fprintf(f, "%s\n", passes.lines[i]);
        if (fclose(f) != 0) {
            fprintf(stderr, "onnx_conformance: %s: write error\n", o.write_pass);
            return 2;
        }
    }
    if (o.check != NULL) {
        int lost = 0, gained = 0;
        for (int i = 0; i < expected.n; i++) {
            /* Only tests this run covered: a --filter run checks its part of the list. */
            char id[512];
            fmt(id, sizeof id, "%s", expected.lines[i]);
            char *sp = strrchr(id, ' ');
            if (sp != NULL)
                *sp = '\0';
            if (o.filter != NULL && strstr(id, o.filter) == NULL)
                continue;
            if (!list_has(&passes, expected.lines[i])) {
                printf("REGRESSION: %s no longer passes\n", expected.lines[i]);
                lost++;
            }
        }
        for (int i = 0; i < passes.n; i++)
            if (!list_has(&expected, passes.lines[i])) {
                printf("new pass, not in %s: %s\n", o.check, passes.lines[i]);
                gained++;
            }
        int known_passing = 0;
        for (int i = 0; i < known.n; i++)
            if (list_has(&passes, known.lines[i])) {
                printf("KNOWN FAILURE PASSES: %s (remove it from %s)\n", known.lines[i],
                       o.known);
                known_passing++;
            }
        for (int i = 0; i < fatal.n; i++)
            printf("FAILED float test of supported ops: %s\n", fatal.lines[i]);
        printf("check: %d listed passes lost, %d float tests of supported ops failed, %d new "
               "passes\n", lost, fatal.n, gained);
        status = lost > 0 || fatal.n > 0 || known_passing > 0;
    }
    list_free(&expected);
    list_free(&passes);
    list_free(&fatal);
    list_free(&known);
    fflush(stdout);
    return status;
}
