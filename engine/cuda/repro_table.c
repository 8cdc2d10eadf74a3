/*
 * repro_table.c: the cuda backend's op table under --repro bitwise: the kernels of repro.h's
 * list where the default one can differ from cpu (cuDNN, cuBLASLt, CUDA's math library, a
 * tree of partial sums), the default kernels elsewhere (copies, selections and one-thread
 * loops in cpu's order: exact already). Half values take cpu's path: every op but the data
 * movement widens them to float32, computes in float32 and rounds once (GEMMs included,
 * where the default mode hands half operands to cuBLASLt).
 */
#include <stddef.h>

#include "repro.h"

#define GD__CUDA_ENTRY_1(fn)    gd__cuda_##fn
#define GD__CUDA_ENTRY_0(fn)    NULL
#define GD__CUDA_ENTRY(has, fn) GD__CUDA_ENTRY_##has(fn)

/* ops.def's entries, then repro.h's over them: the second initializer of an index wins */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Woverride-init"
static const gd_op_fn repro_ops[GD_OP_COUNT] = {
#define GD_OP(e, fn, name, family, min_in, max_in, red, ulps, disc, ill, cuda)                     \
    [GD_OP_##e] = GD__CUDA_ENTRY(cuda, fn),
#include "../core/ops.def"
#undef GD_OP
#define GD_REPRO_ENTRY(e, fn) [GD_OP_##e] = gd__cuda_repro_##fn,
    GD_REPRO_OPS(GD_REPRO_ENTRY)
#undef GD_REPRO_ENTRY
};
#pragma GCC diagnostic pop

/* The data movement kernels copy by element size: they take half tensors as they are. */
static const unsigned char repro_half_native[GD_OP_COUNT] = {
    [GD_OP_RESHAPE] = 1,        [GD_OP_FLATTEN] = 1,  [GD_OP_SQUEEZE] = 1,
    [GD_OP_UNSQUEEZE] = 1,      [GD_OP_IDENTITY] = 1, [GD_OP_TRANSPOSE] = 1,
    [GD_OP_CONCAT] = 1,         [GD_OP_SLICE] = 1,    [GD_OP_SPLIT] = 1,
    [GD_OP_EXPAND] = 1,         [GD_OP_TILE] = 1,     [GD_OP_DEPTH_TO_SPACE] = 1,
    [GD_OP_SPACE_TO_DEPTH] = 1, [GD_OP_GATHER] = 1,   [GD_OP_GATHER_ELEMENTS] = 1,
    [GD_OP_GATHER_ND] = 1,      [GD_OP_WHERE] = 1,    [GD_OP_TRILU] = 1,
};

void
gd__cuda_repro_tables(const struct gd_knobs *knobs, const gd_op_fn **ops,
                      const unsigned char **half_native)
{
    if (!gd_knobs_bitwise(knobs))
        return;
    *ops = repro_ops;
    *half_native = repro_half_native;
}
