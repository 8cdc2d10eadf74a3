/* npz.c: .npz archives: a ZIP reader (stored and deflated members, ZIP64) over zlib. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <zlib.h>

#include "gpudiff/io.h"
#include "io_internal.h"

#define ZIP_SIG_LOCAL 0x04034b50u
#define ZIP_SIG_CENTRAL 0x02014b50u
#define ZIP_SIG_EOCD 0x06054b50u
#define ZIP_SIG_EOCD64 0x06064b50u
#define ZIP_SIG_LOCATOR64 0x07064b50u

#define ZIP_LOCAL_LEN 30
#define ZIP_CENTRAL_LEN 46
#define ZIP_EOCD_LEN 22
#define ZIP_EOCD64_LEN 56
#define ZIP_LOCATOR64_LEN 20
#define ZIP_COMMENT_MAX 0xffff
#define ZIP_EXTRA_ZIP64 0x0001

#define ZIP_FLAG_ENCRYPTED 0x0001u
#define ZIP_FLAG_DESCRIPTOR 0x0008u

#define ZIP_STORED 0
#define ZIP_DEFLATED 8

/*
 * Deflate codes a 258-byte match in two bits at best, so no stream inflates to more than
 * 1032 times its size; a directory claiming more is lying.
 */
#define DEFLATE_MAX_RATIO 1032

#define NPY_SUFFIX ".npy"

struct npz_member {
    char *name;         /* as stored in the archive */
    char *key;          /* name without ".npy" */
    uint64_t csize;
    uint64_t usize;
    uint64_t local_off;
    uint32_t crc;
    unsigned flags;
    unsigned method;
};

struct gd_npz {
    char *path;
    int fd;
    uint64_t size;
    uint64_t cd_off;    /* member data lies before the central directory */
    int count;
    struct npz_member *members;
};

/* ---- the directory ---- */

/* Reads exactly len bytes at off; a short read means the archive is cut. */
static int
read_exact(const struct gd_npz *z, uint64_t off, void *buf, size_t len, const char *part,
           struct gd_err *err)
{
    size_t got;
    int rc = gd__file_pread(z->fd, z->path, off, buf, len, &got, err);
    if (rc == 0 && got != len)
        rc = gd_err_set(err, GD_EFORMAT, "%s: ZIP %s at offset %llu runs past the end of the file",
                        z->path, part, (unsigned long long)off);
    return rc;
}

/* Finds the end of central directory record, searching back over a comment. */
static int
find_eocd(const struct gd_npz *z, unsigned char *rec, uint64_t *rec_off, struct gd_err *err)
{
    unsigned char *tail = NULL;
    uint64_t tail_len = z->size < ZIP_EOCD_LEN + ZIP_COMMENT_MAX ? z->size
                                                                  : ZIP_EOCD_LEN + ZIP_COMMENT_MAX;
    int rc = 0;
    if (tail_len < ZIP_EOCD_LEN)
        goto missing;
    tail = malloc((size_t)tail_len);
    if (tail == NULL)
        return gd_err_set(err, GD_ENOMEM, "%s: out of memory", z->path);
    rc = read_exact(z, z->size - tail_len, tail, (size_t)tail_len, "end record", err);
    if (rc != 0)
        goto done;
    /* The record is last: its comment must reach the end of the file exactly. */
    for (size_t i = (size_t)tail_len - ZIP_EOCD_LEN + 1; i-- > 0;) {
        if (gd__le32(tail + i) == ZIP_SIG_EOCD &&
            i + ZIP_EOCD_LEN + gd__le16(tail + i + 20) == tail_len) {
            memcpy(rec, tail + i, ZIP_EOCD_LEN);
            *rec_off = z->size - tail_len + i;
            goto done;
        }
    }
missing:
    rc = gd_err_set(err, GD_EFORMAT,
                    "%s: not a ZIP archive, or truncated (no end of central directory record)",
                    z->path);
done:
    free(tail);
    return rc;
}

