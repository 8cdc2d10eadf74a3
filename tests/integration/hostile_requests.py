"""hostile_requests.py URL DB AGENT_TOKEN ADMIN_TOKEN [OTHER_AGENT]: one hostile request after another.

Each kind is sent on its own connection as raw bytes. It must be answered (within seconds)
with its status and the JSON error {"error": {"code", "message", "request_id"}} with its
code, leave the database and its WAL byte for byte as they were, and leave the daemon
answering /healthz (on PostgreSQL, DB a postgresql:// URI, every table's rows as they
were). Prints one line per kind and a summary; exits 1 when any kind failed.

The kinds: the project's own (framing, the request line, header lines, NUL and control
bytes, numbers in the query, run.json's identity and size) and issue 25's, made from
tables: every route under each method it does not take (405); every write route without a
token, with malformed or unknown ones, and for admin routes with an agent's (401, 403);
every JSON route under bodies of other types or of none, tensor and file bodies of the
wrong type (415); Host values that are not a host (400); path parameters and query values
of the wrong form and unknown query keys (400, 404); another agent's changes to runs it
does not own (403, with OTHER_AGENT). 300 kinds or more.
"""
import json
import sys
import threading
import time
from urllib.parse import urlparse

import hostile as h

url = urlparse(sys.argv[1])
HOST, PORT = url.hostname, url.port
DB, AGENT, ADMIN = sys.argv[2], sys.argv[3], sys.argv[4]
OTHER = sys.argv[5] if len(sys.argv) > 5 else None
AUTH = ("Authorization", "Bearer " + AGENT)
ADMIN_AUTH = ("Authorization", "Bearer " + ADMIN)
JSON = ("Content-Type", "application/json")


def call(method, target, headers=(), body=b""):
    hdrs = list(headers)
    if body:
        hdrs.append(("Content-Length", str(len(body))))
    ans, _, raw = h.exchange(HOST, PORT, h.request(method, target, hdrs, body))
    if ans is None:
        sys.exit("setup: %s %s got no HTTP answer: %r" % (method, target, raw[:200]))
    return ans


def upload(doc, files, finish=True, skip=()):
    body = json.dumps(doc).encode()
    a = call("POST", "/api/v1/runs", [AUTH, JSON], body)
    if a.status not in (200, 201):
        sys.exit("setup: POST run: %d %r" % (a.status, a.body[:300]))
    for i, f in enumerate(files):
        if i in skip:
            continue
        a = call("PUT", "/api/v1/runs/%s/layers/%d" % (doc["id"], i), [AUTH], f)
        if a.status not in (200, 201):
            sys.exit("setup: PUT layer %d: %d %r" % (i, a.status, a.body[:300]))
    if finish:
        a = call("POST", "/api/v1/runs/%s/finish" % doc["id"], [AUTH])
        if a.status != 200:
            sys.exit("setup: finish: %d %r" % (a.status, a.body[:300]))


def settle():
    """Waits until the database stops changing (comparisons queued by setup are done)."""
    last, since = h.db_state(DB), time.monotonic()
    deadline = since + 60
    while time.monotonic() < deadline:
        time.sleep(0.2)
        now = h.db_state(DB)
        if now != last:
            last, since = now, time.monotonic()
        elif time.monotonic() - since > 1.5:
            return
    sys.exit("setup: the database kept changing for 60 s")


# ---- setup: two complete runs, one uploading with a layer missing, one ready to finish ----
R1, F1 = h.make_run("hostile", 3, seed=1)
R2, F2 = h.make_run("hostile", 3, seed=2)
U, FU = h.make_run("hostile", 2, seed=3)
RF, FF = h.make_run("hostile", 2, seed=4)
upload(R1, F1)
upload(R2, F2)
upload(U, FU, finish=False, skip=(1,))
upload(RF, FF, finish=False)
a = call("POST", "/api/v1/baseline?model=hostile", [ADMIN_AUTH, JSON],
         json.dumps({"run": R1["id"]}).encode())
if a.status != 200:
    sys.exit("setup: baseline: %d %r" % (a.status, a.body[:300]))
DIFF = "/api/v1/diff?a=%s&b=%s" % (R2["id"], R1["id"])
# The diff under tolerances of its own: computed and cached now. (A cached diff read here
# would be a use noted in memory, written to the database by the compare worker's next
# pass, up to 30 s later: in the middle of the kinds below.)
if call("GET", DIFF + "&atol=0.5").status != 200:
    sys.exit("setup: the diff of two good runs failed")
