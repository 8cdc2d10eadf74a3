/*
 * run_doc.h: a run.json received by POST /api/v1/runs, parsed and checked against the rules
 * of schema/json/run.schema.json (types, ranges, patterns) plus the server's own: names from
 * a safe alphabet, layer indexes equal to positions, dtypes with a .npy form, and layers
 * small enough for --max-body.
 */
#ifndef GPUDIFF_SERVER_RUN_DOC_H
#define GPUDIFF_SERVER_RUN_DOC_H

#include <stdint.h>

#include <jansson.h>

#include "gpudiff/error.h"
#include "gpudiff/tensor.h"

#define SRV_RUN_MAX_LAYERS 100000

struct srv_layer_doc {
    int index;
    const char *name; /* borrowed from the document, like every string here */
    const char *op;   /* "" when absent */
    enum gd_dtype dtype;
    int ndim;
    int64_t shape[GD_MAX_DIMS];
    uint64_t raw_size; /* numel x element size */
    const char *sha256;
    int64_t reduction_len; /* 0 when absent */
    int discontinuous;     /* -1 when absent */
    char *shape_json;      /* owned */
    char *record;          /* the layer record as canonical JSON, owned */
};

struct srv_run_doc {
    json_t *root; /* owned */
    const char *id, *model_name, *model_sha256, *backend, *gpu, *host, *created_at;
    int64_t created_ts;
    char content_sha256[65]; /* of the whole document in canonical form */
    char *meta;              /* the document without "layers", canonical JSON, owned */
    char *device;            /* the device key (srv_device_key), owned */
    int n_layers;
    struct srv_layer_doc *layers;
    int64_t owner_token; /* sec: not from the document: the token posting it (0: none) */
};

/*
 * Parses len bytes of text. SRV_EBADJSON when it is not JSON (with line and column),
 * SRV_EBADREQ naming the first field that breaks a rule ("layers[3].shape[1]: ..."),
 * GD_ERANGE for a layer larger than max_layer_bytes. doc is filled only on success.
 */
int srv_run_doc_parse(const char *text, size_t len, uint64_t max_layer_bytes,
                      struct srv_run_doc *doc, struct gd_err *err);

void srv_run_doc_fini(struct srv_run_doc *doc);

#endif
