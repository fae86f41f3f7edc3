#!/usr/bin/env bash
# xz, zstd and bzip2 tars (core/io/codecs/zxz.c, zzstd.c, zbz2.c) end to end: one
# tar made by GNU tar, compressed by the real tools (xz, xz -T0 with several
# blocks, zstd, pzstd, bzip2, pbzip2), mounted with layout=tar and compared
# file by file with what `tar -x` extracts (tree_compare.py), with reads at
# random offsets; an ImageNet release whose tars are xz, zstd and bzip2
# streams, layout=imagenet, against imagenet_oracle.py; one block or
# frame of 70 MiB is warned about at mount (naming the fix) and still reads
# right; damaged streams (a flipped byte, a bzip2 block whose CRC fails, a
# truncation) give EIO for the files they hold, named in the log, and the
# right bytes for the others, never wrong ones; bombs (concatenated streams
# of zeros) are bounded (the daemon's peak RSS).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/ztree_lib.sh"
sfs_setup
T=$SFS_TMP
COMPARE=$SFS_ROOT/tests/integration/tree_compare.py

# the tree: small and large files, text and random bytes, a symlink; its
# tar and the compressed tars (made once for the plain and the ASan run:
# the compressors take most of the setup)
ztree() {
	local T=$1
	tree_tar "$T" 3 30 1 || return 1

	xz -1 -c "$T/t.tar" >"$T/one.tar.xz"
	xz -T0 -1 --block-size=1MiB -c "$T/t.tar" >"$T/blocks.tar.xz"
	cat "$T/one.tar.xz" >"$T/two.txz"	# two streams, the second empty
	xz -c </dev/null >>"$T/two.txz"
	zstd -q -c "$T/t.tar" >"$T/one.tar.zst"
	split -b 1000000 "$T/t.tar" "$T/part."	# zstd frames of 1 MB, concatenated
	for p in "$T"/part.*; do zstd -q -c "$p"; done >"$T/frames.tar.zst"
	pzstd -q -p 2 -c "$T/t.tar" >"$T/pzstd.tar.zst" 2>/dev/null
	bzip2 -c "$T/t.tar" >"$T/one.tar.bz2"
	pbzip2 -p2 -c "$T/t.tar" >"$T/pbzip2.tar.bz2"
}
sfs_shared zcodecs-tree ztree && extract || exit 1

check "xz -T0 made several blocks" \
	test "$(xz -lv "$T/blocks.tar.xz" | awk '/Blocks:/ { print $2; exit }')" -gt 3
check "pzstd's file starts with a skippable frame" \
	"$PY" -c 'import sys; sys.exit(open(sys.argv[1], "rb").read(4) != b"\x50\x2a\x4d\x18")' \
	"$T/pzstd.tar.zst"


n=0
# same_tree FILE: FILE mounted (span=64k) is the extracted tree
same_tree() {
	local f=$1 mnt=$T/m$n
	n=$((n + 1))
	check "$f: mounted" sfs_mount "$T/$f" "$mnt" -o layout=tar,span=64k || return
	check "$f: every file as tar -x made it" "$PY" "$COMPARE" "$T/x" "$mnt"
	check "$f: reads at random offsets of big.bin" random_reads "$mnt" big.bin 25
	check "$f: no warning about long blocks" \
		bash -c '! grep -q "a random read decodes" "$0"' "$(sfs_log "$mnt")"
	check "$f: unmount" sfs_umount "$mnt"
}
for f in one.tar.xz blocks.tar.xz two.txz one.tar.zst pzstd.tar.zst frames.tar.zst \
	 one.tar.bz2 pbzip2.tar.bz2; do
	same_tree "$f"
done

# a remount finds the access points saved by the first mount
mnt=$T/again
check "remount: mounted" sfs_mount "$T/pbzip2.tar.bz2" "$mnt" -o layout=tar,span=64k
check "remount: the saved access points, no second pass" \
	bash -c '! grep -q "access points, in" "$0"' "$(sfs_log "$mnt")"
check "remount: reads at random offsets of big.bin" random_reads "$mnt" big.bin 25
check "remount: unmount" sfs_umount "$mnt"

