/*
 * cmd_serve.c: `gpudiff-agent serve`: an agent as a service. Registers one device per backend
 * with gpudiffd (key: --device-id, else HOST/BACKEND[:GPU-UUID] and the labels; the env `run`
 * records; the operator's labels; this serve's identity, kept in its cache), then long-polls
 * for leases and runs each (serve_task.c) until SIGTERM. Never a busy loop: an unreachable
 * daemon is retried with backoff (logged), an odd answer waited out. A lease that comes in
 * after a stop was asked for is given back at once.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "gpudiff/bundle.h"
#include "gpudiff/model.h"
#include "gpudiff/session.h"
#include "serve.h"

static volatile sig_atomic_t stop_flag, hard_stop_flag;

static void
on_signal(int sig)
{
    if (sig == SIGINT || stop_flag)
        hard_stop_flag = 1;
    stop_flag = 1;
}

static void
serve_usage(FILE *out)
{
    fprintf(out,
            "Usage: gpudiff-agent serve --server URL --backend B[,B...] [OPTIONS]\n\n"
            "Runs as a service: registers one device per backend with gpudiffd (key\n"
            "--device-id, else HOST/BACKEND, :GPU-UUID for cuda, and each --label as\n"
            "\" label.K=V\"; the env `run` records there; the --label pairs), then waits for\n"
            "jobs (`gpudiff-agent submit`) by long polls, which are also the devices'\n"
            "heartbeat. A key another serve holds while its device is live is refused (exit\n"
            "8, the message naming both). Each lease is confirmed by a heartbeat at once.\n"
            "For each job it is leased: downloads the job's files by SHA-256 into\n"
            "the cache (checked, written under a temporary name and renamed, so never a half\n"
            "file; kept for the next job), runs `gpudiff-agent run` with the job's knobs in a\n"
            "child process into a fresh bundle and uploads it, sending a heartbeat every\n"
            "lease_seconds/3 while it goes on, then reports `done` with the run id, or `fail`\n"
            "with the last line of the run's stderr and its exit code (a knob this agent does\n"
            "not know, a bad model, a crash of the engine: the job fails on this device,\n"
            "serve goes on). A lease the daemon took back (409 lease_lost) stops the child.\n"
            "An unreachable daemon is retried with backoff, each wait logged on stderr.\n"
            "SIGTERM: no new job; the current one is finished and reported, then serve exits\n"
            "0 (a second SIGTERM, or SIGINT, stops the child and gives the lease back: the\n"
            "task is pending again for this device, its attempt not counted).\n\n"
            "Required:\n"
            "  --backend B[,B...]  the backends to serve, each a device (cpu, cpu64, cuda;\n"
            "                      `gpudiff-agent --version` lists this build's)\n");
    agt_upload_usage(out);
    fprintf(out,
            "\nOptions:\n"
            "  --label K=V         an operator-given fact about this host's devices (gpu=sm_75,\n"
            "                      rack=b2), repeatable: sent with the registration (jobs\n"
            "                      --match labels.K) and recorded in each run's env.labels,\n"
            "                      which the daemon's device key includes\n"
            "  --host NAME         the host name the device keys start with (default: the\n"
            "                      system's host name)\n"
            "  --device-id ID      the device's key instead of the one made of host, backend,\n"
            "                      GPU and labels (ID/BACKEND with several backends); at\n"
            "                      most 500 bytes of text\n"
            "  --cache DIR         where job files are kept by hash, DIR/files/SHA256 (default:\n"
            "                      $CACHE_DIRECTORY, else $XDG_CACHE_HOME/gpudiff-agent, else\n"
            "                      ~/.cache/gpudiff-agent), and this serve's identity,\n"
            "                      DIR/serve-id, which makes a restart the same serve\n"
            "  --work DIR          where each job's bundle is made, DIR/LEASE_ID, removed after\n"
            "                      the job (default: $STATE_DIRECTORY/work, else CACHE/work)\n"
            "  --once              exit after the first job (0 when it was reported)\n"
            "  --poll-wait S       how long one long poll waits for work, 0 to 60 s (default 30)\n"
            "  --max-download-rate BYTES  the most bytes per second a job file downloads at\n"
            "                      (K, M, G: powers of 1024; default: no limit), to spare a\n"
            "                      shared link. Heartbeats go on during a download, on their\n"
            "                      own connection: a large model does not lose the lease\n"
            "  -h, --help          this help\n\n"
            "The token: --token, or better " AGT_TOKEN_ENV " (out of the process list; the\n"
            "child runs get it the same way). Every request follows the TLS rules above.\n\n");
    agt_print_exit_codes(out);
}

const char *
agt_serve_backend_of(const struct agt_serve *s, const char *key)
{
    for (int i = 0; key != NULL && i < s->n_backends; i++)
        if (strcmp(s->keys[i], key) == 0)
            return s->backends[i];
    return NULL;
}

static int
add_backends(struct agt_serve *s, char *list)
{
    for (char *save = NULL, *b = strtok_r(list, ",", &save); b != NULL;
         b = strtok_r(NULL, ",", &save)) {
        if (agt_backend_check("serve", b) != 0)
            return -1;
        for (int i = 0; i < s->n_backends; i++)
            if (strcmp(s->backends[i], b) == 0) {
                fprintf(stderr, "gpudiff-agent serve: --backend %s is given twice\n", b);
                return -1;
            }
        if (s->n_backends == SERVE_MAX_DEVICES) {
            fprintf(stderr, "gpudiff-agent serve: at most %d backends\n", SERVE_MAX_DEVICES);
            return -1;
        }
        s->backends[s->n_backends++] = b;
    }
    return 0;
}

/* The first folder of a systemd list ("a:b") in out, or "" when the variable is unset. */
static void
env_dir(const char *var, char *out, size_t size)
{
    const char *v = getenv(var);
    size_t n = v != NULL ? strcspn(v, ":") : 0;
    snprintf(out, size, "%.*s", (int)n, v != NULL ? v : "");
}

