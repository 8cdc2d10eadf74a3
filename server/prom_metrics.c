/*
 * prom_metrics.c: counters kept in atomics (no lock on the request path) and the Prometheus text
 * exposition of GET /metrics. Labels come from fixed lists (route patterns, statuses), so
 * no client can grow the number of series.
 */
#include <malloc.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "compare.h"
#include "db.h"
#include "gate.h"
#include "pool.h"
#include "server.h"

#define MAX_ROUTES 48
/* Route slots: the table's routes, then static files, then requests that matched nothing. */
#define SLOT_STATIC    MAX_ROUTES
#define SLOT_UNMATCHED (MAX_ROUTES + 1)
#define SLOT_REFUSED   (MAX_ROUTES + 2)
#define N_SLOTS        (MAX_ROUTES + 3)

static const unsigned statuses[] = {0,   200, 201, 204, 304, 400, 401, 403, 404, 405, 408, 409,
                                    410, 411, 413, 414, 415, 422, 431, 500, 501, 503, 505};
#define N_STATUS     (sizeof statuses / sizeof statuses[0])
#define STATUS_OTHER N_STATUS

static const double buckets[] = {0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 10, 60};
#define N_BUCKETS (sizeof buckets / sizeof buckets[0])

struct histogram {
    _Atomic uint64_t count[N_BUCKETS + 1]; /* the last is +Inf */
    _Atomic uint64_t sum_us;
};

static _Atomic uint64_t requests[N_SLOTS][N_STATUS + 1];
static struct histogram request_seconds;
static struct histogram compare_seconds;
static _Atomic uint64_t counters[SRV_M_COUNTER_COUNT];

static const struct {
    const char *name, *help;
} counter_info[SRV_M_COUNTER_COUNT] = {
    [SRV_M_BODY_BYTES] = {"gpudiffd_ingest_body_bytes_total",
                          "Bytes of layer bodies (.npy) received."},
    [SRV_M_TENSOR_BYTES] = {"gpudiffd_ingest_tensor_bytes_total",
                            "Tensor bytes stored as new blobs."},
    [SRV_M_STORED_BYTES] = {"gpudiffd_ingest_stored_bytes_total",
                            "Compressed bytes written for new blobs."},
    [SRV_M_BLOBS_WRITTEN] = {"gpudiffd_blobs_written_total", "New blobs written."},
    [SRV_M_BLOBS_DEDUP] = {"gpudiffd_blobs_deduplicated_total",
                           "Layers whose data was already stored."},
    [SRV_M_LAYERS_STORED] = {"gpudiffd_layers_uploaded_total", "Layers made present by PUT."},
    [SRV_M_RUNS_CREATED] = {"gpudiffd_runs_created_total", "Runs created."},
    [SRV_M_RUNS_FINISHED] = {"gpudiffd_runs_finished_total", "Runs finished."},
    [SRV_M_DIFF_HITS] = {"gpudiffd_diff_cache_hits_total",
                         "Diffs read from the cache (requests and the compare worker)."},
    [SRV_M_DIFF_MISSES] = {"gpudiffd_diff_cache_misses_total",
                           "Diffs computed because the cache lacked them."},
    [SRV_M_CONN_REFUSED_LIMIT] = {"gpudiffd_connections_refused_limit_total",
                                  "Connections refused because --max-connections were open."},
    [SRV_M_CONN_REFUSED_PER_IP] = {"gpudiffd_connections_refused_per_ip_total",
                                   "Connections refused because their address had "
                                   "--max-connections-per-ip open."},
    [SRV_M_TIMEOUT_HEAD] = {"gpudiffd_connections_header_timeouts_total",
                            "Connections closed without a whole request head in "
                            "--header-timeout."},
    [SRV_M_TIMEOUT_BODY] = {"gpudiffd_connections_body_timeouts_total",
                            "Connections cut because their body came slower than "
                            "--body-min-rate."},
    /* jobsrv */
    [SRV_M_FLEET_JOBS] = {"gpudiffd_fleet_jobs_submitted_total", "Jobs submitted."},
    [SRV_M_TASKS_LEASED] = {"gpudiffd_fleet_leases_total", "Leases handed out to agents."},
    [SRV_M_TASKS_FINISHED] = {"gpudiffd_fleet_tasks_finished_total", "Tasks finished with a run."},
    [SRV_M_TASKS_FAILED] = {"gpudiffd_fleet_tasks_failed_total", "Tasks failed by their agent."},
    [SRV_M_TASKS_EXPIRED] = {"gpudiffd_fleet_leases_expired_total",
                             "Leases that expired without a heartbeat (by this daemon)."},
    /* issue 24 */
    [SRV_M_LEASES_WITHDRAWN] = {"gpudiffd_fleet_leases_withdrawn_total",
                                "Lease offers no heartbeat confirmed in time, withdrawn "
                                "(by this daemon)."},
    [SRV_M_LEASES_RELEASED] = {"gpudiffd_fleet_leases_released_total",
                               "Leases given back by their agent (a serve that stopped)."},
    [SRV_M_TASKS_STALE] = {"gpudiffd_fleet_tasks_left_total",
                           "Pending tasks ended because their device was not seen for "
                           "--device-stale-seconds, or was removed (by this daemon)."},
    [SRV_M_POLLS_GONE] = {"gpudiffd_fleet_polls_gone_total",
                          "Long polls whose client had gone: answered with no lease."},
    /* issue 25 */
    [SRV_M_DIFF_EVICTIONS] = {"gpudiffd_diff_cache_evictions_total",
                              "Cached diffs dropped to keep the cache under --diff-cache-max "
                              "(by this daemon)."},
    [SRV_M_DIFF_UNCACHED] = {"gpudiffd_diff_cache_uncached_total",
                             "Diffs computed but not cached: larger than --diff-cache-max."},
};

