/*
 * check_model_files.c: engine/io/model_files.c: the seed case's JSON model names its 10
 * weight files, each once, relative to its weights folder (the model's "weights_dir", or
 * the one given); an ONNX model its external data location; a reference that is absolute or
 * leaves its folder is refused with the reason; "values" weights and "./" parts are no
 * files; a model that is neither JSON nor ONNX is refused.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gpudiff/model_files.h"

static void
write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fputs(text, f);
    fclose(f);
}

START_TEST(json_weights)
{
    struct gd_model_files f;
    struct gd_err err;
    const char *model = GD_FIXTURES "/models/lenet-11-821.json";
    ck_assert_msg(gd_model_files_find(model, NULL, &f, &err) == 0, "%s", err.msg);
    ck_assert_int_eq(f.onnx, 0);
    ck_assert_int_eq(f.n, 10);
    ck_assert_str_eq(f.files[0].name, "conv1_mutated/weight.npz");
    ck_assert_str_eq(f.files[1].name, "conv1_mutated/bias.npz");
    ck_assert_str_eq(f.weights_dir,
                     GD_FIXTURES "/models/../../../../shared/cases/lenet-11-821/initializer");
    ck_assert_str_eq(f.files[0].path, GD_FIXTURES "/models/../../../../shared/cases/lenet-11-821/"
                                                  "initializer/conv1_mutated/weight.npz");
    for (int i = 0; i < f.n; i++)
        for (int k = 0; k < i; k++)
            ck_assert_str_ne(f.files[i].name, f.files[k].name);
    gd_model_files_fini(&f);
    /* the weights folder given overrides the model's */
    ck_assert_int_eq(gd_model_files_find(model, "/data/w", &f, &err), 0);
    ck_assert_str_eq(f.files[0].path, "/data/w/conv1_mutated/weight.npz");
    gd_model_files_fini(&f);
}
END_TEST

START_TEST(json_references)
{
    char dir[] = "/tmp/check_model_files.XXXXXX", path[128];
    ck_assert_ptr_nonnull(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/m.json", dir);
    struct gd_model_files f;
    struct gd_err err;
    write_file(path,
               "{\"weights\": [{\"name\": \"a\", \"file\": \"./w//a.npy\"}, "
               "{\"name\": \"b\", \"file\": \"w/a.npy\", \"key\": \"x\"}, "
               "{\"name\": \"c\", \"values\": [1, 2]}, {\"name\": \"d\", \"file\": \"d.npz\"}]}");
    ck_assert_msg(gd_model_files_find(path, NULL, &f, &err) == 0, "%s", err.msg);
    ck_assert_int_eq(f.n, 2);
    ck_assert_str_eq(f.files[0].name, "w/a.npy");
    ck_assert_str_eq(f.files[1].name, "d.npz");
    ck_assert_str_eq(f.weights_dir, dir);
    gd_model_files_fini(&f);
    write_file(path, "{\"weights\": [{\"name\": \"a\", \"file\": \"/etc/w.npy\"}]}");
    ck_assert_int_eq(gd_model_files_find(path, NULL, &f, &err), GD_EINVAL);
    ck_assert_msg(strstr(err.msg, "weight a: /etc/w.npy is an absolute path") != NULL, "%s",
                  err.msg);
    ck_assert_int_eq(f.n, 0);
    write_file(path, "{\"weights\": [{\"name\": \"a\", \"file\": \"w/../../x.npy\"}]}");
    ck_assert_int_eq(gd_model_files_find(path, NULL, &f, &err), GD_EINVAL);
    ck_assert_msg(strstr(err.msg, "leaves its folder") != NULL, "%s", err.msg);
    write_file(path, "{\"weights\": [");
    ck_assert_int_eq(gd_model_files_find(path, NULL, &f, &err), GD_EFORMAT);
    write_file(path, "not a model");
    ck_assert_int_ne(gd_model_files_find(path, NULL, &f, &err), 0);
    unlink(path);
    rmdir(dir);
}
END_TEST

START_TEST(onnx_external_data)
{
    struct gd_model_files f;
    struct gd_err err;
    ck_assert_msg(gd_model_files_find(GD_FIXTURES "/onnx/external.onnx", NULL, &f, &err) == 0, "%s",
                  err.msg);
    ck_assert_int_eq(f.onnx, 1);
    ck_assert_int_eq(f.n, 1);
    ck_assert_str_eq(f.files[0].name, "ext.bin");
    ck_assert_str_eq(f.files[0].path, GD_FIXTURES "/onnx/ext.bin");
    ck_assert_ptr_null(f.weights_dir);
    gd_model_files_fini(&f);
    /* a model without external data needs nothing */
    ck_assert_int_eq(gd_model_files_find(GD_FIXTURES "/onnx/add_relu.onnx", NULL, &f, &err), 0);
    ck_assert_int_eq(f.n, 0);
    gd_model_files_fini(&f);
    ck_assert_int_eq(gd_model_files_find(GD_FIXTURES "/onnx/external_abs.onnx", NULL, &f, &err),
                     GD_EINVAL);
    ck_assert_msg(strstr(err.msg, "/etc/hostname is an absolute path") != NULL, "%s", err.msg);
    ck_assert_int_eq(gd_model_files_find(GD_FIXTURES "/onnx/external_dotdot.onnx", NULL, &f, &err),
                     GD_EINVAL);
    ck_assert_int_eq(gd_model_files_find(GD_FIXTURES "/onnx/no-such.onnx", NULL, &f, &err),
                     GD_ENOENT);
}
END_TEST

int
main(void)
{
    Suite *s = suite_create("model_files");
    TCase *tc = tcase_create("model_files");
    tcase_add_test(tc, json_weights);
    tcase_add_test(tc, json_references);
    tcase_add_test(tc, onnx_external_data);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? 0 : 1;
}
