#!/usr/bin/env bash
# Compressed tars at their edges (core/io/codecs/zsource.c, zrun.c, the codecs,
# core/index/tarindex/tarindex_build.c): an empty archive (a 0-byte .tar, an empty
# gzip, xz, zstd or bzip2 stream) mounts as an empty tree, as bsdtar lists
# nothing; a tar in a compression samplefs reads through libarchive
# (compress's .Z, lz4, lzip, lzma, lzop, made by their tools) mounts; a
# block damaged in the middle of an `xz -T0`, pzstd, bzip2 or multi-member
# gzip file keeps the members before it, every codec alike (their headers
# lie before the damaged block's first byte, found by tests/unit/zblocks.py
# from the tools' own tables; their bytes as in the tar, or EIO where they
# reach into it), at the first mount, whose index build read the damaged
# bytes while the pass ran; and a block found damaged by a read (the file
# changed under its stamp) is decoded once, later reads of it fail at once.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/ztree_lib.sh"
sfs_setup
T=$SFS_TMP
ZBLOCKS=$SFS_ROOT/tests/unit/zblocks.py

# ---- empty archives ----
: >"$T/empty.tar"
gzip -c </dev/null >"$T/empty.tar.gz"
xz -c </dev/null >"$T/empty.tar.xz"
zstd -q -c </dev/null >"$T/empty.tar.zst"
bzip2 -c </dev/null >"$T/empty.tar.bz2"
for f in empty.tar empty.tar.gz empty.tar.xz empty.tar.zst empty.tar.bz2; do
	mnt=$T/m-$f
	check "$f: bsdtar lists nothing" \
		bash -c '[ -z "$(bsdtar -tf "$0")" ] && [ "${PIPESTATUS[0]}" = 0 ]' "$T/$f"
	check "$f: mounted (the layout found by its name)" sfs_mount "$T/$f" "$mnt" || continue
	check "$f: an empty tree" test -z "$(ls -A "$mnt")"
	check "$f: unmount" sfs_umount "$mnt"
done

# ---- compressions samplefs reads through libarchive ----
# (issue 28 part 3: they were refused; now decompressed once, as
# test_libarchive.sh checks in full: here, files made by their own tools)
mkdir -p "$T/small" && printf 'one\n' >"$T/small/a" && tar -cf "$T/small.tar" -C "$T/small" .
compress -c "$T/small.tar" >"$T/small.tar.Z"
lz4 -q -c "$T/small.tar" >"$T/small.tar.lz4"
lzip -c "$T/small.tar" >"$T/small.tar.lz"
lzma -c "$T/small.tar" >"$T/small.tar.lzma"
lzop -c "$T/small.tar" >"$T/small.tar.lzo"
for f in small.tar.Z small.tar.lz4 small.tar.lz small.tar.lzma small.tar.lzo; do
	mnt=$T/m-$f
	check "$f: mounted (the layout found by its name)" sfs_mount "$T/$f" "$mnt" || continue
	check "$f: its member as in the tar" cmp "$mnt/a" "$T/small/a"
	check "$f: unmount" sfs_umount "$mnt"
done

# ---- a damaged block in the middle ----
ztree() {
	local T=$1
	tree_tar "$T" 8 60 2 || return 1
	xz -T0 -1 --block-size=1MiB -c "$T/t.tar" >"$T/blocks.tar.xz"
	pzstd -q -p 2 -c "$T/t.tar" >"$T/pzstd.tar.zst" 2>/dev/null
	bzip2 -c "$T/t.tar" >"$T/one.tar.bz2"
	xz -T0 -1 --block-size=8MiB -c "$T/t.tar" >"$T/long.tar.xz"
	# gzip members of 1,000,000 bytes each, concatenated, and their
	# table (zblocks.py -c's lines: gzip has no index of its own)
	split -b 1000000 "$T/t.tar" "$T/part."
	local p u=0 c=0 n k
	for p in "$T"/part.*; do
		gzip -c "$p" >"$p.gz"
		n=$(stat -c %s "$p") k=$(stat -c %s "$p.gz")
		echo "$u $n $c $((c + k))" >>"$T/members.tar.gz.blocks"
		u=$((u + n)) c=$((c + k))
		cat "$p.gz" >>"$T/members.tar.gz"
		rm -f "$p" "$p.gz"
	done
}
sfs_shared zdamage-tree ztree || exit 1

