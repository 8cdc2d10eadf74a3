/*
 * onnx_tensor.c: ONNX TensorProto to struct gd_tensor, the one decoder for initializers,
 * Constant values and the .pb files of the ONNX test data: raw_data (little-endian), the
 * typed fields, and external data files relative to the model's folder.
 */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../core/internal.h"
#include "io_internal.h"
#include "onnx_internal.h"

/* TensorProto.DataType: ONNX's name, and the engine's dtype (-1 when it has none). */
static const struct {
    const char *name;
    int dtype;
} onnx_types[] = {
    [0] = {"UNDEFINED", -1},    [1] = {"FLOAT", GD_F32},    [2] = {"UINT8", GD_U8},
    [3] = {"INT8", GD_I8},      [4] = {"UINT16", GD_U16},   [5] = {"INT16", GD_I16},
    [6] = {"INT32", GD_I32},    [7] = {"INT64", GD_I64},    [8] = {"STRING", -1},
    [9] = {"BOOL", GD_BOOL},    [10] = {"FLOAT16", GD_F16}, [11] = {"DOUBLE", GD_F64},
    [12] = {"UINT32", GD_U32},  [13] = {"UINT64", GD_U64},  [14] = {"COMPLEX64", -1},
    [15] = {"COMPLEX128", -1},  [16] = {"BFLOAT16", GD_BF16},
    [17] = {"FLOAT8E4M3FN", -1}, [18] = {"FLOAT8E4M3FNUZ", -1}, [19] = {"FLOAT8E5M2", -1},
    [20] = {"FLOAT8E5M2FNUZ", -1}, [21] = {"UINT4", -1},   [22] = {"INT4", -1},
    [23] = {"FLOAT4E2M1", -1},
};
#define N_ONNX_TYPES ((int64_t)(sizeof onnx_types / sizeof onnx_types[0]))

const char *
gd__onnx_dtype_name(int64_t code)
{
    return code >= 0 && code < N_ONNX_TYPES ? onnx_types[code].name : "?";
}

int
gd__onnx_dtype(int64_t code, const char *what, enum gd_dtype *out, struct gd_err *err)
{
    if (code <= 0 || code >= N_ONNX_TYPES)
        return gd_err_set(err, code > 0 ? GD_ENOTSUP : GD_EFORMAT,
                          "%s: data type %lld is %s", what, (long long)code,
                          code > 0 ? "one this build does not know" : "not set");
    if (onnx_types[code].dtype < 0)
        return gd_err_set(err, GD_ENOTSUP, "%s: the engine has no %s tensors", what,
                          onnx_types[code].name);
    *out = (enum gd_dtype)onnx_types[code].dtype;
    return 0;
}

/* ---- external data ---- */

/* Parses a decimal byte count of an external_data entry. */
static int
parse_u64(const char *s, const char *what, const char *key, uint64_t *out, struct gd_err *err)
{
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (s[0] < '0' || s[0] > '9' || *end != '\0' || errno != 0)
        return gd_err_set(err, GD_EFORMAT, "%s: external data %s \"%s\" is not a byte count",
                          what, key, s);
    *out = v;
    return 0;
}

/*
 * The external file's path: location must be relative, without "..", and (symlinks
 * resolved) inside dir, so a model cannot make the loader read what lies outside its folder.
 */
static int
external_path(const char *dir, const char *location, const char *what, char *out, size_t cap,
              struct gd_err *err)
{
    if (location[0] == '\0')
        return gd_err_set(err, GD_EFORMAT, "%s: external data has an empty location", what);
    if (location[0] == '/')
        return gd_err_set(err, GD_EINVAL, "%s: external data location %s is absolute; it must "
                          "be relative to the model's folder", what, location);
    for (const char *p = location; *p != '\0';) {
        size_t n = strcspn(p, "/");
        if (n == 2 && p[0] == '.' && p[1] == '.')
            return gd_err_set(err, GD_EINVAL, "%s: external data location %s leaves the "
                              "model's folder (..)", what, location);
        p += n;
        p += *p == '/';
    }
    char joined[PATH_MAX], real_dir[PATH_MAX];
    int rc = gd__pathf(joined, sizeof joined, err, "%s/%s", dir, location);
    if (rc != 0)
        return rc;
    if (realpath(dir, real_dir) == NULL)
        return gd_err_set(err, GD_EIO, "%s: %s: %s", what, dir, strerror(errno));
    if (realpath(joined, out) == NULL) {
        if (errno == ENOENT)
            return gd_err_set(err, GD_ENOENT, "%s: external data file %s: no such file", what,
                              joined);
        return gd_err_set(err, GD_EIO, "%s: %s: %s", what, joined, strerror(errno));
    }
    (void)cap;
    size_t n = strlen(real_dir);
    if (strncmp(out, real_dir, n) != 0 || (out[n] != '/' && strcmp(real_dir, "/") != 0))
        return gd_err_set(err, GD_EINVAL, "%s: external data file %s is %s, outside the "
                          "model's folder %s (a symbolic link?)", what, joined, out, real_dir);
    return 0;
}

