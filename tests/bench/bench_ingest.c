/*
 * bench_ingest.c: ingest throughput of gpudiffd. Makes a bundle of float32 activations (by
 * default 64 layers of 16 MiB: 1 GiB), starts a daemon of this build on loopback with a
 * fresh database (or uses --server URL --token T), and times, in one process:
 *
 *   push    the agent's upload code (agt_upload_bundle) sending the bundle;
 *   dedup   the same tensors again as a new run (the server links them, nothing is sent);
 *   direct  the ceiling: the same blobs written straight into a fresh SQLite file with the
 *           daemon's settings (srv_db_open: WAL, synchronous=NORMAL, mmap; the schema of
 *           srv_db_migrate; SHA-256, shuffle + zstd at the daemon's level), one transaction
 *           per blob as the daemon commits them.
 *
 * Throughput is tensor bytes over wall time. Also prints the CPU seconds the daemon and
 * this process used during the push, which says where the time goes on a small machine.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "gpudiff/bundle.h"
#include "gpudiff/hash.h"
#include "gpudiff/io.h"
#include "bench_server.h"
#include "blob.h"
#include "db.h"
#include "upload.h"

struct membuf {
    unsigned char *data;
    size_t len, cap;
};

static int
mem_sink(void *user, const void *data, size_t len, struct gd_err *err)
{
    struct membuf *m = user;
    if (m->len + len > m->cap) {
        size_t cap = m->cap ? m->cap * 2 : (size_t)1 << 20;
        while (cap < m->len + len)
            cap *= 2;
        unsigned char *p = realloc(m->data, cap);
        if (p == NULL)
            return gd_err_set(err, GD_ENOMEM, "out of memory");
        m->data = p;
        m->cap = cap;
    }
    memcpy(m->data + m->len, data, len);
    m->len += len;
    return 0;
}

static const char SQL_INSERT[] =
    "INSERT INTO blobs(sha256, dtype, elem_size, raw_size, stored_size, codec, created_at, data) "
    "VALUES(?1, 'float32', 4, ?2, ?3, ?4, 0, ?5)";

/* The ceiling: every layer's data read, hashed, shuffled and compressed, inserted. */
/* Seconds the ceiling spent in each step. */
struct direct_times {
    double read, hash, compress, insert;
};

static int
direct(const char *bundle_dir, const char *db_path, int level, uint64_t *raw_total,
       struct direct_times *tm, struct gd_err *err)
{
    struct gd_bundle *b = NULL;
    struct srv_db *db = NULL;
    struct srv_db_opts opts = {.busy_timeout_ms = 5000};
    struct membuf out = {0};
    int rc = gd_bundle_open(bundle_dir, &b, err);
    if (rc == 0)
        rc = srv_db_open(db_path, &opts, &db, err);
    if (rc == 0)
        rc = srv_db_migrate(db, NULL, NULL, err);
    *raw_total = 0;
    for (int i = 0; rc == 0 && i < b->n_layers; i++) {
        struct gd_tensor *t = NULL;
        char path[4096], sha[65];
        snprintf(path, sizeof path, "%s/%s", bundle_dir, b->layers[i].file);
        double t0 = bench_now();
        rc = gd_npy_load(path, &t, err);
        if (rc != 0)
            break;
        double t1 = bench_now();
        size_t n = gd_tensor_nbytes(t);
        struct srv_blob_enc *enc = NULL;
        uint64_t stored = 0;
        out.len = 0;
        rc = gd_sha256_hex(t->data, n, sha, err);
        double t2 = bench_now();
        if (rc == 0)
            rc = srv_blob_enc_new(4, n, level, mem_sink, &out, &enc, err);
        if (rc == 0)
            rc = srv_blob_enc_write(enc, t->data, n, err);
        if (rc == 0)
            rc = srv_blob_enc_finish(enc, &stored, err);
        srv_blob_enc_free(enc);
        gd_tensor_free(t);
        double t3 = bench_now();
        tm->read += t1 - t0;
        tm->hash += t2 - t1;
        tm->compress += t3 - t2;
        sqlite3_stmt *st = NULL;
        if (rc == 0)
            rc = srv_db_begin(db, err);
        if (rc == 0)
            rc = srv_db_prepare(db, SQL_INSERT, &st, err);
        if (rc == 0) {
            srv_db_bind_text(st, 1, sha);
            sqlite3_bind_int64(st, 2, (sqlite3_int64)n);
            sqlite3_bind_int64(st, 3, (sqlite3_int64)stored);
            srv_db_bind_text(st, 4, SRV_BLOB_CODEC);
            sqlite3_bind_blob(st, 5, out.data, (int)out.len, SQLITE_STATIC);
            int s = sqlite3_step(st);
            srv_db_done(st);
            rc = s == SQLITE_DONE ? srv_db_commit(db, err) : srv_db_fail(db, s, "insert", err);
        }
        tm->insert += bench_now() - t3;
        *raw_total += n;
    }
    free(out.data);
    srv_db_close(db);
    gd_bundle_close(b);
    return rc;
}

