#!/usr/bin/env bash
# A cpio with 60,000 files of two or three names each (66,000 hard links),
# written as bsdtar writes newc (the names of a file together, the data
# with the last), mounted with layout=tar in place (formats/arcwalk.c) and
# compressed with lz4 (decompressed once, io/codecs/arxsource.c).  Both
# keep each linked file's names until its data comes (arxlinks): kept in
# a list searched from its start that cost 60,000^2 string compares
# (of names 40 bytes long, alike in their first 25), minutes before the mount came up (in place) or a member could be read
# (lz4); in a tree, a second.  No time is measured: a mount that does not
# come up within sfs_mount's 60 s, or reads that do not end within 120 s,
# fail.
#
# The oracle: what `bsdtar -x` makes of the same cpio.  A sample of the
# files (every 97th), every name of each: the same bytes, one inode; and
# the mount lists every name.
. "$(dirname "$0")/lib.sh"
sfs_setup
T=$SFS_TMP
NFILES=60000

manylinks_fixtures() {
	local D=$1
	"$PY" - "$D/links.cpio" "$NFILES" <<'PYEOF' || return 1
import sys

out, nfiles = sys.argv[1], int(sys.argv[2])
NAMES = ["dataset/train/images/c%03d/sample_%06d.bin",
         "dataset/train/by-id/c%03d/sample_%06d.bin",
         "dataset/train/extra/c%03d/sample_%06d.bin"]

def entry(name, ino, nlink, data):
    name = name.encode() + b"\0"
    fields = (ino, 0o100644, 0, 0, nlink, 1700000000, len(data), 0, 0, 0, 0,
              len(name), 0)
    h = b"070701" + b"".join(b"%08x" % f for f in fields) + name
    h += b"\0" * (-len(h) % 4)
    return h + data + b"\0" * (-len(data) % 4)

with open(out, "wb") as f:
    for i in range(nfiles):
        names = [d % (i // 1000, i) for d in NAMES[:2 + (i % 10 == 0)]]
        data = (b"file %d\n" % i) * (1 + i % 5)
        for k, n in enumerate(names):
            f.write(entry(n, i + 1, len(names), data if k == len(names) - 1 else b""))
    f.write(entry("TRAILER!!!", 0, 1, b""))
PYEOF
	lz4 -q -c "$D/links.cpio" >"$D/links.cpio.lz4" &&
	mkdir "$D/x" && bsdtar -xf "$D/links.cpio" -C "$D/x"
}
sfs_shared manylinks manylinks_fixtures || exit 1

check "bsdtar -x made every name" bash -c \
	'[ "$(find "$0/dataset" -type f | wc -l)" = "$1" ]' "$T/x" $((2 * NFILES + NFILES / 10))

for f in links.cpio links.cpio.lz4; do
	mnt=$T/m-$f
	check "$f: mounted" sfs_mount "$T/$f" "$mnt" -o layout=tar || continue
	check "$f: a sample of the files, each name as bsdtar -x made it, one inode" \
		timeout 120 "$PY" - "$T/x" "$mnt" "$NFILES" <<'PYEOF'
import os, sys

x, mnt, nfiles = sys.argv[1], sys.argv[2], int(sys.argv[3])
NAMES = ["dataset/train/images/c%03d/sample_%06d.bin",
         "dataset/train/by-id/c%03d/sample_%06d.bin",
         "dataset/train/extra/c%03d/sample_%06d.bin"]
for i in range(0, nfiles, 97):
    names = [d % (i // 1000, i) for d in NAMES[:2 + (i % 10 == 0)]]
    inos = set()
    for n in names:
        want = open(os.path.join(x, n), "rb").read()
        got = open(os.path.join(mnt, n), "rb").read()
        if got != want:
            sys.exit("%s: %d bytes, bsdtar -x made %d (%r, want %r)"
                     % (n, len(got), len(want), got[:20], want[:20]))
        inos.add(os.stat(os.path.join(mnt, n)).st_ino)
    if len(inos) != 1:
        sys.exit("%s: %d inodes, want one" % (names, len(inos)))
PYEOF
	check "$f: every name listed" bash -c \
		'[ "$(find "$0/dataset" -type f | wc -l)" = "$1" ]' "$mnt" $((2 * NFILES + NFILES / 10))
	check "$f: no warning" bash -c '! grep -q "warning" "$0"' "$(sfs_log "$mnt")"
	check "$f: unmount" sfs_umount "$mnt"
done
sfs_done