settle()

RUN1, RUNU, RUNF = R1["id"], U["id"], RF["id"]
GOOD_RUN = json.dumps(h.make_run("hostile", 2, seed=5)[0]).encode()
LAYER1 = FU[1]  # the layer U still lacks: a PUT of it would store it


def post_run(doc, extra_headers=()):
    body = json.dumps(doc).encode()
    return h.request("POST", "/api/v1/runs",
                     [AUTH, JSON, ("Content-Length", str(len(body)))] + list(extra_headers), body)


SEEDS = iter(range(100, 1000))


def run_with(mutate):
    doc, _ = h.make_run("hostile", 2, seed=next(SEEDS))
    mutate(doc)
    return post_run(doc)


def chunked(data, size=64):
    out = b""
    for i in range(0, len(data), size):
        piece = data[i:i + size]
        out += b"%x\r\n" % len(piece) + piece + b"\r\n"
    return out + b"0\r\n\r\n"


def get(target, headers=()):
    return h.request("GET", target, headers)


def raw(text):
    return text if isinstance(text, bytes) else text.encode("latin-1")


def layer_put(extra, body=LAYER1, length=True):
    hdrs = [AUTH] + ([("Content-Length", str(len(body)))] if length else []) + list(extra)
    return h.request("PUT", "/api/v1/runs/%s/layers/1" % RUNU, hdrs, body)


