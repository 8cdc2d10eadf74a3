/*
 * compare.c: the comparison service. A stored run is read by the engine through a
 * gd_run_view made from its records (layers.record, runs.meta) whose `load` is
 * srv_db_layer_load(), holding a database connection for one layer at a time only. Each
 * diff is computed once: its JSON text and per-layer summaries go into the cache in one
 * transaction, requests for a key being computed wait for that computation instead of
 * repeating it, and at most `threads` computations run at once (each holds two or three
 * layers in memory), within a time limit and after an estimate of its memory passed the
 * limit. Requests that need a computation run on the pool here, never on the threads that
 * serve connections; its queue is bounded. One worker takes the durable jobs of
 * compare_jobs (a finished run, or a model's runs after a new baseline, against the
 * baseline), so `finish` and `baseline` answer at once and no comparison is dropped.
 */
#include <errno.h>
#include <malloc.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "gpudiff/diff.h"
#include "gpudiff/fingerprint.h"
#include "gpudiff/session.h"
#include "compare.h"
#include "db.h"
#include "pool.h"
#include "tensor_cache.h"

/*
 * What a diff holds besides its layers' tensors, per layer of the runs compared: the
 * records of both runs as JSON, the engine's struct gd_diff_layer, its JSON object and
 * text. Measured: a diff of two runs of 10,000 small layers raised the daemon's peak RSS by
 * 124 MB, 6.2 KB for each of the 20,000 layers.
 */
#define DIFF_BYTES_PER_LAYER (6 * 1024 + 256)
/* The layers compared are held as loaded and converted to float64 on the way. */
#define DIFF_TENSOR_FACTOR 3
/* The worker waits this long between passes when a job failed for a reason that passes. */
#define JOB_RETRY_SECS 5.0
/*
 * And at most this long between passes anyway: jobs queued through another daemon on the
 * same database, or left by one that died holding a claim, are taken up within it.
 */
#define JOB_RESCAN_SECS 30
/*
 * A claim keeps the workers of other daemons on the database off a job for this long: most
 * diffs take far less, and one that takes longer may be computed twice, the second result
 * dropped (the cache keeps one row per key). A daemon killed holding a claim delays its job
 * by at most this much.
 */
#define JOB_CLAIM_SECS 15
/* After a diff of this many layers, freed memory is returned to the system (malloc_trim). */
#define TRIM_LAYERS 1000
/*
 * Nice values: the worker's diffs, which nobody waits for, below everything else; the
 * pool's, which a client waits for, as the threads serving connections.
 */
#define POOL_NICE   5
#define WORKER_NICE 10
/*
 * The decoded tensors kept between diffs (tensor_cache.h): a device matrix of 50 runs of a
 * small model reads each run's layers once, not 98 times (docs/PERFORMANCE.md).
 */
#define TENSOR_CACHE_BYTES ((size_t)64 << 20)

/* A key being computed; waiters block on done_cv until it leaves the list. */
struct inflight {
    struct inflight *next;
    char key[256];
};

struct srv_compare {
    struct srv_store *store;
    struct srv_compare_opts opts;
    pthread_t thread; /* the worker of compare_jobs */
    int worker_started;
    pthread_mutex_t mu;
    pthread_cond_t work_cv; /* the worker: a job may be there, or stop */
    pthread_cond_t done_cv; /* waiters: a computation ended, or a slot is free */
    atomic_int stop;
    int jobs_wanted; /* a job was queued since the worker last looked */
    struct inflight *inflight;
    int computing;
    struct srv_pool *pool;            /* runs the requests that need a diff computed */
    struct srv_tensor_cache *tensors; /* layers read lately, by content */
};

void
srv_diff_key_default(struct srv_diff_key *key, const char *a, const char *b)
{
    key->a = a;
    key->b = b;
    key->truth = "";
    key->atol = SRV_DIFF_ATOL;
    key->rtol = SRV_DIFF_RTOL;
    key->engine_version = gd_version();
}

/* ---- stored runs as gd_run_view ---- */

