/* check_npy.c: .npy reading and writing (engine/io/npy.c, npy_write.c) against numpy's files. */
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <sys/stat.h>

#include "check_io.h"

static const int64_t shape_2x3[] = {2, 3};

static struct gd_tensor *
load_ok(const char *name)
{
    struct gd_err err = {0};
    struct gd_tensor *t = NULL;
    int rc = gd_npy_load(fixture(name), &t, &err);
    CHECK_OK(rc, err, name);
    ck_assert_ptr_nonnull(t);
    return t;
}

/* The values make_fixtures.py writes into dtype_*.npy, in the same order. */
static const double f2_vals[] = {-2.5, -1.0, 0.0, 0.333251953125, 65504.0, 6.103515625e-05};
static const float f4_vals[] = {-1.5f, 0.0f, 0x1p-149f, FLT_MAX, 0.1f, -0.0f};
static const double f8_vals[] = {0.1, -2.2250738585072014e-308, DBL_MAX, 5e-324, -1.0,
                                 1.0 / 3.0};
static const int8_t i1_vals[] = {-128, -1, 0, 1, 2, 127};
static const int16_t i2_vals[] = {-32768, -300, 0, 1, 300, 32767};
static const int32_t i4_vals[] = {INT32_MIN, -70000, 0, 1, 70000, INT32_MAX};
static const int64_t i8_vals[] = {INT64_MIN, -(INT64_C(1) << 40), 0, 1, (INT64_C(1) << 40) + 5,
                                  INT64_MAX};
static const uint8_t u1_vals[] = {0, 1, 2, 127, 128, 255};
static const uint16_t u2_vals[] = {0, 1, 256, 32768, 65534, 65535};
static const uint32_t u4_vals[] = {0, 1, 65536, UINT32_C(1) << 31, UINT32_MAX - 1, UINT32_MAX};
static const uint64_t u8_vals[] = {0, 1, UINT64_C(1) << 32, UINT64_C(1) << 63, UINT64_MAX - 1,
                                   UINT64_MAX};
static const uint8_t b1_vals[] = {1, 0, 1, 1, 0, 0};

static void
check_f2(const struct gd_tensor *t)
{
    const uint16_t *h = t->data;
    for (int i = 0; i < 6; i++)
        ck_assert_msg(gd_f16_to_f32(h[i]) == f2_vals[i], "f16[%d] = %.9g (0x%04x), expected %.9g",
                      i, gd_f16_to_f32(h[i]), h[i], f2_vals[i]);
}

static void
check_i8(const struct gd_tensor *t)
{
    const int64_t *v = t->data;
    for (int i = 0; i < 6; i++)
        ck_assert_msg(v[i] == i8_vals[i], "i8[%d] = %lld, expected %lld", i, (long long)v[i],
                      (long long)i8_vals[i]);
}

static void
check_u2(const struct gd_tensor *t)
{
    const uint16_t *v = t->data;
    for (int i = 0; i < 6; i++)
        ck_assert_msg(v[i] == u2_vals[i], "u2[%d] = %u, expected %u", i, v[i], u2_vals[i]);
}

