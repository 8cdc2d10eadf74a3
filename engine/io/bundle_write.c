/*
 * bundle_write.c: writes a run bundle into a hidden temporary folder beside its final
 * place, and renames it there only once run.json is complete and everything is on disk.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "gpudiff/bundle.h"
#include "gpudiff/hash.h"
#include "gpudiff/io.h"
#include "../core/internal.h"

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "bundles are written little-endian straight from memory: a little-endian host is needed"
#endif

struct layer_out {
    int used;
    char file[160];             /* relative: layers/NNNN-name.npy */
    struct gd_sha256 hash;
    struct gd_layer_stats stats;
    double sum;                 /* of finite values, for the mean */
    int64_t rows_done, rows_total;
    int64_t piece_done;         /* elements of the slice in progress written so far (pieces) */
    double time_us;
    int timed;                  /* some slice came with a time */
    json_t *rec;                /* the run.json record; owned */
    int has_file;               /* fp: 0 when only a fingerprint was captured */
    struct gd_fingerprint *fp;  /* fp: delivered with the layer, or made at commit; owned */
};

struct gd_bundle_writer {
    char *dir;                  /* where the bundle goes */
    char *tmp;                  /* where it is built */
    int replace;
    int committed;
    char made[4096];            /* the topmost missing parent folder made for dir, "" none */
    int n;                      /* layers array length (highest index + 1) */
    int fingerprints;           /* fp: commit fingerprints layers delivered without one */
    struct layer_out *layers;
    json_t *layers_json;        /* built at commit */
};

static int
write_all(int fd, const void *buf, size_t len)
{
    const char *p = buf;
    while (len > 0) {
        ssize_t w = write(fd, p, len);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            return -1;
        }
        p += w;
        len -= (size_t)w;
    }
    return 0;
}

static int
fsync_path(const char *path, int is_dir)
{
    int fd = open(path, is_dir ? O_RDONLY | O_DIRECTORY : O_RDONLY);
    if (fd < 0)
        return -1;
    int rc = fsync(fd);
    close(fd);
    return rc;
}

/* Removes a bundle folder we made: its layer files, run.json, then the folders. */
static void
remove_tree(const char *dir)
{
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/layers", dir);
    DIR *d = opendir(path);
    if (d != NULL) {
        struct dirent *e;
        while ((e = readdir(d)) != NULL) {
            if (e->d_name[0] == '.')
                continue;
            snprintf(path, sizeof path, "%s/layers/%s", dir, e->d_name);
            unlink(path);
        }
        closedir(d);
    }
    snprintf(path, sizeof path, "%s/layers", dir);
    rmdir(path);
    snprintf(path, sizeof path, "%s/run.json", dir);
    unlink(path);
    rmdir(dir);
}

int
gd_bundle_writer_new(const char *dir, int replace, struct gd_bundle_writer **out,
                     struct gd_err *err)
{
    struct stat st;
    if (!replace && stat(dir, &st) == 0)
        return gd_err_set(err, GD_EEXIST, "%s already exists (choose another folder, or "
                          "replace it)", dir);
    char copy1[PATH_MAX], copy2[PATH_MAX], tmpl[PATH_MAX];
    snprintf(copy1, sizeof copy1, "%s", dir);
    snprintf(copy2, sizeof copy2, "%s", dir);
    const char *parent = dirname(copy1), *base = basename(copy2);
    if (snprintf(tmpl, sizeof tmpl, "%s/.%s.partial-XXXXXX", parent, base) >= (int)sizeof tmpl)
        return gd_err_set(err, GD_EINVAL, "%s: path too long", dir);
    struct gd_bundle_writer *w = calloc(1, sizeof *w);
    if (w == NULL)
        return gd_err_set(err, GD_ENOMEM, "out of memory");
    /* missing parent folders are made (mkdir -p), and removed again if nothing is committed */
    int rc = gd_dir_make_parents(dir, w->made, sizeof w->made, err);
    if (rc != 0) {
        free(w);
        return rc;
    }
    if (mkdtemp(tmpl) == NULL) {
        int e = errno;
        gd_dir_remove_made(dir, w->made);
        free(w);
        return gd_err_set(err, e == ENOENT ? GD_ENOENT : GD_EIO,
                          "cannot make a folder in %s: %s", parent, strerror(e));
    }
    char layers[PATH_MAX];
    gd__pathf(layers, sizeof layers, NULL, "%s/layers", tmpl);
    w->tmp = gd__strdup(tmpl);
    w->dir = gd__strdup(dir);
    w->replace = replace;
    if (mkdir(layers, 0755) != 0 || w->tmp == NULL || w->dir == NULL) {
        int e = errno;
        remove_tree(tmpl);
        gd_dir_remove_made(dir, w->made);
        free(w->tmp);
        free(w->dir);
        free(w);
        return gd_err_set(err, GD_EIO, "cannot make %s: %s", layers, strerror(e));
    }
    *out = w;
    return 0;
}

