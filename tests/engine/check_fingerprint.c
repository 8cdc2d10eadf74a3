/*
 * check_fingerprint.c: tests of engine/core/fingerprint.c against computations made
 * without it: the hash against BLAKE3's published vectors (input byte i is i mod 251; the
 * digests were made by b3sum, the reference Rust implementation, and match the BLAKE3
 * repository's test_vectors.json), in one call and in pieces of every awkward size; the
 * statistics against plain loops (frexp for the histogram bins, a long double sum within
 * the documented bound); the tree order of the sums against a level-by-level pairing (the
 * order the CUDA kernels use), to the bit; the sample's indices against their definition;
 * the run.json form read back.
 */
#include <check.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "gpudiff/fingerprint.h"
#include "../../engine/core/fp_rules.h"

static const struct {
    size_t len;
    const char *hex;
} vectors[] = {
    {0, "af1349b9f5f9a1a6a0404dea36dcc9499bcb25c9adc112b7cc9a93cae41f3262"},
    {1, "2d3adedff11b61f14c886e35afa036736dcd87a74d27b5c1510225d0f592e213"},
    {63, "e9bc37a594daad83be9470df7f7b3798297c3d834ce80ba85d6e207627b7db7b"},
    {64, "4eed7141ea4a5cd4b788606bd23f46e212af9cacebacdc7d1f4c6dc7f2511b98"},
    {65, "de1e5fa0be70df6d2be8fffd0e99ceaa8eb6e8c93a63f2d8d1c30ecb6b263dee"},
    {1023, "10108970eeda3eb932baac1428c7a2163b0e924c9a9e25b35bba72b28f70bd11"},
    {1024, "42214739f095a406f3fc83deb889744ac00df831c10daa55189b5d121c855af7"},
    {1025, "d00278ae47eb27b34faecf67b4fe263f82d5412916c1ffd97c8cb7fb814b8444"},
    {2048, "e776b6028c7cd22a4d0ba182a8bf62205d2ef576467e838ed6f2529b85fba24a"},
    {2049, "5f4d72f40d7a5f82b15ca2b2e44b1de3c2ef86c426c95c1af0b6879522563030"},
    {3072, "b98cb0ff3623be03326b373de6b9095218513e64f1ee2edd2525c7ad1e5cffd2"},
    {3073, "7124b49501012f81cc7f11ca069ec9226cecb8a2c850cfe644e327d22d3e1cd3"},
    {8193, "bab6c09cb8ce8cf459261398d2e7aef35700bf488116ceb94a36d0f5f1b7bc3b"},
    {31744, "62b6960e1a44bcc1eb1a611a8d6235b6b4b78f32e7abc4fb4c6cdcce94895c47"},
    {102400, "bc3e3d41a1146b069abffad3c0d44860cf664390afce4d9661f7902e7943e085"},
    {1048583, "89541f1047f7a56806fe16efda4c2cdc45f141c838e413019f0124189fa55232"},
};

static void
to_hex(const unsigned char h[32], char out[65])
{
    for (int i = 0; i < 32; i++)
        snprintf(out + 2 * i, 3, "%02x", h[i]);
}

static unsigned char *
pattern(size_t len)
{
    unsigned char *p = malloc(len ? len : 1);
    for (size_t i = 0; i < len; i++)
        p[i] = (unsigned char)(i % 251);
    return p;
}

START_TEST(test_hash_vectors)
{
    for (size_t v = 0; v < sizeof vectors / sizeof vectors[0]; v++) {
        size_t len = vectors[v].len;
        unsigned char *p = pattern(len);
        int64_t shape[1] = {(int64_t)len};
        struct gd_tensor *t = gd_tensor_wrap(GD_U8, 1, shape, p, NULL);
        static struct gd_fingerprint fp;
        ck_assert_int_eq(gd_fingerprint_compute(t, &fp, NULL), 0);
        char hex[65];
        gd_fingerprint_hash_hex(&fp, hex);
        ck_assert_msg(strcmp(hex, vectors[v].hex) == 0, "%zu bytes: %s, want %s", len, hex,
                      vectors[v].hex);
        /* the same bytes in pieces of 1, 7, 63, 64, 65, 1000 and 1024 */
        static const size_t steps[] = {1, 7, 63, 64, 65, 1000, 1024};
        for (size_t s = 0; s < sizeof steps / sizeof steps[0]; s++) {
            struct gd_blake3 h;
            gd_blake3_init(&h);
            for (size_t off = 0; off < len; off += steps[s])
                gd_blake3_update(&h, p + off, len - off < steps[s] ? len - off : steps[s]);
            unsigned char out[32];
            gd_blake3_final(&h, out);
            to_hex(out, hex);
            ck_assert_msg(strcmp(hex, vectors[v].hex) == 0, "%zu bytes in pieces of %zu: %s",
                          len, steps[s], hex);
        }
        gd_tensor_free(t);
        free(p);
    }
}
END_TEST

