/*
 * tls.h: gpudiffd's own TLS (--tls-cert, --tls-key, --tls-priorities). The files are read
 * and checked here, at start, with GnuTLS, so that a bad certificate or key is a clear
 * error before anything listens: the certificate chain parses (leaf first, each issued by
 * the next), no certificate of it has expired or is not valid yet, the key parses, is not
 * encrypted and is the leaf's, and the priority string is one GnuTLS reads. libmicrohttpd
 * is then given the same bytes (MHD_OPTION_HTTPS_MEM_CERT/KEY/PRIORITIES) and does the TLS
 * of every connection (http.c); the gate keeps its limits over it (gate.c).
 */
#ifndef GPUDIFF_SERVER_TLS_H
#define GPUDIFF_SERVER_TLS_H

#include <stddef.h>
#include <time.h>

#include "gpudiff/error.h"

/* TLS 1.3 and 1.2 only, GnuTLS's NORMAL ciphers among them. */
#define SRV_TLS_PRIORITIES_DEFAULT "NORMAL:-VERS-ALL:+VERS-TLS1.3:+VERS-TLS1.2"

/* Files larger than this are refused (a chain of a few certificates is a few KiB). */
#define SRV_TLS_FILE_MAX (1 << 20)

struct srv_tls {
    char *cert_pem;               /* the certificate file as read, NUL-terminated */
    char *key_pem;                /* the key file as read, NUL-terminated (wiped when freed) */
    const char *priorities;       /* borrowed from the settings */
    char subject[256];            /* the leaf's subject DN */
    char issuer[256];             /* the leaf's issuer DN */
    char names[256];              /* its subjectAltName DNS names and IP addresses, ", "-joined */
    char key_type[64];            /* "RSA 2048 bits", "EC/ECDSA 256 bits", ... */
    time_t not_before, not_after; /* the leaf's validity */
    int chain_len;                /* certificates in the file, the leaf included */
    unsigned key_mode;            /* sec: the key file's permission bits when read */
    char key_path[1024];          /* sec: for the warning */
};

/*
 * Reads and checks cert_path and key_path as of `now` (time(NULL) at start; given so that
 * tests can move it). Both or neither must be given: neither (both "") gives *out = NULL
 * and 0, which means plain HTTP. Errors: GD_EINVAL naming the file and what is wrong with
 * it (expired, not yet valid, not PEM, the key not the certificate's, encrypted, a bad
 * priority string), GD_EIO when a file cannot be read. *out is written only on success.
 */
int srv_tls_load(const char *cert_path, const char *key_path, const char *priorities, time_t now,
                 struct srv_tls **out, struct gd_err *err);

/*
 * sec: 1 with the warning in out when the key file is readable or writable by every user
 * (its mode has any of 007): logged at start (a key 0640 for a group of its own is fine).
 */
int srv_tls_key_warning(const struct srv_tls *tls, char *out, size_t size);

/* Frees tls, wiping the key's bytes first. Accepts NULL. */
void srv_tls_free(struct srv_tls *tls);

/* One line for the start log: subject, names, issuer, expiry (and in how many days), key. */
void srv_tls_describe(const struct srv_tls *tls, time_t now, char *out, size_t size);

#endif
