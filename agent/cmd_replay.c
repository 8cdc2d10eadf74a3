/*
 * cmd_replay.c: `gpudiff-agent replay`: runs every node of a bundle's model on a backend with the
 * inputs the bundle captured, not with that backend's own upstream results, and writes the
 * outputs as a bundle whose run.json says which run it replays ("replay": {"of": ID}). Each
 * of its layers differs from the captured run's only by what that layer computes itself, so
 * `diff` can tell the error a layer makes from the error it inherits (docs/COMPARISON.md,
 * "Replay"). The bundle may be on disk or pulled from gpudiffd (--server URL RUN_ID).
 */
#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "gpudiff/bundle.h"
#include "gpudiff/io.h"
#include "gpudiff/graph_replay.h"
#include "gpudiff/session.h"
#include "agent.h"
#include "fetch.h"
#include "model_load.h"
#include "upload.h"

struct replay_opts {
    const char *bundle; /* a bundle folder, or with server a run id */
    const char *server;
    const char *token;
    const char *cacert;
    int insecure_http;
    const char *model;
    const char *weights_dir;
    const char *inputs[AGT_MAX_INPUTS]; /* --input, as run takes them; none: the run's own */
    int n_inputs;
    const char *input_key;
    const char *out;
    int replace, json, progress, verbose, push;
    json_t *labels;
    const char *backend; /* NULL: cpu */
    struct gd_knobs knobs;
};

/* The knobs replay takes: run's, less --batch (every captured layer is fed whole),
 * --capture (a replay keeps every layer) and --noise-probe (a replay's layers are compared
 * for their own error, with the noise its run recorded). */
static void
replay_knobs(unsigned char *which)
{
    for (int k = 0; k < GD_KNOB_COUNT; k++)
        which[k] = k != GD_KNOB_BATCH && k != GD_KNOB_CAPTURE && k != GD_KNOB_NOISE_PROBE;
}

struct capture_ctx {
    struct gd_bundle_writer *writer;
    const struct gd_graph *graph; /* the model's own graph: its edges go in the records */
    int progress, n_layers;
};

static void
replay_usage(FILE *out)
{
    fprintf(out,
            "Usage: gpudiff-agent replay BUNDLE --model FILE --out DIR [OPTIONS]\n"
            "       gpudiff-agent replay --server URL RUN_ID --model FILE --out DIR [OPTIONS]\n\n"
            "Runs every node of the bundle's model on a backend with the layers the bundle\n"
            "captured as its inputs (not with the backend's own upstream results) and writes\n"
            "the outputs as a new bundle in DIR whose run.json names the run it replays\n"
            "(\"replay\": {\"of\": ID}). Each of its layers then differs from the captured\n"
            "run's only by what that layer computes itself: `gpudiff-agent diff DIR BUNDLE`\n"
            "gives each layer's own error, and `diff A BUNDLE --replay DIR` (or the daemon's\n"
            "diff, once DIR is pushed) the first layer whose own error exceeds its bound.\n"
            "The model must be the one the bundle ran (its sha256 is checked); the graph's\n"
            "input is the run's input, checked against its sha256 too.\n\n"
            "Required:\n"
            "  BUNDLE              the run bundle folder to replay, or with --server a run id\n"
            "  --model FILE        the bundle's model, as run takes it: ONNX or the JSON graph\n"
            "  --out DIR           bundle folder to create (must not exist, see --replace)\n\n"
            "Options:\n"
            "  --server URL        pull run RUN_ID from gpudiffd (GET /api/v1/runs/RUN_ID and\n"
            "                      the layers the replay reads) instead of a bundle on disk\n"
            "  --token TOKEN       a token for --server (default: $%s), needed\n"
            "                      where the server requires one to read, and by --push\n"
            "  --push              upload the replay to --server when it is written, as\n"
            "                      `push` would (an agent token)\n"
            "  --cacert FILE       PEM file of the CAs an https:// --server is verified with\n"
            "  --insecure-http     allow the token over http:// to a host that is not a\n"
            "                      loopback address (else such a --server with a token is\n"
            "                      refused: exit 2)\n"
            "  --weights-dir DIR   JSON models: folder weight paths are relative to (default:\n"
            "                      the model's \"weights_dir\", relative to the model file)\n"
            "  --input [NAME=]FILE the run's input, as run takes it (.npy, .npz,\n"
            "                      .safetensors, .pb; NAME=FILE per input of a model of\n"
            "                      several; default: the files run.json names, when they are\n"
            "                      here); each is checked against the run's SHA-256\n"
            "  --input-key NAME    member of an .npz/.safetensors input (default: run.json's\n"
            "                      key when --input is not given)\n",
            AGT_TOKEN_ENV);
    fprintf(out, "  --backend NAME      cpu (float32, fixed summation order; default), cpu64\n"
                 "                      (float64) or cuda (when built with CUDA)\n");
    unsigned char which[GD_KNOB_COUNT];
    replay_knobs(which);
    agt_knob_usage(out, which);
    fprintf(out,
            "  --label KEY=VALUE   a label recorded in run.json (repeatable)\n"
            "  --replace           replace DIR if it exists (only once the new bundle is\n"
            "                      complete)\n"
            "  --json              print run.json (with the bundle path) instead of the table\n"
            "  --progress          report each layer on stderr (default when stderr is a\n"
            "                      terminal)\n"
            "  -v, --verbose       debug messages on stderr\n"
            "  -h, --help          this help\n\n");
    agt_print_exit_codes(out);
}

