/* hash.c: SHA-256 over OpenSSL's EVP interface, which uses the CPU's SHA instructions; a
 * tensor's, as run.json records it. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <openssl/evp.h>

#include "gpudiff/hash.h"
#include "gpudiff/tensor.h"

int
gd_sha256_init(struct gd_sha256 *h, struct gd_err *err)
{
    EVP_MD_CTX *md = EVP_MD_CTX_new();
    if (md == NULL || EVP_DigestInit_ex(md, EVP_sha256(), NULL) != 1) {
        EVP_MD_CTX_free(md);
        h->md = NULL;
        return gd_err_set(err, GD_ENOMEM, "cannot start a SHA-256 context");
    }
    h->md = md;
    return 0;
}

int
gd_sha256_update(struct gd_sha256 *h, const void *data, size_t len, struct gd_err *err)
{
    if (len > 0 && EVP_DigestUpdate(h->md, data, len) != 1)
        return gd_err_set(err, GD_EIO, "SHA-256 update failed");
    return 0;
}

int
gd_sha256_final(struct gd_sha256 *h, char hex[GD_SHA256_HEX_LEN + 1], struct gd_err *err)
{
    unsigned char digest[32];
    unsigned int n = 0;
    int ok = EVP_DigestFinal_ex(h->md, digest, &n) == 1 && n == 32;
    gd_sha256_fini(h);
    if (!ok)
        return gd_err_set(err, GD_EIO, "SHA-256 final failed");
    static const char digits[] = "0123456789abcdef";
    for (int i = 0; i < 32; i++) {
        hex[2 * i] = digits[digest[i] >> 4];
        hex[2 * i + 1] = digits[digest[i] & 15];
    }
    hex[GD_SHA256_HEX_LEN] = '\0';
    return 0;
}

void
gd_sha256_fini(struct gd_sha256 *h)
{
    EVP_MD_CTX_free(h->md);
    h->md = NULL;
}

int
gd_sha256_hex(const void *data, size_t len, char hex[GD_SHA256_HEX_LEN + 1], struct gd_err *err)
{
    struct gd_sha256 h;
    int rc = gd_sha256_init(&h, err);
    if (rc == 0)
        rc = gd_sha256_update(&h, data, len, err);
    if (rc == 0)
        return gd_sha256_final(&h, hex, err);
    gd_sha256_fini(&h);
    return rc;
}

int
gd_sha256_file(const char *path, char hex[GD_SHA256_HEX_LEN + 1], struct gd_err *err)
{
    FILE *f = fopen(path, "rb");
    if (f == NULL)
        return gd_err_set(err, errno == ENOENT ? GD_ENOENT : GD_EIO, "%s: %s", path,
                          strerror(errno));
    struct gd_sha256 h;
    int rc = gd_sha256_init(&h, err);
    char buf[1 << 16];
    size_t n;
    while (rc == 0 && (n = fread(buf, 1, sizeof buf, f)) > 0)
        rc = gd_sha256_update(&h, buf, n, err);
    if (rc == 0 && ferror(f))
        rc = gd_err_set(err, GD_EIO, "%s: read error", path);
    fclose(f);
    if (rc == 0)
        return gd_sha256_final(&h, hex, err);
    gd_sha256_fini(&h);
    return rc;
}

int
gd_tensor_sha256(const struct gd_tensor *t, char hex[65], struct gd_err *err)
{
    return gd_sha256_hex(t->data, gd_tensor_nbytes(t), hex, err);
}
