/*
 * session.c: the executor. A session binds a graph to a backend; a run slices the input
 * along dim 0 when knobs.batch asks for it, runs the nodes in order, and hands every node
 * output to the capture callback through the backend (which may copy asynchronously).
 * Values are released after their last reader, so memory follows the live set.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "gpudiff/session.h"
#include "internal.h"

#ifndef GD_BUILD_FLAGS
#define GD_BUILD_FLAGS ""
#endif

struct gd_session {
    struct gd_graph *g;
    const struct gd__backend *be;
    const gd_op_fn *ops;                /* be's op table for these knobs (be->tables) */
    const unsigned char *half_native;   /* and its half-native list */
    void *ctx;
    struct gd_knobs knobs;
    struct gd_env env;
    struct gd_tensor *vals;     /* one per value: backend memory (constants stay resident) */
    struct gd_shape *shapes;    /* per value, for the current slice size */
    struct gd_params *params;   /* per node, for the current slice size */
    int64_t inferred_rows;      /* slice size the shapes are for; -1 none yet */
    int inferred_values;        /* the inference read input values: it is for them only */
    struct gd_shape *inferred_for; /* per graph input: the shapes the inference was for */
    struct gd_tensor **folded;  /* per value: what the folds computed for those shapes */
    int *first_layer;           /* per node: the layer index of its output 0 */
    /* for the run in progress */
    gd_capture_fn capture;
    void *user;
    int64_t batch_offset;
    int64_t batch_total;
    /* gd_session_stage(): the inputs kept in backend memory (n_staged of them, 0 none), read
     * in place while `resident` (gd_session_forward) */
    int n_staged;
    struct gd_tensor *staged;
    struct gd_tensor **staged_host; /* host copies of the staged integer inputs (NULL for
                                     * float ones), whose values the folds may read */
    int resident;
    uint64_t stage_generation;  /* changes with the staged inputs and the batch size */
    /* gd_session_run_end_to_end(): the graph outputs copied back while `fetching` */
    int fetching;
    struct gd_tensor **fetched; /* per graph output, host, every row; NULL until fetched */
    /* fp: what runs capture (gd_session_set_capture); sel.only points at sel_only */
    struct gd_capture_sel sel;
    unsigned char *sel_only;
    int n_layers;
    /*
     * Views (view.c): per value, the value whose allocation its data lies in (itself for the
     * value the allocation was made for), -1 when the session owns none for it (a weight, a
     * staged input, no data); per owner, how many values hold its allocation, and the
     * allocation as made, which is what the backend releases once none holds it.
     */
    int *owner;
    int *holders;
    struct gd_tensor *bufs;
    int views_off;              /* GPUDIFF_VIEWS=0: every node computes its output */
};

const char *
gd_version(void)
{
    return PACKAGE_VERSION;
}

const char *
gd_session_backend(const struct gd_session *s)
{
    return s->be->name;
}

const struct gd_env *
gd_session_env(const struct gd_session *s)
{
    return &s->env;
}

static void
env_common(struct gd_session *s)
{
    char host[256] = "";
    struct utsname u;
    gethostname(host, sizeof host - 1);
    gd_env_set(&s->env, "host", "%s", host);
    if (uname(&u) == 0)
        gd_env_set(&s->env, "os", "%s %s %s", u.sysname, u.release, u.machine);
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (f != NULL) {
        char line[256];
        while (fgets(line, sizeof line, f) != NULL) {
            char *colon = strchr(line, ':');
            if (strncmp(line, "model name", 10) == 0 && colon != NULL) {
                colon[strcspn(colon, "\n")] = '\0';
                gd_env_set(&s->env, "cpu", "%s", colon + 2);
                break;
            }
        }
        fclose(f);
    }
    gd_env_set(&s->env, "backend", "%s", s->be->name);
    gd_env_set(&s->env, "engine_version", "%s", gd_version());
    gd_env_set(&s->env, "compiler", "%s", __VERSION__);
    gd_env_set(&s->env, "build_flags", "%s", GD_BUILD_FLAGS);
}

/* Records that value v holds the allocation just made for it in s->vals[v]. */
static void
own_value(struct gd_session *s, int v)
{
    s->bufs[v] = s->vals[v];
    s->owner[v] = v;
    s->holders[v] = 1;
}

/* Value v lets go of its data; the allocation it lies in is released when no value holds
 * it any more. A weight's or a staged input's memory is not the run's: it is only let go. */
static void
release_value(struct gd_session *s, int v)
{
    int o = s->owner[v];
    s->vals[v].data = NULL;
    s->owner[v] = -1;
    if (o >= 0 && --s->holders[o] == 0)
        s->be->release(s->ctx, &s->bufs[o]);
}

static void
vals_release(struct gd_session *s, int constants_too)
{
    if (s->vals == NULL || s->owner == NULL)
        return;
    for (int v = 0; v < s->g->n_values; v++) {
        if (s->g->values[v].constant == NULL) {
            if (s->vals[v].data != NULL)
                release_value(s, v);
        } else if (constants_too && s->vals[v].data != NULL) {
            s->be->release(s->ctx, &s->vals[v]);
        }
    }
}

static void timing_free(struct gd_session *s);

void
gd_session_free(struct gd_session *s)
{
    if (s == NULL)
        return;
    vals_release(s, 1);
    timing_free(s);
    if (s->ctx != NULL)
        s->be->close(s->ctx);
    for (int v = 0; s->folded != NULL && v < s->g->n_values; v++)
        gd_tensor_free(s->folded[v]);
    free(s->folded);
    free(s->inferred_for);
    free(s->vals);
    free(s->shapes);
    free(s->params);
    free(s->first_layer);
    free(s->sel_only);
    free(s->owner);
    free(s->holders);
    free(s->bufs);
    free(s);
}

