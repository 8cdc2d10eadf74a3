/* npy.c: reading .npy images (format 1.0, 2.0 and 3.0) from files, buffers and archives. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gpudiff/io.h"
#include "io_internal.h"

static const unsigned char npy_magic[6] = {0x93, 'N', 'U', 'M', 'P', 'Y'};

/*
 * The most header bytes a reader accepts. numpy refuses more than 10000 by default; a
 * plain array's header is under 256 bytes, and larger ones only come with generous padding.
 */
#define NPY_HEADER_MAX ((uint64_t)1 << 20)

/* Deepest nesting skipped inside a structured dtype's field list. */
#define NPY_NEST_MAX 32

/* ---- the header dict: a small subset of Python literal syntax ---- */

struct lit {
    const char *start;
    const char *p;
    const char *end;
    const char *what;
    struct gd_err *err;
};

static int
lit_fail(struct lit *l, const char *problem)
{
    return gd_err_set(l->err, GD_EFORMAT, "%s: malformed .npy header at byte %zu: %s", l->what,
                      (size_t)(l->p - l->start), problem);
}

static void
lit_ws(struct lit *l)
{
    while (l->p < l->end && strchr(" \t\n\r\f\v", *l->p) != NULL && *l->p != '\0')
        l->p++;
}

static int
lit_peek(const struct lit *l)
{
    return l->p < l->end ? (unsigned char)*l->p : -1;
}

/* A quoted string (an optional u prefix, ' or "); out gets at most cap - 1 bytes of it. */
static int
lit_string(struct lit *l, char *out, size_t cap, size_t *full_len)
{
    if (lit_peek(l) == 'u')
        l->p++;
    int quote = lit_peek(l);
    if (quote != '\'' && quote != '"')
        return lit_fail(l, "expected a quoted string");
    l->p++;
    size_t n = 0;
    for (;;) {
        if (l->p >= l->end)
            return lit_fail(l, "unterminated string");
        char c = *l->p++;
        if (c == quote)
            break;
        if (c == '\n')
            return lit_fail(l, "line break inside a string");
        if (c == '\\') {
            if (l->p >= l->end)
                return lit_fail(l, "unterminated string");
            c = *l->p++;
        }
        if (n + 1 < cap)
            out[n] = c;
        n++;
    }
    out[n + 1 < cap ? n : cap - 1] = '\0';
    if (full_len != NULL)
        *full_len = n;
    return 0;
}

/* True if the next bytes are the name `word`, not followed by more name characters. */
static int
lit_name(struct lit *l, const char *word)
{
    size_t n = strlen(word);
    if ((size_t)(l->end - l->p) < n || memcmp(l->p, word, n) != 0)
        return 0;
    if ((size_t)(l->end - l->p) > n) {
        char next = l->p[n];
        if (next == '_' || (next >= 'a' && next <= 'z') || (next >= 'A' && next <= 'Z') ||
            (next >= '0' && next <= '9'))
            return 0;
    }
    l->p += n;
    return 1;
}

/*
 * Skips one bracketed value (a structured dtype's field list) without interpreting it,
 * matching brackets and stepping over strings.
 */
static int
lit_skip_nested(struct lit *l)
{
    char closers[NPY_NEST_MAX];
    int depth = 0;
    char scratch[2];
    do {
        if (l->p >= l->end)
            return lit_fail(l, "unbalanced brackets");
        char c = *l->p;
        if (c == '\'' || c == '"') {
            int rc = lit_string(l, scratch, sizeof scratch, NULL);
            if (rc != 0)
                return rc;
            continue;
        }
        if (c == '(' || c == '[' || c == '{') {
            if (depth == NPY_NEST_MAX)
                return lit_fail(l, "nested too deeply");
            closers[depth++] = c == '(' ? ')' : c == '[' ? ']' : '}';
        } else if (c == ')' || c == ']' || c == '}') {
            if (depth == 0 || closers[depth - 1] != c)
                return lit_fail(l, "unbalanced brackets");
            depth--;
        }
        l->p++;
    } while (depth > 0);
    return 0;
}

