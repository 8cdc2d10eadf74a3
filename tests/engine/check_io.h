/*
 * check_io.h: helpers shared by the array file tests (check_npy.c, check_npz.c,
 * check_safetensors.c, check_array.c): fixture paths, error checks, a scratch folder.
 */
#ifndef GPUDIFF_CHECK_IO_H
#define GPUDIFF_CHECK_IO_H

#include <check.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gpudiff/io.h"

#ifndef GD_FIXTURES
#error "GD_FIXTURES must name the tests/fixtures folder"
#endif

/* The path of a file in tests/fixtures/io; valid until the next call. */
static inline const char *
fixture(const char *name)
{
    static char path[4096];
    snprintf(path, sizeof path, "%s/io/%s", GD_FIXTURES, name);
    return path;
}

/* Asserts a call failed with want_code and a message naming subject and holding fragment. */
#define CHECK_FAILED(rc, err, want_code, subject, fragment)                                    \
    do {                                                                                       \
        ck_assert_msg((rc) == (want_code), "%s: got %d (%s: %s), expected %d (%s)", (subject), \
                      (rc), gd_err_name(rc), (err).msg, (want_code), gd_err_name(want_code));  \
        ck_assert_msg((err).code == (want_code), "err.code %d, expected %d", (err).code,       \
                      (want_code));                                                            \
        ck_assert_msg(strstr((err).msg, (subject)) != NULL, "message '%s' does not name '%s'", \
                      (err).msg, (subject));                                                   \
        ck_assert_msg(strstr((err).msg, (fragment)) != NULL, "message '%s' lacks '%s'",       \
                      (err).msg, (fragment));                                                  \
    } while (0)

#define CHECK_OK(rc, err, subject)                                                              \
    ck_assert_msg((rc) == 0, "%s: %d (%s: %s)", (subject), (rc), gd_err_name(rc), (err).msg)

/* Asserts t has dtype and shape. */
static inline void
check_shape(const struct gd_tensor *t, enum gd_dtype dtype, int ndim, const int64_t *shape)
{
    ck_assert_msg(t->dtype == dtype, "dtype %s, expected %s", gd_dtype_name(t->dtype),
                  gd_dtype_name(dtype));
    ck_assert_msg(t->ndim == ndim, "ndim %d, expected %d", t->ndim, ndim);
    for (int i = 0; i < ndim; i++)
        ck_assert_msg(t->shape[i] == shape[i], "shape[%d] = %lld, expected %lld", i,
                      (long long)t->shape[i], (long long)shape[i]);
    ck_assert_msg(t->owns_data && !t->device, "not an owned host tensor");
}

/* A new empty folder under $TMPDIR (or /tmp); the caller removes it with scratch_remove. */
static inline char *
scratch_dir(void)
{
    const char *base = getenv("TMPDIR");
    char *dir = malloc(4096);
    ck_assert_ptr_nonnull(dir);
    snprintf(dir, 4096, "%s/gd_io_XXXXXX", base != NULL && *base != '\0' ? base : "/tmp");
    ck_assert_msg(mkdtemp(dir) != NULL, "mkdtemp %s failed", dir);
    return dir;
}

/* Number of entries in dir other than . and .. */
static inline int
scratch_count(const char *dir)
{
    DIR *d = opendir(dir);
    ck_assert_ptr_nonnull(d);
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL)
        if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0)
            n++;
    closedir(d);
    return n;
}

/* Removes the files in dir (it holds no folders), then dir itself. */
static inline void
scratch_remove(char *dir)
{
    DIR *d = opendir(dir);
    ck_assert_ptr_nonnull(d);
    struct dirent *e;
    char path[8192];
    while ((e = readdir(d)) != NULL) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        ck_assert_msg(unlink(path) == 0, "cannot remove %s", path);
    }
    closedir(d);
    ck_assert_msg(rmdir(dir) == 0, "cannot remove %s", dir);
    free(dir);
}

/* Reads a whole file into a new buffer; *len gets its length. */
static inline unsigned char *
slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    ck_assert_msg(f != NULL, "cannot open %s", path);
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *buf = malloc(size > 0 ? (size_t)size : 1);
    ck_assert_ptr_nonnull(buf);
    ck_assert_msg(fread(buf, 1, (size_t)size, f) == (size_t)size, "short read of %s", path);
    fclose(f);
    *len = (size_t)size;
    return buf;
}

/* Writes len bytes of buf to path. */
static inline void
spill(const char *path, const void *buf, size_t len)
{
    FILE *f = fopen(path, "wb");
    ck_assert_msg(f != NULL, "cannot create %s", path);
    ck_assert_msg(fwrite(buf, 1, len, f) == len, "short write of %s", path);
    ck_assert_msg(fclose(f) == 0, "cannot close %s", path);
}

/* Runs one suite; the exit status for automake. */
static inline int
run_suite(Suite *s)
{
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}

#endif
