/*
 * route_ops.c: GET /api/v1/ops: the engine's operator list (engine/core/ops.def) with the
 * traits the comparison uses, so a client tells a discontinuous or ill-conditioned layer
 * from its op without a copy of the table that could drift from the engine's.
 */
#include "gpudiff/ops.h"
#include "server.h"

int
srv_ops_list(struct srv_req *req)
{
    static const char *const known[] = {NULL};
    if (srv_req_query_check(req, known) != 0)
        return req->err.code;
    json_t *ops = json_array();
    for (int op = 0; op < GD_OP_COUNT; op++) {
        const struct gd_op_info *info = gd_op_info((enum gd_op)op);
        if (info == NULL)
            continue;
        json_array_append_new(
            ops, json_pack("{s:s, s:s, s:i, s:i, s:s, s:i, s:b, s:b}", "name", info->name,
                           "family", info->family, "min_inputs", info->min_inputs, "max_inputs",
                           info->max_inputs, "reduction", gd_reduction_name(info->reduction), "ulps",
                           info->ulps, "discontinuous", info->discontinuous, "ill_conditioned",
                           info->ill_conditioned));
    }
    return srv_reply_json(req, 200, json_pack("{s:o}", "ops", ops));
}
