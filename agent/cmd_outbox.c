/*
 * cmd_outbox.c: `gpudiff-agent outbox`: the uploader of deploy/systemd/gpudiff-agent.service.
 * A folder DIR holds outbox/ (bundles waiting: jobs move each in once it is whole), sent/
 * (uploaded) and refused/ (bundles the daemon refused for good, each with NAME.reason
 * beside it). `send` pushes every waiting bundle in name order; one the daemon refuses (a
 * 4xx other than a token's 401 or 403 and the transient 408 and 429), or that cannot be
 * read, is moved to refused/ with the reason and the next one is sent: a bad bundle never
 * holds the good ones behind it. A refused token, or a daemon that cannot be reached after
 * the retries, stops the pass with the bundles where they are (every later one would fail
 * alike); the next trigger tries again. `list` shows what waits and what was refused;
 * `retry` moves a refused bundle back.
 */
#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "upload.h"

#define NAMES_MAX 100000

static void
outbox_usage(FILE *out)
{
    fprintf(out,
            "Usage: gpudiff-agent outbox [list] DIR [--json]\n"
            "       gpudiff-agent outbox send DIR --server URL [OPTIONS]\n"
            "       gpudiff-agent outbox retry DIR NAME\n\n"
            "The run bundles of an upload folder (deploy/systemd/gpudiff-agent.service):\n"
            "DIR/outbox holds the bundles waiting (move each in once it is whole), DIR/sent\n"
            "the ones uploaded, DIR/refused the ones gpudiffd refused, each with\n"
            "NAME.reason beside it (when, the status, the daemon's message, the request).\n\n"
            "  list    (the default) the bundles waiting and the ones refused, with why\n"
            "  send    pushes every waiting bundle, in name order, as `push` does. One the\n"
            "          daemon refuses (a 4xx other than 401, 403, 408, 429) or that cannot\n"
            "          be read moves to refused/ and the next is sent; a refused token\n"
            "          (exit 9) or a daemon not reached after the retries (exit 8) stops\n"
            "          the pass, leaving the rest waiting. Prints `sent NAME RUN_ID` or\n"
            "          `refused NAME STATUS REASON` per bundle on stdout\n"
            "  retry   moves refused/NAME back to outbox/ (after the cause is fixed)\n\n"
            "Options of send:\n");
    agt_upload_usage(out);
    fprintf(out, "\nOptions:\n"
                 "  --json              list: the folders' content as JSON\n"
                 "  -h, --help          this help\n\n");
    agt_print_exit_codes(out);
}

static int
by_name(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/*
 * The entries of dir/sub that are bundle folders (hold run.json), sorted; with reasons,
 * the refused folder's entries that are folders. *names is NULL-terminated, caller-owned.
 */
static int
list_bundles(const char *dir, const char *sub, char ***names, int *n, struct gd_err *err)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, sub);
    *names = NULL;
    *n = 0;
    DIR *d = opendir(path);
    if (d == NULL) {
        if (errno == ENOENT)
            return 0;
        return gd_err_set(err, GD_EIO, "%s: %s", path, strerror(errno));
    }
    char **list = NULL;
    int count = 0, cap = 0, rc = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.')
            continue;
        char run_json[4400];
        struct stat st;
        snprintf(run_json, sizeof run_json, "%s/%s/run.json", path, e->d_name);
        if (stat(run_json, &st) != 0 || !S_ISREG(st.st_mode))
            continue;
        if (count + 1 >= cap) {
            int c = cap ? cap * 2 : 16;
            char **l = c <= NAMES_MAX ? realloc(list, sizeof *l * (size_t)c) : NULL;
            if (l == NULL) {
                rc = gd_err_set(err, GD_ENOMEM, "%s: too many entries", path);
                break;
            }
            list = l;
            cap = c;
        }
        if ((list[count] = strdup(e->d_name)) == NULL) {
            rc = gd_err_set(err, GD_ENOMEM, "out of memory");
            break;
        }
        count++;
    }
    closedir(d);
    if (list != NULL)
        list[count] = NULL;
    if (rc != 0) {
        for (int i = 0; i < count; i++)
            free(list[i]);
        free(list);
        return rc;
    }
    if (count > 1)
        qsort(list, (size_t)count, sizeof *list, by_name);
    *names = list;
    *n = count;
    return 0;
}

