/*
 * http.c: libmicrohttpd set-up (a pool of polling threads, epoll on Linux; no thread per
 * connection) and the life of a request: its struct srv_req made at the first callback,
 * routing, auth and size checks on the headers, the body streamed to its handler piece by
 * piece, the answer, and the clean-up in the completion callback, whatever happened.
 */
#include <netdb.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>

#include "db.h"
#include "server.h"

/* Bodies of routes that take none: small ones are tolerated (and ignored). */
#define NO_BODY_MAX 65536

static _Atomic uint64_t request_counter;

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

static struct srv_req *
req_new(struct srv_server *srv, struct MHD_Connection *conn, const char *url, const char *method)
{
    struct srv_req *req = calloc(1, sizeof *req);
    if (req == NULL)
        return NULL;
    req->path = strdup(url);
    if (req->path == NULL) {
        free(req);
        return NULL;
    }
    req->srv = srv;
    req->conn = conn;
    req->t_start = srv_clock();
    req->metrics_route = SRV_METRICS_UNMATCHED;
    snprintf(req->method, sizeof req->method, "%s", method);
    const char *rid = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "X-Request-Id");
    uint64_t n = atomic_fetch_add(&request_counter, 1) + 1;
    if (rid != NULL && usable_request_id(rid))
        snprintf(req->id, sizeof req->id, "%s", rid);
    else
        snprintf(req->id, sizeof req->id, "%08x-%llu", srv->boot_id, (unsigned long long)n);
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
    free(req->path);
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
    return MHD_lookup_connection_value(req->conn, MHD_GET_ARGUMENT_KIND, key);
}

struct query_check {
    const char *const *known;
    char unknown[48];
};

static enum MHD_Result
query_key(void *cls, enum MHD_ValueKind kind, const char *key, const char *value)
{
    (void)kind;
    (void)value;
    struct query_check *q = cls;
    for (const char *const *k = q->known; *k != NULL; k++)
        if (strcmp(key, *k) == 0)
            return MHD_YES;
    snprintf(q->unknown, sizeof q->unknown, "%s", key);
    return MHD_NO;
}

