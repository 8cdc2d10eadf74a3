/*
 * fingerprint.c: layer fingerprints on the host (the CPU backends, the bundle writer for
 * layers that arrive in slices, the daemon checking an upload), their run.json form, and
 * BLAKE3 over bytes that arrive in pieces. The definitions are fp_rules.h's, which the CUDA
 * kernels (engine/cuda/fingerprint.cu) follow too; this file walks the same tree with a
 * stack (BLAKE3's own incremental order), which joins the same pairs in the same order.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "gpudiff/fingerprint.h"
#include "fp_rules.h"
#include "internal.h"

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "fingerprints read tensors as little-endian bytes: a little-endian host is needed"
#endif

_Static_assert(GD_FINGERPRINT_SAMPLES == GD_FP_SAMPLES, "one sample count");
_Static_assert(GD_FINGERPRINT_HIST_BINS == GD_FP_HIST_BINS, "one histogram");
_Static_assert(GD_FINGERPRINT_HIST_EXP_MIN == GD_FP_HIST_EXP_MIN, "one histogram");

/* Little-endian words of one block; a short block is padded with zeros. */
static void
load_block(uint32_t m[16], const unsigned char *p, size_t len)
{
    unsigned char b[64] = {0};
    memcpy(b, p, len);
    for (int i = 0; i < 16; i++)
        m[i] = (uint32_t)b[4 * i] | (uint32_t)b[4 * i + 1] << 8 | (uint32_t)b[4 * i + 2] << 16 |
               (uint32_t)b[4 * i + 3] << 24;
}

/* The chaining value of one chunk of len (1 to 1024, or 0 for an empty input) bytes. */
static void
chunk_cv(uint32_t cv[8], const unsigned char *p, size_t len, uint64_t chunk, int root)
{
    int n_blocks = len == 0 ? 1 : (int)((len + GD__B3_BLOCK - 1) / GD__B3_BLOCK);
    gd__b3_iv(cv);
    for (int blk = 0; blk < n_blocks; blk++) {
        size_t off = (size_t)blk * GD__B3_BLOCK;
        size_t bl = len - off < GD__B3_BLOCK ? len - off : GD__B3_BLOCK;
        uint32_t m[16];
        load_block(m, p + off, bl);
        gd__b3_compress(cv, m, chunk, (uint32_t)bl, gd__b3_block_flags(blk, n_blocks, root));
    }
}

static void
words_to_bytes(const uint32_t w[8], unsigned char out[32])
{
    for (int i = 0; i < 8; i++) {
        out[4 * i] = (unsigned char)w[i];
        out[4 * i + 1] = (unsigned char)(w[i] >> 8);
        out[4 * i + 2] = (unsigned char)(w[i] >> 16);
        out[4 * i + 3] = (unsigned char)(w[i] >> 24);
    }
}

/* ---- the statistics of one chunk ---- */

struct chunk_stats {
    double sum, sumsq;
};

struct run_stats {
    uint64_t min_key, max_key;      /* keys of doubles; min_key UINT64_MAX when none */
    int64_t nan_count, inf_count;
    int64_t hist[GD_FP_HIST_BINS];
};

/* A 32-bit float (float16 and bfloat16 widened) into the chunk's and the run's stats. The
 * sums are float64 additions of float64 values whose squares are exact, so no fused
 * multiply-add can change them. */
static inline void
add_bits32(uint32_t bits, struct chunk_stats *c, struct run_stats *r, uint32_t *lo, uint32_t *hi)
{
    if ((bits & 0x7f800000u) == 0x7f800000u) {
        if (bits & 0x007fffffu)
            r->nan_count++;
        else
            r->inf_count++;
        return;
    }
    uint32_t k = gd__fp_key32(bits);
    *lo = k < *lo ? k : *lo;
    *hi = k > *hi ? k : *hi;
    r->hist[gd__fp_bin32(bits)]++;
    float f;
    memcpy(&f, &bits, 4);
    double d = f;
    c->sum += d;
    c->sumsq += d * d;
}

