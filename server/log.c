/*
 * log.c: gpudiffd's log: one line per message on stderr, with the UTC time, the level and,
 * for messages about a request, its id, so every line of one request can be found.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>

#include "server.h"

int srv_log_level = GD_LOG_INFO;

void
srv_log_write(enum gd_log_level level, const struct srv_req *req, const char *fmt, ...)
{
    char msg[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    /* Control characters from clients (paths, names) must not forge log lines. */
    for (char *p = msg; *p; p++)
        if ((unsigned char)*p < 0x20 || *p == 0x7f)
            *p = '?';
    struct timeval tv;
    gettimeofday(&tv, NULL);
    struct tm tm;
    gmtime_r(&tv.tv_sec, &tm);
    char when[40];
    strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%S", &tm);
    /* One fprintf per line: stdio locks the stream, so lines of threads do not mix. */
    fprintf(stderr, "%s.%03dZ %-5s [%s] %s\n", when, (int)(tv.tv_usec / 1000),
            gd_log_level_name(level), req != NULL ? req->id : "-", msg);
}

static void
engine_sink(void *user, enum gd_log_level level, const char *msg)
{
    (void)user;
    srv_log_write(level, NULL, "engine: %s", msg);
}

void
srv_log_init(int level)
{
    srv_log_level = level;
    gd_log_set(engine_sink, NULL, (enum gd_log_level)level);
}