int
srv_req_query_check(struct srv_req *req, const char *const *known)
{
    struct query_check q = {known, ""};
    MHD_get_connection_values(req->conn, MHD_GET_ARGUMENT_KIND, query_key, &q);
    if (q.unknown[0] != '\0')
        return srv_req_fail(req, SRV_EBADREQ, "unknown query parameter \"%s\"", q.unknown);
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

/* ---- answers ---- */

int
srv_reply(struct srv_req *req, unsigned status, struct MHD_Response *resp)
{
    if (req->resp != NULL)
        MHD_destroy_response(req->resp);
    MHD_add_response_header(resp, "X-Request-Id", req->id);
    MHD_add_response_header(resp, "X-Content-Type-Options", "nosniff");
    req->resp = resp;
    req->status = status;
    return 0;
}

/* A JSON text made here (or a fixed one when memory ran out), sent as it is. */
static int
reply_text(struct srv_req *req, unsigned status, char *text, size_t len, const char *type)
{
    struct MHD_Response *resp;
    if (text != NULL) {
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

int
srv_reply_json(struct srv_req *req, unsigned status, json_t *body)
{
    char *text = body ? json_dumps(body, JSON_INDENT(1) | JSON_PRESERVE_ORDER) : NULL;
    json_decref(body);
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
    return code;
}

/* ---- the request's life ---- */

static int
is_json_type(const char *type)
{
    size_t n = strlen("application/json");
    return strncasecmp(type, "application/json", n) == 0 && (type[n] == '\0' || type[n] == ';');
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

    const char *cl =
        MHD_lookup_connection_value(req->conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
    const char *te =
        MHD_lookup_connection_value(req->conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_TRANSFER_ENCODING);
    enum srv_body body = route ? route->body : SRV_BODY_NONE;
    if (cl != NULL) {
        char *end;
        unsigned long long v = strtoull(cl, &end, 10);
        if (cl[0] < '0' || cl[0] > '9' || *end != '\0')
            return srv_req_fail(req, SRV_EBADREQ, "bad Content-Length");
        req->has_length = 1;
        req->content_length = v;
    } else if (te != NULL) {
        /* Without a length a size limit could only be met by cutting the body off. */
        return srv_req_fail(req, SRV_ELENGTH, "send a Content-Length (no chunked bodies)");
    }
    uint64_t limit = body == SRV_BODY_JSON     ? (uint64_t)req->srv->cfg.max_json
                     : body == SRV_BODY_STREAM ? (uint64_t)req->srv->cfg.max_body
                                               : NO_BODY_MAX;
    if (req->content_length > limit)
        return srv_req_fail(req, SRV_ETOOBIG, "the body is %llu bytes, over the limit of %llu",
                            (unsigned long long)req->content_length, (unsigned long long)limit);
    if (body == SRV_BODY_STREAM && !req->has_length)
        return srv_req_fail(req, SRV_ELENGTH, "send a Content-Length");
    if (body == SRV_BODY_JSON) {
        const char *type =
            MHD_lookup_connection_value(req->conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_TYPE);
        if (type != NULL && !is_json_type(type))
            return srv_req_fail(req, SRV_EMEDIA, "the body must be application/json");
    }
    if (route != NULL && route->begin != NULL)
        return route->begin(req);
    return 0;
}

static void
req_body(struct srv_req *req, const char *data, size_t len)
{
    req->body_bytes += len;
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
        req->route->chunk(req, data, len);
        break;
    case SRV_BODY_NONE:
        break;
    }
}

static void
req_end(struct srv_req *req)
{
    if (req->err.code == 0) {
        if (req->route == NULL)
            srv_static_serve(req);
        else
            req->route->end(req);
    }
    if (req->resp == NULL || req->err.code != 0) {
        if (req->err.code == 0)
            srv_req_fail(req, SRV_EINTERNAL, "the handler made no answer");
        srv_reply_error(req);
    }
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
    (void)version;
    struct srv_server *srv = cls;
    struct srv_req *req = *con_cls;
    if (req == NULL) {
        req = req_new(srv, conn, url, method);
        if (req == NULL)
            return MHD_NO;
        *con_cls = req;
        if (req_begin(req) != 0) {
            /* libmicrohttpd then skips the body (no 100 Continue) and closes the connection. */
            srv_reply_error(req);
            return queue(req);
        }
        return MHD_YES;
    }
    if (*upload_data_size > 0) {
        req_body(req, upload_data, *upload_data_size);
        *upload_data_size = 0;
        return MHD_YES;
    }
    req_end(req);
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
    double secs = srv_clock() - req->t_start;
    if (toe != MHD_REQUEST_TERMINATED_COMPLETED_OK) {
        static const char *const why[] = {"completed",       "error",      "timeout",
                                          "daemon shutdown", "read error", "client abort"};
        SRV_LOG(GD_LOG_WARN, req, "%s %s ended early (%s) after %llu body bytes", req->method,
                req->path, (unsigned)toe < 6 ? why[toe] : "unknown",
                (unsigned long long)req->body_bytes);
    }
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
    char host[256], port_text[16];
    int port;
    int rc = srv_listen_parse(srv->cfg.listen, host, sizeof host, &port, err);
    if (rc != 0)
        return rc;
    snprintf(port_text, sizeof port_text, "%d", port);
    struct addrinfo hints, *res = NULL;
    memset(&hints, 0, sizeof hints);
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
    int g = getaddrinfo(host, port_text, &hints, &res);
    if (g != 0)
        return gd_err_set(err, GD_EINVAL, "--listen %s: %s", srv->cfg.listen, gai_strerror(g));
    struct sockaddr_storage addr;
    memcpy(&addr, res->ai_addr, res->ai_addrlen);
    int v6 = res->ai_family == AF_INET6;
    freeaddrinfo(res);

    unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_AUTO | MHD_USE_ERROR_LOG;
    if (v6)
        flags |= MHD_USE_IPv6;
    srv->mhd = MHD_start_daemon(
        flags, (uint16_t)port, NULL, NULL, on_request, srv,
        /* The logger first, so that the other options' messages reach it too. */
        MHD_OPTION_EXTERNAL_LOGGER, mhd_log, srv, MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&addr,
        MHD_OPTION_THREAD_POOL_SIZE, (unsigned)srv->cfg.threads, MHD_OPTION_CONNECTION_LIMIT,
        (unsigned)srv->cfg.max_connections, MHD_OPTION_CONNECTION_TIMEOUT,
        (unsigned)srv->cfg.timeout,
        /* Upload pieces arrive in this much per callback: bigger pieces, fewer callbacks. */
        MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)128 * 1024, MHD_OPTION_NOTIFY_COMPLETED,
        on_completed, srv, MHD_OPTION_END);
    if (srv->mhd == NULL)
        return gd_err_set(err, GD_EIO, "cannot serve on %s (in use, or not an address here?)",
                          srv->cfg.listen);
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(srv->mhd, MHD_DAEMON_INFO_BIND_PORT);
    srv->port = info != NULL ? info->port : port;
    return 0;
}

void
srv_http_stop(struct srv_server *srv)
{
    if (srv->mhd != NULL)
        MHD_stop_daemon(srv->mhd);
    srv->mhd = NULL;
}