/* Checks element i of t against the dtype_*.npy values for its dtype, bit for bit. */
static void
check_dtype_values(const struct gd_tensor *t)
{
    if (t->dtype == GD_F16 || t->dtype == GD_I64 || t->dtype == GD_U16) {
        (t->dtype == GD_F16 ? check_f2 : t->dtype == GD_I64 ? check_i8 : check_u2)(t);
        return;
    }
    for (int i = 0; i < 6; i++) {
        switch (t->dtype) {
        case GD_F32: {
            float v = ((const float *)t->data)[i];
            ck_assert_msg(memcmp(&v, &f4_vals[i], 4) == 0, "f4[%d] = %.9g, expected %.9g", i,
                          v, f4_vals[i]);
            break;
        }
        case GD_F64: {
            double v = ((const double *)t->data)[i];
            ck_assert_msg(v == f8_vals[i], "f8[%d] = %.17g, expected %.17g", i, v, f8_vals[i]);
            break;
        }
        case GD_I8: {
            int v = ((const int8_t *)t->data)[i];
            ck_assert_msg(v == i1_vals[i], "i1[%d] = %d, expected %d", i, v, i1_vals[i]);
            break;
        }
        case GD_I16: {
            int v = ((const int16_t *)t->data)[i];
            ck_assert_msg(v == i2_vals[i], "i2[%d] = %d, expected %d", i, v, i2_vals[i]);
            break;
        }
        case GD_I32: {
            int32_t v = ((const int32_t *)t->data)[i];
            ck_assert_msg(v == i4_vals[i], "i4[%d] = %d, expected %d", i, v, i4_vals[i]);
            break;
        }
        case GD_U8: {
            unsigned v = ((const uint8_t *)t->data)[i];
            ck_assert_msg(v == u1_vals[i], "u1[%d] = %u, expected %u", i, v, u1_vals[i]);
            break;
        }
        case GD_U32: {
            uint32_t v = ((const uint32_t *)t->data)[i];
            ck_assert_msg(v == u4_vals[i], "u4[%d] = %u, expected %u", i, v, u4_vals[i]);
            break;
        }
        case GD_U64: {
            uint64_t v = ((const uint64_t *)t->data)[i];
            ck_assert_msg(v == u8_vals[i], "u8[%d] = %llu, expected %llu", i,
                          (unsigned long long)v, (unsigned long long)u8_vals[i]);
            break;
        }
        case GD_BOOL: {
            unsigned v = ((const uint8_t *)t->data)[i];
            ck_assert_msg(v == b1_vals[i], "b1[%d] = %u, expected %u", i, v, b1_vals[i]);
            break;
        }
        default:
            ck_abort_msg("unexpected dtype %s", gd_dtype_name(t->dtype));
        }
    }
}

static const struct {
    const char *file;
    enum gd_dtype dtype;
} dtype_files[] = {
    {"dtype_f2.npy", GD_F16}, {"dtype_f4.npy", GD_F32}, {"dtype_f8.npy", GD_F64},
    {"dtype_i1.npy", GD_I8},  {"dtype_i2.npy", GD_I16}, {"dtype_i4.npy", GD_I32},
    {"dtype_i8.npy", GD_I64}, {"dtype_u1.npy", GD_U8},  {"dtype_u2.npy", GD_U16},
    {"dtype_u4.npy", GD_U32}, {"dtype_u8.npy", GD_U64}, {"dtype_b1.npy", GD_BOOL},
};
#define N_DTYPE_FILES ((int)(sizeof dtype_files / sizeof dtype_files[0]))

START_TEST(test_every_dtype)
{
    struct gd_tensor *t = load_ok(dtype_files[_i].file);
    check_shape(t, dtype_files[_i].dtype, 2, shape_2x3);
    check_dtype_values(t);
    gd_tensor_free(t);
}
END_TEST

START_TEST(test_fortran_order)
{
    /* numpy's asfortranarray keeps the logical values; only the layout in the file changes. */
    struct gd_tensor *t = load_ok("fortran_f4.npy");
    const int64_t shape[] = {2, 3, 4};
    check_shape(t, GD_F32, 3, shape);
    for (int i = 0; i < 24; i++)
        ck_assert_msg(((float *)t->data)[i] == (float)i, "fortran_f4[%d] = %g, expected %d", i,
                      ((float *)t->data)[i], i);
    gd_tensor_free(t);

    t = load_ok("fortran_i2.npy");
    check_shape(t, GD_I16, 2, shape_2x3);
    for (int i = 0; i < 6; i++)
        ck_assert_msg(((int16_t *)t->data)[i] == i, "fortran_i2[%d] = %d, expected %d", i,
                      ((int16_t *)t->data)[i], i);
    gd_tensor_free(t);

    /* Fortran order and big-endian at once. */
    t = load_ok("fortran_be_f8.npy");
    const int64_t shape_3x2[] = {3, 2};
    check_shape(t, GD_F64, 2, shape_3x2);
    for (int i = 0; i < 6; i++)
        ck_assert_msg(((double *)t->data)[i] == i - 2.5, "fortran_be_f8[%d] = %g, expected %g",
                      i, ((double *)t->data)[i], i - 2.5);
    gd_tensor_free(t);
}
END_TEST