struct stored_run {
    struct srv_compare *svc;
    double deadline; /* srv_clock() time past which loading more layers fails */
    char id[40];
    json_t *meta, *records;
    struct gd_bundle_layer *layers;
    struct gd_fingerprint *fps; /* fp: per layer, read where the record has one */
    unsigned char *present;     /* fp: per layer, 1 where its tensor is stored */
    struct gd_run_view view;
};

/* A layer record as gd_bundle_open() reads one; run_doc.c checked it at upload. */
static int
layer_from_record(json_t *rec, int i, struct gd_bundle_layer *l, struct gd_err *err)
{
    json_t *shape = json_object_get(rec, "shape");
    const char *dtype = json_string_value(json_object_get(rec, "dtype"));
    memset(l, 0, sizeof *l);
    l->index = i;
    l->name = json_string_value(json_object_get(rec, "name"));
    l->sha256 = json_string_value(json_object_get(rec, "sha256"));
    l->file = json_string_value(json_object_get(rec, "file"));
    if (l->name == NULL || dtype == NULL || gd_dtype_from_name(dtype, &l->dtype) != 0 ||
        !json_is_array(shape) || json_array_size(shape) > GD_MAX_DIMS)
        return gd_err_set(err, GD_EIO, "stored record of layer %d is damaged", i);
    l->shape.ndim = (int)json_array_size(shape);
    for (int k = 0; k < l->shape.ndim; k++)
        l->shape.dim[k] = json_integer_value(json_array_get(shape, (size_t)k));
    const char *op = json_string_value(json_object_get(rec, "op"));
    const char *algo = json_string_value(json_object_get(rec, "algo"));
    const char *math = json_string_value(json_object_get(rec, "math"));
    json_t *t = json_object_get(rec, "time_us"), *red = json_object_get(rec, "reduction_len");
    json_t *disc = json_object_get(rec, "discontinuous"), *ins = json_object_get(rec, "inputs");
    l->op = op != NULL ? op : "";
    const char *node = json_string_value(json_object_get(rec, "node"));
    l->node = node != NULL ? node : "";
    l->algo = algo != NULL ? algo : "";
    l->math = math != NULL ? math : "";
    l->time_us = json_is_number(t) ? json_number_value(t) : -1.0;
    l->reduction_len = json_is_integer(red) ? json_integer_value(red) : 0;
    l->discontinuous = json_is_boolean(disc) ? json_is_true(disc) : -1;
    l->inputs = json_is_array(ins) ? ins : NULL;
    json_t *noise = json_object_get(rec, "noise");
    l->noise = json_is_object(noise) ? noise : NULL; /* run_doc.c checked its form */
    return 0;
}

/* Loads a layer with a connection held for this layer only. */
static int
stored_load(void *user, int index, struct gd_tensor **out, struct gd_err *err)
{
    struct stored_run *r = user;
    if (atomic_load(&r->svc->stop))
        return gd_err_set(err, GD_ECANCELED, "gpudiffd is stopping");
    if (srv_clock() > r->deadline)
        return gd_err_set(err, SRV_EDIFFTIME,
                          "the diff took longer than --diff-timeout-ms (%.0f ms): it was stopped",
                          r->svc->opts.timeout * 1e3);
    /* A layer this run stores whose content was read lately needs no database read. */
    const struct gd_bundle_layer *l =
        index >= 0 && index < r->view.n_layers ? &r->layers[index] : NULL;
    if (l != NULL && r->present[index] &&
        (*out = srv_tensor_cache_get(r->svc->tensors, l->sha256, l->dtype, l->shape.ndim,
                                     l->shape.dim)) != NULL)
        return 0;
    struct srv_db *db = NULL;
    int rc = srv_store_acquire(r->svc->store, &db, err);
    if (rc != 0)
        return rc;
    rc = srv_db_layer_load(db, r->id, index, 0, out, err);
    srv_store_release(r->svc->store, db);
    if (rc == 0 && l != NULL)
        srv_tensor_cache_put(r->svc->tensors, l->sha256, *out);
    /* Data that does not hash right is damaged storage, not a bad request. */
    if (rc == GD_EFORMAT && err != NULL)
        err->code = GD_EIO;
    return rc == GD_EFORMAT ? GD_EIO : rc;
}