/* Layer names become file names: anything outside [A-Za-z0-9._-] becomes '_'. */
static void
file_name(int index, const char *name, char *out, size_t size)
{
    char clean[96];
    size_t n = 0;
    for (const char *p = name; *p && n < sizeof clean - 1; p++) {
        char ch = *p;
        int ok = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
                 ch == '.' || ch == '_' || ch == '-';
        clean[n++] = ok ? ch : '_';
    }
    clean[n] = '\0';
    if (n == 0 || clean[0] == '.')
        clean[0] = '_';
    snprintf(out, size, "layers/%04d-%s.npy", index, clean);
}

/*
 * The stats of n values of one float type, folded into lo in element order: min and max by
 * strict comparison (of equal zeros the first stays) and the sum added one value at a time
 * in double, so the mean is the same number however the layer arrives. A loop per type
 * instead of gd_tensor_get_f64() per element: the capture of a large run pays this on every
 * value.
 */
#define STATS_LOOP(name, type)                                                                  \
    static void name(struct layer_out *lo, const type *v, int64_t n)                            \
    {                                                                                           \
        double lo_v = INFINITY, hi_v = -INFINITY, sum = lo->sum;                                \
        int64_t nan = 0, inf = 0;                                                               \
        for (int64_t i = 0; i < n; i++) {                                                       \
            double d = v[i];                                                                    \
            if (isnan(d)) {                                                                     \
                nan++;                                                                          \
            } else if (isinf(d)) {                                                              \
                inf++;                                                                          \
            } else {                                                                            \
                lo_v = d < lo_v ? d : lo_v;                                                     \
                hi_v = d > hi_v ? d : hi_v;                                                     \
                sum += d;                                                                       \
            }                                                                                   \
        }                                                                                       \
        struct gd_layer_stats *s = &lo->stats;                                                  \
        s->nan_count += nan;                                                                    \
        s->inf_count += inf;                                                                    \
        lo->sum = sum;                                                                          \
        if (n - nan - inf > 0) {                                                                \
            if (isnan(s->min) || lo_v < s->min)                                                 \
                s->min = lo_v;                                                                  \
            if (isnan(s->max) || hi_v > s->max)                                                 \
                s->max = hi_v;                                                                  \
        }                                                                                       \
    }

STATS_LOOP(stats_f32, float)
STATS_LOOP(stats_f64, double)

static void
stats_update(struct layer_out *lo, const struct gd_tensor *t)
{
    int64_t n = gd_tensor_numel(t);
    struct gd_layer_stats *s = &lo->stats;
    s->count += n;
    if (t->dtype == GD_F32) {
        stats_f32(lo, t->data, n);
        return;
    }
    if (t->dtype == GD_F64) {
        stats_f64(lo, t->data, n);
        return;
    }
    if (!gd_dtype_is_float(t->dtype) && t->dtype != GD_BOOL && t->dtype != GD_I64 &&
        t->dtype != GD_I32)
        return;
    for (int64_t i = 0; i < n; i++) {
        double v = gd_tensor_get_f64(t, i);
        if (isnan(v)) {
            s->nan_count++;
            continue;
        }
        if (isinf(v)) {
            s->inf_count++;
            continue;
        }
        if (isnan(s->min) || v < s->min)
            s->min = v;
        if (isnan(s->max) || v > s->max)
            s->max = v;
        lo->sum += v;
    }
}

static struct layer_out *
layer_slot(struct gd_bundle_writer *w, int index, struct gd_err *err)
{
    if (index < 0 || index > 1000000) {
        gd_err_set(err, GD_ERANGE, "layer index %d", index);
        return NULL;
    }
    if (index >= w->n) {
        int n = index + 1;
        struct layer_out *l = realloc(w->layers, (size_t)n * sizeof *l);
        if (l == NULL) {
            gd_err_set(err, GD_ENOMEM, "out of memory");
            return NULL;
        }
        memset(l + w->n, 0, (size_t)(n - w->n) * sizeof *l);
        w->layers = l;
        w->n = n;
    }
    return &w->layers[index];
}

