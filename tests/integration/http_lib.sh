# HTTP(S) servers for integration tests, sourced after lib.sh:
#   . "$(dirname "$0")/lib.sh"; . "$(dirname "$0")/http_lib.sh"; sfs_setup
#   http_start [-s] DIR        nginx serving DIR on a free loopback port
#   http_url [-s] [PATH]       its URL for PATH (percent-encoded); -s: https
#   http_log_mark              requests nginx has logged so far
#   http_log_count METHOD [MARK [STATUS]]   how many since MARK
#   proxy_start UPSTREAM_URL   tests/integration/fault_proxy.py in front of it
#   proxy_url [PATH]; proxy_ctl 'fault?mode=500&n=2'; proxy_stat KEY
#   http_stop; proxy_stop      (both also run by sfs_cleanup, on any exit)
#
# nginx (Debian's) runs with its own configuration, pid file, logs and
# temp paths under $SFS_TMP/nginx, never /etc/nginx or /var/log: HTTP on
# $HTTP_PORT, with -s also TLS and HTTP/2 on $HTTPS_PORT with a self-signed
# certificate ($HTTP_CACERT, for IP:127.0.0.1 and DNS:localhost) made here
# by openssl.  Directories are listed as nginx's `autoindex_format json`.
# Its access log ($HTTP_ACCESS_LOG) has one tab-separated line a request:
#   method uri range-header status body-bytes protocol port conn nth-on-conn seconds
# ("-" for a missing Range), which tests count data GETs and HEADs in.
# One worker process by default (HTTP_WORKERS), so a request's log line is
# written before that of any request that completes after it, which is what
# makes http_log_sync exact.
#
# This is not a server for anything but tests on loopback; it is not a
# bucket (no S3 listing: that is the next issue's), and it holds no state
# beyond one nginx and one proxy at a time.
HTTP_LIB_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
declare -p SFS_CLEANUP_HOOKS >/dev/null 2>&1 ||
	{ echo "http_lib.sh: source lib.sh first" >&2; return 1; }
HTTP_WORKERS=${HTTP_WORKERS:-1}
# nginx directives added to the server block (test_gcs.sh: a bucket's
# listing answered from recorded pages)
HTTP_EXTRA=${HTTP_EXTRA:-}
# nginx locations serving gcs_pages.py's recorded bucket "qdb" (under the
# served directory) as GCS's XML API does: its listing pages by prefix and
# marker; "directories" are no objects (GCS has none: 404, then a listing
# says).  For HTTP_EXTRA (test_gcs.sh, test_download.sh).
HTTP_GCS_QDB='
		location = /qdb {
			default_type application/xml;
			try_files "/_pages/p=$arg_prefix&m=$arg_marker.xml" =404;
		}
		location /qdb/ {
			if (-d $request_filename) { return 404; }
		}'
HTTP_PID= HTTP_PORT= HTTPS_PORT= HTTP_CACERT= HTTP_ACCESS_LOG= HTTP_ERROR_LOG= HTTP_ROOT=
HTTP_WORKER_PIDS=()
PROXY_PID= PROXY_PORT= PROXY_LOG=
SFS_CLEANUP_HOOKS+=(http_cleanup)

# http_free_ports N: N distinct loopback ports free right now (bound at once
# by the kernel's port-0 choice, then released for the server to take)
http_free_ports() {
	"$PY" -c 'import socket, sys
ss = [socket.socket() for _ in range(int(sys.argv[1]))]
for s in ss:
    s.bind(("127.0.0.1", 0))
print(" ".join(str(s.getsockname()[1]) for s in ss))' "$1"
}