/*
 * Copies a host tensor into backend memory as a value of logical dtype `logical` is stored
 * (gd__storage_dtype). A float value whose logical dtype is float16 or bfloat16 is rounded to
 * it once from src (a float32 weight of a model cast with --dtype), then held in the storage
 * dtype: 16 bits where the backend stores halves, exactly in float64 on cpu64.
 */
static int
upload_value(struct gd_session *s, struct gd_tensor *dst, const struct gd_tensor *src,
             enum gd_dtype logical, struct gd_err *err)
{
    int is_float = gd_dtype_is_float(src->dtype);
    enum gd_dtype want = is_float ? gd__storage_dtype(s->be, logical) : src->dtype;
    struct gd_tensor *round = NULL, *cast = NULL;
    int half = logical == GD_F16 || logical == GD_BF16;
    if (is_float && half && src->dtype != logical && want != logical &&
        (round = gd_tensor_cast(src, logical, err)) == NULL)
        return err ? err->code : GD_ENOMEM;
    const struct gd_tensor *from = round ? round : src;
    if (from->dtype != want && (cast = gd_tensor_cast(from, want, err)) == NULL) {
        gd_tensor_free(round);
        return err ? err->code : GD_ENOMEM;
    }
    if (cast != NULL)
        from = cast;
    dst->dtype = from->dtype;
    dst->ndim = from->ndim;
    memcpy(dst->shape, from->shape, sizeof dst->shape);
    int rc = s->be->alloc(s->ctx, dst, err);
    if (rc == 0)
        rc = s->be->upload(s->ctx, dst, from, err);
    gd_tensor_free(cast);
    gd_tensor_free(round);
    return rc;
}

/* Every name in knobs.conv_pins ("NODE=CHOICE,...") must be a convolution of g; the
 * backend checks each CHOICE against its conv API (an id, an engine config). */
static int
check_conv_pins(const struct gd_graph *g, const char *pins, struct gd_err *err)
{
    for (const char *p = pins; *p != '\0';) {
        size_t len = strcspn(p, ","), name_len = 0;
        const char *eq = memchr(p, '=', len);
        if (eq == NULL || eq == p || eq + 1 == p + len)
            return gd_err_set(err, GD_EINVAL, "conv pin %.*s is not NODE=CHOICE", (int)len, p);
        name_len = (size_t)(eq - p);
        int found = 0;
        for (int ni = 0; ni < g->n_nodes && !found; ni++) {
            const struct gd_node *n = &g->nodes[ni];
            if (strlen(n->name) != name_len || strncmp(n->name, p, name_len) != 0)
                continue;
            if (n->op != GD_OP_CONV && n->op != GD_OP_CONV_TRANSPOSE)
                return gd_err_set(err, GD_EINVAL, "conv pin %.*s: node %s is a %s, not a "
                                  "convolution", (int)len, p, n->name, gd_op_name(n->op));
            found = 1;
        }
        if (!found)
            return gd_err_set(err, GD_EINVAL, "conv pin %.*s: the model has no node %.*s",
                              (int)len, p, (int)name_len, p);
        p += len;
        if (*p == ',')
            p++;
    }
    return 0;
}

/*
 * Fails with GD_ENOTSUP naming every op of g that backend be lacks, each with its node count
 * and first node names, so one message says all that a model needs.
 */
static int
missing_ops(const struct gd_graph *g, const struct gd__backend *be, const gd_op_fn *ops,
            struct gd_err *err)
{
    int count[GD_OP_COUNT] = {0}, n_missing = 0, n_ops = 0;
    for (int ni = 0; ni < g->n_nodes; ni++)
        if (ops[g->nodes[ni].op] == NULL) {
            n_ops += count[g->nodes[ni].op]++ == 0;
            n_missing++;
        }
    if (n_missing == 0)
        return 0;
    char msg[sizeof err->msg];
    size_t len = (size_t)snprintf(msg, sizeof msg, "backend %s has no %s", be->name,
                                  n_ops > 1 ? "op of these: " : "");
    for (int op = 0; op < GD_OP_COUNT && len < sizeof msg; op++) {
        if (count[op] == 0)
            continue;
        len += (size_t)snprintf(msg + len, sizeof msg - len, "%s%s (%d node%s: ",
                                msg[len - 1] == ' ' ? "" : "; ", gd_op_name((enum gd_op)op),
                                count[op], count[op] > 1 ? "s" : "");
        for (int ni = 0, shown = 0; ni < g->n_nodes && len < sizeof msg; ni++) {
            if ((int)g->nodes[ni].op != op)
                continue;
            if (shown == 3) {
                len += (size_t)snprintf(msg + len, sizeof msg - len, ", ...");
                break;
            }
            len += (size_t)snprintf(msg + len, sizeof msg - len, "%s%s", shown ? ", " : "",
                                    g->nodes[ni].name);
            shown++;
        }
        if (len < sizeof msg)
            len += (size_t)snprintf(msg + len, sizeof msg - len, ")");
    }
    return gd_err_set(err, GD_ENOTSUP, "%s", msg);
}

/*
 * An input as the model declares it: floats go to the compute dtype, integers and bools to
 * the declared dtype (an int32 file for an int64 input widens; a value that does not fit is
 * GD_ERANGE).
 */
static int
upload_input(struct gd_session *s, struct gd_tensor *dst, const struct gd_tensor *src,
             enum gd_dtype declared, struct gd_err *err)
{
    if (gd_dtype_is_float(src->dtype) || src->dtype == declared)
        return upload_value(s, dst, src, declared, err);
    struct gd_tensor *cast = gd_tensor_cast(src, declared, err);
    if (cast == NULL)
        return err ? err->code : GD_ENOMEM;
    int rc = upload_value(s, dst, cast, declared, err);
    gd_tensor_free(cast);
    return rc;
}

/* A knob that is set for a backend knobs.def does not list for it is refused: a run never
 * ignores what it was asked. */
