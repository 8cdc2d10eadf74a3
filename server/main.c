/*
 * main.c: gpudiffd's entry point: the subcommands (serve, the default; migrate; token
 * create|list|revoke; config), the start-up sequence of serve and its clean shutdown on
 * SIGINT or SIGTERM. Exit codes: 0 success, 1 failure, 2 bad command line or settings.
 */
#include <errno.h>
#include <limits.h>
#include <malloc.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "gpudiff/session.h"
#include "compare.h"
#include "db.h"
#include "server.h"
#include "tls.h"

#define EXIT_USAGE 2

static void
usage(FILE *out)
{
    fprintf(out,
            "Usage: gpudiffd [COMMAND] [OPTIONS]\n\n"
            "Stores the runs that gpudiff agents upload (every layer's output tensor) in SQLite\n"
            "or PostgreSQL (--db) and serves them over a REST API (docs/SERVER.md,\n"
            "schema/openapi.yaml).\n\n"
            "Commands:\n"
            "  serve                  run the daemon (the default command)\n"
            "  migrate                bring the database to the newest schema and exit\n"
            "  token create --role viewer|agent|admin [--label TEXT]\n"
            "                         make a token and print it (it is shown only this once)\n"
            "  token list             list the tokens (their roles, labels, hints; never the\n"
            "                         tokens)\n"
            "  token revoke ID        revoke token ID\n"
            "  config [--example]     print the effective settings in config-file form, or\n"
            "                         with --example the commented example file\n"
            "  backup --to FILE       copy the database, online and consistent, into FILE\n"
            "                         (SQLite: its backup API, a database file; PostgreSQL:\n"
            "                         pg_dump's custom format); FILE is made whole, then\n"
            "                         renamed into place, and must not exist\n"
            "  restore --from FILE    replace the database's content with the backup FILE\n"
            "                         (checked first; stop the daemons on it meanwhile), then\n"
            "                         migrate it to this build's schema\n\n"
            "Options (every command; flags override the config file):\n");
    srv_config_usage(out);
    fprintf(out, "  --help               print this help\n"
                 "  --version            print the version\n\n"
                 "Exit codes: 0 success, 1 failure, 2 bad command line or settings.\n");
}

static int
open_db(const struct srv_config *cfg, int migrate, struct srv_db **out)
{
    struct srv_db_opts opts = {(int)cfg->busy_timeout_ms,
                               (int)cfg->db_sync,
                               cfg->db_cache,
                               cfg->db_mmap > 0 ? cfg->db_mmap : -1,
                               0,
                               0};
    struct gd_err err;
    int from = 0, to = 0;
    int rc = srv_db_open(cfg->db, &opts, out, &err);
    if (rc == 0 && migrate)
        rc = srv_db_migrate(*out, &from, &to, &err);
    if (rc != 0) {
        fprintf(stderr, "gpudiffd: %s\n", err.msg);
        srv_db_close(*out);
        *out = NULL;
        return 1;
    }
    return 0;
}

static int
cmd_migrate(const struct srv_config *cfg, int argc, char **argv)
{
    if (argc > 0) {
        fprintf(stderr, "gpudiffd: migrate takes no argument (%s)\n", argv[0]);
        return EXIT_USAGE;
    }
    struct srv_db_opts opts = {(int)cfg->busy_timeout_ms,
                               (int)cfg->db_sync,
                               cfg->db_cache,
                               cfg->db_mmap > 0 ? cfg->db_mmap : -1,
                               0,
                               0};
    struct srv_db *db = NULL;
    struct gd_err err;
    int from = 0, to = 0;
    int rc = srv_db_open(cfg->db, &opts, &db, &err);
    if (rc == 0)
        rc = srv_db_migrate(db, &from, &to, &err);
    srv_db_close(db);
    if (rc != 0) {
        fprintf(stderr, "gpudiffd: %s\n", err.msg);
        return 1;
    }
    char where[512];
    srv_db_describe(cfg->db, where, sizeof where);
    printf("%s: schema version %d%s%d\n", where, from, from == to ? ", newest: " : " -> ", to);
    return 0;
}

