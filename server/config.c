/*
 * config.c: gpudiffd's settings. One table gives each setting's name, type, range, default
 * and help; the config-file parser, the flags, --help, the startup log and the example file
 * in deploy/ are all made from it, so they cannot disagree.
 */
#include <ctype.h>
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "server.h"
#include "tls.h"

#define FIELD(f) offsetof(struct srv_config, f), sizeof(((struct srv_config *)0)->f)

const struct srv_setting srv_settings[] = {
    {"listen", SRV_SET_LISTEN, 0, 0, "127.0.0.1:8470",
     "address to serve on: host:port or [v6-address]:port; port 0 picks a free one", FIELD(listen),
     NULL},
    {"db", SRV_SET_STRING, 0, 0, "gpudiff.db",
     "the database: a SQLite file, made and migrated if needed, or a PostgreSQL URI "
     "(postgresql://user@host/dbname?..., libpq's syntax) that several gpudiffd may share",
     FIELD(db), NULL},
    {"web-root", SRV_SET_STRING, 0, 0, "",
     "folder whose files (the dashboard) are served at /; empty serves none", FIELD(web_root),
     NULL},
    {"spill-dir", SRV_SET_STRING, 0, 0, "",
     "folder for uploads being compressed before their commit; empty: the SQLite database's "
     "folder, $TMPDIR or /var/tmp on PostgreSQL",
     FIELD(spill_dir), NULL},
    {"max-body", SRV_SET_BYTES, 1024, 900LL << 20, "512M",
     "largest request body accepted, i.e. the largest layer (.npy) that can be uploaded",
     FIELD(max_body), NULL},
    {"max-json", SRV_SET_BYTES, 1024, 256LL << 20, "16M",
     "largest run.json accepted (it is held in memory while it is parsed)", FIELD(max_json), NULL},
    {"threads", SRV_SET_INT, 1, 256, "4",
     "worker threads of the HTTP server that serve writes, bodies, downloads and long polls "
     "(a pool; connections never get a thread each); over TLS every request",
     FIELD(threads), NULL},
    {"read-threads", SRV_SET_INT, 0, 256, "2",
     "worker threads of a second pool that serves the light reads (GET and HEAD but "
     "downloads: /healthz, a run, a cached diff) at normal priority; 0: the one pool serves all",
     FIELD(read_threads), NULL},
    {"write-nice", SRV_SET_INT, 0, 19, "5",
     "nice value of the threads that serve writes and of the write pool, below the reads' "
     "threads, so that an upload storm does not delay a read; 0: the same priority",
     FIELD(write_nice), NULL},
    {"max-connections", SRV_SET_INT, 16, 65536, "2048",
     "open connections at most (each serves one request); more are refused with 503",
     FIELD(max_connections), NULL},
    {"max-connections-per-ip", SRV_SET_INT, 1, 65536, "128",
     "open connections at most from one client address; more are refused with 503",
     FIELD(max_connections_per_ip), NULL},
    {"header-timeout", SRV_SET_INT, 1, 3600, "10",
     "seconds a new connection has to send its whole request head (408 and closed after)",
     FIELD(header_timeout), NULL},
    {"body-timeout", SRV_SET_INT, 1, 3600, "20",
     "seconds a request body may take, one more for every --body-min-rate bytes received "
     "(slower bodies are cut off)",
     FIELD(body_timeout), NULL},
    {"body-min-rate", SRV_SET_BYTES, 1, 1LL << 30, "64K",
     "bytes per second a request body must keep up after --body-timeout", FIELD(body_min_rate),
     NULL},
    {"max-header", SRV_SET_BYTES, 1024, 60 << 10, "16K",
     "largest request head (request line and header lines) accepted; more is 414 or 431",
     FIELD(max_header), NULL},
    {"timeout", SRV_SET_INT, 1, 3600, "30",
     "seconds a connection may go without any traffic while its answer is made and sent",
     FIELD(timeout), NULL},
    {"compare-threads", SRV_SET_INT, 1, 64, "2",
     "threads that compute diffs (requests and the baseline queue); at most this many diffs "
     "are computed at once",
     FIELD(compare_threads), NULL},
    {"compare-queue", SRV_SET_INT, 1, 100000, "64",
     "requests that may wait for a compare thread; more are answered 503 with Retry-After",
     FIELD(compare_queue), NULL},
    {"diff-timeout-ms", SRV_SET_INT, 10, 86400000, "60000",
     "milliseconds one diff may take to compute; a longer one is stopped (503 diff_timeout)",
     FIELD(diff_timeout_ms), NULL},
    {"diff-max-memory", SRV_SET_BYTES, 1 << 20, 1LL << 40, "1G",
     "memory one diff may need (estimated from its runs' layers before it starts); a bigger "
     "one is refused (422 diff_too_large)",
     FIELD(diff_max_memory), NULL},
    /* sec (issue 25): the disk the diff cache may take */
    {"diff-cache-max", SRV_SET_BYTES, 1 << 20, 1LL << 40, "1G",
     "bytes all cached diffs may hold together; past it the least recently used are dropped, "
     "those of other tolerances than the defaults first",
     FIELD(diff_cache_max), NULL},
    {"response-memory", SRV_SET_BYTES, 1 << 20, 1LL << 40, "256M",
     "bytes of answers over 64 KiB made in memory (run documents, lists, diffs just computed) "
     "that may wait for their clients at once; more are answered 503 with Retry-After",
     FIELD(response_memory), NULL},
    {"write-threads", SRV_SET_INT, 1, 64, "2",
     "threads that run the requests that write to the database (run, layer, finish), so "
     "that the threads serving connections never wait for the write lock",
     FIELD(write_threads), NULL},
    {"write-queue", SRV_SET_INT, 1, 100000, "1024",
     "writing requests that may wait for a write thread; more are answered 503 with "
     "Retry-After",
     FIELD(write_queue), NULL},
    {"require-auth-read", SRV_SET_BOOL, 0, 1, "false",
     "reads need a token too (any role); without it reads are open (write --require-auth-read "
     "or --require-auth-read=false on the command line)",
     FIELD(require_auth_read), NULL},
    {"allow-root", SRV_SET_BOOL, 0, 1, "false",
     "serve even when run as root (refused otherwise: run it as a user of its own)",
     FIELD(allow_root), NULL},
    {"retention-days", SRV_SET_INT, 0, 36500, "0",
     "drop the tensors of runs received more than this many days ago, keeping their "
     "summaries (at start, then daily); 0 keeps everything",
     FIELD(retention_days), NULL},
    {"compress-level", SRV_SET_INT, 1, 19, "3", "zstd level for stored tensors",
     FIELD(compress_level), NULL},
    {"busy-timeout-ms", SRV_SET_INT, 0, 600000, "5000",
     "how long a database write waits for another one before answering 503", FIELD(busy_timeout_ms),
     NULL},
    {"db-sync", SRV_SET_CHOICE, 0, 0, "normal",
     "SQLite synchronous level: normal survives a crash of gpudiffd but a power loss may "
     "undo the last commits; full survives both, at one fsync per commit",
     FIELD(db_sync), "normal|full"},
    {"db-cache", SRV_SET_BYTES, 64 << 10, 1LL << 30, "2M",
     "SQLite page cache of each of the daemon's database connections (one per thread that "
     "reads or writes)",
     FIELD(db_cache), NULL},
    {"db-mmap", SRV_SET_BYTES, 0, 1LL << 40, "256M",
     "bytes of the database file each connection reads through a memory mapping (resident "
     "as file pages while used); 0 reads with pread only",
     FIELD(db_mmap), NULL},
    {"malloc-arenas", SRV_SET_INT, 1, 64, "4",
     "memory arenas of the C allocator (glibc's M_ARENA_MAX): fewer keep less freed memory "
     "resident across threads",
     FIELD(malloc_arenas), NULL},
    {"log-level", SRV_SET_CHOICE, 0, 0, "info", "the most detailed messages logged",
     FIELD(log_level), "error|warn|info|debug"},
    /* jobsrv: jobs run by agents as a service (docs/SERVER.md, "Jobs, devices and leases") */
    {"max-file-bytes", SRV_SET_BYTES, 1024, 1LL << 40, "4G",
     "largest file (model, input, data) a job may name, i.e. the largest PUT /api/v1/files "
     "body",
     FIELD(max_file_bytes), NULL},
    {"max-polls", SRV_SET_INT, 1, 4096, "64",
     "agents' long polls that may wait at once (each holds a thread of their own pool, no "
     "database connection); more are answered 503 with Retry-After",
     FIELD(max_polls), NULL},
    /* issue 24: devices told apart, leases only to live agents */
    {"device-stale-seconds", SRV_SET_INT, 10, 86400, "120",
     "seconds a device may go unseen (no poll, heartbeat or report) while it holds no lease "
     "before it leaves every job's targets: its pending tasks end (never_answered) and new "
     "jobs skip it; a long poll waits at most half of it",
     FIELD(device_stale_seconds), NULL},
    {"lease-confirm-seconds", SRV_SET_INT, 2, 600, "10",
     "seconds an agent has to confirm a lease it was handed (its first heartbeat) before the "
     "offer is withdrawn and the task is pending again, the attempt not counted",
     FIELD(lease_confirm_seconds), NULL},
    /* TLS (issue 15): gpudiffd's own, through libmicrohttpd's GnuTLS (tls.h) */
    {"tls-cert", SRV_SET_STRING, 0, 0, "",
     "PEM certificate file to serve HTTPS with (the server's certificate first, then its "
     "intermediates); with --tls-key; empty serves plain HTTP",
     FIELD(tls_cert), NULL},
    {"tls-key", SRV_SET_STRING, 0, 0, "",
     "PEM private key file of --tls-cert (unencrypted; keep it readable by gpudiffd only)",
     FIELD(tls_key), NULL},
    {"tls-priorities", SRV_SET_STRING, 0, 0, SRV_TLS_PRIORITIES_DEFAULT,
     "GnuTLS priority string of the TLS versions and ciphers offered (the default: TLS 1.3 "
     "and 1.2 with GnuTLS's NORMAL ciphers)",
     FIELD(tls_priorities), "a GnuTLS priority string"},
};

