#!/usr/bin/env bash
# Archives samplefs reads through libarchive (issue 28 part 3), mounted
# with layout=tar and compared with what `bsdtar -x` extracts from the same
# file (tree_compare.py: names, types, sizes, links, bytes):
#   - in place (formats/arcwalk.c): cpio (newc, odc; with hard links),
#     ISO 9660, ar; and a
#     cpio compressed with gzip (its bytes random access, zsource.c); no
#     spill file is made for them;
#   - decompressed once into a spill file (io/codecs/arxsource.c): 7-Zip,
#     tars compressed with lzma-alone, lz4, lzip, lzop, compress (.Z); with
#     cache_dir= the rendition is kept and a remount uses it (no second
#     pass), and one larger than cache_dir_size= is refused, naming it;
#   - 7-Zip, cpio and an lz4 tar over HTTP (nginx on loopback);
#   - RAR, from libarchive's own test archives when its repository is on
#     this machine (SFS_LIBARCHIVE_GIT; skipped, said, when not: rar cannot
#     be written here);
#   - hostile input: a truncated 7-Zip is refused by name; a 7-Zip damaged
#     in its packed data keeps the members before the damage, right; a
#     corrupt cpio keeps the members before the damage and a truncated one
#     gives EIO for the member cut short, right bytes for the others.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/ztree_lib.sh"
. "$(dirname "$0")/http_lib.sh"
sfs_setup
T=$SFS_TMP
COMPARE=$SFS_ROOT/tests/integration/tree_compare.py