/* backup --to FILE, restore --from FILE: flag is "--to" or "--from". */
static int
file_arg(const char *cmd, const char *flag, int argc, char **argv, const char **out)
{
    size_t n = strlen(flag);
    *out = NULL;
    for (int i = 0; i < argc; i++) {
        if (strcmp(argv[i], flag) == 0 && i + 1 < argc && *out == NULL)
            *out = argv[++i];
        else if (strncmp(argv[i], flag, n) == 0 && argv[i][n] == '=' && *out == NULL)
            *out = argv[i] + n + 1;
        else {
            fprintf(stderr, "gpudiffd: %s: unexpected %s (%s %s FILE)\n", cmd, argv[i], cmd,
                    flag);
            return EXIT_USAGE;
        }
    }
    if (*out == NULL || (*out)[0] == '\0') {
        fprintf(stderr, "gpudiffd: %s %s FILE is required\n", cmd, flag);
        return EXIT_USAGE;
    }
    return 0;
}

static int
cmd_backup(const struct srv_config *cfg, int argc, char **argv)
{
    const char *to = NULL;
    int rc = file_arg("backup", "--to", argc, argv, &to);
    if (rc != 0)
        return rc;
    struct stat st;
    if (lstat(to, &st) == 0) {
        fprintf(stderr, "gpudiffd: backup: %s exists; give a new file\n", to);
        return EXIT_USAGE;
    }
    struct srv_db_opts opts = {(int)cfg->busy_timeout_ms,
                               (int)cfg->db_sync,
                               cfg->db_cache,
                               cfg->db_mmap > 0 ? cfg->db_mmap : -1,
                               0,
                               0};
    struct gd_err err;
    char where[512];
    srv_db_describe(cfg->db, where, sizeof where);
    fprintf(stderr, "gpudiffd: backing up %s to %s\n", where, to);
    if (srv_db_backup(cfg->db, &opts, to, &err) != 0) {
        fprintf(stderr, "gpudiffd: backup: %s\n", err.msg);
        return 1;
    }
    if (stat(to, &st) == 0)
        fprintf(stderr, "gpudiffd: backup of %s in %s (%lld bytes)\n", where, to,
                (long long)st.st_size);
    return 0;
}

static int
cmd_restore(const struct srv_config *cfg, int argc, char **argv)
{
    const char *from = NULL;
    int rc = file_arg("restore", "--from", argc, argv, &from);
    if (rc != 0)
        return rc;
    struct srv_db_opts opts = {(int)cfg->busy_timeout_ms,
                               (int)cfg->db_sync,
                               cfg->db_cache,
                               cfg->db_mmap > 0 ? cfg->db_mmap : -1,
                               0,
                               0};
    struct gd_err err;
    char where[512];
    srv_db_describe(cfg->db, where, sizeof where);
    fprintf(stderr, "gpudiffd: restoring %s from %s\n", where, from);
    if (srv_db_restore(cfg->db, &opts, from, &err) != 0) {
        fprintf(stderr, "gpudiffd: restore: %s\n", err.msg);
        return 1;
    }
    struct srv_db *db = NULL;
    if (open_db(cfg, 1, &db) != 0)
        return 1;
    int version = 0;
    rc = srv_db_version(db, &version, &err);
    srv_db_close(db);
    if (rc != 0) {
        fprintf(stderr, "gpudiffd: restore: %s\n", err.msg);
        return 1;
    }
    fprintf(stderr, "gpudiffd: %s restored from %s, at schema version %d\n", where, from,
            version);
    return 0;
}

