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
#include "fp_same.h"

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
        const char *d = fp_first_difference(host, l->fingerprint);
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
