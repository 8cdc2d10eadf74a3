/*
 * db.h: gpudiffd's storage (schema/sql/NNN_name.sql for SQLite, schema/pg/NNN_name.sql for
 * PostgreSQL, docs/SERVER.md): connections, migrations, transactions, and one function per
 * query, grouped by table in db_<table>.c, written once on the backends of sql.h.
 *
 * A struct srv_db is one connection with its cache of prepared statements; it is used by one
 * thread at a time. A struct srv_store is the pool of them that request handlers borrow
 * from, for one callback at a time, so no connection is held while a client is slow.
 * Every function returns 0 or a GD_E* or SRV_E* code with err filled; a database that is
 * busy (or gone away) is SRV_EBUSY (503), its other failures GD_EIO.
 */
#ifndef GPUDIFF_SERVER_DB_H
#define GPUDIFF_SERVER_DB_H

#include <stdint.h>

#include <jansson.h>
#include "gpudiff/error.h"
#include "gpudiff/tensor.h"
#include "server.h"
#include "sql.h"

/* ---- connections ---- */

struct srv_db_opts {
    int busy_timeout_ms;
    int sync_full;      /* SQLite: synchronous=FULL instead of NORMAL */
    int64_t cache_size; /* SQLite: bytes of page cache per connection; 0: SQLite's 2 MiB */
    int64_t mmap_size;  /* SQLite: bytes of the file mapped per connection; 0: 256 MiB, < 0:
                           none */
    /* issue 24: the fleet's times (--device-stale-seconds, --lease-confirm-seconds); 0: the
       settings' defaults */
    int64_t fleet_stale_seconds;
    int64_t fleet_confirm_seconds;
};

/*
 * Opens a connection to the database `db` names: a PostgreSQL URI (postgresql://...) or
 * else a SQLite file, created (0600) if needed; see sql.h for the backends. Does not
 * migrate.
 */
int srv_db_open(const char *db, const struct srv_db_opts *opts, struct srv_db **out,
                struct gd_err *err);

/* Finalizes the cached statements and closes. Accepts NULL. */
void srv_db_close(struct srv_db *db);

/* Write transactions (sql.h, enum srv_tx): BEGIN with the write lock of every daemon. */
int srv_db_begin(struct srv_db *db, struct gd_err *err);
/* BEGIN of a transaction that runs beside other shared ones (a layer upload's commit). */
int srv_db_begin_shared(struct srv_db *db, struct gd_err *err);
/* In a shared transaction: waits for the other shared transactions that locked key. */
int srv_db_lock_key(struct srv_db *db, const char *key, struct gd_err *err);
int srv_db_commit(struct srv_db *db, struct gd_err *err);
/* Rolls back if a transaction is open. */
void srv_db_rollback(struct srv_db *db);

/* ---- migrations (db.c, the SQL embedded from schema/sql and schema/pg at build time) ---- */

/* SQLite's migrations (schema/sql/NNN_name.sql) and PostgreSQL's (schema/pg/NNN_name.sql). */
extern const struct srv_migration srv_migrations[];
extern const int srv_migration_count;
extern const struct srv_migration srv_pg_migrations[];
extern const int srv_pg_migration_count;

/* The schema version (SQLite: PRAGMA user_version). */
int srv_db_version(struct srv_db *db, int *version, struct gd_err *err);

/*
 * Applies every migration newer than the database's version, each in its own transaction
 * that also sets the version. *from and *to (may be NULL) get the versions before and after.
 * A database newer than this build is GD_ENOTSUP.
 */
int srv_db_migrate(struct srv_db *db, int *from, int *to, struct gd_err *err);

/* ---- backups (gpudiffd backup, restore) ---- */

/* An online, consistent copy of the database db into the file `to` (made whole first). */
int srv_db_backup(const char *db, const struct srv_db_opts *opts, const char *to,
                  struct gd_err *err);

/* Replaces the content of the database db with the backup in `from`. */
int srv_db_restore(const char *db, const struct srv_db_opts *opts, const char *from,
                   struct gd_err *err);

/* "sqlite file /var/lib/gpudiff/gpudiff.db", "postgresql database gpudiff on host ...". */
void srv_db_describe(const char *db, char *out, size_t size);

/* ---- the pool ---- */

int srv_store_open(const char *path, const struct srv_db_opts *opts, struct srv_store **out,
                   struct gd_err *err);
void srv_store_close(struct srv_store *s);
int srv_store_acquire(struct srv_store *s, struct srv_db **out, struct gd_err *err);
void srv_store_release(struct srv_store *s, struct srv_db *db);

/* The dialect of the store's backend. */
enum srv_sql_dialect srv_store_dialect(const struct srv_store *s);

/* The backend library's memory in use and its peak; 0 when it reports none (PostgreSQL). */
int srv_db_memory(const struct srv_db *db, int64_t *used, int64_t *highwater);

