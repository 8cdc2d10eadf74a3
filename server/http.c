/*
 * http.c: libmicrohttpd set-up (pools of polling threads, epoll on Linux; no thread per
 * connection; connections come from the gate, gate.c) and the life of a request: its
 * struct srv_req made at the first callback with the head the gate parsed, routing, auth
 * and size checks on the headers, the body streamed to its handler piece by piece, work
 * that may take long moved to the compare pool (the connection suspended meanwhile), the
 * answer, and the clean-up in the completion callback, whatever happened.
 */
#define _GNU_SOURCE /* POLLRDHUP */
#include <malloc.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <poll.h>
#include <strings.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "compare.h"
#include "db.h"
#include "gate.h"
#include "pool.h"
#include "server.h"
#include "tls.h"

/* Bodies of routes that take none: small ones are tolerated (and ignored). */
#define NO_BODY_MAX 65536

static _Atomic uint64_t request_counter;

/*
 * Two libmicrohttpd daemons, two pools of threads (issue 24): the light reads (GET and HEAD
 * of everything but downloads) on --read-threads at normal priority, everything else
 * (bodies, downloads, long polls) on --threads at nice --write-nice, as the write pool's
 * commits. A /healthz or a cached diff then never waits for a thread busy with an upload,
 * nor for the CPU an upload storm takes: docs/PERFORMANCE.md, "Latency under 64 uploaders".
 * Over TLS the gate sees no head to sort by: one daemon serves all, at normal priority.
 */
int
srv_http_is_light(const char *method, const char *path)
{
    if (strcmp(method, "GET") != 0 && strcmp(method, "HEAD") != 0)
        return 0;
    size_t n = strlen(path);
    return strncmp(path, "/api/v1/files/", 14) != 0 &&
           !(n >= 4 && strcmp(path + n - 4, ".npy") == 0);
}

struct MHD_Daemon *
srv_http_daemon_for(const struct srv_server *srv, const struct srv_head *head)
{
    if (srv->mhd_reads != NULL && head != NULL && head->method != NULL && head->path != NULL &&
        srv_http_is_light(head->method, head->path))
        return srv->mhd_reads;
    return srv->mhd;
}

/* The first call on each thread of the daemon that serves writes: its nice value. */
static void
thread_priority(struct srv_server *srv, struct MHD_Connection *conn)
{
    static __thread int done;
    if (done)
        return;
    done = 1;
    const union MHD_ConnectionInfo *ci = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_DAEMON);
    if (srv->mhd_reads == NULL || srv->cfg.write_nice == 0 || ci == NULL || ci->daemon != srv->mhd)
        return;
    if (setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid), (int)srv->cfg.write_nice) != 0)
        SRV_LOG(GD_LOG_DEBUG, NULL, "setpriority: %s", strerror(errno));
}

/* A client's X-Request-Id is kept when it is short and plain, so logs can be joined. */
static int
usable_request_id(const char *s)
{
    size_t n = 0;
    for (; s[n]; n++)
        if (n >= 40 || !srv_is_name((char[]){s[n], '\0'}, 1, "._-"))
            return 0;
    return n > 0;
}

void
srv_request_id_new(const struct srv_server *srv, const char *client_id, char *out, size_t size)
{
    uint64_t n = atomic_fetch_add(&request_counter, 1) + 1;
    if (client_id != NULL && usable_request_id(client_id))
        snprintf(out, size, "%s", client_id);
    else
        snprintf(out, size, "%08x-%llu", srv->boot_id, (unsigned long long)n);
}

static struct srv_req *
req_alloc(struct srv_server *srv, struct MHD_Connection *conn)
{
    struct srv_req *req = calloc(1, sizeof *req);
    if (req == NULL)
        return NULL;
    req->srv = srv;
    req->conn = conn;
    req->t_start = srv_clock();
    req->metrics_route = SRV_METRICS_UNMATCHED;
    req->gate_conn = srv_gate_conn(conn);
    return req;
}

