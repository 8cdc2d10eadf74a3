/* safetensors.c: reading safetensors files (a JSON header, then little-endian C-order data). */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "gpudiff/io.h"
#include "io_internal.h"

/* The safetensors library refuses headers over 100 MB; so do we. */
#define ST_HEADER_MAX 100000000u

struct st_tensor {
    char *name;
    char dtype_name[16];    /* as the file spells it, for the message when unsupported */
    int dtype_ok;
    enum gd_dtype dtype;
    int ndim;
    int64_t shape[GD_MAX_DIMS];
    uint64_t begin;         /* offsets from the start of the data */
    uint64_t end;
};

struct gd_safetensors {
    char *path;
    int fd;
    uint64_t data_off;      /* where the data starts: 8 + header length */
    int count;
    struct st_tensor *tensors;
};

static const struct {
    const char *name;
    enum gd_dtype dtype;
} st_dtypes[] = {
    {"F32", GD_F32}, {"F64", GD_F64}, {"F16", GD_F16}, {"BF16", GD_BF16},
    {"I8", GD_I8},   {"I16", GD_I16}, {"I32", GD_I32}, {"I64", GD_I64},
    {"U8", GD_U8},   {"U16", GD_U16}, {"U32", GD_U32}, {"U64", GD_U64},
    {"BOOL", GD_BOOL},
};

/* Reads a JSON integer in [0, max]; -1 when it is not one. */
static int
json_uint(const json_t *v, uint64_t max, uint64_t *out)
{
    if (!json_is_integer(v) || json_integer_value(v) < 0 ||
        (uint64_t)json_integer_value(v) > max)
        return -1;
    *out = (uint64_t)json_integer_value(v);
    return 0;
}

/* Checks one header entry against the file and records where its data is. */
static int
parse_entry(const char *path, const char *name, const json_t *v, uint64_t data_len,
            struct st_tensor *t, struct gd_err *err)
{
    const json_t *dtype = json_object_get(v, "dtype");
    const json_t *shape = json_object_get(v, "shape");
    const json_t *offsets = json_object_get(v, "data_offsets");
    if (!json_is_object(v) || !json_is_string(dtype) || !json_is_array(shape) ||
        !json_is_array(offsets))
        return gd_err_set(err, GD_EFORMAT,
                          "%s: tensor '%s' lacks a dtype string, a shape or data_offsets", path,
                          name);
    snprintf(t->dtype_name, sizeof t->dtype_name, "%s", json_string_value(dtype));
    for (size_t i = 0; i < sizeof st_dtypes / sizeof st_dtypes[0]; i++) {
        if (strcmp(json_string_value(dtype), st_dtypes[i].name) == 0) {
            t->dtype = st_dtypes[i].dtype;
            t->dtype_ok = 1;
        }
    }
    if (json_array_size(shape) > GD_MAX_DIMS)
        return gd_err_set(err, GD_EFORMAT, "%s: tensor '%s' has %zu dimensions (at most %d)",
                          path, name, json_array_size(shape), GD_MAX_DIMS);
    t->ndim = (int)json_array_size(shape);
    for (int i = 0; i < t->ndim; i++) {
        uint64_t dim;
        if (json_uint(json_array_get(shape, (size_t)i), INT64_MAX, &dim) != 0)
            return gd_err_set(err, GD_EFORMAT,
                              "%s: tensor '%s': dimension %d is not a non-negative integer",
                              path, name, i);
        t->shape[i] = (int64_t)dim;
    }
    if (json_array_size(offsets) != 2 ||
        json_uint(json_array_get(offsets, 0), data_len, &t->begin) != 0 ||
        json_uint(json_array_get(offsets, 1), data_len, &t->end) != 0 || t->begin > t->end)
        return gd_err_set(err, GD_EFORMAT,
                          "%s: tensor '%s': data_offsets are not [begin, end] within the %llu "
                          "bytes of data", path, name, (unsigned long long)data_len);
    if (!t->dtype_ok)
        return 0; /* reported when loaded: the other tensors stay readable */
    struct gd_err shape_err;
    gd_err_clear(&shape_err);
    if (gd_shape_check(t->ndim, t->shape, gd_dtype_size(t->dtype), &shape_err) != 0)
        return gd_err_set(err, GD_EFORMAT, "%s: tensor '%s': %s", path, name, shape_err.msg);
    uint64_t need = gd_dtype_size(t->dtype);
    for (int i = 0; i < t->ndim; i++)
        need *= (uint64_t)t->shape[i];
    if (t->end - t->begin != need)
        return gd_err_set(err, GD_EFORMAT,
                          "%s: tensor '%s' spans %llu bytes, its shape and dtype need %llu", path,
                          name, (unsigned long long)(t->end - t->begin),
                          (unsigned long long)need);
    return 0;
}

void
gd_safetensors_close(struct gd_safetensors *st)
{
    if (st == NULL)
        return;
    if (st->fd >= 0)
        close(st->fd);
    for (int i = 0; i < st->count; i++)
        free(st->tensors[i].name);
    free(st->tensors);
    free(st->path);
    free(st);
}