static int
knobs_check(const char *backend, const struct gd_knobs *knobs, struct gd_err *err)
{
    if (gd_knobs_check(knobs, err) != 0)
        return GD_EINVAL;
    for (int k = 0; k < GD_KNOB_COUNT; k++) {
        const struct gd_knob_info *i = gd_knob_info((enum gd_knob)k);
        if (!gd_knob_is_set(knobs, (enum gd_knob)k) || gd_knob_applies((enum gd_knob)k, backend))
            continue;
        char flag[64];
        gd_knob_flag((enum gd_knob)k, flag, sizeof flag);
        return gd_err_set(err, GD_ENOTSUP, "%s is for the %s backend%s, not %s", flag, i->backends,
                          strchr(i->backends, ' ') ? "s" : "", backend);
    }
    return 0;
}

/* Each node knobs.emulate_nodes names is a GEMM or a convolution of g. */
static int
emulated_nodes_check(const struct gd_graph *g, const struct gd_knobs *knobs, struct gd_err *err)
{
    for (const char *p = knobs->emulate_nodes; *p != '\0';) {
        size_t len = strcspn(p, ",");
        char name[256];
        snprintf(name, sizeof name, "%.*s", (int)len, p);
        int ni = gd_graph_find_node(g, name);
        const struct gd_op_info *info = ni >= 0 ? gd_op_info(g->nodes[ni].op) : NULL;
        if (info == NULL || (info->reduction != GD_RED_GEMM && info->reduction != GD_RED_CONV &&
                             info->reduction != GD_RED_CONVT))
            return gd_err_set(err, GD_EINVAL, "--emulate names %s, which is %s", name,
                              ni < 0 ? "no node of the model"
                                     : "not a GEMM or convolution (only those are emulated)");
        p += len;
        if (*p == ',')
            p++;
    }
    return 0;
}

struct gd_session *
gd_session_new(struct gd_graph *g, const char *backend, const struct gd_knobs *knobs,
               struct gd_err *err)
{
    const struct gd__backend *be = gd__backend_find(backend);
    if (be == NULL) {
        char names[256] = "";
        for (const char *const *n = gd_backend_names(); *n != NULL; n++) {
            strncat(names, names[0] ? ", " : "", sizeof names - strlen(names) - 1);
            strncat(names, *n, sizeof names - strlen(names) - 1);
        }
        gd_err_set(err, GD_ENOENT, "no backend %s in this build (it has: %s)", backend, names);
        return NULL;
    }
    const gd_op_fn *ops = be->ops;
    const unsigned char *half_native = be->half_native;
    if (be->tables != NULL)
        be->tables(knobs, &ops, &half_native);
    if (missing_ops(g, be, ops, err) != 0 || emulated_nodes_check(g, knobs, err) != 0)
        return NULL;
    struct gd_session *s = calloc(1, sizeof *s);
    if (s == NULL) {
        gd_err_set(err, GD_ENOMEM, "out of memory for a session");
        return NULL;
    }
    s->g = g;
    s->be = be;
    s->ops = ops;
    s->half_native = half_native;
    s->knobs = *knobs;
    s->inferred_rows = -1;
    env_common(s);
    s->vals = calloc((size_t)g->n_values, sizeof *s->vals);
    s->shapes = calloc((size_t)g->n_values, sizeof *s->shapes);
    s->params = calloc((size_t)(g->n_nodes ? g->n_nodes : 1), sizeof *s->params);
    s->first_layer = calloc((size_t)(g->n_nodes ? g->n_nodes : 1), sizeof *s->first_layer);
    s->folded = calloc((size_t)(g->n_values ? g->n_values : 1), sizeof *s->folded);
    s->inferred_for = calloc((size_t)(g->n_inputs ? g->n_inputs : 1), sizeof *s->inferred_for);
    size_t n_vals = (size_t)(g->n_values ? g->n_values : 1);
    s->owner = malloc(n_vals * sizeof *s->owner);
    s->holders = calloc(n_vals, sizeof *s->holders);
    s->bufs = calloc(n_vals, sizeof *s->bufs);
    if (s->vals == NULL || s->shapes == NULL || s->params == NULL || s->first_layer == NULL ||
        s->folded == NULL || s->inferred_for == NULL || s->owner == NULL || s->holders == NULL ||
        s->bufs == NULL) {
        gd_err_set(err, GD_ENOMEM, "out of memory for a session");
        goto fail;
    }
    for (size_t v = 0; v < n_vals; v++)
        s->owner[v] = -1;
    const char *views = getenv("GPUDIFF_VIEWS");
    s->views_off = views != NULL && strcmp(views, "0") == 0;
    int layer = 0;
    for (int ni = 0; ni < g->n_nodes; ni++) {
        s->first_layer[ni] = layer;
        layer += g->nodes[ni].n_outputs;
    }
    s->n_layers = layer;
    s->sel = (struct gd_capture_sel){.fingerprints = 0, .tensors = 1, .last_layer = -1};
    if (check_conv_pins(g, knobs->conv_pins, err) != 0 || knobs_check(be->name, knobs, err) != 0 ||
        be->open(&s->knobs, &s->env, &s->ctx, err) != 0)
        goto fail;
    for (int v = 0; v < g->n_values; v++) {
        if (g->values[v].constant == NULL)
            continue;
        if (g->values[v].constant->data == NULL && gd_tensor_nbytes(g->values[v].constant) > 0) {
            gd_err_set(err, GD_EINVAL, "weight %s was released (gd_graph_release_weights)",
                       g->values[v].name);
            goto fail;
        }
        if (upload_value(s, &s->vals[v], g->values[v].constant, g->values[v].dtype, err) != 0) {
            gd_err_prefix(err, "weight %s: ", g->values[v].name);
            goto fail;
        }
    }
    return s;
fail:
    gd_session_free(s);
    return NULL;
}