static void
stored_run_fini(struct stored_run *r)
{
    free(r->layers);
    free(r->fps);
    free(r->present);
    json_decref(r->meta);
    json_decref(r->records);
    memset(r, 0, sizeof *r);
}

/* fp: each layer's fingerprint where its record has one; a layer whose tensor is not stored
 * (captured as a fingerprint, not fetched yet) is judged from it. */
static int
fingerprints_read(struct srv_db *db, struct stored_run *r, int n, struct gd_err *err)
{
    size_t m = n > 0 ? (size_t)n : 1;
    r->present = malloc(m);
    if (r->present == NULL)
        return gd_err_set(err, GD_ENOMEM, "out of memory");
    int rc = srv_db_layers_present(db, r->id, n, r->present, err);
    for (int i = 0; rc == 0 && i < n; i++) {
        struct gd_bundle_layer *l = &r->layers[i];
        json_t *j = json_object_get(json_array_get(r->records, (size_t)i), "fingerprint");
        l->tensor_absent = !r->present[i];
        if (j == NULL)
            continue;
        if (r->fps == NULL && (r->fps = calloc(m, sizeof *r->fps)) == NULL)
            return gd_err_set(err, GD_ENOMEM, "out of memory for %d fingerprints", n);
        struct gd_err e;
        if (gd_fingerprint_from_json(j, l->dtype, l->shape.ndim, l->shape.dim, &r->fps[i], &e) != 0)
            return gd_err_set(err, GD_EIO, "stored fingerprint of layer %d is damaged: %s", i,
                              e.msg);
        l->fingerprint = &r->fps[i];
    }
    return rc;
}

/* fp: the tensors this diff found worth fetching (struct gd_diff_layer's fetch_a, fetch_b)
 * become requests that gpudiff-agent fetch-layers fulfils. */
static int
requests_record(struct srv_db *db, const struct srv_diff_key *key, const struct gd_diff *d,
                int64_t now, struct gd_err *err)
{
    int rc = 0;
    for (int i = 0; rc == 0 && i < d->n_layers; i++) {
        const struct gd_diff_layer *l = &d->layers[i];
        char reason[96];
        int added = 0;
        snprintf(reason, sizeof reason, "%s from fingerprints", gd_verdict_name(l->verdict));
        if (l->fetch_a && l->index_a >= 0)
            rc = srv_db_request_add(db, key->a, l->index_a, reason, key->b, now, &added, err);
        if (rc == 0 && l->fetch_b && l->index_b >= 0)
            rc = srv_db_request_add(db, key->b, l->index_b, reason, key->a, now, &added, err);
    }
    return rc;
}

static int
stored_run_open(struct srv_compare *svc, struct srv_db *db, const char *id, struct stored_run *r,
                struct gd_err *err)
{
    memset(r, 0, sizeof *r);
    r->svc = svc;
    snprintf(r->id, sizeof r->id, "%s", id);
    int rc = srv_db_run_records(db, id, &r->meta, &r->records, err);
    if (rc != 0)
        return rc;
    int n = (int)json_array_size(r->records);
    r->layers = calloc(n > 0 ? (size_t)n : 1, sizeof *r->layers);
    if (r->layers == NULL)
        rc = gd_err_set(err, GD_ENOMEM, "out of memory");
    for (int i = 0; rc == 0 && i < n; i++)
        rc = layer_from_record(json_array_get(r->records, (size_t)i), i, &r->layers[i], err);
    if (rc == 0)
        rc = fingerprints_read(db, r, n, err);
    if (rc != 0) {
        gd_err_prefix(err, "run %s: ", id);
        stored_run_fini(r);
        return rc;
    }
    r->view.run = r->meta;
    r->view.n_layers = n;
    r->view.layers = r->layers;
    r->view.load = stored_load;
    r->view.user = r;
    return 0;
}

