/*
 * auth.c: tokens and roles. A token is "gd_" and 32 random bytes in base64url: shown once
 * when made, stored only as its SHA-256 (db_tokens.c). Being 256 random bits, a plain hash
 * needs no salt or slow KDF: nothing can be guessed from it.
 */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <sys/random.h>

#include "gpudiff/hash.h"
#include "db.h"
#include "server.h"

static const char *const role_names[] = {"none", "viewer", "agent", "admin"};

const char *
srv_role_name(enum srv_role role)
{
    return (unsigned)role < 4 ? role_names[role] : "none";
}

int
srv_role_from_name(const char *name)
{
    for (int r = SRV_ROLE_VIEWER; r <= SRV_ROLE_ADMIN; r++)
        if (strcmp(name, role_names[r]) == 0)
            return r;
    return -1;
}

static const char b64url[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

void
srv_base64url(const unsigned char *in, size_t len, char *out)
{
    size_t o = 0, i = 0;
    for (; i + 3 <= len; i += 3) {
        unsigned v = (unsigned)in[i] << 16 | (unsigned)in[i + 1] << 8 | in[i + 2];
        out[o++] = b64url[v >> 18 & 63];
        out[o++] = b64url[v >> 12 & 63];
        out[o++] = b64url[v >> 6 & 63];
        out[o++] = b64url[v & 63];
    }
    if (len - i == 1) {
        unsigned v = (unsigned)in[i] << 16;
        out[o++] = b64url[v >> 18 & 63];
        out[o++] = b64url[v >> 12 & 63];
    } else if (len - i == 2) {
        unsigned v = (unsigned)in[i] << 16 | (unsigned)in[i + 1] << 8;
        out[o++] = b64url[v >> 18 & 63];
        out[o++] = b64url[v >> 12 & 63];
        out[o++] = b64url[v >> 6 & 63];
    }
    out[o] = '\0';
}

int
srv_token_generate(char out[SRV_TOKEN_LEN + 1], struct gd_err *err)
{
    unsigned char raw[SRV_TOKEN_RANDOM_BYTES];
    size_t got = 0;
    while (got < sizeof raw) {
        ssize_t n = getrandom(raw + got, sizeof raw - got, 0);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return gd_err_set(err, GD_EIO, "no random source: %s", strerror(errno));
        }
        got += (size_t)n;
    }
    memcpy(out, SRV_TOKEN_PREFIX, 3);
    srv_base64url(raw, sizeof raw, out + 3);
    return 0;
}

int
srv_token_well_formed(const char *s)
{
    if (strncmp(s, SRV_TOKEN_PREFIX, 3) != 0 || strlen(s) != SRV_TOKEN_LEN)
        return 0;
    for (const char *p = s + 3; *p; p++)
        if (strchr(b64url, *p) == NULL)
            return 0;
    return 1;
}

int
srv_token_hash(const char *token, char hex[65], struct gd_err *err)
{
    return gd_sha256_hex(token, strlen(token), hex, err);
}

int
srv_token_from_header(const char *header, char out[SRV_TOKEN_LEN + 1], struct gd_err *err)
{
    if (strncasecmp(header, "Bearer ", 7) != 0)
        return gd_err_set(err, SRV_EAUTH, "the Authorization header must be \"Bearer TOKEN\"");
    const char *t = header + 7;
    while (*t == ' ')
        t++;
    size_t n = strlen(t);
    while (n > 0 && isspace((unsigned char)t[n - 1]))
        n--;
    char tok[SRV_TOKEN_LEN + 1];
    if (n != SRV_TOKEN_LEN)
        return gd_err_set(err, SRV_EAUTH, "malformed token (gd_ and 43 characters expected)");
    memcpy(tok, t, n);
    tok[n] = '\0';
    if (!srv_token_well_formed(tok))
        return gd_err_set(err, SRV_EAUTH, "malformed token (gd_ and 43 characters expected)");
    memcpy(out, tok, n + 1);
    return 0;
}

int
srv_token_create(struct srv_db *db, enum srv_role role, const char *label,
                 char token[SRV_TOKEN_LEN + 1], int64_t *id, struct gd_err *err)
{
    if (role < SRV_ROLE_VIEWER || role > SRV_ROLE_ADMIN)
        return gd_err_set(err, GD_EINVAL, "a token needs the role viewer, agent or admin");
    if (label == NULL)
        label = "";
    if (strlen(label) > 64)
        return gd_err_set(err, GD_EINVAL, "a token's label is at most 64 characters");
    for (const char *p = label; *p; p++)
        if (!isprint((unsigned char)*p))
            return gd_err_set(err, GD_EINVAL, "a token's label must be printable ASCII");
    char tok[SRV_TOKEN_LEN + 1], hash[65], hint[8];
    int rc = srv_token_generate(tok, err);
    if (rc == 0)
        rc = srv_token_hash(tok, hash, err);
    if (rc != 0)
        return rc;
    /* "gd_" and 4 characters: enough to tell a few tokens apart, 24 of 256 bits. */
    snprintf(hint, sizeof hint, "%.7s", tok);
    rc = srv_db_token_insert(db, hash, hint, role, label, srv_now(), id, err);
    if (rc != 0)
        return rc;
    memcpy(token, tok, sizeof tok);
    return 0;
}