# ImageNet: the release's train and val tars compressed whole, under their
# own names (a local source is known by its first bytes); imagenet_oracle.py
# reads the uncompressed release
"$PY" - "$T/inet" "$SFS_ROOT" <<'EOF'
import os, sys
sys.path.insert(0, os.path.join(sys.argv[2], "tests", "fixtures"))
from make_imagenet import make_imagenet, pick_wnids
make_imagenet(sys.argv[1], pick_wnids(3, seed=5), per_class=4, n_val=6, seed=2)
EOF
for z in "xz -T0" "zstd -q" "bzip2"; do
	d=$T/inet-${z%% *}
	cp -a "$T/inet" "$d"
	for t in ILSVRC2012_img_train.tar ILSVRC2012_img_val.tar; do
		$z -c "$T/inet/$t" >"$d/$t" && touch -r "$T/inet/$t" "$d/$t"
	done
	mnt=$T/m-inet-${z%% *}
	check "imagenet, tars by $z: mounted" sfs_mount "$d" "$mnt" -o layout=imagenet || continue
	check "imagenet, tars by $z: the mount agrees with the oracle" \
		"$PY" "$SFS_ROOT/tests/integration/imagenet_oracle.py" "$T/inet" "$mnt"
	check "imagenet, tars by $z: unmount" sfs_umount "$mnt"
done

# one block or frame of 70 MiB: a warning naming the file and the fix, and
# the bytes still right (reads in order, then at random offsets)
mkdir -p "$T/long" && head -c 70M /dev/zero >"$T/long/zeros" &&
	printf 'end\n' >>"$T/long/zeros" && tar -cf "$T/long.tar" -C "$T/long" zeros
xz -0 -T1 -c "$T/long.tar" >"$T/long.tar.xz"
zstd -q -1 -c "$T/long.tar" >"$T/long.tar.zst"
for f in long.tar.xz long.tar.zst; do
	mnt=$T/m-$f
	check "$f: mounted" sfs_mount "$T/$f" "$mnt" -o layout=tar || continue
	check "$f: one warning naming the file and the fix" \
		test "$(grep -c "$f: up to 70 MiB of it in one .* block or frame.*\(xz -T0\|pzstd\)" \
			"$(sfs_log "$mnt")")" = 1
	check "$f: its bytes in order" cmp "$mnt/zeros" "$T/long/zeros"
	check "$f: its bytes at random offsets" "$PY" - "$mnt/zeros" <<'EOF'
import random, sys
f = open(sys.argv[1], "rb")
rng = random.Random(3)
for off in sorted(rng.randrange(70 << 20) for _ in range(6)) + [5 << 20]:
    f.seek(off)
    if f.read(4096) != bytes(4096):
        sys.exit(f"    differ at {off}")
f.seek(70 << 20)
if f.read() != b"end\n":
    sys.exit("    the end differs")
EOF
	check "$f: unmount" sfs_umount "$mnt"
done