static void
observe(struct histogram *h, double seconds)
{
    size_t b = 0;
    while (b < N_BUCKETS && seconds > buckets[b])
        b++;
    atomic_fetch_add_explicit(&h->count[b], 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&h->sum_us, (uint64_t)(seconds * 1e6), memory_order_relaxed);
}

void
srv_metrics_request(int route, unsigned status, double seconds)
{
    int slot = route == SRV_METRICS_STATIC        ? SLOT_STATIC
               : route == SRV_METRICS_REFUSED     ? SLOT_REFUSED
               : route < 0 || route >= MAX_ROUTES ? SLOT_UNMATCHED
                                                  : route;
    size_t s = STATUS_OTHER;
    for (size_t i = 0; i < N_STATUS; i++)
        if (statuses[i] == status)
            s = i;
    atomic_fetch_add_explicit(&requests[slot][s], 1, memory_order_relaxed);
    observe(&request_seconds, seconds);
}

void
srv_metrics_add(enum srv_counter c, uint64_t n)
{
    atomic_fetch_add_explicit(&counters[c], n, memory_order_relaxed);
}

void
srv_metrics_observe_compare(double seconds)
{
    observe(&compare_seconds, seconds);
}

static int
render_histogram(struct srv_buf *out, const char *name, const char *help, struct histogram *h)
{
    int rc = srv_buf_printf(out, "# HELP %s %s\n# TYPE %s histogram\n", name, help, name);
    uint64_t cum = 0;
    for (size_t b = 0; rc == 0 && b <= N_BUCKETS; b++) {
        cum += atomic_load_explicit(&h->count[b], memory_order_relaxed);
        if (b < N_BUCKETS)
            rc = srv_buf_printf(out, "%s_bucket{le=\"%g\"} %llu\n", name, buckets[b],
                                (unsigned long long)cum);
        else
            rc =
                srv_buf_printf(out, "%s_bucket{le=\"+Inf\"} %llu\n", name, (unsigned long long)cum);
    }
    if (rc == 0)
        rc = srv_buf_printf(out, "%s_sum %.6f\n%s_count %llu\n", name,
                            (double)atomic_load_explicit(&h->sum_us, memory_order_relaxed) / 1e6,
                            name, (unsigned long long)cum);
    return rc;
}