const int srv_setting_count = (int)(sizeof srv_settings / sizeof srv_settings[0]);

_Static_assert(sizeof srv_settings / sizeof srv_settings[0] <= SRV_SETTINGS_MAX,
               "struct srv_config.from needs room for every setting");

static int
find_setting(const char *name, size_t len)
{
    for (int i = 0; i < srv_setting_count; i++)
        if (strlen(srv_settings[i].name) == len && strncmp(srv_settings[i].name, name, len) == 0)
            return i;
    return -1;
}

static int64_t *
int_field(struct srv_config *cfg, const struct srv_setting *s)
{
    return (int64_t *)(void *)((char *)cfg + s->offset);
}

/* Position of word in "a|b|c", or -1. */
static int
choice_index(const char *choices, const char *word)
{
    size_t wlen = strlen(word);
    int i = 0;
    for (const char *p = choices; *p; i++) {
        const char *bar = strchr(p, '|');
        size_t n = bar ? (size_t)(bar - p) : strlen(p);
        if (n == wlen && strncmp(p, word, n) == 0)
            return i;
        if (bar == NULL)
            break;
        p = bar + 1;
    }
    return -1;
}

/* A decimal integer, with K, M or G (powers of 1024) when bytes. */
static int
parse_int(const char *text, int bytes, int64_t *out)
{
    if (!isdigit((unsigned char)text[0]))
        return -1;
    errno = 0;
    char *end;
    long long v = strtoll(text, &end, 10);
    if (errno != 0)
        return -1;
    int shift = 0;
    if (bytes && *end != '\0') {
        switch (toupper((unsigned char)*end)) {
        case 'K':
            shift = 10;
            break;
        case 'M':
            shift = 20;
            break;
        case 'G':
            shift = 30;
            break;
        default:
            return -1;
        }
        end++;
        if (toupper((unsigned char)*end) == 'I' && toupper((unsigned char)end[1]) == 'B')
            end += 2;
        else if (toupper((unsigned char)*end) == 'B')
            end++;
    }
    if (*end != '\0' || v > (INT64_MAX >> shift))
        return -1;
    *out = (int64_t)v << shift;
    return 0;
}

