/*
 * fuzz_http.c: libFuzzer entry point over a whole request as gpudiffd reads it: the bytes
 * are a request head and what follows it. The head goes through the gate's parser
 * (srv_head_end, srv_head_parse); a head it accepts is routed through the route table
 * (srv_route_find), its token checked (srv_route_authorize), its size and type checked as
 * http.c does, its body (what follows the head, cut at its Content-Length) given to the
 * handler (JSON bodies whole, layer bodies in pieces of 4 KiB), and the handler run to its
 * answer, again as on a pool thread when it defers (to the compare or the write pool). The database
 * is a real one in a temporary folder, with an agent token (gd_ and 43 'A's, in
 * tests/fuzz/http.dict), two complete runs and one uploading run, so that routes find what they
 * look for. libmicrohttpd is not involved: handlers read the parsed head, and responses are only
 * built and freed. tests/fuzz/run.sh builds and runs it.
 *
 * Besides the sanitizers' findings it aborts when an answer breaks the API's rules: an
 * error without the JSON error's code, or a status that is not one the error table gives.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gpudiff/hash.h"
#include "blob.h"
#include "compare.h"
#include "db.h"
#include "head.h"
#include "run_doc.h"
#include "server.h"

#define TOKEN "gd_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"
#define RUN_A "aaaaaaaa-aaaa-4aaa-8aaa-aaaaaaaaaaaa"
#define RUN_B "bbbbbbbb-bbbb-4bbb-8bbb-bbbbbbbbbbbb"
#define RUN_U "cccccccc-cccc-4ccc-8ccc-cccccccccccc"

static struct srv_server srv;
static char dir[64];

static int
fd_sink(void *user, const void *data, size_t len, struct gd_err *err)
{
    (void)err;
    return write(*(int *)user, data, len) == (ssize_t)len ? 0 : GD_EIO;
}

/* Stores a run of two float32 layers of four values; finished when finish is 1. */
static void
add_run(struct srv_db *db, const char *id, float scale, int finish)
{
    float data[2][4] = {{1, 2, 3, 4}, {scale, 2 * scale, 3, 4}};
    char sha[2][65], text[2048];
    struct gd_err err;
    for (int i = 0; i < 2; i++)
        if (gd_sha256_hex(data[i], 16, sha[i], &err) != 0)
            abort();
    snprintf(text, sizeof text,
             "{\"format\":\"gpudiff-run\",\"version\":1,\"id\":\"%s\",\"created_at\":"
             "\"2026-01-01T00:00:00Z\",\"model\":{\"name\":\"m\",\"sha256\":null},\"backend\":"
             "\"cpu\",\"layers\":[{\"index\":0,\"name\":\"a\",\"op\":\"Relu\",\"dtype\":"
             "\"float32\",\"shape\":[4],\"file\":\"layers/0000-a.npy\",\"sha256\":\"%s\"},"
             "{\"index\":1,\"name\":\"b\",\"op\":\"Gemm\",\"dtype\":\"float32\",\"shape\":[2,2],"
             "\"file\":\"layers/0001-b.npy\",\"sha256\":\"%s\"}]}",
             id, sha[0], sha[1]);
    struct srv_run_doc doc;
    int created = 0;
    if (srv_run_doc_parse(text, strlen(text), 1 << 20, &doc, &err) != 0 ||
        srv_db_run_create(db, &doc, 1, &created, &err) != 0)
        abort();
    srv_run_doc_fini(&doc);
    for (int i = 0; i < 2 && finish; i++) {
        struct srv_layer_spec spec;
        if (srv_db_layer_spec(db, id, i, &spec, &err) != 0)
            abort();
        if (spec.present)
            continue;
        char path[96];
        snprintf(path, sizeof path, "%s/spill.XXXXXX", dir);
        int fd = mkstemp(path);
        unlink(path);
        struct srv_blob_enc *enc = NULL;
        uint64_t stored = 0;
        if (fd < 0 || srv_blob_enc_new(4, 16, 3, fd_sink, &fd, &enc, &err) != 0 ||
            srv_blob_enc_write(enc, data[i], 16, &err) != 0 ||
            srv_blob_enc_finish(enc, &stored, &err) != 0)
            abort();
        srv_blob_enc_free(enc);
        struct srv_blob_spill spill = {fd, "float32", 4, 16, stored, SRV_BLOB_CODEC};
        int was_stored = 0, was_present = 0;
        if (srv_db_layer_commit(db, id, i, sha[i], &spill, 10, &was_stored, &was_present, &err) !=
            0)
            abort();
        close(fd);
    }
    if (finish && srv_db_run_finish(db, id, 20, &err) != 0)
        abort();
}

