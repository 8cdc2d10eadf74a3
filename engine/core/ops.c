/* ops.c: the op trait table and the shape inference table, both made from ops.def. */
#include <string.h>

#include "gpudiff/ops.h"
#include "internal.h"

static const struct gd_op_info op_table[GD_OP_COUNT] = {
#define GD_OP(e, fn, name, family, min_in, max_in, red, ulps, disc, ill, cuda) \
    [GD_OP_##e] = {name, #family, min_in, max_in, red, ulps, disc, ill, cuda},
#include "ops.def"
#undef GD_OP
};

const gd__infer_fn gd__infer_table[GD_OP_COUNT] = {
#define GD_OP(e, fn, name, family, min_in, max_in, red, ulps, disc, ill, cuda) [GD_OP_##e] = gd__infer_##family,
#include "ops.def"
#undef GD_OP
};

const struct gd_op_info *
gd_op_info(enum gd_op op)
{
    return (unsigned)op < GD_OP_COUNT ? &op_table[op] : NULL;
}

const char *
gd_op_name(enum gd_op op)
{
    return (unsigned)op < GD_OP_COUNT ? op_table[op].name : "?";
}

int
gd_op_from_name(const char *name, enum gd_op *out)
{
    for (int i = 0; i < GD_OP_COUNT; i++) {
        if (strcmp(op_table[i].name, name) == 0) {
            *out = (enum gd_op)i;
            return 0;
        }
    }
    return GD_ENOENT;
}

const char *
gd_reduction_name(enum gd_reduction r)
{
    switch (r) {
    case GD_RED_NONE:
        return "none";
    case GD_RED_CONV:
        return "conv";
    case GD_RED_CONVT:
        return "conv_transpose";
    case GD_RED_GEMM:
        return "gemm";
    case GD_RED_WINDOW:
        return "window";
    case GD_RED_SPATIAL:
        return "spatial";
    case GD_RED_AXES:
        return "axes";
    case GD_RED_AXIS:
        return "axis";
    case GD_RED_SCATTER:
        return "scatter";
    case GD_RED_LOSS:
        return "loss";
    case GD_RED_INPUTS:
        return "inputs";
    case GD_RED_INFERRED:
        return "inferred";
    }
    return "?";
}