BIG = 2**63 - 1
CASES = [
    # ---- framing: the request-smuggling shapes and unusual transfer codings ----
    ("Content-Length and Transfer-Encoding on a layer PUT",
     layer_put([("Transfer-Encoding", "chunked")], chunked(LAYER1)), 400, "bad_request"),
    ("Content-Length 2 and a chunked run.json",
     h.request("POST", "/api/v1/runs", [AUTH, JSON, ("Content-Length", "2"),
                                        ("Transfer-Encoding", "chunked")], chunked(GOOD_RUN)),
     400, "bad_request"),
    ("Transfer-Encoding: gzip",
     h.request("POST", "/api/v1/runs", [AUTH, JSON, ("Transfer-Encoding", "gzip")], b"x" * 20),
     400, "bad_request"),
    ("Transfer-Encoding: gzip, chunked",
     h.request("POST", "/api/v1/runs", [AUTH, JSON, ("Transfer-Encoding", "gzip, chunked")],
               chunked(GOOD_RUN)), 400, "bad_request"),
    ("Transfer-Encoding: identity", layer_put([("Transfer-Encoding", "identity")]),
     400, "bad_request"),
    ("Transfer-Encoding: xchunked", layer_put([("Transfer-Encoding", "xchunked")], length=False),
     400, "bad_request"),
    ("two Transfer-Encoding headers",
     layer_put([("Transfer-Encoding", "chunked"), ("Transfer-Encoding", "chunked")],
               chunked(LAYER1), length=False), 400, "bad_request"),
    ("Transfer-Encoding with a space before the colon",
     layer_put([("Transfer-Encoding ", "chunked")], chunked(LAYER1)), 400, "bad_request"),
    ("a chunked body alone (no length)",
     layer_put([("Transfer-Encoding", "chunked")], chunked(LAYER1), length=False),
     411, "length_required"),
    ("HTTP/1.1 without Host", h.request("GET", "/api/v1/runs/" + RUN1, host=None),
     400, "bad_request"),
    ("two Host headers", get("/api/v1/runs/" + RUN1, [("Host", "other")]), 400, "bad_request"),
    ("Host with a control byte", get("/api/v1/runs/" + RUN1, [("X-A", "b")]).replace(
        b"Host: 127.0.0.1", b"Host: 127.0.0.1\x01"), 400, "bad_request"),
    ("Content-Length: abc", layer_put([]).replace(
        b"Content-Length: %d" % len(LAYER1), b"Content-Length: abc"), 400, "bad_request"),
    ("Content-Length: -1", layer_put([], length=False) .replace(
        b"\r\n\r\n", b"\r\nContent-Length: -1\r\n\r\n", 1), 400, "bad_request"),
    ("Content-Length: +10", layer_put([], length=False).replace(
        b"\r\n\r\n", b"\r\nContent-Length: +10\r\n\r\n", 1), 400, "bad_request"),
    ("Content-Length past 2^64", layer_put([], length=False).replace(
        b"\r\n\r\n", b"\r\nContent-Length: 99999999999999999999999\r\n\r\n", 1),
     400, "bad_request"),
    ("Content-Length: 5, 5", layer_put([], length=False).replace(
        b"\r\n\r\n", b"\r\nContent-Length: 5, 5\r\n\r\n", 1), 400, "bad_request"),
    ("two different Content-Lengths",
     layer_put([("Content-Length", "7")]), 400, "bad_request"),
    ("two equal Content-Lengths",
     layer_put([("Content-Length", str(len(LAYER1)))]), 400, "bad_request"),
    ("Content-Length over --max-body with Expect: 100-continue",
     layer_put([("Expect", "100-continue")], length=False).replace(
         b"\r\n\r\n", b"\r\nContent-Length: 99999999999\r\n\r\n", 1), 413, "body_too_large"),
    ("a run.json over --max-json",
     h.request("POST", "/api/v1/runs", [AUTH, JSON, ("Content-Length", "999999999")]),
     413, "body_too_large"),
    # ---- the request line ----
    ("HTTP/2.0", h.request("GET", "/healthz", version="HTTP/2.0"), 505,
     "http_version_not_supported"),
    ("HTTP/3.0", h.request("GET", "/healthz", version="HTTP/3.0"), 505,
     "http_version_not_supported"),
    ("HTTP/0.9", h.request("GET", "/healthz", version="HTTP/0.9"), 505,
     "http_version_not_supported"),
    ("no version", b"GET /healthz\r\nHost: x\r\n\r\n", 400, "bad_request"),
    ("a version that is not HTTP", h.request("GET", "/healthz", version="HTTX/1.1"),
     400, "bad_request"),
    ("a tab between method and path", b"GET\t/healthz HTTP/1.1\r\nHost: x\r\n\r\n",
     400, "bad_request"),
    ("a space in the path", get("/api/v1/runs /x"), 400, "bad_request"),
    ("a control byte in the method", h.request("G\x01T", "/healthz"), 400, "bad_request"),
    ("a method of 40 letters", h.request("A" * 40, "/healthz"), 400, "bad_request"),
    ("an unknown method", h.request("BREW", "/api/v1/runs"), 405, "method_not_allowed"),
    ("a lowercase method", h.request("get", "/api/v1/runs"), 405, "method_not_allowed"),
    ("an absolute-form target", get("http://127.0.0.1/healthz"), 400, "bad_request"),
    ("the asterisk target", get("*"), 400, "bad_request"),
    ("a 20,000-byte path", get("/api/v1/runs/" + "a" * 20000), 414, "uri_too_long"),
    # ---- header lines ----
    ("bare LF line ends", b"GET /healthz HTTP/1.1\nHost: x\n\n", 400, "bad_request"),
    ("a folded header line", get("/healthz", [("X-A", "b\r\n c")]), 400, "bad_request"),
    ("a space before a colon", get("/healthz", [("X-A ", "b")]), 400, "bad_request"),
    ("a header line without a colon",
     get("/healthz").replace(b"\r\n\r\n", b"\r\nno colon here\r\n\r\n"), 400, "bad_request"),
    ("an empty header name", get("/healthz", [("", "b")]), 400, "bad_request"),
    ("a header name with '('", get("/healthz", [("X(y)", "z")]), 400, "bad_request"),
    ("a NUL byte in a header value", get("/api/v1/runs/" + RUN1, [("X-A", "b\x00c")]),
     400, "bad_request"),
    ("a control byte in a header value", get("/api/v1/runs/" + RUN1, [("X-A", "b\x01c")]),
     400, "bad_request"),
    ("a NUL in the Authorization header",
     layer_put([]).replace(b"Bearer " + AGENT.encode(), b"Bearer " + AGENT.encode() + b"\x00x"),
     400, "bad_request"),
    ("a control byte in X-Request-Id", get("/healthz", [("X-Request-Id", "a\x1bb")]),
     400, "bad_request"),
    ("a 64 KiB header value", get("/healthz", [("X-A", "b" * 65536)]), 431,
     "headers_too_large"),
    ("500 header lines", get("/healthz", [("X-H%d" % i, "v") for i in range(500)]), 431,
     "headers_too_large"),
    # ---- NUL and control bytes in the path and query, raw or percent-encoded ----
    ("%00 after a run id", get("/api/v1/runs/%s%%00xyz" % RUN1), 400, "bad_request"),
    ("%00 in a diff's run id", get("/api/v1/diff?a=%s%%00junk&b=%s" % (R2["id"], RUN1)),
     400, "bad_request"),
    ("%00 before a file suffix", get("/index.html%00.png"), 400, "bad_request"),
    ("%00 after finish", h.request("POST", "/api/v1/runs/%s/finish%%00x" % RUNF, [AUTH]),
     400, "bad_request"),
    ("%01 in the path", get("/api/v1/runs/%01"), 400, "bad_request"),
    ("%7f in the query", get("/api/v1/runs?model=a%7f"), 400, "bad_request"),
    ("%0a in a query value", get("/api/v1/runs?model=%0a"), 400, "bad_request"),
    ("%00 in a query key", get("/api/v1/runs?mo%00del=x"), 400, "bad_request"),
    ("a raw NUL in the path", get("/api/v1/runs/\x00"), 400, "bad_request"),
    ("a raw DEL in the path", get("/api/v1/runs/\x7f"), 400, "bad_request"),
    ("a bad escape %zz in the path", get("/api/v1/runs/%zz"), 400, "bad_request"),
    ("a bad escape %g1 in the query", get("/api/v1/runs?model=%g1"), 400, "bad_request"),
    ("a cut escape %4 at the end", get("/api/v1/runs?model=%4"), 400, "bad_request"),
    ("a query key given twice",
     get("/api/v1/diff?a=%s&b=%s&a=%s" % (R2["id"], RUN1, RUN1)), 400, "bad_request"),
    ("an empty query key", get("/api/v1/runs?=x"), 400, "bad_request"),
    # ---- numbers in the query: decimal as the OpenAPI file says, nothing else ----
    ("atol with a leading space", get(DIFF + "&atol=%201e-8"), 400, "bad_request"),
    ("atol as a hex float", get(DIFF + "&atol=0x1p-20"), 400, "bad_request"),
    ("atol with a trailing space", get(DIFF + "&atol=1e-8%20"), 400, "bad_request"),
    ("atol with a plus sign", get(DIFF + "&atol=%2B1e-8"), 400, "bad_request"),
    ("atol = -0", get(DIFF + "&atol=-0"), 400, "bad_request"),
    ("atol = inf", get(DIFF + "&atol=inf"), 400, "bad_request"),
    ("atol = nan", get(DIFF + "&rtol=nan"), 400, "bad_request"),
    ("atol = 1e400", get(DIFF + "&atol=1e400"), 400, "bad_request"),
    ("atol = .5", get(DIFF + "&atol=.5"), 400, "bad_request"),
    ("atol = 01", get(DIFF + "&atol=01"), 400, "bad_request"),
    ("limit with a leading space", get("/api/v1/runs?limit=%2010"), 400, "bad_request"),
    ("limit in hex", get("/api/v1/runs?limit=0x10"), 400, "bad_request"),
    # ---- run.json: identity and size ----
    ("two layers named relu",
     run_with(lambda d: [l.update(name="relu") for l in d["layers"]]), 400, "bad_request"),
    ("shape [0, 2^63-1, 2^63-1]",
     run_with(lambda d: d["layers"][0].update(shape=[0, BIG, BIG])), 400, "bad_request"),
    ("shape [2^62, 0, 4]",
     run_with(lambda d: d["layers"][0].update(shape=[2**62, 0, 4])), 400, "bad_request"),
    ("a 15 MB string under an unknown key",
     run_with(lambda d: d.update(junk="x" * (15 << 20))), 400, "bad_request"),
    ("40 unknown top-level keys",
     run_with(lambda d: d.update({"k%d" % i: i for i in range(40)})), 400, "bad_request"),
    ("a NUL in the model name (\\u0000)",
     run_with(lambda d: d["model"].update(name="a\u0000b")), 400, "bad_json"),
    ("a control byte in the model name (\\u0001)",
     run_with(lambda d: d["model"].update(name="a\u0001b")), 400, "bad_request"),
    ("a body longer than its Content-Length on a layer PUT",
     layer_put([], LAYER1 + b"x" * 64).replace(
         b"Content-Length: %d" % (len(LAYER1) + 64), b"Content-Length: %d" % (len(LAYER1) - 1)),
     400, "bad_body"),
    ("an empty layer body", layer_put([], b""), 400, "bad_body"),
]


