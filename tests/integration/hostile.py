"""hostile.py: raw HTTP clients for the gpudiffd hostile-request suites.

Used by tests/integration/server_hostile.sh (request kinds, one by one: each must get its
status and the JSON error, leave the database byte for byte as it was and leave the daemon
answering) and server_hostile_conn.sh (idle, slow and many sockets at once). Standard
library and numpy only: CI has Debian's python3 and python3-numpy and nothing else.
"""
import hashlib
import io
import json
import os
import socket
import time
import uuid

import numpy as np


class Answer:
    def __init__(self, status, headers, body, raw):
        self.status = status
        self.headers = headers
        self.body = body
        self.raw = raw

    def header(self, name):
        return self.headers.get(name.lower())

    def json(self):
        try:
            return json.loads(self.body.decode("utf-8"))
        except (UnicodeDecodeError, ValueError):
            return None


def parse_answer(raw):
    """Splits a whole HTTP/1.x response (read to EOF) into an Answer; None if it is not one."""
    head, sep, rest = raw.partition(b"\r\n\r\n")
    if not sep or not head.startswith(b"HTTP/1."):
        return None
    lines = head.split(b"\r\n")
    parts = lines[0].split(b" ", 2)
    try:
        status = int(parts[1])
    except (IndexError, ValueError):
        return None
    headers = {}
    for line in lines[1:]:
        k, _, v = line.partition(b":")
        headers[k.strip().lower().decode("latin-1")] = v.strip().decode("latin-1")
    length = headers.get("content-length")
    body = rest[: int(length)] if length is not None and length.isdigit() else rest
    return Answer(status, headers, body, raw)


def connect(host, port, source=None, timeout=10.0):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.settimeout(timeout)
    if source is not None:
        s.bind((source, 0))
    s.connect((host, port))
    return s


def exchange(host, port, data, timeout=10.0, after=None, half_close=False):
    """Sends data (bytes, or a list of pieces sent one by one), reads the answer to EOF.

    after: more bytes sent once the answer started (to see that they are not needed).
    Returns (Answer or None, seconds, raw bytes).
    """
    t0 = time.monotonic()
    s = connect(host, port, timeout=timeout)
    raw = b""
    try:
        pieces = data if isinstance(data, list) else [data]
        for p in pieces:
            try:
                s.sendall(p)
            except (BrokenPipeError, ConnectionResetError):
                break  # the server answered and closed early: read what it said
        if half_close:
            s.shutdown(socket.SHUT_WR)
        while time.monotonic() - t0 < timeout:
            try:
                chunk = s.recv(65536)
            except socket.timeout:
                break
            except ConnectionResetError:
                break
            if not chunk:
                break
            raw += chunk
    finally:
        s.close()
    return parse_answer(raw), time.monotonic() - t0, raw


def request(method, target, headers=(), body=b"", version="HTTP/1.1", host="127.0.0.1"):
    """A request's bytes; headers a list of (name, value) (bytes or str) sent as they are."""
    def b(x):
        return x if isinstance(x, bytes) else x.encode("latin-1")

    lines = [b(method) + b" " + b(target) + b" " + b(version)]
    if host is not None:
        lines.append(b"Host: " + b(host))
    # gpudiffd closes after every answer anyway; other servers need to be asked.
    lines.append(b"Connection: close")
    for k, v in headers:
        lines.append(b(k) + b": " + b(v))
    return b"\r\n".join(lines) + b"\r\n\r\n" + b(body)


# ---- run bundles made here: a run.json and its layers' .npy files, in memory ----

def npy_bytes(arr):
    f = io.BytesIO()
    np.save(f, arr, allow_pickle=False)
    return f.getvalue()


