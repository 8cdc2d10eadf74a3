/*
 * sweep_copy.c: copying and comparing a captured layer's bytes with several threads. On the
 * GPU, where the engine is fast, copying captured layers into the sweep's memory was the
 * larger part of the sweep's own time (docs/PERFORMANCE.md: 7.2 s of 63 s for a ResNet-50 at
 * 8 images, about 4 GB/s on one core); memory bandwidth is not one core's. The workers are
 * started once, at the first large copy, and wait for pieces between layers: a layer arrives
 * in pieces of at most half the capture ring, thousands a run, and starting threads for each
 * cost more than the copy. Small copies stay on the calling thread.
 */
#include <pthread.h>
#include <string.h>
#include <unistd.h>

#include "sweep.h"

#define PIECE_MIN   ((size_t)4 << 20) /* the least each thread is given */
#define THREADS_MAX 8

struct piece {
    char *dst; /* NULL: compare */
    const char *a, *b;
    size_t n;
    int differ;
};

/* One job at a time (`user` held by its caller): pieces taken by the workers and the caller. */
static struct {
    pthread_mutex_t user, mu;
    pthread_cond_t go, done;
    pthread_t thread[THREADS_MAX];
    int workers, started, quit;
    struct piece *pieces;
    int n_pieces, next, pending;
} pool = {.user = PTHREAD_MUTEX_INITIALIZER,
          .mu = PTHREAD_MUTEX_INITIALIZER,
          .go = PTHREAD_COND_INITIALIZER,
          .done = PTHREAD_COND_INITIALIZER};

static void
piece_run(struct piece *p)
{
    if (p->dst != NULL)
        memcpy(p->dst, p->a, p->n);
    else
        p->differ = memcmp(p->a, p->b, p->n) != 0;
}

/* Takes and runs pieces until none is left; called and returns with pool.mu held. */
static void
take_pieces(void)
{
    while (pool.next < pool.n_pieces) {
        struct piece *p = &pool.pieces[pool.next++];
        pthread_mutex_unlock(&pool.mu);
        piece_run(p);
        pthread_mutex_lock(&pool.mu);
        if (--pool.pending == 0)
            pthread_cond_signal(&pool.done);
    }
}

static void *
worker(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&pool.mu);
    while (!pool.quit) {
        take_pieces();
        if (!pool.quit)
            pthread_cond_wait(&pool.go, &pool.mu);
    }
    pthread_mutex_unlock(&pool.mu);
    return NULL;
}

static int
cores(void)
{
    static int n;
    if (n == 0) {
        long c = sysconf(_SC_NPROCESSORS_ONLN);
        n = c < 1 ? 1 : c > THREADS_MAX ? THREADS_MAX : (int)c;
    }
    return n;
}

static int
threads_for(size_t n)
{
    size_t k = n / PIECE_MIN;
    return k < 1 ? 1 : k < (size_t)cores() ? (int)k : cores();
}

/* Starts the workers once (cores - 1 of them; those that cannot start are done without). */
static void
start_workers(void)
{
    if (pool.started)
        return;
    pool.started = 1;
    for (int i = 0; i < cores() - 1; i++)
        if (pthread_create(&pool.thread[pool.workers], NULL, worker, NULL) == 0)
            pool.workers++;
}

/* Splits n bytes into k pieces of a multiple of 64 bytes and runs them on the workers and
 * here. Returns whether any piece of a comparison differed. */
static int
split(char *dst, const char *a, const char *b, size_t n)
{
    struct piece p[THREADS_MAX];
    int k = threads_for(n);
    size_t step = ((n + (size_t)k - 1) / (size_t)k + 63) / 64 * 64; /* k pieces cover n */
    for (int i = 0; i < k; i++) {
        size_t off = step * (size_t)i;
        size_t len = off >= n ? 0 : n - off < step ? n - off : step;
        p[i] = (struct piece){dst ? dst + off : NULL, a + off, b ? b + off : NULL, len, 0};
    }
    pthread_mutex_lock(&pool.user);
    pthread_mutex_lock(&pool.mu);
    start_workers();
    pool.pieces = p;
    pool.n_pieces = k;
    pool.next = 0;
    pool.pending = k;
    pthread_cond_broadcast(&pool.go);
    take_pieces();
    while (pool.pending > 0)
        pthread_cond_wait(&pool.done, &pool.mu);
    pool.pieces = NULL;
    pool.n_pieces = pool.next = 0;
    pthread_mutex_unlock(&pool.mu);
    pthread_mutex_unlock(&pool.user);
    int differ = 0;
    for (int i = 0; i < k; i++)
        differ |= p[i].differ;
    return differ;
}

void
agt_sweep_copy(void *dst, const void *src, size_t n)
{
    if (threads_for(n) == 1)
        memcpy(dst, src, n);
    else
        split(dst, src, NULL, n);
}

int
agt_sweep_differ(const void *a, const void *b, size_t n)
{
    if (threads_for(n) == 1)
        return memcmp(a, b, n) != 0;
    return split(NULL, a, b, n);
}

void
agt_sweep_copy_fini(void)
{
    pthread_mutex_lock(&pool.user);
    pthread_mutex_lock(&pool.mu);
    pool.quit = 1;
    pthread_cond_broadcast(&pool.go);
    pthread_mutex_unlock(&pool.mu);
    for (int i = 0; i < pool.workers; i++)
        pthread_join(pool.thread[i], NULL);
    pthread_mutex_lock(&pool.mu);
    pool.workers = pool.started = pool.quit = 0;
    pthread_mutex_unlock(&pool.mu);
    pthread_mutex_unlock(&pool.user);
}