/* TLS: the header fields libmicrohttpd read, in order (more than the most are counted). */
struct tls_fields {
    struct srv_head_field fields[SRV_HEAD_FIELDS_MAX + 1];
    int n;
};

static enum MHD_Result
tls_field(void *cls, enum MHD_ValueKind kind, const char *key, const char *value)
{
    (void)kind;
    struct tls_fields *f = cls;
    if (f->n <= SRV_HEAD_FIELDS_MAX)
        f->fields[f->n] = (struct srv_head_field){key, value != NULL ? value : ""};
    f->n++;
    return MHD_YES;
}

/* TLS: the head as libmicrohttpd read it, through the gate's checks (srv_head_rebuild). */
static int
tls_head(struct srv_req *req, const char *method, const char *version, struct gd_err *err)
{
    if (req->tls_target == NULL)
        return gd_err_set(err, GD_ENOMEM, "out of memory for the request target");
    struct tls_fields f;
    f.n = 0;
    MHD_get_connection_values(req->conn, MHD_HEADER_KIND, tls_field, &f);
    return srv_head_rebuild(method, req->tls_target, version, f.fields, f.n,
                            (size_t)req->srv->cfg.max_header, &req->head, err);
}

/*
 * The first access-handler call: the head the gate parsed (or, over TLS, the one rebuilt
 * from libmicrohttpd's parse), the method, path and request id from it.
 */
static void
req_head(struct srv_req *req, const char *url, const char *method, const char *version)
{
    struct gd_err err;
    int rc = 0;
    if (req->gate_conn != NULL) {
        srv_conn_head_in(req->gate_conn);
        srv_conn_take_head(req->gate_conn, &req->head);
    }
    if (req->head.method == NULL && req->srv->tls != NULL)
        rc = tls_head(req, method, version, &err);
    snprintf(req->method, sizeof req->method, "%s", req->head.method ? req->head.method : method);
    req->path = req->head.path != NULL ? req->head.path : "";
    srv_request_id_new(req->srv, srv_head_field(&req->head, "X-Request-Id"), req->id,
                       sizeof req->id);
    if (rc != 0)
        srv_req_fail_err(req, &err);
    else if (req->head.method == NULL)
        srv_req_fail(req, SRV_EINTERNAL, "the request came in past the gate");
    else if (strcmp(method, req->head.method) != 0 || strcmp(url, req->head.path) != 0)
        /* The head the gate parsed is the one libmicrohttpd read: one request per connection. */
        srv_req_fail(req, SRV_EBADREQ, "the request could not be read the same way twice");
}

/*
 * libmicrohttpd's URI log callback, called when a request line is in. Over TLS it keeps the
 * target as received (the handler is given it decoded, its query split off) and makes the
 * request's record, which the first access-handler call completes (req_head).
 */
static void *
on_uri(void *cls, const char *uri, struct MHD_Connection *conn)
{
    struct srv_server *srv = cls;
    if (srv->tls == NULL)
        return NULL;
    struct srv_req *req = req_alloc(srv, conn);
    if (req != NULL)
        req->tls_target = strdup(uri);
    return req;
}

static void
req_free(struct srv_req *req)
{
    if (req->ctx_free != NULL && req->ctx != NULL)
        req->ctx_free(req->ctx);
    srv_buf_fini(&req->body);
    if (req->resp != NULL)
        MHD_destroy_response(req->resp);
    srv_head_fini(&req->head);
    free(req->tls_target);
    free(req);
}

int
srv_req_fail(struct srv_req *req, int code, const char *fmt, ...)
{
    if (req->err.code != 0)
        return req->err.code;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(req->err.msg, sizeof req->err.msg, fmt, ap);
    va_end(ap);
    req->err.code = code;
    return code;
}

int
srv_req_fail_err(struct srv_req *req, const struct gd_err *err)
{
    if (req->err.code == 0) {
        req->err = *err;
        if (req->err.code == 0)
            req->err.code = SRV_EINTERNAL;
    }
    return req->err.code;
}

