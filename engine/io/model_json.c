/*
 * model_json.c: loads a model in the project's JSON graph format
 * (schema/json/model.schema.json): inputs, weights from .npy/.npz/safetensors files or
 * written inline, nodes in topological order, outputs.
 */
#include <errno.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "gpudiff/hash.h"
#include "gpudiff/io.h"
#include "gpudiff/model.h"
#include "../core/internal.h"

#define MODEL_FORMAT "gpudiff-model"

/* Reads a whole file into a NUL-terminated buffer. */
static int
slurp(const char *path, char **out, size_t *len, struct gd_err *err)
{
    FILE *f = fopen(path, "rb");
    if (f == NULL)
        return gd_err_set(err, errno == ENOENT ? GD_ENOENT : GD_EIO, "%s: %s", path,
                          strerror(errno));
    char *buf = NULL;
    size_t cap = 0, n = 0;
    int rc = 0;
    for (;;) {
        if (n + 4096 + 1 > cap) {
            cap = cap ? cap * 2 : 65536;
            char *nb = realloc(buf, cap);
            if (nb == NULL) {
                rc = gd_err_set(err, GD_ENOMEM, "%s: out of memory", path);
                break;
            }
            buf = nb;
        }
        size_t got = fread(buf + n, 1, cap - n - 1, f);
        n += got;
        if (got == 0) {
            if (ferror(f))
                rc = gd_err_set(err, GD_EIO, "%s: read error", path);
            break;
        }
    }
    fclose(f);
    if (rc != 0) {
        free(buf);
        return rc;
    }
    buf[n] = '\0';
    *out = buf;
    *len = n;
    return 0;
}

static int
read_shape(json_t *arr, int allow_free, struct gd_shape *out, const char *what, struct gd_err *err)
{
    if (!json_is_array(arr))
        return gd_err_set(err, GD_EFORMAT, "%s: shape must be a list", what);
    if (json_array_size(arr) > GD_MAX_DIMS)
        return gd_err_set(err, GD_EFORMAT, "%s: shape has %zu dimensions (at most %d)", what,
                          json_array_size(arr), GD_MAX_DIMS);
    out->ndim = (int)json_array_size(arr);
    for (int i = 0; i < out->ndim; i++) {
        json_t *d = json_array_get(arr, (size_t)i);
        if (json_is_integer(d) && json_integer_value(d) >= 0)
            out->dim[i] = json_integer_value(d);
        else if (allow_free && (json_is_null(d) || json_is_string(d) ||
                                (json_is_integer(d) && json_integer_value(d) == -1)))
            out->dim[i] = -1;
        else
            return gd_err_set(err, GD_EFORMAT, "%s: dimension %d is not a size%s", what, i,
                              allow_free ? " (use -1, null or a name for a free one)" : "");
    }
    return 0;
}

static int
read_dtype(json_t *obj, enum gd_dtype dflt, enum gd_dtype *out, const char *what,
           struct gd_err *err)
{
    json_t *d = json_object_get(obj, "dtype");
    if (d == NULL) {
        *out = dflt;
        return 0;
    }
    if (!json_is_string(d) || gd_dtype_from_name(json_string_value(d), out) != 0)
        return gd_err_set(err, GD_EFORMAT, "%s: dtype %s is not one of float32, float64, "
                          "float16, int64, ...", what,
                          json_is_string(d) ? json_string_value(d) : "(not a string)");
    return 0;
}