/* Reads head's data (dtype and shape set) from the external file into a new tensor, which
 * is made only once the file is known to hold it. */
static int
read_external(const Onnx__TensorProto *tp, const char *dir, const char *what,
              const struct gd_tensor *head, struct gd_tensor **out, struct gd_err *err)
{
    size_t nbytes = gd_tensor_nbytes(head);
    const char *location = NULL;
    uint64_t offset = 0, length = UINT64_MAX;
    int rc = 0;
    if (dir == NULL)
        return gd_err_set(err, GD_EINVAL, "%s: external data, but no folder to find it in",
                          what);
    for (size_t i = 0; i < tp->n_external_data && rc == 0; i++) {
        const char *key = tp->external_data[i]->key ? tp->external_data[i]->key : "";
        const char *value = tp->external_data[i]->value ? tp->external_data[i]->value : "";
        if (strcmp(key, "location") == 0)
            location = value;
        else if (strcmp(key, "offset") == 0)
            rc = parse_u64(value, what, key, &offset, err);
        else if (strcmp(key, "length") == 0)
            rc = parse_u64(value, what, key, &length, err);
        /* "checksum" (SHA-1) and unknown keys carry nothing the data needs. */
    }
    if (rc != 0)
        return rc;
    if (location == NULL)
        return gd_err_set(err, GD_EFORMAT, "%s: external data without a location", what);
    if (length != UINT64_MAX && length != nbytes)
        return gd_err_set(err, GD_EFORMAT, "%s: external data length %llu, the dims and type "
                          "need %zu bytes", what, (unsigned long long)length, nbytes);
    char path[PATH_MAX];
    rc = external_path(dir, location, what, path, sizeof path, err);
    if (rc != 0)
        return rc;
    int fd = -1;
    uint64_t size = 0;
    rc = gd__file_open(path, &fd, &size, err);
    if (rc != 0)
        return gd_err_prefix(err, "%s: external data: ", what);
    if (offset > size || size - offset < nbytes) {
        rc = gd_err_set(err, GD_EFORMAT, "%s: external data file %s has %llu bytes; offset "
                        "%llu and %zu bytes of data do not fit", what, location,
                        (unsigned long long)size, (unsigned long long)offset, nbytes);
    } else {
        size_t got = 0;
        struct gd_tensor *t = gd_tensor_new(head->dtype, head->ndim, head->shape, err);
        rc = t != NULL ? gd__file_pread(fd, path, offset, t->data, nbytes, &got, err)
                       : (err ? err->code : GD_ENOMEM);
        if (rc == 0 && got != nbytes)
            rc = gd_err_set(err, GD_EIO, "%s: %s ended early", what, path);
        if (rc == 0)
            *out = t;
        else
            gd_tensor_free(t);
    }
    close(fd);
    return rc;
}

/* ---- typed fields ---- */

/* Copies the typed field that holds dtype's values into a new tensor, checking their count
 * (before anything is allocated) and range. */