static uint64_t rng = 88172645463325252ull;

static double
uniform(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (double)(rng >> 11) * 0x1p-53;
}

/* The bin by frexp: |x| = f 2^e with f in [0.5, 1), so floor(log2 |x|) = e - 1. */
static int
bin_frexp(double x)
{
    if (x == 0)
        return 0;
    int e;
    frexp(fabs(x), &e);
    e -= 1;
    if (e < -48)
        return 1;
    if (e > 15)
        return GD_FINGERPRINT_HIST_BINS - 1;
    return 2 + e + 48;
}

/* A float32 tensor of n values over many magnitudes, with zeros of both signs, NaN and Inf. */
static struct gd_tensor *
wild_f32(int64_t n)
{
    int64_t shape[2] = {n / 3, 3};
    struct gd_tensor *t = gd_tensor_new(GD_F32, n % 3 == 0 ? 2 : 1, n % 3 == 0 ? shape : &n,
                                        NULL);
    float *v = t->data;
    for (int64_t i = 0; i < n; i++) {
        double u = uniform();
        double mag = ldexp(1.0 + uniform(), (int)(uniform() * 80) - 60);
        v[i] = (float)(u < 0.5 ? -mag : mag);
        if (i % 97 == 5)
            v[i] = i % 2 ? 0.0f : -0.0f;
        if (i % 1009 == 7)
            v[i] = NAN;
        if (i % 2003 == 11)
            v[i] = i % 2 ? INFINITY : -INFINITY;
    }
    return t;
}

START_TEST(test_stats_f32)
{
    static const int64_t sizes[] = {1, 3, 255, 256, 257, 1000, 4096 * 3, 300001};
    for (size_t z = 0; z < sizeof sizes / sizeof sizes[0]; z++) {
        int64_t n = sizes[z];
        struct gd_tensor *t = wild_f32(n);
        const float *v = t->data;
        static struct gd_fingerprint fp;
        ck_assert_int_eq(gd_fingerprint_compute(t, &fp, NULL), 0);
        double lo = INFINITY, hi = -INFINITY;
        long double sum = 0, sumsq = 0;
        int64_t nan = 0, inf = 0, hist[GD_FINGERPRINT_HIST_BINS] = {0};
        for (int64_t i = 0; i < n; i++) {
            double x = v[i];
            if (isnan(x)) {
                nan++;
                continue;
            }
            if (isinf(x)) {
                inf++;
                continue;
            }
            if (x < lo || (x == 0 && lo == 0 && signbit(x)))
                lo = x;
            if (x > hi || (x == 0 && hi == 0 && !signbit(x)))
                hi = x;
            sum += x;
            sumsq += (long double)x * x;
            hist[bin_frexp(x)]++;
        }
        ck_assert_int_eq(fp.count, n);
        ck_assert_int_eq(fp.nan_count, nan);
        ck_assert_int_eq(fp.inf_count, inf);
        ck_assert_msg(fp.min == lo && signbit(fp.min) == signbit(lo), "n %lld min %g want %g",
                      (long long)n, fp.min, lo);
        ck_assert_msg(fp.max == hi && signbit(fp.max) == signbit(hi), "n %lld max %g want %g",
                      (long long)n, fp.max, hi);
        for (int b = 0; b < GD_FINGERPRINT_HIST_BINS; b++)
            ck_assert_msg(fp.hist[b] == hist[b], "n %lld bin %d: %lld, want %lld", (long long)n,
                          b, (long long)fp.hist[b], (long long)hist[b]);
        double bound = gd_fingerprint_sum_error(&fp);
        ck_assert_msg(fabsl((long double)fp.sum - sum) <= bound, "sum %.17g off %Lg > %g",
                      fp.sum, fabsl((long double)fp.sum - sum), bound);
        ck_assert_msg(fabsl((long double)fp.sumsq - sumsq) <= bound / sqrt((double)n) *
                                                                   sqrt(fp.sumsq) + 1e-300,
                      "sumsq %.17g off %Lg", fp.sumsq, fabsl((long double)fp.sumsq - sumsq));
        gd_tensor_free(t);
    }
}
END_TEST

/* The sums joined level by level (pairs from the left, an odd last node carried up), as the
 * CUDA kernels join them: the same additions as the CPU's stack, so the same bits. */
