/*
 * cmd_bundle.c: `gpudiff-agent bundle`: makes a run bundle from arrays another framework dumped
 * (a folder of .npy files, an .npz or a safetensors file; one array per layer), so PyTorch,
 * Paddle or TensorFlow runs can be compared with engine runs and pushed to the daemon.
 */
#include <ctype.h>
#include <dirent.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "gpudiff/bundle.h"
#include "gpudiff/io.h"
#include "gpudiff/session.h"
#include "agent.h"

#define MAX_LAYERS 4096

struct bundle_opts {
    const char *from;
    const char *out;
    const char *layers;          /* comma list: order and subset */
    const char *backend;
    const char *model;
    const char *map; /* --map FILE: each layer's op and reduction length, in order */
    int replace;
    int json;
    json_t *env, *labels, *ops; /* KEY=VALUE collections */
};

/* What a layer's record says beside its data: from --op or --map. */
struct layer_facts {
    const char *op_given; /* as given (Linear, Gemm); NULL none */
    enum gd_op op;
    int64_t reduction_len; /* 0 not given */
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
            "  --out DIR          bundle folder to create (missing parents are made)\n\n"
            "Options:\n"
            "  --layers A,B,...   which arrays, in network order (default: the --map file's\n"
            "                     order, an archive's members in stored order, a folder's\n"
            "                     files in natural order: digit runs as numbers, features.2\n"
            "                     before features.10, said on stderr)\n"
            "  --backend NAME     what produced them, e.g. pytorch-cuda (default: import)\n"
            "  --model NAME       the model's name, to group runs (default: unknown)\n"
            "  --op LAYER=OP      the op of a layer, a framework's name (Linear, Conv2d,\n"
            "                     LayerNorm, GELU, ...) or ONNX's (Gemm, Floor, ...), so\n"
            "                     comparisons know its rounding and whether it is\n"
            "                     discontinuous (repeatable; LAYER must be one of the arrays)\n"
            "  --map FILE         a JSON list of the layers in network order, each\n"
            "                     {\"name\", \"op\", \"reduction_len\"} (op and reduction_len\n"
            "                     optional: the terms each output element sums, e.g. a\n"
            "                     Linear's in_features): the order, ops and lengths at once\n"
            "  --env KEY=VALUE    a fact about where it ran: gpu_name, cudnn, ... (repeatable)\n"
            "  --label KEY=VALUE  a label (repeatable)\n"
            "  --replace          replace DIR if it exists\n"
            "  --json             print run.json instead of the table\n"
            "  -h, --help         this help\n\n"
            "Op names --op and --map take:\n");
    agt_framework_op_names(out);
    fputc('\n', out);
    agt_print_exit_codes(out);
}

/* Natural order: runs of digits compare as numbers (features.2 before features.10), the rest
 * byte by byte; equal numbers of more leading zeros first, so the order is total. */
static int
natural_cmp(const char *a, const char *b)
{
    while (*a != '\0' && *b != '\0') {
        if (isdigit((unsigned char)*a) && isdigit((unsigned char)*b)) {
            const char *za = a, *zb = b;
            while (*a == '0')
                a++;
            while (*b == '0')
                b++;
            size_t la = strspn(a, "0123456789"), lb = strspn(b, "0123456789");
            if (la != lb)
                return la < lb ? -1 : 1;
            int c = strncmp(a, b, la);
            if (c != 0)
                return c;
            if (a - za != b - zb)
                return a - za > b - zb ? -1 : 1;
            a += la;
            b += lb;
            continue;
        }
        if (*a != *b)
            return (unsigned char)*a < (unsigned char)*b ? -1 : 1;
        a++;
        b++;
    }
    return *a == *b ? 0 : *a == '\0' ? -1 : 1;
}

static int
name_cmp(const void *a, const void *b)
{
    return natural_cmp(*(char *const *)a, *(char *const *)b);
}

/* The arrays the source holds: an archive's members in stored order, a folder's .npy files
 * in natural order (*sorted set). Returns the count or -1. */
static int
list_arrays(const struct bundle_opts *o, struct gd_npz *npz, struct gd_safetensors *st,
            char **names, int *sorted, struct gd_err *err)
{
    int n = 0;
    *sorted = 0;
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
    *sorted = 1;
    return n;
}

