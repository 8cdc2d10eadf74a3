/*
 * conv_config.h: the text of a convolution choice the cuda backend can be fixed to
 * (knobs.conv_algo fixed:CHOICE, knobs.conv_pins NODE=CHOICE): under conv_api legacy a
 * cuDNN algorithm id ("3"), under graph an engine config of cuDNN's graph API, "eng" and
 * the engine's global index followed by its knob choices "_k" TYPE "=" VALUE
 * ("eng0", "eng34_k2=1_k13=0"), the form cudnn-frontend's plan tags use. Knobs are written
 * sorted by type, so one config has one text. Plain C, no CUDA: the knobs are checked
 * with it before any device is opened.
 */
#ifndef GPUDIFF_CONV_CONFIG_H
#define GPUDIFF_CONV_CONFIG_H

#include <stddef.h>
#include <stdint.h>

#include "gpudiff/error.h"

#ifdef __cplusplus
extern "C" {
#endif

#define GD__CONV_KNOBS_MAX 24

struct gd__conv_config {
    int64_t engine;                         /* CUDNN_ATTR_ENGINE_GLOBAL_INDEX */
    int n_knobs;
    int64_t knob_type[GD__CONV_KNOBS_MAX];  /* cudnnBackendKnobType_t values, ascending */
    int64_t knob_value[GD__CONV_KNOBS_MAX];
};

/* Parses len bytes of text as an engine config into out (knobs sorted). GD_EINVAL with a
 * message for anything else: a missing "eng", a non-number, a repeated knob type. */
int gd__conv_config_parse(const char *text, size_t len, struct gd__conv_config *out,
                          struct gd_err *err);

/* Writes the config's one text into buf (cut at size); returns the length it needs. */
int gd__conv_config_format(const struct gd__conv_config *c, char *buf, size_t size);

/* 1 when len bytes of text are a legacy algorithm id (digits, at most 1000), else 0. */
int gd__conv_legacy_id(const char *text, size_t len, int *id);

/* Checks one fixed choice (len bytes of text) for api ("graph" or "legacy"): 0, or
 * GD_EINVAL naming what the api takes. what says where it came from ("conv_algo fixed:"). */
int gd__conv_choice_check(const char *api, const char *text, size_t len, const char *what,
                          struct gd_err *err);

#ifdef __cplusplus
}
#endif
#endif
