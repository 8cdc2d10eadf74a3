/*
 * main.c: gpudiff-agent's entry point: subcommand dispatch, exit codes, and the log sink.
 * Results go to stdout; messages and progress to stderr.
 */
#include <stdio.h>
#include <string.h>

#include "gpudiff/log.h"
#include "gpudiff/session.h"
#include "agent.h"
#include "run_opts.h" /* fp: fetch-layers */

static const struct {
    const char *name;
    int (*fn)(int argc, char **argv);
    const char *summary;
} commands[] = {
    {"run", agt_cmd_run, "run a model on one input and write its run bundle"},
    {"diff", agt_cmd_diff, "compare two run bundles layer by layer, here, without a daemon"},
    {"bundle", agt_cmd_bundle, "make a run bundle from .npy/.npz dumps of another framework"},
    {"push", agt_cmd_push, "upload a run bundle to gpudiffd (or finish a cut upload)"},
    {"outbox", agt_cmd_outbox, "send an upload folder's bundles; list what waits or was refused"},
    {"sweep", agt_cmd_sweep, "run one model under a grid of settings: what moves, why, the cost"},
    {"ops", agt_cmd_ops, "list the engine's ops, their traits and the backends that run them"},
    {"replay", agt_cmd_replay, "rerun each node of a bundle's model from its captured inputs"},
    {"fetch-layers", agt_cmd_fetch_layers, "send the layer tensors gpudiffd asked for (fp)"},
    {"submit", agt_cmd_submit, "submit a job to gpudiffd: run a model on every matching device"},
    {"serve", agt_cmd_serve, "run as a service: register devices, take and run gpudiffd's jobs"},
};

int
agt_exit_for(int code, enum agt_phase phase)
{
    if (code == 0)
        return AGT_EXIT_OK;
    if (code == GD_ENOTSUP)
        return AGT_EXIT_NOTSUP;
    switch (phase) {
    case AGT_PHASE_LOAD:
        return code == GD_ENOMEM ? AGT_EXIT_RUN : AGT_EXIT_INPUT;
    case AGT_PHASE_RUN:
        return code == GD_EINVAL || code == GD_ESHAPE || code == GD_EDTYPE ? AGT_EXIT_INPUT
                                                                           : AGT_EXIT_RUN;
    case AGT_PHASE_WRITE:
        return AGT_EXIT_OUTPUT;
    }
    return AGT_EXIT_INTERNAL;
}

int
agt_fail(const struct gd_err *err, enum agt_phase phase)
{
    fprintf(stderr, "gpudiff-agent: %s\n", err->msg[0] ? err->msg : gd_strerror(err->code));
    return agt_exit_for(err->code, phase);
}

static void
log_to_stderr(void *user, enum gd_log_level level, const char *msg)
{
    (void)user;
    fprintf(stderr, "gpudiff-agent: %s: %s\n", gd_log_level_name(level), msg);
}

void
agt_log_init(int verbose)
{
    gd_log_set(log_to_stderr, NULL, verbose ? GD_LOG_DEBUG : GD_LOG_WARN);
}

void
agt_print_exit_codes(FILE *out)
{
    fprintf(out, "Exit codes:\n");
#define AGT__EXIT_HELP(name, value, text) fprintf(out, "  %d  %s\n", value, text);
    AGT_EXIT_MAP(AGT__EXIT_HELP)
#undef AGT__EXIT_HELP
}

static void
usage(FILE *out)
{
    fprintf(out, "Usage: gpudiff-agent COMMAND [OPTIONS]\n\n"
                 "Runs models layer by layer through the gpudiff engine and records every\n"
                 "layer's output with the environment that produced it.\n\nCommands:\n");
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        fprintf(out, "  %-8s %s\n", commands[i].name, commands[i].summary);
    fprintf(out, "\n`gpudiff-agent COMMAND --help` describes a command's options.\n"
                 "  --version  print the version, the backends of this build and how many\n"
                 "             ops each runs\n"
                 "  --help     print this help\n\n");
    agt_print_exit_codes(out);
}

int
main(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return AGT_EXIT_USAGE;
    }
    if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 ||
        strcmp(argv[1], "help") == 0) {
        usage(stdout);
        return AGT_EXIT_OK;
    }
    if (strcmp(argv[1], "--version") == 0) {
        printf("gpudiff-agent %s (backends:", gd_version());
        for (const char *const *b = gd_backend_names(); *b != NULL; b++)
            printf(" %s", *b);
        printf(")\nops of %d (`gpudiff-agent ops` lists them):", GD_OP_COUNT);
        for (const char *const *b = gd_backend_names(); *b != NULL; b++)
            printf(" %s %d%s", *b, agt_ops_count(*b), b[1] != NULL ? "," : "");
        printf("\n");
        return AGT_EXIT_OK;
    }
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        if (strcmp(argv[1], commands[i].name) == 0)
            return commands[i].fn(argc - 1, argv + 1);
    fprintf(stderr, "gpudiff-agent: unknown command %s\n\n", argv[1]);
    usage(stderr);
    return AGT_EXIT_USAGE;
}