/* ---- runs (db_runs.c) ---- */

struct srv_run_doc; /* run_doc.h */

/*
 * Creates the run of doc in state "uploading", its model if new, and one row per layer.
 * Layers whose data is already stored (a blob with their sha256 and size) are linked to it at
 * once. An existing run with the same content is left as it is (*created = 0); with other
 * content it is SRV_ECONFLICT.
 */
int srv_db_run_create(struct srv_db *db, const struct srv_run_doc *doc, int64_t now, int *created,
                      struct gd_err *err);

/*
 * The run as JSON: run.json's fields, "state", "received_at", "finished_at" and the
 * layers with "present" and "stored". An uploading run is found only with
 * include_uploading; else SRV_ENOTFOUND.
 */
int srv_db_run_get(struct srv_db *db, const char *id, int include_uploading, json_t **out,
                   struct gd_err *err);

/*
 * What comparing a run needs: its stored run.json without layers (*meta) and its layer
 * records in index order (*records), both new references. SRV_ENOTFOUND for no run,
 * SRV_ECONFLICT for one still uploading, SRV_EGONE when retention dropped its tensors.
 */
int srv_db_run_records(struct srv_db *db, const char *id, json_t **meta, json_t **records,
                       struct gd_err *err);

/* sec: the id of the token that created run id, 0 for a run older than owners (migration
 * 020). SRV_ENOTFOUND for no such run, whatever its state. */
int srv_db_run_owner(struct srv_db *db, const char *id, int64_t *owner, struct gd_err *err);

/* Marks the run complete when every layer is present (SRV_EINCOMPLETE names the missing). */
int srv_db_run_finish(struct srv_db *db, const char *id, int64_t now, struct gd_err *err);

/* How many knob=, label= filters and search words a listing takes. */
#define SRV_RUN_MATCH_MAX 8

/* One knob= or label= filter: the value as JSON text (true, 32, null) or as a string. */
struct srv_run_match {
    const char *key, *value;
};

/* What the run list is ordered by (then by created_at and id, in the same direction). */
enum srv_run_sort {
    SRV_SORT_CREATED,
    SRV_SORT_MODEL,
    SRV_SORT_BACKEND,
    SRV_SORT_GPU,
    SRV_SORT_HOST,
    SRV_SORT_DEVICE,
    SRV_SORT_LAYERS,
    SRV_SORT_RECEIVED
};

struct srv_run_filter {
    const char *model, *gpu, *backend; /* NULL: any */
    int64_t since;                     /* created at or after; INT64_MIN: any */
    int include_uploading;
    int64_t limit, offset;
    /* exact matches of the device key and of env.driver, env.cuda_runtime, env.cudnn,
       env.cublas; NULL: any */
    const char *device, *driver, *cuda, *cudnn, *cublas;
    struct srv_run_match knobs[SRV_RUN_MATCH_MAX], labels[SRV_RUN_MATCH_MAX];
    int n_knobs, n_labels;
    /* search words: each must occur (ASCII case folded) in the run's id, model, backend,
       GPU, host, device key, or its knobs and labels written KEY=VALUE */
    const char *words[SRV_RUN_MATCH_MAX];
    int n_words;
    enum srv_run_sort sort;
    int ascending; /* 0: descending, the default */
};

/*
 * {"runs": [summaries], "total", "limit", "offset"}, newest first unless f->sort says
 * otherwise. Each summary carries run.json's env, knobs and labels, the device key, and
 * "against_baseline": null when the model has no baseline, else {"baseline": ID, "state":
 * "baseline" | "compared" | "pending" | "unavailable", and when compared "verdict",
 * "first_divergent", "err", "max_abs" of the last layer of the cached diff of the run
 * against the baseline with the default tolerances}.
 */
int srv_db_runs_list(struct srv_db *db, const struct srv_run_filter *f, json_t **out,
                     struct gd_err *err);

/* A run's layer count and its largest layer's raw size: what comparing it costs. */
int srv_db_run_size(struct srv_db *db, const char *id, int64_t *n_layers, int64_t *max_layer_bytes,
                    struct gd_err *err);

/* Number of runs in each state, for /metrics. */
int srv_db_runs_count(struct srv_db *db, int64_t *uploading, int64_t *complete, struct gd_err *err);

/* ---- layers (db_layers.c) ---- */

/* What an upload of one layer must match, and where the layer stands. */
struct srv_layer_spec {
    enum gd_dtype dtype;
    int ndim;
    int64_t shape[GD_MAX_DIMS];
    uint64_t raw_size;
    char sha256[65];
    int present;     /* its data is already here */
    char blake3[65]; /* fp: the fingerprint's hash when the run holds only that; else "" */
    int blob_stored; /* a blob with its sha256 exists (for this or another layer) */
    int run_complete;
};

