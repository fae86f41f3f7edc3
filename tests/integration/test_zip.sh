#!/usr/bin/env bash
# layout=tar over zips (zipwalk.c, zipread.c, tarindex_zip.c) against unzip
# and Python's zipfile: zip_cases.py makes archives with Info-ZIP zip
# (deflated, stored, zip64 forced) and zipfile (zip64 local headers, data
# descriptors); each is mounted and tree_compare.py compares the tree with
# what `unzip` extracts, and random ranges of the large deflated member
# (read by an inflate cursor) with zipfile's bytes.  Then the hostile ones:
# a member whose CRC is wrong and one with a flipped bit give EIO, named in
# the log, never other bytes; "../" is skipped; a CP437 name is zipfile's;
# a bomb (64 MiB declared as 4 KiB) gives EIO; a truncated central
# directory is a clear mount error.  Last, a directory of shards (a .tar
# and a .zip) mounts as one tree with a directory per shard.
. "$(dirname "$0")/lib.sh"
sfs_setup
T=$SFS_TMP

cases=$("$PY" "$SFS_ROOT/tests/integration/zip_cases.py" "$T/cases") || {
	echo "not ok - zip_cases.py failed"; SFS_FAIL=$((SFS_FAIL + 1)); sfs_done; exit 1; }

# ranges of every member over 1 MiB, at random offsets, forwards and back
ranges() {
	"$PY" - "$1" "$2" <<'PYEOF'
import os, random, sys, zipfile
z, mnt = zipfile.ZipFile(sys.argv[1]), sys.argv[2]
rng, bad = random.Random(7), 0
for i in z.infolist():
    if i.is_dir() or i.file_size < (1 << 20):
        continue
    want = z.read(i)
    fd = os.open(os.path.join(mnt, i.filename), os.O_RDONLY)
    for _ in range(12):
        off = rng.randrange(len(want))
        n = rng.choice([1, 4096, 131072, 1 << 20])
        got = os.pread(fd, n, off)
        if got != want[off:off + n]:
            print("    %s: %d bytes at %d differ" % (i.filename, n, off)); bad = 1
    os.close(fd)
sys.exit(bad)
PYEOF
}

for c in $cases; do
	mkdir -p "$T/x-$c"
	(cd "$T/x-$c" && unzip -q "$T/cases/$c/archive.zip")
	mnt=$T/m-$c
	check "$c: mounts" sfs_mount "$T/cases/$c/archive.zip" "$mnt" -o layout=tar || continue
	check "$c: the tree is unzip's" "$PY" "$SFS_ROOT/tests/integration/tree_compare.py" \
		"$T/x-$c" "$mnt"
	check "$c: ranges of large members are zipfile's" ranges "$T/cases/$c/archive.zip" "$mnt"
	check "$c: unmounts cleanly" sfs_umount "$mnt"
done

# --- hostile members: EIO and a message naming them, never other bytes
H=$T/cases/hostile mnt=$T/m-hostile
if check "hostile: mounts" sfs_mount "$H/archive.zip" "$mnt" -o layout=tar; then
	log=$(sfs_log "$mnt")
	check "hostile: a good member reads" \
		"$PY" -c 'import sys, zipfile; sys.exit(open(sys.argv[2], "rb").read() != zipfile.ZipFile(sys.argv[1]).read("ok.txt"))' \
		"$H/archive.zip" "$mnt/ok.txt"
	check "hostile: a member whose CRC fails: EIO" expect_fail 'Input/output error' cat "$mnt/crc.txt"
	check "hostile: ... named in the log" grep -q 'crc.txt.*CRC-32 mismatch' "$log"
	check "hostile: a flipped bit: EIO" expect_fail 'Input/output error' cat "$mnt/flip.txt"
	check "hostile: ... named in the log" grep -q 'flip.txt' "$log"
	check "hostile: '../' skipped with a warning" \
		bash -c '[ ! -e "$1/escape.txt" ] && grep -q "escape.txt.*skipped" "$2"' _ "$mnt" "$log"
	check "hostile: a CP437 name is zipfile's" \
		"$PY" -c 'import os, sys, zipfile
n = [i.filename for i in zipfile.ZipFile(sys.argv[1]).infolist() if i.filename.startswith("caf")][0]
sys.exit(open(os.path.join(sys.argv[2], n), "rb").read() != b"cp437 name\n")' "$H/archive.zip" "$mnt"
	check "hostile: unmounts cleanly" sfs_umount "$mnt"
fi
mnt=$T/m-bomb
if check "bomb: mounts" sfs_mount "$H/bomb.zip" "$mnt" -o layout=tar; then
	check "bomb: 64 MiB declared as 4 KiB: EIO" expect_fail 'Input/output error' cat "$mnt/zeros"
	check "bomb: ... named in the log" grep -q 'zeros.*more than its declared size' "$(sfs_log "$mnt")"
	check "bomb: unmounts cleanly" sfs_umount "$mnt"
fi
mkdir -p "$T/m-trunc"
check "truncated central directory: a clear mount error" \
	expect_fail 'truncated.zip: no zip end-of-central-directory record' \
	"$SAMPLEFS" -f "$H/truncated.zip" "$T/m-trunc" -o layout=tar

# --- a directory of shards: one directory per shard, named without suffix
S=$T/shards
mkdir -p "$S" "$T/xs/s1" "$T/xs/s2"
(cd "$T/cases/infozip/src" && tar -cf "$S/s1.tar" .)
cp "$T/cases/zip64/archive.zip" "$S/s2.zip"
(cd "$T/xs/s1" && tar -xf "$S/s1.tar")
(cd "$T/xs/s2" && unzip -q "$S/s2.zip")
mnt=$T/m-shards
if check "shards: the directory mounts (layout detected)" sfs_mount "$S" "$mnt"; then
	check "shards: the tree is each shard's extraction" \
		"$PY" "$SFS_ROOT/tests/integration/tree_compare.py" "$T/xs" "$mnt"
	check "shards: unmounts cleanly" sfs_umount "$mnt"
fi
sfs_done
