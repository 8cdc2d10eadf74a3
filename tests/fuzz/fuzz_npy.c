/*
 * fuzz_npy.c: libFuzzer entry point over gd_npy_parse() and gd_npy_header_parse().
 *
 * tests/fuzz/run.sh builds it (with clang, ASan, UBSan and libFuzzer, against the
 * engine of a build of its own) and runs it from tests/fuzz/corpus/npy/ with
 * tests/fuzz/npy.dict.
 *
 * Besides the sanitizers' findings it aborts when a parsed image breaks what the API
 * promises: a tensor whose size disagrees with its header, or a shape that the writer
 * cannot write back and read again.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "gpudiff/io.h"

static void
check_round_trip(const struct gd_tensor *t)
{
    unsigned char buf[256];
    size_t len = 0;
    if (t->dtype == GD_BF16)
        abort(); /* .npy has no bfloat16, so the reader cannot have made one */
    if (gd_npy_header_write(t->dtype, t->ndim, t->shape, buf, sizeof buf, &len, NULL) != 0)
        abort();
    struct gd_npy_header hdr;
    if (gd_npy_header_parse(buf, len, "round trip", &hdr, NULL) != 0)
        abort();
    if (hdr.dtype != t->dtype || hdr.ndim != t->ndim || hdr.header_len != len ||
        hdr.data_len != gd_tensor_nbytes(t) || len % 64 != 0)
        abort();
    for (int i = 0; i < t->ndim; i++)
        if (hdr.shape[i] != t->shape[i])
            abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct gd_err err = {0};
    struct gd_npy_header hdr;
    int hrc = gd_npy_header_parse(data, size, "fuzz", &hdr, &err);
    if (hrc == 0 && (hdr.header_len > size || hdr.ndim < 0 || hdr.ndim > GD_MAX_DIMS))
        abort();

    struct gd_tensor *t = NULL;
    int rc = gd_npy_parse(data, size, "fuzz", &t, &err);
    if (rc == 0) {
        /* A whole image: the header parsed too, and header plus data is the input. */
        if (t == NULL || hrc != 0 || hdr.header_len + gd_tensor_nbytes(t) != size)
            abort();
        check_round_trip(t);
        gd_tensor_free(t);
    } else if (t != NULL || err.code != rc || strstr(err.msg, "fuzz") == NULL) {
        abort(); /* failures leave the output alone and name the source */
    }
    return 0;
}
