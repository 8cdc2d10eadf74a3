/*
 * io_internal.h: what the .npy, .npz and safetensors readers share and callers of
 * libgpudiff do not see: file access whose errors name the path, byte swapping, and the
 * byte source a .npy image is read from (a file, a buffer, or a member of a ZIP archive).
 */
#ifndef GPUDIFF_IO_INTERNAL_H
#define GPUDIFF_IO_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "gpudiff/error.h"
#include "gpudiff/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

#define GD__HOST_BIG_ENDIAN (__BYTE_ORDER__ == __ORDER_BIG_ENDIAN__)

/*
 * A stream of `size` bytes. read() fills up to len bytes of buf and sets *got; *got < len
 * only at the end. A source that checks its bytes (a ZIP member's CRC-32) does so when a
 * read reaches the end, and fails there with GD_EFORMAT.
 */
struct gd__src {
    int (*read)(void *ctx, void *buf, size_t len, size_t *got, struct gd_err *err);
    void *ctx;
    uint64_t size;
};

/*
 * Reads one whole .npy image from src: the header, then exactly the bytes the shape
 * implies, then the end of the source (more bytes are an error). `what` names the source
 * in messages. *out gets a new host tensor in C order and native byte order.
 */
int gd__npy_read(const struct gd__src *src, const char *what, struct gd_tensor **out,
                 struct gd_err *err);

/*
 * Opens path for reading; *fd and *size (its length) are set on success. GD_ENOENT
 * "PATH: No such file or directory" for a missing file, GD_EIO with the system's message
 * for any other failure, including a path that is a folder.
 */
int gd__file_open(const char *path, int *fd, uint64_t *size, struct gd_err *err);

/*
 * Reads len bytes at offset off, retrying short reads; *got is less than len only at the
 * end of the file. GD_EIO naming path on a read error.
 */
int gd__file_pread(int fd, const char *path, uint64_t off, void *buf, size_t len, size_t *got,
                   struct gd_err *err);

/* Reverses the bytes of each of count elements of elem_size bytes, in place. */
void gd__bswap(void *data, size_t count, size_t elem_size);

/* Sets every byte of a bool array to 0 or 1, the engine's only bool values. */
void gd__bool_normalize(void *data, size_t count);

/*
 * Writes "a, b, c", the names of count entries got through name(obj, i), into buf, ending
 * with "..." when they do not all fit; "none" when count is 0. For "no such member" messages.
 */
typedef const char *(*gd__name_fn)(const void *obj, int i);
void gd__names_join(char *buf, size_t cap, int count, gd__name_fn name, const void *obj);

/* Little-endian loads from a byte buffer. */
static inline uint16_t
gd__le16(const unsigned char *p)
{
    return (uint16_t)(p[0] | (p[1] << 8));
}

static inline uint32_t
gd__le32(const unsigned char *p)
{
    return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) |
           ((uint32_t)p[3] << 24);
}

static inline uint64_t
gd__le64(const unsigned char *p)
{
    return (uint64_t)gd__le32(p) | ((uint64_t)gd__le32(p + 4) << 32);
}

#ifdef __cplusplus
}
#endif
#endif
