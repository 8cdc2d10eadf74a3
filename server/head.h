/*
 * head.h: the strict parser of an HTTP/1.x request head (request line and header lines),
 * the one gpudiffd's front door (gate.c) runs on every request before libmicrohttpd sees
 * it, so that what is refused is refused in the JSON error form, and what is accepted is
 * read by every handler from one parse: the percent-decoded path, the query pairs and the
 * header fields (docs/SERVER.md, "Strict HTTP").
 */
#ifndef GPUDIFF_SERVER_HEAD_H
#define GPUDIFF_SERVER_HEAD_H

#include <stddef.h>
#include <stdint.h>

#include "gpudiff/error.h"

/* Header lines at most (a documented limit, docs/SERVER.md "Strict HTTP"); more is 431. Real
 * clients send 5 to 20; a fixed array keeps a head's parse one allocation. */
#define SRV_HEAD_FIELDS_MAX 64
#define SRV_HEAD_QUERY_MAX  32 /* query pairs at most; more is 400 */
#define SRV_HEAD_METHOD_MAX 16 /* bytes of a method at most */

struct srv_head_field {
    const char *name, *value; /* value without the whitespace around it */
};

struct srv_query_pair {
    const char *key, *value; /* percent-decoded, '+' read as a space; value "" for "?key" */
};

/*
 * A parsed head. Every string lies in mem, owned; the struct may be moved (copied) as a
 * whole, which moves the ownership of mem with it.
 */
struct srv_head {
    char *mem;
    size_t head_len;    /* bytes of the head, the blank line that ends it included */
    const char *method; /* a token, case kept */
    const char *target; /* as sent (path and query, percent escapes kept) */
    const char *path;   /* percent-decoded path without the query */
    int minor;          /* HTTP/1.minor (a higher minor version than 1 is read as 1) */
    int n_fields;
    struct srv_head_field fields[SRV_HEAD_FIELDS_MAX];
    int n_query;
    struct srv_query_pair query[SRV_HEAD_QUERY_MAX];
    int has_length;          /* a Content-Length was sent */
    uint64_t content_length; /* its value */
    int chunked;             /* Transfer-Encoding: chunked (alone, without a length) */
};

/*
 * The length of the head at the start of data (its blank line included), 0 when its end is
 * not there yet. Leading empty lines, which RFC 9112 lets a server skip, count in it. A bare
 * LF or a stray CR ends it at once, so that srv_head_parse() refuses it without waiting.
 */
size_t srv_head_end(const char *data, size_t len);

/*
 * Parses the head in data[0..len) (len from srv_head_end). Refuses, with err naming what is
 * wrong: SRV_EBADREQ for anything malformed (a bare LF, a folded or colon-less line, a space
 * before a colon, NUL or control bytes raw or percent-encoded in the target, a bad escape,
 * a header value with a control byte, a target not starting with '/', HTTP/1.1 without
 * exactly one Host, a Host that is not one (srv_head_host_valid), more than one Content-Length or one that is not decimal digits fitting
 * in 63 bits, Content-Length with Transfer-Encoding, a Transfer-Encoding other than one
 * "chunked", a query key given twice or empty); SRV_EVERSION for a version other than
 * HTTP/1.x; SRV_EHEADERS for more than SRV_HEAD_FIELDS_MAX header lines. out is filled only
 * on success.
 */
int srv_head_parse(const char *data, size_t len, struct srv_head *out, struct gd_err *err);

/*
 * The head of a request that libmicrohttpd read first (over TLS, where the gate cannot see
 * the bytes, gate.c): the request line and header fields as it parsed them are written out
 * again as a head and parsed by srv_head_parse(), so that the handlers read one parse and
 * every check of it holds. target is the request target as received (percent escapes and
 * query kept); fields[0..n_fields) in the order received (n_fields may exceed
 * SRV_HEAD_FIELDS_MAX: SRV_EHEADERS). A head longer than max_head is refused as
 * srv_head_parse's caller refuses one (SRV_EURI for the request line alone, else
 * SRV_EHEADERS); a field holding a CR or LF is SRV_EBADREQ. out is filled only on success.
 */
int srv_head_rebuild(const char *method, const char *target, const char *version,
                     const struct srv_head_field *fields, int n_fields, size_t max_head,
                     struct srv_head *out, struct gd_err *err);

/*
 * 1 when v is a valid Host field value (RFC 9112 3.2): uri-host [":" port] of RFC 3986, an
 * IP-literal in brackets or a reg-name (unreserved characters, sub-delims, percent
 * escapes), a port of at most 5 digits up to 65535; empty is allowed. srv_head_parse()
 * refuses any other Host with SRV_EBADREQ.
 */
int srv_head_host_valid(const char *v);

/* Frees mem. Accepts a zeroed struct. */
void srv_head_fini(struct srv_head *h);

/* The value of the header named name (case-insensitive), NULL when absent. */
const char *srv_head_field(const struct srv_head *h, const char *name);

/* The value of query key (exact), NULL when absent. */
const char *srv_head_query(const struct srv_head *h, const char *key);

#endif
