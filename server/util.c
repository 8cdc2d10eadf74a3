/* util.c: clocks, RFC 3339 times, the checks on ids, hashes and names, a growable buffer. */
#include <ctype.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "server.h"

int64_t
srv_now(void)
{
    return (int64_t)time(NULL);
}

double
srv_clock(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Reads exactly n digits. */
static int
digits(const char **p, int n, int *out)
{
    int v = 0;
    for (int i = 0; i < n; i++) {
        if (!isdigit((unsigned char)(*p)[i]))
            return -1;
        v = v * 10 + ((*p)[i] - '0');
    }
    *p += n;
    *out = v;
    return 0;
}

static int
days_in_month(int year, int month)
{
    static const int days[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    int leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;
    return month == 2 && leap ? 29 : days[month - 1];
}

int
srv_time_parse(const char *text, int date_only_ok, int64_t *out)
{
    const char *p = text;
    int y, mo, d, h = 0, mi = 0, s = 0, off = 0;
    if (digits(&p, 4, &y) || *p++ != '-' || digits(&p, 2, &mo) || *p++ != '-' || digits(&p, 2, &d))
        return -1;
    if (mo < 1 || mo > 12 || d < 1 || d > days_in_month(y, mo))
        return -1;
    if (*p == '\0') {
        if (!date_only_ok)
            return -1;
    } else {
        if ((*p != 'T' && *p != 't') || (p++, digits(&p, 2, &h)) || *p++ != ':' ||
            digits(&p, 2, &mi) || *p++ != ':' || digits(&p, 2, &s))
            return -1;
        if (h > 23 || mi > 59 || s > 60)
            return -1;
        if (*p == '.') {
            p++;
            if (!isdigit((unsigned char)*p))
                return -1;
            while (isdigit((unsigned char)*p))
                p++;
        }
        if (*p == 'Z' || *p == 'z') {
            p++;
        } else if (*p == '+' || *p == '-') {
            int sign = *p++ == '-' ? -1 : 1, oh, om;
            if (digits(&p, 2, &oh) || *p++ != ':' || digits(&p, 2, &om) || oh > 23 || om > 59)
                return -1;
            off = sign * (oh * 3600 + om * 60);
        } else {
            return -1;
        }
        if (*p != '\0')
            return -1;
    }
    struct tm tm;
    memset(&tm, 0, sizeof tm);
    tm.tm_year = y - 1900;
    tm.tm_mon = mo - 1;
    tm.tm_mday = d;
    tm.tm_hour = h;
    tm.tm_min = mi;
    tm.tm_sec = s;
    *out = (int64_t)timegm(&tm) - off;
    return 0;
}

void
srv_time_format(int64_t t, char out[32])
{
    time_t tt = (time_t)t;
    struct tm tm;
    gmtime_r(&tt, &tm);
    strftime(out, 32, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

static int
is_hex_lower(char c)
{
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
}

int
srv_is_uuid(const char *s)
{
    /* xxxxxxxx-xxxx-4xxx-[89ab]xxx-xxxxxxxxxxxx */
    if (strlen(s) != 36)
        return 0;
    for (int i = 0; i < 36; i++) {
        if (i == 8 || i == 13 || i == 18 || i == 23) {
            if (s[i] != '-')
                return 0;
        } else if (!is_hex_lower(s[i])) {
            return 0;
        }
    }
    return s[14] == '4' && strchr("89ab", s[19]) != NULL;
}

int
srv_is_sha256(const char *s)
{
    for (int i = 0; i < 64; i++)
        if (!is_hex_lower(s[i]))
            return 0;
    return s[64] == '\0';
}

int
srv_is_text(const char *s, size_t max)
{
    const unsigned char *p = (const unsigned char *)s;
    size_t n = strlen(s);
    if (n == 0 || n > max)
        return 0;
    while (*p != '\0') {
        unsigned char c = *p;
        int follow;
        if (c < 0x20 || c == 0x7f)
            return 0;
        if (c < 0x80)
            follow = 0;
        else if (c >= 0xc2 && c <= 0xdf)
            follow = 1;
        else if (c >= 0xe0 && c <= 0xef)
            follow = 2;
        else if (c >= 0xf0 && c <= 0xf4)
            follow = 3;
        else
            return 0;
        unsigned cp = follow == 0 ? c : (c & (0x3fu >> follow));
        p++;
        for (int k = 0; k < follow; k++, p++) {
            if ((*p & 0xc0) != 0x80)
                return 0;
            cp = (cp << 6) | (*p & 0x3fu);
        }
        /* overlong forms, surrogates, beyond U+10FFFF, and C1 controls */
        if ((follow == 2 && cp < 0x800) || (follow == 3 && (cp < 0x10000 || cp > 0x10ffff)) ||
            (cp >= 0xd800 && cp <= 0xdfff) || (cp >= 0x80 && cp < 0xa0))
            return 0;
    }
    return 1;
}

int
srv_is_name(const char *s, size_t max, const char *extra)
{
    size_t n = 0;
    for (; s[n] != '\0'; n++) {
        unsigned char c = (unsigned char)s[n];
        if (n >= max)
            return 0;
        if (!isalnum(c) && strchr(extra, c) == NULL)
            return 0;
    }
    return n > 0;
}

int
srv_buf_append(struct srv_buf *b, const void *data, size_t len)
{
    if (len > SIZE_MAX / 2 - b->len)
        return GD_ENOMEM;
    if (b->len + len + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->len + len + 1)
            cap *= 2;
        char *p = realloc(b->data, cap);
        if (p == NULL)
            return GD_ENOMEM;
        b->data = p;
        b->cap = cap;
    }
    memcpy(b->data + b->len, data, len);
    b->len += len;
    b->data[b->len] = '\0';
    return 0;
}

int
srv_buf_printf(struct srv_buf *b, const char *fmt, ...)
{
    char small[512];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(small, sizeof small, fmt, ap);
    va_end(ap);
    if (n < 0)
        return GD_EINVAL;
    if ((size_t)n < sizeof small)
        return srv_buf_append(b, small, (size_t)n);
    char *big = malloc((size_t)n + 1);
    if (big == NULL)
        return GD_ENOMEM;
    va_start(ap, fmt);
    vsnprintf(big, (size_t)n + 1, fmt, ap);
    va_end(ap);
    int rc = srv_buf_append(b, big, (size_t)n);
    free(big);
    return rc;
}

void
srv_buf_fini(struct srv_buf *b)
{
    free(b->data);
    b->data = NULL;
    b->len = b->cap = 0;
}

int
srv_parse_int(const char *text, int64_t min, int64_t max, int64_t *out)
{
    if (text == NULL || *text == '\0' || strlen(text) > 18)
        return -1;
    int64_t v = 0;
    for (const char *p = text; *p; p++) {
        if (*p < '0' || *p > '9')
            return -1;
        v = v * 10 + (*p - '0');
    }
    if (v < min || v > max)
        return -1;
    *out = v;
    return 0;
}

int
srv_parse_decimal(const char *text, double *out)
{
    /* JSON's number grammar without the sign: (0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)? */
    const char *p = text;
    if (p == NULL || strlen(p) > 64)
        return -1;
    if (*p == '0')
        p++;
    else if (*p >= '1' && *p <= '9')
        while (*p >= '0' && *p <= '9')
            p++;
    else
        return -1;
    if (*p == '.') {
        p++;
        if (*p < '0' || *p > '9')
            return -1;
        while (*p >= '0' && *p <= '9')
            p++;
    }
    if (*p == 'e' || *p == 'E') {
        p++;
        if (*p == '+' || *p == '-')
            p++;
        if (*p < '0' || *p > '9')
            return -1;
        while (*p >= '0' && *p <= '9')
            p++;
    }
    if (*p != '\0')
        return -1;
    /* The C locale's strtod reads exactly this grammar the same way. */
    double v = strtod(text, NULL);
    if (!isfinite(v))
        return -1;
    *out = v;
    return 0;
}
