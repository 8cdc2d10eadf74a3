/* op_harness.c: one-node models built as JSON text and run through a real session. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "gpudiff/model.h"
#include "op_harness.h"

/* The graph input of a model whose node reads only weights. */
#define OH_UNUSED_INPUT "unused_input"

char oh_last_math[16];
char oh_last_algo[128];

struct collect {
    int n_out;
    struct gd_tensor **out;
};

static int
collect_layer(void *user, const struct gd_layer *layer, struct gd_err *err)
{
    struct collect *c = user;
    if (layer->output_slot >= c->n_out || strcmp(layer->node_name, "node") != 0)
        return 0;
    if (layer->output_slot == 0) {
        snprintf(oh_last_math, sizeof oh_last_math, "%s", layer->math);
        snprintf(oh_last_algo, sizeof oh_last_algo, "%s", layer->algo);
    }
    struct gd_tensor *t = gd_tensor_dup(layer->value, err);
    if (t == NULL)
        return err ? err->code : GD_ENOMEM;
    gd_tensor_free(c->out[layer->output_slot]);
    c->out[layer->output_slot] = t;
    return 0;
}

static json_t *
shape_of(const struct gd_tensor *t)
{
    json_t *a = json_array();
    for (int i = 0; i < t->ndim; i++)
        json_array_append_new(a, json_integer(t->shape[i]));
    return a;
}

static json_t *
inline_weight(const char *name, const struct gd_tensor *t)
{
    json_t *values = json_array();
    int64_t n = gd_tensor_numel(t);
    for (int64_t i = 0; i < n; i++) {
        if (t->dtype == GD_I64)
            json_array_append_new(values, json_integer(((const int64_t *)t->data)[i]));
        else
            json_array_append_new(values, json_real(gd_tensor_get_f64(t, i)));
    }
    return json_pack("{s:s, s:s, s:o, s:o}", "name", name, "dtype", gd_dtype_name(t->dtype),
                     "shape", shape_of(t), "values", values);
}

/*
 * The one-node model as JSON text (caller frees): inputs not flagged constant become graph
 * inputs, listed in feed[0..*n_feed) in order. The node is named "node". An integer or bool
 * input not flagged constant (token ids, targets) is a value computed at run time: a weight
 * passed through an Identity node, so the op sees it as it sees any computed tensor; a model
 * left without a graph input gets an unused one.
 */
static char *
model_text(const char *op, int n_in, struct gd_tensor *const *in, unsigned const_mask,
           const char *attrs_json, int n_out, const struct gd_tensor **feed, int *n_feed)
{
    json_t *inputs = json_array(), *weights = json_array(), *names = json_array();
    json_t *outs = json_array(), *nodes = json_array();
    char name[32];
    *n_feed = 0;
    for (int i = 0; i < n_in; i++) {
        if (in[i] == NULL) {
            json_array_append_new(names, json_null());
            continue;
        }
        snprintf(name, sizeof name, "in%d", i);
        json_array_append_new(names, json_string(name));
        if (const_mask & (1u << i)) {
            json_array_append_new(weights, inline_weight(name, in[i]));
        } else if (!gd_dtype_is_float(in[i]->dtype)) {
            char wname[40], nname[40];
            snprintf(wname, sizeof wname, "in%d_weight", i);
            snprintf(nname, sizeof nname, "feed_in%d", i);
            json_array_append_new(weights, inline_weight(wname, in[i]));
            json_array_append_new(nodes, json_pack("{s:s, s:s, s:[s], s:[s]}", "name", nname, "op",
                                                   "Identity", "inputs", wname, "outputs", name));
        } else {
            json_array_append_new(inputs, json_pack("{s:s, s:s, s:o}", "name", name, "dtype",
                                                    gd_dtype_name(in[i]->dtype), "shape",
                                                    shape_of(in[i])));
            feed[(*n_feed)++] = in[i];
        }
    }
    /* A model needs a graph input: a node whose inputs are all weights (integer and bool
     * cases, whose values cannot be graph inputs yet) gets one that nothing reads. */
    if (*n_feed == 0)
        json_array_append_new(inputs, json_pack("{s:s, s:s, s:[i]}", "name", OH_UNUSED_INPUT,
                                                "dtype", "float32", "shape", 1));
    for (int k = 0; k < n_out; k++) {
        snprintf(name, sizeof name, "out%d", k);
        json_array_append_new(outs, json_string(name));
    }
    json_error_t jerr;
    json_t *attrs = attrs_json ? json_loads(attrs_json, 0, &jerr) : json_object();
    if (attrs == NULL) {
        fprintf(stderr, "op_harness: bad attrs JSON %s: %s\n", attrs_json, jerr.text);
        abort();
    }
    json_array_append_new(nodes, json_pack("{s:s, s:s, s:o, s:O, s:o}", "name", "node", "op", op,
                                           "inputs", names, "outputs", outs, "attrs", attrs));
    json_t *model = json_pack("{s:s, s:i, s:s, s:o, s:o, s:o, s:O}", "format", "gpudiff-model",
                              "version", 1, "name", "one-op", "inputs", inputs, "weights",
                              weights, "nodes", nodes, "outputs", outs);
    char *text = json_dumps(model, JSON_REAL_PRECISION(17));
    json_decref(model);
    json_decref(outs);
    return text;
}