/* SRV_ENOTFOUND for an unknown run or a layer index the run does not have. */
int srv_db_layer_spec(struct srv_db *db, const char *run_id, int index, struct srv_layer_spec *out,
                      struct gd_err *err);

/* The compressed data of a new blob, waiting in a spill file. */
struct srv_blob_spill {
    int fd; /* read from offset 0 */
    const char *dtype;
    int elem_size;
    uint64_t raw_size, stored_size;
    const char *codec;
};

/*
 * In one transaction: stores the blob from spill (when given and its sha256 is new) and
 * marks the layer present with it. *stored is 1 when a new blob row was written, *was_present
 * 1 when the layer was already present (nothing changed). Without a spill the blob must
 * exist (SRV_EBUSY asks to retry if retention dropped it meanwhile).
 */
int srv_db_layer_commit(struct srv_db *db, const char *run_id, int index, const char *sha256,
                        const struct srv_blob_spill *spill, int64_t now, int *stored,
                        int *was_present, struct gd_err *err);

/* Where a layer's data is, for a download. */
struct srv_layer_loc {
    enum gd_dtype dtype;
    int ndim;
    int64_t shape[GD_MAX_DIMS];
    char name[256];
    char sha256[65];
    int64_t blob_id; /* the blob's rowid; never reused (AUTOINCREMENT) */
    int elem_size;
    uint64_t raw_size, stored_size;
};

/*
 * SRV_ENOTFOUND for an unknown run or layer (or an uploading run without include_uploading),
 * SRV_EGONE when retention dropped the data, SRV_ENOTFOUND when it was never uploaded.
 */
int srv_db_layer_locate(struct srv_db *db, const char *run_id, int index, int include_uploading,
                        struct srv_layer_loc *out, struct gd_err *err);

/*
 * Loads a layer of a complete run (or, with include_uploading, any run) into a new host
 * tensor, its data checked against the layer's SHA-256 (GD_EFORMAT when damaged): what the
 * comparison service reads. Errors as srv_db_layer_locate().
 */
int srv_db_layer_load(struct srv_db *db, const char *run_id, int index, int include_uploading,
                      struct gd_tensor **out, struct gd_err *err);

/* ---- blobs (db_blobs.c) ---- */

/*
 * Reads len bytes of blob blob_id's data at off (a short blob is GD_EIO). The blob handle is
 * kept in *handle (NULL at first) for the next reads, since each fresh handle walks the
 * blob's page chain from its start; srv_db_blob_close() ends it, before db is released.
 */
int srv_db_blob_read(struct srv_db *db, int64_t blob_id, struct srv_sql_piece_handle **handle,
                     uint64_t off, void *buf, size_t len, struct gd_err *err);
void srv_db_blob_close(struct srv_db *db, struct srv_sql_piece_handle **handle);

/* Writes a new blob row from a spill file; inside the caller's transaction. */
int srv_db_blob_insert(struct srv_db *db, const char *sha256, const struct srv_blob_spill *spill,
                       int64_t now, struct gd_err *err);

/* Count and total raw and stored sizes of all blobs. */
int srv_db_blob_totals(struct srv_db *db, int64_t *count, int64_t *raw, int64_t *stored,
                       struct gd_err *err);

/*
 * Retention: for complete runs received before cutoff, unlinks their layers' data (keeping
 * the layer records and summaries); deletes uploading runs received before cutoff; then
 * deletes blobs no layer uses. Works in batches of short transactions.
 */
int srv_db_retention(struct srv_db *db, int64_t cutoff, int64_t *runs_trimmed,
                     int64_t *runs_deleted, int64_t *blobs_deleted, struct gd_err *err);

/* ---- models and baselines (db_models.c) ---- */

/* {"models": [{name, runs, latest, baseline}]} over models with complete runs. */
int srv_db_models_list(struct srv_db *db, json_t **out, struct gd_err *err);

/*
 * Makes run_id the baseline of model. SRV_ENOTFOUND for an unknown model or run,
 * SRV_ECONFLICT for a run not complete or of another model.
 */
int srv_db_baseline_set(struct srv_db *db, const char *model, const char *run_id, int64_t token_id,
                        int64_t now, struct gd_err *err);

/* The model's baseline run, "" when it has none. SRV_ENOTFOUND when there is no such model. */
int srv_db_model_baseline(struct srv_db *db, const char *model, char baseline[40],
                          struct gd_err *err);

/*
 * The baseline of the model of run_id, "" when it has none or when the run is not complete
 * (or not there).
 */
int srv_db_run_baseline(struct srv_db *db, const char *run_id, char baseline[40],
                        struct gd_err *err);

/*
 * The matrix's devices: for each device key of the model's complete runs whose tensors
 * retention kept, its newest run, as [{"key", "run", "backend", "gpu" (null on CPU
 * backends), "created_at", "env": {"driver", "cuda_runtime", "cudnn", "cublas", "host",
 * "labels"} (null where not recorded), "knobs", "labels"}] ordered by key.
 * SRV_ENOTFOUND when there is no such model.
 */
