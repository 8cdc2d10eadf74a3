/*
 * check_tls.c: server/tls.c: the certificate and key checks made at start. The test makes
 * its own certificates with GnuTLS's writing API (a CA, leaves signed by it with chosen
 * names, dates and keys), writes them as PEM files, and checks what srv_tls_load accepts,
 * what it reports, and each refusal with its reason.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gnutls/gnutls.h>
#include <gnutls/x509.h>

#include "tls.h"

#define DAY 86400

static time_t now;

struct pair {
    gnutls_x509_crt_t crt;
    gnutls_x509_privkey_t key;
};

static gnutls_x509_privkey_t
new_key(gnutls_pk_algorithm_t pk, unsigned bits)
{
    gnutls_x509_privkey_t key;
    ck_assert_int_eq(gnutls_x509_privkey_init(&key), 0);
    ck_assert_int_eq(gnutls_x509_privkey_generate(key, pk, bits, 0), 0);
    return key;
}

/* A certificate for key named cn, valid [from, until), signed by issuer (NULL: itself). */
static gnutls_x509_crt_t
new_crt(const char *cn, const char *dns, gnutls_x509_privkey_t key, time_t from, time_t until,
        const struct pair *issuer, int ca)
{
    static unsigned serial = 1;
    gnutls_x509_crt_t crt;
    ck_assert_int_eq(gnutls_x509_crt_init(&crt), 0);
    ck_assert_int_eq(gnutls_x509_crt_set_version(crt, 3), 0);
    unsigned char sn[4] = {0, 0, 0, (unsigned char)serial++};
    ck_assert_int_eq(gnutls_x509_crt_set_serial(crt, sn, sizeof sn), 0);
    ck_assert_int_eq(
        gnutls_x509_crt_set_dn_by_oid(crt, GNUTLS_OID_X520_COMMON_NAME, 0, cn, strlen(cn)), 0);
    ck_assert_int_eq(gnutls_x509_crt_set_activation_time(crt, from), 0);
    ck_assert_int_eq(gnutls_x509_crt_set_expiration_time(crt, until), 0);
    ck_assert_int_eq(gnutls_x509_crt_set_key(crt, key), 0);
    ck_assert_int_eq(gnutls_x509_crt_set_basic_constraints(crt, ca, -1), 0);
    if (dns != NULL)
        ck_assert_int_eq(gnutls_x509_crt_set_subject_alt_name(crt, GNUTLS_SAN_DNSNAME, dns,
                                                              strlen(dns), GNUTLS_FSAN_SET),
                         0);
    if (issuer != NULL)
        ck_assert_int_eq(gnutls_x509_crt_sign2(crt, issuer->crt, issuer->key, GNUTLS_DIG_SHA256, 0),
                         0);
    else
        ck_assert_int_eq(gnutls_x509_crt_sign2(crt, crt, key, GNUTLS_DIG_SHA256, 0), 0);
    return crt;
}

static char paths[8][64];
static int n_paths;

/* Writes text to a new temporary file and returns its path (removed at the end). */
static const char *
write_file(const char *text)
{
    ck_assert_int_lt(n_paths, 8);
    char *path = paths[n_paths++];
    snprintf(path, sizeof paths[0], "/tmp/check_tls.XXXXXX");
    int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(write(fd, text, strlen(text)), (ssize_t)strlen(text));
    close(fd);
    return path;
}

static void
remove_files(void)
{
    while (n_paths > 0)
        unlink(paths[--n_paths]);
}

static char *
crt_pem(gnutls_x509_crt_t crt)
{
    gnutls_datum_t d;
    ck_assert_int_eq(gnutls_x509_crt_export2(crt, GNUTLS_X509_FMT_PEM, &d), 0);
    char *s = strndup((const char *)d.data, d.size);
    gnutls_free(d.data);
    return s;
}

static char *
key_pem(gnutls_x509_privkey_t key)
{
    gnutls_datum_t d;
    ck_assert_int_eq(gnutls_x509_privkey_export2(key, GNUTLS_X509_FMT_PEM, &d), 0);
    char *s = strndup((const char *)d.data, d.size);
    gnutls_free(d.data);
    return s;
}

