/* tensor.c: element types, host tensors, casts between types, and axis permutation. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpudiff/tensor.h"
#include "internal.h"

static const struct {
    const char *name;
    size_t size;
    int is_float;
} dtype_table[GD_DTYPE_COUNT] = {
#define GD__DTYPE_ROW(e, name, size, kind, is_float) [GD_##e] = {name, size, is_float},
    GD_DTYPE_MAP(GD__DTYPE_ROW)
#undef GD__DTYPE_ROW
};

size_t
gd_dtype_size(enum gd_dtype dtype)
{
    return (unsigned)dtype < GD_DTYPE_COUNT ? dtype_table[dtype].size : 0;
}

const char *
gd_dtype_name(enum gd_dtype dtype)
{
    return (unsigned)dtype < GD_DTYPE_COUNT ? dtype_table[dtype].name : "?";
}

int
gd_dtype_is_float(enum gd_dtype dtype)
{
    return (unsigned)dtype < GD_DTYPE_COUNT && dtype_table[dtype].is_float;
}

int
gd_dtype_from_name(const char *name, enum gd_dtype *out)
{
    for (int i = 0; i < GD_DTYPE_COUNT; i++) {
        if (strcmp(name, dtype_table[i].name) == 0) {
            *out = (enum gd_dtype)i;
            return 0;
        }
    }
    return GD_EDTYPE;
}

int64_t
gd_tensor_numel(const struct gd_tensor *t)
{
    /* A zero dimension first: the product of the others need not fit in int64. */
    for (int i = 0; i < t->ndim; i++)
        if (t->shape[i] == 0)
            return 0;
    int64_t n = 1;
    for (int i = 0; i < t->ndim; i++)
        n *= t->shape[i];
    return n;
}

size_t
gd_tensor_nbytes(const struct gd_tensor *t)
{
    return (size_t)gd_tensor_numel(t) * gd_dtype_size(t->dtype);
}

int
gd_shape_check(int ndim, const int64_t *shape, size_t elem_size, struct gd_err *err)
{
    if (ndim < 0 || ndim > GD_MAX_DIMS)
        return gd_err_set(err, GD_ESHAPE, "%d dimensions (at most %d are supported)", ndim,
                          GD_MAX_DIMS);
    /*
     * Bound the byte count so later size arithmetic cannot overflow. A zero dimension makes
     * the tensor empty but not the others small: their product is bounded too, wherever the
     * zero stands, as numpy does ([0, 2^63-1, 2^63-1] is refused, not an empty tensor).
     */
    const uint64_t limit = (uint64_t)SIZE_MAX / 2;
    uint64_t bytes = elem_size ? elem_size : 1;
    for (int i = 0; i < ndim; i++) {
        if (shape[i] < 0)
            return gd_err_set(err, GD_ESHAPE, "dimension %d is negative (%lld)", i,
                              (long long)shape[i]);
        if (shape[i] == 0)
            continue;
        if ((uint64_t)shape[i] > limit / bytes)
            return gd_err_set(err, GD_ERANGE, "shape too large (over %llu bytes)",
                              (unsigned long long)limit);
        bytes *= (uint64_t)shape[i];
    }
    return 0;
}

static struct gd_tensor *
tensor_header(enum gd_dtype dtype, int ndim, const int64_t *shape, struct gd_err *err)
{
    if ((unsigned)dtype >= GD_DTYPE_COUNT) {
        gd_err_set(err, GD_EDTYPE, "dtype %d is not known", (int)dtype);
        return NULL;
    }
    if (gd_shape_check(ndim, shape, gd_dtype_size(dtype), err) != 0)
        return NULL;
    struct gd_tensor *t = calloc(1, sizeof *t);
    if (t == NULL) {
        gd_err_set(err, GD_ENOMEM, "out of memory for a tensor header");
        return NULL;
    }
    t->dtype = dtype;
    t->ndim = ndim;
    for (int i = 0; i < ndim; i++)
        t->shape[i] = shape[i];
    return t;
}

