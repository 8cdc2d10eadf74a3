/*
 * cmd_fetch_layers.c: `gpudiff-agent fetch-layers --server URL RUN_ID`: sends the tensors gpudiffd
 * asked for where a run holds only fingerprints (docs/AGENT.md, "fetch-layers"). It reads the
 * run's pending requests and its "rerun" record, runs the model again on this host with the
 * recorded options and --capture layers=(the names asked for), checks that the model and
 * input are the ones the run recorded (their SHA-256), and PUTs each asked-for layer to the
 * original run, where the daemon checks it against the fingerprint's BLAKE3 before storing it.
 */
#define _GNU_SOURCE /* asprintf, nftw */
#include <ftw.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "gpudiff/bundle.h"
#include "agent.h"
#include "run_opts.h"
#include "upload.h"

#define PATTERN_MAX 1000 /* run's layers= patterns are read through a 1024-byte buffer */

static void
usage(FILE *out)
{
    fprintf(out,
            "Usage: gpudiff-agent fetch-layers --server URL RUN_ID [OPTIONS]\n\n"
            "Sends the layer tensors gpudiffd asked for where run RUN_ID holds only\n"
            "fingerprints (run --capture fingerprint or layers=PATTERN): it lists the run's\n"
            "pending requests, runs the model again on this host with the options the run\n"
            "recorded (run.json's \"rerun\": model, inputs, weights, backend, knobs) capturing\n"
            "those layers only, checks that the model's and inputs' SHA-256 are the ones the\n"
            "run recorded, and uploads each layer to the run. The daemon stores a layer only\n"
            "when its data's BLAKE3 is the fingerprint's, so a re-run that does not reproduce\n"
            "the run's bits is refused (exit 8) and nothing is stored. Run it on the host (and\n"
            "GPU) that made the run, with the model and input files where the run found them.\n"
            "Prints a line per layer sent on stdout; messages go to stderr.\n\n"
            "Required:\n"
            "  RUN_ID              the run's id (run.json's \"id\")\n");
    agt_upload_usage(out);
    fprintf(out, "\nOptions:\n"
                 "  --keep DIR          keep the re-run's bundle in DIR (default: a temporary\n"
                 "                      folder, removed at the end)\n"
                 "  -h, --help          this help\n\n");
    agt_print_exit_codes(out);
}

/* The SHA-256s a run.json records for its model and inputs, concatenated, into buf. */
static void
identity(json_t *run, char *buf, size_t size)
{
    const char *m = json_string_value(json_object_get(json_object_get(run, "model"), "sha256"));
    size_t used = (size_t)snprintf(buf, size, "%s", m ? m : "-");
    json_t *one = json_object_get(run, "input"), *many = json_object_get(run, "inputs");
    const char *s = json_string_value(json_object_get(one, "sha256"));
    if (s != NULL && used < size)
        used += (size_t)snprintf(buf + used, size - used, " %s", s);
    size_t i;
    json_t *v;
    json_array_foreach(many, i, v)
    {
        s = json_string_value(json_object_get(v, "sha256"));
        if (s != NULL && used < size)
            used += (size_t)snprintf(buf + used, size - used, " %s", s);
    }
}

/* Runs `run ARGS --capture layers=PATTERN --out DIR --replace` in this process, up to the
 * last layer asked for, its table kept off stdout (stdout is this command's list of layers
 * sent). */
static int
rerun(json_t *args, const char *pattern, const char *dir)
{
    size_t n = json_array_size(args);
    char **argv = calloc(n + 2, sizeof *argv);
    char *capture = NULL;
    if (argv == NULL || asprintf(&capture, "layers=%s", pattern) < 0) {
        free(argv);
        fprintf(stderr, "gpudiff-agent fetch-layers: out of memory\n");
        return AGT_EXIT_INTERNAL;
    }
    int argc = 0;
    argv[argc++] = "run";
    for (size_t i = 0; i < n; i++)
        argv[argc++] = (char *)json_string_value(json_array_get(args, i));
    struct agt_run_opts o;
    agt_run_opts_init(&o);
    /* the record's own --out (none is written) would be required: stand in for it */
    o.out = dir;
    int code = agt_run_parse(argc, argv, &o) != 0 ? AGT_EXIT_INPUT : AGT_EXIT_OK;
    if (code != AGT_EXIT_OK) {
        fprintf(stderr, "gpudiff-agent fetch-layers: the run's \"rerun\" record is not a "
                        "command line this agent takes (see above)\n");
    } else {
        snprintf(o.knobs.capture, sizeof o.knobs.capture, "%s", capture);
        /* the tensors are what is sent: the run it fetches for has its noise probes */
        o.knobs.noise_probe = 0;
        o.out = dir;
        o.replace = 1;
        o.json = 0;
        o.stop_after_selected = 1;
        memset(&o.upload, 0, sizeof o.upload); /* the re-run itself uploads nothing */
        fflush(stdout);
        int saved = dup(STDOUT_FILENO);
        if (saved >= 0)
            dup2(STDERR_FILENO, STDOUT_FILENO);
        code = agt_run_execute(&o);
        fflush(stdout);
        if (saved >= 0) {
            dup2(saved, STDOUT_FILENO);
            close(saved);
        }
    }
    agt_run_opts_fini(&o);
    free(capture);
    free(argv);
    return code;
}

