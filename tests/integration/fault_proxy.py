#!/usr/bin/python3
"""A fault-injecting HTTP/1.1 reverse proxy for samplefs's HTTP tests.

    fault_proxy.py --upstream http://127.0.0.1:PORT [--port-file F]
                   [--port N] [--timeout S]

Listens on 127.0.0.1 (a free port unless --port), prints the port on
stdout (and writes it to --port-file, atomically) once it accepts, and
forwards every request to the upstream (nginx) on a keep-alive connection
per client connection, keeping client connections alive too.  HEAD is
forwarded as HEAD and answered without a body.  Every upstream socket
has a timeout (--timeout, 10 s), every client socket one of 120 s, and a
trickle gives up after max_s, so nothing here can hang a test.

Control interface: GET requests to paths starting /__ on the same port,
never forwarded nor counted; each answers its state as JSON (400 on a bad
argument):

  /__fault?mode=M[&n=N][&method=GET][&match=SUBSTR][...]
      arms one fault for the next N (default 1; -1: until changed) requests
      whose method is METHOD and whose path holds SUBSTR (both optional);
      a new /__fault replaces the one armed.  Modes:
        500, 503, 429, or status&code=C   answer that status with a short
              body, without asking the upstream; 429 carries Retry-After:
              1 (retry_after=S sets it, for any code)
        cut       forward, send the headers and half the body, close
        stop      forward, send the headers and half the body, then nothing
              more on an open connection (a server that froze mid-body),
              until the client goes away or max_s=S seconds (30) pass
        hang      read the request and never answer (a frozen server: it
              accepted), until the client goes away or max_s passes
        drop      reset the connection (RST) without an answer
        trickle   forward, send the body at rate=B bytes/s (100), close
              after max_s=S seconds (30) if the client has not given up
        norange   forward without Range and If-Range, answer without
              Accept-Ranges: a 200 with the whole body, as from a server
              that ignores Range (method=GET keeps HEADs from using it up)
        flip      forward, with the byte at offset at=OFFSET of the file
              inverted (XOR 0xff) in the body: damage on the way that TCP
              let through.  Only GETs whose range holds OFFSET match (and
              use up n): n=1 damages the first fetch of that byte only,
              n=-1 every fetch
        off       disarm
  /__etag?change=1   every later response's ETag is rewritten to a new
      value (again with each change), as if the file changed; conditional
      request headers (If-Range, If-Match, If-None-Match) holding the
      rewritten value are mapped back, any other value is made one that
      cannot match.  /__etag?gen=0 restores the upstream's ETags.
  /__delay?ms=D      sleep D ms before answering every request (0: none)
  /__chaos?rate=P&seed=S[&modes=M,M...][&method=GET][&delay_ms=D]
           [&rate_bps=B][&max_s=S]
      faults a random fraction P (0..1) of the requests an armed /__fault
      leaves alone (GETs only unless method= says otherwise), each with a
      mode drawn from `modes` (default: all of 500, 503, 429, drop, cut,
      cutnolen, trickle, stop, delay), from a generator seeded with S, so
      a run's sequence of decisions repeats.  The modes are /__fault's,
      with trickle at rate_bps (100) and stop held max_s (30 s), plus
        cutnolen  forward, send the headers without Content-Length and
              half the body, close (a body cut short that the client can
              only tell from Content-Range)
        delay     sleep delay_ms (2000) before answering normally
        flip      forward, with one byte of the body inverted (XOR 0xff),
              at a place drawn from the generator: damage on the way that
              TCP let through (not among the default modes: ask for it,
              modes=flip)
      rate=0 turns it off.  /__stats counts them as faults and chaos.MODE.
  /__stats[?key=K][&reset=1]   the counters (all as JSON, or K's value as
      a bare integer): requests, method.GET, method.HEAD, status.206,
      range_gets (GETs with Range), data_bytes (body bytes sent to
      clients), connections (those that carried a request other than
      a control one), faults (injected), upstream
      (requests sent upstream); reset=1 zeroes them after answering
  /__reset           disarms the fault, restores ETags, no delay, zeroes
      the counters

Every request is logged on stderr: method, path, Range, status, bytes
sent, fault applied.  This is a test tool: it speaks plain HTTP only (to
clients and upstream), forwards GET and HEAD, and is not a general proxy.
"""
import argparse
import http.client
import http.server
import json
import os
import random
import re
import select
import socket
import struct
import sys
import threading
import time
import urllib.parse