/* A tuple of non-negative integers: (), (5,), (2, 3) or (2, 3,). */
static int
lit_shape(struct lit *l, int *ndim, int64_t *shape)
{
    if (lit_peek(l) != '(')
        return lit_fail(l, "shape is not a tuple");
    l->p++;
    lit_ws(l);
    int n = 0;
    int comma = 0;
    while (lit_peek(l) != ')') {
        int negative = 0;
        if (lit_peek(l) == '-') {
            negative = 1;
            l->p++;
        }
        int c = lit_peek(l);
        if (c < '0' || c > '9')
            return lit_fail(l, "shape holds something other than integers");
        int64_t v = 0;
        while ((c = lit_peek(l)) >= '0' && c <= '9') {
            if (v > (INT64_MAX - (c - '0')) / 10)
                return lit_fail(l, "a dimension is too large");
            v = v * 10 + (c - '0');
            l->p++;
        }
        if (lit_peek(l) == 'L' || lit_peek(l) == 'l') /* Python 2 long literal */
            l->p++;
        if (negative && v != 0)
            return gd_err_set(l->err, GD_EFORMAT,
                              "%s: .npy shape has negative dimension %d (-%lld)", l->what, n,
                              (long long)v);
        if (n == GD_MAX_DIMS)
            return gd_err_set(l->err, GD_EFORMAT,
                              "%s: .npy shape has more than %d dimensions", l->what, GD_MAX_DIMS);
        shape[n++] = v;
        lit_ws(l);
        comma = 0;
        if (lit_peek(l) == ',') {
            comma = 1;
            l->p++;
            lit_ws(l);
        } else if (lit_peek(l) != ')') {
            return lit_fail(l, "expected ',' or ')' in shape");
        }
    }
    /* (5) is the number 5 in Python, not a tuple. */
    if (n == 1 && !comma)
        return lit_fail(l, "shape is not a tuple");
    l->p++;
    *ndim = n;
    return 0;
}

/* The descr of a dtype the engine has ('<f4', '|b1', '>i8', ...); GD_EDTYPE otherwise. */
static int
descr_dtype(const char *descr, size_t descr_len, const char *what, enum gd_dtype *dtype,
            int *big_endian, struct gd_err *err)
{
    static const struct {
        char kind;
        int size;
        enum gd_dtype dtype;
    } table[] = {
        {'f', 2, GD_F16}, {'f', 4, GD_F32}, {'f', 8, GD_F64}, {'i', 1, GD_I8},
        {'i', 2, GD_I16}, {'i', 4, GD_I32}, {'i', 8, GD_I64}, {'u', 1, GD_U8},
        {'u', 2, GD_U16}, {'u', 4, GD_U32}, {'u', 8, GD_U64}, {'b', 1, GD_BOOL},
        {'V', 2, GD_BF16}, /* numpy has no bfloat16: 2-byte void (npy_write.c) */
    };
    const char *d = descr;
    char order = '|';
    if (*d != '\0' && strchr("<>|=", *d) != NULL)
        order = *d++;
    char kind = *d;
    int size = 0;
    int digits = 0;
    if (kind != '\0') {
        for (d++; *d >= '0' && *d <= '9' && digits < 3; d++, digits++)
            size = size * 10 + (*d - '0');
    }
    if (digits > 0 && *d == '\0' && strlen(descr) == descr_len) {
        for (size_t i = 0; i < sizeof table / sizeof table[0]; i++) {
            if (table[i].kind == kind && table[i].size == size) {
                *dtype = table[i].dtype;
                /* '|' (no order) and '=' are native; bytes have no order at all. */
                *big_endian = size > 1 && (order == '>' ||
                                           (order != '<' && GD__HOST_BIG_ENDIAN));
                return 0;
            }
        }
    }
    return gd_err_set(err, GD_EDTYPE, "%s: .npy dtype '%s%s' is not supported", what, descr,
                      strlen(descr) < descr_len ? "..." : "");
}

/* Parses the dict text between the length field and the data. */
static int
npy_dict_parse(const char *text, size_t len, const char *what, struct gd_npy_header *hdr,
               struct gd_err *err)
{
    struct lit l = {text, text, text + len, what, err};
    char key[32];
    char descr[48];
    size_t descr_len = 0;
    int structured = 0;
    unsigned seen = 0; /* bit 0 descr, bit 1 fortran_order, bit 2 shape */
    int rc;

