#!/usr/bin/env bash
# The HTTP test harness checked on its own, with curl, before samplefs
# mounts anything over it: nginx (http_lib.sh) serving files over HTTP and
# HTTPS, and fault_proxy.py in front of it, compared with the bytes on disk.
#
#  1. nginx: ranged GETs answer 206 and the file's bytes (Python slices the
#     file), whole GETs and HEADs its bytes and size, over HTTP/1.1 and over
#     TLS with HTTP/2; a name with a space percent-encoded; keep-alive; the
#     access log records method, URI, Range, status and bytes as sent;
#  2. TLS verifies with the generated certificate (for 127.0.0.1 and
#     localhost), and fails without it;
#  3. the JSON directory listing parses and names each file, its type and
#     size, as os.scandir sees them;
#  4. every fault of the proxy, and its pass-through, counters and control
#     API (checked against nginx's own access log where it can be);
#  5. everything stopped: by http_stop/proxy_stop, and by lib.sh's trap in
#     a test shell that is killed or exits early.
# It does not run samplefs (SAMPLEFS_BUILD makes no difference to it).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/http_lib.sh"
sfs_setup
T=$SFS_TMP
D=$T/www

$PY - "$D" <<'PY' || { echo "not ok - fixtures"; SFS_FAIL=1; sfs_done; exit 1; }
import os, random, sys
d = sys.argv[1]
os.makedirs(d + '/sub dir')
rng = random.Random(10)
for name, n in (('big.bin', (1 << 20) + 17), ('small.bin', 300), ('with space.bin', 5000),
                ('sub dir/inner.bin', 70000), ('empty', 0)):
    with open(os.path.join(d, name), 'wb') as f:
        f.write(rng.randbytes(n))
PY
BIG=$D/big.bin
BIGSZ=$(stat -c %s "$BIG")

# c ARGS...: curl, bounded (every wait here is)
c() { timeout 30 curl -s --max-time 20 "$@"; }
# slice FILE OFF LEN: the oracle, LEN bytes of FILE from OFF (Python)
slice() {
	"$PY" -c 'import sys
with open(sys.argv[1], "rb") as f:
    f.seek(int(sys.argv[2])); sys.stdout.buffer.write(f.read(int(sys.argv[3])))' "$@"
}
# ranged URL FROM TO FILE [curl args...]: a GET of bytes FROM-TO answers
# 206 and FILE's bytes FROM..TO (TO empty: to the end)
ranged() {
	local url=$1 from=$2 to=$3 file=$4 code; shift 4
	local len=$(( ${to:-$(( $(stat -c %s "$file") - 1 ))} - from + 1 ))
	code=$(c -r "$from-$to" -o "$T/got" -w '%{http_code}' "$@" "$url") || return 1
	[ "$code" = 206 ] || { echo "    $url $from-$to: $code"; return 1; }
	slice "$file" "$from" "$len" >"$T/want" && cmp "$T/got" "$T/want"
}
# whole URL FILE [curl args...]: a GET answers 200 and FILE's bytes
whole() {
	local url=$1 file=$2 code; shift 2
	code=$(c -o "$T/got" -w '%{http_code}' "$@" "$url") || return 1
	[ "$code" = 200 ] && cmp "$T/got" "$file"
}
# header URL NAME [curl args...]: NAME's value in a HEAD's answer
header() {
	local url=$1 name=$2; shift 2
	c -I "$@" "$url" | tr -d '\r' | awk -v n="$name:" 'tolower($1) == tolower(n) { $1 = ""; sub(/^ /, ""); print }'
}

# ---- 1. nginx over HTTP ----
check "nginx starts (HTTP and HTTPS)" http_start -s "$D"
U=$(http_url big.bin)
check "ranged GETs: 206 and the file's bytes" eval '
	ranged "$U" 0 0 "$BIG" && ranged "$U" 1000 1999 "$BIG" &&
	ranged "$U" 4090 70000 "$BIG" && ranged "$U" $((BIGSZ - 5)) "" "$BIG"'
check "a range past the end is cut at it" eval '
	c -r "$((BIGSZ - 10))-$((BIGSZ + 100))" -o "$T/got" "$U" &&
	slice "$BIG" $((BIGSZ - 10)) 10 >"$T/want" && cmp "$T/got" "$T/want"'
check "a whole GET is the file" whole "$U" "$BIG"
check "HEAD: the size and an ETag" eval '
	[ "$(header "$U" Content-Length)" = "$BIGSZ" ] && [ -n "$(header "$U" ETag)" ]'
check "a name with a space, percent-encoded" eval '
	[[ $(http_url "sub dir/inner.bin") == */sub%20dir/inner.bin ]] &&
	whole "$(http_url "sub dir/inner.bin")" "$D/sub dir/inner.bin" &&
	ranged "$(http_url "with space.bin")" 17 4000 "$D/with space.bin"'
