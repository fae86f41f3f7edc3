# OpenStack Swift (Debian's) as a local S3 store for integration tests,
# sourced after lib.sh:
#   . "$(dirname "$0")/lib.sh"; . "$(dirname "$0")/swift_lib.sh"; sfs_setup
#   swift_start                 the four servers on free loopback ports
#   swift_put BUCKET KEY FILE   an object (KEY as it is: spaces, unicode)
#   swift_mkbucket BUCKET       a container, which s3api serves as a bucket
#   swift_delete BUCKET KEY
#   swift_stop                  (also run by sfs_cleanup, on any exit)
#   swift_log_mark              the access log's length now
#   swift_log_lines [MARK]      the S3 requests logged since MARK, one a
#                               line: METHOD TAB PATH TAB RANGE TAB STATUS
#                               TAB HEADERS (PATH as the proxy logs it:
#                               "/BUCKET/KEY", percent-encoded twice; RANGE
#                               "A-B" or "-"; HEADERS see below)
# After swift_start: SWIFT_S3 is the S3 endpoint (http://127.0.0.1:PORT),
# and S3 credentials are tempauth's user test:tester, key "testing"
# (SWIFT_ACCESS_KEY, SWIFT_SECRET_KEY).  Each request may take
# SWIFT_MAX_TIME seconds (default 60; a bench's uploads of gigabytes more).
#
# All-in-one and throwaway: one-device rings (one replica) on directories
# under $SFS_TMP/swift, `mount_check = false`, no memcached (the proxy's
# `cache` filter is still in the pipeline: s3api and tempauth want it),
# every server with `workers = 0` (one process, no children), so each is
# stopped by the PID this shell started.  The servers also read
# /etc/swift/swift.conf (the package's: the hash path suffix); nothing
# else outside $SFS_TMP is read or written.  Uploads are S3 requests signed
# by the curl program (--aws-sigv4; Swift's native API would want a
# tempauth token, which tempauth keeps in memcached), so the tests sign
# nothing by hand, and what samplefs signs is checked by a verifier it
# shares no code with (Swift's s3api).  Needs http_lib.sh (http_pct_encode,
# http_free_ports).
#
# Not for: anything but tests on loopback.
declare -p SFS_CLEANUP_HOOKS >/dev/null 2>&1 ||
	{ echo "swift_lib.sh: source lib.sh first" >&2; return 1; }
SWIFT_PIDS=() SWIFT_S3= SWIFT_DIR=
SWIFT_ACCESS_KEY=test:tester SWIFT_SECRET_KEY=testing
SFS_CLEANUP_HOOKS+=(swift_stop)

# swift_write_conf KIND PORT: $SWIFT_DIR/KIND-server.conf
swift_write_conf() {
	local kind=$1 port=$2
	cat >"$SWIFT_DIR/$kind-server.conf" <<EOF
[DEFAULT]
bind_ip = 127.0.0.1
bind_port = $port
workers = 0
devices = $SWIFT_DIR/srv
mount_check = false
swift_dir = $SWIFT_DIR
log_name = sfs-$kind
log_level = ERROR

[pipeline:main]
pipeline = $kind-server

[app:$kind-server]
use = egg:swift#$kind
EOF
	return 0
}

swift_write_proxy_conf() {
	local port=$1 f
	cat >"$SWIFT_DIR/proxy-server.conf" <<EOF
[DEFAULT]
bind_ip = 127.0.0.1
bind_port = $port
workers = 0
swift_dir = $SWIFT_DIR
log_name = sfs-proxy
log_level = ERROR

[pipeline:main]
pipeline = catch_errors gatekeeper healthcheck proxy-logging cache listing_formats s3api tempauth copy slo dlo proxy-logging proxy-server

[app:proxy-server]
use = egg:swift#proxy
account_autocreate = true
# a backend that refused a connection while it still started is not
# shunned for a minute (Swift's default: after 10 errors, 60 s of 503s)
error_suppression_interval = 0

[filter:tempauth]
use = egg:swift#tempauth
user_test_tester = testing .admin

[filter:s3api]
use = egg:swift#s3api
location = us-east-1

[filter:cache]
use = egg:swift#memcache
memcache_servers = 127.0.0.1:1
EOF
	for f in catch_errors gatekeeper healthcheck listing_formats copy slo dlo; do
		printf '\n[filter:%s]\nuse = egg:swift#%s\n' "$f" "${f/-/_}" >>"$SWIFT_DIR/proxy-server.conf"
	done
	# the access log: one line per request, INFO (the rest of the proxy
	# logs errors only), with the Range and session token headers sent;
	# -v at start sends it to stderr, the log file
	cat >>"$SWIFT_DIR/proxy-server.conf" <<EOF

[filter:proxy-logging]
use = egg:swift#proxy_logging
access_log_level = INFO
access_log_headers = true
access_log_headers_only = Range, X-Amz-Security-Token
EOF
}