/* Called by the backend with a host copy of a node output. */
static int
deliver(void *session, const struct gd__capture_req *req, const struct gd_tensor *host,
        struct gd_err *err)
{
    struct gd_session *s = session;
    const struct gd_node *n = &s->g->nodes[req->node_index];
    int v = n->outputs[req->output_slot];
    struct gd_layer layer = {
        .index = s->first_layer[req->node_index] + req->output_slot,
        .node_index = req->node_index,
        .output_slot = req->output_slot,
        .name = s->g->values[v].name,
        .node_name = n->name,
        .op = n->op,
        .value = host,
        .batch_offset = s->batch_offset,
        /* unsliced, a layer's own dim 0 is its whole (an op that mixes rows may change it);
         * a piece's is that of the output it is part of */
        .batch_total = s->knobs.batch > 0    ? s->batch_total
                       : req->piece_ndim > 0 ? req->piece_shape[0]
                       : host->ndim > 0      ? host->shape[0]
                                             : 1,
        .time_us = req->time_us,
        .algo = req->algo ? req->algo : "",
        .math = req->math ? req->math : "",
        .piece_offset = req->piece_offset,
        .piece_ndim = req->piece_ndim,
        .piece_shape = req->piece_shape,
        .fingerprint = req->fp,
    };
    return s->capture(s->user, &layer, err);
}

/* Why node n's rows depend on other rows of its input, for the --batch refusal. */
static const char *
mixing_reason(const struct gd_node *n, const struct gd_params *p)
{
    switch (n->op) {
    case GD_OP_BATCH_NORM:
        return "it normalizes with the batch's own mean and variance (training_mode=1)";
    case GD_OP_TRANSPOSE:
        return "it moves axis 0, the batch";
    case GD_OP_FLATTEN:
        return "it flattens axis 0, the batch, into one row";
    case GD_OP_RESHAPE:
        return "it changes dim 0, the batch";
    case GD_OP_SQUEEZE:
    case GD_OP_UNSQUEEZE:
        return "it removes or inserts an axis before the batch's rows";
    case GD_OP_CONCAT:
        return "it concatenates along axis 0, the batch";
    case GD_OP_PAD:
        return "it pads axis 0, the batch";
    case GD_OP_GEMM:
    case GD_OP_MATMUL:
        return "its product sums over the rows of an input that is not a weight";
    case GD_OP_ARGMAX:
        return "it reduces over axis 0, the batch";
    case GD_OP_LAYER_NORM:
    case GD_OP_MEAN_VARIANCE_NORM:
        return "its mean and variance run over axis 0, the batch";
    default:
        break;
    }
    if (p->n_axes > 0 || gd_op_info(n->op)->reduction == GD_RED_AXIS ||
        gd_op_info(n->op)->reduction == GD_RED_AXES)
        return "it reduces over axis 0, the batch";
    return "its output rows depend on other rows of its input";
}

/*
 * --batch is refused for a graph whose result would depend on the slicing: a node that
 * shape inference marked as mixing rows (gd_params.mixes_batch, at either row count), or a
 * layer whose dim 0 is not the batch's row count, both for the slice (`rows`) and for the
 * whole input (`total`): the second catches a layer whose dim 0 only happens to equal the
 * slice size (a Flatten with axis 0 gives 1 row, which a slice of 1 also has).
 */
static int
check_batchable(const struct gd_session *s, const struct gd_shape *shapes,
                const struct gd_params *params, int64_t rows, int64_t total, struct gd_err *err)
{
    const struct gd_graph *g = s->g;
    for (int ni = 0; ni < g->n_nodes; ni++) {
        const struct gd_node *n = &g->nodes[ni];
        if (params[ni].mixes_batch)
            return gd_err_set(err, GD_ENOTSUP, "--batch cannot slice this model: node %s (%s) "
                              "mixes rows of the batch: %s; run it without --batch",
                              n->name, gd_op_name(n->op), mixing_reason(n, &params[ni]));
        for (int k = 0; k < n->n_outputs; k++) {
            const struct gd_shape *sh = &shapes[n->outputs[k]];
            if (sh->ndim < 1 || sh->dim[0] != rows) {
                char buf[128];
                return gd_err_set(err, GD_ENOTSUP,
                                  "--batch needs dim 0 of every layer to be the batch; node %s "
                                  "(%s) gives %s for %lld of %lld rows",
                                  n->name, gd_op_name(n->op),
                                  gd_shape_format(sh->ndim, sh->dim, buf, sizeof buf),
                                  (long long)rows, (long long)total);
            }
        }
    }
    return 0;
}

/* Infers shapes and params with every input's dim 0 set to rows, into the given arrays (the
 * inputs' values are read where nodes take them as parameters when they are host tensors of
 * those rows). */
static int
infer_at(struct gd_session *s, int n_inputs, const struct gd_tensor *const *inputs, int64_t rows,
         struct gd_shape *shapes, struct gd_params *params, struct gd_err *err)
{
    struct gd_shape in_shapes[n_inputs > 0 ? n_inputs : 1];
    const struct gd_tensor *values[n_inputs > 0 ? n_inputs : 1];
    for (int i = 0; i < n_inputs; i++) {
        memset(&in_shapes[i], 0, sizeof in_shapes[i]);
        in_shapes[i].ndim = inputs[i]->ndim;
        memcpy(in_shapes[i].dim, inputs[i]->shape, sizeof in_shapes[i].dim);
        if (s->knobs.batch > 0)
            in_shapes[i].dim[0] = rows;
        values[i] = !inputs[i]->device && in_shapes[i].dim[0] == inputs[i]->shape[0] ? inputs[i]
                                                                                      : NULL;
    }
    return gd_graph_infer_folds(s->g, in_shapes, values, shapes, params, NULL, NULL, err);
}

