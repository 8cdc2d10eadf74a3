/*
 * check_blob.c: server/blob.c: the byte shuffle against hand-worked layouts, and the
 * streaming encoder and decoder round trip for every element size, empty and odd lengths,
 * lengths around the block size, pieces of any size; damaged frames are refused; and (sec)
 * one frame per block: each block decodes alone from its frame's offset, which the frame
 * before it gives; a blob of the legacy codec (one frame for all blocks, made here with
 * zstd's own streaming encoder) still decodes in order and is told apart by its first
 * frame's size.
 */
#include <check.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <zstd.h>

#include "blob.h"

struct mem {
    unsigned char *data;
    size_t len, cap, pos;
    size_t piece; /* source: hand out at most this much per call */
};

static int
mem_sink(void *user, const void *data, size_t len, struct gd_err *err)
{
    struct mem *m = user;
    if (m->len + len > m->cap) {
        size_t cap = (m->cap + len) * 2;
        unsigned char *p = realloc(m->data, cap);
        if (p == NULL)
            return gd_err_set(err, GD_ENOMEM, "test sink");
        m->data = p;
        m->cap = cap;
    }
    memcpy(m->data + m->len, data, len);
    m->len += len;
    return 0;
}

static int
mem_source(void *user, void *buf, size_t cap, size_t *got, struct gd_err *err)
{
    (void)err;
    struct mem *m = user;
    size_t n = m->len - m->pos;
    if (n > cap)
        n = cap;
    if (n > m->piece)
        n = m->piece;
    memcpy(buf, m->data + m->pos, n);
    m->pos += n;
    *got = n;
    return 0;
}

/* Deterministic bytes (a 64-bit LCG), so a failure is reproducible. */
static void
fill(unsigned char *p, size_t len, uint64_t seed)
{
    for (size_t i = 0; i < len; i++) {
        seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
        p[i] = (unsigned char)(seed >> 56);
    }
}

START_TEST(shuffle_layout)
{
    /* Three 4-byte elements: byte k of each element goes to row k. */
    const unsigned char in[12] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11};
    const unsigned char want[12] = {0, 4, 8, 1, 5, 9, 2, 6, 10, 3, 7, 11};
    unsigned char out[12], back[12];
    srv_shuffle(in, out, 12, 4);
    ck_assert_mem_eq(out, want, 12);
    srv_unshuffle(out, back, 12, 4);
    ck_assert_mem_eq(back, in, 12);

    /* Two 4-byte elements and a 2-byte tail, which stays where it is. */
    const unsigned char in2[10] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9};
    const unsigned char want2[10] = {0, 4, 1, 5, 2, 6, 3, 7, 8, 9};
    srv_shuffle(in2, out, 10, 4);
    ck_assert_mem_eq(out, want2, 10);

    /* 2-byte elements. */
    const unsigned char in3[6] = {0xa1, 0xb1, 0xa2, 0xb2, 0xa3, 0xb3};
    const unsigned char want3[6] = {0xa1, 0xa2, 0xa3, 0xb1, 0xb2, 0xb3};
    srv_shuffle(in3, out, 6, 2);
    ck_assert_mem_eq(out, want3, 6);

    /* One byte per element: nothing moves. */
    srv_shuffle(in, out, 12, 1);
    ck_assert_mem_eq(out, in, 12);
}
END_TEST

START_TEST(shuffle_inverse)
{
    static const size_t lens[] = {0, 1, 7, 13, 1000, 4099};
    static const size_t sizes[] = {1, 2, 4, 8};
    for (size_t s = 0; s < 4; s++) {
        for (size_t l = 0; l < sizeof lens / sizeof lens[0]; l++) {
            size_t n = lens[l];
            unsigned char *in = malloc(n + 1), *sh = malloc(n + 1), *back = malloc(n + 1);
            fill(in, n, n * 31 + s);
            srv_shuffle(in, sh, n, sizes[s]);
            srv_unshuffle(sh, back, n, sizes[s]);
            ck_assert_msg(memcmp(in, back, n) == 0, "elem %zu len %zu: not restored", sizes[s], n);
            free(in);
            free(sh);
            free(back);
        }
    }
}
END_TEST

