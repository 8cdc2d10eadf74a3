/*
 * cmd_run.c: `gpudiff-agent run`: loads a model and an input, runs every node on one backend
 * with one set of knobs, and writes the run bundle with every layer's output.
 */
#define _GNU_SOURCE /* asprintf */
#include <fnmatch.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "gpudiff/bundle.h"
#include "gpudiff/io.h"
#include "gpudiff/log.h"
#include "gpudiff/noise.h"
#include "gpudiff/session.h"
#include "agent.h"
#include "inputs.h"
#include "model_load.h"
#include "run_opts.h"
#include "upload.h"


/* What the capture callback needs: the writer, and progress reporting. */
struct capture_ctx {
    struct gd_bundle_writer *writer;
    struct gd_noise_collector *noise; /* NULL: no noise probes */
    const struct gd_graph *graph;
    int progress;
    int n_layers;
};

static void
run_usage(FILE *out)
{
    fprintf(out,
            "Usage: gpudiff-agent run --model FILE --input [NAME=]FILE... --out DIR [OPTIONS]\n\n"
            "Runs every node of the model on the input and writes a run bundle to DIR:\n"
            "run.json (what ran, where, with which knobs; one record per layer) and\n"
            "layers/NNNN-name.npy (each node's output). Prints a per-layer summary.\n\n"
            "Required:\n"
            "  --model FILE        the model: an ONNX file (opsets 1 to 21; its layers are\n"
            "                      named by its node names) or the gpudiff JSON graph format,\n"
            "                      told apart by content\n"
            "  --input [NAME=]FILE an input tensor: .npy, .npz, .safetensors or an ONNX\n"
            "                      TensorProto (.pb), told apart by content. Repeat as\n"
            "                      --input NAME=FILE for each input of a model of several\n"
            "                      (NAME as the model names it), or give one .npz whose\n"
            "                      members are named like the inputs. Integer and bool inputs\n"
            "                      (token ids, masks) keep their values.\n"
            "  --out DIR           bundle folder to create (must not exist, see --replace)\n\n"
            "Options:\n"
            "  --input-key NAME    member of an .npz/.safetensors input of a model of one\n"
            "                      input (needed when it has several members)\n"
            "  --backend NAME      cpu (float32, fixed summation order; default), cpu64\n"
            "                      (float64: the reference) or cuda (cuDNN and cuBLASLt, when\n"
            "                      built with CUDA; `gpudiff-agent --version` lists them)\n"
            "  --weights-dir DIR   JSON models: folder weight paths are relative to (default:\n"
            "                      the model's \"weights_dir\", relative to the model file);\n"
            "                      an ONNX model's external data is always relative to it\n"
            "  --model-name NAME   record the run under this model name (run.json's\n"
            "                      model.name; default: the model's own name)\n");
    agt_knob_usage(out, NULL);
    fprintf(out,
            "  --label KEY=VALUE   a label recorded in run.json (repeatable)\n"
            "  --job ID, --lease ID  the job and lease the run is made for, recorded as\n"
            "                      run.json's \"job\" (`gpudiff-agent serve` passes them)\n"
            "  --env-label KEY=VALUE  an operator-given fact about the device, recorded in\n"
            "                      run.json's env.labels (repeatable; serve --label passes\n"
            "                      them); gpudiffd's device key includes them, so hosts of one\n"
            "                      backend told apart by labels are separate devices\n"
            "  --replace           replace DIR if it exists (only once the new bundle is\n"
            "                      complete)\n"
            "  --json              print run.json (with the bundle path) instead of the table\n"
            "  --progress          report each layer on stderr as it completes (default when\n"
            "                      stderr is a terminal)\n"
            "  -v, --verbose       debug messages on stderr\n"
            "  -h, --help          this help\n\n"
            "Uploading (the bundle is written first, then uploaded as `push` would; it stays\n"
            "in DIR either way, so a failed upload can be pushed later):\n");
    agt_upload_usage(out);
    fputc('\n', out);
    agt_print_exit_codes(out);
}

