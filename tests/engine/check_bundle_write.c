/*
 * check_bundle_write.c: the bundle writer's pieces (engine/io/bundle_write.c): an output
 * that reaches gd_bundle_writer_layer() in pieces of elements (a capture under
 * knobs.host_memory), alone or inside --batch slices, makes the same file, sha256 and
 * statistics as the output given whole; pieces out of order are refused.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <check.h>
#include <jansson.h>

#include "gpudiff/bundle.h"
#include "gpudiff/session.h"

static char *
scratch(void)
{
    char tmpl[] = "/tmp/gd_bundle_XXXXXX";
    char *d = mkdtemp(tmpl);
    ck_assert_ptr_nonnull(d);
    return strdup(d);
}

/* A float16 layer of shape 4 x 5 x 3 with values i * 0.25 - 7 (all exact in float16). */
static struct gd_tensor *
layer_data(void)
{
    struct gd_err err = {0};
    const int64_t shape[3] = {4, 5, 3};
    struct gd_tensor *t = gd_tensor_new(GD_F16, 3, shape, &err);
    for (int i = 0; i < 60; i++)
        ((uint16_t *)t->data)[i] = gd_f32_to_f16((float)i * 0.25f - 7.0f);
    return t;
}

/*
 * Writes the layer to a bundle at dir: whole (piece 0), or in pieces of `piece` elements of
 * slices of `rows` rows (rows 0: unsliced). Returns run.json's layer record (owned).
 */
static json_t *
write_bundle(const char *dir, const struct gd_tensor *t, int64_t rows, int64_t piece)
{
    struct gd_err err = {0};
    struct gd_bundle_writer *w = NULL;
    ck_assert_msg(gd_bundle_writer_new(dir, 0, &w, &err) == 0, "%s", err.msg);
    int64_t total = t->shape[0], row = gd_tensor_numel(t) / total;
    int64_t step = rows > 0 ? rows : total;
    for (int64_t r0 = 0; r0 < total; r0 += step) {
        struct gd_tensor slice = *t;
        slice.owns_data = 0;
        slice.shape[0] = step;
        slice.data = (uint16_t *)t->data + r0 * row;
        int64_t n = gd_tensor_numel(&slice), per = piece > 0 ? piece : n;
        for (int64_t e0 = 0; e0 < n; e0 += per) {
            struct gd_tensor part = slice;
            struct gd_layer l = {.index = 0, .node_index = -1, .name = "x", .op = GD_OP_RELU,
                                 .value = &slice, .batch_offset = rows > 0 ? r0 : 0,
                                 .batch_total = total, .time_us = e0 == 0 ? 10.0 : 0.0};
            if (piece > 0) {
                part.ndim = 1;
                part.shape[0] = n - e0 < per ? n - e0 : per;
                part.data = (uint16_t *)slice.data + e0;
                l.value = &part;
                l.piece_offset = e0;
                l.piece_ndim = slice.ndim;
                l.piece_shape = slice.shape;
            }
            ck_assert_msg(gd_bundle_writer_layer(w, NULL, &l, &err) == 0, "%s", err.msg);
        }
    }
    json_t *meta = json_pack("{s:s}", "id", "test");
    ck_assert_msg(gd_bundle_writer_commit(w, meta, &err) == 0, "%s", err.msg);
    json_decref(meta);
    gd_bundle_writer_free(w);
    char path[4096];
    snprintf(path, sizeof path, "%s/run.json", dir);
    json_t *run = json_load_file(path, 0, NULL);
    ck_assert_ptr_nonnull(run);
    json_t *rec = json_incref(json_array_get(json_object_get(run, "layers"), 0));
    json_decref(run);
    return rec;
}

static char *
slurp(const char *dir, const char *file, size_t *len)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, file);
    FILE *f = fopen(path, "rb");
    ck_assert_ptr_nonnull(f);
    char *buf = malloc(1 << 16);
    *len = fread(buf, 1, 1 << 16, f);
    fclose(f);
    return buf;
}

