/*
 * fuzz_npz.c: libFuzzer entry point over the .npz reader: the input becomes a file, which
 * is opened with gd_npz_open() and every member loaded.
 *
 * tests/fuzz/run.sh builds it (with clang, ASan, UBSan and libFuzzer, against the
 * engine of a build of its own) and runs it from tests/fuzz/corpus/npz/ with
 * tests/fuzz/npz.dict.
 *
 * The file is a memfd reached through /proc/self/fd, so no disk is touched. The same run
 * feeds gd_array_load(), which also covers the safetensors reader when the bytes look
 * like one.
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "gpudiff/io.h"

static int memfd = -1;
static char path[64];

/* Replaces the file's contents with the input. */
static void
fill(const uint8_t *data, size_t size)
{
    if (memfd < 0) {
        memfd = memfd_create("fuzz_npz", 0);
        if (memfd < 0)
            abort();
        snprintf(path, sizeof path, "/proc/self/fd/%d", memfd);
    }
    if (ftruncate(memfd, 0) != 0)
        abort();
    for (size_t done = 0; done < size;) {
        ssize_t w = pwrite(memfd, data + done, size - done, (off_t)done);
        if (w <= 0)
            abort();
        done += (size_t)w;
    }
}

/* Failures leave the output alone and carry a message naming the file. */
static void
check_failure(int rc, const struct gd_err *err, const struct gd_tensor *t)
{
    if (t != NULL || err->code != rc || strstr(err->msg, path) == NULL)
        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fill(data, size);
    struct gd_err err = {0};
    struct gd_npz *z = NULL;
    int rc = gd_npz_open(path, &z, &err);
    if (rc == 0) {
        for (int i = 0; i < gd_npz_count(z); i++) {
            struct gd_tensor *t = NULL;
            const char *name = gd_npz_name(z, i);
            if (name == NULL)
                abort();
            gd_err_clear(&err);
            rc = gd_npz_load(z, name, &t, &err);
            if (rc == 0)
                gd_tensor_free(t);
            else
                check_failure(rc, &err, t);
        }
        if (gd_npz_name(z, gd_npz_count(z)) != NULL)
            abort();
        gd_npz_close(z);
    } else if (z != NULL) {
        abort();
    }

    struct gd_tensor *t = NULL;
    gd_err_clear(&err);
    rc = gd_array_load(path, NULL, &t, &err);
    if (rc == 0)
        gd_tensor_free(t);
    else
        check_failure(rc, &err, t);
    return 0;
}