/* Infers at the whole input's rows and checks that; 0 when the model is batchable there. */
static int
check_at_total(struct gd_session *s, int n_inputs, const struct gd_tensor *const *inputs,
               int64_t total, struct gd_err *err)
{
    const struct gd_graph *g = s->g;
    struct gd_shape *shapes = calloc((size_t)g->n_values, sizeof *shapes);
    struct gd_params *params = calloc((size_t)(g->n_nodes ? g->n_nodes : 1), sizeof *params);
    int rc = shapes == NULL || params == NULL ? gd_err_set(err, GD_ENOMEM, "out of memory") : 0;
    if (rc == 0)
        rc = infer_at(s, n_inputs, inputs, total, shapes, params, err);
    if (rc == 0)
        rc = check_batchable(s, shapes, params, total, total, err);
    free(shapes);
    free(params);
    return rc;
}

/*
 * Shapes, params and folds for slices of `rows` rows: slices are the inputs as this slice has
 * them, inputs the whole (for the --batch checks at the whole input's row count); for a slice
 * in backend memory, host_values holds the same rows on the host, or NULL.
 */
static int
infer_for_rows(struct gd_session *s, int n_inputs, const struct gd_tensor *const *inputs,
               const struct gd_tensor *const *slices, const struct gd_tensor *const *host_values,
               int64_t rows, struct gd_err *err)
{
    struct gd_shape in_shapes[n_inputs > 0 ? n_inputs : 1];
    const struct gd_tensor *values[n_inputs > 0 ? n_inputs : 1];
    /* Nodes may read inputs as parameters (a Reshape's shape given as an input): an
     * inference that read their values is not reused. */
    int same = s->inferred_rows == rows && !s->inferred_values;
    for (int i = 0; i < n_inputs; i++) {
        /* staged inputs: their host copies where there are (integers), else shapes only */
        values[i] = slices[i]->device ? host_values[i] : slices[i];
        memset(&in_shapes[i], 0, sizeof in_shapes[i]);
        in_shapes[i].ndim = slices[i]->ndim;
        memcpy(in_shapes[i].dim, slices[i]->shape, sizeof in_shapes[i].dim);
        same = same && memcmp(&in_shapes[i], &s->inferred_for[i], sizeof in_shapes[i]) == 0;
    }
    if (same)
        return 0;
    /* The folds' results belong to the shapes they were computed for. */
    s->inferred_rows = -1;
    for (int v = 0; v < s->g->n_values; v++) {
        gd_tensor_free(s->folded[v]);
        s->folded[v] = NULL;
    }
    int64_t total = n_inputs > 0 && inputs[0]->ndim > 0 ? inputs[0]->shape[0] : rows;
    int rc = gd_graph_infer_folds(s->g, in_shapes, values, s->shapes, s->params, s->folded,
                                  &s->inferred_values, err);
    if (rc != 0 && s->knobs.batch > 0 && rows != total) {
        /* A slice that does not even infer (a Reshape to a fixed dim 0, a product with the
         * batch on its inner side): say what mixes rows if the whole input shows it. */
        struct gd_err whole = {0};
        if (check_at_total(s, n_inputs, inputs, total, &whole) != 0 && whole.code == GD_ENOTSUP)
            rc = gd_err_set(err, GD_ENOTSUP, "%s", whole.msg);
        else
            rc = gd_err_prefix(err, "--batch: a slice of %lld rows: ", (long long)rows);
    }
    if (rc == 0 && s->knobs.batch > 0) {
        rc = check_batchable(s, s->shapes, s->params, rows, total, err);
        if (rc == 0 && total != rows)
            rc = check_at_total(s, n_inputs, inputs, total, err);
    }
    if (rc != 0) {
        for (int v = 0; v < s->g->n_values; v++) {
            gd_tensor_free(s->folded[v]);
            s->folded[v] = NULL;
        }
        return rc; /* inferred_rows stays -1: the arrays hold a refused inference */
    }
    s->inferred_rows = rows;
    memcpy(s->inferred_for, in_shapes, (size_t)n_inputs * sizeof *in_shapes);
    return 0;
}

static int fetch_outputs(struct gd_session *s, const struct gd_node *n, struct gd_err *err);

/* ---- fp: what a run captures of each layer ---- */

/* Fills req's wants for layer li; 0 when the layer is not to be delivered at all. */
static int
capture_wanted(const struct gd_session *s, int li, struct gd__capture_req *req)
{
    req->want_fingerprint = s->sel.fingerprints;
    req->want_tensor = s->sel.tensors || (li < s->sel.n_only && s->sel.only[li]);
    if (s->sel.last_layer >= 0 && li > s->sel.last_layer)
        req->want_tensor = 0;
    return req->want_tensor || req->want_fingerprint;
}

int
gd_session_set_capture(struct gd_session *s, const struct gd_capture_sel *sel,
                       struct gd_err *err)
{
    if (sel->n_only < 0 || sel->last_layer < -1 || (sel->n_only > 0 && sel->only == NULL))
        return gd_err_set(err, GD_EINVAL, "capture selection: bad layer count or last layer");
    unsigned char *only = NULL;
    if (sel->n_only > 0) {
        only = malloc((size_t)sel->n_only);
        if (only == NULL)
            return gd_err_set(err, GD_ENOMEM, "out of memory");
        memcpy(only, sel->only, (size_t)sel->n_only);
    }
    free(s->sel_only);
    s->sel_only = only;
    s->sel = *sel;
    s->sel.only = only;
    return 0;
}

int
gd_session_n_layers(const struct gd_session *s)
{
    return s->n_layers;
}

/* The offset of node ni's output `out` in its input 0 when it is a view (view.c), or -1. A
 * Gather's index is read on the host: a weight's, or what the folds computed. */
static int64_t
view_offset(const struct gd_session *s, int ni, const struct gd_tensor *out)
{
    const struct gd_node *n = &s->g->nodes[ni];
    if (s->views_off || n->n_inputs < 1 || n->inputs[0] < 0)
        return -1;
    const struct gd_tensor *index = NULL;
    if (n->n_inputs > 1 && n->inputs[1] >= 0) {
        int iv = n->inputs[1];
        index = s->g->values[iv].constant != NULL ? s->g->values[iv].constant : s->folded[iv];
    }
    return gd__view_offset(n, &s->params[ni], &s->vals[n->inputs[0]], out, index);
}