int srv_db_model_devices(struct srv_db *db, const char *model, json_t **out, struct gd_err *err);

/*
 * History's runs: of each device key of the model (or only `device` when not NULL), its
 * newest `limit` complete runs, as [{"device", "run", "created_at", "env"}] ordered by
 * device, then oldest first ("env": run.json's env object, {} when it has none).
 */
int srv_db_model_history_runs(struct srv_db *db, const char *model, const char *device,
                              int64_t limit, json_t **out, struct gd_err *err);

/* The ids of the model's complete runs, newest first, at most limit, as a JSON array. */
int srv_db_model_run_ids(struct srv_db *db, const char *model, int64_t limit, json_t **out,
                         struct gd_err *err);

/* *found 1 when run_id has a layer named name. */
int srv_db_layer_named(struct srv_db *db, const char *run_id, const char *name, int *found,
                       struct gd_err *err);

/* ---- the matrix cache (db_matrix.c) ---- */

/*
 * The cached matrix of model made under signature, as the JSON text served (*text
 * NUL-terminated, owned by the caller). SRV_ENOTFOUND when there is none or it was made
 * from something else (another signature).
 */
int srv_db_matrix_get(struct srv_db *db, const char *model, const char *signature, char **text,
                      size_t *len, struct gd_err *err);

/* Stores model's matrix, replacing the one cached before, in one transaction. */
int srv_db_matrix_put(struct srv_db *db, const char *model, const char *signature, int n_devices,
                      const char *json, double seconds, int64_t now, struct gd_err *err);

/* ---- fp: tensors asked for where a run holds fingerprints (db_requests.c) ---- */

/* Records a request for layer index of run_id unless one exists or the tensor is here;
 * *added says whether a row was written. */
int srv_db_request_add(struct srv_db *db, const char *run_id, int index, const char *reason,
                       const char *other_run, int64_t now, int *added, struct gd_err *err);

/* {"run", "pending": [index...], "requests": [{"index", "name", "reason", "other_run",
 * "requested_at", "fulfilled_at"}]}; SRV_ENOTFOUND for an unknown run. */
int srv_db_requests_list(struct srv_db *db, const char *run_id, json_t **out,
                         struct gd_err *err);

/* present[i] = 1 where layer i of the run has its tensor stored (n entries). */
int srv_db_layers_present(struct srv_db *db, const char *run_id, int n, unsigned char *present,
                          struct gd_err *err);

/* Inside the transaction that stores a fetched tensor: fulfils its request and drops the
 * run's cached diffs and its model's cached matrix. */
int srv_db_layer_fetched(struct srv_db *db, const char *run_id, int index, int64_t now,
                         struct gd_err *err);

/* ---- the durable queue of comparisons with a baseline (db_compare_queue.c) ---- */

/* A new baseline is compared with at most this many of the model's newest runs. */
#define SRV_BASELINE_RUNS 1000

struct srv_job {
    int64_t id;
    char run[40], baseline[40];
    int current; /* baseline is still the model's baseline */
};

/* Queues run_id against its model's baseline (none: nothing); in the caller's transaction. */
int srv_db_job_queue_run(struct srv_db *db, const char *run_id, int64_t now, struct gd_err *err);

/*
 * Queues the newest `limit` complete runs of the model against its new baseline, dropping
 * the jobs still queued against old_baseline (may be NULL or ""); in the caller's
 * transaction.
 */
int srv_db_job_queue_model(struct srv_db *db, int64_t model_id, const char *old_baseline,
                           const char *baseline, int64_t limit, int64_t now, struct gd_err *err);

/*
 * Claims the oldest job with an id above `after` that no worker holds (or whose claim
 * ended before now) until now + lease seconds: two daemons on one database never compute
 * the same job at once. SRV_ENOTFOUND when there is none.
 */
int srv_db_job_claim(struct srv_db *db, int64_t after, int64_t now, int64_t lease,
                     struct srv_job *job, struct gd_err *err);

/* Lets go of a claimed job, so that the next pass (of any daemon) takes it again. */
int srv_db_job_release(struct srv_db *db, int64_t id, struct gd_err *err);

/* Deletes a job (its diff is cached, or can never be made). */
int srv_db_job_done(struct srv_db *db, int64_t id, struct gd_err *err);

/* Jobs queued now, for /metrics. */
int srv_db_jobs_count(struct srv_db *db, int64_t *n, struct gd_err *err);

/* ---- the comparison cache (db_diffs.c) ---- */

struct srv_diff_key; /* compare.h */

/* What the matrix and history read of one layer of a diff; NaN stands for null. */
struct srv_diff_layer_sum {
    const char *name;
    const char *verdict;
    double err, max_abs;
};