# http_pct_encode STR: STR with every byte but [A-Za-z0-9._~/-] as %XX
http_pct_encode() {
	local LC_ALL=C s=$1 out= c i
	for ((i = 0; i < ${#s}; i++)); do
		c=${s:i:1}
		case $c in
		[A-Za-z0-9._~/-]) out+=$c ;;
		*) out+=$(printf '%%%02X' "'$c") ;;
		esac
	done
	printf '%s' "$out"
}

# http_kill_pid PID [CHILD-PIDS...]: SIGTERM to PID (a server this test
# started), bounded wait, reaped.  Only if it had to be SIGKILLed: SIGKILL
# to those of CHILD-PIDS (nginx workers, which a killed master leaves
# behind) still alive as nginx (a master that exits on SIGTERM has reaped
# its workers, so their PIDs may be anyone's by then).
http_kill_pid() {
	local pid=$1 i c; shift
	kill "$pid" 2>/dev/null
	for i in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
	if kill -0 "$pid" 2>/dev/null; then
		echo "http_kill_pid: $pid ignored SIGTERM for 10 s, killing it" >&2
		kill -9 "$pid" 2>/dev/null
		for c in "$@"; do
			[ "$(cat "/proc/$c/comm" 2>/dev/null)" = nginx ] && kill -9 "$c" 2>/dev/null
		done
	fi
	wait "$pid" 2>/dev/null
	return 0
}

# http_write_conf DIR HTTP_PORT [HTTPS_PORT]: nginx.conf under
# $SFS_TMP/nginx serving DIR
http_write_conf() {
	local root=$1 port=$2 sport=${3:-} d=$SFS_TMP/nginx tls= user=
	[ "$(id -u)" = 0 ] && user='user root root;'	# workers read what root made
	[ -n "$sport" ] && tls="
		listen 127.0.0.1:$sport ssl http2;
		ssl_certificate $d/cert.pem;
		ssl_certificate_key $d/key.pem;"
	cat >"$d/nginx.conf" <<EOF
daemon off;
master_process on;
worker_processes $HTTP_WORKERS;
$user
pid $d/nginx.pid;
error_log $d/error.log warn;
events { worker_connections 512; }
http {
	default_type application/octet-stream;
	log_format sfs '\$request_method\t\$request_uri\t\$http_range\t\$status\t\$body_bytes_sent\t\$server_protocol\t\$server_port\t\$connection\t\$connection_requests\t\$request_time';
	access_log $d/access.log sfs;
	client_body_temp_path $d/tmp/body;
	proxy_temp_path $d/tmp/proxy;
	fastcgi_temp_path $d/tmp/fastcgi;
	uwsgi_temp_path $d/tmp/uwsgi;
	scgi_temp_path $d/tmp/scgi;
	sendfile on;
	keepalive_timeout 120s;
	keepalive_requests 1000000;
	server {
		listen 127.0.0.1:$port;$tls
		root $root;
		autoindex on;
		autoindex_format json;$HTTP_EXTRA
	}
}
EOF
}

# http_make_cert: a self-signed certificate for 127.0.0.1 and localhost,
# $SFS_TMP/nginx/{cert,key}.pem; the certificate is its own CA (cacert=)
http_make_cert() {
	local d=$SFS_TMP/nginx
	openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
		-keyout "$d/key.pem" -out "$d/cert.pem" -days 7 -subj /CN=localhost \
		-addext "subjectAltName=IP:127.0.0.1,DNS:localhost" 2>"$d/openssl.log" ||
		{ cat "$d/openssl.log" >&2; return 1; }
}

# http_start [-s] DIR: starts nginx serving DIR over HTTP ($HTTP_PORT) and,
# with -s, HTTPS with HTTP/2 ($HTTPS_PORT, certificate $HTTP_CACERT);
# returns once it answers.  Sets HTTP_PID (the master), HTTP_ROOT,
# HTTP_ACCESS_LOG, HTTP_ERROR_LOG.  Tries new ports if another process
# takes the chosen ones first.
http_start() {
	local tls= root try ports i d
	[ "${1:-}" = -s ] && { tls=1; shift; }
	root=$(cd "$1" && pwd) || return 1
	[ -n "${SFS_TMP:-}" ] || { echo "http_start: call sfs_setup first" >&2; return 1; }
	[ -z "$HTTP_PID" ] || { echo "http_start: nginx already running ($HTTP_PID)" >&2; return 1; }
	d=$SFS_TMP/nginx
	mkdir -p "$d/tmp" || return 1
	[ -n "$tls" ] && { http_make_cert || return 1; }
	for try in 1 2 3 4 5; do
		ports=($(http_free_ports 2)) || return 1
		HTTP_PORT=${ports[0]}
		HTTPS_PORT=${tls:+${ports[1]}}
		http_write_conf "$root" "$HTTP_PORT" "$HTTPS_PORT"
		rm -f "$d/nginx.pid"
		nginx -p "$d" -c "$d/nginx.conf" -e "$d/error.log" </dev/null >>"$d/stdout.log" 2>&1 &
		HTTP_PID=$!
		for i in $(seq 1 100); do
			kill -0 "$HTTP_PID" 2>/dev/null || break
			[ -s "$d/nginx.pid" ] &&
				curl -s -o /dev/null --max-time 2 "http://127.0.0.1:$HTTP_PORT/" &&
				{ [ -z "$tls" ] || curl -s -o /dev/null --max-time 2 --cacert "$d/cert.pem" \
					"https://127.0.0.1:$HTTPS_PORT/"; } && break
			sleep 0.1
		done
		if kill -0 "$HTTP_PID" 2>/dev/null && [ "$i" -lt 100 ]; then
			[ "$(cat "$d/nginx.pid")" = "$HTTP_PID" ] ||
				{ echo "http_start: pid file says $(cat "$d/nginx.pid"), started $HTTP_PID" >&2; http_stop; return 1; }
			HTTP_WORKER_PIDS=($(ps -o pid= --ppid "$HTTP_PID"))
			HTTP_ROOT=$root
			HTTP_CACERT=${tls:+$d/cert.pem}
			HTTP_ACCESS_LOG=$d/access.log
			HTTP_ERROR_LOG=$d/error.log
			return 0
		fi
		http_kill_pid "$HTTP_PID"
		HTTP_PID=
		grep -q 'Address already in use' "$d/error.log" "$d/stdout.log" 2>/dev/null || break
	done
	echo "http_start: nginx did not come up:" >&2
	cat "$d/error.log" "$d/stdout.log" >&2 2>/dev/null
	HTTP_PORT= HTTPS_PORT=
	return 1
}

# http_stop: stops the nginx http_start started (the master named by its
# pid file, which is the PID it started; its workers if they outlive it)
http_stop() {
	local pid=$HTTP_PID f=${SFS_TMP:-/nonexistent}/nginx/nginx.pid
	[ -n "$pid" ] || return 0
	[ -s "$f" ] && [ "$(cat "$f")" != "$pid" ] &&
		echo "http_stop: pid file says $(cat "$f"), stopping $pid, the one started" >&2
	http_kill_pid "$pid" "${HTTP_WORKER_PIDS[@]}"
	HTTP_PID= HTTP_PORT= HTTPS_PORT=
	HTTP_WORKER_PIDS=()
}

# http_url [-s] [PATH]: the URL of PATH (relative to the served DIR) on the
# running nginx, each byte outside [A-Za-z0-9._~/-] percent-encoded
http_url() {
	local scheme=http port=$HTTP_PORT
	[ "${1:-}" = -s ] && { scheme=https; port=$HTTPS_PORT; shift; }
	printf '%s://127.0.0.1:%s/%s\n' "$scheme" "$port" "$(http_pct_encode "${1:-}")"
}

# http_log_sync: returns once every request nginx completed before this
# call is in its access log (a marker request, logged after them by the
# one worker; bounded wait).  Requests still in flight are not waited for:
# stop the client (unmount) first.
http_log_sync() {
	local uri=/__sfs_sync_$RANDOM$RANDOM i
	curl -s -o /dev/null --max-time 5 "http://127.0.0.1:$HTTP_PORT$uri"
	for i in $(seq 1 100); do
		grep -qF "	$uri	" "$HTTP_ACCESS_LOG" 2>/dev/null && return 0
		sleep 0.05
	done
	echo "http_log_sync: marker $uri not logged" >&2
	return 1
}

# http_log_mark: the number of lines in the access log, after a sync
http_log_mark() {
	http_log_sync || return 1
	wc -l <"$HTTP_ACCESS_LOG"
}

# http_log_lines [MARK]: the access log's lines after line MARK, without
# the sync markers
http_log_lines() {
	http_log_sync || return 1
	tail -n +"$((${1:-0} + 1))" "$HTTP_ACCESS_LOG" | awk -F'\t' '$2 !~ /^\/__sfs_sync_/'
}

# http_log_count METHOD [MARK [STATUS]]: requests with METHOD (GET, HEAD)
# logged after line MARK, only those answered with STATUS (an awk regex,
# e.g. '20[06]') if given
http_log_count() {
	local lines
	lines=$(http_log_lines "${2:-0}") || return 1
	awk -F'\t' -v m="$1" -v s="^(${3:-.*})\$" '$1 == m && $4 ~ s { n++ } END { print n + 0 }' <<<"$lines"
}

# proxy_start UPSTREAM_URL [fault_proxy.py options]: starts the fault
# proxy in front of UPSTREAM_URL on a free loopback port ($PROXY_PORT);
# its request log is $PROXY_LOG.  Returns once it listens.
proxy_start() {
	local up=$1 pf=$SFS_TMP/proxy.port i; shift
	[ -z "$PROXY_PID" ] || { echo "proxy_start: proxy already running ($PROXY_PID)" >&2; return 1; }
	PROXY_LOG=$SFS_TMP/proxy.log
	rm -f "$pf"
	"$PY" "$HTTP_LIB_DIR/fault_proxy.py" --upstream "$up" --port-file "$pf" "$@" \
		</dev/null >/dev/null 2>>"$PROXY_LOG" &
	PROXY_PID=$!
	for i in $(seq 1 100); do
		[ -s "$pf" ] && { PROXY_PORT=$(cat "$pf"); return 0; }
		kill -0 "$PROXY_PID" 2>/dev/null || break
		sleep 0.1
	done
	echo "proxy_start: fault_proxy.py did not come up:" >&2
	cat "$PROXY_LOG" >&2
	proxy_stop
	return 1
}

proxy_stop() {
	[ -n "$PROXY_PID" ] || return 0
	http_kill_pid "$PROXY_PID"
	PROXY_PID= PROXY_PORT=
}

# proxy_url [PATH]: the URL of PATH through the proxy
proxy_url() {
	printf 'http://127.0.0.1:%s/%s\n' "$PROXY_PORT" "$(http_pct_encode "${1:-}")"
}

# proxy_ctl 'fault?mode=500&n=2' (or 'etag?change=1', 'delay?ms=20',
# 'stats', 'reset'): one control request; prints the proxy's JSON answer,
# fails on an error status (see the top of fault_proxy.py)
proxy_ctl() {
	curl -sf --max-time 5 "http://127.0.0.1:$PROXY_PORT/__$1"
}

# proxy_stat KEY: one counter, e.g. requests, method.GET, method.HEAD,
# status.206, data_bytes, range_gets, connections, faults, upstream
proxy_stat() {
	curl -sf --max-time 5 "http://127.0.0.1:$PROXY_PORT/__stats?key=$1"
}

# http_cleanup: sfs_cleanup's hook; stops what is still running
http_cleanup() {
	proxy_stop
	http_stop
}