int
srv_compare_output_nonfinite(struct srv_compare *c, const char *run, int64_t *nan, int64_t *inf,
                             struct gd_err *err)
{
    struct stored_run r;
    struct srv_db *db = NULL;
    int rc = srv_store_acquire(c->store, &db, err);
    if (rc == 0)
        rc = stored_run_open(c, db, run, &r, err);
    srv_store_release(c->store, db);
    if (rc != 0)
        return rc;
    int last = r.view.n_layers - 1;
    struct gd_fingerprint fp;
    memset(&fp, 0, sizeof fp);
    if (last >= 0 && r.present[last]) {
        struct gd_tensor *t = NULL;
        r.deadline = srv_clock() + c->opts.timeout;
        rc = stored_load(&r, last, &t, err);
        /* The fingerprint's counts are the tensor's: one pass, every dtype. */
        if (rc == 0)
            rc = gd_fingerprint_compute(t, &fp, err);
        gd_tensor_free(t);
    } else if (last >= 0 && r.layers[last].fingerprint != NULL) {
        fp = *r.layers[last].fingerprint; /* captured as a fingerprint only */
    }
    stored_run_fini(&r);
    if (rc != 0)
        return rc;
    *nan = fp.nan_count;
    *inf = fp.inf_count;
    return 0;
}

/* ---- computing and caching ---- */

static void
key_string(const struct srv_diff_key *key, char out[256])
{
    snprintf(out, 256, "%s|%s|%s|%a|%a|%.60s", key->a, key->b, key->truth ? key->truth : "",
             key->atol, key->rtol, key->engine_version);
}

/*
 * The replay the diff of key uses (docs/SERVER.md, "Replays"): the newest replay of b made on
 * a's device, else of a on b's. 0 with out set, 1 for none, or an error.
 */
static int
find_replay(struct srv_db *db, const struct srv_diff_key *key, char out[40], struct gd_err *err)
{
    int rc = srv_db_replay_find(db, key->b, key->a, out, err);
    if (rc == SRV_ENOTFOUND)
        rc = srv_db_replay_find(db, key->a, key->b, out, err);
    if (rc == 0 && (strcmp(out, key->a) == 0 || strcmp(out, key->b) == 0))
        rc = SRV_ENOTFOUND; /* a replay compared with its own source needs no other */
    if (rc != 0)
        out[0] = '\0'; /* the caller passes a replay when out names one */
    return rc == SRV_ENOTFOUND ? 1 : rc;
}

/*
 * The memory a diff of key needs, estimated from the runs' sizes before anything is read:
 * SRV_EDIFFBIG past --diff-max-memory. Unknown runs are left to stored_run_open().
 */
static int
check_size(struct srv_compare *c, struct srv_db *db, const struct srv_diff_key *key,
           struct gd_err *err)
{
    const char *ids[3] = {key->a, key->b, key->truth};
    int64_t layers = 0, tensors = 0;
    for (int i = 0; i < 3; i++) {
        int64_t n = 0, biggest = 0;
        if (ids[i] == NULL || ids[i][0] == '\0')
            continue;
        int rc = srv_db_run_size(db, ids[i], &n, &biggest, err);
        if (rc == SRV_ENOTFOUND)
            return 0;
        if (rc != 0)
            return rc;
        layers += n;
        tensors += biggest;
    }
    double need = (double)layers * DIFF_BYTES_PER_LAYER + (double)tensors * DIFF_TENSOR_FACTOR;
    if (need > (double)c->opts.max_memory)
        return gd_err_set(err, SRV_EDIFFBIG,
                          "this diff would need about %.0f MB (%lld layers in all), more than "
                          "--diff-max-memory (%lld MB) allows",
                          need / 1048576.0, (long long)layers,
                          (long long)(c->opts.max_memory >> 20));
    return 0;
}

/*
 * Compares and caches; *text gets the JSON text and a newline, as srv_db_diff_json() gives
 * it (may be NULL when not wanted).
 */