static int
find_name(char *const *names, int n, const char *name)
{
    for (int i = 0; i < n; i++)
        if (strcmp(names[i], name) == 0)
            return i;
    return -1;
}

/* "a, b, c ... (N in all)" of names, for messages. */
static void
names_text(char *const *names, int n, char *out, size_t size)
{
    size_t used = 0;
    out[0] = '\0';
    for (int i = 0; i < n; i++) {
        if (i == 6 && n > 8) {
            snprintf(out + used, size - used, ", ... %s (%d in all)", names[n - 1], n);
            return;
        }
        int w = snprintf(out + used, size - used, "%s%s", i ? ", " : "", names[i]);
        if (w < 0 || (size_t)w >= size - used)
            return;
        used += (size_t)w;
    }
}

/* An op name as --op and --map take it; -1 after printing the names there are. */
static int
op_of(const char *where, const char *layer, const char *name, enum gd_op *op)
{
    if (agt_framework_op(name, op) == 0)
        return 0;
    fprintf(stderr, "gpudiff-agent bundle: %s %s=%s: no such op; the names are:\n", where, layer,
            name);
    agt_framework_op_names(stderr);
    return -1;
}

/*
 * --map FILE: a JSON list (or {"layers": list}) of {"name", "op", "reduction_len"}: the
 * layer order into names, the facts into facts. Returns the count, -1 after printing why.
 */