static int
parse_args(int argc, char **argv, struct replay_opts *o)
{
    enum {
        O_SERVER = 256,
        O_TOKEN,
        O_PUSH,
        O_WEIGHTS,
        O_INPUT,
        O_INPUT_KEY,
        O_LABEL,
        O_REPLACE,
        O_JSON,
        O_PROGRESS,
        O_BACKEND,
        O_CACERT,
        O_INSECURE
    };
    static const struct option own[] = {
        {"model", required_argument, NULL, 'm'},
        {"out", required_argument, NULL, 'o'},
        {"server", required_argument, NULL, O_SERVER},
        {"token", required_argument, NULL, O_TOKEN},
        {"push", no_argument, NULL, O_PUSH},
        {"cacert", required_argument, NULL, O_CACERT},
        {"insecure-http", no_argument, NULL, O_INSECURE},
        {"weights-dir", required_argument, NULL, O_WEIGHTS},
        {"input", required_argument, NULL, O_INPUT},
        {"input-key", required_argument, NULL, O_INPUT_KEY},
        {"label", required_argument, NULL, O_LABEL},
        {"replace", no_argument, NULL, O_REPLACE},
        {"json", no_argument, NULL, O_JSON},
        {"progress", no_argument, NULL, O_PROGRESS},
        {"verbose", no_argument, NULL, 'v'},
        {"help", no_argument, NULL, 'h'},
        {"backend", required_argument, NULL, O_BACKEND},
        {NULL, 0, NULL, 0},
    };
    unsigned char which[GD_KNOB_COUNT];
    replay_knobs(which);
    struct option longopts[64];
    if (agt_knob_longopts(own, which, longopts, 64) < 0)
        return -1;
    int c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "m:o:vh", longopts, NULL)) != -1) {
        int taken = agt_knob_flag("replay", c, optarg, &o->knobs);
        if (taken < 0)
            return -1;
        if (taken > 0)
            continue;
        switch (c) {
        case 'm':
            o->model = optarg;
            break;
        case 'o':
            o->out = optarg;
            break;
        case O_BACKEND:
            if (agt_backend_check("replay", optarg) != 0)
                return -1;
            o->backend = optarg;
            break;
        case O_SERVER:
            o->server = optarg;
            break;
        case O_TOKEN:
            o->token = optarg;
            break;
        case O_PUSH:
            o->push = 1;
            break;
        case O_CACERT:
            o->cacert = optarg;
            break;
        case O_INSECURE:
            o->insecure_http = 1;
            break;
        case O_WEIGHTS:
            o->weights_dir = optarg;
            break;
        case O_INPUT:
            if (agt_input_add("replay", o->inputs, &o->n_inputs, optarg) != 0)
                return -1;
            break;
        case O_INPUT_KEY:
            o->input_key = optarg;
            break;
        case O_LABEL:
            if (agt_kv_set(o->labels, "replay", "--label", optarg) != 0)
                return -1;
            break;
        case O_REPLACE:
            o->replace = 1;
            break;
        case O_JSON:
            o->json = 1;
            break;
        case O_PROGRESS:
            o->progress = 1;
            break;
        case 'v':
            o->verbose = 1;
            break;
        case 'h':
            replay_usage(stdout);
            return 1;
        default:
            fprintf(stderr, "Try `gpudiff-agent replay --help`.\n");
            return -1;
        }
    }
    if (argc - optind != 1) {
        fprintf(stderr, "gpudiff-agent replay: give one bundle folder (or, with --server, one "
                        "run id; see --help)\n");
        return -1;
    }
    o->bundle = argv[optind];
    const char *missing = !o->model ? "--model" : !o->out ? "--out" : NULL;
    if (missing != NULL) {
        fprintf(stderr, "gpudiff-agent replay: %s is required (see --help)\n", missing);
        return -1;
    }
    if (o->push && o->server == NULL) {
        fprintf(stderr, "gpudiff-agent replay: --push needs --server\n");
        return -1;
    }
    if (o->token == NULL || o->token[0] == '\0')
        o->token = getenv(AGT_TOKEN_ENV);
    if (o->token != NULL && o->token[0] == '\0')
        o->token = NULL;
    if (o->server != NULL) {
        /* The token rule of every command that sends one (server_url.h), before any work. */
        struct agt_server srv;
        struct gd_err err;
        int rc = agt_server_parse(o->server, o->insecure_http, &srv, &err);
        if (rc == 0) {
            if (o->token != NULL)
                rc = agt_server_token_check(&srv, &err);
            agt_server_fini(&srv);
        }
        if (rc == 0 && o->push && o->token == NULL)
            rc = gd_err_set(&err, GD_EINVAL, "--push needs an agent token: --token T or $%s",
                            AGT_TOKEN_ENV);
        if (rc != 0) {
            fprintf(stderr, "gpudiff-agent replay: %s%s\n", err.msg,
                    o->token != NULL && !o->push
                        ? " (the token comes from --token or $" AGT_TOKEN_ENV ")"
                        : "");
            return -1;
        }
    }
    return 0;
}