static int
compute(struct srv_compare *c, const struct srv_diff_key *key, char **text, size_t *len,
        struct gd_err *err)
{
    double t0 = srv_clock();
    struct stored_run ra, rb, rt, rr;
    char replay[40] = "";
    int has_truth = key->truth != NULL && key->truth[0] != '\0';
    struct gd_diff *d = NULL;
    struct srv_diff_layer_sum *sums = NULL;
    json_t *j = NULL;
    char *json = NULL;
    int big = 0;
    memset(&ra, 0, sizeof ra);
    memset(&rb, 0, sizeof rb);
    memset(&rt, 0, sizeof rt);
    memset(&rr, 0, sizeof rr);
    struct srv_db *db = NULL;
    int rc = srv_store_acquire(c->store, &db, err);
    if (rc != 0)
        return rc;
    rc = check_size(c, db, key, err);
    if (rc == 0)
        rc = stored_run_open(c, db, key->a, &ra, err);
    if (rc == 0)
        rc = stored_run_open(c, db, key->b, &rb, err);
    if (rc == 0 && has_truth)
        rc = stored_run_open(c, db, key->truth, &rt, err);
    if (rc == 0 && (rc = find_replay(db, key, replay, err)) == 0)
        rc = stored_run_open(c, db, replay, &rr, err);
    else if (rc == 1)
        rc = 0;
    srv_store_release(c->store, db);
    db = NULL;
    if (rc != 0)
        goto done;
    ra.deadline = rb.deadline = rt.deadline = rr.deadline = t0 + c->opts.timeout;
    rc = gd_diff_runs_replay(&ra.view, &rb.view, has_truth ? &rt.view : NULL,
                             replay[0] ? &rr.view : NULL, key->atol, key->rtol, &d, err);
    if (rc != 0)
        goto done;
    j = gd_diff_to_json(d, &ra.view, &rb.view, has_truth ? &rt.view : NULL);
    json = j != NULL ? json_dumps(j, JSON_COMPACT) : NULL;
    sums = calloc(d->n_layers > 0 ? (size_t)d->n_layers : 1, sizeof *sums);
    if (json == NULL || sums == NULL) {
        rc = gd_err_set(err, GD_ENOMEM, "out of memory for a diff of %d layers", d->n_layers);
        goto done;
    }
    for (int i = 0; i < d->n_layers; i++) {
        const struct gd_diff_layer *l = &d->layers[i];
        int measured = l->verdict != GD_VERDICT_INCOMPARABLE;
        sums[i].name = l->name;
        sums[i].verdict = gd_verdict_name(l->verdict);
        sums[i].err = measured ? l->err : NAN;
        sums[i].max_abs = measured ? l->m.abs_max : NAN;
    }
    struct srv_diff_row row = {
        .first_divergent = d->first_divergent >= 0 ? d->layers[d->first_divergent].name : NULL,
        .n_layers = d->n_layers,
        .layers = sums,
        .json = json,
        .seconds = srv_clock() - t0,
        .cache_max = c->opts.cache_max,
    };
    srv_metrics_observe_compare(row.seconds);
    rc = srv_store_acquire(c->store, &db, err);
    if (rc == 0)
        rc = srv_db_diff_put(db, key, &row, srv_now(), err);
    if (rc == 0 && d->n_sampled > 0)
        rc = requests_record(db, key, d, srv_now(), err);
    srv_store_release(c->store, db);
    if (rc != 0)
        goto done;
    SRV_LOG(GD_LOG_DEBUG, NULL, "compared run %s with run %s%s%s in %.3f s (%zu bytes)", key->a,
            key->b, has_truth ? " against " : "", has_truth ? key->truth : "", row.seconds,
            strlen(json));
    big = d->n_layers >= TRIM_LAYERS;
    if (text != NULL) {
        size_t n = strlen(json);
        char *t = realloc(json, n + 2);
        if (t == NULL) {
            rc = gd_err_set(err, GD_ENOMEM, "out of memory");
            goto done;
        }
        t[n] = '\n';
        t[n + 1] = '\0';
        *text = t;
        *len = n + 1;
        json = NULL;
    }
done:
    free(json);
    free(sums);
    json_decref(j);
    gd_diff_free(d);
    stored_run_fini(&ra);
    stored_run_fini(&rb);
    stored_run_fini(&rt);
    stored_run_fini(&rr);
    /* Thousands of small blocks were freed: hand the pages back (docs/SERVER.md, "Memory"). */
    if (big)
        malloc_trim(0);
    return rc;
}