START_TEST(test_big_endian)
{
    struct gd_tensor *t = load_ok("be_f4.npy");
    check_shape(t, GD_F32, 2, shape_2x3);
    for (int i = 0; i < 6; i++)
        ck_assert_msg(((float *)t->data)[i] == 1.25f * (float)i, "be_f4[%d] = %g, expected %g",
                      i, ((float *)t->data)[i], 1.25 * i);
    gd_tensor_free(t);

    t = load_ok("be_i8.npy");
    check_shape(t, GD_I64, 2, shape_2x3);
    check_i8(t);
    gd_tensor_free(t);

    t = load_ok("be_f2.npy");
    check_shape(t, GD_F16, 2, shape_2x3);
    check_f2(t);
    gd_tensor_free(t);

    t = load_ok("be_u2.npy");
    check_shape(t, GD_U16, 2, shape_2x3);
    check_u2(t);
    gd_tensor_free(t);
}
END_TEST

START_TEST(test_versions)
{
    struct gd_tensor *t = load_ok("v2.npy");
    const int64_t shape5[] = {5};
    check_shape(t, GD_F32, 1, shape5);
    for (int i = 0; i < 5; i++)
        ck_assert_msg(((float *)t->data)[i] == (float)i, "v2[%d] = %g", i, ((float *)t->data)[i]);
    gd_tensor_free(t);

    t = load_ok("v3.npy");
    const int64_t shape_3x2[] = {3, 2};
    check_shape(t, GD_I32, 2, shape_3x2);
    for (int i = 0; i < 6; i++)
        ck_assert_msg(((int32_t *)t->data)[i] == i - 3, "v3[%d] = %d, expected %d", i,
                      ((int32_t *)t->data)[i], i - 3);
    gd_tensor_free(t);

    /* The header parser reports the version and where the data starts. */
    size_t len;
    unsigned char *buf = slurp(fixture("v2.npy"), &len);
    struct gd_npy_header hdr;
    struct gd_err err = {0};
    int rc = gd_npy_header_parse(buf, len, "v2.npy", &hdr, &err);
    CHECK_OK(rc, err, "v2.npy");
    ck_assert_int_eq(hdr.version_major, 2);
    ck_assert_int_eq(hdr.dtype, GD_F32);
    ck_assert_int_eq(hdr.ndim, 1);
    ck_assert_msg(hdr.header_len + hdr.data_len == len, "header %zu + data %zu != file %zu",
                  hdr.header_len, hdr.data_len, len);
    ck_assert_uint_eq(hdr.data_len, 20);
    free(buf);

    buf = slurp(fixture("fortran_be_f8.npy"), &len);
    rc = gd_npy_header_parse(buf, len, "fortran_be_f8.npy", &hdr, &err);
    CHECK_OK(rc, err, "fortran_be_f8.npy");
    ck_assert_int_eq(hdr.version_major, 1);
    ck_assert_int_eq(hdr.big_endian, 1);
    ck_assert_int_eq(hdr.fortran_order, 1);
    ck_assert_msg(hdr.shape[0] == 3 && hdr.shape[1] == 2, "shape %lld x %lld",
                  (long long)hdr.shape[0], (long long)hdr.shape[1]);
    ck_assert_uint_eq(hdr.header_len, 128);
    free(buf);
}
END_TEST

START_TEST(test_scalar_empty_vector)
{
    struct gd_tensor *t = load_ok("scalar.npy");
    check_shape(t, GD_F64, 0, NULL);
    ck_assert_msg(((double *)t->data)[0] == 3.5, "scalar = %g", ((double *)t->data)[0]);
    gd_tensor_free(t);

    t = load_ok("empty.npy");
    const int64_t shape_0x3[] = {0, 3};
    check_shape(t, GD_F32, 2, shape_0x3);
    ck_assert_uint_eq(gd_tensor_nbytes(t), 0);
    gd_tensor_free(t);

    t = load_ok("vector.npy");
    const int64_t shape5[] = {5};
    check_shape(t, GD_I32, 1, shape5);
    for (int i = 0; i < 5; i++)
        ck_assert_int_eq(((int32_t *)t->data)[i], i);
    gd_tensor_free(t);
}
END_TEST

