/* array.c: loading one array from a .npy, .npz or safetensors file, told apart by content. */
#include <string.h>
#include <unistd.h>

#include "gpudiff/io.h"
#include "io_internal.h"

enum array_format {
    ARRAY_UNKNOWN,
    ARRAY_NPY,
    ARRAY_NPZ,
    ARRAY_SAFETENSORS,
};

/* Looks at the first bytes: the .npy magic, a ZIP record, or a length then a JSON object. */
static int
sniff(const char *path, enum array_format *format, struct gd_err *err)
{
    unsigned char head[9];
    uint64_t size;
    size_t got;
    int fd;
    int rc = gd__file_open(path, &fd, &size, err);
    if (rc != 0)
        return rc;
    rc = gd__file_pread(fd, path, 0, head, sizeof head, &got, err);
    close(fd);
    if (rc != 0)
        return rc;
    *format = ARRAY_UNKNOWN;
    if (got >= 6 && memcmp(head, "\x93NUMPY", 6) == 0) {
        *format = ARRAY_NPY;
    } else if (got >= 4 && (memcmp(head, "PK\x03\x04", 4) == 0 ||
                            memcmp(head, "PK\x05\x06", 4) == 0)) {
        *format = ARRAY_NPZ; /* a member first, or the end record of an empty archive */
    } else if (got == sizeof head && head[8] == '{') {
        uint64_t header_len = gd__le64(head);
        if (header_len >= 2 && header_len <= size - 8)
            *format = ARRAY_SAFETENSORS;
    }
    return 0;
}

/* The key to load from an archive: the one asked for, or the only member there is. */
static int
pick_key(const char *path, const char *key, int count, gd__name_fn name, const void *obj,
         const char **pick, struct gd_err *err)
{
    if (key != NULL) {
        *pick = key;
        return 0;
    }
    if (count == 1) {
        *pick = name(obj, 0);
        return 0;
    }
    if (count == 0)
        return gd_err_set(err, GD_ENOENT, "%s: holds no arrays", path);
    char list[160];
    gd__names_join(list, sizeof list, count, name, obj);
    return gd_err_set(err, GD_EINVAL, "%s: holds %d arrays (%s); say which", path, count, list);
}

static const char *
npz_key(const void *z, int i)
{
    return gd_npz_name(z, i);
}

static const char *
safetensors_key(const void *st, int i)
{
    return gd_safetensors_name(st, i);
}

static int
load_npz(const char *path, const char *key, struct gd_tensor **out, struct gd_err *err)
{
    struct gd_npz *z = NULL;
    const char *pick = NULL;
    int rc = gd_npz_open(path, &z, err);
    if (rc != 0)
        return rc;
    rc = pick_key(path, key, gd_npz_count(z), npz_key, z, &pick, err);
    if (rc == 0)
        rc = gd_npz_load(z, pick, out, err);
    gd_npz_close(z);
    return rc;
}

static int
load_safetensors(const char *path, const char *key, struct gd_tensor **out, struct gd_err *err)
{
    struct gd_safetensors *st = NULL;
    const char *pick = NULL;
    int rc = gd_safetensors_open(path, &st, err);
    if (rc != 0)
        return rc;
    rc = pick_key(path, key, gd_safetensors_count(st), safetensors_key, st, &pick, err);
    if (rc == 0)
        rc = gd_safetensors_load(st, pick, out, err);
    gd_safetensors_close(st);
    return rc;
}

int
gd_array_load(const char *path, const char *key, struct gd_tensor **out, struct gd_err *err)
{
    enum array_format format;
    int rc = sniff(path, &format, err);
    if (rc != 0)
        return rc;
    switch (format) {
    case ARRAY_NPY:
        if (key != NULL)
            return gd_err_set(err, GD_EINVAL, "%s: a .npy file holds one array; key '%s' "
                              "does not apply", path, key);
        return gd_npy_load(path, out, err);
    case ARRAY_NPZ:
        return load_npz(path, key, out, err);
    case ARRAY_SAFETENSORS:
        return load_safetensors(path, key, out, err);
    case ARRAY_UNKNOWN:
        break;
    }
    return gd_err_set(err, GD_EFORMAT, "%s: not a .npy, .npz or safetensors file", path);
}