/* Value v becomes a view of value in's data from byte `offset` (its header is set), holding
 * the allocation in's data lies in, if the session owns one. */
static void
view_take(struct gd_session *s, int in, int v, int64_t offset)
{
    struct gd_tensor *t = &s->vals[v];
    t->data = (char *)s->vals[in].data + offset;
    t->device = s->vals[in].device;
    t->owns_data = 0;
    s->owner[v] = s->owner[in];
    if (s->owner[v] >= 0)
        s->holders[s->owner[v]]++;
}

static int
run_nodes(struct gd_session *s, struct gd_err *err)
{
    const struct gd_graph *g = s->g;
    for (int ni = 0; ni < g->n_nodes; ni++) {
        const struct gd_node *n = &g->nodes[ni];
        struct gd_op_call call = {.graph = g, .node = n, .params = &s->params[ni],
                                  .n_in = n->n_inputs, .n_out = n->n_outputs, .ctx = s->ctx,
                                  .knobs = &s->knobs, .time_us = -1.0};
        int rc = 0;
        for (int i = 0; i < n->n_inputs; i++)
            call.in[i] = n->inputs[i] >= 0 ? &s->vals[n->inputs[i]] : NULL;
        int is_view = 0;
        for (int k = 0; k < n->n_outputs && rc == 0; k++) {
            int v = n->outputs[k];
            struct gd_tensor *t = &s->vals[v];
            memset(t, 0, sizeof *t);
            t->dtype = gd__storage_dtype(s->be, g->values[v].dtype);
            t->ndim = s->shapes[v].ndim;
            memcpy(t->shape, s->shapes[v].dim, sizeof t->shape);
            int64_t offset = k == 0 ? view_offset(s, ni, t) : -1;
            if (offset >= 0) {
                view_take(s, n->inputs[0], v, offset);
                is_view = 1;
            } else if ((rc = s->be->alloc(s->ctx, t, err)) == 0) {
                own_value(s, v);
            }
            call.out[k] = t;
        }
        double t0 = gd__now_us();
        if (rc == 0 && s->be->op_begin != NULL)
            rc = s->be->op_begin(s->ctx, ni, s->capture != NULL, err);
        if (rc == 0 && !is_view) {
            gd_op_fn fn = s->ops[n->op];
            int native = s->half_native != NULL && s->half_native[n->op];
            rc = s->be->convert != NULL && !native && gd__call_has_half(&call)
                     ? gd__half_call(s->be, fn, &call, err)
                     : fn(&call, err);
        }
        if (rc == 0 && s->be->op_end != NULL)
            rc = s->be->op_end(s->ctx, ni, s->capture != NULL, err);
        double elapsed = gd__now_us() - t0;
        for (int k = 0; k < n->n_outputs && rc == 0 && s->capture != NULL; k++) {
            struct gd__capture_req req = {.node_index = ni, .output_slot = k,
                                          .time_us = call.time_us >= 0 ? call.time_us : elapsed,
                                          .algo = call.algo, .math = call.math};
            if (capture_wanted(s, s->first_layer[ni] + k, &req))
                rc = s->be->capture(s->ctx, call.out[k], &req, deliver, s, err);
        }
        if (rc == 0 && s->fetching)
            rc = fetch_outputs(s, n, err);
        if (rc != 0)
            return err && err->msg[0] ? gd_err_prefix(err, "node %s (%s): ", n->name,
                                                      gd_op_name(n->op))
                                      : rc;
        /* Release what no later node reads. */
        for (int i = 0; i < n->n_inputs; i++) {
            int v = n->inputs[i];
            if (v >= 0 && g->values[v].constant == NULL && g->values[v].last_use == ni &&
                s->vals[v].data != NULL)
                release_value(s, v);
        }
        for (int k = 0; k < n->n_outputs; k++) {
            int v = n->outputs[k];
            if (g->values[v].last_use < 0)
                release_value(s, v);
        }
        if (s->capture != NULL && s->sel.last_layer >= 0 &&
            s->first_layer[ni] + n->n_outputs > s->sel.last_layer)
            break; /* what was asked for is made: the values left are released by the run */
    }
    return s->be->flush(s->ctx, err);
}