static int
mkdir_p(const char *path)
{
    char buf[PATH_MAX];
    snprintf(buf, sizeof buf, "%s", path);
    for (char *p = buf + 1; *p; p++)
        if (*p == '/') {
            *p = '\0';
            if (mkdir(buf, 0750) != 0 && errno != EEXIST)
                return -1;
            *p = '/';
        }
    return mkdir(buf, 0750) != 0 && errno != EEXIST ? -1 : 0;
}

/*
 * This serve's identity: a UUID kept in CACHE/serve-id, made at the first start, so that a
 * restarted serve is the same serve to the daemon (its devices' keys are its own, and its
 * old leases are known lost). The file stays locked while serve runs: a second serve on the
 * same cache gets an identity of its own for this run (and is told), so two running serves
 * never pass for one. 0, or -1 with the message printed.
 */
static int
serve_identity(struct agt_serve *s)
{
    char path[PATH_MAX + 16];
    snprintf(path, sizeof path, "%s/serve-id", s->cache);
    struct gd_err err = {0};
    int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (fd < 0) {
        fprintf(stderr, "gpudiff-agent serve: %s: %s\n", path, strerror(errno));
        return -1;
    }
    if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
        close(fd);
        if (gd_uuid_v4(s->serve_id, &err) != 0) {
            fprintf(stderr, "gpudiff-agent serve: %s\n", err.msg);
            return -1;
        }
        fprintf(stderr,
                "gpudiff-agent serve: another serve runs on the cache %s: this one is "
                "serve %s for this run only\n",
                s->cache, s->serve_id);
        return 0;
    }
    char buf[64] = "";
    ssize_t n = read(fd, buf, sizeof buf - 1);
    buf[n > 0 ? n : 0] = '\0';
    buf[strcspn(buf, "\n")] = '\0';
    int ok = strlen(buf) == 36;
    for (int i = 0; ok && i < 36; i++)
        ok = (i == 8 || i == 13 || i == 18 || i == 23) ? buf[i] == '-'
                                                       : strchr("0123456789abcdef", buf[i]) != NULL;
    if (ok) {
        memcpy(s->serve_id, buf, 37);
    } else {
        char line[40];
        if (gd_uuid_v4(s->serve_id, &err) != 0) {
            fprintf(stderr, "gpudiff-agent serve: %s\n", err.msg);
            close(fd);
            return -1;
        }
        int len = snprintf(line, sizeof line, "%s\n", s->serve_id);
        if (ftruncate(fd, 0) != 0 || pwrite(fd, line, (size_t)len, 0) != len || fsync(fd) != 0) {
            fprintf(stderr, "gpudiff-agent serve: cannot write %s: %s\n", path, strerror(errno));
            close(fd);
            return -1;
        }
    }
    s->serve_id_fd = fd;
    return 0;
}

