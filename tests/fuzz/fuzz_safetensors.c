/*
 * fuzz_safetensors.c: libFuzzer entry point over the safetensors reader: the input becomes
 * a file (a memfd reached through /proc/self/fd, no disk), opened with
 * gd_safetensors_open() and every member loaded. tests/fuzz/run.sh builds and runs it.
 *
 * Besides the sanitizers' findings it aborts when the reader breaks what its API promises:
 * a member's name missing, a loaded tensor whose byte count disagrees with its shape, a
 * failure that leaves an output or names neither the file nor a code.
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

static void
fill(const uint8_t *data, size_t size)
{
    if (memfd < 0) {
        memfd = memfd_create("fuzz_safetensors", 0);
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

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fill(data, size);
    struct gd_err err = {0};
    struct gd_safetensors *st = NULL;
    int rc = gd_safetensors_open(path, &st, &err);
    if (rc != 0) {
        if (st != NULL || err.code != rc)
            abort();
        return 0;
    }
    for (int i = 0; i < gd_safetensors_count(st); i++) {
        const char *name = gd_safetensors_name(st, i);
        if (name == NULL)
            abort();
        struct gd_tensor *t = NULL;
        gd_err_clear(&err);
        rc = gd_safetensors_load(st, name, &t, &err);
        if (rc == 0) {
            uint64_t n = 1;
            for (int d = 0; d < t->ndim; d++)
                n *= (uint64_t)t->shape[d];
            if (gd_tensor_nbytes(t) != n * gd_dtype_size(t->dtype))
                abort();
            gd_tensor_free(t);
        } else if (t != NULL || err.code != rc) {
            abort();
        }
    }
    gd_safetensors_close(st);
    return 0;
}
