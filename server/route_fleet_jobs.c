/*
 * route_fleet_jobs.c: POST /api/v1/jobs (a job: a model, its input and data files by SHA-256,
 * knobs, and which devices run it), GET /api/v1/jobs and GET /api/v1/jobs/{id} (the job
 * document: its tasks by device). docs/SERVER.md, "Jobs, devices and leases". A read that
 * finds a lease due for expiry moves to the write pool and expires it first, so what it
 * shows is what a poll would find.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "db.h"
#include "fleet.h"
#include "server.h"

#define MAX_FILES 4096
#define MAX_MATCH 32
#define MAX_KNOBS 64
/* A relative path of a data or weights file: at most this long, this many folders deep. */
#define MAX_REL_PATH  1024
#define MAX_REL_DEPTH 16

/* A file's name: a plain basename of the safe alphabet, not "." or "..". */
static int
plain_name(const char *s)
{
    return s != NULL && srv_is_name(s, 255, "._-+@") && strcmp(s, ".") != 0 &&
           strcmp(s, "..") != 0;
}

/*
 * A data or weights file's name: a relative path of plain names joined by '/' (an ONNX
 * model's external data location, a JSON model's weight file under its weights folder),
 * never absolute, never "." or "..", no empty part.
 */
static int
relative_name(const char *s)
{
    if (s == NULL || s[0] == '\0' || strlen(s) > MAX_REL_PATH)
        return 0;
    int depth = 0;
    for (const char *p = s;; depth++) {
        const char *slash = strchr(p, '/');
        size_t n = slash != NULL ? (size_t)(slash - p) : strlen(p);
        char part[256];
        if (n == 0 || n >= sizeof part || depth >= MAX_REL_DEPTH)
            return 0;
        memcpy(part, p, n);
        part[n] = '\0';
        if (!plain_name(part))
            return 0;
        if (slash == NULL)
            return 1;
        p = slash + 1;
    }
}

/* Where a file lies in the agent's job folder: weights under weights/, the rest as named. */
static void
placed_path(const char *role, const char *name, char *out, size_t size)
{
    snprintf(out, size, "%s%s", strcmp(role, "weights") == 0 ? "weights/" : "", name);
}

/* 1 when the placed paths a and b cannot both be made: equal, or one a folder of the other. */
static int
paths_clash(const char *a, const char *b)
{
    size_t na = strlen(a), nb = strlen(b), n = na < nb ? na : nb;
    if (strncmp(a, b, n) != 0)
        return 0;
    return na == nb || (na < nb ? b[na] == '/' : a[nb] == '/');
}

static int
check_files(struct srv_req *req, json_t *files)
{
    static const char *const known[] = {"role", "name", "sha256", NULL};
    if (!json_is_array(files) || json_array_size(files) < 2 ||
        json_array_size(files) > MAX_FILES)
        return srv_req_fail(req, SRV_EBADREQ,
                            "files must be an array of 2 to %d files: a model, an input, and "
                            "0 or more data and weights files",
                            MAX_FILES);
    int models = 0, inputs = 0;
    size_t i, n = json_array_size(files);
    json_t *f;
    char(*placed)[MAX_REL_PATH + 16] = calloc(n, sizeof *placed);
    if (placed == NULL)
        return srv_req_fail(req, GD_ENOMEM, "out of memory");
    json_array_foreach(files, i, f) {
        char what[32];
        snprintf(what, sizeof what, "files[%zu]", i);
        if (!json_is_object(f)) {
            srv_req_fail(req, SRV_EBADREQ, "%s must be an object", what);
            goto done;
        }
        if (srv_fleet_keys(req, f, known, what) != 0)
            goto done;
        const char *role = json_string_value(json_object_get(f, "role"));
        const char *name = json_string_value(json_object_get(f, "name"));
        const char *sha = json_string_value(json_object_get(f, "sha256"));
        if (role == NULL || (strcmp(role, "model") != 0 && strcmp(role, "input") != 0 &&
                             strcmp(role, "data") != 0 && strcmp(role, "weights") != 0)) {
            srv_req_fail(req, SRV_EBADREQ, "%s.role must be model, input, data or weights", what);
            goto done;
        }
        int nested = strcmp(role, "data") == 0 || strcmp(role, "weights") == 0;
        if (!nested && !plain_name(name)) {
            srv_req_fail(req, SRV_EBADREQ,
                         "%s.name must be a plain file name: 1 to 255 of A-Z a-z 0-9 . _ - + "
                         "@, no folders",
                         what);
            goto done;
        }
        if (nested && !relative_name(name)) {
            srv_req_fail(req, SRV_EBADREQ,
                         "%s.name must be a relative path: plain names (1 to 255 of A-Z a-z "
                         "0-9 . _ - + @, not . or ..) joined by /, at most %d deep and %d bytes",
                         what, MAX_REL_DEPTH, MAX_REL_PATH);
            goto done;
        }
        if (sha == NULL || !srv_is_sha256(sha)) {
            srv_req_fail(req, SRV_EBADREQ, "%s.sha256 must be 64 lowercase hex digits", what);
            goto done;
        }
        models += strcmp(role, "model") == 0;
        inputs += strcmp(role, "input") == 0;
        placed_path(role, name, placed[i], sizeof placed[i]);
        for (size_t j = 0; j < i; j++)
            if (paths_clash(placed[j], placed[i])) {
                srv_req_fail(req, SRV_EBADREQ,
                             "files[%zu] and %s lie at one place in the job's folder (%s and "
                             "%s; weights go under weights/)",
                             j, what, placed[j], placed[i]);
                goto done;
            }
    }
    if (models != 1 || inputs < 1)
        srv_req_fail(req, SRV_EBADREQ,
                     "files need exactly one of role model and at least one of role input (%d "
                     "and %d here)",
                     models, inputs);
done:
    free(placed);
    return req->err.code;
}

