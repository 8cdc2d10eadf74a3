/*
 * model_files.c: the files a model reads besides itself (model_files.h), found the way the
 * loaders find them: a JSON model's weight files under its weights folder (model_json.c's
 * rule), an ONNX model's external data locations under its folder (onnx_tensor.c's rule).
 * Only references are read; nothing is loaded.
 */
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "gpudiff/model_files.h"
#include "onnx_internal.h"

void
gd_model_files_init(struct gd_model_files *f)
{
    memset(f, 0, sizeof *f);
}

void
gd_model_files_fini(struct gd_model_files *f)
{
    if (f == NULL)
        return;
    for (int i = 0; i < f->n; i++) {
        free(f->files[i].name);
        free(f->files[i].path);
    }
    free(f->files);
    free(f->weights_dir);
    gd_model_files_init(f);
}

/*
 * A reference a job can carry: relative, no "..", no empty part; "./" parts dropped. The
 * clean name into out.
 */
static int
clean_name(const char *ref, const char *what, char *out, size_t size, struct gd_err *err)
{
    if (ref[0] == '\0')
        return gd_err_set(err, GD_EFORMAT, "%s: an empty file name", what);
    if (ref[0] == '/')
        return gd_err_set(err, GD_EINVAL,
                          "%s: %s is an absolute path; a job carries the files beside the "
                          "model, so it must be relative (to the weights folder or the "
                          "model's folder)",
                          what, ref);
    size_t used = 0;
    for (const char *p = ref; *p != '\0';) {
        size_t n = strcspn(p, "/");
        if (n == 2 && p[0] == '.' && p[1] == '.')
            return gd_err_set(err, GD_EINVAL,
                              "%s: %s leaves its folder (..), which a job "
                              "cannot carry",
                              what, ref);
        if (n > 0 && !(n == 1 && p[0] == '.')) {
            if (used + n + 2 > size)
                return gd_err_set(err, GD_EINVAL, "%s: %s is too long", what, ref);
            if (used > 0)
                out[used++] = '/';
            memcpy(out + used, p, n);
            used += n;
        }
        p += n;
        p += *p == '/';
    }
    if (used == 0)
        return gd_err_set(err, GD_EFORMAT, "%s: %s names no file", what, ref);
    out[used] = '\0';
    return 0;
}

/* Adds name (under dir) once. */
static int
add(struct gd_model_files *f, const char *dir, const char *name, struct gd_err *err)
{
    for (int i = 0; i < f->n; i++)
        if (strcmp(f->files[i].name, name) == 0)
            return 0;
    struct gd_model_file *more = realloc(f->files, (size_t)(f->n + 1) * sizeof *more);
    if (more == NULL)
        return gd_err_set(err, GD_ENOMEM, "out of memory");
    f->files = more;
    char path[PATH_MAX];
    if (snprintf(path, sizeof path, "%s/%s", dir, name) >= (int)sizeof path)
        return gd_err_set(err, GD_EINVAL, "%s/%s: path too long", dir, name);
    f->files[f->n].name = strdup(name);
    f->files[f->n].path = strdup(path);
    if (f->files[f->n].name == NULL || f->files[f->n].path == NULL) {
        free(f->files[f->n].name);
        free(f->files[f->n].path);
        return gd_err_set(err, GD_ENOMEM, "out of memory");
    }
    f->n++;
    return 0;
}

/* A JSON model's weight files, under the folder gd_model_load() would use. */
static int
json_files(const char *path, const char *text, size_t len, const char *weights_dir,
           struct gd_model_files *f, struct gd_err *err)
{
    json_error_t jerr;
    json_t *root = json_loadb(text, len, 0, &jerr);
    if (root == NULL)
        return gd_err_set(err, GD_EFORMAT, "%s: not JSON: line %d: %s", path, jerr.line, jerr.text);
    char copy[PATH_MAX], dir[PATH_MAX];
    snprintf(copy, sizeof copy, "%s", path);
    const char *model_dir = dirname(copy);
    const char *wd = json_string_value(json_object_get(root, "weights_dir"));
    int n;
    if (weights_dir != NULL)
        n = snprintf(dir, sizeof dir, "%s", weights_dir);
    else if (wd != NULL && wd[0] == '/')
        n = snprintf(dir, sizeof dir, "%s", wd);
    else if (wd != NULL)
        n = snprintf(dir, sizeof dir, "%s/%s", model_dir, wd);
    else
        n = snprintf(dir, sizeof dir, "%s", model_dir);
    int rc =
        n < (int)sizeof dir ? 0 : gd_err_set(err, GD_EINVAL, "%s: weights folder too long", path);
    if (rc == 0 && (f->weights_dir = strdup(dir)) == NULL)
        rc = gd_err_set(err, GD_ENOMEM, "out of memory");
    size_t i;
    json_t *w;
    json_array_foreach(json_object_get(root, "weights"), i, w)
    {
        const char *file = json_string_value(json_object_get(w, "file"));
        if (rc != 0 || file == NULL)
            continue;
        char what[320], name[PATH_MAX];
        snprintf(what, sizeof what, "%s: weight %.200s", path,
                 json_string_value(json_object_get(w, "name"))
                     ? json_string_value(json_object_get(w, "name"))
                     : "?");
        rc = clean_name(file, what, name, sizeof name, err);
        if (rc == 0)
            rc = add(f, dir, name, err);
    }
    json_decref(root);
    return rc;
}

