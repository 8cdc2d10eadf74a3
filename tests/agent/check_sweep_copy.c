/*
 * check_sweep_copy.c: agt_sweep_copy and agt_sweep_differ (agent/sweep_copy.c) against one
 * memcpy and one memcmp, at sizes below, at and above the point where they split the work
 * (4 MiB a thread), sizes that do not divide evenly, and a single differing byte placed at
 * the first, the last and each boundary between the pieces.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <check.h>

#include "sweep.h"

#define MIB ((size_t)1 << 20)

static const size_t sizes[] = {0, 1, 63, 4 * MIB - 1, 4 * MIB, 8 * MIB, 8 * MIB + 1,
                               13 * MIB + 4097, 40 * MIB + 7};

/* bytes that differ from one position to the next and between calls with other seeds */
static void
fill(unsigned char *p, size_t n, uint32_t seed)
{
    uint32_t x = seed * 2654435761u + 1;
    for (size_t i = 0; i < n; i++) {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        p[i] = (unsigned char)x;
    }
}

START_TEST(copy_same_as_memcpy)
{
    size_t n = sizes[_i];
    unsigned char *src = malloc(n + 1), *dst = malloc(n + 16);
    ck_assert_ptr_nonnull(src);
    ck_assert_ptr_nonnull(dst);
    fill(src, n, (uint32_t)_i + 1);
    memset(dst, 0xA5, n + 16);
    agt_sweep_copy(dst, src, n);
    ck_assert_int_eq(memcmp(dst, src, n), 0);
    for (size_t i = n; i < n + 16; i++)
        ck_assert_msg(dst[i] == 0xA5, "byte %zu after the %zu copied was written", i - n, n);
    free(src);
    free(dst);
}
END_TEST

START_TEST(differ_finds_one_byte)
{
    size_t n = sizes[_i];
    unsigned char *a = malloc(n + 1), *b = malloc(n + 1);
    ck_assert_ptr_nonnull(a);
    ck_assert_ptr_nonnull(b);
    fill(a, n, 7);
    memcpy(b, a, n);
    ck_assert_int_eq(agt_sweep_differ(a, b, n), 0);
    /* the first and last byte and both sides of every 1 MiB boundary: wherever the pieces
     * split (at multiples of 64 bytes near n / threads), a boundary is within 1 MiB */
    for (size_t at = 0; at < n; at += MIB)
        for (size_t d = 0; d < 2; d++) {
            size_t i = d == 0 ? at : at + MIB - 1 < n ? at + MIB - 1 : n - 1;
            b[i] ^= 0x10;
            ck_assert_msg(agt_sweep_differ(a, b, n) == 1, "a byte changed at %zu of %zu", i, n);
            b[i] ^= 0x10;
        }
    ck_assert_int_eq(agt_sweep_differ(a, b, n), 0);
    free(a);
    free(b);
}
END_TEST

/* The workers stopped and started again: the next copy and comparison are still right. */
START_TEST(fini_then_again)
{
    size_t n = 24 * MIB + 3;
    unsigned char *a = malloc(n), *b = malloc(n);
    ck_assert_ptr_nonnull(a);
    ck_assert_ptr_nonnull(b);
    fill(a, n, 11);
    agt_sweep_copy(b, a, n);
    ck_assert_int_eq(memcmp(a, b, n), 0);
    agt_sweep_copy_fini();
    agt_sweep_copy_fini(); /* twice: nothing left to stop */
    fill(a, n, 12);
    agt_sweep_copy(b, a, n);
    ck_assert_int_eq(memcmp(a, b, n), 0);
    b[n - 1] ^= 1;
    ck_assert_int_eq(agt_sweep_differ(a, b, n), 1);
    agt_sweep_copy_fini();
    free(a);
    free(b);
}
END_TEST

int
main(void)
{
    Suite *s = suite_create("sweep_copy");
    TCase *tc = tcase_create("cases");
    int n = (int)(sizeof sizes / sizeof sizes[0]);
    tcase_add_loop_test(tc, copy_same_as_memcpy, 0, n);
    tcase_add_loop_test(tc, differ_finds_one_byte, 0, n);
    tcase_add_test(tc, fini_then_again);
    tcase_set_timeout(tc, 120);
    suite_add_tcase(s, tc);
    SRunner *r = srunner_create(s);
    srunner_run_all(r, CK_NORMAL);
    int failed = srunner_ntests_failed(r);
    srunner_free(r);
    return failed ? 1 : 0;
}