static int
parse_bool(const char *text, int64_t *out)
{
    static const char *const yes[] = {"true", "yes", "on", "1"};
    static const char *const no[] = {"false", "no", "off", "0"};
    for (int i = 0; i < 4; i++) {
        if (strcmp(text, yes[i]) == 0) {
            *out = 1;
            return 0;
        }
        if (strcmp(text, no[i]) == 0) {
            *out = 0;
            return 0;
        }
    }
    return -1;
}

int
srv_listen_parse(const char *listen, char *host, size_t host_size, int *port, struct gd_err *err)
{
    const char *colon;
    const char *h = listen;
    size_t hlen;
    if (listen[0] == '[') {
        const char *close = strchr(listen, ']');
        if (close == NULL || close[1] != ':')
            return gd_err_set(err, GD_EINVAL, "\"%s\" is not [v6-address]:port", listen);
        h = listen + 1;
        hlen = (size_t)(close - h);
        colon = close + 1;
    } else {
        colon = strrchr(listen, ':');
        if (colon == NULL)
            return gd_err_set(err, GD_EINVAL, "\"%s\" is not host:port", listen);
        hlen = (size_t)(colon - listen);
    }
    int64_t p;
    if (hlen == 0 || hlen >= host_size || parse_int(colon + 1, 0, &p) != 0 || p > 65535)
        return gd_err_set(err, GD_EINVAL, "\"%s\" is not host:port with a port up to 65535",
                          listen);
    memcpy(host, h, hlen);
    host[hlen] = '\0';
    *port = (int)p;
    return 0;
}