static int
check_knobs(struct srv_req *req, json_t *knobs)
{
    if (!json_is_object(knobs) || json_object_size(knobs) > MAX_KNOBS)
        return srv_req_fail(req, SRV_EBADREQ, "knobs must be an object of at most %d knobs",
                            MAX_KNOBS);
    const char *k;
    json_t *v;
    json_object_foreach(knobs, k, v) {
        if (!srv_is_name(k, 64, "_-") || k[0] == '-')
            return srv_req_fail(req, SRV_EBADREQ,
                                "knobs: \"%.64s\" is not a knob name (run's option without "
                                "\"--\": A-Z a-z 0-9 _ -)",
                                k);
        if (!(json_is_string(v) && srv_is_text(json_string_value(v), 256)) &&
            !json_is_integer(v) && !json_is_boolean(v))
            return srv_req_fail(req, SRV_EBADREQ,
                                "knobs.%s must be a string (1 to 256 bytes), an integer or a "
                                "boolean",
                                k);
    }
    return 0;
}

static int
match_value(json_t *v)
{
    return json_is_string(v) && srv_is_text(json_string_value(v), 256);
}

static int
check_match(struct srv_req *req, json_t *match)
{
    if (!json_is_object(match) || json_object_size(match) > MAX_MATCH)
        return srv_req_fail(req, SRV_EBADREQ, "match must be an object of at most %d keys",
                            MAX_MATCH);
    const char *k;
    json_t *v;
    json_object_foreach(match, k, v) {
        int ok = strcmp(k, "backend") == 0 || strcmp(k, "host") == 0 || strcmp(k, "key") == 0 ||
                 (strncmp(k, "env.", 4) == 0 && srv_is_name(k + 4, 64, "_")) ||
                 (strncmp(k, "labels.", 7) == 0 && srv_is_name(k + 7, 64, "._-"));
        if (!ok)
            return srv_req_fail(req, SRV_EBADREQ,
                                "match: \"%.64s\" is not a match key (backend, host, key, "
                                "env.<field>, labels.<name>)",
                                k);
        int good = match_value(v);
        if (json_is_array(v)) {
            size_t i;
            json_t *w;
            good = json_array_size(v) >= 1 && json_array_size(v) <= 64;
            json_array_foreach(v, i, w) good = good && match_value(w);
        }
        if (!good)
            return srv_req_fail(req, SRV_EBADREQ,
                                "match.%s must be a string or an array of 1 to 64 strings", k);
    }
    return 0;
}

/* 409 missing_files: the usual error body with "missing" beside it (and in it). */
static int
reply_missing(struct srv_req *req, const struct gd_err *err, json_t *missing)
{
    json_t *body = json_pack("{s:{s:s,s:s,s:s,s:O},s:O}", "error", "code",
                             srv_err_code(SRV_EMISSING), "message", err->msg, "request_id",
                             req->id, "missing", missing, "missing", missing);
    return srv_reply_json(req, 409, body);
}

