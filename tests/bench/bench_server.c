/* bench_server.c: the daemon, token and bundle helpers of the gpudiffd benchmarks. */
#define _GNU_SOURCE /* sched_setaffinity */
#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "gpudiff/bundle.h"
#include "gpudiff/session.h"
#include "bench_server.h"

double
bench_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* "0", "1,3", "0-2" into set; -1 when it names no CPU. */
static int
cpu_list(const char *cpus, cpu_set_t *set)
{
    CPU_ZERO(set);
    for (const char *p = cpus; *p;) {
        char *end;
        long a = strtol(p, &end, 10), b = a;
        if (end == p || a < 0 || a >= CPU_SETSIZE)
            return -1;
        if (*end == '-') {
            p = end + 1;
            b = strtol(p, &end, 10);
            if (end == p || b < a || b >= CPU_SETSIZE)
                return -1;
        }
        for (long c = a; c <= b; c++)
            CPU_SET((int)c, set);
        p = *end == ',' ? end + 1 : end;
        if (*end != ',' && *end != '\0')
            return -1;
    }
    return CPU_COUNT(set) > 0 ? 0 : -1;
}

int
bench_pin(const char *cpus, struct gd_err *err)
{
    cpu_set_t set;
    if (cpu_list(cpus, &set) != 0 || sched_setaffinity(0, sizeof set, &set) != 0)
        return gd_err_set(err, GD_EINVAL, "cannot run on CPUs %s: %s", cpus, strerror(errno));
    return 0;
}

int
bench_daemon_start(const char *gpudiffd, const char *dir, const char *name,
                   const char *const *extra, struct bench_daemon *d, struct gd_err *err)
{
    return bench_daemon_start_opts(gpudiffd, dir, name, extra, NULL, d, err);
}

int
bench_daemon_start_opts(const char *gpudiffd, const char *dir, const char *name,
                        const char *const *extra, const struct bench_daemon_opts *o,
                        struct bench_daemon *d, struct gd_err *err)
{
    memset(d, 0, sizeof *d);
    cpu_set_t set;
    if (o != NULL && o->cpus != NULL && cpu_list(o->cpus, &set) != 0)
        return gd_err_set(err, GD_EINVAL, "--daemon-cpus %s names no CPU", o->cpus);
    if (o != NULL && o->db != NULL)
        snprintf(d->db, sizeof d->db, "%s", o->db);
    else
        snprintf(d->db, sizeof d->db, "%s/%s.db", dir, name);
    snprintf(d->log, sizeof d->log, "%s/%s.log", dir, name);
    char cmd[2600];
    snprintf(cmd, sizeof cmd, "'%s' token create --role agent --db '%s' 2>/dev/null", gpudiffd,
             d->db);
    FILE *p = popen(cmd, "r");
    if (p == NULL || fgets(d->token, sizeof d->token, p) == NULL) {
        if (p != NULL)
            pclose(p);
        return gd_err_set(err, GD_EIO, "%s: could not make a token", gpudiffd);
    }
    pclose(p);
    d->token[strcspn(d->token, "\n")] = '\0';
    const char *argv[32] = {gpudiffd, "--db", d->db, "--listen", "127.0.0.1:0"};
    int argc = 5;
    /* Benchmarks run as root on the test machines; an older gpudiffd has no such flag. */
    char help[1024];
    snprintf(help, sizeof help, "%s --help | grep -q -- --allow-root", gpudiffd);
    if (geteuid() == 0 && system(help) == 0)
        argv[argc++] = "--allow-root";
    for (int i = 0; extra != NULL && extra[i] != NULL && argc < 30; i++)
        argv[argc++] = extra[i];
    argv[argc] = NULL;
    pid_t pid = fork();
    if (pid < 0)
        return gd_err_set(err, GD_EIO, "fork: %s", strerror(errno));
    if (pid == 0) {
        FILE *log = freopen(d->log, "w", stderr);
        (void)log;
        /* the daemon's CPUs, inherited by every thread it starts */
        if (o != NULL && o->cpus != NULL && sched_setaffinity(0, sizeof set, &set) != 0)
            _exit(126);
        execv(gpudiffd, (char *const *)argv);
        _exit(127);
    }
    d->pid = pid;
    for (int tries = 0; tries < 200; tries++) {
        FILE *f = fopen(d->log, "r");
        char line[512];
        int port = 0;
        while (f != NULL && fgets(line, sizeof line, f) != NULL) {
            const char *at = strstr(line, "listening on http://127.0.0.1:");
            if (at != NULL)
                port = atoi(at + strlen("listening on http://127.0.0.1:"));
        }
        if (f != NULL)
            fclose(f);
        if (port > 0) {
            snprintf(d->url, sizeof d->url, "http://127.0.0.1:%d", port);
            return 0;
        }
        if (waitpid(pid, NULL, WNOHANG) == pid) {
            d->pid = 0;
            return gd_err_set(err, GD_EIO, "gpudiffd exited at start (see %s)", d->log);
        }
        usleep(50000);
    }
    bench_daemon_stop(d);
    return gd_err_set(err, GD_EIO, "gpudiffd did not start within 10 s (see %s)", d->log);
}