/* Encodes data in pieces of write_piece bytes; returns the compressed bytes in out. */
static void
encode(const unsigned char *data, size_t len, size_t elem, size_t write_piece, struct mem *out)
{
    struct srv_blob_enc *e = NULL;
    struct gd_err err;
    memset(out, 0, sizeof *out);
    ck_assert_int_eq(srv_blob_enc_new(elem, len, 3, mem_sink, out, &e, &err), 0);
    for (size_t off = 0; off < len; off += write_piece) {
        size_t n = len - off < write_piece ? len - off : write_piece;
        ck_assert_msg(srv_blob_enc_write(e, data + off, n, &err) == 0, "%s", err.msg);
    }
    uint64_t stored = 0;
    ck_assert_msg(srv_blob_enc_finish(e, &stored, &err) == 0, "%s", err.msg);
    ck_assert_uint_eq(stored, out->len);
    srv_blob_enc_free(e);
}

/* Decodes src expecting raw_size bytes, reading read_piece at a time; returns the code. */
static int
decode(struct mem *src, size_t elem, uint64_t raw_size, size_t read_piece, unsigned char *out,
       size_t *out_len, struct gd_err *err)
{
    struct srv_blob_dec *d = NULL;
    src->pos = 0;
    ck_assert_int_eq(srv_blob_dec_new(elem, raw_size, mem_source, src, &d, err), 0);
    size_t total = 0;
    int rc = 0;
    for (;;) {
        size_t got = 0;
        rc = srv_blob_dec_read(d, out + total, read_piece, &got, err);
        if (rc != 0)
            break;
        total += got;
        if (got < read_piece)
            break;
    }
    srv_blob_dec_free(d);
    *out_len = total;
    return rc;
}

START_TEST(round_trip)
{
    const size_t B = SRV_BLOB_BLOCK;
    const size_t lens[] = {0, 1, 3, 8, 12345, B - 1, B, B + 1, 2 * B + B / 2 + 3};
    static const size_t sizes[] = {1, 2, 4, 8};
    static const size_t pieces[] = {1, 7, 4096, 100000};
    for (size_t s = 0; s < 4; s++) {
        for (size_t l = 0; l < sizeof lens / sizeof lens[0]; l++) {
            size_t n = lens[l];
            /* Byte-at-a-time pieces only for the short lengths: the long ones take too long. */
            size_t piece = pieces[(s + l) % 4];
            if (n > 100000 && piece == 1)
                piece = 3;
            unsigned char *data = malloc(n + 1), *back = malloc(n + 64);
            fill(data, n, n + s);
            struct mem m;
            encode(data, n, sizes[s], piece, &m);
            m.piece = pieces[(s + l + 1) % 4];
            size_t got = 0;
            struct gd_err err;
            int rc = decode(&m, sizes[s], n, pieces[(s + l + 2) % 4], back, &got, &err);
            ck_assert_msg(rc == 0, "elem %zu len %zu: %s", sizes[s], n, err.msg);
            ck_assert_msg(got == n, "elem %zu len %zu: %zu bytes back", sizes[s], n, got);
            ck_assert_msg(memcmp(data, back, n) == 0, "elem %zu len %zu: bytes differ", sizes[s],
                          n);
            free(m.data);
            free(data);
            free(back);
        }
    }
}
END_TEST

