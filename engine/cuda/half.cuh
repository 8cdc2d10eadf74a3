/*
 * half.cuh: float16 and bfloat16 storage in the CUDA kernels. A kernel templated on its
 * storage type T (float, __half or __nv_bfloat16) loads every element as float32 (exact) with
 * gd__ld, computes in float32, and stores with gd__st, which rounds to nearest even once
 * (float16: overflow to infinity, subnormals kept), as the CPU's gd_f32_to_f16 and
 * gd_f32_to_bf16 do. GD_CUDA_FLOAT_CASES runs a templated launcher for a float dtype.
 */
#ifndef GPUDIFF_HALF_CUH
#define GPUDIFF_HALF_CUH

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <stdint.h>

#include "gpudiff/tensor.h"

static __device__ __forceinline__ float
gd__ld(const float *p, int64_t i)
{
    return p[i];
}

static __device__ __forceinline__ float
gd__ld(const __half *p, int64_t i)
{
    return __half2float(p[i]);
}

static __device__ __forceinline__ float
gd__ld(const __nv_bfloat16 *p, int64_t i)
{
    return __bfloat162float(p[i]);
}

static __device__ __forceinline__ void
gd__st(float *p, int64_t i, float v)
{
    p[i] = v;
}

static __device__ __forceinline__ void
gd__st(__half *p, int64_t i, float v)
{
    p[i] = __float2half_rn(v);
}

static __device__ __forceinline__ void
gd__st(__nv_bfloat16 *p, int64_t i, float v)
{
    p[i] = __float2bfloat16_rn(v);
}

/* Bool outputs (comparisons): a byte, 0 or 1. */
static __device__ __forceinline__ void
gd__st(uint8_t *p, int64_t i, uint8_t v)
{
    p[i] = v;
}

/* 16 bytes of elements of T (4 float32, 8 float16 or bfloat16) that move as one load or
 * store where the address is 16-byte aligned. */
template <class T>
struct __align__(16) gd__vec16 {
    T e[16 / sizeof(T)];
};
#define GD_VEC16_LEN(T) ((int)(16 / sizeof(T)))

/* 1 for the dtypes a templated kernel stores: float32, float16, bfloat16. */
static inline int
gd__cuda_stored_float(enum gd_dtype dt)
{
    return dt == GD_F32 || dt == GD_F16 || dt == GD_BF16;
}

/* Evaluates CALL with T the storage type of dtype DT (float32, float16 or bfloat16). */
#define GD_CUDA_FLOAT_CASES(DT, CALL)                                                          \
    ((DT) == GD_F16    ? ([&] { typedef __half T; return CALL; })()                            \
     : (DT) == GD_BF16 ? ([&] { typedef __nv_bfloat16 T; return CALL; })()                     \
                       : ([&] { typedef float T; return CALL; })())

#endif