/* 0, 1 after --help, -1 after a usage error (printed). */
static int
serve_parse(int argc, char **argv, struct agt_serve *s)
{
    enum {
        O_BACKEND = 256,
        O_LABEL,
        O_HOST,
        O_CACHE,
        O_WORK,
        O_ONCE,
        O_POLL_WAIT,
        O_RATE,
        O_DEVICE_ID
    };
    static const struct option longopts[] = {
        AGT_UPLOAD_LONGOPTS,
        {"backend", required_argument, NULL, O_BACKEND},
        {"label", required_argument, NULL, O_LABEL},
        {"host", required_argument, NULL, O_HOST},
        {"cache", required_argument, NULL, O_CACHE},
        {"work", required_argument, NULL, O_WORK},
        {"once", no_argument, NULL, O_ONCE},
        {"poll-wait", required_argument, NULL, O_POLL_WAIT},
        {"max-download-rate", required_argument, NULL, O_RATE},
        {"device-id", required_argument, NULL, O_DEVICE_ID},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    const char *cache = NULL, *work = NULL;
    int c;
    char *end;
    optind = 1;
    while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
        int taken = agt_upload_flag("serve", c, optarg, &s->up);
        if (taken < 0)
            return -1;
        if (taken > 0)
            continue;
        switch (c) {
        case O_BACKEND:
            if (add_backends(s, optarg) != 0)
                return -1;
            break;
        case O_LABEL:
            if (agt_kv_set(s->labels, "serve", "--label", optarg) != 0)
                return -1;
            break;
        case O_HOST:
            if (!agt_basename_valid(optarg) || strlen(optarg) >= sizeof s->host) {
                fprintf(stderr, "gpudiff-agent serve: --host takes a name without '/'\n");
                return -1;
            }
            snprintf(s->host, sizeof s->host, "%s", optarg);
            break;
        case O_DEVICE_ID: {
            int ok = optarg[0] != '\0' && strlen(optarg) <= 500;
            for (const char *p = optarg; ok && *p; p++)
                ok = (unsigned char)*p >= 0x20 && *p != 0x7f;
            if (!ok) {
                fprintf(stderr, "gpudiff-agent serve: --device-id takes 1 to 500 bytes of text "
                                "without control characters\n");
                return -1;
            }
            s->device_id = optarg;
            break;
        }
        case O_CACHE:
            cache = optarg;
            break;
        case O_WORK:
            work = optarg;
            break;
        case O_ONCE:
            s->once = 1;
            break;
        case O_POLL_WAIT: {
            long v = strtol(optarg, &end, 10);
            if (*optarg == '\0' || *end != '\0' || v < 0 || v > 60) {
                fprintf(stderr, "gpudiff-agent serve: --poll-wait takes 0 to 60, not %s\n",
                        optarg);
                return -1;
            }
            s->poll_wait = (int)v;
            break;
        }
        case O_RATE:
            if (agt_parse_size(optarg, &s->max_download_rate) != 0 ||
                s->max_download_rate < 1024) {
                fprintf(stderr, "gpudiff-agent serve: --max-download-rate takes bytes per "
                                "second, 1K or more (e.g. 500K, 20M), not %s\n", optarg);
                return -1;
            }
            break;
        case 'h':
            serve_usage(stdout);
            return 1;
        default:
            fprintf(stderr, "Try `gpudiff-agent serve --help`.\n");
            return -1;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "gpudiff-agent serve: unexpected argument %s\n", argv[optind]);
        return -1;
    }
    if (s->n_backends == 0) {
        fprintf(stderr, "gpudiff-agent serve: --backend is required (e.g. --backend cpu)\n");
        return -1;
    }
    struct gd_err err = {0};
    if (agt_upload_opts_check(&s->up, &err) != 0) {
        fprintf(stderr, "gpudiff-agent serve: %s\n", err.msg);
        return -1;
    }
    if (s->host[0] == '\0' && (gethostname(s->host, sizeof s->host - 1) != 0 ||
                               !agt_basename_valid(s->host)))
        snprintf(s->host, sizeof s->host, "localhost");
    char dflt[PATH_MAX];
    if (cache == NULL) {
        env_dir("CACHE_DIRECTORY", dflt, sizeof dflt);
        if (dflt[0] == '\0' && getenv("XDG_CACHE_HOME") != NULL)
            snprintf(dflt, sizeof dflt, "%s/gpudiff-agent", getenv("XDG_CACHE_HOME"));
        if (dflt[0] == '\0' && getenv("HOME") != NULL)
            snprintf(dflt, sizeof dflt, "%s/.cache/gpudiff-agent", getenv("HOME"));
        cache = dflt[0] != '\0' ? dflt : "gpudiff-agent-cache";
    }
    snprintf(s->cache, sizeof s->cache, "%s", cache);
    if (work == NULL) {
        env_dir("STATE_DIRECTORY", dflt, sizeof dflt);
        if (dflt[0] != '\0')
            snprintf(s->work, sizeof s->work, "%.*s/work", (int)sizeof s->work - 8, dflt);
        else
            snprintf(s->work, sizeof s->work, "%.*s/work", (int)sizeof s->work - 8, s->cache);
    } else {
        snprintf(s->work, sizeof s->work, "%s", work);
    }
    char files[PATH_MAX + 8];
    snprintf(files, sizeof files, "%s/files", s->cache);
    if (mkdir_p(files) != 0 || mkdir_p(s->work) != 0) {
        fprintf(stderr, "gpudiff-agent serve: cannot make %s or %s: %s\n", files, s->work,
                strerror(errno));
        return -1;
    }
    /* absolute: the job's links point into the cache, and its run starts in its folder */
    char abs[PATH_MAX];
    if (realpath(s->cache, abs) == NULL || strlen(abs) >= sizeof s->cache - 8) {
        fprintf(stderr, "gpudiff-agent serve: %s: %s\n", s->cache, strerror(errno));
        return -1;
    }
    memcpy(s->cache, abs, strlen(abs) + 1);
    if (realpath(s->work, abs) == NULL || strlen(abs) >= sizeof s->work - 128) {
        fprintf(stderr, "gpudiff-agent serve: %s: %s\n", s->work, strerror(errno));
        return -1;
    }
    memcpy(s->work, abs, strlen(abs) + 1);
    return serve_identity(s);
}

