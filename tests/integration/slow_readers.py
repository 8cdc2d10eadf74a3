#!/usr/bin/env python3
"""slow_readers.py PORT PATH CLIENTS PID [HOLD_S [ADDRESSES]]: clients that never read.

Opens CLIENTS connections to 127.0.0.1:PORT from ADDRESSES source addresses (127.0.0.2
and on, default 8, so that no address passes gpudiffd's per-address cap), each with a
4 KiB receive buffer (the kernel takes little of the answer off the daemon), sends
"GET PATH" on each and reads nothing but the first bytes of the answer. It samples the
daemon's resident memory (/proc/PID/status: VmRSS, and RssAnon) before, while the clients
hold their connections (the highest of the samples over HOLD_S seconds, default 3; a
/healthz on a connection of its own is timed meanwhile), and after they all closed (the
lowest of the samples over the next 6 s, once the daemon has freed what they held). Prints
one JSON object: the figures in bytes, how many answers began (200), were refused or did
not come, and the /healthz time.
Used by tests/integration/server_slow_readers.sh and tests/bench/bench_slow_readers.sh.
"""
import json
import resource
import socket
import sys
import time


def rss(pid, field="VmRSS:"):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith(field):
                return int(line.split()[1]) * 1024
    return 0


def healthz(port):
    t0 = time.time()
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    s.sendall(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
    data = b""
    while True:
        b = s.recv(65536)
        if not b:
            break
        data += b
    s.close()
    return data.startswith(b"HTTP/1.1 200"), time.time() - t0


def main():
    port, path, n, pid = int(sys.argv[1]), sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    hold = float(sys.argv[5]) if len(sys.argv) > 5 else 3.0
    addresses = int(sys.argv[6]) if len(sys.argv) > 6 else 8
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < n + 64:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, n + 256), hard))
    base, base_anon = rss(pid), rss(pid, "RssAnon:")
    request = ("GET %s HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n" % path).encode()
    socks = []
    for i in range(n):
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        s.bind(("127.0.0.%d" % (2 + i % addresses), 0))
        s.connect(("127.0.0.1", port))
        s.sendall(request)
        socks.append(s)
    # Each gets a first piece of answer (the daemon started sending), then is left unread.
    begun = refused = 0
    deadline = time.time() + 30
    pending = list(socks)
    while pending and time.time() < deadline:
        still = []
        for s in pending:
            s.setblocking(False)
            try:
                b = s.recv(16, socket.MSG_PEEK)
            except BlockingIOError:
                still.append(s)
                continue
            if b.startswith(b"HTTP/1.1 200"):
                begun += 1
            else:
                refused += 1
        pending = still
        if pending:
            time.sleep(0.05)
    peak, peak_anon = rss(pid), rss(pid, "RssAnon:")
    health_ok, health_s = healthz(port)
    end = time.time() + hold
    while time.time() < end:
        peak = max(peak, rss(pid))
        peak_anon = max(peak_anon, rss(pid, "RssAnon:"))
        time.sleep(0.1)
    for s in socks:
        s.close()
    after = after_anon = None
    end = time.time() + 6
    while time.time() < end:
        time.sleep(0.5)
        r, a = rss(pid), rss(pid, "RssAnon:")
        after = r if after is None else min(after, r)
        after_anon = a if after_anon is None else min(after_anon, a)
    print(json.dumps({"clients": n, "addresses": addresses, "begun": begun,
                      "refused": refused, "unanswered": len(pending), "baseline_rss": base,
                      "peak_rss": peak, "after_rss": after, "baseline_anon": base_anon,
                      "peak_anon": peak_anon, "after_anon": after_anon,
                      "per_client": (peak - base) / n if n else 0,
                      "healthz_ok": health_ok, "healthz_s": round(health_s, 4)}))


if __name__ == "__main__":
    main()
