#!/usr/bin/env bash
# A server that stops answering, between samplefs and nginx
# (tests/integration/fault_proxy.py): frozen with SIGSTOP (the kernel still
# accepts its connections, nothing answers: issue 16's `kill -STOP nginx`),
# or stopping mid-body with the connection held open.  A tar is mounted
# over the proxy with a memory cache (1 MiB) far smaller than the tar, and
# each check reads a member not read before, so the read reaches the daemon
# and waits for the network.
#   - timeout=2,retries=3: `cat` gives EIO within read_timeout (2 x
#     timeout = 4 s) plus slack, though the kernel asks twice (readahead,
#     then the page) and each attempt could wait 2 s; likewise for a
#     proxy that reads the requests and never answers, or stops mid-body;
#   - the defaults (read_timeout 60 s): `timeout 5 cat` ends at 5 s, and
#     `kill -9` ends a reader within 2 s (the daemon answers the kernel's
#     FUSE_INTERRUPT with EINTR instead of waiting the read out);
# and once the server answers again the mount serves the right bytes.
# Bounds are correctness bounds with generous slack, not speed checks.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/http_lib.sh"
sfs_setup
T=$SFS_TMP
W=$T/www
A=$T/ma B=$T/mb
SLACK=3		# seconds over a bound: a noisy 2-core VM, the ASan daemon

mkdir -p "$W"
"$PY" - "$W/big.tar" <<'PY' || { echo "not ok - fixtures"; exit 1; }
import io, os, sys, tarfile
with tarfile.open(sys.argv[1], "w") as t:
    for i in range(24):
        data = os.urandom(400 << 10)
        ti = tarfile.TarInfo("m%02d.bin" % i); ti.size = len(data); ti.mtime = 1700000000
        t.addfile(ti, io.BytesIO(data))
PY

# member M: tarfile's bytes of it (the oracle)
member() {
	"$PY" -c 'import sys, tarfile
sys.stdout.buffer.write(tarfile.open(sys.argv[1]).extractfile(sys.argv[2]).read())' "$W/big.tar" "$1"
}
now() { echo "${EPOCHREALTIME/./}"; }	# microseconds
secs() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f", (b - a) / 1e6 }'; }
frozen=
freeze() { kill -STOP "$PROXY_PID" && frozen=1; }
thaw() { [ -z "$frozen" ] || kill -CONT "$PROXY_PID"; frozen=; }
# a stopped proxy must not outlive the test: thawed before it is stopped
SFS_CLEANUP_HOOKS=(thaw "${SFS_CLEANUP_HOOKS[@]}")

# eio_within SECONDS FILE: reading FILE fails with EIO in at most SECONDS
eio_within() {
	local t0 t1 out rc
	t0=$(now)
	out=$(timeout 120 cat "$2" 2>&1 >/dev/null); rc=$?
	t1=$(now)
	echo "    cat: exit $rc after $(secs "$t0" "$t1") s: ${out:0:100}"
	[ "$rc" -ne 0 ] && [ "$rc" -ne 124 ] && grep -q "Input/output error" <<<"$out" &&
		[ $(( (t1 - t0) / 1000000 )) -lt "$1" ]
}

# gone PID: the process has exited (gone, or a zombie not yet reaped)
gone() {
	local st
	st=$(awk '{ print $3 }' "/proc/$1/stat" 2>/dev/null)
	[ -z "$st" ] || [ "$st" = Z ]
}

# ends_within SECONDS PID: PID exits within SECONDS; says how long it took
ends_within() {
	local t0 i
	t0=$(now)
	for ((i = 0; i < $1 * 20; i++)); do
		gone "$2" && { echo "    ended after $(secs "$t0" "$(now)") s"; return 0; }
		sfs_nap 0.05
	done
	echo "    still running after $1 s (state $(awk '{ print $3 }' "/proc/$2/stat" 2>/dev/null), wchan $(cat "/proc/$2/wchan" 2>/dev/null))"
	return 1
}

check "nginx up" http_start "$W"
check "fault proxy up" proxy_start "$(http_url /)"
# the index is built by a mount of its own: a build that streams the tar
# keeps its last blocks in memory, and a member served from there would
# not wait for the network (m21 once read at once instead of giving EIO)
check "the index built by a mount of its own" \
	sfs_mount "$(proxy_url /big.tar)" "$A" -o layout=tar,cache_mem=1M,index_dir=$T/idx
