/*
 * bench_server.h: what the gpudiffd benchmarks share: a daemon of this build started on
 * loopback with a fresh database and an agent token (or one given on the command line), its
 * CPU time, and run bundles of made-up activations written with the engine's bundle writer.
 */
#ifndef GPUDIFF_BENCH_SERVER_H
#define GPUDIFF_BENCH_SERVER_H

#include <stdint.h>
#include <sys/types.h>

#include "gpudiff/error.h"

struct bench_daemon {
    pid_t pid; /* 0 when the daemon was given, not started here */
    char url[128];
    char token[128];
    char db[1024];
    char log[1024];
};

/* Monotonic seconds. */
double bench_now(void);

/*
 * Starts `gpudiffd` on 127.0.0.1, a free port, and a fresh database dir/NAME.db (extra
 * flags appended), after making an agent token in it; waits until it listens.
 */
int bench_daemon_start(const char *gpudiffd, const char *dir, const char *name,
                       const char *const *extra, struct bench_daemon *d, struct gd_err *err);

/* What bench_daemon_start_opts() may change. */
struct bench_daemon_opts {
    const char *db;   /* a database to use instead of dir/NAME.db (a PostgreSQL URI); NULL */
    const char *cpus; /* the CPUs the daemon may run on ("0", "0,2-3"; sched_setaffinity); NULL */
};

/* bench_daemon_start() with those choices (o may be NULL). */
int bench_daemon_start_opts(const char *gpudiffd, const char *dir, const char *name,
                            const char *const *extra, const struct bench_daemon_opts *o,
                            struct bench_daemon *d, struct gd_err *err);

/* Pins the calling process's threads made after this to cpus ("1", "1-3"); GD_EINVAL for a
 * list that names no CPU of this machine. */
int bench_pin(const char *cpus, struct gd_err *err);

/* SIGTERM and wait; nothing for a daemon that was given. */
void bench_daemon_stop(struct bench_daemon *d);

/* CPU seconds (user + system) the process has used so far; 0 when unknown. */
double bench_cpu_seconds(pid_t pid);

/*
 * Writes a bundle to dir: n_layers float32 layers of rows x cols values, normal-ish
 * (the sum of four uniforms), from seed; with perturb > 0 every 8th value is moved by that
 * relative amount, so two bundles of one seed differ as two devices' runs do. The id is
 * made from seed and salt, so runs are reproducible and distinct.
 */
int bench_bundle_make(const char *dir, const char *model, int n_layers, int64_t rows, int64_t cols,
                      uint64_t seed, uint64_t salt, double perturb, struct gd_err *err);

#endif
