/*
 * framework_ops.c: the op names another framework gives a layer (PyTorch's torch.nn module
 * names, as a forward hook sees them), each mapped to the op of engine/core/ops.def that
 * computes it, so `gpudiff-agent bundle --op fc1=Linear` records what the comparison needs
 * (reduction rule, discontinuity). ONNX's own names (ops.def's) are taken as they are.
 */
#include <stdio.h>
#include <string.h>

#include "gpudiff/ops.h"
#include "agent.h"

/* Framework name, ops.def name. */
static const struct {
    const char *framework;
    const char *op;
} framework_ops[] = {
    {"Linear", "Gemm"},
    {"Bilinear", "MatMul"},
    {"Conv1d", "Conv"},
    {"Conv2d", "Conv"},
    {"Conv3d", "Conv"},
    {"ConvTranspose1d", "ConvTranspose"},
    {"ConvTranspose2d", "ConvTranspose"},
    {"ConvTranspose3d", "ConvTranspose"},
    {"BatchNorm1d", "BatchNormalization"},
    {"BatchNorm2d", "BatchNormalization"},
    {"BatchNorm3d", "BatchNormalization"},
    {"LayerNorm", "LayerNormalization"},
    {"GroupNorm", "GroupNormalization"},
    {"InstanceNorm1d", "InstanceNormalization"},
    {"InstanceNorm2d", "InstanceNormalization"},
    {"InstanceNorm3d", "InstanceNormalization"},
    {"LocalResponseNorm", "LRN"},
    {"MaxPool1d", "MaxPool"},
    {"MaxPool2d", "MaxPool"},
    {"MaxPool3d", "MaxPool"},
    {"AvgPool1d", "AveragePool"},
    {"AvgPool2d", "AveragePool"},
    {"AvgPool3d", "AveragePool"},
    {"AdaptiveAvgPool2d", "GlobalAveragePool"},
    {"AdaptiveMaxPool2d", "GlobalMaxPool"},
    {"ReLU", "Relu"},
    {"ReLU6", "Clip"},
    {"LeakyReLU", "LeakyRelu"},
    {"PReLU", "PRelu"},
    {"ELU", "Elu"},
    {"SELU", "Selu"},
    {"CELU", "Celu"},
    {"GELU", "Gelu"},
    {"Sigmoid", "Sigmoid"},
    {"Tanh", "Tanh"},
    {"Softplus", "Softplus"},
    {"Softsign", "Softsign"},
    {"Hardsigmoid", "HardSigmoid"},
    {"Hardswish", "HardSwish"},
    {"Hardtanh", "Clip"},
    {"Mish", "Mish"},
    {"Softmax", "Softmax"},
    {"LogSoftmax", "LogSoftmax"},
    {"Flatten", "Flatten"},
    {"Dropout", "Dropout"},
    {"Identity", "Identity"},
    {"Embedding", "Gather"},
    {"Upsample", "Resize"},
    {"PixelShuffle", "DepthToSpace"},
    {"PixelUnshuffle", "SpaceToDepth"},
};

int
agt_framework_op(const char *name, enum gd_op *out)
{
    for (size_t i = 0; i < sizeof framework_ops / sizeof framework_ops[0]; i++)
        if (strcmp(framework_ops[i].framework, name) == 0)
            return gd_op_from_name(framework_ops[i].op, out);
    return gd_op_from_name(name, out);
}

void
agt_framework_op_names(FILE *out)
{
    size_t n = sizeof framework_ops / sizeof framework_ops[0];
    int col = 2;
    fprintf(out, "  ");
    for (size_t i = 0; i < n; i++) {
        char item[96];
        int w = snprintf(item, sizeof item, "%s (%s)%s", framework_ops[i].framework,
                         framework_ops[i].op, i + 1 < n ? "," : ";");
        if (col > 2 && col + 1 + w > 92) {
            fprintf(out, "\n  ");
            col = 2;
        } else if (col > 2) {
            fputc(' ', out);
            col++;
        }
        fprintf(out, "%s", item);
        col += w;
    }
    fprintf(out, "\n  and every op of engine/core/ops.def by its ONNX name (gpudiff-agent ops)\n");
}