static int
typed_fields(const Onnx__TensorProto *tp, const struct gd_tensor *head, const char *what,
             struct gd_tensor **out, struct gd_err *err)
{
    enum gd_dtype dtype = head->dtype;
    int64_t numel = gd_tensor_numel(head);
    void *dst = NULL;
    struct gd_tensor *t = NULL;
    size_t have;
    const char *field;
    switch (dtype) {
    case GD_F32:
        have = tp->n_float_data, field = "float_data";
        break;
    case GD_I64:
        have = tp->n_int64_data, field = "int64_data";
        break;
    case GD_F64:
        have = tp->n_double_data, field = "double_data";
        break;
    case GD_U32:
    case GD_U64:
        have = tp->n_uint64_data, field = "uint64_data";
        break;
    default:
        have = tp->n_int32_data, field = "int32_data";
        break;
    }
    if ((int64_t)have != numel)
        return gd_err_set(err, GD_EFORMAT, "%s: %s has %zu values, its dims need %lld", what,
                          have == 0 ? "the tensor holds no data:" : field, have,
                          (long long)numel);
    if ((t = gd_tensor_new(dtype, head->ndim, head->shape, err)) == NULL)
        return err ? err->code : GD_ENOMEM;
    dst = t->data;
    for (int64_t i = 0; i < numel; i++) {
        int64_t lo = INT32_MIN, hi = INT32_MAX, v = 0;
        switch (dtype) {
        case GD_F32:
            ((float *)dst)[i] = tp->float_data[i];
            continue;
        case GD_F64:
            ((double *)dst)[i] = tp->double_data[i];
            continue;
        case GD_I64:
            ((int64_t *)dst)[i] = tp->int64_data[i];
            continue;
        case GD_U64:
            ((uint64_t *)dst)[i] = tp->uint64_data[i];
            continue;
        case GD_U32:
            if (tp->uint64_data[i] > UINT32_MAX) {
                gd_tensor_free(t);
                return gd_err_set(err, GD_EFORMAT, "%s: uint64_data[%lld] = %llu does not fit "
                                  "UINT32", what, (long long)i,
                                  (unsigned long long)tp->uint64_data[i]);
            }
            ((uint32_t *)dst)[i] = (uint32_t)tp->uint64_data[i];
            continue;
        case GD_I8:
            lo = INT8_MIN, hi = INT8_MAX;
            break;
        case GD_I16:
            lo = INT16_MIN, hi = INT16_MAX;
            break;
        case GD_U8:
            lo = 0, hi = UINT8_MAX;
            break;
        case GD_BOOL:
            lo = 0, hi = 1;
            break;
        case GD_U16:
        case GD_F16:
        case GD_BF16: /* the 16 bits of the value (the float formats' bit patterns) */
            lo = 0, hi = UINT16_MAX;
            break;
        default:
            break;
        }
        v = tp->int32_data[i];
        if (dtype == GD_F16 || dtype == GD_BF16)
            v &= 0xffff; /* writers differ in sign-extending the bit pattern */
        if (v < lo || v > hi) {
            gd_tensor_free(t);
            return gd_err_set(err, GD_EFORMAT, "%s: int32_data[%lld] = %lld does not fit %s",
                              what, (long long)i, (long long)v, gd_dtype_name(dtype));
        }
        switch (gd_dtype_size(dtype)) {
        case 1:
            ((uint8_t *)dst)[i] = (uint8_t)v;
            break;
        case 2:
            ((uint16_t *)dst)[i] = (uint16_t)v;
            break;
        default:
            ((int32_t *)dst)[i] = (int32_t)v;
            break;
        }
    }
    *out = t;
    return 0;
}

static int
has_typed_data(const Onnx__TensorProto *tp)
{
    return tp->n_float_data || tp->n_int32_data || tp->n_string_data || tp->n_int64_data ||
           tp->n_double_data || tp->n_uint64_data;
}