START_TEST(test_header_variants)
{
    /* Key order, spaces and tabs, trailing commas, double quotes, '=' order: numpy reads all. */
    static const char *const files[] = {"hdr_order.npy", "hdr_spaces.npy", "hdr_native.npy"};
    for (int f = 0; f < 3; f++) {
        struct gd_tensor *t = load_ok(files[f]);
        check_shape(t, GD_I32, 2, shape_2x3);
        for (int i = 0; i < 6; i++)
            ck_assert_msg(((int32_t *)t->data)[i] == i, "%s[%d] = %d", files[f], i,
                          ((int32_t *)t->data)[i]);
        gd_tensor_free(t);
    }
}
END_TEST

static const struct {
    const char *file;
    int code;
    const char *fragment;
} bad_files[] = {
    {"bad_magic.npy", GD_EFORMAT, "bad magic"},
    {"bad_version.npy", GD_EFORMAT, "version 4.0"},
    {"trunc_prefix.npy", GD_EFORMAT, "truncated"},
    {"trunc_header.npy", GD_EFORMAT, "runs past the end"},
    {"trunc_data.npy", GD_EFORMAT, "data is 20 bytes, expected 24"},
    {"long_data.npy", GD_EFORMAT, "data is 28 bytes, expected 24"},
    {"bad_dict.npy", GD_EFORMAT, "malformed .npy header"},
    {"missing_key.npy", GD_EFORMAT, "lacks key 'shape'"},
    {"extra_key.npy", GD_EFORMAT, "unexpected key 'order'"},
    {"bad_shape.npy", GD_EFORMAT, "other than integers"},
    {"neg_shape.npy", GD_EFORMAT, "negative dimension 0"},
    {"int_shape.npy", GD_EFORMAT, "not a tuple"},
    {"huge_shape.npy", GD_EFORMAT, "shape too large"},
    {"bad_fortran.npy", GD_EFORMAT, "fortran_order"},
    {"many_dims.npy", GD_EFORMAT, "more than 8 dimensions"},
    {"complex.npy", GD_EDTYPE, "'<c8'"},
    {"unicode.npy", GD_EDTYPE, "'<U2'"},
    {"object.npy", GD_EDTYPE, "'|O'"},
    {"structured.npy", GD_EDTYPE, "structured"},
    {"no_such_file.npy", GD_ENOENT, "No such file or directory"},
};
#define N_BAD_FILES ((int)(sizeof bad_files / sizeof bad_files[0]))

START_TEST(test_bad_file)
{
    struct gd_err err = {0};
    struct gd_tensor *t = NULL;
    const char *path = fixture(bad_files[_i].file);
    int rc = gd_npy_load(path, &t, &err);
    CHECK_FAILED(rc, err, bad_files[_i].code, path, bad_files[_i].fragment);
    ck_assert_ptr_null(t);
}
END_TEST

START_TEST(test_folder_is_not_a_file)
{
    struct gd_err err = {0};
    struct gd_tensor *t = NULL;
    int rc = gd_npy_load(GD_FIXTURES, &t, &err);
    CHECK_FAILED(rc, err, GD_EIO, GD_FIXTURES, "Is a directory");
    ck_assert_ptr_null(t);
}
END_TEST

START_TEST(test_parse_every_prefix)
{
    /* Every cut of valid images is an error, never a crash or a read past the buffer. */
    static const char *const files[] = {"dtype_f8.npy", "v3.npy", "fortran_f4.npy"};
    for (int f = 0; f < 3; f++) {
        size_t len;
        unsigned char *full = slurp(fixture(files[f]), &len);
        for (size_t cut = 0; cut < len; cut++) {
            unsigned char *part = malloc(cut ? cut : 1);
            memcpy(part, full, cut);
            struct gd_err err = {0};
            struct gd_tensor *t = NULL;
            int rc = gd_npy_parse(part, cut, "cut image", &t, &err);
            ck_assert_msg(rc == GD_EFORMAT, "%s cut at %zu: rc %d (%s)", files[f], cut, rc,
                          err.msg);
            ck_assert_msg(strstr(err.msg, "cut image") != NULL, "message '%s'", err.msg);
            ck_assert_ptr_null(t);
            free(part);
        }
        struct gd_err err = {0};
        struct gd_tensor *t = NULL;
        int rc = gd_npy_parse(full, len, files[f], &t, &err);
        CHECK_OK(rc, err, files[f]);
        gd_tensor_free(t);
        free(full);
    }
}
END_TEST

