/*
 * bench_load.c: gpudiffd under load. Starts a daemon of this build (or --gpudiffd PATH) on
 * loopback with a fresh database, stores two pairs of 200-layer runs (64 x 64 float32, the
 * second of each pair moved by 1e-6 in every 8th value), sets a baseline for the model the
 * uploaders push to (so every finished run queues a comparison; not with --no-baseline),
 * and then for --seconds:
 *
 *   --uploaders clients (64) each push run after run: POST run.json, PUT its layers
 *     (--layers of 16 x 16 float32, new data each), POST finish; every answer must be 2xx;
 *   one prober asks GET /healthz every 10 ms, one the cached diff of the first pair every
 *     20 ms, one an uncached diff of the second pair every --uncached-every seconds (0.1; a
 *     new atol each time, so each is computed), and, with --mixed, one more a matrix, a
 *     layer download or a run every 50 ms (what the dashboard reads);
 *
 * and prints each prober's p50, p99 and largest latency with the targets of issue 16, the
 * upload rate and errors, the daemon's RSS (anonymous and file-backed) at the start and the
 * end, and with --sample S a line of RSS every S seconds (the soak: --seconds 1800
 * --sample 60 --rate 20 --mixed --uncached-every 2). Requests are plain HTTP/1.1 over sockets: one
 * connection each, as gpudiffd serves them. At the end every run pushed is accounted for: it
 * is compared with the baseline (its diff cached) or its comparison is still queued; any
 * other is a comparison dropped. Exit status 1 when an upload or probe failed or a
 * comparison was dropped.
 *
 * Issue 24: --daemon-cpus and --load-cpus pin the daemon and these clients to CPUs of their
 * own (sched_setaffinity, as taskset does: `--daemon-cpus 0 --load-cpus 1`), so the load's
 * own CPU time does not count in the daemon's latencies; --db URI runs the daemon on that
 * database (PostgreSQL: tests/bench/bench_latency.sh makes one) instead of a fresh SQLite file.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <jansson.h>

#include "gpudiff/hash.h"
#include "gpudiff/io.h"
#include "bench_server.h"
#include "bench_util.h"

static int port;
static const char *token;
static double until;
static atomic_int upload_errors;
static atomic_long runs_done;
static atomic_long run_counter;
static int n_layers = 8;
static double rate_cap; /* runs per second over all uploaders; 0: none */

/* ---- one request on its own connection ---- */

struct answer {
    int status;
    char *body; /* malloc'd, NUL-terminated */
    size_t len;
};

static int
http(const char *method, const char *target, const char *headers, const void *body, size_t len,
     struct answer *out)
{
    memset(out, 0, sizeof *out);
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0)
        return -1;
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    if (connect(fd, (struct sockaddr *)&sa, sizeof sa) != 0) {
        close(fd);
        return -1;
    }
    char head[1024];
    int n = snprintf(head, sizeof head,
                     "%s %s HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer %s\r\n%s"
                     "Connection: close\r\nContent-Length: %zu\r\n\r\n",
                     method, target, token, headers, len);
    if (send(fd, head, (size_t)n, MSG_NOSIGNAL) != n ||
        (len > 0 && send(fd, body, len, MSG_NOSIGNAL) != (ssize_t)len)) {
        close(fd);
        return -1;
    }
    size_t cap = 65536, got = 0;
    char *buf = malloc(cap + 1);
    for (;;) {
        if (got == cap) {
            cap *= 2;
            buf = realloc(buf, cap + 1);
        }
        ssize_t r = recv(fd, buf + got, cap - got, 0);
        if (r <= 0)
            break;
        got += (size_t)r;
    }
    close(fd);
    buf[got] = '\0';
    char *sep = strstr(buf, "\r\n\r\n");
    if (got < 12 || strncmp(buf, "HTTP/1.1 ", 9) != 0 || sep == NULL) {
        free(buf);
        return -1;
    }
    out->status = atoi(buf + 9);
    out->len = got - (size_t)(sep + 4 - buf);
    memmove(buf, sep + 4, out->len + 1);
    out->body = buf;
    return 0;
}

