/*
 * sweep.c: `gpudiff-agent sweep`: one model and one input under a grid of settings on one
 * backend, in one process, the model loaded once. For each setting: the forward timed
 * without capture (the input staged on the device) and end to end, repeated captures for
 * the run-to-run spread, the full capture compared with a float64 run and with the strict
 * setting, and the same rows at every batch size of the grid compared with the whole batch.
 * The document it makes (schema/json/sweep.schema.json) is printed as a report or as JSON,
 * and with --server uploaded with its runs.
 */
#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "gpudiff/bundle.h"
#include "gpudiff/io.h"
#include "gpudiff/model.h"
#include "gpudiff/run.h"
#include "agent.h"
#include "sweep.h"
#include "upload.h"

struct sweep_opts {
    const char *model, *input, *input_key, *weights_dir, *backend, *grid, *out;
    const char *report; /* --report FILE: print a saved document's report, run nothing */
    int repeats, warmup, captures, json, quiet, verbose;
    double atol, rtol;
    struct agt_upload_opts upload; /* upload.server NULL: no upload */
};

/* One sweep in progress. */
struct sweep {
    const struct sweep_opts *o;
    struct gd_graph *g;
    struct gd_tensor *input;
    char input_sha[65];
    char id[37];
    struct agt_grid grid;
    int n_batches;
    int64_t batches[AGT_SWEEP_MAX_BATCHES]; /* the sizes other than the whole input */
    struct agt_memrun *f64, *strict;
    struct agt_memrun *spare, *scratch; /* memory reused by the next captures */
    json_t *strict_knobs;
    json_t *doc, *settings;
    char bundles[PATH_MAX]; /* where bundles go; "" none */
    int own_bundles;        /* made for --server without --out: removed at the end */
    int n_bundles;
    /* time accounting, microseconds */
    double t0, engine_us, compare_us, callback_us, upload_us;
};

static double
now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static void
sweep_usage(FILE *out)
{
    fprintf(out,
            "Usage: gpudiff-agent sweep --model FILE --input FILE [OPTIONS]\n"
            "       gpudiff-agent sweep --report FILE\n\n"
            "Runs one model and input under a grid of settings on one backend, in one process\n"
            "(the model is loaded once), and answers: which settings change the results and\n"
            "by how much, how to prevent it (the settings that are deterministic and\n"
            "batch-invariant), and what that costs. For each setting it measures:\n"
            "  - the forward time without capture: the median of --repeats runs after\n"
            "    --warmup, the input already on the device (cuda: CUDA events around the\n"
            "    forward; cpu: the wall clock), and end to end from the host input to the\n"
            "    outputs back on the host;\n"
            "  - run to run: every layer of --captures captures, each in a fresh session,\n"
            "    compared bit for bit with the first, and the outputs of the timed end-to-end\n"
            "    runs;\n"
            "  - the first capture against a float64 run (cpu64) and against the strict\n"
            "    setting (cuda: conv=deterministic tf32=off; cpu: emulate=none), layer by\n"
            "    layer through the engine's comparison (first divergent layer, amplifiers);\n"
            "  - batch invariance: the input run at every batch size of the grid, each\n"
            "    layer's rows compared with the whole input's, and the layers whose recorded\n"
            "    algorithm (cuDNN algorithm, cuBLASLt algorithm, tile, split-K) changed.\n"
            "A setting the device cannot run is reported with its error. Progress goes to\n"
            "stderr; the report (or --json) to stdout.\n\n"
            "Required:\n"
            "  --model FILE        model in the gpudiff JSON graph format\n"
            "  --input FILE        input array: .npy, .npz or .safetensors\n\n"
            "Options:\n"
            "  --input-key NAME    member of an .npz/.safetensors input\n"
            "  --weights-dir DIR   folder weight paths are relative to\n"
            "  --backend NAME      cpu (default) or cuda (when built with CUDA); cpu64 sweeps\n"
            "                      thread counts only\n"
            "  --grid SPEC         the settings (default below): groups joined by '|', each\n"
            "                      the product of its axes KEY=V1,V2,... joined by ';'. An axis\n"
            "                      a group leaves out takes its default (the first value\n"
            "                      listed). Axes:\n"
            "                        cuda: conv=heuristic|autotune|deterministic|fixed:N|each|\n"
            "                              NODE@N (each: one setting per convolution layer and\n"
            "                              algorithm id cuDNN offers it, the other layers\n"
            "                              heuristic; NODE@N pins that layer to id N)\n"
            "                              tf32=off|on  math=default|pedantic\n"
            "                              workspace=none|BYTES (K, M, G suffixes)\n"
            "                        cpu:  emulate=none|tf32|bf16|fp16, each optionally\n"
            "                              :gemm, :conv or :conv+gemm (default gemm)\n"
            "                              threads=auto|N (also cpu64)\n"
            "                        any:  batch=N,...,all: the batch sizes every setting is\n"
            "                              also run at (given once; all = the whole input, the\n"
            "                              reference; default 1, rows/4 and all)\n"
            "  --repeats N         timed runs per setting and mode (default 10)\n"
            "  --warmup N          untimed runs first (default 2: autotuning, allocation)\n"
            "  --captures K        captures per setting for the run-to-run check, 1 to 100\n"
            "                      (default 3; 1 compares only the timed runs' outputs)\n"
            "  --atol X, --rtol Y  the comparisons' mismatch tolerances (default 1e-8, 1e-5)\n"
            "  --out DIR           write the bundles of the float64 run and of each setting's\n"
            "                      first capture under DIR (created; it must not exist), and\n"
            "                      DIR/sweep.json\n"
            "  --json              print the sweep document (schema/json/sweep.schema.json)\n"
            "                      instead of the report\n"
            "  --report FILE       print the report of a sweep document written earlier\n"
            "                      (--json, or DIR/sweep.json of --out) and run nothing\n"
            "  --quiet             no progress on stderr\n"
            "  -v, --verbose       debug messages on stderr\n"
            "  -h, --help          this help\n\n"
            "Default grids:\n"
            "  cuda:  %s\n"
            "         (8 settings: the strict one among them)\n"
            "  cpu:   %s\n"
            "  cpu64: %s\n\n"
            "Uploading (the bundles are written, uploaded as ordinary runs as `push` sends\n"
            "them, then the sweep document is POSTed to /api/v1/sweeps with their ids):\n",
            agt_grid_default("cuda"), agt_grid_default("cpu"), agt_grid_default("cpu64"));
    agt_upload_usage(out);
    fputc('\n', out);
    agt_print_exit_codes(out);
}