/* ---- writing ---- */

START_TEST(test_header_text)
{
    unsigned char buf[256];
    size_t len = 0;
    struct gd_err err = {0};
    int rc = gd_npy_header_write(GD_F32, 2, shape_2x3, buf, sizeof buf, &len, &err);
    CHECK_OK(rc, err, "header_write");
    static const char text[] = "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }";
    ck_assert_msg(len % 64 == 0, "header length %zu is not a multiple of 64", len);
    ck_assert_msg(memcmp(buf, "\x93NUMPY\x01\x00", 8) == 0, "bad magic or version");
    size_t dict_len = buf[8] + 256u * buf[9];
    ck_assert_msg(dict_len == len - 10, "length field %zu, expected %zu", dict_len, len - 10);
    ck_assert_msg(memcmp(buf + 10, text, sizeof text - 1) == 0, "header text '%.*s'",
                  (int)(len - 10), buf + 10);
    ck_assert_msg(buf[len - 1] == '\n', "header does not end with a newline");
    for (size_t i = 10 + sizeof text - 1; i < len - 1; i++)
        ck_assert_msg(buf[i] == ' ', "byte %zu of the padding is 0x%02x", i, buf[i]);

    /* A 1-dimensional shape keeps Python's trailing comma; a scalar is (). */
    const int64_t five[] = {5};
    rc = gd_npy_header_write(GD_BOOL, 1, five, buf, sizeof buf, &len, &err);
    CHECK_OK(rc, err, "header_write");
    static const char text1[] = "{'descr': '|b1', 'fortran_order': False, 'shape': (5,), }";
    ck_assert_msg(memcmp(buf + 10, text1, sizeof text1 - 1) == 0, "'%.*s'", (int)(len - 10),
                  buf + 10);
    rc = gd_npy_header_write(GD_U8, 0, NULL, buf, sizeof buf, &len, &err);
    CHECK_OK(rc, err, "header_write");
    static const char text0[] = "{'descr': '|u1', 'fortran_order': False, 'shape': (), }";
    ck_assert_msg(memcmp(buf + 10, text0, sizeof text0 - 1) == 0, "'%.*s'", (int)(len - 10),
                  buf + 10);
    ck_assert_msg(len % 64 == 0, "scalar header length %zu", len);
}
END_TEST