static void
free_names(char **names, int n)
{
    for (int i = 0; i < n; i++)
        free(names[i]);
    free(names);
}

/*
 * Moves dir/from/name into dir/to (made if missing) under name, or name.1, name.2, ... when
 * taken; the name it got goes to got.
 */
static int
move_bundle(const char *dir, const char *from, const char *name, const char *to, char *got,
            size_t got_size, struct gd_err *err)
{
    char src[4096], dst_dir[4096], dst[4400];
    snprintf(src, sizeof src, "%s/%s/%s", dir, from, name);
    snprintf(dst_dir, sizeof dst_dir, "%s/%s", dir, to);
    if (mkdir(dst_dir, 0750) != 0 && errno != EEXIST)
        return gd_err_set(err, GD_EIO, "%s: %s", dst_dir, strerror(errno));
    for (int k = 0; k < 1000; k++) {
        if (k == 0)
            snprintf(got, got_size, "%s", name);
        else
            snprintf(got, got_size, "%s.%d", name, k);
        snprintf(dst, sizeof dst, "%s/%s", dst_dir, got);
        char reason[4500];
        snprintf(reason, sizeof reason, "%s.reason", dst);
        struct stat st;
        if (lstat(dst, &st) == 0 || lstat(reason, &st) == 0)
            continue;
        if (rename(src, dst) != 0)
            return gd_err_set(err, GD_EIO, "moving %s to %s: %s", src, dst, strerror(errno));
        return 0;
    }
    return gd_err_set(err, GD_EIO, "%s: no free name for %s", dst_dir, name);
}

/* refused/NAME.reason, written whole and renamed into place. */
static int
write_reason(const char *dir, const char *name, long status, const char *reason,
             const char *request, struct gd_err *err)
{
    char path[4400], tmp[4500], when[32];
    snprintf(path, sizeof path, "%s/refused/%s.reason", dir, name);
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    agt_utc_now(when, sizeof when);
    FILE *f = fopen(tmp, "w");
    if (f == NULL)
        return gd_err_set(err, GD_EIO, "%s: %s", tmp, strerror(errno));
    fprintf(f, "refused_at: %s\nstatus: %ld\nreason: ", when, status);
    for (const char *p = reason; *p; p++)
        fputc((unsigned char)*p < 0x20 ? ' ' : *p, f);
    fprintf(f, "\nrequest: %s\n", request[0] ? request : "-");
    if (fclose(f) != 0 || rename(tmp, path) != 0) {
        unlink(tmp);
        return gd_err_set(err, GD_EIO, "%s: %s", path, strerror(errno));
    }
    return 0;
}

/* The value of "key: " in a reason file, into out ("" when absent). */
static void
reason_field(const char *dir, const char *name, const char *key, char *out, size_t size)
{
    char path[4400], line[1024];
    snprintf(path, sizeof path, "%s/refused/%s.reason", dir, name);
    out[0] = '\0';
    FILE *f = fopen(path, "r");
    if (f == NULL)
        return;
    size_t k = strlen(key);
    while (fgets(line, sizeof line, f) != NULL)
        if (strncmp(line, key, k) == 0 && line[k] == ':' && line[k + 1] == ' ') {
            line[strcspn(line, "\n")] = '\0';
            snprintf(out, size, "%s", line + k + 2);
            break;
        }
    fclose(f);
}

