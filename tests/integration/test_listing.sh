#!/usr/bin/env bash
# Listings as du, ls -lR and find see them (issue 9, item 7): with the
# default readdirplus=adaptive, a walk that stats every file (du, ls -l,
# find -size) gets the files' attributes in the listings, so it sends a
# LOOKUP only for the few probes of each directory, while a walk that only
# needs names (find) leaves no kernel inode per file.  Counted from the
# daemon's -d log (LOOKUPs, also of a stat after find); the
# answers of every tool are compared with Python's tarfile.  No timing here:
# the speed is measured by `make bench` (docs/benchmarks.md, "Everyday tools").
. "$(dirname "$0")/lib.sh"
sfs_setup
T=$SFS_TMP
M=$T/m
DIRS=12 FILES=300

# a tar of DIRS directories of FILES files of assorted sizes
"$PY" - "$T/src.tar" "$DIRS" "$FILES" <<'PY' || { echo "not ok - fixture"; exit 1; }
import io, random, sys, tarfile
out, dirs, files = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
rnd = random.Random(9)
with tarfile.open(out, "w", format=tarfile.GNU_FORMAT) as t:
    for d in range(dirs):
        for f in range(files):
            data = bytes(rnd.getrandbits(8) for _ in range(rnd.choice([0, 10, 600, 3000])))
            ti = tarfile.TarInfo("d%02d/f%04d.bin" % (d, f))
            ti.size, ti.mtime = len(data), 1700000000
            t.addfile(ti, io.BytesIO(data))
PY
oracle() {	# what tarfile says: "path size" of every file, sorted
	"$PY" -c 'import sys, tarfile
for m in tarfile.open(sys.argv[1]):
    if m.isfile(): print(m.name, m.size)' "$T/src.tar" | sort
}
oracle >"$T/want"
total=$(awk '{s += $2} END {print s}' "$T/want")
big=$(awk '$2 > 1000' "$T/want" | wc -l)

file_lookups() {	# LOOKUPs of names under d01..: the log says the parent's nodeid
	local n=0 d ino
	for d in $(seq -f 'd%02g' 1 $((DIRS - 1))); do
		ino=$(stat -c %i "$M/$d")
		n=$((n + $(grep -c "opcode: LOOKUP (1), nodeid: $ino," "$(sfs_log "$M")")))
	done
	echo "$n"
}
listing() {	# "path size" of every file from ls -lR
	ls -lR "$M" | awk '/^\// {sub(":$", ""); sub("^'"$M"'/", ""); d = $0; next}
		/^-/ {print d "/" $9, $5}' | sort
}

# du: right sums, and only the probes of each directory are looked up
check "mount (default readdirplus)" sfs_mount "$T/src.tar" "$M" -d -o layout=tar
check "du --apparent-size = tarfile's $total bytes" \
	test "$(du -sb --apparent-size "$M" | cut -f1)" = "$total"
n=$(file_lookups)
check "du looked up at most the probes ($n LOOKUPs for $(((DIRS - 1) * FILES)) files after the first directory)" \
	test "$n" -le $(((DIRS - 1) * 8 + FILES))
check "unmount" sfs_umount "$M"

# ls -lR: every name and size as tarfile says
check "mount again" sfs_mount "$T/src.tar" "$M" -d -o layout=tar
check "ls -lR lists every file with tarfile's size" cmp -s <(listing) "$T/want"
n=$(file_lookups)
check "ls -lR looked up at most the probes ($n)" test "$n" -le $(((DIRS - 1) * 8 + FILES))
check "unmount" sfs_umount "$M"

# find -size: the right files
check "mount again" sfs_mount "$T/src.tar" "$M" -o layout=tar
check "find -size +1000c finds tarfile's $big files" \
	test "$(find "$M" -type f -size +1000c | wc -l)" = "$big"
check "unmount" sfs_umount "$M"