# ---- issue 25: kinds made from tables ----
NO_RUN = "0b2a0a35-7c2b-4d80-9a36-0123456789ab"  # a run id no run has
SHA = "0" * 64
EXTRA = []


def kind(name, data, status, code):
    EXTRA.append((name, data, status, code))


def bearer(token):
    return ("Authorization", "Bearer " + token)


# Every route of server/routes.c as a concrete path, its methods, the role it needs to
# write and its body ("json", "stream" or None).
ROUTES = [
    ("/healthz", {"GET"}, None, None),
    ("/metrics", {"GET"}, None, None),
    ("/api/v1/models", {"GET"}, None, None),
    ("/api/v1/models/hostile/baseline", {"POST"}, "admin", "json"),
    ("/api/v1/models/hostile/matrix", {"GET"}, None, None),
    ("/api/v1/models/hostile/history", {"GET"}, None, None),
    ("/api/v1/baseline", {"POST"}, "admin", "json"),
    ("/api/v1/matrix", {"GET"}, None, None),
    ("/api/v1/history", {"GET"}, None, None),
    ("/api/v1/diff", {"GET"}, None, None),
    ("/api/v1/runs", {"GET", "POST"}, "agent", "json"),
    ("/api/v1/runs/" + RUN1, {"GET"}, None, None),
    ("/api/v1/runs/%s/finish" % RUNF, {"POST"}, "agent", None),
    ("/api/v1/runs/%s/layers/1" % RUNU, {"PUT"}, "agent", "stream"),
    # PUT matches the upload's pattern too, {index} being "1.npy" (a bad index: 400 later)
    ("/api/v1/runs/%s/layers/1.npy" % RUN1, {"GET", "PUT"}, None, None),
    ("/api/v1/tokens", {"GET", "POST"}, "admin", "json"),
    ("/api/v1/tokens/1", {"DELETE"}, "admin", None),
    ("/api/v1/sweeps", {"GET", "POST"}, "agent", "json"),
    ("/api/v1/sweeps/" + NO_RUN, {"GET"}, None, None),
    ("/api/v1/ops", {"GET"}, None, None),
    ("/api/v1/runs/%s/requests" % RUN1, {"GET", "POST"}, "agent", "json"),
    ("/api/v1/files/" + SHA, {"GET", "PUT"}, "agent", "stream"),
    ("/api/v1/agents", {"GET", "POST"}, "agent", "json"),
    ("/api/v1/agents/%s/poll" % NO_RUN, {"POST"}, "agent", None),
    ("/api/v1/devices/" + NO_RUN, {"DELETE"}, "admin", None),
    ("/api/v1/jobs", {"GET", "POST"}, "agent", "json"),
    ("/api/v1/jobs/" + NO_RUN, {"GET"}, None, None),
    ("/api/v1/leases/%s/heartbeat" % NO_RUN, {"POST"}, "agent", None),
    ("/api/v1/leases/%s/done" % NO_RUN, {"POST"}, "agent", "json"),
    ("/api/v1/leases/%s/fail" % NO_RUN, {"POST"}, "agent", "json"),
    ("/api/v1/leases/%s/release" % NO_RUN, {"POST"}, "agent", None),
]
# The method whose role a route of two methods checks: the one that writes.
WRITE = {"/api/v1/runs": "POST", "/api/v1/tokens": "POST", "/api/v1/sweeps": "POST",
         "/api/v1/agents": "POST", "/api/v1/jobs": "POST",
         "/api/v1/runs/%s/requests" % RUN1: "POST", "/api/v1/files/" + SHA: "PUT"}