/* ---- the source run, on disk or pulled into a temporary folder ---- */

static void
remove_tree(const char *dir)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/layers", dir);
    DIR *d = opendir(path);
    if (d != NULL) {
        struct dirent *e;
        while ((e = readdir(d)) != NULL) {
            if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
                continue;
            char f[4352];
            snprintf(f, sizeof f, "%s/%s", path, e->d_name);
            unlink(f);
        }
        closedir(d);
        rmdir(path);
    }
    snprintf(path, sizeof path, "%s/run.json", dir);
    unlink(path);
    rmdir(dir);
}

/*
 * Pulls run id into dir as a bundle: run.json as the server keeps it (less its own fields),
 * and the layers want marks (by index). Returns an exit code.
 */
static int
pull(const struct replay_opts *o, const char *id, const char *dir, const unsigned char *want,
     json_t *doc, struct gd_err *err)
{
    struct agt_fetch_opts fo = {.server = o->server,
                                .token = o->token,
                                .retries = 5,
                                .cacert = o->cacert,
                                .insecure_http = o->insecure_http};
    char path[4096];
    snprintf(path, sizeof path, "%s/layers", dir);
    if (mkdir(path, 0700) != 0 && errno != EEXIST) {
        gd_err_set(err, GD_EIO, "%s: %s", path, strerror(errno));
        return AGT_EXIT_OUTPUT;
    }
    json_t *layers = json_object_get(doc, "layers");
    int n = (int)json_array_size(layers), n_want = 0, done = 0;
    for (int i = 0; i < n; i++)
        n_want += want[i] != 0;
    for (int i = 0; i < n; i++) {
        if (!want[i])
            continue;
        const char *file =
            json_string_value(json_object_get(json_array_get(layers, (size_t)i), "file"));
        if (file == NULL || strncmp(file, "layers/", 7) != 0 || strchr(file + 7, '/') != NULL) {
            gd_err_set(err, GD_EFORMAT, "run %s: layer %d has no layers/<name>.npy file", id, i);
            return AGT_EXIT_INPUT;
        }
        snprintf(path, sizeof path, "%s/%s", dir, file);
        long status = 0;
        if (agt_fetch_layer(&fo, id, i, path, &status, err) != 0)
            return status == 401 || status == 403 ? AGT_EXIT_TOKEN : AGT_EXIT_UPLOAD;
        if (o->progress)
            fprintf(stderr, "gpudiff-agent: pulled layer %d (%d of %d)\n", i, ++done, n_want);
    }
    /* run.json: the document less what the server adds. */
    json_t *run = json_deep_copy(doc);
    const char *drop[] = {"state",      "received_at",    "finished_at",
                          "trimmed_at", "layers_present", "layers_missing"};
    for (size_t k = 0; k < sizeof drop / sizeof drop[0]; k++)
        json_object_del(run, drop[k]);
    size_t i;
    json_t *rec;
    json_array_foreach(json_object_get(run, "layers"), i, rec)
    {
        json_object_del(rec, "present");
        json_object_del(rec, "stored");
    }
    snprintf(path, sizeof path, "%s/run.json", dir);
    int rc = json_dump_file(run, path, JSON_INDENT(1));
    json_decref(run);
    if (rc != 0) {
        gd_err_set(err, GD_EIO, "%s: cannot write", path);
        return AGT_EXIT_OUTPUT;
    }
    return AGT_EXIT_OK;
}

