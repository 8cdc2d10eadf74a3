/*
 * knobs_json.c: run.json's "knobs" object, as run, replay and sweep write it: the knobs that
 * change numerics as the backend resolved them, and the thread count (which changes the time
 * only).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "gpudiff/run.h"
#include "agent.h"

json_t *
agt_knobs_json(const char *backend, const struct gd_knobs *k, const struct gd_env *env)
{
    json_t *j = json_object();
    char emulate[320];
    gd_knobs_emulate_text(k, emulate, sizeof emulate);
    json_object_set_new(j, "emulate", json_string(emulate));
    json_object_set_new(j, "batch", k->batch > 0 ? json_integer(k->batch) : json_null());
    /* the model's float weights and inputs cast at load (--dtype); null: as the model has them */
    json_object_set_new(j, "dtype", k->dtype[0] ? json_string(k->dtype) : json_null());
    /* The CPU backends' thread count as resolved (0 asks for one per core). */
    const char *threads = env != NULL ? gd_env_get(env, "cpu_threads") : NULL;
    if (threads != NULL)
        json_object_set_new(j, "threads", json_integer(atoi(threads)));
    else if (k->threads > 0)
        json_object_set_new(j, "threads", json_integer(k->threads));
    /* bitwise mode: as the backend resolved it (cuda records off too; cpu only when asked) */
    const char *repro = env != NULL ? gd_env_get(env, "repro") : NULL;
    if (repro == NULL && k->repro[0] != '\0')
        repro = k->repro;
    if (repro != NULL)
        json_object_set_new(j, "repro", json_string(repro));
    if (strcmp(backend != NULL ? backend : "cpu", "cuda") == 0) {
        json_object_set_new(j, "conv_algo",
                            json_string(k->conv_algo[0] ? k->conv_algo : "heuristic"));
        json_object_set_new(j, "conv_api", json_string(k->conv_api[0] ? k->conv_api : "graph"));
        json_object_set_new(j, "tf32", json_boolean(k->tf32 == 1));
        json_object_set_new(j, "math_mode",
                            json_string(k->math_mode[0] ? k->math_mode : "default"));
        json_object_set_new(j, "workspace_limit",
                            k->workspace_limit >= 0 ? json_integer(k->workspace_limit)
                                                    : json_null());
        if (k->conv_pins[0] != '\0')
            json_object_set_new(j, "conv_pins", json_string(k->conv_pins));
        /* half GEMMs' split-K reduction in the half format: as the backend resolved it */
        const char *rr = env != NULL ? gd_env_get(env, "reduced_reduction") : NULL;
        json_object_set_new(j, "reduced_reduction",
                            json_boolean(rr != NULL ? strcmp(rr, "on") == 0
                                         : k->reduced_reduction == 1 ||
                                               (k->reduced_reduction < 0 &&
                                                strcmp(k->math_mode, "pedantic") != 0)));
    }
    return j;
}