const char *
srv_req_query(struct srv_req *req, const char *key)
{
    return srv_head_query(&req->head, key);
}

const char *
srv_req_header(struct srv_req *req, const char *name)
{
    return srv_head_field(&req->head, name);
}

int
srv_req_query_check(struct srv_req *req, const char *const *known)
{
    for (int i = 0; i < req->head.n_query; i++) {
        const char *key = req->head.query[i].key;
        const char *const *k = known;
        while (*k != NULL && strcmp(key, *k) != 0)
            k++;
        if (*k == NULL)
            return srv_req_fail(req, SRV_EBADREQ, "unknown query parameter \"%.40s\"", key);
    }
    return 0;
}

struct srv_db *
srv_req_db(struct srv_req *req)
{
    struct srv_db *db = NULL;
    struct gd_err err;
    if (srv_store_acquire(req->srv->store, &db, &err) != 0) {
        srv_req_fail_err(req, &err);
        return NULL;
    }
    return db;
}

void
srv_req_db_release(struct srv_req *req, struct srv_db *db)
{
    srv_store_release(req->srv->store, db);
}

int
srv_req_client_gone(struct srv_req *req)
{
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(req->conn, MHD_CONNECTION_INFO_CONNECTION_FD);
    if (ci == NULL)
        return 0;
    struct pollfd p = {.fd = ci->connect_fd, .events = POLLIN | POLLRDHUP};
    if (poll(&p, 1, 0) < 0)
        return 0;
    return (p.revents & (POLLRDHUP | POLLHUP | POLLERR | POLLNVAL)) != 0;
}

/* ---- answers ---- */

int
srv_reply(struct srv_req *req, unsigned status, struct MHD_Response *resp)
{
    if (req->resp != NULL)
        MHD_destroy_response(req->resp);
    MHD_add_response_header(resp, "X-Request-Id", req->id);
    MHD_add_response_header(resp, "X-Content-Type-Options", "nosniff");
    /* One request per connection: the next one passes through the gate again. */
    MHD_add_response_header(resp, MHD_HTTP_HEADER_CONNECTION, "close");
    req->resp = resp;
    req->status = status;
    return 0;
}

/*
 * sec: an answer made in memory larger than this is counted against --response-memory
 * until libmicrohttpd has sent it and let it go, so clients that ask for large documents
 * and never read them hold at most that much; smaller ones are bounded by the connections.
 */
#define RESPONSE_COUNTED ((size_t)64 * 1024)

static _Atomic int64_t response_bytes; /* of the counted answers not yet freed */

struct counted_text {
    char *text;
    size_t len;
};

static void
counted_free(void *cls)
{
    struct counted_text *t = cls;
    atomic_fetch_sub(&response_bytes, (int64_t)t->len);
    free(t->text);
    free(t);
}

int64_t
srv_response_memory(void)
{
    return atomic_load(&response_bytes);
}

/* The answer of a large text, counted; NULL with req failed when the budget is spent. */
static struct MHD_Response *
counted_response(struct srv_req *req, char *text, size_t len)
{
    int64_t max = req->srv->cfg.response_memory;
    int64_t now = atomic_fetch_add(&response_bytes, (int64_t)len) + (int64_t)len;
    struct counted_text *t = now <= max ? malloc(sizeof *t) : NULL;
    struct MHD_Response *resp = NULL;
    if (t != NULL) {
        t->text = text;
        t->len = len;
        resp = MHD_create_response_from_buffer_with_free_callback_cls(len, text, counted_free, t);
        if (resp != NULL)
            return resp;
        free(t);
    }
    atomic_fetch_sub(&response_bytes, (int64_t)len);
    free(text);
    if (now > max)
        srv_req_fail(req, SRV_EBUSY,
                     "answers of more than 64 KiB waiting for their clients hold %lld MB "
                     "already (--response-memory); try again",
                     (long long)((now - (int64_t)len) >> 20));
    else
        srv_req_fail(req, GD_ENOMEM, "out of memory");
    return NULL;
}