/* A weight given inline: "values": [...] with "shape" and "dtype". */
static int
inline_weight(json_t *w, const char *name, struct gd_tensor **out, struct gd_err *err)
{
    json_t *values = json_object_get(w, "values");
    struct gd_shape shape = {0};
    enum gd_dtype dtype;
    int rc = read_dtype(w, GD_F32, &dtype, name, err);
    if (rc != 0)
        return rc;
    json_t *sh = json_object_get(w, "shape");
    if (sh != NULL) {
        rc = read_shape(sh, 0, &shape, name, err);
        if (rc != 0)
            return rc;
    } else {
        shape.ndim = 1;
        shape.dim[0] = (int64_t)json_array_size(values);
    }
    /* bounded before its element count is taken: the product of the dims may overflow */
    rc = gd_shape_check(shape.ndim, shape.dim, gd_dtype_size(dtype), err);
    if (rc != 0)
        return gd_err_prefix(err, "weight %s: ", name);
    if (!json_is_array(values) || (int64_t)json_array_size(values) != gd__shape_numel(&shape))
        return gd_err_set(err, GD_EFORMAT, "weight %s: values must be a list of %lld numbers",
                          name, (long long)gd__shape_numel(&shape));
    struct gd_tensor *f64 = gd_tensor_new(GD_F64, shape.ndim, shape.dim, err);
    if (f64 == NULL)
        return err ? err->code : GD_ENOMEM;
    for (size_t i = 0; i < json_array_size(values); i++) {
        json_t *v = json_array_get(values, i);
        if (!json_is_number(v)) {
            gd_tensor_free(f64);
            return gd_err_set(err, GD_EFORMAT, "weight %s: value %zu is not a number", name, i);
        }
        ((double *)f64->data)[i] = json_number_value(v);
    }
    if (dtype == GD_I64) {
        /* Integers beyond 2^53 must not pass through a double. */
        struct gd_tensor *t = gd_tensor_new(GD_I64, shape.ndim, shape.dim, err);
        rc = t != NULL ? 0 : (err ? err->code : GD_ENOMEM);
        for (size_t i = 0; rc == 0 && i < json_array_size(values); i++) {
            json_t *v = json_array_get(values, i);
            double d = json_number_value(v);
            /* converting a double outside int64 is undefined: refused, as gd_tensor_cast
             * refuses it for the other integer dtypes */
            if (!json_is_integer(v) && !(d >= -0x1p63 && d < 0x1p63))
                rc = gd_err_set(err, GD_ERANGE, "weight %s: value %zu (%g) does not fit in "
                                "int64", name, i, d);
            else
                ((int64_t *)t->data)[i] = json_is_integer(v) ? json_integer_value(v)
                                                             : (int64_t)d;
        }
        gd_tensor_free(f64);
        if (rc != 0) {
            gd_tensor_free(t);
            return rc;
        }
        *out = t;
        return 0;
    }
    *out = gd_tensor_cast(f64, dtype, err);
    gd_tensor_free(f64);
    return *out ? 0 : (err ? err->code : GD_ENOMEM);
}

/* A weight from a file, cast to "dtype" and permuted by "transpose" when given. */
static int
file_weight(json_t *w, const char *name, const char *dir, struct gd_tensor **out,
            struct gd_err *err)
{
    const char *file = json_string_value(json_object_get(w, "file"));
    json_t *key = json_object_get(w, "key");
    if (file == NULL)
        return gd_err_set(err, GD_EFORMAT, "weight %s: needs \"file\" or \"values\"", name);
    if (key != NULL && !json_is_string(key))
        return gd_err_set(err, GD_EFORMAT, "weight %s: key must be a string", name);
    char path[PATH_MAX];
    if (file[0] == '/')
        snprintf(path, sizeof path, "%s", file);
    else if (snprintf(path, sizeof path, "%s/%s", dir, file) >= (int)sizeof path)
        return gd_err_set(err, GD_EINVAL, "weight %s: path too long", name);
    struct gd_tensor *t = NULL, *next = NULL;
    int rc = gd_array_load(path, json_string_value(key), &t, err);
    if (rc != 0)
        return gd_err_prefix(err, "weight %s: ", name);
    enum gd_dtype dtype;
    rc = read_dtype(w, t->dtype, &dtype, name, err);
    if (rc == 0 && dtype != t->dtype) {
        next = gd_tensor_cast(t, dtype, err);
        if (next == NULL)
            rc = gd_err_prefix(err, "weight %s: ", name);
        gd_tensor_free(t);
        t = next;
    }
    json_t *perm = json_object_get(w, "transpose");
    if (rc == 0 && perm != NULL) {
        int p[GD_MAX_DIMS];
        if (!json_is_array(perm) || (int)json_array_size(perm) != t->ndim) {
            rc = gd_err_set(err, GD_EFORMAT, "weight %s: transpose must list its %d axes", name,
                            t->ndim);
        } else {
            for (int i = 0; i < t->ndim; i++)
                p[i] = (int)json_integer_value(json_array_get(perm, (size_t)i));
            next = gd_tensor_transpose(t, p, err);
            if (next == NULL)
                rc = gd_err_prefix(err, "weight %s: transpose: ", name);
            gd_tensor_free(t);
            t = next;
        }
    }
    if (rc != 0) {
        gd_tensor_free(t);
        return rc;
    }
    *out = t;
    return 0;
}

