/* infer_logic.c: logical ops (And, Or, Xor, Not on bool), BitShift (unsigned integers), the
 * float tests IsNaN and IsInf, Where, and the conversions Cast and CastLike. */
#include <string.h>

#include "elt_rules.h"
#include "internal.h"

/* Broadcasts the shapes of inputs [first, c->n_in) into *y. */
static int
broadcast_inputs(struct gd__infer_call *c, int first, struct gd_shape *y, struct gd_err *err)
{
    *y = *c->in[first];
    for (int i = first + 1; i < c->n_in; i++) {
        int rc = gd__broadcast_shape(y, c->in[i], y, err);
        if (rc != 0)
            return rc;
    }
    return 0;
}

/* The dtype of an ONNX TensorProto.DataType code, or GD_ENOTSUP naming the type. */
static int
onnx_dtype(int64_t code, enum gd_dtype *out, struct gd_err *err)
{
    static const struct {
        int code;
        enum gd_dtype dtype;
    } table[] = {
        {1, GD_F32},  {2, GD_U8},   {3, GD_I8},    {4, GD_U16},  {5, GD_I16},
        {6, GD_I32},  {7, GD_I64},  {9, GD_BOOL},  {10, GD_F16}, {11, GD_F64},
        {12, GD_U32}, {13, GD_U64}, {16, GD_BF16},
    };
    static const char *const unsupported[] = {
        [8] = "STRING",          [14] = "COMPLEX64",      [15] = "COMPLEX128",
        [17] = "FLOAT8E4M3FN",   [18] = "FLOAT8E4M3FNUZ", [19] = "FLOAT8E5M2",
        [20] = "FLOAT8E5M2FNUZ", [21] = "UINT4",          [22] = "INT4",
    };
    for (size_t i = 0; i < sizeof table / sizeof table[0]; i++) {
        if (table[i].code == code) {
            *out = table[i].dtype;
            return 0;
        }
    }
    if (code >= 0 && code < (int64_t)(sizeof unsupported / sizeof unsupported[0]) &&
        unsupported[code] != NULL)
        return gd_err_set(err, GD_ENOTSUP, "casts to %s are not supported", unsupported[code]);
    return gd_err_set(err, GD_EMODEL, "to = %lld is not an ONNX data type", (long long)code);
}

static int
infer_cast(struct gd__infer_call *c, struct gd_err *err)
{
    static const char *const cast[] = {"to", "saturate", NULL};
    static const char *const cast_like[] = {"saturate", NULL};
    const struct gd_node *n = c->node;
    int like = n->op == GD_OP_CAST_LIKE;
    int rc = gd__attr_check_known(n, like ? cast_like : cast, err);
    if (rc != 0)
        return rc;
    /* saturate (opset 19) only concerns the float8 types, which are refused above */
    enum gd_dtype to = c->in_dtype[like ? 1 : 0];
    if (!like) {
        int64_t code;
        int found = 0;
        for (int i = 0; i < n->n_attrs; i++)
            found |= strcmp(n->attrs[i].name, "to") == 0;
        if (!found)
            return gd_err_set(err, GD_EMODEL, "Cast needs the attribute to");
        rc = gd__attr_int(n, "to", 0, &code, err);
        if (rc == 0)
            rc = onnx_dtype(code, &to, err);
        if (rc != 0)
            return rc;
    } else if (c->in[1] == NULL) {
        return gd_err_set(err, GD_EMODEL, "CastLike needs its second input");
    }
    c->params->cast_to = to;
    *c->out[0] = *c->in[0];
    c->out_dtype[0] = to;
    return 0;
}

