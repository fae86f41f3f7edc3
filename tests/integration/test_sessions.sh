#!/usr/bin/env bash
# Several session threads (-o sessions=N, issue 26): the mount reads
# /dev/fuse from N threads, each on its own clone of the device (as
# libfuse's clone_fd), and every request is answered once, on the fd it
# came from.  Checked, never timed:
#  - 16 threads reading every member of a tar (small ones answered by the
#    session threads from memory, large ones by the workers) and listing
#    its directories get the bytes and names Python's tarfile reads, over
#    several rounds (the mount's pages and the tar's evicted between them,
#    with fadvise, not a global drop_caches that would reach other tests
#    running beside this one: the requests reach the daemon again);
#  - the daemon then holds more than one /dev/fuse descriptor (the clones:
#    more than one session thread read requests);
#  - with sessions=1 it holds one; sessions= outside 1..16 is refused;
#  - the mount ends cleanly on unmount and on SIGTERM (sfs_umount fails on
#    any sanitizer report in the daemon's log);
#  - with the plain build, the readers again against the ThreadSanitizer
#    daemon (build-tsan/samplefs, `make tsan`) with sessions=4, halting on
#    its first report.
. "$(dirname "$0")/lib.sh"
sfs_setup
T=$SFS_TMP

timeout 120 "$PY" - "$T/s.tar" <<'PY' || { echo "not ok - fixture"; exit 1; }
import io, random, sys, tarfile
rnd = random.Random(26)
with tarfile.open(sys.argv[1], "w", format=tarfile.USTAR_FORMAT) as t:
    for i in range(1500):
        # mostly small (answered from memory once read), some of a few
        # pages, some past the 64 KiB that a stack buffer holds
        size = rnd.choice([rnd.randint(0, 3000), rnd.randint(4000, 60000),
                           rnd.randint(70000, 300000)])
        ti = tarfile.TarInfo("d%02d/f%04d.bin" % (i % 24, i))
        ti.size = size
        t.addfile(ti, io.BytesIO(rnd.randbytes(size)))
PY

# readers MNT: 16 threads, 3 rounds, every member and directory against
# tarfile; pages evicted between rounds so reads reach the daemon
readers() {
	timeout 300 "$PY" - "$T/s.tar" "$1" <<'PY'
import os, sys, tarfile, threading
tar, mnt = sys.argv[1], sys.argv[2]
with tarfile.open(tar) as t:
    want = {m.name: t.extractfile(m).read() for m in t.getmembers() if m.isfile()}
dirs = {}
for name in want:
    d, f = name.split("/")
    dirs.setdefault(d, set()).add(f)
names = sorted(want)
bad, lock = [], threading.Lock()
def reader(k, rnd):
    order = names[k::16] + sorted(dirs)[k % 24:k % 24 + 1]
    for name in order:
        p = os.path.join(mnt, name)
        if name in dirs:
            ok = set(os.listdir(p)) == dirs[name]
        else:
            with open(p, "rb") as f:
                ok = f.read() == want[name]
        if not ok:
            with lock:
                bad.append(name)
def evict(p):
    # this mount's pages and its source's only: a global drop_caches
    # would take other tests' cached dentries and pages too (make test
    # runs tests side by side)
    fd = os.open(p, os.O_RDONLY)
    os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    os.close(fd)
for rnd in range(3):
    evict(tar)
    for name in names:
        evict(os.path.join(mnt, name))
    th = [threading.Thread(target=reader, args=(k, rnd)) for k in range(16)]
    for x in th: x.start()
    for x in th: x.join()
for name in sorted(set(bad))[:5]:
    print("    %s: not what tarfile reads" % name)
sys.exit(1 if bad else 0)
PY
}

# fuse_fds PID: how many descriptors of /dev/fuse the daemon holds
fuse_fds() {
	local n=0 f
	for f in /proc/"$1"/fd/*; do
		[ "$(readlink "$f" 2>/dev/null)" = /dev/fuse ] && n=$((n + 1))
	done
	echo "$n"
}

mkdir -p "$T/mbad"
SFS_MOUNTS+=("$T/mbad")	# unmounted on exit should it mount after all
check "sessions=17: refused, naming the bound" \
	expect_fail "sessions=17: must be from 1 to 16" timeout 30 "$SAMPLEFS" -f "$T/s.tar" "$T/mbad" -o sessions=17
check "sessions=0: refused" \
	expect_fail "sessions=0: must be from 1 to 16" timeout 30 "$SAMPLEFS" -f "$T/s.tar" "$T/mbad" -o sessions=0

M=$T/m4
sfs_mount "$T/s.tar" "$M" -o sessions=4 ||
	{ echo "not ok - mount"; SFS_FAIL=$((SFS_FAIL + 1)); sfs_done; exit 1; }
check "sessions=4: 16 readers get tarfile's bytes and names, 3 rounds" readers "$M"
n=$(fuse_fds "${SFS_PID_OF[$M]}")
check "sessions=4: the daemon read requests on more than one clone of /dev/fuse ($n)" \
	test "$n" -ge 2 -a "$n" -le 5
check "sessions=4: unmounts cleanly" sfs_umount "$M"

M=$T/m1
sfs_mount "$T/s.tar" "$M" -o sessions=1 ||
	{ echo "not ok - mount"; SFS_FAIL=$((SFS_FAIL + 1)); sfs_done; exit 1; }
check "sessions=1: 16 readers get tarfile's bytes and names" readers "$M"
n=$(fuse_fds "${SFS_PID_OF[$M]}")
check "sessions=1: one /dev/fuse descriptor ($n)" test "$n" -eq 1
check "sessions=1: unmounts cleanly" sfs_umount "$M"

# SIGTERM ends a mount whose session threads sleep in their polls
M=$T/mt
sfs_mount "$T/s.tar" "$M" -o sessions=3 ||
	{ echo "not ok - mount"; SFS_FAIL=$((SFS_FAIL + 1)); sfs_done; exit 1; }
readers "$M" >/dev/null
pid=${SFS_PID_OF[$M]}
kill -TERM "$pid"
ended=0
for ((i = 0; i < 300; i++)); do
	kill -0 "$pid" 2>/dev/null || { ended=1; break; }
	sfs_nap 0.1
done
wait "$pid" 2>/dev/null
st=$?
unset "SFS_PID_OF[$M]"
check "sessions=3: SIGTERM ends the daemon (status $st)" test "$ended" = 1 -a "$st" = 0
check "sessions=3: no sanitizer report" sh -c "! grep -q 'Sanitizer' '${SFS_LOG_OF[$M]}'"
grep -q " $M fuse" /proc/mounts && fusermount3 -u "$M" 2>/dev/null

if [ "$SAMPLEFS_BUILD" = build ] && [ -x "$SFS_ROOT/build-tsan/samplefs" ]; then
	export TSAN_OPTIONS=halt_on_error=1:exitcode=66
	M=$T/mtsan
	SAMPLEFS=$SFS_ROOT/build-tsan/samplefs sfs_mount "$T/s.tar" "$M" -o sessions=4 ||
		{ echo "not ok - tsan mount"; SFS_FAIL=$((SFS_FAIL + 1)); sfs_done; exit 1; }
	check "ThreadSanitizer, sessions=4: 16 readers get tarfile's bytes and names" readers "$M"
	log=${SFS_LOG_OF[$M]}
	check "ThreadSanitizer, sessions=4: unmounts cleanly" sfs_umount "$M"
	check "ThreadSanitizer, sessions=4: no report" sh -c "! grep -q 'ThreadSanitizer' '$log'"
fi
sfs_done