static int
hash_weight(struct gd_sha256 *h, const char *name, const struct gd_tensor *t, struct gd_err *err)
{
    int64_t dims[GD_MAX_DIMS + 1] = {t->ndim};
    for (int i = 0; i < t->ndim; i++)
        dims[i + 1] = t->shape[i];
    const char *dt = gd_dtype_name(t->dtype);
    int rc = gd_sha256_update(h, name, strlen(name) + 1, err);
    if (rc == 0)
        rc = gd_sha256_update(h, dt, strlen(dt) + 1, err);
    if (rc == 0)
        rc = gd_sha256_update(h, dims, sizeof dims[0] * (size_t)(t->ndim + 1), err);
    if (rc == 0)
        rc = gd_sha256_update(h, t->data, gd_tensor_nbytes(t), err);
    return rc;
}

static int
load_weights(struct gd_graph *g, json_t *weights, const char *dir, struct gd_sha256 *h,
             struct gd_err *err)
{
    if (weights == NULL)
        return 0;
    if (!json_is_array(weights))
        return gd_err_set(err, GD_EFORMAT, "\"weights\" must be a list");
    size_t i;
    json_t *w;
    json_array_foreach(weights, i, w) {
        const char *name = json_string_value(json_object_get(w, "name"));
        if (name == NULL)
            return gd_err_set(err, GD_EFORMAT, "weight %zu has no name", i);
        struct gd_tensor *t = NULL;
        int rc = json_object_get(w, "values") != NULL ? inline_weight(w, name, &t, err)
                                                      : file_weight(w, name, dir, &t, err);
        json_t *want = json_object_get(w, "shape");
        if (rc == 0 && want != NULL && json_object_get(w, "values") == NULL) {
            struct gd_shape s;
            rc = read_shape(want, 0, &s, name, err);
            int same = rc == 0 && s.ndim == t->ndim;
            for (int k = 0; same && k < s.ndim; k++)
                same = s.dim[k] == t->shape[k];
            if (rc == 0 && !same) {
                char a[96], b[96];
                rc = gd_err_set(err, GD_ESHAPE, "weight %s has shape %s, the model says %s",
                                name, gd_shape_format(t->ndim, t->shape, a, sizeof a),
                                gd_shape_format(s.ndim, s.dim, b, sizeof b));
            }
        }
        if (rc == 0)
            rc = hash_weight(h, name, t, err);
        if (rc != 0) {
            gd_tensor_free(t);
            return rc;
        }
        rc = gd_graph_add_constant(g, name, t, err);
        if (rc != 0)
            return gd_err_prefix(err, "weight %s: ", name);
    }
    return 0;
}

static int
read_attr(const char *name, json_t *v, struct gd_attr *a, struct gd_err *err)
{
    memset(a, 0, sizeof *a);
    if ((a->name = gd__strdup(name)) == NULL)
        return gd_err_set(err, GD_ENOMEM, "out of memory");
    if (json_is_integer(v) || json_is_boolean(v)) {
        a->type = GD_ATTR_INT;
        a->i = json_is_boolean(v) ? json_is_true(v) : json_integer_value(v);
    } else if (json_is_real(v)) {
        a->type = GD_ATTR_FLOAT;
        a->f = json_real_value(v);
    } else if (json_is_string(v)) {
        a->type = GD_ATTR_STRING;
        if ((a->s = gd__strdup(json_string_value(v))) == NULL)
            return gd_err_set(err, GD_ENOMEM, "out of memory");
    } else if (json_is_array(v)) {
        size_t n = json_array_size(v), i;
        json_t *e;
        int all_int = 1;
        json_array_foreach(v, i, e) {
            if (!json_is_number(e))
                return gd_err_set(err, GD_EFORMAT, "attribute %s: element %zu is not a number",
                                  name, i);
            all_int &= json_is_integer(e);
        }
        a->n = (int)n;
        a->type = all_int ? GD_ATTR_INTS : GD_ATTR_FLOATS;
        if (all_int)
            a->ints = calloc(n ? n : 1, sizeof *a->ints);
        else
            a->floats = calloc(n ? n : 1, sizeof *a->floats);
        if (a->ints == NULL && a->floats == NULL)
            return gd_err_set(err, GD_ENOMEM, "out of memory");
        json_array_foreach(v, i, e) {
            if (all_int)
                a->ints[i] = json_integer_value(e);
            else
                a->floats[i] = json_number_value(e);
        }
    } else {
        return gd_err_set(err, GD_EFORMAT, "attribute %s must be a number, a string or a list",
                          name);
    }
    return 0;
}