static int
cmd_token(const struct srv_config *cfg, int argc, char **argv)
{
    if (argc < 1) {
        fprintf(stderr, "gpudiffd: token create|list|revoke\n");
        return EXIT_USAGE;
    }
    const char *verb = argv[0];
    const char *role = NULL, *label = "", *id_text = NULL;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--role") == 0 && i + 1 < argc)
            role = argv[++i];
        else if (strncmp(argv[i], "--role=", 7) == 0)
            role = argv[i] + 7;
        else if (strcmp(argv[i], "--label") == 0 && i + 1 < argc)
            label = argv[++i];
        else if (strncmp(argv[i], "--label=", 8) == 0)
            label = argv[i] + 8;
        else if (id_text == NULL && argv[i][0] != '-')
            id_text = argv[i];
        else {
            fprintf(stderr, "gpudiffd: token %s: unexpected %s\n", verb, argv[i]);
            return EXIT_USAGE;
        }
    }
    struct srv_db *db = NULL;
    struct gd_err err;
    int rc = 0;
    if (strcmp(verb, "create") == 0) {
        int r = role ? srv_role_from_name(role) : -1;
        if (r < 0 || id_text != NULL) {
            fprintf(stderr, "gpudiffd: token create --role viewer|agent|admin [--label TEXT]\n");
            return EXIT_USAGE;
        }
        if (open_db(cfg, 1, &db) != 0)
            return 1;
        char token[SRV_TOKEN_LEN + 1];
        int64_t id = 0;
        rc = srv_token_create(db, (enum srv_role)r, label, token, &id, &err);
        if (rc == 0) {
            printf("%s\n", token);
            fprintf(stderr, "gpudiffd: token %lld (%s) made; it is shown only this once\n",
                    (long long)id, role);
        }
    } else if (strcmp(verb, "list") == 0 && role == NULL && id_text == NULL) {
        if (open_db(cfg, 1, &db) != 0)
            return 1;
        json_t *list = NULL;
        rc = srv_db_token_list(db, &list, &err);
        if (rc == 0) {
            printf("%-5s %-7s %-8s %-21s %-21s %s\n", "id", "role", "hint", "created", "revoked",
                   "label");
            size_t i;
            json_t *t;
            json_array_foreach(json_object_get(list, "tokens"), i, t)
            {
                json_t *rev = json_object_get(t, "revoked_at");
                printf("%-5lld %-7s %-8s %-21s %-21s %s\n",
                       (long long)json_integer_value(json_object_get(t, "id")),
                       json_string_value(json_object_get(t, "role")),
                       json_string_value(json_object_get(t, "hint")),
                       json_string_value(json_object_get(t, "created_at")),
                       json_is_string(rev) ? json_string_value(rev) : "-",
                       json_string_value(json_object_get(t, "label")));
            }
            json_decref(list);
        }
    } else if (strcmp(verb, "revoke") == 0 && role == NULL) {
        int64_t id;
        if (srv_parse_int(id_text, 1, INT64_MAX / 10, &id) != 0) {
            fprintf(stderr, "gpudiffd: token revoke ID (a number from `token list`)\n");
            return EXIT_USAGE;
        }
        if (open_db(cfg, 1, &db) != 0)
            return 1;
        rc = srv_db_token_revoke(db, id, srv_now(), &err);
        if (rc == 0)
            fprintf(stderr, "gpudiffd: token %lld revoked\n", (long long)id);
    } else {
        fprintf(stderr, "gpudiffd: token create|list|revoke (see --help)\n");
        return EXIT_USAGE;
    }
    srv_db_close(db);
    if (rc != 0) {
        fprintf(stderr, "gpudiffd: %s\n", err.msg);
        return 1;
    }
    return 0;
}

static int
cmd_config(const struct srv_config *cfg, int argc, char **argv)
{
    if (argc == 1 && strcmp(argv[0], "--example") == 0) {
        srv_config_write_example(stdout);
        return 0;
    }
    if (argc > 0) {
        fprintf(stderr, "gpudiffd: config [--example]\n");
        return EXIT_USAGE;
    }
    srv_config_write(cfg, stdout);
    return 0;
}

/* The folder part of path ("." when it has none). */
static void
dir_of(const char *path, char *out, size_t size)
{
    const char *slash = strrchr(path, '/');
    if (slash == NULL)
        snprintf(out, size, ".");
    else if (slash == path)
        snprintf(out, size, "/");
    else
        snprintf(out, size, "%.*s", (int)(slash - path), path);
}