check "the index built: unmount" sfs_umount "$A"
check "mount with timeout=2,retries=3" \
	sfs_mount "$(proxy_url /big.tar)" "$A" -o layout=tar,timeout=2,retries=3,cache_mem=1M,index_dir=$T/idx
check "mount with the defaults" sfs_mount "$(proxy_url /big.tar)" "$B" -o layout=tar,cache_mem=1M,index_dir=$T/idx
check "a member reads right" cmp <(cat "$A/m00.bin") <(member m00.bin)

check "frozen server (SIGSTOP)" freeze
check "frozen server: cat gives EIO within read_timeout (4 s) + $SLACK s" eio_within $((4 + SLACK)) "$A/m03.bin"
check "frozen server: the log names the URL, the range and the deadline" \
	grep -q "big.tar: bytes [0-9]*-[0-9]*: .*read_timeout" "$(sfs_log "$A")"

# The defaults: only a signal can end these reads before read_timeout
# (60 s).  `cat` waits for the kernel's readahead (a background request)
# on a page lock that SIGKILL and SIGTERM end; a page fault of an mmap with
# MADV_RANDOM (no readahead) sends a synchronous FUSE read, which the
# kernel waits out even for SIGKILL unless the daemon answers the
# FUSE_INTERRUPT it sends (issue 16: `kill -9` at 270 s did nothing).
# MMAP_RANDOM FILE OFFSET: touches the byte at OFFSET through such an mmap
MMAP_RANDOM='import mmap, os, sys
m = mmap.mmap(os.open(sys.argv[1], os.O_RDONLY), 0, prot=mmap.PROT_READ)
m.madvise(mmap.MADV_RANDOM)
m[int(sys.argv[2])]'
readers=()
cat "$B/m06.bin" >/dev/null 2>&1 &
pid=$!; readers+=($pid)
sfs_nap 1
check "frozen server: kill -9 of a cat waiting for readahead ends it within 2 s" \
	eval 'kill -9 $pid && ends_within 2 $pid'
"$PY" -c "$MMAP_RANDOM" "$B/m07.bin" 200000 2>/dev/null &
pid=$!; readers+=($pid)
sfs_nap 1
check "frozen server: kill -9 of a reader waiting on a synchronous FUSE read ends it within 2 s" \
	eval 'kill -9 $pid && ends_within 2 $pid'
timeout 5 cat "$B/m09.bin" >/dev/null 2>&1 &
pid=$!; readers+=($pid)
check "frozen server: 'timeout 5 cat' ends within 5 + 2 s" ends_within 7 "$pid"
timeout 5 "$PY" -c "$MMAP_RANDOM" "$B/m10.bin" 200000 2>/dev/null &
pid=$!; readers+=($pid)
check "frozen server: 'timeout 5' of a synchronous FUSE read ends within 5 + 2 s" ends_within 7 "$pid"
thaw
for pid in "${readers[@]}"; do	# gone by now, or thawed out: reaped
	ends_within 70 "$pid" >/dev/null
	wait "$pid" 2>/dev/null
done

check "server back: the mount serves the right bytes" cmp <(cat "$B/m12.bin") <(member m12.bin)

check "a server that reads requests and never answers" proxy_ctl "fault?mode=hang&n=-1&method=GET&max_s=60" >/dev/null
check "never answering: cat gives EIO within read_timeout (4 s) + $SLACK s" eio_within $((4 + SLACK)) "$A/m21.bin"
check "a server that stops mid-body" proxy_ctl "fault?mode=stop&n=-1&method=GET&max_s=60" >/dev/null
check "stopped mid-body: cat gives EIO within read_timeout (4 s) + $SLACK s" eio_within $((4 + SLACK)) "$A/m15.bin"
proxy_ctl "fault?mode=off" >/dev/null
check "server back: the right bytes" cmp <(cat "$A/m18.bin") <(member m18.bin)

check "unmount" sfs_umount "$A"
check "unmount" sfs_umount "$B"
sfs_done