/* 0 when key is cached (with its text when text is not NULL), SRV_ENOTFOUND when not. */
static int
lookup(struct srv_compare *c, const struct srv_diff_key *key, char **text, size_t *len,
       struct gd_err *err)
{
    struct srv_db *db = NULL;
    int rc = srv_store_acquire(c->store, &db, err);
    if (rc != 0)
        return rc;
    if (text != NULL) {
        rc = srv_db_diff_json(db, key, text, len, err);
    } else {
        struct srv_diff_summary sum;
        rc = srv_db_diff_summary(db, key, NULL, &sum, err);
    }
    srv_store_release(c->store, db);
    return rc;
}

static struct inflight **
inflight_find(struct srv_compare *c, const char *k)
{
    struct inflight **p = &c->inflight;
    while (*p != NULL && strcmp((*p)->key, k) != 0)
        p = &(*p)->next;
    return p;
}

/*
 * background: the worker's diffs, which nobody waits for, leave one of the `threads`
 * computation slots to requests (when there are two or more).
 */
static int
obtain(struct srv_compare *c, const struct srv_diff_key *key, char **text, size_t *len, int *hit,
       int background, struct gd_err *err)
{
    char k[256];
    key_string(key, k);
    struct inflight mine;
    snprintf(mine.key, sizeof mine.key, "%s", k);
    for (;;) {
        int rc = lookup(c, key, text, len, err);
        if (rc != SRV_ENOTFOUND) {
            if (rc == 0) {
                srv_metrics_add(SRV_M_DIFF_HITS, 1);
                if (hit != NULL)
                    *hit = 1;
            }
            return rc;
        }
        pthread_mutex_lock(&c->mu);
        if (*inflight_find(c, k) != NULL) {
            /* Being computed: wait for it, then read the cache (or compute, if it failed). */
            while (*inflight_find(c, k) != NULL)
                pthread_cond_wait(&c->done_cv, &c->mu);
            pthread_mutex_unlock(&c->mu);
            continue;
        }
        mine.next = c->inflight;
        c->inflight = &mine;
        int slots = background && c->opts.threads > 1 ? c->opts.threads - 1 : c->opts.threads;
        while (c->computing >= slots)
            pthread_cond_wait(&c->done_cv, &c->mu);
        c->computing++;
        pthread_mutex_unlock(&c->mu);

        /* It may have been cached between the lookup and the mark. */
        rc = lookup(c, key, text, len, err);
        int computed = rc == SRV_ENOTFOUND;
        if (computed)
            rc = compute(c, key, text, len, err);

        pthread_mutex_lock(&c->mu);
        c->computing--;
        *inflight_find(c, k) = mine.next;
        pthread_cond_broadcast(&c->done_cv);
        pthread_mutex_unlock(&c->mu);
        if (rc == 0) {
            srv_metrics_add(computed ? SRV_M_DIFF_MISSES : SRV_M_DIFF_HITS, 1);
            if (hit != NULL)
                *hit = !computed;
        }
        return rc;
    }
}

int
srv_compare_json(struct srv_compare *c, const struct srv_diff_key *key, char **text, size_t *len,
                 int *hit, struct gd_err *err)
{
    return obtain(c, key, text, len, hit, 0, err);
}

int
srv_compare_ensure(struct srv_compare *c, const struct srv_diff_key *key, int *hit,
                   struct gd_err *err)
{
    return obtain(c, key, NULL, NULL, hit, 0, err);
}

/* ---- the request pool (pool.c) ---- */

int
srv_compare_reserve(struct srv_compare *c, struct gd_err *err)
{
    return srv_pool_reserve(c->pool, err);
}

void
srv_compare_submit(struct srv_compare *c, struct srv_req *req, void (*run)(struct srv_req *req))
{
    srv_pool_submit(c->pool, req, run);
}

