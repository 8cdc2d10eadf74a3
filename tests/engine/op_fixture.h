/*
 * op_fixture.h: the op unit tests' cases, made by tests/fixtures/ops/make_op_fixtures.py:
 * loading one (inputs, attributes, expected outputs, magnitudes), running it through
 * oh_run() on a backend, and comparing element by element, printing every value compared
 * when a check fails.
 */
#ifndef GPUDIFF_TESTS_OP_FIXTURE_H
#define GPUDIFF_TESTS_OP_FIXTURE_H

#include <stdint.h>

#include "gpudiff/session.h"
#include "gpudiff/tensor.h"

#define OF_MAX_IN  16
#define OF_MAX_OUT 4

/* One case: tests/fixtures/ops/<group>/<name>/. Owns every tensor and string in it. */
struct of_case {
    char group[48]; /* the op's ONNX name, or "emulate" */
    char name[64];
    char op[48];      /* the op the case runs */
    char *attrs_json; /* the node's attributes as a JSON object */
    int n_in;
    struct gd_tensor *in[OF_MAX_IN]; /* NULL for an absent optional input; cast to the case's
                                        "dtypes" entry where it has one (bfloat16) */
    unsigned const_mask;             /* bit i: input i is a weight */
    int n_out;
    struct gd_tensor *want[OF_MAX_OUT]; /* expected: float64, bool or an integer dtype */
    struct gd_tensor *mag[OF_MAX_OUT];  /* per-element magnitude, NULL when not given */
    int64_t reduction_len;              /* the most terms any output element sums */
    char emulate[16];                   /* emulate cases: none, tf32, bf16, fp16 */
};

/* Loads a case; on failure prints why and returns -1 (c is then empty). */
/* tests/fixtures, as configured; GD_TEST_FIXTURES overrides it for a build copied to
 * another machine (the GPU one). */
const char *of_fixtures_dir(void);

int of_case_load(const char *group, const char *name, struct of_case *c);

void of_case_fini(struct of_case *c);

/* An integer attribute of the case (dflt when absent). */
int64_t of_attr_int(const struct of_case *c, const char *name, int64_t dflt);

/* A number attribute of the case (dflt when absent). */
double of_attr_float(const struct of_case *c, const char *name, double dflt);

/* 1 when the case's attribute name is the string value. */
int of_attr_is(const struct of_case *c, const char *name, const char *value);

/* Runs the case on backend; out[0..n_out) become new tensors owned by the caller. */
int of_case_run(const struct of_case *c, const char *backend, const struct gd_knobs *knobs,
                struct gd_tensor **out, struct gd_err *err);

/*
 * The bound on |got - want| for element i of output k on a backend computing in dtype.
 * Each check program defines one per op, with its derivation.
 */
typedef double (*of_bound_fn)(const struct of_case *c, int k, int64_t i, enum gd_dtype dtype,
                              void *user);

/*
 * Compares output k of the case as computed by backend. bound NULL: bitwise (the value, the
 * sign of a zero; any NaN matches any NaN). Otherwise a NaN matches only a NaN, an infinity
 * (or a value that rounds to one in got's dtype) only itself, and the rest must be within
 * bound. Prints the first failures with index, both values, difference and bound; returns
 * how many elements failed (a shape or dtype mismatch counts as all).
 */
int64_t of_compare(const struct of_case *c, const char *backend, int k, const struct gd_tensor *got,
                   of_bound_fn bound, void *user);

/* Runs the case on of_backends() and checks every output with bound (NULL: bitwise). */
void of_check_case(const char *op, const char *name, of_bound_fn bound, void *user);

/*
 * The backends the cases run on: `cpu` and `cpu64`, or the comma list GD_TEST_OP_BACKENDS
 * (on a GPU machine "cuda", with CK_FORK=no since CUDA does not survive fork()). Fills
 * out[0 .. max) and returns the count; the names stay valid until the next call.
 */
int of_backends(const char **out, int max);

/*
 * Checks that tests/fixtures/ops/<op>/ holds exactly the NULL-terminated list of cases, so a
 * case the generator writes cannot go untested and a listed case cannot be missing.
 */
void of_check_listing(const char *op, const char *const *names);

#define OF_NAME_MAX 64

/* The case folders of tests/fixtures/ops/<op>/, sorted, into names: their count, or -1 when
 * the folder cannot be read or holds more than max. */
int of_case_names(const char *op, char (*names)[OF_NAME_MAX], int max);

/* An op's fixture cases and how its outputs are checked. */
struct of_op {
    const char *op;
    const char *const *cases; /* NULL-terminated */
    of_bound_fn bound;        /* NULL: bitwise equal to numpy's result */
    void *user;               /* passed to bound */
};

/*
 * The main() of a check program over a table of ops: every case of every op as one loop
 * test (of_check_case), and each op's listing (of_check_listing). Returns the exit status.
 */
int of_main(const char *suite, const struct of_op *ops, int n_ops);

/* Number of names in a NULL-terminated list. */
int of_count(const char *const *names);

/*
 * The bound of an op that sums: (gamma_n(u) + 2^-53) mag_i + n denorm_min, with
 * n = reduction_len + *(int *)extra_roundings (the roundings after the sum). Needs mag.
 */
double of_bound_sum(const struct of_case *c, int k, int64_t i, enum gd_dtype dtype,
                    void *extra_roundings);

/* Element i of a float tensor (float32 or float64) as double. */
double of_get(const struct gd_tensor *t, int64_t i);

#endif