static char *
concat(const char *a, const char *b)
{
    char *s = malloc(strlen(a) + strlen(b) + 1);
    strcpy(s, a);
    strcat(s, b);
    return s;
}

static struct pair ca, leaf, inter, inter_leaf;
static char *ca_pem, *leaf_pem, *leaf_key_pem, *inter_pem, *inter_leaf_pem, *inter_leaf_key_pem;

static void
setup(void)
{
    now = time(NULL);
    ca.key = new_key(GNUTLS_PK_ECDSA, GNUTLS_CURVE_TO_BITS(GNUTLS_ECC_CURVE_SECP256R1));
    ca.crt = new_crt("check_tls CA", NULL, ca.key, now - DAY, now + 30 * DAY, NULL, 1);
    leaf.key = new_key(GNUTLS_PK_RSA, 2048);
    leaf.crt = new_crt("gpudiff.test", "gpudiff.test", leaf.key, now - DAY, now + 20 * DAY, &ca, 0);
    inter.key = new_key(GNUTLS_PK_ECDSA, GNUTLS_CURVE_TO_BITS(GNUTLS_ECC_CURVE_SECP256R1));
    inter.crt =
        new_crt("check_tls intermediate", NULL, inter.key, now - DAY, now + 30 * DAY, &ca, 1);
    inter_leaf.key = new_key(GNUTLS_PK_ECDSA, GNUTLS_CURVE_TO_BITS(GNUTLS_ECC_CURVE_SECP384R1));
    inter_leaf.crt =
        new_crt("deep.test", "deep.test", inter_leaf.key, now - DAY, now + 5 * DAY, &inter, 0);
    ca_pem = crt_pem(ca.crt);
    leaf_pem = crt_pem(leaf.crt);
    leaf_key_pem = key_pem(leaf.key);
    inter_pem = crt_pem(inter.crt);
    inter_leaf_pem = crt_pem(inter_leaf.crt);
    inter_leaf_key_pem = key_pem(inter_leaf.key);
}

static void
teardown(void)
{
    remove_files();
    struct pair *all[] = {&ca, &leaf, &inter, &inter_leaf};
    for (int i = 0; i < 4; i++) {
        gnutls_x509_crt_deinit(all[i]->crt);
        gnutls_x509_privkey_deinit(all[i]->key);
    }
    free(ca_pem);
    free(leaf_pem);
    free(leaf_key_pem);
    free(inter_pem);
    free(inter_leaf_pem);
    free(inter_leaf_key_pem);
}

/* Expects srv_tls_load(cert, key) to fail with code and a message holding both words. */
static void
refused(const char *cert, const char *key, const char *prio, int code, const char *w1,
        const char *w2)
{
    struct srv_tls *tls = (struct srv_tls *)&tls; /* must stay untouched */
    struct gd_err err = {0};
    int rc =
        srv_tls_load(cert, key, prio != NULL ? prio : SRV_TLS_PRIORITIES_DEFAULT, now, &tls, &err);
    ck_assert_msg(rc == code, "rc %d (%s), expected %d", rc, err.msg, code);
    ck_assert_msg(tls == (struct srv_tls *)&tls, "the output was written on failure");
    ck_assert_msg(strstr(err.msg, w1) != NULL, "\"%s\" lacks \"%s\"", err.msg, w1);
    if (w2 != NULL)
        ck_assert_msg(strstr(err.msg, w2) != NULL, "\"%s\" lacks \"%s\"", err.msg, w2);
}

START_TEST(plain_when_neither)
{
    struct srv_tls *tls = (struct srv_tls *)&tls;
    struct gd_err err = {0};
    ck_assert_int_eq(srv_tls_load("", "", SRV_TLS_PRIORITIES_DEFAULT, now, &tls, &err), 0);
    ck_assert_ptr_null(tls);
    const char *cert = write_file(leaf_pem);
    refused(cert, "", NULL, GD_EINVAL, "--tls-cert without --tls-key", "together");
    refused("", cert, NULL, GD_EINVAL, "--tls-key without --tls-cert", "together");
}
END_TEST

