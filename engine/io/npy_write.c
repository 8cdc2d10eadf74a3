/* npy_write.c: writing .npy files with headers laid out byte for byte as numpy writes them. */
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "gpudiff/io.h"
#include "io_internal.h"

/* numpy aligns the data to this many bytes (numpy.lib.format.ARRAY_ALIGN). */
#define NPY_ALIGN 64

/*
 * numpy leaves room for the growing axis to reach this many digits, so a writer can append
 * along it and rewrite the header in place (numpy.lib.format.GROWTH_AXIS_MAX_DIGITS).
 */
#define NPY_GROWTH_DIGITS 21

/* Enough for the header of any shape gd_shape_check() accepts: at most 256 bytes. */
#define NPY_HEADER_CAP 256

static const char *
npy_descr(enum gd_dtype dtype)
{
    switch (dtype) {
    case GD_F32:
        return "<f4";
    case GD_F64:
        return "<f8";
    case GD_F16:
        return "<f2";
    case GD_I8:
        return "|i1";
    case GD_I16:
        return "<i2";
    case GD_I32:
        return "<i4";
    case GD_I64:
        return "<i8";
    case GD_U8:
        return "|u1";
    case GD_U16:
        return "<u2";
    case GD_U32:
        return "<u4";
    case GD_U64:
        return "<u8";
    case GD_BOOL:
        return "|b1";
    case GD_BF16:
        /* numpy has no bfloat16: a 2-byte void, what numpy writes for ml_dtypes' bfloat16
         * (np.load gives void2; .view(ml_dtypes.bfloat16) or .view('<u2') reads it) */
        return "<V2";
    case GD_DTYPE_COUNT:
        break;
    }
    return NULL;
}

int
gd_npy_header_write(enum gd_dtype dtype, int ndim, const int64_t *shape, void *buf, size_t cap,
                    size_t *len, struct gd_err *err)
{
    const char *descr = npy_descr(dtype);
    if (descr == NULL)
        return gd_err_set(err, GD_EDTYPE, "%s has no .npy type", gd_dtype_name(dtype));
    int rc = gd_shape_check(ndim, shape, gd_dtype_size(dtype), err);
    if (rc != 0)
        return rc;

    /* What numpy writes: repr() of each item in key order, then the growth spaces. */
    char dict[NPY_HEADER_CAP + 64];
    size_t n = (size_t)snprintf(dict, sizeof dict,
                                "{'descr': '%s', 'fortran_order': False, 'shape': (", descr);
    for (int i = 0; i < ndim; i++)
        n += (size_t)snprintf(dict + n, sizeof dict - n, i ? ", %lld" : "%lld",
                              (long long)shape[i]);
    n += (size_t)snprintf(dict + n, sizeof dict - n, "%s), }", ndim == 1 ? "," : "");
    if (ndim > 0) {
        char digits[24];
        int first = snprintf(digits, sizeof digits, "%lld", (long long)shape[0]);
        for (int i = first; i < NPY_GROWTH_DIGITS; i++)
            dict[n++] = ' ';
    }

    /* The dict, spaces and a newline, so that the data starts at a multiple of 64. */
    size_t prefix = 10;
    size_t text = n + 1;
    size_t pad = NPY_ALIGN - (prefix + text) % NPY_ALIGN;
    int major = 1;
    if (text + pad > 0xffff) {
        major = 2;
        prefix = 12;
        pad = NPY_ALIGN - (prefix + text) % NPY_ALIGN;
    }
    size_t total = prefix + text + pad;
    if (total > cap)
        return gd_err_set(err, GD_ERANGE, ".npy header needs %zu bytes, the buffer has %zu",
                          total, cap);
    unsigned char *b = buf;
    size_t dict_len = text + pad;
    memcpy(b, "\x93NUMPY", 6);
    b[6] = (unsigned char)major;
    b[7] = 0;
    for (size_t i = 0; i < prefix - 8; i++)
        b[8 + i] = (unsigned char)(dict_len >> (8 * i));
    memcpy(b + prefix, dict, n);
    memset(b + prefix + n, ' ', pad);
    b[total - 1] = '\n';
    *len = total;
    return 0;
}

static int
write_all(int fd, const char *path, const void *buf, size_t len, struct gd_err *err)
{
    const char *p = buf;
    while (len > 0) {
        ssize_t w = write(fd, p, len > ((size_t)1 << 30) ? (size_t)1 << 30 : len);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            int e = errno;
            return gd_err_set(err, GD_EIO, "%s: %s", path, strerror(e));
        }
        p += w;
        len -= (size_t)w;
    }
    return 0;
}

