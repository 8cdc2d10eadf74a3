/* op_eltwise.cu: binary, variadic and comparison pointwise ops with numpy broadcasting on the
 * GPU, with the NaN rules of engine/cpu/op_eltwise.c; the binary ops and comparisons on
 * float32, float16 or bfloat16 storage (half.cuh), the variadic ones on float32; integer
 * data through the rules of engine/core/elt_rules.h, which the CPU shares. */
#include <stdint.h>

#include <type_traits>

#include "../core/elt_rules.h"
#include "half.cuh"
#include "kernels.cuh"

/*
 * Each output element is one IEEE operation on loaded values (powf aside), so nothing here
 * can be fused into an FMA and Add, Sub, Mul, Div (prec-div, the default) and PRelu round as
 * the CPU does.
 */

struct f_add {
    __device__ float operator()(float a, float b) const
    {
        return a + b;
    }
};
struct f_sub {
    __device__ float operator()(float a, float b) const
    {
        return a - b;
    }
};
struct f_mul {
    __device__ float operator()(float a, float b) const
    {
        return a * b;
    }
};
struct f_div {
    __device__ float operator()(float a, float b) const
    {
        return a / b;
    }
};
struct f_pow {
    __device__ float operator()(float a, float b) const
    {
        return powf(a, b);
    }
};
/* NaN propagates (numpy's maximum/minimum): a NaN a wins, and a NaN b wins by the comparison
 * failing. On a tie (including -0 against +0) b is taken, as on the CPU. */
struct f_max {
    __device__ float operator()(float a, float b) const
    {
        return isnan(a) || a > b ? a : b;
    }
};
struct f_min {
    __device__ float operator()(float a, float b) const
    {
        return isnan(a) || a < b ? a : b;
    }
};
struct f_prelu {
    __device__ float operator()(float a, float b) const
    {
        return a < 0.f ? b * a : a;
    }
};
/* Comparisons with NaN are false. The output is bool: one byte, 0 or 1. */
struct f_greater {
    __device__ uint8_t operator()(float a, float b) const
    {
        return a > b;
    }
};
struct f_less {
    __device__ uint8_t operator()(float a, float b) const
    {
        return a < b;
    }
};
struct f_equal {
    __device__ uint8_t operator()(float a, float b) const
    {
        return a == b;
    }
};
struct f_greater_eq {
    __device__ uint8_t operator()(float a, float b) const
    {
        return a >= b;
    }
};
struct f_less_eq {
    __device__ uint8_t operator()(float a, float b) const
    {
        return a <= b;
    }
};
/* Mod with fmod=1: C's fmod, exact (0 ulp in CUDA's table), as the CPU's fmodf. */
struct f_fmod {
    __device__ float operator()(float a, float b) const
    {
        return fmodf(a, b);
    }
};

/* ---- two inputs ---- */

/*
 * Inputs T (float32, float16 or bfloat16: half.cuh loads them as float32), output TO: T for
 * the arithmetic (rounded once on the store), a bool byte for the comparisons. Each output
 * element is the same one operation on the same two loaded values whichever kernel below
 * runs it, so they give the same bits.
 */

/* Inputs of the output's shape: no index arithmetic. With vec (arithmetic, every pointer
 * 16-byte aligned) the body moves in 16-byte vectors and the last elements one by one. */
template <class T, class TO, class F>
static __global__ void
binary_same_kernel(const T *a, const T *b, TO *y, int64_t n, int vec, F f)
{
    int64_t step = (int64_t)gridDim.x * blockDim.x;
    int64_t first = (int64_t)blockIdx.x * blockDim.x + threadIdx.x, head = 0;
    if constexpr (std::is_same<T, TO>::value) {
        const int V = GD_VEC16_LEN(T);
        if (vec) {
            int64_t nv = n / V;
            const gd__vec16<T> *av = (const gd__vec16<T> *)a, *bv = (const gd__vec16<T> *)b;
            gd__vec16<T> *yv = (gd__vec16<T> *)y;
            for (int64_t i = first; i < nv; i += step) {
                gd__vec16<T> u = av[i], v = bv[i], r;
#pragma unroll
                for (int k = 0; k < V; k++)
                    gd__st(r.e, k, f(gd__ld(u.e, k), gd__ld(v.e, k)));
                yv[i] = r;
            }
            head = nv * V;
        }
    }
    for (int64_t i = head + first; i < n; i += step)
        gd__st(y, i, f(gd__ld(a, i), gd__ld(b, i)));
}