int
gd__onnx_tensor(Onnx__TensorProto *tp, const char *what, const char *dir,
                struct gd_tensor **out, struct gd_err *err)
{
    enum gd_dtype dtype;
    int64_t shape[GD_MAX_DIMS];
    if (!tp->has_data_type)
        return gd_err_set(err, GD_EFORMAT, "%s: the tensor has no data_type", what);
    int rc = gd__onnx_dtype(tp->data_type, what, &dtype, err);
    if (rc != 0)
        return rc;
    if (tp->n_dims > GD_MAX_DIMS)
        return gd_err_set(err, GD_ENOTSUP, "%s: %zu dimensions (the engine has at most %d)",
                          what, tp->n_dims, GD_MAX_DIMS);
    for (size_t i = 0; i < tp->n_dims; i++) {
        if (tp->dims[i] < 0)
            return gd_err_set(err, GD_EFORMAT, "%s: dimension %zu is %lld", what, i,
                              (long long)tp->dims[i]);
        shape[i] = tp->dims[i];
    }
    if (tp->segment != NULL)
        return gd_err_set(err, GD_ENOTSUP, "%s: segmented tensors are not supported", what);
    rc = gd_shape_check((int)tp->n_dims, shape, gd_dtype_size(dtype), err);
    if (rc != 0)
        return gd_err_prefix(err, "%s: ", what);
    int external = tp->has_data_location &&
                   tp->data_location == ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL;
    struct gd_tensor head = {.dtype = dtype, .ndim = (int)tp->n_dims};
    memcpy(head.shape, shape, sizeof shape);
    int64_t numel = gd_tensor_numel(&head);
    size_t nbytes = gd_tensor_nbytes(&head);
    int raw = tp->has_raw_data && !external;
    if ((raw || external) && has_typed_data(tp))
        return gd_err_set(err, GD_EFORMAT, "%s: holds both %s and typed fields", what,
                          raw ? "raw_data" : "external data");
    if (raw && tp->raw_data.len != nbytes)
        return gd_err_set(err, GD_EFORMAT, "%s: raw_data holds %zu bytes, %s needs %zu", what,
                          tp->raw_data.len, gd_dtype_name(dtype), nbytes);
    struct gd_tensor *t = NULL;
    if (raw && nbytes > 0 && !GD__HOST_BIG_ENDIAN) {
        /* The buffer protobuf-c made (malloc, the default allocator) becomes the data. */
        t = gd_tensor_wrap(dtype, head.ndim, head.shape, tp->raw_data.data, err);
        if (t == NULL)
            return err ? err->code : GD_ENOMEM;
        t->owns_data = 1;
        tp->raw_data.data = NULL;
        tp->raw_data.len = 0;
    } else if (external) {
        rc = read_external(tp, dir, what, &head, &t, err);
    } else if (!raw && (numel > 0 || has_typed_data(tp))) {
        rc = typed_fields(tp, &head, what, &t, err);
    } else {
        /* raw_data on a big-endian host, or no elements */
        t = gd_tensor_new(dtype, head.ndim, head.shape, err);
        if (t == NULL)
            return err ? err->code : GD_ENOMEM;
        if (raw && nbytes > 0)
            memcpy(t->data, tp->raw_data.data, nbytes);
    }
    if (rc == 0 && (raw || external) && GD__HOST_BIG_ENDIAN)
        gd__bswap(t->data, (size_t)numel, gd_dtype_size(dtype));
    if (rc == 0 && dtype == GD_BOOL)
        gd__bool_normalize(t->data, (size_t)numel);
    if (rc != 0) {
        gd_tensor_free(t);
        return rc;
    }
    *out = t;
    return 0;
}

/* ---- files ---- */

int
gd__onnx_map(const char *path, const uint8_t **data, size_t *len, int *mapped,
             struct gd_err *err)
{
    int fd = -1;
    uint64_t size = 0;
    int rc = gd__file_open(path, &fd, &size, err);
    if (rc != 0)
        return rc;
    if (size > SIZE_MAX / 2) {
        close(fd);
        return gd_err_set(err, GD_ERANGE, "%s: too large", path);
    }
    if (size == 0) {
        close(fd);
        *data = NULL;
        *len = 0;
        *mapped = 0;
        return 0;
    }
    void *p = mmap(NULL, (size_t)size, PROT_READ, MAP_PRIVATE | MAP_POPULATE, fd, 0);
    if (p != MAP_FAILED) {
        /* Read ahead: the whole file is parsed once, front to back. */
        madvise(p, (size_t)size, MADV_SEQUENTIAL | MADV_WILLNEED);
        close(fd);
        *data = p;
        *len = (size_t)size;
        *mapped = 1;
        return 0;
    }
    /* Not mappable (a pipe, a special file): read it. */
    uint8_t *buf = malloc((size_t)size);
    size_t got = 0;
    if (buf == NULL)
        rc = gd_err_set(err, GD_ENOMEM, "%s: out of memory for %llu bytes", path,
                        (unsigned long long)size);
    else
        rc = gd__file_pread(fd, path, 0, buf, (size_t)size, &got, err);
    close(fd);
    if (rc != 0) {
        free(buf);
        return rc;
    }
    *data = buf;
    *len = got;
    *mapped = 0;
    return 0;
}

