#!/usr/bin/env bash
# Nested compressed tars (core/index/tarindex/tarindex_znest.c, core/io/slice.c): a
# tar holding .tar.gz, .tgz, .tar.xz, .tar.zst and .tar.bz2 members made by
# the real tools, one of them two levels deep (a .tar.xz inside a
# .tar.gz), mounted with layout=tar,recursive=2 and compared file by file
# with what GNU tar extracts when every inner archive is extracted in turn
# (tree_compare.py), with reads at random offsets; members that only look
# like compressed tars stay files; a clash keeps the archive's name; a
# remount uses the saved index and the saved access points (no pass: the
# daemon's log); a damaged inner stream (BGZF) keeps its members, gives
# EIO for the damaged span and the right bytes elsewhere, with a warning
# naming the outer tar, the member's offset and its name; a bomb member (a
# gzip'ed tar of 160 MiB of zeros, and one whose gzip trailer claims
# another size) is bounded (the daemon's peak RSS).  ImageNet
# recompressed: class tars inside the train tar as .tar.gz / .tar.xz /
# .tar.zst, the train tar itself zstd'ed and the val tar gzip'ed, and the
# per-class form train/<wnid>.tar.gz, against imagenet_oracle.py.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/ztree_lib.sh"
sfs_setup
T=$SFS_TMP
COMPARE=$SFS_ROOT/tests/integration/tree_compare.py

# the inner archive: make_tree's tree, tarred by GNU tar
make_tree "$T/src" 2 8 0
tar -cf "$T/a.tar" -C "$T/src" . || exit 1
mkdir -p "$T/o/lvl" "$T/deep"
gzip -c "$T/a.tar" >"$T/o/a.tar.gz"
pigz -c "$T/a.tar" >"$T/o/b.tgz"
xz -1 -T0 --block-size=1MiB -c "$T/a.tar" >"$T/o/c.tar.xz"
zstd -q -c "$T/a.tar" >"$T/o/d.tar.zst"
bzip2 -c "$T/a.tar" >"$T/o/e.tar.bz2"
# two levels: deep.tar.gz holds i.tar.xz and a file
xz -1 -c "$T/a.tar" >"$T/deep/i.tar.xz"
echo "beside the inner archive" >"$T/deep/note.txt"
tar -cf - -C "$T/deep" . | gzip -c >"$T/o/lvl/deep.tar.gz"
# look-alikes: gzip of text, random bytes under a compressed name
head -c 3000 /dev/urandom | base64 | gzip -c >"$T/o/text.tar.gz"
head -c 5000 /dev/urandom >"$T/o/noise.tar.zst"
echo plain >"$T/o/plain.txt"
tar -cf "$T/outer.tar" -C "$T/o" . || exit 1

# the oracle: GNU tar extracts the outer tar, then every member named as a
# compressed tar that GNU tar lists, into the directory named without the
# suffix, two levels down
mkdir -p "$T/x" && tar -xf "$T/outer.tar" -C "$T/x" || exit 1
extract_inner() {
	local f d
	while IFS= read -r -d '' f; do
		d=$(echo "$f" | sed -E 's/\.(tar\.gz|tgz|tar\.xz|tar\.zst|tar\.bz2)$//')
		tar -tf "$f" >/dev/null 2>&1 || continue
		mkdir -p "$d" && tar -xf "$f" -C "$d" && rm -f "$f"
	done < <(find "$T/x" -type f \( -name '*.tar.gz' -o -name '*.tgz' -o \
		-name '*.tar.xz' -o -name '*.tar.zst' -o -name '*.tar.bz2' \) -print0)
}
extract_inner
extract_inner
check "the oracle extracted two levels" test -f "$T/x/lvl/deep/i/big.bin"

mnt=$T/m
check "mounted" sfs_mount "$T/outer.tar" "$mnt" -o layout=tar,recursive=2,span=64k
check "every file as tar -x of each level made it" "$PY" "$COMPARE" "$T/x" "$mnt"
for d in a b c d e lvl/deep/i; do
	check "$d: reads at random offsets of big.bin" random_reads "$mnt" "$d/big.bin" 20
done
check "look-alikes stay files, byte for byte" \
	bash -c 'cmp "$0/text.tar.gz" "$1/text.tar.gz" && cmp "$0/noise.tar.zst" "$1/noise.tar.zst"' \
	"$T/o" "$mnt"
check "one pass per nested stream, named by outer tar, offset and member" \
	grep -q "outer.tar@[0-9]*:lvl/deep.tar.gz: gzip, .* access points, in" "$(sfs_log "$mnt")"
check "unmount" sfs_umount "$mnt"

