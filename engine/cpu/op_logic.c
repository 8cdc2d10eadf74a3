/*
 * op_logic.c: the logical ops (And, Or, Xor, Not on bool), BitShift on unsigned integers,
 * IsNaN and IsInf, Where, and the conversions Cast and CastLike on the CPU. Everything here
 * is exact: selections, bit operations, and the conversion rules of engine/core/elt_rules.h,
 * which the CUDA kernels share.
 */
#include <string.h>

#include "../core/elt_rules.h"
#include "bcast.h"
#include "cpu.h"

int
CPU_FN(is_nan)(struct gd_op_call *c, struct gd_err *err)
{
    (void)err;
    const real *x = c->in[0]->data;
    uint8_t *y = c->out[0]->data;
    int64_t n = gd_tensor_numel(c->out[0]);
    for (int64_t i = 0; i < n; i++)
        y[i] = isnan(x[i]) != 0;
    return 0;
}

int
CPU_FN(is_inf)(struct gd_op_call *c, struct gd_err *err)
{
    (void)err;
    const real *x = c->in[0]->data;
    uint8_t *y = c->out[0]->data;
    int pos = c->params->detect_positive, neg = c->params->detect_negative;
    int64_t n = gd_tensor_numel(c->out[0]);
    for (int64_t i = 0; i < n; i++)
        y[i] = isinf(x[i]) && (x[i] > 0 ? pos : neg);
    return 0;
}

/* y = a op b over the broadcast shape, integers or bools through elt_rules.h. */
static int
int_binary(struct gd_op_call *c, int iop)
{
    const struct gd_tensor *ins[2] = {c->in[0], c->in[1]};
    struct gd_tensor *y = c->out[0];
    enum gd_dtype dt = c->in[0]->dtype;
    int uns = gd__dtype_unsigned(dt), bits = gd__dtype_bits(dt);
    struct gd__bcast w;
    gd__bcast_init(&w, 2, ins, y);
    int64_t n = gd_tensor_numel(y);
    for (int64_t k = 0; k < n; k++, gd__bcast_next(&w)) {
        int64_t a = gd__int_load(dt, ins[0]->data, w.off[0]);
        int64_t b = gd__int_load(dt, ins[1]->data, w.off[1]);
        gd__int_store(y->dtype, y->data, k, gd__int_binary(iop, a, b, uns, bits));
    }
    return 0;
}

int
CPU_FN(logical_and)(struct gd_op_call *c, struct gd_err *err)
{
    (void)err;
    return int_binary(c, GD_IOP_AND);
}

int
CPU_FN(logical_or)(struct gd_op_call *c, struct gd_err *err)
{
    (void)err;
    return int_binary(c, GD_IOP_OR);
}

int
CPU_FN(logical_xor)(struct gd_op_call *c, struct gd_err *err)
{
    (void)err;
    return int_binary(c, GD_IOP_XOR);
}

int
CPU_FN(bit_shift)(struct gd_op_call *c, struct gd_err *err)
{
    (void)err;
    return int_binary(c, c->params->shift_left ? GD_IOP_SHL : GD_IOP_SHR);
}

int
CPU_FN(logical_not)(struct gd_op_call *c, struct gd_err *err)
{
    (void)err;
    const uint8_t *x = c->in[0]->data;
    uint8_t *y = c->out[0]->data;
    int64_t n = gd_tensor_numel(c->out[0]);
    for (int64_t i = 0; i < n; i++)
        y[i] = x[i] == 0;
    return 0;
}

/*
 * Where(cond, X, Y): X's element where cond holds, Y's elsewhere: a copy of the element's
 * bytes, whatever the dtype (floats are in the compute dtype on both sides).
 */
int
CPU_FN(where)(struct gd_op_call *c, struct gd_err *err)
{
    (void)err;
    const struct gd_tensor *ins[3] = {c->in[0], c->in[1], c->in[2]};
    struct gd_tensor *y = c->out[0];
    size_t size = gd_dtype_size(y->dtype);
    const uint8_t *cond = c->in[0]->data;
    const char *x = c->in[1]->data, *o = c->in[2]->data;
    char *out = y->data;
    struct gd__bcast w;
    gd__bcast_init(&w, 3, ins, y);
    int64_t n = gd_tensor_numel(y);
    for (int64_t k = 0; k < n; k++, gd__bcast_next(&w)) {
        const char *src =
            cond[w.off[0]] ? x + (size_t)w.off[1] * size : o + (size_t)w.off[2] * size;
        memcpy(out + (size_t)k * size, src, size);
    }
    return 0;
}

/*
 * Cast: the rules of elt_rules.h. A float target is stored in the compute dtype (`real`),
 * rounded first to float16 or bfloat16 when the target is one; an integer or bool target
 * takes float values truncated and saturated, integers wrapped to its width.
 */
static int
cast(struct gd_op_call *c)
{
    const struct gd_tensor *x = c->in[0];
    struct gd_tensor *y = c->out[0];
    enum gd_dtype to = c->params->cast_to;
    int64_t n = gd_tensor_numel(y);
    int from_float = gd_dtype_is_float(x->dtype), to_float = gd_dtype_is_float(to);
    int uns = gd__dtype_unsigned(x->dtype);
    const real *xf = x->data;
    real *yf = y->data;
    for (int64_t i = 0; i < n; i++) {
        if (from_float && to_float) {
            yf[i] = (real)gd__cast_float_value((double)xf[i], to);
        } else if (from_float) {
            gd__int_store(y->dtype, y->data, i, gd__float_to_int((double)xf[i], to));
        } else if (to_float) {
            int64_t v = gd__int_load(x->dtype, x->data, i);
            if (to == GD_F16 || to == GD_BF16)
                yf[i] = (real)gd__cast_float_value(gd__int_to_double_odd(v, uns), to);
            else
#if GD_CPU_F64
                yf[i] = gd__int_to_double(v, uns);
#else
                yf[i] = gd__int_to_float(v, uns);
#endif
        } else {
            gd__int_store(y->dtype, y->data, i, gd__int_load(x->dtype, x->data, i));
        }
    }
    return 0;
}

int
CPU_FN(cast)(struct gd_op_call *c, struct gd_err *err)
{
    (void)err;
    return cast(c);
}

int
CPU_FN(cast_like)(struct gd_op_call *c, struct gd_err *err)
{
    (void)err;
    return cast(c);
}