static int
parse_count(const char *s, long lo, long hi, int *out)
{
    char *end;
    long v = strtol(s, &end, 10);
    if (*s == '\0' || *end != '\0' || v < lo || v > hi)
        return -1;
    *out = (int)v;
    return 0;
}

static int
parse_args(int argc, char **argv, struct sweep_opts *o)
{
    enum { O_INPUT_KEY = 256, O_WEIGHTS_DIR, O_BACKEND, O_GRID, O_REPEATS, O_WARMUP,
           O_CAPTURES, O_ATOL, O_RTOL, O_OUT, O_JSON, O_QUIET, O_REPORT };
    static const struct option longopts[] = {
        {"model", required_argument, NULL, 'm'},
        {"input", required_argument, NULL, 'i'},
        {"input-key", required_argument, NULL, O_INPUT_KEY},
        {"weights-dir", required_argument, NULL, O_WEIGHTS_DIR},
        {"backend", required_argument, NULL, O_BACKEND},
        {"grid", required_argument, NULL, O_GRID},
        {"repeats", required_argument, NULL, O_REPEATS},
        {"warmup", required_argument, NULL, O_WARMUP},
        {"captures", required_argument, NULL, O_CAPTURES},
        {"atol", required_argument, NULL, O_ATOL},
        {"rtol", required_argument, NULL, O_RTOL},
        {"out", required_argument, NULL, O_OUT},
        {"json", no_argument, NULL, O_JSON},
        {"quiet", no_argument, NULL, O_QUIET},
        {"report", required_argument, NULL, O_REPORT},
        {"verbose", no_argument, NULL, 'v'},
        {"help", no_argument, NULL, 'h'},
        AGT_UPLOAD_LONGOPTS,
        {NULL, 0, NULL, 0},
    };
    struct gd_err err = {0};
    int c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "m:i:vh", longopts, NULL)) != -1) {
        int taken = agt_upload_flag("sweep", c, optarg, &o->upload);
        if (taken < 0)
            return -1;
        if (taken > 0)
            continue;
        switch (c) {
        case 'm':
            o->model = optarg;
            break;
        case 'i':
            o->input = optarg;
            break;
        case O_INPUT_KEY:
            o->input_key = optarg;
            break;
        case O_WEIGHTS_DIR:
            o->weights_dir = optarg;
            break;
        case O_BACKEND: {
            int known = 0;
            for (const char *const *b = gd_backend_names(); *b != NULL; b++)
                known |= strcmp(*b, optarg) == 0;
            if (!known) {
                fprintf(stderr, "gpudiff-agent sweep: this build has no backend %s (it has:",
                        optarg);
                for (const char *const *b = gd_backend_names(); *b != NULL; b++)
                    fprintf(stderr, " %s", *b);
                fprintf(stderr, ")\n");
                return -1;
            }
            o->backend = optarg;
            break;
        }
        case O_GRID:
            o->grid = optarg;
            break;
        case O_REPEATS:
        case O_WARMUP:
        case O_CAPTURES: {
            int lo = c == O_WARMUP ? 0 : 1, hi = c == O_CAPTURES ? 100 : 10000;
            int *to = c == O_REPEATS ? &o->repeats : c == O_WARMUP ? &o->warmup : &o->captures;
            if (parse_count(optarg, lo, hi, to) != 0) {
                fprintf(stderr, "gpudiff-agent sweep: --%s needs %d to %d, not %s\n",
                        c == O_REPEATS ? "repeats" : c == O_WARMUP ? "warmup" : "captures", lo,
                        hi, optarg);
                return -1;
            }
            break;
        }
        case O_ATOL:
        case O_RTOL: {
            char *end;
            double v = strtod(optarg, &end);
            if (*optarg == '\0' || *end != '\0' || !isfinite(v) || v < 0) {
                fprintf(stderr, "gpudiff-agent sweep: %s needs a number >= 0, not %s\n",
                        c == O_ATOL ? "--atol" : "--rtol", optarg);
                return -1;
            }
            *(c == O_ATOL ? &o->atol : &o->rtol) = v;
            break;
        }
        case O_OUT:
            o->out = optarg;
            break;
        case O_JSON:
            o->json = 1;
            break;
        case O_QUIET:
            o->quiet = 1;
            break;
        case O_REPORT:
            o->report = optarg;
            break;
        case 'v':
            o->verbose = 1;
            break;
        case 'h':
            sweep_usage(stdout);
            return 1;
        default:
            fprintf(stderr, "Try `gpudiff-agent sweep --help`.\n");
            return -1;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "gpudiff-agent sweep: unexpected argument %s\n", argv[optind]);
        return -1;
    }
    if (o->report != NULL) {
        if (o->model || o->input || o->grid || o->out || o->upload.server) {
            fprintf(stderr, "gpudiff-agent sweep: --report prints a saved sweep; it takes no "
                    "--model, --input, --grid, --out or --server\n");
            return -1;
        }
        return 0;
    }
    const char *missing = !o->model ? "--model" : !o->input ? "--input" : NULL;
    if (missing != NULL) {
        fprintf(stderr, "gpudiff-agent sweep: %s is required (see --help)\n", missing);
        return -1;
    }
    if ((o->upload.server != NULL || o->upload.token != NULL) &&
        agt_upload_opts_check(&o->upload, &err) != 0) {
        fprintf(stderr, "gpudiff-agent sweep: %s\n", err.msg);
        return -1;
    }
    return 0;
}

