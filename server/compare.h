/*
 * compare.h: gpudiffd's comparison service: stored runs seen through struct gd_run_view,
 * compared by the engine (gpudiff/diff.h), the results cached in the diffs table; a worker
 * thread that compares finished runs with their model's baseline off the request path; and
 * the device key that groups runs in the matrix and history (docs/SERVER.md, "Comparisons").
 */
#ifndef GPUDIFF_SERVER_COMPARE_H
#define GPUDIFF_SERVER_COMPARE_H

#include <jansson.h>

#include "gpudiff/error.h"
#include "server.h"

/* The tolerances of the mismatch counts when a request names none (as `gpudiff-agent diff`). */
#define SRV_DIFF_ATOL 1e-8
#define SRV_DIFF_RTOL 1e-5

/*
 * What a cached diff is keyed by. truth is "" for none. engine_version is gd_version() of
 * the daemon that computed it, so a newer engine computes afresh.
 */
struct srv_diff_key {
    const char *a, *b, *truth;
    double atol, rtol;
    const char *engine_version;
};

/* A key of a against b with the default tolerances, no truth, this engine. */
void srv_diff_key_default(struct srv_diff_key *key, const char *a, const char *b);

/*
 * The key a request's query names: a, b, truth (optional), atol, rtol (route_diff.c); the
 * strings are the request's. On a bad value req is failed and its code returned.
 */
int srv_diff_key_from_query(struct srv_req *req, struct srv_diff_key *key);

/* ---- device keys (device.c) ---- */

/*
 * Appends the device key of a run (run.json or the stored meta): the backend, then
 * env.gpu_name when it is a non-empty string, then the knobs that change numerics when they
 * are set: " emulate=X" unless knobs.emulate is "none", " tf32=true" when knobs.tf32 is
 * true, " conv_algo=X", " batch=N" when knobs.batch is not null. "cpu", "cpu64",
 * "cpu emulate=tf32:gemm", "cuda NVIDIA H200 tf32=true conv_algo=autotune".
 * Only GD_ENOMEM can fail.
 */
int srv_device_key(json_t *run, struct srv_buf *out);

/* ---- the service (compare.c) ---- */

struct srv_compare;
struct srv_store;

/* What bounds the service; zeros take the defaults of config.c. */
struct srv_compare_opts {
    int threads;        /* the pool that runs requests needing a computation */
    int queue;          /* requests waiting for a pool thread at most (more: 503) */
    double timeout;     /* seconds one diff may take (more: 503 diff_timeout) */
    int64_t max_memory; /* bytes one diff may need, estimated first (more: 422) */
    int64_t cache_max;  /* sec: bytes all cached diffs may hold (--diff-cache-max); 0: no cap */
};

/*
 * Starts the pool and the worker that takes the durable compare jobs (compare_jobs) over
 * store. opts may be NULL.
 */
int srv_compare_start(struct srv_store *store, const struct srv_compare_opts *opts,
                      struct srv_compare **out, struct gd_err *err);

/*
 * Ends what runs: the diffs being computed end at their next layer (GD_ECANCELED, nothing
 * cached), the requests queued for the pool run and answer at once with that error, and
 * then the threads are joined. The durable jobs stay queued for the next start. Accepts
 * NULL and may be called after srv_compare_quiesce().
 */
void srv_compare_stop(struct srv_compare *c);

/*
 * Cancels the computations and waits until no request is queued for or running on the
 * pool (their connections are resumed with their answers). The service stays usable for
 * nothing but srv_compare_stop() afterwards. Accepts NULL.
 */
void srv_compare_quiesce(struct srv_compare *c);

/* Wakes the worker: a run finished (its job is in compare_jobs already). */
void srv_compare_run_finished(struct srv_compare *c, const char *run_id);

/* Wakes the worker: a model has a new baseline (its jobs are in compare_jobs already). */
void srv_compare_baseline_set(struct srv_compare *c, const char *model);

/*
 * Takes a place in the pool's queue for one request, or fails it with SRV_EQUEUE when
 * the queue is full. Every successful reserve is followed by one srv_compare_submit().
 */
int srv_compare_reserve(struct srv_compare *c, struct gd_err *err);

/* Runs run(req) on a pool thread, in the place reserved. */
void srv_compare_submit(struct srv_compare *c, struct srv_req *req,
                        void (*run)(struct srv_req *req));

/* Queued and running requests of the pool, and its limits, for /metrics. */
void srv_compare_load(struct srv_compare *c, int64_t *queued, int64_t *running, int64_t *queue_max,
                      int64_t *threads);

/*
 * The diff of key as the JSON text GET /api/v1/diff serves (NUL-terminated, owned by the
 * caller), from the cache or computed now and cached. One computation per key at a time:
 * callers asking for a key being computed wait for it. *hit says which it was (may be NULL).
 * SRV_ENOTFOUND for an unknown run, SRV_ECONFLICT for one still uploading, SRV_EGONE when
 * retention dropped a run's tensors before this was cached, SRV_EDIFFBIG when the diff
 * would need more memory than the limit, SRV_EDIFFTIME when it took longer than allowed.
 */
int srv_compare_json(struct srv_compare *c, const struct srv_diff_key *key, char **text,
                     size_t *len, int *hit, struct gd_err *err);

/*
 * What a request reads of one layer (NULL: the last) of the diff of key, computed first when
 * it is not cached (route_models.c). SRV_EGONE (req untouched) when it is not cached and
 * cannot be made any more (retention); SRV_EDEFER (req untouched) when it is not cached and
 * the request is not on the compare pool; any other error fails req.
 */
struct srv_diff_summary;
int srv_diff_summary_ensure(struct srv_req *req, const struct srv_diff_key *key,
                            const char *layer, struct srv_diff_summary *sum);

/*
 * The NaN and Inf values in the last layer (the model's output) of a complete run, read
 * through the service's tensors (a fingerprint-only layer: its fingerprint's counts): what
 * marks a device whose output is not finite, even beside a bitwise twin. Errors as above.
 */
int srv_compare_output_nonfinite(struct srv_compare *c, const char *run, int64_t *nan,
                                 int64_t *inf, struct gd_err *err);

/* Makes sure the diff of key is cached, computing it if it is not. Errors as above. */
int srv_compare_ensure(struct srv_compare *c, const struct srv_diff_key *key, int *hit,
                       struct gd_err *err);

#endif