static __device__ __forceinline__ void
walk_at(const gd__cuda_walk &w, int64_t i, int64_t *off)
{
    gd__cuda_walk_offsets(w, i, 2, off);
}

static __device__ __forceinline__ void
walk_at(const gd__cuda_walk &w, uint32_t i, uint32_t *off)
{
    gd__cuda_walk_offsets32(w, i, 2, off);
}

/* A broadcasting walk, one element per thread; I is int64_t, or uint32_t for a walk
 * gd__cuda_walk_fits32() accepts (a 64-bit division is a long sequence on the GPU). */
template <class T, class TO, class F, class I>
static __global__ void
binary_walk_kernel(const T *a, const T *b, TO *y, I n, gd__cuda_walk w, F f)
{
    I step = (I)gridDim.x * blockDim.x;
    for (I i = (I)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += step) {
        I off[2];
        walk_at(w, i, off);
        gd__st(y, i, f(gd__ld(a, off[0]), gd__ld(b, off[1])));
    }
}

/*
 * The same walk in 16-byte vectors of the output (binary_vec_ok says when): the innermost
 * axis's length is a multiple of a vector, and along it each input either steps by one
 * element (a_vec, b_vec: its vector is one aligned load) or stays (broadcast: one value for
 * the whole vector), as for a bias over rows or a scalar.
 */
template <class T, class F, class I>
static __global__ void
binary_vec_walk_kernel(const T *a, const T *b, T *y, I nv, gd__cuda_walk w, int a_vec, int b_vec,
                       F f)
{
    const int V = GD_VEC16_LEN(T);
    I step = (I)gridDim.x * blockDim.x;
    for (I j = (I)blockIdx.x * blockDim.x + threadIdx.x; j < nv; j += step) {
        I off[2];
        walk_at(w, j * (I)V, off);
        gd__vec16<T> u = {}, v = {}, r;
        float sa = 0.f, sb = 0.f;
        if (a_vec)
            u = *(const gd__vec16<T> *)(a + off[0]);
        else
            sa = gd__ld(a, off[0]);
        if (b_vec)
            v = *(const gd__vec16<T> *)(b + off[1]);
        else
            sb = gd__ld(b, off[1]);
#pragma unroll
        for (int k = 0; k < V; k++)
            gd__st(r.e, k, f(a_vec ? gd__ld(u.e, k) : sa, b_vec ? gd__ld(v.e, k) : sb));
        ((gd__vec16<T> *)y)[j] = r;
    }
}

/* With broadcasting an input has fewer elements than the output; with as many, its shape is
 * the output's (every axis is equal or 1, none of them 0 when the output is not empty). */
static int
same_shape(const struct gd_tensor *t, int64_t n)
{
    return gd_tensor_numel(t) == n;
}

/* Whether a coalesced walk over inputs at base[2] can go by vectors of `per` elements of
 * `es` bytes; vec[k] says which inputs load whole vectors. */
static int
binary_vec_ok(const gd__cuda_walk *w, const void *const *base, const void *y, int per,
              int *vec)
{
    int last = w->ndim - 1;
    if (w->ndim < 1 || w->shape[last] % per != 0 || (uintptr_t)y % 16 != 0)
        return 0;
    for (int k = 0; k < 2; k++) {
        int64_t inner = w->stride[k][last];
        if (inner != 0 && inner != 1)
            return 0;
        vec[k] = inner == 1;
        if (!vec[k])
            continue;
        if ((uintptr_t)base[k] % 16 != 0)
            return 0;
        for (int d = 0; d < last; d++)
            if (w->stride[k][d] % per != 0)
                return 0;
    }
    return 1;
}

