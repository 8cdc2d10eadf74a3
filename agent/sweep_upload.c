/*
 * sweep_upload.c: `gpudiff-agent sweep --server`: the sweep's runs go up as ordinary runs,
 * through the same upload as `push` (agt_upload_bundle), and then the sweep document, whose
 * settings name those runs by id, is POSTed to /api/v1/sweeps. The daemon refuses a sweep
 * that names a run it does not hold, so the runs go first.
 */
#include <string.h>

#include "agent.h"
#include "sweep.h"
#include "upload.h"

static int
upload_one(json_t *entry, const struct agt_upload_opts *o, int *n_sent, struct gd_err *err)
{
    const char *dir = json_string_value(json_object_get(entry, "bundle"));
    if (dir == NULL)
        return AGT_EXIT_OK; /* a setting that did not run has no bundle */
    struct agt_upload_stats st;
    int code = agt_upload_bundle(dir, o, &st, err);
    if (code != AGT_EXIT_OK)
        return code;
    (*n_sent)++;
    return AGT_EXIT_OK;
}

/* The document as the daemon keeps it: without the agent's local bundle paths. */
static json_t *
server_doc(json_t *doc)
{
    json_t *copy = json_deep_copy(doc);
    size_t i;
    json_t *s;
    json_object_del(json_object_get(copy, "float64"), "bundle");
    json_array_foreach(json_object_get(copy, "settings"), i, s) {
        json_object_del(s, "bundle");
    }
    return copy;
}

int
agt_sweep_upload(json_t *doc, const struct agt_upload_opts *o, struct gd_err *err)
{
    int sent = 0, code = upload_one(json_object_get(doc, "float64"), o, &sent, err);
    size_t i;
    json_t *s;
    json_array_foreach(json_object_get(doc, "settings"), i, s) {
        if (code != AGT_EXIT_OK)
            break;
        code = upload_one(s, o, &sent, err);
    }
    if (code != AGT_EXIT_OK)
        return code;
    json_t *copy = server_doc(doc);
    char *text = copy ? json_dumps(copy, JSON_COMPACT | JSON_REAL_PRECISION(17)) : NULL;
    json_decref(copy);
    if (text == NULL) {
        gd_err_set(err, GD_ENOMEM, "out of memory");
        return AGT_EXIT_INTERNAL;
    }
    const char *id = json_string_value(json_object_get(doc, "id"));
    json_t *answer = NULL;
    code = agt_upload_post_json("/api/v1/sweeps", text, strlen(text), id, o, &answer, err);
    free(text);
    if (code == AGT_EXIT_OK && o->who != NULL)
        fprintf(stderr, "gpudiff-agent: %s: sweep %s is on the server with its %d runs\n", o->who,
                id, sent);
    json_decref(answer);
    return code;
}
