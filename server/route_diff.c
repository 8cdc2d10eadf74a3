/*
 * route_diff.c: GET /api/v1/diff?a=ID&b=ID[&truth=ID][&atol=X&rtol=Y]: the engine's diff of
 * two stored runs (gd_diff_to_json's object). A cached diff is sent as the text stored, with
 * no JSON parsed or written on the way: one indexed query and one copy (or, past 1 MiB,
 * pieces read as the client takes them), from the thread that serves the connection. A diff
 * to compute is computed on the compare pool (compare.h).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

#include "compare.h"
#include "db.h"
#include "server.h"

/* A tolerance: a finite decimal number >= 0 (srv_parse_decimal), or the default when absent. */
static int
tolerance(struct srv_req *req, const char *name, double def, double *out)
{
    const char *text = srv_req_query(req, name);
    *out = def;
    if (text == NULL)
        return 0;
    double v;
    if (srv_parse_decimal(text, &v) != 0)
        return srv_req_fail(req, SRV_EBADREQ,
                            "%s: a finite decimal number >= 0, as in JSON (e.g. 1e-5)", name);
    *out = v;
    return 0;
}

/*
 * A cached diff larger than this is sent in pieces read from the database as the client
 * takes them, so a 100 MB diff never sits whole in memory, once per reader; a client that
 * never reads holds one piece (sec, issue 25 item 2: it was 1 MiB inline, 256 KiB pieces).
 */
#define STREAM_FROM  ((uint64_t)64 << 10)
#define STREAM_PIECE ((size_t)32 << 10)

struct diff_stream {
    struct srv_store *store;
    int64_t row;
    uint64_t len; /* of the stored text; the newline after it is sent too */
};

static ssize_t
stream_read(void *cls, uint64_t pos, char *buf, size_t max)
{
    struct diff_stream *d = cls;
    if (pos == d->len) {
        buf[0] = '\n';
        return 1;
    }
    if (pos > d->len)
        return MHD_CONTENT_READER_END_OF_STREAM;
    size_t n = max < STREAM_PIECE ? max : STREAM_PIECE;
    if (n > d->len - pos)
        n = (size_t)(d->len - pos);
    /* A connection for this piece only: a slow client holds none between pieces. */
    struct srv_db *db = NULL;
    struct gd_err err;
    int rc = srv_store_acquire(d->store, &db, &err);
    if (rc == 0)
        rc = srv_db_diff_read(db, d->row, d->len, pos, buf, n, &err);
    srv_store_release(d->store, db);
    if (rc != 0) {
        SRV_LOG(GD_LOG_WARN, NULL, "sending cached diff %lld: %s", (long long)d->row, err.msg);
        return MHD_CONTENT_READER_END_WITH_ERROR;
    }
    return (ssize_t)n;
}

static int
reply_streamed(struct srv_req *req, int64_t row, uint64_t len, const char *cache)
{
    struct diff_stream *d = malloc(sizeof *d);
    if (d == NULL)
        return srv_req_fail(req, GD_ENOMEM, "out of memory");
    d->store = req->srv->store;
    d->row = row;
    d->len = len;
    struct MHD_Response *resp =
        MHD_create_response_from_callback(len + 1, STREAM_PIECE, stream_read, d, free);
    if (resp == NULL) {
        free(d);
        return srv_req_fail(req, GD_ENOMEM, "out of memory");
    }
    MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, "application/json");
    MHD_add_response_header(resp, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
    MHD_add_response_header(resp, "X-Cache", cache);
    return srv_reply(req, 200, resp);
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
srv_diff_key_from_query(struct srv_req *req, struct srv_diff_key *key)
{
    srv_diff_key_default(key, NULL, NULL);
    const char *truth;
    if (run_param(req, "a", 1, &key->a) != 0 || run_param(req, "b", 1, &key->b) != 0 ||
        run_param(req, "truth", 0, &truth) != 0 ||
        tolerance(req, "atol", SRV_DIFF_ATOL, &key->atol) != 0 ||
        tolerance(req, "rtol", SRV_DIFF_RTOL, &key->rtol) != 0)
        return req->err.code;
    key->truth = truth != NULL ? truth : "";
    return 0;
}

int
srv_diff_get(struct srv_req *req)
{
    static const char *const known[] = {"a", "b", "truth", "atol", "rtol", NULL};
    struct srv_diff_key key;
    if (srv_req_query_check(req, known) != 0 || srv_diff_key_from_query(req, &key) != 0)
        return req->err.code;
    char *text = NULL;
    size_t len = 0;
    int hit = 0;
    struct gd_err err;
    int rc;
    if (!req->on_pool) {
        /* A cached diff is served from this thread at once; one to compute goes to the pool. */
        struct srv_db *db = srv_req_db(req);
        if (db == NULL)
            return req->err.code;
        int64_t row = 0;
        uint64_t size = 0;
        rc = srv_db_diff_locate(db, &key, STREAM_FROM, &row, &size, &text, &len, &err);
        srv_req_db_release(req, db);
        if (rc == SRV_ENOTFOUND)
            return SRV_EDEFER;
        if (rc == 0)
            srv_metrics_add(SRV_M_DIFF_HITS, 1);
        if (rc == 0 && size > STREAM_FROM)
            return reply_streamed(req, row, size, "hit");
        hit = 1;
    } else {
        rc = srv_compare_json(req->srv->compare, &key, &text, &len, &hit, &err);
        /* A large diff just cached goes out from the database too, not from this copy. */
        struct srv_db *db = rc == 0 && len > STREAM_FROM ? srv_req_db(req) : NULL;
        int64_t row = 0;
        uint64_t size = 0;
        char *none = NULL;
        size_t none_len = 0;
        if (db != NULL && srv_db_diff_locate(db, &key, 0, &row, &size, &none, &none_len,
                                             &err) == 0 && size > STREAM_FROM) {
            srv_req_db_release(req, db);
            free(text);
            free(none);
            return reply_streamed(req, row, size, hit ? "hit" : "miss");
        }
        free(none);
        srv_req_db_release(req, db);
        if (rc == 0) {
            gd_err_clear(&req->err); /* no connection to be had: the copy is sent */
            gd_err_clear(&err);
        }
    }
    if (rc != 0)
        return srv_req_fail_err(req, &err);
    rc = srv_reply_json_text(req, 200, text, len);
    if (rc == 0)
        MHD_add_response_header(req->resp, "X-Cache", hit ? "hit" : "miss");
    return rc;
}