/* What `run` records as env on backend b: a session opened on a one-node model. */
static json_t *
probe_env(const char *backend, struct gd_err *err)
{
    static const char model[] =
        "{\"format\":\"gpudiff-model\",\"version\":1,\"name\":\"serve-probe\","
        "\"inputs\":[{\"name\":\"x\",\"dtype\":\"float32\",\"shape\":[1]}],"
        "\"nodes\":[{\"name\":\"r\",\"op\":\"Relu\",\"inputs\":[\"x\"]}],\"outputs\":[\"r\"]}";
    struct gd_model_opts mo = {0};
    struct gd_graph *g = NULL;
    struct gd_knobs knobs;
    gd_knobs_init(&knobs);
    if (gd_model_parse(model, sizeof model - 1, "serve's probe", NULL, &mo, &g, err) != 0)
        return NULL;
    struct gd_session *sess = gd_session_new(g, backend, &knobs, err);
    json_t *env = NULL;
    if (sess != NULL) {
        env = json_object();
        const struct gd_env *e = gd_session_env(sess);
        for (int i = 0; i < e->n; i++)
            json_object_set_new(env, e->items[i].key, json_string(e->items[i].value));
        gd_session_free(sess);
    }
    gd_graph_free(g);
    return env;
}

/* POST /api/v1/agents until it answers; an exit code (0: s->agent_id is set). */
static int
register_agent(struct agt_serve *s)
{
    struct gd_err err = {0};
    json_t *devices = json_array();
    for (int i = 0; i < s->n_backends; i++) {
        json_t *env = probe_env(s->backends[i], &err);
        if (env == NULL) {
            fprintf(stderr, "gpudiff-agent serve: backend %s does not open: %s\n",
                    s->backends[i], err.msg);
            json_decref(devices);
            return AGT_EXIT_RUN;
        }
        if (agt_device_key(s->device_id, s->n_backends, s->host, s->backends[i], env, s->labels,
                           SERVE_KEY_MAX, s->keys[i], sizeof s->keys[i], &err) != 0) {
            fprintf(stderr, "gpudiff-agent serve: %s\n", err.msg);
            json_decref(env);
            json_decref(devices);
            return AGT_EXIT_USAGE;
        }
        for (int k = 0; k < i; k++)
            if (strcmp(s->keys[k], s->keys[i]) == 0) {
                fprintf(stderr,
                        "gpudiff-agent serve: backends %s and %s have one device key "
                        "%s\n",
                        s->backends[k], s->backends[i], s->keys[i]);
                json_decref(env);
                json_decref(devices);
                return AGT_EXIT_USAGE;
            }
        if (json_object_size(s->labels) > 0)
            json_object_set(env, "labels", s->labels);
        json_array_append_new(devices, json_pack("{s:s, s:s, s:o, s:O}", "key", s->keys[i],
                                                 "backend", s->backends[i], "env", env,
                                                 "labels", s->labels));
    }
    json_t *body = json_pack("{s:s, s:s, s:s, s:o}", "host", s->host, "agent_version", gd_version(),
                             "serve_id", s->serve_id, "devices", devices);
    char *text = json_dumps(body, JSON_COMPACT);
    json_decref(body);
    int code = AGT_EXIT_UPLOAD;
    while (!*s->stop) {
        struct agt_http_req r = {.method = "POST", .path = "/api/v1/agents", .json = text,
                                 .timeout = 60};
        long status;
        s->http.stop = s->stop;
        code = agt_http_call(&s->http, &r, -1, &status, &err);
        s->http.stop = NULL;
        if (code != 0)
            break;
        json_t *a = agt_http_json(&s->http);
        const char *id = json_string_value(json_object_get(a, "agent_id"));
        if (status == 200 && id != NULL && agt_basename_valid(id) && strlen(id) < 100) {
            snprintf(s->agent_id, sizeof s->agent_id, "%s", id);
            fprintf(stderr,
                    "gpudiff-agent serve: registered as agent %s (serve %s) with %d "
                    "device%s:",
                    id, s->serve_id, s->n_backends, s->n_backends == 1 ? "" : "s");
            for (int i = 0; i < s->n_backends; i++)
                fprintf(stderr, " \"%s\"", s->keys[i]);
            fprintf(stderr, "\n");
            json_decref(a);
            free(text);
            return 0;
        }
        char why[400];
        agt_http_error(&s->http, why, sizeof why);
        if (status == 409) {
            /* another serve holds a key while its device is live: not ours to take */
            json_t *held = json_object_get(json_object_get(a, "error"), "held_by");
            fprintf(stderr, "gpudiff-agent serve: the daemon refused the registration: %s\n", why);
            if (json_is_object(held))
                fprintf(stderr,
                        "gpudiff-agent serve: device %s (\"%s\") is agent %s's, of "
                        "serve %s on host %s\n",
                        json_string_value(json_object_get(held, "device_id")),
                        json_string_value(json_object_get(held, "key")),
                        json_string_value(json_object_get(held, "agent_id")),
                        json_is_string(json_object_get(held, "serve_id"))
                            ? json_string_value(json_object_get(held, "serve_id"))
                            : "unknown",
                        json_string_value(json_object_get(held, "host")));
            json_decref(a);
            free(text);
            return AGT_EXIT_UPLOAD;
        }
        json_decref(a);
        fprintf(stderr, "gpudiff-agent serve: POST /api/v1/agents: the daemon answered %ld %s; "
                        "trying again in 30 s\n", status, why);
        agt_sleep(30, s->stop);
    }
    if (code != 0 && !*s->stop)
        fprintf(stderr, "gpudiff-agent serve: %s\n", err.msg);
    free(text);
    return *s->stop ? AGT_EXIT_OK : code;
}

