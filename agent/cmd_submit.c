/*
 * cmd_submit.c: `gpudiff-agent submit`: posts a job ("run this model on this input with these
 * knobs on every device that matches") to gpudiffd, with every file the model reads: a JSON
 * model's weight files (role weights, by their paths under its weights folder) and an ONNX
 * model's external data (role data, by their locations), found as the loaders find them
 * (gpudiff/model_files.h). It uploads the files the daemon lacks (409 missing_files: PUT
 * /api/v1/files/{sha256}, streamed from disk, then the job again), and with --wait follows
 * the job to the end and prints each device's outcome.
 */
#define _GNU_SOURCE
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "gpudiff/hash.h"
#include "gpudiff/model_files.h"
#include "jobs.h"
#include "model_load.h"

#define SUBMIT_MAX_FILES 4096 /* the daemon's limit of a job's files */

struct submit_file {
    const char *role;
    const char *path;
    const char *name;
    char sha256[GD_SHA256_HEX_LEN + 1];
};

struct submit_opts {
    struct agt_upload_opts up;
    struct submit_file *files; /* SUBMIT_MAX_FILES of them */
    int n_files;
    const char *weights_dir; /* --weights-dir */
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
            "targets are fixed now: the matching devices seen within the daemon's\n"
            "--device-stale-seconds, 120 by default; one that stops answering leaves). The\n"
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
            "  --weights-dir DIR   a JSON model: the folder its weight files are relative to\n"
            "                      (default: its \"weights_dir\", else its folder). Every\n"
            "                      weight file it names goes with the job, under its path\n"
            "                      there; an ONNX model's external data goes too, under its\n"
            "                      location. Each is sent once (by SHA-256), fetched once per\n"
            "                      agent's cache and checked by hash before each run\n"
            "  --data FILE         another file the model needs beside it, placed next to the\n"
            "                      model under its own name (it replaces the external data of\n"
            "                      that name); repeatable\n"
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
            "                      on stderr, naming the devices waited on), then print a\n"
            "                      table of the devices: state, attempts used, run id, error\n"
            "  --timeout S         with --wait: stop waiting after S seconds (exit 11); the\n"
            "                      default is the job's deadline plus one lease (its tasks\n"
            "                      have ended by then unless a device is still running)\n"
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

/* A file of the job under name (NULL: the file's own name). */
static int
add_file(struct submit_opts *o, const char *role, const char *path, const char *name)
{
    if (o->n_files == SUBMIT_MAX_FILES) {
        fprintf(stderr, "gpudiff-agent submit: at most %d files\n", SUBMIT_MAX_FILES);
        return -1;
    }
    const char *slash = strrchr(path, '/');
    struct submit_file *f = &o->files[o->n_files++];
    f->role = role;
    f->path = path;
    f->name = name != NULL ? name : slash ? slash + 1 : path;
    return 0;
}

/* Where a file lies in the agent's job folder (weights under weights/), into out. */
static void
placed(const struct submit_file *f, char *out, size_t size)
{
    snprintf(out, size, "%s%s", strcmp(f->role, "weights") == 0 ? "weights/" : "", f->name);
}

/* The files' names as the daemon takes them: each lying at a place of its own. */
static int
check_names(const struct submit_opts *o)
{
    for (int i = 0; i < o->n_files; i++) {
        const struct submit_file *f = &o->files[i];
        int nested = strcmp(f->role, "data") == 0 || strcmp(f->role, "weights") == 0;
        if (nested ? !agt_job_path_valid(f->name) : !agt_job_name_valid(f->name)) {
            fprintf(stderr,
                    "gpudiff-agent submit: %s (%s, as %s): a job's file names hold only "
                    "the letters A-Z and a-z, digits and . _ - + @%s (copy or link it "
                    "under such a name)\n",
                    f->path, f->role, f->name, nested ? ", in folders joined by /" : "");
            return -1;
        }
        char a[AGT_JOB_PATH_MAX + 16], b[AGT_JOB_PATH_MAX + 16];
        placed(f, a, sizeof a);
        for (int k = 0; k < i; k++) {
            placed(&o->files[k], b, sizeof b);
            if (agt_job_paths_clash(a, b)) {
                fprintf(stderr,
                        "gpudiff-agent submit: %s and %s would lie at one place beside "
                        "the model (%s, %s)\n",
                        o->files[k].path, f->path, b, a);
                return -1;
            }
        }
    }
    return 0;
}

/*
 * The files the model reads besides itself, into the job: weight files of a JSON model
 * (role weights), external data of an ONNX model (role data) unless --data gives a file of
 * that name. mf keeps the names and paths. An exit code.
 */
static int
add_model_files(struct submit_opts *o, struct gd_model_files *mf)
{
    struct gd_err err = {0};
    int rc = gd_model_files_find(o->files[0].path, o->weights_dir, mf, &err);
    if (rc == GD_EFORMAT) {
        /* a model no loader reads: the job goes alone, and each device's run says why */
        fprintf(stderr, "gpudiff-agent submit: %s: it is sent alone\n", err.msg);
        return check_names(o) == 0 ? AGT_EXIT_OK : AGT_EXIT_USAGE;
    }
    if (rc != 0) {
        fprintf(stderr, "gpudiff-agent submit: %s\n", err.msg);
        return AGT_EXIT_INPUT;
    }
    int given = o->n_files;
    for (int i = 0; i < mf->n; i++) {
        int replaced = 0;
        for (int k = 0; mf->onnx && k < given; k++)
            replaced |= strcmp(o->files[k].role, "data") == 0 &&
                        strcmp(o->files[k].name, mf->files[i].name) == 0;
        if (!replaced &&
            add_file(o, mf->onnx ? "data" : "weights", mf->files[i].path, mf->files[i].name) != 0)
            return AGT_EXIT_USAGE;
    }
    if (mf->n > 0)
        fprintf(stderr, "gpudiff-agent submit: the model reads %d %s: they go with the job\n",
                mf->n, mf->onnx ? "external data files" : "weight files");
    else if (o->weights_dir != NULL && !mf->onnx)
        fprintf(stderr,
                "gpudiff-agent submit: --weights-dir %s: the model names no weight "
                "file\n",
                o->weights_dir);
    return check_names(o) == 0 ? AGT_EXIT_OK : AGT_EXIT_USAGE;
}

/* 0, 1 after --help, -1 after a usage error (printed). */
static int
submit_parse(int argc, char **argv, struct submit_opts *o)
{
    enum {
        O_MODEL = 256,
        O_INPUT,
        O_DATA,
        O_NAME,
        O_KNOB,
        O_MATCH,
        O_LEASE,
        O_ATTEMPTS,
        O_DEADLINE,
        O_WAIT,
        O_TIMEOUT,
        O_JSON,
        O_WEIGHTS_DIR
    };
    static const struct option longopts[] = {
        AGT_UPLOAD_LONGOPTS,
        {"model", required_argument, NULL, O_MODEL},
        {"input", required_argument, NULL, O_INPUT},
        {"data", required_argument, NULL, O_DATA},
        {"weights-dir", required_argument, NULL, O_WEIGHTS_DIR},
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
            if (add_file(o, "model", optarg, NULL) != 0)
                return -1;
            break;
        case O_INPUT:
            inputs++;
            if (add_file(o, "input", optarg, NULL) != 0)
                return -1;
            break;
        case O_DATA:
            if (add_file(o, "data", optarg, NULL) != 0)
                return -1;
            break;
        case O_WEIGHTS_DIR:
            o->weights_dir = optarg;
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
    /* the model first: the files it reads are found from it */
    for (int i = 0; o->files[0].role[0] != 'm' && i < o->n_files; i++)
        if (strcmp(o->files[i].role, "model") == 0) {
            struct submit_file m = o->files[i];
            memmove(&o->files[1], &o->files[0], (size_t)i * sizeof *o->files);
            o->files[0] = m;
        }
    if (check_names(o) != 0)
        return -1;
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

/* A time the daemon wrote (srv_time_format: "2026-01-02T03:04:05Z") in seconds; -1 if not. */
static int64_t
daemon_time(json_t *v)
{
    const char *s = json_string_value(v);
    struct tm tm = {0};
    if (s == NULL)
        return -1;
    const char *end = strptime(s, "%Y-%m-%dT%H:%M:%S", &tm);
    if (end == NULL || (*end != 'Z' && *end != '.'))
        return -1;
    return (int64_t)timegm(&tm);
}

/*
 * How long --wait waits without --timeout, from the job's own terms: its deadline (after
 * which a device that has not taken its task is never_answered), one lease more (a device
 * that took it at the last moment and died is expired after lease_seconds) and 10 s for the
 * daemon's expiry pass. Devices that stop answering before that leave sooner: the daemon
 * ends their tasks after its device-stale-seconds. 0 when the document lacks the terms.
 */
static double
default_timeout(json_t *job)
{
    int64_t created = daemon_time(json_object_get(job, "created"));
    int64_t deadline = daemon_time(json_object_get(job, "deadline"));
    json_int_t lease = json_integer_value(json_object_get(job, "lease_seconds"));
    if (created < 0 || deadline < created || lease <= 0)
        return 0;
    return (double)(deadline - created) + (double)lease + 10.0;
}

/* ", waiting on KEY (state), ..." of the tasks still pending or leased, the first four. */
static void
waiting_on(json_t *job, char *out, size_t size)
{
    size_t i, n = 0, used = 0;
    json_t *t;
    out[0] = '\0';
    json_array_foreach(json_object_get(job, "tasks"), i, t)
    {
        const char *state = str_or(t, "state", "");
        if (strcmp(state, "pending") != 0 && strcmp(state, "leased") != 0)
            continue;
        if (n++ < 4 && used < size)
            used += (size_t)snprintf(out + used, size - used, "%s%s (%s)",
                                     n == 1 ? "; waiting on " : ", ",
                                     str_or(json_object_get(t, "device"), "key", "?"), state);
    }
    if (n > 4 && used < size)
        snprintf(out + used, size - used, " and %zu more", n - 4);
}

/* Follows the job until it is done; *last is the final document. An exit code. */
static int
wait_job(struct agt_http *c, const struct submit_opts *o, const char *id, json_t **last,
         struct gd_err *err)
{
    char path[200], seen[2400] = "";
    snprintf(path, sizeof path, "/api/v1/jobs/%s", id);
    double t0 = mono_now(), timeout = o->timeout;
    if (timeout <= 0 && (timeout = default_timeout(*last)) > 0)
        fprintf(stderr,
                "gpudiff-agent submit: waiting at most %.0f s (the job's deadline and one "
                "lease; --timeout S to change)\n",
                timeout);
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
        char line[2400], devices[2000];
        waiting_on(job, devices, sizeof devices);
        snprintf(line, sizeof line,
                 "%" JSON_INTEGER_FORMAT " finished, %" JSON_INTEGER_FORMAT
                 " failed, %" JSON_INTEGER_FORMAT " pending, %" JSON_INTEGER_FORMAT
                 " leased, %" JSON_INTEGER_FORMAT " never answered%s",
                 count_of(job, "finished"), count_of(job, "failed"), count_of(job, "pending"),
                 count_of(job, "leased"), count_of(job, "never_answered"), devices);
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
        if (timeout > 0 && mono_now() - t0 >= timeout) {
            char devs[200];
            waiting_on(job, devs, sizeof devs);
            gd_err_set(err, GD_ECANCELED, "job %s is still running after %s%.0f s%s", id,
                       o->timeout > 0 ? "--timeout " : "", timeout, devs);
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
    struct gd_model_files mf;
    gd_model_files_init(&mf);
    agt_upload_opts_init(&o.up);
    o.up.who = "submit";
    o.knobs = json_object();
    o.match = json_object();
    struct agt_http c = {0};
    json_t *job = NULL, *body = NULL;
    char *name = NULL, *text = NULL;
    struct gd_err err = {0};
    int code = AGT_EXIT_OK;
    o.files = calloc(SUBMIT_MAX_FILES, sizeof *o.files);
    if (o.files == NULL) {
        code = AGT_EXIT_INTERNAL;
        goto done;
    }
    int prc = submit_parse(argc, argv, &o);
    if (prc != 0) {
        code = prc > 0 ? AGT_EXIT_OK : AGT_EXIT_USAGE;
        goto done;
    }
    agt_log_init(0);
    if ((code = add_model_files(&o, &mf)) != AGT_EXIT_OK)
        goto done;
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
    gd_model_files_fini(&mf);
    free(o.files);
    free(name);
    free(text);
    return code;
}
