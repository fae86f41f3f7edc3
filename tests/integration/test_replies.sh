#!/usr/bin/env bash
# Read replies of every size around libfuse's splice threshold (two pages):
# files of a tar (written by Python's tarfile, the oracle) of 0 bytes to
# 200 kB read whole and in 4 KiB, 1 kB and 1-byte-aligned pieces through a
# mount that answers every read on the extent path (-o poll=0), byte for
# byte equal to tarfile's; and none of those reads made libfuse copy a
# reply through posix_memalign (count_memalign.c counts in the daemon): the
# chunks of those copies filled glibc's per-thread caches and grew the
# daemon's heap by megabytes over a soak (see SPLICE_MIN in fs/read.c).
. "$(dirname "$0")/lib.sh"
sfs_setup
T=$SFS_TMP

"$PY" - "$T/src.tar" "$T/want" <<'PY' || { echo "not ok - fixture"; SFS_FAIL=$((SFS_FAIL + 1)); sfs_done; exit 1; }
import io, os, random, sys, tarfile
rng = random.Random(7)
sizes = [0, 1, 100, 1032, 1033, 4095, 4096, 4097, 8191, 8192, 8193, 12289,
         65536, 65537, 200000] + [rng.randrange(1, 20000) for _ in range(40)]
with tarfile.open(sys.argv[1], "w", format=tarfile.GNU_FORMAT) as tf:
    for i, n in enumerate(sizes):
        ti = tarfile.TarInfo("f%03d_%d" % (i, n))
        ti.size = n
        tf.addfile(ti, io.BytesIO(rng.randbytes(n)))
with tarfile.open(sys.argv[1]) as tf:
    tf.extractall(sys.argv[2])
PY

# pieces DIR BS: every file of DIR read with dd in BS-byte blocks, as one
# stream of its names and bytes
pieces() {
	local f
	for f in $(cd "$1" && ls); do
		echo "$f"
		dd if="$1/$f" bs="$2" status=none
	done
}

cc -shared -fPIC -O2 -Wall -Wextra -o "$T/count_memalign.so" \
	"$SFS_ROOT/tests/integration/count_memalign.c" -ldl ||
	{ echo "not ok - cannot build count_memalign.so"; SFS_FAIL=$((SFS_FAIL + 1)); sfs_done; exit 1; }
# the daemon alone runs with the counter (the ASan runtime wants to be the
# first library; it still is the allocator, this only counts and passes on)
cat >"$T/samplefs-counted" <<SH
#!/bin/sh
ASAN_OPTIONS=\${ASAN_OPTIONS:+\$ASAN_OPTIONS:}verify_asan_link_order=0 \\
LD_PRELOAD=$T/count_memalign.so exec "$SAMPLEFS" "\$@"
SH
chmod +x "$T/samplefs-counted"
# tarfile's files as one stream, read once (whole: their pieces are the
# same bytes)
pieces "$T/want" 1M >"$T/want.stream"
n=0
for bs in 1M 4096 1000 1; do
	M=$T/m$n
	n=$((n + 1))
	SFS_MEMALIGN_OUT=$T/memalign.$bs SAMPLEFS=$T/samplefs-counted \
		check "mount (poll=0) for $bs-byte reads" \
		sfs_mount "$T/src.tar" "$M" -o layout=tar,poll=0,index_dir="$T/idx"
	grep -q " $M fuse" /proc/mounts || continue
	check "$bs-byte reads: every file = tarfile's" cmp <(pieces "$M" "$bs") "$T/want.stream"
	check "unmount after $bs-byte reads" sfs_umount "$M"
	check "$bs-byte reads: libfuse copied no reply through posix_memalign" \
		test "$(cat "$T/memalign.$bs" 2>/dev/null)" = 0
done
sfs_done
