/*
 * compare.c: the comparison service. A stored run is read by the engine through a
 * gd_run_view made from its records (layers.record, runs.meta) whose `load` is
 * srv_db_layer_load(), holding a database connection for one layer at a time only. Each
 * diff is computed once: its JSON text and per-layer summaries go into the cache in one
 * transaction, requests for a key being computed wait for that computation instead of
 * repeating it, and at most COMPARE_MAX_PARALLEL computations run at once (each holds two
 * or three layers in memory). A worker thread with a queue compares finished runs, and the
 * runs of a model whose baseline was just set, with the baseline, so `finish` and
 * `baseline` answer at once.
 */
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpudiff/diff.h"
#include "gpudiff/run.h"
#include "compare.h"
#include "db.h"

#define QUEUE_MAX            1024
#define COMPARE_MAX_PARALLEL 2
/* A new baseline is compared with at most this many of the model's newest runs at once. */
#define BASELINE_RUNS 1000

enum job_kind { JOB_FINISHED, JOB_BASELINE };

struct job {
    enum job_kind kind;
    char arg[160]; /* a run id or a model name */
};

/* A key being computed; waiters block on done_cv until it leaves the list. */
struct inflight {
    struct inflight *next;
    char key[256];
};

struct srv_compare {
    struct srv_store *store;
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t work_cv; /* the worker: a job, or stop */
    pthread_cond_t done_cv; /* waiters: a computation ended, or a slot is free */
    atomic_int stop;
    struct job queue[QUEUE_MAX];
    int head, count;
    struct inflight *inflight;
    int computing;
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
    char id[40];
    json_t *meta, *records;
    struct gd_bundle_layer *layers;
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
    l->algo = algo != NULL ? algo : "";
    l->math = math != NULL ? math : "";
    l->time_us = json_is_number(t) ? json_number_value(t) : -1.0;
    l->reduction_len = json_is_integer(red) ? json_integer_value(red) : 0;
    l->discontinuous = json_is_boolean(disc) ? json_is_true(disc) : -1;
    l->inputs = json_is_array(ins) ? ins : NULL;
    return 0;
}

/* Loads a layer with a connection held for this layer only. */
static int
stored_load(void *user, int index, struct gd_tensor **out, struct gd_err *err)
{
    struct stored_run *r = user;
    if (atomic_load(&r->svc->stop))
        return gd_err_set(err, GD_ECANCELED, "gpudiffd is stopping");
    struct srv_db *db = NULL;
    int rc = srv_store_acquire(r->svc->store, &db, err);
    if (rc != 0)
        return rc;
    rc = srv_db_layer_load(db, r->id, index, 0, out, err);
    srv_store_release(r->svc->store, db);
    /* Data that does not hash right is damaged storage, not a bad request. */
    if (rc == GD_EFORMAT && err != NULL)
        err->code = GD_EIO;
    return rc == GD_EFORMAT ? GD_EIO : rc;
}

static void
stored_run_fini(struct stored_run *r)
{
    free(r->layers);
    json_decref(r->meta);
    json_decref(r->records);
    memset(r, 0, sizeof *r);
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
    memset(&ra, 0, sizeof ra);
    memset(&rb, 0, sizeof rb);
    memset(&rt, 0, sizeof rt);
    memset(&rr, 0, sizeof rr);
    struct srv_db *db = NULL;
    int rc = srv_store_acquire(c->store, &db, err);
    if (rc != 0)
        return rc;
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
    };
    srv_metrics_observe_compare(row.seconds);
    rc = srv_store_acquire(c->store, &db, err);
    if (rc == 0)
        rc = srv_db_diff_put(db, key, &row, srv_now(), err);
    srv_store_release(c->store, db);
    if (rc != 0)
        goto done;
    SRV_LOG(GD_LOG_DEBUG, NULL, "compared run %s with run %s%s%s in %.3f s (%zu bytes)", key->a,
            key->b, has_truth ? " against " : "", has_truth ? key->truth : "", row.seconds,
            strlen(json));
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

static int
obtain(struct srv_compare *c, const struct srv_diff_key *key, char **text, size_t *len, int *hit,
       struct gd_err *err)
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
        while (c->computing >= COMPARE_MAX_PARALLEL)
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
    return obtain(c, key, text, len, hit, err);
}

int
srv_compare_ensure(struct srv_compare *c, const struct srv_diff_key *key, int *hit,
                   struct gd_err *err)
{
    return obtain(c, key, NULL, NULL, hit, err);
}

/* ---- the worker ---- */

static void
enqueue(struct srv_compare *c, enum job_kind kind, const char *arg)
{
    if (c == NULL)
        return;
    pthread_mutex_lock(&c->mu);
    if (c->count == QUEUE_MAX) {
        pthread_mutex_unlock(&c->mu);
        /* Nothing is lost: a diff that was not made ahead is made when first read. */
        SRV_LOG(GD_LOG_WARN, NULL, "compare queue full: %s is compared when first read", arg);
        return;
    }
    struct job *j = &c->queue[(c->head + c->count) % QUEUE_MAX];
    j->kind = kind;
    snprintf(j->arg, sizeof j->arg, "%s", arg);
    c->count++;
    pthread_cond_signal(&c->work_cv);
    pthread_mutex_unlock(&c->mu);
}