check "an empty file, and 404 for a missing one" eval '
	whole "$(http_url empty)" "$D/empty" &&
	[ "$(c -o /dev/null -w "%{http_code}" "$(http_url missing)")" = 404 ]'

M=$(http_log_mark)
c -r 1000-1999 -o /dev/null "$U"
c -I -o /dev/null "$U"
c -o /dev/null "$U" -o /dev/null "$(http_url small.bin)"	# one connection
check "the access log: method, URI, Range, status, bytes" eval '
	http_log_lines "$M" >"$T/log" &&
	[ "$(cut -f1-5 "$T/log")" = "$(printf "GET\t/big.bin\tbytes=1000-1999\t206\t1000\nHEAD\t/big.bin\t-\t200\t0\nGET\t/big.bin\t-\t200\t%s\nGET\t/small.bin\t-\t200\t300" "$BIGSZ")" ]'
check "the access log: two requests on one kept-alive connection" eval '
	[ "$(tail -2 "$T/log" | cut -f8 | sort -u | wc -l)" = 1 ] &&
	[ "$(tail -2 "$T/log" | cut -f9 | tr "\n" " ")" = "1 2 " ]'
check "http_log_count counts GETs by status and HEADs" eval '
	[ "$(http_log_count GET "$M" 206)" = 1 ] && [ "$(http_log_count GET "$M" 200)" = 2 ] &&
	[ "$(http_log_count GET "$M" "20[06]")" = 3 ] && [ "$(http_log_count HEAD "$M")" = 1 ]'

# ---- 2. TLS ----
S=$(http_url -s big.bin)
check "HTTPS verifies with the generated certificate, over HTTP/2" eval '
	[ "$(c --cacert "$HTTP_CACERT" -o /dev/null -w "%{http_version}" "$S")" = 2 ] &&
	ranged "$S" 5000 99999 "$BIG" --cacert "$HTTP_CACERT" && whole "$S" "$BIG" --cacert "$HTTP_CACERT"'
check "HTTPS to localhost verifies too (DNS name in the certificate)" \
	ranged "https://localhost:$HTTPS_PORT/big.bin" 7 70 "$BIG" --cacert "$HTTP_CACERT"
check "HTTPS fails without the certificate" eval '
	c -o /dev/null "$S"; [ $? = 60 ]'
check "HTTP/2 requests are logged as HTTP/2.0" eval '
	http_log_lines "$M" | awk -F"\t" -v p="$HTTPS_PORT" "\$7 == p && \$6 != \"HTTP/2.0\" { bad = 1 } \$7 == p { n++ } END { exit bad || !n }"'

# ---- 3. JSON listings ----
# listing URL DIR: nginx's JSON for URL names exactly DIR's entries, each
# with its type and, for files, its size
listing() {
	c "$1" >"$T/listing.json" && "$PY" - "$T/listing.json" "$2" <<'PY'
import json, os, sys
got = {e['name']: (e['type'], e.get('size')) for e in json.load(open(sys.argv[1]))}
want = {e.name: ('directory', None) if e.is_dir() else ('file', e.stat().st_size)
        for e in os.scandir(sys.argv[2])}
if got != want:
    print('    listing', got, '!=', want)
    sys.exit(1)
PY
}
check "the JSON listing of the root" listing "$(http_url)" "$D"
check "the JSON listing of a directory with a space" listing "$(http_url "sub dir/")" "$D/sub dir"

# ---- 4. the proxy ----
check "the proxy starts" proxy_start "http://127.0.0.1:$HTTP_PORT"
P=$(proxy_url big.bin)
PS=$(proxy_url small.bin)
check "through the proxy: ranged and whole GETs, HEAD" eval '
	ranged "$P" 1000 1999 "$BIG" && ranged "$P" $((BIGSZ - 100)) "" "$BIG" &&
	whole "$P" "$BIG" && whole "$(proxy_url "with space.bin")" "$D/with space.bin" &&
	[ "$(header "$P" Content-Length)" = "$BIGSZ" ] && [ "$(header "$P" ETag)" = "$(header "$U" ETag)" ]'
check "through the proxy: the JSON listing" listing "$(proxy_url "sub dir/")" "$D/sub dir"
M=$(http_log_mark)
c -v -r 0-99 -o /dev/null "$P" -r 0-99 -o /dev/null "$PS" 2>"$T/curl.err"
check "keep-alive: the client's connection and the proxy's upstream one are reused" eval '
	grep -q "Re-using existing connection" "$T/curl.err" &&
	http_log_lines "$M" >"$T/log" && [ "$(wc -l <"$T/log")" = 2 ] &&
	[ "$(cut -f8 "$T/log" | sort -u | wc -l)" = 1 ]'