for path, methods, role, body in ROUTES:
    # 405 for each method the path does not take (no token is needed to learn that)
    for m in ("GET", "POST", "PUT", "DELETE", "PATCH"):
        if m not in methods:
            kind("%s %s" % (m, path), h.request(m, path, [("Content-Length", "0")]), 405,
                 "method_not_allowed")
    if role is None:
        continue
    m = WRITE.get(path, sorted(methods)[0])
    # 401: no token, a malformed one, an unknown one (well formed), a Basic credential
    for what, hdrs in (("no token", []),
                       ("Bearer without a token", [("Authorization", "Bearer")]),
                       ("a Basic credential", [("Authorization", "Basic YWRtaW46YWRtaW4=")]),
                       ("a token of 40 characters", [bearer("gd_" + "A" * 37)]),
                       ("a token of other letters", [bearer("gd_" + "*" * 43)]),
                       ("an unknown token", [bearer("gd_" + "B" * 43)])):
        kind("%s %s: %s" % (m, path, what),
             h.request(m, path, hdrs + [("Content-Length", "0")]), 401, "unauthorized")
    # 403: an agent's token where an admin's is needed
    if role == "admin":
        kind("%s %s with an agent token" % (m, path),
             h.request(m, path, [AUTH, ("Content-Length", "0")]), 403, "forbidden")
    # 415: a JSON route's body of another type, or of none (issue 25 item 6)
    tok = ADMIN_AUTH if role == "admin" else AUTH
    if body == "json":
        for ctype in (None, "text/plain", "application/x-www-form-urlencoded",
                      "multipart/form-data; boundary=x", "application/jsonx",
                      "application/json-seq", "text/json", "application/octet-stream"):
            hdrs = [tok, ("Content-Length", "2")] + ([("Content-Type", ctype)] if ctype else [])
            kind("POST %s as %s" % (path, ctype or "no Content-Type"),
                 h.request("POST", path, hdrs, b"{}"), 415, "unsupported_media_type")
    if body == "stream":
        for ctype in ("application/json", "text/plain", "multipart/form-data; boundary=x",
                      "application/x-www-form-urlencoded", "image/png"):
            kind("PUT %s as %s" % (path, ctype),
                 h.request("PUT", path, [tok, ("Content-Length", "4"), ("Content-Type", ctype)],
                           b"abcd"), 415, "unsupported_media_type")

