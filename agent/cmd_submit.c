/*
 * cmd_submit.c: `gpudiff-agent submit`: posts a job ("run this model on this input with these
 * knobs on every device that matches") to gpudiffd, uploading the files it lacks (409
 * missing_files: PUT /api/v1/files/{sha256}, streamed from disk, then the job again), and
 * with --wait follows it to the end and prints each device's outcome.
 */
#define _GNU_SOURCE
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "gpudiff/hash.h"
#include "jobs.h"
#include "model_load.h"

#define SUBMIT_MAX_FILES 64

struct submit_file {
    const char *role;
    const char *path;
    const char *name;
    char sha256[GD_SHA256_HEX_LEN + 1];
};

struct submit_opts {
    struct agt_upload_opts up;
    struct submit_file files[SUBMIT_MAX_FILES];
    int n_files;
    const char *name;
    json_t *knobs, *match;
    long lease_seconds, attempts, deadline_seconds; /* 0: the daemon's default */
    int wait;
    double timeout; /* 0: none */
    int json;
};

static void
submit_usage(FILE *out)
{
    fprintf(out,
            "Usage: gpudiff-agent submit --server URL --model FILE --input FILE [OPTIONS]\n\n"
            "Submits a job to gpudiffd: run the model on the input, with the knobs, on every\n"
            "registered device that matches (devices come from `gpudiff-agent serve`; the\n"
            "targets are fixed now: the matching devices seen in the last 10 minutes). The\n"
            "files are sent by content: each is hashed (SHA-256) and uploaded only when the\n"
            "daemon does not hold it yet, streamed from disk. Prints the job id on stdout.\n\n"
            "Required:\n"
            "  --model FILE        the model (ONNX or the JSON graph format, as `run` takes)\n"
            "  --input FILE        an input file (as `run --input` takes); repeat for a model\n"
            "                      of several inputs: each file's name without its extension\n"
            "                      is then the model input it feeds (x.npy feeds x)\n");
    agt_upload_usage(out);
    fprintf(out,
            "\nOptions:\n"
            "  --data FILE         a file the model needs beside it (ONNX external data, a\n"
            "                      weight file of a JSON model), placed next to the model\n"
            "                      under its own name; repeatable\n"
            "  --name MODEL        the model name the runs are recorded under (the matrix's\n"
            "                      row; default: a JSON model's \"name\", else the model file's\n"
            "                      name without its extension)\n"
            "  --knob K=V          a knob as run takes it (`gpudiff-agent run --help`), named\n"
            "                      without \"--\", e.g. --knob batch=4 --knob tf32=on;\n"
            "                      repeatable. Known: %s.\n"
            "                      V is checked here and sent in its one spelling (a number\n"
            "                      for batch, threads, workspace_limit, host_memory); the\n"
            "                      backend is the device's, not a knob\n",
            agt_knob_names());
    fprintf(out,
            "  --match K=V[,V]     run only on devices whose K is V (or one of the Vs); K is\n"
            "                      backend, host, key, env.FIELD (a field of run.json's env,\n"
            "                      e.g. env.gpu_name) or labels.NAME (serve --label);\n"
            "                      repeatable, all must hold (default: every device)\n"
            "  --lease-seconds N   how long a device may go without a heartbeat before its\n"
            "                      task is taken back, 10 to 3600 (default 120)\n"
            "  --attempts N        leases per device, 1 to 10 (default 1): with more, a\n"
            "                      device that died mid-run gets the task again\n"
            "  --deadline-seconds N  a device that has not taken its task after N seconds\n"
            "                      is marked never_answered (default 86400)\n"
            "  --wait              follow the job until no task is pending or leased (progress\n"
            "                      on stderr), then print a table of the devices: state,\n"
            "                      attempts used, run id and error\n"
            "  --timeout S         with --wait: stop waiting after S seconds (exit 11)\n"
            "  --json              print the job document (with --wait: the final one)\n"
            "  -h, --help          this help\n\n"
            "Exit codes: as below; with --wait, 0 only when every device finished, 10 when\n"
            "a device failed or never answered, 11 when --timeout ran out first.\n");
    agt_print_exit_codes(out);
}