#if defined(__GNUC__) && !defined(__clang__)
__attribute__((optimize("fp-contract=off"))) /* x * x + s rounds twice, as on the GPU */
#endif
static void
add_f64(const double *v, int64_t n, struct chunk_stats *c, struct run_stats *r)
{
    for (int64_t i = 0; i < n; i++) {
        uint64_t bits;
        memcpy(&bits, &v[i], 8);
        if ((bits & 0x7ff0000000000000ull) == 0x7ff0000000000000ull) {
            if (bits & 0x000fffffffffffffull)
                r->nan_count++;
            else
                r->inf_count++;
            continue;
        }
        uint64_t k = gd__fp_key64(bits);
        r->min_key = k < r->min_key ? k : r->min_key;
        r->max_key = k > r->max_key ? k : r->max_key;
        r->hist[gd__fp_bin64(bits)]++;
        double sq = v[i] * v[i];
        c->sum += v[i];
        c->sumsq += sq;
    }
}

static uint64_t
key32_to_key64(uint32_t k)
{
    uint32_t bits = gd__fp_unkey32(k);
    float f;
    memcpy(&f, &bits, 4);
    double d = f;
    uint64_t b64;
    memcpy(&b64, &d, 8);
    return gd__fp_key64(b64);
}

/* The chunk's elements (whole: 1024 is a multiple of every element size) into c and r. */
static void
chunk_stats(enum gd_dtype dt, const unsigned char *p, size_t len, struct chunk_stats *c,
            struct run_stats *r)
{
    c->sum = c->sumsq = 0;
    if (dt == GD_F64) {
        double v[GD__B3_CHUNK / 8];
        memcpy(v, p, len);
        add_f64(v, (int64_t)(len / 8), c, r);
        return;
    }
    uint32_t lo = UINT32_MAX, hi = 0;
    if (dt == GD_F32) {
        for (size_t i = 0; i < len; i += 4) {
            uint32_t b;
            memcpy(&b, p + i, 4);
            add_bits32(b, c, r, &lo, &hi);
        }
    } else {
        for (size_t i = 0; i < len; i += 2) {
            uint16_t h;
            memcpy(&h, p + i, 2);
            add_bits32(dt == GD_F16 ? gd__fp_f16_bits32(h) : gd__fp_bf16_bits32(h), c, r, &lo,
                       &hi);
        }
    }
    if (lo != UINT32_MAX) {
        uint64_t klo = key32_to_key64(lo), khi = key32_to_key64(hi);
        r->min_key = klo < r->min_key ? klo : r->min_key;
        r->max_key = khi > r->max_key ? khi : r->max_key;
    }
}

static double
key64_value(uint64_t key)
{
    uint64_t bits = gd__fp_unkey64(key);
    double d;
    memcpy(&d, &bits, 8);
    return d;
}

/* ---- the tree, as BLAKE3's stack of full subtrees ---- */

struct node {
    uint32_t cv[8];
    double sum, sumsq;
};

static void
join(struct node *out, const struct node *l, const struct node *r, int root)
{
    uint32_t cv[8];
    gd__b3_parent(cv, l->cv, r->cv, root);
    memcpy(out->cv, cv, sizeof cv);
    out->sum = l->sum + r->sum;
    out->sumsq = l->sumsq + r->sumsq;
}

int
gd_fingerprint_compute(const struct gd_tensor *t, struct gd_fingerprint *out,
                       struct gd_err *err)
{
    int64_t n = gd_tensor_numel(t);
    size_t esize = gd_dtype_size(t->dtype);
    size_t nbytes = (size_t)n * esize;
    if (t->data == NULL && nbytes > 0)
        return gd_err_set(err, GD_EINVAL, "fingerprint of a tensor without data");
    struct gd_fingerprint *fp = calloc(1, sizeof *fp);
    if (fp == NULL)
        return gd_err_set(err, GD_ENOMEM, "out of memory");
    fp->dtype = t->dtype;
    fp->ndim = t->ndim;
    memcpy(fp->shape, t->shape, sizeof fp->shape);
    fp->count = n;
    int floats = t->dtype == GD_F32 || t->dtype == GD_F64 || t->dtype == GD_F16 ||
                 t->dtype == GD_BF16;
    fp->has_stats = floats;

