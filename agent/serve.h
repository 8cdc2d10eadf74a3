/*
 * serve.h: `gpudiff-agent serve` (docs/AGENT.md, "serve"): what its loop (cmd_serve.c) and the
 * running of one lease (serve_task.c) share.
 */
#ifndef GPUDIFF_AGENT_SERVE_H
#define GPUDIFF_AGENT_SERVE_H

#include <limits.h>
#include <signal.h>

#include "jobs.h"

#define SERVE_MAX_DEVICES 8
#define SERVE_KEY_MAX     512 /* the daemon's limit of a device key */

struct agt_serve {
    struct agt_upload_opts up;
    struct agt_http http;
    struct agt_http beat;      /* heartbeats, also sent while http downloads a job's file */
    int64_t max_download_rate; /* --max-download-rate, bytes per second; 0: no limit */
    const char *backends[SERVE_MAX_DEVICES];
    int n_backends;
    /* each device's key (docs/AGENT.md, "serve"): --device-id, else HOST/BACKEND[:GPU]
       and the labels as " label.K=V", sorted */
    char keys[SERVE_MAX_DEVICES][SERVE_KEY_MAX + 1];
    const char *device_id;             /* --device-id, or NULL */
    char serve_id[40];                 /* this serve's identity, kept in CACHE/serve-id */
    int serve_id_fd;                   /* that file, locked while serve runs (-1: none) */
    json_t *labels;                    /* --label, string to string */
    char host[256];
    char cache[PATH_MAX];
    char work[PATH_MAX];
    char self[PATH_MAX]; /* this program, which runs each job as `run` in a child */
    char agent_id[128];
    int once;
    int poll_wait;
    volatile sig_atomic_t *stop;     /* SIGTERM: finish the current lease, then exit */
    volatile sig_atomic_t *hard_stop; /* a second SIGTERM, or SIGINT: fail it now */
};

/* The backend of the device key (NULL when the lease names none of this agent's). */
const char *agt_serve_backend_of(const struct agt_serve *s, const char *key);

/* Gives the lease back (POST .../release): the task is pending again for this device. */
int agt_serve_release(struct agt_serve *s, const char *lease_id, const char *why);

/*
 * Runs one lease (the daemon's poll answer): the files into the cache, `run` in a child
 * with heartbeats while it goes on, then done or fail. A failure of the job is reported to
 * the daemon and returns 0; only a refused token returns non-zero (AGT_EXIT_TOKEN).
 */
int agt_serve_lease(struct agt_serve *s, json_t *lease);

#endif
