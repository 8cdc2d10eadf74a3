/*
 * route_standing.c: GET /api/v1/standing?runs=ID,...[&truth=ID|auto]: where each run of a
 * page of the run list stands (docs/SERVER.md, "Standing"): against its model's baseline
 * and against a truth run (named, or with truth=auto the newest cpu64 run of its model and
 * input), each summarized by the last layer of the diff and its first divergent layer. A
 * diff not cached yet is computed here, on the compare pool: this is how a run beyond the
 * newest 1,000 of its model, which setting a baseline does not queue, gets compared when
 * its page is shown.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "compare.h"
#include "db.h"
#include "server.h"

#define STANDING_RUNS_MAX 100

static json_t *
number_or_null(double v)
{
    return isfinite(v) ? json_real(v) : json_null();
}

/* Run against other (default tolerances) as {"state", "against", "verdict", ...}. */
static int
standing_of(struct srv_req *req, const char *run, const char *other, const char *self_state,
            json_t **out)
{
    if (strcmp(run, other) == 0) {
        *out = json_pack("{s:s, s:s}", "state", self_state, "against", other);
        return 0;
    }
    struct srv_diff_key key;
    struct srv_diff_summary sum;
    srv_diff_key_default(&key, run, other);
    int rc = srv_diff_summary_ensure(req, &key, NULL, &sum);
    if (rc == SRV_EGONE) {
        *out = json_pack("{s:s, s:s}", "state", "unavailable", "against", other);
        return 0;
    }
    if (rc == SRV_EDEFER)
        return rc;
    if (rc != 0) {
        /* One run that cannot be compared (too big, too slow) does not fail the page. */
        *out = json_pack("{s:s, s:s, s:s}", "state", "failed", "against", other, "error",
                         req->err.msg);
        memset(&req->err, 0, sizeof req->err);
        return 0;
    }
    *out = json_pack("{s:s, s:s, s:s, s:o, s:o, s:o}", "state", "compared", "against", other,
                     "verdict", sum.layer_found ? sum.verdict : "incomparable", "err",
                     number_or_null(sum.layer_found ? sum.err : NAN), "max_abs",
                     number_or_null(sum.layer_found ? sum.max_abs : NAN), "first_divergent",
                     sum.has_first ? json_string(sum.first_divergent) : json_null());
    return 0;
}

/* The run's model's baseline ("" for none) and the truth it is measured against ("" none). */
static int
references(struct srv_req *req, const char *run, const char *truth, char baseline[40],
           char truth_run[40])
{
    struct gd_err err;
    json_t *meta = NULL;
    baseline[0] = truth_run[0] = '\0';
    struct srv_db *db = srv_req_db(req);
    if (db == NULL)
        return req->err.code;
    int rc = srv_db_run_meta(db, run, &meta, &err);
    const char *model = json_string_value(json_object_get(json_object_get(meta, "model"), "name"));
    if (rc == 0 && model != NULL)
        rc = srv_db_model_baseline(db, model, baseline, &err);
    if (rc == 0 && truth != NULL && strcmp(truth, "auto") == 0) {
        rc = srv_db_truth_find(db, run, truth_run, &err);
        if (rc == SRV_ENOTFOUND)
            rc = 0;
    } else if (rc == 0 && truth != NULL) {
        snprintf(truth_run, 40, "%s", truth);
    }
    srv_req_db_release(req, db);
    json_decref(meta);
    return rc == 0 ? 0 : srv_req_fail_err(req, &err);
}

int
srv_standing_get(struct srv_req *req)
{
    static const char *const known[] = {"runs", "truth", NULL};
    if (srv_req_query_check(req, known) != 0)
        return req->err.code;
    const char *truth = srv_req_query(req, "truth"), *text = srv_req_query(req, "runs");
    if (truth != NULL && strcmp(truth, "auto") != 0 && !srv_is_uuid(truth))
        return srv_req_fail(req, SRV_EBADREQ, "truth: a run id (a lowercase UUID) or auto");
    if (text == NULL)
        return srv_req_fail(req, SRV_EBADREQ, "runs: a comma-separated list of run ids");
    json_t *out = json_array();
    int rc = 0;
    const char *p = text;
    size_t count = 0;
    while (rc == 0) {
        size_t len = strcspn(p, ",");
        char run[40];
        if (len != 36 || ++count > STANDING_RUNS_MAX) {
            rc = srv_req_fail(req, SRV_EBADREQ, "runs: 1 to %d run ids separated by commas",
                              STANDING_RUNS_MAX);
            break;
        }
        memcpy(run, p, len);
        run[len] = '\0';
        if (!srv_is_uuid(run)) {
            rc = srv_req_fail(req, SRV_EBADREQ, "runs: %s is not a run id", run);
            break;
        }
        char baseline[40], truth_run[40];
        json_t *b = NULL, *t = NULL;
        rc = references(req, run, truth, baseline, truth_run);
        if (rc == SRV_ENOTFOUND) {
            /* An unknown run says so in its entry; the others still stand. */
            memset(&req->err, 0, sizeof req->err);
            json_array_append_new(out, json_pack("{s:s, s:n, s:n, s:b}", "run", run, "baseline",
                                                 "truth", "found", 0));
            rc = 0;
        } else if (rc == 0) {
            if (baseline[0] != '\0')
                rc = standing_of(req, run, baseline, "baseline", &b);
            if (rc == 0 && truth_run[0] != '\0')
                rc = standing_of(req, run, truth_run, "truth", &t);
            if (rc == 0)
                json_array_append_new(out, json_pack("{s:s, s:o, s:o, s:b}", "run", run, "baseline",
                                                     b != NULL ? b : json_null(), "truth",
                                                     t != NULL ? t : json_null(), "found", 1));
            else {
                json_decref(b);
                json_decref(t);
            }
        }
        if (p[len] == '\0')
            break;
        p += len + 1;
    }
    if (rc != 0) {
        json_decref(out);
        return rc;
    }
    return srv_reply_json(req, 200, json_pack("{s:o}", "runs", out));
}
