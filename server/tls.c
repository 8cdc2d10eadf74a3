/*
 * tls.c: reads and checks the certificate and key files (tls.h). libmicrohttpd would load
 * them itself, but its refusals are one line without the reason ("Failed to setup x509
 * certificate/key"), it does not look at the validity dates, and a key that is not the
 * certificate's is found only at the first handshake. So the checks are made here, and the
 * start log says what is served.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <gnutls/gnutls.h>
#include <gnutls/x509.h>

#include "tls.h"

/* Reads path whole (at most SRV_TLS_FILE_MAX bytes), NUL-terminated. */
/* Reads path whole; *mode gets the file's permission bits (of the file opened). */
static int
read_file(const char *flag, const char *path, char **out, unsigned *mode, struct gd_err *err)
{
    FILE *f = fopen(path, "rb");
    if (f == NULL)
        return gd_err_set(err, GD_EIO, "%s %s: %s", flag, path, strerror(errno));
    struct stat st;
    if (mode != NULL)
        *mode = fstat(fileno(f), &st) == 0 ? (unsigned)(st.st_mode & 07777) : 0;
    char *buf = malloc(SRV_TLS_FILE_MAX + 1);
    if (buf == NULL) {
        fclose(f);
        return gd_err_set(err, GD_ENOMEM, "out of memory");
    }
    size_t n = fread(buf, 1, SRV_TLS_FILE_MAX + 1, f);
    int bad = ferror(f);
    fclose(f);
    int rc = 0;
    if (bad)
        rc = gd_err_set(err, GD_EIO, "%s %s: cannot be read", flag, path);
    else if (n > SRV_TLS_FILE_MAX)
        rc = gd_err_set(err, GD_EINVAL, "%s %s: larger than %d bytes: not a PEM file", flag, path,
                        SRV_TLS_FILE_MAX);
    else if (n == 0)
        rc = gd_err_set(err, GD_EINVAL, "%s %s: the file is empty", flag, path);
    if (rc != 0) {
        free(buf);
        return rc;
    }
    buf[n] = '\0';
    *out = buf;
    return 0;
}

/* "2026-12-03 17:00 UTC" */
static void
date_text(time_t t, char *out, size_t size)
{
    struct tm tm;
    if (gmtime_r(&t, &tm) == NULL || strftime(out, size, "%Y-%m-%d %H:%M UTC", &tm) == 0)
        snprintf(out, size, "(time %lld)", (long long)t);
}

static void
dn_text(gnutls_x509_crt_t crt, int issuer, char *out, size_t size)
{
    gnutls_datum_t dn = {NULL, 0};
    int r =
        issuer ? gnutls_x509_crt_get_issuer_dn3(crt, &dn, 0) : gnutls_x509_crt_get_dn3(crt, &dn, 0);
    if (r < 0 || dn.data == NULL)
        snprintf(out, size, "(none)");
    else
        snprintf(out, size, "%.*s", (int)dn.size, (const char *)dn.data);
    gnutls_free(dn.data);
    /* Names come from the file: keep the log line printable. */
    for (char *p = out; *p; p++)
        if ((unsigned char)*p < 0x20 || (unsigned char)*p > 0x7e)
            *p = '?';
}

/* The subjectAltName DNS names and IP addresses: the names agents may use in their URL. */
static void
names_text(gnutls_x509_crt_t crt, char *out, size_t size)
{
    size_t used = 0;
    out[0] = '\0';
    for (unsigned seq = 0; seq < 64; seq++) {
        char name[256], text[INET6_ADDRSTRLEN + 1];
        size_t len = sizeof name - 1;
        int type = gnutls_x509_crt_get_subject_alt_name(crt, seq, name, &len, NULL);
        if (type == GNUTLS_E_REQUESTED_DATA_NOT_AVAILABLE)
            break;
        if (type == GNUTLS_SAN_DNSNAME) {
            name[len < sizeof name ? len : sizeof name - 1] = '\0';
            for (char *p = name; *p; p++)
                if ((unsigned char)*p < 0x20 || (unsigned char)*p > 0x7e)
                    *p = '?';
        } else if (type == GNUTLS_SAN_IPADDRESS && (len == 4 || len == 16) &&
                   inet_ntop(len == 4 ? AF_INET : AF_INET6, name, text, sizeof text) != NULL) {
            snprintf(name, sizeof name, "%s", text);
        } else {
            continue;
        }
        int n = snprintf(out + used, size - used, "%s%s", used ? ", " : "", name);
        if (n < 0 || (size_t)n >= size - used)
            break;
        used += (size_t)n;
    }
    if (used == 0)
        snprintf(out, size, "(none: clients that check host names will refuse it)");
}