/* A JSON text made here (or a fixed one when memory ran out), sent as it is. */
static int
reply_text(struct srv_req *req, unsigned status, char *text, size_t len, const char *type)
{
    struct MHD_Response *resp;
    if (text != NULL && len > RESPONSE_COUNTED) {
        resp = counted_response(req, text, len);
        if (resp == NULL)
            return req->err.code;
    } else if (text != NULL) {
        resp = MHD_create_response_from_buffer(len, text, MHD_RESPMEM_MUST_FREE);
    } else {
        static const char oom[] = "{\"error\":{\"code\":\"out_of_memory\",\"message\":\"out of "
                                  "memory\"}}\n";
        status = 503;
        resp = MHD_create_response_from_buffer(sizeof oom - 1, (void *)oom, MHD_RESPMEM_PERSISTENT);
    }
    if (resp == NULL) {
        free(text);
        return srv_req_fail(req, GD_ENOMEM, "out of memory");
    }
    MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, type);
    MHD_add_response_header(resp, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
    return srv_reply(req, status, resp);
}

/* sec: a document this large was built of very many small blocks (jansson's), now freed. */
#define TRIM_AFTER_JSON ((size_t)1 << 20)

static int
reply_dumped(struct srv_req *req, unsigned status, json_t *body, size_t flags)
{
    char *text = body ? json_dumps(body, flags) : NULL;
    json_decref(body);
    if (text != NULL && strlen(text) > TRIM_AFTER_JSON)
        malloc_trim(0);
    if (text != NULL) {
        size_t n = strlen(text);
        char *nl = realloc(text, n + 2);
        if (nl == NULL) {
            free(text);
            text = NULL;
        } else {
            text = nl;
            memcpy(text + n, "\n", 2);
        }
    }
    return reply_text(req, status, text, text != NULL ? strlen(text) : 0, "application/json");
}

int
srv_reply_json(struct srv_req *req, unsigned status, json_t *body)
{
    return reply_dumped(req, status, body, JSON_INDENT(1) | JSON_PRESERVE_ORDER);
}

int
srv_reply_json_compact(struct srv_req *req, unsigned status, json_t *body, int digits)
{
    return reply_dumped(req, status, body, JSON_COMPACT | JSON_REAL_PRECISION(digits));
}

int
srv_reply_json_text(struct srv_req *req, unsigned status, char *text, size_t len)
{
    return reply_text(req, status, text, len, "application/json");
}

int
srv_reply_error(struct srv_req *req)
{
    int code = req->err.code ? req->err.code : SRV_EINTERNAL;
    unsigned status = srv_err_status(code);
    char msg[sizeof req->err.msg];
    snprintf(msg, sizeof msg, "%s", req->err.msg[0] ? req->err.msg : gd_strerror(code));
    /* Messages quote client bytes (paths, keys): keep them printable ASCII, valid JSON text. */
    for (char *p = msg; *p; p++)
        if ((unsigned char)*p < 0x20 || (unsigned char)*p > 0x7e)
            *p = '?';
    json_t *body = json_pack("{s:{s:s,s:s,s:s}}", "error", "code", srv_err_code(code), "message",
                             msg, "request_id", req->id);
    if (status >= 500)
        SRV_LOG(GD_LOG_ERROR, req, "%s %s: %s", req->method, req->path, msg);
    else
        SRV_LOG(GD_LOG_DEBUG, req, "%s %s: %u %s", req->method, req->path, status, msg);
    srv_reply_json(req, status, body);
    if (req->resp == NULL)
        return code;
    if (status == 405 && req->allow[0])
        MHD_add_response_header(req->resp, MHD_HTTP_HEADER_ALLOW, req->allow);
    if (status == 401)
        MHD_add_response_header(req->resp, MHD_HTTP_HEADER_WWW_AUTHENTICATE,
                                "Bearer realm=\"gpudiffd\"");
    if (status == 503)
        MHD_add_response_header(req->resp, MHD_HTTP_HEADER_RETRY_AFTER, "1");
    return code;
}