/* Sends the pending layers of run id that bundle dir holds; *sent counts them. */
static int
send_layers(const char *id, json_t *stored_layers, json_t *pending, const char *dir,
            const struct agt_upload_opts *o, int *sent, struct gd_err *err)
{
    struct gd_bundle *b = NULL;
    if (gd_bundle_open(dir, &b, err) != 0)
        return AGT_EXIT_INPUT;
    int code = AGT_EXIT_OK;
    size_t k;
    json_t *v;
    json_array_foreach(pending, k, v)
    {
        int idx = (int)json_integer_value(v);
        const char *name =
            json_string_value(json_object_get(json_array_get(stored_layers, (size_t)idx), "name"));
        if (idx < 0 || idx >= b->n_layers || name == NULL ||
            strcmp(b->layers[idx].name, name) != 0) {
            gd_err_set(err, GD_EINVAL,
                       "layer %d is %s in the run but %s in the re-run: not the same model", idx,
                       name ? name : "?", idx < b->n_layers ? b->layers[idx].name : "absent");
            code = AGT_EXIT_INPUT;
            break;
        }
        if (b->layers[idx].file == NULL)
            continue; /* a later batch of names captures it */
        char path[256], *file = NULL;
        snprintf(path, sizeof path, "/api/v1/runs/%s/layers/%d", id, idx);
        if (asprintf(&file, "%s/%s", dir, b->layers[idx].file) < 0) {
            code = AGT_EXIT_INTERNAL;
            break;
        }
        json_t *answer = NULL;
        code = agt_upload_put_file(path, file, id, o, &answer, err);
        free(file);
        json_decref(answer);
        if (code != AGT_EXIT_OK)
            break;
        printf("layer %d %s: sent\n", idx, name);
        (*sent)++;
    }
    gd_bundle_close(b);
    return code;
}

static int
remove_one(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb;
    (void)flag;
    (void)ftw;
    return remove(path);
}

