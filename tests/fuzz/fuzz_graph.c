/*
 * fuzz_graph.c: libFuzzer entry point over the JSON graph loader (gd_model_parse): the
 * input is a model document whose weight files are looked up in an empty folder, so only
 * inline weights load. tests/fuzz/run.sh builds and runs it.
 *
 * Besides the sanitizers' findings it aborts when the loader breaks what its API promises:
 * a graph returned with an error, none returned on success, or an error without its code.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gpudiff/graph.h"
#include "gpudiff/model.h"

static char dir[64];

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (dir[0] == '\0') {
        snprintf(dir, sizeof dir, "/tmp/fuzz_graph.XXXXXX");
        if (mkdtemp(dir) == NULL)
            abort();
    }
    struct gd_model_opts opts = {dir};
    struct gd_graph *g = NULL;
    struct gd_err err = {0};
    int rc = gd_model_parse((const char *)data, size, "fuzz.json", dir, &opts, &g, &err);
    if (rc == 0) {
        if (g == NULL)
            abort();
        gd_graph_free(g);
    } else if (g != NULL || err.code != rc || err.msg[0] == '\0') {
        abort();
    }
    return 0;
}