/* ---- the request's life ---- */

/* 1 when type is want, alone or with parameters ("application/json; charset=utf-8"). */
static int
is_type(const char *type, const char *want)
{
    size_t n = strlen(want);
    return strncasecmp(type, want, n) == 0 &&
           (type[n] == '\0' || type[n] == ';' || type[n] == ' ' || type[n] == '\t');
}

static int
is_json_type(const char *type)
{
    return is_type(type, "application/json");
}

static int
is_octet_type(const char *type)
{
    return is_type(type, "application/octet-stream");
}

/* Everything decided from the headers alone. Returns 0, or an error to answer at once. */
static int
req_begin(struct srv_req *req)
{
    int rc = srv_route_find(req, req->allow, sizeof req->allow);
    int is_get = strcmp(req->method, "GET") == 0 || strcmp(req->method, "HEAD") == 0;
    if (rc == SRV_ENOTFOUND && strncmp(req->path, "/api/", 5) != 0 &&
        strcmp(req->path, "/api") != 0 && is_get) {
        /* Not an API path: a file of the dashboard. */
        gd_err_clear(&req->err);
        req->metrics_route = SRV_METRICS_STATIC;
    } else if (rc != 0) {
        return rc;
    }
    const struct srv_route *route = req->route;
    if (route != NULL) {
        req->metrics_route = (int)(route - srv_routes);
        rc = srv_route_authorize(req, route->role);
        if (rc != 0)
            return rc;
    }

    /* The gate refused chunked bodies and every ambiguous framing already. */
    enum srv_body body = route ? route->body : SRV_BODY_NONE;
    req->has_length = req->head.has_length;
    req->content_length = req->head.content_length;
    if (req->head.chunked)
        return srv_req_fail(req, SRV_ELENGTH, "send a Content-Length (no chunked bodies)");
    uint64_t limit = body == SRV_BODY_JSON     ? (uint64_t)req->srv->cfg.max_json
                     : body == SRV_BODY_STREAM ? (uint64_t)req->srv->cfg.max_body
                     : body == SRV_BODY_FILE   ? (uint64_t)req->srv->cfg.max_file_bytes
                                               : NO_BODY_MAX;
    if (req->content_length > limit)
        return srv_req_fail(req, SRV_ETOOBIG, "the body is %llu bytes, over the limit of %llu",
                            (unsigned long long)req->content_length, (unsigned long long)limit);
    if ((body == SRV_BODY_STREAM || body == SRV_BODY_FILE) && !req->has_length)
        return srv_req_fail(req, SRV_ELENGTH, "send a Content-Length");
    /* sec: a JSON body must say so (a missing type was taken as JSON); a tensor or file body
     * may say nothing, or application/octet-stream, never a form's or text's type. */
    const char *type = srv_req_header(req, MHD_HTTP_HEADER_CONTENT_TYPE);
    if (body == SRV_BODY_JSON && (type == NULL || !is_json_type(type)))
        return srv_req_fail(req, SRV_EMEDIA,
                            "the body must be sent as Content-Type: application/json");
    if ((body == SRV_BODY_STREAM || body == SRV_BODY_FILE) && type != NULL &&
        !is_octet_type(type))
        return srv_req_fail(req, SRV_EMEDIA,
                            "the body is raw bytes: send Content-Type: "
                            "application/octet-stream, or none");
    if (route != NULL && route->begin != NULL)
        return route->begin(req);
    return 0;
}

