#!/usr/bin/env bash
# The control directory MOUNT/.samplefs/ (issue 19, item 1; fs/ctl.h):
#   - local tar: after reading N members of known sizes, stats.json's
#     files_read and bytes_served grew by exactly N and their sizes (the
#     sizes the files GNU tar was given have), no read error; the document
#     parses with Python's json (a source name with a quote, a backslash
#     and a newline in it included), metrics with a Prometheus line check
#     and says the same numbers, config names the source, version is
#     samplefs --version's;
#   - the directory is reachable but not listed (ls -a), stat works, and
#     touch, writes, mkdir, rm, chmod and mv in it fail;
#   - a member named .samplefs at the root keeps its name (bytes as
#     tarfile's) with one warning naming the clash; the control directory
#     is then .samplefs-ctl, which samplefs-stat finds;
#   - over nginx: the source's new "requests" while a member is read equal
#     the requests nginx logged meanwhile; a member read again after its pages were dropped
#     is a memory-cache hit, no request;
#   - through fault_proxy.py: two 500s armed, a read gets the right bytes
#     and "retries" grows by the faults the proxy says it injected (2),
#     "errors" by none;
#   - samplefs-stat prints a table with a row per interval;
#   - every open of stats.json and metrics is a fresh whole snapshot,
#     whatever was listed, stat'ed or read before (issue 25 item 5: after
#     `ls` they read empty, or frozen): with three readers loading the
#     mount, ctl_fresh.py lists, stats, reads and reopens 60 times and
#     sees the lookup count and uptime grow at each open, and files_read
#     grow over the loop; with readdirplus=always (quickdraw's and npy's
#     default) and the tar's default; config shows the options that
#     apply (source kind, layout) with the values in force: a local tar's
#     no URL option, a URL's timeout=30 retries=5 (cache_mem=64M on the local one)
#     read_timeout=60, the given ones as given;
#   - one memory budget: stats.json's cache_mem and each cache's share
#     (the fetched blocks', after reads over HTTP); cache= and
#     span_cache=, the old names, warned about and summed into it.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/http_lib.sh"
sfs_setup
T=$SFS_TMP
STAT=$SFS_BIN/samplefs-stat

# ---- fixtures: members of known sizes; the sources ----
mkdir -p "$T/files/sub" "$T/clash" "$T/web"
SIZES="1 700 4097 9000 70000 200001"
for n in $SIZES; do head -c "$n" /dev/urandom >"$T/files/f_$n"; done
head -c 300000 /dev/urandom >"$T/files/sub/big"
WEIRD=$T/'we"ird\na
me.tar'
tar -C "$T/files" -cf "$WEIRD" . || exit 1
printf 'a member, not the control directory\n' >"$T/clash/.samplefs"
printf 'x\n' >"$T/clash/x"
tar -C "$T/clash" -cf "$T/clash.tar" .samplefs x || exit 1
# over HTTP: the same and, last, a member no index build reads ahead into
mkdir -p "$T/files2" && cp -a "$T/files/." "$T/files2/" &&
	head -c $((8 << 20)) /dev/urandom >"$T/files2/z_big" &&
	tar -C "$T/files2" -cf "$T/web/a.tar" . || exit 1

# js FILE KEY: a number of a stats.json, read by Python's json (the oracle
# that the document is JSON); KEY a dotted path, sources.0.retries
js() {
	"$PY" - "$1" "$2" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
for k in sys.argv[2].split("."):
    d = d[int(k)] if isinstance(d, list) else d[k]
print(d)
PY
}
snap() { cat "$1/.samplefs/stats.json" >"$2"; }
# delta A B KEY WANT: KEY grew by WANT from snapshot A to B
delta() {
	local a b
	a=$(js "$1" "$3") && b=$(js "$2" "$3") || return 1
	[ "$((b - a))" -eq "$4" ] || { echo "    $3: $a -> $b, want +$4"; return 1; }
}

# ---- local ----
M=$T/m
mkdir -p "$M"
check "mount a tar whose name has a quote, a backslash and a newline" \
	sfs_mount "$WEIRD" "$M" -o index_dir=$T/idx
snap "$M" "$T/s0.json"
check "stats.json is JSON; its source name is the tar's" \
	test "$(js "$T/s0.json" sources.0.name)" = "$(realpath "$WEIRD")"
