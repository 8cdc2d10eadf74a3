/*
 * check_db_fleet_files.c: server/db_fleet_files.c: a file's bytes stored from a spill file
 * read back equal (through the blob codec); the same file again records nothing new and
 * stores no second blob; bytes already stored as a blob (a layer's) are only recorded; a
 * commit without a spill when no blob is there asks to send again (SRV_EBUSY); an unknown
 * file is SRV_ENOTFOUND; retention keeps the blobs of files while it drops unused ones.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gpudiff/hash.h"
#include "blob.h"
#include "db.h"
#include "db_fixture.h"

static char db_path[64];

static int
sink(void *user, const void *data, size_t len, struct gd_err *err)
{
    return srv_spill_write(*(int *)user, data, len, err);
}

/* Commits n bytes of data as a file; *created as the call says. */
static int
commit(struct srv_db *db, const unsigned char *data, size_t n, const char *sha, int with_spill,
       int *created, struct gd_err *err)
{
    int fd = -1;
    struct srv_blob_enc *enc = NULL;
    uint64_t stored = 0;
    ck_assert_int_eq(srv_spill_open("/tmp", &fd, err), 0);
    ck_assert_int_eq(srv_blob_enc_new(1, n, 3, sink, &fd, &enc, err), 0);
    ck_assert_int_eq(srv_blob_enc_write(enc, data, n, err), 0);
    ck_assert_int_eq(srv_blob_enc_finish(enc, &stored, err), 0);
    srv_blob_enc_free(enc);
    struct srv_blob_spill spill = {fd, "uint8", 1, n, stored, SRV_BLOB_CODEC};
    int rc = srv_db_fleet_file_commit(db, sha, n, with_spill ? &spill : NULL, 1, created, err);
    close(fd);
    return rc;
}

struct src {
    struct srv_db *db;
    struct srv_sql_piece_handle *h;
    struct srv_fleet_file_loc loc;
    uint64_t off;
};

static int
source(void *user, void *buf, size_t cap, size_t *got, struct gd_err *err)
{
    struct src *s = user;
    uint64_t left = s->loc.stored_size - s->off;
    size_t n = left < cap ? (size_t)left : cap;
    *got = 0;
    if (n == 0)
        return 0;
    int rc = srv_db_blob_read(s->db, s->loc.blob_id, &s->h, s->off, buf, n, err);
    s->off += n;
    *got = rc == 0 ? n : 0;
    return rc;
}

