/*
 * health.c: whether the database answers, as GET /healthz reports it (server.h, "health").
 * A thread of its own asks the database for its schema version every second, with its own
 * pooled connection; /healthz reads the last answer from memory. Before, each /healthz took a
 * database connection and ran the query itself: on PostgreSQL a round trip to a backend
 * that competes with the upload commits for the CPU, on SQLite a wait for a free connection
 * when every one was in use, so the probe a balancer reads every 200 ms took as long as the
 * slowest write around it (docs/PERFORMANCE.md, "Latency under 64 uploaders").
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "db.h"
#include "server.h"

struct srv_health {
    struct srv_store *store;
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int stop, started;
    /* the last check, under mu */
    int ok, version;
    double checked_at; /* srv_clock() */
    char msg[256];
};

static void
check(struct srv_health *h)
{
    struct srv_db *db = NULL;
    struct gd_err err = {0};
    int version = 0;
    int rc = srv_store_acquire(h->store, &db, &err);
    if (rc == 0)
        rc = srv_db_version(db, &version, &err);
    srv_store_release(h->store, db);
    pthread_mutex_lock(&h->mu);
    h->checked_at = srv_clock();
    h->ok = rc == 0;
    if (rc == 0) {
        h->version = version;
        h->msg[0] = '\0';
    } else {
        snprintf(h->msg, sizeof h->msg, "%s", err.msg[0] ? err.msg : "the database failed");
    }
    pthread_mutex_unlock(&h->mu);
}

static void *
loop(void *arg)
{
    struct srv_health *h = arg;
    pthread_mutex_lock(&h->mu);
    while (!h->stop) {
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_sec += SRV_HEALTH_EVERY_S;
        while (!h->stop && pthread_cond_timedwait(&h->cv, &h->mu, &until) != ETIMEDOUT)
            ;
        if (h->stop)
            break;
        pthread_mutex_unlock(&h->mu);
        check(h);
        pthread_mutex_lock(&h->mu);
    }
    pthread_mutex_unlock(&h->mu);
    return NULL;
}

int
srv_health_start(struct srv_store *store, struct srv_health **out, struct gd_err *err)
{
    *out = NULL;
    struct srv_health *h = calloc(1, sizeof *h);
    if (h == NULL)
        return gd_err_set(err, GD_ENOMEM, "out of memory");
    h->store = store;
    pthread_mutex_init(&h->mu, NULL);
    pthread_cond_init(&h->cv, NULL);
    check(h); /* the first answer before the first request */
    if (pthread_create(&h->thread, NULL, loop, h) != 0) {
        srv_health_stop(h);
        return gd_err_set(err, GD_EIO, "cannot start the health thread");
    }
    h->started = 1;
    *out = h;
    return 0;
}

void
srv_health_stop(struct srv_health *h)
{
    if (h == NULL)
        return;
    if (h->started) {
        pthread_mutex_lock(&h->mu);
        h->stop = 1;
        pthread_cond_signal(&h->cv);
        pthread_mutex_unlock(&h->mu);
        pthread_join(h->thread, NULL);
    }
    pthread_mutex_destroy(&h->mu);
    pthread_cond_destroy(&h->cv);
    free(h);
}

int
srv_health_get(struct srv_health *h, int *version, double *age, char *msg, size_t size)
{
    pthread_mutex_lock(&h->mu);
    double a = srv_clock() - h->checked_at;
    int ok = h->ok && a <= SRV_HEALTH_STALE_S;
    *version = h->version;
    *age = a;
    if (!h->ok)
        snprintf(msg, size, "the database did not answer: %s", h->msg);
    else if (!ok)
        snprintf(msg, size, "the database has not answered for %.0f s", a);
    else if (size > 0)
        msg[0] = '\0';
    pthread_mutex_unlock(&h->mu);
    return ok;
}