void
srv_compare_load(struct srv_compare *c, int64_t *queued, int64_t *running, int64_t *queue_max,
                 int64_t *threads)
{
    srv_pool_load(c->pool, queued, running, queue_max, threads);
}

/* ---- the worker of the durable jobs ---- */

void
srv_compare_run_finished(struct srv_compare *c, const char *run_id)
{
    (void)run_id;
    if (c == NULL)
        return;
    pthread_mutex_lock(&c->mu);
    c->jobs_wanted = 1;
    pthread_cond_signal(&c->work_cv);
    pthread_mutex_unlock(&c->mu);
}

void
srv_compare_baseline_set(struct srv_compare *c, const char *model)
{
    (void)model;
    srv_compare_run_finished(c, NULL);
}

/* 1 when a failure of a job would not be the same on a retry (the job is then dropped). */
static int
job_failed_for_good(int rc)
{
    return rc == SRV_ENOTFOUND || rc == SRV_ECONFLICT || rc == SRV_EGONE || rc == SRV_EDIFFBIG ||
           rc == SRV_EDIFFTIME || rc == GD_EIO || rc == GD_EFORMAT;
}

/*
 * One pass over the jobs in order. Returns 1 when some job failed for a reason that may
 * pass (the database busy, memory short), so the pass is repeated later.
 */
static int
jobs_pass(struct srv_compare *c)
{
    int64_t after = 0;
    int again = 0;
    /* sec: the diff cache's reads since the last write become its LRU order. */
    struct srv_db *tdb = NULL;
    struct gd_err terr = {0};
    if (srv_store_acquire(c->store, &tdb, &terr) == 0 &&
        srv_db_diff_touch_flush(tdb, srv_now(), &terr) != 0)
        SRV_LOG(GD_LOG_WARN, NULL, "diff cache: %s", terr.msg);
    srv_store_release(c->store, tdb);
    while (!atomic_load(&c->stop)) {
        struct srv_db *db = NULL;
        struct gd_err err = {0};
        struct srv_job job;
        int rc = srv_store_acquire(c->store, &db, &err);
        if (rc == 0)
            rc = srv_db_job_claim(db, after, srv_now(), JOB_CLAIM_SECS, &job, &err);
        int64_t left = 0;
        if (rc == SRV_ENOTFOUND && srv_db_jobs_count(db, &left, &err) == 0 && left > 0)
            again = 1; /* jobs another worker holds: look again once their claims end */
        srv_store_release(c->store, db);
        if (rc == SRV_ENOTFOUND)
            break;
        if (rc != 0) {
            SRV_LOG(GD_LOG_WARN, NULL, "compare jobs: %s", err.msg);
            return 1;
        }
        after = job.id;
        if (job.current) {
            struct srv_diff_key key;
            int hit = 0;
            srv_diff_key_default(&key, job.run, job.baseline);
            double t0 = srv_clock();
            rc = obtain(c, &key, NULL, NULL, &hit, 1, &err);
            if (rc == 0 && !hit)
                SRV_LOG(GD_LOG_INFO, NULL, "run %s compared with baseline %s in %.2f s", job.run,
                        job.baseline, srv_clock() - t0);
            if (rc == GD_ECANCELED || (rc != 0 && !job_failed_for_good(rc))) {
                /* Stopping, or a failure that may pass: the job stays, for a later pass. */
                if (srv_store_acquire(c->store, &db, &err) == 0)
                    srv_db_job_release(db, job.id, &err);
                srv_store_release(c->store, db);
                if (rc == GD_ECANCELED)
                    break;
                again = 1;
                continue;
            }
            if (rc != 0)
                SRV_LOG(GD_LOG_WARN, NULL, "comparing run %s with baseline %s: %s (dropped)",
                        job.run, job.baseline, err.msg);
        }
        rc = srv_store_acquire(c->store, &db, &err);
        if (rc == 0)
            rc = srv_db_job_done(db, job.id, &err);
        srv_store_release(c->store, db);
        if (rc != 0) {
            SRV_LOG(GD_LOG_WARN, NULL, "compare jobs: %s", err.msg);
            again = 1;
        }
    }
    return again;
}