struct srv_diff_row {
    const char *first_divergent; /* NULL when none */
    int n_layers;
    const struct srv_diff_layer_sum *layers;
    const char *json; /* what GET /api/v1/diff serves */
    double seconds;   /* how long it took to compute */
    int64_t cache_max; /* sec: bytes all cached diffs may hold (--diff-cache-max); 0: no cap */
};

/*
 * The cached JSON text of a diff followed by a newline, as served (*text NUL-terminated and
 * owned by the caller, *len without the NUL). SRV_ENOTFOUND when it is not cached.
 */
int srv_db_diff_json(struct srv_db *db, const struct srv_diff_key *key, char **text, size_t *len,
                     struct gd_err *err);

/*
 * Where a cached diff's text is, for sending it in pieces: its row and its length in bytes
 * (without the newline srv_db_diff_json adds); when that length is at most inline_max, also
 * the text itself as srv_db_diff_json gives it (*text, *text_len; the caller frees it), else
 * *text is NULL. SRV_ENOTFOUND when it is not cached. The row and length come from one
 * query, the text is read as a piece (binary: no hex form of the bytea on PostgreSQL).
 */
int srv_db_diff_locate(struct srv_db *db, const struct srv_diff_key *key, uint64_t inline_max,
                       int64_t *row, uint64_t *len, char **text, size_t *text_len,
                       struct gd_err *err);

/* n bytes of the text of diff row at off; GD_EIO when the row is no longer len bytes. */
int srv_db_diff_read(struct srv_db *db, int64_t row, uint64_t len, uint64_t off, void *buf,
                     size_t n, struct gd_err *err);

/*
 * Caches a diff with its layer summaries, in one transaction; a row already there stays.
 * With row->cache_max, the least recently used rows (of other tolerances than the
 * defaults first) are dropped first until the new one fits; a diff larger than the whole
 * cap is not cached (0 all the same). Counts in SRV_M_DIFF_EVICTIONS, SRV_M_DIFF_UNCACHED.
 */
int srv_db_diff_put(struct srv_db *db, const struct srv_diff_key *key,
                    const struct srv_diff_row *row, int64_t now, struct gd_err *err);

/* sec: applies the reads recorded since the last write to the rows' last_used (one write
 * transaction, none when nothing was read). */
int srv_db_diff_touch_flush(struct srv_db *db, int64_t now, struct gd_err *err);

/* sec: the bytes and rows of the diff cache (for /metrics). */
int srv_db_diff_cache_totals(struct srv_db *db, int64_t *bytes, int64_t *entries,
                             struct gd_err *err);

struct srv_diff_summary {
    int has_first; /* the diff has a first divergent layer */
    char first_divergent[256];
    int layer_found; /* the layer asked for is in the diff */
    char verdict[16];
    double err, max_abs; /* NaN for null */
};

/*
 * One layer of a cached diff: the first one named `layer`, or the last one with layer NULL.
 * SRV_ENOTFOUND when the diff is not cached; layer_found 0 when it lacks the layer.
 */
int srv_db_diff_summary(struct srv_db *db, const struct srv_diff_key *key, const char *layer,
                        struct srv_diff_summary *out, struct gd_err *err);

/* ---- the dashboard's views of cached diffs (db_diff_views.c, migration 013) ---- */

struct srv_diff_view; /* diff_view.h */

/*
 * The row of the cached diff of key (*diff_id), and whether a view of this format is stored
 * for it (*has_view, with its *n_layers). SRV_ENOTFOUND when the diff is not cached.
 */
int srv_db_diff_view_locate(struct srv_db *db, const struct srv_diff_key *key, int64_t *diff_id,
                            int *has_view, int64_t *n_layers, struct gd_err *err);

/* The view's summary text and a newline (owned by the caller); SRV_ENOTFOUND for none. */
int srv_db_diff_view_summary(struct srv_db *db, int64_t diff_id, char **text, size_t *len,
                             struct gd_err *err);

/*
 * Stores the view of diff row diff_id in one transaction, in place of one of another format;
 * one stored meanwhile by another request stays. Nothing when the diff is gone.
 */
int srv_db_diff_view_put(struct srv_db *db, int64_t diff_id, const struct srv_diff_view *v,
                         int64_t now, struct gd_err *err);

/* What a page of rows is filtered by; NULL: not. q is a substring of the name, any case. */
struct srv_diff_view_filter {
    const char *verdict, *op, *q, *name;
};

/*
 * Appends {"total", "offset", "limit", "layers": [row, ...]} and a newline to out: the rows
 * of the view that pass f, from the offset-th of them, at most limit, in the diff's order;
 * total counts those that pass (n_layers without a filter).
 */
int srv_db_diff_view_page(struct srv_db *db, int64_t diff_id, int64_t n_layers,
                          const struct srv_diff_view_filter *f, int64_t offset, int64_t limit,
                          struct srv_buf *out, struct gd_err *err);