int
agt_run_parse(int argc, char **argv, struct agt_run_opts *o)
{
    enum {
        O_INPUT_KEY = 256,
        O_BACKEND,
        O_WEIGHTS_DIR,
        O_LABEL,
        O_REPLACE,
        O_JSON,
        O_PROGRESS,
        O_MODEL_NAME,
        O_JOB,
        O_LEASE,
        O_ENV_LABEL /* jobagt */
    };
    static const struct option own[] = {
        {"model", required_argument, NULL, 'm'},
        {"input", required_argument, NULL, 'i'},
        {"out", required_argument, NULL, 'o'},
        {"input-key", required_argument, NULL, O_INPUT_KEY},
        {"backend", required_argument, NULL, O_BACKEND},
        {"weights-dir", required_argument, NULL, O_WEIGHTS_DIR},
        {"label", required_argument, NULL, O_LABEL},
        {"model-name", required_argument, NULL, O_MODEL_NAME},
        {"job", required_argument, NULL, O_JOB},
        {"lease", required_argument, NULL, O_LEASE},
        {"env-label", required_argument, NULL, O_ENV_LABEL},
        {"replace", no_argument, NULL, O_REPLACE},
        {"json", no_argument, NULL, O_JSON},
        {"progress", no_argument, NULL, O_PROGRESS},
        {"verbose", no_argument, NULL, 'v'},
        {"help", no_argument, NULL, 'h'},
        AGT_UPLOAD_LONGOPTS,
        {NULL, 0, NULL, 0},
    };
    struct option longopts[64];
    if (agt_knob_longopts(own, NULL, longopts, 64) < 0)
        return -1;
    struct gd_err err = {0};
    int c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "m:i:o:vh", longopts, NULL)) != -1) {
        int taken = agt_upload_flag("run", c, optarg, &o->upload);
        if (taken == 0)
            taken = agt_knob_flag("run", c, optarg, &o->knobs);
        if (taken < 0)
            return -1;
        if (taken > 0)
            continue;
        switch (c) {
        case 'm':
            o->model = optarg;
            break;
        case 'i':
            if (agt_input_add("run", o->inputs, &o->n_inputs, optarg) != 0)
                return -1;
            break;
        case 'o':
            o->out = optarg;
            break;
        case O_INPUT_KEY:
            o->input_key = optarg;
            break;
        case O_BACKEND:
            if (agt_backend_check("run", optarg) != 0)
                return -1;
            o->backend = optarg;
            break;
        case O_WEIGHTS_DIR:
            o->weights_dir = optarg;
            break;
        case O_LABEL:
            if (agt_kv_set(o->labels, "run", "--label", optarg) != 0)
                return -1;
            break;
        case O_MODEL_NAME:
            if (optarg[0] == '\0') {
                fprintf(stderr, "gpudiff-agent run: --model-name needs a name\n");
                return -1;
            }
            o->model_name = optarg;
            break;
        case O_JOB:
            o->job_id = optarg;
            break;
        case O_LEASE:
            o->lease_id = optarg;
            break;
        case O_ENV_LABEL:
            if (o->env_labels == NULL)
                o->env_labels = json_object();
            if (agt_kv_set(o->env_labels, "run", "--env-label", optarg) != 0)
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
            run_usage(stdout);
            return 1;
        default:
            fprintf(stderr, "Try `gpudiff-agent run --help`.\n");
            return -1;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "gpudiff-agent run: unexpected argument %s\n", argv[optind]);
        return -1;
    }
    const char *missing = !o->model ? "--model" : !o->n_inputs ? "--input" : !o->out ? "--out"
                                                                               : NULL;
    if (missing != NULL) {
        fprintf(stderr, "gpudiff-agent run: %s is required (see --help)\n", missing);
        return -1;
    }
    if ((o->upload.server != NULL || o->upload.token != NULL) &&
        agt_upload_opts_check(&o->upload, &err) != 0) {
        fprintf(stderr, "gpudiff-agent run: %s\n", err.msg);
        return -1;
    }
    const char *capture = o->knobs.capture;
    if (o->knobs.batch > 0 && capture[0] != '\0' && strcmp(capture, "full") != 0 &&
        strcmp(capture, "none") != 0) {
        fprintf(stderr,
                "gpudiff-agent run: --capture %s needs whole layers; --batch delivers "
                "them in slices (use --capture full with --batch)\n",
                capture);
        return -1;
    }
    return 0;
}

