/*
 * fleet.h: what the routes of jobs, devices and leases share (route_agents.c,
 * route_fleet_jobs.c, route_leases.c; docs/SERVER.md, "Jobs, devices and leases"): reading and
 * checking their JSON bodies.
 */
#ifndef GPUDIFF_SERVER_FLEET_H
#define GPUDIFF_SERVER_FLEET_H

#include <jansson.h>

#include "server.h"

/* The request's body as a JSON object (duplicate keys refused), or an error in req. */
int srv_fleet_body(struct srv_req *req, json_t **out);

/*
 * Fails with SRV_EBADREQ naming the first key of obj outside the NULL-terminated list
 * known; `what` says where ("the body", "files[2]").
 */
int srv_fleet_keys(struct srv_req *req, json_t *obj, const char *const *known, const char *what);

/* An optional integer field: def when absent, else within min..max (SRV_EBADREQ). */
int srv_fleet_int(struct srv_req *req, json_t *obj, const char *key, int64_t def, int64_t min,
                  int64_t max, int64_t *out);

#endif
