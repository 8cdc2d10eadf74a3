/*
 * bundle.c: `gpudiff-agent bundle`: makes a run bundle from arrays another framework dumped
 * (a folder of .npy files, an .npz or a safetensors file; one array per layer), so PyTorch,
 * Paddle or TensorFlow runs can be compared with engine runs and pushed to the daemon.
 */
#define _GNU_SOURCE /* strverscmp: natural order of layer file names */
#include <dirent.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "gpudiff/bundle.h"
#include "gpudiff/io.h"
#include "gpudiff/run.h"
#include "agent.h"

#define MAX_LAYERS 4096

struct bundle_opts {
    const char *from;
    const char *out;
    const char *layers;          /* comma list: order and subset */
    const char *backend;
    const char *model;
    int replace;
    int json;
    json_t *env, *labels, *ops; /* KEY=VALUE collections */
};

static void
bundle_usage(FILE *out)
{
    fprintf(out,
            "Usage: gpudiff-agent bundle --from PATH --out DIR [OPTIONS]\n\n"
            "Makes a run bundle from arrays dumped by another framework (e.g. PyTorch forward\n"
            "hooks saving each module's output with numpy.save): PATH is a folder of .npy\n"
            "files (one per layer, named after it), an .npz or a .safetensors file. Layers\n"
            "are matched by name when compared, so name the arrays as the engine's model\n"
            "names its layers.\n\n"
            "Required:\n"
            "  --from PATH        folder of .npy files, .npz or .safetensors\n"
            "  --out DIR          bundle folder to create\n\n"
            "Options:\n"
            "  --layers A,B,...   which arrays, in network order (default: a folder's files\n"
            "                     in name order, an archive's members in stored order)\n"
            "  --backend NAME     what produced them, e.g. pytorch-cuda (default: import)\n"
            "  --model NAME       the model's name, to group runs (default: unknown)\n"
            "  --op LAYER=OP      the ONNX op of a layer (Gemm, Floor, ...), so comparisons\n"
            "                     know its rounding and whether it is discontinuous (repeatable)\n"
            "  --env KEY=VALUE    a fact about where it ran: gpu_name, cudnn, ... (repeatable)\n"
            "  --label KEY=VALUE  a label (repeatable)\n"
            "  --replace          replace DIR if it exists\n"
            "  --json             print run.json instead of the table\n"
            "  -h, --help         this help\n\n");
    agt_print_exit_codes(out);
}

static int
name_cmp(const void *a, const void *b)
{
    return strverscmp(*(char *const *)a, *(char *const *)b);
}

/* The layer names and where each comes from; returns the count or -1. */
static int
list_layers(const struct bundle_opts *o, int is_dir, struct gd_npz *npz,
            struct gd_safetensors *st, char **names, struct gd_err *err)
{
    int n = 0;
    if (o->layers != NULL) {
        char *copy = strdup(o->layers), *save = NULL;
        for (char *tok = strtok_r(copy, ",", &save); tok && n < MAX_LAYERS;
             tok = strtok_r(NULL, ",", &save))
            names[n++] = strdup(tok);
        free(copy);
        return n;
    }
    if (npz != NULL) {
        for (int i = 0; i < gd_npz_count(npz) && n < MAX_LAYERS; i++)
            names[n++] = strdup(gd_npz_name(npz, i));
        return n;
    }
    if (st != NULL) {
        for (int i = 0; i < gd_safetensors_count(st) && n < MAX_LAYERS; i++)
            names[n++] = strdup(gd_safetensors_name(st, i));
        return n;
    }
    (void)is_dir;
    DIR *d = opendir(o->from);
    if (d == NULL) {
        gd_err_set(err, GD_ENOENT, "%s: cannot open the folder", o->from);
        return -1;
    }
    struct dirent *e;
    while ((e = readdir(d)) != NULL && n < MAX_LAYERS) {
        size_t len = strlen(e->d_name);
        if (len > 4 && strcmp(e->d_name + len - 4, ".npy") == 0 && e->d_name[0] != '.')
            names[n++] = strndup(e->d_name, len - 4);
    }
    closedir(d);
    qsort(names, (size_t)n, sizeof *names, name_cmp);
    return n;
}

static int
load_one(const struct bundle_opts *o, struct gd_npz *npz, struct gd_safetensors *st,
         const char *name, struct gd_tensor **out, struct gd_err *err)
{
    if (npz != NULL)
        return gd_npz_load(npz, name, out, err);
    if (st != NULL)
        return gd_safetensors_load(st, name, out, err);
    char path[4096];
    snprintf(path, sizeof path, "%s/%s.npy", o->from, name);
    return gd_npy_load(path, out, err);
}