    lit_ws(&l);
    if (lit_peek(&l) != '{')
        return lit_fail(&l, "not a dict");
    l.p++;
    for (;;) {
        lit_ws(&l);
        if (lit_peek(&l) == '}')
            break;
        size_t key_len;
        if ((rc = lit_string(&l, key, sizeof key, &key_len)) != 0)
            return rc;
        unsigned bit = 0;
        if (strcmp(key, "descr") == 0)
            bit = 1;
        else if (strcmp(key, "fortran_order") == 0)
            bit = 2;
        else if (strcmp(key, "shape") == 0)
            bit = 4;
        if (bit == 0 || key_len != strlen(key))
            return gd_err_set(err, GD_EFORMAT, "%s: .npy header has unexpected key '%s%s'", what,
                              key, key_len >= sizeof key ? "..." : "");
        if (seen & bit)
            return gd_err_set(err, GD_EFORMAT, "%s: .npy header repeats key '%s'", what, key);
        seen |= bit;
        lit_ws(&l);
        if (lit_peek(&l) != ':')
            return lit_fail(&l, "expected ':' after a key");
        l.p++;
        lit_ws(&l);
        if (bit == 1) {
            if (lit_peek(&l) == '[') {
                structured = 1;
                rc = lit_skip_nested(&l);
            } else {
                rc = lit_string(&l, descr, sizeof descr, &descr_len);
            }
        } else if (bit == 2) {
            if (lit_name(&l, "True"))
                hdr->fortran_order = 1;
            else if (lit_name(&l, "False"))
                hdr->fortran_order = 0;
            else
                rc = lit_fail(&l, "fortran_order is not True or False");
        } else {
            rc = lit_shape(&l, &hdr->ndim, hdr->shape);
        }
        if (rc != 0)
            return rc;
        lit_ws(&l);
        if (lit_peek(&l) == ',') {
            l.p++;
        } else if (lit_peek(&l) != '}') {
            return lit_fail(&l, "expected ',' or '}'");
        }
    }
    l.p++;
    lit_ws(&l);
    if (l.p != l.end)
        return lit_fail(&l, "text after the dict");
    static const char *const names[] = {"descr", "fortran_order", "shape"};
    for (int i = 0; i < 3; i++)
        if (!(seen & (1u << i)))
            return gd_err_set(err, GD_EFORMAT, "%s: .npy header lacks key '%s'", what, names[i]);
    if (structured)
        return gd_err_set(err, GD_EDTYPE, "%s: .npy dtype is structured (a list of fields), "
                          "which is not supported", what);
    return descr_dtype(descr, descr_len, what, &hdr->dtype, &hdr->big_endian, err);
}

int
gd_npy_header_parse(const void *buf, size_t len, const char *what, struct gd_npy_header *hdr,
                    struct gd_err *err)
{
    const unsigned char *b = buf;
    if (what == NULL)
        what = "(buffer)";
    size_t cmp = len < sizeof npy_magic ? len : sizeof npy_magic;
    if (cmp > 0 && memcmp(b, npy_magic, cmp) != 0)
        return gd_err_set(err, GD_EFORMAT, "%s: not a .npy file (bad magic)", what);
    if (len < 8)
        return gd_err_set(err, GD_EFORMAT, "%s: truncated .npy header (%zu bytes)", what, len);
    unsigned major = b[6], minor = b[7];
    if (major < 1 || major > 3 || minor != 0)
        return gd_err_set(err, GD_EFORMAT, "%s: unsupported .npy format version %u.%u", what,
                          major, minor);
    size_t prefix = major == 1 ? 10 : 12;
    if (len < prefix)
        return gd_err_set(err, GD_EFORMAT, "%s: truncated .npy header (%zu bytes)", what, len);
    uint64_t dict_len = major == 1 ? gd__le16(b + 8) : gd__le32(b + 8);
    if (dict_len > len - prefix)
        return gd_err_set(err, GD_EFORMAT,
                          "%s: .npy header length %llu runs past the end (%zu bytes there)", what,
                          (unsigned long long)(prefix + dict_len), len);

