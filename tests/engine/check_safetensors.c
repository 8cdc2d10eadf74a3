/* check_safetensors.c: the safetensors reader (engine/io/safetensors.c) on fixture files. */
#include <stdint.h>

#include "check_io.h"

static struct gd_safetensors *
open_ok(const char *name)
{
    struct gd_err err = {0};
    struct gd_safetensors *st = NULL;
    int rc = gd_safetensors_open(fixture(name), &st, &err);
    CHECK_OK(rc, err, name);
    ck_assert_ptr_nonnull(st);
    return st;
}

static struct gd_tensor *
tensor_ok(struct gd_safetensors *st, const char *key, enum gd_dtype dtype, int ndim,
          const int64_t *shape)
{
    struct gd_err err = {0};
    struct gd_tensor *t = NULL;
    int rc = gd_safetensors_load(st, key, &t, &err);
    CHECK_OK(rc, err, key);
    check_shape(t, dtype, ndim, shape);
    return t;
}

/* Names in the order the header lists them; __metadata__ (listed first) is not a tensor. */
static const char *const model_names[] = {
    "w_f32", "w_f64", "w_f16", "w_bf16", "w_i8",  "w_i16",    "w_i32",   "w_i64",
    "w_u8",  "w_u16", "w_u32", "w_u64",  "w_bool", "w_scalar", "w_empty",
};

START_TEST(test_names)
{
    struct gd_safetensors *st = open_ok("model.safetensors");
    ck_assert_int_eq(gd_safetensors_count(st), 15);
    for (int i = 0; i < 15; i++) {
        const char *name = gd_safetensors_name(st, i);
        ck_assert_msg(name != NULL && strcmp(name, model_names[i]) == 0,
                      "tensor %d is '%s', expected '%s'", i, name ? name : "(null)",
                      model_names[i]);
    }
    ck_assert_ptr_null(gd_safetensors_name(st, 15));
    gd_safetensors_close(st);
    gd_safetensors_close(NULL);
}
END_TEST

START_TEST(test_float_tensors)
{
    struct gd_safetensors *st = open_ok("model.safetensors");
    const int64_t shape_2x3[] = {2, 3}, shape2[] = {2}, shape3[] = {3}, shape4[] = {4};

    struct gd_tensor *t = tensor_ok(st, "w_f32", GD_F32, 2, shape_2x3);
    for (int i = 0; i < 6; i++)
        ck_assert_msg(((float *)t->data)[i] == (float)i, "w_f32[%d] = %g", i,
                      ((float *)t->data)[i]);
    gd_tensor_free(t);

    t = tensor_ok(st, "w_f64", GD_F64, 1, shape3);
    static const double f64[] = {0.1, -2.0, 1e300};
    for (int i = 0; i < 3; i++)
        ck_assert_msg(((double *)t->data)[i] == f64[i], "w_f64[%d] = %.17g, expected %.17g", i,
                      ((double *)t->data)[i], f64[i]);
    gd_tensor_free(t);

    t = tensor_ok(st, "w_f16", GD_F16, 1, shape2);
    static const float f16[] = {1.5f, -65504.0f};
    for (int i = 0; i < 2; i++) {
        float v = gd_f16_to_f32(((uint16_t *)t->data)[i]);
        ck_assert_msg(v == f16[i], "w_f16[%d] = %g, expected %g", i, v, f16[i]);
    }
    gd_tensor_free(t);

    t = tensor_ok(st, "w_bf16", GD_BF16, 1, shape4);
    static const float bf16[] = {1.0f, -2.0f, 0.5f, 3.0f};
    for (int i = 0; i < 4; i++) {
        float v = gd_bf16_to_f32(((uint16_t *)t->data)[i]);
        ck_assert_msg(v == bf16[i], "w_bf16[%d] = %g, expected %g", i, v, bf16[i]);
    }
    gd_tensor_free(t);

    t = tensor_ok(st, "w_scalar", GD_F32, 0, NULL);
    ck_assert_msg(((float *)t->data)[0] == -7.25f, "w_scalar = %g", ((float *)t->data)[0]);
    gd_tensor_free(t);

    const int64_t shape_0x4[] = {0, 4};
    t = tensor_ok(st, "w_empty", GD_F32, 2, shape_0x4);
    ck_assert_uint_eq(gd_tensor_nbytes(t), 0);
    gd_tensor_free(t);
    gd_safetensors_close(st);
}
END_TEST

START_TEST(test_integer_tensors)
{
    struct gd_safetensors *st = open_ok("model.safetensors");
    const int64_t shape2[] = {2}, shape3[] = {3};
    struct gd_tensor *t;

#define CHECK_PAIR(key, dtype, ctype, fmt, cast, lo, hi)                                      \
    t = tensor_ok(st, key, dtype, 1, shape2);                                                 \
    ck_assert_msg(((ctype *)t->data)[0] == (lo) && ((ctype *)t->data)[1] == (hi),             \
                  key " = [" fmt ", " fmt "], expected [" fmt ", " fmt "]",                   \
                  (cast)((ctype *)t->data)[0], (cast)((ctype *)t->data)[1], (cast)(lo),       \
                  (cast)(hi));                                                                \
    gd_tensor_free(t)

    CHECK_PAIR("w_i8", GD_I8, int8_t, "%d", int, -128, 127);
    CHECK_PAIR("w_i16", GD_I16, int16_t, "%d", int, -32768, 32767);
    CHECK_PAIR("w_i32", GD_I32, int32_t, "%d", int, INT32_MIN, 7);
    CHECK_PAIR("w_i64", GD_I64, int64_t, "%lld", long long, INT64_MIN, INT64_MAX);
    CHECK_PAIR("w_u8", GD_U8, uint8_t, "%u", unsigned, 0, 255);
    CHECK_PAIR("w_u16", GD_U16, uint16_t, "%u", unsigned, 1, 65535);
    CHECK_PAIR("w_u32", GD_U32, uint32_t, "%u", unsigned, 1, UINT32_MAX);
    CHECK_PAIR("w_u64", GD_U64, uint64_t, "%llu", unsigned long long, 1, UINT64_MAX);
#undef CHECK_PAIR

    t = tensor_ok(st, "w_bool", GD_BOOL, 1, shape3);
    static const uint8_t b[] = {1, 0, 1};
    for (int i = 0; i < 3; i++)
        ck_assert_msg(((uint8_t *)t->data)[i] == b[i], "w_bool[%d] = %u", i,
                      ((uint8_t *)t->data)[i]);
    gd_tensor_free(t);
    gd_safetensors_close(st);
}
END_TEST