int
gd_session_run(struct gd_session *s, int n_inputs, const struct gd_tensor *const *inputs,
               gd_capture_fn capture, void *user, struct gd_err *err)
{
    const struct gd_graph *g = s->g;
    if (n_inputs != g->n_inputs)
        return gd_err_set(err, GD_EINVAL, "the model takes %d inputs, %d given", g->n_inputs,
                          n_inputs);
    int64_t total = 0;
    for (int i = 0; i < n_inputs; i++) {
        const char *name = g->values[g->inputs[i]].name;
        enum gd_dtype want = g->input_decls[i].dtype;
        if (gd_dtype_is_float(inputs[i]->dtype) != gd_dtype_is_float(want))
            return gd_err_set(err, GD_EDTYPE, "input %s is %s; the model takes %s", name,
                              gd_dtype_name(inputs[i]->dtype), gd_dtype_name(want));
        if (s->knobs.batch > 0) {
            if (inputs[i]->ndim < 1)
                return gd_err_set(err, GD_ESHAPE, "input %s is a scalar: nothing to batch",
                                  name);
            if (i > 0 && inputs[i]->shape[0] != total)
                return gd_err_set(err, GD_ESHAPE, "--batch needs every input to have %lld rows",
                                  (long long)total);
            total = inputs[i]->shape[0];
        }
    }
    if (capture != NULL && s->sel.fingerprints && s->knobs.batch > 0)
        return gd_err_set(err, GD_ENOTSUP, "a fingerprint covers a whole layer and --batch "
                          "delivers layers in slices: capture full tensors with --batch");
    int64_t step = s->knobs.batch > 0 ? s->knobs.batch : 0;
    if (step == 0)
        total = n_inputs > 0 && inputs[0]->ndim > 0 ? inputs[0]->shape[0] : 1;
    s->capture = capture;
    s->user = user;
    s->batch_total = total;
    int rc = 0;
    for (int64_t off = 0; rc == 0 && (off < total || (off == 0 && total == 0)); ) {
        int64_t rows = step > 0 && total - off > step ? step : total - off;
        s->batch_offset = off;
        struct gd_tensor slices[n_inputs > 0 ? n_inputs : 1];
        struct gd_tensor host_slices[n_inputs > 0 ? n_inputs : 1];
        const struct gd_tensor *slice_of[n_inputs > 0 ? n_inputs : 1];
        const struct gd_tensor *host_of[n_inputs > 0 ? n_inputs : 1];
        for (int i = 0; i < n_inputs; i++) {
            const struct gd_tensor *h = s->resident && s->staged_host ? s->staged_host[i] : NULL;
            slices[i] = *inputs[i];
            slices[i].owns_data = 0;
            if (h != NULL) {
                host_slices[i] = *h;
                host_slices[i].owns_data = 0;
            }
            if (step > 0) {
                size_t row_bytes = gd_tensor_nbytes(inputs[i]) / (size_t)inputs[i]->shape[0];
                slices[i].shape[0] = rows;
                slices[i].data = (char *)inputs[i]->data + (size_t)off * row_bytes;
                if (h != NULL) {
                    host_slices[i].shape[0] = rows;
                    host_slices[i].data = (char *)h->data + (size_t)off * row_bytes;
                }
            }
            slice_of[i] = &slices[i];
            host_of[i] = h != NULL ? &host_slices[i] : NULL;
        }
        rc = infer_for_rows(s, n_inputs, inputs, slice_of, host_of, rows, err);
        for (int i = 0; i < n_inputs && rc == 0; i++) {
            if (s->resident)
                s->vals[g->inputs[i]] = slices[i]; /* a view of the staged input */
            else
                rc = upload_input(s, &s->vals[g->inputs[i]], &slices[i],
                                  g->input_decls[i].dtype, err);
            if (!s->resident && s->vals[g->inputs[i]].data != NULL)
                own_value(s, g->inputs[i]);
            if (rc != 0)
                gd_err_prefix(err, "input %s: ", g->values[g->inputs[i]].name);
        }
        /* What the folds computed for these shapes, for the nodes that read it. */
        for (int v = 0; v < g->n_values && rc == 0; v++)
            if (s->folded[v] != NULL && g->values[v].last_use >= 0) {
                rc = upload_value(s, &s->vals[v], s->folded[v], g->values[v].dtype, err);
                if (s->vals[v].data != NULL)
                    own_value(s, v);
                if (rc != 0)
                    gd_err_prefix(err, "%s: ", g->values[v].name);
            }
        if (rc == 0)
            rc = run_nodes(s, err);
        vals_release(s, 0);
        if (step == 0 || rows == 0)
            break;
        off += rows;
    }
    s->capture = NULL;
    s->user = NULL;
    return rc;
}

/* ---- timing without capture, batch sizes, algorithm choices ---- */

static void
staged_release(struct gd_session *s)
{
    for (int i = 0; i < s->n_staged; i++)
        if (s->staged[i].data != NULL)
            s->be->release(s->ctx, &s->staged[i]);
    for (int i = 0; s->staged_host != NULL && i < s->g->n_inputs; i++)
        gd_tensor_free(s->staged_host[i]);
    free(s->staged_host);
    s->staged_host = NULL;
    free(s->staged);
    s->staged = NULL;
    s->n_staged = 0;
}

static void
timing_free(struct gd_session *s)
{
    staged_release(s);
    if (s->fetched != NULL)
        for (int i = 0; i < s->g->n_outputs; i++)
            gd_tensor_free(s->fetched[i]);
    free(s->fetched);
    s->fetched = NULL;
}

int
gd_session_stage(struct gd_session *s, int n_inputs, const struct gd_tensor *const *inputs,
                 struct gd_err *err)
{
    const struct gd_graph *g = s->g;
    if (n_inputs != g->n_inputs)
        return gd_err_set(err, GD_EINVAL, "the model takes %d inputs, %d given", g->n_inputs,
                          n_inputs);
    staged_release(s);
    s->stage_generation++;
    s->staged = calloc((size_t)(n_inputs > 0 ? n_inputs : 1), sizeof *s->staged);
    s->staged_host = calloc((size_t)(n_inputs > 0 ? n_inputs : 1), sizeof *s->staged_host);
    if (s->staged == NULL || s->staged_host == NULL) {
        staged_release(s);
        return gd_err_set(err, GD_ENOMEM, "out of memory for the staged inputs");
    }
    int rc = 0;
    for (int i = 0; i < n_inputs && rc == 0; i++) {
        /* an integer input may feed the folds (a mask's arithmetic, a shape): they read it
         * on the host, as in a run from host inputs */
        if (!gd_dtype_is_float(inputs[i]->dtype) &&
            (s->staged_host[i] = gd_tensor_dup(inputs[i], err)) == NULL) {
            rc = err != NULL ? err->code : GD_ENOMEM;
            break;
        }
        rc = upload_input(s, &s->staged[i], inputs[i], g->input_decls[i].dtype, err);
        if (rc != 0)
            gd_err_prefix(err, "input %s: ", g->values[g->inputs[i]].name);
        s->n_staged = i + 1;
    }
    if (rc != 0)
        staged_release(s);
    return rc;
}