START_TEST(test_tree_order)
{
    static const int64_t sizes[] = {256 * 3, 256 * 5 + 7, 256 * 128, 256 * 129 + 1, 256 * 1000};
    for (size_t z = 0; z < sizeof sizes / sizeof sizes[0]; z++) {
        int64_t n = sizes[z];
        int64_t shape[1] = {n};
        struct gd_tensor *t = gd_tensor_new(GD_F32, 1, shape, NULL);
        float *v = t->data;
        for (int64_t i = 0; i < n; i++)
            v[i] = (float)((uniform() - 0.3) * ldexp(1, (int)(uniform() * 40) - 20));
        int64_t chunks = (n + 255) / 256;
        double *s = malloc((size_t)chunks * sizeof *s);
        for (int64_t c = 0; c < chunks; c++) {
            double acc = 0;
            for (int64_t i = c * 256; i < n && i < (c + 1) * 256; i++)
                acc += (double)v[i];
            s[c] = acc;
        }
        for (int64_t m = chunks; m > 1;) {
            int64_t k = 0;
            for (int64_t i = 0; i + 1 < m; i += 2)
                s[k++] = s[i] + s[i + 1];
            if (m & 1)
                s[k++] = s[m - 1];
            m = k;
        }
        static struct gd_fingerprint fp;
        ck_assert_int_eq(gd_fingerprint_compute(t, &fp, NULL), 0);
        ck_assert_msg(fp.sum == s[0], "n %lld: sum %.17g, level order %.17g", (long long)n,
                      fp.sum, s[0]);
        free(s);
        gd_tensor_free(t);
    }
}
END_TEST

START_TEST(test_f16_bf16_f64)
{
    /* float16: every bit pattern once; the stats against the widened float32 values */
    int64_t shape[1] = {65536};
    struct gd_tensor *h = gd_tensor_new(GD_F16, 1, shape, NULL);
    struct gd_tensor *b = gd_tensor_new(GD_BF16, 1, shape, NULL);
    for (int i = 0; i < 65536; i++) {
        ((uint16_t *)h->data)[i] = (uint16_t)i;
        ((uint16_t *)b->data)[i] = (uint16_t)i;
    }
    static struct gd_fingerprint fh, fb;
    ck_assert_int_eq(gd_fingerprint_compute(h, &fh, NULL), 0);
    ck_assert_int_eq(gd_fingerprint_compute(b, &fb, NULL), 0);
    /* float16: 2 x 1023 NaN payloads, 2 infinities, largest finite 65504 */
    ck_assert_int_eq(fh.nan_count, 2046);
    ck_assert_int_eq(fh.inf_count, 2);
    ck_assert(fh.max == 65504.0 && fh.min == -65504.0);
    /* smallest subnormal 2^-24 in the bin of e = -24, zeros of both signs in bin 0 */
    ck_assert_int_eq(fh.hist[0], 2);
    int64_t sub24 = 0;
    for (int i = 0; i < 65536; i++) {
        double x = gd_tensor_get_f64(h, i);
        if (isfinite(x) && x != 0 && bin_frexp(x) == 2 + (-24) + 48)
            sub24++;
    }
    ck_assert_int_eq(fh.hist[2 + (-24) + 48], sub24);
    ck_assert_int_eq(sub24, 2); /* +-2^-24 */
    /* bfloat16: float32's exponent range, 2 x 127 NaNs */
    ck_assert_int_eq(fb.nan_count, 254);
    ck_assert_int_eq(fb.inf_count, 2);
    ck_assert(fb.max == 0x1.fep127 && fb.min == -0x1.fep127);
    gd_tensor_free(h);
    gd_tensor_free(b);

    int64_t s2[2] = {7, 11};
    struct gd_tensor *d = gd_tensor_new(GD_F64, 2, s2, NULL);
    double *dv = d->data;
    for (int i = 0; i < 77; i++)
        dv[i] = ldexp(uniform() - 0.5, i - 40);
    dv[3] = 1e-300; /* below 2^-48: bin 1 */
    static struct gd_fingerprint fd;
    ck_assert_int_eq(gd_fingerprint_compute(d, &fd, NULL), 0);
    ck_assert_int_eq(fd.hist[1] >= 1, 1);
    double lo = INFINITY, hi = -INFINITY;
    for (int i = 0; i < 77; i++) {
        lo = fmin(lo, dv[i]);
        hi = fmax(hi, dv[i]);
    }
    ck_assert(fd.min == lo && fd.max == hi);
    gd_tensor_free(d);
}
END_TEST