static int layer_record(struct layer_out *lo, const struct gd_graph *g,
                        const struct gd_layer *layer, const int64_t *shape);

/* Starts a layer: its file with the header of the whole shape, its hash and record. */
static int
layer_begin(struct gd_bundle_writer *w, struct layer_out *lo, const struct gd_graph *g,
            const struct gd_layer *layer, struct gd_err *err)
{
    const struct gd_tensor *t = layer->value;
    int64_t shape[GD_MAX_DIMS];
    memcpy(shape, t->shape, sizeof shape);
    if (t->ndim > 0)
        shape[0] = layer->batch_total;
    lo->rows_total = t->ndim > 0 ? layer->batch_total : 1;
    lo->has_file = t->data != NULL;
    if (!lo->has_file)
        return layer_record(lo, g, layer, shape);
    file_name(layer->index, layer->name, lo->file, sizeof lo->file);
    unsigned char header[512];
    size_t hlen;
    int rc = gd_npy_header_write(t->dtype, t->ndim, shape, header, sizeof header, &hlen, err);
    if (rc != 0)
        return gd_err_prefix(err, "layer %s: ", layer->name);
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/%s", w->tmp, lo->file);
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0644);
    if (fd < 0)
        return gd_err_set(err, GD_EIO, "%s: %s", path, strerror(errno));
    int wrc = write_all(fd, header, hlen);
    int e = errno;
    close(fd);
    if (wrc != 0)
        return gd_err_set(err, GD_EIO, "%s: %s", path, strerror(e));
    rc = gd_sha256_init(&lo->hash, err);
    if (rc != 0)
        return rc;
    return layer_record(lo, g, layer, shape);
}

/* The layer's run.json record, less what finish_layers() adds. */
static int
layer_record(struct layer_out *lo, const struct gd_graph *g, const struct gd_layer *layer,
             const int64_t *shape)
{
    const struct gd_tensor *t = layer->value;
    lo->used = 1;
    lo->stats.min = lo->stats.max = NAN;
    json_t *jshape = json_array();
    for (int i = 0; i < t->ndim; i++)
        json_array_append_new(jshape, json_integer(shape[i]));
    lo->rec = json_object();
    json_object_set_new(lo->rec, "index", json_integer(layer->index));
    json_object_set_new(lo->rec, "name", json_string(layer->name));
    json_object_set_new(lo->rec, "node", json_string(layer->node_name ? layer->node_name : ""));
    json_object_set_new(lo->rec, "op", json_string(layer->node_name ? gd_op_name(layer->op)
                                                                    : ""));
    json_object_set_new(lo->rec, "dtype", json_string(gd_dtype_name(t->dtype)));
    json_object_set_new(lo->rec, "shape", jshape);
    if (lo->has_file)
        json_object_set_new(lo->rec, "file", json_string(lo->file));
    if (layer->algo && layer->algo[0])
        json_object_set_new(lo->rec, "algo", json_string(layer->algo));
    if (layer->math && layer->math[0])
        json_object_set_new(lo->rec, "math", json_string(layer->math));
    if (g != NULL && layer->node_index >= 0) {
        /* The layers this one reads: what a comparison follows to see where error came from. */
        const struct gd_node *node = &g->nodes[layer->node_index];
        json_t *ins = json_array();
        for (int i = 0; i < node->n_inputs; i++)
            if (node->inputs[i] >= 0 && g->values[node->inputs[i]].producer >= 0)
                json_array_append_new(ins, json_string(g->values[node->inputs[i]].name));
        json_object_set_new(lo->rec, "inputs", ins);
        const struct gd_op_info *info = gd_op_info(layer->op);
        json_object_set_new(lo->rec, "reduction_len",
                            json_integer(gd_node_reduction_len(g, layer->node_index)));
        json_object_set_new(lo->rec, "discontinuous", json_boolean(info->discontinuous));
    } else if (g == NULL && layer->node_name != NULL && gd_op_info(layer->op) != NULL) {
        /* a dump's layer of a known op: its traits, and the reduction length when given */
        if (layer->reduction_len > 0)
            json_object_set_new(lo->rec, "reduction_len", json_integer(layer->reduction_len));
        json_object_set_new(lo->rec, "discontinuous",
                            json_boolean(gd_op_info(layer->op)->discontinuous));
    }
    return 0;
}