static int
set_value(struct srv_config *cfg, int idx, const char *value, const char *where, int from,
          struct gd_err *err)
{
    const struct srv_setting *s = &srv_settings[idx];
    int64_t v = 0;
    switch (s->type) {
    case SRV_SET_LISTEN:
    case SRV_SET_STRING:
        if (s->type == SRV_SET_LISTEN) {
            char host[256];
            int port;
            struct gd_err e;
            if (srv_listen_parse(value, host, sizeof host, &port, &e) != 0)
                return gd_err_set(err, GD_EINVAL, "%s: %s", where, e.msg);
        }
        if (strlen(value) >= s->size)
            return gd_err_set(err, GD_EINVAL, "%s: longer than %zu bytes", where, s->size - 1);
        memcpy((char *)cfg + s->offset, value, strlen(value) + 1);
        cfg->from[idx] = (unsigned char)from;
        return 0;
    case SRV_SET_INT:
    case SRV_SET_BYTES:
        if (parse_int(value, s->type == SRV_SET_BYTES, &v) != 0)
            return gd_err_set(err, GD_EINVAL, "%s: \"%s\" is not %s", where, value,
                              s->type == SRV_SET_BYTES ? "a size (e.g. 512M)" : "an integer");
        if (v < s->min || v > s->max)
            return gd_err_set(err, GD_ERANGE, "%s: %s is outside %lld to %lld", where, value,
                              (long long)s->min, (long long)s->max);
        break;
    case SRV_SET_BOOL:
        if (parse_bool(value, &v) != 0)
            return gd_err_set(err, GD_EINVAL, "%s: \"%s\" is not true or false", where, value);
        break;
    case SRV_SET_CHOICE:
        v = choice_index(s->choices, value);
        if (v < 0)
            return gd_err_set(err, GD_EINVAL, "%s: \"%s\" is not one of %s", where, value,
                              s->choices);
        break;
    }
    *int_field(cfg, s) = v;
    cfg->from[idx] = (unsigned char)from;
    return 0;
}

