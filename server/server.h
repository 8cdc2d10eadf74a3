/*
 * server.h: what gpudiffd's parts share: settings, logging, error codes and their HTTP
 * statuses, token roles, the server object, the per-request struct and the route table.
 * Names carry the srv_ prefix. Storage is in db.h, the tensor codec in blob.h.
 */
#ifndef GPUDIFF_SERVER_H
#define GPUDIFF_SERVER_H

#include <limits.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>

#include <jansson.h>
#include <microhttpd.h>

#include "gpudiff/error.h"
#include "gpudiff/log.h"
#include "head.h"

struct srv_db;
struct srv_store;
struct srv_compare;

/* ---- errors ---- */

/*
 * XX(name, value, HTTP status, code in JSON errors): the server's own error codes. They
 * travel in struct gd_err like the engine's GD_E* codes, below them in value, and one table
 * in errors.c gives both kinds their HTTP status and JSON code.
 */
#define SRV_ERRNO_MAP(XX)                                                                          \
    XX(EBADJSON, -100, 400, "bad_json")                                                            \
    XX(EBADREQ, -101, 400, "bad_request")                                                          \
    XX(EBADBODY, -102, 400, "bad_body")                                                            \
    XX(EHASH, -103, 400, "hash_mismatch")                                                          \
    XX(EPATH, -104, 400, "bad_path")                                                               \
    XX(EAUTH, -105, 401, "unauthorized")                                                           \
    XX(EFORBIDDEN, -106, 403, "forbidden")                                                         \
    XX(ENOTFOUND, -107, 404, "not_found")                                                          \
    XX(EMETHOD, -108, 405, "method_not_allowed")                                                   \
    XX(ECONFLICT, -109, 409, "conflict")                                                           \
    XX(EINCOMPLETE, -110, 409, "run_incomplete")                                                   \
    XX(EGONE, -111, 410, "gone")                                                                   \
    XX(ELENGTH, -112, 411, "length_required")                                                      \
    XX(ETOOBIG, -113, 413, "body_too_large")                                                       \
    XX(EMEDIA, -114, 415, "unsupported_media_type")                                                \
    XX(EBUSY, -115, 503, "busy")                                                                   \
    XX(EINTERNAL, -116, 500, "internal")                                                           \
    XX(EURI, -117, 414, "uri_too_long")                                                            \
    XX(EHEADERS, -118, 431, "headers_too_large")                                                   \
    XX(EVERSION, -119, 505, "http_version_not_supported")                                          \
    XX(ETIMEOUT, -120, 408, "request_timeout")                                                     \
    XX(ECONNLIMIT, -121, 503, "too_many_connections")                                              \
    XX(EDIFFBIG, -122, 422, "diff_too_large")                                                      \
    XX(EDIFFTIME, -123, 503, "diff_timeout")                                                       \
    XX(EQUEUE, -124, 503, "queue_full")                                                            \
    XX(EDEFER, -125, 500, "internal")      /* a handler asks to run again on the compare pool */   \
    XX(EDEFERWRITE, -126, 500, "internal") /* ... on the write pool */                          \
    /* jobsrv: jobs, devices and leases (issue 15 item 1) */                                      \
    XX(EDEFERPOLL, -127, 500, "internal") /* ... on the long-poll pool */                       \
    XX(ENODEVICE, -128, 400, "no_device")                                                          \
    XX(EMISSING, -129, 409, "missing_files")                                                       \
    XX(ELEASE, -130, 409, "lease_lost")

enum srv_errno {
#define SRV__ERR_ENUM(name, value, status, code) SRV_##name = (value),
    SRV_ERRNO_MAP(SRV__ERR_ENUM)
#undef SRV__ERR_ENUM
};

/* The HTTP status for a GD_E* or SRV_E* code (500 for a code in neither list). */
unsigned srv_err_status(int code);

/* The code's name in JSON errors ("bad_body", "not_found", ...). */
const char *srv_err_code(int code);

/* ---- token roles: each includes what the ones before it may do ---- */

enum srv_role {
    SRV_ROLE_NONE = 0, /* no token */
    SRV_ROLE_VIEWER,   /* read runs, models, tensors */
    SRV_ROLE_AGENT,    /* and write runs */
    SRV_ROLE_ADMIN     /* and pick baselines, manage tokens */
};

