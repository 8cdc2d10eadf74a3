/*
 * run_opts.h: what `gpudiff-agent run` was asked, shared with `fetch-layers`, which runs a
 * model again from the options a run recorded in run.json ("rerun"): the same parser and
 * loader, so a re-run is the run.
 */
#ifndef GPUDIFF_AGENT_RUN_OPTS_H
#define GPUDIFF_AGENT_RUN_OPTS_H

#include <jansson.h>

#include "gpudiff/graph.h"
#include "gpudiff/session.h"
#include "agent.h"
#include "inputs.h"
#include "upload.h"

struct agt_run_opts {
    const char *model;
    const char *inputs[AGT_MAX_INPUTS]; /* --input, as given: FILE or NAME=FILE */
    int n_inputs;
    const char *input_key;
    const char *backend;
    const char *out;
    const char *weights_dir;
    int replace;
    int json;
    int progress;
    int verbose;
    json_t *labels;
    /* jobagt: what `serve` adds to a run made for a job (NULL: none) */
    const char *model_name;        /* --model-name: run.json's model.name */
    const char *job_id, *lease_id; /* --job, --lease: run.json's "job" */
    json_t *env_labels;            /* --env-label: run.json's env.labels (made when given) */
    struct gd_knobs knobs;
    struct agt_upload_opts upload; /* upload.server NULL: no upload */
    /* fetch-layers: with --capture layers=, run the nodes up to the last layer captured
     * only (the layers after it are not in the bundle) */
    int stop_after_selected;
};

/* Fills o with the defaults (knobs unset, labels an empty object, progress on a
 * terminal); agt_run_opts_fini() frees what it holds. */
void agt_run_opts_init(struct agt_run_opts *o);
void agt_run_opts_fini(struct agt_run_opts *o);

/* Runs o (parsed by agt_run_parse()): loads, runs, writes the bundle and, with a server,
 * uploads it. Returns an exit code; messages go to stderr. */
int agt_run_execute(struct agt_run_opts *o);

/* Parses run's command line into o (made by agt_run_opts_init()).
 * 0, 1 after --help, -1 after a usage error (printed). */
int agt_run_parse(int argc, char **argv, struct agt_run_opts *o);

/* run.json's "rerun": the options that decide what the run computes, with absolute paths
 * (model, inputs, weights folder, backend, knobs), as arguments for agt_run_parse(). */
json_t *agt_run_rerun_json(const struct agt_run_opts *o);

/* Layer selection of --capture for graph g: *sel and the per-layer flags in *only (owned by
 * the caller; NULL when none). GD_EINVAL for a pattern that names no layer. */
int agt_run_capture_sel(const char *capture, const struct gd_graph *g, int64_t batch,
                        struct gd_capture_sel *sel, unsigned char **only, struct gd_err *err);

int agt_cmd_fetch_layers(int argc, char **argv);

#endif