void
gd__onnx_unmap(const uint8_t *data, size_t len, int mapped)
{
    if (mapped)
        munmap((void *)data, len);
    else
        free((void *)data);
}

/*
 * protobuf-c's allocations, by malloc as its default allocator makes them (raw_data's
 * buffer becomes a tensor that free() releases), with one difference: a buffer of a large
 * tensor asks for transparent huge pages before protobuf-c copies into it, so the copy
 * takes a fault per 2 MiB instead of per 4 KiB (a third of a 330 MB load went to faults).
 */
#define HUGE_ALLOC (4u << 20)
#define HUGE_PAGE ((uintptr_t)2 << 20)

static void *
pb_alloc(void *user, size_t size)
{
    (void)user;
    void *p = malloc(size);
#ifdef MADV_HUGEPAGE
    if (p != NULL && size >= HUGE_ALLOC) {
        uintptr_t start = ((uintptr_t)p + HUGE_PAGE - 1) & ~(HUGE_PAGE - 1);
        uintptr_t end = ((uintptr_t)p + size) & ~(HUGE_PAGE - 1);
        if (end > start)
            madvise((void *)start, end - start, MADV_HUGEPAGE); /* a hint: failure is fine */
    }
#endif
    return p;
}

static void
pb_free(void *user, void *p)
{
    (void)user;
    free(p);
}

ProtobufCAllocator gd__onnx_allocator = {.alloc = pb_alloc, .free = pb_free};

ProtobufCMessage *
gd__onnx_unpack(const ProtobufCMessageDescriptor *desc, const uint8_t *buf, size_t len,
                const char *what, struct gd_err *err)
{
    ProtobufCMessage *m = protobuf_c_message_unpack(desc, &gd__onnx_allocator, len, buf);
    if (m == NULL) {
        char why[200];
        gd__onnx_wire_explain(desc, buf, len, why, sizeof why);
        if (what != NULL)
            gd_err_set(err, GD_EFORMAT, "%s: not a valid ONNX %s: %s", what, desc->short_name,
                       why);
        else
            gd_err_set(err, GD_EFORMAT, "not a valid ONNX %s: %s", desc->short_name, why);
    }
    return m;
}

int
gd_onnx_tensor_parse(const void *buf, size_t len, const char *what, const char *dir,
                     struct gd_tensor **out, char **name, struct gd_err *err)
{
    what = what ? what : "tensor";
    Onnx__TensorProto *tp = (Onnx__TensorProto *)gd__onnx_unpack(
        &onnx__tensor_proto__descriptor, buf, len, what, err);
    if (tp == NULL)
        return err ? err->code : GD_EFORMAT;
    struct gd_tensor *t = NULL;
    char *n = NULL;
    int rc = gd__onnx_tensor(tp, what, dir, &t, err);
    if (rc == 0 && name != NULL && (n = gd__strdup(tp->name ? tp->name : "")) == NULL)
        rc = gd_err_set(err, GD_ENOMEM, "out of memory");
    onnx__tensor_proto__free_unpacked(tp, &gd__onnx_allocator);
    if (rc != 0) {
        gd_tensor_free(t);
        return rc;
    }
    *out = t;
    if (name != NULL)
        *name = n;
    return 0;
}

int
gd_onnx_tensor_load(const char *path, struct gd_tensor **out, char **name, struct gd_err *err)
{
    const uint8_t *data = NULL;
    size_t len = 0;
    int mapped = 0;
    int rc = gd__onnx_map(path, &data, &len, &mapped, err);
    if (rc != 0)
        return rc;
    char copy[PATH_MAX];
    snprintf(copy, sizeof copy, "%s", path);
    rc = gd_onnx_tensor_parse(data, len, path, dirname(copy), out, name, err);
    gd__onnx_unmap(data, len, mapped);
    return rc;
}