static int
http_ok(const char *method, const char *target, const char *headers, const void *body, size_t len)
{
    struct answer a;
    int rc = http(method, target, headers, body, len, &a);
    int ok = rc == 0 && a.status >= 200 && a.status < 300;
    if (!ok && getenv("BENCH_VERBOSE") != NULL)
        fprintf(stderr, "bench_load: %s %s: %d %.200s\n", method, target, a.status,
                a.body ? a.body : "");
    free(a.body);
    return ok ? 0 : -1;
}

/* ---- runs made here ---- */

static uint64_t
next_rand(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

struct run {
    char id[40];
    char *json;
    int n;
    unsigned char **npy;
    size_t *npy_len;
};

static void
run_free(struct run *r)
{
    for (int i = 0; i < r->n; i++)
        free(r->npy[i]);
    free(r->npy);
    free(r->npy_len);
    free(r->json);
}

/*
 * A run of n layers of rows x cols float32 from seed; with perturb every 8th value moved by
 * that relative amount (the second run of a pair).
 */
static void
run_make(struct run *r, const char *model, int n, int64_t rows, int64_t cols, uint64_t seed,
         uint64_t id_salt, double perturb)
{
    memset(r, 0, sizeof *r);
    uint64_t s = seed | 1, t = (id_salt * 0x9e3779b97f4a7c15ULL) | 1;
    uint64_t a = next_rand(&t), b = next_rand(&t);
    snprintf(r->id, sizeof r->id, "%08x-%04x-4%03x-8%03x-%012llx", (unsigned)(a >> 32),
             (unsigned)(a >> 16) & 0xffff, (unsigned)a & 0xfff, (unsigned)(b >> 52) & 0xfff,
             (unsigned long long)(b & 0xffffffffffffULL));
    r->n = n;
    r->npy = calloc((size_t)n, sizeof *r->npy);
    r->npy_len = calloc((size_t)n, sizeof *r->npy_len);
    size_t cap = 4096 + (size_t)n * 400;
    r->json = malloc(cap);
    size_t used = (size_t)snprintf(r->json, cap,
                                   "{\"format\":\"gpudiff-run\",\"version\":1,\"id\":\"%s\","
                                   "\"created_at\":\"2026-01-01T00:00:00Z\",\"model\":{\"name\":"
                                   "\"%s\",\"sha256\":null},\"backend\":\"cpu\",\"layers\":[",
                                   r->id, model);
    int64_t shape[2] = {rows, cols};
    size_t data_len = (size_t)(rows * cols) * 4;
    for (int i = 0; i < n; i++) {
        unsigned char hdr[256];
        size_t hlen = 0;
        gd_npy_header_write(GD_F32, 2, shape, hdr, sizeof hdr, &hlen, NULL);
        r->npy_len[i] = hlen + data_len;
        r->npy[i] = malloc(r->npy_len[i]);
        memcpy(r->npy[i], hdr, hlen);
        float *v = (float *)(void *)(r->npy[i] + hlen);
        for (int64_t k = 0; k < rows * cols; k++) {
            uint64_t x = next_rand(&s);
            float f = (float)(((double)(x & 0xffffff) / 16777216.0 - 0.5) * 4.0);
            if (perturb > 0 && k % 8 == 0)
                f = (float)(f * (1.0 + perturb));
            memcpy(&v[k], &f, 4);
        }
        char sha[65];
        gd_sha256_hex(v, data_len, sha, NULL);
        used += (size_t)snprintf(r->json + used, cap - used,
                                 "%s{\"index\":%d,\"name\":\"l%d\",\"op\":\"Relu\",\"dtype\":"
                                 "\"float32\",\"shape\":[%lld,%lld],\"file\":\"layers/%04d-l%d"
                                 ".npy\",\"sha256\":\"%s\"}",
                                 i ? "," : "", i, i, (long long)rows, (long long)cols, i, i, sha);
    }
    snprintf(r->json + used, cap - used, "]}");
}

static int
run_push(const struct run *r)
{
    char target[128];
    if (http_ok("POST", "/api/v1/runs", "Content-Type: application/json\r\n", r->json,
                strlen(r->json)) != 0)
        return -1;
    for (int i = 0; i < r->n; i++) {
        snprintf(target, sizeof target, "/api/v1/runs/%s/layers/%d", r->id, i);
        if (http_ok("PUT", target, "", r->npy[i], r->npy_len[i]) != 0)
            return -1;
    }
    snprintf(target, sizeof target, "/api/v1/runs/%s/finish", r->id);
    return http_ok("POST", target, "", NULL, 0);
}

/* ---- the load ---- */

static void *
uploader(void *arg)
{
    (void)arg;
    while (bench_now_s() < until) {
        long k = atomic_fetch_add(&run_counter, 1);
        if (rate_cap > 0) {
            /* Run k starts no earlier than k / rate seconds after the start. */
            static double t0;
            if (k == 0)
                t0 = bench_now_s();
            double at = t0 + (double)k / rate_cap;
            while (bench_now_s() < at && bench_now_s() < until)
                usleep(2000);
            if (bench_now_s() >= until)
                break;
        }
        struct run r;
        run_make(&r, "load", n_layers, 16, 16, 1000 + (uint64_t)k, 1000000 + (uint64_t)k, 0);
        if (run_push(&r) != 0)
            atomic_fetch_add(&upload_errors, 1);
        else
            atomic_fetch_add(&runs_done, 1);
        run_free(&r);
    }
    return NULL;
}

struct prober {
    pthread_t thread;
    const char *name;
    double target_ms; /* issue 16's p99 target; 0: none */
    double every;     /* seconds between the starts of two requests */
    char targets[4][256];
    int n_targets;
    int uncached; /* a new atol each time */
    double *lat;
    size_t n, cap;
    int errors;
    int rt_failed; /* SCHED_FIFO was refused (not root) */
};

/*
 * With --load-cpus the probers are the measuring instrument: they run at a real-time
 * priority (SCHED_FIFO 10, as root) above the 64 uploaders and whatever else the machine
 * runs on their CPU, so a latency is the daemon's time, not the prober's wait for a turn.
 * They sleep between requests, so they never hold the CPU long.
 */
static int probe_rt;

static void *
probe_loop(void *arg)
{
    struct prober *p = arg;
    long k = 0;
    if (probe_rt) {
        struct sched_param sp = {.sched_priority = 10};
        if (pthread_setschedparam(pthread_self(), SCHED_FIFO, &sp) != 0)
            p->rt_failed = 1;
    }
    while (bench_now_s() < until) {
        double t0 = bench_now_s();
        char target[320];
        if (p->uncached)
            snprintf(target, sizeof target, "%s&atol=%ld", p->targets[0], 1000 + k);
        else
            snprintf(target, sizeof target, "%s", p->targets[k % p->n_targets]);
        k++;
        struct answer a;
        int rc = http("GET", target, "", NULL, 0, &a);
        double ms = (bench_now_s() - t0) * 1e3;
        if (rc != 0 || a.status != 200) {
            p->errors++;
            if (getenv("BENCH_VERBOSE") != NULL)
                fprintf(stderr, "bench_load: %s: %d %.200s\n", target, a.status,
                        a.body ? a.body : "");
        } else {
            if (p->n == p->cap) {
                p->cap = p->cap ? p->cap * 2 : 1024;
                p->lat = realloc(p->lat, p->cap * sizeof *p->lat);
            }
            p->lat[p->n++] = ms;
        }
        free(a.body);
        double left = p->every - (bench_now_s() - t0);
        if (left > 0)
            usleep((useconds_t)(left * 1e6));
    }
    return NULL;
}

static void
rss(pid_t pid, double *anon, double *file)
{
    char path[64], line[256];
    snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
    FILE *f = fopen(path, "r");
    *anon = *file = 0;
    while (f != NULL && fgets(line, sizeof line, f) != NULL) {
        long kb;
        if (sscanf(line, "RssAnon: %ld", &kb) == 1)
            *anon = kb / 1024.0;
        else if (sscanf(line, "RssFile: %ld", &kb) == 1)
            *file = kb / 1024.0;
    }
    if (f != NULL)
        fclose(f);
}

static double
pct(double *v, size_t n, double q)
{
    if (n == 0)
        return 0;
    size_t i = (size_t)(q * (double)(n - 1) + 0.5);
    return v[i];
}

/*
 * The load model's runs, as the run list says (pages of 1000): against the baseline, each
 * compared (its diff cached) or pending (its comparison to come).
 */
static int
count_compared(long *compared, long *pending, long *listed)
{
    *compared = *pending = *listed = 0;
    for (long offset = 0;; offset += 1000) {
        char target[128];
        snprintf(target, sizeof target, "/api/v1/runs?model=load&limit=1000&offset=%ld", offset);
        struct answer a;
        if (http("GET", target, "", NULL, 0, &a) != 0 || a.status != 200) {
            free(a.body);
            return -1;
        }
        json_t *page = json_loadb(a.body, a.len, 0, NULL);
        free(a.body);
        json_t *runs = json_object_get(page, "runs");
        size_t i;
        json_t *r;
        json_array_foreach(runs, i, r)
        {
            const char *st =
                json_string_value(json_object_get(json_object_get(r, "against_baseline"), "state"));
            (*listed)++;
            *compared += st != NULL && strcmp(st, "compared") == 0;
            *pending += st != NULL && strcmp(st, "pending") == 0;
        }
        size_t n = json_array_size(runs);
        json_decref(page);
        if (n < 1000)
            return 0;
    }
}

/* The diff of the pair, asked once so that it is cached; its layer count is checked. */
static int
store_pair(const char *model, uint64_t seed, char a_id[40], char b_id[40])
{
    struct run a, b;
    run_make(&a, model, 200, 64, 64, seed, seed, 0);
    run_make(&b, model, 200, 64, 64, seed, seed + 1, 1e-6);
    int rc = run_push(&a) == 0 && run_push(&b) == 0 ? 0 : -1;
    snprintf(a_id, 40, "%s", a.id);
    snprintf(b_id, 40, "%s", b.id);
    run_free(&a);
    run_free(&b);
    return rc;
}

int
main(int argc, char **argv)
{
    double seconds = 60, sample = 0;
    int n_uploaders = 64, mixed = 0;
    const char *gpudiffd = GD_BUILDDIR "/gpudiffd";
    const char *extra[16] = {NULL};
    int n_extra = 0;
    enum {
        O_SECONDS = 256,
        O_UPLOADERS,
        O_LAYERS,
        O_GPUDIFFD,
        O_FLAG,
        O_SAMPLE,
        O_RATE,
        O_MIXED,
        O_UNCACHED,
        O_NO_BASELINE,
        O_DAEMON_CPUS,
        O_LOAD_CPUS,
        O_DB
    };
    const char *daemon_cpus = NULL, *load_cpus = NULL, *db_uri = NULL;
    int baseline = 1;
    double uncached_every = 0.1;
    static const struct option opts[] = {{"seconds", required_argument, NULL, O_SECONDS},
                                         {"uploaders", required_argument, NULL, O_UPLOADERS},
                                         {"layers", required_argument, NULL, O_LAYERS},
                                         {"gpudiffd", required_argument, NULL, O_GPUDIFFD},
                                         {"flag", required_argument, NULL, O_FLAG},
                                         {"sample", required_argument, NULL, O_SAMPLE},
                                         {"rate", required_argument, NULL, O_RATE},
                                         {"mixed", no_argument, NULL, O_MIXED},
                                         {"uncached-every", required_argument, NULL, O_UNCACHED},
                                         {"no-baseline", no_argument, NULL, O_NO_BASELINE},
                                         {"daemon-cpus", required_argument, NULL, O_DAEMON_CPUS},
                                         {"load-cpus", required_argument, NULL, O_LOAD_CPUS},
                                         {"db", required_argument, NULL, O_DB},
                                         {"help", no_argument, NULL, 'h'},
                                         {NULL, 0, NULL, 0}};
    int c;
    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        switch (c) {
        case O_SECONDS:
            seconds = atof(optarg);
            break;
        case O_UPLOADERS:
            n_uploaders = atoi(optarg);
            break;
        case O_LAYERS:
            n_layers = atoi(optarg);
            break;
        case O_GPUDIFFD:
            gpudiffd = optarg;
            break;
        case O_FLAG:
            if (n_extra < 15)
                extra[n_extra++] = optarg;
            break;
        case O_SAMPLE:
            sample = atof(optarg);
            break;
        case O_RATE:
            rate_cap = atof(optarg);
            break;
        case O_MIXED:
            mixed = 1;
            break;
        case O_UNCACHED:
            uncached_every = atof(optarg);
            break;
        case O_NO_BASELINE:
            baseline = 0;
            break;
        case O_DAEMON_CPUS:
            daemon_cpus = optarg;
            break;
        case O_LOAD_CPUS:
            load_cpus = optarg;
            break;
        case O_DB:
            db_uri = optarg;
            break;
        default:
            printf("usage: bench_load [--seconds N (60)] [--uploaders N (64)] [--layers N (8)]\n"
                   "                  [--rate RUNS_PER_S] [--mixed] [--sample SECONDS]\n"
                   "                  [--uncached-every SECONDS (0.1)] [--no-baseline]\n"
                   "                  [--daemon-cpus LIST] [--load-cpus LIST] [--db URI]\n"
                   "                  [--gpudiffd PATH] [--flag=--gpudiffd-flag ...]\n"
                   "gpudiffd under uploads: latency of /healthz, a cached and an uncached diff\n"
                   "(and with --mixed a matrix, a download, a run); --sample prints the\n"
                   "daemon's RSS every SECONDS (a soak). Exit 1 when a request failed.\n");
            return c == 'h' ? 0 : 2;
        }
    }
    if (seconds <= 0 || n_uploaders < 0 || n_uploaders > 512 || n_layers < 1) {
        fprintf(stderr, "bench_load: bad --seconds, --uploaders or --layers\n");
        return 2;
    }
    char dir[] = "/tmp/bench_load.XXXXXX";
    if (mkdtemp(dir) == NULL) {
        perror("mkdtemp");
        return 1;
    }
    struct bench_daemon d;
    struct gd_err err;
    struct bench_daemon_opts dopts = {db_uri, daemon_cpus};
    if (bench_daemon_start_opts(gpudiffd, dir, "load", extra, &dopts, &d, &err) != 0) {
        fprintf(stderr, "bench_load: %s\n", err.msg);
        return 1;
    }
    /* the clients, from here on (every thread below inherits it) */
    if (load_cpus != NULL && bench_pin(load_cpus, &err) != 0) {
        fprintf(stderr, "bench_load: %s\n", err.msg);
        bench_daemon_stop(&d);
        return 1;
    }
    if (daemon_cpus != NULL || load_cpus != NULL)
        printf("pinned: the daemon on CPUs %s, the load on CPUs %s\n",
               daemon_cpus ? daemon_cpus : "all", load_cpus ? load_cpus : "all");
    probe_rt = load_cpus != NULL;
    port = atoi(strrchr(d.url, ':') + 1);
    token = d.token;
    char admin_cmd[2048], admin[128] = "";
    snprintf(admin_cmd, sizeof admin_cmd, "'%s' token create --role admin --db '%s' 2>/dev/null",
             gpudiffd, d.db);
    FILE *pa = popen(admin_cmd, "r");
    if (pa != NULL && fgets(admin, sizeof admin, pa) != NULL)
        admin[strcspn(admin, "\n")] = '\0';
    if (pa != NULL)
        pclose(pa);
    token = admin; /* an admin may do all an agent may */

    char ca[40], cb[40], ua[40], ub[40];
    if (store_pair("pairs", 7, ca, cb) != 0 || store_pair("pairs", 9, ua, ub) != 0) {
        fprintf(stderr, "bench_load: storing the 200-layer runs failed\n");
        bench_daemon_stop(&d);
        return 1;
    }
    char target[256];
    snprintf(target, sizeof target, "/api/v1/diff?a=%s&b=%s", ca, cb);
    struct answer a;
    if (http("GET", target, "", NULL, 0, &a) != 0 || a.status != 200) {
        fprintf(stderr, "bench_load: the first diff failed\n");
        bench_daemon_stop(&d);
        return 1;
    }
    free(a.body);
    /* The uploaders' model gets a baseline: every run they finish queues a comparison. */
    struct run base;
    run_make(&base, "load", n_layers, 16, 16, 999, 999, 0);
    char body[128];
    snprintf(body, sizeof body, "{\"run\":\"%s\"}", base.id);
    if (run_push(&base) != 0 ||
        (baseline && http_ok("POST", "/api/v1/baseline?model=load",
                             "Content-Type: application/json\r\n", body, strlen(body)) != 0)) {
        fprintf(stderr, "bench_load: the baseline failed\n");
        bench_daemon_stop(&d);
        return 1;
    }
    run_free(&base);

    double anon0, file0;
    rss(d.pid, &anon0, &file0);
    double cpu0 = bench_cpu_seconds(d.pid), self0 = bench_cpu_seconds(getpid());
    double t_start = bench_now_s();
    until = t_start + seconds;
    struct prober probes[4];
    memset(probes, 0, sizeof probes);
    probes[0] = (struct prober){.name = "healthz", .target_ms = 10, .every = 0.01, .n_targets = 1};
    snprintf(probes[0].targets[0], 256, "/healthz");
    probes[1] =
        (struct prober){.name = "cached diff", .target_ms = 20, .every = 0.02, .n_targets = 1};
    snprintf(probes[1].targets[0], 256, "/api/v1/diff?a=%s&b=%s", ca, cb);
    probes[2] = (struct prober){.name = "uncached diff (200 layers)",
                                .target_ms = 500,
                                .every = uncached_every,
                                .n_targets = 1,
                                .uncached = 1};
    snprintf(probes[2].targets[0], 256, "/api/v1/diff?a=%s&b=%s&rtol=1e-5", ua, ub);
    int n_probes = 3;
    if (mixed) {
        probes[3] = (struct prober){.name = "matrix, download, run", .every = 0.05, .n_targets = 3};
        snprintf(probes[3].targets[0], 256, "/api/v1/matrix?model=pairs");
        snprintf(probes[3].targets[1], 256, "/api/v1/runs/%s/layers/7.npy", ca);
        snprintf(probes[3].targets[2], 256, "/api/v1/runs/%s", ub);
        n_probes = 4;
    }
    pthread_t *up = calloc((size_t)n_uploaders + 1, sizeof *up);
    for (int i = 0; i < n_uploaders; i++)
        pthread_create(&up[i], NULL, uploader, NULL);
    for (int i = 0; i < n_probes; i++)
        pthread_create(&probes[i].thread, NULL, probe_loop, &probes[i]);
    if (sample > 0) {
        printf("%8s %10s %10s %10s %8s\n", "seconds", "rss_anon", "rss_file", "runs", "errors");
        for (double next = t_start; next < until; next += sample) {
            while (bench_now_s() < next)
                usleep(100000);
            double an, fi;
            rss(d.pid, &an, &fi);
            printf("%8.0f %8.1f MB %8.1f MB %10ld %8d\n", bench_now_s() - t_start, an, fi,
                   (long)atomic_load(&runs_done),
                   atomic_load(&upload_errors) + probes[0].errors + probes[1].errors +
                       probes[2].errors);
            fflush(stdout);
        }
    }
    for (int i = 0; i < n_uploaders; i++)
        pthread_join(up[i], NULL);
    int rt_failed = 0;
    for (int i = 0; i < n_probes; i++) {
        pthread_join(probes[i].thread, NULL);
        rt_failed |= probes[i].rt_failed;
    }
    if (probe_rt)
        printf("probes: %s\n", rt_failed ? "SCHED_FIFO refused (not root): at normal priority"
                                         : "at SCHED_FIFO priority 10 on the load's CPUs");
    double elapsed = bench_now_s() - t_start;
    double cpu = bench_cpu_seconds(d.pid) - cpu0, self = bench_cpu_seconds(getpid()) - self0;
    double anon1, file1;
    rss(d.pid, &anon1, &file1);
    snprintf(target, sizeof target, "/metrics");
    long jobs = -1;
    char memory[1024] = "";
    if (http("GET", target, "", NULL, 0, &a) == 0) {
        const char *at = strstr(a.body, "\ngpudiffd_compare_jobs ");
        if (at != NULL)
            jobs = atol(at + strlen("\ngpudiffd_compare_jobs "));
        /* Where the daemon's memory is, as its /metrics says (MB). */
        static const char *const names[] = {"gpudiffd_malloc_bytes{state=\"in_use\"} ",
                                            "gpudiffd_malloc_bytes{state=\"free\"} ",
                                            "gpudiffd_sqlite_memory_bytes{stat=\"used\"} "};
        static const char *const labels[] = {"malloc in use", "malloc free", "sqlite"};
        size_t used = 0;
        for (int i = 0; i < 3; i++) {
            const char *m = strstr(a.body, names[i]);
            if (m != NULL)
                used += (size_t)snprintf(memory + used, sizeof memory - used, "%s%s %.1f MB",
                                         used ? ", " : "", labels[i],
                                         atof(m + strlen(names[i])) / 1048576.0);
        }
        free(a.body);
    }
    int failed = atomic_load(&upload_errors) > 0;
    printf("load: %d uploaders for %.0f s: %ld runs of %d layers (%.1f runs/s), %d failed\n",
           n_uploaders, elapsed, (long)atomic_load(&runs_done), n_layers,
           (double)atomic_load(&runs_done) / elapsed, atomic_load(&upload_errors));
    for (int i = 0; i < n_probes; i++) {
        struct prober *p = &probes[i];
        qsort(p->lat, p->n, sizeof *p->lat, bench_cmp_double);
        double p99 = pct(p->lat, p->n, 0.99);
        char verdict[64] = "";
        if (p->target_ms > 0)
            snprintf(verdict, sizeof verdict, "target p99 < %.0f ms: %s", p->target_ms,
                     p99 < p->target_ms ? "met" : "MISSED");
        printf("%-28s %6zu ok %3d failed  p50 %7.2f ms  p99 %7.2f ms  max %7.2f ms  %s\n", p->name,
               p->n, p->errors, pct(p->lat, p->n, 0.5), p99, p->n ? p->lat[p->n - 1] : 0.0,
               verdict);
        if (p->errors > 0)
            failed = 1;
        free(p->lat);
    }
    printf("rss: %.1f MB anonymous + %.1f MB file-backed at the start, %.1f + %.1f MB at the "
           "end\n",
           anon0, file0, anon1, file1);
    printf("cpu: the daemon %.1f s, these clients %.1f s, in %.0f s of 2 x %.0f s\n", cpu, self,
           elapsed, elapsed);
    if (memory[0] != '\0')
        printf("memory at the end: %s\n", memory);
    printf("compare jobs still queued at the end: %ld\n", jobs);
    if (baseline) {
        long compared = 0, pending = 0, listed = 0;
        if (count_compared(&compared, &pending, &listed) != 0) {
            printf("comparisons: the run list could not be read\n");
            failed = 1;
        } else {
            long dropped = pending - (jobs > 0 ? jobs : 0);
            printf("comparisons with the baseline: %ld runs, %ld compared, %ld still queued, "
                   "%ld dropped\n",
                   listed, compared, pending, dropped > 0 ? dropped : 0);
            if (dropped > 0 || listed < (long)atomic_load(&runs_done))
                failed = 1;
        }
    }
    free(up);
    bench_daemon_stop(&d);
    char rm[64];
    snprintf(rm, sizeof rm, "rm -rf %s", dir);
    if (getenv("BENCH_KEEP") != NULL) /* the daemon's log, to read its own request times */
        printf("kept %s (BENCH_KEEP)\n", dir);
    else if (system(rm) != 0)
        fprintf(stderr, "bench_load: could not remove %s\n", dir);
    return failed ? 1 : 0;
}