static int
capture_layer(void *user, const struct gd_layer *layer, struct gd_err *err)
{
    struct capture_ctx *cc = user;
    int rc = gd_bundle_writer_layer(cc->writer, cc->graph, layer, err);
    if (rc == 0 && cc->noise != NULL)
        rc = gd_noise_collector_layer(cc->noise, layer, err);
    if (rc == 0 && cc->progress) {
        char shape[96];
        fprintf(stderr, "gpudiff-agent: [%d/%d] %s (%s) %s, %.0f us\n", layer->index + 1,
                cc->n_layers, layer->name, gd_op_name(layer->op),
                gd_shape_format(layer->value->ndim, layer->value->shape, shape, sizeof shape),
                layer->time_us);
    }
    return rc;
}


/*
 * run.json's "folded": the nodes that did not become layers (shape computations and
 * Constants, docs/ONNX.md), each with its outputs' shapes for this run's inputs.
 */
static json_t *
folded_json(const struct gd_graph *g, const struct gd_tensor *const *inputs, struct gd_err *err)
{
    struct gd_shape *in = calloc((size_t)(g->n_inputs ? g->n_inputs : 1), sizeof *in);
    struct gd_shape *shapes = calloc((size_t)(g->n_values ? g->n_values : 1), sizeof *shapes);
    struct gd_params *params = calloc((size_t)(g->n_nodes ? g->n_nodes : 1), sizeof *params);
    json_t *list = NULL;
    if (in == NULL || shapes == NULL || params == NULL) {
        gd_err_set(err, GD_ENOMEM, "out of memory");
        goto done;
    }
    for (int i = 0; i < g->n_inputs; i++) {
        in[i].ndim = inputs[i]->ndim;
        memcpy(in[i].dim, inputs[i]->shape, sizeof in[i].dim);
    }
    if (gd_graph_infer_folds(g, in, inputs, shapes, params, NULL, NULL, err) != 0)
        goto done;
    list = json_array();
    for (int f = 0; f < g->n_folds; f++) {
        const struct gd_fold *fold = &g->folds[f];
        json_t *outs = json_array();
        for (int k = 0; k < fold->n_outputs; k++) {
            const struct gd_shape *sh = &shapes[fold->outputs[k]];
            json_t *dims = json_array();
            for (int d = 0; d < sh->ndim; d++)
                json_array_append_new(dims, json_integer(sh->dim[d]));
            json_array_append_new(outs, json_pack("{s:s, s:s, s:o}", "name",
                                                  g->values[fold->outputs[k]].name, "dtype",
                                                  gd_dtype_name(g->values[fold->outputs[k]].dtype),
                                                  "shape", dims));
        }
        json_array_append_new(list, json_pack("{s:s, s:s, s:b, s:o}", "node", fold->name, "op",
                                              fold->op, "at_load", fold->at_load, "outputs",
                                              outs));
    }
done:
    free(in);
    free(shapes);
    free(params);
    return list;
}

/* run.json's facts about the run, before the writer adds the layers. */
/* run.json's "memory": what the backend held at most (gd_session_memory). */
static json_t *
memory_json(const struct gd_memory *m)
{
    json_t *j = json_object();
    if (m->device_peak >= 0)
        json_object_set_new(j, "device_peak_bytes", json_integer(m->device_peak));
    if (m->host_peak >= 0)
        json_object_set_new(j, "host_tensors_peak_bytes", json_integer(m->host_peak));
    json_object_set_new(j, "capture_buffer_bytes", json_integer(m->capture_buffer));
    return j;
}

