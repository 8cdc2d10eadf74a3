/*
 * io.h: arrays in files. .npy (format versions 1.0, 2.0, 3.0), .npz (ZIP archives of .npy
 * members, stored or deflated, ZIP64 included) and safetensors.
 *
 * Loaded tensors are host tensors in C order and native byte order, owned by the caller;
 * bool elements are 0 or 1 whatever byte the file held. Every error message names the file
 * (or the buffer's description) and what is wrong. A missing file is GD_ENOENT, another
 * system error GD_EIO.
 */
#ifndef GPUDIFF_IO_H
#define GPUDIFF_IO_H

#include <stddef.h>
#include <stdint.h>

#include "gpudiff/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* What a .npy header says. */
struct gd_npy_header {
    int version_major;          /* 1, 2 or 3 */
    enum gd_dtype dtype;
    int big_endian;             /* data is big-endian (only for multi-byte dtypes) */
    int fortran_order;
    int ndim;
    int64_t shape[GD_MAX_DIMS];
    size_t header_len;          /* bytes before the data: magic, lengths, dict, padding */
    size_t data_len;            /* numel x element size */
};

/*
 * Parses the header at the start of buf (at least the whole header must be there).
 * `what` names the source in messages. GD_EFORMAT for a malformed header, GD_EDTYPE for a
 * dtype the engine lacks (e.g. complex, strings, objects, structured). As numpy does, the
 * dict must hold exactly the keys descr, fortran_order and shape; the shape is checked with
 * gd_shape_check() (at most GD_MAX_DIMS dimensions), its failures reported as GD_EFORMAT.
 */
int gd_npy_header_parse(const void *buf, size_t len, const char *what, struct gd_npy_header *hdr,
                        struct gd_err *err);

/*
 * Parses a whole .npy image in memory; the tensor is a new copy. The data must be exactly
 * as long as the shape implies: shorter or longer is GD_EFORMAT (numpy ignores extra bytes;
 * here they mean the header and the data disagree).
 */
int gd_npy_parse(const void *buf, size_t len, const char *what, struct gd_tensor **out,
                 struct gd_err *err);

/* Reads a .npy file, with the same rules as gd_npy_parse(). */
int gd_npy_load(const char *path, struct gd_tensor **out, struct gd_err *err);

/*
 * Writes the header for a little-endian, C-order array of dtype and shape into buf
 * (format 1.0, or 2.0 when the dict needs it; padded so the data starts 64-byte aligned).
 * *len gets its length. GD_ERANGE when cap is too small (256 bytes is always enough for
 * GD_MAX_DIMS dims), GD_EDTYPE for bfloat16, which numpy has no name for.
 */
int gd_npy_header_write(enum gd_dtype dtype, int ndim, const int64_t *shape, void *buf, size_t cap,
                        size_t *len, struct gd_err *err);

/*
 * Writes host tensor t to path as .npy, byte for byte what numpy.save writes for the same
 * array: to a temporary file beside it (removed on failure), flushed with fsync, then
 * renamed over path, so a reader never sees half a file. GD_EDTYPE for bfloat16.
 */
int gd_npy_save(const char *path, const struct gd_tensor *t, struct gd_err *err);

/* An opened .npz archive: its member list, read once at open. */
struct gd_npz;

/*
 * Opens an archive and reads its central directory (not the members). GD_EFORMAT for a
 * file that is not a ZIP archive or whose directory is damaged.
 */
int gd_npz_open(const char *path, struct gd_npz **out, struct gd_err *err);

void gd_npz_close(struct gd_npz *z);

/* Number of members. */
int gd_npz_count(const struct gd_npz *z);

/*
 * Name of member i without the ".npy" suffix, as numpy's np.load(...).files gives it;
 * NULL when i is out of range. Borrowed from z.
 */
const char *gd_npz_name(const struct gd_npz *z, int i);

/*
 * Loads member key (with or without ".npy"); GD_ENOENT names the members there are.
 * GD_EFORMAT, naming file and member, for an encrypted member, a compression other than
 * stored or deflated, a damaged header, a size or CRC-32 that does not match.
 */
int gd_npz_load(struct gd_npz *z, const char *key, struct gd_tensor **out, struct gd_err *err);

/* An opened safetensors file: the header, parsed at open. */
struct gd_safetensors;

/*
 * Opens a file and checks its header: every tensor's shape and data_offsets must agree with
 * its dtype and lie within the file (GD_EFORMAT naming the tensor). A tensor of a dtype the
 * engine lacks (F8_E4M3, ...) does not fail the open; loading it gives GD_EDTYPE.
 */
int gd_safetensors_open(const char *path, struct gd_safetensors **out, struct gd_err *err);

void gd_safetensors_close(struct gd_safetensors *st);

int gd_safetensors_count(const struct gd_safetensors *st);

/* Name of tensor i in header order, "__metadata__" left out; NULL when out of range. */
const char *gd_safetensors_name(const struct gd_safetensors *st, int i);

int gd_safetensors_load(struct gd_safetensors *st, const char *key, struct gd_tensor **out,
                        struct gd_err *err);

/*
 * Loads one array from a .npy, .npz or .safetensors file, told apart by content, not name.
 * key picks the member of an archive; NULL takes the only member of a one-member archive
 * (GD_EINVAL listing them when there are several, GD_ENOENT when there are none).
 * For a .npy file key must be NULL (else GD_EINVAL). Other content is GD_EFORMAT.
 */
int gd_array_load(const char *path, const char *key, struct gd_tensor **out, struct gd_err *err);

/*
 * Makes every missing folder above path (mkdir -p of its parent; not path itself), as a
 * command's --out does. first_made (may be NULL) gets the topmost folder it made, "" when
 * none was missing. GD_EIO naming the component at fault (one that is a file, no permission);
 * the folders made before the failure stay.
 */
int gd_dir_make_parents(const char *path, char *first_made, size_t size, struct gd_err *err);

/* Removes again the empty folders gd_dir_make_parents(path) made, up to first_made ("": none);
 * a folder something else was put in since stays. */
void gd_dir_remove_made(const char *path, const char *first_made);

#ifdef __cplusplus
}
#endif
#endif