int
srv_metrics_render(struct srv_db *db, struct srv_buf *out, struct gd_err *err)
{
    _Static_assert(MAX_ROUTES >= 16, "room for the route table");
    if (srv_route_count > MAX_ROUTES)
        return gd_err_set(err, SRV_EINTERNAL, "more routes than metrics slots");
    int rc = srv_buf_printf(out, "# HELP gpudiffd_http_requests_total HTTP requests answered, "
                                 "by route pattern, method and status (0: no answer sent).\n"
                                 "# TYPE gpudiffd_http_requests_total counter\n");
    for (int r = 0; rc == 0 && r < N_SLOTS; r++) {
        const char *route, *method;
        if (r < srv_route_count) {
            route = srv_routes[r].pattern;
            method = srv_routes[r].method;
        } else if (r == SLOT_STATIC) {
            route = "static";
            method = "GET";
        } else if (r == SLOT_UNMATCHED) {
            route = "unmatched";
            method = "any";
        } else if (r == SLOT_REFUSED) {
            route = "refused";
            method = "any";
        } else {
            continue;
        }
        for (size_t s = 0; rc == 0 && s <= N_STATUS; s++) {
            uint64_t n = atomic_load_explicit(&requests[r][s], memory_order_relaxed);
            if (n == 0)
                continue;
            char status[16];
            if (s < N_STATUS)
                snprintf(status, sizeof status, "%u", statuses[s]);
            else
                snprintf(status, sizeof status, "other");
            rc = srv_buf_printf(out,
                                "gpudiffd_http_requests_total{route=\"%s\",method=\"%s\","
                                "status=\"%s\"} %llu\n",
                                route, method, status, (unsigned long long)n);
        }
    }
    if (rc == 0)
        rc = render_histogram(out, "gpudiffd_http_request_duration_seconds",
                              "Time from a request's headers to its answer.", &request_seconds);
    if (rc == 0)
        rc = render_histogram(
            out, "gpudiffd_compare_duration_seconds",
            "Time to compute one diff of two runs (loading their layers included).",
            &compare_seconds);
    for (int c = 0; rc == 0 && c < SRV_M_COUNTER_COUNT; c++)
        rc = srv_buf_printf(
            out, "# HELP %s %s\n# TYPE %s counter\n%s %llu\n", counter_info[c].name,
            counter_info[c].help, counter_info[c].name, counter_info[c].name,
            (unsigned long long)atomic_load_explicit(&counters[c], memory_order_relaxed));
    if (rc != 0)
        return gd_err_set(err, GD_ENOMEM, "out of memory for /metrics");

    int64_t uploading, complete, blobs, raw, stored;
    int64_t jobs = 0, cache_bytes = 0, cache_entries = 0;
    rc = srv_db_runs_count(db, &uploading, &complete, err);
    if (rc == 0)
        rc = srv_db_blob_totals(db, &blobs, &raw, &stored, err);
    if (rc == 0)
        rc = srv_db_jobs_count(db, &jobs, err);
    if (rc == 0)
        rc = srv_db_diff_cache_totals(db, &cache_bytes, &cache_entries, err);
    if (rc != 0)
        return rc;
    rc = srv_buf_printf(out,
                        "# HELP gpudiffd_diff_cache_bytes Bytes of the cached diffs (their text "
                        "and layer rows), which --diff-cache-max bounds.\n"
                        "# TYPE gpudiffd_diff_cache_bytes gauge\n"
                        "gpudiffd_diff_cache_bytes %lld\n"
                        "# HELP gpudiffd_diff_cache_entries Cached diffs.\n"
                        "# TYPE gpudiffd_diff_cache_entries gauge\n"
                        "gpudiffd_diff_cache_entries %lld\n",
                        (long long)cache_bytes, (long long)cache_entries);
    if (rc != 0)
        return gd_err_set(err, GD_ENOMEM, "out of memory for /metrics");
    rc = srv_buf_printf(out,
                        "# HELP gpudiffd_runs Runs in the database, by state.\n"
                        "# TYPE gpudiffd_runs gauge\n"
                        "gpudiffd_runs{state=\"uploading\"} %lld\n"
                        "gpudiffd_runs{state=\"complete\"} %lld\n"
                        "# HELP gpudiffd_blobs Distinct tensors stored.\n"
                        "# TYPE gpudiffd_blobs gauge\n"
                        "gpudiffd_blobs %lld\n"
                        "# HELP gpudiffd_blob_bytes Size of the stored tensors, raw and as "
                        "stored (shuffled and compressed).\n"
                        "# TYPE gpudiffd_blob_bytes gauge\n"
                        "gpudiffd_blob_bytes{form=\"raw\"} %lld\n"
                        "gpudiffd_blob_bytes{form=\"stored\"} %lld\n"
                        "# HELP gpudiffd_compare_jobs Comparisons with a baseline queued "
                        "(compare_jobs).\n"
                        "# TYPE gpudiffd_compare_jobs gauge\n"
                        "gpudiffd_compare_jobs %lld\n",
                        (long long)uploading, (long long)complete, (long long)blobs, (long long)raw,
                        (long long)stored, (long long)jobs);
    if (rc != 0)
        return gd_err_set(err, GD_ENOMEM, "out of memory for /metrics");
    /* jobsrv: the fleet's devices and tasks */
    int64_t seen = 0, tasks[5];
    rc = srv_db_fleet_counts(db, srv_now(), &seen, tasks, err);
    if (rc != 0)
        return rc;
    rc = srv_buf_printf(out,
                        "# HELP gpudiffd_fleet_devices_seen Registered devices seen in the last "
                        "%lld s (--device-stale-seconds: the targets of a new job).\n"
                        "# TYPE gpudiffd_fleet_devices_seen gauge\n"
                        "gpudiffd_fleet_devices_seen %lld\n"
                        "# HELP gpudiffd_fleet_tasks Tasks of jobs, by state.\n"
                        "# TYPE gpudiffd_fleet_tasks gauge\n"
                        "gpudiffd_fleet_tasks{state=\"pending\"} %lld\n"
                        "gpudiffd_fleet_tasks{state=\"leased\"} %lld\n"
                        "gpudiffd_fleet_tasks{state=\"finished\"} %lld\n"
                        "gpudiffd_fleet_tasks{state=\"failed\"} %lld\n"
                        "gpudiffd_fleet_tasks{state=\"never_answered\"} %lld\n",
                        (long long)srv_db_fleet_stale_seconds(db), (long long)seen,
                        (long long)tasks[0], (long long)tasks[1], (long long)tasks[2],
                        (long long)tasks[3], (long long)tasks[4]);
    return rc == 0 ? 0 : gd_err_set(err, GD_ENOMEM, "out of memory for /metrics");
}