START_TEST(damage_refused)
{
    size_t n = 3 * SRV_BLOB_BLOCK / 2;
    unsigned char *data = malloc(n), *back = malloc(n + 64);
    fill(data, n, 7);
    struct mem m;
    encode(data, n, 4, 65536, &m);
    m.piece = SIZE_MAX;
    size_t got;
    struct gd_err err;

    /* A flipped byte in the middle: zstd's block check or the frame checksum catches it. */
    m.data[m.len / 2] ^= 0x40;
    ck_assert_int_eq(decode(&m, 4, n, 65536, back, &got, &err), GD_EFORMAT);
    m.data[m.len / 2] ^= 0x40;

    /* Cut short. */
    size_t full = m.len;
    m.len = full - 5;
    ck_assert_int_eq(decode(&m, 4, n, 65536, back, &got, &err), GD_EFORMAT);
    m.len = full;

    /* The frame holds more, or less, than the layer says. */
    ck_assert_int_eq(decode(&m, 4, n - 4, 65536, back, &got, &err), GD_EFORMAT);
    ck_assert_msg(strstr(err.msg, "more than") != NULL, "%s", err.msg);
    ck_assert_int_eq(decode(&m, 4, n + 4, 65536, back, &got, &err), GD_EFORMAT);

    /* Intact, it still decodes. */
    ck_assert_int_eq(decode(&m, 4, n, 65536, back, &got, &err), 0);
    ck_assert_mem_eq(back, data, n);
    free(m.data);
    free(data);
    free(back);
}
END_TEST

START_TEST(pledged_size_enforced)
{
    struct mem m;
    memset(&m, 0, sizeof m);
    struct srv_blob_enc *e = NULL;
    struct gd_err err;
    unsigned char data[100] = {0};
    ck_assert_int_eq(srv_blob_enc_new(4, 200, 3, mem_sink, &m, &e, &err), 0);
    ck_assert_int_eq(srv_blob_enc_write(e, data, sizeof data, &err), 0);
    ck_assert_int_ne(srv_blob_enc_finish(e, NULL, &err), 0);
    srv_blob_enc_free(e);
    free(m.data);
    ck_assert_int_eq(srv_blob_enc_new(16, 0, 3, mem_sink, &m, &e, &err), GD_EINVAL);
}
END_TEST

START_TEST(block_by_block)
{
    const size_t B = SRV_BLOB_BLOCK;
    size_t n = 3 * B + B / 2 + 5;
    unsigned char *data = malloc(n), *block = malloc(B), *shuffled = malloc(B);
    fill(data, n, 11);
    struct mem m;
    encode(data, n, 4, 65536, &m);
    ck_assert_uint_eq(srv_blob_frame_size(m.data, m.len < 18 ? m.len : 18), B);
    struct srv_blob_scratch *scratch = NULL;
    struct gd_err err;
    ck_assert_int_eq(srv_blob_scratch_new(&scratch, &err), 0);
    /* Each block from its own frame, in any order once the offsets are known. */
    uint64_t offs[5] = {0};
    for (int k = 0; k < 4; k++) {
        size_t len = k < 3 ? B : B / 2 + 5;
        uint64_t frame_len = 0;
        m.pos = (size_t)offs[k];
        m.piece = k % 2 ? 1000 : SIZE_MAX;
        ck_assert_msg(srv_blob_block_decode(scratch, 4, mem_source, &m, shuffled, block, len,
                                            &frame_len, &err) == 0,
                      "block %d: %s", k, err.msg);
        ck_assert_msg(memcmp(block, data + (size_t)k * B, len) == 0, "block %d differs", k);
        offs[k + 1] = offs[k] + frame_len;
    }
    ck_assert_uint_eq(offs[4], m.len); /* the frames are the whole blob, end to end */
    for (int k = 3; k >= 0; k -= 2) {
        uint64_t frame_len = 0;
        m.pos = (size_t)offs[k];
        size_t len = k < 3 ? B : B / 2 + 5;
        ck_assert_int_eq(srv_blob_block_decode(scratch, 4, mem_source, &m, shuffled, block, len,
                                               &frame_len, &err),
                         0);
        ck_assert_uint_eq(offs[k] + frame_len, offs[k + 1]);
        ck_assert(memcmp(block, data + (size_t)k * B, len) == 0);
    }
    /* A block of another length than its frame's, or a damaged frame, is refused. */
    uint64_t frame_len;
    m.pos = 0;
    ck_assert_int_eq(srv_blob_block_decode(scratch, 4, mem_source, &m, shuffled, block, B - 1,
                                           &frame_len, &err),
                     GD_EFORMAT);
    m.data[offs[2] + (offs[3] - offs[2]) / 2] ^= 0x10;
    m.pos = (size_t)offs[2];
    ck_assert_int_eq(srv_blob_block_decode(scratch, 4, mem_source, &m, shuffled, block, B,
                                           &frame_len, &err),
                     GD_EFORMAT);
    m.pos = (size_t)offs[2];
    m.len = (size_t)offs[2] + 100; /* cut short */
    ck_assert_int_eq(srv_blob_block_decode(scratch, 4, mem_source, &m, shuffled, block, B,
                                           &frame_len, &err),
                     GD_EFORMAT);
    srv_blob_scratch_free(scratch);
    free(m.data);
    free(data);
    free(block);
    free(shuffled);
}
END_TEST