check "remount: mounted" sfs_mount "$T/outer.tar" "$mnt" -o layout=tar,recursive=2,span=64k
check "remount: the saved index" grep -q "using the saved index" "$(sfs_log "$mnt")"
check "remount: the saved access points, no second pass" \
	bash -c '! grep -q "access points, in" "$0"' "$(sfs_log "$mnt")"
check "remount: reads at random offsets" random_reads "$mnt" lvl/deep/i/big.bin 20
check "remount: unmount" sfs_umount "$mnt"

check "recursive=1: the .tar.xz two levels down stays a file" \
	sfs_mount "$T/outer.tar" "$T/m1" -o layout=tar
check "recursive=1: its bytes" cmp "$T/deep/i.tar.xz" "$T/m1/lvl/deep/i.tar.xz"
check "recursive=1: unmount" sfs_umount "$T/m1"

# a clash: "k.tar.gz" beside a directory "k" keeps its name as the
# directory of its members, as a nested "k.tar" does, with a warning
mkdir -p "$T/cl/k" "$T/cl-in"
echo inner >"$T/cl-in/f" && echo outer >"$T/cl/k/g"
tar -cf - -C "$T/cl-in" f | gzip -c >"$T/cl/k.tar.gz"
tar -cf "$T/clash.tar" -C "$T/cl" k.tar.gz k || exit 1
check "clash: mounted" sfs_mount "$T/clash.tar" "$T/mcl" -o layout=tar
check "clash: both reachable" bash -c \
	'[ "$(cat "$0/k.tar.gz/f")" = inner ] && [ "$(cat "$0/k/g")" = outer ]' "$T/mcl"
check "clash: said, naming both" grep -q "nested tar 'k.tar.gz' would be directory 'k'" \
	"$(sfs_log "$T/mcl")"
check "clash: unmount" sfs_umount "$T/mcl"