static void
req_body(struct srv_req *req, const char *data, size_t len)
{
    req->body_bytes += len;
    if (req->gate_conn != NULL)
        srv_conn_body_bytes(req->gate_conn, len);
    if (req->body_bytes > req->content_length && req->err.code == 0)
        srv_req_fail(req, SRV_EBADREQ, "more body than its Content-Length");
    /* After an error the rest of the body is read and dropped (bounded by its length). */
    if (req->err.code != 0 || req->route == NULL)
        return;
    switch (req->route->body) {
    case SRV_BODY_JSON:
        if (req->body.len + len > (uint64_t)req->srv->cfg.max_json)
            srv_req_fail(req, SRV_ETOOBIG, "the body is over the limit of %lld bytes",
                         (long long)req->srv->cfg.max_json);
        else if (srv_buf_append(&req->body, data, len) != 0)
            srv_req_fail(req, GD_ENOMEM, "out of memory for the body");
        break;
    case SRV_BODY_STREAM:
    case SRV_BODY_FILE:
        req->route->chunk(req, data, len);
        break;
    case SRV_BODY_NONE:
        break;
    }
}

/* The answer, once the handler (or its second half on the compare pool) has run. */
static void
req_answer(struct srv_req *req)
{
    if (req->resp == NULL || req->err.code != 0) {
        if (req->err.code == 0)
            srv_req_fail(req, SRV_EINTERNAL, "the handler made no answer");
        srv_reply_error(req);
    }
}

/* Runs on a compare-pool thread: the handler again, allowed to compute now. */
static void
deferred_run(struct srv_req *req)
{
    req->on_pool = 1;
    if (req->err.code == 0) {
        int rc = req->route->end(req);
        if ((rc == SRV_EDEFER || rc == SRV_EDEFERWRITE || rc == SRV_EDEFERPOLL) &&
            req->err.code == 0)
            srv_req_fail(req, SRV_EINTERNAL, "the handler deferred twice");
    }
    req_answer(req);
    atomic_store(&req->deferred_done, 1);
    MHD_resume_connection(req->conn);
}

/* 1 when the request went to the compare pool (the connection is then suspended). */
static int
req_end(struct srv_req *req)
{
    if (req->gate_conn != NULL)
        srv_conn_body_done(req->gate_conn);
    if (req->err.code == 0) {
        int rc = req->route == NULL ? srv_static_serve(req) : req->route->end(req);
        /*
         * Work that may take long (a diff) or wait (for the write lock): not on a thread that
         * serves connections. The connection is suspended until a pool thread has the answer.
         */
        struct srv_pool *pool = rc == SRV_EDEFERWRITE  ? req->srv->writes
                                : rc == SRV_EDEFERPOLL ? req->srv->polls
                                                       : NULL;
        if (req->err.code == 0 && rc == SRV_EDEFER &&
            srv_compare_reserve(req->srv->compare, &req->err) == 0) {
            req->deferred = 1;
            MHD_suspend_connection(req->conn);
            srv_compare_submit(req->srv->compare, req, deferred_run);
            return 1;
        }
        if (req->err.code == 0 && pool != NULL && srv_pool_reserve(pool, &req->err) == 0) {
            req->deferred = 1;
            MHD_suspend_connection(req->conn);
            srv_pool_submit(pool, req, deferred_run);
            return 1;
        }
    }
    req_answer(req);
    return 0;
}

static enum MHD_Result
queue(struct srv_req *req)
{
    if (req->resp == NULL)
        return MHD_NO;
    enum MHD_Result r = MHD_queue_response(req->conn, req->status, req->resp);
    MHD_destroy_response(req->resp);
    req->resp = NULL;
    return r;
}

