/*
 * tensor.h: element types and dense tensors (C order, up to GD_MAX_DIMS dimensions).
 *
 * A struct gd_tensor made by gd_tensor_new() owns its data and is released with
 * gd_tensor_free(). gd_tensor_wrap() makes a tensor that borrows memory it does not free.
 * The engine's backends keep device tensors in the same struct; `data` is then a device
 * pointer and `device` says so.
 */
#ifndef GPUDIFF_TENSOR_H
#define GPUDIFF_TENSOR_H

#include <stddef.h>
#include <stdint.h>

#include "gpudiff/error.h"

#ifdef __cplusplus
extern "C" {
#endif

#define GD_MAX_DIMS 8

/* XX(ENUM, name as numpy spells it, bytes, numpy kind letter, is floating point) */
#define GD_DTYPE_MAP(XX)                 \
    XX(F32, "float32", 4, 'f', 1)        \
    XX(F64, "float64", 8, 'f', 1)        \
    XX(F16, "float16", 2, 'f', 1)        \
    XX(BF16, "bfloat16", 2, 'V', 1)      \
    XX(I8, "int8", 1, 'i', 0)            \
    XX(I16, "int16", 2, 'i', 0)          \
    XX(I32, "int32", 4, 'i', 0)          \
    XX(I64, "int64", 8, 'i', 0)          \
    XX(U8, "uint8", 1, 'u', 0)           \
    XX(U16, "uint16", 2, 'u', 0)         \
    XX(U32, "uint32", 4, 'u', 0)         \
    XX(U64, "uint64", 8, 'u', 0)         \
    XX(BOOL, "bool", 1, 'b', 0)

enum gd_dtype {
#define GD__DTYPE_ENUM(e, name, size, kind, is_float) GD_##e,
    GD_DTYPE_MAP(GD__DTYPE_ENUM)
#undef GD__DTYPE_ENUM
    GD_DTYPE_COUNT
};

/* Bytes per element; 0 for a value outside the enum. */
size_t gd_dtype_size(enum gd_dtype dtype);

/* "float32", ... ; "?" for a value outside the enum. */
const char *gd_dtype_name(enum gd_dtype dtype);

/* Looks up a name as written by gd_dtype_name(). Returns 0 or GD_EDTYPE. */
int gd_dtype_from_name(const char *name, enum gd_dtype *out);

/* 1 for float16, bfloat16, float32 and float64. */
int gd_dtype_is_float(enum gd_dtype dtype);

struct gd_tensor {
    enum gd_dtype dtype;
    int ndim;                     /* 0 (a scalar) to GD_MAX_DIMS */
    int64_t shape[GD_MAX_DIMS];
    void *data;                   /* C order, native byte order */
    int owns_data;                /* 1: gd_tensor_free() releases data with free() */
    int device;                   /* 0: host memory; else data belongs to a backend */
};

/* Product of shape (1 for a scalar). */
int64_t gd_tensor_numel(const struct gd_tensor *t);

/* numel times the element size. */
size_t gd_tensor_nbytes(const struct gd_tensor *t);

/*
 * Checks ndim and dims (each >= 0, product and byte count within SIZE_MAX / 2).
 * Returns 0, GD_ESHAPE or GD_ERANGE.
 */
int gd_shape_check(int ndim, const int64_t *shape, size_t elem_size, struct gd_err *err);

/*
 * A new host tensor with zeroed data; shape is copied. On failure returns NULL and sets err
 * (GD_ESHAPE for a bad shape, GD_ENOMEM).
 */
struct gd_tensor *gd_tensor_new(enum gd_dtype dtype, int ndim, const int64_t *shape,
                                struct gd_err *err);

/* A header around borrowed memory: gd_tensor_free() releases the header only. */
struct gd_tensor *gd_tensor_wrap(enum gd_dtype dtype, int ndim, const int64_t *shape, void *data,
                                 struct gd_err *err);

/* A deep copy of a host tensor. NULL and err on failure. */
struct gd_tensor *gd_tensor_dup(const struct gd_tensor *src, struct gd_err *err);

/*
 * A new host tensor holding src's values converted to dtype. Float to float rounds to
 * nearest even; float to integer truncates toward zero and fails with GD_ERANGE on NaN
 * or a value outside the target's range; integer to float rounds to nearest.
 */
struct gd_tensor *gd_tensor_cast(const struct gd_tensor *src, enum gd_dtype dtype,
                                 struct gd_err *err);

/* A new host tensor with the axes of src permuted: out.shape[i] = src.shape[perm[i]]. */
struct gd_tensor *gd_tensor_transpose(const struct gd_tensor *src, const int *perm,
                                      struct gd_err *err);

/* Frees the header, and the data when owned. Accepts NULL. */
void gd_tensor_free(struct gd_tensor *t);

/* 1 when dtype and shape are equal. */
int gd_tensor_same_shape(const struct gd_tensor *a, const struct gd_tensor *b);

/* Writes "1000x6x32x32" (or "scalar") into buf; returns buf. */
char *gd_shape_format(int ndim, const int64_t *shape, char *buf, size_t size);

/* Element i of a host tensor of any numeric dtype, as double (bool gives 0 or 1). */
double gd_tensor_get_f64(const struct gd_tensor *t, int64_t i);

/* Element i of an integer or bool tensor as int64 (uint64 above INT64_MAX wraps; bool is 0
 * or 1); 0 for float dtypes. */
int64_t gd_tensor_get_i64(const struct gd_tensor *t, int64_t i);

/* Scalar conversions between float32 and the 16-bit float formats (round to nearest even). */
float gd_f16_to_f32(uint16_t h);
uint16_t gd_f32_to_f16(float f);
float gd_bf16_to_f32(uint16_t b);
uint16_t gd_f32_to_bf16(float f);
/* float64 to the 16-bit formats, rounded once (to nearest even) as if directly: through a
 * float32 rounded to odd, so no double rounding. */
uint16_t gd_f64_to_f16(double d);
uint16_t gd_f64_to_bf16(double d);

#ifdef __cplusplus
}
#endif
#endif