/* RssAnon and RssFile of this process, in bytes (0 when /proc is not there). */
static void
process_rss(int64_t *anon, int64_t *file)
{
    *anon = *file = 0;
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    while (f != NULL && fgets(line, sizeof line, f) != NULL) {
        long long kb;
        if (sscanf(line, "RssAnon: %lld", &kb) == 1)
            *anon = kb * 1024;
        else if (sscanf(line, "RssFile: %lld", &kb) == 1)
            *file = kb * 1024;
    }
    if (f != NULL)
        fclose(f);
}

/*
 * Where the memory is (docs/SERVER.md, "Memory"): the process's resident set, what the C
 * allocator holds in use and free (glibc keeps freed memory for reuse until it is trimmed),
 * and SQLite's own allocations (page caches, statements).
 */
static int
render_memory(struct srv_buf *out)
{
    int64_t anon, file;
    process_rss(&anon, &file);
    struct mallinfo2 mi = mallinfo2();
    return srv_buf_printf(
        out,
        "# HELP gpudiffd_resident_bytes Resident memory: anonymous (heap, stacks) and "
        "file-backed (the binary, libraries, the mapped database).\n"
        "# TYPE gpudiffd_resident_bytes gauge\n"
        "gpudiffd_resident_bytes{kind=\"anon\"} %lld\n"
        "gpudiffd_resident_bytes{kind=\"file\"} %lld\n"
        "# HELP gpudiffd_malloc_bytes The C allocator's memory: in use, and free but kept.\n"
        "# TYPE gpudiffd_malloc_bytes gauge\n"
        "gpudiffd_malloc_bytes{state=\"in_use\"} %llu\n"
        "gpudiffd_malloc_bytes{state=\"free\"} %llu\n"
        "# HELP gpudiffd_sqlite_memory_bytes Memory SQLite has allocated (its page caches "
        "and statements), now and at most since the start.\n"
        "# TYPE gpudiffd_sqlite_memory_bytes gauge\n"
        "gpudiffd_sqlite_memory_bytes{stat=\"used\"} %lld\n"
        "gpudiffd_sqlite_memory_bytes{stat=\"highwater\"} %lld\n",
        (long long)anon, (long long)file, (unsigned long long)(mi.uordblks + mi.hblkhd),
        (unsigned long long)mi.fordblks, (long long)sqlite3_memory_used(),
        (long long)sqlite3_memory_highwater(0));
}

