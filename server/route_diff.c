/*
 * route_diff.c: GET /api/v1/diff?a=ID&b=ID[&truth=ID][&atol=X&rtol=Y]: the engine's diff of
 * two stored runs (gd_diff_to_json's object). A cached diff is sent as the text stored, with
 * no JSON parsed or written on the way: one indexed query and one copy.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "compare.h"
#include "server.h"

/* A tolerance: a finite decimal number >= 0, or the default when absent. */
static int
tolerance(struct srv_req *req, const char *name, double def, double *out)
{
    const char *text = srv_req_query(req, name);
    *out = def;
    if (text == NULL)
        return 0;
    char *end;
    double v = strtod(text, &end);
    if (text[0] == '\0' || *end != '\0' || !isfinite(v) || v < 0 || strlen(text) > 64)
        return srv_req_fail(req, SRV_EBADREQ, "%s: a finite number >= 0 (e.g. 1e-5)", name);
    *out = v;
    return 0;
}

static int
run_param(struct srv_req *req, const char *name, int required, const char **out)
{
    *out = srv_req_query(req, name);
    if (*out == NULL && required)
        return srv_req_fail(req, SRV_EBADREQ, "%s: the id of a run is required", name);
    if (*out != NULL && !srv_is_uuid(*out))
        return srv_req_fail(req, SRV_EBADREQ, "%s: a run id is a lowercase UUID version 4", name);
    return 0;
}

int
srv_diff_get(struct srv_req *req)
{
    static const char *const known[] = {"a", "b", "truth", "atol", "rtol", NULL};
    struct srv_diff_key key;
    srv_diff_key_default(&key, NULL, NULL);
    const char *truth;
    if (srv_req_query_check(req, known) != 0 || run_param(req, "a", 1, &key.a) != 0 ||
        run_param(req, "b", 1, &key.b) != 0 || run_param(req, "truth", 0, &truth) != 0 ||
        tolerance(req, "atol", SRV_DIFF_ATOL, &key.atol) != 0 ||
        tolerance(req, "rtol", SRV_DIFF_RTOL, &key.rtol) != 0)
        return req->err.code;
    key.truth = truth != NULL ? truth : "";
    char *text = NULL;
    size_t len = 0;
    int hit = 0;
    struct gd_err err;
    int rc = srv_compare_json(req->srv->compare, &key, &text, &len, &hit, &err);
    if (rc != 0)
        return srv_req_fail_err(req, &err);
    rc = srv_reply_json_text(req, 200, text, len);
    if (rc == 0)
        MHD_add_response_header(req->resp, "X-Cache", hit ? "hit" : "miss");
    return rc;
}