int
gd_bundle_writer_layer(struct gd_bundle_writer *w, const struct gd_graph *g,
                       const struct gd_layer *layer, struct gd_err *err)
{
    const struct gd_tensor *t = layer->value;
    /* A piece (knobs.host_memory) carries elements of the output whose shape it names:
     * the header and the row count are that output's. */
    struct gd_tensor whole;
    struct gd_layer as_whole;
    const struct gd_tensor *out = t;
    int piece = layer->piece_ndim > 0;
    if (piece) {
        whole = *t;
        whole.ndim = layer->piece_ndim;
        memcpy(whole.shape, layer->piece_shape, (size_t)layer->piece_ndim * sizeof whole.shape[0]);
        as_whole = *layer;
        as_whole.value = &whole;
        out = &whole;
    }
    struct layer_out *lo = layer_slot(w, layer->index, err);
    if (lo == NULL)
        return err ? err->code : GD_ENOMEM;
    int rc = 0;
    if (!lo->used) {
        if (layer->batch_offset != 0 || layer->piece_offset != 0)
            return gd_err_set(err, GD_EINVAL, "layer %s: first slice at row %lld, element %lld",
                              layer->name, (long long)layer->batch_offset,
                              (long long)layer->piece_offset);
        rc = layer_begin(w, lo, g, piece ? &as_whole : layer, err);
        if (rc != 0)
            return rc;
    }
    int64_t rows = out->ndim > 0 ? out->shape[0] : 1;
    if (layer->piece_offset != lo->piece_done)
        return gd_err_set(err, GD_EINVAL, "layer %s: piece at element %lld, expected %lld",
                          layer->name, (long long)layer->piece_offset,
                          (long long)lo->piece_done);
    if (out->ndim > 0 && layer->batch_offset != lo->rows_done)
        return gd_err_set(err, GD_EINVAL, "layer %s: slice at row %lld, expected %lld",
                          layer->name, (long long)layer->batch_offset,
                          (long long)lo->rows_done);
    if (lo->rows_done + rows > lo->rows_total ||
        (piece && layer->piece_offset + gd_tensor_numel(t) > gd_tensor_numel(out)))
        return gd_err_set(err, GD_EINVAL, "layer %s: more rows than its shape", layer->name);
    if ((t->data != NULL) != lo->has_file)
        return gd_err_set(err, GD_EINVAL, "layer %s: slices with and without data", layer->name);
    if (layer->fingerprint != NULL) {
        /* a fingerprint covers the whole layer: never a slice of it */
        if (layer->batch_offset != 0 || rows != lo->rows_total || lo->fp != NULL)
            return gd_err_set(err, GD_EINVAL, "layer %s: a fingerprint of a slice", layer->name);
        lo->fp = malloc(sizeof *lo->fp);
        if (lo->fp == NULL)
            return gd_err_set(err, GD_ENOMEM, "out of memory");
        memcpy(lo->fp, layer->fingerprint, sizeof *lo->fp);
    }
    if (!lo->has_file) {
        lo->rows_done += rows;
        if (layer->time_us >= 0) {
            lo->time_us += layer->time_us;
            lo->timed = 1;
        }
        return 0;
    }
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/%s", w->tmp, lo->file);
    int fd = open(path, O_WRONLY | O_APPEND);
    if (fd < 0)
        return gd_err_set(err, GD_EIO, "%s: %s", path, strerror(errno));
    size_t nbytes = gd_tensor_nbytes(t);
    int wrc = write_all(fd, t->data, nbytes);
    int e = errno;
    close(fd);
    if (wrc != 0)
        return gd_err_set(err, GD_EIO, "%s: %s", path, strerror(e));
    rc = gd_sha256_update(&lo->hash, t->data, nbytes, err);
    if (rc != 0)
        return rc;
    stats_update(lo, t);
    if (layer->time_us >= 0) { /* a piece after the first brings 0 */
        lo->time_us += layer->time_us;
        lo->timed = 1;
    }
    lo->piece_done += piece ? gd_tensor_numel(t) : 0;
    if (piece && lo->piece_done < gd_tensor_numel(out))
        return 0; /* the rest of this output comes in the next pieces */
    lo->piece_done = 0;
    lo->rows_done += rows;
    return 0;
}

