#!/usr/bin/env bash
# layout=tar over zips (zipwalk.c, zipread.c, tarindex_zip.c) against unzip
# and Python's zipfile: zip_cases.py makes archives with Info-ZIP zip
# (deflated, stored, zip64 forced) and zipfile (zip64 local headers, data
# descriptors); each is mounted and tree_compare.py compares the tree with
# what `unzip` extracts, and random ranges of the large deflated member
# (through access points when over 4 MiB) with zipfile's bytes, warm and
# cold (the page cache dropped: reads tried in no-wait mode are retried on
# a worker).  Then the hostile ones:
# a member whose CRC is wrong and one with a flipped bit give EIO, named in
# the log, never other bytes; "../" is skipped; a CP437 name is zipfile's;
# a bomb (64 MiB declared as 4 KiB) gives EIO; a truncated central
# directory is a clear mount error.  Large deflated members (over 4 MiB:
# access points; zipfile's zip64 local header, Info-ZIP's data descriptor) are
# read whole and at 200 random places against zipfile, with one pass
# each at the first mount and none at the remount (the daemon's log);
# large members with a bad CRC, a cut stream and a stream longer than
# declared give EIO at every read, named (again at a remount, from the
# saved tables); over HTTP too.  Then a directory of shards (a .tar
# and a .zip) mounts as one tree with a directory per shard, and Kaggle's
# ImageNet zip as layout=imagenet gives the tree of the release's tars.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/http_lib.sh"
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