# damage in the inner gzip, 2 MiB into big.bin's random part (stored
# deflate blocks: the compressed offset is about the uncompressed one);
# bgzip's, as a gzip member's CRC-32 is checked at its end: a damaged
# single-member gzip gives EIO for all of it (so it stays a file), BGZF
# for the damaged 64 KiB member only
big=$("$PY" -c 'import sys, tarfile
print(tarfile.open(sys.argv[1]).getmember("./big.bin").offset_data)' "$T/a.tar")
mkdir -p "$T/bad" "$T/ca"
bgzip -c "$T/a.tar" >"$T/bad/bad.tar.gz"
flip "$T/bad/bad.tar.gz" $((big + (2 << 20)))
tar -cf "$T/bad.tar" -C "$T/bad" . || exit 1
mv "$T/x" "$T/x-outer" && mkdir -p "$T/x" && tar -xf "$T/a.tar" -C "$T/x"
mnt=$T/mbad
check "damaged inner stream: mounted" sfs_mount "$T/bad.tar" "$mnt" -o layout=tar
check "damaged inner stream: EIO or the right bytes, never others" right_or_eio "$mnt/bad"
check "damaged inner stream: the warning names the outer tar, offset and member" \
	grep -q "warning: .*/bad.tar@[0-9]*:bad.tar.gz: .*EIO" \
	"$(sfs_log "$mnt")"
check "damaged inner stream: unmount" sfs_umount "$mnt"

# bombs: a tar of 160 MiB of zeros, gzip'ed (160 KB), inside a tar; and a
# tar of 1 MiB of zeros whose gzip trailer claims 4 GiB - 1 (not a tar
# then: every span of its one member fails its length check, so a file)
mkdir -p "$T/z" "$T/b"
truncate -s 1M "$T/z/zeros"
tar -cf - -C "$T/z" zeros | gzip -1 -c >"$T/b/claims.tar.gz"
truncate -s 160M "$T/z/zeros"
tar -cf - -C "$T/z" zeros | gzip -1 -c >"$T/b/bomb.tar.gz"
rm -f "$T/z/zeros"
"$PY" -c 'import sys
f = open(sys.argv[1], "r+b"); f.seek(-4, 2); f.write(b"\xff\xff\xff\xff")' "$T/b/claims.tar.gz"
tar -cf "$T/bomb.tar" -C "$T/b" . || exit 1
mnt=$T/mbomb
check "bomb: mounted" sfs_mount "$T/bomb.tar" "$mnt" -o layout=tar
hwm=$(awk '/VmHWM/ { print $2 }' "/proc/${SFS_PID_OF[$mnt]}/status")
check "bomb: the daemon's peak RSS ${hwm} kB is under 128 MiB (without ASan's)" \
	test "$SAMPLEFS_BUILD" != build -o "${hwm:-999999}" -lt 131072
check "bomb: its file has its size" test "$(stat -c %s "$mnt/bomb/zeros")" = $((160 << 20))
check "bomb: zeros at random offsets" "$PY" - "$mnt/bomb/zeros" <<'EOF'
import random, sys
f = open(sys.argv[1], "rb")
rng = random.Random(5)
for off in sorted(rng.randrange(160 << 20) for _ in range(5)):
    f.seek(off)
    if f.read(8192) != bytes(min(8192, (160 << 20) - off)):
        sys.exit(f"    differ at {off}")
EOF
check "bomb: the one whose trailer lies is a file, its bytes" \
	cmp "$T/b/claims.tar.gz" "$mnt/claims.tar.gz"
check "bomb: unmount" sfs_umount "$mnt"

# ImageNet recompressed: the fixture's release, its class tars compressed
# inside the train tar (names, order and times kept), the train tar zstd'ed
# and the val tar gzip'ed; then the per-class form, train/<wnid>.tar.gz
# (and the val tar xz'ed), against the fixture's per-class release.  Each
# compressed file keeps its plain one's mtime (the virtual tars' times).
"$PY" - "$T" "$SFS_ROOT" <<'EOF'
import gzip, io, lzma, os, shutil, subprocess, sys, tarfile
T, root = sys.argv[1:3]
sys.path.insert(0, os.path.join(root, "tests", "fixtures"))
from make_imagenet import make_imagenet, pick_wnids
wnids = pick_wnids(3, seed=5)
make_imagenet(f"{T}/inet", wnids, per_class=4, n_val=6, seed=2)
make_imagenet(f"{T}/inet-per-class", wnids, per_class=4, n_val=6, seed=2,
              class_tars_dir=True)
zstd = lambda b: subprocess.run(["zstd", "-q", "-c"], input=b, capture_output=True,
                                check=True).stdout
codecs = [(".tar.gz", gzip.compress), (".tar.xz", lzma.compress), (".tar.zst", zstd)]

def compress(src, dst, z):
    with open(src, "rb") as f, open(dst, "wb") as g:
        g.write(z(f.read()))
    shutil.copystat(src, dst)

src, dst = f"{T}/inet", f"{T}/inz"
os.makedirs(dst)
shutil.copy2(f"{src}/ILSVRC2012_devkit_t12.tar.gz", dst)
out = io.BytesIO()
with tarfile.open(f"{src}/ILSVRC2012_img_train.tar") as tin, \
     tarfile.open(fileobj=out, mode="w", format=tarfile.GNU_FORMAT) as tout:
    for i, m in enumerate(tin.getmembers()):
        sfx, z = codecs[i % len(codecs)]
        data = z(tin.extractfile(m).read())
        n = tarfile.TarInfo(m.name[:-len(".tar")] + sfx)
        n.size, n.mtime, n.mode = len(data), m.mtime, m.mode
        tout.addfile(n, io.BytesIO(data))
open(f"{dst}/train.tar", "wb").write(out.getvalue())
shutil.copystat(f"{src}/ILSVRC2012_img_train.tar", f"{dst}/train.tar")
compress(f"{dst}/train.tar", f"{dst}/ILSVRC2012_img_train.tar.zst", zstd)
os.unlink(f"{dst}/train.tar")
compress(f"{src}/ILSVRC2012_img_val.tar", f"{dst}/ILSVRC2012_img_val.tar.gz", gzip.compress)

src, dst = f"{T}/inet-per-class", f"{T}/inz-per-class"
os.makedirs(f"{dst}/train")
shutil.copy2(f"{src}/ILSVRC2012_devkit_t12.tar.gz", dst)
for name in sorted(os.listdir(f"{src}/train")):
    compress(f"{src}/train/{name}", f"{dst}/train/{name}.gz", gzip.compress)
compress(f"{src}/ILSVRC2012_img_val.tar", f"{dst}/ILSVRC2012_img_val.tar.xz", lzma.compress)
EOF
for d in inz inz-per-class; do
	mnt=$T/m-$d
	check "imagenet $d: mounted (detected)" sfs_mount "$T/$d" "$mnt" || continue
	check "imagenet $d: the mount agrees with the oracle" \
		"$PY" "$SFS_ROOT/tests/integration/imagenet_oracle.py" "$T/${d/inz/inet}" "$mnt"
	check "imagenet $d: no release tar said to be left out" \
		bash -c '! grep -q "not served" "$0"' "$(sfs_log "$mnt")"
	check "imagenet $d: unmount" sfs_umount "$mnt"
done

sfs_done