/* The worker's diffs are the ones nobody waits for: below the pool's, and the connections'. */
static void
lower_priority(int nice)
{
    if (setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid), nice) != 0)
        SRV_LOG(GD_LOG_DEBUG, NULL, "setpriority: %s", strerror(errno));
}

static void *
worker(void *arg)
{
    struct srv_compare *c = arg;
    lower_priority(WORKER_NICE);
    pthread_mutex_lock(&c->mu);
    c->jobs_wanted = 1; /* the jobs a previous daemon left */
    while (!atomic_load(&c->stop)) {
        if (!c->jobs_wanted) {
            struct timespec until;
            clock_gettime(CLOCK_REALTIME, &until);
            until.tv_sec += JOB_RESCAN_SECS;
            if (pthread_cond_timedwait(&c->work_cv, &c->mu, &until) != 0)
                c->jobs_wanted = 1;
            continue;
        }
        c->jobs_wanted = 0;
        pthread_mutex_unlock(&c->mu);
        int again = jobs_pass(c);
        pthread_mutex_lock(&c->mu);
        if (again && !c->jobs_wanted && !atomic_load(&c->stop)) {
            struct timespec until;
            clock_gettime(CLOCK_REALTIME, &until);
            until.tv_sec += (time_t)JOB_RETRY_SECS;
            pthread_cond_timedwait(&c->work_cv, &c->mu, &until);
            c->jobs_wanted = 1;
        }
    }
    pthread_mutex_unlock(&c->mu);
    return NULL;
}

static void
compare_free(struct srv_compare *c)
{
    srv_tensor_cache_free(c->tensors);
    pthread_mutex_destroy(&c->mu);
    pthread_cond_destroy(&c->work_cv);
    pthread_cond_destroy(&c->done_cv);
    free(c);
}

int
srv_compare_start(struct srv_store *store, const struct srv_compare_opts *opts,
                  struct srv_compare **out, struct gd_err *err)
{
    struct srv_compare *c = calloc(1, sizeof *c);
    if (c == NULL)
        return gd_err_set(err, GD_ENOMEM, "out of memory");
    c->store = store;
    c->opts.threads = opts != NULL && opts->threads > 0 ? opts->threads : 2;
    c->opts.queue = opts != NULL && opts->queue > 0 ? opts->queue : 64;
    c->opts.timeout = opts != NULL && opts->timeout > 0 ? opts->timeout : 60;
    c->opts.max_memory = opts != NULL && opts->max_memory > 0 ? opts->max_memory : 1LL << 30;
    c->opts.cache_max = opts != NULL && opts->cache_max > 0 ? opts->cache_max : 0;
    atomic_init(&c->stop, 0);
    pthread_mutex_init(&c->mu, NULL);
    pthread_cond_init(&c->work_cv, NULL);
    pthread_cond_init(&c->done_cv, NULL);
    int rc = srv_tensor_cache_new(TENSOR_CACHE_BYTES, &c->tensors, err);
    if (rc == 0)
        rc = srv_pool_start("compare", c->opts.threads, c->opts.queue, POOL_NICE, &c->pool, err);
    if (rc == 0) {
        if (pthread_create(&c->thread, NULL, worker, c) != 0)
            rc = gd_err_set(err, GD_EIO, "cannot start the compare thread");
        else
            c->worker_started = 1;
    }
    if (rc != 0) {
        srv_compare_stop(c);
        return rc;
    }
    *out = c;
    return 0;
}

void
srv_compare_quiesce(struct srv_compare *c)
{
    if (c == NULL)
        return;
    pthread_mutex_lock(&c->mu);
    atomic_store(&c->stop, 1); /* computations end at their next layer */
    pthread_cond_broadcast(&c->work_cv);
    pthread_mutex_unlock(&c->mu);
    srv_pool_quiesce(c->pool);
}

void
srv_compare_stop(struct srv_compare *c)
{
    if (c == NULL)
        return;
    srv_compare_quiesce(c);
    srv_pool_stop(c->pool);
    if (c->worker_started)
        pthread_join(c->thread, NULL);
    compare_free(c);
}
