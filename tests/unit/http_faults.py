#!/usr/bin/python3
"""http_faults.py FILE MODE [N [SECONDS]] - serves FILE (at every path) over HTTP/1.1
on a free loopback port with one fault, for tests/unit/test_http.c.  Prints
the port on stdout, then serves until killed.  Each request is logged to
FILE.log as "METHOD RANGE STATUS".

Modes (N: how many requests get the fault; the rest are served right):
  ok         no fault
  norange    every GET gets 200 and the whole file (Range ignored), and no
             answer says Accept-Ranges
  liar       as norange, but every answer says Accept-Ranges: bytes
  fail500 N  500 Internal Server Error
  getfail N  ranged GETs other than the probe of byte 0: 500 (HEADs are
             answered, so a source opens)
  r429 N     429 with Retry-After: SECONDS (1)
  short N    ranged GETs other than the probe of byte 0: half the body,
             then the connection closes
  stall      HEAD and the probe of byte 0 are answered; every other GET
             waits forever without a byte
  overlong   206 answers carry one byte more than asked
  nolen N    ranged GETs other than the probe of byte 0: a 206 without
             Content-Length, half the body, then the connection closes
             (the body's end is the close: only the range says it is short)
Test-only; no oracle here: the client's bytes are compared with FILE.
"""
import http.server
import re
import sys
import threading
import time

path, mode = sys.argv[1], sys.argv[2]
count = int(sys.argv[3]) if len(sys.argv) > 3 else 0
retry_after = sys.argv[4] if len(sys.argv) > 4 else "1"
with open(path, "rb") as f:
    data = f.read()
lock = threading.Lock()
seen = {"n": 0}
ETAG = '"faults-%x"' % len(data)
LASTMOD = "Thu, 01 Jan 2015 00:00:00 GMT"


def log(line):
    with lock, open(path + ".log", "a") as f:
        f.write(line + "\n")


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def answer(self, status, body, headers=(), length=None, send=None):
        # logged first: the client may look at the log once it has the answer
        log("%s %s %d" % (self.command, self.headers.get("Range", "-"), status))
        self.send_response(status)
        if length != "none":
            self.send_header("Content-Length", str(len(body) if length is None else length))
        self.send_header("ETag", ETAG)
        self.send_header("Last-Modified", LASTMOD)
        if mode != "norange":
            self.send_header("Accept-Ranges", "bytes")
        for k, v in headers:
            self.send_header(k, v)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body if send is None else send)

    def serve(self):
        with lock:
            seen["n"] += 1
            nth = seen["n"]
        rng = self.headers.get("Range")
        probe = rng == "bytes=0-0"
        if mode == "fail500" and nth <= count:
            return self.answer(500, b"failing on purpose\n")
        if mode == "getfail" and self.command == "GET" and rng and not probe:
            with lock:
                seen["get"] = seen.get("get", 0) + 1
                fail = seen["get"] <= count
            if fail:
                return self.answer(500, b"failing on purpose\n")
        if mode == "r429" and nth <= count:
            return self.answer(429, b"slow down\n", [("Retry-After", retry_after)])
        if mode == "stall" and not probe and self.command != "HEAD":
            log("%s %s stalled" % (self.command, rng or "-"))
            time.sleep(3600)
            return
        m = re.fullmatch(r"bytes=(\d+)-(\d+)", rng or "")
        if mode in ("norange", "liar") or not m:
            return self.answer(200, data)
        a, b = int(m.group(1)), min(int(m.group(2)), len(data) - 1)
        body = data[a:b + 1]
        cr = [("Content-Range", "bytes %d-%d/%d" % (a, b, len(data)))]
        if mode in ("short", "nolen") and not probe:
            with lock:
                seen["short"] = seen.get("short", 0) + 1
                short = seen["short"] <= count
            if short:
                self.close_connection = True
                if mode == "nolen":
                    cr.append(("Connection", "close"))
                return self.answer(206, body, cr, send=body[:len(body) // 2],
                                   length="none" if mode == "nolen" else None)
        if mode == "overlong" and not probe:
            return self.answer(206, body + b"!", cr)
        return self.answer(206, body, cr)

    do_GET = serve
    do_HEAD = serve


class Server(http.server.ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request, client_address):
        pass    # a client that hung up on a fault is what the tests do


server = Server(("127.0.0.1", 0), Handler)
print(server.server_address[1], flush=True)
server.serve_forever()