/*
 * Where the central directory is and how many entries it has, from the end record or,
 * when a ZIP64 locator precedes it, from the ZIP64 end record.
 */
static int
read_directory_end(struct gd_npz *z, uint64_t *n_entries, uint64_t *cd_size, struct gd_err *err)
{
    unsigned char eocd[ZIP_EOCD_LEN] = {0};
    uint64_t eocd_off = 0;
    int rc = find_eocd(z, eocd, &eocd_off, err);
    if (rc != 0)
        return rc;
    uint64_t disk = gd__le16(eocd + 4), cd_disk = gd__le16(eocd + 6);
    uint64_t n_disk = gd__le16(eocd + 8), n_total = gd__le16(eocd + 10);
    uint64_t size = gd__le32(eocd + 12), off = gd__le32(eocd + 16);
    uint64_t end = eocd_off;

    unsigned char loc[ZIP_LOCATOR64_LEN];
    if (eocd_off >= ZIP_LOCATOR64_LEN) {
        rc = read_exact(z, eocd_off - ZIP_LOCATOR64_LEN, loc, sizeof loc, "ZIP64 locator", err);
        if (rc != 0)
            return rc;
        if (gd__le32(loc) == ZIP_SIG_LOCATOR64) {
            uint64_t rec_off = gd__le64(loc + 8);
            unsigned char rec[ZIP_EOCD64_LEN];
            end = eocd_off - ZIP_LOCATOR64_LEN;
            if (gd__le32(loc + 4) != 0 || gd__le32(loc + 16) > 1)
                return gd_err_set(err, GD_EFORMAT, "%s: multi-disk ZIP archives are not supported",
                                  z->path);
            if (rec_off > end || end - rec_off < ZIP_EOCD64_LEN)
                return gd_err_set(err, GD_EFORMAT,
                                  "%s: ZIP64 end record offset %llu is outside the file", z->path,
                                  (unsigned long long)rec_off);
            rc = read_exact(z, rec_off, rec, sizeof rec, "ZIP64 end record", err);
            if (rc != 0)
                return rc;
            if (gd__le32(rec) != ZIP_SIG_EOCD64)
                return gd_err_set(err, GD_EFORMAT, "%s: bad ZIP64 end record signature",
                                  z->path);
            disk = gd__le32(rec + 16);
            cd_disk = gd__le32(rec + 20);
            n_disk = gd__le64(rec + 24);
            n_total = gd__le64(rec + 32);
            size = gd__le64(rec + 40);
            off = gd__le64(rec + 48);
            end = rec_off;
        }
    }
    if (disk != 0 || cd_disk != 0 || n_disk != n_total)
        return gd_err_set(err, GD_EFORMAT, "%s: multi-disk ZIP archives are not supported",
                          z->path);
    if (off > end || size > end - off)
        return gd_err_set(err, GD_EFORMAT,
                          "%s: ZIP central directory (offset %llu, %llu bytes) is outside the "
                          "file", z->path, (unsigned long long)off, (unsigned long long)size);
    if (n_total > size / ZIP_CENTRAL_LEN || n_total > INT_MAX)
        return gd_err_set(err, GD_EFORMAT,
                          "%s: ZIP directory claims %llu entries in %llu bytes", z->path,
                          (unsigned long long)n_total, (unsigned long long)size);
    z->cd_off = off;
    *n_entries = n_total;
    *cd_size = size;
    return 0;
}

/*
 * Reads the ZIP64 extra field of a header: each value whose 32-bit field is all ones
 * (usize, csize, then the local header offset) comes from it, in that order.
 */