static int
parse_long(const char *flag, const char *arg, long min, long max, long *out)
{
    char *end;
    long v = strtol(arg, &end, 10);
    if (*arg == '\0' || *end != '\0' || v < min || v > max) {
        fprintf(stderr, "gpudiff-agent submit: %s takes %ld to %ld, not %s\n", flag, min, max,
                arg);
        return -1;
    }
    *out = v;
    return 0;
}

static int
add_file(struct submit_opts *o, const char *role, const char *path)
{
    if (o->n_files == SUBMIT_MAX_FILES) {
        fprintf(stderr, "gpudiff-agent submit: at most %d files\n", SUBMIT_MAX_FILES);
        return -1;
    }
    const char *slash = strrchr(path, '/');
    struct submit_file *f = &o->files[o->n_files++];
    f->role = role;
    f->path = path;
    f->name = slash ? slash + 1 : path;
    return 0;
}

/* 0, 1 after --help, -1 after a usage error (printed). */
static int
submit_parse(int argc, char **argv, struct submit_opts *o)
{
    enum { O_MODEL = 256, O_INPUT, O_DATA, O_NAME, O_KNOB, O_MATCH, O_LEASE, O_ATTEMPTS,
           O_DEADLINE, O_WAIT, O_TIMEOUT, O_JSON };
    static const struct option longopts[] = {
        AGT_UPLOAD_LONGOPTS,
        {"model", required_argument, NULL, O_MODEL},
        {"input", required_argument, NULL, O_INPUT},
        {"data", required_argument, NULL, O_DATA},
        {"name", required_argument, NULL, O_NAME},
        {"knob", required_argument, NULL, O_KNOB},
        {"match", required_argument, NULL, O_MATCH},
        {"lease-seconds", required_argument, NULL, O_LEASE},
        {"attempts", required_argument, NULL, O_ATTEMPTS},
        {"deadline-seconds", required_argument, NULL, O_DEADLINE},
        {"wait", no_argument, NULL, O_WAIT},
        {"timeout", required_argument, NULL, O_TIMEOUT},
        {"json", no_argument, NULL, O_JSON},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    int c, models = 0, inputs = 0;
    long v;
    struct gd_err err = {0};
    optind = 1;
    while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
        int taken = agt_upload_flag("submit", c, optarg, &o->up);
        if (taken < 0)
            return -1;
        if (taken > 0)
            continue;
        switch (c) {
        case O_MODEL:
            if (models++ > 0) {
                fprintf(stderr, "gpudiff-agent submit: give --model once\n");
                return -1;
            }
            if (add_file(o, "model", optarg) != 0)
                return -1;
            break;
        case O_INPUT:
            inputs++;
            if (add_file(o, "input", optarg) != 0)
                return -1;
            break;
        case O_DATA:
            if (add_file(o, "data", optarg) != 0)
                return -1;
            break;
        case O_NAME:
            o->name = optarg;
            break;
        case O_KNOB:
        case O_MATCH:
            if ((c == O_KNOB ? agt_knob_kv(optarg, o->knobs, &err)
                             : agt_match_kv(optarg, o->match, &err)) != 0) {
                fprintf(stderr, "gpudiff-agent submit: %s\n", err.msg);
                return -1;
            }
            break;
        case O_LEASE:
            if (parse_long("--lease-seconds", optarg, 10, 3600, &o->lease_seconds) != 0)
                return -1;
            break;
        case O_ATTEMPTS:
            if (parse_long("--attempts", optarg, 1, 10, &o->attempts) != 0)
                return -1;
            break;
        case O_DEADLINE:
            if (parse_long("--deadline-seconds", optarg, 1, 100L * 365 * 86400,
                           &o->deadline_seconds) != 0)
                return -1;
            break;
        case O_WAIT:
            o->wait = 1;
            break;
        case O_TIMEOUT:
            if (parse_long("--timeout", optarg, 1, 100L * 365 * 86400, &v) != 0)
                return -1;
            o->timeout = (double)v;
            break;
        case O_JSON:
            o->json = 1;
            break;
        case 'h':
            submit_usage(stdout);
            return 1;
        default:
            fprintf(stderr, "Try `gpudiff-agent submit --help`.\n");
            return -1;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "gpudiff-agent submit: unexpected argument %s\n", argv[optind]);
        return -1;
    }
    if (models == 0 || inputs == 0) {
        fprintf(stderr, "gpudiff-agent submit: --model FILE and --input FILE are required\n");
        return -1;
    }
    if (o->timeout > 0 && !o->wait) {
        fprintf(stderr, "gpudiff-agent submit: --timeout goes with --wait\n");
        return -1;
    }
    for (int i = 0; i < o->n_files; i++) {
        if (!agt_job_name_valid(o->files[i].name)) {
            fprintf(stderr, "gpudiff-agent submit: %s: a job's file name holds only the "
                            "letters A-Z and a-z, digits and . _ - + @ (copy or link it under "
                            "such a name)\n", o->files[i].path);
            return -1;
        }
        for (int k = 0; k < i; k++)
            if (strcmp(o->files[i].name, o->files[k].name) == 0) {
                fprintf(stderr, "gpudiff-agent submit: two files are named %s (%s and %s): "
                                "each lies beside the model under its name\n",
                        o->files[i].name, o->files[k].path, o->files[i].path);
                return -1;
            }
    }
    if (agt_upload_opts_check(&o->up, &err) != 0) {
        fprintf(stderr, "gpudiff-agent submit: %s\n", err.msg);
        return -1;
    }
    return 0;
}