static json_t *
run_meta(const struct agt_run_opts *o, const struct gd_graph *g, json_t *inputs,
         const struct gd_tensor *const *input_tensors, struct gd_session *s, double duration_us,
         struct gd_err *err)
{
    char id[37], now[32];
    if (gd_uuid_v4(id, err) != 0)
        return NULL;
    agt_utc_now(now, sizeof now);
    json_t *env = json_object();
    const struct gd_env *e = gd_session_env(s);
    for (int i = 0; i < e->n; i++)
        json_object_set_new(env, e->items[i].key, json_string(e->items[i].value));
    if (o->env_labels != NULL) /* jobagt: serve --label, part of the daemon's device key */
        json_object_set(env, "labels", o->env_labels);
    json_t *folded = folded_json(g, input_tensors, err);
    if (folded == NULL) {
        json_decref(env);
        return NULL;
    }
    /* "input" is the first input's record, as before models had several; "inputs" all. */
    json_t *first = json_deep_copy(json_array_get(inputs, 0));
    json_object_del(first, "name");
    /* The graph outputs, by the names of the layers that hold them. */
    json_t *outputs = json_array();
    for (int k = 0; k < g->n_outputs; k++)
        json_array_append_new(outputs, json_string(g->values[g->outputs[k]].name));
    json_t *meta = json_pack("{s:s, s:s, s:{s:s, s:s, s:s}, s:o, s:O, s:o, s:s, s:o, s:o, s:o, "
                             "s:f, s:o}",
                             "id", id, "created_at", now, "model", "name",
                             o->model_name ? o->model_name : g->name, "sha256", g->sha256, "file",
                             o->model, "input", first, "inputs", inputs, "outputs", outputs,
                             "backend", gd_session_backend(s), "env", env, "knobs",
                             gd_knobs_json(&o->knobs, o->backend, gd_session_env(s)), "labels",
                             json_incref(o->labels), "duration_us", duration_us, "folded", folded);
    struct gd_memory mem;
    if (meta != NULL && gd_session_memory(s, &mem, NULL) == 0) {
        json_t *m = memory_json(&mem);
        json_object_set_new(m, "capture_limit_bytes", json_integer(o->knobs.host_memory));
        json_object_set_new(meta, "memory", m);
    }
    /* fp: what was captured, and how to compute the same layers again (fetch-layers) */
    if (meta != NULL) {
        json_object_set_new(meta, "capture",
                            json_string(o->knobs.capture[0] ? o->knobs.capture : "full"));
        json_object_set_new(meta, "rerun", agt_run_rerun_json(o));
    }
    /* jobagt: the job and lease this run was made for (serve) */
    if (meta != NULL && (o->job_id != NULL || o->lease_id != NULL))
        json_object_set_new(meta, "job", json_pack("{s:s?, s:s?}", "id", o->job_id, "lease",
                                                   o->lease_id));
    return meta;
}

/* Each layer's noise probe into its run.json record, and run.json's "noise_probes": how
 * many layers were probed, in how long, and why the others were not. Prints the summary. */
static int
record_noise(struct gd_bundle_writer *w, const struct gd_noise_collector *noise, json_t *meta)
{
    for (int i = 0; i < gd_bundle_writer_count(w); i++) {
        const char *name = gd_bundle_writer_layer_name(w, i);
        const struct gd_noise_probe *p = name ? gd_noise_collector_get(noise, name) : NULL;
        if (p != NULL &&
            gd_bundle_writer_layer_note(w, i, "noise", gd_noise_probe_to_json(p), NULL) != 0)
            return -1;
    }
    const char *why = NULL;
    int skipped = gd_noise_collector_skipped(noise, &why);
    json_t *summary = json_pack("{s:i, s:i, s:f}", "layers", gd_noise_collector_count(noise),
                                "skipped", skipped, "seconds", gd_noise_collector_seconds(noise));
    if (summary == NULL || (why != NULL && json_object_set_new(summary, "first_skipped",
                                                               json_string(why)) != 0) ||
        json_object_set_new(meta, "noise_probes", summary) != 0)
        return -1;
    gd_log(GD_LOG_INFO, "noise probes: %d layers in %.2f s%s%s%s", gd_noise_collector_count(noise),
           gd_noise_collector_seconds(noise), skipped ? "; not probed: " : "",
           skipped ? why : "", skipped > 1 ? ", ..." : "");
    return 0;
}