static int
zip64_extra(const unsigned char *extra, size_t len, uint64_t *usize, uint64_t *csize,
            uint64_t *local_off)
{
    uint64_t *wanted[3] = {usize, csize, local_off};
    size_t pos = 0;
    while (len - pos >= 4) {
        unsigned id = gd__le16(extra + pos), size = gd__le16(extra + pos + 2);
        pos += 4;
        if (size > len - pos)
            return -1;
        if (id == ZIP_EXTRA_ZIP64) {
            size_t at = 0;
            for (int i = 0; i < 3; i++) {
                if (wanted[i] == NULL || *wanted[i] != 0xffffffffu)
                    continue;
                if (size - at < 8)
                    return -1;
                *wanted[i] = gd__le64(extra + pos + at);
                at += 8;
            }
            return 0;
        }
        pos += size;
    }
    return 0;
}

static int
has_npy_suffix(const char *name, size_t len)
{
    return len >= 4 && memcmp(name + len - 4, NPY_SUFFIX, 4) == 0;
}

static int
parse_member(const struct gd_npz *z, const unsigned char *e, size_t avail, size_t *used,
             struct npz_member *m, struct gd_err *err)
{
    if (avail < ZIP_CENTRAL_LEN || gd__le32(e) != ZIP_SIG_CENTRAL)
        return gd_err_set(err, GD_EFORMAT, "%s: bad ZIP central directory entry", z->path);
    size_t name_len = gd__le16(e + 28), extra_len = gd__le16(e + 30);
    size_t comment_len = gd__le16(e + 32);
    if (ZIP_CENTRAL_LEN + name_len + extra_len + comment_len > avail)
        return gd_err_set(err, GD_EFORMAT, "%s: ZIP central directory entry runs past its end",
                          z->path);
    const char *name = (const char *)e + ZIP_CENTRAL_LEN;
    if (memchr(name, '\0', name_len) != NULL)
        return gd_err_set(err, GD_EFORMAT, "%s: ZIP member name holds a NUL byte", z->path);
    m->flags = gd__le16(e + 8);
    m->method = gd__le16(e + 10);
    m->crc = gd__le32(e + 16);
    m->csize = gd__le32(e + 20);
    m->usize = gd__le32(e + 24);
    m->local_off = gd__le32(e + 42);
    m->name = strndup(name, name_len);
    m->key = strndup(name, has_npy_suffix(name, name_len) ? name_len - 4 : name_len);
    if (m->name == NULL || m->key == NULL)
        return gd_err_set(err, GD_ENOMEM, "%s: out of memory for member names", z->path);
    if (gd__le16(e + 34) != 0 && gd__le16(e + 34) != 0xffff)
        return gd_err_set(err, GD_EFORMAT, "%s: member '%s' is on another disk", z->path,
                          m->name);
    if (zip64_extra(e + ZIP_CENTRAL_LEN + name_len, extra_len, &m->usize, &m->csize,
                    &m->local_off) != 0)
        return gd_err_set(err, GD_EFORMAT, "%s: member '%s': malformed ZIP extra field",
                          z->path, m->name);
    *used = ZIP_CENTRAL_LEN + name_len + extra_len + comment_len;
    return 0;
}

void
gd_npz_close(struct gd_npz *z)
{
    if (z == NULL)
        return;
    if (z->fd >= 0)
        close(z->fd);
    for (int i = 0; i < z->count; i++) {
        free(z->members[i].name);
        free(z->members[i].key);
    }
    free(z->members);
    free(z->path);
    free(z);
}