/* ---- the replay ---- */

static int
capture_layer(void *user, const struct gd_layer *layer, struct gd_err *err)
{
    struct capture_ctx *cc = user;
    int rc = gd_bundle_writer_layer(cc->writer, cc->graph, layer, err);
    if (rc == 0 && cc->progress)
        fprintf(stderr, "gpudiff-agent: [%d/%d] %s (%s) replayed, %.0f us\n", layer->index + 1,
                cc->n_layers, layer->name, gd_op_name(layer->op), layer->time_us);
    return rc;
}

/* The layer of src holding value v of g, -1 when it has none. */
static int
layer_of(const struct gd_bundle *src, const struct gd_graph *g, int v)
{
    for (int i = 0; i < src->n_layers; i++)
        if (strcmp(src->layers[i].name, g->values[v].name) == 0)
            return i;
    return -1;
}

/* Which layers of the source the replay reads: the float values nodes take as inputs. */
static int
needed_layers(const struct gd_graph *g, json_t *layers, unsigned char *want, struct gd_err *err)
{
    for (int ni = 0; ni < g->n_nodes; ni++) {
        const struct gd_node *n = &g->nodes[ni];
        for (int k = 0; k < n->n_inputs; k++) {
            int v = n->inputs[k];
            if (v < 0 || g->values[v].producer < 0 || !gd_dtype_is_float(g->values[v].dtype))
                continue;
            int found = -1;
            size_t i;
            json_t *rec;
            json_array_foreach(layers, i, rec)
            {
                const char *name = json_string_value(json_object_get(rec, "name"));
                if (name != NULL && strcmp(name, g->values[v].name) == 0)
                    found = (int)i;
            }
            if (found < 0)
                return gd_err_set(err, GD_ENOENT, "the run has no layer %s, which node %s reads",
                                  g->values[v].name, n->name);
            want[found] = 1;
        }
    }
    return 0;
}

/* run.json's input records: "inputs", or for a run of one input made before "inputs"
 * existed, its "input" (a new reference). */
static json_t *
run_inputs(json_t *run)
{
    json_t *many = json_object_get(run, "inputs");
    if (json_is_array(many) && json_array_size(many) > 0)
        return json_incref(many);
    json_t *one = json_object_get(run, "input");
    return json_is_object(one) ? json_pack("[O]", one) : NULL;
}