/* "none", "viewer", "agent", "admin". */
const char *srv_role_name(enum srv_role role);

/* Parses "viewer", "agent" or "admin"; -1 for anything else. */
int srv_role_from_name(const char *name);

/* ---- settings (config.c): one table drives the file parser, the flags and --help ---- */

enum srv_setting_type {
    SRV_SET_STRING, /* free text (paths) */
    SRV_SET_LISTEN, /* host:port, [v6]:port */
    SRV_SET_INT,    /* a decimal integer within min..max */
    SRV_SET_BYTES,  /* an integer with an optional K, M or G suffix (powers of 1024) */
    SRV_SET_BOOL,   /* true|false|yes|no|on|off|1|0; a bare flag means true */
    SRV_SET_CHOICE  /* one word of `choices`, stored as its position */
};

#define SRV_PATH_MAX     1024
#define SRV_SETTINGS_MAX 48

struct srv_config {
    char listen[256];
    char db[SRV_PATH_MAX];
    char web_root[SRV_PATH_MAX];
    char spill_dir[SRV_PATH_MAX];
    char tls_cert[SRV_PATH_MAX];      /* "": plain HTTP */
    char tls_key[SRV_PATH_MAX];
    char tls_priorities[256];
    int64_t max_body;
    int64_t max_json;
    int64_t threads;
    int64_t max_connections;
    int64_t max_connections_per_ip;
    int64_t timeout;
    int64_t header_timeout;
    int64_t body_timeout;
    int64_t body_min_rate;
    int64_t max_header;
    int64_t compare_threads;
    int64_t compare_queue;
    int64_t diff_timeout_ms;
    int64_t diff_max_memory;
    int64_t write_threads;
    int64_t write_queue;
    int64_t require_auth_read;
    int64_t allow_root;
    int64_t retention_days;
    int64_t compress_level;
    int64_t busy_timeout_ms;
    int64_t db_sync; /* 0 normal, 1 full */
    int64_t db_cache;
    int64_t db_mmap;
    int64_t malloc_arenas;
    int64_t log_level;                    /* enum gd_log_level */
    int64_t max_file_bytes;               /* jobsrv: largest PUT /api/v1/files body */
    int64_t max_polls;                    /* jobsrv: long polls waiting at once */
    int64_t read_threads;                 /* issue 24: the light reads' own threads */
    int64_t write_nice;                   /* issue 24: nice of the threads serving writes */
    int64_t device_stale_seconds;         /* issue 24: a device unseen this long leaves */
    int64_t lease_confirm_seconds;        /* issue 24: an offer not confirmed is withdrawn */
    int64_t diff_cache_max;               /* issue 25: bytes of all cached diffs at most */
    int64_t response_memory;              /* issue 25: bytes of large answers held at most */
    unsigned char from[SRV_SETTINGS_MAX]; /* per setting: SRV_FROM_DEFAULT, _FILE or _FLAG */
};

enum { SRV_FROM_DEFAULT, SRV_FROM_FILE, SRV_FROM_FLAG };

struct srv_setting {
    const char *name; /* the flag without "--", the key in the file */
    enum srv_setting_type type;
    int64_t min, max;    /* INT and BYTES */
    const char *def;     /* the default, as it would be written in the file */
    const char *help;    /* one line */
    size_t offset;       /* of the field in struct srv_config */
    size_t size;         /* of a STRING or LISTEN field */
    const char *choices; /* CHOICE: "a|b|c"; STRING: what it holds, when not a path */
};

extern const struct srv_setting srv_settings[];
extern const int srv_setting_count;

/* Fills cfg with every setting's default. */
void srv_config_init(struct srv_config *cfg);

/* Sets one setting from its text; `where` ("--db", "FILE:LINE") starts error messages. */
int srv_config_set(struct srv_config *cfg, const char *name, const char *value, const char *where,
                   struct gd_err *err);

/* Reads `name = value` lines; '#' starts a comment. Unknown names and bad values fail. */
int srv_config_load_file(struct srv_config *cfg, const char *path, struct gd_err *err);

/*
 * Applies argv[0..argc): first the file of --config FILE (if any), then every settings flag
 * (--name VALUE, --name=VALUE, a bare --flag for a boolean), so flags override the file
 * whatever their order. Arguments that are not settings flags are copied, in order, to
 * rest (which has room for argc entries); *n_rest gets their number.
 */