START_TEST(test_unknown_tensor)
{
    struct gd_safetensors *st = open_ok("one.safetensors");
    ck_assert_int_eq(gd_safetensors_count(st), 1);
    struct gd_err err = {0};
    struct gd_tensor *t = NULL;
    int rc = gd_safetensors_load(st, "w_f64", &t, &err);
    CHECK_FAILED(rc, err, GD_ENOENT, "one.safetensors", "no tensor 'w_f64' (tensors: w_f32)");
    ck_assert_ptr_null(t);
    gd_safetensors_close(st);
}
END_TEST

START_TEST(test_unsupported_dtype)
{
    /* A tensor of a dtype the engine lacks fails alone; the others still load. */
    struct gd_safetensors *st = open_ok("st_dtype.safetensors");
    struct gd_err err = {0};
    struct gd_tensor *t = NULL;
    int rc = gd_safetensors_load(st, "w_fp8", &t, &err);
    CHECK_FAILED(rc, err, GD_EDTYPE, "st_dtype.safetensors", "tensor 'w_fp8' has dtype 'F8_E4M3'");
    ck_assert_ptr_null(t);
    const int64_t shape_2x3[] = {2, 3};
    t = tensor_ok(st, "w_f32", GD_F32, 2, shape_2x3);
    gd_tensor_free(t);
    gd_safetensors_close(st);
}
END_TEST

static const struct {
    const char *file;
    int code;
    const char *fragment;
} bad_files[] = {
    {"st_trunc_header.safetensors", GD_EFORMAT, "runs past the end of the file"},
    {"st_trunc_data.safetensors", GD_EFORMAT, "tensor 'w_f64': data_offsets"},
    {"st_short.safetensors", GD_EFORMAT, "too short"},
    {"st_bad_json.safetensors", GD_EFORMAT, "not a JSON object"},
    {"st_size.safetensors", GD_EFORMAT, "tensor 'w_f32' spans 24 bytes, its shape and dtype "
                                        "need 16"},
    {"st_offsets.safetensors", GD_EFORMAT, "tensor 'w_f64': data_offsets"},
    {"st_neg.safetensors", GD_EFORMAT, "tensor 'w_f32': dimension 0"},
    {"dtype_f4.npy", GD_EFORMAT, "runs past the end of the file"},
    {"no_such_file.safetensors", GD_ENOENT, "No such file or directory"},
};
#define N_BAD_FILES ((int)(sizeof bad_files / sizeof bad_files[0]))

START_TEST(test_bad_file)
{
    struct gd_err err = {0};
    struct gd_safetensors *st = NULL;
    const char *path = fixture(bad_files[_i].file);
    int rc = gd_safetensors_open(path, &st, &err);
    CHECK_FAILED(rc, err, bad_files[_i].code, path, bad_files[_i].fragment);
    ck_assert_ptr_null(st);
}
END_TEST

START_TEST(test_every_cut)
{
    /* Every prefix of a valid file fails at open (offsets are checked against the size). */
    char *dir = scratch_dir();
    char path[8192];
    snprintf(path, sizeof path, "%s/cut.safetensors", dir);
    size_t len;
    unsigned char *full = slurp(fixture("model.safetensors"), &len);
    for (size_t cut = 0; cut < len; cut++) {
        spill(path, full, cut);
        struct gd_err err = {0};
        struct gd_safetensors *st = NULL;
        int rc = gd_safetensors_open(path, &st, &err);
        ck_assert_msg(rc == GD_EFORMAT, "cut at %zu: open gives %d (%s)", cut, rc, err.msg);
        ck_assert_ptr_null(st);
    }
    free(full);
    scratch_remove(dir);
}
END_TEST

static Suite *
safetensors_suite(void)
{
    Suite *s = suite_create("safetensors");
    TCase *tc = tcase_create("read");
    tcase_add_test(tc, test_names);
    tcase_add_test(tc, test_float_tensors);
    tcase_add_test(tc, test_integer_tensors);
    tcase_add_test(tc, test_unknown_tensor);
    tcase_add_test(tc, test_unsupported_dtype);
    suite_add_tcase(s, tc);
    tc = tcase_create("corrupt");
    /* Writing a file per cut takes seconds under the sanitizers; Check's default is 4. */
    tcase_set_timeout(tc, 120);
    tcase_add_loop_test(tc, test_bad_file, 0, N_BAD_FILES);
    tcase_add_test(tc, test_every_cut);
    suite_add_tcase(s, tc);
    return s;
}

int
main(void)
{
    return run_suite(safetensors_suite());
}