template <class T, class TO, class F>
static int
binary_typed(struct gd_op_call *c, F f, struct gd_err *err)
{
    struct gd__cuda_ctx *ctx = gd__cuda_ctx_of(c);
    const struct gd_tensor *y = c->out[0];
    const T *a = (const T *)c->in[0]->data, *b = (const T *)c->in[1]->data;
    TO *out = (TO *)y->data;
    int64_t n = gd_tensor_numel(y);
    const int V = GD_VEC16_LEN(T);
    const int arith = std::is_same<T, TO>::value;
    const void *base[2] = {a, b};
    int vec[2] = {0, 0}, fits32 = 0, rc = 0;
    gd__cuda_walk w;
    if (n == 0)
        return 0;
    if (same_shape(c->in[0], n) && same_shape(c->in[1], n)) {
        int v16 = arith && (uintptr_t)a % 16 == 0 && (uintptr_t)b % 16 == 0 &&
                  (uintptr_t)out % 16 == 0;
        binary_same_kernel<<<gd__cuda_blocks(v16 ? (n + V - 1) / V : n), GD_CUDA_THREADS, 0,
                             ctx->compute>>>(a, b, out, n, v16, f);
        GD_CUDA_CHECK_LAUNCH();
        return 0;
    }
    w.ndim = y->ndim;
    for (int d = 0; d < y->ndim; d++)
        w.shape[d] = y->shape[d];
    gd__cuda_bcast_strides(c->in[0], y, w.stride[0]);
    gd__cuda_bcast_strides(c->in[1], y, w.stride[1]);
    gd__cuda_walk_coalesce(&w, 2);
    fits32 = gd__cuda_walk_fits32(&w, 2, n);
    if (arith && binary_vec_ok(&w, base, out, V, vec)) {
        if constexpr (std::is_same<T, TO>::value) {
            int64_t nv = n / V;
            if (fits32)
                binary_vec_walk_kernel<<<gd__cuda_blocks(nv), GD_CUDA_THREADS, 0,
                                         ctx->compute>>>(a, b, out, (uint32_t)nv, w, vec[0],
                                                         vec[1], f);
            else
                binary_vec_walk_kernel<<<gd__cuda_blocks(nv), GD_CUDA_THREADS, 0,
                                         ctx->compute>>>(a, b, out, nv, w, vec[0], vec[1], f);
        }
    } else if (fits32) {
        binary_walk_kernel<<<gd__cuda_blocks(n), GD_CUDA_THREADS, 0, ctx->compute>>>(
            a, b, out, (uint32_t)n, w, f);
    } else {
        binary_walk_kernel<<<gd__cuda_blocks(n), GD_CUDA_THREADS, 0, ctx->compute>>>(
            a, b, out, n, w, f);
    }
    GD_CUDA_CHECK_LAUNCH();
done:
    return rc;
}

/*
 * A float op of two inputs: both of one float dtype (float32, float16 or bfloat16), the
 * output that dtype (cmp 0) or bool (cmp 1). Float inputs of two dtypes (a model that mixes
 * them) run through engine/core/half_call.c's float32 copies, as before half kernels.
 */
template <class F>
static int
float_binary(struct gd_op_call *c, F f, int cmp, struct gd_err *err)
{
    enum gd_dtype dt = c->in[0]->dtype;
    if (c->in[1]->dtype != dt || (!cmp && c->out[0]->dtype != dt))
        return gd__cuda_half_fallback(c, err);
    if (cmp)
        return GD_CUDA_FLOAT_CASES(dt, (binary_typed<T, uint8_t>(c, f, err)));
    return GD_CUDA_FLOAT_CASES(dt, (binary_typed<T, T>(c, f, err)));
}

/* ---- integer (and bool) data: elt_rules.h element by element ---- */

static __global__ void
int_binary_kernel(const void *a, const void *b, void *y, int64_t n, gd__cuda_walk w,
                  enum gd_dtype dt, int op, int cmp)
{
    int uns = gd__dtype_unsigned(dt), bits = gd__dtype_bits(dt);
    int64_t step = (int64_t)gridDim.x * blockDim.x;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += step) {
        int64_t off[2];
        gd__cuda_walk_offsets(w, i, 2, off);
        int64_t va = gd__int_load(dt, a, off[0]), vb = gd__int_load(dt, b, off[1]);
        if (cmp)
            ((uint8_t *)y)[i] = (uint8_t)gd__int_compare(op, va, vb, uns);
        else
            gd__int_store(dt, y, i, gd__int_binary(op, va, vb, uns, bits));
    }
}

int
gd__cuda_int_binary(struct gd_op_call *c, const struct gd_tensor *a, const struct gd_tensor *b,
                    int op, int cmp, struct gd_err *err)
{
    struct gd__cuda_ctx *ctx = gd__cuda_ctx_of(c);
    const struct gd_tensor *y = c->out[0];
    int64_t n = gd_tensor_numel(y);
    gd__cuda_walk w;
    int rc = 0;
    if (n == 0)
        return 0;
    w.ndim = y->ndim;
    for (int d = 0; d < y->ndim; d++)
        w.shape[d] = y->shape[d];
    gd__cuda_bcast_strides(a, y, w.stride[0]);
    gd__cuda_bcast_strides(b, y, w.stride[1]);
    int_binary_kernel<<<gd__cuda_blocks(n), GD_CUDA_THREADS, 0, ctx->compute>>>(
        a->data, b->data, y->data, n, w, a->dtype, op, cmp);
    GD_CUDA_CHECK_LAUNCH();
done:
    return rc;
}