    struct gd_npy_header h;
    memset(&h, 0, sizeof h);
    h.version_major = (int)major;
    h.header_len = prefix + (size_t)dict_len;
    int rc = npy_dict_parse((const char *)b + prefix, (size_t)dict_len, what, &h, err);
    if (rc != 0)
        return rc;
    struct gd_err shape_err;
    gd_err_clear(&shape_err);
    if (gd_shape_check(h.ndim, h.shape, gd_dtype_size(h.dtype), &shape_err) != 0)
        return gd_err_set(err, GD_EFORMAT, "%s: .npy shape: %s", what, shape_err.msg);
    size_t numel = 1;
    for (int i = 0; i < h.ndim; i++)
        numel *= (size_t)h.shape[i];
    h.data_len = numel * gd_dtype_size(h.dtype);
    *hdr = h;
    return 0;
}

/* ---- reading an image ---- */

/* Turns the column-major data of a Fortran-order array into a C-order tensor. */
static int
fortran_to_c(struct gd_tensor **t, struct gd_err *err)
{
    struct gd_tensor *col = *t;
    int perm[GD_MAX_DIMS];
    for (int i = 0; i < col->ndim; i++)
        perm[i] = col->ndim - 1 - i;
    /* Column-major data of shape (a, b, c) is row-major data of shape (c, b, a). */
    struct gd_tensor *row = gd_tensor_transpose(col, perm, err);
    if (row == NULL)
        return err != NULL ? err->code : GD_ENOMEM;
    gd_tensor_free(col);
    *t = row;
    return 0;
}

int
gd__npy_read(const struct gd__src *src, const char *what, struct gd_tensor **out,
             struct gd_err *err)
{
    unsigned char prefix[12];
    unsigned char *head = NULL;
    struct gd_tensor *t = NULL;
    struct gd_npy_header hdr;
    size_t got = 0, more = 0;
    int rc = src->read(src->ctx, prefix, 10, &got, err);
    if (rc != 0)
        goto done;
    /* Versions 2.0 and 3.0 have a 4-byte header length where 1.0 has 2 bytes. */
    size_t prefix_len = got >= 7 && (prefix[6] == 2 || prefix[6] == 3) ? 12 : 10;
    if (got == 10 && prefix_len == 12) {
        rc = src->read(src->ctx, prefix + 10, 2, &more, err);
        if (rc != 0)
            goto done;
        got += more;
    }
    if (got < prefix_len || memcmp(prefix, npy_magic, sizeof npy_magic) != 0 ||
        prefix[6] < 1 || prefix[6] > 3 || prefix[7] != 0) {
        /* Short, not .npy, or a version we do not know: the parser names the problem. */
        rc = gd_npy_header_parse(prefix, got, what, &hdr, err);
        if (rc == 0)
            rc = gd_err_set(err, GD_EFORMAT, "%s: truncated .npy header", what);
        goto done;
    }
    uint64_t dict_len = prefix[6] == 1 ? gd__le16(prefix + 8) : gd__le32(prefix + 8);
    uint64_t header_len = prefix_len + dict_len;
    if (header_len > src->size) {
        rc = gd_err_set(err, GD_EFORMAT,
                        "%s: .npy header length %llu runs past the end of the file "
                        "(%llu bytes)", what, (unsigned long long)header_len,
                        (unsigned long long)src->size);
        goto done;
    }
    if (header_len > NPY_HEADER_MAX) {
        rc = gd_err_set(err, GD_EFORMAT, "%s: .npy header of %llu bytes is over the limit of %llu",
                        what, (unsigned long long)header_len, (unsigned long long)NPY_HEADER_MAX);
        goto done;
    }
    head = malloc((size_t)header_len);
    if (head == NULL) {
        rc = gd_err_set(err, GD_ENOMEM, "%s: out of memory for the .npy header", what);
        goto done;
    }
    memcpy(head, prefix, prefix_len);
    rc = src->read(src->ctx, head + prefix_len, (size_t)header_len - prefix_len, &more, err);
    if (rc != 0)
        goto done;
    rc = gd_npy_header_parse(head, prefix_len + more, what, &hdr, err);
    if (rc != 0)
        goto done;

