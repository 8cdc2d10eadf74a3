/*
 * cmd_sweep.c: `gpudiff-agent sweep`: one model and one input under a grid of settings on one
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
#include "gpudiff/session.h"
#include "agent.h"
#include "sweep_run.h"

/* The knobs sweep takes as options: those that are no axis of its grid and apply to a whole
 * sweep (the model's dtype, the capture's host memory). */
static void
sweep_knobs(unsigned char *which)
{
    for (int k = 0; k < GD_KNOB_COUNT; k++)
        which[k] = k == GD_KNOB_DTYPE || k == GD_KNOB_HOST_MEMORY;
}

static void
sweep_usage(FILE *out)
{
    fprintf(out,
            "Usage: gpudiff-agent sweep --model FILE --input FILE [OPTIONS]\n"
            "       gpudiff-agent sweep --report FILE\n\n"
            "Runs one model and input under a grid of settings on one backend, in one process\n"
            "(the model is loaded once), and answers: which settings change the results and\n"
            "by how much, how to prevent it (the settings a deployment can use that are\n"
            "deterministic and batch-invariant; CPU emulation is a what-if, never a fix), and\n"
            "what that costs. Settings whose timed runs' min-max ranges overlap are within\n"
            "timing noise of each other and not ranked by time: among them the advice takes\n"
            "the one closest to float64. For each setting it measures:\n"
            "  - the forward time without capture: the median, least and most of --repeats\n"
            "    runs after\n"
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
            "  --model FILE        the model, as run takes it: ONNX or the JSON graph\n"
            "  --input [NAME=]FILE an input, as run takes it (.npy, .npz, .safetensors or\n"
            "                      an ONNX TensorProto .pb; NAME=FILE for each input of a\n"
            "                      model of several). The first input's rows are the batch\n\n"
            "Options:\n"
            "  --input-key NAME    member of an .npz/.safetensors input\n"
            "  --weights-dir DIR   JSON models: folder weight paths are relative to\n");
    unsigned char which[GD_KNOB_COUNT];
    sweep_knobs(which);
    agt_knob_usage(out, which);
    fprintf(out,
            "  --backend NAME      cpu (default) or cuda (when built with CUDA); cpu64 sweeps\n"
            "                      thread counts only\n"
            "  --grid SPEC         the settings (default below): groups joined by '|', each\n"
            "                      the product of its axes KEY=V1,V2,... joined by ';'. An axis\n"
            "                      a group leaves out takes its default (the first value\n"
            "                      listed). Axes:\n"
            "                        cuda: conv=heuristic|autotune|deterministic|fixed:C|each|\n"
            "                              NODE@C (C: an engine config engN[_kT=V...] with\n"
            "                              the graph API, an algorithm id with legacy; each:\n"
            "                              one setting per convolution layer and choice cuDNN\n"
            "                              offers it, the other layers heuristic; NODE@C pins\n"
            "                              that layer to C)\n"
            "                              api=graph|legacy (cuDNN's graph or legacy API)\n"
            "                              tf32=off|on  math=default|pedantic\n"
            "                              workspace=none|BYTES (K, M, G suffixes)\n"
            "                              repro=off|bitwise (bitwise: gpudiff's own\n"
            "                              kernels, every layer the cpu backend's bits on\n"
            "                              any GPU and batch size)\n"
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
            "         (9 settings: the strict one among them, and bitwise mode)\n"
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
    enum {
        O_INPUT_KEY = 256,
        O_WEIGHTS_DIR,
        O_BACKEND,
        O_GRID,
        O_REPEATS,
        O_WARMUP,
        O_CAPTURES,
        O_ATOL,
        O_RTOL,
        O_OUT,
        O_JSON,
        O_QUIET,
        O_REPORT
    };
    static const struct option own[] = {
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
    unsigned char which[GD_KNOB_COUNT];
    sweep_knobs(which);
    struct option longopts[64];
    if (agt_knob_longopts(own, which, longopts, 64) < 0)
        return -1;
    struct gd_err err = {0};
    int c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "m:i:vh", longopts, NULL)) != -1) {
        int taken = agt_upload_flag("sweep", c, optarg, &o->upload);
        if (taken == 0)
            taken = agt_knob_flag("sweep", c, optarg, &o->base);
        if (taken < 0)
            return -1;
        if (taken > 0)
            continue;
        switch (c) {
        case 'm':
            o->model = optarg;
            break;
        case 'i':
            if (agt_input_add("sweep", o->inputs, &o->n_inputs, optarg) != 0)
                return -1;
            break;
        case O_INPUT_KEY:
            o->input_key = optarg;
            break;
        case O_WEIGHTS_DIR:
            o->weights_dir = optarg;
            break;
        case O_BACKEND:
            if (agt_backend_check("sweep", optarg) != 0)
                return -1;
            o->backend = optarg;
            break;
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
                        c == O_REPEATS  ? "repeats"
                        : c == O_WARMUP ? "warmup"
                                        : "captures",
                        lo, hi, optarg);
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
        if (o->model || o->n_inputs || o->grid || o->out || o->upload.server) {
            fprintf(stderr, "gpudiff-agent sweep: --report prints a saved sweep; it takes no "
                            "--model, --input, --grid, --out or --server\n");
            return -1;
        }
        return 0;
    }
    const char *missing = !o->model ? "--model" : !o->n_inputs ? "--input" : NULL;
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

