/*
 * head.c: the strict HTTP/1.x request head parser (RFC 9112 without its tolerances). It
 * accepts only what every reader of the bytes would read the same way: CRLF line ends, no
 * folded lines, one valid Host, one decimal Content-Length and no Transfer-Encoding beside it,
 * tokens where tokens belong, and no NUL or control byte anywhere, raw or percent-encoded.
 * Whatever a more lenient reader (libmicrohttpd, a proxy in front) could read differently
 * is refused here, before any handler runs.
 */
#include <arpa/inet.h>
#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "head.h"
#include "server.h"

size_t
srv_head_end(const char *data, size_t len)
{
    size_t start = 0;
    while (start + 1 < len && data[start] == '\r' && data[start + 1] == '\n')
        start += 2;
    for (size_t i = start; i < len; i++) {
        /* A bare LF, or a CR before anything but LF, is refused: its head ends here. */
        if ((data[i] == '\n' && (i == 0 || data[i - 1] != '\r')) ||
            (data[i] == '\r' && i + 1 < len && data[i + 1] != '\n'))
            return i + 1;
        if (i + 3 < len && data[i] == '\r' && data[i + 1] == '\n' && data[i + 2] == '\r' &&
            data[i + 3] == '\n')
            return i + 4;
    }
    return 0;
}

/* RFC 9110 tchar: the bytes of a token (methods, header names). */
static int
is_tchar(unsigned char c)
{
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'))
        return 1;
    return c != '\0' && strchr("!#$%&'*+-.^_`|~", c) != NULL;
}

static int
hex_value(unsigned char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

/*
 * Percent-decodes src[0..n) into dst (NUL-terminated; dst has room for n + 1 bytes), '+'
 * as a space when plus_space. A bad escape or a decoded byte below 0x20 or 0x7f fails.
 */
static int
decode(const char *src, size_t n, int plus_space, char *dst, const char *what, struct gd_err *err)
{
    size_t o = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)src[i];
        if (c == '%') {
            int hi = i + 2 < n ? hex_value((unsigned char)src[i + 1]) : -1;
            int lo = i + 2 < n ? hex_value((unsigned char)src[i + 2]) : -1;
            if (hi < 0 || lo < 0)
                return gd_err_set(err, SRV_EBADREQ, "%s: '%%' must be followed by two hex digits",
                                  what);
            c = (unsigned char)(hi * 16 + lo);
            i += 2;
            if (c < 0x20 || c == 0x7f)
                return gd_err_set(err, SRV_EBADREQ,
                                  "%s: %%%02X encodes a control byte, which no name here holds",
                                  what, c);
        } else if (c == '+' && plus_space) {
            c = ' ';
        }
        dst[o++] = (char)c;
    }
    dst[o] = '\0';
    return 0;
}

/* The query parameters that are lists, given once per item (GET /api/v1/runs' filters
 * knob=NAME=VALUE and label=KEY=VALUE); any other given twice is refused. */
static int
repeatable(const char *key)
{
    return strcmp(key, "knob") == 0 || strcmp(key, "label") == 0;
}

/* One query piece "key=value" or "key" into the pair table; dst gets both, decoded. */
static int
query_pair(struct srv_head *h, const char *piece, size_t n, char **dst, struct gd_err *err)
{
    const char *eq = memchr(piece, '=', n);
    size_t klen = eq != NULL ? (size_t)(eq - piece) : n;
    if (klen == 0)
        return gd_err_set(err, SRV_EBADREQ, "the query has a value without a key");
    if (h->n_query == SRV_HEAD_QUERY_MAX)
        return gd_err_set(err, SRV_EBADREQ, "more than %d query parameters", SRV_HEAD_QUERY_MAX);
    char *key = *dst;
    int rc = decode(piece, klen, 1, key, "query key", err);
    if (rc != 0)
        return rc;
    *dst += strlen(key) + 1;
    char *value = *dst;
    if (eq != NULL)
        rc = decode(eq + 1, n - klen - 1, 1, value, "query value", err);
    else
        value[0] = '\0';
    if (rc != 0)
        return rc;
    *dst += strlen(value) + 1;
    for (int i = 0; i < h->n_query && !repeatable(key); i++)
        if (strcmp(h->query[i].key, key) == 0)
            return gd_err_set(err, SRV_EBADREQ, "query parameter \"%.40s\" is given twice", key);
    h->query[h->n_query].key = key;
    h->query[h->n_query].value = value;
    h->n_query++;
    return 0;
}

