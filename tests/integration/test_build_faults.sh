#!/usr/bin/env bash
# Index builds over a flaky store (issue 17, item 4), through
# tests/integration/fault_proxy.py in front of nginx, on a tar of nested
# tars (ImageNet's train layout) and plain members:
#   - half of the GETs faulted with a seeded mix (500, 503, 429, resets,
#     bodies cut with and without Content-Length, trickles, stops, delays):
#     the build completes and the tree (names, sizes, bytes) equals Python
#     tarfile's reading of the tar, and its log holds no error (issue 25);
#   - a build killed with kill -9 mid-way (requests slowed by the proxy's
#     delay) leaves a checkpoint; the next mount says it resumes and from
#     which byte (a top-level member's GNU long-name header), and its tree, inode numbers and bytes equal those of an
#     index built from scratch and the oracle's;
#   - that checkpoint, once the source changed (another ETag), is dropped
#     (said), not resumed;
#   - a checkpoint with a damaged byte is ignored with a warning, and the
#     build starts over and is right.
# No timing is asserted: the proxy's faults only make the build slow.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/http_lib.sh"
sfs_setup
T=$SFS_TMP
W=$T/www
mkdir -p "$W"
"$PY" - "$W/train.tar" <<'PY' || { echo "not ok - fixtures"; exit 1; }
import io, random, sys, tarfile
rng = random.Random(17)
def add(t, name, data):
    ti = tarfile.TarInfo(name); ti.size = len(data); ti.mtime = 1700000000 + len(name)
    t.addfile(ti, io.BytesIO(data))
# top-level names over 100 bytes: each member's headers start with a GNU
# long name ('L'), where a resumed walk must start
LONG = "l" * 100
with tarfile.open(sys.argv[1], "w", format=tarfile.GNU_FORMAT) as out:
    for c in range(8):
        for i in range(5):
            add(out, "extra/%s%d_%03d.bin" % (LONG, c, i), rng.randbytes(rng.randrange(0, 30000)))
        buf = io.BytesIO()
        with tarfile.open(fileobj=buf, mode="w") as inner:
            for i in range(120):
                add(inner, "n%08d_%d.JPEG" % (c, i), rng.randbytes(rng.randrange(100, 12000)))
        add(out, "n%08d_%s.tar" % (c, LONG), buf.getvalue())
PY
# ORACLE: "path size sha1" of every file of the tree the tar mounts as
# (nested tars expanded into directories named without .tar), from tarfile
ORACLE='import hashlib, io, sys, tarfile
def walk(t, prefix, out):
    for m in t.getmembers():
        if not m.isfile():
            continue
        data = t.extractfile(m).read()
        if m.name.endswith(".tar") and prefix == "":
            walk(tarfile.open(fileobj=io.BytesIO(data)), m.name[:-4] + "/", out)
        else:
            out.append("%s%s %d %s" % (prefix, m.name, len(data), hashlib.sha1(data).hexdigest()))
