/*
 * jobs.h: what `gpudiff-agent submit` and `gpudiff-agent serve` share (docs/AGENT.md,
 * "submit" and "serve"; the contract is docs/SERVER.md, "Jobs"): the pure pieces (knob and
 * match parsing, a job's knobs as `run` flags, the file cache's names), and the agent's HTTP
 * client (http.h), which gives back every answer's status and body, since the jobs routes
 * speak in statuses (204 no work, 409 missing files or a lost lease).
 */
#ifndef GPUDIFF_AGENT_JOBS_H
#define GPUDIFF_AGENT_JOBS_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "gpudiff/error.h"
#include "http.h"

/* ---- the pure pieces (jobs_args.c) ---- */

/* 1 when s is 64 lowercase hex digits (a SHA-256 as the daemon names files). */
int agt_sha256_valid(const char *s);

/* 1 when s is a plain file name: not empty, no '/', not "." or "..", at most 255 bytes, no
 * control characters. Job file names must be, so a job cannot write outside its folder. */
int agt_basename_valid(const char *s);

/* 1 when s may name a job's file as the daemon takes them: a plain file name of the letters
 * A-Z a-z, the digits and . _ - + @ (the jobs contract, amendment 6). */
int agt_job_name_valid(const char *s);

/* A job's data or weights file may lie in folders: at most this long and deep. */
#define AGT_JOB_PATH_MAX   1024
#define AGT_JOB_PATH_DEPTH 16

/* 1 when s may name a job's data or weights file: names agt_job_name_valid() takes, joined
 * by '/' (no empty part, not absolute), within AGT_JOB_PATH_MAX and AGT_JOB_PATH_DEPTH. */
int agt_job_path_valid(const char *s);

/* 1 when two paths in a job's folder cannot both be made: equal, or one a folder of the other. */
int agt_job_paths_clash(const char *a, const char *b);

/*
 * The cache's name for the file of hash sha256 under dir: DIR/files/SHA256 into out. The
 * temporary name a download is written to before it is checked and renamed is
 * DIR/files/.SHA256.PID.tmp (tmp may be NULL). GD_EINVAL for a hash that is not one, or a
 * path that does not fit.
 */
int agt_cache_path(const char *dir, const char *sha256, long pid, char *out, size_t size,
                   char *tmp, size_t tmp_size, struct gd_err *err);

/*
 * `--knob K=V` of submit into knobs: K a knob of knobs.def ('-' read as '_') or input_key,
 * given once, stored under its name; V one of its values, checked here (a mistake is found
 * before the job goes out) and stored in its one spelling, as a number for the knobs
 * run.json records as numbers. GD_EINVAL with the message in err.
 */
int agt_knob_kv(const char *arg, json_t *knobs, struct gd_err *err);

/*
 * `--match K=V[,V...]` into match: one value as a string, several as an array of strings. K
 * is backend, host, key, env.FIELD or labels.NAME, given once. GD_EINVAL with the message.
 */
int agt_match_kv(const char *arg, json_t *match, struct gd_err *err);

/*
 * A job's "knobs" object as `run` flags, appended to argv (its strings are copies owned by
 * the caller, who frees argv[*argc ...] after) from index *argc, at most max entries in
 * all. Names are knobs of knobs.def or input_key ('-' read as '_'); values are strings,
 * integers for the knobs run.json records as numbers, or booleans for the on|off knobs.
 * GD_EINVAL naming the knob for an unknown name or a value of the wrong type: the message is
 * what serve reports to the daemon.
 */
int agt_knob_args(json_t *knobs, char **argv, int *argc, int max, struct gd_err *err);

/*
 * The key a serve registers a device under (docs/AGENT.md, "serve"), into out: device_id
 * when given (device_id/BACKEND when serve has several backends), else HOST/BACKEND, then
 * for cuda ":" and the GPU's UUID (env.gpu_uuid; ":0" without one), then each label as
 * " label.K=V", sorted by K (as the daemon's device key of runs writes them). GD_EINVAL
 * when it would be longer than max bytes (a --device-id is then needed) or out is short.
 */
int agt_device_key(const char *device_id, int n_backends, const char *host, const char *backend,
                   json_t *env, json_t *labels, size_t max, char *out, size_t size,
                   struct gd_err *err);

/* The knob names agt_knob_args() knows, comma separated ("emulate, tf32, ..."). */
const char *agt_knob_names(void);

/* The last non-empty line of text (len bytes) into out, without its line end; out is ""
 * when there is none. What serve reports of a failed run: its stderr's last line. */
void agt_last_line(const char *text, size_t len, char *out, size_t size);

#endif