static int
read_map(const char *path, char **names, struct layer_facts *facts, json_t **owner)
{
    json_error_t jerr;
    json_t *root = json_load_file(path, JSON_REJECT_DUPLICATES, &jerr);
    json_t *list = json_is_object(root) ? json_object_get(root, "layers") : root;
    if (!json_is_array(list)) {
        fprintf(stderr, "gpudiff-agent bundle: --map %s: %s\n", path,
                root == NULL ? jerr.text : "not a JSON list of layers (or {\"layers\": [...]})");
        json_decref(root);
        return -1;
    }
    int n = 0;
    size_t i;
    json_t *e;
    json_array_foreach(list, i, e)
    {
        const char *name = json_string_value(json_object_get(e, "name"));
        json_t *op = json_object_get(e, "op"), *len = json_object_get(e, "reduction_len");
        const char *why = !json_is_object(e)                  ? "not an object"
                          : name == NULL || name[0] == '\0'   ? "no \"name\""
                          : op != NULL && !json_is_string(op) ? "\"op\" is no string"
                          : len != NULL && !(json_is_integer(len) && json_integer_value(len) > 0)
                              ? "\"reduction_len\" is not a positive integer"
                          : n == MAX_LAYERS ? "more layers than a bundle takes"
                                            : NULL;
        if (why == NULL && find_name(names, n, name) >= 0)
            why = "a layer named twice";
        if (why != NULL) {
            fprintf(stderr, "gpudiff-agent bundle: --map %s: entry %zu: %s\n", path, i, why);
            json_decref(root);
            return -1;
        }
        memset(&facts[n], 0, sizeof facts[n]);
        if (op != NULL && op_of("--map", name, json_string_value(op), &facts[n].op) != 0) {
            json_decref(root);
            return -1;
        }
        facts[n].op_given = op != NULL ? json_string_value(op) : NULL;
        facts[n].reduction_len = len != NULL ? json_integer_value(len) : 0;
        names[n++] = strdup(name);
    }
    *owner = root; /* facts' op names point into it */
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
    static char *names[MAX_LAYERS], *arrays[MAX_LAYERS];
    static struct layer_facts facts[MAX_LAYERS];
    int n = 0, n_arrays = 0, sorted = 0, code = AGT_EXIT_OK;
    json_t *meta = NULL, *map = NULL;
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
    n_arrays = list_arrays(o, npz, st, arrays, &sorted, &err);
    if (n_arrays <= 0) {
        if (n_arrays == 0)
            gd_err_set(&err, GD_ENOENT, "%s holds no arrays", o->from);
        code = agt_fail(&err, AGT_PHASE_LOAD);
        n_arrays = 0;
        goto done;
    }
    /* the order: --layers, the map's, or the source's */
    char list[1024];
    memset(facts, 0, sizeof facts);
    if (o->map != NULL) {
        n = read_map(o->map, names, facts, &map);
        if (n < 0) {
            n = 0;
            code = AGT_EXIT_INPUT;
            goto done;
        }
    } else if (o->layers != NULL) {
        char *copy = strdup(o->layers), *save = NULL;
        for (char *tok = strtok_r(copy, ",", &save); tok && n < MAX_LAYERS;
             tok = strtok_r(NULL, ",", &save))
            names[n++] = strdup(tok);
        free(copy);
    } else {
        for (; n < n_arrays; n++)
            names[n] = strdup(arrays[n]);
        if (sorted && n > 1) {
            names_text(names, n, list, sizeof list);
            fprintf(stderr,
                    "gpudiff-agent bundle: warning: %s's %d .npy files are taken in "
                    "natural order (digits as numbers): %s; give --layers or --map if "
                    "that is not the network's order\n",
                    o->from, n, list);
        }
    }
    for (int i = 0; i < n; i++)
        if (find_name(arrays, n_arrays, names[i]) < 0) {
            names_text(arrays, n_arrays, list, sizeof list);
            fprintf(stderr, "gpudiff-agent bundle: %s: %s holds no array %s (it holds: %s)\n",
                    o->map ? "--map" : "--layers", o->from, names[i], list);
            code = AGT_EXIT_INPUT;
            goto done;
        }
    /* --op: the layer must be one of them, the op one of the names there are */
    const char *key;
    json_t *v;
    json_object_foreach(o->ops, key, v)
    {
        int i = find_name(names, n, key);
        if (i < 0) {
            names_text(names, n, list, sizeof list);
            fprintf(stderr, "gpudiff-agent bundle: --op %s=%s: no layer %s (the layers: %s)\n", key,
                    json_string_value(v), key, list);
            code = AGT_EXIT_USAGE;
            goto done;
        }
        if (op_of("--op", key, json_string_value(v), &facts[i].op) != 0) {
            code = AGT_EXIT_USAGE;
            goto done;
        }
        facts[i].op_given = json_string_value(v);
    }
    int n_ops = 0;
    for (int i = 0; i < n; i++)
        n_ops += facts[i].op_given != NULL;
    if (n_ops == 0)
        fprintf(stderr, "gpudiff-agent bundle: no layer has an op: comparisons will call every "
                        "layer unknown (no rounding bound); give --op LAYER=OP (Linear, Conv2d, "
                        "LayerNorm, GELU, ... or ONNX's names) or --map FILE\n");
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
        int has_op = facts[i].op_given != NULL;
        struct gd_layer layer = {
            .index = i,
            .node_index = -1,
            .name = names[i],
            .node_name = has_op ? names[i] : NULL,
            .op = has_op ? facts[i].op : GD_OP_IDENTITY,
            .value = t,
            .batch_offset = 0,
            .batch_total = t->ndim > 0 ? t->shape[0] : 1,
            .time_us = -1,
            .reduction_len = facts[i].reduction_len,
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
    json_decref(map);
    gd_bundle_writer_free(w);
    gd_npz_close(npz);
    gd_safetensors_close(st);
    for (int i = 0; i < n; i++)
        free(names[i]);
    for (int i = 0; i < n_arrays; i++)
        free(arrays[i]);
    return code;
}

int
agt_cmd_bundle(int argc, char **argv)
{
    enum {
        O_FROM = 256,
        O_OUT,
        O_LAYERS,
        O_BACKEND,
        O_MODEL,
        O_OP,
        O_ENV,
        O_LABEL,
        O_REPLACE,
        O_JSON,
        O_MAP
    };
    static const struct option longopts[] = {
        {"from", required_argument, NULL, O_FROM},
        {"out", required_argument, NULL, O_OUT},
        {"layers", required_argument, NULL, O_LAYERS},
        {"backend", required_argument, NULL, O_BACKEND},
        {"model", required_argument, NULL, O_MODEL},
        {"op", required_argument, NULL, O_OP},
        {"env", required_argument, NULL, O_ENV},
        {"label", required_argument, NULL, O_LABEL},
        {"replace", no_argument, NULL, O_REPLACE},
        {"json", no_argument, NULL, O_JSON},
        {"map", required_argument, NULL, O_MAP},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
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
        case O_MAP:
            o.map = optarg;
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
    } else if (code == AGT_EXIT_OK && o.map != NULL && o.layers != NULL) {
        fprintf(stderr, "gpudiff-agent bundle: --map gives the layers' order: leave --layers "
                        "out\n");
        code = AGT_EXIT_USAGE;
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
