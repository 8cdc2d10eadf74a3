/* check_npz.c: the .npz reader (engine/io/npz.c) against archives numpy and zipfile wrote. */
#include <stdint.h>

#include "check_io.h"

static struct gd_npz *
open_ok(const char *name)
{
    struct gd_err err = {0};
    struct gd_npz *z = NULL;
    int rc = gd_npz_open(fixture(name), &z, &err);
    CHECK_OK(rc, err, name);
    ck_assert_ptr_nonnull(z);
    return z;
}

static struct gd_tensor *
member_ok(struct gd_npz *z, const char *key)
{
    struct gd_err err = {0};
    struct gd_tensor *t = NULL;
    int rc = gd_npz_load(z, key, &t, &err);
    CHECK_OK(rc, err, key);
    ck_assert_ptr_nonnull(t);
    return t;
}

static void
check_names(const struct gd_npz *z, int count, const char *const *names)
{
    ck_assert_int_eq(gd_npz_count(z), count);
    for (int i = 0; i < count; i++)
        ck_assert_msg(strcmp(gd_npz_name(z, i), names[i]) == 0, "member %d is '%s', expected '%s'",
                      i, gd_npz_name(z, i), names[i]);
    ck_assert_ptr_null(gd_npz_name(z, count));
    ck_assert_ptr_null(gd_npz_name(z, -1));
}

/* a = arange(6, float32).reshape(2, 3), in stored.npz and deflated.npz. */
static void
check_a(const struct gd_tensor *t)
{
    const int64_t shape[] = {2, 3};
    check_shape(t, GD_F32, 2, shape);
    for (int i = 0; i < 6; i++)
        ck_assert_msg(((const float *)t->data)[i] == (float)i, "a[%d] = %g", i,
                      ((const float *)t->data)[i]);
}

START_TEST(test_stored)
{
    struct gd_npz *z = open_ok("stored.npz");
    static const char *const names[] = {"a", "b", "c"};
    check_names(z, 3, names);

    struct gd_tensor *t = member_ok(z, "a");
    check_a(t);
    gd_tensor_free(t);
    t = member_ok(z, "a.npy"); /* the stored name works too */
    check_a(t);
    gd_tensor_free(t);

    t = member_ok(z, "b");
    const int64_t shape6[] = {6};
    check_shape(t, GD_I64, 1, shape6);
    static const int64_t b_vals[] = {INT64_MIN, -(INT64_C(1) << 40), 0, 1,
                                     (INT64_C(1) << 40) + 5, INT64_MAX};
    for (int i = 0; i < 6; i++)
        ck_assert_msg(((int64_t *)t->data)[i] == b_vals[i], "b[%d] = %lld, expected %lld", i,
                      (long long)((int64_t *)t->data)[i], (long long)b_vals[i]);
    gd_tensor_free(t);

    t = member_ok(z, "c");
    check_shape(t, GD_BOOL, 0, NULL);
    ck_assert_int_eq(((uint8_t *)t->data)[0], 1);
    gd_tensor_free(t);
    gd_npz_close(z);
}
END_TEST

START_TEST(test_deflated)
{
    struct gd_npz *z = open_ok("deflated.npz");
    static const char *const names[] = {"a", "big"};
    check_names(z, 2, names);
    struct gd_tensor *t = member_ok(z, "a");
    check_a(t);
    gd_tensor_free(t);
    t = member_ok(z, "big");
    const int64_t shape[] = {10, 100};
    check_shape(t, GD_F32, 2, shape);
    for (int i = 0; i < 1000; i++)
        ck_assert_msg(((float *)t->data)[i] == 0.25f * (float)i, "big[%d] = %g, expected %g", i,
                      ((float *)t->data)[i], 0.25 * i);
    gd_tensor_free(t);
    /* Loading twice reads the member afresh. */
    t = member_ok(z, "big.npy");
    ck_assert_msg(((float *)t->data)[999] == 249.75f, "big[999] = %g", ((float *)t->data)[999]);
    gd_tensor_free(t);
    gd_npz_close(z);
}
END_TEST

