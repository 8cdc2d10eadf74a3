/*
 * retention.c: with --retention-days N, the tensors of runs received more than N days ago
 * are dropped (their records and summaries stay), at start and then once a day, in a thread
 * of its own that a condition variable wakes for shutdown.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <time.h>

#include "db.h"
#include "server.h"

#define DAY (24 * 3600)

struct srv_retention {
    struct srv_store *store;
    int64_t days;
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int stop;
};

static void
run_once(struct srv_retention *r)
{
    struct srv_db *db = NULL;
    struct gd_err err;
    int64_t trimmed = 0, deleted = 0, blobs = 0;
    int64_t cutoff = srv_now() - r->days * DAY;
    int rc = srv_store_acquire(r->store, &db, &err);
    if (rc == 0) {
        rc = srv_db_retention(db, cutoff, &trimmed, &deleted, &blobs, &err);
        srv_store_release(r->store, db);
    }
    if (rc != 0)
        SRV_LOG(GD_LOG_ERROR, NULL, "retention: %s", err.msg);
    else
        SRV_LOG(GD_LOG_INFO, NULL,
                "retention (%lld days): %lld runs trimmed, %lld unfinished runs deleted, "
                "%lld blobs deleted",
                (long long)r->days, (long long)trimmed, (long long)deleted, (long long)blobs);
}

static void *
loop(void *arg)
{
    struct srv_retention *r = arg;
    pthread_mutex_lock(&r->mu);
    while (!r->stop) {
        pthread_mutex_unlock(&r->mu);
        run_once(r);
        pthread_mutex_lock(&r->mu);
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_sec += DAY;
        while (!r->stop && pthread_cond_timedwait(&r->cv, &r->mu, &until) != ETIMEDOUT)
            ;
    }
    pthread_mutex_unlock(&r->mu);
    return NULL;
}

int
srv_retention_start(struct srv_store *store, int64_t days, struct srv_retention **out,
                    struct gd_err *err)
{
    *out = NULL;
    if (days <= 0)
        return 0;
    struct srv_retention *r = calloc(1, sizeof *r);
    if (r == NULL)
        return gd_err_set(err, GD_ENOMEM, "out of memory");
    r->store = store;
    r->days = days;
    pthread_mutex_init(&r->mu, NULL);
    pthread_cond_init(&r->cv, NULL);
    if (pthread_create(&r->thread, NULL, loop, r) != 0) {
        pthread_mutex_destroy(&r->mu);
        pthread_cond_destroy(&r->cv);
        free(r);
        return gd_err_set(err, GD_EIO, "cannot start the retention thread");
    }
    *out = r;
    return 0;
}

void
srv_retention_stop(struct srv_retention *r)
{
    if (r == NULL)
        return;
    pthread_mutex_lock(&r->mu);
    r->stop = 1;
    pthread_cond_signal(&r->cv);
    pthread_mutex_unlock(&r->mu);
    pthread_join(r->thread, NULL);
    pthread_mutex_destroy(&r->mu);
    pthread_cond_destroy(&r->cv);
    free(r);
}