START_TEST(a_good_pair)
{
    const char *cert = write_file(leaf_pem), *key = write_file(leaf_key_pem);
    struct srv_tls *tls = NULL;
    struct gd_err err = {0};
    ck_assert_msg(srv_tls_load(cert, key, SRV_TLS_PRIORITIES_DEFAULT, now, &tls, &err) == 0, "%s",
                  err.msg);
    ck_assert_str_eq(tls->subject, "CN=gpudiff.test");
    ck_assert_str_eq(tls->issuer, "CN=check_tls CA");
    ck_assert_str_eq(tls->names, "gpudiff.test");
    ck_assert_str_eq(tls->key_type, "RSA 2048 bits");
    ck_assert_int_eq(tls->chain_len, 1);
    /* X.509 keeps whole seconds. */
    ck_assert_int_eq((long long)tls->not_after, (long long)(now + 20 * DAY));
    ck_assert_int_eq((long long)tls->not_before, (long long)(now - DAY));
    /* libmicrohttpd is given the files' bytes as they are. */
    ck_assert_str_eq(tls->cert_pem, leaf_pem);
    ck_assert_str_eq(tls->key_pem, leaf_key_pem);
    char line[1024];
    srv_tls_describe(tls, now, line, sizeof line);
    ck_assert_msg(strstr(line, "subject CN=gpudiff.test") != NULL, "%s", line);
    ck_assert_msg(strstr(line, "(in 20 days)") != NULL, "%s", line);
    ck_assert_msg(strstr(line, "key RSA 2048 bits") != NULL, "%s", line);
    srv_tls_free(tls);
}
END_TEST

/* sec: a key every user of the host may read is warned about at start; 0600, 0640 are not. */
START_TEST(key_readable_by_all)
{
    const char *cert = write_file(leaf_pem), *key = write_file(leaf_key_pem);
    static const struct {
        unsigned mode;
        int warned;
    } modes[] = {{0600, 0}, {0640, 0}, {0400, 0}, {0644, 1}, {0604, 1}, {0606, 1}, {0666, 1}};
    for (size_t i = 0; i < sizeof modes / sizeof modes[0]; i++) {
        ck_assert_int_eq(chmod(key, modes[i].mode), 0);
        struct srv_tls *tls = NULL;
        struct gd_err err = {0};
        ck_assert_msg(srv_tls_load(cert, key, SRV_TLS_PRIORITIES_DEFAULT, now, &tls, &err) == 0,
                      "%s", err.msg);
        char warning[1400];
        int w = srv_tls_key_warning(tls, warning, sizeof warning);
        ck_assert_msg(w == modes[i].warned, "mode %04o: %s", modes[i].mode, warning);
        if (w) {
            char want[16];
            snprintf(want, sizeof want, "(mode %04o)", modes[i].mode);
            ck_assert_msg(strstr(warning, want) != NULL && strstr(warning, key) != NULL &&
                              strstr(warning, "chmod 600") != NULL,
                          "%s", warning);
        }
        srv_tls_free(tls);
    }
}
END_TEST

START_TEST(a_chain)
{
    char *chain = concat(inter_leaf_pem, inter_pem);
    const char *cert = write_file(chain), *key = write_file(inter_leaf_key_pem);
    struct srv_tls *tls = NULL;
    struct gd_err err = {0};
    ck_assert_msg(srv_tls_load(cert, key, SRV_TLS_PRIORITIES_DEFAULT, now, &tls, &err) == 0, "%s",
                  err.msg);
    ck_assert_int_eq(tls->chain_len, 2);
    ck_assert_str_eq(tls->subject, "CN=deep.test");
    ck_assert_str_eq(tls->issuer, "CN=check_tls intermediate");
    ck_assert_str_eq(tls->key_type, "EC/ECDSA 384 bits");
    srv_tls_free(tls);
    free(chain);
    /* The intermediate before the leaf: refused (clients would be sent the wrong one). */
    char *reversed = concat(inter_pem, inter_leaf_pem);
    refused(write_file(reversed), key, NULL, GD_EINVAL, "--tls-cert", "first");
    free(reversed);
}
END_TEST