START_TEST(test_sample)
{
    /* small: every element, in order */
    int64_t small[2] = {10, 20};
    for (int64_t k = 0; k < 200; k++)
        ck_assert_int_eq(gd_fingerprint_sample_index(2, small, k), k);
    /* large: one index per stratum [floor(k n / S), floor((k + 1) n / S)), increasing */
    int64_t shapes[3][3] = {{3, 1000, 777}, {1, 1, 2049}, {5, 4096, 4099}};
    for (int s = 0; s < 3; s++) {
        int64_t n = shapes[s][0] * shapes[s][1] * shapes[s][2];
        int64_t prev = -1;
        for (int64_t k = 0; k < GD_FINGERPRINT_SAMPLES; k++) {
            int64_t i = gd_fingerprint_sample_index(3, shapes[s], k);
            long double lo = floorl((long double)k * n / GD_FINGERPRINT_SAMPLES);
            long double hi = floorl((long double)(k + 1) * n / GD_FINGERPRINT_SAMPLES);
            ck_assert_msg(i >= lo && i < hi && i > prev, "shape %d sample %lld at %lld", s,
                          (long long)k, (long long)i);
            prev = i;
        }
    }
    /* the shape, not only the count, decides: 3x1000x777 and 1000x3x777 sample apart */
    int64_t other[3] = {1000, 3, 777};
    int same = 0;
    for (int64_t k = 0; k < GD_FINGERPRINT_SAMPLES; k++)
        same += gd_fingerprint_sample_index(3, shapes[0], k) ==
                gd_fingerprint_sample_index(3, other, k);
    ck_assert_int_lt(same, GD_FINGERPRINT_SAMPLES / 2);
    /* the values are the tensor's at those indices */
    struct gd_tensor *t = wild_f32(3 * 4096);
    static struct gd_fingerprint fp;
    ck_assert_int_eq(gd_fingerprint_compute(t, &fp, NULL), 0);
    ck_assert_int_eq(fp.n_samples, GD_FINGERPRINT_SAMPLES);
    for (int64_t k = 0; k < fp.n_samples; k++) {
        int64_t i = gd_fingerprint_sample_index(t->ndim, t->shape, k);
        double want = gd_tensor_get_f64(t, i), got = gd_fingerprint_sample(&fp, k);
        ck_assert(memcmp(&want, &got, sizeof got) == 0 || (isnan(want) && isnan(got)));
    }
    gd_tensor_free(t);
}
END_TEST

START_TEST(test_json_round_trip)
{
    struct gd_tensor *t = wild_f32(3 * 1000);
    static struct gd_fingerprint fp, back;
    ck_assert_int_eq(gd_fingerprint_compute(t, &fp, NULL), 0);
    json_t *j = gd_fingerprint_to_json(&fp);
    char *text = json_dumps(j, JSON_COMPACT);
    json_t *j2 = json_loads(text, 0, NULL);
    struct gd_err err = {0};
    ck_assert_msg(gd_fingerprint_from_json(j2, t->dtype, t->ndim, t->shape, &back, &err) == 0,
                  "%s", err.msg);
    ck_assert(gd_fingerprint_same_hash(&fp, &back));
    ck_assert(back.sum == fp.sum && back.sumsq == fp.sumsq && back.min == fp.min &&
              back.max == fp.max && back.nan_count == fp.nan_count);
    ck_assert(memcmp(back.hist, fp.hist, sizeof fp.hist) == 0);
    ck_assert(memcmp(back.samples, fp.samples, (size_t)fp.n_samples * 4) == 0);
    /* a wrong shape, a cut sample and a bad hash are refused */
    int64_t wrong[1] = {2999};
    ck_assert_int_eq(gd_fingerprint_from_json(j2, t->dtype, 1, wrong, &back, NULL), GD_EFORMAT);
    json_object_set_new(json_object_get(j2, "samples"), "data", json_string("AAAA"));
    ck_assert_int_eq(gd_fingerprint_from_json(j2, t->dtype, t->ndim, t->shape, &back, NULL),
                     GD_EFORMAT);
    json_object_set_new(j2, "blake3", json_string("zz"));
    ck_assert_int_eq(gd_fingerprint_from_json(j2, t->dtype, t->ndim, t->shape, &back, NULL),
                     GD_EFORMAT);
    free(text);
    json_decref(j);
    json_decref(j2);
    gd_tensor_free(t);
}
END_TEST

int
main(void)
{
    Suite *s = suite_create("fingerprint");
    TCase *tc = tcase_create("fingerprint");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_hash_vectors);
    tcase_add_test(tc, test_stats_f32);
    tcase_add_test(tc, test_tree_order);
    tcase_add_test(tc, test_f16_bf16_f64);
    tcase_add_test(tc, test_sample);
    tcase_add_test(tc, test_json_round_trip);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