static int
outbox_send(const char *dir, struct agt_upload_opts *o)
{
    struct gd_err err = {0};
    char **names = NULL;
    int n = 0, sent = 0, refused = 0;
    if (list_bundles(dir, "outbox", &names, &n, &err) != 0) {
        fprintf(stderr, "gpudiff-agent outbox: %s\n", err.msg);
        return AGT_EXIT_INPUT;
    }
    int code = AGT_EXIT_OK;
    for (int i = 0; i < n && code == AGT_EXIT_OK; i++) {
        char path[4400], got[600];
        snprintf(path, sizeof path, "%s/outbox/%s", dir, names[i]);
        struct agt_upload_stats st;
        memset(&st, 0, sizeof st);
        gd_err_clear(&err);
        int rc = agt_upload_bundle(path, o, &st, &err);
        struct gd_err merr = {0};
        if (rc == AGT_EXIT_OK) {
            if (move_bundle(dir, "outbox", names[i], "sent", got, sizeof got, &merr) != 0) {
                fprintf(stderr, "gpudiff-agent outbox: %s: sent, but %s\n", names[i], merr.msg);
                code = AGT_EXIT_OUTPUT;
                break;
            }
            printf("sent %s %s\n", names[i], st.run_id);
            sent++;
            continue;
        }
        int aside = rc == AGT_EXIT_INPUT || (rc == AGT_EXIT_UPLOAD && st.refused_status != 0);
        if (!aside) {
            /* The token, the network, the daemon: every bundle after this one would fail. */
            fprintf(stderr, "gpudiff-agent outbox: %s: %s; %d bundle(s) left waiting\n",
                    names[i], err.msg, n - i);
            code = rc;
            break;
        }
        const char *why = st.refused_status != 0 ? st.refused_reason : err.msg;
        if (move_bundle(dir, "outbox", names[i], "refused", got, sizeof got, &merr) != 0 ||
            write_reason(dir, got, st.refused_status, why, st.refused_request, &merr) != 0) {
            fprintf(stderr, "gpudiff-agent outbox: %s: refused (%s), but %s\n", names[i], why,
                    merr.msg);
            code = AGT_EXIT_OUTPUT;
            break;
        }
        fprintf(stderr, "gpudiff-agent outbox: %s: refused, moved to refused/%s: %s\n", names[i],
                got, why);
        printf("refused %s %ld %s\n", names[i], st.refused_status, why);
        refused++;
    }
    fprintf(stderr, "gpudiff-agent outbox: %d sent, %d refused, %d waiting\n", sent, refused,
            n - sent - refused);
    free_names(names, n);
    return code;
}

static int
outbox_list(const char *dir, int as_json)
{
    struct gd_err err = {0};
    char **waiting = NULL, **refused = NULL, **sent = NULL;
    int n_wait = 0, n_ref = 0, n_sent = 0, code = AGT_EXIT_OK;
    json_t *doc = NULL;
    if (list_bundles(dir, "outbox", &waiting, &n_wait, &err) != 0 ||
        list_bundles(dir, "refused", &refused, &n_ref, &err) != 0 ||
        list_bundles(dir, "sent", &sent, &n_sent, &err) != 0) {
        fprintf(stderr, "gpudiff-agent outbox: %s\n", err.msg);
        code = AGT_EXIT_INPUT;
        goto done;
    }
    doc = json_pack("{s:s, s:[], s:[], s:i}", "dir", dir, "waiting", "refused", "sent", n_sent);
    if (doc == NULL) {
        code = AGT_EXIT_INTERNAL;
        goto done;
    }
    for (int i = 0; i < n_wait; i++)
        json_array_append_new(json_object_get(doc, "waiting"),
                              json_pack("{s:s}", "name", waiting[i]));
    for (int i = 0; i < n_ref; i++) {
        char when[64], status[16], reason[1024], request[64];
        reason_field(dir, refused[i], "refused_at", when, sizeof when);
        reason_field(dir, refused[i], "status", status, sizeof status);
        reason_field(dir, refused[i], "reason", reason, sizeof reason);
        reason_field(dir, refused[i], "request", request, sizeof request);
        json_array_append_new(json_object_get(doc, "refused"),
                              json_pack("{s:s, s:s, s:I, s:s, s:s}", "name", refused[i],
                                        "refused_at", when, "status",
                                        (json_int_t)strtol(status, NULL, 10), "reason", reason,
                                        "request", request));
    }
    if (as_json) {
        json_dumpf(doc, stdout, JSON_INDENT(1) | JSON_PRESERVE_ORDER);
        fputc('\n', stdout);
        goto done;
    }
    printf("%d waiting, %d refused, %d sent in %s\n", n_wait, n_ref, n_sent, dir);
    for (int i = 0; i < n_wait; i++)
        printf("waiting  %s\n", waiting[i]);
    size_t i;
    json_t *r;
    json_array_foreach(json_object_get(doc, "refused"), i, r)
    {
        printf("refused  %s  %s  %" JSON_INTEGER_FORMAT "  %s\n",
               json_string_value(json_object_get(r, "name")),
               json_string_value(json_object_get(r, "refused_at")),
               json_integer_value(json_object_get(r, "status")),
               json_string_value(json_object_get(r, "reason")));
    }
done:
    json_decref(doc);
    free_names(waiting, n_wait);
    free_names(refused, n_ref);
    free_names(sent, n_sent);
    return code;
}