static int
file_size(const char *path, uint64_t *size)
{
    struct stat sb;
    if (stat(path, &sb) != 0)
        return -1;
    *size = (uint64_t)sb.st_size;
    return 0;
}

/* The same run.json under a new id, its layers/ a link to the first bundle's. */
static int
second_bundle(const char *first, const char *second, struct gd_err *err)
{
    char path[4096], target[4096];
    snprintf(path, sizeof path, "%s/run.json", first);
    json_error_t jerr;
    json_t *run = json_load_file(path, 0, &jerr);
    if (run == NULL)
        return gd_err_set(err, GD_EIO, "%s: %s", path, jerr.text);
    json_object_set_new(run, "id", json_string("99999999-9999-4999-8999-999999999999"));
    mkdir(second, 0755);
    snprintf(path, sizeof path, "%s/run.json", second);
    int rc =
        json_dump_file(run, path, JSON_INDENT(1)) == 0 ? 0 : gd_err_set(err, GD_EIO, "%s", path);
    json_decref(run);
    snprintf(path, sizeof path, "%s/layers", second);
    if (realpath(first, target) == NULL)
        return gd_err_set(err, GD_EIO, "%s: cannot resolve", first);
    strncat(target, "/layers", sizeof target - strlen(target) - 1);
    unlink(path);
    if (rc == 0 && symlink(target, path) != 0)
        rc = gd_err_set(err, GD_EIO, "symlink %s", path);
    return rc;
}

#define MAX_ROUNDS 9

struct round_result {
    double seconds;               /* the push, or the direct writing */
    double dedup_seconds;         /* the second push */
    double daemon_cpu, agent_cpu; /* direct: this process's CPU */
    double db_mb;
    struct direct_times steps;
};

static double
median(double *v, int n)
{
    double s[MAX_ROUNDS];
    memcpy(s, v, (size_t)n * sizeof *s);
    for (int i = 1; i < n; i++)
        for (int j = i; j > 0 && s[j - 1] > s[j]; j--) {
            double t = s[j];
            s[j] = s[j - 1];
            s[j - 1] = t;
        }
    return n % 2 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
}

/* A daemon on a fresh database (unless one is given), the push, the dedup push. */
static int
push_round(const char *first, const char *second, const char *server, const char *token,
           const char *gpudiffd, const char *dir, int level, int round, struct round_result *res,
           struct gd_err *err)
{
    struct bench_daemon d;
    memset(&d, 0, sizeof d);
    memset(res, 0, sizeof *res);
    if (server != NULL) {
        snprintf(d.url, sizeof d.url, "%s", server);
        snprintf(d.token, sizeof d.token, "%s", token);
    } else {
        char level_flag[32], name[32];
        snprintf(level_flag, sizeof level_flag, "--compress-level=%d", level);
        snprintf(name, sizeof name, "daemon%d", round);
        const char *extra[] = {level_flag, NULL};
        if (bench_daemon_start(gpudiffd, dir, name, extra, &d, err) != 0)
            return err->code;
    }
    /* Each timed part starts with no dirty pages of the one before left to write back. */
    sync();
    struct agt_upload_opts o;
    agt_upload_opts_init(&o);
    o.server = d.url;
    o.token = d.token;
    o.retries = 0;
    struct agt_upload_stats st;
    double cpu_d0 = d.pid ? bench_cpu_seconds(d.pid) : 0, cpu_a0 = bench_cpu_seconds(getpid());
    int code = agt_upload_bundle(first, &o, &st, err);
    res->daemon_cpu = (d.pid ? bench_cpu_seconds(d.pid) : 0) - cpu_d0;
    res->agent_cpu = bench_cpu_seconds(getpid()) - cpu_a0;
    res->seconds = st.seconds;
    if (code == 0)
        code = agt_upload_bundle(second, &o, &st, err);
    if (code == 0 && st.layers_sent != 0)
        code = gd_err_set(err, GD_EIO, "identical tensors were sent again");
    res->dedup_seconds = st.seconds;
    uint64_t size = 0;
    if (d.pid && file_size(d.db, &size) == 0)
        res->db_mb = (double)size / 1e6;
    bench_daemon_stop(&d);
    if (server == NULL) {
        char path[2200];
        snprintf(path, sizeof path, "%s/daemon%d.db", dir, round);
        unlink(path);
    }
    return code == 0 ? 0 : GD_EIO;
}

