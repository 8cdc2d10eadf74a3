/* log.c: the engine's one logging sink (process-wide, set once at start by the program). */
#include <stdarg.h>
#include <stdio.h>

#include "gpudiff/log.h"

static gd_log_fn log_fn;
static void *log_user;
static enum gd_log_level log_max = GD_LOG_INFO;

void
gd_log_set(gd_log_fn fn, void *user, enum gd_log_level max_level)
{
    log_fn = fn;
    log_user = user;
    log_max = max_level;
}

int
gd_log_enabled(enum gd_log_level level)
{
    return log_fn != NULL && level <= log_max;
}

void
gd_log(enum gd_log_level level, const char *fmt, ...)
{
    if (!gd_log_enabled(level))
        return;
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    log_fn(log_user, level, msg);
}

const char *
gd_log_level_name(enum gd_log_level level)
{
    switch (level) {
    case GD_LOG_ERROR:
        return "error";
    case GD_LOG_WARN:
        return "warn";
    case GD_LOG_INFO:
        return "info";
    case GD_LOG_DEBUG:
        return "debug";
    }
    return "?";
}