/* Integers: an op of elt_rules.h on both inputs; floats: f. */
template <class F>
static int
arith_launch(struct gd_op_call *c, F f, int int_op, struct gd_err *err)
{
    if (!gd__cuda_stored_float(c->in[0]->dtype))
        return gd__cuda_int_binary(c, c->in[0], c->in[1], int_op, 0, err);
    return float_binary(c, f, 0, err);
}

template <class F>
static int
compare_launch(struct gd_op_call *c, F f, int cmp_op, struct gd_err *err)
{
    if (!gd__cuda_stored_float(c->in[0]->dtype))
        return gd__cuda_int_binary(c, c->in[0], c->in[1], cmp_op, 1, err);
    return float_binary(c, f, 1, err);
}

/* ---- Max, Min, Sum, Mean: up to 8 inputs per pass ---- */

#define VARIADIC_MAX_INPUTS 8

/* The inputs and, per input, its element stride along each output axis (0 where it
 * broadcasts). Passed by value (about 650 bytes, inside the 4 KiB kernel parameter limit). */
struct variadic_args {
    int n_in;
    int ndim;
    int all_same; /* every input has the output's shape */
    int64_t shape[GD_MAX_DIMS];
    int64_t stride[VARIADIC_MAX_INPUTS][GD_MAX_DIMS];
    const float *in[VARIADIC_MAX_INPUTS];
};

/*
 * y = f(...f(f(in0, in1), in2)..., in_last): the CPU's left-to-right fold, so the NaN that
 * wins and the zero kept on a -0/+0 tie are the same. One input gives in0 itself, which is
 * what the CPU's f(in0, in0) gives too.
 */
template <class F>
static __global__ void
variadic_kernel(variadic_args args, float *y, int64_t n, F f, float divisor)
{
    int64_t step = (int64_t)gridDim.x * blockDim.x;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += step) {
        int64_t off[VARIADIC_MAX_INPUTS];
        if (args.all_same) {
            for (int k = 0; k < args.n_in; k++)
                off[k] = i;
        } else {
            for (int k = 0; k < args.n_in; k++)
                off[k] = 0;
            int64_t rest = i;
            for (int d = args.ndim - 1; d >= 0; d--) {
                int64_t idx = rest % args.shape[d];
                rest /= args.shape[d];
                for (int k = 0; k < args.n_in; k++)
                    off[k] += idx * args.stride[k][d];
            }
        }
        float acc = args.in[0][off[0]];
        for (int k = 1; k < args.n_in; k++)
            acc = f(acc, args.in[k][off[k]]);
        y[i] = divisor != 0.f ? __fdiv_rn(acc, divisor) : acc;
    }
}

/*
 * y = the left-to-right fold of inputs [first, first + count) (with y itself first when
 * `first` > 0: the fold so far), divided by `divisor` when it is not 0 (Mean).
 */
template <class F>
static int
variadic_pass(struct gd_op_call *c, int first, int count, F f, float divisor, struct gd_err *err)
{
    struct gd__cuda_ctx *ctx = gd__cuda_ctx_of(c);
    const struct gd_tensor *y = c->out[0];
    int64_t n = gd_tensor_numel(y);
    variadic_args args;
    int rc = 0;
    args.n_in = 0;
    args.ndim = y->ndim;
    args.all_same = 1;
    for (int d = 0; d < y->ndim; d++)
        args.shape[d] = y->shape[d];
    if (first > 0) { /* the fold so far, in y */
        args.in[0] = (const float *)y->data;
        gd__cuda_bcast_strides(y, y, args.stride[0]);
        args.n_in = 1;
    }
    for (int k = first; k < first + count; k++) {
        args.in[args.n_in] = (const float *)c->in[k]->data;
        args.all_same = args.all_same && same_shape(c->in[k], n);
        gd__cuda_bcast_strides(c->in[k], y, args.stride[args.n_in]);
        args.n_in++;
    }
    variadic_kernel<<<gd__cuda_blocks(n), GD_CUDA_THREADS, 0, ctx->compute>>>(
        args, (float *)y->data, n, f, divisor);
    GD_CUDA_CHECK_LAUNCH();
done:
    return rc;
}