static void
progress(const struct sweep *sw, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void
progress(const struct sweep *sw, const char *fmt, ...)
{
    if (sw->o->quiet)
        return;
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "gpudiff-agent sweep: ");
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

static json_t *
num(double v)
{
    return isfinite(v) ? json_real(v) : json_null();
}

static int
cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double
median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* run.json's facts for one run of the sweep (the layers come from the capture). */
static json_t *
run_meta(const struct sweep *sw, const char *backend, const struct gd_session *s,
         const struct gd_knobs *k, const char *setting, struct gd_err *err)
{
    char id[37], now[32];
    if (gd_uuid_v4(id, err) != 0)
        return NULL;
    agt_utc_now(now, sizeof now);
    json_t *env = json_object(), *shape = json_array();
    const struct gd_env *e = gd_session_env(s);
    for (int i = 0; i < e->n; i++)
        json_object_set_new(env, e->items[i].key, json_string(e->items[i].value));
    for (int i = 0; i < sw->input->ndim; i++)
        json_array_append_new(shape, json_integer(sw->input->shape[i]));
    return json_pack("{s:s, s:s, s:{s:s, s:s, s:s}, s:{s:s, s:s?, s:s, s:s, s:o}, s:s, s:o, "
                     "s:o, s:{s:s, s:s}, s:f}",
                     "id", id, "created_at", now,
                     "model", "name", sw->g->name, "sha256", sw->g->sha256, "file", sw->o->model,
                     "input", "file", sw->o->input, "key", sw->o->input_key, "sha256",
                     sw->input_sha, "dtype", gd_dtype_name(sw->input->dtype), "shape", shape,
                     "backend", backend, "env", env, "knobs", agt_knobs_json(backend, k, e),
                     "labels", "sweep", sw->id, "setting", setting, "duration_us", 0.0);
}

/* A bundle folder's name for a setting: its position and name, file-name safe. */
static void
bundle_dir(const struct sweep *sw, int index, const char *name, char *out, size_t size)
{
    char slug[96];
    size_t n = 0;
    for (const char *p = name; *p && n + 1 < sizeof slug; p++) {
        char c = *p;
        int ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                 c == '.' || c == '_' || c == '-';
        slug[n++] = ok ? c : '-';
    }
    slug[n] = '\0';
    int w = index < 0 ? snprintf(out, size, "%.3900s/float64", sw->bundles)
                      : snprintf(out, size, "%.3900s/%02d-%s", sw->bundles, index % 10000, slug);
    (void)w;
}

/*
 * One captured run of session s (and, with dir, a bundle): the run the comparisons read, in
 * *out. A memrun already in *out is reused; on failure *out keeps it (it is reset).
 */
static int
capture_run(struct sweep *sw, struct gd_session *s, const char *backend,
            const struct gd_knobs *k, const char *setting, const char *dir,
            struct agt_memrun **out, struct gd_err *err)
{
    json_t *meta = run_meta(sw, backend, s, k, setting, err);
    if (meta == NULL)
        return err->code ? err->code : GD_ENOMEM;
    struct agt_memrun *r = *out;
    struct gd_bundle_writer *w = NULL;
    int rc = 0;
    if (r != NULL)
        agt_memrun_reset(r, meta);
    else
        rc = agt_memrun_new(sw->g, meta, &r, err);
    if (rc == 0 && dir != NULL)
        rc = gd_bundle_writer_new(dir, 0, &w, err);
    if (rc == 0) {
        struct agt_capture c = {.g = sw->g, .store = r, .writer = w};
        const struct gd_tensor *in[1] = {sw->input};
        double t0 = now_us();
        rc = gd_session_run(s, 1, in, agt_capture_layer, &c, err);
        double dt = now_us() - t0;
        sw->engine_us += dt - c.callback_us;
        sw->callback_us += c.callback_us;
        json_object_set_new(meta, "duration_us", json_real(dt));
        if (rc == 0 && w != NULL)
            rc = gd_bundle_writer_commit(w, meta, err);
    }
    gd_bundle_writer_free(w);
    json_decref(meta);
    *out = r;
    return rc;
}

static struct gd_session *
open_session(struct sweep *sw, const char *backend, const struct gd_knobs *k, struct gd_err *err)
{
    double t0 = now_us();
    struct gd_session *s = gd_session_new(sw->g, backend, k, err);
    sw->engine_us += now_us() - t0;
    return s;
}

static void
close_session(struct sweep *sw, struct gd_session *s)
{
    double t0 = now_us();
    gd_session_free(s);
    sw->engine_us += now_us() - t0;
}

/* gd_diff_runs of a against b, summed up by fn; NULL and err on failure. */
static json_t *
compare(struct sweep *sw, struct agt_memrun *a, struct agt_memrun *b, int64_t batch,
        struct gd_err *err)
{
    struct gd_run_view va, vb;
    agt_memrun_view(a, &va);
    agt_memrun_view(b, &vb);
    struct gd_diff *d = NULL;
    double t0 = now_us();
    int rc = gd_diff_runs(&va, &vb, NULL, sw->o->atol, sw->o->rtol, &d, err);
    json_t *j = NULL;
    if (rc == 0)
        j = batch > 0 ? agt_batch_summary(d, batch, agt_output_layer(sw->g))
                      : agt_diff_summary(d, agt_output_layer(sw->g));
    gd_diff_free(d);
    sw->compare_us += now_us() - t0;
    return j;
}

static json_t *
not_compared(const char *why)
{
    return json_pack("{s:b, s:s}", "compared", 0, "why", why);
}

static json_t *
failure(const char *phase, const struct gd_err *err)
{
    return json_pack("{s:s, s:s, s:s}", "status", "failed", "failed_at", phase, "error",
                     err->msg[0] ? err->msg : gd_strerror(err->code));
}

static void
set_failure(json_t *res, const char *phase, const struct gd_err *err)
{
    json_t *f = failure(phase, err);
    json_object_update(res, f);
    json_decref(f);
}

static void
doc_env(struct sweep *sw, const struct gd_env *e)
{
    json_t *env = json_object();
    for (int i = 0; i < e->n; i++)
        json_object_set_new(env, e->items[i].key, json_string(e->items[i].value));
    json_object_set_new(sw->doc, "env", env);
}

/* ---- one setting ---- */

/* Timed forwards (staged input) and end-to-end runs; the e2e outputs are compared run to
 * run. Fills time and run_to_run.outputs_*. */
static int
time_setting(struct sweep *sw, struct gd_session *s, json_t *res, struct gd_err *err)
{
    const struct sweep_opts *o = sw->o;
    int n = o->repeats;
    double *fwd = calloc((size_t)n, sizeof *fwd), *e2e = calloc((size_t)n, sizeof *e2e);
    struct gd_tensor *first[8] = {NULL};
    int n_out = sw->g->n_outputs < 8 ? sw->g->n_outputs : 8, same = 1, rc = 0;
    const struct gd_tensor *in[1] = {sw->input};
    if (fwd == NULL || e2e == NULL) {
        rc = gd_err_set(err, GD_ENOMEM, "out of memory");
        goto done;
    }
    double t0 = now_us();
    rc = gd_session_stage(s, 1, in, err);
    for (int r = -o->warmup; r < n && rc == 0; r++) {
        double us = 0;
        rc = gd_session_forward(s, &us, err);
        if (r >= 0)
            fwd[r] = us / 1e3;
    }
    for (int r = -1; r < n && rc == 0; r++) {
        double us = 0;
        rc = gd_session_run_end_to_end(s, 1, in, &us, err);
        if (rc != 0 || r < 0)
            continue;
        e2e[r] = us / 1e3;
        for (int i = 0; i < n_out; i++) {
            const struct gd_tensor *y = gd_session_output(s, i);
            if (y == NULL)
                continue;
            if (first[i] == NULL) {
                if ((first[i] = gd_tensor_dup(y, err)) == NULL)
                    rc = err->code;
            } else if (gd_tensor_nbytes(y) != gd_tensor_nbytes(first[i]) ||
                       memcmp(y->data, first[i]->data, gd_tensor_nbytes(y)) != 0) {
                same = 0;
            }
        }
    }
    sw->engine_us += now_us() - t0;
    if (rc != 0)
        goto done;
    const char *timer = strcmp(gd_session_backend(s), "cuda") == 0 ? "cuda events" : "wall clock";
    double lo = INFINITY, hi = 0;
    for (int r = 0; r < n; r++) {
        lo = fwd[r] < lo ? fwd[r] : lo;
        hi = fwd[r] > hi ? fwd[r] : hi;
    }
    double fwd_med = median(fwd, n), e2e_med = median(e2e, n);
    json_object_set_new(res, "time",
                        json_pack("{s:o, s:o, s:o, s:o, s:i, s:i, s:s}", "forward_ms",
                                  num(fwd_med), "forward_min_ms", num(lo), "forward_max_ms",
                                  num(hi), "end_to_end_ms", num(e2e_med), "repeats", n, "warmup",
                                  o->warmup, "forward_timer", timer));
    json_t *rr = json_object_get(res, "run_to_run");
    json_object_set_new(rr, "outputs_runs", json_integer(n));
    json_object_set_new(rr, "outputs_identical", json_boolean(same));
done:
    for (int i = 0; i < 8; i++)
        gd_tensor_free(first[i]);
    free(fwd);
    free(e2e);
    return rc;
}

/* The first capture's rows at each batch size of the grid, against the whole batch. */
static void
batch_setting(struct sweep *sw, struct gd_session *s, const struct agt_setting *st,
              struct agt_memrun *ref, json_t *res)
{
    json_t *sizes = json_array();
    for (int i = 0; i < sw->n_batches; i++) {
        struct gd_err err = {0};
        json_t *b = NULL;
        int rc = gd_session_set_batch(s, sw->batches[i], &err);
        if (rc == 0)
            rc = capture_run(sw, s, gd_session_backend(s), &st->knobs, st->name, NULL,
                             &sw->scratch, &err);
        if (rc == 0 && (b = compare(sw, sw->scratch, ref, sw->batches[i], &err)) == NULL)
            rc = err.code ? err.code : GD_ENOMEM;
        if (rc != 0) {
            b = failure("batch", &err);
            json_object_set_new(b, "batch", json_integer(sw->batches[i]));
        }
        json_array_append_new(sizes, b);
    }
    struct gd_err err = {0};
    gd_session_set_batch(s, 0, &err);
    json_object_set_new(res, "batch", json_pack("{s:I, s:o}", "reference", (json_int_t)
                                                sw->input->shape[0], "sizes", sizes));
}

/* Captures 2..K, each in a fresh session, against the first: bytes and algorithms. */
static void
repeat_setting(struct sweep *sw, const struct agt_setting *st, struct agt_memrun *ref,
               json_t *res)
{
    const char *backend = sw->o->backend;
    int n = ref->n_layers;
    unsigned char *bytes = calloc((size_t)n + 1, 1), *algo = calloc((size_t)n + 1, 1);
    char(*seen)[64] = calloc((size_t)n + 1, sizeof *seen);
    json_t *rr = json_object_get(res, "run_to_run");
    json_object_set_new(rr, "captures", json_integer(1));
    json_object_set_new(rr, "fresh_sessions", json_true());
    if (bytes == NULL || algo == NULL || seen == NULL)
        goto done;
    int done_k = 1;
    for (int k = 1; k < sw->o->captures; k++) {
        struct gd_err err = {0};
        struct gd_session *s = open_session(sw, backend, &st->knobs, &err);
        int rc = s != NULL ? 0 : err.code;
        if (rc == 0) {
            struct agt_capture c = {.g = sw->g, .check = ref, .bytes_differ = bytes,
                                    .algo_differs = algo, .algo_seen = seen};
            const struct gd_tensor *in[1] = {sw->input};
            double t0 = now_us();
            rc = gd_session_run(s, 1, in, agt_capture_layer, &c, &err);
            sw->engine_us += now_us() - t0 - c.callback_us;
            sw->callback_us += c.callback_us;
        }
        close_session(sw, s);
        if (rc != 0) {
            json_object_set_new(rr, "error", json_string(err.msg));
            break;
        }
        done_k++;
    }
    json_object_set_new(rr, "captures", json_integer(done_k));
    json_t *differ = json_array(), *changes = json_array();
    for (int i = 0; i < n; i++) {
        if (bytes[i])
            json_array_append_new(differ, json_string(ref->layers[i].name));
        if (algo[i])
            json_array_append_new(changes, json_pack("{s:s, s:s, s:s}", "layer",
                                                     ref->layers[i].name, "first",
                                                     ref->layers[i].algo, "other", seen[i]));
    }
    json_object_set_new(rr, "layers_identical", done_k > 1 ? json_boolean(json_array_size(differ)
                                                                          == 0)
                                                           : json_null());
    json_object_set_new(rr, "differing_layers", differ);
    json_object_set_new(rr, "algorithm_changes", changes);
done:
    free(bytes);
    free(algo);
    free(seen);
}

/* The knobs where a setting differs from the strict one, "tf32=on conv_algo=autotune". */
static void
knob_diff(const struct sweep *sw, json_t *knobs, char *out, size_t size)
{
    size_t used = 0;
    const char *key;
    json_t *v;
    out[0] = '\0';
    json_object_foreach(knobs, key, v) {
        if (strcmp(key, "threads") == 0 || strcmp(key, "batch") == 0)
            continue;
        json_t *sv = json_object_get(sw->strict_knobs, key);
        if (sv != NULL && json_equal(v, sv))
            continue;
        char *text = json_is_string(v) ? strdup(json_string_value(v))
                                       : json_dumps(v, JSON_ENCODE_ANY);
        int w = snprintf(out + used, size - used, "%s%s=%s", used ? " " : "", key,
                         text ? text : "?");
        free(text);
        if (w < 0 || (size_t)w >= size - used)
            break;
        used += (size_t)w;
    }
}

/* What the table's "cause" column says: the knobs against strict, then where the
 * difference from float64 starts and what amplifies it. */
static void
set_cause(const struct sweep *sw, json_t *res)
{
    char knobs[256], cause[768];
    knob_diff(sw, json_object_get(res, "knobs"), knobs, sizeof knobs);
    json_t *v = json_object_get(res, "vs_float64");
    json_t *first = json_object_get(v, "first_divergent");
    size_t used = 0;
    cause[0] = '\0';
    if (knobs[0])
        used += (size_t)snprintf(cause, sizeof cause, "%s: ", knobs);
    if (!json_is_true(json_object_get(v, "compared"))) {
        snprintf(cause + used, sizeof cause - used, "not compared with float64");
    } else if (json_is_object(first)) {
        used += (size_t)snprintf(cause + used, sizeof cause - used, "%s (%s) at %.1f bits, %s",
                                 json_string_value(json_object_get(first, "layer")),
                                 json_string_value(json_object_get(first, "op")),
                                 json_number_value(json_object_get(first, "bits")),
                                 json_string_value(json_object_get(first, "arithmetic")));
        size_t i;
        json_t *a;
        json_array_foreach(json_object_get(v, "amplifiers"), i, a) {
            if (used >= sizeof cause)
                break;
            json_t *fl = json_object_get(a, "flipped");
            if (json_is_integer(fl))
                used += (size_t)snprintf(cause + used, sizeof cause - used,
                                         "; %s (%s) amplifies it, %lld outputs flipped",
                                         json_string_value(json_object_get(a, "layer")),
                                         json_string_value(json_object_get(a, "op")),
                                         (long long)json_integer_value(fl));
            else
                used += (size_t)snprintf(cause + used, sizeof cause - used,
                                         "; %s (%s) amplifies it",
                                         json_string_value(json_object_get(a, "layer")),
                                         json_string_value(json_object_get(a, "op")));
        }
    } else {
        snprintf(cause + used, sizeof cause - used, "every layer within rounding noise of "
                 "float64");
    }
    json_object_set_new(res, "cause", json_string(cause));
}

/* Everything measured of one setting, into a new object of the document. */
static json_t *
run_setting(struct sweep *sw, int index, const struct agt_setting *st)
{
    const char *backend = sw->o->backend;
    struct gd_err err = {0};
    json_t *res = json_object();
    json_object_set_new(res, "name", json_string(st->name));
    json_object_set_new(res, "strict", json_boolean(st->strict));
    json_object_set_new(res, "added", json_boolean(st->added));
    json_object_set_new(res, "run_to_run", json_object());
    struct agt_memrun *ref = NULL;
    struct gd_session *s = open_session(sw, backend, &st->knobs, &err);
    json_object_set_new(res, "knobs", agt_knobs_json(backend, &st->knobs,
                                                      s ? gd_session_env(s) : NULL));
    if (s == NULL) {
        set_failure(res, "open", &err);
        goto done;
    }
    if (json_object_get(sw->doc, "env") == NULL)
        doc_env(sw, gd_session_env(s));
    if (time_setting(sw, s, res, &err) != 0) {
        set_failure(res, "time", &err);
        goto done;
    }
    char dir[PATH_MAX];
    if (sw->bundles[0])
        bundle_dir(sw, index, st->name, dir, sizeof dir);
    ref = sw->spare;
    sw->spare = NULL;
    if (capture_run(sw, s, backend, &st->knobs, st->name, sw->bundles[0] ? dir : NULL, &ref,
                    &err) != 0) {
        set_failure(res, "capture", &err);
        goto done;
    }
    json_object_set_new(res, "status", json_string("ok"));
    json_object_set_new(res, "run", json_string(json_string_value(json_object_get(ref->run,
                                                                                  "id"))));
    if (sw->bundles[0]) {
        json_object_set_new(res, "bundle", json_string(dir));
        sw->n_bundles++;
    }
    json_t *algos = json_object();
    for (int i = 0; i < ref->n_layers; i++)
        if (ref->layers[i].algo[0] != '\0')
            json_object_set_new(algos, ref->layers[i].name, json_string(ref->layers[i].algo));
    json_object_set_new(res, "algorithms", algos);
    batch_setting(sw, s, st, ref, res);
    close_session(sw, s);
    s = NULL;
    repeat_setting(sw, st, ref, res);
    json_t *v = sw->f64 ? compare(sw, ref, sw->f64, 0, &err)
                        : json_incref(not_compared("the float64 run failed"));
    json_object_set_new(res, "vs_float64", v ? v : not_compared(err.msg));
    if (st->strict) {
        json_object_set_new(res, "vs_strict", not_compared("this is the strict setting"));
        sw->strict = ref;
        ref = NULL;
    } else {
        v = sw->strict ? compare(sw, ref, sw->strict, 0, &err)
                       : json_incref(not_compared("the strict setting failed"));
        json_object_set_new(res, "vs_strict", v ? v : not_compared(err.msg));
    }
    set_cause(sw, res);
done:
    close_session(sw, s);
    if (ref != NULL && sw->spare == NULL)
        sw->spare = ref;
    else
        agt_memrun_free(ref);
    return res;
}

/* ---- conv=each: one setting per convolution and offered algorithm ---- */

static int
expand_each(struct sweep *sw, struct agt_grid *out)
{
    const char *backend = sw->o->backend;
    for (int i = 0; i < sw->grid.n; i++) {
        struct agt_setting *st = &sw->grid.settings[i];
        if (!st->expand_each) {
            int k = agt_grid_add(out, backend, &st->knobs);
            if (k < 0)
                return -1;
            out->settings[k].strict = st->strict;
            out->settings[k].added = st->added;
            continue;
        }
        struct gd_knobs k = st->knobs;
        snprintf(k.conv_algo, sizeof k.conv_algo, "heuristic");
        struct gd_err err = {0};
        struct gd_session *s = open_session(sw, backend, &k, &err);
        const struct gd_tensor *in[1] = {sw->input};
        int rc = s != NULL ? gd_session_run(s, 1, in, NULL, NULL, &err) : err.code;
        progress(sw, "conv=each: listing the algorithms cuDNN offers each convolution%s%s",
                 rc ? ": " : "", rc ? err.msg : "");
        for (int ni = 0; rc == 0 && ni < sw->g->n_nodes; ni++) {
            const struct gd_node *n = &sw->g->nodes[ni];
            if (n->op != GD_OP_CONV && n->op != GD_OP_CONV_TRANSPOSE)
                continue;
            struct gd_algo_offer offers[GD_ALGO_OFFERS_MAX];
            int count = 0;
            if (gd_session_algo_offers(s, ni, offers, GD_ALGO_OFFERS_MAX, &count, &err) != 0)
                break;
            for (int a = 0; a < count; a++) {
                int dup = 0;
                for (int b = 0; b < a; b++)
                    dup |= offers[b].id == offers[a].id;
                if (dup)
                    continue;
                struct gd_knobs p = k;
                snprintf(p.conv_pins, sizeof p.conv_pins, "%s=%d", n->name, offers[a].id);
                if (agt_grid_add(out, backend, &p) < 0) {
                    close_session(sw, s);
                    return -1;
                }
            }
        }
        close_session(sw, s);
    }
    return 0;
}

/* The conv algorithms cuDNN offered each convolution (from the strict setting's session
 * kind: a heuristic listing with the same TF32 choice), for the document. */
static json_t *
list_offers(struct sweep *sw)
{
    if (strcmp(sw->o->backend, "cuda") != 0)
        return json_null();
    struct gd_knobs k;
    agt_strict_knobs("cuda", &k);
    snprintf(k.conv_algo, sizeof k.conv_algo, "heuristic");
    struct gd_err err = {0};
    struct gd_session *s = open_session(sw, "cuda", &k, &err);
    const struct gd_tensor *in[1] = {sw->input};
    json_t *out = json_array();
    if (s == NULL || gd_session_run(s, 1, in, NULL, NULL, &err) != 0) {
        close_session(sw, s);
        json_decref(out);
        return json_pack("{s:s}", "error", err.msg);
    }
    for (int ni = 0; ni < sw->g->n_nodes; ni++) {
        const struct gd_node *n = &sw->g->nodes[ni];
        if (n->op != GD_OP_CONV && n->op != GD_OP_CONV_TRANSPOSE)
            continue;
        struct gd_algo_offer offers[GD_ALGO_OFFERS_MAX];
        int count = 0;
        if (gd_session_algo_offers(s, ni, offers, GD_ALGO_OFFERS_MAX, &count, &err) != 0)
            continue;
        json_t *list = json_array();
        for (int a = 0; a < count; a++)
            json_array_append_new(list, json_pack("{s:i, s:s, s:b, s:I, s:s, s:b}", "id",
                                                  offers[a].id, "name", offers[a].name,
                                                  "deterministic", offers[a].deterministic,
                                                  "workspace", (json_int_t)offers[a].workspace,
                                                  "math", offers[a].math, "chosen",
                                                  offers[a].chosen));
        json_array_append_new(out, json_pack("{s:s, s:s, s:o}", "layer", n->name, "op",
                                             gd_op_name(n->op), "offers", list));
    }
    close_session(sw, s);
    return out;
}

/* ---- the sweep ---- */

/* The batch sizes other than the whole input: the grid's, or 1 and rows/4. */
static void
pick_batches(struct sweep *sw)
{
    int64_t rows = sw->input->ndim > 0 ? sw->input->shape[0] : 1;
    int64_t want[AGT_SWEEP_MAX_BATCHES];
    int n = 0;
    if (sw->grid.n_batches > 0) {
        for (int i = 0; i < sw->grid.n_batches; i++)
            want[n++] = sw->grid.batches[i];
    } else {
        want[n++] = 1;
        want[n++] = rows / 4;
    }
    sw->n_batches = 0;
    for (int i = 0; i < n; i++) {
        int64_t b = want[i];
        if (b <= 0 || b >= rows)
            continue; /* the whole input: the reference itself */
        int dup = 0;
        for (int j = 0; j < sw->n_batches; j++)
            dup |= sw->batches[j] == b;
        if (!dup)
            sw->batches[sw->n_batches++] = b;
    }
}

static int
make_bundle_root(struct sweep *sw, struct gd_err *err)
{
    if (sw->o->out != NULL) {
        if (mkdir(sw->o->out, 0755) != 0)
            return gd_err_set(err, errno == EEXIST ? GD_EEXIST : GD_EIO, "--out %s: %s",
                              sw->o->out, strerror(errno));
        snprintf(sw->bundles, sizeof sw->bundles, "%s", sw->o->out);
    } else if (sw->o->upload.server != NULL) {
        const char *tmp = getenv("TMPDIR");
        snprintf(sw->bundles, sizeof sw->bundles, "%s/gpudiff-sweep.XXXXXX",
                 tmp && tmp[0] ? tmp : "/tmp");
        if (mkdtemp(sw->bundles) == NULL) {
            sw->bundles[0] = '\0';
            return gd_err_set(err, GD_EIO, "cannot make a folder for the bundles: %s",
                              strerror(errno));
        }
        sw->own_bundles = 1;
    }
    return 0;
}

/* Removes dir's entries (files, and folders of files, `depth` levels down), then dir. */
static void
remove_tree(const char *dir, int depth)
{
    DIR *d = opendir(dir);
    if (d != NULL) {
        struct dirent *e;
        while ((e = readdir(d)) != NULL) {
            if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
                continue;
            char path[PATH_MAX];
            struct stat st;
            snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
            if (lstat(path, &st) == 0 && S_ISDIR(st.st_mode) && depth > 0)
                remove_tree(path, depth - 1);
            else
                unlink(path);
        }
        closedir(d);
    }
    rmdir(dir);
}

/* The folder made for uploading (mkdtemp's, holding only the bundles the sweep wrote:
 * BUNDLE/run.json and BUNDLE/layers/FILE). */
static void
remove_bundles(struct sweep *sw)
{
    if (!sw->own_bundles || sw->bundles[0] == '\0')
        return;
    remove_tree(sw->bundles, 2);
    struct stat st;
    if (stat(sw->bundles, &st) == 0)
        fprintf(stderr, "gpudiff-agent sweep: could not remove %s\n", sw->bundles);
}

static void
float64_run(struct sweep *sw)
{
    struct gd_err err = {0};
    struct gd_knobs k;
    gd_knobs_init(&k);
    double t0 = now_us();
    progress(sw, "float64 reference (cpu64): one capture");
    struct gd_session *s = open_session(sw, "cpu64", &k, &err);
    char dir[PATH_MAX];
    if (sw->bundles[0])
        bundle_dir(sw, -1, "float64", dir, sizeof dir);
    int rc = s != NULL ? capture_run(sw, s, "cpu64", &k, "float64", sw->bundles[0] ? dir : NULL,
                                     &sw->f64, &err)
                       : err.code;
    close_session(sw, s);
    json_t *f = json_object();
    json_object_set_new(f, "backend", json_string("cpu64"));
    if (rc == 0) {
        json_object_set_new(f, "status", json_string("ok"));
        json_object_set_new(f, "run", json_string(json_string_value(json_object_get(sw->f64->run,
                                                                                    "id"))));
        if (sw->bundles[0]) {
            json_object_set_new(f, "bundle", json_string(dir));
            sw->n_bundles++;
        }
    } else {
        agt_memrun_free(sw->f64);
        sw->f64 = NULL;
        set_failure(f, "capture", &err);
        progress(sw, "float64 reference failed: %s", err.msg);
    }
    json_object_set_new(sw->doc, "float64", f);
    progress(sw, "float64 reference: %.1f s", (now_us() - t0) / 1e6);
}

static void
doc_start(struct sweep *sw)
{
    char now[32];
    agt_utc_now(now, sizeof now);
    json_t *shape = json_array(), *batches = json_array();
    for (int i = 0; i < sw->input->ndim; i++)
        json_array_append_new(shape, json_integer(sw->input->shape[i]));
    for (int i = 0; i < sw->n_batches; i++)
        json_array_append_new(batches, json_integer(sw->batches[i]));
    sw->doc = json_pack("{s:s, s:i, s:s, s:s, s:{s:s, s:s, s:s}, s:{s:s, s:s?, s:s, s:o}, "
                        "s:s, s:s, s:i, s:i, s:i, s:o, s:I, s:f, s:f}",
                        "format", AGT_SWEEP_FORMAT, "version", AGT_SWEEP_VERSION, "id", sw->id,
                        "created_at", now, "model", "name", sw->g->name, "sha256",
                        sw->g->sha256, "file", sw->o->model, "input", "file", sw->o->input,
                        "key", sw->o->input_key, "sha256", sw->input_sha, "shape", shape,
                        "backend", sw->o->backend, "grid",
                        sw->o->grid ? sw->o->grid : agt_grid_default(sw->o->backend),
                        "repeats", sw->o->repeats, "warmup", sw->o->warmup, "captures",
                        sw->o->captures, "batch_sizes", batches, "reference_batch",
                        (json_int_t)(sw->input->ndim > 0 ? sw->input->shape[0] : 1), "atol",
                        sw->o->atol, "rtol", sw->o->rtol);
    sw->settings = json_array();
    json_object_set_new(sw->doc, "settings", sw->settings);
}

static int
output_doc(struct sweep *sw, struct gd_err *err)
{
    if (sw->o->out != NULL) {
        char path[PATH_MAX];
        snprintf(path, sizeof path, "%s/sweep.json", sw->o->out);
        if (json_dump_file(sw->doc, path, JSON_INDENT(1) | JSON_PRESERVE_ORDER |
                                              JSON_REAL_PRECISION(17)) != 0)
            return gd_err_set(err, GD_EIO, "cannot write %s", path);
    }
    if (sw->o->json) {
        json_dumpf(sw->doc, stdout, JSON_INDENT(1) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(17));
        fputc('\n', stdout);
    } else {
        agt_sweep_print(stdout, sw->doc);
    }
    fflush(stdout);
    return 0;
}

static int
execute(struct sweep *sw)
{
    const struct sweep_opts *o = sw->o;
    struct gd_err err = {0};
    int code = AGT_EXIT_OK;
    struct gd_model_opts mo = {.weights_dir = o->weights_dir};
    sw->t0 = now_us();
    if (agt_grid_parse(o->grid ? o->grid : agt_grid_default(o->backend), o->backend, &sw->grid,
                       &err) != 0) {
        fprintf(stderr, "gpudiff-agent sweep: %s\n", err.msg);
        return AGT_EXIT_USAGE;
    }
    if (agt_grid_mark_strict(&sw->grid, o->backend) < 0) {
        fprintf(stderr, "gpudiff-agent sweep: the grid is full\n");
        return AGT_EXIT_USAGE;
    }
    if (gd_uuid_v4(sw->id, &err) != 0 || gd_model_load(o->model, &mo, &sw->g, &err) != 0 ||
        gd_array_load(o->input, o->input_key, &sw->input, &err) != 0 ||
        gd_tensor_sha256(sw->input, sw->input_sha, &err) != 0)
        return agt_fail(&err, AGT_PHASE_LOAD);
    if (sw->g->n_inputs != 1) {
        fprintf(stderr, "gpudiff-agent sweep: the model takes %d inputs; sweep runs models of "
                "one input\n", sw->g->n_inputs);
        return AGT_EXIT_NOTSUP;
    }
    if (make_bundle_root(sw, &err) != 0)
        return agt_fail(&err, AGT_PHASE_WRITE);
    pick_batches(sw);
    doc_start(sw);
    float64_run(sw);
    {
        struct agt_grid expanded = {0};
        if (expand_each(sw, &expanded) != 0) {
            agt_grid_fini(&expanded);
            fprintf(stderr, "gpudiff-agent sweep: conv=each makes more than %d settings\n",
                    AGT_SWEEP_MAX_SETTINGS);
            return AGT_EXIT_USAGE;
        }
        expanded.n_batches = sw->grid.n_batches;
        memcpy(expanded.batches, sw->grid.batches, sizeof expanded.batches);
        agt_grid_fini(&sw->grid);
        sw->grid = expanded;
    }
    {
        struct gd_knobs k;
        agt_strict_knobs(o->backend, &k);
        sw->strict_knobs = agt_knobs_json(o->backend, &k, NULL);
    }
    json_object_set_new(sw->doc, "conv_algorithms", list_offers(sw));
    int n = sw->grid.n, n_ok = 0;
    double t_settings = now_us();
    for (int i = 0; i < n; i++) {
        const struct agt_setting *st = &sw->grid.settings[i];
        double t1 = now_us();
        progress(sw, "[%d/%d] %s%s: %d+%d timed runs x 2, %d captures, %d batch sizes", i + 1,
                 n, st->name, st->strict ? " (strict)" : "", o->warmup, o->repeats,
                 o->captures, sw->n_batches);
        json_t *res = run_setting(sw, i, st);
        json_array_append_new(sw->settings, res);
        int ok = strcmp(json_string_value(json_object_get(res, "status")), "ok") == 0;
        n_ok += ok;
        double per = (now_us() - t_settings) / (i + 1) / 1e6;
        if (ok)
            progress(sw, "[%d/%d] %s: %.1f s, forward %.3f ms; %d left, about %.0f s", i + 1, n,
                     st->name, (now_us() - t1) / 1e6,
                     json_number_value(json_object_get(json_object_get(res, "time"),
                                                       "forward_ms")),
                     n - i - 1, per * (n - i - 1));
        else
            progress(sw, "[%d/%d] %s: cannot run: %s; %d left, about %.0f s", i + 1, n,
                     st->name, json_string_value(json_object_get(res, "error")), n - i - 1,
                     per * (n - i - 1));
    }
    agt_sweep_answers(sw->doc);
    double total = now_us() - sw->t0;
    double overhead = total - sw->engine_us - sw->compare_us;
    json_object_set_new(sw->doc, "timing",
                        json_pack("{s:f, s:f, s:f, s:f, s:f, s:f}", "total_s", total / 1e6,
                                  "engine_s", sw->engine_us / 1e6, "compare_s",
                                  sw->compare_us / 1e6, "capture_handling_s",
                                  sw->callback_us / 1e6, "overhead_s", overhead / 1e6,
                                  "overhead_fraction", overhead / total));
    progress(sw, "done in %.1f s: engine %.1f s, comparisons %.1f s, the sweep's own work "
             "%.2f s (%.1f%%)", total / 1e6, sw->engine_us / 1e6, sw->compare_us / 1e6,
             overhead / 1e6, 100 * overhead / total);
    if (output_doc(sw, &err) != 0)
        return agt_fail(&err, AGT_PHASE_WRITE);
    if (n_ok == 0)
        code = AGT_EXIT_RUN;
    if (o->upload.server != NULL) {
        struct agt_upload_opts up = o->upload;
        up.who = "sweep";
        up.progress = !o->quiet;
        int ucode = agt_sweep_upload(sw->doc, &up, &err);
        if (ucode != AGT_EXIT_OK) {
            fprintf(stderr, "gpudiff-agent sweep: %s\n", err.msg);
            if (!sw->own_bundles)
                fprintf(stderr, "gpudiff-agent sweep: the bundles are in %s\n", sw->bundles);
            code = ucode;
        }
    }
    return code;
}

/* --report FILE: a document written earlier, printed as the report (or as it is, --json). */
static int
print_saved(const char *path, int as_json)
{
    json_error_t jerr;
    json_t *doc = json_load_file(path, JSON_REJECT_DUPLICATES, &jerr);
    const char *format = json_string_value(json_object_get(doc, "format"));
    if (doc == NULL || format == NULL || strcmp(format, AGT_SWEEP_FORMAT) != 0 ||
        !json_is_array(json_object_get(doc, "settings"))) {
        fprintf(stderr, "gpudiff-agent sweep: %s: %s\n", path,
                doc == NULL ? jerr.text : "not a sweep document (format gpudiff-sweep)");
        json_decref(doc);
        return AGT_EXIT_INPUT;
    }
    if (as_json)
        json_dumpf(doc, stdout, JSON_INDENT(1) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(17));
    else
        agt_sweep_print(stdout, doc);
    if (as_json)
        fputc('\n', stdout);
    json_decref(doc);
    return AGT_EXIT_OK;
}

int
agt_cmd_sweep(int argc, char **argv)
{
    struct sweep_opts o = {.backend = "cpu", .repeats = 10, .warmup = 2, .captures = 3,
                           .atol = 1e-8, .rtol = 1e-5};
    agt_upload_opts_init(&o.upload);
    int prc = parse_args(argc, argv, &o);
    if (prc != 0)
        return prc > 0 ? AGT_EXIT_OK : AGT_EXIT_USAGE;
    agt_log_init(o.verbose);
    if (o.report != NULL)
        return print_saved(o.report, o.json);
    struct sweep sw = {.o = &o};
    int code = execute(&sw);
    remove_bundles(&sw);
    agt_memrun_free(sw.f64);
    agt_memrun_free(sw.strict);
    agt_memrun_free(sw.spare);
    agt_memrun_free(sw.scratch);
    json_decref(sw.strict_knobs);
    json_decref(sw.doc);
    agt_grid_fini(&sw.grid);
    gd_tensor_free(sw.input);
    gd_graph_free(sw.g);
    return code;
}