# status URL [curl args]: the status code a GET gets
status() { c -o "$T/got" -w '%{http_code}' "$@"; }
proxy_ctl reset >/dev/null
M=$(http_log_mark)
proxy_ctl 'fault?mode=500&n=2' >/dev/null
check "500 twice, then the bytes; the 500s never reach nginx" eval '
	[ "$(status -r 10-20 "$P")" = 500 ] && [ "$(status -r 10-20 "$P")" = 500 ] &&
	ranged "$P" 10 20 "$BIG" && [ "$(http_log_count GET "$M")" = 1 ] &&
	[ "$(proxy_stat faults)" = 2 ] && [ "$(proxy_stat status.500)" = 2 ]'
proxy_ctl 'fault?mode=503' >/dev/null
check "503 once, then the bytes" eval '
	[ "$(status -r 10-20 "$P")" = 503 ] && ranged "$P" 10 20 "$BIG"'
proxy_ctl 'fault?mode=429' >/dev/null
check "429 with Retry-After: 1, then the bytes" eval '
	c -D "$T/hdr" -o /dev/null "$P" && head -1 "$T/hdr" | grep -q " 429" &&
	grep -qi "^Retry-After: 1.$" "$T/hdr" && ranged "$P" 10 20 "$BIG"'
proxy_ctl 'fault?mode=cut' >/dev/null
check "cut: a whole GET ends after half the body, as a short body" eval '
	c -o "$T/got" "$P"; [ $? = 18 ] && [ "$(stat -c %s "$T/got")" = $((BIGSZ / 2)) ] &&
	slice "$BIG" 0 $((BIGSZ / 2)) | cmp - "$T/got" && ranged "$P" 10 20 "$BIG"'
proxy_ctl 'fault?mode=cut' >/dev/null
check "cut: a ranged GET too" eval '
	c -r 1000-2999 -o "$T/got" "$P"; [ $? = 18 ] &&
	slice "$BIG" 1000 1000 | cmp - "$T/got"'
proxy_ctl 'fault?mode=drop' >/dev/null
check "drop: no answer, then the next request is served" eval '
	rm -f "$T/got"; c -o "$T/got" -r 0-9 "$P"; rc=$?; { [ $rc = 52 ] || [ $rc = 56 ]; } && [ ! -s "$T/got" ] &&
	ranged "$P" 0 9 "$BIG"'
proxy_ctl 'fault?mode=norange&n=-1&method=GET' >/dev/null
check "norange: a ranged GET gets 200 and the whole file, until disarmed" eval '
	whole "$P" "$BIG" -r 1000-1999 && whole "$P" "$BIG" -r 5-6 -D "$T/hdr" &&
	! grep -qi "^Accept-Ranges" "$T/hdr" && [ "$(header "$P" Accept-Ranges)" = bytes ] &&
	proxy_ctl "fault?mode=off" >/dev/null && ranged "$P" 5 6 "$BIG"'

E0=$(header "$U" ETag)
proxy_ctl 'etag?change=1' >/dev/null
E1=$(header "$P" ETag)
check "etag: changed, and stays changed for later answers" eval '
	[ -n "$E0" ] && [ -n "$E1" ] && [ "$E1" != "$E0" ] &&
	c -D "$T/hdr" -r 0-9 -o /dev/null "$P" && grep -qiF "ETag: $E1" "$T/hdr" &&
	[ "$(header "$P" ETag)" = "$E1" ]'
check "etag: If-Range with the new ETag gets 206, with the old one the whole file" eval '
	ranged "$P" 100 199 "$BIG" -H "If-Range: $E1" && whole "$P" "$BIG" -r 100-199 -H "If-Range: $E0"'
proxy_ctl 'etag?change=1' >/dev/null
check "etag: a second change gives a third ETag, and the second no longer matches" eval '
	E2=$(header "$P" ETag) && [ "$E2" != "$E1" ] && [ "$E2" != "$E0" ] &&
	whole "$P" "$BIG" -r 100-199 -H "If-Range: $E1"'
proxy_ctl 'etag?gen=0' >/dev/null
check "etag: gen=0 gives back nginx's ETag" eval '
	[ "$(header "$P" ETag)" = "$E0" ] && ranged "$P" 100 199 "$BIG" -H "If-Range: $E0"'

proxy_ctl 'fault?mode=trickle&rate=100' >/dev/null
check "trickle: below curl's low-speed limit, which aborts it" eval '
	c --speed-limit 1000 --speed-time 2 -o "$T/got" "$P"; [ $? = 28 ] &&
	[ "$(stat -c %s "$T/got")" -lt 2000 ] && slice "$BIG" 0 "$(stat -c %s "$T/got")" | cmp - "$T/got"'