HOP = {'connection', 'keep-alive', 'proxy-connection', 'transfer-encoding',
       'te', 'trailer', 'upgrade', 'proxy-authenticate', 'proxy-authorization'}
CONDITIONAL = ('if-range', 'if-match', 'if-none-match')
ETAG_RE = re.compile(r'(W/)?"([^"]*)"')
STATUS_MODES = {'500': 500, '503': 503, '429': 429}
MODES = {'status', 'cut', 'cutnolen', 'stop', 'hang', 'drop', 'trickle', 'norange',
         'flip', 'off'} | set(STATUS_MODES)
CHAOS_MODES = ('500', '503', '429', 'drop', 'cut', 'cutnolen', 'trickle', 'stop', 'delay')
CHAOS_EXTRA = ('flip',)		# taken when asked for, never by default
BUF = 65536


class State:
    """The armed fault, the ETag generation, the delay and the counters,
    shared by the handler threads under one lock."""

    def __init__(self):
        self.lock = threading.Lock()
        self.fault = None
        self.etag_gen = 0
        self.delay_ms = 0
        self.counts = {}
        self.chaos = None       # /__chaos settings, with their generator

    def count(self, key, n=1):
        with self.lock:
            self.counts[key] = self.counts.get(key, 0) + n

    def take_fault(self, method, path, span=None):
        """The armed fault if it applies to this request, counting it;
        span: the (first, last) file offsets the body will hold, or None."""
        with self.lock:
            f = self.fault
            if not f or f['n'] == 0:
                return None
            if f['method'] and f['method'] != method:
                return None
            if f['match'] and f['match'] not in path:
                return None
            if f['mode'] == 'flip' and (method != 'GET' or not span or
                                        not span[0] <= f['at'] <= span[1]):
                return None
            if f['n'] > 0:
                f['n'] -= 1
            self.counts['faults'] = self.counts.get('faults', 0) + 1
            return dict(f)

    def take_chaos(self, method):
        """A fault drawn by /__chaos for this request, or None."""
        with self.lock:
            c = self.chaos
            if not c or (c['method'] and c['method'] != method):
                return None
            if c['rng'].random() >= c['rate']:
                return None
            mode = c['rng'].choice(c['modes'])
            for k in ('faults', 'chaos.' + mode):
                self.counts[k] = self.counts.get(k, 0) + 1
        f = {'mode': mode, 'n': 1, 'method': None, 'match': None, 'code': 500,
             'retry_after': None, 'rate': c['rate_bps'], 'max_s': c['max_s'],
             'delay_ms': c['delay_ms']}
        if mode == 'flip':
            with self.lock:
                f['frac'] = c['rng'].random()	# where in the body
        if mode in STATUS_MODES:
            f['mode'], f['code'] = 'status', STATUS_MODES[mode]
            f['retry_after'] = '1' if mode == '429' else None
        return f

    def snapshot(self):
        with self.lock:
            chaos = None
            if self.chaos:
                chaos = {k: v for k, v in self.chaos.items() if k != 'rng'}
            return {'fault': dict(self.fault) if self.fault else None,
                    'chaos': chaos, 'etag_gen': self.etag_gen, 'delay_ms': self.delay_ms,
                    'counts': dict(self.counts)}


def rewrite_etag(value, gen):
    """Upstream ETag -> the one clients see at generation gen."""
    if gen == 0:
        return value
    return ETAG_RE.sub(lambda m: '%s"%s-g%d"' % (m.group(1) or '', m.group(2), gen), value)


def unrewrite_etag(value, gen):
    """A client's conditional header -> the upstream's: tags of the current
    generation lose their suffix, tags of any other one (or the upstream's
    own, once changed) become a tag nothing has, as for a changed file."""
    suffix = '-g%d' % gen

    def one(m):
        tag = m.group(2)
        gm = re.search(r'-g(\d+)$', tag)
        if gen and tag.endswith(suffix):
            tag = tag[:-len(suffix)]
        elif gen or gm:
            tag = 'sfs-stale-etag'
        return '%s"%s"' % (m.group(1) or '', tag)
    return ETAG_RE.sub(one, value)