want_bytes=0
for n in $SIZES; do want_bytes=$((want_bytes + $(stat -c %s "$T/files/f_$n"))); done
reads_ok() { for n in $SIZES; do cmp -s "$M/f_$n" "$T/files/f_$n" || return 1; done; }
check "the members read as GNU tar's inputs" reads_ok
snap "$M" "$T/s1.json"
check "files_read grew by the $(wc -w <<<"$SIZES") members" delta "$T/s0.json" "$T/s1.json" files_read "$(wc -w <<<"$SIZES")"
check "bytes_served grew by their sizes ($want_bytes)" delta "$T/s0.json" "$T/s1.json" bytes_served "$want_bytes"
check "no read error" delta "$T/s0.json" "$T/s1.json" read_errors 0
check "a local source sends no request" delta "$T/s0.json" "$T/s1.json" sources.0.requests 0
cp "$M/.samplefs/metrics" "$T/metrics"
metrics_ok() {
	"$PY" - "$T/metrics" "$T/s1.json" <<'PY'
import json, re, sys
line = re.compile(r'^samplefs_[a-z_]+(\{[a-z]+="([^"\\]|\\.)*"\})? [0-9.e+-]+$')
vals = {}
for l in open(sys.argv[1]).read().splitlines():
    if not l or l.startswith("# HELP ") or l.startswith("# TYPE "):
        continue
    if not line.match(l):
        sys.exit("bad line: %r" % l)
    k, v = l.rsplit(" ", 1)
    vals[k] = float(v)
d = json.load(open(sys.argv[2]))
assert vals["samplefs_bytes_served_total"] == d["bytes_served"], vals
assert vals["samplefs_files_read_total"] == d["files_read"], vals
assert vals['samplefs_read_wait_seconds_bucket{le="+Inf"}'] == d["waits"], vals
PY
}
check "metrics: Prometheus lines, the same numbers as stats.json" metrics_ok
check "config names the source" grep -qxF "source=$(realpath "$WEIRD")" "$M/.samplefs/config"
# issue 25 item 5: the options that apply, with the values in force
# (docs/options.md's defaults), not all 40 as 0 or empty
config_has() { local l; for l in "${@:2}"; do grep -qxF -- "$l" "$1" || { echo "    no '$l' in:"; sed 's/^/      /' "$1"; return 1; }; done; }
config_lacks() { ! grep -q -- "$2" "$1" || { echo "    '$2' in:"; sed 's/^/      /' "$1"; return 1; }; }
cp "$M/.samplefs/config" "$T/config.local"
check "config (local tar): the values in force" config_has "$T/config.local" layout=tar workers=4 poll=50 readdirplus=adaptive recursive=1 cache_mem=64M
check "config (local tar): no URL, bucket, compressed-data or other layout's option" \
	config_lacks "$T/config.local" '^\(timeout\|retries\|region\|profile\|span\|per_class\|shard_size\)='
check "config: no option shown twice" test "$(grep -o "^[a-z_]*=" "$T/config.local" | sort | uniq -d)" = ""
check "version is samplefs --version's" \
	test "samplefs version $(cat "$M/.samplefs/version")" = "$("$SAMPLEFS" --version | grep '^samplefs version')"
check "ls -a of the root does not show .samplefs" \
	bash -c "! ls -a '$M' | grep -q samplefs"
check "stat .samplefs/stats.json" bash -c "stat '$M/.samplefs/stats.json' >/dev/null"
check "ls .samplefs: its four files" \
	test "$(ls "$M/.samplefs" | tr '\n' ' ')" = "config metrics stats.json version "
check "touch in .samplefs fails" bash -c "! touch '$M/.samplefs/new' 2>/dev/null"
check "writing stats.json fails" bash -c "! echo x 2>/dev/null >'$M/.samplefs/stats.json'"
check "mkdir in .samplefs fails" bash -c "! mkdir '$M/.samplefs/d' 2>/dev/null"
check "rm of stats.json fails" bash -c "! rm -f '$M/.samplefs/stats.json' 2>/dev/null"
check "chmod of stats.json fails" bash -c "! chmod 666 '$M/.samplefs/stats.json' 2>/dev/null"
check "mv of .samplefs fails" bash -c "! mv '$M/.samplefs' '$M/other' 2>/dev/null"
check "stats.json still there" test -s "$M/.samplefs/stats.json"
stat_table() {
	local out
	out=$("$STAT" "$M" 0.2 2) || return 1
	[ "$(grep -c 'files/s' <<<"$out")" -eq 1 ] && [ "$(wc -l <<<"$out")" -eq 3 ] ||
		{ echo "    $out"; return 1; }
}
check "samplefs-stat MOUNT 0.2 2: a header and two rows" stat_table
check "unmount" sfs_umount "$M"

