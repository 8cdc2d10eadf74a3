/*
 * sweep_doc.h: a sweep document received by POST /api/v1/sweeps (what `gpudiff-agent sweep`
 * makes, schema/json/sweep.schema.json), parsed and checked: the fields the daemon files it
 * by, the runs it names, and the rows of the table the dashboard draws (one per setting:
 * its cost and its error against float64 and the strict setting), copied with their types
 * checked. The rest of the document is kept as it came, canonical.
 */
#ifndef GPUDIFF_SERVER_SWEEP_DOC_H
#define GPUDIFF_SERVER_SWEEP_DOC_H

#include <stdint.h>

#include <jansson.h>

#include "gpudiff/error.h"

#define SRV_SWEEP_MAX_SETTINGS 10000

/* A run the sweep names: its float64 reference or a setting's first capture. */
struct srv_sweep_run {
    const char *run_id;  /* borrowed from the document */
    const char *role;    /* "float64" or "setting" */
    const char *setting; /* the setting's name; "" for float64 */
};

struct srv_sweep_doc {
    json_t *root; /* owned */
    const char *id, *model, *backend, *gpu, *created_at;
    int64_t created_ts;
    int n_settings;
    char content_sha256[65]; /* of the canonical document: idempotency */
    char *doc;               /* the document, canonical JSON, owned */
    char *summary;           /* what the list shows, JSON, owned */
    char *table;             /* one row per setting, JSON, owned */
    int n_runs;
    struct srv_sweep_run *runs; /* owned array */
};

/*
 * Parses len bytes of text. SRV_EBADJSON when it is not JSON, SRV_EBADREQ naming the first
 * field that breaks a rule ("settings[2].run: ..."). doc is filled only on success.
 */
int srv_sweep_doc_parse(const char *text, size_t len, struct srv_sweep_doc *doc,
                        struct gd_err *err);

void srv_sweep_doc_fini(struct srv_sweep_doc *doc);

#endif
