#!/usr/bin/env bash
# The Quick, Draw! layout end to end: small datasets written by numpy
# (tests/fixtures/make_quickdraw.py: names with spaces, capitals and hyphens,
# every pickle flavour, a recombined `strokes` npz, npy v1/v2/v3 image files,
# more images than strokes and the reverse, a drawing longer than one stroke
# record, the other sketch-rnn sets' float16/32/64 and int8/32/64 drawings),
# mounted and compared file by file with numpy's np.save of the pipeline's
# preprocessing (tests/integration/qd_oracle.py): images and strokes byte for
# byte, split files line by line against RandomState's shuffle.  Then options, the saved index, hostile
# inputs and a source that changes while mounted.
. "$(dirname "$0")/lib.sh"
sfs_setup
T=$SFS_TMP
ORACLE="$PY $SFS_ROOT/tests/integration/qd_oracle.py"

oracle() { # oracle SRC MNT [opts]: every file and listing agrees
	$ORACLE check "$@" | tail -n 11 | sed 's/^/    /'
	[ "${PIPESTATUS[0]}" -eq 0 ]
}
log_of() { echo "${SFS_LOG_OF[$1]}"; }

# ---- the datasets ----
$PY - "$T" "$SFS_ROOT" <<'PY'
import os, sys
sys.path.insert(0, os.path.join(sys.argv[2], 'tests', 'fixtures'))
from make_quickdraw import make_quickdraw
from qd_pickles import FLAVOURS
t = sys.argv[1]
names = ['cat', 'The Eiffel Tower', 'aircraft carrier', 't-shirt', 'teddy-bear',
         'Zebra', 'dog', 'ice cream', 'long one']
#               more img  more stk  equal  stored   ...
images  = [40, 25, 30, 20, 15, 12, 0, 9, 6]
strokes = [30, 35, 30, 22, 12, 14, 5, 9, 6]
make_quickdraw(t + '/flat', names, images, strokes,
               flavour_per_class=list(FLAVOURS),
               keys_per_class=[None, 'val', 'strokes', None, 'val', None, None, 'strokes', None],
               compress_per_class=[True, True, True, False, True, False, True, True, True],
               max_points=[60] * 8 + [7000], min_points=[1] * 8 + [5000], seed=1)
# official layout with classes.txt in the official (unsorted) order
o = t + '/official'
make_quickdraw(o, ['t-shirt', 'The Mona Lisa', 'apple', 'bus'], [8, 11, 7, 9], [9, 10, 7, 12],
               flavour_per_class=['py2'] * 4, layout='official', seed=2)
open(o + '/classes.txt', 'w').write('t-shirt\nThe Mona Lisa\napple\nbus\n')
make_quickdraw(t + '/imgonly', ['b', 'a c'], [13, 17], None, layout='official', seed=3)
make_quickdraw(t + '/stkonly', ['b', 'a c'], None, [13, 17], layout='official', seed=4)
# drawings of 1,400 to 4,000 points with small deltas: packed records far
# past the 1,365 points a raw record could hold, but under 8 KiB
make_quickdraw(t + '/packed', ['long small', 'mixed'], [6, 6], [6, 6], layout='official',
               min_points=[1400, 1], max_points=[4000, 4000], max_delta=[31, 255], seed=5)
# other sketch-rnn sets: drawings of every dtype (the float ones with
# fractions, -0.0 and a NaN), Python 2 pickles too, and float drawings of
# 700 to 3,000 points, past what one record holds
make_quickdraw(t + '/dtypes', ['f2', 'f4', 'f8', 'f8 py2', 'i1', 'i4', 'i8', 'long f8'], None,
               [14] * 7 + [5], layout='official',
               dtype_per_class=['f2', 'f4', 'f8', 'f8', 'i1', 'i4', 'i8', 'f8'],
               flavour_per_class=['p3', 'p4', 'p3', 'py2', 'p5', 'np2p4', 'py3p2', 'p3'],
               min_points=[1] * 7 + [700], max_points=[60] * 7 + [3000], seed=6)
open(t + '/subset.txt', 'w').write('t-shirt\nice cream\ncat\n')
PY
$ORACLE make-bad "$T/bad" >"$T/bad.cases"
SRC=$T/flat
M=$T/m

# ---- defaults, every file ----
start=$(date +%s%N)
check "mount (layout detected)" sfs_mount "$SRC" "$M"
build_ms=$(( ($(date +%s%N) - start) / 1000000 ))
check "index built (log says so)" grep -q "indexed in" "$(log_of "$M")"
check "every file equals the numpy oracle" oracle "$SRC" "$M"
check "inodes distinct, none in the reserved range" inodes_in_scheme "$M"
check "ls of the root" test "$(ls "$M" | tr '\n' ' ')" = "classes.txt epochs images splits strokes "
check "names with spaces, capitals, hyphens" \
	test -f "$M/images/The Eiffel Tower/000020.npy" -a -f "$M/strokes/t-shirt/000120.npy"