/* The default model name: a JSON model's "name", else the file name up to its last '.'. */
static char *
model_name(const struct submit_file *m)
{
    if (!agt_model_is_onnx(m->path)) {
        json_t *j = json_load_file(m->path, 0, NULL);
        const char *n = json_string_value(json_object_get(j, "name"));
        char *copy = n != NULL && n[0] != '\0' ? strdup(n) : NULL;
        json_decref(j);
        if (copy != NULL)
            return copy;
    }
    const char *dot = strrchr(m->name, '.');
    size_t n = dot != NULL && dot != m->name ? (size_t)(dot - m->name) : strlen(m->name);
    return strndup(m->name, n);
}

static json_t *
job_body(const struct submit_opts *o, const char *name)
{
    json_t *files = json_array();
    for (int i = 0; i < o->n_files; i++)
        json_array_append_new(files, json_pack("{s:s, s:s, s:s}", "role", o->files[i].role,
                                               "name", o->files[i].name, "sha256",
                                               o->files[i].sha256));
    json_t *body = json_pack("{s:s, s:o, s:O, s:O}", "model", name, "files", files, "knobs",
                             o->knobs, "match", o->match);
    if (o->lease_seconds > 0)
        json_object_set_new(body, "lease_seconds", json_integer(o->lease_seconds));
    if (o->attempts > 0)
        json_object_set_new(body, "attempts", json_integer(o->attempts));
    if (o->deadline_seconds > 0)
        json_object_set_new(body, "deadline_seconds", json_integer(o->deadline_seconds));
    return body;
}

/* Uploads the files the daemon's 409 answer lists. An exit code. */
static int
upload_missing(struct agt_http *c, const struct submit_opts *o, json_t *answer,
               struct gd_err *err)
{
    json_t *missing = json_object_get(answer, "missing");
    if (missing == NULL) /* inside the error object: either place is read */
        missing = json_object_get(json_object_get(answer, "error"), "missing");
    if (!json_is_array(missing) || json_array_size(missing) == 0) {
        gd_err_set(err, GD_EFORMAT, "the daemon answered missing_files without a list");
        return AGT_EXIT_UPLOAD;
    }
    size_t i;
    json_t *m;
    json_array_foreach(missing, i, m) {
        const char *sha = json_string_value(m);
        const struct submit_file *f = NULL;
        for (int k = 0; sha != NULL && k < o->n_files; k++)
            if (strcmp(o->files[k].sha256, sha) == 0)
                f = &o->files[k];
        if (f == NULL) {
            gd_err_set(err, GD_EFORMAT, "the daemon asks for a file this job does not have: "
                                        "%.80s", sha ? sha : "(not a string)");
            return AGT_EXIT_UPLOAD;
        }
        char path[128];
        snprintf(path, sizeof path, "/api/v1/files/%s", sha);
        struct agt_http_req r = {.method = "PUT", .path = path, .file = f->path};
        long status;
        fprintf(stderr, "gpudiff-agent submit: uploading %s (%s)\n", f->path, f->role);
        int code = agt_http_call(c, &r, o->up.retries, &status, err);
        if (code != 0)
            return code;
        if (status != 200 && status != 201) {
            char why[400];
            agt_http_error(c, why, sizeof why);
            gd_err_set(err, GD_EIO, "PUT %s (%s): the daemon answered %ld %s", path, f->path,
                       status, why);
            return AGT_EXIT_UPLOAD;
        }
    }
    return 0;
}

