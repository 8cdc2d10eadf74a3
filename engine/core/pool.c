/*
 * pool.c: a fixed pool of worker threads that runs the tasks of one job at a time (the CPU
 * backends split an op's outputs into tasks). Tasks are claimed from a shared counter, so
 * which thread runs a task varies from run to run: callers make every task write its own
 * outputs with the same arithmetic whoever runs it, which keeps results bitwise the same
 * for any thread count.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <unistd.h>

#include "internal.h"

struct gd__pool {
    int size; /* threads taking tasks, the caller's included */
    pthread_t *workers;
    int n_started;
    pthread_mutex_t lock;
    pthread_cond_t wake; /* a new job, or shutdown */
    pthread_cond_t idle; /* a worker has left the job */
    /* the job, guarded by lock, read by workers once they see a new generation */
    unsigned long generation;
    int shutdown;
    gd__task_fn fn;
    void *arg;
    int64_t n_tasks;
    int busy; /* workers still inside the current job */
    atomic_int_fast64_t next; /* next unclaimed task */
};

/* Claims and runs tasks of the current job until none is left. */
static void
drain(struct gd__pool *p, int worker)
{
    for (;;) {
        int64_t t = atomic_fetch_add(&p->next, 1);
        if (t >= p->n_tasks)
            return;
        p->fn(p->arg, t, worker);
    }
}

struct worker_start {
    struct gd__pool *pool;
    int index;
};

static void *
worker_main(void *arg)
{
    struct worker_start *ws = arg;
    struct gd__pool *p = ws->pool;
    int index = ws->index;
    free(ws);
    unsigned long seen = 0;
    pthread_mutex_lock(&p->lock);
    for (;;) {
        while (!p->shutdown && p->generation == seen)
            pthread_cond_wait(&p->wake, &p->lock);
        if (p->shutdown)
            break;
        seen = p->generation;
        pthread_mutex_unlock(&p->lock);
        drain(p, index);
        pthread_mutex_lock(&p->lock);
        if (--p->busy == 0)
            pthread_cond_signal(&p->idle);
    }
    pthread_mutex_unlock(&p->lock);
    return NULL;
}

int
gd__pool_threads_default(void)
{
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n < 1 ? 1 : n > GD__POOL_MAX ? GD__POOL_MAX : (int)n;
}

int
gd__pool_new(int threads, struct gd__pool **out, struct gd_err *err)
{
    if (threads < 1 || threads > GD__POOL_MAX)
        return gd_err_set(err, GD_EINVAL, "threads must be 1 to %d, not %d", GD__POOL_MAX,
                          threads);
    struct gd__pool *p = calloc(1, sizeof *p);
    if (p == NULL)
        return gd_err_set(err, GD_ENOMEM, "out of memory for a thread pool");
    p->size = threads;
    pthread_mutex_init(&p->lock, NULL);
    pthread_cond_init(&p->wake, NULL);
    pthread_cond_init(&p->idle, NULL);
    atomic_init(&p->next, 0);
    if (threads > 1 && (p->workers = calloc((size_t)threads - 1, sizeof *p->workers)) == NULL) {
        gd__pool_free(p);
        return gd_err_set(err, GD_ENOMEM, "out of memory for a thread pool");
    }
    for (int i = 1; i < threads; i++) {
        struct worker_start *ws = malloc(sizeof *ws);
        if (ws == NULL) {
            gd__pool_free(p);
            return gd_err_set(err, GD_ENOMEM, "out of memory for a thread pool");
        }
        ws->pool = p;
        ws->index = i;
        if (pthread_create(&p->workers[i - 1], NULL, worker_main, ws) != 0) {
            free(ws);
            gd__pool_free(p);
            return gd_err_set(err, GD_ENOMEM, "cannot start worker thread %d of %d", i,
                              threads);
        }
        p->n_started++;
    }
    *out = p;
    return 0;
}

void
gd__pool_free(struct gd__pool *p)
{
    if (p == NULL)
        return;
    pthread_mutex_lock(&p->lock);
    p->shutdown = 1;
    pthread_cond_broadcast(&p->wake);
    pthread_mutex_unlock(&p->lock);
    for (int i = 0; i < p->n_started; i++)
        pthread_join(p->workers[i], NULL);
    pthread_cond_destroy(&p->idle);
    pthread_cond_destroy(&p->wake);
    pthread_mutex_destroy(&p->lock);
    free(p->workers);
    free(p);
}

int
gd__pool_size(const struct gd__pool *p)
{
    return p == NULL ? 1 : p->size;
}

void
gd__pool_run(struct gd__pool *p, int64_t n_tasks, gd__task_fn fn, void *arg)
{
    if (n_tasks <= 0)
        return;
    /* One task, or no workers: waking threads would cost more than it saves. */
    if (p == NULL || p->n_started == 0 || n_tasks == 1) {
        for (int64_t t = 0; t < n_tasks; t++)
            fn(arg, t, 0);
        return;
    }
    pthread_mutex_lock(&p->lock);
    p->fn = fn;
    p->arg = arg;
    p->n_tasks = n_tasks;
    atomic_store(&p->next, 0);
    p->busy = p->n_started;
    p->generation++;
    pthread_cond_broadcast(&p->wake);
    pthread_mutex_unlock(&p->lock);
    drain(p, 0);
    /* Every worker must have left the job before fn or arg can go away. */
    pthread_mutex_lock(&p->lock);
    while (p->busy > 0)
        pthread_cond_wait(&p->idle, &p->lock);
    pthread_mutex_unlock(&p->lock);
}