# Host values that are not a host and port (RFC 9112 3.2): 400
for host in ("a b", "evil.example/x", "user@127.0.0.1", "127.0.0.1:99999", "127.0.0.1:-1",
             "127.0.0.1:abc", "127.0.0.1:1:2", "[::1", "[::g]", "[]", "h?x", "h#x", "h\\x",
             "<h>", 'h"x', "%zz", "h%", "h{x}", "h|x", "h^x", "h`x", "[::1]x", "::1"):
    kind("Host: %s" % host, h.request("GET", "/api/v1/runs", host=host), 400, "bad_request")
kind("Host in HTTP/1.0, not a host",
     h.request("GET", "/healthz", version="HTTP/1.0", host="a b"), 400, "bad_request")

# Path parameters of the wrong form
for what, path, status, code in (
        ("a run id that is no UUID", "/api/v1/runs/run-1", 400, "bad_request"),
        ("an upper-case run id", "/api/v1/runs/" + RUN1.upper(), 400, "bad_request"),
        ("a run id of version 1", "/api/v1/runs/" + RUN1[:14] + "1" + RUN1[15:], 400,
         "bad_request"),
        ("a run id of 200 characters", "/api/v1/runs/" + "a" * 200, 404, "not_found"),
        ("a layer index that is no number",
         "/api/v1/runs/%s/layers/x.npy" % RUN1, 400, "bad_request"),
        ("a layer index of -1", "/api/v1/runs/%s/layers/-1.npy" % RUN1, 400, "bad_request"),
        ("a layer index of 10^7", "/api/v1/runs/%s/layers/10000000.npy" % RUN1, 400,
         "bad_request"),
        ("a layer index in hex", "/api/v1/runs/%s/layers/0x1.npy" % RUN1, 400, "bad_request"),
        ("a layer of no run", "/api/v1/runs/%s/layers/0.npy" % NO_RUN, 404, "not_found"),
        ("a layer past the run's last", "/api/v1/runs/%s/layers/3.npy" % RUN1, 404,
         "not_found"),
        ("a run still uploading", "/api/v1/runs/" + RUNU, 404, "not_found"),
        ("a sweep id that is no UUID", "/api/v1/sweeps/x", 400, "bad_request"),
        ("a job id that is no UUID", "/api/v1/jobs/x", 400, "bad_request"),
        ("a requests list of no UUID", "/api/v1/runs/x/requests", 400, "bad_request"),
        ("a path with a trailing slash", "/api/v1/runs/", 404, "not_found"),
        ("a path with two slashes", "/api/v1//runs", 404, "not_found"),
        ("an API path that no route has", "/api/v1/nosuch", 404, "not_found"),
        ("the API root", "/api", 404, "not_found"),
        ("a dotted path", "/api/v1/runs/../models", 404, "not_found")):
    kind("GET: " + what, get(path), status, code)