check "cat classes.txt" test "$(cat "$M/classes.txt" | tr '\n' '|')" = \
	"The Eiffel Tower|Zebra|aircraft carrier|cat|dog|ice cream|long one|t-shirt|teddy-bear|"
check "file modes 0444, directories 0555" \
	test "$(find "$M" -printf '%y%m\n' | sort -u | tr '\n' ' ')" = "d555 f444 "
check "st_size of an image is 3264, of a stroke file 1688" \
	test "$(stat -c %s "$M/images/cat/000070.npy") $(stat -c %s "$M/strokes/cat/000070.npy")" = "3264 1688"
check "nlink: root 6, images/ 2 + 9 classes, class dir 2" \
	test "$(stat -c %h "$M" "$M/images" "$M/images/cat" | tr '\n' ' ')" = "6 11 2 "
check "mtime is the class file's" \
	test "$(stat -c %Y "$M/images/cat/000070.npy")" = "$(stat -c %Y "$SRC/cat.npy")"
total=$(cat "$M/splits/"*.txt | wc -l)
check "find counts 2 x $total sample files" \
	test "$(find "$M/images" "$M/strokes" -type f | wc -l)" = $((2 * total))
check "du --apparent-size = sum of sizes" \
	test "$(du -sb --apparent-size "$M/images" | cut -f1)" = $((total * 3264))
check "df -i counts the virtual files" \
	test "$(df --output=itotal "$M" | tail -1 | tr -d ' ')" = $((6 + 2 * (1 + 9 + total)))
for name in 70.npy 0000070.npy 000000.npy; do	# short, long, another class's gidx
	check "lookup is strict: images/cat/$name gives ENOENT" \
		expect_fail "No such file" stat "$M/images/cat/$name"
done
check "wrong class gives ENOENT" expect_fail "No such file" stat "$M/images/cow"
check "writes get EROFS" expect_fail "Read-only file system" touch "$M/images/cat/000070.npy"
check "mkdir gets EROFS" expect_fail "Read-only file system" mkdir "$M/x"
check "rm gets EROFS" expect_fail "Read-only file system" rm -f "$M/classes.txt"
check "odd ranges of a split file" \
	cmp <(dd if="$M/splits/train.txt" bs=333 skip=3 2>/dev/null) \
	    <($ORACLE splits "$SRC" | dd bs=333 skip=3 2>/dev/null)