START_TEST(dates)
{
    gnutls_x509_crt_t old =
        new_crt("old.test", "old.test", leaf.key, now - 10 * DAY, now - 2 * DAY, &ca, 0);
    gnutls_x509_crt_t early =
        new_crt("early.test", "early.test", leaf.key, now + 2 * DAY, now + 10 * DAY, &ca, 0);
    char *old_pem = crt_pem(old), *early_pem = crt_pem(early);
    const char *key = write_file(leaf_key_pem);
    refused(write_file(old_pem), key, NULL, GD_EINVAL, "expired on", "CN=old.test");
    refused(write_file(early_pem), key, NULL, GD_EINVAL, "not valid before", "CN=early.test");
    /* The same good certificate, as of a day after its end. */
    struct srv_tls *tls = NULL;
    struct gd_err err = {0};
    const char *cert = write_file(leaf_pem);
    ck_assert_int_eq(
        srv_tls_load(cert, key, SRV_TLS_PRIORITIES_DEFAULT, now + 21 * DAY, &tls, &err), GD_EINVAL);
    ck_assert_msg(strstr(err.msg, "expired on") != NULL, "%s", err.msg);
    /* An expired intermediate is named as such. */
    gnutls_x509_crt_t old_inter =
        new_crt("check_tls intermediate", NULL, inter.key, now - 10 * DAY, now - DAY, &ca, 1);
    char *old_inter_pem = crt_pem(old_inter);
    char *chain = concat(inter_leaf_pem, old_inter_pem);
    refused(write_file(chain), write_file(inter_leaf_key_pem), NULL, GD_EINVAL,
            "a chain certificate", "expired on");
    free(chain);
    free(old_inter_pem);
    free(old_pem);
    free(early_pem);
    gnutls_x509_crt_deinit(old);
    gnutls_x509_crt_deinit(early);
    gnutls_x509_crt_deinit(old_inter);
}
END_TEST

START_TEST(bad_files)
{
    const char *cert = write_file(leaf_pem), *key = write_file(leaf_key_pem);
    /* The key of another certificate. */
    refused(cert, write_file(inter_leaf_key_pem), NULL, GD_EINVAL, "is not the key of",
            "public key");
    /* Not PEM, or empty, or missing. */
    refused(write_file("hello\n"), key, NULL, GD_EINVAL, "--tls-cert", "PEM");
    refused(cert, write_file("-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n"),
            NULL, GD_EINVAL, "--tls-key", "PEM private key");
    refused(write_file(""), key, NULL, GD_EINVAL, "--tls-cert", "empty");
    refused("/nonexistent/cert.pem", key, NULL, GD_EIO, "/nonexistent/cert.pem", "No such file");
    refused(cert, "/nonexistent/key.pem", NULL, GD_EIO, "--tls-key /nonexistent/key.pem", NULL);
    /* An encrypted key (PKCS #8 with a password): refused with what to do instead. */
    gnutls_datum_t d;
    ck_assert_int_eq(gnutls_x509_privkey_export2_pkcs8(leaf.key, GNUTLS_X509_FMT_PEM, "secret",
                                                       GNUTLS_PKCS_PBES2_AES_256, &d),
                     0);
    char *enc = strndup((const char *)d.data, d.size);
    gnutls_free(d.data);
    refused(cert, write_file(enc), NULL, GD_EINVAL, "encrypted", "LoadCredential");
    free(enc);
    /* A priority string GnuTLS does not read. */
    refused(cert, key, "NORMAL:+VERS-TLS9.9", GD_EINVAL, "--tls-priorities", "VERS-TLS9.9");
}
END_TEST

int
main(void)
{
    Suite *s = suite_create("tls");
    TCase *tc = tcase_create("load");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, plain_when_neither);
    tcase_add_test(tc, a_good_pair);
    tcase_add_test(tc, key_readable_by_all);
    tcase_add_test(tc, a_chain);
    tcase_add_test(tc, dates);
    tcase_add_test(tc, bad_files);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? 0 : 1;
}