START_TEST(pieces_make_the_whole_file)
{
    char *root = scratch();
    struct gd_tensor *t = layer_data();
    static const int64_t forms[][2] = {{0, 0}, {0, 7}, {0, 1}, {2, 0}, {2, 4}, {1, 15}};
    char dir0[4200];
    snprintf(dir0, sizeof dir0, "%s/whole", root);
    json_t *want = write_bundle(dir0, t, 0, 0);
    const char *file = json_string_value(json_object_get(want, "file"));
    size_t want_len;
    char *want_bytes = slurp(dir0, file, &want_len);
    for (size_t f = 1; f < sizeof forms / sizeof forms[0]; f++) {
        char dir[4200];
        snprintf(dir, sizeof dir, "%s/form%zu", root, f);
        json_t *got = write_bundle(dir, t, forms[f][0], forms[f][1]);
        size_t len;
        char *bytes = slurp(dir, file, &len);
        ck_assert_msg(len == want_len && memcmp(bytes, want_bytes, len) == 0,
                      "rows %lld, pieces of %lld: the file differs", (long long)forms[f][0],
                      (long long)forms[f][1]);
        ck_assert_str_eq(json_string_value(json_object_get(got, "sha256")),
                         json_string_value(json_object_get(want, "sha256")));
        ck_assert(json_equal(json_object_get(got, "stats"), json_object_get(want, "stats")));
        ck_assert(json_equal(json_object_get(got, "shape"), json_object_get(want, "shape")));
        /* the node's time counted once per slice, whatever the pieces */
        double per_slice = forms[f][0] > 0 ? (double)(4 / forms[f][0]) : 1.0;
        ck_assert_msg(json_real_value(json_object_get(got, "time_us")) == 10.0 * per_slice,
                      "time %g", json_real_value(json_object_get(got, "time_us")));
        free(bytes);
        json_decref(got);
    }
    free(want_bytes);
    json_decref(want);
    gd_tensor_free(t);
    char cmd[4200];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
    ck_assert_int_eq(system(cmd), 0);
    free(root);
}
END_TEST

START_TEST(pieces_in_order_only)
{
    char *root = scratch();
    struct gd_tensor *t = layer_data();
    struct gd_err err = {0};
    struct gd_bundle_writer *w = NULL;
    char dir[4200];
    snprintf(dir, sizeof dir, "%s/b", root);
    ck_assert_int_eq(gd_bundle_writer_new(dir, 0, &w, &err), 0);
    struct gd_tensor part = *t;
    part.owns_data = 0;
    part.ndim = 1;
    part.shape[0] = 10;
    struct gd_layer l = {.index = 0, .node_index = -1, .name = "x", .op = GD_OP_RELU,
                         .value = &part, .batch_total = 4, .time_us = -1, .piece_ndim = 3,
                         .piece_shape = t->shape};
    ck_assert_int_eq(gd_bundle_writer_layer(w, NULL, &l, &err), 0);
    l.piece_offset = 20; /* 10 to 19 skipped */
    ck_assert_int_eq(gd_bundle_writer_layer(w, NULL, &l, &err), GD_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.msg, "piece at element 20, expected 10"));
    l.piece_offset = 55; /* past the end */
    part.shape[0] = 10;
    ck_assert_int_eq(gd_bundle_writer_layer(w, NULL, &l, &err), GD_EINVAL);
    gd_bundle_writer_free(w);
    gd_tensor_free(t);
    char cmd[4200];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
    ck_assert_int_eq(system(cmd), 0);
    free(root);
}
END_TEST

int
main(void)
{
    Suite *s = suite_create("bundle_write");
    TCase *tc = tcase_create("pieces");
    tcase_add_test(tc, pieces_make_the_whole_file);
    tcase_add_test(tc, pieces_in_order_only);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? 0 : 1;
}
