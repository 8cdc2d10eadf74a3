/*
 * knobs.h: the settings of a run that can change its numbers, its time or what it keeps
 * (knobs), made from the one list engine/core/knobs.def: struct gd_knobs (a field per
 * knob), each knob's spelling, default, backends and category, and their parsing, printing
 * and JSON records. Every command-line option, run.json record, job argument, sweep axis
 * and device key of a knob comes from here.
 */
#ifndef GPUDIFF_KNOBS_H
#define GPUDIFF_KNOBS_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "gpudiff/error.h"

#ifdef __cplusplus
extern "C" {
#endif

struct gd_env; /* gpudiff/session.h */

/* Reduced-precision formats the CPU backend can emulate on the inputs of GEMMs and convs. */
enum gd_emulate { GD_EMULATE_NONE = 0, GD_EMULATE_TF32, GD_EMULATE_BF16, GD_EMULATE_FP16 };

/* Op classes an emulation applies to (bit flags). */
#define GD_CLASS_GEMM 1u /* Gemm, MatMul */
#define GD_CLASS_CONV 2u /* Conv, ConvTranspose */

/* How a knob's value is spelled, stored and recorded (knobs.def's KIND). */
enum gd_knob_kind {
    GD_KNOB_KIND_ONOFF,   /* int: 1 on, 0 off, -1 unset; recorded "on" or "off" */
    GD_KNOB_KIND_CHOICE,  /* char[size]: one of the values, "" unset; recorded as it is */
    GD_KNOB_KIND_TEXT,    /* char[size]: free text its user checks, "" unset */
    GD_KNOB_KIND_EMULATE, /* enum gd_emulate NAME + unsigned NAME_classes + char NAME_nodes[]:
                             "tf32:gemm", or "tf32@fc1,fc2" (only those nodes, either class) */
    GD_KNOB_KIND_COUNT,   /* int: auto (0, unset) or a count in range; recorded as a number */
    GD_KNOB_KIND_ROWS,    /* int64_t: rows, 0 unset (the whole input); a number or null */
    GD_KNOB_KIND_BYTES,   /* int64_t: bytes, -1 unset (none); a number or null */
    GD_KNOB_KIND_MIB,     /* int64_t: bytes, given and recorded in MiB; 0 unset */
};

/* What a knob changes (knobs.def's CATEGORY), the diff's words for it. */
enum gd_knob_category {
    GD_KNOB_CAT_ARITHMETIC, /* how numbers are rounded */
    GD_KNOB_CAT_ALGORITHM,  /* which algorithm computes them */
    GD_KNOB_CAT_BATCH,      /* how the input is sliced */
    GD_KNOB_CAT_OTHER       /* the time or what is kept: never a bit */
};

/* What a sweep's grid does with a knob (knobs.def's SWEEP). */
enum gd_knob_sweep {
    GD_KNOB_SWEEP_AXIS,   /* an axis: a setting a deployment can choose */
    GD_KNOB_SWEEP_WHATIF, /* an axis that is a what-if (emulation): never advised as a fix */
    GD_KNOB_SWEEP_SIZES,  /* the batch sizes every setting runs at */
    GD_KNOB_SWEEP_NONE    /* not an axis */
};

enum gd_knob {
#define GD_KNOB(e, name, kind, size, values, dflt, backends, cat, sweep, help) GD_KNOB_##e,
#include "../../core/knobs.def"
#undef GD_KNOB
    GD_KNOB_COUNT
};

#define GD__KNOB_FIELD_ONOFF(name, size)  int name;
#define GD__KNOB_FIELD_CHOICE(name, size) char name[size];
#define GD__KNOB_FIELD_TEXT(name, size)   char name[size];
#define GD__KNOB_FIELD_EMULATE(name, size)                                                         \
    enum gd_emulate name;                                                                          \
    unsigned name##_classes;                                                                       \
    char name##_nodes[size];
#define GD__KNOB_FIELD_COUNT(name, size) int name;
#define GD__KNOB_FIELD_ROWS(name, size)  int64_t name;
#define GD__KNOB_FIELD_BYTES(name, size) int64_t name;
#define GD__KNOB_FIELD_MIB(name, size)   int64_t name;

/*
 * Every knob of a run, one field per line of knobs.def (named as the knob; the line's help
 * says what it holds). A knob left unset means the backend's default; gd_session_new()
 * refuses (GD_ENOTSUP) a set knob the backend does not take. dtype and capture are for the
 * caller (the model is cast at load, the capture chosen with gd_session_set_capture()):
 * sessions do not read them. host_memory is in bytes.
 */
struct gd_knobs {
#define GD_KNOB(e, name, kind, size, values, dflt, backends, cat, sweep, help)                     \
    GD__KNOB_FIELD_##kind(name, size)
#include "../../core/knobs.def"
#undef GD_KNOB
};

/* A line of knobs.def. */
struct gd_knob_info {
    const char *name; /* "conv_algo" */
    enum gd_knob_kind kind;
    const char *values;        /* "heuristic|autotune|deterministic|fixed:CHOICE" */
    const char *default_value; /* as recorded when unset; "" recorded as null */
    const char *backends;      /* "cuda", "cpu cpu64"; "" every backend */
    enum gd_knob_category category;
    enum gd_knob_sweep sweep;
    const char *help;
    size_t offset, size; /* the field in struct gd_knobs */
};

/* Fills knobs with "unset" everywhere (emulate_classes preset to GD_CLASS_GEMM). */
void gd_knobs_init(struct gd_knobs *knobs);

/* The line of knob k; NULL outside the enum. */
const struct gd_knob_info *gd_knob_info(enum gd_knob k);

/* The knob called name ('-' read as '_'): 0 and *out, or GD_ENOENT. */
int gd_knob_find(const char *name, enum gd_knob *out);

/* Its command-line option, "--conv-algo", into out. */
void gd_knob_flag(enum gd_knob k, char *out, size_t size);

/* "arithmetic", "algorithm", "batch", "other". */
const char *gd_knob_category_name(enum gd_knob_category c);

/* "axis", "whatif", "sizes", "none". */
const char *gd_knob_sweep_name(enum gd_knob_sweep s);

/* 1 when backend takes knob k. */
int gd_knob_applies(enum gd_knob k, const char *backend);

/* 1 when k's field of knobs is set (not at "unset"). */
int gd_knob_is_set(const struct gd_knobs *knobs, enum gd_knob k);

/* Sets k's field back to "unset". */
void gd_knob_unset(struct gd_knobs *knobs, enum gd_knob k);

/*
 * Sets knob k of knobs from text, one of its values as spelled in knobs.def ("on", "tf32:gemm",
 * "8M", "auto"). GD_EINVAL with a message naming the knob and its values ("tf32 takes on or
 * off, not yes"); knobs is unchanged then.
 */
int gd_knob_parse(struct gd_knobs *knobs, enum gd_knob k, const char *text, struct gd_err *err);

/* The value of knob k in its one spelling ("on", "bf16:conv+gemm", "1048576"), or the
 * default's when it is unset, into out; "" for an unset knob without a default. */
void gd_knob_format(const struct gd_knobs *knobs, enum gd_knob k, char *out, size_t size);

/*
 * run.json's "knobs": every knob backend takes (NULL: cpu), as the session resolved it when
 * env is given (env's entry of the knob's name, cpu_threads for threads), else as set or at
 * its default. Numbers for COUNT, ROWS, BYTES and MIB (null where unset without a default),
 * strings otherwise. A new reference.
 */
json_t *gd_knobs_json(const struct gd_knobs *knobs, const char *backend, const struct gd_env *env);

/*
 * Reads a "knobs" object of run.json (or a job) into out (initialized first): strings as
 * gd_knob_parse() takes them, numbers for the numeric kinds, and what older runs wrote
 * (true and false for on and off, "tf32:conv,gemm" for "tf32:conv+gemm"). Keys that are no
 * knob are left alone; null leaves a knob unset. GD_EINVAL naming the first bad value.
 */
int gd_knobs_from_json(json_t *obj, struct gd_knobs *out, struct gd_err *err);

/*
 * The table itself, for clients (gpudiffd's GET /api/v1/knobs): one object per knob, in
 * knobs.def's order, {name, flag, kind, values, default, backends [...], category, sweep,
 * numeric (recorded as a number), help}. A new reference.
 */
json_t *gd_knobs_table_json(void);

/*
 * 0 when every set knob of knobs that is spelled in words (on/off, choices, text,
 * emulation) holds one of its values, as gd_knob_parse() would have set it, else GD_EINVAL
 * naming the knob: for callers that fill struct gd_knobs themselves. The numbers are checked
 * by the backends that read them. gd_session_new() checks it.
 */
int gd_knobs_check(const struct gd_knobs *knobs, struct gd_err *err);

/* 1 when knobs emulate node name, an op of class op_class (GD_CLASS_GEMM or _CONV): the
 * emulation applies to the class and, with emulate_nodes, names the node. */
int gd_knobs_emulates(const struct gd_knobs *knobs, const char *name, unsigned op_class);

/* 1 when the knobs ask for bitwise mode (knobs.repro "bitwise"). */
int gd_knobs_bitwise(const struct gd_knobs *knobs);

/* "none", "tf32", "bf16", "fp16". */
const char *gd_emulate_name(enum gd_emulate e);

/* Parses "tf32", "bf16:conv+gemm", "none" (classes gemm, conv, joined by '+'; gemm when none
 * is given). Returns 0 or GD_EINVAL with a message. */
int gd_emulate_parse(const char *text, enum gd_emulate *e, unsigned *classes, struct gd_err *err);

#ifdef __cplusplus
}
#endif
#endif