/* The chain's validity, certificate by certificate, at `now`. */
static int
check_dates(const char *path, gnutls_x509_crt_t *crts, unsigned n, time_t now, struct gd_err *err)
{
    for (unsigned i = 0; i < n; i++) {
        char what[320], when[64];
        char dn[256];
        dn_text(crts[i], 0, dn, sizeof dn);
        snprintf(what, sizeof what, "%s (%s)", i == 0 ? "the certificate" : "a chain certificate",
                 dn);
        time_t after = gnutls_x509_crt_get_expiration_time(crts[i]);
        time_t before = gnutls_x509_crt_get_activation_time(crts[i]);
        if (after == (time_t)-1 || before == (time_t)-1)
            return gd_err_set(err, GD_EINVAL, "--tls-cert %s: %s has no readable validity", path,
                              what);
        if (after < now) {
            date_text(after, when, sizeof when);
            return gd_err_set(err, GD_EINVAL,
                              "--tls-cert %s: %s expired on %s: clients would refuse it; "
                              "renew it",
                              path, what, when);
        }
        if (before > now) {
            date_text(before, when, sizeof when);
            return gd_err_set(err, GD_EINVAL,
                              "--tls-cert %s: %s is not valid before %s (is the clock right?)",
                              path, what, when);
        }
    }
    return 0;
}

static int
same_key(gnutls_x509_crt_t crt, gnutls_x509_privkey_t key)
{
    unsigned char a[64], b[64];
    size_t na = sizeof a, nb = sizeof b;
    if (gnutls_x509_crt_get_key_id(crt, GNUTLS_KEYID_USE_SHA256, a, &na) < 0 ||
        gnutls_x509_privkey_get_key_id(key, GNUTLS_KEYID_USE_SHA256, b, &nb) < 0)
        return 0;
    return na == nb && memcmp(a, b, na) == 0;
}

int
srv_tls_load(const char *cert_path, const char *key_path, const char *priorities, time_t now,
             struct srv_tls **out, struct gd_err *err)
{
    if (cert_path[0] == '\0' && key_path[0] == '\0') {
        *out = NULL;
        return 0;
    }
    if (cert_path[0] == '\0' || key_path[0] == '\0')
        return gd_err_set(err, GD_EINVAL, "%s: give --tls-cert and --tls-key together",
                          cert_path[0] == '\0' ? "--tls-key without --tls-cert"
                                               : "--tls-cert without --tls-key");
    struct srv_tls *tls = calloc(1, sizeof *tls);
    gnutls_x509_crt_t *crts = NULL;
    unsigned n_crts = 0;
    gnutls_x509_privkey_t key = NULL;
    gnutls_priority_t prio = NULL;
    int rc = 0, r;
    if (tls == NULL)
        return gd_err_set(err, GD_ENOMEM, "out of memory");
    tls->priorities = priorities;

    rc = read_file("--tls-cert", cert_path, &tls->cert_pem, NULL, err);
    if (rc == 0)
        rc = read_file("--tls-key", key_path, &tls->key_pem, &tls->key_mode, err);
    snprintf(tls->key_path, sizeof tls->key_path, "%s", key_path);
    if (rc != 0)
        goto done;

    gnutls_datum_t cert_d = {(unsigned char *)tls->cert_pem, (unsigned)strlen(tls->cert_pem)};
    r = gnutls_x509_crt_list_import2(&crts, &n_crts, &cert_d, GNUTLS_X509_FMT_PEM,
                                     GNUTLS_X509_CRT_LIST_FAIL_IF_UNSORTED);
    if (r < 0 || n_crts == 0) {
        rc = gd_err_set(err, GD_EINVAL,
                        "--tls-cert %s: %s (a PEM file: the server's certificate first, then "
                        "the intermediates, each followed by its issuer)",
                        cert_path, r < 0 ? gnutls_strerror(r) : "no certificate in it");
        goto done;
    }
    tls->chain_len = (int)n_crts;
    rc = check_dates(cert_path, crts, n_crts, now, err);
    if (rc != 0)
        goto done;