/* The data in little-endian order: as is on a little-endian host, else swapped in chunks. */
static int
write_data(int fd, const char *path, const struct gd_tensor *t, struct gd_err *err)
{
    size_t nbytes = gd_tensor_nbytes(t);
    size_t es = gd_dtype_size(t->dtype);
    if (!GD__HOST_BIG_ENDIAN || es == 1)
        return write_all(fd, path, t->data, nbytes, err);
    unsigned char chunk[1 << 16];
    for (size_t off = 0; off < nbytes; off += sizeof chunk) {
        size_t len = nbytes - off < sizeof chunk ? nbytes - off : sizeof chunk;
        memcpy(chunk, (const unsigned char *)t->data + off, len);
        gd__bswap(chunk, len / es, es);
        int rc = write_all(fd, path, chunk, len, err);
        if (rc != 0)
            return rc;
    }
    return 0;
}

/*
 * Creates a new file beside path with a mkstemp-style random suffix. Unlike mkstemp it
 * asks for mode 0666, so the umask sets the permissions as for any new file.
 */
static int
temp_create(const char *path, char **tmp_path, int *fd, struct gd_err *err)
{
    static atomic_uint counter;
    static const char letters[] =
        "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
    size_t len = strlen(path) + sizeof ".tmp.XXXXXX";
    char *name = malloc(len);
    if (name == NULL)
        return gd_err_set(err, GD_ENOMEM, "%s: out of memory for a file name", path);
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    for (int attempt = 0; attempt < 100; attempt++) {
        /* splitmix64 of the time, the process and a counter: distinct per call and thread. */
        uint64_t x = (uint64_t)ts.tv_nsec ^ ((uint64_t)ts.tv_sec << 30) ^
                     ((uint64_t)getpid() << 40) ^ atomic_fetch_add(&counter, 1);
        x += 0x9e3779b97f4a7c15u;
        x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9u;
        x = (x ^ (x >> 27)) * 0x94d049bb133111ebu;
        x ^= x >> 31;
        char suffix[7];
        for (int i = 0; i < 6; i++, x /= 62)
            suffix[i] = letters[x % 62];
        suffix[6] = '\0';
        snprintf(name, len, "%s.tmp.%s", path, suffix);
        int f = open(name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
        if (f >= 0) {
            *fd = f;
            *tmp_path = name;
            return 0;
        }
        if (errno != EEXIST) {
            int e = errno;
            free(name);
            return gd_err_set(err, e == ENOENT ? GD_ENOENT : GD_EIO, "%s: %s", path,
                              strerror(e));
        }
    }
    free(name);
    return gd_err_set(err, GD_EIO, "%s: no free temporary name beside it", path);
}

int
gd_npy_save(const char *path, const struct gd_tensor *t, struct gd_err *err)
{
    unsigned char header[NPY_HEADER_CAP];
    size_t header_len = 0;
    char *tmp = NULL;
    int fd = -1;
    int rc;
    if (t->device)
        return gd_err_set(err, GD_EINVAL, "%s: the tensor is in device memory", path);
    rc = gd_npy_header_write(t->dtype, t->ndim, t->shape, header, sizeof header, &header_len,
                             err);
    if (rc != 0) {
        gd_err_prefix(err, "%s: ", path);
        return rc;
    }
    rc = temp_create(path, &tmp, &fd, err);
    if (rc != 0)
        return rc;
    rc = write_all(fd, tmp, header, header_len, err);
    if (rc == 0)
        rc = write_data(fd, tmp, t, err);
    if (rc == 0 && fsync(fd) != 0) {
        int e = errno;
        rc = gd_err_set(err, GD_EIO, "%s: fsync: %s", tmp, strerror(e));
    }
    /* close() can report a write that failed late (NFS, quotas). */
    if (close(fd) != 0 && rc == 0) {
        int e = errno;
        rc = gd_err_set(err, GD_EIO, "%s: close: %s", tmp, strerror(e));
    }
    if (rc == 0 && rename(tmp, path) != 0) {
        int e = errno;
        rc = gd_err_set(err, GD_EIO, "%s: rename: %s", path, strerror(e));
    }
    if (rc != 0)
        unlink(tmp);
    free(tmp);
    return rc;
}
