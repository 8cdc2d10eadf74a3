/* check_array.c: gd_array_load (engine/io/array.c) telling the formats apart by content. */
#include <stdint.h>

#include "check_io.h"

static struct gd_tensor *
load_ok(const char *name, const char *key)
{
    struct gd_err err = {0};
    struct gd_tensor *t = NULL;
    int rc = gd_array_load(fixture(name), key, &t, &err);
    CHECK_OK(rc, err, name);
    ck_assert_ptr_nonnull(t);
    return t;
}

START_TEST(test_each_format)
{
    const int64_t shape_2x3[] = {2, 3};
    struct gd_tensor *t = load_ok("dtype_i4.npy", NULL);
    check_shape(t, GD_I32, 2, shape_2x3);
    ck_assert_int_eq(((int32_t *)t->data)[5], INT32_MAX);
    gd_tensor_free(t);

    t = load_ok("stored.npz", "a");
    check_shape(t, GD_F32, 2, shape_2x3);
    ck_assert_msg(((float *)t->data)[5] == 5.0f, "a[5] = %g", ((float *)t->data)[5]);
    gd_tensor_free(t);

    t = load_ok("model.safetensors", "w_i32");
    const int64_t shape2[] = {2};
    check_shape(t, GD_I32, 1, shape2);
    ck_assert_int_eq(((int32_t *)t->data)[0], INT32_MIN);
    gd_tensor_free(t);
}
END_TEST

START_TEST(test_only_member)
{
    /* Without a key, a one-member archive gives its member. */
    struct gd_tensor *t = load_ok("positional.npz", NULL);
    const int64_t shape3[] = {3};
    check_shape(t, GD_U16, 1, shape3);
    ck_assert_int_eq(((uint16_t *)t->data)[2], 2);
    gd_tensor_free(t);

    t = load_ok("one.safetensors", NULL);
    const int64_t shape_2x3[] = {2, 3};
    check_shape(t, GD_F32, 2, shape_2x3);
    gd_tensor_free(t);
}
END_TEST

START_TEST(test_content_not_name)
{
    /* A .npy image under a safetensors name is still read as .npy. */
    char *dir = scratch_dir();
    char path[8192];
    snprintf(path, sizeof path, "%s/misnamed.safetensors", dir);
    size_t len;
    unsigned char *bytes = slurp(fixture("v3.npy"), &len);
    spill(path, bytes, len);
    free(bytes);
    struct gd_err err = {0};
    struct gd_tensor *t = NULL;
    int rc = gd_array_load(path, NULL, &t, &err);
    CHECK_OK(rc, err, path);
    const int64_t shape_3x2[] = {3, 2};
    check_shape(t, GD_I32, 2, shape_3x2);
    ck_assert_int_eq(((int32_t *)t->data)[0], -3);
    gd_tensor_free(t);
    scratch_remove(dir);
}
END_TEST

static const struct {
    const char *file;
    const char *key;
    int code;
    const char *fragment;
} bad_calls[] = {
    {"dtype_f4.npy", "a", GD_EINVAL, "key 'a' does not apply"},
    {"stored.npz", NULL, GD_EINVAL, "holds 3 arrays (a, b, c)"},
    {"model.safetensors", NULL, GD_EINVAL, "holds 15 arrays (w_f32, w_f64"},
    {"empty.npz", NULL, GD_ENOENT, "holds no arrays"},
    {"stored.npz", "z", GD_ENOENT, "no member 'z'"},
    {"model.safetensors", "z", GD_ENOENT, "no tensor 'z'"},
    {"make_fixtures.py", NULL, GD_EFORMAT, "not a .npy, .npz or safetensors file"},
    {"st_short.safetensors", NULL, GD_EFORMAT, "not a .npy, .npz or safetensors file"},
    {"trunc_data.npy", NULL, GD_EFORMAT, "expected 24"},
    {"crc.npz", "a", GD_EFORMAT, "CRC-32"},
    {"no_such_file", NULL, GD_ENOENT, "No such file or directory"},
};
#define N_BAD_CALLS ((int)(sizeof bad_calls / sizeof bad_calls[0]))

START_TEST(test_bad_call)
{
    struct gd_err err = {0};
    struct gd_tensor *t = NULL;
    const char *path = fixture(bad_calls[_i].file);
    int rc = gd_array_load(path, bad_calls[_i].key, &t, &err);
    CHECK_FAILED(rc, err, bad_calls[_i].code, path, bad_calls[_i].fragment);
    ck_assert_ptr_null(t);
}
END_TEST

START_TEST(test_empty_file)
{
    char *dir = scratch_dir();
    char path[8192];
    snprintf(path, sizeof path, "%s/empty", dir);
    spill(path, "", 0);
    struct gd_err err = {0};
    struct gd_tensor *t = NULL;
    int rc = gd_array_load(path, NULL, &t, &err);
    CHECK_FAILED(rc, err, GD_EFORMAT, path, "not a .npy, .npz or safetensors file");
    scratch_remove(dir);
}
END_TEST

static Suite *
array_suite(void)
{
    Suite *s = suite_create("array");
    TCase *tc = tcase_create("load");
    tcase_add_test(tc, test_each_format);
    tcase_add_test(tc, test_only_member);
    tcase_add_test(tc, test_content_not_name);
    tcase_add_loop_test(tc, test_bad_call, 0, N_BAD_CALLS);
    tcase_add_test(tc, test_empty_file);
    suite_add_tcase(s, tc);
    return s;
}

int
main(void)
{
    return run_suite(array_suite());
}
