/*
 * check_tensor_cache.c: server/tensor_cache.c: a tensor kept under its content's hash comes
 * back as a copy with the same bytes, only for the dtype and shape it was kept with; the
 * least recently used go first when the budget is passed; a tensor over an eighth of the
 * budget is not kept; the counts say what happened.
 */
#include <check.h>
#include <stdio.h>
#include <string.h>

#include "tensor_cache.h"

static struct gd_tensor *
filled(int64_t n, float v)
{
    int64_t shape[1] = {n};
    struct gd_tensor *t = gd_tensor_new(GD_F32, 1, shape, NULL);
    for (int64_t i = 0; i < n; i++)
        ((float *)t->data)[i] = v + (float)i;
    return t;
}

static void
key(char out[65], int k)
{
    snprintf(out, 65, "%064x", k);
}

START_TEST(copy_back)
{
    struct srv_tensor_cache *c = NULL;
    ck_assert_int_eq(srv_tensor_cache_new(1 << 20, &c, NULL), 0);
    char h[65];
    key(h, 1);
    struct gd_tensor *t = filled(100, 3.0f);
    srv_tensor_cache_put(c, h, t);
    int64_t shape[1] = {100};
    struct gd_tensor *got = srv_tensor_cache_get(c, h, GD_F32, 1, shape);
    ck_assert_ptr_nonnull(got);
    ck_assert_ptr_ne(got->data, t->data);
    ck_assert_mem_eq(got->data, t->data, 400);
    /* a copy: writing it leaves the kept one as it was */
    ((float *)got->data)[0] = -1.0f;
    struct gd_tensor *again = srv_tensor_cache_get(c, h, GD_F32, 1, shape);
    ck_assert_float_eq(((float *)again->data)[0], 3.0f);
    /* the same bytes as another dtype or shape are not this tensor */
    int64_t other[2] = {10, 10};
    ck_assert_ptr_null(srv_tensor_cache_get(c, h, GD_I32, 1, shape));
    ck_assert_ptr_null(srv_tensor_cache_get(c, h, GD_F32, 2, other));
    char miss[65];
    key(miss, 2);
    ck_assert_ptr_null(srv_tensor_cache_get(c, miss, GD_F32, 1, shape));
    ck_assert_ptr_null(srv_tensor_cache_get(c, NULL, GD_F32, 1, shape));
    ck_assert_ptr_null(srv_tensor_cache_get(c, "abc", GD_F32, 1, shape));
    size_t n, bytes;
    int64_t hits, misses;
    srv_tensor_cache_stats(c, &n, &bytes, &hits, &misses);
    ck_assert_uint_eq(n, 1);
    ck_assert_uint_ge(bytes, 400);
    ck_assert_int_eq(hits, 2);
    ck_assert_int_eq(misses, 3); /* the two layouts and the unknown hash; bad keys not looked up */
    gd_tensor_free(t);
    gd_tensor_free(got);
    gd_tensor_free(again);
    srv_tensor_cache_free(c);
}
END_TEST

START_TEST(least_recently_used_first)
{
    /* A budget of 64 KiB holds about fifteen tensors of 4,000 bytes (with their bookkeeping). */
    struct srv_tensor_cache *c = NULL;
    ck_assert_int_eq(srv_tensor_cache_new(64 << 10, &c, NULL), 0);
    int64_t shape[1] = {1000};
    char h[65];
    for (int k = 0; k < 40; k++) {
        struct gd_tensor *t = filled(1000, (float)k);
        key(h, k);
        srv_tensor_cache_put(c, h, t);
        gd_tensor_free(t);
        /* tensor 0 is used after every put: it stays while the others come and go */
        key(h, 0);
        gd_tensor_free(srv_tensor_cache_get(c, h, GD_F32, 1, shape));
    }
    size_t n, bytes;
    int64_t hits, misses;
    srv_tensor_cache_stats(c, &n, &bytes, &hits, &misses);
    ck_assert_uint_le(bytes, 64 << 10);
    ck_assert_uint_lt(n, 40);
    ck_assert_int_eq(hits, 40);
    key(h, 0);
    struct gd_tensor *zero = srv_tensor_cache_get(c, h, GD_F32, 1, shape);
    ck_assert_ptr_nonnull(zero);
    ck_assert_float_eq(((float *)zero->data)[999], 999.0f);
    key(h, 39);
    struct gd_tensor *newest = srv_tensor_cache_get(c, h, GD_F32, 1, shape);
    ck_assert_ptr_nonnull(newest);
    key(h, 1);
    ck_assert_ptr_null(srv_tensor_cache_get(c, h, GD_F32, 1, shape)); /* dropped */
    gd_tensor_free(zero);
    gd_tensor_free(newest);
    srv_tensor_cache_free(c);
}
END_TEST

START_TEST(too_large_not_kept)
{
    struct srv_tensor_cache *c = NULL;
    ck_assert_int_eq(srv_tensor_cache_new(64 << 10, &c, NULL), 0);
    struct gd_tensor *t = filled(4096, 0.0f); /* 16 KiB: over an eighth of 64 KiB */
    char h[65];
    key(h, 7);
    srv_tensor_cache_put(c, h, t);
    int64_t shape[1] = {4096};
    ck_assert_ptr_null(srv_tensor_cache_get(c, h, GD_F32, 1, shape));
    gd_tensor_free(t);
    srv_tensor_cache_free(c);
    srv_tensor_cache_free(NULL);
}
END_TEST

START_TEST(kept_again_under_another_shape)
{
    struct srv_tensor_cache *c = NULL;
    ck_assert_int_eq(srv_tensor_cache_new(1 << 20, &c, NULL), 0);
    char h[65];
    key(h, 9);
    struct gd_tensor *t = filled(100, 1.0f);
    srv_tensor_cache_put(c, h, t);
    int64_t flat[1] = {100}, square[2] = {10, 10};
    struct gd_tensor *sq = gd_tensor_new(GD_F32, 2, square, NULL);
    memcpy(sq->data, t->data, 400);
    srv_tensor_cache_put(c, h, sq);
    ck_assert_ptr_null(srv_tensor_cache_get(c, h, GD_F32, 1, flat));
    struct gd_tensor *got = srv_tensor_cache_get(c, h, GD_F32, 2, square);
    ck_assert_ptr_nonnull(got);
    size_t n, bytes;
    int64_t hits, misses;
    srv_tensor_cache_stats(c, &n, &bytes, &hits, &misses);
    ck_assert_uint_eq(n, 1);
    gd_tensor_free(t);
    gd_tensor_free(sq);
    gd_tensor_free(got);
    srv_tensor_cache_free(c);
}
END_TEST

int
main(void)
{
    Suite *s = suite_create("tensor_cache");
    TCase *tc = tcase_create("cache");
    tcase_add_test(tc, copy_back);
    tcase_add_test(tc, least_recently_used_first);
    tcase_add_test(tc, too_large_not_kept);
    tcase_add_test(tc, kept_again_under_another_shape);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? 0 : 1;
}
