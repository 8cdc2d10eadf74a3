/*
 * blob.h: how gpudiffd stores tensor data: a byte shuffle by element size, then zstd, both
 * streamed in bounded memory.
 *
 * The raw bytes are cut into blocks of SRV_BLOB_BLOCK bytes (the last one shorter); each
 * block is shuffled on its own (byte 0 of every element, then byte 1, ...: the sign and
 * exponent bytes of floats end up side by side, which zstd compresses far better) and
 * compressed as a zstd frame of its own, with its content size and checksum; the frames
 * follow each other. Decoding undoes both, block by block. The codec is recorded per blob
 * as SRV_BLOB_CODEC. Since each block is a frame, a block can be decoded from its frame's
 * offset alone, with no state from the blocks before it: a download keeps no decoder
 * between the pieces it sends (blob_get.c). Blobs stored before this codec are one frame
 * for all blocks ("shuffle256k+zstd"), which the same decoder reads.
 */
#ifndef GPUDIFF_SERVER_BLOB_H
#define GPUDIFF_SERVER_BLOB_H

#include <stddef.h>
#include <stdint.h>

#include "gpudiff/error.h"

#define SRV_BLOB_BLOCK ((size_t)256 * 1024)
#define SRV_BLOB_CODEC        "shuffle256k+zstd256k"
#define SRV_BLOB_CODEC_LEGACY "shuffle256k+zstd"

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

/* ---- one block at a time (SRV_BLOB_CODEC: a frame per block) ---- */

/*
 * The content size of the zstd frame whose first n bytes are at head (n at least 18, or all
 * of a shorter blob): what one frame decodes to. UINT64_MAX when head is not the start of a
 * frame, or names no size. A blob of more than one block whose first frame holds the whole
 * blob is SRV_BLOB_CODEC_LEGACY's, to be read in order with srv_blob_dec_*.
 */
uint64_t srv_blob_frame_size(const void *head, size_t n);

/* A decoder context and input buffer, reused by srv_blob_block_decode() (one per thread). */
struct srv_blob_scratch;

int srv_blob_scratch_new(struct srv_blob_scratch **out, struct gd_err *err);
void srv_blob_scratch_free(struct srv_blob_scratch *s);

/*
 * Decodes one block: source gives the stored bytes from the start of the block's frame on;
 * its frame must hold exactly len bytes (the block's length), which are unshuffled into out
 * (shuffled: len bytes of scratch space). *frame_len gets the frame's stored length, so the
 * next block's frame starts that much further. GD_EFORMAT for a damaged or wrong frame.
 */
int srv_blob_block_decode(struct srv_blob_scratch *s, size_t elem_size, srv_blob_source_fn source,
                          void *user, void *shuffled, void *out, size_t len, uint64_t *frame_len,
                          struct gd_err *err);

#endif
