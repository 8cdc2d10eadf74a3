/*
 * serve_task.c: one lease of `gpudiff-agent serve` (serve.h): a heartbeat at once, which
 * confirms the lease to the daemon (an offer no heartbeat confirms is withdrawn), the job's
 * files into the cache by hash (checked, renamed into place: never a half file), `run` in a
 * child process (this program again, so a crash of the engine ends only the child),
 * heartbeats while it goes on, then `done` with the run id or `fail` with the child's last
 * stderr line; stopped by SIGINT (or a second SIGTERM), the lease is given back instead.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "gpudiff/hash.h"
#include "serve.h"

#define TASK_MAX_ARGS 160
/* The longest wait between two heartbeats, whatever lease_seconds: each is also the device's
 * sign of life, which the daemon's --device-stale-seconds (120 s by default) watches. */
#define TASK_BEAT_MAX 30.0

struct task {
    struct agt_serve *s;
    const char *lease_id, *job_id, *key, *backend, *model;
    json_t *files, *knobs;
    long lease_seconds;
    char dir[PATH_MAX];
    double next_beat;
    int lost; /* the daemon took the lease back */
};

static double
now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int
rm_one(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb, (void)flag, (void)ftw;
    remove(path);
    return 0;
}

static void
rm_tree(const char *dir)
{
    nftw(dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

/* Ends the lease with path's verb and body; a lost lease is logged, not an error. */
static int
finish(struct task *t, const char *verb, json_t *body)
{
    char path[300];
    snprintf(path, sizeof path, "/api/v1/leases/%s/%s", t->lease_id, verb);
    char *text = json_dumps(body, JSON_COMPACT);
    json_decref(body);
    struct agt_http_req r = {.method = "POST", .path = path, .json = text, .timeout = 60};
    long status;
    struct gd_err err = {0};
    t->s->http.stop = NULL;
    int code = agt_http_call(&t->s->http, &r, t->s->up.retries, &status, &err);
    free(text);
    if (code == AGT_EXIT_TOKEN)
        return code;
    char why[400];
    if (code != 0) {
        fprintf(stderr, "gpudiff-agent serve: job %s on %s: could not report %s: %s\n",
                t->job_id, t->key, verb, err.msg);
    } else if (status == 200 || status == 201 || status == 204) {
        fprintf(stderr, "gpudiff-agent serve: job %s on %s: reported %s\n", t->job_id, t->key,
                verb);
    } else {
        agt_http_error(&t->s->http, why, sizeof why);
        fprintf(stderr, "gpudiff-agent serve: job %s on %s: POST %s: the daemon answered %ld "
                        "%s\n", t->job_id, t->key, path, status, why);
        if (status == 400 && strcmp(verb, "done") == 0)
            return -2; /* the daemon refused the run: say so with fail */
    }
    return 0;
}

static int
fail(struct task *t, int exit_code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static int
fail(struct task *t, int exit_code, const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    fprintf(stderr, "gpudiff-agent serve: job %s on %s failed: %s\n", t->job_id, t->key, msg);
    json_t *body = json_pack("{s:s, s:i}", "error", msg, "exit_code", exit_code);
    if (body == NULL) { /* not UTF-8 (a run's message of odd bytes): those bytes as '?' */
        for (char *p = msg; *p; p++)
            if ((unsigned char)*p >= 0x80)
                *p = '?';
        body = json_pack("{s:s, s:i}", "error", msg, "exit_code", exit_code);
    }
    return finish(t, "fail", body);
}

int
agt_serve_release(struct agt_serve *s, const char *lease_id, const char *why)
{
    char path[300];
    snprintf(path, sizeof path, "/api/v1/leases/%s/release", lease_id);
    struct agt_http_req r = {.method = "POST", .path = path, .json = "{}", .timeout = 10};
    long status = 0;
    struct gd_err err = {0};
    s->http.stop = NULL;
    /* a few tries only: serve is stopping, and an offer it leaves is withdrawn anyway */
    int code = agt_http_call(&s->http, &r, 2, &status, &err);
    if (code == 0 && status == 200)
        fprintf(stderr,
                "gpudiff-agent serve: gave lease %s back (%s): its task is pending "
                "again\n",
                lease_id, why);
    else if (code == 0) {
        char msg[400];
        agt_http_error(&s->http, msg, sizeof msg);
        fprintf(stderr,
                "gpudiff-agent serve: giving lease %s back: the daemon answered %ld "
                "%s\n",
                lease_id, status, msg);
    } else {
        fprintf(stderr, "gpudiff-agent serve: giving lease %s back: %s\n", lease_id, err.msg);
    }
    return code == AGT_EXIT_TOKEN ? code : 0;
}

/* The seconds between two heartbeats of the task. */
static double
beat_every(const struct task *t)
{
    double every = t->lease_seconds / 3.0;
    return every < 1 ? 1 : every > TASK_BEAT_MAX ? TASK_BEAT_MAX : every;
}

/* One heartbeat when it is due; sets t->lost on 409. Never blocks long. */
static void
heartbeat(struct task *t)
{
    if (now() < t->next_beat)
        return;
    char path[300];
    snprintf(path, sizeof path, "/api/v1/leases/%s/heartbeat", t->lease_id);
    struct agt_http_req r = {.method = "POST", .path = path, .json = "{}", .timeout = 10};
    long status;
    struct gd_err err = {0};
    double every = beat_every(t);
    struct agt_http *c = &t->s->beat;
    c->stop = t->s->hard_stop;
    CURLcode cc = agt_http_once(c, &r, &status, &err);
    c->stop = NULL;
    if (cc != CURLE_OK || status >= 500) {
        fprintf(stderr, "gpudiff-agent serve: heartbeat of lease %s: %s; again in 2 s\n",
                t->lease_id, cc != CURLE_OK ? err.msg : "the daemon failed");
        t->next_beat = now() + (every < 2 ? every : 2);
        return;
    }
    if (status == 409) {
        char why[400];
        agt_http_error(c, why, sizeof why);
        fprintf(stderr, "gpudiff-agent serve: job %s on %s: the daemon took the lease back "
                        "(%s): stopping the run\n", t->job_id, t->key, why);
        t->lost = 1;
        return;
    }
    if (status != 200) {
        char why[400];
        agt_http_error(c, why, sizeof why);
        fprintf(stderr, "gpudiff-agent serve: heartbeat of lease %s: %ld %s\n", t->lease_id,
                status, why);
    }
    t->next_beat = now() + every;
}

/* While a file downloads: the heartbeats that are due (on their own client); a lease taken
 * back abandons the download. */
static int
download_tick(void *user)
{
    struct task *t = user;
    heartbeat(t);
    return t->lost || *t->s->hard_stop;
}

/* The SHA-256 of a file, the heartbeats that fall due sent between its pieces (a model of
 * many gigabytes takes seconds to hash). */
static int
hash_file(struct task *t, const char *path, char hex[GD_SHA256_HEX_LEN + 1], struct gd_err *err)
{
    enum { PIECE = 8 << 20 };
    struct gd_sha256 h = {0};
    char *buf = malloc(PIECE);
    FILE *f = fopen(path, "rb");
    int rc = buf == NULL ? gd_err_set(err, GD_ENOMEM, "out of memory")
             : f == NULL ? gd_err_set(err, GD_EIO, "%s: %s", path, strerror(errno))
                         : gd_sha256_init(&h, err);
    size_t n;
    while (rc == 0 && (n = fread(buf, 1, PIECE, f)) > 0) {
        rc = gd_sha256_update(&h, buf, n, err);
        heartbeat(t);
    }
    if (rc == 0 && ferror(f))
        rc = gd_err_set(err, GD_EIO, "%s: read error", path);
    if (rc == 0)
        rc = gd_sha256_final(&h, hex, err);
    gd_sha256_fini(&h);
    if (f != NULL)
        fclose(f);
    free(buf);
    return rc;
}

/*
 * The file of hash sha in the cache, downloaded when it is not there; path gets its name. A
 * file found there is hashed again first (what a run reads is checked before every run): one
 * whose bytes are no longer those of its name is dropped and fetched again.
 */
static int
cache_file(struct task *t, const char *sha, const char *name, char *path, size_t size,
           struct gd_err *err)
{
    char tmp[PATH_MAX + 100];
    if (agt_cache_path(t->s->cache, sha, (long)getpid(), path, size, tmp, sizeof tmp, err) != 0)
        return err->code;
    if (access(path, R_OK) == 0) {
        char have[GD_SHA256_HEX_LEN + 1];
        struct gd_err herr = {0};
        if (hash_file(t, path, have, &herr) == 0 && strcmp(have, sha) == 0)
            return 0;
        fprintf(stderr,
                "gpudiff-agent serve: job %s: the cached %s (%s) %s: fetching it "
                "again\n",
                t->job_id, name, sha,
                herr.code != 0 ? herr.msg : "no longer has the bytes of its hash");
        unlink(path);
    }
    char url[128];
    snprintf(url, sizeof url, "/api/v1/files/%s", sha);
    struct agt_http_req r = {.method = "GET", .path = url, .out = tmp,
                             .on_tick = download_tick, .tick_user = t,
                             .max_recv_rate = t->s->max_download_rate};
    long status;
    double start = now();
    int code = agt_http_call(&t->s->http, &r, t->s->up.retries, &status, err);
    if (code == 0 && status != 200) {
        char why[400];
        agt_http_error(&t->s->http, why, sizeof why);
        gd_err_set(err, GD_EIO, "GET %s (%s): the daemon answered %ld %s", url, name, status,
                   why);
    }
    char got[GD_SHA256_HEX_LEN + 1];
    if (err->code == 0 && hash_file(t, tmp, got, err) == 0 && strcmp(got, sha) != 0)
        gd_err_set(err, GD_EFORMAT, "%s: the daemon sent bytes of SHA-256 %s, not %s", name,
                   got, sha);
    /* read-only: nothing a job runs writes into the cache through its link */
    if (err->code == 0 && (chmod(tmp, 0440) != 0 || rename(tmp, path) != 0))
        gd_err_set(err, GD_EIO, "rename %s: %s", tmp, strerror(errno));
    if (err->code != 0) {
        unlink(tmp);
        return err->code;
    }
    fprintf(stderr, "gpudiff-agent serve: job %s: fetched %s (%s) into the cache in %.1f s\n",
            t->job_id, name, sha, now() - start);
    return 0;
}

/*
 * The cached file at dest in the job's folder: a hard link (the ONNX loader refuses external
 * data that resolves outside the model's folder, which a symbolic link into the cache
 * would), or a copy when the cache lies on another file system, heartbeats sent meanwhile.
 */
static int
place_link(struct task *t, const char *cached, const char *dest, struct gd_err *err)
{
    if (link(cached, dest) == 0)
        return 0;
    if (errno != EXDEV && errno != EPERM && errno != EMLINK)
        return gd_err_set(err, GD_EIO, "link %s: %s", dest, strerror(errno));
    enum { PIECE = 8 << 20 };
    char *buf = malloc(PIECE);
    int in = open(cached, O_RDONLY | O_CLOEXEC);
    int out = open(dest, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0440);
    int rc = buf == NULL         ? gd_err_set(err, GD_ENOMEM, "out of memory")
             : in < 0 || out < 0 ? gd_err_set(err, GD_EIO, "copy to %s: %s", dest, strerror(errno))
                                 : 0;
    ssize_t n;
    while (rc == 0 && (n = read(in, buf, PIECE)) != 0) {
        if (n < 0 || write(out, buf, (size_t)n) != n)
            rc = gd_err_set(err, GD_EIO, "copy to %s: %s", dest, strerror(errno));
        heartbeat(t);
    }
    if (in >= 0)
        close(in);
    if (out >= 0 && close(out) != 0 && rc == 0)
        rc = gd_err_set(err, GD_EIO, "copy to %s: %s", dest, strerror(errno));
    free(buf);
    return rc;
}

/* Makes the folders of rel (a path checked by agt_job_path_valid) under dir. */
static int
make_parents(const char *dir, const char *rel, struct gd_err *err)
{
    char path[PATH_MAX + AGT_JOB_PATH_MAX + 16];
    int n = snprintf(path, sizeof path, "%s/%s", dir, rel);
    if (n < 0 || n >= (int)sizeof path)
        return gd_err_set(err, GD_EINVAL, "%s/%s: path too long", dir, rel);
    for (char *p = path + strlen(dir) + 1; (p = strchr(p, '/')) != NULL; p++) {
        *p = '\0';
        if (mkdir(path, 0750) != 0 && errno != EEXIST)
            return gd_err_set(err, GD_EIO, "mkdir %s: %s", path, strerror(errno));
        *p = '/';
    }
    return 0;
}

/*
 * The files into t->dir under their names, hard links to the cache (weights under weights/,
 * data and weights in folders as their paths say); the run's --model, --input and
 * --weights-dir arguments.
 */
static int
place_files(struct task *t, char **argv, int *argc, struct gd_err *err)
{
    size_t i, j, n_inputs = 0;
    json_t *f, *g;
    int models = 0, weights = 0;
    json_array_foreach(t->files, i, f) {
        const char *role = json_string_value(json_object_get(f, "role"));
        n_inputs += role != NULL && strcmp(role, "input") == 0;
    }
    json_array_foreach(t->files, i, f) {
        const char *role = json_string_value(json_object_get(f, "role"));
        const char *name = json_string_value(json_object_get(f, "name"));
        const char *sha = json_string_value(json_object_get(f, "sha256"));
        int nested = role != NULL && (strcmp(role, "data") == 0 || strcmp(role, "weights") == 0);
        if (role == NULL || !agt_sha256_valid(sha) ||
            !(nested ? agt_job_path_valid(name) : agt_basename_valid(name)))
            return gd_err_set(err, GD_EINVAL,
                              "file %zu of the job is not {role, name, sha256} "
                              "with a name that stays in its folder",
                              i);
        if (strcmp(role, "model") != 0 && strcmp(role, "input") != 0 && !nested)
            return gd_err_set(err, GD_EINVAL,
                              "file %s has role %.40s (model, input, data, weights)", name, role);
        char where[AGT_JOB_PATH_MAX + 16], other[AGT_JOB_PATH_MAX + 16];
        snprintf(where, sizeof where, "%s%s", strcmp(role, "weights") == 0 ? "weights/" : "", name);
        json_array_foreach(t->files, j, g)
        {
            if (j >= i)
                break;
            const char *grole = json_string_value(json_object_get(g, "role"));
            snprintf(other, sizeof other, "%s%s",
                     grole != NULL && strcmp(grole, "weights") == 0 ? "weights/" : "",
                     json_string_value(json_object_get(g, "name")));
            if (agt_job_paths_clash(where, other))
                return gd_err_set(err, GD_EINVAL, "files %s and %s of the job lie at one place",
                                  other, where);
        }
        weights += strcmp(role, "weights") == 0;
        char cached[PATH_MAX + 100], link[PATH_MAX + AGT_JOB_PATH_MAX + 32];
        if (cache_file(t, sha, name, cached, sizeof cached, err) != 0) {
            if (t->lost || *t->s->hard_stop) { /* the 409 said it, or serve stops: no report */
                gd_err_clear(err);
                return 0;
            }
            return err->code;
        }
        heartbeat(t);
        if (t->lost)
            return 0;
        if (make_parents(t->dir, where, err) != 0)
            return err->code;
        snprintf(link, sizeof link, "%s/%s", t->dir, where);
        if (place_link(t, cached, link, err) != 0)
            return err->code;
        if (*argc + 2 > TASK_MAX_ARGS)
            return gd_err_set(err, GD_EINVAL, "the job has too many files");
        if (strcmp(role, "model") == 0) {
            if (models++ > 0)
                return gd_err_set(err, GD_EINVAL, "the job has two models");
            argv[(*argc)++] = strdup("--model");
            argv[(*argc)++] = strdup(name); /* the child runs in t->dir */
        } else if (strcmp(role, "input") == 0) {
            argv[(*argc)++] = strdup("--input");
            char arg[PATH_MAX + 600];
            const char *dot = strrchr(name, '.');
            int stem = dot != NULL && dot != name ? (int)(dot - name) : (int)strlen(name);
            if (n_inputs > 1)
                snprintf(arg, sizeof arg, "%.*s=%s", stem, name, name);
            else
                snprintf(arg, sizeof arg, "%s", name);
            argv[(*argc)++] = strdup(arg);
        }
    }
    if (models == 0 || n_inputs == 0)
        return gd_err_set(err, GD_EINVAL, "the job has no model or no input file");
    if (weights > 0) { /* a JSON model's weights folder, carried by the job */
        if (*argc + 2 > TASK_MAX_ARGS)
            return gd_err_set(err, GD_EINVAL, "the job has too many files");
        argv[(*argc)++] = strdup("--weights-dir");
        argv[(*argc)++] = strdup("weights");
    }
    return 0;
}

static void
add_arg(char **argv, int *argc, const char *a, const char *b)
{
    if (*argc + 2 >= TASK_MAX_ARGS)
        return;
    argv[(*argc)++] = strdup(a);
    if (b != NULL)
        argv[(*argc)++] = strdup(b);
}

/* The child: `run` with its output into the task folder. Never returns. */
static void
child_exec(struct task *t, char **argv, char **envp, pid_t parent)
{
    setpgid(0, 0);
    prctl(PR_SET_PDEATHSIG, SIGKILL); /* serve killed: its run goes too */
    if (getppid() != parent)
        _exit(127);
    signal(SIGTERM, SIG_DFL);
    signal(SIGINT, SIG_DFL);
    signal(SIGPIPE, SIG_DFL);
    char out[PATH_MAX + 20], errf[PATH_MAX + 20];
    snprintf(out, sizeof out, "%s/run.out", t->dir);
    snprintf(errf, sizeof errf, "%s/run.err", t->dir);
    int in = open("/dev/null", O_RDONLY);
    int o = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0640);
    int e = open(errf, O_WRONLY | O_CREAT | O_TRUNC, 0640);
    if (chdir(t->dir) != 0) /* the job's files by their names, as the user named them */
        _exit(127);
    if (in < 0 || o < 0 || e < 0 || dup2(in, 0) < 0 || dup2(o, 1) < 0 || dup2(e, 2) < 0)
        _exit(127);
    execve(t->s->self, argv, envp);
    fprintf(stderr, "gpudiff-agent serve: exec %s: %s\n", t->s->self, strerror(errno));
    _exit(127);
}

/* Stops the child's process group: SIGTERM, then SIGKILL after 5 s. */
static void
stop_child(pid_t pid, int *wstatus)
{
    kill(-pid, SIGTERM);
    for (int i = 0; i < 50; i++) {
        if (waitpid(pid, wstatus, WNOHANG) == pid)
            return;
        agt_sleep(0.1, NULL);
    }
    kill(-pid, SIGKILL);
    waitpid(pid, wstatus, 0);
}

/* The run's stderr (its last 16 KiB) onto serve's, each line marked, for the operator. */
static void
relay_stderr(struct task *t)
{
    char path[PATH_MAX + 20], line[1024];
    snprintf(path, sizeof path, "%s/run.err", t->dir);
    FILE *f = fopen(path, "rb");
    if (f == NULL)
        return;
    long end = fseek(f, 0, SEEK_END) == 0 ? ftell(f) : 0;
    if (fseek(f, end > 16384 ? end - 16384 : 0, SEEK_SET) == 0)
        while (fgets(line, sizeof line, f) != NULL)
            fprintf(stderr, "gpudiff-agent serve: job %s: run: %s%s", t->job_id, line,
                    strchr(line, '\n') ? "" : "\n");
    fclose(f);
}

/* The run's stderr, its last line into line. */
static void
child_error(struct task *t, char *line, size_t size)
{
    char path[PATH_MAX + 20];
    snprintf(path, sizeof path, "%s/run.err", t->dir);
    line[0] = '\0';
    FILE *f = fopen(path, "rb");
    if (f == NULL)
        return;
    char buf[8192];
    long end = fseek(f, 0, SEEK_END) == 0 ? ftell(f) : 0;
    long from = end > (long)sizeof buf ? end - (long)sizeof buf : 0;
    size_t n = fseek(f, from, SEEK_SET) == 0 ? fread(buf, 1, sizeof buf, f) : 0;
    fclose(f);
    agt_last_line(buf, n, line, size);
    const char *prefix = "gpudiff-agent: ";
    if (strncmp(line, prefix, strlen(prefix)) == 0)
        memmove(line, line + strlen(prefix), strlen(line) - strlen(prefix) + 1);
}

/* Runs the child to its end with heartbeats; reports the outcome. */
static int
run_child(struct task *t, char **argv)
{
    /* the environment with the token, made before fork: the child only calls exec */
    extern char **environ;
    size_t n_env = 0;
    while (environ[n_env] != NULL)
        n_env++;
    char **envp = calloc(n_env + 2, sizeof *envp);
    char *token = NULL;
    if (envp == NULL || asprintf(&token, "%s=%s", AGT_TOKEN_ENV, t->s->up.token) < 0) {
        free(envp);
        return fail(t, AGT_EXIT_INTERNAL, "out of memory");
    }
    size_t k = 0;
    for (size_t i = 0; i < n_env; i++)
        if (strncmp(environ[i], AGT_TOKEN_ENV "=", strlen(AGT_TOKEN_ENV) + 1) != 0)
            envp[k++] = environ[i];
    envp[k++] = token;
    envp[k] = NULL;
    pid_t parent = getpid();
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0)
        child_exec(t, argv, envp, parent);
    free(envp);
    free(token);
    if (pid < 0)
        return fail(t, AGT_EXIT_INTERNAL, "fork: %s", strerror(errno));
    setpgid(pid, pid);
    fprintf(stderr, "gpudiff-agent serve: job %s on %s: running (lease %s, pid %ld)\n",
            t->job_id, t->key, t->lease_id, (long)pid);
    int wstatus = 0, stopped = 0;
    for (;;) {
        pid_t w = waitpid(pid, &wstatus, WNOHANG);
        if (w == pid)
            break;
        if (w < 0 && errno != EINTR)
            return fail(t, AGT_EXIT_INTERNAL, "waitpid: %s", strerror(errno));
        if (*t->s->hard_stop) {
            stop_child(pid, &wstatus);
            stopped = 1;
            break;
        }
        heartbeat(t);
        if (t->lost) {
            stop_child(pid, &wstatus);
            return 0;
        }
        agt_sleep(0.1, NULL);
    }
    relay_stderr(t);
    if (stopped) /* the run did not end by itself: the task is not this device's failure */
        return agt_serve_release(t->s, t->lease_id, "serve was stopped while the run went on");
    char line[900];
    if (WIFSIGNALED(wstatus)) {
        int sig = WTERMSIG(wstatus);
        child_error(t, line, sizeof line);
        return fail(t, 128 + sig, "the run was killed by signal %d (%s)%s%s", sig,
                    strsignal(sig), line[0] ? "; its last message: " : "", line);
    }
    int rc = WEXITSTATUS(wstatus);
    if (rc != 0) {
        child_error(t, line, sizeof line);
        return fail(t, rc, "%s", line[0] ? line : "the run failed without a message");
    }
    char path[PATH_MAX + 40];
    snprintf(path, sizeof path, "%s/bundle/run.json", t->dir);
    json_t *run = json_load_file(path, 0, NULL);
    const char *id = json_string_value(json_object_get(run, "id"));
    if (id == NULL) {
        json_decref(run);
        return fail(t, AGT_EXIT_INTERNAL, "the run exited 0 without a run.json id in %s", path);
    }
    fprintf(stderr, "gpudiff-agent serve: job %s on %s: run %s uploaded\n", t->job_id, t->key,
            id);
    int code = finish(t, "done", json_pack("{s:s}", "run_id", id));
    if (code == -2) {
        char why[400];
        agt_http_error(&t->s->http, why, sizeof why);
        code = fail(t, AGT_EXIT_UPLOAD, "run %s was uploaded but the daemon refused it as the "
                                        "job's result: %s", id, why);
    }
    json_decref(run);
    return code;
}

int
agt_serve_lease(struct agt_serve *s, json_t *lease)
{
    struct task t = {.s = s};
    t.lease_id = json_string_value(json_object_get(lease, "lease_id"));
    t.job_id = json_string_value(json_object_get(lease, "job_id"));
    t.key = json_string_value(json_object_get(lease, "device_key"));
    t.model = json_string_value(json_object_get(lease, "model"));
    t.files = json_object_get(lease, "files");
    t.knobs = json_object_get(lease, "knobs");
    t.lease_seconds = (long)json_integer_value(json_object_get(lease, "lease_seconds"));
    if (t.lease_seconds <= 0)
        t.lease_seconds = 120;
    if (!agt_basename_valid(t.lease_id) || strlen(t.lease_id) > 100) {
        fprintf(stderr, "gpudiff-agent serve: the daemon's lease has no usable lease_id; "
                        "ignored\n");
        return 0;
    }
    if (t.job_id == NULL)
        t.job_id = "?";
    if (t.key == NULL)
        t.key = "?";
    fprintf(stderr, "gpudiff-agent serve: job %s on %s: leased (%s, attempt %" JSON_INTEGER_FORMAT
                    ")\n", t.job_id, t.key, t.lease_id,
            json_integer_value(json_object_get(lease, "attempt")));
    /* the first heartbeat at once: it confirms the lease, which is an offer until then */
    t.next_beat = now();
    heartbeat(&t);
    if (t.lost)
        return 0;
    if ((t.backend = agt_serve_backend_of(s, t.key)) == NULL)
        return fail(&t, AGT_EXIT_USAGE, "the lease is for device %s, which this agent (%s) "
                                        "does not serve", t.key, s->host);
    if (t.model == NULL || t.model[0] == '\0')
        return fail(&t, AGT_EXIT_USAGE, "the job names no model");
    char *argv[TASK_MAX_ARGS + 1] = {0};
    int argc = 0, code = 0;
    struct gd_err err = {0};
    add_arg(argv, &argc, s->self, NULL);
    add_arg(argv, &argc, "run", NULL);
    /* the knobs first: an unknown one fails the job before anything is fetched */
    if (agt_knob_args(t.knobs, argv, &argc, TASK_MAX_ARGS - 40, &err) != 0) {
        code = fail(&t, AGT_EXIT_USAGE, "%s", err.msg);
        goto done;
    }
    if (strlen(s->work) + strlen(t.lease_id) + 2 > sizeof t.dir) {
        code = fail(&t, AGT_EXIT_OUTPUT, "the work folder's path is too long");
        goto done;
    }
    memcpy(t.dir, s->work, strlen(s->work));
    t.dir[strlen(s->work)] = '/';
    memcpy(t.dir + strlen(s->work) + 1, t.lease_id, strlen(t.lease_id) + 1);
    rm_tree(t.dir);
    if (mkdir(t.dir, 0750) != 0) {
        code = fail(&t, AGT_EXIT_OUTPUT, "mkdir %s: %s", t.dir, strerror(errno));
        t.dir[0] = '\0';
        goto done;
    }
    if (place_files(&t, argv, &argc, &err) != 0) {
        code = fail(&t, err.code == GD_EIO ? AGT_EXIT_UPLOAD : AGT_EXIT_INPUT, "%s", err.msg);
        goto done;
    }
    if (t.lost)
        goto done;
    if (*s->hard_stop) {
        code = agt_serve_release(s, t.lease_id, "serve was stopped while the files came");
        goto done;
    }
    add_arg(argv, &argc, "--out", "bundle");
    add_arg(argv, &argc, "--backend", t.backend);
    add_arg(argv, &argc, "--model-name", t.model);
    add_arg(argv, &argc, "--job", t.job_id);
    add_arg(argv, &argc, "--lease", t.lease_id);
    const char *k;
    json_t *v;
    json_object_foreach(s->labels, k, v) {
        char kv[600];
        snprintf(kv, sizeof kv, "%s=%s", k, json_string_value(v));
        add_arg(argv, &argc, "--env-label", kv);
    }
    add_arg(argv, &argc, "--server", s->up.server);
    if (s->up.cacert != NULL)
        add_arg(argv, &argc, "--cacert", s->up.cacert);
    if (s->up.insecure_http)
        add_arg(argv, &argc, "--insecure-http", NULL);
    char retries[16];
    snprintf(retries, sizeof retries, "%d", s->up.retries);
    add_arg(argv, &argc, "--retries", retries);
    if (argc + 1 >= TASK_MAX_ARGS) {
        code = fail(&t, AGT_EXIT_USAGE, "the job has too many knobs and files");
        goto done;
    }
    code = run_child(&t, argv);
done:
    if (t.dir[0] != '\0')
        rm_tree(t.dir);
    for (int i = 0; i < argc; i++)
        free(argv[i]);
    return code < 0 ? 0 : code;
}