int
srv_fleet_jobs_create(struct srv_req *req)
{
    static const char *const known_q[] = {NULL};
    static const char *const known[] = {"model",    "files",    "knobs",           "match",
                                        "lease_seconds", "attempts", "deadline_seconds", NULL};
    if (srv_req_query_check(req, known_q) != 0)
        return req->err.code;
    if (!req->on_pool)
        return SRV_EDEFERWRITE;
    json_t *body = NULL, *knobs = NULL, *match = NULL;
    struct srv_fleet_job_in in = {0};
    if (srv_fleet_body(req, &body) != 0 || srv_fleet_keys(req, body, known, "the body") != 0)
        goto done;
    in.model = json_string_value(json_object_get(body, "model"));
    if (in.model == NULL || !srv_is_text(in.model, SRV_MODEL_NAME_MAX)) {
        srv_req_fail(req, SRV_EBADREQ, "model must be " SRV_MODEL_NAME_RULE);
        goto done;
    }
    in.files = json_object_get(body, "files");
    knobs = json_object_get(body, "knobs");
    match = json_object_get(body, "match");
    in.knobs = knobs != NULL ? json_incref(knobs) : json_object();
    in.match = match != NULL ? json_incref(match) : json_object();
    if (check_files(req, in.files) != 0 || check_knobs(req, in.knobs) != 0 ||
        check_match(req, in.match) != 0 ||
        srv_fleet_int(req, body, "lease_seconds", 120, 10, 3600, &in.lease_seconds) != 0 ||
        srv_fleet_int(req, body, "attempts", 1, 1, 10, &in.attempts) != 0 ||
        srv_fleet_int(req, body, "deadline_seconds", 86400, 10, 30 * 86400,
                      &in.deadline_seconds) != 0)
        goto done;
    in.token_id = req->token_id;
    struct srv_db *db = srv_req_db(req);
    if (db == NULL)
        goto done;
    json_t *out = NULL, *missing = NULL;
    struct gd_err err;
    int rc = srv_db_fleet_job_create(db, &in, srv_now(), &missing, &out, &err);
    srv_req_db_release(req, db);
    if (rc == SRV_EMISSING && missing != NULL) {
        reply_missing(req, &err, missing);
        json_decref(missing);
        goto done;
    }
    json_decref(missing);
    if (rc != 0) {
        srv_req_fail_err(req, &err);
        goto done;
    }
    srv_metrics_add(SRV_M_FLEET_JOBS, 1);
    SRV_LOG(GD_LOG_INFO, req, "job %s of model %s: %zu devices",
            json_string_value(json_object_get(out, "id")), in.model,
            json_array_size(json_object_get(out, "tasks")));
    srv_reply_json(req, 201, out);
done:
    json_decref(in.knobs);
    json_decref(in.match);
    json_decref(body);
    return req->err.code;
}

/* Before a read: expires what is due (of job_id, or any with NULL), on the write pool. */
static int
expire_first(struct srv_req *req, const char *job_id)
{
    struct srv_db *db = srv_req_db(req);
    if (db == NULL)
        return req->err.code;
    struct gd_err err;
    int stale = 0;
    int64_t now = srv_now();
    int rc = srv_db_fleet_stale(db, job_id, now, &stale, &err);
    if (rc == 0 && stale && !req->on_pool) {
        srv_req_db_release(req, db);
        return SRV_EDEFERWRITE;
    }
    struct srv_fleet_expired ex;
    if (rc == 0 && stale)
        rc = srv_db_fleet_expire(db, now, &ex, &err);
    srv_req_db_release(req, db);
    return rc == 0 ? 0 : srv_req_fail_err(req, &err);
}

int
srv_fleet_jobs_list(struct srv_req *req)
{
    static const char *const known[] = {"limit", NULL};
    if (srv_req_query_check(req, known) != 0)
        return req->err.code;
    int64_t limit = 50;
    const char *l = srv_req_query(req, "limit");
    if (l != NULL && srv_parse_int(l, 1, 500, &limit) != 0)
        return srv_req_fail(req, SRV_EBADREQ, "limit must be an integer from 1 to 500");
    int rc = expire_first(req, NULL);
    if (rc != 0)
        return rc;
    struct srv_db *db = srv_req_db(req);
    if (db == NULL)
        return req->err.code;
    json_t *out = NULL;
    struct gd_err err;
    rc = srv_db_fleet_jobs_list(db, limit, &out, &err);
    srv_req_db_release(req, db);
    if (rc != 0)
        return srv_req_fail_err(req, &err);
    return srv_reply_json(req, 200, out);
}

int
srv_fleet_jobs_get(struct srv_req *req)
{
    static const char *const known[] = {NULL};
    if (srv_req_query_check(req, known) != 0)
        return req->err.code;
    if (!srv_is_uuid(req->params[0]))
        return srv_req_fail(req, SRV_EBADREQ, "a job id is a lowercase UUID version 4");
    int rc = expire_first(req, req->params[0]);
    if (rc != 0)
        return rc;
    struct srv_db *db = srv_req_db(req);
    if (db == NULL)
        return req->err.code;
    json_t *out = NULL;
    struct gd_err err;
    rc = srv_db_fleet_job_get(db, req->params[0], &out, &err);
    srv_req_db_release(req, db);
    if (rc != 0)
        return srv_req_fail_err(req, &err);
    return srv_reply_json(req, 200, out);
}