int
gd_npz_open(const char *path, struct gd_npz **out, struct gd_err *err)
{
    unsigned char *cd = NULL;
    struct gd_npz *z = calloc(1, sizeof *z);
    int rc;
    if (z == NULL || (z->path = strdup(path)) == NULL) {
        free(z);
        return gd_err_set(err, GD_ENOMEM, "%s: out of memory", path);
    }
    z->fd = -1;
    rc = gd__file_open(path, &z->fd, &z->size, err);
    if (rc != 0)
        goto done;
    uint64_t n_entries = 0, cd_size = 0;
    rc = read_directory_end(z, &n_entries, &cd_size, err);
    if (rc != 0)
        goto done;
    cd = malloc(cd_size ? (size_t)cd_size : 1);
    z->members = calloc(n_entries ? (size_t)n_entries : 1, sizeof *z->members);
    if (cd == NULL || z->members == NULL) {
        rc = gd_err_set(err, GD_ENOMEM, "%s: out of memory for the ZIP directory", path);
        goto done;
    }
    rc = read_exact(z, z->cd_off, cd, (size_t)cd_size, "central directory", err);
    if (rc != 0)
        goto done;
    size_t pos = 0;
    for (uint64_t i = 0; i < n_entries; i++) {
        size_t used = 0;
        /* Count it first so that close() frees the names even when parsing fails. */
        z->count++;
        rc = parse_member(z, cd + pos, (size_t)cd_size - pos, &used, &z->members[i], err);
        if (rc != 0)
            goto done;
        pos += used;
    }
    *out = z;
    z = NULL;
done:
    free(cd);
    gd_npz_close(z);
    return rc;
}

int
gd_npz_count(const struct gd_npz *z)
{
    return z->count;
}

const char *
gd_npz_name(const struct gd_npz *z, int i)
{
    return i >= 0 && i < z->count ? z->members[i].key : NULL;
}

/* ---- a member's bytes ---- */

struct member_src {
    const struct gd_npz *z;
    const struct npz_member *m;
    uint64_t in_off;    /* next compressed byte in the file */
    uint64_t in_left;   /* compressed bytes not yet read */
    uint64_t out_total; /* bytes handed out */
    uint32_t crc;
    int inflating;
    int stream_end;
    z_stream zs;
    unsigned char in[1 << 16];
};

static int
member_fail(const struct member_src *s, struct gd_err *err, const char *problem)
{
    return gd_err_set(err, GD_EFORMAT, "%s: member '%s': %s", s->z->path, s->m->name, problem);
}

/* Reads compressed bytes; the directory promised them, so a short read is corruption. */
static int
member_take(struct member_src *s, void *buf, size_t len, struct gd_err *err)
{
    size_t got;
    int rc = gd__file_pread(s->z->fd, s->z->path, s->in_off, buf, len, &got, err);
    if (rc != 0)
        return rc;
    if (got != len)
        return member_fail(s, err, "data runs past the end of the file");
    s->in_off += len;
    s->in_left -= len;
    return 0;
}

static int
member_inflate(struct member_src *s, unsigned char *buf, size_t len, size_t *got,
               struct gd_err *err)
{
    size_t produced = 0;
    while (produced < len && !s->stream_end) {
        if (s->zs.avail_in == 0 && s->in_left > 0) {
            size_t n = s->in_left < sizeof s->in ? (size_t)s->in_left : sizeof s->in;
            int rc = member_take(s, s->in, n, err);
            if (rc != 0)
                return rc;
            s->zs.next_in = s->in;
            s->zs.avail_in = (uInt)n;
        }
        size_t room = len - produced < UINT_MAX ? len - produced : UINT_MAX;
        s->zs.next_out = buf + produced;
        s->zs.avail_out = (uInt)room;
        int zrc = inflate(&s->zs, Z_NO_FLUSH);
        produced += room - s->zs.avail_out;
        if (zrc == Z_STREAM_END) {
            s->stream_end = 1;
        } else if (zrc == Z_BUF_ERROR && s->zs.avail_in == 0 && s->in_left == 0) {
            return member_fail(s, err, "deflate stream ends early");
        } else if (zrc == Z_MEM_ERROR) {
            return gd_err_set(err, GD_ENOMEM, "%s: member '%s': out of memory inflating",
                              s->z->path, s->m->name);
        } else if (zrc != Z_OK && zrc != Z_BUF_ERROR) {
            char problem[128];
            snprintf(problem, sizeof problem, "corrupt deflate data (%s)",
                     s->zs.msg != NULL ? s->zs.msg : "zlib error");
            return member_fail(s, err, problem);
        }
    }
    *got = produced;
    return 0;
}