check "8 threads at random agree with the oracle" oracle "$SRC" "$M" --threads 8
# the index too, though pages the daemon has mapped (its tables) stay: the
# stroke blocks, read with pread, go
sfs_evict "$T"/cache/samplefs/quickdraw-*.sfsidx >/dev/null
check "class files evicted from the page cache" sfs_evict "$SRC"/*.npy "$SRC"/*.npz "$M"
check "cold: 8 threads at random agree with the oracle" oracle "$SRC" "$M" --threads 8
check "the article's loader runs on the mount" sh -c \
	"$PY '$SFS_ROOT/mount-examples/quickdraw/loader.py' '$M' 32 | grep -q 'train: $(( total * 8 / 10 )) samples'"
idx_bytes=$(cat "$T"/cache/samplefs/quickdraw-*.sfsidx | wc -c)
npz_bytes=$(cat "$SRC"/*.npz | wc -c)
echo "    (index $idx_bytes bytes for $npz_bytes bytes of .npz)"
check "index within 1.2 x the .npz files" test $((idx_bytes * 10)) -le $((npz_bytes * 12))
check "unmount" sfs_umount "$M"

# ---- the saved index: remount reads no .npz ----
# Garble every .npz keeping size and mtime: the fingerprint still matches,
# so a mount that read any stroke file would fail; it must serve the same.
cp -a "$SRC" "$T/flat.orig"
for f in "$SRC"/*.npz; do
	$PY -c "import sys; f=open(sys.argv[1],'r+b'); n=len(f.read()); f.seek(0); f.write(b'\x55'*n)" "$f"
	touch -r "$T/flat.orig/$(basename "$f")" "$f"
done
start=$(date +%s%N)
check "remount with garbled .npz (same size and mtime)" sfs_mount "$SRC" "$M"
remount_ms=$(( ($(date +%s%N) - start) / 1000000 ))
check "it says it used the saved index" grep -q "using the saved index" "$(log_of "$M")"
check "and serves the original strokes" oracle "$T/flat.orig" "$M"
echo "    (first mount ${build_ms} ms, remount ${remount_ms} ms)"
check "unmount remount" sfs_umount "$M"
rm -rf "$SRC" && cp -a "$T/flat.orig" "$SRC"

# ---- stale and corrupt indexes are rebuilt ----
touch -d '2001-01-01' "$SRC/dog.npz"
check "mount after a source changed" sfs_mount "$SRC" "$M"
check "stale index rebuilt with a message" grep -q "rebuilding index" "$(log_of "$M")"
check "unmount stale" sfs_umount "$M"
idx=$(ls "$T"/cache/samplefs/quickdraw-*.sfsidx | head -1)
for i in $(ls "$T"/cache/samplefs/quickdraw-*.sfsidx); do
	printf '\xff\xfe' | dd of="$i" bs=1 seek=$(( $(stat -c %s "$i") / 2 )) conv=notrunc 2>/dev/null
done
check "mount with a corrupt index" sfs_mount "$SRC" "$M"
check "corrupt index rebuilt with a message" grep -q "rebuilding index" "$(log_of "$M")"
check "rebuilt index serves the oracle's bytes" oracle "$SRC" "$M" --sample 200
check "unmount corrupt" sfs_umount "$M"

# ---- options ----
check "mount -o image=uint8,stroke_len=50,per_class=7,seed=3,split=70/20/10" \
	sfs_mount "$SRC" "$M" -o image=uint8,stroke_len=50,per_class=7,seed=3,split=70/20/10
check "options: every file equals the oracle" oracle "$SRC" "$M" --image uint8 \
	--stroke-len 50 --per-class 7 --seed 3 --split 70/20/10
check "uint8 image is 128 + 784 bytes" test "$(stat -c %s "$M/images/The Eiffel Tower/000000.npy")" = 912
check "unmount options" sfs_umount "$M"
check "mount -o classes=FILE (a subset, in its order)" \
	sfs_mount "$SRC" "$M" -o "classes=$T/subset.txt,stroke_len=200"
check "classes=FILE: every file equals the oracle" oracle "$SRC" "$M" \
	--classes "$T/subset.txt" --stroke-len 200
check "classes=FILE: label order" test "$(head -c 8 "$M/classes.txt")" = "t-shirt"
check "unmount classes" sfs_umount "$M"
: >"$T/empty.txt"
check "an empty classes file is refused" expect_fail "at least one class" \
	timeout 60 "$SAMPLEFS" -f -o "classes=$T/empty.txt" "$SRC" "$M"
printf 'cat\nno such class\n' >"$T/ghost.txt"
check "a listed class without files is refused, naming it" expect_fail "no such class.npy" \
	timeout 60 "$SAMPLEFS" -f -o "classes=$T/ghost.txt" "$SRC" "$M"

# ---- official layout, classes.txt order, images only, strokes only ----
check "mount numpy_bitmap/ + sketchrnn/ with classes.txt" sfs_mount "$T/official" "$M"
check "official: every file equals the oracle" oracle "$T/official" "$M"
check "unmount official" sfs_umount "$M"
check "mount images only" sfs_mount "$T/imgonly" "$M"
check "images only: no strokes/, lines without strokes" oracle "$T/imgonly" "$M"
check "unmount images only" sfs_umount "$M"
check "mount strokes only" sfs_mount "$T/stkonly" "$M"
check "strokes only: no images/" oracle "$T/stkonly" "$M"
check "unmount strokes only" sfs_umount "$M"
check "mount drawings of up to 4,000 points" sfs_mount "$T/packed" "$M"
check "long packed drawings: every file equals the oracle" oracle "$T/packed" "$M"
check "unmount long packed drawings" sfs_umount "$M"
check "mount sketch-rnn strokes of float16/32/64 and int8/32/64" sfs_mount "$T/dtypes" "$M"
check "dtypes: every file equals the oracle byte for byte" oracle "$T/dtypes" "$M"
check "unmount dtypes" sfs_umount "$M"

# ---- past gidx 999999: names widen, readdir stays in bytewise order ----
# class 'a' is a sparse file of 999,990 zero rows; 'b' (30 random rows) spans
# gidx 999990..1000019.
$PY - "$T/wide" <<'PY'
import os, sys
import numpy as np
d = sys.argv[1] + '/numpy_bitmap'
os.makedirs(d)
for name, n in (('a', 999990), ('b', 30)):
    with open('%s/%s.npy' % (d, name), 'wb') as f:
        np.lib.format.write_array_header_1_0(
            f, {'descr': '|u1', 'fortran_order': False, 'shape': (n, 784)})
        if name == 'b':
            f.write(np.random.default_rng(5).integers(0, 256, (n, 784), np.uint8).tobytes())
        else:
            f.truncate(f.tell() + n * 784)
import io
names = sorted('%06d.npy' % g for g in range(999990, 1000020))
with open(sys.argv[1] + '/b.sorted', 'w') as f:
    f.write(''.join(n + '\n' for n in names))
rows = np.load(d + '/b.npy')
with open(sys.argv[1] + '/b.want', 'wb') as f:
    for n in names:
        b = io.BytesIO()
        np.save(b, rows[int(n[:-4]) - 999990].reshape(28, 28, 1).astype(np.float32) / 255.0)
        f.write(b.getvalue())
PY
check "mount 1,000,020 images" sfs_mount "$T/wide" "$M"
check "ls images/b is in bytewise order" cmp -s <(ls -f "$M/images/b" | grep -v '^\.') "$T/wide/b.sorted"
check "1000000.npy found, 0999999.npy and a's 999989.npy not" sh -c \
	"test -f '$M/images/b/1000000.npy' && ! test -e '$M/images/b/0999999.npy' && ! test -e '$M/images/b/999989.npy'"
check "sampled files equal the oracle" oracle "$T/wide" "$M" --sample 300
check "every b file equals the oracle" cmp -s "$T/wide/b.want" \
	<(cd "$M/images/b" && cat $(cat "$T/wide/b.sorted"))
check "train.txt of 1M lines equals the oracle" cmp -s "$M/splits/train.txt" <($ORACLE splits "$T/wide")
check "unmount 1M" sfs_umount "$M"

# ---- 10 million samples: O(classes) memory, not O(samples) ----
# Ten sparse class files of 1,000,000 zero rows each (no disk used).
$PY - "$T/huge" <<'PY'
import os, sys
import numpy as np
d = sys.argv[1] + '/numpy_bitmap'
os.makedirs(d)
for c in range(10):
    with open('%s/class %d.npy' % (d, c), 'wb') as f:
        np.lib.format.write_array_header_1_0(
            f, {'descr': '|u1', 'fortran_order': False, 'shape': (1000000, 784)})
        f.truncate(f.tell() + 1000000 * 784)
PY
check "mount 10M samples (index build)" sfs_mount "$T/huge" "$M"
check "unmount 10M build" sfs_umount "$M"
check "remount 10M samples" sfs_mount "$T/huge" "$M"
check "10M: find a class dir, read lines, files" sh -c "
	test \$(find '$M/images/class 2' -type f | head -200000 | wc -l) = 200000 &&
	test \$(head -c 4000000 '$M/splits/train.txt' | wc -l) -gt 100000 &&
	test \$(cat '$M/images/class 9/9999999.npy' | wc -c) = 3264"
anon=$(awk '/RssAnon/ {print $2}' "/proc/${SFS_PID_OF[$M]}/status")
echo "    (daemon anonymous memory with 10M samples: ${anon} kB)"
# Under ASan the figure also holds shadow memory (an eighth of every byte the
# daemon touches, the mapped index included) and the quarantine of freed
# blocks, so it measures the sanitizer; the plain build is the one judged.
if [ "$SAMPLEFS_BUILD" != build-asan ]; then
	check "10M: daemon anonymous memory under 64 MiB (8 bytes/sample would be 80)" \
		test "$anon" -lt 65536
fi
check "df -i counts 10M + 17 inodes" test "$(df --output=itotal "$M" | tail -1 | tr -d ' ')" = 10000017
check "unmount 10M" sfs_umount "$M"

# ---- hostile inputs: refused naming the file, or served with a warning ----
while read -r c want; do
	B=$T/bad/$c
	if [ "$want" = refuse ]; then
		check "bad input '$c': mount refused" expect_fail "error: .*broken" \
			timeout 60 "$SAMPLEFS" -f "$B" "$M"
		grep -q " $M fuse" /proc/mounts && fusermount3 -u "$M"
	else
		check "bad input '$c': mounts" sfs_mount "$B" "$M"
		check "bad input '$c': warning names the file" grep -q "warning: .*broken.npy" "$(log_of "$M")"
		check "bad input '$c': $want whole rows served" \
			test "$(ls "$M/images/broken" | wc -l)" = "$want"
		check "bad input '$c': good class intact" test "$(ls "$M/images/good" | wc -l)" = 20
		check "unmount '$c'" sfs_umount "$M"
	fi
done <"$T/bad.cases"

# ---- a class file truncated while mounted: EIO, never wrong bytes ----
cp -a "$T/flat.orig" "$T/shrink"
check "mount a source to shrink" sfs_mount "$T/shrink" "$M"
check "image reads before" sh -c "cat '$M/images/cat/000070.npy' >/dev/null"
truncate -s 5000 "$T/shrink/cat.npy"
check "image of the cut file gives EIO" expect_fail "Input/output error" cat "$M/images/cat/000079.npy"
check "other classes still read" sh -c "cat '$M/images/Zebra/000030.npy' >/dev/null"
check "a second read of it gives EIO too" expect_fail "Input/output error" cat "$M/images/cat/000078.npy"
check "the change is logged once, naming the file" \
	test "$(grep -c "cat.npy: changed since mounting" "$(log_of "$M")")" = 1
check "unmount shrink" sfs_umount "$M"

sfs_done