/* Posts the job, uploading what is missing; *job is the daemon's job document. */
static int
post_job(struct agt_http *c, const struct submit_opts *o, const char *body, json_t **job,
         struct gd_err *err)
{
    for (int round = 0; round < 3; round++) {
        struct agt_http_req r = {.method = "POST", .path = "/api/v1/jobs", .json = body};
        long status;
        int code = agt_http_call(c, &r, o->up.retries, &status, err);
        if (code != 0)
            return code;
        json_t *answer = agt_http_json(c);
        if (status == 201 || status == 200) {
            if (!json_is_string(json_object_get(answer, "id"))) {
                json_decref(answer);
                gd_err_set(err, GD_EFORMAT, "the daemon's job document has no id");
                return AGT_EXIT_UPLOAD;
            }
            *job = answer;
            return 0;
        }
        char why[400];
        agt_http_error(c, why, sizeof why);
        if (status == 409 && strstr(why, "missing_files") != NULL) {
            code = upload_missing(c, o, answer, err);
            json_decref(answer);
            if (code != 0)
                return code;
            continue;
        }
        json_decref(answer);
        if (strstr(why, "no_device") != NULL)
            gd_err_set(err, GD_EINVAL, "no device matches (%s): `curl .../api/v1/agents` lists "
                                       "the registered ones", why);
        else
            gd_err_set(err, GD_EIO, "POST /api/v1/jobs: the daemon answered %ld %s", status,
                       why);
        return AGT_EXIT_UPLOAD;
    }
    gd_err_set(err, GD_EIO, "POST /api/v1/jobs: the daemon still misses files after they were "
                            "uploaded");
    return AGT_EXIT_UPLOAD;
}

static double
mono_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static json_int_t
count_of(json_t *job, const char *state)
{
    return json_integer_value(json_object_get(json_object_get(job, "counts"), state));
}

static const char *
str_or(json_t *j, const char *key, const char *dflt)
{
    const char *s = json_string_value(json_object_get(j, key));
    return s != NULL ? s : dflt;
}

static void
print_table(FILE *out, json_t *job)
{
    fprintf(out, "%-36s %-14s %-8s %-36s %s\n", "DEVICE", "STATE", "ATTEMPTS", "RUN", "ERROR");
    size_t i;
    json_t *t;
    json_array_foreach(json_object_get(job, "tasks"), i, t) {
        fprintf(out, "%-36s %-14s %-8" JSON_INTEGER_FORMAT " %-36s %s\n",
                str_or(json_object_get(t, "device"), "key", "?"), str_or(t, "state", "?"),
                json_integer_value(json_object_get(t, "attempts_used")), str_or(t, "run_id", "-"),
                str_or(t, "error", "-"));
    }
}

/* Follows the job until it is done; *last is the final document. An exit code. */
static int
wait_job(struct agt_http *c, const struct submit_opts *o, const char *id, json_t **last,
         struct gd_err *err)
{
    char path[200], seen[200] = "";
    snprintf(path, sizeof path, "/api/v1/jobs/%s", id);
    double t0 = mono_now();
    for (;;) {
        struct agt_http_req r = {.method = "GET", .path = path};
        long status;
        int code = agt_http_call(c, &r, o->up.retries, &status, err);
        if (code != 0)
            return code;
        if (status != 200) {
            char why[400];
            agt_http_error(c, why, sizeof why);
            gd_err_set(err, GD_EIO, "GET %s: the daemon answered %ld %s", path, status, why);
            return AGT_EXIT_UPLOAD;
        }
        json_t *job = agt_http_json(c);
        if (!json_is_object(json_object_get(job, "counts"))) {
            json_decref(job);
            gd_err_set(err, GD_EFORMAT, "GET %s: not a job document", path);
            return AGT_EXIT_UPLOAD;
        }
        char line[200];
        snprintf(line, sizeof line,
                 "%" JSON_INTEGER_FORMAT " finished, %" JSON_INTEGER_FORMAT
                 " failed, %" JSON_INTEGER_FORMAT " pending, %" JSON_INTEGER_FORMAT
                 " leased, %" JSON_INTEGER_FORMAT " never answered",
                 count_of(job, "finished"), count_of(job, "failed"), count_of(job, "pending"),
                 count_of(job, "leased"), count_of(job, "never_answered"));
        if (strcmp(line, seen) != 0) {
            fprintf(stderr, "gpudiff-agent submit: job %s: %s\n", id, line);
            snprintf(seen, sizeof seen, "%s", line);
        }
        json_decref(*last);
        *last = job;
        if (strcmp(str_or(job, "state", ""), "done") == 0)
            return count_of(job, "failed") + count_of(job, "never_answered") > 0
                       ? AGT_EXIT_JOB
                       : AGT_EXIT_OK;
        if (o->timeout > 0 && mono_now() - t0 >= o->timeout) {
            gd_err_set(err, GD_ECANCELED, "job %s is still running after --timeout %.0f s",
                       id, o->timeout);
            return AGT_EXIT_TIMEOUT;
        }
        agt_sleep(1.0, NULL);
    }
}

