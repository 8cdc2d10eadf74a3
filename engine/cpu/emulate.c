/*
 * emulate.c: `--emulate tf32|bf16|fp16[:classes]` on the `cpu` backend: the inputs of the
 * chosen op classes are rounded to the format's precision (round to nearest even), then the
 * op accumulates in float32, which is what tensor-core math does with those formats.
 */
#include <stdlib.h>
#include <string.h>

#include "cpu.h"

#if !GD_CPU_F64
/* TF32 keeps float32's exponent and 10 mantissa bits: round away the low 13 bits. */
static float
round_tf32(float f)
{
    uint32_t bits;
    memcpy(&bits, &f, sizeof bits);
    if ((bits & 0x7f800000u) == 0x7f800000u) /* Inf and NaN stay */
        return f;
    bits += 0xfffu + ((bits >> 13) & 1u);
    bits &= ~0x1fffu;
    memcpy(&f, &bits, sizeof f);
    return f;
}
#endif

int
CPU_FN(emulate_round)(const struct gd_op_call *c, unsigned op_class, const real *src, real *dst,
                      int64_t n)
{
#if GD_CPU_F64
    (void)c, (void)op_class, (void)src, (void)dst, (void)n;
    return 0;
#else
    if (!gd_knobs_emulates(c->knobs, c->node ? c->node->name : NULL, op_class))
        return 0;
    switch (c->knobs->emulate) {
    case GD_EMULATE_TF32:
        for (int64_t i = 0; i < n; i++)
            dst[i] = round_tf32(src[i]);
        break;
    case GD_EMULATE_BF16:
        for (int64_t i = 0; i < n; i++)
            dst[i] = gd_bf16_to_f32(gd_f32_to_bf16(src[i]));
        break;
    case GD_EMULATE_FP16: /* also fp16's range: overflow to infinity, subnormals */
        for (int64_t i = 0; i < n; i++)
            dst[i] = gd_f16_to_f32(gd_f32_to_f16(src[i]));
        break;
    case GD_EMULATE_NONE:
        return 0;
    }
    return 1;
#endif
}

int
CPU_FN(emulated_input)(const struct gd_op_call *c, unsigned op_class, const struct gd_tensor *t,
                       const real **data, real **scratch, struct gd_err *err)
{
    *data = t->data;
    *scratch = NULL;
    if (GD_CPU_F64 || !gd_knobs_emulates(c->knobs, c->node ? c->node->name : NULL, op_class))
        return 0;
    int64_t n = gd_tensor_numel(t);
    real *copy = malloc((size_t)(n ? n : 1) * sizeof *copy);
    if (copy == NULL)
        return gd_err_set(err, GD_ENOMEM, "out of memory for an emulated copy");
    CPU_FN(emulate_round)(c, op_class, t->data, copy, n);
    *data = copy;
    *scratch = copy;
    return 0;
}