/* The external data location of a tensor (none: NULL). */
static const char *
location(const Onnx__TensorProto *tp)
{
    if (tp == NULL || !tp->has_data_location ||
        tp->data_location != ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL)
        return NULL;
    for (size_t i = 0; i < tp->n_external_data; i++)
        if (tp->external_data[i]->key != NULL && strcmp(tp->external_data[i]->key, "location") == 0)
            return tp->external_data[i]->value != NULL ? tp->external_data[i]->value : "";
    return "";
}

static int
onnx_tensor(const Onnx__TensorProto *tp, const char *path, const char *dir,
            struct gd_model_files *f, struct gd_err *err)
{
    const char *loc = location(tp);
    if (loc == NULL)
        return 0;
    char what[400], name[PATH_MAX];
    snprintf(what, sizeof what, "%s: external data of %.200s", path,
             tp->name != NULL ? tp->name : "a tensor");
    int rc = clean_name(loc, what, name, sizeof name, err);
    return rc == 0 ? add(f, dir, name, err) : rc;
}

/* The initializers and the node attributes' tensors of a graph and its subgraphs. */
static int
onnx_graph(const Onnx__GraphProto *g, const char *path, const char *dir, int depth,
           struct gd_model_files *f, struct gd_err *err)
{
    if (g == NULL)
        return 0;
    if (depth > 32)
        return gd_err_set(err, GD_EFORMAT, "%s: subgraphs nested more than 32 deep", path);
    int rc = 0;
    for (size_t i = 0; rc == 0 && i < g->n_initializer; i++)
        rc = onnx_tensor(g->initializer[i], path, dir, f, err);
    for (size_t i = 0; rc == 0 && i < g->n_sparse_initializer; i++) {
        rc = onnx_tensor(g->sparse_initializer[i]->values, path, dir, f, err);
        if (rc == 0)
            rc = onnx_tensor(g->sparse_initializer[i]->indices, path, dir, f, err);
    }
    for (size_t n = 0; rc == 0 && n < g->n_node; n++) {
        const Onnx__NodeProto *node = g->node[n];
        for (size_t a = 0; rc == 0 && a < node->n_attribute; a++) {
            const Onnx__AttributeProto *at = node->attribute[a];
            rc = onnx_tensor(at->t, path, dir, f, err);
            for (size_t k = 0; rc == 0 && k < at->n_tensors; k++)
                rc = onnx_tensor(at->tensors[k], path, dir, f, err);
            if (rc == 0)
                rc = onnx_graph(at->g, path, dir, depth + 1, f, err);
            for (size_t k = 0; rc == 0 && k < at->n_graphs; k++)
                rc = onnx_graph(at->graphs[k], path, dir, depth + 1, f, err);
        }
    }
    return rc;
}

int
gd_model_files_find(const char *path, const char *weights_dir, struct gd_model_files *f,
                    struct gd_err *err)
{
    gd_model_files_init(f);
    const uint8_t *data = NULL;
    size_t len = 0;
    int mapped = 0;
    int rc = gd__onnx_map(path, &data, &len, &mapped, err);
    if (rc != 0)
        return rc;
    size_t k = 0;
    while (k < len && (data[k] == ' ' || data[k] == '\t' || data[k] == '\n' || data[k] == '\r'))
        k++;
    if (k < len && data[k] == '{') {
        rc = json_files(path, (const char *)data, len, weights_dir, f, err);
    } else {
        f->onnx = 1;
        Onnx__ModelProto *m = (Onnx__ModelProto *)gd__onnx_unpack(&onnx__model_proto__descriptor,
                                                                  data, len, path, err);
        char copy[PATH_MAX];
        snprintf(copy, sizeof copy, "%s", path);
        rc = m != NULL ? onnx_graph(m->graph, path, dirname(copy), 0, f, err)
                       : (err ? err->code : GD_EFORMAT);
        if (m != NULL)
            onnx__model_proto__free_unpacked(m, &gd__onnx_allocator);
    }
    gd__onnx_unmap(data, len, mapped);
    if (rc != 0)
        gd_model_files_fini(f);
    return rc;
}