for what, req, status, code in (
        ("a file name that is no SHA-256", h.request("GET", "/api/v1/files/abc", [AUTH]), 400,
         "bad_request"),
        ("an upper-case SHA-256", h.request("GET", "/api/v1/files/" + "A" * 64, [AUTH]), 400,
         "bad_request"),
        ("finish a run id that is no UUID",
         h.request("POST", "/api/v1/runs/x/finish", [AUTH]), 400, "bad_request"),
        ("finish a run that does not exist",
         h.request("POST", "/api/v1/runs/%s/finish" % NO_RUN, [AUTH]), 404, "not_found"),
        ("a layer PUT to a run id that is no UUID",
         h.request("PUT", "/api/v1/runs/x/layers/0", [AUTH, ("Content-Length", "0")]), 400,
         "bad_request"),
        ("a layer PUT to index 10^7",
         h.request("PUT", "/api/v1/runs/%s/layers/10000000" % RUNU,
                   [AUTH, ("Content-Length", "0")]), 400, "bad_request"),
        ("a layer PUT to no run",
         h.request("PUT", "/api/v1/runs/%s/layers/0" % NO_RUN, [AUTH, ("Content-Length", "0")]),
         404, "not_found"),
        ("a poll of an agent id that is no UUID",
         h.request("POST", "/api/v1/agents/x/poll", [AUTH]), 400, "bad_request"),
        ("a heartbeat of a lease id that is no UUID",
         h.request("POST", "/api/v1/leases/x/heartbeat", [AUTH]), 400, "bad_request"),
        ("a token id that is no number",
         h.request("DELETE", "/api/v1/tokens/x", [ADMIN_AUTH]), 400, "bad_request")):
    kind(what, req, status, code)

# Unknown query keys, and values of the wrong form, per read route: 400
for path in ("/api/v1/runs", "/api/v1/runs/" + RUN1, "/api/v1/runs/%s/layers/0.npy" % RUN1,
             "/api/v1/models", "/api/v1/diff?a=%s&b=%s" % (R2["id"], RUN1), "/api/v1/sweeps",
             "/api/v1/ops", "/api/v1/jobs", "/api/v1/agents", "/api/v1/runs/%s/requests" % RUN1,
             "/api/v1/matrix?model=hostile", "/api/v1/models/hostile/matrix"):
    kind("GET %s with an unknown key" % path,
         get(path + ("&" if "?" in path else "?") + "nosuch=1"), 400, "bad_request")
for what, target in (
        ("limit=0", "/api/v1/runs?limit=0"), ("limit=1001", "/api/v1/runs?limit=1001"),
        ("limit=-1", "/api/v1/runs?limit=-1"), ("offset=-1", "/api/v1/runs?offset=-1"),
        ("offset of 11 digits", "/api/v1/runs?offset=10000000000"),
        ("since that is no date", "/api/v1/runs?since=yesterday"),
        ("since of month 13", "/api/v1/runs?since=2026-13-01"),
        ("sort=nosuch", "/api/v1/runs?sort=nosuch"), ("order=up", "/api/v1/runs?order=up"),
        ("include=all", "/api/v1/runs?include=all"),
        ("knob without =", "/api/v1/runs?knob=tf32"),
        ("knob of a bad name", "/api/v1/runs?knob=a%20b=1"),
        ("label without =", "/api/v1/runs?label=team"),
        ("9 knob filters", "/api/v1/runs?" + "&".join("knob=k%d=1" % i for i in range(9))),
        ("q of 9 words", "/api/v1/runs?q=" + "+".join("w%d" % i for i in range(9))),
        ("backend with a slash", "/api/v1/runs?backend=a/b"),
        ("a diff without b", "/api/v1/diff?a=" + RUN1),
        ("a diff of a run id that is no UUID", "/api/v1/diff?a=x&b=" + RUN1),
        ("a diff with a truth that is no UUID",
         "/api/v1/diff?a=%s&b=%s&truth=x" % (R2["id"], RUN1)),
        ("atol=1e-8e", "/api/v1/diff?a=%s&b=%s&atol=1e-8e" % (R2["id"], RUN1)),
        ("rtol=-1e-5", "/api/v1/diff?a=%s&b=%s&rtol=-1e-5" % (R2["id"], RUN1)),
        ("atol=1,5", "/api/v1/diff?a=%s&b=%s&atol=1,5" % (R2["id"], RUN1)),
        ("a history without layer", "/api/v1/history?model=hostile"),
        ("a history limit of 1001", "/api/v1/history?model=hostile&layer=layer0&limit=1001"),
        ("a matrix row that is no number", "/api/v1/matrix?model=hostile&row=x"),
        ("a matrix compute=some", "/api/v1/matrix?model=hostile&compute=some"),
        ("a sweeps limit of 0", "/api/v1/sweeps?limit=0"),
        ("a jobs limit of 0", "/api/v1/jobs?limit=0"),
        ("a model name with a control byte", "/api/v1/runs?model=a%01b")):
    kind("GET: " + what, get(target), 400, "bad_request")
kind("GET: include=uploading without a token", get("/api/v1/runs?include=uploading"), 401,
     "unauthorized")

