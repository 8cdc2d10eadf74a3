"""hostile_tls.py PORT CAFILE AGENT_TOKEN: hostile clients against gpudiffd's own TLS.

The daemon serves https://localhost:PORT (certificate for "localhost", signed by CAFILE)
with --header-timeout 2 --body-timeout 2 --body-min-rate 1M --max-connections-per-ip 16.
Over TLS the gate cannot read heads first (docs/ARCHITECTURE.md, "TLS"): its deadline then
covers the handshake and the head together, and the head checks run where the request
starts. Checked, while /healthz over TLS from 127.0.0.1 keeps answering:
- clients that finish the handshake and trickle their head (a byte every 0.3 s), one that
  sends half a handshake record, one that sends nothing: all closed within the deadline;
- malformed heads over TLS: each answered 4xx with the JSON error and its code;
- a body that stalls over TLS: cut after --body-timeout;
- the per-address cap over TLS: the 17th connection of one address is refused (503 in
  clear, before any handshake), and the address is served again once its slow ones are cut.
The hostile clients bind other loopback addresses (127.0.0.2 and up), so that the cap
does not touch the /healthz probes. Prints what it measured; exits 1 when a check fails.
"""
import json
import socket
import ssl
import sys
import threading
import time

PORT, CAFILE, AGENT = int(sys.argv[1]), sys.argv[2], sys.argv[3]
DEADLINE = 2.0
SLACK = 1.5  # the gate's 100 ms tick, scheduling on a shared 2-core machine
failures = []
ctx = ssl.create_default_context(cafile=CAFILE)


def check(ok, what):
    print(("ok: " if ok else "FAIL: ") + what)
    sys.stdout.flush()
    if not ok:
        failures.append(what)


def tcp(src="127.0.0.1"):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.bind((src, 0))
    s.connect(("127.0.0.1", PORT))
    return s


def tls(src="127.0.0.1"):
    return ctx.wrap_socket(tcp(src), server_hostname="localhost")


def read_all(s, timeout):
    """What s sends until it closes; None when it is still open after timeout."""
    s.settimeout(timeout)
    out = b""
    try:
        while True:
            d = s.recv(65536)
            if not d:
                return out
            out += d
    except socket.timeout:
        return None
    except (ssl.SSLError, ConnectionError, OSError):
        return out


def answer(raw, src="127.0.0.1"):
    """Sends raw over TLS; returns (status, parsed JSON body or None, seconds)."""
    t0 = time.monotonic()
    s = tls(src)
    s.sendall(raw)
    data = read_all(s, 5) or b""
    s.close()
    secs = time.monotonic() - t0
    if not data.startswith(b"HTTP/1.1 "):
        return None, None, secs
    head, _, body = data.partition(b"\r\n\r\n")
    try:
        doc = json.loads(body)
    except ValueError:
        doc = None
    return int(head[9:12]), doc, secs


def healthz():
    status, doc, secs = answer(b"GET /healthz HTTP/1.1\r\nHost: localhost\r\n\r\n")
    return status == 200 and doc is not None and doc.get("status") == "ok", secs


def probe(n, gap):
    worst, bad = 0.0, 0
    for _ in range(n):
        ok, secs = healthz()
        bad += not ok
        worst = max(worst, secs)
        time.sleep(gap)
    return bad, worst


# ---- slow clients, all at once, while /healthz is probed ----
results = {}


def trickler(i):
    t0 = time.monotonic()
    try:
        s = tls("127.0.0.2")
    except (ssl.SSLError, OSError) as e:
        results["trickle%d" % i] = ("handshake failed: %s" % e, 0)
        return
    head = b"GET /healthz HTTP/1.1\r\nHost: localhost\r\nX-Pad: " + b"a" * 200 + b"\r\n\r\n"
    s.settimeout(0.3)
    closed = None
    for b in head:
        try:
            s.sendall(bytes([b]))
            d = s.recv(100)
            if not d:
                closed = time.monotonic() - t0
                break
        except socket.timeout:
            continue
        except (ssl.SSLError, ConnectionError, OSError):
            closed = time.monotonic() - t0
            break
    results["trickle%d" % i] = ("closed" if closed is not None else "open (its head sent whole)",
                                closed if closed is not None else time.monotonic() - t0)
    s.close()


def half_handshake():
    t0 = time.monotonic()
    s = tcp("127.0.0.4")
    # A handshake record's header announcing 512 bytes, then 10 of them.
    s.sendall(b"\x16\x03\x01\x02\x00" + b"\x01" * 10)
    data = read_all(s, DEADLINE + 5)
    results["half"] = ("closed" if data is not None else "open", time.monotonic() - t0)
    s.close()


def silent():
    t0 = time.monotonic()
    s = tcp("127.0.0.5")
    data = read_all(s, DEADLINE + 5)
    results["silent"] = ("closed" if data is not None else "open", time.monotonic() - t0,
                         data or b"")
    s.close()