int
agt_cmd_submit(int argc, char **argv)
{
    struct submit_opts o;
    memset(&o, 0, sizeof o);
    agt_upload_opts_init(&o.up);
    o.up.who = "submit";
    o.knobs = json_object();
    o.match = json_object();
    struct agt_http c = {0};
    json_t *job = NULL, *body = NULL;
    char *name = NULL, *text = NULL;
    struct gd_err err = {0};
    int code = AGT_EXIT_OK;
    int prc = submit_parse(argc, argv, &o);
    if (prc != 0) {
        code = prc > 0 ? AGT_EXIT_OK : AGT_EXIT_USAGE;
        goto done;
    }
    agt_log_init(0);
    for (int i = 0; i < o.n_files; i++)
        if (gd_sha256_file(o.files[i].path, o.files[i].sha256, &err) != 0) {
            fprintf(stderr, "gpudiff-agent submit: %s\n", err.msg);
            code = AGT_EXIT_INPUT;
            goto done;
        }
    name = o.name != NULL ? strdup(o.name) : model_name(&o.files[0]);
    body = job_body(&o, name != NULL ? name : "model");
    text = json_dumps(body, JSON_COMPACT);
    if (name == NULL || text == NULL || agt_http_open(&c, &o.up, "submit", &err) != 0) {
        fprintf(stderr, "gpudiff-agent submit: %s\n", err.msg[0] ? err.msg : "out of memory");
        code = AGT_EXIT_INTERNAL;
        goto done;
    }
    code = post_job(&c, &o, text, &job, &err);
    if (code != 0)
        goto fail;
    const char *id = json_string_value(json_object_get(job, "id"));
    fprintf(stderr, "gpudiff-agent submit: job %s for %zu devices\n", id,
            json_array_size(json_object_get(job, "tasks")));
    if (o.wait) {
        char idc[128];
        snprintf(idc, sizeof idc, "%s", id);
        code = wait_job(&c, &o, idc, &job, &err);
        if (code != AGT_EXIT_OK && code != AGT_EXIT_JOB && code != AGT_EXIT_TIMEOUT)
            goto fail;
    }
    if (o.json) {
        json_dumpf(job, stdout, JSON_INDENT(1) | JSON_PRESERVE_ORDER);
        fputc('\n', stdout);
    } else {
        printf("%s\n", json_string_value(json_object_get(job, "id")));
        if (o.wait)
            print_table(stdout, job);
    }
    if (code == AGT_EXIT_TIMEOUT)
        fprintf(stderr, "gpudiff-agent submit: %s\n", err.msg);
    goto done;
fail:
    fprintf(stderr, "gpudiff-agent submit: %s\n", err.msg);
    if (code == AGT_EXIT_TOKEN)
        fprintf(stderr, "gpudiff-agent submit: check --token or %s: it must be a live token "
                        "of role agent or admin on this server\n", AGT_TOKEN_ENV);
done:
    agt_http_close(&c);
    json_decref(job);
    json_decref(body);
    json_decref(o.knobs);
    json_decref(o.match);
    free(name);
    free(text);
    return code;
}
