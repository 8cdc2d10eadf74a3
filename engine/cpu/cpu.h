/*
 * cpu.h: the CPU backends' shared declarations.
 *
 * Every file in engine/cpu/ is compiled twice: once with GD_CPU_F64=0 for the `cpu`
 * backend (float32 storage, float32 accumulation) and once with GD_CPU_F64=1 for `cpu64`
 * (float64 storage and accumulation: the reference). The loops are written once in terms
 * of `real`; CPU_FN() gives each build its own symbol names.
 *
 * Summation order is fixed and documented per op (docs/NUMERICS.md): every output element
 * is accumulated in one sequential loop in the order the comments state, so `cpu` is
 * bitwise reproducible on any x86-64 or ARM machine built with -ffp-contract=off.
 */
#ifndef GPUDIFF_CPU_H
#define GPUDIFF_CPU_H

#include "../core/internal.h"

#if GD_CPU_F64
typedef double real;
#define CPU_FN(name) gd__cpu64_##name
#define GD_CPU_DTYPE GD_F64
#else
typedef float real;
#define CPU_FN(name) gd__cpu32_##name
#define GD_CPU_DTYPE GD_F32
#endif

/* The CPU backends' session context. */
struct gd__cpu_ctx {
    struct gd_knobs knobs;
};

/* One entry point per op: the names the backend table in backend_cpu.c lists. */
#define GD_OP(e, fn, name, family, min_in, max_in, red, ulps, disc) \
    int CPU_FN(fn)(struct gd_op_call *c, struct gd_err *err);
#include "../core/ops.def"
#undef GD_OP

/*
 * With the `--emulate` knob, rounds n values of src into dst (which may be src) to the
 * emulated format's precision, round to nearest even, keeping them as `real`. Returns 1
 * when the op class is emulated and dst was written, 0 when nothing applies.
 */
int CPU_FN(emulate_round)(const struct gd_op_call *c, unsigned op_class, const real *src,
                          real *dst, int64_t n);

#endif