void
srv_compare_run_finished(struct srv_compare *c, const char *run_id)
{
    enqueue(c, JOB_FINISHED, run_id);
}

void
srv_compare_baseline_set(struct srv_compare *c, const char *model)
{
    enqueue(c, JOB_BASELINE, model);
}

static void
compare_with_baseline(struct srv_compare *c, const char *run, const char *baseline)
{
    struct srv_diff_key key;
    struct gd_err err = {0};
    int hit = 0;
    srv_diff_key_default(&key, run, baseline);
    double t0 = srv_clock();
    int rc = srv_compare_ensure(c, &key, &hit, &err);
    if (rc == 0 && !hit)
        SRV_LOG(GD_LOG_INFO, NULL, "run %s compared with baseline %s in %.2f s", run, baseline,
                srv_clock() - t0);
    else if (rc != 0 && rc != GD_ECANCELED)
        SRV_LOG(GD_LOG_WARN, NULL, "comparing run %s with baseline %s: %s", run, baseline, err.msg);
}

static void
do_job(struct srv_compare *c, const struct job *job)
{
    struct srv_db *db = NULL;
    struct gd_err err = {0};
    char baseline[40] = "";
    json_t *runs = NULL;
    int rc = srv_store_acquire(c->store, &db, &err);
    if (rc == 0 && job->kind == JOB_FINISHED)
        rc = srv_db_run_baseline(db, job->arg, baseline, &err);
    if (rc == 0 && job->kind == JOB_BASELINE)
        rc = srv_db_model_baseline(db, job->arg, baseline, &err);
    if (rc == 0 && job->kind == JOB_BASELINE && baseline[0] != '\0')
        rc = srv_db_model_run_ids(db, job->arg, BASELINE_RUNS, &runs, &err);
    srv_store_release(c->store, db);
    if (rc != 0) {
        SRV_LOG(GD_LOG_WARN, NULL, "compare job for %s: %s", job->arg, err.msg);
        return;
    }
    if (baseline[0] == '\0')
        return;
    if (job->kind == JOB_FINISHED) {
        if (strcmp(job->arg, baseline) != 0)
            compare_with_baseline(c, job->arg, baseline);
        return;
    }
    size_t i;
    json_t *id;
    json_array_foreach(runs, i, id)
    {
        if (atomic_load(&c->stop))
            break;
        if (strcmp(json_string_value(id), baseline) != 0)
            compare_with_baseline(c, json_string_value(id), baseline);
    }
    json_decref(runs);
}

static void *
worker(void *arg)
{
    struct srv_compare *c = arg;
    pthread_mutex_lock(&c->mu);
    while (!atomic_load(&c->stop)) {
        if (c->count == 0) {
            pthread_cond_wait(&c->work_cv, &c->mu);
            continue;
        }
        struct job job = c->queue[c->head];
        c->head = (c->head + 1) % QUEUE_MAX;
        c->count--;
        pthread_mutex_unlock(&c->mu);
        do_job(c, &job);
        pthread_mutex_lock(&c->mu);
    }
    pthread_mutex_unlock(&c->mu);
    return NULL;
}

int
srv_compare_start(struct srv_store *store, struct srv_compare **out, struct gd_err *err)
{
    struct srv_compare *c = calloc(1, sizeof *c);
    if (c == NULL)
        return gd_err_set(err, GD_ENOMEM, "out of memory");
    c->store = store;
    atomic_init(&c->stop, 0);
    pthread_mutex_init(&c->mu, NULL);
    pthread_cond_init(&c->work_cv, NULL);
    pthread_cond_init(&c->done_cv, NULL);
    if (pthread_create(&c->thread, NULL, worker, c) != 0) {
        pthread_mutex_destroy(&c->mu);
        pthread_cond_destroy(&c->work_cv);
        pthread_cond_destroy(&c->done_cv);
        free(c);
        return gd_err_set(err, GD_EIO, "cannot start the compare thread");
    }
    *out = c;
    return 0;
}

void
srv_compare_stop(struct srv_compare *c)
{
    if (c == NULL)
        return;
    pthread_mutex_lock(&c->mu);
    atomic_store(&c->stop, 1);
    if (c->count > 0)
        SRV_LOG(GD_LOG_INFO, NULL, "%d queued comparisons dropped (made when first read)",
                c->count);
    c->count = 0;
    pthread_cond_signal(&c->work_cv);
    pthread_mutex_unlock(&c->mu);
    pthread_join(c->thread, NULL);
    pthread_mutex_destroy(&c->mu);
    pthread_cond_destroy(&c->work_cv);
    pthread_cond_destroy(&c->done_cv);
    free(c);
}