/* Splits the target into the decoded path and query pairs, in the second half of mem. */
static int
parse_target(struct srv_head *h, const char *target, char *dst, struct gd_err *err)
{
    size_t n = strlen(target);
    if (target[0] != '/')
        return gd_err_set(err, SRV_EBADREQ, "the target must be a path starting with '/'");
    const char *q = strchr(target, '?');
    size_t plen = q != NULL ? (size_t)(q - target) : n;
    if (memchr(target, '#', n) != NULL)
        return gd_err_set(err, SRV_EBADREQ, "a target holds no '#' (encode it as %%23)");
    int rc = decode(target, plen, 0, dst, "path", err);
    if (rc != 0)
        return rc;
    h->path = dst;
    dst += strlen(dst) + 1;
    if (q == NULL)
        return 0;
    const char *p = q + 1, *end = target + n;
    while (rc == 0 && p < end) {
        const char *amp = memchr(p, '&', (size_t)(end - p));
        size_t len = amp != NULL ? (size_t)(amp - p) : (size_t)(end - p);
        if (len > 0)
            rc = query_pair(h, p, len, &dst, err);
        p += len + 1;
    }
    return rc;
}

/* The request line, NUL-terminated at line[n]: METHOD SP target SP HTTP/1.x. */
static int
parse_request_line(struct srv_head *h, char *line, size_t n, struct gd_err *err)
{
    char *sp1 = memchr(line, ' ', n);
    if (sp1 == NULL || sp1 == line)
        return gd_err_set(err, SRV_EBADREQ, "the request line is not METHOD TARGET HTTP/1.1");
    for (char *p = line; p < sp1; p++)
        if (!is_tchar((unsigned char)*p))
            return gd_err_set(err, SRV_EBADREQ, "the method is not a token");
    if (sp1 - line > SRV_HEAD_METHOD_MAX)
        return gd_err_set(err, SRV_EBADREQ, "the method is longer than %d bytes",
                          SRV_HEAD_METHOD_MAX);
    char *target = sp1 + 1;
    char *sp2 = memchr(target, ' ', n - (size_t)(target - line));
    if (sp2 == NULL || sp2 == target)
        return gd_err_set(err, SRV_EBADREQ, "the request line is not METHOD TARGET HTTP/1.1");
    for (char *p = target; p < sp2; p++)
        if ((unsigned char)*p <= 0x20 || (unsigned char)*p >= 0x7f)
            return gd_err_set(err, SRV_EBADREQ,
                              "the target holds a byte that is not visible ASCII (0x%02x)",
                              (unsigned char)*p);
    const char *v = sp2 + 1;
    size_t vlen = n - (size_t)(v - line);
    if (vlen != 8 || strncmp(v, "HTTP/", 5) != 0 || v[5] < '0' || v[5] > '9' || v[6] != '.' ||
        v[7] < '0' || v[7] > '9')
        return gd_err_set(err, SRV_EBADREQ, "the request line does not end in HTTP/1.1");
    if (v[5] != '1')
        return gd_err_set(err, SRV_EVERSION, "HTTP/%c.%c is not supported: speak HTTP/1.1", v[5],
                          v[7]);
    *sp1 = '\0';
    *sp2 = '\0';
    h->method = line;
    h->target = target;
    h->minor = v[7] - '0' > 1 ? 1 : v[7] - '0';
    return 0;
}

/* One header line "name: value", NUL-terminated at line[n]. */
static int
parse_field(struct srv_head *h, char *line, size_t n, struct gd_err *err)
{
    if (line[0] == ' ' || line[0] == '\t')
        return gd_err_set(err, SRV_EBADREQ, "a folded header line (obsolete line folding)");
    char *colon = memchr(line, ':', n);
    if (colon == NULL)
        return gd_err_set(err, SRV_EBADREQ, "a header line without a colon");
    if (colon == line)
        return gd_err_set(err, SRV_EBADREQ, "a header line without a name");
    for (char *p = line; p < colon; p++)
        if (!is_tchar((unsigned char)*p))
            return gd_err_set(err, SRV_EBADREQ,
                              (*p == ' ' || *p == '\t')
                                  ? "whitespace between a header name and its colon"
                                  : "a header name that is not a token");
    char *v = colon + 1, *end = line + n;
    for (char *p = v; p < end; p++) {
        unsigned char c = (unsigned char)*p;
        if ((c < 0x20 && c != '\t') || c == 0x7f)
            return gd_err_set(err, SRV_EBADREQ, "header %.*s holds a control byte (0x%02x)",
                              (int)(colon - line > 40 ? 40 : colon - line), line, c);
    }
    while (v < end && (*v == ' ' || *v == '\t'))
        v++;
    while (end > v && (end[-1] == ' ' || end[-1] == '\t'))
        end--;
    *colon = '\0';
    *end = '\0';
    if (h->n_fields == SRV_HEAD_FIELDS_MAX)
        return gd_err_set(err, SRV_EHEADERS, "more than %d header lines", SRV_HEAD_FIELDS_MAX);
    h->fields[h->n_fields].name = line;
    h->fields[h->n_fields].value = v;
    h->n_fields++;
    return 0;
}

