/* bench_model.h: a benchmark's model, JSON or ONNX (as gpudiff-agent run tells them apart). */
#ifndef GPUDIFF_BENCH_MODEL_H
#define GPUDIFF_BENCH_MODEL_H

#include <stdio.h>

#include "gpudiff/graph.h"
#include "gpudiff/model.h"
#include "gpudiff/onnx.h"

/* Loads path (ONNX when its first non-blank byte is not '{') and, for ONNX, finalizes the
 * graph with the input, as the agent does. */
static inline int
bench_model_load(const char *path, const struct gd_tensor *input, struct gd_graph **g,
                 struct gd_err *err)
{
    FILE *f = fopen(path, "rb");
    int c = EOF;
    if (f != NULL) {
        while ((c = fgetc(f)) == ' ' || c == '\t' || c == '\n' || c == '\r')
            ;
        fclose(f);
    }
    if (c == '{' || c == EOF)
        return gd_model_load(path, NULL, g, err);
    struct gd_onnx_opts oo = {.defer_finalize = 1};
    const struct gd_tensor *in[1] = {input};
    int rc = gd_onnx_load(path, &oo, NULL, g, err);
    if (rc == 0)
        rc = gd_graph_finalize_with(*g, in, err);
    return rc;
}

#endif
