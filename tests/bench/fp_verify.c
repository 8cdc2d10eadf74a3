/*
 * fp_verify.c: checks that the fingerprints a bundle records agree bit for bit with those
 * the host computes from the bundle's own tensor files (gd_fingerprint_compute). Run on a
 * bundle captured with `--backend cuda --capture full`, it checks the CUDA fingerprint
 * kernels (engine/cuda/fingerprint.cu) against the host definitions on real layers.
 *
 * usage: fp_verify BUNDLE_DIR
 * Prints one line per mismatching layer (the first field that differs), then
 * "fp_verify: N layers checked, M mismatches, K without both"; exit 0 only when every layer
 * with a tensor and a fingerprint agrees and at least one was checked.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpudiff/bundle.h"
#include "gpudiff/fingerprint.h"
#include "gpudiff/tensor.h"

static int
same_double(double a, double b)
{
    if (isnan(a) && isnan(b))
        return 1;
    return memcmp(&a, &b, sizeof a) == 0;
}

/* The first field where a and b differ, or NULL. */
static const char *
first_difference(const struct gd_fingerprint *a, const struct gd_fingerprint *b)
{
    if (a->count != b->count)
        return "count";
    if (memcmp(a->hash, b->hash, sizeof a->hash) != 0)
        return "hash";
    if (a->has_stats != b->has_stats)
        return "has_stats";
    if (a->has_stats) {
        if (!same_double(a->min, b->min))
            return "min";
        if (!same_double(a->max, b->max))
            return "max";
        if (!same_double(a->sum, b->sum))
            return "sum";
        if (!same_double(a->sumsq, b->sumsq))
            return "sumsq";
        if (a->nan_count != b->nan_count)
            return "nan";
        if (a->inf_count != b->inf_count)
            return "inf";
        if (memcmp(a->hist, b->hist, sizeof a->hist) != 0)
            return "hist";
    }
    if (a->n_samples != b->n_samples)
        return "n_samples";
    if (memcmp(a->samples, b->samples, (size_t)a->n_samples * gd_dtype_size(a->dtype)) != 0)
        return "samples";
    return NULL;
}

int
main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: fp_verify BUNDLE_DIR\n");
        return 2;
    }
    struct gd_err err = {0};
    struct gd_bundle *b = NULL;
    if (gd_bundle_open(argv[1], &b, &err) != 0) {
        fprintf(stderr, "fp_verify: %s: %s\n", argv[1], err.msg);
        return 2;
    }
    struct gd_fingerprint *host = malloc(sizeof *host);
    if (host == NULL) {
        gd_bundle_close(b);
        return 2;
    }
    int checked = 0, bad = 0, skipped = 0;
    for (int i = 0; i < b->n_layers; i++) {
        const struct gd_bundle_layer *l = &b->layers[i];
        if (l->fingerprint == NULL || l->file == NULL) {
            skipped++;
            continue;
        }
        struct gd_tensor *t = NULL;
        if (gd_bundle_layer_load(b, i, &t, &err) != 0 ||
            gd_fingerprint_compute(t, host, &err) != 0) {
            printf("layer %d %s: %s\n", i, l->name, err.msg);
            gd_tensor_free(t);
            bad++;
            continue;
        }
        const char *d = first_difference(host, l->fingerprint);
        if (d != NULL) {
            bad++;
            if (bad <= 10)
                printf("layer %d %s (%lld elements): %s differs (host sum %.17g, recorded "
                       "%.17g)\n",
                       i, l->name, (long long)host->count, d, host->sum, l->fingerprint->sum);
        }
        checked++;
        gd_tensor_free(t);
    }
    printf("fp_verify: %d layers checked, %d mismatches, %d without both\n", checked, bad,
           skipped);
    free(host);
    gd_bundle_close(b);
    return bad == 0 && checked > 0 ? 0 : 1;
}
