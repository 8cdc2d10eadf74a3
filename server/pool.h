/*
 * pool.h: a fixed set of threads that run requests taken off the threads serving
 * connections (docs/SERVER.md, "Comparisons" and "Writes"): http.c suspends a request's
 * connection, queues the request here, and the function it gave runs it on a pool thread
 * and resumes it. The queue is bounded; a place is reserved before the connection is
 * suspended, so a full queue is answered at once.
 */
#ifndef GPUDIFF_SERVER_POOL_H
#define GPUDIFF_SERVER_POOL_H

#include <stdint.h>

#include "gpudiff/error.h"

struct srv_pool;
struct srv_req;

/*
 * Starts threads threads at nice value nice (0 for none), with room for queue requests.
 * name is used in messages ("compare", "write").
 */
int srv_pool_start(const char *name, int threads, int queue, int nice, struct srv_pool **out,
                   struct gd_err *err);

/*
 * Takes a place in the queue, or fails with SRV_EQUEUE when it is full (GD_ECANCELED once
 * the pool is stopping). Every successful reserve is followed by one srv_pool_submit().
 */
int srv_pool_reserve(struct srv_pool *p, struct gd_err *err);

/* Runs run(req) on a pool thread, in the place reserved. */
void srv_pool_submit(struct srv_pool *p, struct srv_req *req, void (*run)(struct srv_req *req));

/* Queued (reserved included) and running requests, and the limits. */
void srv_pool_load(struct srv_pool *p, int64_t *queued, int64_t *running, int64_t *queue_max,
                   int64_t *threads);

/*
 * Refuses new requests and waits until none is queued or running (those queued still run:
 * their functions must finish fast once the work they wait for is canceled). Accepts NULL.
 */
void srv_pool_quiesce(struct srv_pool *p);

/* Quiesces, joins the threads and frees the pool. Accepts NULL. */
void srv_pool_stop(struct srv_pool *p);

#endif