def parse_control(state, path, query):
    """Applies a control request; returns (status, body)."""
    q = {k: v[-1] for k, v in urllib.parse.parse_qs(query).items()}
    try:
        if path == '/__fault':
            mode = q.get('mode', '')
            if mode not in MODES:
                return 400, {'error': 'unknown mode %r' % mode}
            f = None
            if mode != 'off':
                code = STATUS_MODES.get(mode, int(q.get('code', 500)))
                retry = q.get('retry_after', '1' if code == 429 else None)
                f = {'mode': 'status' if mode in STATUS_MODES else mode,
                     'n': int(q.get('n', 1)), 'method': q.get('method'),
                     'match': q.get('match'), 'code': code,
                     'retry_after': retry, 'rate': max(1, int(q.get('rate', 100))),
                     'max_s': float(q.get('max_s', 30)), 'at': int(q.get('at', 0))}
            with state.lock:
                state.fault = f
        elif path == '/__etag':
            with state.lock:
                if 'gen' in q:
                    state.etag_gen = int(q['gen'])
                elif q.get('change'):
                    state.etag_gen += 1
        elif path == '/__chaos':
            rate = float(q.get('rate', 0))
            modes = [m for m in q.get('modes', ','.join(CHAOS_MODES)).split(',') if m]
            bad = [m for m in modes if m not in CHAOS_MODES + CHAOS_EXTRA]
            if bad or not modes or not 0 <= rate <= 1:
                return 400, {'error': 'bad chaos: rate %r, modes %r' % (rate, bad or modes)}
            c = None
            if rate > 0:
                c = {'rate': rate, 'modes': modes, 'method': q.get('method', 'GET'),
                     'rng': random.Random(int(q.get('seed', 0))),
                     'rate_bps': max(1, int(q.get('rate_bps', 100))),
                     'max_s': float(q.get('max_s', 30)),
                     'delay_ms': max(0, int(q.get('delay_ms', 2000)))}
            with state.lock:
                state.chaos = c
        elif path == '/__delay':
            with state.lock:
                state.delay_ms = max(0, int(q.get('ms', 0)))
        elif path == '/__stats':
            snap = state.snapshot()
            if q.get('reset'):
                with state.lock:
                    state.counts = {}
            if 'key' in q:
                return 200, snap['counts'].get(q['key'], 0)
            return 200, snap
        elif path == '/__reset':
            with state.lock:
                state.fault = None
                state.etag_gen = 0
                state.delay_ms = 0
                state.counts = {}
                state.chaos = None
        else:
            return 400, {'error': 'unknown control path %s' % path}
    except ValueError as e:
        return 400, {'error': str(e)}
    return 200, state.snapshot()


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = 'HTTP/1.1'
    timeout = 120		# an idle or stalled client connection (nginx keeps 120 s too)
    server_version = 'fault_proxy'

    def setup(self):
        super().setup()
        # headers and body go out in separate writes: without this, Nagle
        # and the client's delayed ACK hold each small answer ~40 ms
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.up = None
        self.counted = False	# connections counts those with a forwarded request

    def finish(self):
        self.close_upstream()
        super().finish()

    def log_message(self, fmt, *args):
        pass		# one line per request comes from log_line

    def log_line(self, status, sent, fault):
        sys.stderr.write('%s\t%s\t%s\t%s\t%d\t%s\n' % (
            self.command, self.path, self.headers.get('Range', '-'), status,
            sent, fault['mode'] if fault else '-'))

    def close_upstream(self):
        if self.up:
            self.up.close()
            self.up = None

    def do_GET(self):
        self.serve()

    def do_HEAD(self):
        self.serve()

    def serve(self):
        state = self.server.state
        path, _, query = self.path.partition('?')
        if path.startswith('/__'):
            code, body = parse_control(state, path, query)
            self.answer(code, (json.dumps(body) + '\n').encode(), 'application/json')
            return
        if not self.counted:
            self.counted = True
            state.count('connections')
        state.count('requests')
        state.count('method.' + self.command)
        if self.command == 'GET' and 'Range' in self.headers:
            state.count('range_gets')
        with state.lock:
            delay, gen = state.delay_ms, state.etag_gen
        if delay:
            time.sleep(delay / 1000)
        fault = (state.take_fault(self.command, path, self.span()) or
                 state.take_chaos(self.command))
        mode = fault['mode'] if fault else None
        if mode == 'delay':
            time.sleep(fault['delay_ms'] / 1000)
        if mode == 'drop':
            self.close_connection = True
            self.server.reset_on_close(self.connection)
            self.log_line('drop', 0, fault)
            return
        if mode == 'hang':
            self.hold(fault['max_s'])
            self.close_connection = True
            self.log_line('hang', 0, fault)
            return
        if mode == 'status':
            extra = [('Retry-After', fault['retry_after'])] if fault['retry_after'] else []
            sent = self.answer(fault['code'], b'fault_proxy: injected %d\n' % fault['code'],
                               'text/plain', extra)
            state.count('status.%d' % fault['code'])
            self.log_line(fault['code'], sent, fault)
            return
        headers = self.upstream_headers(gen, drop_range=(mode == 'norange'))
        try:
            resp = self.forward(headers)
        except (OSError, http.client.HTTPException) as e:
            self.close_upstream()
            sent = self.answer(502, ('fault_proxy: upstream: %s\n' % e).encode(), 'text/plain')
            state.count('status.502')
            self.log_line(502, sent, fault)
            return
        state.count('status.%d' % resp.status)
        sent = self.relay(resp, gen, mode, fault)
        state.count('data_bytes', sent)
        self.log_line(resp.status, sent, fault)

    def span(self):
        """(first, last) file offsets of the body a GET asks for: its
        Range (one, bytes=A-B or A-), else the whole file."""
        r = self.headers.get('Range')
        if r is None:
            return (0, 1 << 63)
        m = re.fullmatch(r'bytes=(\d+)-(\d*)', r.strip())
        if not m:
            return None
        return (int(m.group(1)), int(m.group(2)) if m.group(2) else 1 << 63)

    def upstream_headers(self, gen, drop_range):
        h = {}
        for k, v in self.headers.items():
            lk = k.lower()
            if lk in HOP or lk == 'host':
                continue
            if drop_range and lk in ('range', 'if-range'):
                continue
            if lk in CONDITIONAL:
                v = unrewrite_etag(v, gen)
            h[k] = v
        # --keep-host: the client's Host, which a SigV4 signature covers
        # (an S3 client signs the proxy's address; Swift checks it)
        h['Host'] = self.headers.get('Host') if self.server.keep_host and \
            self.headers.get('Host') else self.server.upstream_host
        return h

    def forward(self, headers):
        """Sends the request upstream, on the kept connection if it still
        works, else on a new one (an idle keep-alive may have been closed)."""
        body = None
        n = int(self.headers.get('Content-Length', 0) or 0)
        if n:
            body = self.rfile.read(n)
        for attempt in (0, 1):
            fresh = self.up is None	# a fresh connection's failure is the upstream's
            try:
                if fresh:
                    self.up = http.client.HTTPConnection(*self.server.upstream_addr,
                                                         timeout=self.server.up_timeout)
                    self.up.connect()
                    self.up.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                self.up.request(self.command, self.path, body=body, headers=headers)
                self.server.state.count('upstream')
                return self.up.getresponse()
            except (OSError, http.client.HTTPException):
                self.close_upstream()
                if fresh or attempt:
                    raise
        raise AssertionError('unreachable')

    def relay(self, resp, gen, mode, fault):
        """Sends the upstream's response to the client as the fault says;
        returns the body bytes sent."""
        length = resp.getheader('Content-Length')
        body = None
        if self.command == 'HEAD' or resp.status in (204, 304):
            length = int(length) if length is not None else None
            body = resp.read()	# b'', and the upstream connection is free again
        elif length is None:		# chunked (a listing): read it whole
            body = resp.read()
            length = len(body)
        else:
            length = int(length)
        self.send_response_only(resp.status, resp.reason)
        for k, v in resp.getheaders():
            lk = k.lower()
            if lk in HOP or lk == 'content-length':
                continue
            if lk == 'accept-ranges' and mode == 'norange':
                continue
            if lk == 'etag':
                v = rewrite_etag(v, gen)
            self.send_header(k, v)
        if length is not None and mode != 'cutnolen':
            self.send_header('Content-Length', str(length))
        if mode == 'cutnolen':
            self.close_connection = True	# the body ends where the connection does
        if resp.will_close:
            self.close_connection = True
        self.end_headers()
        if body is not None:
            if self.command != 'HEAD' and body:
                if mode in ('cut', 'cutnolen'):
                    body = body[:len(body) // 2]
                self.wfile.write(body)
            if mode in ('cut', 'cutnolen'):
                self.close_connection = True
            return len(body) if self.command != 'HEAD' else 0
        if mode in ('cut', 'cutnolen', 'stop'):
            return self.send_cut(resp, length, fault if mode == 'stop' else None)
        if mode == 'trickle':
            return self.send_trickle(resp, fault)
        sent = 0
        flip = -1
        if mode == 'flip':
            flip = (int(fault['frac'] * length) if 'frac' in fault else
                    fault['at'] - self.span()[0])
        while sent < length:
            chunk = resp.read(min(BUF, length - sent))
            if not chunk:		# upstream short: so is the client's answer
                self.close_upstream()
                self.close_connection = True
                break
            if sent <= flip < sent + len(chunk):
                b = bytearray(chunk)
                b[flip - sent] ^= 0xff
                chunk = bytes(b)
            self.wfile.write(chunk)
            sent += len(chunk)
        return sent

    def send_cut(self, resp, length, stop=None):
        """Half the body, then the connection is closed: a short body; or,
        with stop (the fault), held open with nothing more sent first."""
        sent, half = 0, length // 2
        while sent < half:
            chunk = resp.read(min(BUF, half - sent))
            if not chunk:
                break
            self.wfile.write(chunk)
            sent += len(chunk)
        self.close_upstream()		# the rest of its body is unread
        if stop:
            self.wfile.flush()
            self.hold(stop['max_s'])
        self.close_connection = True
        return sent

    def send_trickle(self, resp, fault):
        """The body at fault['rate'] bytes/s in tenths of a second, until it
        ends, the client goes away or max_s passes (then the connection is
        closed: bounded even for a client with no low-speed limit)."""
        step = max(1, fault['rate'] // 10)
        deadline = time.monotonic() + fault['max_s']
        sent, done = 0, False
        try:
            while time.monotonic() < deadline:
                chunk = resp.read(step)
                if not chunk:
                    done = True
                    break
                self.wfile.write(chunk)
                sent += len(chunk)
                time.sleep(0.1)
        except OSError:
            pass
        if not done:
            self.close_upstream()
            self.close_connection = True
        return sent

    def hold(self, max_s):
        """Sends nothing until the client closes its side or max_s passes."""
        deadline = time.monotonic() + max_s
        try:
            while time.monotonic() < deadline:
                r, _, _ = select.select([self.connection], [], [], 0.2)
                if r and not self.connection.recv(1, socket.MSG_PEEK):
                    return		# the client went away
        except OSError:
            pass

    def answer(self, code, body, ctype, extra=()):
        """A response of our own, on a connection that stays usable."""
        self.send_response_only(code)
        self.send_header('Content-Type', ctype)
        self.send_header('Content-Length', str(len(body)))
        for k, v in extra:
            self.send_header(k, v)
        self.end_headers()
        if self.command != 'HEAD':
            self.wfile.write(body)
            return len(body)
        return 0


class Server(http.server.ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 128
    allow_reuse_address = True

    def __init__(self, *a, **kw):
        super().__init__(*a, **kw)
        self.resets = set()
        self.resets_lock = threading.Lock()

    def reset_on_close(self, sock):
        """sock is to be closed with a TCP reset and no FIN before it."""
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack('ii', 1, 0))
        with self.resets_lock:
            self.resets.add(sock)

    def shutdown_request(self, request):
        with self.resets_lock:
            reset = request in self.resets
            self.resets.discard(request)
        if reset:
            self.close_request(request)	# no shutdown(SHUT_WR): no FIN
        else:
            super().shutdown_request(request)

    def handle_error(self, request, client_address):
        # a client that went away mid-answer is a normal event here
        exc = sys.exc_info()[1]
        if not isinstance(exc, OSError):
            super().handle_error(request, client_address)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--upstream', required=True, help='http://HOST:PORT')
    ap.add_argument('--port', type=int, default=0)
    ap.add_argument('--port-file')
    ap.add_argument('--timeout', type=float, default=10.0,
                    help='upstream connect and read timeout, seconds')
    ap.add_argument('--keep-host', action='store_true',
                    help="forward the client's Host header (signed requests)")
    a = ap.parse_args()
    u = urllib.parse.urlsplit(a.upstream)
    if u.scheme != 'http' or not u.hostname:
        ap.error('--upstream must be http://HOST[:PORT]')
    srv = Server(('127.0.0.1', a.port), Handler)
    srv.state = State()
    srv.upstream_addr = (u.hostname, u.port or 80)
    srv.upstream_host = u.netloc
    srv.keep_host = a.keep_host
    srv.up_timeout = a.timeout
    port = srv.server_address[1]
    if a.port_file:
        tmp = a.port_file + '.tmp'
        with open(tmp, 'w') as f:
            f.write('%d\n' % port)
        os.rename(tmp, a.port_file)
    print(port, flush=True)
    srv.serve_forever()


if __name__ == '__main__':
    main()