static enum MHD_Result
on_request(void *cls, struct MHD_Connection *conn, const char *url, const char *method,
           const char *version, const char *upload_data, size_t *upload_data_size, void **con_cls)
{
    struct srv_server *srv = cls;
    struct srv_req *req = *con_cls;
    thread_priority(srv, conn);
    if (req == NULL || !req->begun) {
        if (req == NULL)
            req = req_alloc(srv, conn);
        if (req == NULL)
            return MHD_NO;
        *con_cls = req;
        req->begun = 1;
        req_head(req, url, method, version);
        if (req->err.code != 0 || req_begin(req) != 0) {
            /* libmicrohttpd then skips the body (no 100 Continue) and closes the connection. */
            srv_reply_error(req);
            return queue(req);
        }
        if (req->gate_conn != NULL)
            srv_conn_body_begin(req->gate_conn, req->content_length);
        return MHD_YES;
    }
    if (req->deferred) {
        /* Resumed: the pool thread made the answer. */
        if (!atomic_load(&req->deferred_done))
            return MHD_YES;
        return queue(req);
    }
    if (*upload_data_size > 0) {
        req_body(req, upload_data, *upload_data_size);
        *upload_data_size = 0;
        return MHD_YES;
    }
    if (req_end(req))
        return MHD_YES;
    return queue(req);
}

static void
on_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
             enum MHD_RequestTerminationCode toe)
{
    (void)cls;
    (void)conn;
    struct srv_req *req = *con_cls;
    if (req == NULL)
        return;
    static const char *const why[] = {"completed",       "error",      "timeout",
                                      "daemon shutdown", "read error", "client abort"};
    const char *ended = (unsigned)toe < 6 ? why[toe] : "unknown";
    if (!req->begun) {
        /* TLS: a request line came but no head that libmicrohttpd passed on. */
        SRV_LOG(GD_LOG_INFO, NULL, "a request over TLS ended before its head was in (%s)", ended);
        req_free(req);
        *con_cls = NULL;
        return;
    }
    double secs = srv_clock() - req->t_start;
    if (toe != MHD_REQUEST_TERMINATED_COMPLETED_OK)
        SRV_LOG(GD_LOG_WARN, req, "%s %s ended early (%s) after %llu body bytes", req->method,
                req->path, ended, (unsigned long long)req->body_bytes);
    srv_metrics_request(req->metrics_route, req->status, secs);
    SRV_LOG(GD_LOG_INFO, req, "%s %s %u %llu bytes in %.1f ms", req->method, req->path, req->status,
            (unsigned long long)req->body_bytes, secs * 1e3);
    req_free(req);
    *con_cls = NULL;
}

static void
mhd_log(void *cls, const char *fmt, va_list ap)
{
    (void)cls;
    char msg[512];
    vsnprintf(msg, sizeof msg, fmt, ap);
    size_t n = strlen(msg);
    while (n > 0 && (msg[n - 1] == '\n' || msg[n - 1] == '\r'))
        msg[--n] = '\0';
    SRV_LOG(GD_LOG_WARN, NULL, "libmicrohttpd: %s", msg);
}