void
srv_config_init(struct srv_config *cfg)
{
    memset(cfg, 0, sizeof *cfg);
    for (int i = 0; i < srv_setting_count; i++) {
        /* The defaults pass their own checks: check_config holds the table to that. */
        struct gd_err err;
        set_value(cfg, i, srv_settings[i].def, srv_settings[i].name, SRV_FROM_DEFAULT, &err);
    }
}

int
srv_config_set(struct srv_config *cfg, const char *name, const char *value, const char *where,
               struct gd_err *err)
{
    int idx = find_setting(name, strlen(name));
    if (idx < 0)
        return gd_err_set(err, GD_EINVAL, "%s: no setting named \"%s\"", where, name);
    return set_value(cfg, idx, value, where, SRV_FROM_FLAG, err);
}

static char *
trim(char *s)
{
    while (isspace((unsigned char)*s))
        s++;
    char *end = s + strlen(s);
    while (end > s && isspace((unsigned char)end[-1]))
        *--end = '\0';
    return s;
}

int
srv_config_load_file(struct srv_config *cfg, const char *path, struct gd_err *err)
{
    FILE *f = fopen(path, "r");
    if (f == NULL)
        return gd_err_set(err, errno == ENOENT ? GD_ENOENT : GD_EIO, "%s: %s", path,
                          strerror(errno));
    char line[2048];
    int lineno = 0, rc = 0;
    while (rc == 0 && fgets(line, sizeof line, f) != NULL) {
        lineno++;
        char where[SRV_PATH_MAX + 64];
        snprintf(where, sizeof where, "%s:%d", path, lineno);
        if (strchr(line, '\n') == NULL && !feof(f)) {
            rc = gd_err_set(err, GD_EINVAL, "%s: line longer than %zu bytes", where,
                            sizeof line - 2);
            break;
        }
        char *s = trim(line);
        if (*s == '\0' || *s == '#')
            continue;
        char *eq = strchr(s, '=');
        if (eq == NULL) {
            rc = gd_err_set(err, GD_EINVAL, "%s: expected \"name = value\"", where);
            break;
        }
        *eq = '\0';
        char *name = trim(s), *value = trim(eq + 1);
        size_t vlen = strlen(value);
        if (vlen >= 2 && value[0] == '"' && value[vlen - 1] == '"') {
            value[vlen - 1] = '\0';
            value++;
        }
        int idx = find_setting(name, strlen(name));
        if (idx < 0) {
            rc = gd_err_set(err, GD_EINVAL, "%s: no setting named \"%s\"", where, name);
            break;
        }
        char at[SRV_PATH_MAX + 128];
        snprintf(at, sizeof at, "%s: %s", where, name);
        rc = set_value(cfg, idx, value, at, SRV_FROM_FILE, err);
    }
    if (rc == 0 && ferror(f))
        rc = gd_err_set(err, GD_EIO, "%s: read error", path);
    fclose(f);
    return rc;
}

/* Splits "--name=value" or "--name"; 1 when arg is a flag of the table (or --config). */
static int
flag_of(const char *arg, int *idx, const char **inline_value)
{
    if (strncmp(arg, "--", 2) != 0)
        return 0;
    const char *name = arg + 2, *eq = strchr(name, '=');
    size_t len = eq ? (size_t)(eq - name) : strlen(name);
    *inline_value = eq ? eq + 1 : NULL;
    if (len == 6 && strncmp(name, "config", 6) == 0) {
        *idx = -1;
        return 1;
    }
    *idx = find_setting(name, len);
    return *idx >= 0;
}

