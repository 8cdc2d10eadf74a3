/*
 * fleet_check.c: reading and checking the JSON bodies of the jobs, devices and leases routes
 * (fleet.h).
 */
#include <stdio.h>
#include <string.h>

#include "fleet.h"

int
srv_fleet_body(struct srv_req *req, json_t **out)
{
    json_error_t jerr;
    json_t *body = json_loadb(req->body.data ? req->body.data : "", req->body.len,
                              JSON_REJECT_DUPLICATES, &jerr);
    if (body == NULL)
        return srv_req_fail(req, SRV_EBADJSON, "line %d, column %d: %s", jerr.line, jerr.column,
                            jerr.text);
    if (!json_is_object(body)) {
        json_decref(body);
        return srv_req_fail(req, SRV_EBADREQ, "the body must be a JSON object");
    }
    *out = body;
    return 0;
}

int
srv_fleet_keys(struct srv_req *req, json_t *obj, const char *const *known, const char *what)
{
    const char *k;
    json_t *v;
    json_object_foreach(obj, k, v) {
        int ok = 0;
        for (int i = 0; known[i] != NULL && !ok; i++)
            ok = strcmp(k, known[i]) == 0;
        if (!ok) {
            char list[256] = "";
            size_t used = 0;
            for (int i = 0; known[i] != NULL && used < sizeof list; i++)
                used += (size_t)snprintf(list + used, sizeof list - used, "%s%s", i ? ", " : "",
                                         known[i]);
            return srv_req_fail(req, SRV_EBADREQ, "%s: unknown field \"%.64s\" (known: %s)", what,
                                k, list);
        }
    }
    return 0;
}

int
srv_fleet_int(struct srv_req *req, json_t *obj, const char *key, int64_t def, int64_t min,
              int64_t max, int64_t *out)
{
    json_t *v = json_object_get(obj, key);
    if (v == NULL) {
        *out = def;
        return 0;
    }
    if (!json_is_integer(v) || json_integer_value(v) < min || json_integer_value(v) > max)
        return srv_req_fail(req, SRV_EBADREQ, "%s must be an integer from %lld to %lld", key,
                            (long long)min, (long long)max);
    *out = json_integer_value(v);
    return 0;
}