    char shape_text[200];
    gd_shape_format(hdr.ndim, hdr.shape, shape_text, sizeof shape_text);
    uint64_t found = src->size - header_len;
    if (found != hdr.data_len) {
        rc = gd_err_set(err, GD_EFORMAT, "%s: .npy data is %llu bytes, expected %zu (%s %s)",
                        what, (unsigned long long)found, hdr.data_len, shape_text,
                        gd_dtype_name(hdr.dtype));
        goto done;
    }
    int64_t shape[GD_MAX_DIMS];
    for (int i = 0; i < hdr.ndim; i++)
        shape[i] = hdr.fortran_order ? hdr.shape[hdr.ndim - 1 - i] : hdr.shape[i];
    t = gd_tensor_new(hdr.dtype, hdr.ndim, shape, err);
    if (t == NULL) {
        rc = err != NULL ? gd_err_prefix(err, "%s: ", what) : GD_ENOMEM;
        goto done;
    }
    rc = src->read(src->ctx, t->data, hdr.data_len, &got, err);
    if (rc != 0)
        goto done;
    if (got < hdr.data_len) {
        rc = gd_err_set(err, GD_EFORMAT, "%s: .npy data is %zu bytes, expected %zu (%s %s)",
                        what, got, hdr.data_len, shape_text, gd_dtype_name(hdr.dtype));
        goto done;
    }
    /* The source said how long it is; reading past that confirms it (and its checksum). */
    unsigned char extra;
    rc = src->read(src->ctx, &extra, 1, &got, err);
    if (rc != 0)
        goto done;
    if (got != 0) {
        rc = gd_err_set(err, GD_EFORMAT, "%s: .npy data is longer than the %zu bytes expected",
                        what, hdr.data_len);
        goto done;
    }
    size_t numel = (size_t)gd_tensor_numel(t);
    if (hdr.big_endian != GD__HOST_BIG_ENDIAN)
        gd__bswap(t->data, numel, gd_dtype_size(t->dtype));
    if (t->dtype == GD_BOOL)
        gd__bool_normalize(t->data, numel);
    if (hdr.fortran_order && hdr.ndim > 1) {
        rc = fortran_to_c(&t, err);
        if (rc != 0) {
            gd_err_prefix(err, "%s: ", what);
            goto done;
        }
    }
    *out = t;
    t = NULL;
done:
    gd_tensor_free(t);
    free(head);
    return rc;
}

/* ---- sources: a buffer and a file ---- */

struct mem_src {
    const unsigned char *data;
    size_t len;
    size_t pos;
};

static int
mem_read(void *ctx, void *buf, size_t len, size_t *got, struct gd_err *err)
{
    struct mem_src *m = ctx;
    size_t n = m->len - m->pos < len ? m->len - m->pos : len;
    memcpy(buf, m->data + m->pos, n);
    m->pos += n;
    *got = n;
    return 0;
}

int
gd_npy_parse(const void *buf, size_t len, const char *what, struct gd_tensor **out,
             struct gd_err *err)
{
    struct mem_src m = {buf, len, 0};
    struct gd__src src = {mem_read, &m, len};
    return gd__npy_read(&src, what != NULL ? what : "(buffer)", out, err);
}

struct file_src {
    int fd;
    const char *path;
    uint64_t pos;
};

static int
file_read(void *ctx, void *buf, size_t len, size_t *got, struct gd_err *err)
{
    struct file_src *f = ctx;
    int rc = gd__file_pread(f->fd, f->path, f->pos, buf, len, got, err);
    if (rc == 0)
        f->pos += *got;
    return rc;
}

int
gd_npy_load(const char *path, struct gd_tensor **out, struct gd_err *err)
{
    struct file_src f = {-1, path, 0};
    uint64_t size;
    int rc = gd__file_open(path, &f.fd, &size, err);
    if (rc != 0)
        return rc;
    struct gd__src src = {file_read, &f, size};
    rc = gd__npy_read(&src, path, out, err);
    close(f.fd);
    return rc;
}
