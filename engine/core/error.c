/* error.c: messages for the GD_E* codes and the struct gd_err helpers. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "gpudiff/error.h"

const char *
gd_strerror(int code)
{
    switch (code) {
    case GD_OK:
        return "success";
#define GD__ERR_MSG(name, value, msg) \
    case GD_##name:                   \
        return msg;
        GD_ERRNO_MAP(GD__ERR_MSG)
#undef GD__ERR_MSG
    default:
        return "unknown error";
    }
}

const char *
gd_err_name(int code)
{
    switch (code) {
    case GD_OK:
        return "OK";
#define GD__ERR_NAME(name, value, msg) \
    case GD_##name:                    \
        return #name;
        GD_ERRNO_MAP(GD__ERR_NAME)
#undef GD__ERR_NAME
    default:
        return "EUNKNOWN";
    }
}

int
gd_err_set(struct gd_err *err, int code, const char *fmt, ...)
{
    if (err == NULL)
        return code;
    err->code = code;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err->msg, sizeof err->msg, fmt, ap);
    va_end(ap);
    return code;
}

int
gd_err_prefix(struct gd_err *err, const char *fmt, ...)
{
    if (err == NULL)
        return 0;
    char prefix[128];
    char old[sizeof err->msg];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(prefix, sizeof prefix, fmt, ap);
    va_end(ap);
    memcpy(old, err->msg, sizeof old);
    /* Prefix first; the old message is cut if the two do not fit. */
    size_t np = strlen(prefix), no = strnlen(old, sizeof old - 1);
    if (np > sizeof err->msg - 1)
        np = sizeof err->msg - 1;
    if (no > sizeof err->msg - 1 - np)
        no = sizeof err->msg - 1 - np;
    memcpy(err->msg, prefix, np);
    memcpy(err->msg + np, old, no);
    err->msg[np + no] = '\0';
    return err->code;
}

void
gd_err_clear(struct gd_err *err)
{
    if (err == NULL)
        return;
    err->code = 0;
    err->msg[0] = '\0';
}