# Runs belong to the token that created them (issue 25 item 4): another agent's token may
# not change them.
if OTHER is not None:
    B = bearer(OTHER)
    u_doc = json.dumps(U).encode()
    kind("another agent finishes a run", h.request("POST", "/api/v1/runs/%s/finish" % RUNF, [B]),
         403, "forbidden")
    kind("another agent finishes a complete run",
         h.request("POST", "/api/v1/runs/%s/finish" % RUN1, [B]), 403, "forbidden")
    kind("another agent sends a layer of a run",
         h.request("PUT", "/api/v1/runs/%s/layers/1" % RUNU,
                   [B, ("Content-Length", str(len(LAYER1)))], LAYER1), 403, "forbidden")
    kind("another agent posts a run's run.json again",
         h.request("POST", "/api/v1/runs", [B, JSON, ("Content-Length", str(len(u_doc)))],
                   u_doc), 403, "forbidden")
    rep = h.make_run("hostile", 2, seed=999,
                     extra={"replay": {"of": RUN1, "inputs": "captured"}})[0]
    rep_doc = json.dumps(rep).encode()
    kind("another agent attaches a replay to a run",
         h.request("POST", "/api/v1/runs", [B, JSON, ("Content-Length", str(len(rep_doc)))],
                   rep_doc), 403, "forbidden")
CASES += EXTRA


def check(name, data, want_status, want_code):
    before = h.db_state(DB)
    ans, secs, raw_bytes = h.exchange(HOST, PORT, data, timeout=10)
    problems = []
    if ans is None:
        problems.append("no HTTP answer in %.1f s (%r)" % (secs, raw_bytes[:120]))
    else:
        if ans.status != want_status:
            problems.append("status %d, expected %d" % (ans.status, want_status))
        body = ans.json()
        err = body.get("error") if isinstance(body, dict) else None
        if not isinstance(err, dict) or not all(
                isinstance(err.get(k), str) and err.get(k) for k in ("code", "message",
                                                                     "request_id")):
            problems.append("not the JSON error form: %r" % ans.body[:160])
        elif err["code"] != want_code:
            problems.append("code %s, expected %s (%s)" % (err["code"], want_code,
                                                           err["message"]))
        if ans.header("content-type") != "application/json":
            problems.append("Content-Type %s" % ans.header("content-type"))
    time.sleep(0.05)
    if h.db_state(DB) != before:
        problems.append("the database changed")
    health, _, _ = h.exchange(HOST, PORT, h.request("GET", "/healthz"), timeout=5)
    if health is None or health.status != 200:
        problems.append("the daemon no longer answers /healthz")
    if problems:
        print("FAIL: %s: %s" % (name, "; ".join(problems)))
        return False
    print("ok: %s -> %d %s" % (name, want_status, want_code))
    return True


def big_chunked_body():
    """Content-Length 224 and a 200 MB chunked body: answered before the body is read."""
    s = h.connect(HOST, PORT, timeout=10)
    head = ("POST /api/v1/runs HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n"
            "Content-Type: application/json\r\nContent-Length: 224\r\n"
            "Transfer-Encoding: chunked\r\n\r\n" % AGENT).encode()
    s.sendall(head)
    sent = [0]
    chunk = b"%x\r\n" % (1 << 20) + b"x" * (1 << 20) + b"\r\n"

    def pump():
        try:
            while sent[0] < 200 << 20:
                s.sendall(chunk)
                sent[0] += len(chunk)
        except OSError:
            pass

    t = threading.Thread(target=pump, daemon=True)
    t.start()
    data = b""
    try:
        while True:
            piece = s.recv(65536)
            if not piece:
                break
            data += piece
    except OSError:
        pass
    t.join(10)
    s.close()
    ans = h.parse_answer(data)
    if ans is None or ans.status != 400 or (ans.json() or {}).get("error") is None:
        print("FAIL: Content-Length 224 and a 200 MB chunked body: %r" % data[:160])
        return False
    if sent[0] >= 200 << 20:
        print("FAIL: Content-Length 224 and a 200 MB chunked body: all of it was read")
        return False
    print("ok: Content-Length 224 and a 200 MB chunked body -> 400 after %d MB sent"
          % (sent[0] >> 20))
    return True


failed = 0
for case in CASES:
    if not check(*case):
        failed += 1
kinds = len(CASES) + 1
if not big_chunked_body():
    failed += 1
print("hostile requests: %d kinds, %d failed" % (kinds, failed))
sys.exit(1 if failed else 0)
