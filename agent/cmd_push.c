/*
 * cmd_push.c: `gpudiff-agent push DIR --server URL`: uploads a run bundle made earlier (GPU hosts
 * often cannot reach the daemon; the bundle travels instead), or resumes an upload that was
 * cut. Also the upload flags `run --server` shares.
 */
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "upload.h"

void
agt_upload_usage(FILE *out)
{
    fprintf(out,
            "  --server URL        gpudiffd's address, e.g. http://gpudiffd:8470\n"
            "  --token T           an agent token (gpudiffd token create --role agent); better\n"
            "                      in the environment variable " AGT_TOKEN_ENV ", which keeps\n"
            "                      it out of the process list\n"
            "  --retries N         attempts in a row that may fail (connection errors,\n"
            "                      timeouts, 5xx answers) before giving up (default 10); the\n"
            "                      waits between them start at 0.5 s and double up to 30 s,\n"
            "                      with jitter\n"
            "  --retry-time S      give up when the server has failed for S seconds in a row\n"
            "                      (default 300)\n"
            "  --cacert FILE       PEM file of the CA certificates an https:// server's\n"
            "                      certificate is checked against (default: the system's\n"
            "                      store); a server whose certificate does not verify, or\n"
            "                      does not name the host of --server, is refused\n"
            "  --insecure-http     allow an http:// --server that is not a loopback address\n"
            "                      (the token then crosses the network in clear; refused\n"
            "                      without this flag)\n");
}

int
agt_upload_flag(const char *cmd, int opt, const char *arg, struct agt_upload_opts *o)
{
    char *end;
    switch (opt) {
    case AGT_OPT_SERVER:
        o->server = arg;
        return 1;
    case AGT_OPT_TOKEN:
        o->token = arg;
        return 1;
    case AGT_OPT_CACERT:
        o->cacert = arg;
        return 1;
    case AGT_OPT_INSECURE_HTTP:
        o->insecure_http = 1;
        return 1;
    case AGT_OPT_RETRIES: {
        long v = strtol(arg, &end, 10);
        if (*arg == '\0' || *end != '\0' || v < 0 || v > 1000) {
            fprintf(stderr, "gpudiff-agent %s: --retries takes 0 to 1000, not %s\n", cmd, arg);
            return -1;
        }
        o->retries = (int)v;
        return 1;
    }
    case AGT_OPT_RETRY_TIME: {
        double v = strtod(arg, &end);
        if (*arg == '\0' || *end != '\0' || !isfinite(v) || v < 0) {
            fprintf(stderr, "gpudiff-agent %s: --retry-time takes seconds >= 0, not %s\n", cmd,
                    arg);
            return -1;
        }
        o->retry_time = v;
        return 1;
    }
    default:
        return 0;
    }
}

static void
push_usage(FILE *out)
{
    fprintf(out,
            "Usage: gpudiff-agent push DIR --server URL [OPTIONS]\n\n"
            "Uploads the run bundle in DIR (made by `gpudiff-agent run` or `bundle`) to\n"
            "gpudiffd: run.json first, then each layer's .npy the server does not hold yet,\n"
            "streamed from its file, then `finish`, after which the run is visible.\n"
            "Connection errors, timeouts and 5xx answers are retried; after each failure\n"
            "the agent asks the server which layers it still lacks, so pushing a bundle again\n"
            "after a cut upload sends only what is missing. A refused token (401, 403) stops\n"
            "at once (exit 9). Prints the run id on stdout; messages go to stderr.\n\n"
            "Required:\n"
            "  DIR                 the bundle folder\n");
    agt_upload_usage(out);
    fprintf(out, "\nOptions:\n"
                 "  --progress          a line per layer on stderr (default when stderr is a\n"
                 "                      terminal)\n"
                 "  --json              print the upload's figures as JSON on stdout\n"
                 "  -h, --help          this help\n\n");
    agt_print_exit_codes(out);
}

int
agt_cmd_push(int argc, char **argv)
{
    enum { O_PROGRESS = 256, O_JSON };
    static const struct option longopts[] = {
        AGT_UPLOAD_LONGOPTS,
        {"progress", no_argument, NULL, O_PROGRESS},
        {"json", no_argument, NULL, O_JSON},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    struct agt_upload_opts o;
    agt_upload_opts_init(&o);
    o.who = "push";
    o.progress = isatty(STDERR_FILENO);
    int json = 0, c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
        int taken = agt_upload_flag("push", c, optarg, &o);
        if (taken < 0)
            return AGT_EXIT_USAGE;
        if (taken > 0)
            continue;
        switch (c) {
        case O_PROGRESS:
            o.progress = 1;
            break;
        case O_JSON:
            json = 1;
            break;
        case 'h':
            push_usage(stdout);
            return AGT_EXIT_OK;
        default:
            fprintf(stderr, "Try `gpudiff-agent push --help`.\n");
            return AGT_EXIT_USAGE;
        }
    }
    if (argc - optind != 1) {
        fprintf(stderr, "gpudiff-agent push: give one bundle folder (see --help)\n");
        return AGT_EXIT_USAGE;
    }
    struct gd_err err = {0};
    if (agt_upload_opts_check(&o, &err) != 0) {
        fprintf(stderr, "gpudiff-agent push: %s\n", err.msg);
        return AGT_EXIT_USAGE;
    }
    agt_log_init(0);
    struct agt_upload_stats st;
    int code = agt_upload_bundle(argv[optind], &o, &st, &err);
    if (code != AGT_EXIT_OK) {
        fprintf(stderr, "gpudiff-agent push: %s\n", err.msg);
        if (code == AGT_EXIT_TOKEN)
            fprintf(stderr,
                    "gpudiff-agent push: check --token or %s: it must be a live token "
                    "of role agent or admin on this server\n",
                    AGT_TOKEN_ENV);
        return code;
    }
    if (json) {
        json_t *j = json_pack(
            "{s:s, s:s, s:i, s:i, s:i, s:I, s:f, s:i}", "id", st.run_id, "server", o.server,
            "layers", st.layers, "layers_sent", st.layers_sent, "layers_known", st.layers_known,
            "bytes_sent", (json_int_t)st.bytes_sent, "seconds", st.seconds, "retries", st.retries);
        json_dumpf(j, stdout, JSON_INDENT(1) | JSON_PRESERVE_ORDER);
        fputc('\n', stdout);
        json_decref(j);
    } else {
        printf("%s\n", st.run_id);
    }
    return AGT_EXIT_OK;
}