struct gd_tensor *
gd_tensor_new(enum gd_dtype dtype, int ndim, const int64_t *shape, struct gd_err *err)
{
    struct gd_tensor *t = tensor_header(dtype, ndim, shape, err);
    if (t == NULL)
        return NULL;
    size_t n = gd_tensor_nbytes(t);
    t->data = calloc(n ? n : 1, 1);
    if (t->data == NULL) {
        gd_err_set(err, GD_ENOMEM, "out of memory for a tensor of %zu bytes", n);
        free(t);
        return NULL;
    }
    t->owns_data = 1;
    return t;
}

struct gd_tensor *
gd_tensor_wrap(enum gd_dtype dtype, int ndim, const int64_t *shape, void *data, struct gd_err *err)
{
    struct gd_tensor *t = tensor_header(dtype, ndim, shape, err);
    if (t != NULL)
        t->data = data;
    return t;
}

struct gd_tensor *
gd_tensor_dup(const struct gd_tensor *src, struct gd_err *err)
{
    struct gd_tensor *t = gd_tensor_new(src->dtype, src->ndim, src->shape, err);
    if (t != NULL)
        memcpy(t->data, src->data, gd_tensor_nbytes(src));
    return t;
}

void
gd_tensor_free(struct gd_tensor *t)
{
    if (t == NULL)
        return;
    if (t->owns_data)
        free(t->data);
    free(t);
}

int
gd_tensor_same_shape(const struct gd_tensor *a, const struct gd_tensor *b)
{
    if (a->dtype != b->dtype || a->ndim != b->ndim)
        return 0;
    for (int i = 0; i < a->ndim; i++)
        if (a->shape[i] != b->shape[i])
            return 0;
    return 1;
}

char *
gd_shape_format(int ndim, const int64_t *shape, char *buf, size_t size)
{
    if (size == 0)
        return buf;
    if (ndim == 0) {
        snprintf(buf, size, "scalar");
        return buf;
    }
    size_t used = 0;
    buf[0] = '\0';
    for (int i = 0; i < ndim && used < size; i++) {
        int w = snprintf(buf + used, size - used, i ? "x%lld" : "%lld", (long long)shape[i]);
        if (w < 0)
            break;
        used += (size_t)w;
    }
    return buf;
}

/* ---- 16-bit floats ---- */

float
gd_f16_to_f32(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t exp = (h >> 10) & 0x1fu;
    uint32_t mant = h & 0x3ffu;
    uint32_t bits;
    float f;
    if (exp == 0) {
        /* Zero or subnormal: mant x 2^-24, exact in float32. */
        f = (float)mant * 0x1p-24f;
        return sign ? -f : f;
    }
    if (exp == 31)
        bits = sign | 0x7f800000u | (mant << 13);
    else
        bits = sign | ((exp + 112u) << 23) | (mant << 13);
    memcpy(&f, &bits, sizeof f);
    return f;
}

uint16_t
gd_f32_to_f16(float f)
{
    uint32_t x;
    memcpy(&x, &f, sizeof x);
    uint16_t sign = (uint16_t)((x >> 16) & 0x8000u);
    uint32_t ax = x & 0x7fffffffu;
    if (ax > 0x7f800000u) /* NaN: keep it quiet and keep the top payload bits */
        return sign | 0x7e00u | (uint16_t)((ax >> 13) & 0x3ffu);
    if (ax >= 0x477ff000u) /* >= 65520 rounds to infinity; infinity stays */
        return sign | 0x7c00u;
    if (ax < 0x38800000u) {
        /* Below the smallest normal half (2^-14): a subnormal half, mant x 2^-24. */
        int e = (int)(ax >> 23);
        if (e < 102) /* under 2^-25: rounds to zero */
            return sign;
        uint32_t m = (ax & 0x7fffffu) | 0x800000u;
        int s = 126 - e; /* 14 to 24 */
        uint32_t q = m >> s;
        uint32_t rem = m & ((1u << s) - 1u);
        uint32_t half = 1u << (s - 1);
        if (rem > half || (rem == half && (q & 1u)))
            q++;
        return sign | (uint16_t)q;
    }
    /* Normal: rebias the exponent, then round the 13 dropped bits to nearest even. */
    uint32_t r = ax - 0x38000000u;
    r = (r + 0xfffu + ((r >> 13) & 1u)) >> 13;
    return sign | (uint16_t)r;
}

float
gd_bf16_to_f32(uint16_t b)
{
    uint32_t bits = (uint32_t)b << 16;
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}