# swift_rings: one-device, one-replica rings for the three ports, built in
# one Python process (swift-ring-builder would take nine runs)
swift_rings() {
	"$PY" - "$SWIFT_DIR" "$@" <<'PY'
import sys
from swift.common.ring import RingBuilder
d = sys.argv[1]
for kind, port in zip(("account", "container", "object"), sys.argv[2:5]):
    b = RingBuilder(4, 1, 1)
    b.add_dev({"id": 0, "region": 1, "zone": 1, "ip": "127.0.0.1",
               "port": int(port), "device": "d0", "weight": 100})
    b.rebalance()
    b.get_ring().save("%s/%s.ring.gz" % (d, kind))
PY
}

# swift_s3 CURL-ARGS... URL-PATH: a request signed by curl's own SigV4
# (--aws-sigv4), as test:tester (the ':' of the access key written as %3A
# in the URL's user part: curl's --user would split there)
swift_s3() {
	local path=${!#}
	curl -s --max-time "${SWIFT_MAX_TIME:-60}" --aws-sigv4 "aws:amz:us-east-1:s3" \
		-H "x-amz-content-sha256: UNSIGNED-PAYLOAD" "${@:1:$#-1}" \
		"http://test%3Atester:testing@${SWIFT_S3#http://}$path"
}

# swift_listening PORT...: every PORT accepts a connection on loopback
swift_listening() {
	local p
	for p; do
		(exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null || return 1
	done
}

swift_start() {
	local ports kind i
	[ -n "${SFS_TMP:-}" ] || { echo "swift_start: call sfs_setup first" >&2; return 1; }
	[ ${#SWIFT_PIDS[@]} -eq 0 ] || { echo "swift_start: already running" >&2; return 1; }
	command -v swift-proxy-server >/dev/null ||
		{ echo "swift_start: swift is not installed (tools/deps.sh)" >&2; return 1; }
	SWIFT_DIR=$SFS_TMP/swift
	mkdir -p "$SWIFT_DIR/srv/d0" "$SWIFT_DIR/log" || return 1
	ports=($(http_free_ports 4)) || return 1
	swift_rings "${ports[@]:0:3}" || return 1
	i=0
	for kind in account container object; do
		swift_write_conf "$kind" "${ports[$i]}"
		"swift-$kind-server" "$SWIFT_DIR/$kind-server.conf" </dev/null \
			>"$SWIFT_DIR/log/$kind.log" 2>&1 &
		SWIFT_PIDS+=($!)
		i=$((i + 1))
	done
	# the backends listen before the proxy is asked anything (under load
	# their Python start takes seconds)
	for i in $(seq 1 600); do
		swift_listening "${ports[@]:0:3}" && break
		sleep 0.1
	done
	swift_write_proxy_conf "${ports[3]}"
	swift-proxy-server "$SWIFT_DIR/proxy-server.conf" -v </dev/null \
		>"$SWIFT_DIR/log/proxy.log" 2>&1 &
	SWIFT_PIDS+=($!)
	SWIFT_S3=http://127.0.0.1:${ports[3]}
	# ready when a bucket can be made (the account and container servers
	# are up) and an object written into it (the object servers: a
	# test's first upload, right after its bucket, once failed while they
	# still started); the bucket is made once: a PUT of it after one that
	# succeeded (its object's PUT having failed) answers 409, already made
	printf ready >"$SWIFT_DIR/probe"
	local made= code
	for i in $(seq 1 600); do
		if [ -z "$made" ]; then
			code=$(swift_s3 -o /dev/null -w '%{http_code}' -X PUT /sfs-ready)
			# 409: made by a PUT whose answer was lost
			[ "$code" = 200 ] || [ "$code" = 409 ] && made=1
		fi
		[ -n "$made" ] &&
			[ "$(swift_s3 -o /dev/null -w '%{http_code}' -T "$SWIFT_DIR/probe" \
				/sfs-ready/probe)" = 200 ] && return 0
		for kind in "${SWIFT_PIDS[@]}"; do
			kill -0 "$kind" 2>/dev/null || break 2
		done
		sleep 0.1
	done
	echo "swift_start: Swift did not come up:" >&2
	tail -n 5 "$SWIFT_DIR"/log/*.log 1>&2
	swift_stop
	return 1
}

# swift_mkbucket BUCKET
swift_mkbucket() {
	[ "$(swift_s3 -o /dev/null -w '%{http_code}' -X PUT "/$1")" = 200 ]
}

# swift_put BUCKET KEY FILE: a fixture's upload, sent again (up to 5
# times) when Swift answers 5xx or not at all, as a loaded 2-core machine
# makes it do now and then; anything else fails at once
swift_put() {
	local code i
	for i in 1 2 3 4 5; do
		code=$(swift_s3 -o /dev/null -w '%{http_code}' -T "$3" \
			"/$1/$(http_pct_encode "$2")")
		[ "$code" = 200 ] && return 0
		case $code in 5* | 000) sleep 0.5 ;; *) break ;; esac
	done
	echo "swift_put: /$1/$2: HTTP $code" >&2
	return 1
}

# swift_put_tree BUCKET PREFIX DIR: every file under DIR as PREFIX/relative
swift_put_tree() {
	local f rel
	while IFS= read -r -d '' f; do
		rel=${f#"$3"/}
		swift_put "$1" "$2$rel" "$f" || { echo "swift_put_tree: $f" >&2; return 1; }
	done < <(find "$3" -type f -print0)
}

# swift_mtimes BUCKET PREFIX DIR: every file under DIR gets the
# Last-Modified its object PREFIX/relative has (a store's mtime is the
# upload's time; layouts that write mtimes into what they serve, such as
# tar headers, are then compared with the same times)
swift_mtimes() {
	local f rel lm
	while IFS= read -r -d '' f; do
		rel=${f#"$3"/}
		lm=$(swift_s3 -I "/$1/$(http_pct_encode "$2$rel")" | tr -d '\r' |
			sed -n 's/^[Ll]ast-[Mm]odified: //p')
		[ -n "$lm" ] && touch -d "$lm" "$f" || { echo "swift_mtimes: $f" >&2; return 1; }
	done < <(find "$3" -type f -print0)
}

# swift_delete BUCKET KEY
swift_delete() {
	[ "$(swift_s3 -o /dev/null -w '%{http_code}' -X DELETE \
		"/$1/$(http_pct_encode "$2")")" = 204 ]
}

# swift_log_sync: every request answered before it is in the access log
# (the proxy logs a request once its response is sent: a request of ours
# after it, seen logged, orders them)
swift_log_sync() {
	local tag=/__sfs_sync_$RANDOM$RANDOM i
	curl -s -o /dev/null --max-time 10 "$SWIFT_S3$tag"
	for i in $(seq 1 200); do
		grep -q " GET $tag " "$SWIFT_DIR/log/proxy.log" && return 0
		sfs_nap 0.05
	done
	echo "swift_log_sync: $tag never logged" >&2
	return 1
}

swift_log_mark() {
	swift_log_sync || return 1
	wc -l <"$SWIFT_DIR/log/proxy.log"
}

# The proxy's access lines are "sfs-proxy: CLIENT REMOTE DATE METHOD PATH
# PROTO STATUS ... HEADERS ..." (proxy_logging's log_msg_template, HEADERS
# the 16th field: the logged headers, Range and X-Amz-Security-Token,
# "Name:%20value" joined by "%0A", or "-"); its own subrequests (client
# "-") and the sync requests are left out.
swift_log_lines() {
	swift_log_sync || return 1
	tail -n +"$((${1:-0} + 1))" "$SWIFT_DIR/log/proxy.log" | awk '
		$1 == "sfs-proxy:" && $2 == "127.0.0.1" && $6 !~ /^\/__sfs_sync_/ {
			r = "-"; n = split($16, h, "%0A")
			for (i = 1; i <= n; i++)
				if (sub(/^Range:%20bytes%3D/, "", h[i])) r = h[i]
			print $5 "\t" $6 "\t" r "\t" $8 "\t" $16 }'
}

# swift_stop: SIGTERM to each server this shell started, bounded wait,
# SIGKILL to one that ignores it
swift_stop() {
	local p i
	for p in "${SWIFT_PIDS[@]}"; do
		kill "$p" 2>/dev/null
	done
	for p in "${SWIFT_PIDS[@]}"; do
		for i in $(seq 1 100); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
		kill -0 "$p" 2>/dev/null && kill -9 "$p" 2>/dev/null
		wait "$p" 2>/dev/null
	done
	SWIFT_PIDS=()
	SWIFT_S3=
	return 0
}