static int
make(struct bundle_opts *o)
{
    struct gd_err err = {0};
    struct gd_npz *npz = NULL;
    struct gd_safetensors *st = NULL;
    struct gd_bundle_writer *w = NULL;
    char *names[MAX_LAYERS];
    int n = 0, code = AGT_EXIT_OK;
    json_t *meta = NULL;
    struct stat sb;
    if (stat(o->from, &sb) != 0) {
        fprintf(stderr, "gpudiff-agent bundle: %s: no such file or folder\n", o->from);
        return AGT_EXIT_INPUT;
    }
    int is_dir = S_ISDIR(sb.st_mode);
    if (!is_dir && gd_npz_open(o->from, &npz, &err) != 0) {
        struct gd_err err2 = {0};
        if (gd_safetensors_open(o->from, &st, &err2) != 0) {
            fprintf(stderr, "gpudiff-agent bundle: %s is not a folder, an .npz or a "
                            "safetensors file (%s)\n", o->from, err.msg);
            return AGT_EXIT_INPUT;
        }
    }
    n = list_layers(o, is_dir, npz, st, names, &err);
    if (n <= 0) {
        if (n == 0)
            gd_err_set(&err, GD_ENOENT, "%s holds no arrays", o->from);
        code = agt_fail(&err, AGT_PHASE_LOAD);
        n = 0;
        goto done;
    }
    if (gd_bundle_writer_new(o->out, o->replace, &w, &err) != 0) {
        code = agt_fail(&err, AGT_PHASE_WRITE);
        goto done;
    }
    for (int i = 0; i < n; i++) {
        struct gd_tensor *t = NULL;
        if (load_one(o, npz, st, names[i], &t, &err) != 0) {
            code = agt_fail(&err, AGT_PHASE_LOAD);
            goto done;
        }
        const char *op_name = json_string_value(json_object_get(o->ops, names[i]));
        enum gd_op op = GD_OP_IDENTITY;
        if (op_name != NULL && gd_op_from_name(op_name, &op) != 0) {
            gd_err_set(&err, GD_EINVAL, "--op %s=%s: unknown op", names[i], op_name);
            gd_tensor_free(t);
            code = AGT_EXIT_USAGE;
            fprintf(stderr, "gpudiff-agent bundle: %s\n", err.msg);
            goto done;
        }
        struct gd_layer layer = {
            .index = i, .node_index = -1, .name = names[i],
            .node_name = op_name ? names[i] : NULL, .op = op, .value = t,
            .batch_offset = 0, .batch_total = t->ndim > 0 ? t->shape[0] : 1, .time_us = -1,
        };
        int rc = gd_bundle_writer_layer(w, NULL, &layer, &err);
        gd_tensor_free(t);
        if (rc != 0) {
            code = agt_fail(&err, AGT_PHASE_WRITE);
            goto done;
        }
    }
    char id[37], now[32];
    agt_utc_now(now, sizeof now);
    if (gd_uuid_v4(id, &err) != 0) {
        code = agt_fail(&err, AGT_PHASE_WRITE);
        goto done;
    }
    meta = json_pack("{s:s, s:s, s:{s:s, s:n}, s:{s:s}, s:s, s:O, s:{}, s:O}", "id", id,
                     "created_at", now, "model", "name", o->model ? o->model : "unknown",
                     "sha256", "input", "file", o->from, "backend",
                     o->backend ? o->backend : "import", "env", o->env, "knobs", "labels",
                     o->labels);
    if (agt_bundle_commit(w, meta, o->out, o->json, &err) != 0)
        code = agt_fail(&err, AGT_PHASE_WRITE);
done:
    json_decref(meta);
    gd_bundle_writer_free(w);
    gd_npz_close(npz);
    gd_safetensors_close(st);
    for (int i = 0; i < n; i++)
        free(names[i]);
    return code;
}

int
agt_cmd_bundle(int argc, char **argv)
{
    enum { O_FROM = 256, O_OUT, O_LAYERS, O_BACKEND, O_MODEL, O_OP, O_ENV, O_LABEL, O_REPLACE,
           O_JSON };
    static const struct option longopts[] = {
        {"from", required_argument, NULL, O_FROM},     {"out", required_argument, NULL, O_OUT},
        {"layers", required_argument, NULL, O_LAYERS}, {"backend", required_argument, NULL, O_BACKEND},
        {"model", required_argument, NULL, O_MODEL},   {"op", required_argument, NULL, O_OP},
        {"env", required_argument, NULL, O_ENV},       {"label", required_argument, NULL, O_LABEL},
        {"replace", no_argument, NULL, O_REPLACE},     {"json", no_argument, NULL, O_JSON},
        {"help", no_argument, NULL, 'h'},              {NULL, 0, NULL, 0},
    };
    struct bundle_opts o = {0};
    o.env = json_object();
    o.labels = json_object();
    o.ops = json_object();
    int code = AGT_EXIT_OK, c;
    optind = 1;
    while (code == AGT_EXIT_OK && (c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
        switch (c) {
        case O_FROM:
            o.from = optarg;
            break;
        case O_OUT:
            o.out = optarg;
            break;
        case O_LAYERS:
            o.layers = optarg;
            break;
        case O_BACKEND:
            o.backend = optarg;
            break;
        case O_MODEL:
            o.model = optarg;
            break;
        case O_OP:
            code = agt_kv_set(o.ops, "bundle", "--op", optarg) ? AGT_EXIT_USAGE : AGT_EXIT_OK;
            break;
        case O_ENV:
            code = agt_kv_set(o.env, "bundle", "--env", optarg) ? AGT_EXIT_USAGE : AGT_EXIT_OK;
            break;
        case O_LABEL:
            code = agt_kv_set(o.labels, "bundle", "--label", optarg) ? AGT_EXIT_USAGE : AGT_EXIT_OK;
            break;
        case O_REPLACE:
            o.replace = 1;
            break;
        case O_JSON:
            o.json = 1;
            break;
        case 'h':
            bundle_usage(stdout);
            code = -1;
            break;
        default:
            fprintf(stderr, "Try `gpudiff-agent bundle --help`.\n");
            code = AGT_EXIT_USAGE;
        }
    }
    if (code == -1) {
        code = AGT_EXIT_OK;
    } else if (code == AGT_EXIT_OK && (o.from == NULL || o.out == NULL || optind < argc)) {
        fprintf(stderr, "gpudiff-agent bundle: --from and --out are required, and nothing else "
                        "(see --help)\n");
        code = AGT_EXIT_USAGE;
    } else if (code == AGT_EXIT_OK) {
        agt_log_init(0);
        code = make(&o);
    }
    json_decref(o.env);
    json_decref(o.labels);
    json_decref(o.ops);
    return code;
}