int
srv_config_args(struct srv_config *cfg, int argc, char **argv, char **rest, int *n_rest,
                struct gd_err *err)
{
    int idx;
    const char *value;
    /* The file first, wherever --config stands, so that every flag overrides it. */
    for (int i = 0; i < argc; i++) {
        if (!flag_of(argv[i], &idx, &value))
            continue;
        int takes_next = value == NULL && (idx < 0 || srv_settings[idx].type != SRV_SET_BOOL);
        if (takes_next)
            i++;
        if (idx >= 0)
            continue;
        if (takes_next && i >= argc)
            return gd_err_set(err, GD_EINVAL, "--config needs a file");
        int rc = srv_config_load_file(cfg, value ? value : argv[i], err);
        if (rc != 0)
            return rc;
    }
    int n = 0;
    for (int i = 0; i < argc; i++) {
        if (!flag_of(argv[i], &idx, &value)) {
            rest[n++] = argv[i];
            continue;
        }
        const char *name = idx < 0 ? "config" : srv_settings[idx].name;
        int is_bool = idx >= 0 && srv_settings[idx].type == SRV_SET_BOOL;
        if (value == NULL && is_bool) {
            value = "true";
        } else if (value == NULL) {
            if (i + 1 >= argc)
                return gd_err_set(err, GD_EINVAL, "--%s needs a value", name);
            value = argv[++i];
        }
        if (idx < 0)
            continue;
        char where[80];
        snprintf(where, sizeof where, "--%s", name);
        int rc = set_value(cfg, idx, value, where, SRV_FROM_FLAG, err);
        if (rc != 0)
            return rc;
    }
    *n_rest = n;
    return 0;
}

/* A byte count as the file would spell it: 60K, 900M, 1G, 1000. */
static void
bytes_text(int64_t v, char *out, size_t size)
{
    if (v % (1 << 30) == 0 && v > 0)
        snprintf(out, size, "%lldG", (long long)(v >> 30));
    else if (v % (1 << 20) == 0 && v > 0)
        snprintf(out, size, "%lldM", (long long)(v >> 20));
    else if (v % (1 << 10) == 0 && v > 0)
        snprintf(out, size, "%lldK", (long long)(v >> 10));
    else
        snprintf(out, size, "%lld", (long long)v);
}

/* "(1 to 256)", "(one of normal, full)", ... from the table's own min and max. */
static void
range_text(const struct srv_setting *s, char *out, size_t size)
{
    char lo[24], hi[24];
    switch (s->type) {
    case SRV_SET_INT:
        snprintf(out, size, "an integer, %lld to %lld", (long long)s->min, (long long)s->max);
        break;
    case SRV_SET_BYTES:
        bytes_text(s->min, lo, sizeof lo);
        bytes_text(s->max, hi, sizeof hi);
        snprintf(out, size, "bytes with an optional K, M or G, %s to %s", lo, hi);
        break;
    case SRV_SET_BOOL:
        snprintf(out, size, "true or false");
        break;
    case SRV_SET_CHOICE:
        snprintf(out, size, "one of %s", s->choices);
        break;
    case SRV_SET_LISTEN:
        snprintf(out, size, "host:port");
        break;
    case SRV_SET_STRING:
        snprintf(out, size, "%s", s->choices != NULL ? s->choices : "a path");
        break;
    }
}

/* Writes text in lines of at most 78 columns, each starting with prefix. */
static void
wrap(FILE *out, const char *prefix, const char *text)
{
    size_t width = 78 - strlen(prefix);
    const char *p = text;
    while (*p) {
        size_t n = strlen(p);
        if (n > width) {
            n = width;
            while (n > 0 && p[n] != ' ')
                n--;
            if (n == 0)
                n = width;
        }
        fprintf(out, "%s%.*s\n", prefix, (int)n, p);
        p += n;
        while (*p == ' ')
            p++;
    }
}

