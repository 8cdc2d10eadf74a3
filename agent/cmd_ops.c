/*
 * cmd_ops.c: `gpudiff-agent ops`: every op of engine/core/ops.def with its traits and the
 * backends of this build that run it, then the shape computations the ONNX loader folds;
 * and the op counts `--version` prints.
 */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "gpudiff/graph.h"
#include "gpudiff/ops.h"
#include "gpudiff/session.h"
#include "agent.h"

static void
ops_usage(FILE *out)
{
    fprintf(out,
            "Usage: gpudiff-agent ops [--json]\n\n"
            "Lists every op the engine has (engine/core/ops.def) with its traits and which\n"
            "backends of this build run it, then the ops the ONNX loader computes itself\n"
            "(folds, never layers) where their inputs are constants, shapes or integer\n"
            "inputs: the shape computations of exported models (docs/ONNX.md).\n\n"
            "Columns: op; family (engine/cpu/op_<family>.c); inputs (fewest-most); reduction,\n"
            "the rule for how many terms an output element sums (none, conv, conv_transpose,\n"
            "gemm, window, spatial, axes, axis); ulps, the rounding a correct implementation\n"
            "adds beyond the sum; disc, 1 when the op is discontinuous (floor, comparisons,\n"
            "argmax); ill, 1 when ill-conditioned near a pole (1/x, log, sqrt); then one\n"
            "column per backend: yes or no.\n\n"
            "  --json      one JSON object: {\"backends\": [...], \"ops\": [{\"name\", \"family\",\n"
            "              \"min_inputs\", \"max_inputs\", \"reduction\", \"ulps\",\n"
            "              \"discontinuous\", \"ill_conditioned\", \"backends\": [...]}],\n"
            "              \"folds\": [...]}\n"
            "  -h, --help  this help\n\n");
    agt_print_exit_codes(out);
}

int
agt_ops_count(const char *backend)
{
    int n = 0;
    for (int op = 0; op < GD_OP_COUNT; op++)
        n += gd_backend_has_op(backend, (enum gd_op)op) == 1;
    return n;
}

int
agt_cmd_ops(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"json", no_argument, NULL, 'j'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    int json = 0, c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
        if (c == 'j') {
            json = 1;
        } else if (c == 'h') {
            ops_usage(stdout);
            return AGT_EXIT_OK;
        } else {
            fprintf(stderr, "Try `gpudiff-agent ops --help`.\n");
            return AGT_EXIT_USAGE;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "gpudiff-agent ops: unexpected argument %s\n", argv[optind]);
        return AGT_EXIT_USAGE;
    }
    const char *const *backends = gd_backend_names();
    if (json) {
        json_t *root = json_object(), *bes = json_array(), *ops = json_array(),
               *folds = json_array();
        for (const char *const *b = backends; *b != NULL; b++)
            json_array_append_new(bes, json_string(*b));
        for (int op = 0; op < GD_OP_COUNT; op++) {
            const struct gd_op_info *info = gd_op_info((enum gd_op)op);
            json_t *has = json_array();
            for (const char *const *b = backends; *b != NULL; b++)
                if (gd_backend_has_op(*b, (enum gd_op)op) == 1)
                    json_array_append_new(has, json_string(*b));
            json_array_append_new(
                ops, json_pack("{s:s, s:s, s:i, s:i, s:s, s:i, s:b, s:b, s:o}", "name",
                               info->name, "family", info->family, "min_inputs",
                               info->min_inputs, "max_inputs", info->max_inputs, "reduction",
                               gd_reduction_name(info->reduction), "ulps", info->ulps,
                               "discontinuous", info->discontinuous, "ill_conditioned",
                               info->ill_conditioned, "backends", has));
        }
        for (int i = 0; gd_fold_op_name(i) != NULL; i++)
            json_array_append_new(folds, json_string(gd_fold_op_name(i)));
        json_object_set_new(root, "backends", bes);
        json_object_set_new(root, "ops", ops);
        json_object_set_new(root, "folds", folds);
        json_dumpf(root, stdout, JSON_INDENT(2));
        fputc('\n', stdout);
        json_decref(root);
        return AGT_EXIT_OK;
    }
    printf("%-20s %-8s %-6s %-15s %4s %4s %3s", "op", "family", "inputs", "reduction", "ulps",
           "disc", "ill");
    for (const char *const *b = backends; *b != NULL; b++)
        printf(" %-6s", *b);
    printf("\n");
    for (int op = 0; op < GD_OP_COUNT; op++) {
        const struct gd_op_info *info = gd_op_info((enum gd_op)op);
        char inputs[16];
        snprintf(inputs, sizeof inputs, "%d-%d", info->min_inputs, info->max_inputs);
        printf("%-20s %-8s %-6s %-15s %4d %4d %3d", info->name, info->family, inputs,
               gd_reduction_name(info->reduction), info->ulps, info->discontinuous,
               info->ill_conditioned);
        for (const char *const *b = backends; *b != NULL; b++)
            printf(" %-6s", gd_backend_has_op(*b, (enum gd_op)op) == 1 ? "yes" : "no");
        printf("\n");
    }
    printf("\n%d ops;", GD_OP_COUNT);
    for (const char *const *b = backends; *b != NULL; b++)
        printf(" %s has %d,", *b, agt_ops_count(*b));
    printf(" and the ONNX loader computes these itself where their inputs are constants,\n"
           "shapes or integer inputs (folds):");
    for (int i = 0; gd_fold_op_name(i) != NULL; i++)
        printf(" %s", gd_fold_op_name(i));
    printf("\n");
    return AGT_EXIT_OK;
}