    if (strstr(tls->key_pem, "ENCRYPTED") != NULL) {
        rc = gd_err_set(err, GD_EINVAL,
                        "--tls-key %s: the key is encrypted, which gpudiffd does not read: give "
                        "it unencrypted, readable only by gpudiffd (mode 0600, or systemd's "
                        "LoadCredential, docs/DEPLOY.md)",
                        key_path);
        goto done;
    }
    gnutls_datum_t key_d = {(unsigned char *)tls->key_pem, (unsigned)strlen(tls->key_pem)};
    if ((r = gnutls_x509_privkey_init(&key)) < 0 ||
        (r = gnutls_x509_privkey_import2(key, &key_d, GNUTLS_X509_FMT_PEM, NULL, 0)) < 0) {
        rc = gd_err_set(err, GD_EINVAL, "--tls-key %s: %s (a PEM private key, RSA or EC)", key_path,
                        gnutls_strerror(r));
        goto done;
    }
    if (!same_key(crts[0], key)) {
        rc = gd_err_set(err, GD_EINVAL,
                        "--tls-key %s is not the key of the certificate in %s (its public key "
                        "differs)",
                        key_path, cert_path);
        goto done;
    }
    const char *at = NULL;
    r = gnutls_priority_init(&prio, priorities, &at);
    if (r < 0) {
        rc = gd_err_set(err, GD_EINVAL, "--tls-priorities \"%s\": %s%s%.40s%s", priorities,
                        gnutls_strerror(r), at != NULL ? " at \"" : "", at != NULL ? at : "",
                        at != NULL ? "\"" : "");
        goto done;
    }

    dn_text(crts[0], 0, tls->subject, sizeof tls->subject);
    dn_text(crts[0], 1, tls->issuer, sizeof tls->issuer);
    names_text(crts[0], tls->names, sizeof tls->names);
    tls->not_before = gnutls_x509_crt_get_activation_time(crts[0]);
    tls->not_after = gnutls_x509_crt_get_expiration_time(crts[0]);
    unsigned bits = 0;
    int pk = gnutls_x509_privkey_get_pk_algorithm2(key, &bits);
    const char *pk_name = pk >= 0 ? gnutls_pk_algorithm_get_name((gnutls_pk_algorithm_t)pk) : NULL;
    snprintf(tls->key_type, sizeof tls->key_type, "%s %u bits", pk_name ? pk_name : "unknown",
             bits);
done:
    if (prio != NULL)
        gnutls_priority_deinit(prio);
    if (key != NULL)
        gnutls_x509_privkey_deinit(key);
    for (unsigned i = 0; i < n_crts; i++)
        gnutls_x509_crt_deinit(crts[i]);
    gnutls_free(crts);
    if (rc != 0) {
        srv_tls_free(tls);
        return rc;
    }
    *out = tls;
    return 0;
}

int
srv_tls_key_warning(const struct srv_tls *tls, char *out, size_t size)
{
    out[0] = '\0';
    if ((tls->key_mode & 07) == 0)
        return 0;
    snprintf(out, size,
             "--tls-key %s is %s by every user of this host (mode %04o): anyone who can read "
             "it can pose as this server; chmod 600 it (or 640 for a group of its own), or "
             "hand it over with systemd's LoadCredential (docs/DEPLOY.md)",
             tls->key_path, (tls->key_mode & 02) ? "writable" : "readable", tls->key_mode);
    return 1;
}

void
srv_tls_free(struct srv_tls *tls)
{
    if (tls == NULL)
        return;
    if (tls->key_pem != NULL)
        gnutls_memset(tls->key_pem, 0, strlen(tls->key_pem));
    free(tls->key_pem);
    free(tls->cert_pem);
    free(tls);
}

void
srv_tls_describe(const struct srv_tls *tls, time_t now, char *out, size_t size)
{
    char until[64];
    date_text(tls->not_after, until, sizeof until);
    long long days = ((long long)tls->not_after - (long long)now) / 86400;
    snprintf(out, size,
             "TLS on: certificate subject %s, names %s, issuer %s, expires %s (in %lld "
             "day%s), key %s, chain of %d, priorities %s",
             tls->subject, tls->names, tls->issuer, until, days, days == 1 ? "" : "s",
             tls->key_type, tls->chain_len, tls->priorities);
}