# ---- fresh snapshots under load ----
LOADERS=()
stop_loaders() { local p; for p in "${LOADERS[@]}"; do kill "$p" 2>/dev/null; wait "$p" 2>/dev/null; done; LOADERS=(); }
SFS_CLEANUP_HOOKS+=(stop_loaders)
# load MNT: three readers of every member, each dropping the pages it read
# so that its next pass reaches samplefs again
load() {
	local i
	for i in 1 2 3; do
		"$PY" -c 'import os, sys
while True:
    for p in sys.argv[1:]:
        fd = os.open(p, os.O_RDONLY)
        while os.read(fd, 1 << 16):
            pass
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        os.close(fd)' "$1"/f_* "$1"/sub/big 2>/dev/null &
		LOADERS+=($!)
	done
}
# loading: the readers have begun (files_read > 0), within 60 s: on a
# loaded machine the three interpreters can take longer to start than
# ctl_fresh.py takes for its 60 rounds
loading() {
	local i
	for i in $(seq 1 600); do
		[ "$(js "$1/.samplefs/stats.json" files_read 2>/dev/null || echo 0)" -gt 0 ] && return 0
		sfs_nap 0.1
	done
	return 1
}
for rdp in always adaptive; do
	check "mount (readdirplus=$rdp)" sfs_mount "$WEIRD" "$M" -o index_dir=$T/idx,readdirplus=$rdp
	load "$M"
	check "readdirplus=$rdp: the readers have begun" loading "$M"
	check "readdirplus=$rdp, under load: each open of stats.json and metrics is a fresh whole snapshot" \
		"$PY" "$SFS_ROOT/tests/integration/ctl_fresh.py" "$M/.samplefs" 60 grow
	stop_loaders
	check "unmount" sfs_umount "$M"
done

# ---- a member named .samplefs ----
check "mount a tar with a .samplefs member" sfs_mount "$T/clash.tar" "$M" -o index_dir=$T/idx
check "the member keeps its name and bytes" cmp "$M/.samplefs" "$T/clash/.samplefs"
check "one warning names the clash" \
	test "$(grep -c 'member named .samplefs at its root.*control directory is .samplefs-ctl' "$(sfs_log "$M")")" -eq 1
check "the control directory is .samplefs-ctl" test -s "$M/.samplefs-ctl/stats.json"
check "samplefs-stat finds it" "$STAT" "$M" 0.1 1
check "unmount" sfs_umount "$M"

# ---- over nginx ----
check "nginx up" http_start "$T/web"
# cache_mem=1M: a build over a link streams through the tar and its
# blocks stay in the memory cache (64M by default would hold all of
# a.tar), and the reads below must reach nginx
check "mount over HTTP" sfs_mount "$(http_url a.tar)" "$M" -o index_dir=$T/idx-h,cache_mem=1M
# settled: the build's read-ahead requests have landed (nginx's log and
# the daemon's count both unchanged over 0.3 s); sets mark and base
settled() {
	local i n1 n2 r2
	for i in $(seq 1 50); do
		mark=$(http_log_mark) && snap "$M" "$T/h.json" || return 1
		n1=$(http_log_lines 0 | wc -l) base=$(js "$T/h.json" sources.0.requests)
		sfs_nap 0.3
		snap "$M" "$T/h.json" || return 1
		n2=$(http_log_lines 0 | wc -l) r2=$(js "$T/h.json" sources.0.requests)
		[ "$n2" = "$n1" ] && [ "$r2" = "$base" ] && return 0
	done
	return 1
}
check "the mount's requests settle" settled
cp "$M/.samplefs/config" "$T/config.http"
check "config (URL): the URL options' values in force" \
	config_has "$T/config.http" timeout=30 retries=5 cache_mem=1M read_timeout=60 build_timeout=600 workers=16
