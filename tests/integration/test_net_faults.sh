#!/usr/bin/env bash
# Network faults between samplefs and nginx (issue 25, item 4), through
# tests/integration/fault_proxy.py:
#   - a byte of a tar header inverted on its way during the index build,
#     once (the first fetch of that byte): the header is fetched again past
#     the caches and the mount lists every member, with tarfile's bytes;
#   - the same byte inverted on every fetch: the mount keeps the members
#     before it, but does not save that cut index, so a mount after the
#     proxy is fixed lists every member;
#   - a server that stopped answering comes back: a read of another member
#     in the same 32 KiB block as one that just failed is answered (the
#     failure is held for the same bytes only, for the kernel's re-ask);
#   - a frozen server and three readers for one worker (workers=1): each
#     read gives EIO within read_timeout of its arrival (plus slack), not
#     read_timeout after a worker took it (time queued counted);
#   - a build's read that fails a round (retries spent) and passes the
#     next logs a warning, no error; one that gives up says how many
#     rounds, in the singular for one.
# Oracles: Python's tarfile on the file nginx serves.  Time bounds are
# correctness bounds with generous slack (a noisy VM, the ASan daemon).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/http_lib.sh"
sfs_setup
T=$SFS_TMP
W=$T/www
mkdir -p "$W"
# flip.tar: 400 small members (headers dense); prints the header offset of
# member 200.  small.tar: 3000 members of 2 KiB (7.5 MB, over cache_mem);
# prints two members whose bytes share a 32 KiB block, and three far apart
"$PY" - "$W" >"$T/fixture.txt" <<'PY' || { echo "not ok - fixtures"; exit 1; }
import io, random, sys, tarfile
rng = random.Random(25)
def add(t, name, data):
    ti = tarfile.TarInfo(name); ti.size = len(data); ti.mtime = 1700000000
    t.addfile(ti, io.BytesIO(data))
with tarfile.open(sys.argv[1] + "/flip.tar", "w") as t:
    for i in range(400):
        add(t, "d%d/f%03d.bin" % (i % 7, i), rng.randbytes(rng.randrange(10, 6000)))
mid = tarfile.open(sys.argv[1] + "/flip.tar").getmembers()[200]
with tarfile.open(sys.argv[1] + "/small.tar", "w") as t:
    for i in range(3000):
        add(t, "s%04d.bin" % i, rng.randbytes(2048))