threads = [threading.Thread(target=trickler, args=(i,)) for i in range(8)]
threads += [threading.Thread(target=half_handshake), threading.Thread(target=silent)]
for t in threads:
    t.start()
time.sleep(0.2)
bad, worst = probe(10, 0.15)
for t in threads:
    t.join()
check(bad == 0 and worst < 1.5,  # loose for a loaded machine, below the slow clients' 2 s
      "/healthz over TLS answered 10 times in at most %.0f ms while 10 slow clients held "
      "connections (%d failed)" % (worst * 1e3, bad))
for i in range(8):
    state, secs = results["trickle%d" % i]
    if i == 0 or state != "closed" or secs > DEADLINE + SLACK:
        check(state == "closed" and secs <= DEADLINE + SLACK,
              "a client trickling its head after the handshake: %s after %.1f s" % (state, secs))
state, secs = results["half"]
check(state == "closed" and secs <= DEADLINE + SLACK,
      "a client that never finishes its handshake: %s after %.1f s" % (state, secs))
state, secs, data = results["silent"]
check(state == "closed" and secs <= DEADLINE + SLACK,
      "a client that sends nothing: %s after %.1f s (%s)" % (state, secs,
                                                              data.split(b"\r\n")[0].decode()))

# ---- malformed heads over TLS: 4xx and the JSON error ----
heads = [
    ("two Content-Lengths", 400, "bad_request",
     b"POST /api/v1/runs HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n"),
    ("Content-Length and Transfer-Encoding", 400, "bad_request",
     b"POST /api/v1/runs HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n"
     b"Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n"),
    ("a NUL percent-encoded in the path", 400, "bad_request",
     b"GET /api/v1/runs/a%00b HTTP/1.1\r\nHost: x\r\n\r\n"),
    ("a control byte in a header value", 400, "bad_request",
     b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-A: a\x01b\r\n\r\n"),
    ("a space before a colon", 400, "bad_request",
     b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-A : b\r\n\r\n"),
    ("a query key given twice", 400, "bad_request",
     b"GET /api/v1/runs?limit=1&limit=2 HTTP/1.1\r\nHost: x\r\n\r\n"),
    ("no Host in HTTP/1.1", 400, "bad_request", b"GET /healthz HTTP/1.1\r\n\r\n"),
    ("a head over --max-header", 431, "headers_too_large",
     b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-A: " + b"a" * 20000 + b"\r\n\r\n"),
]
for what, want, code, raw in heads:
    status, doc, secs = answer(raw, "127.0.0.6")
    got = doc.get("error", {}).get("code") if isinstance(doc, dict) else None
    msg = doc.get("error", {}).get("message") if isinstance(doc, dict) else None
    check(status == want and got == code and secs < 2.0,
          "%s over TLS -> %s %s in %.0f ms: %s" % (what, status, got, secs * 1e3, msg))

# Heads libmicrohttpd answers itself over TLS (docs/SERVER.md, "TLS"): in its own words,
# still at once, and the request it began is freed (the ASan build checks it).
own = [
    ("HTTP/2.0", 505, b"GET /healthz HTTP/2.0\r\nHost: x\r\n\r\n"),
    ("HTTP/1.1 without a version digit", 400, b"GET /healthz HTTP/1.\r\nHost: x\r\n\r\n"),
]
for what, want, raw in own:
    try:
        status, doc, secs = answer(raw, "127.0.0.6")
    except (ssl.SSLError, OSError) as e:
        status, doc, secs = "error %s" % e, None, 0
    check(status == want and doc is None and secs < 2.0,
          "%s over TLS -> %s in %.0f ms (libmicrohttpd's answer, %s)" %
          (what, status, secs * 1e3, "not JSON" if doc is None else "JSON"))

# ---- a body that stalls over TLS ----
t0 = time.monotonic()
s = tls("127.0.0.7")
s.sendall(b"POST /api/v1/runs HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + AGENT.encode() +
          b"\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n{\"id\": ")
data = read_all(s, 10)
secs = time.monotonic() - t0
s.close()
check(data is not None and secs <= DEADLINE + SLACK + 1,
      "a body that stalls over TLS: %s after %.1f s (--body-timeout 2)" %
      ("cut" if data is not None else "still open", secs))

# ---- the per-address cap over TLS ----
held = []
for _ in range(16):
    held.append(tls("127.0.0.8"))
s = tcp("127.0.0.8")
data = read_all(s, 3) or b""
s.close()
check(data.startswith(b"HTTP/1.1 503") and b"too_many_connections" in data,
      "the 17th connection of one address, its 16 held by TLS clients: %s" %
      (data.split(b"\r\n")[0].decode() or "nothing"))
time.sleep(DEADLINE + SLACK)
for c in held:
    c.close()
time.sleep(0.3)
status, doc, secs = answer(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n", "127.0.0.8")
check(status == 200, "that address is served again once its idle TLS connections were cut (%s)"
      % status)
ok, secs = healthz()
check(ok, "the daemon still answers over TLS at the end (%.0f ms)" % (secs * 1e3))
sys.exit(1 if failures else 0)
