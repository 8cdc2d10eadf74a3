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

#include <math.h>

/* R(exp) is exp in cpu64 and expf in cpu: the libm function of the build's precision. */
#if GD_CPU_F64
typedef double real;
#define CPU_FN(name) gd__cpu64_##name
#define GD_CPU_DTYPE GD_F64
#define R(fn) fn
#else
typedef float real;
#define CPU_FN(name) gd__cpu32_##name
#define GD_CPU_DTYPE GD_F32
#define R(fn) fn##f
#endif

/* Geometry of an (N, C, W) or (N, C, H, W) tensor, H = 1 for the 1-D form. */
struct gd__nchw {
    int64_t n, c, h, w;
};

static inline struct gd__nchw
gd__nchw_of(const struct gd_tensor *t)
{
    struct gd__nchw g = {t->shape[0], t->shape[1], t->ndim == 4 ? t->shape[2] : 1,
                         t->shape[t->ndim - 1]};
    return g;
}

/* The CPU backends' session context. */
struct gd__cpu_ctx {
    struct gd_knobs knobs;
};

/*
 * malloc for the backend's tensors and scratch: large blocks come aligned to 2 MiB and
 * advised to use huge pages (fewer page faults on first touch). Freed with free().
 */
void *CPU_FN(mem_alloc)(size_t n);

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

/*
 * The data an op of op_class should read for input t: t's own, or (with --emulate applying
 * to the class) a rounded copy returned in *scratch, which the caller frees.
 */
int CPU_FN(emulated_input)(const struct gd_op_call *c, unsigned op_class, const struct gd_tensor *t,
                           const real **data, real **scratch, struct gd_err *err);

#endif