/* The poll loop; an exit code. */
static int
serve_loop(struct agt_serve *s)
{
    char path[300];
    int odd = 0;
    for (;;) {
        if (*s->stop)
            return AGT_EXIT_OK;
        if (s->agent_id[0] == '\0') {
            int code = register_agent(s);
            if (code != 0 || *s->stop)
                return code;
            snprintf(path, sizeof path, "/api/v1/agents/%s/poll?wait=%d", s->agent_id,
                     s->poll_wait);
        }
        struct agt_http_req r = {.method = "POST", .path = path, .json = "{}",
                                 .timeout = s->poll_wait + 30};
        long status;
        struct gd_err err = {0};
        s->http.stop = s->stop;
        int code = agt_http_call(&s->http, &r, -1, &status, &err);
        s->http.stop = NULL;
        if (*s->stop) {
            /* a lease that came in as the stop was asked for is not ours to run: give it back */
            json_t *lease = code == 0 && status == 200 ? agt_http_json(&s->http) : NULL;
            const char *id = json_string_value(json_object_get(lease, "lease_id"));
            if (id != NULL && agt_basename_valid(id) && strlen(id) < 100)
                agt_serve_release(s, id, "serve is stopping");
            json_decref(lease);
            return AGT_EXIT_OK;
        }
        if (code != 0) {
            fprintf(stderr, "gpudiff-agent serve: %s\n", err.msg);
            return code;
        }
        if (status == 204) {
            odd = 0;
            continue;
        }
        if (status == 200) {
            odd = 0;
            json_t *lease = agt_http_json(&s->http);
            code = agt_serve_lease(s, lease);
            json_decref(lease);
            if (code != 0 || s->once)
                return code;
            continue;
        }
        char why[400];
        agt_http_error(&s->http, why, sizeof why);
        if (status == 404) {
            fprintf(stderr, "gpudiff-agent serve: the daemon does not know agent %s (%s): "
                            "registering again\n", s->agent_id, why);
            s->agent_id[0] = '\0';
            continue;
        }
        double wait = agt_backoff_delay(odd++, 1, 60, 0.5);
        fprintf(stderr, "gpudiff-agent serve: POST %s: the daemon answered %ld %s; polling "
                        "again in %.1f s\n", path, status, why, wait);
        agt_sleep(wait, s->stop);
    }
}