/* Reads a list of value names; NULL entries (JSON null or "") mark absent inputs. */
static int
read_names(json_t *arr, const char **out, int max, int *n, const char *what, struct gd_err *err)
{
    if (!json_is_array(arr))
        return gd_err_set(err, GD_EFORMAT, "%s must be a list of names", what);
    if ((int)json_array_size(arr) > max)
        return gd_err_set(err, GD_EMODEL, "%s has %zu entries (at most %d)", what,
                          json_array_size(arr), max);
    size_t i;
    json_t *e;
    json_array_foreach(arr, i, e) {
        if (json_is_null(e))
            out[i] = NULL;
        else if (json_is_string(e))
            out[i] = json_string_value(e);
        else
            return gd_err_set(err, GD_EFORMAT, "%s: entry %zu is not a name", what, i);
    }
    *n = (int)json_array_size(arr);
    return 0;
}

static int
load_node(struct gd_graph *g, json_t *node, size_t index, struct gd_err *err)
{
    const char *name = json_string_value(json_object_get(node, "name"));
    const char *op = json_string_value(json_object_get(node, "op"));
    if (!json_is_object(node) || name == NULL || op == NULL)
        return gd_err_set(err, GD_EFORMAT, "node %zu needs a \"name\" and an \"op\"", index);
    const char *ins[GD__MAX_OP_INPUTS], *outs[GD__MAX_OP_OUTPUTS];
    int n_in = 0, n_out = 1;
    char what[160];
    snprintf(what, sizeof what, "node %s: inputs", name);
    int rc = read_names(json_object_get(node, "inputs"), ins, GD__MAX_OP_INPUTS, &n_in, what,
                        err);
    if (rc != 0)
        return rc;
    json_t *jouts = json_object_get(node, "outputs");
    outs[0] = name; /* a node's one output is named after it unless "outputs" says */
    if (jouts != NULL) {
        snprintf(what, sizeof what, "node %s: outputs", name);
        rc = read_names(jouts, outs, GD__MAX_OP_OUTPUTS, &n_out, what, err);
        if (rc != 0)
            return rc;
    }
    json_t *jattrs = json_object_get(node, "attrs");
    if (jattrs != NULL && !json_is_object(jattrs))
        return gd_err_set(err, GD_EFORMAT, "node %s: attrs must be an object", name);
    int n_attrs = (int)json_object_size(jattrs);
    struct gd_attr *attrs = calloc((size_t)(n_attrs ? n_attrs : 1), sizeof *attrs);
    if (attrs == NULL)
        return gd_err_set(err, GD_ENOMEM, "out of memory");
    const char *key;
    json_t *v;
    int k = 0;
    json_object_foreach(jattrs, key, v) {
        rc = read_attr(key, v, &attrs[k++], err);
        if (rc != 0) {
            gd_err_prefix(err, "node %s: ", name);
            break;
        }
    }
    if (rc == 0)
        rc = gd_graph_add_node(g, name, op, n_in, ins, n_out, outs, n_attrs, attrs, err);
    else
        for (int i = 0; i < k; i++)
            gd_attr_fini(&attrs[i]);
    free(attrs);
    return rc;
}

static int
load_inputs(struct gd_graph *g, json_t *inputs, struct gd_err *err)
{
    if (!json_is_array(inputs) || json_array_size(inputs) == 0)
        return gd_err_set(err, GD_EFORMAT, "\"inputs\" must be a non-empty list");
    size_t i;
    json_t *in;
    json_array_foreach(inputs, i, in) {
        const char *name = json_string_value(json_object_get(in, "name"));
        if (name == NULL)
            return gd_err_set(err, GD_EFORMAT, "input %zu has no name", i);
        struct gd_input_decl d = {0};
        int rc = read_dtype(in, GD_F32, &d.dtype, name, err);
        if (rc == 0)
            rc = read_shape(json_object_get(in, "shape"), 1, &d.shape, name, err);
        if (rc == 0)
            rc = gd_graph_add_input(g, name, &d, err);
        if (rc != 0)
            return rc;
    }
    return 0;
}