START_TEST(test_zip64)
{
    /* Every size and offset in ZIP64 fields, found through the ZIP64 end records. */
    struct gd_npz *z = open_ok("zip64.npz");
    static const char *const names[] = {"x", "y"};
    check_names(z, 2, names);
    struct gd_tensor *t = member_ok(z, "x");
    const int64_t shape4[] = {4};
    check_shape(t, GD_F32, 1, shape4);
    for (int i = 0; i < 4; i++)
        ck_assert_msg(((float *)t->data)[i] == (float)i, "x[%d] = %g", i, ((float *)t->data)[i]);
    gd_tensor_free(t);
    t = member_ok(z, "y");
    const int64_t shape300[] = {300};
    check_shape(t, GD_I64, 1, shape300);
    for (int i = 0; i < 300; i++)
        ck_assert_msg(((int64_t *)t->data)[i] == i, "y[%d] = %lld", i,
                      (long long)((int64_t *)t->data)[i]);
    gd_tensor_free(t);
    gd_npz_close(z);
}
END_TEST

START_TEST(test_small_archives)
{
    struct gd_npz *z = open_ok("positional.npz");
    static const char *const positional[] = {"arr_0"};
    check_names(z, 1, positional);
    struct gd_tensor *t = member_ok(z, "arr_0");
    const int64_t shape3[] = {3};
    check_shape(t, GD_U16, 1, shape3);
    for (int i = 0; i < 3; i++)
        ck_assert_int_eq(((uint16_t *)t->data)[i], i);
    gd_tensor_free(t);
    gd_npz_close(z);

    /* An archive comment sits after the end record; the search steps back over it. */
    z = open_ok("comment.npz");
    static const char *const comment[] = {"w"};
    check_names(z, 1, comment);
    t = member_ok(z, "w");
    const int64_t shape4[] = {4};
    check_shape(t, GD_I16, 1, shape4);
    for (int i = 0; i < 4; i++)
        ck_assert_int_eq(((int16_t *)t->data)[i], i);
    gd_tensor_free(t);
    gd_npz_close(z);

    z = open_ok("empty.npz");
    check_names(z, 0, NULL);
    struct gd_err err = {0};
    t = NULL;
    int rc = gd_npz_load(z, "a", &t, &err);
    CHECK_FAILED(rc, err, GD_ENOENT, "empty.npz", "no member 'a' (members: none)");
    ck_assert_ptr_null(t);
    gd_npz_close(z);
    gd_npz_close(NULL);
}
END_TEST

START_TEST(test_unknown_key)
{
    struct gd_npz *z = open_ok("stored.npz");
    struct gd_err err = {0};
    struct gd_tensor *t = NULL;
    int rc = gd_npz_load(z, "nope", &t, &err);
    CHECK_FAILED(rc, err, GD_ENOENT, "stored.npz", "no member 'nope' (members: a, b, c)");
    ck_assert_ptr_null(t);
    /* A key that only starts like a member is not that member. */
    rc = gd_npz_load(z, "a.np", &t, &err);
    CHECK_FAILED(rc, err, GD_ENOENT, "stored.npz", "'a.np'");
    gd_npz_close(z);
}
END_TEST

/* Archives whose directory is broken: gd_npz_open fails. */
static const struct {
    const char *file;
    int code;
    const char *fragment;
} bad_archives[] = {
    {"trunc.npz", GD_EFORMAT, "no end of central directory record"},
    {"not_zip.npz", GD_EFORMAT, "not a ZIP archive"},
    {"cd_offset.npz", GD_EFORMAT, "is outside the file"},
    {"dtype_f4.npy", GD_EFORMAT, "not a ZIP archive"},
    {"no_such_file.npz", GD_ENOENT, "No such file or directory"},
};
#define N_BAD_ARCHIVES ((int)(sizeof bad_archives / sizeof bad_archives[0]))

START_TEST(test_bad_archive)
{
    struct gd_err err = {0};
    struct gd_npz *z = NULL;
    const char *path = fixture(bad_archives[_i].file);
    int rc = gd_npz_open(path, &z, &err);
    CHECK_FAILED(rc, err, bad_archives[_i].code, path, bad_archives[_i].fragment);
    ck_assert_ptr_null(z);
}
END_TEST

/* Archives that open, with one broken member: loading it fails naming file and member. */
static const struct {
    const char *file;
    const char *key;
    const char *fragment;
    const char *good_key; /* a member of the same archive that still loads, or NULL */
} bad_members[] = {
    {"crc.npz", "a", "CRC-32 mismatch", "b"},
    {"bad_local.npz", "a", "bad local header signature", "b"},
    {"encrypted.npz", "a", "is encrypted", "b"},
    {"size.npz", "a", "sizes differ", "c"},
    {"bzip2.npz", "a", "compression method 12", NULL},
    {"bad_deflate.npz", "big", "deflate data", "a"},
};
#define N_BAD_MEMBERS ((int)(sizeof bad_members / sizeof bad_members[0]))