START_TEST(test_header_limits)
{
    unsigned char buf[256];
    size_t len = 0;
    struct gd_err err = {0};
    /*
     * A zero dimension does not excuse the others: 8 dimensions, all but a zero one at the
     * int64 maximum, are refused (numpy refuses them too), wherever the zero stands.
     */
    int64_t longest[GD_MAX_DIMS];
    for (int i = 0; i < GD_MAX_DIMS; i++)
        longest[i] = INT64_MAX;
    longest[0] = 0;
    int rc = gd_npy_header_write(GD_F64, GD_MAX_DIMS, longest, buf, sizeof buf, &len, &err);
    ck_assert_msg(rc == GD_ERANGE, "[0, 2^63-1, ...] was accepted: %d", rc);
    longest[0] = INT64_MAX;
    longest[GD_MAX_DIMS - 1] = 0;
    rc = gd_npy_header_write(GD_F64, GD_MAX_DIMS, longest, buf, sizeof buf, &len, &err);
    ck_assert_msg(rc == GD_ERANGE, "[2^63-1, ..., 0] was accepted: %d", rc);
    /* The longest valid shape: one dimension as large as it may be, seven zeros. */
    for (int i = 0; i < GD_MAX_DIMS; i++)
        longest[i] = 0;
    longest[0] = (int64_t)(SIZE_MAX / 2 / 8);
    rc = gd_npy_header_write(GD_F64, GD_MAX_DIMS, longest, buf, sizeof buf, &len, &err);
    CHECK_OK(rc, err, "longest header");
    ck_assert_msg(len <= 256 && len % 64 == 0, "longest header is %zu bytes", len);
    struct gd_npy_header hdr;
    rc = gd_npy_header_parse(buf, len, "longest", &hdr, &err);
    CHECK_OK(rc, err, "longest header parsed back");
    ck_assert_int_eq(hdr.ndim, GD_MAX_DIMS);
    ck_assert_msg(hdr.shape[0] == (int64_t)(SIZE_MAX / 2 / 8) && hdr.data_len == 0,
                  "shape[0] %lld, data %zu", (long long)hdr.shape[0], hdr.data_len);

    rc = gd_npy_header_write(GD_F32, 2, shape_2x3, buf, 100, &len, &err);
    ck_assert_msg(rc == GD_ERANGE, "small buffer: rc %d (%s)", rc, err.msg);
    /* bfloat16 is a 2-byte void, as numpy writes ml_dtypes' bfloat16 */
    rc = gd_npy_header_write(GD_BF16, 2, shape_2x3, buf, sizeof buf, &len, &err);
    CHECK_OK(rc, err, "bf16 header");
    ck_assert_msg(strncmp((const char *)buf + 10, "{'descr': '<V2'", 15) == 0,
                  "bf16 header: %.*s", (int)len, (const char *)buf);
    rc = gd_npy_header_parse(buf, len, "bf16", &hdr, &err);
    CHECK_OK(rc, err, "bf16 header parsed back");
    ck_assert_int_eq(hdr.dtype, GD_BF16);
    const int64_t negative[] = {2, -3};
    rc = gd_npy_header_write(GD_F32, 2, negative, buf, sizeof buf, &len, &err);
    ck_assert_msg(rc == GD_ESHAPE, "negative dim: rc %d (%s)", rc, err.msg);
}
END_TEST

START_TEST(test_save_matches_numpy)
{
    /* Saving what was loaded gives numpy's file back, byte for byte. */
    char *dir = scratch_dir();
    char out[8192];
    static const char *const more[] = {"scalar.npy", "empty.npy", "vector.npy"};
    for (int f = 0; f < N_DTYPE_FILES + 3; f++) {
        const char *name = f < N_DTYPE_FILES ? dtype_files[f].file : more[f - N_DTYPE_FILES];
        struct gd_tensor *t = load_ok(name);
        struct gd_err err = {0};
        snprintf(out, sizeof out, "%s/%s", dir, name);
        int rc = gd_npy_save(out, t, &err);
        CHECK_OK(rc, err, out);
        size_t want_len, got_len;
        unsigned char *want = slurp(fixture(name), &want_len);
        unsigned char *got = slurp(out, &got_len);
        ck_assert_msg(got_len == want_len, "%s: %zu bytes written, numpy wrote %zu", name,
                      got_len, want_len);
        for (size_t i = 0; i < got_len; i++)
            ck_assert_msg(got[i] == want[i], "%s: byte %zu is 0x%02x, numpy wrote 0x%02x", name,
                          i, got[i], want[i]);
        free(want);
        free(got);
        gd_tensor_free(t);
    }
    ck_assert_int_eq(scratch_count(dir), N_DTYPE_FILES + 3);
    scratch_remove(dir);
}
END_TEST