static void
setup(void)
{
    snprintf(dir, sizeof dir, "/tmp/fuzz_http.XXXXXX");
    if (mkdtemp(dir) == NULL)
        abort();
    srv_log_init(GD_LOG_ERROR);
    srv_config_init(&srv.cfg);
    snprintf(srv.cfg.db, sizeof srv.cfg.db, "%s/fuzz.db", dir);
    srv.cfg.max_json = 1 << 20;
    srv.cfg.max_body = 1 << 20;
    snprintf(srv.spill_dir, sizeof srv.spill_dir, "%s", dir);
    struct srv_db_opts opts = {.busy_timeout_ms = 1000};
    struct gd_err err;
    struct srv_db *db = NULL;
    char hash[65];
    int64_t id = 0;
    if (srv_store_open(srv.cfg.db, &opts, &srv.store, &err) != 0 ||
        srv_store_acquire(srv.store, &db, &err) != 0 || srv_db_migrate(db, NULL, NULL, &err) != 0 ||
        srv_token_hash(TOKEN, hash, &err) != 0 ||
        srv_db_token_insert(db, hash, "gd_AAAA", SRV_ROLE_ADMIN, "fuzz", 0, &id, &err) != 0)
        abort();
    add_run(db, RUN_A, 1.0f, 1);
    add_run(db, RUN_B, 1.5f, 1);
    add_run(db, RUN_U, 2.0f, 0);
    srv_store_release(srv.store, db);
    struct srv_compare_opts copts = {1, 4, 10, 64 << 20};
    if (srv_compare_start(srv.store, &copts, &srv.compare, &err) != 0)
        abort();
}

/* The answer is an error in the table's form, or a success. */
static void
check_answer(struct srv_req *req)
{
    if (req->err.code != 0) {
        unsigned status = srv_err_status(req->err.code);
        if (status < 400 || status > 599 || srv_err_code(req->err.code) == NULL ||
            req->err.msg[0] == '\0')
            abort();
    }
}

/* What http.c does with a request, without libmicrohttpd. */
static void
serve(const struct srv_head *head, const char *body, size_t body_len)
{
    struct srv_req req;
    memset(&req, 0, sizeof req);
    req.srv = &srv;
    req.head = *head;
    req.path = head->path;
    snprintf(req.method, sizeof req.method, "%s", head->method);
    srv_request_id_new(&srv, srv_head_field(head, "X-Request-Id"), req.id, sizeof req.id);
    req.metrics_route = SRV_METRICS_UNMATCHED;
    int rc = srv_route_find(&req, req.allow, sizeof req.allow);
    if (rc == 0)
        rc = srv_route_authorize(&req, req.route->role);
    const struct srv_route *r = req.route;
    req.has_length = head->has_length;
    req.content_length = head->content_length;
    if (rc == 0 && r->body == SRV_BODY_STREAM && !head->has_length)
        rc = srv_req_fail(&req, SRV_ELENGTH, "send a Content-Length");
    if (rc == 0 && r->body == SRV_BODY_JSON && head->content_length > (uint64_t)srv.cfg.max_json)
        rc = srv_req_fail(&req, SRV_ETOOBIG, "too big");
    if (rc == 0 && r->body == SRV_BODY_STREAM && head->content_length > (uint64_t)srv.cfg.max_body)
        rc = srv_req_fail(&req, SRV_ETOOBIG, "too big");
    if (rc == 0 && r->begin != NULL)
        rc = r->begin(&req);
    if (body_len > head->content_length)
        body_len = (size_t)head->content_length;
    if (rc == 0 && r->body == SRV_BODY_JSON && srv_buf_append(&req.body, body, body_len) != 0)
        abort();
    if (rc == 0 && r->body == SRV_BODY_STREAM)
        for (size_t off = 0; off < body_len && req.err.code == 0; off += 4096)
            r->chunk(&req, body + off, body_len - off < 4096 ? body_len - off : 4096);
    if (rc == 0 && req.err.code == 0) {
        rc = r->end(&req);
        if ((rc == SRV_EDEFER || rc == SRV_EDEFERWRITE) && req.err.code == 0) {
            req.on_pool = 1;
            rc = r->end(&req);
            if (rc == SRV_EDEFER || rc == SRV_EDEFERWRITE)
                abort(); /* deferred twice */
        }
    }
    check_answer(&req);
    if (req.err.code != 0)
        srv_reply_error(&req);
    if (req.ctx_free != NULL && req.ctx != NULL)
        req.ctx_free(req.ctx);
    srv_buf_fini(&req.body);
    if (req.resp != NULL)
        MHD_destroy_response(req.resp);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (srv.store == NULL)
        setup();
    const char *text = (const char *)data;
    size_t end = srv_head_end(text, size);
    if (end == 0 || end > 16384)
        return 0; /* the gate waits for more, or answers 431 */
    struct srv_head head;
    struct gd_err err = {0};
    int rc = srv_head_parse(text, end, &head, &err);
    if (rc != 0) {
        if (err.code != rc || err.msg[0] == '\0' || srv_err_status(rc) < 400)
            abort();
        return 0;
    }
    if (head.head_len != end || head.path == NULL || head.path[0] != '/')
        abort();
    for (const char *p = head.path; *p; p++)
        if ((unsigned char)*p < 0x20 || *p == 0x7f)
            abort(); /* a control byte got through */
    if (!head.chunked)
        serve(&head, text + end, size - end);
    srv_head_fini(&head);
    return 0;
}
