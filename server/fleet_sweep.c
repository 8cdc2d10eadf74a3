/*
 * fleet_sweep.c: the daemon's periodic part of lease expiry (docs/SERVER.md, "Jobs, devices
 * and leases"). Polls, heartbeats and job reads expire what is due as they meet it; this
 * thread does it every few seconds besides, so a job whose agents all died still ends. A
 * read finds whether anything is due; only then does it take the write lock. With several
 * daemons on one database each runs it; the write transaction makes them agree.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <time.h>

#include "db.h"
#include "server.h"

struct srv_fleet_sweep {
    struct srv_store *store;
    int seconds;
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int stop;
};

static void
sweep_once(struct srv_fleet_sweep *f)
{
    struct srv_db *db = NULL;
    struct gd_err err;
    struct srv_fleet_expired ex = {0};
    int64_t now = srv_now();
    int stale = 0;
    int rc = srv_store_acquire(f->store, &db, &err);
    if (rc != 0) {
        SRV_LOG(GD_LOG_WARN, NULL, "lease expiry: %s", err.msg);
        return;
    }
    rc = srv_db_fleet_stale(db, NULL, now, &stale, &err);
    if (rc == 0 && stale)
        rc = srv_db_fleet_expire(db, now, &ex, &err);
    srv_store_release(f->store, db);
    if (rc != 0)
        SRV_LOG(GD_LOG_WARN, NULL, "lease expiry: %s", err.msg);
    else if (ex.requeued + ex.failed + ex.late + ex.never_answered > 0)
        SRV_LOG(GD_LOG_INFO, NULL,
                "lease expiry: %lld tasks pending again, %lld failed (last attempt), %lld "
                "failed (deadline), %lld never answered",
                (long long)ex.requeued, (long long)ex.failed, (long long)ex.late,
                (long long)ex.never_answered);
}

static void *
loop(void *arg)
{
    struct srv_fleet_sweep *f = arg;
    pthread_mutex_lock(&f->mu);
    while (!f->stop) {
        pthread_mutex_unlock(&f->mu);
        sweep_once(f);
        pthread_mutex_lock(&f->mu);
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_sec += f->seconds;
        while (!f->stop && pthread_cond_timedwait(&f->cv, &f->mu, &until) != ETIMEDOUT)
            ;
    }
    pthread_mutex_unlock(&f->mu);
    return NULL;
}

int
srv_fleet_sweep_start(struct srv_store *store, int seconds, struct srv_fleet_sweep **out,
                      struct gd_err *err)
{
    *out = NULL;
    struct srv_fleet_sweep *f = calloc(1, sizeof *f);
    if (f == NULL)
        return gd_err_set(err, GD_ENOMEM, "out of memory");
    f->store = store;
    f->seconds = seconds > 0 ? seconds : 1;
    pthread_mutex_init(&f->mu, NULL);
    pthread_cond_init(&f->cv, NULL);
    if (pthread_create(&f->thread, NULL, loop, f) != 0) {
        pthread_mutex_destroy(&f->mu);
        pthread_cond_destroy(&f->cv);
        free(f);
        return gd_err_set(err, GD_EIO, "cannot start the lease expiry thread");
    }
    *out = f;
    return 0;
}

void
srv_fleet_sweep_stop(struct srv_fleet_sweep *f)
{
    if (f == NULL)
        return;
    pthread_mutex_lock(&f->mu);
    f->stop = 1;
    pthread_cond_signal(&f->cv);
    pthread_mutex_unlock(&f->mu);
    pthread_join(f->thread, NULL);
    pthread_mutex_destroy(&f->mu);
    pthread_cond_destroy(&f->cv);
    free(f);
}