int
agt_run_execute(struct agt_run_opts *o)
{
    struct gd_err err = {0};
    struct agt_model m = {0};
    struct gd_session *s = NULL;
    struct gd_bundle_writer *w = NULL;
    struct gd_noise_collector *noise = NULL;
    json_t *meta = NULL;
    int code = AGT_EXIT_OK;

    struct agt_model_req req = {.model = o->model, .weights_dir = o->weights_dir,
                                .inputs = o->inputs, .n_inputs = o->n_inputs,
                                .input_key = o->input_key, .dtype = o->knobs.dtype};
    if (agt_model_load(&req, &m, &err) != 0) {
        code = agt_fail(&err, AGT_PHASE_LOAD);
        goto done;
    }
    struct gd_graph *g = m.g;
    struct gd_tensor **inputs = m.inputs;
    json_t *records = m.records;
    if (o->knobs.host_memory == 0) {
        const char *mb = getenv("GPUDIFF_CUDA_PINNED_MB");
        int64_t mib = mb != NULL && atol(mb) > 0 ? atol(mb) : 1024;
        o->knobs.host_memory = mib << 20;
    }
    /* --dtype float32 of a float32 model (the loader checked it is one) casts nothing: it
     * is recorded as the model's own dtype, so it has one record */
    if (strcmp(o->knobs.dtype, "float32") == 0)
        o->knobs.dtype[0] = '\0';
    if ((s = gd_session_new(g, o->backend ? o->backend : "cpu", &o->knobs, &err)) == NULL) {
        code = agt_fail(&err, AGT_PHASE_LOAD);
        goto done;
    }
    const char *capture = o->knobs.capture[0] ? o->knobs.capture : NULL;
    int none = capture != NULL && strcmp(capture, "none") == 0;
    /* a fingerprint-only capture brings no tensor to the host: nothing to probe, and the
     * weights can go */
    int tensors = !none && (capture == NULL || strcmp(capture, "fingerprint") != 0);
    if (o->knobs.noise_probe != 0 && tensors) { /* on, or unset: its default */
        /* the probes read the weights of the layers they compute again: they stay */
        struct gd_noise_opts nopts;
        gd_noise_opts_init(&nopts);
        nopts.threads = o->knobs.threads;
        if (gd_noise_collector_new(g, (const struct gd_tensor *const *)inputs, &nopts, &noise,
                                   &err) != 0) {
            code = agt_fail(&err, AGT_PHASE_LOAD);
            goto done;
        }
    } else {
        /* the backend holds its own copy of the weights now: the host's can go */
        int64_t freed = gd_graph_release_weights(g, (size_t)64 << 10);
        gd_log(GD_LOG_DEBUG, "released %.1f MiB of weights from host memory",
               (double)freed / (1 << 20));
    }
    if (gd_bundle_writer_new(o->out, o->replace, &w, &err) != 0) {
        code = agt_fail(&err, AGT_PHASE_WRITE);
        goto done;
    }
    int n_layers = 0;
    for (int i = 0; i < g->n_nodes; i++)
        n_layers += g->nodes[i].n_outputs;
    struct capture_ctx cc = {.writer = w, .noise = noise, .graph = g, .progress = o->progress,
                             .n_layers = n_layers};
    /* fp: fingerprints of every layer, tensors as --capture says */
    struct gd_capture_sel sel;
    unsigned char *only = NULL;
    int sel_rc = agt_run_capture_sel(capture, g, o->knobs.batch, &sel, &only, &err);
    /* fetch-layers: the nodes after the last layer asked for are not run */
    for (int i = 0; sel_rc == 0 && o->stop_after_selected && i < sel.n_only; i++)
        if (sel.only[i])
            sel.last_layer = i;
    if (sel_rc != 0 || gd_session_set_capture(s, &sel, &err) != 0) {
        free(only);
        code = agt_fail(&err, AGT_PHASE_LOAD);
        goto done;
    }
    free(only);
    if (o->stop_after_selected && sel.only != NULL)
        gd_log(GD_LOG_DEBUG, "the run stops after layer %d, the last asked for",
               sel.last_layer);
    gd_bundle_writer_set_fingerprints(w, 1);
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    if (gd_session_run(s, g->n_inputs, (const struct gd_tensor *const *)inputs,
                       none ? NULL : capture_layer, &cc, &err) != 0) {
        code = agt_fail(&err, err.code == GD_EIO ? AGT_PHASE_WRITE : AGT_PHASE_RUN);
        goto done;
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double duration = (double)(t1.tv_sec - t0.tv_sec) * 1e6 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e3;
    struct gd_memory mem;
    if (gd_session_memory(s, &mem, NULL) == 0 && mem.device_peak >= 0)
        fprintf(stderr, "gpudiff-agent: peak device memory %.3f GiB (the session's tensors, "
                "weights included); capture buffer %.0f MiB of pinned host memory\n",
                (double)mem.device_peak / (1 << 30), (double)mem.capture_buffer / (1 << 20));
    meta = run_meta(o, g, records, (const struct gd_tensor *const *)inputs, s, duration, &err);
    if (meta == NULL || (noise != NULL && record_noise(w, noise, meta) != 0)) {
        if (meta != NULL)
            gd_err_set(&err, GD_ENOMEM, "out of memory");
        code = agt_fail(&err, AGT_PHASE_WRITE);
        goto done;
    }
    if (agt_bundle_commit(w, meta, o->out, o->json, &err) != 0) {
        code = agt_fail(&err, AGT_PHASE_WRITE);
        goto done;
    }
    if (o->upload.server != NULL) {
        o->upload.who = "run";
        o->upload.progress = o->progress;
        code = agt_upload_bundle(o->out, &o->upload, NULL, &err);
        if (code != AGT_EXIT_OK)
            fprintf(stderr, "gpudiff-agent run: %s\ngpudiff-agent run: the bundle is in %s; "
                            "`gpudiff-agent push %s --server %s` uploads it later\n",
                    err.msg, o->out, o->out, o->upload.server);
    }
done:
    json_decref(meta);
    gd_noise_collector_free(noise);
    gd_bundle_writer_free(w);
    gd_session_free(s);
    agt_model_fini(&m);
    return code;
}

void
agt_run_opts_init(struct agt_run_opts *o)
{
    memset(o, 0, sizeof *o);
    gd_knobs_init(&o->knobs);
    agt_upload_opts_init(&o->upload);
    o->labels = json_object();
    o->progress = isatty(STDERR_FILENO);
}

void
agt_run_opts_fini(struct agt_run_opts *o)
{
    json_decref(o->labels);
    json_decref(o->env_labels);
    o->labels = o->env_labels = NULL;
}

int
agt_cmd_run(int argc, char **argv)
{
    struct agt_run_opts o;
    agt_run_opts_init(&o);
    int prc = agt_run_parse(argc, argv, &o);
    int code;
    if (prc != 0) {
        code = prc > 0 ? AGT_EXIT_OK : AGT_EXIT_USAGE;
    } else {
        agt_log_init(o.verbose);
        code = agt_run_execute(&o);
    }
    agt_run_opts_fini(&o);
    return code;
}

/* ---- fp: capture selection and the re-run record ---- */

static void
arg_add(json_t *args, const char *flag, const char *value)
{
    json_array_append_new(args, json_string(flag));
    if (value != NULL)
        json_array_append_new(args, json_string(value));
}

static json_t *
abs_path(const char *path)
{
    char buf[PATH_MAX];
    return json_string(realpath(path, buf) != NULL ? buf : path);
}

json_t *
agt_run_rerun_json(const struct agt_run_opts *o)
{
    json_t *args = json_array();
    json_array_append_new(args, json_string("--model"));
    json_array_append_new(args, abs_path(o->model));
    for (int i = 0; i < o->n_inputs; i++) {
        const char *eq = strchr(o->inputs[i], '=');
        json_array_append_new(args, json_string("--input"));
        if (eq != NULL) {
            json_t *p = abs_path(eq + 1);
            char *v = NULL;
            if (asprintf(&v, "%.*s=%s", (int)(eq - o->inputs[i]), o->inputs[i],
                         json_string_value(p)) < 0)
                v = NULL;
            json_array_append_new(args, json_string(v ? v : o->inputs[i]));
            free(v);
            json_decref(p);
        } else {
            json_array_append_new(args, abs_path(o->inputs[i]));
        }
    }
    if (o->input_key != NULL)
        arg_add(args, "--input-key", o->input_key);
    if (o->weights_dir != NULL) {
        json_array_append_new(args, json_string("--weights-dir"));
        json_array_append_new(args, abs_path(o->weights_dir));
    }
    arg_add(args, "--backend", o->backend ? o->backend : "cpu");
    /* every knob that was set, in knobs.def's spelling (a re-run with the others unset gets
     * the same defaults); fetch-layers puts a --capture of its own in place of this one's */
    for (int k = 0; k < GD_KNOB_COUNT; k++) {
        if (!gd_knob_is_set(&o->knobs, (enum gd_knob)k))
            continue;
        char flag[64], value[1100];
        gd_knob_flag((enum gd_knob)k, flag, sizeof flag);
        gd_knob_format(&o->knobs, (enum gd_knob)k, value, sizeof value);
        arg_add(args, flag, value);
    }
    return json_pack("{s:o}", "args", args);
}

/* 1 when name matches one of the comma-separated globs. */
static int
pattern_match(const char *patterns, const char *name)
{
    char buf[1024];
    snprintf(buf, sizeof buf, "%s", patterns);
    char *save = NULL;
    for (char *p = strtok_r(buf, ",", &save); p != NULL; p = strtok_r(NULL, ",", &save))
        if (fnmatch(p, name, 0) == 0)
            return 1;
    return 0;
}

int
agt_run_capture_sel(const char *capture, const struct gd_graph *g, int64_t batch,
                    struct gd_capture_sel *sel, unsigned char **only, struct gd_err *err)
{
    memset(sel, 0, sizeof *sel);
    sel->last_layer = -1;
    *only = NULL;
    if (capture == NULL || strcmp(capture, "full") == 0) {
        /* sliced layers get their fingerprints from their files at commit */
        sel->tensors = 1;
        sel->fingerprints = batch == 0;
        return 0;
    }
    if (strcmp(capture, "none") == 0)
        return 0;
    sel->fingerprints = 1;
    if (strcmp(capture, "fingerprint") == 0)
        return 0;
    const char *pat = capture + 7; /* layers= */
    int n = 0;
    for (int i = 0; i < g->n_nodes; i++)
        n += g->nodes[i].n_outputs;
    unsigned char *o = calloc(n > 0 ? (size_t)n : 1, 1);
    if (o == NULL)
        return gd_err_set(err, GD_ENOMEM, "out of memory");
    int li = 0, hits = 0;
    for (int i = 0; i < g->n_nodes; i++)
        for (int k = 0; k < g->nodes[i].n_outputs; k++, li++)
            if (pattern_match(pat, g->values[g->nodes[i].outputs[k]].name)) {
                o[li] = 1;
                hits++;
            }
    if (hits == 0) {
        free(o);
        return gd_err_set(err, GD_EINVAL, "--capture layers=%s: no layer name matches", pat);
    }
    sel->only = o;
    sel->n_only = n;
    *only = o;
    return 0;
}