/* Called for each layer of a view in order; err is NaN for null. Non-zero stops. */
typedef int srv_diff_view_node_fn(void *user, int64_t idx, const char *name, const char *op,
                                  const char *verdict, double err_value, struct gd_err *err);

int srv_db_diff_view_nodes(struct srv_db *db, int64_t diff_id, srv_diff_view_node_fn *fn,
                           void *user, struct gd_err *err);

/*
 * A run's stored run.json without layers, with "n_layers" and "state" added (a new
 * reference), whatever retention did to its tensors. SRV_ENOTFOUND for no run.
 */
int srv_db_run_meta(struct srv_db *db, const char *id, json_t **out, struct gd_err *err);

/* ---- per-layer summaries of cached diffs, in order (db_diff_views.c) ---- */

/* Called for each layer of a cached diff in order; err is NaN for null. Non-zero stops. */
typedef int srv_diff_layer_fn(void *user, const char *name, const char *verdict,
                              double err_value, struct gd_err *err);

/*
 * The layers of the cached diff of key, through fn, and its first divergent layer ("" for
 * none). SRV_ENOTFOUND when it is not cached.
 */
int srv_db_diff_layers(struct srv_db *db, const struct srv_diff_key *key,
                       char first_divergent[256], srv_diff_layer_fn *fn, void *user,
                       struct gd_err *err);

/* ---- truths (db_standing.c) ---- */

/*
 * The newest complete cpu64 run of run's model with the same input sha256 (or none recorded
 * by both), other than run itself: what it is measured against when no truth is named.
 * SRV_ENOTFOUND when there is none.
 */
int srv_db_truth_find(struct srv_db *db, const char *run, char out[40], struct gd_err *err);

/* ---- tokens (db_tokens.c) ---- */

/* Stores a token's hash with its role; *id gets the token's number. */
int srv_db_token_insert(struct srv_db *db, const char *hash, const char *hint, enum srv_role role,
                        const char *label, int64_t now, int64_t *id, struct gd_err *err);

/* The role and number of a live token by its hash; SRV_EAUTH if unknown or revoked. */
int srv_db_token_lookup(struct srv_db *db, const char *hash, enum srv_role *role, int64_t *id,
                        struct gd_err *err);

/* {"tokens": [{id, role, label, hint, created_at, revoked_at}]}. */
int srv_db_token_list(struct srv_db *db, json_t **out, struct gd_err *err);

/* Revokes token id; SRV_ENOTFOUND if there is none, 0 if it was revoked before. */
int srv_db_token_revoke(struct srv_db *db, int64_t id, int64_t now, struct gd_err *err);

/* Live tokens by role (index enum srv_role). */
int srv_db_token_counts(struct srv_db *db, int64_t counts[4], struct gd_err *err);

/* ---- sweeps (db_sweeps.c) ---- */

struct srv_sweep_doc; /* sweep_doc.h */

/*
 * Stores a checked sweep document and links it to the runs it names, in one transaction.
 * Every named run must be a complete run of the sweep's model (SRV_ECONFLICT names the one
 * that is not). The same document again leaves it as it is (*created = 0); other content
 * under the same id is SRV_ECONFLICT.
 */
int srv_db_sweep_create(struct srv_db *db, const struct srv_sweep_doc *doc, int64_t now,
                        int *created, struct gd_err *err);

/*
 * GET /api/v1/sweeps/{id}'s answer as JSON text followed by a newline (*text owned by the
 * caller, NUL-terminated; *len without the NUL): the summary's fields, "received_at",
 * "runs" (the linked runs the server holds), "table" (a checked row per setting) and
 * "sweep" (the document). SRV_ENOTFOUND for an unknown id.
 */
int srv_db_sweep_get(struct srv_db *db, const char *id, char **text, size_t *len,
                     struct gd_err *err);

struct srv_sweep_filter {
    const char *model, *backend; /* NULL: any */
    int64_t limit, offset;
};

/* {"sweeps": [summaries, newest first], "total", "limit", "offset"}. */
int srv_db_sweeps_list(struct srv_db *db, const struct srv_sweep_filter *f, json_t **out,
                       struct gd_err *err);

/* ---- replays (db_replays.c; docs/SERVER.md, "Replays") ---- */

/*
 * The newest complete replay of run `of` (a run whose run.json "replay.of" is of) made with
 * the device key of run `like` (the same backend, GPU and numerics knobs), into out; 0, or
 * SRV_ENOTFOUND when there is none.
 */
int srv_db_replay_find(struct srv_db *db, const char *of, const char *like, char out[40],
                       struct gd_err *err);

/*
 * When run id is a replay, drops the cached diffs of the run it replays (they were computed
 * without it). In the caller's transaction; nothing for other runs.
 */
int srv_db_replay_finished(struct srv_db *db, const char *id, struct gd_err *err);