int srv_config_args(struct srv_config *cfg, int argc, char **argv, char **rest, int *n_rest,
                    struct gd_err *err);

/* The flags and their help, from the table. */
void srv_config_usage(FILE *out);

/* The commented example configuration file (deploy/gpudiffd.conf.example is this text). */
void srv_config_write_example(FILE *out);

/* The effective settings, in the file's form. */
void srv_config_write(const struct srv_config *cfg, FILE *out);

/* Logs the effective settings, one line each. */
void srv_config_log(const struct srv_config *cfg);

/* Splits cfg->listen into host and port. */
int srv_listen_parse(const char *listen, char *host, size_t host_size, int *port,
                     struct gd_err *err);

/* ---- logging (log.c): to stderr, each line tagged with the request id ---- */

struct srv_req;

extern int srv_log_level;

/* Formats only when the level is on, so a debug line costs nothing in production. */
#define SRV_LOG(level, req, ...)                                                                   \
    do {                                                                                           \
        if ((int)(level) <= srv_log_level)                                                         \
            srv_log_write((level), (req), __VA_ARGS__);                                            \
    } while (0)

void srv_log_write(enum gd_log_level level, const struct srv_req *req, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Routes the engine's log sink into SRV_LOG. */
void srv_log_init(int level);

/* ---- small helpers (util.c) ---- */

/* Seconds since the epoch, and a monotonic clock in seconds for durations. */
int64_t srv_now(void);
double srv_clock(void);

/*
 * Parses an RFC 3339 date-time ("2026-11-30T08:21:16Z", fractions and offsets allowed) or,
 * with date_only_ok, a date ("2026-11-30", midnight UTC) into epoch seconds.
 */
int srv_time_parse(const char *text, int date_only_ok, int64_t *out);

/* Writes epoch seconds as "2026-11-30T08:21:16Z". */
void srv_time_format(int64_t t, char out[32]);

/* A decimal integer of digits only (no sign, no spaces) within min..max; -1 otherwise. */
int srv_parse_int(const char *text, int64_t min, int64_t max, int64_t *out);

/*
 * A number in JSON's grammar without a sign (decimal digits, an optional fraction and
 * exponent: no spaces, no '+', no hex, no inf or nan) that is finite as a double; -1
 * otherwise. What the OpenAPI file calls a number in a query string.
 */
int srv_parse_decimal(const char *text, double *out);

/* 1 when s is a lowercase UUID v4 as run.json's id pattern has it. */
int srv_is_uuid(const char *s);

/* 1 when s is 64 lowercase hex digits. */
int srv_is_sha256(const char *s);

/*
 * 1 when s is a name gpudiffd accepts: 1..max bytes of [A-Za-z0-9] and the punctuation in
 * `extra`. Layer names get "._:/-+@#[]" (ONNX and framework names; they become file names in
 * bundles).
 */
int srv_is_name(const char *s, size_t max, const char *extra);

#define SRV_LAYER_NAME_CHARS "._:/-+@#[]"

/*
 * 1 when s is free text gpudiffd accepts as a model name: 1..max bytes of valid UTF-8 with
 * no control characters. Model names are shown, never used as paths or in SQL text (bound
 * parameters only), so `<script>` and quotes are data like any other; a name with '/' is
 * reached through the query forms of the model endpoints.
 */
int srv_is_text(const char *s, size_t max);

#define SRV_MODEL_NAME_MAX  128
#define SRV_MODEL_NAME_RULE "1 to 128 bytes of UTF-8 text without control characters"

/* A growable byte buffer. */
struct srv_buf {
    char *data;
    size_t len, cap;
};

int srv_buf_append(struct srv_buf *b, const void *data, size_t len);
int srv_buf_printf(struct srv_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void srv_buf_fini(struct srv_buf *b);

/* An anonymous file in dir for an upload's compressed bytes (spill.c), and writes to it. */
int srv_spill_open(const char *dir, int *fd, struct gd_err *err);
int srv_spill_write(int fd, const void *data, size_t len, struct gd_err *err);

/* ---- the server ---- */

struct srv_gate;
struct srv_tls;
struct srv_pool;

struct srv_server {
    struct srv_config cfg;
    struct srv_store *store;
    struct srv_compare *compare; /* the comparison service (compare.h) */
    struct srv_gate *gate;       /* the front door: accepts, reads heads (gate.h) */
    struct srv_pool *writes;     /* runs the handlers that write (pool.h) */
    struct srv_health *health;   /* the database's last answer, for /healthz (health.c) */
    struct MHD_Daemon *mhd;      /* serves writes, bodies, downloads, polls (and all, over TLS) */
    struct MHD_Daemon *mhd_reads; /* serves the light reads; NULL over TLS (http.c) */
    struct srv_tls *tls;      /* the certificate served (tls.h); NULL: plain HTTP */
    char web_root[PATH_MAX];  /* realpath of cfg.web_root; "" serves no files */
    char spill_dir[PATH_MAX]; /* where uploads are compressed before their commit */
    int port;                 /* bound port */
    uint32_t boot_id;         /* random, starts every request id */
    /* jobsrv: the long polls of agents (route_leases.c), on a pool of their own */
    struct srv_pool *polls;
    _Atomic int polls_active; /* polls taken (at most cfg.max_polls) */
    _Atomic int polls_stop;   /* the daemon stops: waiting polls answer 204 now */
};

/* Starts libmicrohttpd behind the gate, which listens on cfg.listen. */
int srv_http_start(struct srv_server *srv, struct gd_err *err);
void srv_http_stop(struct srv_server *srv);

/* 1 for a light read: GET or HEAD, but not a download (a layer's .npy, a job's file). */
int srv_http_is_light(const char *method, const char *path);

/* The daemon a connection whose head is head goes to (NULL: not known, over TLS). */
struct srv_head;
struct MHD_Daemon *srv_http_daemon_for(const struct srv_server *srv, const struct srv_head *head);

/*
 * A request id: client_id when it is 1 to 40 characters of A-Z a-z 0-9 . _ - (so logs can
 * be joined), else "<boot id>-<counter>".
 */
void srv_request_id_new(const struct srv_server *srv, const char *client_id, char *out,
                        size_t size);

/* ---- requests and routes ---- */

#define SRV_MAX_PARAMS 3
#define SRV_PARAM_MAX  160

/* SRV_BODY_FILE: streamed like STREAM, up to --max-file-bytes instead of --max-body. */
enum srv_body { SRV_BODY_NONE, SRV_BODY_JSON, SRV_BODY_STREAM, SRV_BODY_FILE };

struct srv_route;
struct srv_conn;

/*
 * One request: made in the first libmicrohttpd callback, freed in the completion callback.
 * Everything a handler allocates hangs off ctx, released through ctx_free.
 */
struct srv_req {
    struct srv_server *srv;
    struct MHD_Connection *conn;
    struct srv_conn *gate_conn; /* the gate's record of the connection */
    struct srv_head head;       /* the request head as the gate parsed it (owned) */
    char id[48];
    char method[16];
    const char *path;              /* percent-decoded, in head */
    const struct srv_route *route; /* NULL: static files, or nothing matched */
    int metrics_route;             /* index for srv_metrics_request() */
    int n_params;
    char params[SRV_MAX_PARAMS][SRV_PARAM_MAX];
    enum srv_role role; /* of the token sent; NONE without one */
    int64_t token_id;   /* 0 without a token */
    int has_length;
    uint64_t content_length;
    uint64_t body_bytes; /* received so far */
    struct gd_err err;   /* the first error; answered once the body is in */
    char allow[64];      /* methods of the path, for a 405 */
    struct srv_buf body; /* SRV_BODY_JSON bodies (at most --max-json) */
    void *ctx;
    void (*ctx_free)(void *ctx);
    struct MHD_Response *resp; /* the answer, once made */
    unsigned status;
    double t_start;
    int on_pool;               /* the handler runs on the compare pool: it may compute */
    int deferred;              /* the connection is suspended while the pool works */
    _Atomic int deferred_done; /* the pool made the answer */
    int begun;                 /* the first access-handler call has run */
    char *tls_target;          /* TLS: the request target as received (owned; http.c) */
};

/*
 * A route: method + path pattern, where "{name}" stands for one path segment and may be
 * followed by a literal suffix ("{index}.npy"). Handlers return 0 or an error code with
 * req->err filled; `end` makes the response (srv_reply_*).
 */
struct srv_route {
    const char *method;
    const char *pattern;
    enum srv_role role; /* VIEWER: open unless --require-auth-read */
    enum srv_body body;
    int (*begin)(struct srv_req *req);                               /* may be NULL */
    int (*chunk)(struct srv_req *req, const char *data, size_t len); /* STREAM bodies */
    int (*end)(struct srv_req *req);
};

extern const struct srv_route srv_routes[];
extern const int srv_route_count;

/*
 * Finds the route for method and path, filling req->params. SRV_ENOTFOUND when no pattern
 * matches, SRV_EMETHOD when one matches with another method (allow gets "GET, POST").
 */
int srv_route_find(struct srv_req *req, char *allow, size_t allow_size);

/* Checks the token the request sent against the role the route needs. */
int srv_route_authorize(struct srv_req *req, enum srv_role need);

/* Records an error in req (the first one wins) and returns its code. */
int srv_req_fail(struct srv_req *req, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Copies an error from a struct gd_err into req (the first one wins). */
int srv_req_fail_err(struct srv_req *req, const struct gd_err *err);

/* A query-string value (percent-decoded), or NULL. */
const char *srv_req_query(struct srv_req *req, const char *key);

/* A request header's value, or NULL. */
const char *srv_req_header(struct srv_req *req, const char *name);

/* Fails with SRV_EBADREQ when the query has a key outside the NULL-terminated list. */
int srv_req_query_check(struct srv_req *req, const char *const *known);

/* The response: JSON (steals body), an error from req->err, or one made by the caller. */
int srv_reply_json(struct srv_req *req, unsigned status, json_t *body);
/* JSON text made elsewhere (a cached diff), sent as it is; steals text (malloc'd, ends in NUL). */
int srv_reply_json_text(struct srv_req *req, unsigned status, char *text, size_t len);
/* Steals body; compact, its numbers to `digits` significant digits (web's large answers). */
int srv_reply_json_compact(struct srv_req *req, unsigned status, json_t *body, int digits);
int srv_reply_error(struct srv_req *req);
/* sec: bytes of answers over 64 KiB made in memory and not yet sent (--response-memory). */
int64_t srv_response_memory(void);
int srv_reply(struct srv_req *req, unsigned status, struct MHD_Response *resp);

/* A stored blob to send back (blob_get.c): which blob, its sizes, the SHA-256 of its data,
 * and up to 256 bytes sent before it (an .npy header; 0 for none). */
struct srv_blob_spec {
    int64_t blob_id;
    uint64_t stored_size, raw_size;
    size_t elem_size;
    const char *sha256;
    const void *prefix;
    size_t prefix_len;
};

/*
 * *out: a response whose body is spec's prefix then the blob's data, decoded as the client
 * reads it and checked against its SHA-256 at the end (a mismatch ends the download with an
 * error, logged). The caller adds its headers and replies. GD_ENOMEM, GD_EINVAL.
 */
int srv_blob_response(struct srv_req *req, const struct srv_blob_spec *spec,
                      struct MHD_Response **out, struct gd_err *err);

/*
 * sec: 0 when req's token may change run_id (`what`: "finish", "send layers to", ...):
 * the token that created it, or an admin. Else SRV_EFORBIDDEN, logged with the token's id
 * (owner.c); SRV_ENOTFOUND for no such run.
 */
int srv_run_owner_check(struct srv_req *req, struct srv_db *db, const char *run_id,
                        const char *what);

/* Acquires a database connection for the request or fails it with SRV_EBUSY. */
struct srv_db *srv_req_db(struct srv_req *req);
void srv_req_db_release(struct srv_req *req, struct srv_db *db);

/* ---- handlers ---- */

int srv_health_route(struct srv_req *req);
int srv_metrics_get(struct srv_req *req);
int srv_models_list(struct srv_req *req);
int srv_models_baseline(struct srv_req *req);
int srv_models_matrix(struct srv_req *req);
int srv_models_history(struct srv_req *req);
int srv_diff_get(struct srv_req *req);
/* web (issue 26): route_diff_views.c, route_overlay.c, route_standing.c */
int srv_diff_summary_get(struct srv_req *req);
int srv_diff_layers_get(struct srv_req *req);
int srv_diff_graph_get(struct srv_req *req);
int srv_overlay_get(struct srv_req *req);
int srv_heatmap_get(struct srv_req *req);
int srv_standing_get(struct srv_req *req);
int srv_runs_create(struct srv_req *req);
int srv_runs_list(struct srv_req *req);
int srv_runs_get(struct srv_req *req);
int srv_runs_finish(struct srv_req *req);
int srv_layer_put_begin(struct srv_req *req);
int srv_layer_put_chunk(struct srv_req *req, const char *data, size_t len);
int srv_layer_put_end(struct srv_req *req);
int srv_layer_get(struct srv_req *req);
int srv_tokens_create(struct srv_req *req);
int srv_tokens_list(struct srv_req *req);
int srv_tokens_revoke(struct srv_req *req);
int srv_sweeps_create(struct srv_req *req);
int srv_sweeps_list(struct srv_req *req);
int srv_sweeps_get(struct srv_req *req);
/* web: the op list with its traits (route_ops.c) */
int srv_ops_list(struct srv_req *req);

/* front: the knob table of knobs.def (route_knobs.c) */
int srv_knobs_list(struct srv_req *req);
/* fp: tensors asked for where runs hold fingerprints (route_requests.c) */
int srv_requests_list(struct srv_req *req);
int srv_requests_add(struct srv_req *req);
/* jobsrv: files (route_files.c), agents (route_agents.c), jobs (route_fleet_jobs.c), leases
   (route_leases.c) */
int srv_files_put_begin(struct srv_req *req);
int srv_files_put_chunk(struct srv_req *req, const char *data, size_t len);
int srv_files_put_end(struct srv_req *req);
int srv_files_get(struct srv_req *req);
int srv_agents_register(struct srv_req *req);
int srv_agents_list(struct srv_req *req);
int srv_fleet_jobs_create(struct srv_req *req);
int srv_fleet_jobs_list(struct srv_req *req);
int srv_fleet_jobs_get(struct srv_req *req);
int srv_leases_poll(struct srv_req *req);
int srv_leases_heartbeat(struct srv_req *req);
int srv_leases_done(struct srv_req *req);
int srv_leases_fail(struct srv_req *req);
/* issue 24: a serve gives a lease back (route_leases.c); an admin removes a device
   (route_agents.c) */
int srv_leases_release(struct srv_req *req);
int srv_devices_delete(struct srv_req *req);

/*
 * 1 when the client of req's connection has gone: its end of the socket is closed or
 * reset (poll() shows POLLRDHUP, POLLHUP or POLLERR). For a request whose connection is
 * suspended (a long poll), before it is answered: each connection serves one request, so
 * nothing more is read from it, and a peer that closed its side has left.
 */
int srv_req_client_gone(struct srv_req *req);

/* Serves a file under --web-root (GET and HEAD of paths outside /api/). */
int srv_static_serve(struct srv_req *req);

/* ---- metrics (prom_metrics.c) ---- */

enum srv_counter {
    SRV_M_BODY_BYTES,   /* layer body bytes received */
    SRV_M_TENSOR_BYTES, /* tensor bytes of new blobs */
    SRV_M_STORED_BYTES, /* their compressed size */
    SRV_M_BLOBS_WRITTEN,
    SRV_M_BLOBS_DEDUP, /* layers whose data was already stored */
    SRV_M_LAYERS_STORED,
    SRV_M_RUNS_CREATED,
    SRV_M_RUNS_FINISHED,
    SRV_M_DIFF_HITS,           /* diffs served from the cache */
    SRV_M_DIFF_MISSES,         /* diffs computed because the cache lacked them */
    SRV_M_CONN_REFUSED_LIMIT,  /* connections refused: --max-connections were open */
    SRV_M_CONN_REFUSED_PER_IP, /* connections refused: their address had its share open */
    SRV_M_TIMEOUT_HEAD,        /* connections closed: no whole head in --header-timeout */
    SRV_M_TIMEOUT_BODY,        /* connections cut: a body slower than --body-min-rate */
    /* jobsrv */
    SRV_M_FLEET_JOBS,       /* jobs submitted */
    SRV_M_TASKS_LEASED,     /* leases handed out */
    SRV_M_TASKS_FINISHED,   /* tasks finished (done with a run) */
    SRV_M_TASKS_FAILED,     /* tasks failed by their agent */
    SRV_M_TASKS_EXPIRED,    /* leases that expired without a heartbeat */
    SRV_M_LEASES_WITHDRAWN, /* issue 24: offers no heartbeat confirmed in time */
    SRV_M_LEASES_RELEASED,  /* leases given back by their agent */
    SRV_M_TASKS_STALE,      /* pending tasks of devices that left (stale or removed) */
    SRV_M_POLLS_GONE,       /* long polls whose client had gone */
    /* issue 25: the diff cache's cap */
    SRV_M_DIFF_EVICTIONS, /* cached diffs dropped to make room */
    SRV_M_DIFF_UNCACHED,  /* diffs computed but larger than the whole cache */
    SRV_M_COUNTER_COUNT
};

/* metrics_route for requests that matched no route, and for static files. */
#define SRV_METRICS_UNMATCHED (-1)
#define SRV_METRICS_STATIC    (-2)
#define SRV_METRICS_REFUSED   (-3) /* answered by the gate: the head broke a rule */

void srv_metrics_request(int route, unsigned status, double seconds);
void srv_metrics_add(enum srv_counter c, uint64_t n);

/* The comparison service: computing one diff of two runs took this long. */
void srv_metrics_observe_compare(double seconds);

/* The Prometheus text exposition; the gauges are read from db. */
int srv_metrics_render(struct srv_db *db, struct srv_buf *out, struct gd_err *err);

/* The limits of srv's settings and how full they are (connections, compare pool). */
int srv_metrics_render_limits(const struct srv_server *srv, struct srv_buf *out);

/* ---- tokens (auth.c) ---- */

#define SRV_TOKEN_PREFIX       "gd_"
#define SRV_TOKEN_RANDOM_BYTES 32
#define SRV_TOKEN_LEN          (3 + 43) /* "gd_" + base64url of 32 bytes without padding */

/* RFC 4648 base64url without padding; out needs 4*ceil(len/3)+1 bytes. */
void srv_base64url(const unsigned char *in, size_t len, char *out);

/* A new token from the system's random source. */
int srv_token_generate(char out[SRV_TOKEN_LEN + 1], struct gd_err *err);

/* 1 when s has a token's form: "gd_" and 43 base64url characters. */
int srv_token_well_formed(const char *s);

/* The SHA-256 of the whole token text, as stored. */
int srv_token_hash(const char *token, char hex[65], struct gd_err *err);

/*
 * Makes a token of role with a label (at most 64 printable characters), stores its hash
 * and returns the token, which exists nowhere else afterwards.
 */
int srv_token_create(struct srv_db *db, enum srv_role role, const char *label,
                     char token[SRV_TOKEN_LEN + 1], int64_t *id, struct gd_err *err);

/*
 * The token in an Authorization header value ("Bearer gd_..."), copied to out; SRV_EAUTH
 * naming what is wrong otherwise.
 */
int srv_token_from_header(const char *header, char out[SRV_TOKEN_LEN + 1], struct gd_err *err);

/* ---- retention (retention.c) ---- */

struct srv_retention;

/* Runs now and then daily in its own thread; NULL when days is 0. */
int srv_retention_start(struct srv_store *store, int64_t days, struct srv_retention **out,
                        struct gd_err *err);
void srv_retention_stop(struct srv_retention *r);

/* ---- health (health.c): whether the database answers, for GET /healthz ---- */

/* A thread asks the database every SRV_HEALTH_EVERY_S; an answer older than
   SRV_HEALTH_STALE_S, or a failure, makes /healthz 503. */
#define SRV_HEALTH_EVERY_S 1
#define SRV_HEALTH_STALE_S 5.0

struct srv_health;

/* Checks the database once, then starts the thread. */
int srv_health_start(struct srv_store *store, struct srv_health **out, struct gd_err *err);
void srv_health_stop(struct srv_health *h); /* accepts NULL */

/* 1 when the last check succeeded and is recent; its schema version, its age in seconds,
   and else why not (msg). Never waits for the database. */
int srv_health_get(struct srv_health *h, int *version, double *age, char *msg, size_t size);

/* /healthz's body when the database answers (route_health.c): a new object. */
json_t *srv_health_ok_json(const struct srv_server *srv, int schema_version);

/* ---- jobsrv: periodic lease expiry (fleet_sweep.c) ---- */

struct srv_fleet_sweep;

/* Expires dead leases and passed deadlines every `seconds`, in its own thread. */
int srv_fleet_sweep_start(struct srv_store *store, int seconds, struct srv_fleet_sweep **out,
                          struct gd_err *err);
void srv_fleet_sweep_stop(struct srv_fleet_sweep *s);

#endif