# damage FILE: copies FILE to bad-FILE with a byte flipped in the middle of
# its block (or frame, or gzip member) nearest 45 % of the tar, not the
# first; prints that block's first uncompressed byte
damage() {
	"$PY" - "$T/$1" "$T/bad-$1" "$ZBLOCKS" <<'EOF'
import os, shutil, subprocess, sys
src, dst, zb = sys.argv[1:4]
if os.path.exists(src + ".blocks"):
    out = open(src + ".blocks").read()
else:
    out = subprocess.run([sys.executable, zb, "-c", src], check=True,
                         capture_output=True, text=True).stdout
blocks = [tuple(map(int, l.split())) for l in out.splitlines()]
usize = sum(b[1] for b in blocks)
k = min(range(1, len(blocks)), key=lambda i: abs(blocks[i][0] - usize * 0.45))
uoff, _, coff, cend = blocks[k]
shutil.copy(src, dst)
with open(dst, "r+b") as f:
    f.seek((coff + cend) // 2)
    b = f.read(1)
    f.seek((coff + cend) // 2)
    f.write(bytes([b[0] ^ 0x10]))
print(uoff)
EOF
}

# kept TAR MNT U [SLACK]: the mount holds exactly the members whose headers
# lie before uncompressed byte U (but directories, which it may make for
# their files), each reading as in the tar, or giving EIO when its bytes
# reach U or past; with SLACK, the damage may be taken to start up to
# SLACK bytes before U (gzip: at the access point before the member, the
# bytes from there giving EIO): the members before some byte in
# [U - SLACK, U]
kept() {
	"$PY" - "$@" <<'EOF'
import errno, os, sys, tarfile
tar, mnt, u = sys.argv[1], sys.argv[2], int(sys.argv[3])
slack = int(sys.argv[4]) if len(sys.argv) > 4 else 0
t = tarfile.open(tar)
every = [m for m in t if not m.isdir()]
got = set()
for d, dirs, names in os.walk(mnt):
    for n in names:
        got.add(os.path.relpath(os.path.join(d, n), mnt))
cut = u
for m in every:
    if u - slack <= m.offset < u and os.path.normpath(m.name) not in got:
        cut = min(cut, m.offset)
want = {os.path.normpath(m.name): m for m in every if m.offset < cut}
# the member the damage cuts may be left out instead (a stream that ends
# there: bzip2 gives no byte of a block whose data does not decode)
cut_short = {n for n, m in want.items() if m.offset_data + m.size > u - slack}
if got == set(want) - cut_short:
    want = {n: m for n, m in want.items() if n in got}
if got != set(want):
    sys.exit(f"    members: {len(got)} mounted, {len(want)} before the damage; "
             f"extra {sorted(got - set(want))[:3]}, missing {sorted(set(want) - got)[:3]}")
eio = 0
for name, m in want.items():
    p = os.path.join(mnt, name)
    if m.issym():
        if os.readlink(p) != m.linkname:
            sys.exit(f"    {name}: link to {os.readlink(p)}")
        continue
    try:
        data = open(p, "rb").read()
    except OSError as e:
        if e.errno != errno.EIO or m.offset_data + m.size <= u - slack:
            sys.exit(f"    {name}: {e}")
        eio += 1
        continue
    if data != t.extractfile(m).read():
        sys.exit(f"    {name}: wrong bytes")
print(f"    {len(want)} members kept, {eio} give EIO")
EOF
}

# said_damage FILE U SLACK LOG: LOG says where bad-FILE is damaged and how
# many members are kept before it: "damaged N MiB into its uncompressed
# bytes ...: the tree has the K members before the damage, those after it
# are lost", N U's MiB (or fewer, by SLACK), or, when the stream ends at
# the damage, the codec's warning naming U and "keeping the K members"
said_damage() {
	local f=$1 u=$2 slack=$3 log=$4 mib
	mib=$((u >> 20))
	[ "$slack" = 0 ] || mib='[0-9]*'
	grep -q "bad-$f: damaged $mib MiB into its uncompressed bytes ([0-9]*% of them): the tree has the [0-9]* members before the damage, those after it are lost" "$log" ||
	{ grep -q "bad-$f: .* at compressed offset [0-9]* (uncompressed bytes from $u)" "$log" &&
	  grep -q "bad-$f: keeping the [0-9]* members before the damage" "$log"; }
}
for f in blocks.tar.xz pzstd.tar.zst one.tar.bz2 members.tar.gz; do
	u=$(damage "$f") || { check "bad-$f: damaged" false; continue; }
	mnt=$T/m-bad-$f
	slack=0
	[[ $f == *.gz ]] && slack=$((1 << 20))	# -o span=: 1 MiB
	check "bad-$f: mounted (damaged from uncompressed byte $u)" \
		sfs_mount "$T/bad-$f" "$mnt" -o layout=tar || continue
	check "bad-$f: the members before the damage, and only those" \
		kept "$T/t.tar" "$mnt" "$u" "$slack"
	check "bad-$f: the log names the damage and the members kept before it" \
		said_damage "$f" "$u" "$slack" "$(sfs_log "$mnt")"
	check "bad-$f: unmount" sfs_umount "$mnt"
	check "bad-$f: remounted from its saved index" \
		sfs_mount "$T/bad-$f" "$mnt" -o layout=tar || continue
	check "bad-$f: remount: the same members" kept "$T/t.tar" "$mnt" "$u" "$slack"
	check "bad-$f: remount: unmount" sfs_umount "$mnt"
done

# ---- a block found damaged by a read ----
# long.tar.xz has blocks of 8 MiB (spans of 1 MiB inside them, read by
# decoding from the block's start); mounted whole, then a byte of its
# second block flipped with its size and mtime kept (the saved index and
# access points are used), and every file read in tar order: the block is
# decoded to where it goes wrong once, and every later read of it fails at
# once
cp -p "$T/long.tar.xz" "$T/chg.tar.xz"
mnt=$T/m-chg
check "chg.tar.xz: mounted" sfs_mount "$T/chg.tar.xz" "$mnt" -o layout=tar &&
	check "chg.tar.xz: unmount" sfs_umount "$mnt"
"$PY" - "$T/chg.tar.xz" "$ZBLOCKS" <<'EOF'
import os, subprocess, sys
path, zb = sys.argv[1:3]
st = os.stat(path)
out = subprocess.run([sys.executable, zb, "-c", path], check=True,
                     capture_output=True, text=True).stdout
_, _, coff, cend = map(int, out.splitlines()[1].split())
with open(path, "r+b") as f:
    f.seek((coff + cend) // 2)
    b = f.read(1)
    f.seek((coff + cend) // 2)
    f.write(bytes([b[0] ^ 0x10]))
os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
EOF
check "chg.tar.xz: remounted" sfs_mount "$T/chg.tar.xz" "$mnt" -o layout=tar
check "chg.tar.xz: each file reads right or gives EIO, some EIO" "$PY" - "$T/t.tar" "$mnt" <<'EOF'
import errno, os, sys, tarfile
t = tarfile.open(sys.argv[1])
eio = 0
for m in sorted((m for m in t if m.isfile()), key=lambda m: m.offset):
    try:
        data = open(os.path.join(sys.argv[2], m.name), "rb").read()
    except OSError as e:
        if e.errno != errno.EIO:
            sys.exit(f"    {m.name}: {e}")
        eio += 1
        continue
    if data != t.extractfile(m).read():
        sys.exit(f"    {m.name}: wrong bytes")
if not eio:
    sys.exit("    no read failed")
print(f"    {eio} files give EIO")
EOF
log=$(sfs_log "$mnt")
check "chg.tar.xz: the damaged block was decoded once (one failure said)" \
	test "$(grep -c "chg.tar.xz: span at uncompressed offset .*: EIO" "$log")" = 1
check "chg.tar.xz: later reads of it fail at once, said" \
	grep -q "chg.tar.xz: its uncompressed bytes .* are damaged (found by an earlier read): reads of them give EIO" "$log"
check "chg.tar.xz: unmount" sfs_umount "$mnt"

sfs_done