int
srv_http_start(struct srv_server *srv, struct gd_err *err)
{
    if (srv->tls != NULL && MHD_is_feature_supported(MHD_FEATURE_TLS) != MHD_YES)
        return gd_err_set(err, GD_ENOTSUP, "--tls-cert: this libmicrohttpd was built without TLS");
    int split = srv->tls == NULL && srv->cfg.read_threads > 0;
    int rc = srv_pool_start("write", (int)srv->cfg.write_threads, (int)srv->cfg.write_queue,
                            split ? (int)srv->cfg.write_nice : 0, &srv->writes, err);
    /* jobsrv: a thread per long poll that may wait (route_leases.c takes a place first) */
    if (rc == 0)
        rc = srv_pool_start("poll", (int)srv->cfg.max_polls, (int)srv->cfg.max_polls, 0,
                            &srv->polls, err);
    if (rc == 0)
        rc = srv_gate_open(srv, &srv->gate, err);
    if (rc != 0) {
        srv_pool_stop(srv->writes);
        srv->writes = NULL;
        srv_pool_stop(srv->polls);
        srv->polls = NULL;
        return rc;
    }
    /*
     * No listening socket of its own: connections come from the gate. The connection limit
     * is the gate's; libmicrohttpd's is only a backstop above it. Its memory pool per
     * connection holds the head (at most --max-header) and upload pieces of about the rest.
     */
    unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_AUTO | MHD_USE_ERROR_LOG |
                     MHD_USE_NO_LISTEN_SOCKET | MHD_ALLOW_SUSPEND_RESUME;
    /* TLS: libmicrohttpd's GnuTLS, given the files tls.c read and checked. */
    struct MHD_OptionItem tls_opts[4] = {{MHD_OPTION_END, 0, NULL}};
    if (srv->tls != NULL) {
        flags |= MHD_USE_TLS;
        tls_opts[0] = (struct MHD_OptionItem){MHD_OPTION_HTTPS_MEM_CERT, 0, srv->tls->cert_pem};
        tls_opts[1] = (struct MHD_OptionItem){MHD_OPTION_HTTPS_MEM_KEY, 0, srv->tls->key_pem};
        tls_opts[2] = (struct MHD_OptionItem){MHD_OPTION_HTTPS_PRIORITIES, 0,
                                              (void *)srv->tls->priorities};
    }
    /*
     * libmicrohttpd zeroes the whole pool of a connection (MHD_pool_reset, and the shrink of
     * its write buffer), so every connection holds all of it resident, a client that never
     * reads included: twice the largest head and 16 KiB for the answer's headers, no more
     * (it was 128 KiB: issue 25 item 2). Upload pieces are a little smaller for it; ingest
     * measured the same (docs/PERFORMANCE.md).
     */
    size_t pool = (size_t)srv->cfg.max_header * 2 + 16 * 1024;
    for (int k = split ? 0 : 1; k < 2 && rc == 0; k++) {
        /* k 0: the light reads' daemon; 1: the one of everything else */
        struct MHD_Daemon *d = MHD_start_daemon(
            flags, 0, NULL, NULL, on_request, srv,
            /* The logger first, so that the other options' messages reach it too. */
            MHD_OPTION_EXTERNAL_LOGGER, mhd_log, srv, MHD_OPTION_THREAD_POOL_SIZE,
            (unsigned)(k == 0 ? srv->cfg.read_threads : srv->cfg.threads),
            MHD_OPTION_CONNECTION_LIMIT, (unsigned)srv->cfg.max_connections + 64,
            MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)srv->cfg.timeout,
            MHD_OPTION_CONNECTION_MEMORY_LIMIT, pool, MHD_OPTION_NOTIFY_COMPLETED, on_completed,
            srv, MHD_OPTION_NOTIFY_CONNECTION, srv_gate_notify, srv->gate,
            MHD_OPTION_URI_LOG_CALLBACK, on_uri, srv, MHD_OPTION_ARRAY, tls_opts, MHD_OPTION_END);
        if (d == NULL)
            rc = gd_err_set(err, GD_EIO, "cannot start libmicrohttpd");
        *(k == 0 ? &srv->mhd_reads : &srv->mhd) = d;
    }
    if (rc == 0)
        rc = srv_gate_start(srv->gate, err);
    if (rc != 0)
        srv_http_stop(srv);
    return rc;
}

void
srv_http_stop(struct srv_server *srv)
{
    /*
     * No new connections; the requests on the compare pool end (canceled) and answer, those
     * on the write pool finish; then libmicrohttpd sends what is left and stops.
     */
    srv_gate_stop(srv->gate);
    atomic_store(&srv->polls_stop, 1); /* waiting long polls answer 204 within 0.5 s */
    srv_compare_quiesce(srv->compare);
    srv_pool_quiesce(srv->writes);
    srv_pool_quiesce(srv->polls);
    if (srv->mhd != NULL)
        MHD_stop_daemon(srv->mhd);
    srv->mhd = NULL;
    if (srv->mhd_reads != NULL)
        MHD_stop_daemon(srv->mhd_reads);
    srv->mhd_reads = NULL;
    srv_gate_free(srv->gate);
    srv->gate = NULL;
    srv_pool_stop(srv->writes);
    srv->writes = NULL;
    srv_pool_stop(srv->polls);
    srv->polls = NULL;
}