int
gd_bundle_writer_count(const struct gd_bundle_writer *w)
{
    return w->n;
}

const struct gd_layer_stats *
gd_bundle_writer_stats(const struct gd_bundle_writer *w, int i)
{
    if (i < 0 || i >= w->n || !w->layers[i].used)
        return NULL;
    struct layer_out *lo = &w->layers[i];
    int64_t finite = lo->stats.count - lo->stats.nan_count - lo->stats.inf_count;
    lo->stats.mean = finite > 0 ? lo->sum / (double)finite : NAN;
    return &lo->stats;
}

static json_t *
json_finite(double v)
{
    return isfinite(v) ? json_real(v) : json_null();
}

/* fp: the layer's fingerprint into its record, made from its file when it came without one
 * and the writer was asked for them. */
static int
finish_fingerprint(struct gd_bundle_writer *w, struct layer_out *lo, struct gd_err *err)
{
    if (lo->fp == NULL && lo->has_file && w->fingerprints) {
        char path[PATH_MAX];
        snprintf(path, sizeof path, "%s/%s", w->tmp, lo->file);
        struct gd_tensor *t = NULL;
        int rc = gd_npy_load(path, &t, err);
        if (rc != 0)
            return rc;
        lo->fp = malloc(sizeof *lo->fp);
        rc = lo->fp == NULL ? gd_err_set(err, GD_ENOMEM, "out of memory")
                            : gd_fingerprint_compute(t, lo->fp, err);
        gd_tensor_free(t);
        if (rc != 0)
            return rc;
    }
    if (lo->fp == NULL && !lo->has_file)
        return gd_err_set(err, GD_EINVAL, "neither a tensor nor a fingerprint");
    if (lo->fp != NULL && json_object_get(lo->rec, "fingerprint") == NULL)
        json_object_set_new(lo->rec, "fingerprint", gd_fingerprint_to_json(lo->fp));
    return 0;
}

void
gd_bundle_writer_set_fingerprints(struct gd_bundle_writer *w, int on)
{
    w->fingerprints = on;
}

/* Completes every layer record: hash, stats, time. */
static int
finish_layers(struct gd_bundle_writer *w, struct gd_err *err)
{
    json_decref(w->layers_json);
    w->layers_json = json_array();
    for (int i = 0; i < w->n; i++) {
        struct layer_out *lo = &w->layers[i];
        if (!lo->used)
            return gd_err_set(err, GD_EINVAL, "layer %d was never written", i);
        if (lo->rows_done != lo->rows_total)
            return gd_err_set(err, GD_EINVAL, "layer %d has %lld of %lld rows", i,
                              (long long)lo->rows_done, (long long)lo->rows_total);
        if (json_object_get(lo->rec, "time_us") == NULL) {
            int rc = finish_fingerprint(w, lo, err);
            if (rc != 0)
                return gd_err_prefix(err, "layer %d: ", i);
        }
        if (!lo->has_file && json_object_get(lo->rec, "time_us") == NULL) {
            const struct gd_fingerprint *f = lo->fp;
            json_t *js = json_object();
            json_object_set_new(js, "min", json_finite(f->min));
            json_object_set_new(js, "max", json_finite(f->max));
            json_object_set_new(js, "mean", json_finite(gd_fingerprint_mean(f)));
            json_object_set_new(js, "nan", json_integer(f->nan_count));
            json_object_set_new(js, "inf", json_integer(f->inf_count));
            json_object_set_new(lo->rec, "time_us", lo->timed ? json_real(lo->time_us)
                                                              : json_null());
            json_object_set_new(lo->rec, "stats", js);
        }
        if (lo->has_file && json_object_get(lo->rec, "sha256") == NULL) {
            char hex[GD_SHA256_HEX_LEN + 1];
            int rc = gd_sha256_final(&lo->hash, hex, err);
            if (rc != 0)
                return rc;
            const struct gd_layer_stats *s = gd_bundle_writer_stats(w, i);
            json_t *js = json_object();
            json_object_set_new(js, "min", json_finite(s->min));
            json_object_set_new(js, "max", json_finite(s->max));
            json_object_set_new(js, "mean", json_finite(s->mean));
            json_object_set_new(js, "nan", json_integer(s->nan_count));
            json_object_set_new(js, "inf", json_integer(s->inf_count));
            json_object_set_new(lo->rec, "sha256", json_string(hex));
            json_object_set_new(lo->rec, "time_us", lo->timed ? json_real(lo->time_us)
                                                              : json_null());
            json_object_set_new(lo->rec, "stats", js);
        }
        json_array_append(w->layers_json, lo->rec);
    }
    return 0;
}