/*
 * Folds every input left to right: the first 8 in one pass, then y and the next 7, and so
 * on. Each pass stores the fold as float, which is what the CPU's pairwise loop does after
 * every input, so the order and the roundings are the CPU's for any number of inputs.
 * Integer data (Max, Min) folds pair by pair through elt_rules.h.
 */
template <class F>
static int
variadic_launch(struct gd_op_call *c, F f, int int_op, int mean, struct gd_err *err)
{
    int64_t n = gd_tensor_numel(c->out[0]);
    int rc = 0;
    if (c->n_in < 1)
        return gd_err_set(err, GD_EINVAL, "%s needs an input", gd_op_name(c->node->op));
    if (n == 0)
        return 0;
    if (c->in[0]->dtype != GD_F32) {
        rc = gd__cuda_int_binary(c, c->in[0], c->n_in > 1 ? c->in[1] : c->in[0], int_op, 0, err);
        for (int k = 2; k < c->n_in && rc == 0; k++)
            rc = gd__cuda_int_binary(c, c->out[0], c->in[k], int_op, 0, err);
        return rc;
    }
    int first = 0;
    while (rc == 0 && first < c->n_in) {
        int room = first == 0 ? VARIADIC_MAX_INPUTS : VARIADIC_MAX_INPUTS - 1;
        int count = c->n_in - first < room ? c->n_in - first : room;
        int last = first + count == c->n_in;
        rc = variadic_pass(c, first, count, f, last && mean ? (float)c->n_in : 0.f, err);
        first += count;
    }
    return rc;
}

/* ---- entry points ---- */

extern "C" int
gd__cuda_add(struct gd_op_call *c, struct gd_err *err)
{
    return arith_launch(c, f_add{}, GD_IOP_ADD, err);
}

extern "C" int
gd__cuda_sub(struct gd_op_call *c, struct gd_err *err)
{
    return arith_launch(c, f_sub{}, GD_IOP_SUB, err);
}

extern "C" int
gd__cuda_mul(struct gd_op_call *c, struct gd_err *err)
{
    return arith_launch(c, f_mul{}, GD_IOP_MUL, err);
}

extern "C" int
gd__cuda_div(struct gd_op_call *c, struct gd_err *err)
{
    return arith_launch(c, f_div{}, GD_IOP_DIV, err);
}

extern "C" int
gd__cuda_mod(struct gd_op_call *c, struct gd_err *err)
{
    return arith_launch(c, f_fmod{}, c->params->fmod ? GD_IOP_FMOD : GD_IOP_MOD, err);
}

extern "C" int
gd__cuda_pow(struct gd_op_call *c, struct gd_err *err)
{
    return float_binary(c, f_pow{}, 0, err);
}

extern "C" int
gd__cuda_prelu(struct gd_op_call *c, struct gd_err *err)
{
    return float_binary(c, f_prelu{}, 0, err);
}

extern "C" int
gd__cuda_max(struct gd_op_call *c, struct gd_err *err)
{
    return variadic_launch(c, f_max{}, GD_IOP_MAX, 0, err);
}

extern "C" int
gd__cuda_min(struct gd_op_call *c, struct gd_err *err)
{
    return variadic_launch(c, f_min{}, GD_IOP_MIN, 0, err);
}

extern "C" int
gd__cuda_sum(struct gd_op_call *c, struct gd_err *err)
{
    return variadic_launch(c, f_add{}, GD_IOP_ADD, 0, err);
}

extern "C" int
gd__cuda_mean(struct gd_op_call *c, struct gd_err *err)
{
    return variadic_launch(c, f_add{}, GD_IOP_ADD, 1, err);
}

extern "C" int
gd__cuda_greater(struct gd_op_call *c, struct gd_err *err)
{
    return compare_launch(c, f_greater{}, GD_CMP_GREATER, err);
}

extern "C" int
gd__cuda_less(struct gd_op_call *c, struct gd_err *err)
{
    return compare_launch(c, f_less{}, GD_CMP_LESS, err);
}

extern "C" int
gd__cuda_equal(struct gd_op_call *c, struct gd_err *err)
{
    return compare_launch(c, f_equal{}, GD_CMP_EQUAL, err);
}

extern "C" int
gd__cuda_greater_or_equal(struct gd_op_call *c, struct gd_err *err)
{
    return compare_launch(c, f_greater_eq{}, GD_CMP_GREATER_EQ, err);
}

extern "C" int
gd__cuda_less_or_equal(struct gd_op_call *c, struct gd_err *err)
{
    return compare_launch(c, f_less_eq{}, GD_CMP_LESS_EQ, err);
}