    const unsigned char *p = t->data;
    uint64_t n_chunks = nbytes == 0 ? 1 : (nbytes + GD__B3_CHUNK - 1) / GD__B3_CHUNK;
    struct node stack[64];
    int depth = 0;
    struct run_stats rs = {.min_key = UINT64_MAX};
    for (uint64_t c = 0; c < n_chunks; c++) {
        size_t off = (size_t)c * GD__B3_CHUNK;
        size_t len = nbytes - off < GD__B3_CHUNK ? nbytes - off : GD__B3_CHUNK;
        struct node nd;
        chunk_cv(nd.cv, p + off, len, c, n_chunks == 1);
        struct chunk_stats cs = {0, 0};
        if (floats && len > 0)
            chunk_stats(t->dtype, p + off, len, &cs, &rs);
        nd.sum = cs.sum;
        nd.sumsq = cs.sumsq;
        if (c + 1 == n_chunks) {
            /* the last chunk joins every subtree on the stack, the root last */
            for (int i = depth - 1; i >= 0; i--)
                join(&nd, &stack[i], &nd, i == 0);
            words_to_bytes(nd.cv, fp->hash);
            fp->sum = nd.sum;
            fp->sumsq = nd.sumsq;
            break;
        }
        /* full subtrees of 2^k chunks merge as soon as they are complete */
        for (uint64_t total = c + 1; (total & 1) == 0; total >>= 1)
            join(&nd, &stack[--depth], &nd, 0);
        stack[depth++] = nd;
    }
    if (floats) {
        fp->nan_count = rs.nan_count;
        fp->inf_count = rs.inf_count;
        memcpy(fp->hist, rs.hist, sizeof fp->hist);
        fp->min = rs.min_key == UINT64_MAX ? NAN : key64_value(rs.min_key);
        fp->max = rs.min_key == UINT64_MAX ? NAN : key64_value(rs.max_key);
    } else {
        fp->min = fp->max = NAN;
    }
    fp->n_samples = gd__fp_sample_count(n);
    uint64_t seed = gd__fp_seed(t->ndim, t->shape);
    for (int64_t k = 0; k < fp->n_samples; k++)
        memcpy(fp->samples + (size_t)k * esize,
               p + (size_t)gd__fp_sample_index(seed, n, k) * esize, esize);
    memcpy(out, fp, sizeof *fp);
    free(fp);
    return 0;
}

int64_t
gd_fingerprint_sample_index(int ndim, const int64_t *shape, int64_t k)
{
    int64_t n = 1;
    for (int i = 0; i < ndim; i++)
        n *= shape[i];
    return gd__fp_sample_index(gd__fp_seed(ndim, shape), n, k);
}

double
gd_fingerprint_sample(const struct gd_fingerprint *fp, int64_t k)
{
    size_t es = gd_dtype_size(fp->dtype);
    struct gd_tensor t = {.dtype = fp->dtype, .ndim = 1, .shape = {1},
                          .data = (void *)(fp->samples + (size_t)k * es)};
    return gd_tensor_get_f64(&t, 0);
}

static int64_t
finite_count(const struct gd_fingerprint *fp)
{
    return fp->count - fp->nan_count - fp->inf_count;
}

double
gd_fingerprint_mean(const struct gd_fingerprint *fp)
{
    int64_t n = finite_count(fp);
    return fp->has_stats && n > 0 ? fp->sum / (double)n : NAN;
}

double
gd_fingerprint_l2(const struct gd_fingerprint *fp)
{
    return fp->has_stats ? sqrt(fp->sumsq) : NAN;
}

