/*
 * log.h: the engine's logging sink. The engine never prints: it hands each message to the
 * function set with gd_log_set(). With no sink set, messages are dropped.
 */
#ifndef GPUDIFF_LOG_H
#define GPUDIFF_LOG_H

#ifdef __cplusplus
extern "C" {
#endif

enum gd_log_level { GD_LOG_ERROR = 0, GD_LOG_WARN, GD_LOG_INFO, GD_LOG_DEBUG };

/* Receives one formatted message without a trailing newline; msg is valid during the call. */
typedef void (*gd_log_fn)(void *user, enum gd_log_level level, const char *msg);

/* Sets the sink and the most verbose level passed to it. fn may be NULL (drop all). */
void gd_log_set(gd_log_fn fn, void *user, enum gd_log_level max_level);

/* 1 when a message of this level would reach the sink: check before costly formatting. */
int gd_log_enabled(enum gd_log_level level);

void gd_log(enum gd_log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* "error", "warn", "info", "debug". */
const char *gd_log_level_name(enum gd_log_level level);

#ifdef __cplusplus
}
#endif
#endif