const char *
gd_bundle_writer_layer_name(const struct gd_bundle_writer *w, int i)
{
    if (i < 0 || i >= w->n || !w->layers[i].used)
        return NULL;
    return json_string_value(json_object_get(w->layers[i].rec, "name"));
}

int
gd_bundle_writer_layer_note(struct gd_bundle_writer *w, int i, const char *key, json_t *value,
                            struct gd_err *err)
{
    if (i < 0 || i >= w->n || !w->layers[i].used || json_object_get(w->layers[i].rec, key)) {
        json_decref(value);
        return gd_err_set(err, GD_EINVAL, "layer %d has no record, or has %s already", i, key);
    }
    if (value == NULL || json_object_set_new(w->layers[i].rec, key, value) != 0)
        return gd_err_set(err, GD_ENOMEM, "out of memory");
    return 0;
}

json_t *
gd_bundle_writer_layers(const struct gd_bundle_writer *w)
{
    return w->layers_json;
}

int
gd_bundle_writer_commit(struct gd_bundle_writer *w, json_t *meta, struct gd_err *err)
{
    int rc = finish_layers(w, err);
    if (rc != 0)
        return rc;
    json_t *run = json_deep_copy(meta);
    if (run == NULL)
        return gd_err_set(err, GD_ENOMEM, "out of memory");
    json_object_set_new(run, "format", json_string(GD_BUNDLE_FORMAT));
    json_object_set_new(run, "version", json_integer(GD_BUNDLE_VERSION));
    json_object_set(run, "layers", w->layers_json);
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/run.json", w->tmp);
    int jrc = json_dump_file(run, path, JSON_INDENT(1) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(17));
    json_decref(run);
    if (jrc != 0)
        return gd_err_set(err, GD_EIO, "cannot write %s", path);
    /* Everything reaches the disk before the folder appears under its name. */
    for (int i = 0; i < w->n; i++) {
        if (!w->layers[i].has_file)
            continue;
        snprintf(path, sizeof path, "%s/%s", w->tmp, w->layers[i].file);
        if (fsync_path(path, 0) != 0)
            return gd_err_set(err, GD_EIO, "%s: %s", path, strerror(errno));
    }
    snprintf(path, sizeof path, "%s/run.json", w->tmp);
    if (fsync_path(path, 0) != 0)
        return gd_err_set(err, GD_EIO, "%s: %s", path, strerror(errno));
    snprintf(path, sizeof path, "%s/layers", w->tmp);
    fsync_path(path, 1);
    fsync_path(w->tmp, 1);
    char old[PATH_MAX] = "";
    struct stat st;
    if (w->replace && stat(w->dir, &st) == 0) {
        snprintf(old, sizeof old, "%s.old-%ld", w->tmp, (long)getpid());
        if (rename(w->dir, old) != 0)
            return gd_err_set(err, GD_EIO, "cannot move the old %s aside: %s", w->dir,
                              strerror(errno));
    }
    if (rename(w->tmp, w->dir) != 0) {
        int e = errno;
        if (old[0])
            rename(old, w->dir);
        return gd_err_set(err, e == EEXIST || e == ENOTEMPTY ? GD_EEXIST : GD_EIO,
                          "cannot move the bundle to %s: %s", w->dir, strerror(e));
    }
    w->committed = 1;
    if (old[0])
        remove_tree(old);
    char copy[PATH_MAX];
    snprintf(copy, sizeof copy, "%s", w->dir);
    fsync_path(dirname(copy), 1);
    return 0;
}

void
gd_bundle_writer_free(struct gd_bundle_writer *w)
{
    if (w == NULL)
        return;
    if (!w->committed) {
        remove_tree(w->tmp);
        gd_dir_remove_made(w->dir, w->made);
    }
    for (int i = 0; i < w->n; i++) {
        gd_sha256_fini(&w->layers[i].hash);
        json_decref(w->layers[i].rec);
        free(w->layers[i].fp);
    }
    json_decref(w->layers_json);
    free(w->layers);
    free(w->tmp);
    free(w->dir);
    free(w);
}

