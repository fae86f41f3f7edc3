#!/usr/bin/env bash
# Index builds that stream when streaming is cheaper (issue 26), through
# tests/integration/fault_proxy.py in front of nginx, on tars of members of
# real size (60-160 KB, as ImageNet's JPEGs):
#   - behind the proxy's 20 ms delay (an object store's time to first
#     byte), a tar of 300 such members: the tree equals Python tarfile's
#     listing (names, sizes) and the bytes of every 10th member, and the
#     build sent fewer than one GET per 4 members (a walk that hops from
#     header to header sends about one a member: a round trip each);
#   - the same for an ImageNet-shaped tar of class tars (nested tars
#     expanded into directories);
#   - through /__chaos faulting half of the GETs (5xx, resets, bodies cut
#     with and without Content-Length, trickles, stops, delays): the build
#     completes, its tree is tarfile's and it logged no error;
#   - a tar of 10 members of 8 MB, no delay (a round trip of loopback
#     delivers far less): the build hops over them, fetching less than a
#     quarter of the tar's bytes, and its tree is tarfile's.
# No timing is asserted: the delay only makes hops costly, and the request
# count is what says whether the build streamed.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/http_lib.sh"
sfs_setup
T=$SFS_TMP
W=$T/www
mkdir -p "$W"
"$PY" - "$W" <<'PY' || { echo "not ok - fixtures"; exit 1; }
import io, random, sys, tarfile
rng = random.Random(26)
def add(t, name, data):
    ti = tarfile.TarInfo(name); ti.size = len(data); ti.mtime = 1700000000 + len(data) % 1000
    t.addfile(ti, io.BytesIO(data))
def jpeg():
    return rng.randbytes(rng.randrange(60000, 160000))
with tarfile.open(sys.argv[1] + "/flat.tar", "w") as out:
    for i in range(300):
        add(out, "d%d/s%05d.jpg" % (i % 7, i), jpeg())
with tarfile.open(sys.argv[1] + "/train.tar", "w") as out:
    for c in range(6):
        buf = io.BytesIO()
        with tarfile.open(fileobj=buf, mode="w") as inner:
            for i in range(50):
                add(inner, "n%08d_%d.JPEG" % (c, i), jpeg())
        add(out, "n%08d.tar" % c, buf.getvalue())
with tarfile.open(sys.argv[1] + "/large.tar", "w") as out:
    for i in range(10):
        add(out, "large%d.bin" % i, rng.randbytes(8 << 20))
PY
# ORACLE TAR: "path size" of every file of the tree the tar mounts as
# (nested tars expanded into directories named without .tar), then
# "path sha1" of every 10th, from tarfile
ORACLE='import hashlib, io, sys, tarfile
def walk(t, prefix, out):
    for m in t.getmembers():
        if not m.isfile():
            continue
        data = t.extractfile(m).read()
        if m.name.endswith(".tar") and prefix == "":
            walk(tarfile.open(fileobj=io.BytesIO(data)), m.name[:-4] + "/", out)
        else:
            out.append((prefix + m.name, data))
out = []
walk(tarfile.open(sys.argv[1]), "", out)
out.sort()
for p, d in out:
    print(p, len(d))
for p, d in out[::10]:
    print(p, hashlib.sha1(d).hexdigest())'
# tree MNT: the same lines from a mount (sizes by stat, bytes read)
tree() {
	"$PY" -c 'import hashlib, os, sys
out = []
for d, _, fs in os.walk(sys.argv[1]):
    for f in fs:
        p = os.path.join(d, f)
        out.append((os.path.relpath(p, sys.argv[1]), p))
out.sort()
for r, p in out:
    print(r, os.stat(p).st_size)
for r, p in out[::10]:
    print(r, hashlib.sha1(open(p, "rb").read()).hexdigest())' "$1"
}
for t in flat train large; do
	"$PY" -c "$ORACLE" "$W/$t.tar" >"$T/$t.oracle" || { echo "not ok - oracle of $t.tar"; exit 1; }
done

check "nginx up" http_start "$W"
check "fault proxy up" proxy_start "$(http_url /)"

# built N TAR MEMBERS: mounts TAR (through the proxy as it is set) at
# $T/mN, checks its tree against tarfile's and that the build sent fewer
# than one GET per 4 of its MEMBERS
built() {
	local m=$T/m$1 gets bound=$(($3 / 4))
	proxy_ctl "stats?reset=1" >/dev/null
	check "$2: the build through the proxy completes" \
		sfs_mount "$(proxy_url "/$2")" "$m" -o "layout=tar,quiet,index_dir=$T/i$1"
	gets=$(proxy_stat method.GET)
	echo "    $2: $gets GETs for $3 members, $(proxy_stat data_bytes) bytes"
	check "$2: fewer than one GET per 4 members ($gets for $3)" eval "[ $gets -lt $bound ]"
	proxy_ctl "delay?ms=0" >/dev/null
	check "$2: its tree is tarfile's (names, sizes, bytes of every 10th)" \
		cmp <(tree "$m") "$T/${2%.tar}.oracle"
	check "unmount" sfs_umount "$m"
}

# 1. a tar of 300 members of 60-160 KB, 20 ms a request
proxy_ctl "delay?ms=20" >/dev/null
built 1 flat.tar 300
# 2. the ImageNet shape: 6 class tars of 50 such members
proxy_ctl "delay?ms=20" >/dev/null
built 2 train.tar 300

# 3. half of the GETs faulted
check "50 % of the GETs faulted (seeded mix)" \
	proxy_ctl "chaos?rate=0.5&seed=26&max_s=5&delay_ms=1000" >/dev/null
check "the build through the faults completes" \
	sfs_mount "$(proxy_url /train.tar)" "$T/m3" -o "layout=tar,quiet,index_dir=$T/i3"
echo "    $(proxy_stat faults) of $(proxy_stat requests) requests faulted"
proxy_ctl "chaos?rate=0" >/dev/null
check "its tree is tarfile's" cmp <(tree "$T/m3") "$T/train.oracle"
check "the build that completed logged no error" eval '! grep "error: " "$(sfs_log "$T/m3")"'
check "unmount" sfs_umount "$T/m3"

# 4. members far larger than what a round trip delivers: hopped over
proxy_ctl "stats?reset=1" >/dev/null
check "large.tar: the build through the proxy completes" \
	sfs_mount "$(proxy_url /large.tar)" "$T/m4" -o "layout=tar,quiet,index_dir=$T/i4"
got=$(proxy_stat data_bytes) size=$(stat -c %s "$W/large.tar")
echo "    large.tar: $got bytes fetched of $size, $(proxy_stat method.GET) GETs"
check "large.tar: less than a quarter of its bytes fetched ($got of $size)" eval "[ $got -lt $((size / 4)) ]"
check "large.tar: its tree is tarfile's" cmp <(tree "$T/m4") "$T/large.oracle"
check "unmount" sfs_umount "$T/m4"
sfs_done
