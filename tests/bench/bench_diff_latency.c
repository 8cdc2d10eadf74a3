/*
 * bench_diff_latency.c: latency of GET /api/v1/diff once the diff is cached. Stores two
 * runs of 200 small layers (64 x 64 float32; the second moved by a relative 1e-6 in every
 * 8th value) in a daemon of this build on loopback (or one given with --server and
 * --token), asks for their diff once (computed and cached), then runs 32 client threads,
 * each with its own keep-alive libcurl handle, asking for it again and again for a number of
 * seconds. Prints p50, p99 and the largest latency, and requests per second; every answer
 * must be 200 and served from the cache.
 */
#include <getopt.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "bench_server.h"
#include "upload.h"
#include "bench_util.h"

struct client {
    pthread_t thread;
    const char *url;
    double until;
    double *lat; /* seconds of each request */
    size_t n, cap;
    int errors;
    int misses;
    size_t bytes;
};

static size_t
discard(char *p, size_t size, size_t n, void *user)
{
    (void)p;
    ((struct client *)user)->bytes += size * n;
    return size * n;
}

static size_t
header(char *p, size_t size, size_t n, void *user)
{
    if (size * n >= 13 && strncasecmp(p, "X-Cache: miss", 13) == 0)
        ((struct client *)user)->misses++;
    return size * n;
}

static void *
client_loop(void *arg)
{
    struct client *c = arg;
    CURL *h = curl_easy_init();
    if (h == NULL) {
        c->errors++;
        return NULL;
    }
    curl_easy_setopt(h, CURLOPT_URL, c->url);
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, discard);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, c);
    curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, header);
    curl_easy_setopt(h, CURLOPT_HEADERDATA, c);
    while (bench_now() < c->until) {
        double t = bench_now();
        CURLcode rc = curl_easy_perform(h);
        double dt = bench_now() - t;
        long status = 0;
        curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
        if (rc != CURLE_OK || status != 200) {
            c->errors++;
            continue;
        }
        if (c->n == c->cap) {
            size_t cap = c->cap ? c->cap * 2 : 4096;
            double *p = realloc(c->lat, cap * sizeof *p);
            if (p == NULL)
                break;
            c->lat = p;
            c->cap = cap;
        }
        c->lat[c->n++] = dt;
    }
    curl_easy_cleanup(h);
    return NULL;
}

static int
upload(const char *dir, const struct bench_daemon *d, struct gd_err *err)
{
    struct agt_upload_opts o;
    agt_upload_opts_init(&o);
    o.server = d->url;
    o.token = d->token;
    return agt_upload_bundle(dir, &o, NULL, err);
}

