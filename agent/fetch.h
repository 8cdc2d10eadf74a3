/*
 * fetch.h: reading a stored run back from gpudiffd, so a host can replay a run made on
 * another: GET /api/v1/runs/{id} (run.json's fields and layer records) and
 * GET /api/v1/runs/{id}/layers/{index}.npy (one tensor, streamed to a file), retried on
 * connection errors, timeouts and 5xx answers as uploads are. A token goes only where
 * agt_server_token_check() allows it (server_url.h): else the fetch fails with GD_EINVAL
 * before any connection. Needs libcurl.
 */
#ifndef GPUDIFF_AGENT_FETCH_H
#define GPUDIFF_AGENT_FETCH_H

#include <jansson.h>

#include "gpudiff/error.h"

struct agt_fetch_opts {
    const char *server; /* base URL: http://host:8470 */
    const char *token;  /* NULL when the server lets anyone read */
    int retries;        /* failed attempts in a row retried before giving up */
    const char *cacert; /* PEM file of the CAs an https:// server is verified with; NULL:
                           the system's store */
    int insecure_http;  /* a token may go over http:// to a host that is not loopback */
};

/*
 * The run document, or an error naming the server's answer (GD_ENOENT for 404, GD_EIO
 * otherwise); *status is the HTTP status of a refusal (401, 403, ...), 0 when none came.
 */
int agt_fetch_run(const struct agt_fetch_opts *o, const char *id, json_t **out, long *status,
                  struct gd_err *err);

/* Layer index of run id, its .npy bytes written to path (created, replaced on a retry). */
int agt_fetch_layer(const struct agt_fetch_opts *o, const char *id, int index, const char *path,
                    long *status, struct gd_err *err);

#endif