int
srv_head_host_valid(const char *v)
{
    /* uri-host [ ":" port ] (RFC 9112 3.2, RFC 3986 3.2.2): an IP-literal in brackets, or a
     * reg-name of unreserved characters, sub-delims and percent escapes; empty is allowed. */
    const char *p = v;
    if (*p == '[') {
        const char *close = strchr(p, ']');
        if (close == NULL || close - p - 1 <= 0 || close - p - 1 >= 64)
            return 0;
        char inner[64];
        memcpy(inner, p + 1, (size_t)(close - p - 1));
        inner[close - p - 1] = '\0';
        struct in6_addr a6;
        int future = (inner[0] == 'v' || inner[0] == 'V') && strchr(inner, '.') != NULL &&
                     strspn(inner + 1, "0123456789abcdefABCDEF") > 0 &&
                     inner[1 + strspn(inner + 1, "0123456789abcdefABCDEF")] == '.' &&
                     inner[strlen(inner) - 1] != '.';
        for (const char *q = inner; future && *q; q++)
            future = isalnum((unsigned char)*q) || strchr("-._~!$&'()*+,;=:", *q) != NULL;
        if (!future && inet_pton(AF_INET6, inner, &a6) != 1)
            return 0;
        p = close + 1;
    } else {
        for (; *p != '\0' && *p != ':'; p++) {
            if (*p == '%') {
                if (!isxdigit((unsigned char)p[1]) || !isxdigit((unsigned char)p[2]))
                    return 0;
                p += 2;
            } else if (!isalnum((unsigned char)*p) && strchr("-._~!$&'()*+,;=", *p) == NULL) {
                return 0;
            }
        }
    }
    if (*p == '\0')
        return 1;
    if (*p != ':')
        return 0;
    size_t digits = strlen(p + 1);
    if (digits > 5 || strspn(p + 1, "0123456789") != digits)
        return 0;
    return digits == 0 || atoi(p + 1) <= 65535;
}

/* The fields that say how long the body is, and Host. */
static int
check_framing(struct srv_head *h, struct gd_err *err)
{
    int n_host = 0, n_length = 0, n_te = 0;
    const char *length = NULL, *te = NULL, *host = NULL;
    for (int i = 0; i < h->n_fields; i++) {
        const char *name = h->fields[i].name;
        if (strcasecmp(name, "Host") == 0) {
            n_host++;
            host = h->fields[i].value;
        }
        else if (strcasecmp(name, "Content-Length") == 0) {
            n_length++;
            length = h->fields[i].value;
        } else if (strcasecmp(name, "Transfer-Encoding") == 0) {
            n_te++;
            te = h->fields[i].value;
        }
    }
    if (n_host > 1)
        return gd_err_set(err, SRV_EBADREQ, "more than one Host header");
    if (n_host == 0 && h->minor >= 1)
        return gd_err_set(err, SRV_EBADREQ, "an HTTP/1.1 request needs a Host header");
    if (host != NULL && !srv_head_host_valid(host))
        return gd_err_set(err, SRV_EBADREQ,
                          "the Host header is not a host and port (RFC 9112 section 3.2)");
    if (n_length > 1)
        return gd_err_set(err, SRV_EBADREQ, "more than one Content-Length header");
    if (n_length == 1 && n_te > 0)
        return gd_err_set(err, SRV_EBADREQ,
                          "Content-Length and Transfer-Encoding together (send one of them)");
    if (n_te > 1 || (n_te == 1 && strcasecmp(te, "chunked") != 0))
        return gd_err_set(err, SRV_EBADREQ,
                          "the only Transfer-Encoding understood is one \"chunked\"");
    h->chunked = n_te == 1;
    if (length != NULL) {
        size_t digits = strlen(length);
        if (digits == 0 || digits > 18 || strspn(length, "0123456789") != digits)
            return gd_err_set(err, SRV_EBADREQ,
                              "Content-Length must be 1 to 18 decimal digits, nothing else");
        uint64_t v = 0;
        for (size_t i = 0; i < digits; i++)
            v = v * 10 + (uint64_t)(length[i] - '0');
        h->has_length = 1;
        h->content_length = v;
    }
    return 0;
}

