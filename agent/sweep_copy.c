/*
 * sweep_copy.c: copying and comparing a captured layer's bytes with several threads. On the
 * GPU, where the engine is fast, copying captured layers into the sweep's memory was the
 * larger part of the sweep's own time (docs/PERFORMANCE.md: 7.2 s of 63 s for a ResNet-50 at
 * 8 images, about 4 GB/s on one core); memory bandwidth is not one core's. Small copies stay
 * on the calling thread: starting threads costs more than they save below a few MiB.
 */
#include <pthread.h>
#include <string.h>
#include <unistd.h>

#include "sweep.h"

#define PIECE_MIN  ((size_t)4 << 20) /* the least each thread is given */
#define THREADS_MAX 8

struct piece {
    char *dst;               /* NULL: compare */
    const char *a, *b;
    size_t n;
    int differ;
    pthread_t thread;
};

static void *
piece_run(void *arg)
{
    struct piece *p = arg;
    if (p->dst != NULL)
        memcpy(p->dst, p->a, p->n);
    else
        p->differ = memcmp(p->a, p->b, p->n) != 0;
    return NULL;
}

static int
threads_for(size_t n)
{
    static int cores;
    if (cores == 0) {
        long c = sysconf(_SC_NPROCESSORS_ONLN);
        cores = c < 1 ? 1 : c > THREADS_MAX ? THREADS_MAX : (int)c;
    }
    size_t k = n / PIECE_MIN;
    return k < 1 ? 1 : k < (size_t)cores ? (int)k : cores;
}

/* Splits n bytes into k pieces, runs k - 1 on threads and the first here; a thread that
 * cannot start runs here too, so the work is always done. Returns whether any piece of a
 * comparison differed. */
static int
split(char *dst, const char *a, const char *b, size_t n)
{
    struct piece p[THREADS_MAX];
    int k = threads_for(n);
    size_t step = ((n + (size_t)k - 1) / (size_t)k + 63) / 64 * 64; /* k pieces cover n */
    int started[THREADS_MAX] = {0};
    for (int i = 0; i < k; i++) {
        size_t off = step * (size_t)i;
        size_t len = off >= n ? 0 : n - off < step ? n - off : step;
        p[i] = (struct piece){dst ? dst + off : NULL, a + off, b ? b + off : NULL, len, 0, 0};
        if (i > 0 && len > 0)
            started[i] = pthread_create(&p[i].thread, NULL, piece_run, &p[i]) == 0;
    }
    piece_run(&p[0]);
    int differ = p[0].differ;
    for (int i = 1; i < k; i++) {
        if (started[i])
            pthread_join(p[i].thread, NULL);
        else if (p[i].n > 0)
            piece_run(&p[i]);
        differ |= p[i].differ;
    }
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