/*
 * Each connection takes a descriptor, and an upload a second one for its spill file: the
 * soft limit is raised towards the hard one to fit --max-connections (systemd and shells
 * often start daemons at 1024). Where the hard limit is lower, the connection limit is.
 */
static void
raise_file_limit(struct srv_config *cfg)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) != 0)
        return;
    rlim_t want = (rlim_t)cfg->max_connections * 2 + 256;
    if (rl.rlim_cur < want) {
        rl.rlim_cur = rl.rlim_max == RLIM_INFINITY || rl.rlim_max > want ? want : rl.rlim_max;
        setrlimit(RLIMIT_NOFILE, &rl);
        getrlimit(RLIMIT_NOFILE, &rl);
    }
    if (rl.rlim_cur < want) {
        int64_t fit = ((int64_t)rl.rlim_cur - 256) / 2;
        if (fit < 16)
            fit = 16;
        SRV_LOG(GD_LOG_WARN, NULL,
                "the descriptor limit is %llu (ulimit -n): --max-connections lowered from %lld "
                "to %lld",
                (unsigned long long)rl.rlim_cur, (long long)cfg->max_connections, (long long)fit);
        cfg->max_connections = fit;
    }
}

static int
cmd_serve(struct srv_config *cfg, int argc, char **argv)
{
    if (argc > 0) {
        fprintf(stderr, "gpudiffd: serve: unexpected %s (see --help)\n", argv[0]);
        return EXIT_USAGE;
    }
    struct srv_server srv;
    memset(&srv, 0, sizeof srv);
    srv.cfg = *cfg;
    struct gd_err err;
    struct srv_retention *retention = NULL;
    struct srv_fleet_sweep *fleet_sweep = NULL; /* jobsrv: lease expiry every 5 s */
    int rc = 1;
    if (getrandom(&srv.boot_id, sizeof srv.boot_id, 0) != (ssize_t)sizeof srv.boot_id)
        srv.boot_id = (uint32_t)getpid();

    /*
     * Before any thread exists: every thread would otherwise get an arena of its own, each
     * keeping what was freed in it. A fixed mmap threshold keeps blocks of 4 MiB or more
     * (diff texts, run.json bodies, tensors) out of the arenas: they go back to the system
     * when freed, where glibc's sliding threshold would soon keep them in the heap. (At
     * 1 MiB each upload's zstd context, about 1.3 MB, was mapped and unmapped again.)
     */
    mallopt(M_ARENA_MAX, (int)cfg->malloc_arenas);
    mallopt(M_MMAP_THRESHOLD, 4 << 20);
    SRV_LOG(GD_LOG_INFO, NULL, "gpudiffd %s starting (instance %08x, pid %d)", gd_version(),
            srv.boot_id, (int)getpid());
    srv_config_log(cfg);
    if (geteuid() == 0) {
        if (!cfg->allow_root) {
            SRV_LOG(GD_LOG_ERROR, NULL,
                    "refusing to serve as root: a daemon that parses what the network sends "
                    "should hold no more rights than its files need; run it as a user of its "
                    "own, or pass --allow-root");
            return EXIT_USAGE;
        }
        SRV_LOG(GD_LOG_WARN, NULL, "serving as root (--allow-root)");
    }
    raise_file_limit(&srv.cfg);
    if (cfg->web_root[0] != '\0' && realpath(cfg->web_root, srv.web_root) == NULL) {
        SRV_LOG(GD_LOG_ERROR, NULL, "--web-root %s: %s", cfg->web_root, strerror(errno));
        return EXIT_USAGE;
    }
    char dir[PATH_MAX];
    if (cfg->spill_dir[0] != '\0')
        snprintf(dir, sizeof dir, "%s", cfg->spill_dir);
    else if (srv_sql_backend_for(cfg->db) != &srv_sql_sqlite)
        snprintf(dir, sizeof dir, "%s", getenv("TMPDIR") != NULL ? getenv("TMPDIR") : "/var/tmp");
    else
        dir_of(cfg->db, dir, sizeof dir);
    if (realpath(dir, srv.spill_dir) == NULL || access(srv.spill_dir, W_OK) != 0) {
        SRV_LOG(GD_LOG_ERROR, NULL, "spill folder %s: %s", dir, strerror(errno));
        return EXIT_USAGE;
    }

    /* TLS: the certificate and key are checked now, so that a bad one stops the start. */
    time_t now = time(NULL);
    if (srv_tls_load(cfg->tls_cert, cfg->tls_key, cfg->tls_priorities, now, &srv.tls, &err) !=
        0) {
        SRV_LOG(GD_LOG_ERROR, NULL, "%s", err.msg);
        return EXIT_USAGE;
    }
    if (srv.tls != NULL) {
        char line[1536];
        srv_tls_describe(srv.tls, now, line, sizeof line);
        SRV_LOG(GD_LOG_INFO, NULL, "%s", line);
        if (srv.tls->not_after - now < 14 * 86400)
            SRV_LOG(GD_LOG_WARN, NULL,
                    "the TLS certificate expires in less than 14 days: renew it");
        char warning[1400];
        if (srv_tls_key_warning(srv.tls, warning, sizeof warning))
            SRV_LOG(GD_LOG_WARN, NULL, "%s", warning);
    } else {
        SRV_LOG(GD_LOG_INFO, NULL, "TLS off: plain HTTP (--tls-cert and --tls-key serve HTTPS)");
    }

    /* Signals go to sigwait below: blocked before any thread exists, so all inherit it. */
    sigset_t stop;
    sigemptyset(&stop);
    sigaddset(&stop, SIGINT);
    sigaddset(&stop, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &stop, NULL);
    signal(SIGPIPE, SIG_IGN);

    struct srv_db_opts opts = {(int)cfg->busy_timeout_ms,
                               (int)cfg->db_sync,
                               cfg->db_cache,
                               cfg->db_mmap > 0 ? cfg->db_mmap : -1,
                               cfg->device_stale_seconds,
                               cfg->lease_confirm_seconds};
    if (srv_store_open(cfg->db, &opts, &srv.store, &err) != 0) {
        SRV_LOG(GD_LOG_ERROR, NULL, "%s", err.msg);
        srv_tls_free(srv.tls);
        return 1;
    }
    struct srv_db *db = NULL;
    int from = 0, to = 0;
    int64_t tokens[4] = {0};
    char where[512]; /* the database without its password */
    srv_db_describe(cfg->db, where, sizeof where);
    if (srv_store_acquire(srv.store, &db, &err) != 0 || srv_db_migrate(db, &from, &to, &err) != 0 ||
        srv_db_token_counts(db, tokens, &err) != 0) {
        SRV_LOG(GD_LOG_ERROR, NULL, "%s: %s", where, err.msg);
        srv_store_release(srv.store, db);
        goto done;
    }
    srv_store_release(srv.store, db);
    SRV_LOG(GD_LOG_INFO, NULL, "database: %s, at schema version %d", where, to);
    struct stat st;
    if (srv_sql_backend_for(cfg->db) == &srv_sql_sqlite && stat(cfg->db, &st) == 0 &&
        (st.st_mode & 077) != 0)
        SRV_LOG(GD_LOG_WARN, NULL,
                "%s is readable or writable by others (mode %04o): chmod 600 it and its -wal "
                "and -shm files (gpudiffd makes new databases 0600)",
                cfg->db, (unsigned)(st.st_mode & 07777));
    SRV_LOG(GD_LOG_INFO, NULL, "tokens: %lld viewer, %lld agent, %lld admin%s",
            (long long)tokens[SRV_ROLE_VIEWER], (long long)tokens[SRV_ROLE_AGENT],
            (long long)tokens[SRV_ROLE_ADMIN],
            tokens[1] + tokens[2] + tokens[3] == 0
                ? " (none: every write is refused until `gpudiffd token create`)"
                : "");
    SRV_LOG(GD_LOG_INFO, NULL, "retention: %s",
            cfg->retention_days > 0 ? "on (tensors of older runs are dropped daily)" : "off");

    struct srv_compare_opts copts = {(int)cfg->compare_threads, (int)cfg->compare_queue,
                                     (double)cfg->diff_timeout_ms / 1000.0, cfg->diff_max_memory,
                                     cfg->diff_cache_max};
    if (srv_retention_start(srv.store, cfg->retention_days, &retention, &err) != 0 ||
        srv_compare_start(srv.store, &copts, &srv.compare, &err) != 0 ||
        srv_fleet_sweep_start(srv.store, 5, &fleet_sweep, &err) != 0 ||
        srv_health_start(srv.store, &srv.health, &err) != 0 || srv_http_start(&srv, &err) != 0) {
        SRV_LOG(GD_LOG_ERROR, NULL, "%s", err.msg);
        goto done;
    }
    char host[256];
    int port;
    srv_listen_parse(cfg->listen, host, sizeof host, &port, &err);
    SRV_LOG(GD_LOG_INFO, NULL, "listening on %s://%s%s%s:%d/", srv.tls != NULL ? "https" : "http",
            strchr(host, ':') ? "[" : "", host, strchr(host, ':') ? "]" : "", srv.port);

    int sig = 0;
    sigwait(&stop, &sig);
    SRV_LOG(GD_LOG_INFO, NULL,
            "signal %d: stopping (requests in progress are finished; diffs being computed "
            "stop at their next layer and answer 503)",
            sig);
    rc = 0;
done:
    /* Requests first (they may queue comparisons), then the worker, then the database. */
    srv_http_stop(&srv);
    srv_compare_stop(srv.compare);
    srv_retention_stop(retention);
    srv_fleet_sweep_stop(fleet_sweep);
    srv_health_stop(srv.health);
    srv_store_close(srv.store);
    srv_tls_free(srv.tls);
    SRV_LOG(GD_LOG_INFO, NULL, "stopped");
    return rc;
}