int
gd__infer_logic(struct gd__infer_call *c, struct gd_err *err)
{
    static const char *const none[] = {NULL};
    static const char *const is_inf[] = {"detect_negative", "detect_positive", NULL};
    static const char *const shift[] = {"direction", NULL};
    const struct gd_node *n = c->node;
    struct gd_params *p = c->params;
    int rc = 0;
    if (c->n_out != 1)
        return gd_err_set(err, GD_EMODEL, "%s has one output", gd_op_name(n->op));
    for (int i = 0; i < c->n_in; i++)
        if (c->in[i] == NULL)
            return gd_err_set(err, GD_EMODEL, "input %d is missing", i);
    switch (n->op) {
    case GD_OP_CAST:
    case GD_OP_CAST_LIKE:
        return infer_cast(c, err);
    case GD_OP_IS_NAN:
    case GD_OP_IS_INF: {
        int64_t neg = 1, pos = 1;
        rc = gd__attr_check_known(n, n->op == GD_OP_IS_INF ? is_inf : none, err);
        if (rc == 0 && !gd_dtype_is_float(c->in_dtype[0]))
            rc = gd_err_set(err, GD_EDTYPE, "input must be floating point, not %s",
                            gd_dtype_name(c->in_dtype[0]));
        if (rc == 0 && n->op == GD_OP_IS_INF)
            rc = gd__attr_int(n, "detect_negative", 1, &neg, err);
        if (rc == 0 && n->op == GD_OP_IS_INF)
            rc = gd__attr_int(n, "detect_positive", 1, &pos, err);
        if (rc != 0)
            return rc;
        p->detect_negative = neg != 0;
        p->detect_positive = pos != 0;
        *c->out[0] = *c->in[0];
        c->out_dtype[0] = GD_BOOL;
        return 0;
    }
    case GD_OP_AND:
    case GD_OP_OR:
    case GD_OP_XOR:
    case GD_OP_NOT:
        rc = gd__attr_check_known(n, none, err);
        for (int i = 0; i < c->n_in && rc == 0; i++)
            if (c->in_dtype[i] != GD_BOOL)
                rc = gd_err_set(err, GD_EDTYPE, "input %d must be bool, not %s", i,
                                gd_dtype_name(c->in_dtype[i]));
        if (rc == 0)
            rc = broadcast_inputs(c, 0, c->out[0], err);
        c->out_dtype[0] = GD_BOOL;
        return rc;
    case GD_OP_BIT_SHIFT: {
        const char *dir = NULL;
        rc = gd__attr_check_known(n, shift, err);
        if (rc == 0)
            rc = gd__attr_string(n, "direction", "", &dir, err);
        if (rc == 0 && strcmp(dir, "LEFT") != 0 && strcmp(dir, "RIGHT") != 0)
            rc = gd_err_set(err, GD_EMODEL, "direction must be LEFT or RIGHT, not \"%s\"", dir);
        for (int i = 0; i < c->n_in && rc == 0; i++)
            if (!gd__dtype_integer(c->in_dtype[i]) || !gd__dtype_unsigned(c->in_dtype[i]) ||
                c->in_dtype[i] != c->in_dtype[0])
                rc = gd_err_set(err, GD_EDTYPE,
                                "inputs must be of one unsigned integer dtype; input %d is %s", i,
                                gd_dtype_name(c->in_dtype[i]));
        if (rc == 0)
            rc = broadcast_inputs(c, 0, c->out[0], err);
        if (rc != 0)
            return rc;
        p->shift_left = strcmp(dir, "LEFT") == 0;
        c->out_dtype[0] = c->in_dtype[0];
        return 0;
    }
    case GD_OP_WHERE: {
        enum gd_dtype x = c->in_dtype[1], y = c->in_dtype[2];
        rc = gd__attr_check_known(n, none, err);
        if (rc == 0 && c->in_dtype[0] != GD_BOOL)
            rc = gd_err_set(err, GD_EDTYPE, "the condition must be bool, not %s",
                            gd_dtype_name(c->in_dtype[0]));
        if (rc == 0 && x != y && !(gd_dtype_is_float(x) && gd_dtype_is_float(y)))
            rc = gd_err_set(err, GD_EDTYPE, "X is %s and Y %s: they must be the same",
                            gd_dtype_name(x), gd_dtype_name(y));
        if (rc == 0)
            rc = broadcast_inputs(c, 0, c->out[0], err);
        c->out_dtype[0] = x;
        return rc;
    }
    default:
        return gd_err_set(err, GD_EMODEL, "%s is not a logic op", gd_op_name(n->op));
    }
}