/* The model and its inputs: the run's own (or --input), checked against the run's SHA-256;
 * in the run's --dtype unless --dtype says otherwise. */
static int
load_model(const struct replay_opts *o, json_t *run, struct agt_model *m, struct gd_err *err)
{
    json_t *records = run_inputs(run);
    const char *dtype = o->knobs.dtype;
    const char *run_dtype =
        json_string_value(json_object_get(json_object_get(run, "knobs"), "dtype"));
    if (dtype[0] == '\0' && run_dtype != NULL)
        dtype = run_dtype;
    struct agt_model_req req = {.model = o->model,
                                .weights_dir = o->weights_dir,
                                .inputs = o->inputs,
                                .n_inputs = o->n_inputs,
                                .input_key = o->input_key,
                                .input_records = records,
                                .expect = records,
                                .dtype = dtype};
    int rc = agt_model_load(&req, m, err);
    json_decref(records);
    return rc;
}

static json_t *
replay_meta(const struct replay_opts *o, const struct gd_graph *g, json_t *src_run,
            struct gd_session *s, double duration_us, struct gd_err *err)
{
    char id[37], now[32];
    if (gd_uuid_v4(id, err) != 0)
        return NULL;
    agt_utc_now(now, sizeof now);
    json_t *env = json_object();
    const struct gd_env *e = gd_session_env(s);
    for (int i = 0; i < e->n; i++)
        json_object_set_new(env, e->items[i].key, json_string(e->items[i].value));
    json_t *src_env = json_object_get(src_run, "env");
    json_t *replay = json_pack(
        "{s:O?, s:s, s:{s:O?, s:O?, s:O?, s:O?}}", "of", json_object_get(src_run, "id"), "inputs",
        "captured", "source", "backend", json_object_get(src_run, "backend"), "created_at",
        json_object_get(src_run, "created_at"), "host", json_object_get(src_env, "host"),
        "gpu_name", json_object_get(src_env, "gpu_name"));
    json_t *input = json_object_get(src_run, "input");
    json_t *inputs = json_object_get(src_run, "inputs");
    return json_pack("{s:s, s:s, s:{s:s, s:s, s:s}, s:O?, s:O?, s:s, s:o, s:o, s:O, s:f, s:o}",
                     "id", id, "created_at", now, "model", "name", g->name, "sha256", g->sha256,
                     "file", o->model, "input", input, "inputs", inputs, "backend",
                     gd_session_backend(s), "env", env, "knobs",
                     gd_knobs_json(&o->knobs, o->backend, gd_session_env(s)), "labels", o->labels,
                     "duration_us", duration_us, "replay", replay);
}