out = []
walk(tarfile.open(sys.argv[1]), "", out)
print("\n".join(sorted(out)))'
"$PY" -c "$ORACLE" "$W/train.tar" >"$T/oracle.txt" || { echo "not ok - oracle"; exit 1; }
# tree MNT: the same lines from a mount
tree() {
	"$PY" -c 'import hashlib, os, sys
out = []
for d, _, fs in os.walk(sys.argv[1]):
    for f in fs:
        p = os.path.join(d, f)
        data = open(p, "rb").read()
        out.append("%s %d %s" % (os.path.relpath(p, sys.argv[1]), len(data), hashlib.sha1(data).hexdigest()))
print("\n".join(sorted(out)))' "$1"
}
# meta MNT: every entry's path, inode, type, size, mtime (the index's shape)
meta() { (cd "$1" && find . -printf '%P %i %y %s %T@\n' | sort); }
ckpt_of() { ls "$1"/*.ckpt.* 2>/dev/null | grep -v '\.tmp$' | head -1; }

check "nginx up" http_start "$W"
check "fault proxy up" proxy_start "$(http_url /)"
URL=$(proxy_url /train.tar)
OPTS=layout=tar,quiet,cache_mem=1M

# 1. 40 % of the GETs faulted
check "40 % of the GETs faulted (seeded mix)" \
	proxy_ctl "chaos?rate=0.4&seed=7&max_s=5&delay_ms=1000" >/dev/null
check "the build through the faults completes" sfs_mount "$URL" "$T/m1" -o "layout=tar,quiet,index_dir=$T/i1"
echo "    $(proxy_stat faults) of $(proxy_stat requests) requests faulted"
check "its tree equals tarfile's" cmp <(tree "$T/m1") "$T/oracle.txt"
check "no checkpoint is left after a build that completed" eval '[ -z "$(ckpt_of "$T/i1")" ]'
# issue 25: a failed round the build then sent again is a warning; a mount
# that exits 0 logs no error
check "the build that completed logged no error" eval '! grep "error: " "$(sfs_log "$T/m1")"'
check "unmount" sfs_umount "$T/m1"
proxy_ctl "chaos?rate=0" >/dev/null

# the reference: an index built from scratch, no faults
check "a build from scratch (reference)" sfs_mount "$URL" "$T/ref" -o "$OPTS,index_dir=$T/iref"

# 2. kill -9 mid-way, then resume
proxy_ctl "delay?ms=400" >/dev/null
mkdir -p "$T/m2"
"$SAMPLEFS" -f -o "$OPTS,index_dir=$T/i2" "$URL" "$T/m2" 2>"$T/killed.log" &
pid=$!
SFS_PID_OF[killed]=$pid
marked=
for ((i = 0; i < 1200; i++)); do	# until the first mark is on disk
	c=$(ckpt_of "$T/i2")
	[ -n "$c" ] && [ "$(stat -c %s "$c")" -gt 1000 ] && { marked=1; break; }
	kill -0 "$pid" 2>/dev/null || break
	sfs_nap 0.05
done
sfs_nap 0.5
alive=; kill -0 "$pid" 2>/dev/null && ! sfs_mounted "$T/m2" && alive=1
kill -9 "$pid"; wait "$pid" 2>/dev/null; unset "SFS_PID_OF[killed]"
check "the build killed with kill -9 had saved progress" eval '[ -n "$marked" ] && [ -n "$(ckpt_of "$T/i2")" ]'
check "and was killed before it was done" eval '[ -n "$alive" ] && ! ls "$T/i2"/*.sfsidx >/dev/null 2>&1'
cp "$(ckpt_of "$T/i2")" "$T/saved.ckpt"
CK=$(basename "$(ckpt_of "$T/i2")")
proxy_ctl "delay?ms=0" >/dev/null
check "the next mount builds" sfs_mount "$URL" "$T/m2" -o "$OPTS,index_dir=$T/i2"
L=$(sfs_log "$T/m2")
check "it says it resumes, and from where" grep -q "resuming the index build at byte [1-9][0-9]* of" "$L"
grep -o "resuming the index build.*" "$L" | sed 's/^/    /'
check "the resumed index has the tree, inodes and times of one built from scratch" \
	cmp <(meta "$T/m2") <(meta "$T/ref")
check "and the bytes tarfile reads" cmp <(tree "$T/m2") "$T/oracle.txt"
check "the checkpoint is gone once the index is built" eval '[ -z "$(ckpt_of "$T/i2")" ]'
check "unmount" sfs_umount "$T/m2"

# not_resumed N WHAT PATTERN: a mount with index_dir $T/iN, which holds
# the saved checkpoint as WHAT says, must say PATTERN, not resume, and
# give the right tree
not_resumed() {
	local m=$T/m$1 L
	check "mount with $2" sfs_mount "$URL" "$m" -o "$OPTS,index_dir=$T/i$1"
	L=$(sfs_log "$m")
	check "$2: said ($3)" grep -q "$3" "$L"
	check "$2: not resumed" eval '! grep -q "resuming the index build" "$L"'
	check "$2: the tree is right" cmp <(tree "$m") "$T/oracle.txt"
	check "unmount" sfs_umount "$m"
}

# 3. a checkpoint of another version of the source is not used
mkdir -p "$T/i3"
cp "$T/saved.ckpt" "$T/i3/$CK"
proxy_ctl "etag?change=1" >/dev/null
not_resumed 3 "a checkpoint of the source before it changed" "checkpoint of another version.*dropped"
proxy_ctl "etag?gen=0" >/dev/null

# 4. a damaged checkpoint is ignored with a warning
mkdir -p "$T/i4"
cp "$T/saved.ckpt" "$T/i4/$CK"
"$PY" -c 'import os, sys
with open(sys.argv[1], "r+b") as f:	# one byte, halfway, inverted
    f.seek(os.path.getsize(sys.argv[1]) // 2); b = f.read(1)
    f.seek(-1, 1); f.write(bytes([b[0] ^ 0xff]))' "$T/i4/$CK"
not_resumed 4 "a damaged checkpoint" "warning: .*damaged checkpoint.*ignored"
check "unmount the reference" sfs_umount "$T/ref"
sfs_done