static const char *
value_name(enum srv_setting_type type)
{
    switch (type) {
    case SRV_SET_STRING:
        return " PATH";
    case SRV_SET_LISTEN:
        return " HOST:PORT";
    case SRV_SET_INT:
        return " N";
    case SRV_SET_BYTES:
        return " SIZE";
    case SRV_SET_CHOICE:
        return " WORD";
    case SRV_SET_BOOL:
        break;
    }
    return "";
}

void
srv_config_usage(FILE *out)
{
    fprintf(out, "  --config FILE\n      read settings from FILE first (flags override it)\n");
    for (int i = 0; i < srv_setting_count; i++) {
        const struct srv_setting *s = &srv_settings[i];
        char range[128], text[512];
        range_text(s, range, sizeof range);
        snprintf(text, sizeof text, "%s (%s; default %s)", s->help, range,
                 s->def[0] ? s->def : "empty");
        fprintf(out, "  --%s%s\n", s->name,
                s->type == SRV_SET_STRING && s->choices != NULL ? " TEXT" : value_name(s->type));
        wrap(out, "      ", text);
    }
}

void
srv_config_write_example(FILE *out)
{
    wrap(out, "# ",
         "gpudiffd.conf: the settings of gpudiffd, each shown commented out with its "
         "default. Lines are `name = value`; a line starting with '#' is a comment; "
         "values may be in double quotes. Flags (--name value) override this file. "
         "Made by `gpudiffd config --example` from the table in server/config.c, "
         "which docs/SERVER.md describes.");
    for (int i = 0; i < srv_setting_count; i++) {
        const struct srv_setting *s = &srv_settings[i];
        char range[128], text[512];
        range_text(s, range, sizeof range);
        snprintf(text, sizeof text, "%s: %s (%s).", s->name, s->help, range);
        fprintf(out, "\n");
        wrap(out, "# ", text);
        fprintf(out, "#%s =%s%s\n", s->name, s->def[0] ? " " : "", s->def);
    }
}

/* A setting's current value as the file would spell it. */
static void
value_text(const struct srv_config *cfg, const struct srv_setting *s, char *out, size_t size)
{
    const char *base = (const char *)cfg + s->offset;
    int64_t v = 0;
    if (s->type != SRV_SET_STRING && s->type != SRV_SET_LISTEN)
        memcpy(&v, base, sizeof v);
    switch (s->type) {
    case SRV_SET_STRING:
    case SRV_SET_LISTEN:
        snprintf(out, size, "%s", base);
        break;
    case SRV_SET_INT:
        snprintf(out, size, "%lld", (long long)v);
        break;
    case SRV_SET_BYTES:
        bytes_text(v, out, size);
        break;
    case SRV_SET_BOOL:
        snprintf(out, size, "%s", v ? "true" : "false");
        break;
    case SRV_SET_CHOICE: {
        const char *p = s->choices;
        for (int64_t k = 0; k < v && p != NULL; k++) {
            p = strchr(p, '|');
            if (p != NULL)
                p++;
        }
        size_t n = p ? strcspn(p, "|") : 0;
        snprintf(out, size, "%.*s", (int)n, p ? p : "");
        break;
    }
    }
}

void
srv_config_write(const struct srv_config *cfg, FILE *out)
{
    for (int i = 0; i < srv_setting_count; i++) {
        char v[SRV_PATH_MAX + 8];
        value_text(cfg, &srv_settings[i], v, sizeof v);
        fprintf(out, "%s = \"%s\"\n", srv_settings[i].name, v);
    }
}

void
srv_config_log(const struct srv_config *cfg)
{
    static const char *const from[] = {"default", "config file", "flag"};
    for (int i = 0; i < srv_setting_count; i++) {
        char v[SRV_PATH_MAX + 8];
        value_text(cfg, &srv_settings[i], v, sizeof v);
        SRV_LOG(GD_LOG_INFO, NULL, "setting %s = \"%s\" (%s)", srv_settings[i].name, v,
                from[cfg->from[i]]);
    }
}
