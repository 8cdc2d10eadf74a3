#!/usr/bin/env python3
"""token_listener.py PORTFILE LOG: a stand-in for gpudiffd on 127.0.0.1 that only records.

Each request adds one line to LOG: the method, the target and whether an Authorization
header came ("auth=yes" / "auth=no"), and is answered 404 in gpudiffd's JSON error form,
so an agent pointed at it gives up at once. The port (picked by the system) is written to
PORTFILE. agent_token_rule.sh points the agent at it through URLs that must be refused.
"""
import http.server
import socketserver
import sys


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def record(self):
        auth = "yes" if self.headers.get("Authorization") is not None else "no"
        with open(sys.argv[2], "a") as log:
            log.write("%s %s auth=%s\n" % (self.command, self.path, auth))
        length = int(self.headers.get("Content-Length") or 0)
        if length > 0:
            self.rfile.read(length)
        body = b'{"error":{"code":"not_found","message":"a recording listener"}}\n'
        self.send_response(404)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(body)

    do_GET = do_POST = do_PUT = do_DELETE = record

    def log_message(self, *args):
        pass


class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True


def main():
    srv = Server(("127.0.0.1", 0), Handler)
    with open(sys.argv[1] + ".tmp", "w") as f:
        f.write("%d\n" % srv.server_address[1])
    import os
    os.rename(sys.argv[1] + ".tmp", sys.argv[1])
    srv.serve_forever()


if __name__ == "__main__":
    main()