START_TEST(test_bad_member)
{
    struct gd_npz *z = open_ok(bad_members[_i].file);
    struct gd_err err = {0};
    struct gd_tensor *t = NULL;
    int rc = gd_npz_load(z, bad_members[_i].key, &t, &err);
    CHECK_FAILED(rc, err, GD_EFORMAT, fixture(bad_members[_i].file), bad_members[_i].fragment);
    char member[64];
    snprintf(member, sizeof member, "'%s.npy'", bad_members[_i].key);
    ck_assert_msg(strstr(err.msg, member) != NULL, "message '%s' does not name %s", err.msg,
                  member);
    ck_assert_ptr_null(t);
    if (bad_members[_i].good_key != NULL) {
        t = member_ok(z, bad_members[_i].good_key);
        gd_tensor_free(t);
    }
    gd_npz_close(z);
}
END_TEST

START_TEST(test_every_cut)
{
    /* Each prefix of an archive fails cleanly at open or at load: no crash, no stray read. */
    static const char *const files[] = {"stored.npz", "deflated.npz", "zip64.npz"};
    char *dir = scratch_dir();
    char path[8192];
    snprintf(path, sizeof path, "%s/cut.npz", dir);
    for (int f = 0; f < 3; f++) {
        size_t len;
        unsigned char *full = slurp(fixture(files[f]), &len);
        for (size_t cut = 0; cut < len; cut++) {
            spill(path, full, cut);
            struct gd_err err = {0};
            struct gd_npz *z = NULL;
            int rc = gd_npz_open(path, &z, &err);
            if (rc != 0) {
                ck_assert_msg(rc == GD_EFORMAT, "%s cut at %zu: open gives %d (%s)", files[f],
                              cut, rc, err.msg);
                continue;
            }
            for (int i = 0; i < gd_npz_count(z); i++) {
                struct gd_tensor *t = NULL;
                rc = gd_npz_load(z, gd_npz_name(z, i), &t, &err);
                ck_assert_msg(rc == 0 || rc == GD_EFORMAT, "%s cut at %zu: load gives %d (%s)",
                              files[f], cut, rc, err.msg);
                gd_tensor_free(t);
            }
            gd_npz_close(z);
        }
        free(full);
    }
    scratch_remove(dir);
}
END_TEST

START_TEST(test_every_byte_flipped)
{
    /* Flip each byte of a small archive in turn: any outcome but a crash or a wrong code. */
    char *dir = scratch_dir();
    char path[8192];
    snprintf(path, sizeof path, "%s/flip.npz", dir);
    size_t len;
    unsigned char *full = slurp(fixture("zip64.npz"), &len);
    for (size_t i = 0; i < len; i++) {
        full[i] ^= 0xa5;
        spill(path, full, len);
        full[i] ^= 0xa5;
        struct gd_err err = {0};
        struct gd_npz *z = NULL;
        int rc = gd_npz_open(path, &z, &err);
        ck_assert_msg(rc == 0 || rc == GD_EFORMAT, "flip at %zu: open gives %d (%s)", i, rc,
                      err.msg);
        if (rc != 0)
            continue;
        for (int m = 0; m < gd_npz_count(z); m++) {
            struct gd_tensor *t = NULL;
            rc = gd_npz_load(z, gd_npz_name(z, m), &t, &err);
            ck_assert_msg(rc == 0 || rc == GD_EFORMAT || rc == GD_EDTYPE,
                          "flip at %zu: load gives %d (%s)", i, rc, err.msg);
            gd_tensor_free(t);
        }
        gd_npz_close(z);
    }
    free(full);
    scratch_remove(dir);
}
END_TEST

static Suite *
npz_suite(void)
{
    Suite *s = suite_create("npz");
    TCase *tc = tcase_create("read");
    tcase_add_test(tc, test_stored);
    tcase_add_test(tc, test_deflated);
    tcase_add_test(tc, test_zip64);
    tcase_add_test(tc, test_small_archives);
    tcase_add_test(tc, test_unknown_key);
    suite_add_tcase(s, tc);
    tc = tcase_create("corrupt");
    /* Writing a file per cut takes seconds under the sanitizers; Check's default is 4. */
    tcase_set_timeout(tc, 120);
    tcase_add_loop_test(tc, test_bad_archive, 0, N_BAD_ARCHIVES);
    tcase_add_loop_test(tc, test_bad_member, 0, N_BAD_MEMBERS);
    tcase_add_test(tc, test_every_cut);
    tcase_add_test(tc, test_every_byte_flipped);
    suite_add_tcase(s, tc);
    return s;
}

int
main(void)
{
    return run_suite(npz_suite());
}
