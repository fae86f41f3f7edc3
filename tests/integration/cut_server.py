#!/usr/bin/python3
"""cut_server - a loopback HTTP/1.0 server of one file that sends bodies
with no Content-Length and closes the connection early: what a plain web
server does when it dies mid-response, which a client can only tell from
the size it was told before (a HEAD).  For test_download_cut.sh.

Usage: cut_server.py FILE MODE PORTFILE LOG
  MODE once:   the first GET's body is cut at half, later GETs are whole
               (with Content-Length, Range honoured)
  MODE always: every GET's body is cut at half of what was asked
Bodies of 1 KiB or less (a client's probe) are always whole.
HEAD answers 200 with the file's Content-Length (no ETag, no MD5).  The
chosen port is written to PORTFILE; one line per request to LOG.
"""
import http.server
import os
import re
import sys
import threading


def main(path, mode, portfile, log):
    data = open(path, 'rb').read()
    cuts = [0]
    lock = threading.Lock()

    class H(http.server.BaseHTTPRequestHandler):
        protocol_version = 'HTTP/1.0'   # the body ends at the close

        def log_message(self, fmt, *args):
            with open(log, 'a') as f:
                f.write(fmt % args + '\n')

        def do_HEAD(self):
            self.send_response(200)
            self.send_header('Content-Length', str(len(data)))
            self.send_header('Last-Modified', 'Mon, 01 Jan 2024 00:00:00 GMT')
            self.end_headers()

        def do_GET(self):
            a, b = 0, len(data) - 1
            m = re.match(r'bytes=(\d+)-(\d*)$', self.headers.get('Range', ''))
            if m:
                a = int(m.group(1))
                b = min(int(m.group(2)), b) if m.group(2) else b
            with lock:     # a probe of a few bytes (the stat's) is whole
                cut = b + 1 - a > 1024 and (mode == 'always' or cuts[0] == 0)
                cuts[0] += cut
            body = data[a:b + 1]
            self.send_response(206 if m else 200)
            if m:
                self.send_header('Content-Range', 'bytes %d-%d/%d' % (a, b, len(data)))
            if cut:
                body = body[:max(1, len(body) // 2)]
                with open(log, 'a') as f:
                    f.write('cut after %d of %d bytes\n' % (len(body), b + 1 - a))
            else:
                self.send_header('Content-Length', str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    srv = http.server.ThreadingHTTPServer(('127.0.0.1', 0), H)
    with open(portfile + '.tmp', 'w') as f:
        f.write(str(srv.server_address[1]))
    os.rename(portfile + '.tmp', portfile)
    srv.serve_forever()


if __name__ == '__main__':
    main(*sys.argv[1:5])