double
gd_fingerprint_sum_error(const struct gd_fingerprint *fp)
{
    /* Each value passes through at most (elements per chunk) sequential additions and
     * ceil(log2 chunks) tree levels; every addition errs by at most 2^-53 of its result,
     * and sum |x| <= sqrt(n) |x|_2. */
    size_t es = gd_dtype_size(fp->dtype);
    uint64_t bytes = (uint64_t)fp->count * es;
    uint64_t chunks = bytes / GD__B3_CHUNK + 1;
    double levels = ceil(log2((double)chunks)) + 1;
    double depth = (double)(GD__B3_CHUNK / (es ? es : 1)) + levels;
    double n = (double)finite_count(fp);
    return 1.01 * depth * 0x1p-53 * sqrt(n) * sqrt(fp->sumsq);
}

int
gd_fingerprint_same_hash(const struct gd_fingerprint *a, const struct gd_fingerprint *b)
{
    if (a->dtype != b->dtype || a->ndim != b->ndim || a->count != b->count)
        return 0;
    for (int i = 0; i < a->ndim; i++)
        if (a->shape[i] != b->shape[i])
            return 0;
    return memcmp(a->hash, b->hash, sizeof a->hash) == 0;
}

void
gd_fingerprint_hash_hex(const struct gd_fingerprint *fp, char hex[GD_FINGERPRINT_HASH_HEX_LEN + 1])
{
    static const char digits[] = "0123456789abcdef";
    for (int i = 0; i < 32; i++) {
        hex[2 * i] = digits[fp->hash[i] >> 4];
        hex[2 * i + 1] = digits[fp->hash[i] & 15];
    }
    hex[64] = '\0';
}

/* ---- run.json form ---- */

static const char b64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

static char *
base64_encode(const unsigned char *p, size_t n)
{
    char *out = malloc((n + 2) / 3 * 4 + 1), *o = out;
    if (out == NULL)
        return NULL;
    for (size_t i = 0; i < n; i += 3) {
        uint32_t v = (uint32_t)p[i] << 16 | (i + 1 < n ? (uint32_t)p[i + 1] << 8 : 0) |
                     (i + 2 < n ? p[i + 2] : 0);
        *o++ = b64[v >> 18];
        *o++ = b64[(v >> 12) & 63];
        *o++ = i + 1 < n ? b64[(v >> 6) & 63] : '=';
        *o++ = i + 2 < n ? b64[v & 63] : '=';
    }
    *o = '\0';
    return out;
}

/* Decodes exactly `want` bytes; -1 for anything else. */
static int
base64_decode(const char *s, unsigned char *out, size_t want)
{
    size_t len = strlen(s);
    if (len != (want + 2) / 3 * 4)
        return -1;
    size_t got = 0;
    for (size_t i = 0; i < len; i += 4) {
        uint32_t v = 0;
        int pad = 0;
        for (int j = 0; j < 4; j++) {
            char ch = s[i + j];
            const char *at = ch ? strchr(b64, ch) : NULL;
            if (ch == '=' && i + 4 == len && j >= 2) {
                pad++;
                v <<= 6;
                continue;
            }
            if (at == NULL || pad > 0)
                return -1;
            v = v << 6 | (uint32_t)(at - b64);
        }
        unsigned char b[3] = {(unsigned char)(v >> 16), (unsigned char)(v >> 8), (unsigned char)v};
        for (int j = 0; j < 3 - pad; j++) {
            if (got == want)
                return -1;
            out[got++] = b[j];
        }
    }
    return got == want ? 0 : -1;
}

static json_t *
real_or_null(double v)
{
    return isfinite(v) ? json_real(v) : json_null();
}