/* At the end of the member: the sizes and the CRC-32 must be what the directory says. */
static int
member_verify(const struct member_src *s, struct gd_err *err)
{
    char problem[160];
    if (s->out_total != s->m->usize) {
        snprintf(problem, sizeof problem, "holds %llu bytes, the directory says %llu",
                 (unsigned long long)s->out_total, (unsigned long long)s->m->usize);
        return member_fail(s, err, problem);
    }
    if (s->crc != s->m->crc) {
        snprintf(problem, sizeof problem, "CRC-32 mismatch (directory 0x%08x, data 0x%08x)",
                 (unsigned)s->m->crc, (unsigned)s->crc);
        return member_fail(s, err, problem);
    }
    return 0;
}

static int
member_read(void *ctx, void *buf, size_t len, size_t *got, struct gd_err *err)
{
    struct member_src *s = ctx;
    size_t n = 0;
    int rc;
    if (s->inflating) {
        rc = member_inflate(s, buf, len, &n, err);
    } else {
        n = s->in_left < len ? (size_t)s->in_left : len;
        rc = member_take(s, buf, n, err);
    }
    if (rc != 0)
        return rc;
    /* CRC-32 takes at most UINT_MAX bytes a call. */
    for (size_t done = 0; done < n;) {
        size_t part = n - done < UINT_MAX ? n - done : UINT_MAX;
        s->crc = (uint32_t)crc32(s->crc, (const unsigned char *)buf + done, (uInt)part);
        done += part;
    }
    s->out_total += n;
    if (s->out_total > s->m->usize)
        return member_fail(s, err, "inflates to more bytes than the directory says");
    *got = n;
    if (n < len)
        return member_verify(s, err);
    return 0;
}

/* Checks what the directory says of a member and finds its data after the local header. */
static int
member_locate(const struct gd_npz *z, const struct npz_member *m, uint64_t *data_off,
              struct gd_err *err)
{
    unsigned char *local = NULL;
    unsigned char fixed[ZIP_LOCAL_LEN];
    const char *path = z->path;
    int rc = 0;
    if (m->flags & ZIP_FLAG_ENCRYPTED)
        return gd_err_set(err, GD_EFORMAT, "%s: member '%s' is encrypted", path, m->name);
    if (m->method != ZIP_STORED && m->method != ZIP_DEFLATED)
        return gd_err_set(err, GD_EFORMAT,
                          "%s: member '%s' uses compression method %u (only stored and "
                          "deflated are supported)", path, m->name, m->method);
    if (m->method == ZIP_STORED && m->csize != m->usize)
        return gd_err_set(err, GD_EFORMAT,
                          "%s: member '%s' is stored but its sizes differ (%llu and %llu)", path,
                          m->name, (unsigned long long)m->csize, (unsigned long long)m->usize);
    if (m->method == ZIP_DEFLATED && m->usize / DEFLATE_MAX_RATIO > m->csize)
        return gd_err_set(err, GD_EFORMAT,
                          "%s: member '%s' claims %llu bytes from %llu compressed, more than "
                          "deflate can make", path, m->name, (unsigned long long)m->usize,
                          (unsigned long long)m->csize);
    if (m->local_off > z->cd_off || z->cd_off - m->local_off < ZIP_LOCAL_LEN)
        return gd_err_set(err, GD_EFORMAT, "%s: member '%s': local header offset %llu is "
                          "outside the file", path, m->name, (unsigned long long)m->local_off);
    rc = read_exact(z, m->local_off, fixed, sizeof fixed, "local header", err);
    if (rc != 0)
        return rc;
    if (gd__le32(fixed) != ZIP_SIG_LOCAL)
        return gd_err_set(err, GD_EFORMAT, "%s: member '%s': bad local header signature", path,
                          m->name);
    size_t name_len = gd__le16(fixed + 26), extra_len = gd__le16(fixed + 28);
    uint64_t off = m->local_off + ZIP_LOCAL_LEN + name_len + extra_len;
    if (off > z->cd_off || m->csize > z->cd_off - off)
        return gd_err_set(err, GD_EFORMAT, "%s: member '%s': data runs past the end of the "
                          "members", path, m->name);
    local = malloc(name_len + extra_len + 1);
    if (local == NULL)
        return gd_err_set(err, GD_ENOMEM, "%s: out of memory", path);
    rc = read_exact(z, m->local_off + ZIP_LOCAL_LEN, local, name_len + extra_len,
                    "local header", err);
    if (rc != 0)
        goto done;
    if (name_len != strlen(m->name) || memcmp(local, m->name, name_len) != 0) {
        rc = gd_err_set(err, GD_EFORMAT, "%s: member '%s': the local header names another "
                        "file", path, m->name);
        goto done;
    }
    /* Without a data descriptor the local header repeats the CRC and the sizes. */
    if (!(gd__le16(fixed + 6) & ZIP_FLAG_DESCRIPTOR)) {
        uint64_t csize = gd__le32(fixed + 18), usize = gd__le32(fixed + 22);
        if (zip64_extra(local + name_len, extra_len, &usize, &csize, NULL) != 0 ||
            gd__le32(fixed + 14) != m->crc || csize != m->csize || usize != m->usize) {
            rc = gd_err_set(err, GD_EFORMAT, "%s: member '%s': the local header disagrees with "
                            "the central directory", path, m->name);
            goto done;
        }
    }
    *data_off = off;
done:
    free(local);
    return rc;
}