/* ---- jobsrv: the fleet's files, devices, jobs and leases (migration 011; docs/SERVER.md,
 * "Jobs, devices and leases"). "job" alone is a compare job (db_compare_queue.c): these say
 * fleet. ---- */

/* A JSON object stored by db_devices.c or db_fleet_jobs.c, parsed; {} if it cannot be. */
json_t *srv__fleet_json(const char *text);

/*
 * The fleet's times (issue 24), from the connection's srv_db_opts: a device not seen for
 * stale_seconds (no poll, no heartbeat) and holding no lease leaves every job's targets; a
 * lease not confirmed by the agent's first heartbeat within confirm_seconds is withdrawn.
 */
#define SRV_FLEET_STALE_DEFAULT   120
#define SRV_FLEET_CONFIRM_DEFAULT 10
int64_t srv_db_fleet_stale_seconds(const struct srv_db *db);
int64_t srv_db_fleet_confirm_seconds(const struct srv_db *db);

/* Files (db_fleet_files.c). *is_file: a job may name it; *blob_stored: its bytes are here. */
int srv_db_fleet_file_state(struct srv_db *db, const char *sha256, int *is_file,
                            int *blob_stored, struct gd_err *err);

/*
 * In one transaction: stores the blob from spill (when given and its sha256 is new) and
 * records the file. *created is 0 when the file was recorded already. Without a spill the
 * blob must exist (SRV_EBUSY asks to send it again if retention dropped it meanwhile).
 */
int srv_db_fleet_file_commit(struct srv_db *db, const char *sha256, uint64_t bytes,
                             const struct srv_blob_spill *spill, int64_t now, int *created,
                             struct gd_err *err);

struct srv_fleet_file_loc {
    int64_t blob_id;
    int elem_size;
    uint64_t raw_size, stored_size;
};

/* Where a file's bytes are; SRV_ENOTFOUND when no job may name it. */
int srv_db_fleet_file_locate(struct srv_db *db, const char *sha256, struct srv_fleet_file_loc *out,
                             struct gd_err *err);

/* Devices (db_devices.c). One device of a registration, checked by the route. */
struct srv_fleet_device_in {
    const char *key, *backend;
    json_t *env, *labels; /* borrowed objects */
};

/* The registering serve: its host, version and serve_id (NULL: an agent that sends none). */
struct srv_fleet_agent_in {
    const char *host, *version, *serve_id;
};

/*
 * Records a registration of `serve` with its devices, in one transaction: a new agent id; a
 * key seen before keeps its device id and gets the new env, labels, agent and last_seen (a
 * removed device comes back). A key held by a live device (seen within the stale time, or
 * leased) of another serve_id is SRV_ECONFLICT, the message naming both hosts and serves,
 * *held_by (when not NULL) a new object of the holder ({"device_id", "key", "agent_id",
 * "serve_id", "host", "seen_seconds_ago"}), and nothing is recorded; the same serve_id is a
 * restart, whose devices' leases are lost (withdrawn, pending again, or failed on their last
 * attempt). *out: {"agent_id", "devices": [{"key", "id"}]}.
 */
int srv_db_agent_register(struct srv_db *db, const struct srv_fleet_agent_in *agent,
                          const struct srv_fleet_device_in *devices, int n, int64_t now,
                          json_t **out, json_t **held_by, struct gd_err *err);

/*
 * {"devices": [{"id", "key", "host", "backend", "labels", "env", "registered", "last_seen",
 * "seen_seconds_ago", "state" (busy: holds a lease; live: seen within the stale time;
 * stale), "leases", "agent": {"id", "host", "agent_version", "serve_id", "registered",
 * "last_seen"}}], "stale_seconds"}: the devices not removed, newest registration first.
 */
int srv_db_devices_list(struct srv_db *db, int64_t now, json_t **out, struct gd_err *err);

/*
 * DELETE /api/v1/devices/{id}: marks the device removed, ends its leases (the agent's next
 * heartbeat is 409) and its open tasks (never_answered, or failed after an attempt), in one
 * transaction. key gets its key; *ended the tasks ended. SRV_ENOTFOUND for an unknown or
 * removed device.
 */
int srv_db_device_remove(struct srv_db *db, const char *id, int64_t now, char key[512],
                         int64_t *ended, struct gd_err *err);

/* In the caller's write transaction (db_leases.c): the device's leases end. An offer not
 * confirmed is withdrawn; a confirmed lease, with outcome "removed", fails its task with
 * why; with "expired", it is lost as an expiry is (pending again or failed, "lease lost: "
 * why). */
int srv__fleet_device_leases_end(struct srv_db *db, const char *device_id, int64_t now,
                                 const char *outcome, const char *why, struct gd_err *err);

/* In the caller's write transaction: the device's pending tasks end with why
 * (never_answered, failed when an attempt was used); *ended += their count. */
