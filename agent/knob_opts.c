/*
 * knob_opts.c: the backend and knob flags of `gpudiff-agent replay`, parsed as `run` parses
 * them (the same names, values and checks), and the knobs as run.json records them.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpudiff/run.h"
#include "agent.h"

void
agt_knob_opts_init(struct agt_knob_opts *o)
{
    o->backend = NULL;
    gd_knobs_init(&o->knobs);
}

static int
parse_ll(const char *s, long long min, long long *out)
{
    char *end;
    long long v = strtoll(s, &end, 10);
    if (*s == '\0' || *end != '\0' || v < min)
        return -1;
    *out = v;
    return 0;
}

int
agt_backend_check(const char *cmd, const char *name)
{
    for (const char *const *b = gd_backend_names(); *b != NULL; b++)
        if (strcmp(*b, name) == 0)
            return 0;
    fprintf(stderr, "gpudiff-agent %s: this build has no backend %s (it has:", cmd, name);
    for (const char *const *b = gd_backend_names(); *b != NULL; b++)
        fprintf(stderr, " %s", *b);
    fprintf(stderr, ")\n");
    return -1;
}

int
agt_knob_flag(const char *cmd, int opt, const char *arg, struct agt_knob_opts *o)
{
    struct gd_err err = {0};
    long long v;
    switch (opt) {
    case AGT_OPT_BACKEND:
        if (agt_backend_check(cmd, arg) != 0)
            return -1;
        o->backend = arg;
        return 1;
    case AGT_OPT_EMULATE:
        if (gd_knobs_set_emulate(&o->knobs, arg, &err) != 0) {
            fprintf(stderr, "gpudiff-agent %s: --emulate: %s\n", cmd, err.msg);
            return -1;
        }
        return 1;
    case AGT_OPT_THREADS:
        if (parse_ll(arg, 1, &v) != 0 || v > 256) {
            fprintf(stderr, "gpudiff-agent %s: --threads needs 1 to 256, not %s\n", cmd, arg);
            return -1;
        }
        o->knobs.threads = (int)v;
        return 1;
    case AGT_OPT_CONV_ALGO:
        snprintf(o->knobs.conv_algo, sizeof o->knobs.conv_algo, "%s", arg);
        return 1;
    case AGT_OPT_CONV_API:
        if (strcmp(arg, "graph") != 0 && strcmp(arg, "legacy") != 0) {
            fprintf(stderr, "gpudiff-agent %s: --conv-api takes graph or legacy, not %s\n", cmd,
                    arg);
            return -1;
        }
        snprintf(o->knobs.conv_api, sizeof o->knobs.conv_api, "%s", arg);
        return 1;
    case AGT_OPT_REPRO:
        if (gd_repro_check(arg, &err) != 0) {
            fprintf(stderr, "gpudiff-agent %s: --repro: %s\n", cmd, err.msg);
            return -1;
        }
        snprintf(o->knobs.repro, sizeof o->knobs.repro, "%s", arg);
        return 1;
    case AGT_OPT_TF32:
        if (strcmp(arg, "on") != 0 && strcmp(arg, "off") != 0) {
            fprintf(stderr, "gpudiff-agent %s: --tf32 takes on or off, not %s\n", cmd, arg);
            return -1;
        }
        o->knobs.tf32 = strcmp(arg, "on") == 0;
        return 1;
    case AGT_OPT_MATH_MODE:
        snprintf(o->knobs.math_mode, sizeof o->knobs.math_mode, "%s", arg);
        return 1;
    case AGT_OPT_WORKSPACE:
        if (parse_ll(arg, 0, &v) != 0) {
            fprintf(stderr, "gpudiff-agent %s: --workspace-limit needs a byte count, not %s\n",
                    cmd, arg);
            return -1;
        }
        o->knobs.workspace_limit = v;
        return 1;
    default:
        return 0;
    }
}

int
agt_knob_opts_check(const char *cmd, const struct agt_knob_opts *o)
{
    const char *backend = o->backend ? o->backend : "cpu";
    int cpu = strcmp(backend, "cpu") == 0 || strcmp(backend, "cpu64") == 0;
    if (o->knobs.threads > 0 && !cpu) {
        fprintf(stderr, "gpudiff-agent %s: --threads is for the cpu and cpu64 backends\n", cmd);
        return -1;
    }
    return 0;
}

void
agt_knob_usage(FILE *out)
{
    fprintf(out,
            "  --backend NAME      cpu (float32, fixed summation order; default), cpu64\n"
            "                      (float64) or cuda (when built with CUDA)\n"
            "  --emulate SPEC      cpu only: round the inputs of GEMMs (and convolutions) to\n"
            "                      tf32, bf16 or fp16 before accumulating in float32,\n"
            "                      optionally :CLASSES (gemm, conv; default gemm), e.g.\n"
            "                      tf32:conv,gemm, or @NODES: only those nodes (tf32@fc2)\n"
            "  --threads N         cpu and cpu64: worker threads (the same bits for any N)\n"
            "  --conv-algo HOW     cuda: heuristic (default), autotune, deterministic or\n"
            "                      fixed:CHOICE (an engine config engN[_kTYPE=VALUE...] with\n"
            "                      --conv-api graph, an algorithm id N with legacy)\n"
            "  --conv-api API      cuda: graph (cuDNN's graph API; default) or legacy\n"
            "  --repro MODE        cuda: bitwise (every layer the cpu backend's bits, own\n"
            "                      kernels, any GPU and batch size) or off (default)\n"
            "  --tf32 on|off       cuda: TF32 tensor-core math for convolutions and GEMMs\n"
            "                      (default off)\n"
            "  --math-mode MODE    cuda: cuBLAS math: default or pedantic\n"
            "  --workspace-limit BYTES  cuda: most scratch memory an algorithm may use\n");
}