START_TEST(legacy_one_frame)
{
    /* What the encoder stored before: the shuffled blocks as one frame with its size. */
    const size_t B = SRV_BLOB_BLOCK;
    size_t n = 2 * B + 77;
    unsigned char *data = malloc(n), *sh = malloc(n), *back = malloc(n + 64);
    fill(data, n, 5);
    for (size_t off = 0; off < n; off += B)
        srv_shuffle(data + off, sh + off, n - off < B ? n - off : B, 4);
    ZSTD_CCtx *c = ZSTD_createCCtx();
    ZSTD_CCtx_setParameter(c, ZSTD_c_checksumFlag, 1);
    struct mem m = {0};
    m.cap = ZSTD_compressBound(n);
    m.data = malloc(m.cap);
    m.len = ZSTD_compress2(c, m.data, m.cap, sh, n);
    ck_assert(!ZSTD_isError(m.len));
    ZSTD_freeCCtx(c);
    ck_assert_uint_eq(srv_blob_frame_size(m.data, 18), n); /* not one block: legacy */
    m.piece = 5000;
    size_t got = 0;
    struct gd_err err;
    ck_assert_msg(decode(&m, 4, n, 70000, back, &got, &err) == 0, "%s", err.msg);
    ck_assert_uint_eq(got, n);
    ck_assert(memcmp(back, data, n) == 0);
    ck_assert_uint_eq(srv_blob_frame_size("nothing", 7), UINT64_MAX);
    free(m.data);
    free(data);
    free(sh);
    free(back);
}
END_TEST

START_TEST(shuffle_helps_floats)
{
    /* Smooth float32 values: their high bytes repeat, which only a shuffle lines up. */
    size_t count = 262144;
    float *v = malloc(count * sizeof *v);
    for (size_t i = 0; i < count; i++)
        v[i] = (float)sin((double)i * 1e-3) * 0.5f;
    struct mem plain, shuffled;
    encode((unsigned char *)v, count * sizeof *v, 1, 1 << 20, &plain);
    encode((unsigned char *)v, count * sizeof *v, 4, 1 << 20, &shuffled);
    ck_assert_msg(shuffled.len < plain.len, "shuffled %zu bytes, plain %zu", shuffled.len,
                  plain.len);
    free(plain.data);
    free(shuffled.data);
    free(v);
}
END_TEST

int
main(void)
{
    Suite *s = suite_create("blob");
    TCase *tc = tcase_create("blob");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, shuffle_layout);
    tcase_add_test(tc, shuffle_inverse);
    tcase_add_test(tc, round_trip);
    tcase_add_test(tc, damage_refused);
    tcase_add_test(tc, pledged_size_enforced);
    tcase_add_test(tc, shuffle_helps_floats);
    tcase_add_test(tc, block_by_block);
    tcase_add_test(tc, legacy_one_frame);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? 0 : 1;
}