int srv__fleet_device_tasks_end(struct srv_db *db, const char *device_id, int64_t now,
                                const char *why, int64_t *ended, struct gd_err *err);

/* Jobs (db_fleet_jobs.c). A checked submission. */
struct srv_fleet_job_in {
    const char *model;
    json_t *files, *knobs, *match; /* borrowed; checked by the route */
    int64_t lease_seconds, attempts, deadline_seconds;
    int64_t token_id;
};

/*
 * 1 when the device (its key, host, backend, env and labels) satisfies match: every key
 * equal to its string or to one of its array's strings (an env field that is a number or a
 * boolean compares as its JSON text).
 */
int srv_fleet_match(json_t *match, const char *key, const char *host, const char *backend,
                    json_t *env, json_t *labels);

/*
 * In one write transaction: the files must all be recorded (SRV_EMISSING, *missing a JSON
 * array of the sha256s lacking), the targets (devices that match, are not removed and were
 * seen within the stale time) not none (SRV_ENODEVICE); then the job and one pending task per
 * target. *out: the job document.
 */
int srv_db_fleet_job_create(struct srv_db *db, const struct srv_fleet_job_in *in, int64_t now,
                            json_t **missing, json_t **out, struct gd_err *err);

/* The job document of GET /api/v1/jobs/{id}; SRV_ENOTFOUND for an unknown id. */
int srv_db_fleet_job_get(struct srv_db *db, const char *id, json_t **out, struct gd_err *err);

/* {"jobs": [documents, newest first]}. */
int srv_db_fleet_jobs_list(struct srv_db *db, int64_t limit, json_t **out, struct gd_err *err);

/* Leases (db_leases.c). */

/* Tasks changed by an expiry pass. */
struct srv_fleet_expired {
    int64_t requeued;       /* leases expired with attempts left: pending again */
    int64_t failed;         /* leases expired on the last attempt: failed */
    int64_t late;           /* pending again after an expiry, past the deadline: failed */
    int64_t never_answered; /* pending past the deadline, never leased */
    int64_t withdrawn;      /* offers not confirmed in time: pending again, not counted */
    int64_t stale;          /* pending tasks of devices unseen for the stale time: ended */
};

/*
 * *stale = 1 when something is due for expiry (of job_id's tasks, or any with NULL): a
 * lease past its lease_until, or a pending task past its job's deadline. A read.
 */
int srv_db_fleet_stale(struct srv_db *db, const char *job_id, int64_t now, int *stale,
                       struct gd_err *err);

/* Expires what is due at now, in one write transaction. The expired leases of every call
 * here are counted in /metrics (gpudiffd_fleet_leases_expired_total). */
int srv_db_fleet_expire(struct srv_db *db, int64_t now, struct srv_fleet_expired *out,
                        struct gd_err *err);

/*
 * *ready = 1 when a task of the agent's devices is pending (or a lease anywhere is due for
 * expiry): worth a write transaction. SRV_ENOTFOUND for an unknown agent. A read.
 */
int srv_db_lease_ready(struct srv_db *db, const char *agent_id, int64_t now, int *ready,
                       struct gd_err *err);

/*
 * One write transaction: expiry, the heartbeat of the agent's devices, and the take of the
 * oldest job's pending task of theirs (of a device not removed). *lease: the lease document,
 * or NULL when there was none; it is an offer live for the confirm time (its lease_until),
 * which the agent's first heartbeat confirms. SRV_ENOTFOUND for an unknown agent.
 */
int srv_db_lease_take(struct srv_db *db, const char *agent_id, int64_t now, json_t **lease,
                      struct srv_fleet_expired *expired, struct gd_err *err);

/*
 * Extends a live lease to now + its job's lease_seconds; SRV_ELEASE when it is not live. The
 * first heartbeat of a lease confirms the offer (*confirmed = 1 then; may be NULL).
 */
int srv_db_lease_heartbeat(struct srv_db *db, const char *lease_id, int64_t now, int64_t *until,
                           int *confirmed, struct gd_err *err);

/* A live lease given back by its agent: the task pending again, the attempt not counted. */
int srv_db_lease_release(struct srv_db *db, const char *lease_id, int64_t now, struct gd_err *err);

/* The task of a live lease finished with run_id (a complete run, else SRV_EBADREQ). */
int srv_db_lease_done(struct srv_db *db, const char *lease_id, const char *run_id, int64_t now,
                      struct gd_err *err);

/* The task of a live lease failed with error (no retry). */
int srv_db_lease_fail(struct srv_db *db, const char *lease_id, const char *error,
                      int64_t exit_code, int64_t now, struct gd_err *err);

/* Devices seen within the stale time, and tasks by state (pending, leased,
 * finished, failed, never_answered), for /metrics. */
int srv_db_fleet_counts(struct srv_db *db, int64_t now, int64_t *devices_seen, int64_t tasks[5],
                        struct gd_err *err);

#endif