uint16_t
gd_f32_to_bf16(float f)
{
    uint32_t x;
    memcpy(&x, &f, sizeof x);
    if ((x & 0x7fffffffu) > 0x7f800000u)
        return (uint16_t)((x >> 16) | 0x40u);
    return (uint16_t)((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
}

/*
 * float64 to float32 rounding to odd: truncate toward zero and set the last bit when the
 * result is inexact. Rounding that to a 16-bit format then rounds as if directly from the
 * float64 (float32 keeps more than two extra bits), avoiding double rounding.
 */
static float
f64_to_f32_odd(double d)
{
    float f = (float)d;
    if (isnan(d) || isinf(f) || (double)f == d)
        return f;
    if (fabs((double)f) > fabs(d))
        f = nextafterf(f, 0.0f);
    uint32_t bits;
    memcpy(&bits, &f, sizeof bits);
    bits |= 1u;
    memcpy(&f, &bits, sizeof f);
    return f;
}

uint16_t
gd_f64_to_f16(double d)
{
    return gd_f32_to_f16(f64_to_f32_odd(d));
}

uint16_t
gd_f64_to_bf16(double d)
{
    return gd_f32_to_bf16(f64_to_f32_odd(d));
}

/* ---- element access and casts ---- */

void
gd__scalar_bytes(enum gd_dtype dtype, double v, unsigned char *out)
{
    /* Saturated into int64 (uint64 for GD_U64) first: converting a double outside the
     * integer's range is undefined, and int64's maximum as a pad value arrives as 2^63. */
    int64_t i = 0;
    if (!isfinite(v))
        i = 0;
    else if (dtype == GD_U64 && v >= 0x1p63)
        i = v >= 0x1p64 ? -1 : (int64_t)(uint64_t)v; /* the bits of the uint64 */
    else
        i = v >= 0x1p63 ? INT64_MAX : v < -0x1p63 ? INT64_MIN : (int64_t)v;
    int8_t i8 = (int8_t)i;
    int16_t i16 = (int16_t)i;
    int32_t i32 = (int32_t)i;
    uint8_t b = v != 0;
    float f = (float)v;
    uint16_t h;
    switch (dtype) {
    case GD_I8:
    case GD_U8:
        memcpy(out, &i8, 1);
        break;
    case GD_BOOL:
        memcpy(out, &b, 1);
        break;
    case GD_I16:
    case GD_U16:
        memcpy(out, &i16, 2);
        break;
    case GD_I32:
    case GD_U32:
        memcpy(out, &i32, 4);
        break;
    case GD_I64:
    case GD_U64:
        memcpy(out, &i, 8);
        break;
    case GD_F16:
    case GD_BF16:
        h = dtype == GD_F16 ? gd_f64_to_f16(v) : gd_f64_to_bf16(v);
        memcpy(out, &h, 2);
        break;
    case GD_F32:
        memcpy(out, &f, 4);
        break;
    case GD_F64:
        memcpy(out, &v, 8);
        break;
    case GD_DTYPE_COUNT:
        break;
    }
}

double
gd_tensor_get_f64(const struct gd_tensor *t, int64_t i)
{
    const void *p = t->data;
    switch (t->dtype) {
    case GD_F32:
        return ((const float *)p)[i];
    case GD_F64:
        return ((const double *)p)[i];
    case GD_F16:
        return gd_f16_to_f32(((const uint16_t *)p)[i]);
    case GD_BF16:
        return gd_bf16_to_f32(((const uint16_t *)p)[i]);
    case GD_I8:
        return ((const int8_t *)p)[i];
    case GD_I16:
        return ((const int16_t *)p)[i];
    case GD_I32:
        return ((const int32_t *)p)[i];
    case GD_I64:
        return (double)((const int64_t *)p)[i];
    case GD_U8:
        return ((const uint8_t *)p)[i];
    case GD_U16:
        return ((const uint16_t *)p)[i];
    case GD_U32:
        return ((const uint32_t *)p)[i];
    case GD_U64:
        return (double)((const uint64_t *)p)[i];
    case GD_BOOL:
        return ((const uint8_t *)p)[i] != 0;
    case GD_DTYPE_COUNT:
        break;
    }
    return NAN;
}

int64_t
gd_tensor_get_i64(const struct gd_tensor *t, int64_t i)
{
    const void *p = t->data;
    switch (t->dtype) {
    case GD_I8:
        return ((const int8_t *)p)[i];
    case GD_I16:
        return ((const int16_t *)p)[i];
    case GD_I32:
        return ((const int32_t *)p)[i];
    case GD_I64:
        return ((const int64_t *)p)[i];
    case GD_U8:
        return ((const uint8_t *)p)[i];
    case GD_U16:
        return ((const uint16_t *)p)[i];
    case GD_U32:
        return ((const uint32_t *)p)[i];
    case GD_U64:
        return (int64_t)((const uint64_t *)p)[i];
    case GD_BOOL:
        return ((const uint8_t *)p)[i] != 0;
    default:
        return 0;
    }
}

/* Stores a float source value into a float destination, rounding to nearest even. */
static void
put_float(struct gd_tensor *t, int64_t i, double v, int src_is_f64)
{
    void *p = t->data;
    switch (t->dtype) {
    case GD_F32:
        ((float *)p)[i] = (float)v;
        break;
    case GD_F64:
        ((double *)p)[i] = v;
        break;
    case GD_F16:
        ((uint16_t *)p)[i] = src_is_f64 ? gd_f64_to_f16(v) : gd_f32_to_f16((float)v);
        break;
    case GD_BF16:
        ((uint16_t *)p)[i] = src_is_f64 ? gd_f64_to_bf16(v) : gd_f32_to_bf16((float)v);
        break;
    default:
        break;
    }
}

void
gd__tensor_put_int(struct gd_tensor *t, int64_t i, int64_t v)
{
    void *p = t->data;
    switch (t->dtype) {
    case GD_I8:
        ((int8_t *)p)[i] = (int8_t)v;
        break;
    case GD_I16:
        ((int16_t *)p)[i] = (int16_t)v;
        break;
    case GD_I32:
        ((int32_t *)p)[i] = (int32_t)v;
        break;
    case GD_I64:
        ((int64_t *)p)[i] = v;
        break;
    case GD_U8:
        ((uint8_t *)p)[i] = (uint8_t)v;
        break;
    case GD_U16:
        ((uint16_t *)p)[i] = (uint16_t)v;
        break;
    case GD_U32:
        ((uint32_t *)p)[i] = (uint32_t)v;
        break;
    case GD_U64:
        ((uint64_t *)p)[i] = (uint64_t)v;
        break;
    case GD_BOOL:
        ((uint8_t *)p)[i] = v != 0;
        break;
    default:
        break;
    }
}

/* The integer range of an integer dtype, as doubles (bounds a float must fit in). */
static void
int_range(enum gd_dtype dtype, double *lo, double *hi)
{
    switch (dtype) {
    case GD_I8:
        *lo = -128.0, *hi = 127.0;
        break;
    case GD_I16:
        *lo = -32768.0, *hi = 32767.0;
        break;
    case GD_I32:
        *lo = -2147483648.0, *hi = 2147483647.0;
        break;
    case GD_I64:
        *lo = -0x1p63, *hi = 0x1p63 - 1024.0;
        break;
    case GD_U8:
        *lo = 0.0, *hi = 255.0;
        break;
    case GD_U16:
        *lo = 0.0, *hi = 65535.0;
        break;
    case GD_U32:
        *lo = 0.0, *hi = 4294967295.0;
        break;
    case GD_U64:
        *lo = 0.0, *hi = 0x1p64 - 2048.0;
        break;
    default: /* bool */
        *lo = -INFINITY, *hi = INFINITY;
        break;
    }
}

struct gd_tensor *
gd_tensor_cast(const struct gd_tensor *src, enum gd_dtype dtype, struct gd_err *err)
{
    struct gd_tensor *dst = gd_tensor_new(dtype, src->ndim, src->shape, err);
    if (dst == NULL)
        return NULL;
    int64_t n = gd_tensor_numel(src);
    if (src->dtype == dtype) {
        memcpy(dst->data, src->data, gd_tensor_nbytes(src));
        return dst;
    }
    if (src->dtype == GD_F64 && dtype == GD_F32) { /* the common case: weights */
        const double *s = src->data;
        float *d = dst->data;
        for (int64_t i = 0; i < n; i++)
            d[i] = (float)s[i];
        return dst;
    }
    /* half storage's: float32 weights to a half format (--dtype) and halves widened, one
     * conversion per element, the same roundings as put_float's */
    if (src->dtype == GD_F32 && (dtype == GD_F16 || dtype == GD_BF16)) {
        const float *s = src->data;
        uint16_t *d = dst->data;
        for (int64_t i = 0; i < n; i++)
            d[i] = dtype == GD_F16 ? gd_f32_to_f16(s[i]) : gd_f32_to_bf16(s[i]);
        return dst;
    }
    if ((src->dtype == GD_F16 || src->dtype == GD_BF16) && (dtype == GD_F32 || dtype == GD_F64)) {
        const uint16_t *s = src->data;
        for (int64_t i = 0; i < n; i++) {
            float v = src->dtype == GD_F16 ? gd_f16_to_f32(s[i]) : gd_bf16_to_f32(s[i]);
            if (dtype == GD_F32)
                ((float *)dst->data)[i] = v;
            else
                ((double *)dst->data)[i] = v;
        }
        return dst;
    }
    int src_float = gd_dtype_is_float(src->dtype);
    int dst_float = gd_dtype_is_float(dtype);
    double lo, hi;
    int_range(dtype, &lo, &hi);
    for (int64_t i = 0; i < n; i++) {
        if (src_float && dst_float) {
            put_float(dst, i, gd_tensor_get_f64(src, i), src->dtype == GD_F64);
        } else if (src_float) {
            double v = gd_tensor_get_f64(src, i);
            if (dtype == GD_BOOL) {
                gd__tensor_put_int(dst, i, v != 0.0);
                continue;
            }
            double tv = trunc(v);
            if (isnan(v) || tv < lo || tv > hi) {
                gd_err_set(err, GD_ERANGE, "element %lld (%g) does not fit in %s", (long long)i,
                           v, gd_dtype_name(dtype));
                gd_tensor_free(dst);
                return NULL;
            }
            gd__tensor_put_int(dst, i, (int64_t)tv);
        } else if (dst_float) {
            int64_t v = gd_tensor_get_i64(src, i);
            double dv = src->dtype == GD_U64 ? (double)(uint64_t)v : (double)v;
            put_float(dst, i, dv, 1);
        } else {
            gd__tensor_put_int(dst, i, gd_tensor_get_i64(src, i));
        }
    }
    return dst;
}

struct gd_tensor *
gd_tensor_transpose(const struct gd_tensor *src, const int *perm, struct gd_err *err)
{
    int nd = src->ndim;
    int seen[GD_MAX_DIMS] = {0};
    int64_t shape[GD_MAX_DIMS];
    for (int i = 0; i < nd; i++) {
        if (perm[i] < 0 || perm[i] >= nd || seen[perm[i]]) {
            gd_err_set(err, GD_EINVAL, "permutation is not one of the %d axes", nd);
            return NULL;
        }
        seen[perm[i]] = 1;
        shape[i] = src->shape[perm[i]];
    }
    struct gd_tensor *dst = gd_tensor_new(src->dtype, nd, shape, err);
    if (dst == NULL)
        return NULL;
    size_t es = gd_dtype_size(src->dtype);
    int64_t src_stride[GD_MAX_DIMS];
    int64_t stride = 1;
    for (int i = nd - 1; i >= 0; i--) {
        src_stride[i] = stride;
        stride *= src->shape[i];
    }
    /* Walk the output in order; keep the source offset of each output axis. */
    int64_t idx[GD_MAX_DIMS] = {0};
    int64_t n = gd_tensor_numel(dst);
    const char *s = src->data;
    char *d = dst->data;
    int64_t off = 0;
    for (int64_t k = 0; k < n; k++) {
        memcpy(d + (size_t)k * es, s + (size_t)off * es, es);
        for (int ax = nd - 1; ax >= 0; ax--) {
            off += src_stride[perm[ax]];
            if (++idx[ax] < shape[ax])
                break;
            off -= src_stride[perm[ax]] * shape[ax];
            idx[ax] = 0;
        }
    }
    return dst;
}