int
gd_safetensors_open(const char *path, struct gd_safetensors **out, struct gd_err *err)
{
    char *text = NULL;
    json_t *root = NULL;
    uint64_t size;
    unsigned char len_bytes[8];
    size_t got;
    struct gd_safetensors *st = calloc(1, sizeof *st);
    int rc;
    if (st == NULL || (st->path = strdup(path)) == NULL) {
        free(st);
        return gd_err_set(err, GD_ENOMEM, "%s: out of memory", path);
    }
    st->fd = -1;
    rc = gd__file_open(path, &st->fd, &size, err);
    if (rc != 0)
        goto done;
    rc = gd__file_pread(st->fd, path, 0, len_bytes, sizeof len_bytes, &got, err);
    if (rc != 0)
        goto done;
    if (got < sizeof len_bytes) {
        rc = gd_err_set(err, GD_EFORMAT, "%s: too short for a safetensors header (%zu bytes)",
                        path, got);
        goto done;
    }
    uint64_t header_len = gd__le64(len_bytes);
    if (header_len > size - 8) {
        rc = gd_err_set(err, GD_EFORMAT,
                        "%s: safetensors header length %llu runs past the end of the file "
                        "(%llu bytes)", path, (unsigned long long)header_len,
                        (unsigned long long)size);
        goto done;
    }
    if (header_len > ST_HEADER_MAX) {
        rc = gd_err_set(err, GD_EFORMAT, "%s: safetensors header of %llu bytes is over the "
                        "limit of %u", path, (unsigned long long)header_len, ST_HEADER_MAX);
        goto done;
    }
    text = malloc(header_len ? (size_t)header_len : 1);
    if (text == NULL) {
        rc = gd_err_set(err, GD_ENOMEM, "%s: out of memory for the header", path);
        goto done;
    }
    rc = gd__file_pread(st->fd, path, 8, text, (size_t)header_len, &got, err);
    if (rc != 0)
        goto done;
    if (got != header_len) {
        rc = gd_err_set(err, GD_EFORMAT, "%s: safetensors header is cut short", path);
        goto done;
    }
    json_error_t jerr;
    root = json_loadb(text, (size_t)header_len, JSON_REJECT_DUPLICATES, &jerr);
    if (root == NULL || !json_is_object(root)) {
        rc = gd_err_set(err, GD_EFORMAT, "%s: safetensors header is not a JSON object%s%s", path,
                        root == NULL ? ": " : "", root == NULL ? jerr.text : "");
        goto done;
    }
    st->data_off = 8 + header_len;
    st->tensors = calloc(json_object_size(root) + 1, sizeof *st->tensors);
    if (st->tensors == NULL) {
        rc = gd_err_set(err, GD_ENOMEM, "%s: out of memory for the tensor list", path);
        goto done;
    }
    const char *name;
    json_t *v;
    json_object_foreach(root, name, v) {
        if (strcmp(name, "__metadata__") == 0)
            continue;
        struct st_tensor *t = &st->tensors[st->count];
        if ((t->name = strdup(name)) == NULL) {
            rc = gd_err_set(err, GD_ENOMEM, "%s: out of memory for tensor names", path);
            goto done;
        }
        st->count++;
        rc = parse_entry(path, name, v, size - st->data_off, t, err);
        if (rc != 0)
            goto done;
    }
    *out = st;
    st = NULL;
done:
    json_decref(root);
    free(text);
    gd_safetensors_close(st);
    return rc;
}

int
gd_safetensors_count(const struct gd_safetensors *st)
{
    return st->count;
}

const char *
gd_safetensors_name(const struct gd_safetensors *st, int i)
{
    return i >= 0 && i < st->count ? st->tensors[i].name : NULL;
}

static const char *
tensor_name(const void *st, int i)
{
    return gd_safetensors_name(st, i);
}

int
gd_safetensors_load(struct gd_safetensors *st, const char *key, struct gd_tensor **out,
                    struct gd_err *err)
{
    const struct st_tensor *t = NULL;
    for (int i = 0; i < st->count && t == NULL; i++)
        if (strcmp(st->tensors[i].name, key) == 0)
            t = &st->tensors[i];
    if (t == NULL) {
        char list[160];
        gd__names_join(list, sizeof list, st->count, tensor_name, st);
        return gd_err_set(err, GD_ENOENT, "%s: no tensor '%s' (tensors: %s)", st->path, key,
                          list);
    }
    if (!t->dtype_ok)
        return gd_err_set(err, GD_EDTYPE, "%s: tensor '%s' has dtype '%s', which is not supported",
                          st->path, t->name, t->dtype_name);
    struct gd_tensor *x = gd_tensor_new(t->dtype, t->ndim, t->shape, err);
    if (x == NULL)
        return err != NULL ? gd_err_prefix(err, "%s: tensor '%s': ", st->path, t->name)
                           : GD_ENOMEM;
    size_t len = (size_t)(t->end - t->begin);
    size_t got;
    int rc = gd__file_pread(st->fd, st->path, st->data_off + t->begin, x->data, len, &got, err);
    if (rc == 0 && got != len)
        rc = gd_err_set(err, GD_EFORMAT, "%s: tensor '%s': the file ends inside its data",
                        st->path, t->name);
    if (rc != 0) {
        gd_tensor_free(x);
        return rc;
    }
    size_t numel = (size_t)gd_tensor_numel(x);
    if (GD__HOST_BIG_ENDIAN)
        gd__bswap(x->data, numel, gd_dtype_size(x->dtype));
    if (x->dtype == GD_BOOL)
        gd__bool_normalize(x->data, numel);
    *out = x;
    return 0;
}
