/*
 * agent.h: what the parts of gpudiff-agent share: exit codes, the stderr log sink, and
 * one entry point per subcommand.
 */
#ifndef GPUDIFF_AGENT_H
#define GPUDIFF_AGENT_H

#include <jansson.h>

#include "gpudiff/bundle.h"
#include "gpudiff/error.h"
#include "gpudiff/session.h"
#include "gpudiff/uuid.h"

/* Exit codes, documented in `gpudiff-agent --help` and docs/AGENT.md. */
#define AGT_EXIT_MAP(XX)                                                            \
    XX(OK, 0, "success")                                                            \
    XX(INTERNAL, 1, "unexpected internal error")                                    \
    XX(USAGE, 2, "bad command line")                                                \
    XX(INPUT, 3, "a model, weight, input or bundle file is missing or invalid")     \
    XX(RUN, 4, "the run failed (an op, the device, or memory)")                     \
    XX(NOTSUP, 5, "the model or a knob needs something this build does not support") \
    XX(OUTPUT, 6, "the bundle could not be written (exists, disk, permissions)")         \
    XX(DIVERGED, 7, "diff --check: a layer diverges beyond rounding noise")             \
    XX(UPLOAD, 8, "could not upload to (or, for replay, read from) the server")       \
    XX(TOKEN, 9, "the server refused the token")                                    \
    XX(JOB, 10, "submit --wait: a device failed the job or never answered")          \
    XX(TIMEOUT, 11, "submit --wait --timeout: the job was still running")

enum agt_exit {
#define AGT__EXIT_ENUM(name, value, text) AGT_EXIT_##name = (value),
    AGT_EXIT_MAP(AGT__EXIT_ENUM)
#undef AGT__EXIT_ENUM
};

/* Where an error happened decides its exit code. */
enum agt_phase { AGT_PHASE_LOAD, AGT_PHASE_RUN, AGT_PHASE_WRITE };

/* The exit code for engine error `code` met in `phase`. */
int agt_exit_for(int code, enum agt_phase phase);

/* Prints "gpudiff-agent: <msg>" to stderr and returns agt_exit_for(err->code, phase). */
int agt_fail(const struct gd_err *err, enum agt_phase phase);

/* Sends the engine's log to stderr; verbose adds debug messages. */
void agt_log_init(int verbose);

/* A byte count, plain or with K, M or G (powers of 1024): 0 with *out set, -1 when s is
 * none or too large (cli_args.c). */
int agt_parse_size(const char *s, int64_t *out);

/* ---- KEY=VALUE arguments (cli_args.c): one rule for every option that takes them ---- */

#define AGT_KV_KEY_MAX 128 /* a key's bytes, with its NUL */

/* Splits arg at its first '=' into key (at most size - 1 bytes, not empty, no spaces or
 * control characters) and *value (the rest, borrowed). GD_EINVAL ("needs KEY=VALUE, not
 * ARG") otherwise. */
int agt_kv_split(const char *arg, char *key, size_t size, const char **value, struct gd_err *err);

/* obj[KEY] = VALUE (a string) from arg; -1 after printing "gpudiff-agent CMD: FLAG needs
 * KEY=VALUE, not ARG". */
int agt_kv_set(json_t *obj, const char *cmd, const char *flag, const char *arg);

/* Writes the exit code table for --help texts. */
void agt_print_exit_codes(FILE *out);

/* Subcommands: each parses its own flags (argv[0] is the subcommand's name). */
int agt_cmd_run(int argc, char **argv);
int agt_cmd_diff(int argc, char **argv);
int agt_cmd_bundle(int argc, char **argv);
int agt_cmd_push(int argc, char **argv);
int agt_cmd_outbox(int argc, char **argv); /* an upload folder (cmd_outbox.c) */
int agt_cmd_sweep(int argc, char **argv);
int agt_cmd_ops(int argc, char **argv);

