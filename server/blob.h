/*
 * blob.h: how gpudiffd stores tensor data: a byte shuffle by element size, then zstd, both
 * streamed in bounded memory.
 *
 * The raw bytes are cut into blocks of SRV_BLOB_BLOCK bytes (the last one shorter); each
 * block is shuffled on its own (byte 0 of every element, then byte 1, ...: the sign and
 * exponent bytes of floats end up side by side, which zstd compresses far better) and the
 * shuffled blocks form one zstd frame with its content size and checksum. Decoding undoes
 * both, block by block. The codec is recorded per blob as SRV_BLOB_CODEC.
 */
#ifndef GPUDIFF_SERVER_BLOB_H
#define GPUDIFF_SERVER_BLOB_H

#include <stddef.h>
#include <stdint.h>

#include "gpudiff/error.h"

#define SRV_BLOB_BLOCK ((size_t)256 * 1024)
#define SRV_BLOB_CODEC "shuffle256k+zstd"

/*
 * Shuffles len bytes of elements of elem_size bytes from in to out (which must not
 * overlap): out holds byte 0 of each element, then byte 1, ... A tail shorter than one
 * element is copied as it is.
 */
void srv_shuffle(const void *in, void *out, size_t len, size_t elem_size);

/* The inverse of srv_shuffle(). */
void srv_unshuffle(const void *in, void *out, size_t len, size_t elem_size);

/* Receives compressed bytes. */
typedef int (*srv_blob_sink_fn)(void *user, const void *data, size_t len, struct gd_err *err);

/* Supplies compressed bytes: fills up to cap bytes, *got = 0 at the end. */
typedef int (*srv_blob_source_fn)(void *user, void *buf, size_t cap, size_t *got,
                                  struct gd_err *err);

struct srv_blob_enc;

/*
 * An encoder for raw_size bytes (UINT64_MAX when unknown) of elements of elem_size bytes
 * (1 to 8) at zstd level `level`, handing its output to sink.
 */
int srv_blob_enc_new(size_t elem_size, uint64_t raw_size, int level, srv_blob_sink_fn sink,
                     void *user, struct srv_blob_enc **out, struct gd_err *err);

/* Takes raw bytes, in pieces of any size. */
int srv_blob_enc_write(struct srv_blob_enc *e, const void *data, size_t len, struct gd_err *err);

/* Ends the frame; *stored gets the compressed size (may be NULL). */
int srv_blob_enc_finish(struct srv_blob_enc *e, uint64_t *stored, struct gd_err *err);

void srv_blob_enc_free(struct srv_blob_enc *e);

struct srv_blob_dec;

/* A decoder of one frame that must hold exactly raw_size bytes, pulling input from source. */
int srv_blob_dec_new(size_t elem_size, uint64_t raw_size, srv_blob_source_fn source, void *user,
                     struct srv_blob_dec **out, struct gd_err *err);

/*
 * Fills buf with up to len raw bytes; *got < len only at the end of the data, where the
 * frame's end and checksum are verified. A damaged, short or long frame is GD_EFORMAT.
 */
int srv_blob_dec_read(struct srv_blob_dec *d, void *buf, size_t len, size_t *got,
                      struct gd_err *err);

void srv_blob_dec_free(struct srv_blob_dec *d);

#endif