check "config (URL): no bucket option" config_lacks "$T/config.http" '^\(region\|profile\|endpoint\)='

check "a member over HTTP" cmp "$M/z_big" "$T/files2/z_big"
# requests_match: the daemon's new requests equal those nginx logged
# (waits for its read-ahead to land; the equality is the check)
requests_match() {
	local i got want
	for i in $(seq 1 50); do
		snap "$M" "$T/h.json"
		got=$(( $(js "$T/h.json" sources.0.requests) - base ))
		want=$(http_log_lines "$mark" | wc -l)
		[ "$got" -eq "$want" ] && [ "$got" -gt 0 ] && return 0
		sfs_nap 0.2
	done
	echo "    requests: samplefs $got, nginx $want"
	return 1
}
check "requests since: as many as nginx logged" requests_match
# its blocks into the (1M) memory cache, after z_big's 8 MB went through it
check "a member read once" cmp "$M/f_70000" "$T/files/f_70000"
snap "$M" "$T/h0.json"
check "drop the member's pages" sfs_evict "$M/f_70000"
check "read again" cmp "$M/f_70000" "$T/files/f_70000"
snap "$M" "$T/h1.json"
mem_hit() {
	local a b
	a=$(js "$T/h0.json" sources.0.mem_hits) b=$(js "$T/h1.json" sources.0.mem_hits)
	[ "$b" -gt "$a" ] || { echo "    mem_hits $a -> $b"; return 1; }
}
check "... from the memory cache: mem_hits grew" mem_hit
check "... and no request" delta "$T/h0.json" "$T/h1.json" sources.0.requests 0
# one memory budget (cache_mem=): stats.json says it and each cache's
# share; the fetched blocks are there, and all shares fit in it
caches_ok() {
	"$PY" - "$T/h1.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
assert d["cache_mem"] == 1 << 20, d.get("cache_mem")
c = d["caches"]
assert c["blocks"]["bytes"] > 70000 and c["blocks"]["entries"] >= 3, c
assert sum(v["bytes"] for v in c.values()) <= d["cache_mem"], c
PY
}
check "stats.json: cache_mem (1M here) and the fetched blocks' share of it" caches_ok
check "unmount" sfs_umount "$M"

# cache= and span_cache=, the old names: taken, with a warning each, as
# one budget of their sum
check "mount with cache=8M,span_cache=4M" \
	sfs_mount "$(http_url a.tar)" "$M" -o index_dir=$T/idx-h,cache=8M,span_cache=4M
check "config: cache_mem=12M" config_has "$M/.samplefs/config" cache_mem=12M
check "stats.json: cache_mem of 12 MiB" \
	test "$(js "$M/.samplefs/stats.json" cache_mem)" -eq $((12 << 20))
for o in cache=8M span_cache=4M; do
	check "-o $o: warned once, naming cache_mem=" \
		test "$(grep -c -- "-o $o: every cache of a mount now shares one budget, cache_mem=" "$(sfs_log "$M")")" -eq 1
done
check "unmount" sfs_umount "$M"

# ---- retries through the fault proxy ----
check "fault proxy up" proxy_start "$(http_url /)"
check "mount through the proxy (retries=3)" \
	sfs_mount "$(proxy_url a.tar)" "$M" -o index_dir=$T/idx-p,retries=3,timeout=5,cache_mem=1M
check "config: retries=3, timeout=5 as given, read_timeout=10 (2 x timeout)" \
	config_has "$M/.samplefs/config" retries=3 timeout=5 read_timeout=10
snap "$M" "$T/p0.json"
f0=$(proxy_stat faults)
proxy_ctl "fault?mode=500&n=2&method=GET" >/dev/null
check "a member through two 500s" cmp "$M/z_big" "$T/files2/z_big"
snap "$M" "$T/p1.json"
f1=$(proxy_stat faults)
check "the proxy injected 2 faults" test "$((f1 - f0))" -eq 2
check "retries grew by them" delta "$T/p0.json" "$T/p1.json" sources.0.retries 2
check "no request failed" delta "$T/p0.json" "$T/p1.json" sources.0.errors 0
check "unmount" sfs_umount "$M"
sfs_done