void
bench_daemon_stop(struct bench_daemon *d)
{
    if (d->pid <= 0)
        return;
    kill(d->pid, SIGTERM);
    waitpid(d->pid, NULL, 0);
    d->pid = 0;
}

double
bench_cpu_seconds(pid_t pid)
{
    char path[64], buf[1024];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    FILE *f = fopen(path, "r");
    if (f == NULL)
        return 0;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    /* Fields 14 and 15 (utime, stime) follow the command name's closing parenthesis. */
    const char *p = strrchr(buf, ')');
    unsigned long long utime = 0, stime = 0;
    if (p == NULL ||
        sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &utime, &stime) != 2)
        return 0;
    return (double)(utime + stime) / (double)sysconf(_SC_CLK_TCK);
}

static uint64_t
next_rand(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

int
bench_bundle_make(const char *dir, const char *model, int n_layers, int64_t rows, int64_t cols,
                  uint64_t seed, uint64_t salt, double perturb, struct gd_err *err)
{
    struct gd_bundle_writer *w = NULL;
    int64_t shape[2] = {rows, cols};
    struct gd_tensor *t = gd_tensor_new(GD_F32, 2, shape, err);
    if (t == NULL)
        return err != NULL ? err->code : GD_ENOMEM;
    int rc = gd_bundle_writer_new(dir, 1, &w, err);
    uint64_t s = seed | 1;
    float *v = t->data;
    int64_t n = rows * cols;
    for (int i = 0; rc == 0 && i < n_layers; i++) {
        for (int64_t k = 0; k < n; k++) {
            uint64_t r = next_rand(&s);
            double u = (double)(r & 0xffff) + (double)((r >> 16) & 0xffff) +
                       (double)((r >> 32) & 0xffff) + (double)((r >> 48) & 0xffff);
            v[k] = (float)((u / 65536.0 - 2.0) * 1.7320508075688772);
            if (perturb > 0 && k % 8 == 0)
                v[k] *= (float)(1.0 + perturb);
        }
        char name[32];
        snprintf(name, sizeof name, "layer%03d", i);
        struct gd_layer layer = {
            .index = i,
            .node_index = -1,
            .name = name,
            .node_name = NULL,
            .op = GD_OP_IDENTITY,
            .value = t,
            .batch_offset = 0,
            .batch_total = rows,
            .time_us = -1,
            .algo = "",
            .math = "",
        };
        rc = gd_bundle_writer_layer(w, NULL, &layer, err);
    }
    char id[37];
    snprintf(id, sizeof id, "%08llx-0000-4000-8000-%012llx",
             (unsigned long long)(seed & 0xffffffff),
             (unsigned long long)(salt & 0xffffffffffffull));
    json_t *meta = rc == 0 ? json_pack("{s:s, s:s, s:{s:s, s:n}, s:s, s:{}, s:{}, s:{}}", "id", id,
                                       "created_at", "2026-01-01T00:00:00Z", "model", "name", model,
                                       "sha256", "backend", "bench", "env", "knobs", "labels")
                           : NULL;
    if (rc == 0 && meta == NULL)
        rc = gd_err_set(err, GD_ENOMEM, "out of memory");
    if (rc == 0)
        rc = gd_bundle_writer_commit(w, meta, err);
    json_decref(meta);
    gd_bundle_writer_free(w);
    gd_tensor_free(t);
    return rc;
}