START_TEST(store_read_and_dedup)
{
    struct srv_db *db = dbf_open(db_path, sizeof db_path, "check_db_fleet_files", 0, 1);
    struct gd_err err;
    enum { N = 300001 };
    unsigned char *data = malloc(N);
    ck_assert_ptr_nonnull(data);
    for (size_t i = 0; i < N; i++)
        data[i] = (unsigned char)(i * 2654435761u >> 13);
    char sha[65];
    ck_assert_int_eq(gd_sha256_hex(data, N, sha, &err), 0);
    int is_file = -1, stored = -1, created = -1;
    ck_assert_int_eq(srv_db_fleet_file_state(db, sha, &is_file, &stored, &err), 0);
    ck_assert(is_file == 0 && stored == 0);
    struct srv_fleet_file_loc loc;
    ck_assert_int_eq(srv_db_fleet_file_locate(db, sha, &loc, &err), SRV_ENOTFOUND);
    ck_assert_int_eq(commit(db, data, N, sha, 0, &created, &err), SRV_EBUSY);
    ck_assert_int_eq(commit(db, data, N, sha, 1, &created, &err), 0);
    ck_assert_int_eq(created, 1);
    ck_assert_int_eq(commit(db, data, N, sha, 1, &created, &err), 0);
    ck_assert_int_eq(created, 0);
    ck_assert_int_eq(srv_db_fleet_file_state(db, sha, &is_file, &stored, &err), 0);
    ck_assert(is_file == 1 && stored == 1);
    int64_t count, raw, st;
    ck_assert_int_eq(srv_db_blob_totals(db, &count, &raw, &st, &err), 0);
    ck_assert_int_eq(count, 1);
    ck_assert_int_eq(raw, N);

    /* read back through the codec */
    struct src s = {db, NULL, {0}, 0};
    ck_assert_int_eq(srv_db_fleet_file_locate(db, sha, &s.loc, &err), 0);
    ck_assert_int_eq(s.loc.raw_size, N);
    struct srv_blob_dec *dec = NULL;
    ck_assert_int_eq(srv_blob_dec_new((size_t)s.loc.elem_size, N, source, &s, &dec, &err), 0);
    unsigned char *back = malloc(N + 1);
    size_t got = 0;
    ck_assert_msg(srv_blob_dec_read(dec, back, N + 1, &got, &err) == 0, "%s", err.msg);
    ck_assert_int_eq(got, N);
    ck_assert(memcmp(back, data, N) == 0);
    srv_blob_dec_free(dec);
    srv_db_blob_close(db, &s.h);

    /* retention drops blobs no layer uses, but not a file's */
    int64_t trimmed, deleted, blobs;
    ck_assert_int_eq(srv_db_retention(db, 1LL << 40, &trimmed, &deleted, &blobs, &err), 0);
    ck_assert_int_eq(blobs, 0);
    ck_assert_int_eq(srv_db_fleet_file_locate(db, sha, &loc, &err), 0);
    free(back);
    free(data);
    srv_db_close(db);
    dbf_remove(db_path);
}
END_TEST

START_TEST(bytes_stored_already_are_recorded)
{
    struct srv_db *db = dbf_open(db_path, sizeof db_path, "check_db_fleet_files", 0, 1);
    struct gd_err err;
    unsigned char data[64];
    memset(data, 7, sizeof data);
    char sha[65];
    ck_assert_int_eq(gd_sha256_hex(data, sizeof data, sha, &err), 0);
    int created = 0;
    /* a layer's blob of the same bytes (elem_size 4: shuffled), stored before */
    int fd = -1;
    struct srv_blob_enc *enc = NULL;
    uint64_t stored = 0;
    ck_assert_int_eq(srv_spill_open("/tmp", &fd, &err), 0);
    ck_assert_int_eq(srv_blob_enc_new(4, sizeof data, 3, sink, &fd, &enc, &err), 0);
    ck_assert_int_eq(srv_blob_enc_write(enc, data, sizeof data, &err), 0);
    ck_assert_int_eq(srv_blob_enc_finish(enc, &stored, &err), 0);
    srv_blob_enc_free(enc);
    struct srv_blob_spill spill = {fd, "float32", 4, sizeof data, stored, SRV_BLOB_CODEC};
    ck_assert_int_eq(srv_db_begin(db, &err), 0);
    ck_assert_int_eq(srv_db_blob_insert(db, sha, &spill, 1, &err), 0);
    ck_assert_int_eq(srv_db_commit(db, &err), 0);
    close(fd);
    ck_assert_int_eq(commit(db, data, sizeof data, sha, 0, &created, &err), 0);
    ck_assert_int_eq(created, 1);
    struct srv_fleet_file_loc loc;
    ck_assert_int_eq(srv_db_fleet_file_locate(db, sha, &loc, &err), 0);
    ck_assert_int_eq(loc.elem_size, 4); /* read back with the blob's own shuffle */
    /* a size that is not the blob's is refused */
    ck_assert_int_eq(srv_db_fleet_file_commit(db, sha, 65, NULL, 1, &created, &err), GD_EIO);
    srv_db_close(db);
    dbf_remove(db_path);
}
END_TEST

int
main(void)
{
    Suite *s = suite_create("db_fleet_files");
    TCase *tc = tcase_create("files");
    tcase_add_test(tc, store_read_and_dedup);
    tcase_add_test(tc, bytes_stored_already_are_recorded);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? 0 : 1;
}