static int
fetch(const char *id, const char *keep, const struct agt_upload_opts *o)
{
    struct gd_err err = {0};
    json_t *req = NULL, *run = NULL, *again = NULL;
    char path[256], tmp[64] = "", dir_buf[PATH_MAX];
    int code, sent = 0;
    snprintf(path, sizeof path, "/api/v1/runs/%s/requests", id);
    code = agt_upload_get_json(path, id, o, &req, &err);
    if (code != AGT_EXIT_OK)
        goto done;
    json_t *pending = json_object_get(req, "pending");
    if (json_array_size(pending) == 0) {
        fprintf(stderr, "gpudiff-agent fetch-layers: run %s: no layer is asked for\n", id);
        goto done;
    }
    snprintf(path, sizeof path, "/api/v1/runs/%s", id);
    code = agt_upload_get_json(path, id, o, &run, &err);
    if (code != AGT_EXIT_OK)
        goto done;
    json_t *args = json_object_get(json_object_get(run, "rerun"), "args");
    json_t *layers = json_object_get(run, "layers");
    if (!json_is_array(args) || !json_is_array(layers)) {
        gd_err_set(&err, GD_EINVAL,
                   "run %s records no \"rerun\" (made by an agent older than fetch-layers, or "
                   "from dumps): it cannot be computed again",
                   id);
        code = AGT_EXIT_INPUT;
        goto done;
    }
    const char *dir = keep;
    if (dir == NULL) {
        const char *t = getenv("TMPDIR");
        snprintf(tmp, sizeof tmp, "%s/gpudiff-fetch-XXXXXX", t && strlen(t) < 30 ? t : "/tmp");
        if (mkdtemp(tmp) == NULL) {
            gd_err_set(&err, GD_EIO, "cannot make a temporary folder in %s", tmp);
            code = AGT_EXIT_OUTPUT;
            goto done;
        }
        snprintf(dir_buf, sizeof dir_buf, "%s/bundle", tmp);
        dir = dir_buf;
    }
    /* the names asked for, in batches that fit run's pattern buffer */
    size_t n = json_array_size(pending), start = 0;
    while (code == AGT_EXIT_OK && start < n) {
        char pattern[PATTERN_MAX + 1] = "";
        size_t used = 0, end = start;
        json_t *batch = json_array();
        for (; end < n; end++) {
            int idx = (int)json_integer_value(json_array_get(pending, end));
            const char *name = json_string_value(
                json_object_get(json_array_get(layers, (size_t)idx), "name"));
            size_t len = name ? strlen(name) : 0;
            if (name == NULL || (used > 0 && used + len + 1 > PATTERN_MAX))
                break;
            used += (size_t)snprintf(pattern + used, sizeof pattern - used, "%s%s",
                                     used ? "," : "", name);
            json_array_append_new(batch, json_integer(idx));
        }
        if (end == start) {
            gd_err_set(&err, GD_EINVAL, "layer %d of run %s has no name that fits a pattern",
                       (int)json_integer_value(json_array_get(pending, start)), id);
            code = AGT_EXIT_INPUT;
        }
        fprintf(stderr, "gpudiff-agent fetch-layers: run %s: computing %zu layer(s) again\n",
                id, end - start);
        if (code == AGT_EXIT_OK && (code = rerun(args, pattern, dir)) != AGT_EXIT_OK)
            gd_err_set(&err, GD_EINVAL, "the re-run failed (see above)");
        json_decref(again);
        again = NULL;
        if (code == AGT_EXIT_OK) {
            char p[PATH_MAX + 16], want[400], got[400];
            snprintf(p, sizeof p, "%s/run.json", dir);
            again = json_load_file(p, 0, NULL);
            identity(run, want, sizeof want);
            identity(again, got, sizeof got);
            if (again == NULL || strcmp(want, got) != 0) {
                gd_err_set(&err, GD_EINVAL,
                           "the re-run's model and inputs are not the run's (SHA-256 %s, the "
                           "run recorded %s): the files changed since the run",
                           got, want);
                code = AGT_EXIT_INPUT;
            }
        }
        if (code == AGT_EXIT_OK)
            code = send_layers(id, layers, batch, dir, o, &sent, &err);
        json_decref(batch);
        start = end;
    }
done:
    if (code != AGT_EXIT_OK)
        fprintf(stderr, "gpudiff-agent fetch-layers: %s\n", err.msg);
    else if (sent > 0)
        fprintf(stderr, "gpudiff-agent fetch-layers: run %s: %d layer(s) sent\n", id, sent);
    if (tmp[0] != '\0' && nftw(tmp, remove_one, 16, FTW_DEPTH | FTW_PHYS) != 0)
        fprintf(stderr, "gpudiff-agent fetch-layers: could not remove %s\n", tmp);
    json_decref(again);
    json_decref(run);
    json_decref(req);
    return code;
}

int
agt_cmd_fetch_layers(int argc, char **argv)
{
    enum { O_KEEP = 256 };
    static const struct option longopts[] = {
        AGT_UPLOAD_LONGOPTS,
        {"keep", required_argument, NULL, O_KEEP},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    struct agt_upload_opts o;
    agt_upload_opts_init(&o);
    o.who = "fetch-layers";
    const char *keep = NULL;
    int c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
        int taken = agt_upload_flag("fetch-layers", c, optarg, &o);
        if (taken < 0)
            return AGT_EXIT_USAGE;
        if (taken > 0)
            continue;
        switch (c) {
        case O_KEEP:
            keep = optarg;
            break;
        case 'h':
            usage(stdout);
            return AGT_EXIT_OK;
        default:
            fprintf(stderr, "Try `gpudiff-agent fetch-layers --help`.\n");
            return AGT_EXIT_USAGE;
        }
    }
    if (argc - optind != 1) {
        fprintf(stderr, "gpudiff-agent fetch-layers: give one run id (see --help)\n");
        return AGT_EXIT_USAGE;
    }
    struct gd_err err = {0};
    if (agt_upload_opts_check(&o, &err) != 0) {
        fprintf(stderr, "gpudiff-agent fetch-layers: %s\n", err.msg);
        return AGT_EXIT_USAGE;
    }
    agt_log_init(0);
    const char *id = argv[optind];
    /* a run id is a UUID: it goes into URLs as it is */
    if (strlen(id) != 36 || strspn(id, "0123456789abcdef-") != 36) {
        fprintf(stderr, "gpudiff-agent fetch-layers: %s is not a run id (a lowercase UUID)\n",
                id);
        return AGT_EXIT_USAGE;
    }
    return fetch(id, keep, &o);
}