int
agt_cmd_serve(int argc, char **argv)
{
    struct agt_serve s;
    memset(&s, 0, sizeof s);
    agt_upload_opts_init(&s.up);
    s.up.who = "serve";
    s.poll_wait = 30;
    s.labels = json_object();
    s.stop = &stop_flag;
    s.hard_stop = &hard_stop_flag;
    s.serve_id_fd = -1;
    int code;
    int prc = serve_parse(argc, argv, &s);
    if (prc != 0) {
        code = prc > 0 ? AGT_EXIT_OK : AGT_EXIT_USAGE;
        goto done;
    }
    agt_log_init(0);
    ssize_t n = readlink("/proc/self/exe", s.self, sizeof s.self - 1);
    if (n <= 0) {
        fprintf(stderr, "gpudiff-agent serve: cannot find this program (/proc/self/exe): %s\n",
                strerror(errno));
        code = AGT_EXIT_INTERNAL;
        goto done;
    }
    s.self[n] = '\0';
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);
    struct gd_err err = {0};
    if (agt_http_open(&s.http, &s.up, "serve", &err) != 0 ||
        agt_http_open(&s.beat, &s.up, "serve-beat", &err) != 0) {
        fprintf(stderr, "gpudiff-agent serve: %s\n", err.msg);
        code = AGT_EXIT_INTERNAL;
        goto done;
    }
    fprintf(stderr, "gpudiff-agent serve: %s, cache %s, work %s\n", s.up.server, s.cache,
            s.work);
    code = serve_loop(&s);
    if (stop_flag)
        fprintf(stderr, "gpudiff-agent serve: stopped by a signal\n");
done:
    agt_http_close(&s.http);
    agt_http_close(&s.beat);
    json_decref(s.labels);
    if (s.serve_id_fd >= 0)
        close(s.serve_id_fd);
    return code;
}