START_TEST(test_save_round_trip)
{
    char *dir = scratch_dir();
    char path[8192];
    snprintf(path, sizeof path, "%s/round.npy", dir);
    struct gd_err err = {0};
    struct gd_tensor *t = gd_tensor_new(GD_F32, 2, shape_2x3, &err);
    ck_assert_ptr_nonnull(t);
    for (int i = 0; i < 6; i++)
        ((float *)t->data)[i] = (float)i * 0.75f - 1.0f;
    int rc = gd_npy_save(path, t, &err);
    CHECK_OK(rc, err, path);

    size_t len;
    unsigned char *bytes = slurp(path, &len);
    static const char text[] = "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }";
    ck_assert_msg(len == 128 + 24, "file is %zu bytes", len);
    ck_assert_msg(memcmp(bytes + 10, text, sizeof text - 1) == 0, "header '%.*s'", 118,
                  bytes + 10);
    free(bytes);

    struct gd_tensor *back = NULL;
    rc = gd_npy_load(path, &back, &err);
    CHECK_OK(rc, err, path);
    check_shape(back, GD_F32, 2, shape_2x3);
    ck_assert_msg(memcmp(back->data, t->data, 24) == 0, "values changed in the round trip");
    gd_tensor_free(back);

    /* Saving again replaces the file and leaves no temporary file behind. */
    ((float *)t->data)[5] = 42.0f;
    rc = gd_npy_save(path, t, &err);
    CHECK_OK(rc, err, path);
    rc = gd_npy_load(path, &back, &err);
    CHECK_OK(rc, err, path);
    ck_assert_msg(((float *)back->data)[5] == 42.0f, "value 5 is %g", ((float *)back->data)[5]);
    gd_tensor_free(back);
    ck_assert_int_eq(scratch_count(dir), 1);

    /* bfloat16 goes as a 2-byte void and comes back as bfloat16, every bit of it. */
    struct gd_tensor *bf = gd_tensor_new(GD_BF16, 2, shape_2x3, &err);
    for (int i = 0; i < 6; i++)
        ((uint16_t *)bf->data)[i] = gd_f32_to_bf16((float)i * 0.3f - 0.7f);
    snprintf(path, sizeof path, "%s/bf16.npy", dir);
    rc = gd_npy_save(path, bf, &err);
    CHECK_OK(rc, err, path);
    rc = gd_npy_load(path, &back, &err);
    CHECK_OK(rc, err, path);
    ck_assert_int_eq(back->dtype, GD_BF16);
    ck_assert_int_eq(memcmp(back->data, bf->data, 12), 0);
    gd_tensor_free(back);
    ck_assert_int_eq(scratch_count(dir), 2);
    gd_tensor_free(bf);

    /* A missing folder: GD_ENOENT naming the path. */
    snprintf(path, sizeof path, "%s/no/such/folder.npy", dir);
    rc = gd_npy_save(path, t, &err);
    CHECK_FAILED(rc, err, GD_ENOENT, path, "No such file or directory");
    ck_assert_int_eq(scratch_count(dir), 2);

    gd_tensor_free(t);
    scratch_remove(dir);
}
END_TEST

START_TEST(test_save_fortran_loaded)
{
    /* A Fortran file loads in C order; saving it writes C order, which loads the same. */
    char *dir = scratch_dir();
    char path[8192];
    snprintf(path, sizeof path, "%s/c_order.npy", dir);
    struct gd_tensor *t = load_ok("fortran_f4.npy");
    struct gd_err err = {0};
    int rc = gd_npy_save(path, t, &err);
    CHECK_OK(rc, err, path);
    struct gd_tensor *back = NULL;
    rc = gd_npy_load(path, &back, &err);
    CHECK_OK(rc, err, path);
    ck_assert_msg(gd_tensor_same_shape(t, back) && memcmp(t->data, back->data, 96) == 0,
                  "round trip of the Fortran array differs");
    gd_tensor_free(back);
    gd_tensor_free(t);
    scratch_remove(dir);
}
END_TEST

static Suite *
npy_suite(void)
{
    Suite *s = suite_create("npy");
    TCase *tc = tcase_create("read");
    tcase_add_loop_test(tc, test_every_dtype, 0, N_DTYPE_FILES);
    tcase_add_test(tc, test_fortran_order);
    tcase_add_test(tc, test_big_endian);
    tcase_add_test(tc, test_versions);
    tcase_add_test(tc, test_scalar_empty_vector);
    tcase_add_test(tc, test_header_variants);
    tcase_add_loop_test(tc, test_bad_file, 0, N_BAD_FILES);
    tcase_add_test(tc, test_folder_is_not_a_file);
    tcase_add_test(tc, test_parse_every_prefix);
    suite_add_tcase(s, tc);
    tc = tcase_create("write");
    tcase_add_test(tc, test_header_text);
    tcase_add_test(tc, test_header_limits);
    tcase_add_test(tc, test_save_matches_numpy);
    tcase_add_test(tc, test_save_round_trip);
    tcase_add_test(tc, test_save_fortran_loaded);
    suite_add_tcase(s, tc);
    return s;
}

int
main(void)
{
    return run_suite(npy_suite());
}