int
gd_session_forward(struct gd_session *s, double *us, struct gd_err *err)
{
    if (s->staged == NULL || s->n_staged != s->g->n_inputs)
        return gd_err_set(err, GD_EINVAL, "no inputs are staged (gd_session_stage)");
    const struct gd_tensor *inputs[s->n_staged > 0 ? s->n_staged : 1];
    for (int i = 0; i < s->n_staged; i++)
        inputs[i] = &s->staged[i];
    int rc = s->be->timer_start != NULL ? s->be->timer_start(s->ctx, err) : 0;
    if (rc != 0)
        return rc;
    double t0 = gd__now_us();
    s->resident = 1;
    int replayed = 0;
    if (s->be->forward_begin != NULL) {
        replayed = s->be->forward_begin(s->ctx, s->stage_generation, err);
        rc = replayed < 0 ? replayed : 0;
    }
    if (rc == 0 && replayed == 0) {
        rc = gd_session_run(s, s->n_staged, inputs, NULL, NULL, err);
        int rerun = 0;
        if (s->be->forward_end != NULL) {
            struct gd_err end_err = {0};
            int erc = s->be->forward_end(s->ctx, rc, &rerun, &end_err);
            if (rerun) /* the recording failed: the same forward, unrecorded */
                rc = gd_session_run(s, s->n_staged, inputs, NULL, NULL, err);
            else if (rc == 0 && erc != 0) {
                if (err != NULL)
                    *err = end_err;
                rc = erc;
            }
        }
    }
    s->resident = 0;
    double wall = gd__now_us() - t0, device = wall;
    if (s->be->timer_stop != NULL) {
        /* stopped even after a failure, so the timer is never left running */
        struct gd_err stop_err = {0};
        int src = s->be->timer_stop(s->ctx, &device, &stop_err);
        if (rc == 0 && src != 0) {
            if (err != NULL)
                *err = stop_err;
            rc = src;
        }
    }
    if (rc == 0)
        *us = device;
    return rc;
}

/* With fetching on: copies node n's outputs that are graph outputs into s->fetched, at the
 * rows of the slice in progress. */
static int
fetch_outputs(struct gd_session *s, const struct gd_node *n, struct gd_err *err)
{
    const struct gd_graph *g = s->g;
    for (int k = 0; k < n->n_outputs; k++) {
        int v = n->outputs[k];
        const struct gd_tensor *t = &s->vals[v];
        for (int o = 0; o < g->n_outputs; o++) {
            if (g->outputs[o] != v)
                continue;
            int64_t shape[GD_MAX_DIMS];
            memcpy(shape, t->shape, sizeof shape);
            if (t->ndim > 0)
                shape[0] = s->batch_total;
            struct gd_tensor *h = s->fetched[o];
            if (h == NULL || h->dtype != t->dtype || h->ndim != t->ndim ||
                memcmp(h->shape, shape, (size_t)t->ndim * sizeof shape[0]) != 0) {
                gd_tensor_free(h);
                s->fetched[o] = NULL;
                h = gd_tensor_new(t->dtype, t->ndim, shape, err);
                if (h == NULL)
                    return err ? err->code : GD_ENOMEM;
                s->fetched[o] = h;
            }
            size_t bytes = gd_tensor_nbytes(t);
            size_t row_bytes = t->ndim > 0 && t->shape[0] > 0 ? bytes / (size_t)t->shape[0] : 0;
            char *dst = (char *)h->data + (size_t)s->batch_offset * row_bytes;
            if (s->be->download != NULL) {
                int rc = s->be->download(s->ctx, dst, t, err);
                if (rc != 0)
                    return rc;
            } else if (bytes > 0) {
                memcpy(dst, t->data, bytes);
            }
        }
    }
    return 0;
}

int
gd_session_run_end_to_end(struct gd_session *s, int n_inputs,
                          const struct gd_tensor *const *inputs, double *us, struct gd_err *err)
{
    if (s->fetched == NULL) {
        s->fetched = calloc((size_t)(s->g->n_outputs > 0 ? s->g->n_outputs : 1),
                            sizeof *s->fetched);
        if (s->fetched == NULL)
            return gd_err_set(err, GD_ENOMEM, "out of memory");
    }
    double t0 = gd__now_us();
    s->fetching = 1;
    int rc = gd_session_run(s, n_inputs, inputs, NULL, NULL, err);
    s->fetching = 0;
    double wall = gd__now_us() - t0;
    if (rc == 0)
        *us = wall;
    return rc;
}

const struct gd_tensor *
gd_session_output(const struct gd_session *s, int i)
{
    if (s->fetched == NULL || i < 0 || i >= s->g->n_outputs)
        return NULL;
    return s->fetched[i];
}

int
gd_session_set_batch(struct gd_session *s, int64_t batch, struct gd_err *err)
{
    if (batch < 0)
        return gd_err_set(err, GD_EINVAL, "a batch size is 0 (the whole input) or more, not %lld",
                          (long long)batch);
    if (s->knobs.batch != batch) {
        s->knobs.batch = batch;
        s->inferred_rows = -1;
        s->stage_generation++;
    }
    return 0;
}

int
gd_session_memory(const struct gd_session *s, struct gd_memory *out, struct gd_err *err)
{
    if (s->be->memory == NULL)
        return gd_err_set(err, GD_ENOTSUP, "backend %s keeps no memory account", s->be->name);
    out->device_peak = out->device_now = out->host_peak = -1;
    out->capture_buffer = 0;
    return s->be->memory(s->ctx, out, err);
}

int
gd_session_algo_offers(const struct gd_session *s, int node_index, struct gd_algo_offer *out,
                       int max, int *n, struct gd_err *err)
{
    if (s->be->algo_offers == NULL)
        return gd_err_set(err, GD_ENOTSUP, "backend %s has no algorithm choices", s->be->name);
    if (node_index < 0 || node_index >= s->g->n_nodes)
        return gd_err_set(err, GD_EINVAL, "node index %d is outside 0..%d", node_index,
                          s->g->n_nodes - 1);
    return s->be->algo_offers(s->ctx, node_index, out, max, n, err);
}
