/*
 * pool.c: the request pools (pool.h). A ring of queued requests under one mutex; each
 * thread takes the oldest. Threads may run at a lower priority than the threads serving
 * connections (a nice value per thread: Linux schedules threads as tasks), so what they
 * compute never keeps /healthz or a cached read from the CPU.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "pool.h"
#include "server.h"

struct item {
    struct srv_req *req;
    void (*run)(struct srv_req *req);
};

struct srv_pool {
    char name[16];
    int nice;
    pthread_mutex_t mu;
    pthread_cond_t cv;   /* threads: an item, or stop */
    pthread_cond_t idle; /* quiesce: nothing queued or running */
    struct item *items;  /* a ring of `queue` */
    int queue, head, count, reserved, running, stop;
    pthread_t *threads;
    int n_threads, n_started;
};

static void *
pool_thread(void *arg)
{
    struct srv_pool *p = arg;
    if (p->nice != 0 && setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid), p->nice) != 0)
        SRV_LOG(GD_LOG_DEBUG, NULL, "%s pool: setpriority: %s", p->name, strerror(errno));
    pthread_mutex_lock(&p->mu);
    for (;;) {
        if (p->count == 0) {
            if (p->stop)
                break;
            pthread_cond_wait(&p->cv, &p->mu);
            continue;
        }
        struct item it = p->items[p->head];
        p->head = (p->head + 1) % p->queue;
        p->count--;
        p->running++;
        pthread_mutex_unlock(&p->mu);
        it.run(it.req);
        pthread_mutex_lock(&p->mu);
        p->running--;
        if (p->count == 0 && p->running == 0 && p->reserved == 0)
            pthread_cond_broadcast(&p->idle);
    }
    pthread_mutex_unlock(&p->mu);
    return NULL;
}

int
srv_pool_start(const char *name, int threads, int queue, int nice, struct srv_pool **out,
               struct gd_err *err)
{
    struct srv_pool *p = calloc(1, sizeof *p);
    if (p == NULL)
        return gd_err_set(err, GD_ENOMEM, "out of memory");
    snprintf(p->name, sizeof p->name, "%s", name);
    p->nice = nice;
    p->queue = queue > 0 ? queue : 1;
    p->n_threads = threads > 0 ? threads : 1;
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->cv, NULL);
    pthread_cond_init(&p->idle, NULL);
    p->items = calloc((size_t)p->queue, sizeof *p->items);
    p->threads = calloc((size_t)p->n_threads, sizeof *p->threads);
    int rc = 0;
    if (p->items == NULL || p->threads == NULL)
        rc = gd_err_set(err, GD_ENOMEM, "out of memory");
    for (int i = 0; rc == 0 && i < p->n_threads; i++) {
        if (pthread_create(&p->threads[i], NULL, pool_thread, p) != 0)
            rc = gd_err_set(err, GD_EIO, "cannot start the %s pool", name);
        else
            p->n_started++;
    }
    if (rc != 0) {
        srv_pool_stop(p);
        return rc;
    }
    *out = p;
    return 0;
}

int
srv_pool_reserve(struct srv_pool *p, struct gd_err *err)
{
    pthread_mutex_lock(&p->mu);
    int rc = 0;
    if (p->stop)
        rc = gd_err_set(err, GD_ECANCELED, "gpudiffd is stopping");
    else if (p->count + p->reserved >= p->queue)
        rc = gd_err_set(err, SRV_EQUEUE,
                        "%d requests are waiting for the %s pool already: retry in a moment",
                        p->count + p->reserved, p->name);
    else
        p->reserved++;
    pthread_mutex_unlock(&p->mu);
    return rc;
}

void
srv_pool_submit(struct srv_pool *p, struct srv_req *req, void (*run)(struct srv_req *req))
{
    pthread_mutex_lock(&p->mu);
    p->reserved--;
    struct item *it = &p->items[(p->head + p->count) % p->queue];
    it->req = req;
    it->run = run;
    p->count++;
    pthread_cond_signal(&p->cv);
    pthread_mutex_unlock(&p->mu);
}

void
srv_pool_load(struct srv_pool *p, int64_t *queued, int64_t *running, int64_t *queue_max,
              int64_t *threads)
{
    pthread_mutex_lock(&p->mu);
    *queued = p->count + p->reserved;
    *running = p->running;
    *queue_max = p->queue;
    *threads = p->n_threads;
    pthread_mutex_unlock(&p->mu);
}

void
srv_pool_quiesce(struct srv_pool *p)
{
    if (p == NULL)
        return;
    pthread_mutex_lock(&p->mu);
    p->stop = 1;
    pthread_cond_broadcast(&p->cv);
    while (p->n_started > 0 && (p->count > 0 || p->running > 0 || p->reserved > 0))
        pthread_cond_wait(&p->idle, &p->mu);
    pthread_mutex_unlock(&p->mu);
}

void
srv_pool_stop(struct srv_pool *p)
{
    if (p == NULL)
        return;
    srv_pool_quiesce(p);
    for (int i = 0; i < p->n_started; i++)
        pthread_join(p->threads[i], NULL);
    pthread_mutex_destroy(&p->mu);
    pthread_cond_destroy(&p->cv);
    pthread_cond_destroy(&p->idle);
    free(p->items);
    free(p->threads);
    free(p);
}