def make_run(model, n_layers, seed, shape=(4, 8), names=None, run_id=None, extra=None):
    """A run of n_layers float32 layers: (run.json dict, [npy bytes])."""
    rng = np.random.default_rng(seed)
    layers, files = [], []
    for i in range(n_layers):
        a = rng.standard_normal(shape).astype("<f4")
        name = names[i] if names else "layer%d" % i
        layers.append({
            "index": i, "name": name, "op": "Relu", "dtype": "float32", "shape": list(shape),
            "file": "layers/%04d-%s.npy" % (i, name),
            "sha256": hashlib.sha256(a.tobytes()).hexdigest(),
        })
        files.append(npy_bytes(a))
    doc = {
        "format": "gpudiff-run", "version": 1,
        "id": run_id or str(uuid.UUID(bytes=rng.bytes(16), version=4)),
        "created_at": "2026-01-01T00:00:%02dZ" % (seed % 60),
        "model": {"name": model, "sha256": None}, "backend": "cpu",
        "env": {"host": "test"}, "layers": layers,
    }
    if extra:
        doc.update(extra)
    return doc, files


# PostgreSQL: one query that digests every table's rows (made by the query below).
PG_STATE = (
    "SELECT string_agg(format('SELECT %L || md5(coalesce(string_agg(md5(t::text), '''' "
    "ORDER BY md5(t::text)), '''')) FROM %I t', table_name, table_name), ' UNION ALL ') "
    "FROM information_schema.tables WHERE table_schema = 'public' "
    "AND table_type = 'BASE TABLE'")


class PgState:
    """One psql session kept open: each call sends the digest query and reads its rows up
    to a marker line (a psql per call took a minute over the suite's 960 reads)."""

    def __init__(self, db):
        import subprocess
        self.db = db
        self.psql = subprocess.Popen(["psql", "-X", "-q", "-tA", "-v", "ON_ERROR_STOP=1",
                                      "-d", db], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, text=True, bufsize=1)
        self.query = "".join(self.ask(PG_STATE))

    def ask(self, sql):
        self.psql.stdin.write(sql + ";\n\\echo __end__\n")
        self.psql.stdin.flush()
        rows = []
        for line in self.psql.stdout:
            line = line.rstrip("\n")
            if line == "__end__":
                return rows
            rows.append(line)
        raise RuntimeError("psql on %s ended" % self.db)

    def digest(self):
        rows = self.ask(self.query)
        return hashlib.sha256("\n".join(sorted(rows)).encode()).hexdigest()


PG_SESSIONS = {}


def pg_state(db):
    if db not in PG_SESSIONS:
        PG_SESSIONS[db] = PgState(db)
    return PG_SESSIONS[db].digest()


def db_state(db):
    """SHA-256 of the database file and its WAL: any committed write changes one of them.
    On PostgreSQL (db a postgresql:// URI), the digest of every table's rows."""
    if db.startswith("postgresql:"):
        return pg_state(db)
    h = hashlib.sha256()
    for path in (db, db + "-wal"):
        h.update(path.encode())
        if os.path.exists(path):
            with open(path, "rb") as f:
                h.update(f.read())
    return h.hexdigest()


def call(host, port, method, target, headers=(), body=b"", timeout=30.0):
    """One request on its own connection; the Answer (exits when there is none)."""
    hdrs = list(headers)
    if body:
        hdrs.append(("Content-Length", str(len(body))))
    ans, _, raw = exchange(host, port, request(method, target, hdrs, body), timeout=timeout)
    if ans is None:
        raise SystemExit("%s %s got no HTTP answer: %r" % (method, target, raw[:200]))
    return ans


def upload(host, port, token, doc, files, finish=True, skip=()):
    """POST run.json, PUT its layers (but those in skip), finish; exits on any failure."""
    auth = ("Authorization", "Bearer " + token)
    a = call(host, port, "POST", "/api/v1/runs", [auth, ("Content-Type", "application/json")],
             json.dumps(doc).encode())
    if a.status not in (200, 201):
        raise SystemExit("setup: POST run: %d %r" % (a.status, a.body[:300]))
    for i, f in enumerate(files):
        if i in skip:
            continue
        a = call(host, port, "PUT", "/api/v1/runs/%s/layers/%d" % (doc["id"], i), [auth], f)
        if a.status not in (200, 201):
            raise SystemExit("setup: PUT layer %d: %d %r" % (i, a.status, a.body[:300]))
    if finish:
        a = call(host, port, "POST", "/api/v1/runs/%s/finish" % doc["id"], [auth])
        if a.status != 200:
            raise SystemExit("setup: finish: %d %r" % (a.status, a.body[:300]))