int
main(int argc, char **argv)
{
    /* Jansson's hash seed, set once before any thread could race to set it. */
    json_object_seed(0);
    struct srv_config cfg;
    srv_config_init(&cfg);
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            usage(stdout);
            return 0;
        }
        if (strcmp(argv[i], "--version") == 0) {
            printf("gpudiffd %s\n", gd_version());
            return 0;
        }
    }
    char **rest = calloc((size_t)argc + 1, sizeof *rest);
    if (rest == NULL)
        return 1;
    int n_rest = 0;
    struct gd_err err;
    if (srv_config_args(&cfg, argc - 1, argv + 1, rest, &n_rest, &err) != 0) {
        fprintf(stderr, "gpudiffd: %s\n", err.msg);
        free(rest);
        return EXIT_USAGE;
    }
    srv_log_init((int)cfg.log_level);
    const char *cmd = n_rest > 0 && rest[0][0] != '-' ? rest[0] : "serve";
    int skip = n_rest > 0 && rest[0][0] != '-' ? 1 : 0;
    int rc;
    if (strcmp(cmd, "serve") == 0)
        rc = cmd_serve(&cfg, n_rest - skip, rest + skip);
    else if (strcmp(cmd, "migrate") == 0)
        rc = cmd_migrate(&cfg, n_rest - skip, rest + skip);
    else if (strcmp(cmd, "token") == 0)
        rc = cmd_token(&cfg, n_rest - skip, rest + skip);
    else if (strcmp(cmd, "config") == 0)
        rc = cmd_config(&cfg, n_rest - skip, rest + skip);
    else if (strcmp(cmd, "backup") == 0)
        rc = cmd_backup(&cfg, n_rest - skip, rest + skip);
    else if (strcmp(cmd, "restore") == 0)
        rc = cmd_restore(&cfg, n_rest - skip, rest + skip);
    else {
        fprintf(stderr, "gpudiffd: unknown command %s (see --help)\n", cmd);
        rc = EXIT_USAGE;
    }
    free(rest);
    return rc;
}