static int
build(struct gd_graph *g, json_t *root, const char *dir, struct gd_sha256 *h, struct gd_err *err)
{
    int rc = load_inputs(g, json_object_get(root, "inputs"), err);
    if (rc == 0)
        rc = load_weights(g, json_object_get(root, "weights"), dir, h, err);
    if (rc != 0)
        return rc;
    json_t *nodes = json_object_get(root, "nodes");
    if (!json_is_array(nodes) || json_array_size(nodes) == 0)
        return gd_err_set(err, GD_EFORMAT, "\"nodes\" must be a non-empty list");
    size_t i;
    json_t *node;
    json_array_foreach(nodes, i, node) {
        rc = load_node(g, node, i, err);
        if (rc != 0)
            return rc;
    }
    json_t *outputs = json_object_get(root, "outputs");
    if (!json_is_array(outputs) || json_array_size(outputs) == 0)
        return gd_err_set(err, GD_EFORMAT, "\"outputs\" must be a non-empty list of names");
    json_t *o;
    json_array_foreach(outputs, i, o) {
        if (!json_is_string(o))
            return gd_err_set(err, GD_EFORMAT, "output %zu is not a name", i);
        rc = gd_graph_add_output(g, json_string_value(o), err);
        if (rc != 0)
            return rc;
    }
    return gd_graph_finalize(g, err);
}

/* Parses model text; `where` names it in messages, dir is the weights folder (NULL: none). */
static int
parse(const char *text, size_t len, const char *where, const char *model_dir,
      const struct gd_model_opts *opts, struct gd_graph **out, struct gd_err *err)
{
    json_t *root = NULL;
    struct gd_graph *g = NULL;
    struct gd_sha256 h = {0};
    int rc = 0;
    json_error_t jerr;
    root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &jerr);
    if (root == NULL) {
        rc = gd_err_set(err, GD_EFORMAT, "%s: not valid JSON: line %d column %d: %s", where,
                        jerr.line, jerr.column, jerr.text);
        goto done;
    }
    const char *format = json_string_value(json_object_get(root, "format"));
    if (!json_is_object(root) || format == NULL || strcmp(format, MODEL_FORMAT) != 0) {
        rc = gd_err_set(err, GD_EFORMAT, "%s: not a gpudiff model (\"format\" must be \"%s\")",
                        where, MODEL_FORMAT);
        goto done;
    }
    json_t *version = json_object_get(root, "version");
    if (!json_is_integer(version) || json_integer_value(version) != 1) {
        rc = gd_err_set(err, GD_EFORMAT, "%s: model format version must be 1", where);
        goto done;
    }
    const char *name = json_string_value(json_object_get(root, "name"));
    g = gd_graph_new(name ? name : "", err);
    if (g == NULL) {
        rc = err ? err->code : GD_ENOMEM;
        goto done;
    }
    /* Weight paths: --weights-dir, else "weights_dir" relative to the model's folder. */
    char dir[PATH_MAX];
    const char *wd = json_string_value(json_object_get(root, "weights_dir"));
    if (opts != NULL && opts->weights_dir != NULL)
        rc = gd__pathf(dir, sizeof dir, err, "%s", opts->weights_dir);
    else if (wd != NULL && wd[0] == '/')
        rc = gd__pathf(dir, sizeof dir, err, "%s", wd);
    else if (wd != NULL)
        rc = gd__pathf(dir, sizeof dir, err, "%s/%s", model_dir, wd);
    else
        rc = gd__pathf(dir, sizeof dir, err, "%s", model_dir);
    if (rc == 0)
        rc = gd_sha256_init(&h, err);
    if (rc == 0)
        rc = gd_sha256_update(&h, text, len, err);
    if (rc == 0)
        rc = build(g, root, dir, &h, err);
    if (rc != 0) {
        gd_err_prefix(err, "%s: ", where);
        goto done;
    }
    rc = gd_sha256_final(&h, g->sha256, err);
done:
    gd_sha256_fini(&h);
    json_decref(root);
    if (rc != 0) {
        gd_graph_free(g);
        return rc;
    }
    *out = g;
    return 0;
}

int
gd_model_parse(const char *text, size_t len, const char *where, const char *dir,
               const struct gd_model_opts *opts, struct gd_graph **out, struct gd_err *err)
{
    return parse(text, len, where ? where : "model", dir ? dir : ".", opts, out, err);
}

int
gd_model_load(const char *path, const struct gd_model_opts *opts, struct gd_graph **out,
              struct gd_err *err)
{
    char *text = NULL;
    size_t len = 0;
    int rc = slurp(path, &text, &len, err);
    if (rc != 0)
        return rc;
    char copy[PATH_MAX];
    snprintf(copy, sizeof copy, "%s", path);
    rc = parse(text, len, path, dirname(copy), opts, out, err);
    free(text);
    return rc;
}
