/*
 * view.c: which node outputs are views: the same bytes as the node's input, from an offset
 * into its memory, so the session points the output at them instead of copying
 * (engine/core/session.c; docs/ARCHITECTURE.md, "Views"). Reshape, Flatten, Squeeze,
 * Unsqueeze and Identity keep C order, so their output is the input's bytes in another
 * shape; a Gather of one constant index along an axis with nothing before it (all leading
 * dimensions 1) is one contiguous block of the input. Nothing is computed, so a view gives
 * the bits the copy gave.
 */
#include "internal.h"
#include "move.h"

/* An offset consumers may take as the start of an allocation: cuBLASLt assumes 256-byte
 * aligned operands by default, and the element-wise kernels' 16-byte vectors follow. */
#define VIEW_ALIGN 256

/* The one index of a Gather as a host value; 0 when the tensor is not one integer. */
static int
one_index(const struct gd_tensor *t, int64_t *out)
{
    if (t == NULL || t->data == NULL || gd_tensor_numel(t) != 1)
        return 0;
    switch (t->dtype) {
    case GD_I64:
        *out = *(const int64_t *)t->data;
        return 1;
    case GD_I32:
        *out = *(const int32_t *)t->data;
        return 1;
    default:
        return 0;
    }
}

int64_t
gd__view_offset(const struct gd_node *n, const struct gd_params *p, const struct gd_tensor *in,
                const struct gd_tensor *out, const struct gd_tensor *index_host)
{
    if (n->n_outputs != 1 || in == NULL || in->data == NULL || in->dtype != out->dtype)
        return -1;
    size_t es = gd_dtype_size(in->dtype);
    switch (n->op) {
    case GD_OP_RESHAPE:
    case GD_OP_FLATTEN:
    case GD_OP_SQUEEZE:
    case GD_OP_UNSQUEEZE:
    case GD_OP_IDENTITY:
        return gd_tensor_nbytes(out) == gd_tensor_nbytes(in) ? 0 : -1;
    case GD_OP_GATHER: {
        int64_t axis = p->axis, k = 0, inner = 1;
        if (axis < 0 || axis >= in->ndim || !one_index(index_host, &k))
            return -1;
        for (int d = 0; d < axis; d++)
            if (in->shape[d] != 1)
                return -1;
        for (int d = (int)axis + 1; d < in->ndim; d++)
            inner *= in->shape[d];
        k = gd__index_fix(k, in->shape[axis]);
        if (k < 0) /* out of range: the op reports it */
            return -1;
        size_t off = (size_t)k * (size_t)inner * es;
        if (off % VIEW_ALIGN != 0 || gd_tensor_nbytes(out) != (size_t)inner * es)
            return -1;
        return (int64_t)off;
    }
    default:
        return -1;
    }
}