void
agt_sweep_progress(const struct sweep *sw, const char *fmt, ...)
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
        int rc = gd_dir_make_parents(sw->o->out, NULL, 0, err);
        if (rc != 0)
            return rc;
        if (mkdir(sw->o->out, 0755) != 0)
            return gd_err_set(err, errno == EEXIST ? GD_EEXIST : GD_EIO, "--out %s: %s", sw->o->out,
                              strerror(errno));
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
doc_start(struct sweep *sw)
{
    char now[32];
    agt_utc_now(now, sizeof now);
    json_t *shape = json_array(), *batches = json_array();
    for (int i = 0; i < sw->input->ndim; i++)
        json_array_append_new(shape, json_integer(sw->input->shape[i]));
    for (int i = 0; i < sw->n_batches; i++)
        json_array_append_new(batches, json_integer(sw->batches[i]));
    /* "input" is the first input's record, as before sweeps took models of several;
     * "inputs" all of them */
    json_t *first = json_deep_copy(json_array_get(sw->model.records, 0));
    json_object_del(first, "name");
    json_object_del(first, "dtype");
    json_object_set_new(first, "shape", shape);
    sw->doc = json_pack(
        "{s:s, s:i, s:s, s:s, s:{s:s, s:s, s:s}, s:o, s:O, "
        "s:s, s:s, s:i, s:i, s:i, s:o, s:I, s:f, s:f}",
        "format", AGT_SWEEP_FORMAT, "version", AGT_SWEEP_VERSION, "id", sw->id, "created_at", now,
        "model", "name", sw->g->name, "sha256", sw->g->sha256, "file", sw->o->model, "input",
        first, "inputs", sw->model.records,
        "backend", sw->o->backend, "grid",
        sw->o->grid ? sw->o->grid : agt_grid_default(sw->o->backend), "repeats", sw->o->repeats,
        "warmup", sw->o->warmup, "captures", sw->o->captures, "batch_sizes", batches,
        "reference_batch", (json_int_t)(sw->input->ndim > 0 ? sw->input->shape[0] : 1), "atol",
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
        if (json_dump_file(sw->doc, path,
                           JSON_INDENT(1) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(17)) != 0)
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
    sw->t0 = agt_sweep_now_us();
    if (agt_grid_parse(o->grid ? o->grid : agt_grid_default(o->backend), o->backend, &o->base,
                       &sw->grid, &err) != 0) {
        fprintf(stderr, "gpudiff-agent sweep: %s\n", err.msg);
        return AGT_EXIT_USAGE;
    }
    if (agt_grid_mark_strict(&sw->grid, o->backend, &o->base) < 0) {
        fprintf(stderr, "gpudiff-agent sweep: the grid is full\n");
        return AGT_EXIT_USAGE;
    }
    struct agt_model_req req = {.model = o->model,
                                .weights_dir = o->weights_dir,
                                .inputs = o->inputs,
                                .n_inputs = o->n_inputs,
                                .input_key = o->input_key,
                                .dtype = o->base.dtype};
    if (gd_uuid_v4(sw->id, &err) != 0 || agt_model_load(&req, &sw->model, &err) != 0)
        return agt_fail(&err, AGT_PHASE_LOAD);
    sw->g = sw->model.g;
    sw->n_inputs = sw->g->n_inputs;
    sw->inputs = (const struct gd_tensor *const *)sw->model.inputs;
    if (sw->n_inputs == 0) {
        fprintf(stderr, "gpudiff-agent sweep: the model takes no input: there is nothing to "
                        "batch or time apart from its constants\n");
        return AGT_EXIT_NOTSUP;
    }
    sw->input = sw->inputs[0];
    if (make_bundle_root(sw, &err) != 0)
        return agt_fail(&err, AGT_PHASE_WRITE);
    pick_batches(sw);
    doc_start(sw);
    agt_sweep_float64(sw);
    {
        struct agt_grid expanded = {0};
        if (agt_sweep_expand_each(sw, &expanded) != 0) {
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
        agt_strict_knobs(o->backend, &o->base, &k);
        sw->strict_knobs = gd_knobs_json(&k, o->backend, NULL);
    }
    json_object_set_new(sw->doc, "conv_algorithms", agt_sweep_list_offers(sw));
    int n = sw->grid.n, n_ok = 0;
    double t_settings = agt_sweep_now_us();
    for (int i = 0; i < n; i++) {
        const struct agt_setting *st = &sw->grid.settings[i];
        double t1 = agt_sweep_now_us();
        agt_sweep_progress(sw, "[%d/%d] %s%s: %d+%d timed runs x 2, %d captures, %d batch sizes",
                           i + 1, n, st->name, st->strict ? " (strict)" : "", o->warmup, o->repeats,
                           o->captures, sw->n_batches);
        json_t *res = agt_sweep_run_setting(sw, i, st);
        json_array_append_new(sw->settings, res);
        int ok = strcmp(json_string_value(json_object_get(res, "status")), "ok") == 0;
        n_ok += ok;
        double per = (agt_sweep_now_us() - t_settings) / (i + 1) / 1e6;
        if (ok)
            agt_sweep_progress(
                sw, "[%d/%d] %s: %.1f s, forward %.3f ms; %d left, about %.0f s", i + 1, n,
                st->name, (agt_sweep_now_us() - t1) / 1e6,
                json_number_value(json_object_get(json_object_get(res, "time"), "forward_ms")),
                n - i - 1, per * (n - i - 1));
        else
            agt_sweep_progress(sw, "[%d/%d] %s: cannot run: %s; %d left, about %.0f s", i + 1, n,
                               st->name, json_string_value(json_object_get(res, "error")),
                               n - i - 1, per * (n - i - 1));
    }
    agt_sweep_answers(sw->doc);
    double total = agt_sweep_now_us() - sw->t0;
    double overhead = total - sw->engine_us - sw->compare_us;
    json_object_set_new(sw->doc, "timing",
                        json_pack("{s:f, s:f, s:f, s:f, s:f, s:f, s:{s:f, s:f, s:f, s:f}}",
                                  "total_s", total / 1e6, "engine_s", sw->engine_us / 1e6,
                                  "compare_s", sw->compare_us / 1e6, "capture_handling_s",
                                  sw->callback_us / 1e6, "overhead_s", overhead / 1e6,
                                  "overhead_fraction", overhead / total, "capture_handling",
                                  "stored_bytes", sw->store_bytes, "store_s",
                                  sw->store_us / 1e6, "checked_bytes", sw->check_bytes,
                                  "check_s", sw->check_us / 1e6));
    agt_sweep_progress(sw,
                       "done in %.1f s: engine %.1f s, comparisons %.1f s, the sweep's own "
                       "work %.2f s (%.1f%%)",
                       total / 1e6, sw->engine_us / 1e6, sw->compare_us / 1e6, overhead / 1e6,
                       100 * overhead / total);
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
    struct sweep_opts o = {
        .backend = "cpu", .repeats = 10, .warmup = 2, .captures = 3, .atol = 1e-8, .rtol = 1e-5};
    agt_upload_opts_init(&o.upload);
    gd_knobs_init(&o.base);
    int prc = parse_args(argc, argv, &o);
    if (prc != 0)
        return prc > 0 ? AGT_EXIT_OK : AGT_EXIT_USAGE;
    agt_log_init(o.verbose);
    if (o.report != NULL)
        return print_saved(o.report, o.json);
    /* the comparisons read captures held in memory (borrowed, not copied): one thread per
     * core for them, up to 8 (docs/AGENT.md) */
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    gd_diff_set_threads(cores < 1 ? 1 : cores > 8 ? 8 : (int)cores);
    struct sweep sw = {.o = &o};
    int code = execute(&sw);
    agt_sweep_copy_fini();
    remove_bundles(&sw);
    agt_memrun_free(sw.f64);
    agt_memrun_free(sw.strict);
    agt_memrun_free(sw.spare);
    agt_memrun_free(sw.scratch);
    json_decref(sw.strict_knobs);
    json_decref(sw.doc);
    agt_grid_fini(&sw.grid);
    agt_model_fini(&sw.model);
    return code;
}