/* The op of ops.def a framework's layer name means ("Linear", "Conv2d", "LayerNorm", and
 * ONNX's own "Gemm"): 0 and *out, or GD_ENOENT (framework_ops.c). */
int agt_framework_op(const char *name, enum gd_op *out);

/* The names agt_framework_op() takes, for messages and --help. */
void agt_framework_op_names(FILE *out);

/* How many ops of ops.def the backend called name runs (cmd_ops.c). */
int agt_ops_count(const char *backend);

/* ---- the upload flags `push` and `run` share (cmd_push.c) ---- */

struct agt_upload_opts; /* upload.h */

enum { AGT_OPT_SERVER = 1000, AGT_OPT_TOKEN, AGT_OPT_RETRIES, AGT_OPT_RETRY_TIME,
       AGT_OPT_CACERT, AGT_OPT_INSECURE_HTTP };

#define AGT_UPLOAD_LONGOPTS                                                                \
    {"server", required_argument, NULL, AGT_OPT_SERVER},                                   \
        {"token", required_argument, NULL, AGT_OPT_TOKEN},                                 \
        {"retries", required_argument, NULL, AGT_OPT_RETRIES},                             \
        {"retry-time", required_argument, NULL, AGT_OPT_RETRY_TIME},                       \
        {"cacert", required_argument, NULL, AGT_OPT_CACERT},                               \
        {"insecure-http", no_argument, NULL, AGT_OPT_INSECURE_HTTP}

/*
 * Takes one of the upload flags into o: 1 when opt was one (and its value good), 0 when opt
 * is not an upload flag, -1 after printing what is wrong with the value. cmd names the
 * subcommand in messages.
 */
int agt_upload_flag(const char *cmd, int opt, const char *arg, struct agt_upload_opts *o);

/* The upload flags' lines of --help. */
void agt_upload_usage(FILE *out);

/* ---- the knobs' options (knob_opts.c), made from engine/core/knobs.def ---- */

struct option; /* getopt.h */

/* A knob's getopt code: AGT_OPT_KNOB + its enum gd_knob. */
enum { AGT_OPT_KNOB = 1200 };

/*
 * out = own's options (ended by a NULL name; may be NULL) followed by one per knob that
 * knobs marks (knobs[k] != 0; NULL: every knob), then the NULL entry, at most max entries in
 * all. Returns the count, -1 when max is too small.
 */
int agt_knob_longopts(const struct option *own, const unsigned char *knobs, struct option *out,
                      int max);

/* Takes a knob option into k: 1 when opt was one (and its value good), 0 when it is not a
 * knob's, -1 after printing what is wrong ("--tf32 takes on or off, not yes"). cmd names the
 * subcommand in messages. */
int agt_knob_flag(const char *cmd, int opt, const char *arg, struct gd_knobs *k);

/* The --help lines of the knobs knobs marks (NULL: all), from knobs.def. */
void agt_knob_usage(FILE *out, const unsigned char *knobs);

/* 0 when this build has the backend called name, else -1 after printing the ones it has.
 * cmd names the subcommand in the message. */
int agt_backend_check(const char *cmd, const char *name);

int agt_cmd_replay(int argc, char **argv);

/* jobagt: jobs from gpudiffd (jobs.h): submit one, serve them */
int agt_cmd_submit(int argc, char **argv);
int agt_cmd_serve(int argc, char **argv);

/* "2026-11-30T08:00:00Z": now, in UTC. */
void agt_utc_now(char *buf, size_t size);

/*
 * Commits a bundle with meta as its run.json (the layers added), then prints run.json with
 * the bundle's folder (as_json) or the per-layer table on stdout.
 */
int agt_bundle_commit(struct gd_bundle_writer *w, json_t *meta, const char *dir, int as_json,
                      struct gd_err *err);

/* Prints the per-layer summary of a bundle being written. */
void agt_report_table(FILE *out, json_t *run, const char *bundle_dir);

#endif