int
srv_metrics_render_limits(const struct srv_server *srv, struct srv_buf *out)
{
    if (render_memory(out) != 0)
        return GD_ENOMEM;
    int64_t waiting = 0, served = 0, queued = 0, running = 0, queue_max = 0, threads = 0;
    int64_t w_queued = 0, w_running = 0, w_queue_max = 0, w_threads = 0;
    if (srv->gate != NULL)
        srv_gate_counts(srv->gate, &waiting, &served);
    if (srv->compare != NULL)
        srv_compare_load(srv->compare, &queued, &running, &queue_max, &threads);
    if (srv->writes != NULL)
        srv_pool_load(srv->writes, &w_queued, &w_running, &w_queue_max, &w_threads);
    return srv_buf_printf(
        out,
        "# HELP gpudiffd_connections Open connections: waiting for their request head at the "
        "gate, or served.\n"
        "# TYPE gpudiffd_connections gauge\n"
        "gpudiffd_connections{state=\"head\"} %lld\n"
        "gpudiffd_connections{state=\"served\"} %lld\n"
        "# HELP gpudiffd_connection_limit The connection limits (--max-connections, "
        "--max-connections-per-ip).\n"
        "# TYPE gpudiffd_connection_limit gauge\n"
        "gpudiffd_connection_limit{scope=\"total\"} %lld\n"
        "gpudiffd_connection_limit{scope=\"per_ip\"} %lld\n"
        "# HELP gpudiffd_compare_requests Requests on the compare pool: waiting, running.\n"
        "# TYPE gpudiffd_compare_requests gauge\n"
        "gpudiffd_compare_requests{state=\"queued\"} %lld\n"
        "gpudiffd_compare_requests{state=\"running\"} %lld\n"
        "# HELP gpudiffd_compare_limit The compare pool's limits (--compare-queue, "
        "--compare-threads).\n"
        "# TYPE gpudiffd_compare_limit gauge\n"
        "gpudiffd_compare_limit{scope=\"queue\"} %lld\n"
        "gpudiffd_compare_limit{scope=\"threads\"} %lld\n"
        "# HELP gpudiffd_write_requests Requests on the write pool: waiting, running.\n"
        "# TYPE gpudiffd_write_requests gauge\n"
        "gpudiffd_write_requests{state=\"queued\"} %lld\n"
        "gpudiffd_write_requests{state=\"running\"} %lld\n"
        "# HELP gpudiffd_write_limit The write pool's limits (--write-queue, --write-threads).\n"
        "# TYPE gpudiffd_write_limit gauge\n"
        "gpudiffd_write_limit{scope=\"queue\"} %lld\n"
        "gpudiffd_write_limit{scope=\"threads\"} %lld\n"
        "# HELP gpudiffd_diff_cache_limit_bytes The diff cache's cap (--diff-cache-max).\n"
        "# TYPE gpudiffd_diff_cache_limit_bytes gauge\n"
        "gpudiffd_diff_cache_limit_bytes %lld\n"
        "# HELP gpudiffd_response_memory_bytes Answers over 64 KiB made in memory and not yet "
        "sent, and their limit (--response-memory).\n"
        "# TYPE gpudiffd_response_memory_bytes gauge\n"
        "gpudiffd_response_memory_bytes{state=\"held\"} %lld\n"
        "gpudiffd_response_memory_bytes{state=\"limit\"} %lld\n",
        (long long)waiting, (long long)served, (long long)srv->cfg.max_connections,
        (long long)srv->cfg.max_connections_per_ip, (long long)queued, (long long)running,
        (long long)queue_max, (long long)threads, (long long)w_queued, (long long)w_running,
        (long long)w_queue_max, (long long)w_threads, (long long)srv->cfg.diff_cache_max,
        (long long)srv_response_memory(), (long long)srv->cfg.response_memory);
}