static int
direct_round(const char *first, const char *dir, int level, int round, struct round_result *res,
             struct gd_err *err)
{
    char path[2200];
    uint64_t raw = 0;
    memset(res, 0, sizeof *res);
    snprintf(path, sizeof path, "%s/direct%d.db", dir, round);
    sync();
    double t0 = bench_now(), cpu0 = bench_cpu_seconds(getpid());
    int rc = direct(first, path, level, &raw, &res->steps, err);
    res->seconds = bench_now() - t0;
    res->agent_cpu = bench_cpu_seconds(getpid()) - cpu0;
    unlink(path);
    return rc;
}

static void
usage(FILE *out)
{
    fprintf(out, "Usage: bench_ingest [--dir DIR] [--layers N] [--layer-mb MB] [--level L]\n"
                 "                    [--rounds R] [--gpudiffd PATH | --server URL --token T]\n"
                 "                    [--keep]\n\n"
                 "Times an agent pushing a bundle of N layers of MB MiB (default 64 x 16 = 1 GiB)\n"
                 "to gpudiffd over loopback, pushing the same tensors again as a new run, and\n"
                 "writing the same blobs straight into SQLite (the ceiling). DIR (default: a new\n"
                 "folder in $TMPDIR or /tmp) holds the bundle and the databases; removed unless\n"
                 "--keep. L is the zstd level the daemon uses (default 3, its default). Each of R\n"
                 "rounds (default 3) pushes to a fresh daemon and writes a fresh SQLite file, in\n"
                 "alternating order; the medians are compared. A daemon given with --server keeps\n"
                 "what it was sent, so it takes one round (--rounds 1) on a fresh database.\n");
}