static int
outbox_retry(const char *dir, const char *name)
{
    struct gd_err err = {0};
    char got[600], reason[4400];
    if (strchr(name, '/') != NULL || name[0] == '.') {
        fprintf(stderr, "gpudiff-agent outbox: retry takes a name of refused/, not %s\n", name);
        return AGT_EXIT_USAGE;
    }
    if (move_bundle(dir, "refused", name, "outbox", got, sizeof got, &err) != 0) {
        fprintf(stderr, "gpudiff-agent outbox: %s\n", err.msg);
        return AGT_EXIT_INPUT;
    }
    snprintf(reason, sizeof reason, "%s/refused/%s.reason", dir, name);
    unlink(reason);
    printf("waiting %s\n", got);
    return AGT_EXIT_OK;
}

int
agt_cmd_outbox(int argc, char **argv)
{
    enum { O_JSON = 256 };
    static const struct option longopts[] = {
        AGT_UPLOAD_LONGOPTS,
        {"json", no_argument, NULL, O_JSON},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    struct agt_upload_opts o;
    agt_upload_opts_init(&o);
    o.who = "outbox";
    int as_json = 0, c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
        int taken = agt_upload_flag("outbox", c, optarg, &o);
        if (taken < 0)
            return AGT_EXIT_USAGE;
        if (taken > 0)
            continue;
        switch (c) {
        case O_JSON:
            as_json = 1;
            break;
        case 'h':
            outbox_usage(stdout);
            return AGT_EXIT_OK;
        default:
            fprintf(stderr, "Try `gpudiff-agent outbox --help`.\n");
            return AGT_EXIT_USAGE;
        }
    }
    const char *verb = "list";
    if (optind < argc && (strcmp(argv[optind], "list") == 0 || strcmp(argv[optind], "send") == 0 ||
                          strcmp(argv[optind], "retry") == 0))
        verb = argv[optind++];
    int want = strcmp(verb, "retry") == 0 ? 2 : 1;
    if (argc - optind != want) {
        fprintf(stderr, "gpudiff-agent outbox: %s takes %s (see --help)\n", verb,
                want == 2 ? "DIR NAME" : "one folder DIR");
        return AGT_EXIT_USAGE;
    }
    const char *dir = argv[optind];
    if (strcmp(verb, "send") != 0 && (o.server != NULL || o.token != NULL)) {
        fprintf(stderr, "gpudiff-agent outbox: --server and --token are for send\n");
        return AGT_EXIT_USAGE;
    }
    if (strcmp(verb, "list") == 0)
        return outbox_list(dir, as_json);
    if (strcmp(verb, "retry") == 0)
        return outbox_retry(dir, argv[optind + 1]);
    struct gd_err err = {0};
    if (agt_upload_opts_check(&o, &err) != 0) {
        fprintf(stderr, "gpudiff-agent outbox: %s\n", err.msg);
        return AGT_EXIT_USAGE;
    }
    agt_log_init(0);
    return outbox_send(dir, &o);
}
