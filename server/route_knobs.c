/*
 * route_knobs.c: GET /api/v1/knobs: the engine's knob table (engine/core/knobs.def): each
 * knob's name, option, values, default, backends and category, so a client (the
 * dashboard's run labels and commands) says a run's knobs as the agent takes them without a
 * copy of the table that could drift from the engine's.
 */
#include "gpudiff/knobs.h"
#include "server.h"

int
srv_knobs_list(struct srv_req *req)
{
    static const char *const known[] = {NULL};
    if (srv_req_query_check(req, known) != 0)
        return req->err.code;
    return srv_reply_json(req, 200, json_pack("{s:o}", "knobs", gd_knobs_table_json()));
}