int
oh_run(const char *backend, const char *op, int n_in, struct gd_tensor *const *in,
       unsigned const_mask, const char *attrs_json, int n_out, struct gd_tensor **out,
       const struct gd_knobs *knobs, struct gd_err *err)
{
    const struct gd_tensor *feed[16];
    int n_feed = 0;
    for (int k = 0; k < n_out; k++)
        out[k] = NULL;
    char *text = model_text(op, n_in, in, const_mask, attrs_json, n_out, feed, &n_feed);
    int64_t unused_shape[1] = {1};
    struct gd_tensor *unused = NULL;
    if (n_feed == 0) {
        unused = gd_tensor_new(GD_F32, 1, unused_shape, NULL);
        feed[n_feed++] = unused;
    }
    struct gd_graph *g = NULL;
    struct gd_session *s = NULL;
    struct gd_knobs dflt;
    gd_knobs_init(&dflt);
    if (knobs != NULL)
        dflt = *knobs;
    /* GD_TEST_CONV_API=legacy|graph: the cuda runs' convolution API, unless a test set one */
    const char *api = getenv("GD_TEST_CONV_API");
    if (api != NULL && api[0] != '\0' && dflt.conv_api[0] == '\0' && strcmp(backend, "cuda") == 0)
        snprintf(dflt.conv_api, sizeof dflt.conv_api, "%s", api);
    int rc = gd_model_parse(text, strlen(text), "one-op model", ".", NULL, &g, err);
    free(text);
    if (rc == 0 && (s = gd_session_new(g, backend, &dflt, err)) == NULL)
        rc = err ? err->code : GD_ENOMEM;
    struct collect col = {n_out, out};
    if (rc == 0)
        rc = gd_session_run(s, n_feed, feed, collect_layer, &col, err);
    gd_session_free(s);
    gd_graph_free(g);
    gd_tensor_free(unused);
    if (rc != 0)
        for (int k = 0; k < n_out; k++) {
            gd_tensor_free(out[k]);
            out[k] = NULL;
        }
    return rc;
}

int
oh_reduction_len(const char *op, int n_in, struct gd_tensor *const *in, unsigned const_mask,
                 const char *attrs_json, int n_out, int64_t *len, struct gd_err *err)
{
    const struct gd_tensor *feed[16];
    int n_feed = 0;
    char *text = model_text(op, n_in, in, const_mask, attrs_json, n_out, feed, &n_feed);
    struct gd_graph *g = NULL;
    int rc = gd_model_parse(text, strlen(text), "one-op model", ".", NULL, &g, err);
    free(text);
    if (rc == 0)
        *len = gd_node_reduction_len(g, gd_graph_find_node(g, "node"));
    gd_graph_free(g);
    return rc;
}

struct gd_tensor *
oh_f32(int ndim, const int64_t *shape, const float *values)
{
    struct gd_tensor *t = gd_tensor_new(GD_F32, ndim, shape, NULL);
    if (t != NULL && values != NULL)
        memcpy(t->data, values, gd_tensor_nbytes(t));
    return t;
}

struct gd_tensor *
oh_random(int ndim, const int64_t *shape, unsigned seed)
{
    struct gd_tensor *t = gd_tensor_new(GD_F32, ndim, shape, NULL);
    uint64_t x = seed * 0x9E3779B97F4A7C15ull + 1;
    float *v = t->data;
    for (int64_t i = 0; i < gd_tensor_numel(t); i++) {
        /* xorshift64*: reproducible on every platform */
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        uint64_t r = x * 0x2545F4914F6CDD1Dull;
        v[i] = (float)((double)(r >> 40) / (double)(1ull << 24) * 2.0 - 1.0);
    }
    return t;
}