larc_fixtures() {
	local D=$1
	make_tree "$D/src" 2 6 1 || return 1
	# hard links: three names of one file (newc stores the data with the
	# last, odc with each)
	ln "$D/src/d0/f2.bin" "$D/src/d1/hard" && ln "$D/src/d0/f2.bin" "$D/src/hard" || return 1
	mkdir -p "$D/flat" && cp "$D"/src/d0/*.bin "$D/flat/" || return 1
	bsdtar --format=newc -cf "$D/t.cpio" -C "$D/src" . &&
	bsdtar --format=odc -cf "$D/odc.cpio" -C "$D/src" . &&
	bsdtar --format=iso9660 -cf "$D/t.iso" -C "$D/src" . &&
	(cd "$D/flat" && bsdtar --format=ar -cf "$D/t.a" ./*.bin) &&
	bsdtar --format=newc -cf - -C "$D/src" . | gzip -c >"$D/t.cpio.gz" &&
	bsdtar --format=7zip -cf "$D/t.7z" -C "$D/src" . &&
	bsdtar --lzma -cf "$D/t.tar.lzma" -C "$D/src" . &&
	bsdtar --lz4 -cf "$D/t.tar.lz4" -C "$D/src" . &&
	bsdtar --lzip -cf "$D/t.tar.lz" -C "$D/src" . &&
	bsdtar --lzop -cf "$D/t.tar.lzo" -C "$D/src" . &&
	bsdtar -Z -cf "$D/t.tar.Z" -C "$D/src" . &&
	bsdtar --format=newc --lz4 -cf "$D/t.cpio.lz4" -C "$D/src" .
}
sfs_shared libarchive-tree larc_fixtures || exit 1

n=0
# same_tree FILE [OPTS]: FILE mounted is what bsdtar -x makes of it
same_tree() {
	local f=$1 opts=${2:-} mnt=$T/m$n x=$T/x$n
	n=$((n + 1))
	mkdir -p "$x" && bsdtar -xf "$T/$f" -C "$x" || { check "$f: bsdtar -x" false; return; }
	check "$f: mounted" sfs_mount "$T/$f" "$mnt" -o "layout=tar$opts" || return
	check "$f: every file as bsdtar -x made it" "$PY" "$COMPARE" "$x" "$mnt"
	check "$f: unmount" sfs_umount "$mnt"
}

# in place
for f in t.cpio odc.cpio t.iso t.a t.cpio.gz; do
	same_tree "$f"
done
# the daemon says so: cache_dir= (for archives decompressed once) is refused
mkdir -p "$T/m-inplace"
for f in t.cpio t.iso t.a; do
	check "$f: read in place (cache_dir= refused: nothing to decompress)" bash -c \
		'out=$(timeout 60 "$0" -f -o layout=tar,cache_dir="$1" "$2" "$3" 2>&1) && exit 1
		grep -q "cache_dir applies to .* and $2 is neither" <<<"$out"' \
		"$SAMPLEFS" "$T/cache-inplace" "$T/$f" "$T/m-inplace"
done

# decompressed once
mkdir -p "$T/x0-7z" && bsdtar -xf "$T/t.7z" -C "$T/x0-7z"
for f in t.7z t.tar.lzma t.tar.lz4 t.tar.lz t.tar.lzo t.tar.Z t.cpio.lz4; do
	same_tree "$f"
done

# a remount without cache_dir: the saved index, a new pass
mnt=$T/m-remount
if check "t.7z remount: mounted" sfs_mount "$T/t.7z" "$mnt" -o layout=tar; then
	check "t.7z remount: the saved index" grep -q "using the saved index" "$(sfs_log "$mnt")"
	check "t.7z remount: every file as bsdtar -x made it" "$PY" "$COMPARE" "$T/x0-7z" "$mnt"
	check "t.7z remount: unmount" sfs_umount "$mnt"
fi

# cache_dir: the rendition kept, used again by a remount
same_tree t.7z ",cache_dir=$T/cache"
check "7z: its rendition kept in cache_dir/archives" \
	test "$(ls "$T/cache/archives" | grep -c '\.tar$')" = 1
rm -f "$T"/cache/samplefs-*.sfsidx 2>/dev/null
touch -d '2001-01-01' "$T"/cache/archives/*.tar
same_tree t.7z ",cache_dir=$T/cache"
check "7z: the remount used it (it was touched, no new file)" bash -c \
	'[ "$(ls "$0" | wc -l)" = 1 ] && [ -n "$(find "$0" -newermt 2002-01-01 -name "*.tar")" ]' \
	"$T/cache/archives"

# the bound holds once a pass has ended (its size known then): with room
# for one and a half renditions, a second archive's pass leaves one; and
# the part file of a mount that died (a pid that is no process) goes with
# that pass, another live process's stays
R1=$(stat -c %s "$T"/cache/archives/*.tar)
sh -c 'exit 0' & dpid=$!; wait "$dpid"
echo x > "$T/cache/archives/0000000000000000.tar.part$dpid"
echo x > "$T/cache/archives/1111111111111111.tar.part$$"
# (text: its lz4 is small, its rendition as large as the first, so the
# room made before the pass, by the compressed size, is not enough)
mkdir -p "$T/big2" && "$PY" -c 'import sys
sys.stdout.write("".join("line %d of the text\n" % i for i in range(int(sys.argv[1]) // 20)))' \
	"$R1" > "$T/big2/text.txt"
bsdtar -c --lz4 -f "$T/t2.tar.lz4" -C "$T/big2" text.txt
same_tree t2.tar.lz4 ",cache_dir=$T/cache,cache_dir_size=$(( R1 + R1 / 2 ))"
check "cache_dir_size=: after the second pass one rendition is left, within the bound" bash -c \
	'[ "$(ls "$0" | grep -c "\.tar$")" = 1 ] && [ "$(cat "$0"/*.tar | wc -c)" -le "$1" ]' \
	"$T/cache/archives" "$(( R1 + R1 / 2 ))"
check "cache_dir: a dead mount's part file removed, a live one's kept" bash -c \
	'[ ! -e "$0/0000000000000000.tar.part$1" ] && [ -e "$0/1111111111111111.tar.part$2" ]' \
	"$T/cache/archives" "$dpid" "$$"
rm -f "$T/cache/archives/1111111111111111.tar.part$$"

# over the bound: refused, naming the option
mnt=$T/m-bound
check "7z over cache_dir_size=: not mounted" \
	bash -c '! timeout 60 "$0" -f -o layout=tar,cache_dir="$1",cache_dir_size=1M "$2" "$3" 2>"$4"' \
	"$SAMPLEFS" "$T/cache-small" "$T/t.7z" "$(mkdir -p "$mnt" && echo "$mnt")" "$T/bound.log"
check "7z over cache_dir_size=: the message names the file and the option" \
	grep -q "t.7z: a 7-Zip archive whose members take more than 1 MiB.*cache_dir_size=" "$T/bound.log"

# hostile input
head -c 2000 "$T/t.7z" >"$T/trunc.7z"
mnt=$T/m-trunc
check "truncated 7z: not mounted" \
	bash -c '! timeout 60 "$0" -f -o layout=tar "$1" "$2" 2>"$3"' \
	"$SAMPLEFS" "$T/trunc.7z" "$(mkdir -p "$mnt" && echo "$mnt")" "$T/trunc.log"
check "truncated 7z: refused by name" grep -q "trunc.7z: a 7-Zip archive.*libarchive cannot open it" "$T/trunc.log"
check "truncated 7z: no sanitizer report" bash -c '! grep -q "Sanitizer" "$0"' "$T/trunc.log"

# a 7z whose packed data is damaged (one byte flipped in its middle)
cp "$T/t.7z" "$T/bad.7z" && "$PY" - "$T/bad.7z" <<'PYEOF'
import sys
p = sys.argv[1]
b = bytearray(open(p, "rb").read())
b[len(b) // 2] ^= 0xff
open(p, "wb").write(b)
PYEOF
mkdir -p "$T/xbad" && bsdtar -xf "$T/t.7z" -C "$T/xbad"
mnt=$T/m-bad7z
if check "damaged 7z: mounted" sfs_mount "$T/bad.7z" "$mnt" -o layout=tar; then
	check "damaged 7z: the damage named" grep -q "bad.7z: a 7-Zip archive, damaged" "$(sfs_log "$mnt")"
	( T2=$T; T=$T/xbad-parent; mkdir -p "$T" && ln -sfn "$T2/xbad" "$T/x";
	  check "damaged 7z: what is listed reads right" right_or_eio "$mnt" any )
	check "damaged 7z: unmount" sfs_umount "$mnt"
fi

# a cpio whose second half is overwritten with a bad header, and one cut
# in the middle of big.bin's data
mkdir -p "$T/xcpio" && bsdtar -xf "$T/t.cpio" -C "$T/xcpio"
"$PY" - "$T/t.cpio" "$T/bad.cpio" "$T/cut.cpio" <<'PYEOF'
import sys
src, bad, cut = sys.argv[1:4]
b = bytearray(open(src, "rb").read())
heads, at = [], 0
while b[at:at + 6] == b"070701":	# newc: 13 fields of 8 hex digits
    heads.append(at)
    size, nsize = int(b[at + 54:at + 62], 16), int(b[at + 94:at + 102], 16)
    at = (at + 110 + nsize + 3) // 4 * 4
    at = (at + size + 3) // 4 * 4
assert len(heads) > 6, heads
b[heads[4]:heads[4] + 6] = b"07X7Z1"	# the fifth member's header
open(bad, "wb").write(b)
b = open(src, "rb").read()
j = b.find(b"big.bin")
open(cut, "wb").write(b[:j + 1000000])
PYEOF
for f in bad.cpio cut.cpio; do
	mnt=$T/m-$f
	check "$f: mounted" sfs_mount "$T/$f" "$mnt" -o layout=tar || continue
	check "$f: the damage named" grep -q "$f: \(damaged\|member .* is damaged\)" "$(sfs_log "$mnt")"
	( T2=$T; T=$T/$f-parent; mkdir -p "$T" && ln -sfn "$T2/xcpio" "$T/x";
	  check "$f: every file right or EIO" right_or_eio "$mnt" any )
	[ "$f" = cut.cpio ] && check "cut.cpio: big.bin, cut short, is listed and gives EIO" \
		"$PY" -c 'import errno, sys
try:
    open(sys.argv[1], "rb").read()
except OSError as e:
    sys.exit(e.errno != errno.EIO)
sys.exit("    read whole")' "$mnt/big.bin"
	check "$f: unmount" sfs_umount "$mnt"
done

# over HTTP: the archive read through source_pread, ranges of the URL
mkdir -p "$T/www" && ln "$T/t.7z" "$T/www/t.7z" && ln "$T/t.cpio" "$T/www/t.cpio" &&
	ln "$T/t.tar.lz4" "$T/www/t.tar.lz4"
if check "http: nginx up" http_start "$T/www"; then
	for f in t.7z t.cpio t.tar.lz4; do
		mnt=$T/m-http-$f x=$T/x-http-$f
		mkdir -p "$x" && bsdtar -xf "$T/$f" -C "$x"
		check "http $f: mounted" sfs_mount "$(http_url "/$f")" "$mnt" -o layout=tar || continue
		check "http $f: every file as bsdtar -x made it" "$PY" "$COMPARE" "$x" "$mnt"
		check "http $f: unmount" sfs_umount "$mnt"
	done
fi

# RAR: libarchive's test archives, when its repository is here
GIT=${SFS_LIBARCHIVE_GIT:-/work/.mirror/libarchive+libarchive/repo}
if git --git-dir="$GIT" rev-parse HEAD >/dev/null 2>&1; then
	for r in test_read_format_rar.rar test_read_format_rar_solid.rar \
		 test_read_format_rar5_solid.rar test_read_format_rar5_stored.rar; do
		git --git-dir="$GIT" show "HEAD:libarchive/test/$r.uu" 2>/dev/null |
			"$PY" -c '
import binascii, sys
out = sys.stdout.buffer
for line in sys.stdin.buffer:
    if line.startswith((b"begin", b"end")) or not line.strip():
        continue
    try:
        out.write(binascii.a2b_uu(line))
    except binascii.Error:
        pass' >"$T/$r" && [ -s "$T/$r" ] && same_tree "$r"
	done
else
	echo "# skipped: RAR (no libarchive repository at $GIT; rar cannot be written here)"
fi
sfs_done