int
main(int argc, char **argv)
{
    enum { O_SECONDS = 256, O_CLIENTS, O_GPUDIFFD, O_SERVER, O_TOKEN, O_THREADS };
    static const struct option longopts[] = {
        {"seconds", required_argument, NULL, O_SECONDS},
        {"clients", required_argument, NULL, O_CLIENTS},
        {"threads", required_argument, NULL, O_THREADS},
        {"gpudiffd", required_argument, NULL, O_GPUDIFFD},
        {"server", required_argument, NULL, O_SERVER},
        {"token", required_argument, NULL, O_TOKEN},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    const char *gpudiffd = GD_BUILDDIR "/gpudiffd", *server = NULL, *token = NULL;
    const char *threads = NULL;
    double seconds = 10;
    int n_clients = 32, c;
    while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
        switch (c) {
        case O_SECONDS:
            seconds = atof(optarg);
            break;
        case O_CLIENTS:
            n_clients = atoi(optarg);
            break;
        case O_THREADS:
            threads = optarg;
            break;
        case O_GPUDIFFD:
            gpudiffd = optarg;
            break;
        case O_SERVER:
            server = optarg;
            break;
        case O_TOKEN:
            token = optarg;
            break;
        default:
            printf("Usage: bench_diff_latency [--seconds S] [--clients N] [--threads T]\n"
                   "                          [--gpudiffd PATH | --server URL --token T]\n"
                   "T: the daemon's --threads (default: its default).\n");
            return c == 'h' ? 0 : 2;
        }
    }
    if (!(seconds > 0) || n_clients < 1 || n_clients > 1024 || (server != NULL) != (token != NULL))
        return 2;
    char tmpl[256];
    snprintf(tmpl, sizeof tmpl, "%s/bench_diff.XXXXXX",
             getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    char *dir = mkdtemp(tmpl);
    if (dir == NULL) {
        perror("mkdtemp");
        return 1;
    }
    struct gd_err err = {0};
    char a_dir[512], b_dir[512];
    snprintf(a_dir, sizeof a_dir, "%s/a", dir);
    snprintf(b_dir, sizeof b_dir, "%s/b", dir);
    if (bench_bundle_make(a_dir, "bench-diff", 200, 64, 64, 0xabcdef, 1, 0, &err) != 0 ||
        bench_bundle_make(b_dir, "bench-diff", 200, 64, 64, 0xabcdef, 2, 1e-6, &err) != 0) {
        fprintf(stderr, "bench_diff_latency: %s\n", err.msg);
        return 1;
    }
    struct bench_daemon d;
    memset(&d, 0, sizeof d);
    if (server != NULL) {
        snprintf(d.url, sizeof d.url, "%s", server);
        snprintf(d.token, sizeof d.token, "%s", token);
    } else {
        char flag[64];
        snprintf(flag, sizeof flag, "--threads=%s", threads ? threads : "4");
        const char *extra[] = {flag, NULL};
        if (bench_daemon_start(gpudiffd, dir, "daemon", extra, &d, &err) != 0) {
            fprintf(stderr, "bench_diff_latency: %s\n", err.msg);
            return 1;
        }
    }
    curl_global_init(CURL_GLOBAL_DEFAULT);
    if (upload(a_dir, &d, &err) != 0 || upload(b_dir, &d, &err) != 0) {
        fprintf(stderr, "bench_diff_latency: upload: %s\n", err.msg);
        bench_daemon_stop(&d);
        return 1;
    }
    char url[512];
    snprintf(url, sizeof url,
             "%s/api/v1/diff?a=00abcdef-0000-4000-8000-000000000001&"
             "b=00abcdef-0000-4000-8000-000000000002",
             d.url);

    /* The warm-up request computes and caches the diff. */
    struct client warm = {.url = url, .until = 0};
    CURL *h = curl_easy_init();
    curl_easy_setopt(h, CURLOPT_URL, url);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, discard);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, &warm);
    double t0 = bench_now();
    CURLcode rc = curl_easy_perform(h);
    long status = 0;
    curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
    curl_easy_cleanup(h);
    if (rc != CURLE_OK || status != 200) {
        fprintf(stderr, "bench_diff_latency: the first diff: %s, status %ld\n",
                curl_easy_strerror(rc), status);
        bench_daemon_stop(&d);
        return 1;
    }
    printf("diff of two 200-layer runs: %zu bytes of JSON, computed and cached in %.1f ms\n",
           warm.bytes, (bench_now() - t0) * 1e3);

    struct client *cl = calloc((size_t)n_clients, sizeof *cl);
    double start = bench_now();
    for (int i = 0; i < n_clients; i++) {
        cl[i].url = url;
        cl[i].until = start + seconds;
        pthread_create(&cl[i].thread, NULL, client_loop, &cl[i]);
    }
    size_t total = 0;
    int errors = 0, misses = 0;
    for (int i = 0; i < n_clients; i++) {
        pthread_join(cl[i].thread, NULL);
        total += cl[i].n;
        errors += cl[i].errors;
        misses += cl[i].misses;
    }
    double elapsed = bench_now() - start;
    double *all = malloc((total ? total : 1) * sizeof *all);
    size_t k = 0;
    for (int i = 0; i < n_clients; i++) {
        memcpy(all + k, cl[i].lat, cl[i].n * sizeof *all);
        k += cl[i].n;
        free(cl[i].lat);
    }
    qsort(all, total, sizeof *all, bench_cmp_double);
    bench_daemon_stop(&d);
    if (total == 0) {
        fprintf(stderr, "bench_diff_latency: no request succeeded (%d errors)\n", errors);
        return 1;
    }
    printf("%d clients for %.1f s: %zu requests, %.0f requests/s, %d errors, %d not from the "
           "cache\n",
           n_clients, elapsed, total, (double)total / elapsed, errors, misses);
    printf("latency: p50 %.2f ms, p99 %.2f ms, max %.2f ms\n", all[total / 2] * 1e3,
           all[(size_t)((double)total * 0.99)] * 1e3, all[total - 1] * 1e3);
    free(all);
    free(cl);
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0)
        fprintf(stderr, "bench_diff_latency: could not remove %s\n", dir);
    curl_global_cleanup();
    return errors == 0 && misses == 0 ? 0 : 1;
}