json_t *
gd_fingerprint_to_json(const struct gd_fingerprint *fp)
{
    char hex[GD_FINGERPRINT_HASH_HEX_LEN + 1];
    gd_fingerprint_hash_hex(fp, hex);
    json_t *j = json_object();
    json_object_set_new(j, "blake3", json_string(hex));
    json_object_set_new(j, "count", json_integer(fp->count));
    if (fp->has_stats) {
        json_object_set_new(j, "min", real_or_null(fp->min));
        json_object_set_new(j, "max", real_or_null(fp->max));
        json_object_set_new(j, "mean", real_or_null(gd_fingerprint_mean(fp)));
        json_object_set_new(j, "l2", real_or_null(gd_fingerprint_l2(fp)));
        json_object_set_new(j, "sum", json_real(fp->sum));
        json_object_set_new(j, "sumsq", json_real(fp->sumsq));
        json_object_set_new(j, "nan", json_integer(fp->nan_count));
        json_object_set_new(j, "inf", json_integer(fp->inf_count));
        json_t *h = json_array();
        for (int i = 0; i < GD_FP_HIST_BINS; i++)
            json_array_append_new(h, json_integer(fp->hist[i]));
        json_object_set_new(j, "hist", h);
    }
    char *data = base64_encode(fp->samples, (size_t)fp->n_samples * gd_dtype_size(fp->dtype));
    json_t *s = json_object();
    json_object_set_new(s, "count", json_integer(fp->n_samples));
    json_object_set_new(s, "data", json_string(data ? data : ""));
    free(data);
    json_object_set_new(j, "samples", s);
    return j;
}

