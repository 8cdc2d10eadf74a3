"""hostile_requests.py URL DB AGENT_TOKEN ADMIN_TOKEN: one hostile request after another.

Each kind is sent on its own connection as raw bytes. It must be answered (within seconds)
with its status and the JSON error {"error": {"code", "message", "request_id"}} with its
code, leave the database and its WAL byte for byte as they were, and leave the daemon
answering /healthz. Prints one line per kind and a summary; exits 1 when any kind failed.
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
if call("GET", DIFF).status != 200:
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
