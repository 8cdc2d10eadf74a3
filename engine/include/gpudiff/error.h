/*
 * error.h: the engine's error codes and the caller-owned error record.
 *
 * Every function of libgpudiff that can fail returns int: 0 on success or one of the
 * negative GD_E* codes below. Details go to a caller-owned struct gd_err, which may be
 * NULL when the caller only wants the code. Outputs are written only on success.
 */
#ifndef GPUDIFF_ERROR_H
#define GPUDIFF_ERROR_H

#ifdef __cplusplus
extern "C" {
#endif

/*
 * XX(name, value, message): one list makes the enum, gd_strerror() and gd_err_name().
 * Values are stable: they appear in logs and in the agent's JSON output.
 */
#define GD_ERRNO_MAP(XX)                                                   \
    XX(EINVAL, -1, "invalid argument")                                     \
    XX(ENOMEM, -2, "out of memory")                                        \
    XX(EIO, -3, "input/output error")                                      \
    XX(ENOENT, -4, "no such file or entry")                                \
    XX(EEXIST, -5, "already exists")                                       \
    XX(EFORMAT, -6, "malformed data")                                      \
    XX(EDTYPE, -7, "unsupported or mismatched data type")                  \
    XX(ESHAPE, -8, "shape mismatch")                                       \
    XX(EMODEL, -9, "invalid model")                                        \
    XX(ENOTSUP, -10, "not supported")                                      \
    XX(EDEVICE, -11, "device error")                                       \
    XX(ERANGE, -12, "value out of range")                                  \
    XX(ECANCELED, -13, "canceled")

enum gd_errno {
    GD_OK = 0,
#define GD__ERR_ENUM(name, value, msg) GD_##name = (value),
    GD_ERRNO_MAP(GD__ERR_ENUM)
#undef GD__ERR_ENUM
};

/* Caller-owned error details: code plus a human message naming what failed. */
struct gd_err {
    int code;
    char msg[256];
};

/* The fixed message for a code ("unknown error" for a code not in the list). */
const char *gd_strerror(int code);

/* The code's name without prefix ("EINVAL"), for logs and JSON. */
const char *gd_err_name(int code);

/*
 * Records code and a printf-style message in err (when err is not NULL) and returns code,
 * so a caller writes `return gd_err_set(err, GD_EINVAL, "bad stride %d", s);`.
 * When err already holds an error, the new message is kept and the old is dropped.
 */
int gd_err_set(struct gd_err *err, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Prefixes err->msg with context ("node conv1: "), keeping the code. Returns err->code. */
int gd_err_prefix(struct gd_err *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Resets err to "no error". Accepts NULL. */
void gd_err_clear(struct gd_err *err);

#ifdef __cplusplus
}
#endif
#endif