static int
hex_nibble(char c)
{
    return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

static int
get_real(json_t *j, const char *key, double *out)
{
    json_t *v = json_object_get(j, key);
    if (json_is_null(v)) {
        *out = NAN;
        return 0;
    }
    if (!json_is_number(v))
        return -1;
    *out = json_number_value(v);
    return 0;
}

int
gd_fingerprint_from_json(json_t *j, enum gd_dtype dtype, int ndim, const int64_t *shape,
                         struct gd_fingerprint *out, struct gd_err *err)
{
    struct gd_fingerprint *fp = calloc(1, sizeof *fp);
    if (fp == NULL)
        return gd_err_set(err, GD_ENOMEM, "out of memory");
    int rc = 0;
    fp->dtype = dtype;
    fp->ndim = ndim;
    int64_t n = 1;
    for (int i = 0; i < ndim; i++) {
        fp->shape[i] = shape[i];
        n *= shape[i];
    }
    fp->count = n;
    const char *hex = json_string_value(json_object_get(j, "blake3"));
    if (!json_is_object(j) || hex == NULL || strlen(hex) != 64) {
        rc = gd_err_set(err, GD_EFORMAT, "a fingerprint needs blake3 (64 hex digits)");
        goto done;
    }
    for (int i = 0; i < 32; i++) {
        int hi = hex_nibble(hex[2 * i]), lo = hex_nibble(hex[2 * i + 1]);
        if (hi < 0 || lo < 0) {
            rc = gd_err_set(err, GD_EFORMAT, "fingerprint blake3 is not lowercase hex");
            goto done;
        }
        fp->hash[i] = (unsigned char)(hi << 4 | lo);
    }
    json_t *count = json_object_get(j, "count");
    if (!json_is_integer(count) || json_integer_value(count) != n) {
        rc = gd_err_set(err, GD_EFORMAT, "fingerprint count is not the shape's %lld elements",
                        (long long)n);
        goto done;
    }
    fp->has_stats = json_object_get(j, "hist") != NULL;
    fp->min = fp->max = NAN;
    if (fp->has_stats) {
        json_t *h = json_object_get(j, "hist");
        json_t *nan = json_object_get(j, "nan"), *inf = json_object_get(j, "inf");
        if (get_real(j, "min", &fp->min) || get_real(j, "max", &fp->max) ||
            get_real(j, "sum", &fp->sum) || get_real(j, "sumsq", &fp->sumsq) ||
            !json_is_integer(nan) || !json_is_integer(inf) || !json_is_array(h) ||
            json_array_size(h) != GD_FP_HIST_BINS) {
            rc = gd_err_set(err, GD_EFORMAT, "fingerprint statistics need min, max, sum, "
                            "sumsq, nan, inf and a hist of %d counts", GD_FP_HIST_BINS);
            goto done;
        }
        fp->nan_count = json_integer_value(nan);
        fp->inf_count = json_integer_value(inf);
        for (int i = 0; i < GD_FP_HIST_BINS; i++) {
            json_t *c = json_array_get(h, (size_t)i);
            if (!json_is_integer(c) || json_integer_value(c) < 0) {
                rc = gd_err_set(err, GD_EFORMAT, "fingerprint hist[%d] is not a count", i);
                goto done;
            }
            fp->hist[i] = json_integer_value(c);
        }
        if (fp->nan_count < 0 || fp->inf_count < 0 || fp->nan_count + fp->inf_count > n ||
            !isfinite(fp->sum) || !isfinite(fp->sumsq) || fp->sumsq < 0) {
            rc = gd_err_set(err, GD_EFORMAT, "fingerprint statistics out of range");
            goto done;
        }
    }
    json_t *s = json_object_get(j, "samples");
    const char *data = json_string_value(json_object_get(s, "data"));
    json_t *sc = json_object_get(s, "count");
    fp->n_samples = gd__fp_sample_count(n);
    if (data == NULL || !json_is_integer(sc) || json_integer_value(sc) != fp->n_samples ||
        base64_decode(data, fp->samples, (size_t)fp->n_samples * gd_dtype_size(dtype)) != 0) {
        rc = gd_err_set(err, GD_EFORMAT, "fingerprint samples need count %lld and their "
                        "elements in base64", (long long)fp->n_samples);
        goto done;
    }
    memcpy(out, fp, sizeof *fp);
done:
    free(fp);
    return rc;
}

/* ---- BLAKE3 in pieces ---- */

void
gd_blake3_init(struct gd_blake3 *h)
{
    memset(h, 0, sizeof *h);
    gd__b3_iv(h->cv);
}

/* Compresses the buffered block, which is full and not the chunk's last. */
static void
flush_block(struct gd_blake3 *h)
{
    uint32_t m[16];
    load_block(m, h->buf, 64);
    gd__b3_compress(h->cv, m, h->chunk, 64, h->blocks_done == 0 ? GD__B3_CHUNK_START : 0);
    h->blocks_done++;
    h->buf_len = 0;
}

/* The buffered chunk is full and more bytes follow: it is not the last one. */
static void
end_chunk(struct gd_blake3 *h)
{
    uint32_t m[16];
    load_block(m, h->buf, (size_t)h->buf_len);
    uint32_t cv[8];
    memcpy(cv, h->cv, sizeof cv);
    gd__b3_compress(cv, m, h->chunk, (uint32_t)h->buf_len,
                    (h->blocks_done == 0 ? GD__B3_CHUNK_START : 0) | GD__B3_CHUNK_END);
    for (uint64_t total = h->chunk + 1; (total & 1) == 0; total >>= 1)
        gd__b3_parent(cv, h->stack[--h->n_stack], cv, 0);
    memcpy(h->stack[h->n_stack++], cv, sizeof cv);
    h->chunk++;
    h->blocks_done = 0;
    h->buf_len = 0;
    gd__b3_iv(h->cv);
}

void
gd_blake3_update(struct gd_blake3 *h, const void *data, size_t len)
{
    const unsigned char *p = data;
    while (len > 0) {
        if (h->buf_len == 64) {
            if (h->blocks_done == 15)
                end_chunk(h);
            else
                flush_block(h);
        }
        size_t take = 64 - (size_t)h->buf_len;
        if (take > len)
            take = len;
        memcpy(h->buf + h->buf_len, p, take);
        h->buf_len += (int)take;
        p += take;
        len -= take;
    }
}

void
gd_blake3_final(const struct gd_blake3 *h, unsigned char out[32])
{
    uint32_t m[16], cv[8];
    load_block(m, h->buf, (size_t)h->buf_len);
    memcpy(cv, h->cv, sizeof cv);
    int root = h->n_stack == 0;
    gd__b3_compress(cv, m, h->chunk, (uint32_t)h->buf_len,
                    (h->blocks_done == 0 ? GD__B3_CHUNK_START : 0) | GD__B3_CHUNK_END |
                        (root ? GD__B3_ROOT : 0));
    for (int i = h->n_stack - 1; i >= 0; i--)
        gd__b3_parent(cv, h->stack[i], cv, i == 0);
    words_to_bytes(cv, out);
}
