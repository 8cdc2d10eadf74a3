/* infer_gemm.c: Gemm (2-D, transA/transB, alpha, beta, C broadcast to (M, N)) and MatMul
 * (numpy matmul: 1-D operands promoted, batch dimensions broadcast). */
#include <string.h>

#include "internal.h"

static int
infer_gemm(struct gd__infer_call *c, struct gd_err *err)
{
    static const char *const known[] = {"alpha", "beta", "transA", "transB", NULL};
    const struct gd_node *n = c->node;
    struct gd_params *p = c->params;
    int64_t ta, tb;
    int rc = gd__attr_check_known(n, known, err);
    if (rc == 0)
        rc = gd__attr_float(n, "alpha", 1.0, &p->alpha, err);
    if (rc == 0)
        rc = gd__attr_float(n, "beta", 1.0, &p->beta, err);
    if (rc == 0)
        rc = gd__attr_int(n, "transA", 0, &ta, err);
    if (rc == 0)
        rc = gd__attr_int(n, "transB", 0, &tb, err);
    if (rc != 0)
        return rc;
    p->trans_a = ta != 0;
    p->trans_b = tb != 0;
    const struct gd_shape *a = c->in[0], *b = c->in[1];
    if (a->ndim != 2 || b->ndim != 2)
        return gd_err_set(err, GD_ESHAPE, "A and B must be 2-D (A is %d-D, B is %d-D)", a->ndim,
                          b->ndim);
    int64_t m = p->trans_a ? a->dim[1] : a->dim[0];
    int64_t k = p->trans_a ? a->dim[0] : a->dim[1];
    int64_t kb = p->trans_b ? b->dim[1] : b->dim[0];
    int64_t nn = p->trans_b ? b->dim[0] : b->dim[1];
    if (k != kb)
        return gd_err_set(err, GD_ESHAPE, "inner dimensions differ: A gives K=%lld, B K=%lld",
                          (long long)k, (long long)kb);
    struct gd_shape *y = c->out[0];
    y->ndim = 2;
    y->dim[0] = m;
    y->dim[1] = nn;
    if (c->n_in > 2 && c->in[2] != NULL) {
        struct gd_shape bc;
        const struct gd_shape *cs = c->in[2];
        if (cs->ndim > 2 || gd__broadcast_shape(cs, y, &bc, err) != 0 || bc.dim[0] != m ||
            bc.dim[1] != nn) {
            char buf[64];
            return gd_err_set(err, GD_ESHAPE, "C of shape %s does not broadcast to (%lld, %lld)",
                              gd_shape_format(cs->ndim, cs->dim, buf, sizeof buf),
                              (long long)m, (long long)nn);
        }
    }
    /* Row i of Y is row i of A (not transposed) times the rest; B's rows are the K axis. */
    const struct gd_shape *cs = c->n_in > 2 ? c->in[2] : NULL;
    int c_rows = cs == NULL || c->in_weight[2] || (cs->ndim == 2 && cs->dim[0] == m);
    int a_ok = c->in_weight[0] || !p->trans_a, b_ok = c->in_weight[1];
    p->mixes_batch = !(a_ok && b_ok && c_rows);
    return 0;
}

static int
infer_matmul(struct gd__infer_call *c, struct gd_err *err)
{
    static const char *const none[] = {NULL};
    int rc = gd__attr_check_known(c->node, none, err);
    if (rc != 0)
        return rc;
    struct gd_shape a = *c->in[0], b = *c->in[1];
    if (a.ndim < 1 || b.ndim < 1)
        return gd_err_set(err, GD_ESHAPE, "MatMul operands must have at least one dimension");
    int a_vec = a.ndim == 1, b_vec = b.ndim == 1;
    if (a_vec) { /* (K) -> (1, K) */
        a.ndim = 2;
        a.dim[1] = a.dim[0];
        a.dim[0] = 1;
    }
    if (b_vec) { /* (K) -> (K, 1) */
        b.ndim = 2;
        b.dim[1] = 1;
    }
    int64_t m = a.dim[a.ndim - 2], k = a.dim[a.ndim - 1];
    int64_t kb = b.dim[b.ndim - 2], nn = b.dim[b.ndim - 1];
    if (k != kb)
        return gd_err_set(err, GD_ESHAPE, "inner dimensions differ: %lld and %lld", (long long)k,
                          (long long)kb);
    struct gd_shape ba = {.ndim = a.ndim - 2}, bb = {.ndim = b.ndim - 2}, batch;
    memcpy(ba.dim, a.dim, sizeof ba.dim);
    memcpy(bb.dim, b.dim, sizeof bb.dim);
    rc = gd__broadcast_shape(&ba, &bb, &batch, err);
    if (rc != 0)
        return rc;
    if (batch.ndim + 2 > GD_MAX_DIMS)
        return gd_err_set(err, GD_ESHAPE, "too many dimensions");
    struct gd_shape *y = c->out[0];
    *y = batch;
    if (!a_vec)
        y->dim[y->ndim++] = m;
    if (!b_vec)
        y->dim[y->ndim++] = nn;
    /*
     * Row r of Y comes from row r of an operand computed at run time when Y's dim 0 is that
     * operand's dim 0: A's rows (the M axis, or its first batch axis), or a first batch axis
     * of B (B's own rows are the K axis). A weight carries no rows.
     */
    const struct gd_shape *ra = c->in[0], *rb = c->in[1];
    int a_rows = ra->ndim >= 2 && y->ndim == ra->ndim - b_vec && y->dim[0] == ra->dim[0];
    int b_rows = rb->ndim >= 3 && y->ndim == rb->ndim - a_vec && y->dim[0] == rb->dim[0];
    int a_ok = c->in_weight[0] || a_rows, b_ok = c->in_weight[1] || b_rows;
    c->params->mixes_batch = !(a_ok && b_ok);
    return 0;
}

int
gd__infer_gemm(struct gd__infer_call *c, struct gd_err *err)
{
    for (int i = 0; i < c->n_in; i++)
        if (c->in[i] != NULL && !gd_dtype_is_float(c->in_dtype[i]))
            return gd_err_set(err, GD_EDTYPE, "input %d must be floating point", i);
    if (c->n_out != 1)
        return gd_err_set(err, GD_EMODEL, "%s has one output", gd_op_name(c->node->op));
    return c->node->op == GD_OP_GEMM ? infer_gemm(c, err) : infer_matmul(c, err);
}
