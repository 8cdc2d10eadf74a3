/*
 * fingerprint.h (engine/cuda): the fingerprint kernels' entry points and the raw result
 * they leave in device memory, which capture_fp.c copies to the host and turns into a
 * struct gd_fingerprint. Plain C, shared by the kernels (fingerprint.cu) and the backend.
 */
#ifndef GPUDIFF_CUDA_FINGERPRINT_H
#define GPUDIFF_CUDA_FINGERPRINT_H

#include <stddef.h>
#include <stdint.h>

#include <cuda_runtime_api.h>

#include "gpudiff/error.h"
#include "../core/fp_rules.h"

#ifdef __cplusplus
extern "C" {
#endif

/* What the kernels write for one tensor. Keys order as fp_rules.h's gd__fp_key32/64. */
struct gd__fp_raw {
    uint32_t hash[8];                      /* BLAKE3, as little-endian words */
    double sum, sumsq;
    uint32_t min32, max32;                 /* float32, float16, bfloat16 */
    unsigned long long min64, max64;       /* float64 */
    unsigned long long nan_count, inf_count;
    unsigned long long hist[GD_FP_HIST_BINS];
    unsigned char samples[GD_FP_SAMPLES * 8];
};

/* The element kinds the kernels know; integers and bool are hashed and sampled only. */
enum gd__fp_kind { GD__FP_BYTES = 0, GD__FP_F32, GD__FP_F16, GD__FP_BF16, GD__FP_F64 };

/* Device scratch (bytes) gd__cuda_fp_launch needs for a tensor of nbytes. */
size_t gd__cuda_fp_scratch_size(size_t nbytes);

/*
 * Enqueues on stream the kernels that fingerprint nbytes (> 0) of device data of element
 * size esize into *raw (device memory), with the sample of a tensor of that shape. scratch
 * holds gd__cuda_fp_scratch_size(nbytes) bytes. Returns 0 or GD_EDEVICE (launch failed).
 */
int gd__cuda_fp_launch(const void *data, size_t nbytes, enum gd__fp_kind kind, int esize,
                       int ndim, const int64_t *shape, struct gd__fp_raw *raw, void *scratch,
                       cudaStream_t stream, struct gd_err *err);

#ifdef __cplusplus
}
#endif
#endif