static double
now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static int
execute(struct replay_opts *o)
{
    struct gd_err err = {0};
    struct agt_model m = {0};
    struct gd_graph *g = NULL, *r = NULL;
    struct gd_bundle *src = NULL;
    struct gd_session *s = NULL;
    struct gd_bundle_writer *w = NULL;
    struct gd_tensor **ins = NULL;
    struct gd_shape *shapes = NULL;
    int *source = NULL, code = AGT_EXIT_OK;
    json_t *meta = NULL, *doc = NULL;
    unsigned char *want = NULL;
    char tmp[4096] = "";
    const char *bundle_dir = o->bundle;
    if (o->server != NULL) {
        struct agt_fetch_opts fo = {.server = o->server,
                                    .token = o->token,
                                    .retries = 5,
                                    .cacert = o->cacert,
                                    .insecure_http = o->insecure_http};
        long status = 0;
        if (agt_fetch_run(&fo, o->bundle, &doc, &status, &err) != 0) {
            fprintf(stderr, "gpudiff-agent replay: %s\n", err.msg);
            code = status == 401 || status == 403 ? AGT_EXIT_TOKEN
                   : err.code == GD_ENOENT        ? AGT_EXIT_INPUT
                                                  : AGT_EXIT_UPLOAD;
            goto done;
        }
        if (load_model(o, doc, &m, &err) != 0) {
            code = agt_fail(&err, AGT_PHASE_LOAD);
            goto done;
        }
        g = m.g;
        size_t n = json_array_size(json_object_get(doc, "layers"));
        want = calloc(n + 1, 1);
        const char *base = getenv("TMPDIR");
        snprintf(tmp, sizeof tmp, "%s/gpudiff-replay.XXXXXX", base && base[0] ? base : "/tmp");
        if (want == NULL || mkdtemp(tmp) == NULL) {
            tmp[0] = '\0';
            gd_err_set(&err, GD_EIO, "no temporary folder: %s", strerror(errno));
            code = agt_fail(&err, AGT_PHASE_WRITE);
            goto done;
        }
        if (needed_layers(g, json_object_get(doc, "layers"), want, &err) != 0) {
            code = agt_fail(&err, AGT_PHASE_LOAD);
            goto done;
        }
        code = pull(o, o->bundle, tmp, want, doc, &err);
        if (code != AGT_EXIT_OK) {
            fprintf(stderr, "gpudiff-agent replay: %s\n", err.msg);
            goto done;
        }
        bundle_dir = tmp;
    }
    if (gd_bundle_open(bundle_dir, &src, &err) != 0) {
        code = agt_fail(&err, AGT_PHASE_LOAD);
        goto done;
    }
    if (g == NULL) {
        if (load_model(o, src->run, &m, &err) != 0) {
            code = agt_fail(&err, AGT_PHASE_LOAD);
            goto done;
        }
        g = m.g;
    }
    const char *sha =
        json_string_value(json_object_get(json_object_get(src->run, "model"), "sha256"));
    const char *run_id = json_string_value(json_object_get(src->run, "id"));
    if (sha == NULL) {
        gd_err_set(&err, GD_EINVAL,
                   "run %s records no model sha256: a framework dump cannot be "
                   "replayed, only a bundle of `gpudiff-agent run`",
                   run_id ? run_id : "?");
        code = agt_fail(&err, AGT_PHASE_LOAD);
        goto done;
    }
    if (strcmp(sha, g->sha256) != 0) {
        gd_err_set(&err, GD_EINVAL,
                   "%s is not the model run %s ran: its sha256 is %.16s..., the "
                   "run's %.16s...",
                   o->model, run_id ? run_id : "?", g->sha256, sha);
        code = agt_fail(&err, AGT_PHASE_LOAD);
        goto done;
    }
    /* Every value's shape in the captured run: the layers', and the inputs'. */
    shapes = calloc((size_t)g->n_values, sizeof *shapes);
    if (shapes == NULL) {
        gd_err_set(&err, GD_ENOMEM, "out of memory");
        code = agt_fail(&err, AGT_PHASE_LOAD);
        goto done;
    }
    for (int v = 0; v < g->n_values; v++) {
        shapes[v] = g->values[v].shape;
        int li = layer_of(src, g, v);
        if (li >= 0)
            shapes[v] = src->layers[li].shape;
    }
    for (int i = 0; i < g->n_inputs; i++) {
        const struct gd_tensor *in = m.inputs[i];
        shapes[g->inputs[i]].ndim = in->ndim;
        for (int k = 0; k < in->ndim; k++)
            shapes[g->inputs[i]].dim[k] = in->shape[k];
    }
    if (gd_graph_replay_new(g, shapes, &r, &source, &err) != 0) {
        code = agt_fail(&err, AGT_PHASE_LOAD);
        goto done;
    }
    ins = calloc((size_t)r->n_inputs + 1, sizeof *ins);
    if (ins == NULL) {
        gd_err_set(&err, GD_ENOMEM, "out of memory");
        code = agt_fail(&err, AGT_PHASE_LOAD);
        goto done;
    }
    int to_f64 = o->backend != NULL && strcmp(o->backend, "cpu64") == 0;
    for (int k = 0; k < r->n_inputs; k++) {
        int v = source[k];
        if (g->values[v].is_input) {
            for (int i = 0; i < g->n_inputs; i++)
                if (g->inputs[i] == v)
                    ins[k] = m.inputs[i];
            continue;
        }
        int li = layer_of(src, g, v);
        if (li < 0) {
            gd_err_set(&err, GD_ENOENT, "the run has no layer %s, which the model reads",
                       g->values[v].name);
            code = agt_fail(&err, AGT_PHASE_LOAD);
            goto done;
        }
        if (gd_bundle_layer_load(src, li, &ins[k], &err) != 0) {
            code = agt_fail(&err, AGT_PHASE_LOAD);
            goto done;
        }
        /* The session rounds float inputs to its compute type; for the float32 backends
         * (all but cpu64) doing it here, layer by layer, halves what the replay holds. */
        if (ins[k]->dtype == GD_F64 && !to_f64) {
            struct gd_tensor *f = gd_tensor_cast(ins[k], GD_F32, &err);
            if (f == NULL) {
                code = agt_fail(&err, AGT_PHASE_LOAD);
                goto done;
            }
            gd_tensor_free(ins[k]);
            ins[k] = f;
        }
    }
    if ((s = gd_session_new(r, o->backend ? o->backend : "cpu", &o->knobs, &err)) == NULL) {
        code = agt_fail(&err, AGT_PHASE_LOAD);
        goto done;
    }
    if (gd_bundle_writer_new(o->out, o->replace, &w, &err) != 0) {
        code = agt_fail(&err, AGT_PHASE_WRITE);
        goto done;
    }
    int n_layers = 0;
    for (int i = 0; i < g->n_nodes; i++)
        n_layers += g->nodes[i].n_outputs;
    struct capture_ctx cc = {
        .writer = w, .graph = g, .progress = o->progress, .n_layers = n_layers};
    double t0 = now_us();
    if (gd_session_run(s, r->n_inputs, (const struct gd_tensor *const *)ins, capture_layer, &cc,
                       &err) != 0) {
        code = agt_fail(&err, err.code == GD_EIO ? AGT_PHASE_WRITE : AGT_PHASE_RUN);
        goto done;
    }
    double duration = now_us() - t0;
    meta = replay_meta(o, g, src->run, s, duration, &err);
    if (meta == NULL) {
        code = agt_fail(&err, AGT_PHASE_WRITE);
        goto done;
    }
    if (agt_bundle_commit(w, meta, o->out, o->json, &err) != 0) {
        code = agt_fail(&err, AGT_PHASE_WRITE);
        goto done;
    }
    if (o->push) {
        struct agt_upload_opts uo;
        agt_upload_opts_init(&uo);
        uo.server = o->server;
        uo.token = o->token;
        uo.cacert = o->cacert;
        uo.insecure_http = o->insecure_http;
        uo.who = "replay";
        uo.progress = o->progress;
        if (agt_upload_opts_check(&uo, &err) == 0)
            code = agt_upload_bundle(o->out, &uo, NULL, &err);
        else
            code = AGT_EXIT_USAGE;
        if (code != AGT_EXIT_OK)
            fprintf(stderr,
                    "gpudiff-agent replay: %s\ngpudiff-agent replay: the replay is in "
                    "%s; `gpudiff-agent push %s --server %s` uploads it later\n",
                    err.msg, o->out, o->out, o->server);
    }
done:
    if (ins != NULL && r != NULL)
        for (int k = 0; k < r->n_inputs; k++)
            if (!g->values[source[k]].is_input)
                gd_tensor_free(ins[k]);
    free(ins);
    free(source);
    free(shapes);
    free(want);
    json_decref(meta);
    json_decref(doc);
    gd_bundle_writer_free(w);
    gd_session_free(s);
    gd_bundle_close(src);
    gd_graph_free(r);
    agt_model_fini(&m);
    if (tmp[0] != '\0')
        remove_tree(tmp);
    return code;
}

int
agt_cmd_replay(int argc, char **argv)
{
    struct replay_opts o = {0};
    gd_knobs_init(&o.knobs);
    o.labels = json_object();
    o.progress = isatty(STDERR_FILENO);
    int prc = parse_args(argc, argv, &o);
    int code;
    if (prc != 0) {
        code = prc > 0 ? AGT_EXIT_OK : AGT_EXIT_USAGE;
    } else {
        agt_log_init(o.verbose);
        code = execute(&o);
    }
    json_decref(o.labels);
    return code;
}