ms = tarfile.open(sys.argv[1] + "/small.tar").getmembers()
pair = next((a, b) for a, b in zip(ms[1000:], ms[1001:])
            if a.offset_data // 32768 == (b.offset_data + b.size - 1) // 32768)
print(mid.offset, mid.name, pair[0].name, pair[1].name, ms[200].name, ms[1500].name, ms[2800].name)
PY
read -r FLIP_AT FLIP_NAME HELD_A HELD_B FAR1 FAR2 FAR3 <"$T/fixture.txt"
# tree MNT (or a .tar with -t): "path size sha1" of every file
TREE='import hashlib, os, sys, tarfile
out = []
if sys.argv[1] == "-t":
    t = tarfile.open(sys.argv[2])
    for m in t.getmembers():
        if m.isfile():
            d = t.extractfile(m).read()
            out.append("%s %d %s" % (m.name, len(d), hashlib.sha1(d).hexdigest()))
else:
    for d, _, fs in os.walk(sys.argv[1]):
        for f in fs:
            p = os.path.join(d, f)
            data = open(p, "rb").read()
            out.append("%s %d %s" % (os.path.relpath(p, sys.argv[1]), len(data), hashlib.sha1(data).hexdigest()))
print("\n".join(sorted(out)))'
tree() { "$PY" -c "$TREE" "$@"; }
tree -t "$W/flip.tar" >"$T/flip.oracle" || { echo "not ok - oracle"; exit 1; }
member() {
	"$PY" -c 'import sys, tarfile
sys.stdout.buffer.write(tarfile.open(sys.argv[1]).extractfile(sys.argv[2]).read())' "$W/small.tar" "$1"
}
now() { echo "${EPOCHREALTIME/./}"; }	# microseconds
secs() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f", (b - a) / 1e6 }'; }

check "nginx up" http_start "$W"
check "fault proxy up" proxy_start "$(http_url /)"
FLIP=$(proxy_url /flip.tar)
# the byte inverted: one of the name's, 20 bytes into the header of member 200
AT=$((FLIP_AT + 20))
echo "    flipping byte $AT (header of $FLIP_NAME at $FLIP_AT)"

# 1. inverted once: read again, and every member is there
check "arm: byte $AT inverted in the first GET holding it" \
	proxy_ctl "fault?mode=flip&at=$AT&n=1&match=/flip.tar" >/dev/null
check "mount over a byte inverted once" sfs_mount "$FLIP" "$T/m1" -o "layout=tar,index_dir=$T/i1"
check "the proxy did invert it" eval '[ "$(proxy_stat faults)" = 1 ]'
check "every member, with tarfile's bytes" cmp <(tree "$T/m1") "$T/flip.oracle"
check "the log says the header was read again and passed" \
	grep -q "warning: .*flip.tar: the header at offset $FLIP_AT failed its checksum and passed when read again" "$(sfs_log "$T/m1")"
check "unmount" sfs_umount "$T/m1"

# 2. inverted on every fetch: the cut index is used, not saved
proxy_ctl "reset" >/dev/null
check "arm: byte $AT inverted in every GET holding it" \
	proxy_ctl "fault?mode=flip&at=$AT&n=-1&match=/flip.tar" >/dev/null
check "mount over a byte inverted every time" sfs_mount "$FLIP" "$T/m2" -o "layout=tar,index_dir=$T/i2"
L=$(sfs_log "$T/m2")
check "it was fetched twice" eval '[ "$(proxy_stat faults)" -ge 2 ]'
check "the log says the header is bad though read twice" \
	grep -q "bad header checksum at offset $FLIP_AT, read twice from the source" "$L"
check "the log says the cut index is not saved" grep -q "is incomplete .*not saved" "$L"
check "the mount has the 200 members before the damage" \
	eval '[ "$(find "$T/m2" -type f | wc -l)" = 200 ]'
check "no index saved" eval '! ls "$T/i2"/*.sfsidx >/dev/null 2>&1'
check "unmount" sfs_umount "$T/m2"
proxy_ctl "reset" >/dev/null
check "mount again, the proxy fixed" sfs_mount "$FLIP" "$T/m2" -o "layout=tar,index_dir=$T/i2"
check "every member, with tarfile's bytes" cmp <(tree "$T/m2") "$T/flip.oracle"
check "unmount" sfs_umount "$T/m2"

# 3. a failure is held for its own bytes only
SMALL=$(proxy_url /small.tar)
check "mount small.tar (read_timeout=2)" \
	sfs_mount "$SMALL" "$T/m3" -o "layout=tar,read_timeout=2,cache_mem=1M,index_dir=$T/i3"
check "a server that reads requests and never answers" \
	proxy_ctl "fault?mode=hang&n=-1&method=GET&max_s=30" >/dev/null
check "frozen: $HELD_A gives EIO" eval '! cat "$T/m3/$HELD_A" >/dev/null 2>&1'
proxy_ctl "fault?mode=off" >/dev/null
check "server back: $HELD_B, in the same block, reads at once with tarfile's bytes" \
	cmp <(cat "$T/m3/$HELD_B") <(member "$HELD_B")
check "and $HELD_A reads once asked again after the hold" \
	eval 'sfs_nap 2.5; cmp <(cat "$T/m3/$HELD_A") <(member "$HELD_A")'
check "unmount" sfs_umount "$T/m3"

# 4. read_timeout bounds the whole read, time queued for a worker included
RT=4 BOUND=7	# 1.5 x read_timeout + 1 s; before: 8, 12 and 16 s
check "mount small.tar (workers=1, read_timeout=$RT)" \
	sfs_mount "$SMALL" "$T/m4" -o "layout=tar,workers=1,read_timeout=$RT,cache_mem=1M,index_dir=$T/i3"
check "a server that reads requests and never answers" \
	proxy_ctl "fault?mode=hang&n=-1&method=GET&max_s=60" >/dev/null
t0=$(now)
pids=()
for f in "$FAR1" "$FAR2" "$FAR3"; do
	( s=$(now); cat "$T/m4/$f" >/dev/null 2>"$T/$f.err"; echo "$? $(secs "$s" "$(now)")" >"$T/$f.rc" ) &
	pids+=($!)
done
wait "${pids[@]}"
for f in "$FAR1" "$FAR2" "$FAR3"; do
	read -r rc took <"$T/$f.rc"
	echo "    $f: exit $rc after $took s: $(head -c 100 "$T/$f.err")"
	check "frozen, three readers, one worker: $f gives EIO within $BOUND s" \
		eval '[ "$rc" != 0 ] && grep -q "Input/output error" "$T/$f.err" && awk -v t="$took" -v b="$BOUND" "BEGIN { exit !(t < b) }"'
done
proxy_ctl "fault?mode=off" >/dev/null
check "server back: the right bytes" eval 'sfs_nap 2.5; cmp <(cat "$T/m4/$FAR2") <(member "$FAR2")'
check "unmount" sfs_umount "$T/m4"

# 5. messages of a build whose read fails a round: a warning, no error,
# when the next round gets it; an error naming the rounds right when the
# build gives up
check "arm: 503 for the next 2 GETs (retries=1: one round's attempts)" \
	proxy_ctl "fault?mode=503&n=2&method=GET&match=/flip.tar" >/dev/null
check "mount: the build's first read fails a round, then passes" \
	sfs_mount "$FLIP" "$T/m5" -o "layout=tar,retries=1,index_dir=$T/i5"
L=$(sfs_log "$T/m5")
sed -n 's/^/    /; /round/p' "$L"
check "the failed round is a warning naming the bytes, the request and its 2 attempts" \
	grep -q "warning: .*flip.tar: bytes [0-9]*-[0-9]*: the request for bytes [0-9]*-[0-9]* failed: .*503 (2 attempts); the index build sends it again" "$L"
check "and no error is logged by the mount, which succeeded" eval '! grep -q "error: " "$L"'
check "every member" cmp <(tree "$T/m5") "$T/flip.oracle"
check "unmount" sfs_umount "$T/m5"
check "arm: 503 for every GET" proxy_ctl "fault?mode=503&n=-1&method=GET" >/dev/null
check "a build that gives up says how many rounds, and since when" \
	expect_fail "error: .*flip.tar: bytes 0-[0-9]*: .*503 (2 attempts); still failing after [0-9]* rounds\?, and the index build gives up: it started [0-9]* s ago (build_timeout=2 s)" \
	sfs_mount "$FLIP" "$T/m6" -o "layout=tar,retries=1,build_timeout=2,index_dir=$T/i6"
check "no \"1 rounds\" nor \"1 attempts\" in the logs" \
	eval '! grep -h " 1 rounds\| 1 attempts" "$SFS_TMP"/daemon-*.log'
proxy_ctl "reset" >/dev/null
sfs_done