/* The index of key: the stored name first (as numpy looks it up), then key plus ".npy". */
static int
member_find(const struct gd_npz *z, const char *key)
{
    for (int i = 0; i < z->count; i++)
        if (strcmp(z->members[i].name, key) == 0)
            return i;
    size_t len = strlen(key);
    for (int i = 0; i < z->count; i++) {
        const char *name = z->members[i].name;
        if (strncmp(name, key, len) == 0 && strcmp(name + len, NPY_SUFFIX) == 0)
            return i;
    }
    return -1;
}

static const char *
member_key(const void *z, int i)
{
    return gd_npz_name(z, i);
}

int
gd_npz_load(struct gd_npz *z, const char *key, struct gd_tensor **out, struct gd_err *err)
{
    int index = member_find(z, key);
    if (index < 0) {
        char list[160];
        gd__names_join(list, sizeof list, z->count, member_key, z);
        return gd_err_set(err, GD_ENOENT, "%s: no member '%s' (members: %s)", z->path, key,
                          list);
    }
    const struct npz_member *m = &z->members[index];
    char *what = NULL;
    struct member_src *s = NULL;
    uint64_t data_off = 0;
    int rc = member_locate(z, m, &data_off, err);
    if (rc != 0)
        return rc;
    size_t what_len = strlen(z->path) + strlen(m->name) + sizeof " (member '')";
    what = malloc(what_len);
    s = calloc(1, sizeof *s);
    if (what == NULL || s == NULL) {
        rc = gd_err_set(err, GD_ENOMEM, "%s: out of memory", z->path);
        goto done;
    }
    snprintf(what, what_len, "%s (member '%s')", z->path, m->name);
    s->z = z;
    s->m = m;
    s->in_off = data_off;
    s->in_left = m->csize;
    s->crc = (uint32_t)crc32(0, NULL, 0);
    if (m->method == ZIP_DEFLATED) {
        /* ZIP holds raw deflate data: no zlib header, hence negative window bits. */
        if (inflateInit2(&s->zs, -MAX_WBITS) != Z_OK) {
            rc = gd_err_set(err, GD_ENOMEM, "%s: cannot start zlib", z->path);
            goto done;
        }
        s->inflating = 1;
    }
    struct gd__src src = {member_read, s, m->usize};
    rc = gd__npy_read(&src, what, out, err);
done:
    if (s != NULL && s->inflating)
        inflateEnd(&s->zs);
    free(s);
    free(what);
    return rc;
}