# every file member, last in the zip first, so that the kernel's read-ahead
# of one never holds the next: each read's first, no-wait try misses
backwards() {
	"$PY" - "$1" "$2" <<'PYEOF'
import os, stat, sys, zipfile
z, mnt, bad = zipfile.ZipFile(sys.argv[1]), sys.argv[2], 0
for i in sorted(z.infolist(), key=lambda i: -i.header_offset):
    p = os.path.join(mnt, i.filename)
    if i.is_dir() or stat.S_ISLNK(i.external_attr >> 16) or not os.path.isfile(p):
        continue
    try:
        with open(p, "rb") as f:
            ok = f.read() == z.read(i)
    except OSError as e:
        ok = False
        print("    %s: %s" % (i.filename, e))
    if not ok:
        print("    %s: not zipfile's bytes" % i.filename); bad = 1
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
	# cold: the first try of each read (no-wait) finds nothing cached and
	# must be retried on a worker, not fail
	check "$c: the zip and the mount evicted" sfs_evict "$T/cases/$c/archive.zip" "$mnt"
	check "$c: cold, read backwards, the members are zipfile's" backwards "$T/cases/$c/archive.zip" "$mnt"
	check "$c: ... with no error in the log (a read that would wait is no bad data)" \
		bash -c '! grep "error" "$1"' _ "$(sfs_log "$mnt")"
	check "$c: unmounts cleanly" sfs_umount "$mnt"
done

# --- large deflated members (> 4 MiB) through access points: each whole,
# then 64 KiB at 200 random places, against zipfile; one pass per member
# (the daemon's "deflate, N bytes uncompressed, K access points" line,
# named zip@offset:member), none at a remount (the saved tables: no such
# line, index_load's "using the saved index of the access points")
rand64k() {
	"$PY" - "$1" "$2" <<'PYEOF'
import os, random, sys, zipfile
z, mnt = zipfile.ZipFile(sys.argv[1]), sys.argv[2]
rng, bad = random.Random(18), 0
for i in z.infolist():
    if i.is_dir() or i.file_size <= (4 << 20):
        continue
    want = z.read(i)
    with open(os.path.join(mnt, i.filename), "rb") as f:
        if f.read() != want:
            print("    %s: whole: not zipfile's bytes" % i.filename); bad = 1
    fd = os.open(os.path.join(mnt, i.filename), os.O_RDONLY)
    for _ in range(200):
        off = rng.randrange(len(want))
        if os.pread(fd, 65536, off) != want[off:off + 65536]:
            print("    %s: 64 KiB at %d differ" % (i.filename, off)); bad = 1
    os.close(fd)
sys.exit(bad)
PYEOF
}
# a copy: the loop above mounted archive.zip, whose tables are saved now
L=$T/large
mkdir -p "$L" && cp "$T/cases/large/archive.zip" "$T/cases/large/descriptor.zip" "$L"/
for zf in archive descriptor; do
	mnt=$T/m-large-$zf
	check "large $zf: mounts" sfs_mount "$L/$zf.zip" "$mnt" -o layout=tar || continue
	check "large $zf: whole and 200 random 64 KiB reads are zipfile's" rand64k "$L/$zf.zip" "$mnt"
	check "large $zf: one pass per large member, named by zip, offset and member" \
		bash -c '[ "$(grep -c "$1@[0-9]*:[a-z0-9]*\.bin: deflate, [0-9]* bytes uncompressed, .* access points, in" "$2")" = "$3" ]' \
		_ "$L/$zf.zip" "$(sfs_log "$mnt")" "$([ $zf = archive ] && echo 2 || echo 1)"
	check "large $zf: unmounts cleanly" sfs_umount "$mnt"
	mnt=$T/m-large-$zf-2
	check "large $zf: remounts" sfs_mount "$L/$zf.zip" "$mnt" -o layout=tar || continue
	check "large $zf: remount: whole and random reads are zipfile's" rand64k "$L/$zf.zip" "$mnt"
	check "large $zf: remount: the saved access points (opened at the first read)" \
		grep -q "using the saved index of the access points of $L/$zf.zip@" "$(sfs_log "$mnt")"
	check "large $zf: remount: no pass" bash -c '! grep -q "access points, in" "$1"' _ "$(sfs_log "$mnt")"
	check "large $zf: remount: unmounts cleanly" sfs_umount "$mnt"
done

# the same over HTTP: the member's slice reads through the HTTP source
if http_start "$L"; then
	for run in first again; do
		mnt=$T/m-large-http-$run
		check "large over http ($run): mounts" sfs_mount "$(http_url archive.zip)" "$mnt" \
			-o layout=tar || continue
		check "large over http ($run): whole and random reads are zipfile's" \
			rand64k "$L/archive.zip" "$mnt"
		check "large over http ($run): $([ $run = first ] && echo "two passes" || echo "no pass")" \
			bash -c '[ "$(grep -c "access points, in" "$1")" = "$2" ]' _ "$(sfs_log "$mnt")" \
			"$([ $run = first ] && echo 2 || echo 0)"
		check "large over http ($run): unmounts cleanly" sfs_umount "$mnt"
	done
fi

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
mnt=$T/m-hlarge
if check "large, hostile: mounts" sfs_mount "$H/large.zip" "$mnt" -o layout=tar; then
	log=$(sfs_log "$mnt")
	check "large, hostile: a good member is zipfile's" \
		"$PY" -c 'import sys, zipfile; sys.exit(open(sys.argv[2], "rb").read() != zipfile.ZipFile(sys.argv[1]).read("ok.bin"))' \
		"$H/large.zip" "$mnt/ok.bin"
	for f in badcrc cut long; do
		check "large, hostile: $f.bin: EIO at its start" expect_fail 'Input/output error' \
			dd if="$mnt/$f.bin" of=/dev/null bs=64k count=1 status=none
		check "large, hostile: $f.bin: EIO far into it" expect_fail 'Input/output error' \
			dd if="$mnt/$f.bin" of=/dev/null bs=64k skip=70 count=1 status=none
	done
	check "large, hostile: the CRC named: zip, offset, member, both CRC-32s" \
		grep -q "large.zip@[0-9]*:badcrc.bin: CRC-32 mismatch (the zip says [0-9a-f]\{8\}, the data gives [0-9a-f]\{8\})" "$log"
	check "large, hostile: the cut stream named" grep -q "large.zip@[0-9]*:cut.bin: truncated deflate stream" "$log"
	check "large, hostile: the long stream named, stopped at its size" \
		grep -q "large.zip@[0-9]*:long.bin: inflates past its declared size" "$log"
	check "large, hostile: unmounts cleanly" sfs_umount "$mnt"
	# the tables saved with the damage: EIO again, with no pass
	mnt=$T/m-hlarge-2
	if check "large, hostile: remounts" sfs_mount "$H/large.zip" "$mnt" -o layout=tar; then
		for f in badcrc cut long; do
			check "large, hostile: remount: $f.bin: EIO" expect_fail 'Input/output error' \
				dd if="$mnt/$f.bin" of=/dev/null bs=64k skip=40 count=1 status=none
		done
		check "large, hostile: remount: a good member is zipfile's" \
			"$PY" -c 'import sys, zipfile; sys.exit(open(sys.argv[2], "rb").read() != zipfile.ZipFile(sys.argv[1]).read("ok.bin"))' \
			"$H/large.zip" "$mnt/ok.bin"
		check "large, hostile: remount: no pass" bash -c '! grep -q "access points, in" "$1"' _ "$(sfs_log "$mnt")"
		check "large, hostile: remount: unmounts cleanly" sfs_umount "$mnt"
	fi
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

# --- Kaggle's ImageNet zip (layout=imagenet): the tree the release's tars
# give for the same images, labels from its LOC_ files
"$PY" - "$T/kg" "$SFS_ROOT/tests/fixtures" <<'PYEOF' || echo "    make_kaggle failed"
import os, sys
sys.path.insert(0, sys.argv[2])
from make_imagenet import make_imagenet, make_kaggle, pick_wnids
t = make_imagenet(os.path.join(sys.argv[1], "release"), pick_wnids(5) + ["n01440764"],
                  per_class=6, n_val=20, seed=3)
os.makedirs(os.path.join(sys.argv[1], "kaggle"))
make_kaggle(os.path.join(sys.argv[1], "release"),
            os.path.join(sys.argv[1], "kaggle", "imagenet-object-localization-challenge.zip"), t)
# the shards' tar headers carry the sources' newest mtime: the release's
rel = os.path.join(sys.argv[1], "release")
m = max(os.stat(os.path.join(rel, f)).st_mtime for f in os.listdir(rel) if f.endswith(".tar"))
os.utime(os.path.join(sys.argv[1], "kaggle", "imagenet-object-localization-challenge.zip"), (m, m))
PYEOF
if check "kaggle: the release mounts" sfs_mount "$T/kg/release" "$T/m-rel" -o layout=imagenet &&
   check "kaggle: the directory holding the zip mounts (layout detected)" \
	sfs_mount "$T/kg/kaggle" "$T/m-kg"; then
	check "kaggle: the same tree as the release's (train, labelled val, shards, shuffled)" \
		sfs_same_mounts "$T/m-rel" "$T/m-kg"
	check "kaggle: val is labelled" test -d "$T/m-kg/val/n01440764"
	check "kaggle: unmounts cleanly" sfs_umount "$T/m-kg"
	check "kaggle: the release unmounts cleanly" sfs_umount "$T/m-rel"
fi
sfs_done
