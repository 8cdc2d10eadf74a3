/*
 * fuzz_run_json.c: libFuzzer entry point over the daemon's run.json checks
 * (srv_run_doc_parse, server/run_doc.c), what POST /api/v1/runs runs on every body.
 * tests/fuzz/run.sh builds and runs it.
 *
 * Besides the sanitizers' findings it aborts when an accepted document breaks a rule the
 * daemon relies on afterwards: a layer's index other than its position, two layers of one
 * name, a layer's raw size that disagrees with its shape or exceeds the limit, records or
 * the stored meta that are not JSON, a missing device key; or when a refusal has no code or
 * no message.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "run_doc.h"
#include "server.h"

#define MAX_LAYER (64u << 20)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct srv_run_doc doc;
    struct gd_err err = {0};
    int rc = srv_run_doc_parse((const char *)data, size, MAX_LAYER, &doc, &err);
    if (rc != 0) {
        if (err.code != rc || err.msg[0] == '\0')
            abort();
        return 0;
    }
    if (doc.device == NULL || doc.meta == NULL || !srv_is_uuid(doc.id))
        abort();
    json_t *meta = json_loads(doc.meta, 0, NULL);
    if (meta == NULL || json_object_get(meta, "layers") != NULL)
        abort();
    json_decref(meta);
    for (int i = 0; i < doc.n_layers; i++) {
        const struct srv_layer_doc *l = &doc.layers[i];
        if (l->index != i || l->raw_size > MAX_LAYER)
            abort();
        uint64_t n = 1;
        for (int d = 0; d < l->ndim; d++)
            n *= (uint64_t)l->shape[d];
        if (n * gd_dtype_size(l->dtype) != l->raw_size)
            abort();
        for (int j = 0; j < i; j++)
            if (strcmp(doc.layers[j].name, l->name) == 0)
                abort();
        json_t *rec = json_loads(l->record, 0, NULL);
        if (rec == NULL)
            abort();
        json_decref(rec);
    }
    srv_run_doc_fini(&doc);
    return 0;
}