int
srv_head_parse(const char *data, size_t len, struct srv_head *out, struct gd_err *err)
{
    struct srv_head h;
    memset(&h, 0, sizeof h);
    size_t skip = 0;
    while (skip + 1 < len && data[skip] == '\r' && data[skip + 1] == '\n')
        skip += 2;
    /*
     * Lines are split in a copy; the decoded path and query go after it: never longer than
     * the target, plus a NUL for each string (two per query pair at most).
     */
    size_t room = len + 1 + 2 * SRV_HEAD_QUERY_MAX + 2;
    h.mem = malloc(len + 1 + room);
    if (h.mem == NULL)
        return gd_err_set(err, GD_ENOMEM, "out of memory for a request head");
    memcpy(h.mem, data, len);
    h.mem[len] = '\0';
    h.head_len = len;
    char *p = h.mem + skip, *end = h.mem + len;
    int rc = 0, line_no = 0;
    while (rc == 0 && p < end) {
        char *lf = memchr(p, '\n', (size_t)(end - p));
        if (lf == NULL || lf == p || lf[-1] != '\r') {
            rc = gd_err_set(err, SRV_EBADREQ, "every line must end in CRLF");
            break;
        }
        size_t n = (size_t)(lf - 1 - p);
        if (memchr(p, '\r', n) != NULL || memchr(p, '\0', n) != NULL) {
            rc = gd_err_set(err, SRV_EBADREQ,
                            memchr(p, '\0', n) != NULL ? "a NUL byte in the request head"
                                                       : "a CR byte inside a line");
            break;
        }
        p[n] = '\0';
        if (n == 0)
            break; /* the blank line: the end */
        rc = line_no == 0 ? parse_request_line(&h, p, n, err) : parse_field(&h, p, n, err);
        line_no++;
        p = lf + 1;
    }
    if (rc == 0 && h.method == NULL)
        rc = gd_err_set(err, SRV_EBADREQ, "no request line");
    if (rc == 0)
        rc = check_framing(&h, err);
    if (rc == 0)
        rc = parse_target(&h, h.target, h.mem + len + 1, err);
    if (rc != 0) {
        srv_head_fini(&h);
        return rc;
    }
    *out = h;
    return 0;
}

int
srv_head_rebuild(const char *method, const char *target, const char *version,
                 const struct srv_head_field *fields, int n_fields, size_t max_head,
                 struct srv_head *out, struct gd_err *err)
{
    if (n_fields > SRV_HEAD_FIELDS_MAX)
        return gd_err_set(err, SRV_EHEADERS, "more than %d header lines", SRV_HEAD_FIELDS_MAX);
    struct srv_buf text = {0};
    int rc = srv_buf_printf(&text, "%s %s %s\r\n", method, target, version);
    if (rc == 0 && text.len > max_head) {
        srv_buf_fini(&text);
        return gd_err_set(err, SRV_EURI, "the request line is longer than --max-header");
    }
    for (int i = 0; rc == 0 && i < n_fields; i++) {
        const char *name = fields[i].name, *value = fields[i].value;
        if (strpbrk(name, "\r\n") != NULL || strpbrk(value, "\r\n") != NULL) {
            srv_buf_fini(&text);
            return gd_err_set(err, SRV_EBADREQ, "a header line holds a CR or LF byte");
        }
        rc = srv_buf_printf(&text, "%s: %s\r\n", name, value);
    }
    if (rc == 0)
        rc = srv_buf_append(&text, "\r\n", 2);
    if (rc != 0) {
        srv_buf_fini(&text);
        return gd_err_set(err, GD_ENOMEM, "out of memory for a request head");
    }
    if (text.len > max_head)
        rc = gd_err_set(err, SRV_EHEADERS, "the request head is longer than --max-header");
    else if (srv_head_end(text.data, text.len) != text.len)
        /* A CR or LF in the method, target or version. */
        rc = gd_err_set(err, SRV_EBADREQ, "the request line holds a CR or LF byte");
    else
        rc = srv_head_parse(text.data, text.len, out, err);
    srv_buf_fini(&text);
    return rc;
}

void
srv_head_fini(struct srv_head *h)
{
    free(h->mem);
    memset(h, 0, sizeof *h);
}

const char *
srv_head_field(const struct srv_head *h, const char *name)
{
    for (int i = 0; i < h->n_fields; i++)
        if (strcasecmp(h->fields[i].name, name) == 0)
            return h->fields[i].value;
    return NULL;
}

const char *
srv_head_query(const struct srv_head *h, const char *key)
{
    for (int i = 0; i < h->n_query; i++)
        if (strcmp(h->query[i].key, key) == 0)
            return h->query[i].value;
    return NULL;
}