# damage inside big.bin's random part, 2 MiB in: the tar headers stay
# readable (and out of the tar index's read-ahead); coff FILE U: the
# compressed offset about where FILE's uncompressed offset U is (read back
# with the tools' decoders)
big=$("$PY" -c 'import sys, tarfile
print(tarfile.open(sys.argv[1]).getmember("./big.bin").offset_data)' "$T/t.tar")
coff() {
	"$PY" - "$1" "$2" <<'EOF'
import bz2, lzma, subprocess, sys
path, want = sys.argv[1], int(sys.argv[2])
data = open(path, "rb").read()
if path.endswith(".zst"):	# the first prefix that gives more than want
    lo, hi = 0, len(data)
    while hi - lo > 16384:
        mid = (lo + hi) // 2
        got = len(subprocess.run(["zstd", "-dcq"], input=data[:mid],
                                 capture_output=True).stdout)
        lo, hi = (mid, hi) if got <= want else (lo, mid)
    print(hi - 2048)
    sys.exit()
new = bz2.BZ2Decompressor if path.endswith(".bz2") else lzma.LZMADecompressor
d, got = new(), 0
for off in range(0, len(data), 16384):
    chunk = data[off:off + 16384]
    while chunk:	# pbzip2: a stream per block
        got += len(d.decompress(chunk))
        chunk, d = (d.unused_data, new()) if d.eof else (b"", d)
    if got > want:	# bzip2 gives a block's bytes at its end: back into it
        print(off - (200000 if path.endswith(".bz2") else 2048))
        break
EOF
}
for f in blocks.tar.xz frames.tar.zst pbzip2.tar.bz2; do
	cp "$T/$f" "$T/flip-$f"
	flip "$T/flip-$f" "$(coff "$T/$f" $((big + (2 << 20))))"
done
# a bzip2 block whose stored CRC is wrong (its data intact): the first bit
# of the CRC after the block magic that comes after big.bin's first MiB
"$PY" - "$T/one.tar.bz2" "$(coff "$T/one.tar.bz2" $((big + (2 << 20))))" <<'EOF'
import sys
path, after = sys.argv[1], int(sys.argv[2]) * 8
data = bytearray(open(path, "rb").read())
bits = bin(int.from_bytes(data, "big"))[2:].zfill(len(data) * 8)
at = bits.index(bin(0x314159265359)[2:].zfill(48), after) + 48
data[at // 8] ^= 0x80 >> (at % 8)
open(path.replace("one.", "crc-one."), "wb").write(data)
EOF
for f in flip-blocks.tar.xz flip-frames.tar.zst flip-pbzip2.tar.bz2 \
	 crc-one.tar.bz2; do
	mnt=$T/bad-$f
	check "$f: mounted" sfs_mount "$T/$f" "$mnt" -o layout=tar,span=64k || continue
	check "$f: the damage is named in the log" \
		grep -q "$f: .*\(damaged\|corrupt\|truncated\|mismatch\|checksum\|wrong\).* at compressed offset" \
		"$(sfs_log "$mnt")"
	if [[ $f == *.bz2 ]]; then	# the pass ends there: the rest is left out
		check "$f: each file reads right or gives EIO or is left out" \
			right_or_eio "$mnt" any
		check "$f: big.bin is left out, named" \
			grep -q "$f: member './big.bin' .* truncated" "$(sfs_log "$mnt")"
	else
		check "$f: each file reads right or gives EIO, some EIO" right_or_eio "$mnt"
		check "$f: the EIO is named in the log" \
			grep -q "$f: its uncompressed bytes .* are damaged (.*): reads of them give EIO" "$(sfs_log "$mnt")"
	fi
	check "$f: unmount" sfs_umount "$mnt"
done

# truncated: the mount is refused naming the truncation, or each file reads
# right or gives EIO
for f in one.tar.xz blocks.tar.xz one.tar.zst one.tar.bz2; do
	head -c $(( $(stat -c %s "$T/$f") * 2 / 3 )) "$T/$f" >"$T/cut-$f"
	mnt=$T/cut-m-$f
	if sfs_mount "$T/cut-$f" "$mnt" -o layout=tar 2>"$T/cut.err"; then
		check "cut-$f: the truncation is named" \
			grep -q "cut-$f: truncated" "$(sfs_log "$mnt")"
		check "cut-$f: each file right or EIO or left out" right_or_eio "$mnt" any
		check "cut-$f: unmount" sfs_umount "$mnt"
	else
		check "cut-$f: the refusal names the truncation" \
			grep -q "cut-$f: truncated" "$T/cut.err"
	fi
done

# bombs: concatenated streams of zeros (zstd and xz 256 MiB, bzip2
# 128 MiB)
head -c 64M /dev/zero >"$T/z64"
zstd -q -1 -c "$T/z64" >"$T/z.zst"
xz -0 -T1 -c "$T/z64" >"$T/z.xz"
bzip2 -1 -c "$T/z64" >"$T/z.bz2"
rm -f "$T/z64"
for i in 1 2 3 4; do cat "$T/z.zst"; done >"$T/bomb.tar.zst"
for i in 1 2 3 4; do cat "$T/z.xz"; done >"$T/bomb.tar.xz"
for i in 1 2; do cat "$T/z.bz2"; done >"$T/bomb.tar.bz2"
for f in bomb.tar.zst bomb.tar.xz bomb.tar.bz2; do
	mnt=$T/m-$f
	check "$f: mounted (an empty tar)" sfs_mount "$T/$f" "$mnt" -o layout=tar || continue
	hwm=$(awk '/VmHWM/ { print $2 }' "/proc/${SFS_PID_OF[$mnt]}/status")
	check "$f: the daemon's peak RSS ${hwm} kB is under 128 MiB (without ASan's)" \
		test "$SAMPLEFS_BUILD" != build -o "${hwm:-999999}" -lt 131072
	check "$f: unmount" sfs_umount "$mnt"
done

sfs_done