proxy_ctl 'fault?mode=trickle&rate=1000' >/dev/null
check "trickle: a small file arrives whole, slowly" whole "$PS" "$D/small.bin"
proxy_ctl 'fault?mode=trickle&rate=100&max_s=1' >/dev/null
check "trickle: the proxy gives up after max_s, even with no client limit" eval '
	c -o "$T/got" "$P"; [ $? = 18 ] && ranged "$P" 0 9 "$BIG"'

proxy_ctl 'fault?mode=500&n=-1&method=GET&match=small' >/dev/null
check "a fault filtered by method and path hits only those" eval '
	[ "$(header "$PS" Content-Length)" = 300 ] && ranged "$P" 0 9 "$BIG" &&
	[ "$(status "$PS")" = 500 ] && [ "$(status "$PS")" = 500 ] &&
	proxy_ctl "fault?mode=off" >/dev/null && whole "$PS" "$D/small.bin"'

proxy_ctl 'delay?ms=300' >/dev/null
# a lower bound only: a sleep never returns early, whatever the machine's load
check "delay: each answer waits at least the delay" eval '
	t=$(c -r 0-9 -o "$T/got" -w "%{time_total}" "$P") &&
	"$PY" -c "import sys; sys.exit(float(sys.argv[1]) < 0.3)" "$t" &&
	slice "$BIG" 0 10 | cmp - "$T/got" && proxy_ctl "delay?ms=0" >/dev/null'

proxy_ctl 'stats?reset=1' >/dev/null
M=$(http_log_mark)
for i in 1 2 3; do c -r $((i * 1000))-$((i * 1000 + 999)) -o /dev/null "$P"; done
c -I -o /dev/null "$P"; c -I -o /dev/null "$PS"
check "counters: requests by method, range GETs, data bytes (as nginx logged)" eval '
	[ "$(proxy_stat method.GET)" = 3 ] && [ "$(proxy_stat method.HEAD)" = 2 ] &&
	[ "$(proxy_stat range_gets)" = 3 ] && [ "$(proxy_stat data_bytes)" = 3000 ] &&
	[ "$(proxy_stat requests)" = 5 ] && [ "$(proxy_stat upstream)" = 5 ] &&
	[ "$(http_log_count GET "$M" 206)" = 3 ] && [ "$(http_log_count HEAD "$M")" = 2 ] &&
	[ "$(http_log_lines "$M" | awk -F"\t" "\$1 == \"GET\" { s += \$5 } END { print s }")" = 3000 ]'
check "the control API refuses what it does not know" eval '
	! proxy_ctl "fault?mode=nonsense" >/dev/null && ! proxy_ctl "nothing" >/dev/null &&
	! proxy_ctl "fault?mode=500&n=x" >/dev/null'

# ---- 5. stopped ----
pids="$HTTP_PID ${HTTP_WORKER_PIDS[*]} $PROXY_PID"
hp=$HTTP_PORT sp=$HTTPS_PORT pp=$PROXY_PORT
proxy_stop
http_stop
# gone PIDS...: none of PIDS is alive
gone() { local p; for p; do kill -0 "$p" 2>/dev/null && { echo "    $p alive"; return 1; }; done; return 0; }
check "stopped: nginx master, workers and proxy gone, their ports closed" eval '
	gone $pids && ! c -o /dev/null "http://127.0.0.1:$hp/" && ! c -o /dev/null "http://127.0.0.1:$pp/" &&
	! c -k -o /dev/null "https://127.0.0.1:$sp/"'

# a test shell that starts both and then fails (exit 3) or is killed
# (SIGTERM, as run_all.sh's timeout does): its trap stops them
for how in exit term; do
	rm -f "$T/child.pids"
	bash -c '. "$1/lib.sh"; . "$1/http_lib.sh"; sfs_setup
		http_start -s "$2" && proxy_start "http://127.0.0.1:$HTTP_PORT" || exit 1
		echo "$HTTP_PID ${HTTP_WORKER_PIDS[*]} $PROXY_PID" >"$3.tmp"; mv "$3.tmp" "$3"
		[ "$4" = exit ] && exit 3
		mkfifo "$SFS_TMP/never"; read -t 60 <>"$SFS_TMP/never"	# a builtin: nothing left behind' sh "$SFS_ROOT/tests/integration" "$D" "$T/child.pids" "$how" &
	child=$!
	for i in $(seq 1 200); do [ -s "$T/child.pids" ] || ! kill -0 $child 2>/dev/null && break; sleep 0.1; done
	[ "$how" = term ] && kill -TERM $child
	wait $child
	check "a test that ends by $how stops its servers (trap)" eval '
		[ -s "$T/child.pids" ] && gone $(cat "$T/child.pids")'
done

sfs_done