int
main(int argc, char **argv)
{
    enum {
        O_DIR = 256,
        O_LAYERS,
        O_LAYER_MB,
        O_LEVEL,
        O_GPUDIFFD,
        O_SERVER,
        O_TOKEN,
        O_KEEP,
        O_ROUNDS
    };
    static const struct option longopts[] = {
        {"dir", required_argument, NULL, O_DIR},
        {"layers", required_argument, NULL, O_LAYERS},
        {"layer-mb", required_argument, NULL, O_LAYER_MB},
        {"level", required_argument, NULL, O_LEVEL},
        {"gpudiffd", required_argument, NULL, O_GPUDIFFD},
        {"server", required_argument, NULL, O_SERVER},
        {"token", required_argument, NULL, O_TOKEN},
        {"keep", no_argument, NULL, O_KEEP},
        {"rounds", required_argument, NULL, O_ROUNDS},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    const char *dir = NULL, *gpudiffd = GD_BUILDDIR "/gpudiffd", *server = NULL, *token = NULL;
    int n_layers = 64, layer_mb = 16, level = 3, keep = 0, rounds = 3, c;
    while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
        switch (c) {
        case O_DIR:
            dir = optarg;
            break;
        case O_LAYERS:
            n_layers = atoi(optarg);
            break;
        case O_LAYER_MB:
            layer_mb = atoi(optarg);
            break;
        case O_LEVEL:
            level = atoi(optarg);
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
        case O_KEEP:
            keep = 1;
            break;
        case O_ROUNDS:
            rounds = atoi(optarg);
            break;
        case 'h':
            usage(stdout);
            return 0;
        default:
            usage(stderr);
            return 2;
        }
    }
    if (n_layers < 1 || layer_mb < 1 || level < 1 || level > 19 || rounds < 1 ||
        rounds > MAX_ROUNDS || (server != NULL) != (token != NULL) ||
        (server != NULL && rounds != 1)) {
        usage(stderr);
        return 2;
    }
    char tmpl[256];
    if (dir == NULL) {
        snprintf(tmpl, sizeof tmpl, "%s/bench_ingest.XXXXXX",
                 getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
        dir = mkdtemp(tmpl);
        if (dir == NULL) {
            perror("mkdtemp");
            return 1;
        }
    }
    srv_log_init(GD_LOG_WARN);
    struct gd_err err = {0};
    char first[2048], second[2048];
    snprintf(first, sizeof first, "%s/bundle", dir);
    snprintf(second, sizeof second, "%s/bundle2", dir);
    int64_t cols = 1024, rows = (int64_t)layer_mb * 1024 * 1024 / 4 / cols;
    double t0 = bench_now();
    if (bench_bundle_make(first, "bench-ingest", n_layers, rows, cols, 0x1234567, 1, 0, &err) !=
            0 ||
        second_bundle(first, second, &err) != 0) {
        fprintf(stderr, "bench_ingest: %s\n", err.msg);
        return 1;
    }
    double raw_mb = (double)n_layers * (double)rows * (double)cols * 4 / 1e6;
    printf("bundle: %d layers of %lld x %lld float32, %.0f MB, made in %.1f s (%s)\n", n_layers,
           (long long)rows, (long long)cols, raw_mb, bench_now() - t0, first);

    double push_mbs[MAX_ROUNDS], direct_mbs[MAX_ROUNDS], dedup_s = 0, db_mb = 0;
    for (int r = 0; r < rounds; r++) {
        /* The order alternates, so a machine that gets busier or idler favours neither. */
        for (int part = 0; part < 2; part++) {
            int do_push = (part == 0) == (r % 2 == 0);
            struct round_result res;
            int rc = do_push ? push_round(first, second, server, token, gpudiffd, dir, level, r,
                                          &res, &err)
                             : direct_round(first, dir, level, r, &res, &err);
            if (rc != 0) {
                fprintf(stderr, "bench_ingest: %s\n", err.msg);
                return 1;
            }
            if (do_push) {
                push_mbs[r] = raw_mb / res.seconds;
                dedup_s = res.dedup_seconds;
                db_mb = res.db_mb;
                printf("round %d push:   %6.1f MB/s  (%.2f s; daemon CPU %.2f s, agent CPU %.2f "
                       "s; dedup push %.3f s)\n",
                       r + 1, push_mbs[r], res.seconds, res.daemon_cpu, res.agent_cpu,
                       res.dedup_seconds);
            } else {
                direct_mbs[r] = raw_mb / res.seconds;
                printf("round %d direct: %6.1f MB/s  (%.2f s, CPU %.2f s: read %.2f, SHA-256 %.2f, "
                       "shuffle + zstd %.2f, SQLite %.2f)\n",
                       r + 1, direct_mbs[r], res.seconds, res.agent_cpu, res.steps.read,
                       res.steps.hash, res.steps.compress, res.steps.insert);
            }
        }
    }
    double push_med = median(push_mbs, rounds), direct_med = median(direct_mbs, rounds);
    printf("push:   %7.1f MB/s  (median of %d rounds of %.0f MB)\n", push_med, rounds, raw_mb);
    printf("dedup:  %7.0f MB/s  (the same %.0f MB as a new run in %.3f s: nothing sent)\n",
           raw_mb / dedup_s, raw_mb, dedup_s);
    printf("direct: %7.1f MB/s  (median: hashed, shuffled, zstd -%d, into SQLite)\n", direct_med,
           level);
    printf("push / direct: %.0f%%\n", 100.0 * push_med / direct_med);
    if (db_mb > 0)
        printf("daemon database: %.0f MB after both runs\n", db_mb);
    if (!keep) {
        char cmd[2200];
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
        if (system(cmd) != 0)
            fprintf(stderr, "bench_ingest: could not remove %s\n", dir);
    }
    return 0;
}