# find: names only, so no kernel inode per file; readdirplus=always, by
# contrast, leaves one for each (the check that the count can tell).  A
# file with a kernel inode (and its dentry) is stat'ed without a LOOKUP,
# one without it sends one: so the LOOKUPs of a stat of every file after
# find count this mount's inodes (/proc/slabinfo's fuse_inode count is
# every mount's, and other tests running beside this one move it)
after=$(((DIRS - 1) * FILES))	# the files file_lookups counts
for mode in adaptive always; do
	check "mount -o readdirplus=$mode" sfs_mount "$T/src.tar" "$M" -d -o layout=tar,readdirplus=$mode
	check "$mode: find lists all $((DIRS * FILES)) files" \
		test "$(find "$M" -type f | wc -l)" = "$((DIRS * FILES))"
	n0=$(file_lookups)
	find "$M" -type f -exec stat -c %s {} + >/dev/null
	looked=$(($(file_lookups) - n0))
	if [ "$mode" = adaptive ]; then
		check "adaptive: find left few kernel inodes (a stat then looked up $looked of $after files)" \
			test "$looked" -ge $((after * 3 / 4))
	else
		check "always: find left a kernel inode per file (a stat then looked up $looked of $after files)" \
			test "$looked" -le $((after / 10))
	fi
	check "unmount $mode" sfs_umount "$M"
done

# ---- readdir in small pieces (issue 16, item 8) ----
# A directory of ~1,000 entries read with getdents64 one or two entries at
# a time: for each call the kernel asks the daemon again from the offset
# of the last entry handed out, so the layout resumes at every offset (the
# 300-entry listings above resume only where a 4 KiB reply ends); then
# lseek back to offsets handed out (readdir_pieces.py).  The names, in
# order, are the oracle's: tarfile's members (a tar directory, with and
# without readdirplus), numpy's rows (npy), the samples make_quickdraw
# wrote (quickdraw).
N=1000
"$PY" - "$T" "$SFS_ROOT" "$N" <<'PY' || { echo "not ok - readdir fixtures"; SFS_FAIL=$((SFS_FAIL + 1)); }
import io, os, sys, tarfile
import numpy as np
t, root, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
sys.path.insert(0, os.path.join(root, "tests", "fixtures"))
from make_quickdraw import make_quickdraw
with tarfile.open(t + "/pieces.tar", "w", format=tarfile.GNU_FORMAT) as f:
    for i in range(n):	# names of many lengths: entries of many sizes
        ti = tarfile.TarInfo("big/m%04d%s.bin" % (i * 7919 % n, "-" * (i % 23)))
        f.addfile(ti, io.BytesIO(b""))
os.makedirs(t + "/npy")
np.save(t + "/npy/big.npy", np.zeros((n, 1), np.uint8))
make_quickdraw(t + "/qd", ["a", "b"], [2, n], [2, n], seed=5)	# b: 2 .. n + 1
PY
pieces() {	# DIR WANT_FILE: read in pieces, the names in order are WANT_FILE's
	"$PY" "$SFS_ROOT/tests/integration/readdir_pieces.py" "$1" >"$T/got" &&
		cmp -s "$T/got" "$2" || { diff "$T/got" "$2" | head -5; return 1; }
}
"$PY" -c 'import sys, tarfile
for m in tarfile.open(sys.argv[1]): print(m.name[4:])' "$T/pieces.tar" | LC_ALL=C sort >"$T/want-tar"
seq -f '%06.0f.npy' 0 $((N - 1)) >"$T/want-npy"
seq -f '%06.0f.npy' 2 $((N + 1)) >"$T/want-qd"
for mode in adaptive auto; do
	check "tar, readdirplus=$mode: mount" sfs_mount "$T/pieces.tar" "$M" -o layout=tar,readdirplus=$mode
	check "tar, readdirplus=$mode: $N entries in pieces = tarfile's names" pieces "$M/big" "$T/want-tar"
	check "tar, readdirplus=$mode: unmount" sfs_umount "$M"
done
check "npy: mount" sfs_mount "$T/npy" "$M" -o layout=npy
check "npy: $N rows in pieces = numpy's" pieces "$M/big" "$T/want-npy"
check "npy: unmount" sfs_umount "$M"
check "quickdraw: mount" sfs_mount "$T/qd" "$M" -o layout=quickdraw
check "quickdraw: a class of $N images in pieces = make_quickdraw's" pieces "$M/images/b" "$T/want-qd"
check "quickdraw: unmount" sfs_umount "$M"
sfs_done
