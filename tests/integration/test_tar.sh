#!/usr/bin/env bash
# layout=tar end to end against Python's tarfile (tests/fixtures/make_tars.py
# writes the fixtures and the oracle's manifest; tar_oracle.py compares):
# every fixture (GNU, pax, ustar, v7, base-256, sparse, hostile names, bad
# checksum, truncated, negative/huge sizes, deep nesting, ImageNet-like,
# empty, a directory of tars) mounted with recursive=1 (and 0/2 for the
# nested ones): sha256 of EVERY file, find/ls/stat sizes, symlink targets,
# hostile names absent; a non-tar refuses to mount; reads of a member of a
# tar truncated after mounting give EIO; a remount uses the saved index, a
# touched source or a corrupt index is rebuilt.
. "$(dirname "$0")/lib.sh"
sfs_setup
T=$SFS_TMP

"$PY" "$SFS_ROOT/tests/fixtures/make_tars.py" "$T/fx" || {
	echo "not ok - make_tars.py failed"; SFS_FAIL=$((SFS_FAIL + 1)); sfs_done; exit 1; }
FX=$T/fx/tars
MANIFEST=$FX/manifest.json
ORACLE=$SFS_ROOT/tests/integration/tar_oracle.py

# tree_ok FIXTURE R MNT: files, sizes, mtimes, targets and sha256 via Python;
# then the same tree as find(1) sees it
tree_ok() {
	"$PY" "$ORACLE" tree "$MANIFEST" "$1" "$2" "$3" || return 1
	find "$3" -mindepth 1 -printf '%y\t%s\t%P\t%l\0' >"$T/find.out" || return 1
	"$PY" "$ORACLE" find "$MANIFEST" "$1" "$2" "$T/find.out"
}

# sha_is FIXTURE MEMBER FILE: FILE's sha256 is tarfile's for MEMBER (recursive=1)
sha_is() {
	test "$(sha256sum <"$3" | cut -d' ' -f1)" = "$("$PY" -c "
import json, sys
print(json.load(open(sys.argv[1]))[sys.argv[2]]['recursive']['1'][sys.argv[3]]['sha256'])" \
		"$MANIFEST" "$1" "$2")"
}

n=0
# mount_check FIXTURE R [extra -o options]: mount, compare, unmount
mount_check() {
	local fx=$1 r=$2 mnt=$T/m$n
	n=$((n + 1))
	check "mount $fx (recursive=$r)" sfs_mount "$FX/$fx" "$mnt" -o layout=tar,recursive=$r
	grep -q " $mnt fuse" /proc/mounts || return
	check "$fx r$r: every file's sha256, sizes, mtimes, targets = tarfile's" tree_ok "$fx" "$r" "$mnt"
	check "$fx r$r: evicted from the page cache" sfs_evict "$FX/$fx" "$mnt"
	check "$fx r$r: cold, every file's sha256 again" tree_ok "$fx" "$r" "$mnt"
	check "$fx r$r: unmount" sfs_umount "$mnt"
}

for fx in gnu.tar pax.tar ustar.tar v7.tar base256.tar sparse.tar hostile.tar \
	  badsum.tar truncated.tar negsize.tar hugesize.tar empty.tar imagenet_like.tar \
	  conflict.tar collide.tar; do
	mount_check "$fx" 1
done
for r in 0 2 3; do
	mount_check gnu.tar $r
	mount_check deep.tar $r
	mount_check collide.tar $r
done

# hostile names: nothing of them, nothing outside (a fresh index, so the
# warnings are printed again)
M=$T/mh
check "mount hostile.tar ${M##*/}" sfs_mount "$FX/hostile.tar" "$M" -o layout=tar,index_dir="$T/idx-hostile"
check "hostile: no '..', no escaping name, 'abs' and 'a/b' normalised" \
	test "$(cd "$M" && find . | LC_ALL=C sort | tr '\n' ' ')" = ". ./a ./a/b ./abs ./c ./last.txt ./ok.txt "
check "hostile: warnings name the file and offset" \
	grep -q "hostile.tar: unsafe or empty name '../x' in header at offset 0" "$(sfs_log "$M")"
check "unmount ${M##*/}, no sanitizer report" sfs_umount "$M"

# escaping symlinks are not served; ls -l and stat agree with the index
M=$T/ml
check "mount gnu.tar ${M##*/}" sfs_mount "$FX/gnu.tar" "$M" -o layout=tar
check "inodes distinct, none in the reserved range" inodes_in_scheme "$M"
check "escaping symlinks absent" test ! -e "$M/link_out" -a ! -L "$M/link_abs"
check "a symlink leaving through another is absent, from ls and lookup" \
	sh -c "! ls -a '$M/chain' | grep -qx out && ! test -L '$M/chain/out'"
check "a symlink going through another but staying inside reads its target" \
	cmp "$M/chain/ok" "$M/data/a.txt"
check "the hidden symlink is named in one warning" grep -q "symlink(s) lead out of the mount.*'out'" "$(sfs_log "$M")"
check "ls -l shows the symlink target" \
	bash -c "ls -l '$M' | grep -q 'link_in -> data/a.txt'"
check "stat: size of data/a.txt is 1234, nlink of nested is 3" \
	test "$(stat -c '%s' "$M/data/a.txt") $(stat -c '%h' "$M/nested")" = "1234 3"
check "hard link reads the target's bytes" cmp "$M/hard.txt" "$M/data/a.txt"
check "statfs counts the inodes (a hard-linked file once)" \
	test "$(stat -f -c '%c' "$M")" -eq "$(find "$M" -printf '%i\n' | sort -u | wc -l)"
check "unmount ${M##*/}, no sanitizer report" sfs_umount "$M"

# a directory of tars: one directory per tar
M=$T/md
check "mount a directory of tars" sfs_mount "$FX/dir" "$M" -o layout=tar
check "dir: every file's sha256 etc. = tarfile's" tree_ok dir 1 "$M"
check "unmount ${M##*/}, no sanitizer report" sfs_umount "$M"
check "layout detected from a .tar source" sfs_mount "$FX/ustar.tar" "$T/mdet"
check "detected: ustar tree" tree_ok ustar.tar 1 "$T/mdet"
check "unmount mdet, no sanitizer report" sfs_umount "$T/mdet"

# not a tar: refuses to mount, says why (timeout: a wrong mount must not hang us)
mkdir -p "$T/mnot"
SFS_MOUNTS+=("$T/mnot")
timeout 20 "$SAMPLEFS" -f -o layout=tar "$FX/notatar.tar" "$T/mnot" 2>"$T/notatar.log"
rc=$?
check "a non-tar refuses to mount (exit status $rc)" test $rc -ne 0 -a $rc -ne 124
check "non-tar: the error names the file" grep -q "notatar.tar: not a tar archive" "$T/notatar.log"

# a source truncated while mounted: EIO for the cut member, others fine
cp "$FX/gnu.tar" "$T/cut.tar"
M=$T/mcut
check "mount cut.tar ${M##*/}" sfs_mount "$T/cut.tar" "$M" -o layout=tar
cut_at=$("$PY" -c "
import json; m = json.load(open('$MANIFEST'))['gnu.tar']['recursive']['1']
print(m['old.txt']['offset'] + 2)")
size_before=$(stat -c %s "$M/old.txt")
truncate -s "$cut_at" "$T/cut.tar"
check "truncated after mounting: read of the cut member fails with EIO" \
	bash -c "cat '$M/old.txt' 2>&1 >/dev/null | grep -q 'Input/output error'"
check "truncated after mounting: an intact member not read before gives EIO" \
	bash -c "cat '$M/data/a.txt' 2>&1 >/dev/null | grep -q 'Input/output error'"
check "truncated after mounting: size unchanged ($size_before)" \
	test "$(stat -c %s "$M/old.txt")" = "$size_before"
check "truncated after mounting: one warning names the tar" \
	test "$(grep -c "cut.tar: changed since mounting" "$(sfs_log "$M")")" = 1
check "unmount ${M##*/}, no sanitizer report" sfs_umount "$M"

# rewritten in place, same size, new mtime: EIO, never the new bytes; with
# and without polling (copy and splice replies)
for mode in poll=50 poll=0; do
	cp "$FX/gnu.tar" "$T/rewrite.tar"
	M=$T/mrw
	check "mount rewrite.tar ${M##*/}" sfs_mount "$T/rewrite.tar" "$M" -o layout=tar,$mode
	check "$mode: data/a.txt reads right before" sha_is gnu.tar data/a.txt "$M/data/a.txt"
	off=$("$PY" -c "
import json; m = json.load(open('$MANIFEST'))['gnu.tar']['recursive']['1']
print(m['old.txt']['offset'])")
	printf 'XXXX' | dd of="$T/rewrite.tar" bs=1 seek="$off" conv=notrunc status=none
	touch -d '+1 min' "$T/rewrite.tar"
	check "$mode: rewritten in place: old.txt gives EIO" \
		bash -c "cat '$M/old.txt' 2>&1 >/dev/null | grep -q 'Input/output error'"
	# a file read before may still come from the kernel's page cache (or
	# give EIO if the kernel dropped it): the old bytes or EIO, nothing else
	check "$mode: rewritten in place: data/a.txt read before: its bytes or EIO" \
		bash -c "if cat '$M/data/a.txt' >/dev/null 2>&1; then $(declare -f sha_is); MANIFEST='$MANIFEST' PY='$PY' sha_is gnu.tar data/a.txt '$M/data/a.txt'; else cat '$M/data/a.txt' 2>&1 >/dev/null | grep -q 'Input/output error'; fi"
	check "unmount ${M##*/}, no sanitizer report" sfs_umount "$M"
done

# remount: the saved index is used; a touched source or a corrupt index
# is rebuilt with a message
cp "$FX/pax.tar" "$T/re.tar"
M=$T/mre
check "mount re.tar ${M##*/}" sfs_mount "$T/re.tar" "$M" -o layout=tar
check "unmount ${M##*/}, no sanitizer report" sfs_umount "$M"
idx=$(ls "$XDG_CACHE_HOME"/samplefs/tar-*.sfsidx | xargs ls -t | head -1)
# an old mtime (the index's own is not checked, its source's is): a rewrite
# would give it the current time, whatever the clock's resolution
touch -d '2001-01-01 00:00:00' "$idx"
before=$(stat -c %i.%Y.%y "$idx")
check "mount re.tar ${M##*/}" sfs_mount "$T/re.tar" "$M" -o layout=tar
check "remount uses the saved index (not rebuilt)" \
	bash -c "! grep -q 'indexed\|rebuilding' '$(sfs_log "$M")' && test '$(stat -c %i.%Y.%y "$idx")' = '$before'"
check "remount serves the same tree" tree_ok pax.tar 1 "$M"
check "unmount ${M##*/}, no sanitizer report" sfs_umount "$M"
touch "$T/re.tar"
check "mount re.tar ${M##*/}" sfs_mount "$T/re.tar" "$M" -o layout=tar
check "touched source: index rebuilt with a message" grep -q "rebuilding index" "$(sfs_log "$M")"
check "unmount ${M##*/}, no sanitizer report" sfs_umount "$M"
printf 'garbage!' | dd of="$idx" bs=1 seek=300 conv=notrunc 2>/dev/null
check "mount re.tar ${M##*/}" sfs_mount "$T/re.tar" "$M" -o layout=tar
check "corrupt index: rebuilt with a message" grep -q "rebuilding index" "$(sfs_log "$M")"
check "corrupt index: tree still right" tree_ok pax.tar 1 "$M"
check "unmount ${M##*/}, no sanitizer report" sfs_umount "$M"

# a directory of tars that gains a tar: rebuilt, the new tar served
mkdir -p "$T/grow"
cp "$FX/ustar.tar" "$T/grow/"
M=$T/mgrow
check "mount grow ${M##*/}" sfs_mount "$T/grow" "$M" -o layout=tar
check "directory of one tar: only its directory" test "$(ls "$M" | tr '\n' ' ')" = "ustar "
check "unmount ${M##*/}, no sanitizer report" sfs_umount "$M"
cp "$FX/v7.tar" "$T/grow/"
check "mount grow ${M##*/}" sfs_mount "$T/grow" "$M" -o layout=tar
check "a tar added to the directory: index rebuilt" grep -q "rebuilding index" "$(sfs_log "$M")"
check "a tar added to the directory: served" test "$(ls "$M" | tr '\n' ' ')" = "ustar v7 "
check "the added tar's bytes = tarfile's" sha_is v7.tar v7dir/v7b.txt "$M/v7/v7dir/v7b.txt"
check "unmount ${M##*/}, no sanitizer report" sfs_umount "$M"

# samplefs-inspect --verify judges nested tars as the daemon does: a member
# named *.tar that is not a tar is a plain file, not damage
INSPECT=$SFS_BIN/samplefs-inspect
"$PY" - "$T/fake.tar" <<'PY'
import io, os, sys, tarfile
with tarfile.open(sys.argv[1], "w", format=tarfile.GNU_FORMAT) as tf:
    for name, data in (("fake.tar", os.urandom(3000)), ("real.txt", b"x" * 700)):
        ti = tarfile.TarInfo(name)
        ti.size = len(data)
        tf.addfile(ti, io.BytesIO(data))
PY
check "inspect --verify: a *.tar member that is no tar is a file, not damage" \
	"$INSPECT" --verify -o layout=tar,recursive=1,index_dir="$T/idx-fake" "$T/fake.tar"
check "inspect --verify: a cut tar still fails" bash -c \
	"head -c 1100 '$T/fake.tar' > '$T/cut2.tar' && ! '$INSPECT' --verify -o layout=tar,index_dir='$T/idx-cut2' '$T/cut2.tar' 2>/dev/null"

# --verify of a zip (and of a directory holding a tar and a zip): no tar
# headers to walk, its members read through the layout, each checked
# against its CRC-32; zipfile's testzip() is the oracle of which is bad
mkdir -p "$T/vz"
cp "$T/fake.tar" "$T/vz/"
"$PY" - "$T/vz/z.zip" "$T/vbad.zip" <<'PY'
import sys, zipfile
with zipfile.ZipFile(sys.argv[1], "w", zipfile.ZIP_DEFLATED) as z:
    z.writestr("d/a.txt", b"hello " * 300)
    z.writestr("b.bin", bytes(range(256)) * 20)
d = bytearray(open(sys.argv[1], "rb").read())
d[d.find(b"d/a.txt") + len("d/a.txt") + 5] ^= 0xFF   # inside a.txt's data
open(sys.argv[2], "wb").write(d)
assert zipfile.ZipFile(sys.argv[1]).testzip() is None
assert zipfile.ZipFile(sys.argv[2]).testzip() == "d/a.txt"
PY
check "inspect --verify: a good zip passes (read through the layout)" \
	"$INSPECT" --verify -o layout=tar,index_dir="$T/idx-vz1" "$T/vz/z.zip"
check "inspect --verify: a directory of a tar and a zip passes" \
	"$INSPECT" --verify -o layout=tar,index_dir="$T/idx-vz2" "$T/vz"
check "inspect --verify: a zip whose member's data is damaged fails, naming it" bash -c \
	"! '$INSPECT' --verify -o layout=tar,index_dir='$T/idx-vz3' '$T/vbad.zip' >'$T/vbad.out' 2>&1 && grep -q 'd/a.txt' '$T/vbad.out'"


# Tar bombs: inputs whose index work or size grew far faster than the
# input.  Each is indexed and the layout opened twice (built, then from the
# saved index) within a hang bound: 30 s of CPU each (`ulimit -t`: each
# took a minute or more before; seconds now, under ASan too), and 300 s of
# wall time for a hang that burns no CPU (a wall-clock bound alone failed
# on a machine loaded far past its 2 cores), then mounted and checked
# against what the tar says.  Generated here; want-TAR.json has the bytes
# (hex) the tar gives some of its files.
B=$T/bombs
mkdir -p "$B"
# bomb_open TAR: index, then mount at $M (0 if mounted)
bomb_open() {
	M=$T/mb-${1%.tar}
	check "$1: indexed and opened twice within the hang bound" \
		timeout 300 sh -c 'ulimit -t 30; "$1" -o "$2" "$3" && "$1" -o "$2" "$3"' sh "$INSPECT" \
		"layout=tar,recursive=1,index_dir=$B/idx-$1" "$B/$1" >/dev/null 2>"$B/$1.log"
	check "$1: mount" sfs_mount "$B/$1" "$M" -o layout=tar,recursive=1,index_dir="$B/idx-$1"
	grep -q " $M fuse" /proc/mounts
}
# bomb_close TAR: the files of want-TAR.json (if any) read their bytes; unmount
bomb_close() {
	[ -e "$B/want-$1.json" ] && check "$1: the files read the bytes the tar gives them last" "$PY" - "$B" "$1" "$M" <<'PY'
import json, sys
b, tar, m = sys.argv[1:]
for name, data in json.load(open("%s/want-%s.json" % (b, tar))).items():
    got = open(m + "/" + name, "rb").read()
    if got != bytes.fromhex(data):
        sys.exit("    %.60s: %d bytes, not the %d expected" % (name, len(got), len(data) // 2))
PY
	check "$1: unmount, no sanitizer report" sfs_umount "$M"
}

# the same nested tar 4000 times, each copy with other bytes: the copies
# merge, later members replacing earlier ones (K^3 x members: minutes)
"$PY" - "$B" <<'PY'
import io, json, sys, tarfile
want = {}
with tarfile.open(sys.argv[1] + "/nested.tar", "w", format=tarfile.GNU_FORMAT) as out:
    for i in range(4000):
        inner = io.BytesIO()
        with tarfile.open(fileobj=inner, mode="w", format=tarfile.GNU_FORMAT) as t:
            for name in ("all", "m%d" % (i % 5)):
                data = b"copy %d" % i
                ti = tarfile.TarInfo(name)
                ti.size = len(data)
                t.addfile(ti, io.BytesIO(data))
                want["P/" + name] = data.hex()
        ti = tarfile.TarInfo("P.tar")
        ti.size = len(inner.getvalue())
        out.addfile(ti, io.BytesIO(inner.getvalue()))
json.dump(want, open(sys.argv[1] + "/want-nested.tar.json", "w"))
PY
if bomb_open nested.tar; then
	check "nested.tar: one P/ of the copies' members" \
		test "$(cd "$M" && find . | LC_ALL=C sort | tr '\n' ' ')" = \
		". ./P ./P/all ./P/m0 ./P/m1 ./P/m2 ./P/m3 ./P/m4 "
	bomb_close nested.tar
fi

# a file at a 3.8 KB path (from a pax global header), 10,000 hard links of
# that path to nothing (skipped: the file stays), then 10,000 links to it:
# each passed all the skipped ones again (N^2 x 3.8 KB compared: a minute)
"$PY" - "$B" <<'PY'
import json, sys, tarfile
P = ("a" * 200 + "/") * 19 + "p"
Q = P[:-1] + "q"
with open(sys.argv[1] + "/links.tar", "wb") as f:
    def header(type, link="y", size=0):
        ti = tarfile.TarInfo("x")
        ti.type, ti.linkname, ti.size = type, link, size
        f.write(ti.tobuf(format=tarfile.GNU_FORMAT))
    def glob(rec):
        f.write(tarfile.TarInfo("pax_global_header").create_pax_global_header(rec))
    glob({"path": P})
    header(tarfile.REGTYPE, "", 5)
    f.write(b"first" + b"\0" * 507)
    for path, target in ((P, "missing"), (Q, P)):
        glob({"path": path, "linkpath": target})
        for i in range(10000):
            header(tarfile.LNKTYPE)
    f.write(b"\0" * 1024)
json.dump({P: b"first".hex(), Q: b"first".hex()}, open(sys.argv[1] + "/want-links.tar.json", "w"))
PY
bomb_open links.tar && bomb_close links.tar

# an old GNU sparse member of 10,000 chunks and 500 hard links to it (a
# copy of the map per link: 80 MB of index for a 0.5 MB tar)
"$PY" - "$B" <<'PY'
import json, sys, tarfile
M, N, d = 10000, 500, sys.argv[1]
def octal(v, n): return b"%0*o" % (n - 1, v) + b"\0"
def chk(h):
    h[148:156] = b" " * 8
    h[148:156] = b"%06o\0 " % sum(h)
    return bytes(h)
chunks = [(2 * i, 1) for i in range(M)]
with open(d + "/sparse.tar", "wb") as f:
    h = bytearray(512)
    h[0:6] = b"sparse"
    h[100:108] = octal(0o644, 8); h[108:116] = octal(0, 8); h[116:124] = octal(0, 8)
    h[124:136] = octal(M, 12); h[136:148] = octal(0, 12); h[156] = ord("S")
    h[257:265] = b"ustar  \0"
    for k in range(4):
        h[386 + 24 * k:398 + 24 * k] = octal(chunks[k][0], 12)
        h[398 + 24 * k:410 + 24 * k] = octal(chunks[k][1], 12)
    h[482] = 1
    h[483:495] = octal(2 * M, 12)
    f.write(chk(h))
    rest = chunks[4:]
    while rest:
        b = bytearray(512)
        part, rest = rest[:21], rest[21:]
        for k, (o, l) in enumerate(part):
            b[24 * k:24 * k + 12] = octal(o, 12)
            b[24 * k + 12:24 * k + 24] = octal(l, 12)
        b[504] = 1 if rest else 0
        f.write(bytes(b))
    f.write((bytes(range(256)) * 40)[:M] + b"\0" * (-M % 512))
    for i in range(N):
        ti = tarfile.TarInfo("l%d" % i)
        ti.type, ti.linkname = tarfile.LNKTYPE, "sparse"
        f.write(ti.tobuf(format=tarfile.GNU_FORMAT))
    f.write(b"\0" * 1024)
with tarfile.open(d + "/sparse.tar") as t:
    data = t.extractfile("sparse").read().hex()
json.dump({n: data for n in ("sparse", "l0", "l%d" % (N - 1))},
          open(d + "/want-sparse.tar.json", "w"))
PY
if bomb_open sparse.tar; then
	idx=$(ls "$B/idx-sparse.tar"/tar-*.sfsidx)
	check "sparse.tar: the links share the map (index of $(stat -c %s "$idx") bytes for $(stat -c %s "$B/sparse.tar"))" \
		test "$(stat -c %s "$idx")" -lt $((2 * $(stat -c %s "$B/sparse.tar")))
	bomb_close sparse.tar
fi

# 30,000 symlinks whose (pax global) target walks d/.. 799 times to
# symlink x, which has it too: 40 links of 1,600 components each, for each
# link at every mount (a minute per mount).  The links loop: shown, as tar
# made them, and following one is ELOOP.
"$PY" - "$B" <<'PY'
import sys, tarfile
T = "d/.." + "/d/.." * 798 + "/x"
with open(sys.argv[1] + "/symloop.tar", "wb") as f:
    def header(name, type, link="y"):
        ti = tarfile.TarInfo(name)
        ti.type, ti.linkname = type, link
        f.write(ti.tobuf(format=tarfile.GNU_FORMAT))
    header("d", tarfile.DIRTYPE, "")
    f.write(tarfile.TarInfo("pax_global_header").create_pax_global_header({"linkpath": T}))
    for name in ["x"] + ["s%05d" % i for i in range(30000)]:
        header(name, tarfile.SYMTYPE)
    f.write(b"\0" * 1024)
PY
if bomb_open symloop.tar; then
	check "symloop.tar: the links are shown, as tar made them" \
		test "$(readlink "$M/s29999")" = "$(readlink "$M/x")" -a "$(ls "$M" | wc -l)" = 30002
	check "symloop.tar: following one is ELOOP" \
		bash -c "cat '$M/s00000' 2>&1 | grep -q 'Too many levels of symbolic links'"
	bomb_close symloop.tar
fi

# Which symlinks leave the mount through others, against the kernel: a
# tree of directories and random symlinks (chains, loops) made on disk and
# tarred.  The mount has no link whose own target leaves (lexically), so
# those go from the disk too; then openat2(RESOLVE_BENEATH) says EXDEV for
# a link that climbs above the tree at some point, and exactly those are
# not shown either.  Around the 40-link limit openat2 is no judge (it gave
# up after 20 links here, counting them again when it retries out of RCU
# walk), so a chain c0 -> c1 -> ... -> c45 -> up/.. (up -> ..) is judged
# by plain open(2) of a twin chain t0 -> ... -> t45 -> up/file with as many
# links: c_i is hidden iff t_i opens (47 - i links: i >= 7).
S=$T/symtree
"$PY" - "$S" <<'PY'
import os, random, sys, tarfile
r, rnd = sys.argv[1], random.Random(1)
dirs = ["d", "d/e", "d/e/f", "g"]
for x in dirs:
    os.makedirs(r + "/tree/" + x)
for x in ("file", "d/file", "d/e/f/file"):
    open(r + "/tree/" + x, "w").write(x)
# links in the root (r*) and in d (x*): targets of 1-3 of "..", ".", the
# directories, files, a missing name, links to directories and some of
# those links, so that some lead through others, some loop, some leave
# through others (1 in 50 is absolute)
links = ["d/up", "d/e/up", "g/in"]
for name, target in zip(links, ("..", "../..", "../d")):
    os.symlink(target, r + "/tree/" + name)
rand = ["r%d" % i for i in range(1000)] + ["d/x%d" % i for i in range(1000)]
words = ["..", "..", ".", "d", "e", "file", "nope", "up", "up", "g/in", "d/up"] + \
        ["r%d" % i for i in range(4)] + ["x%d" % i for i in range(4)] + \
        ["d/x%d" % i for i in range(4)]
for name in rand:
    parts = [rnd.choice(words) for _ in range(rnd.randint(1, 3))]
    os.symlink("/".join(parts) if rnd.random() > 0.02 else "/etc", r + "/tree/" + name)
links += rand + ["g/up"]
os.symlink("..", r + "/tree/g/up")
for i in range(46):
    os.symlink("c%d" % (i + 1) if i < 45 else "up/..", r + "/tree/g/c%d" % i)
    os.symlink("t%d" % (i + 1) if i < 45 else "up/file", r + "/tree/g/t%d" % i)
with tarfile.open(r + "/tree.tar", "w", format=tarfile.GNU_FORMAT) as t:
    for x in dirs + ["file", "d/file", "d/e/f/file"] + links + \
             ["g/%s%d" % (c, i) for c in "ct" for i in range(46)]:
        t.add(r + "/tree/" + x, arcname=x, recursive=False)
open(r + "/links.txt", "w").write("\n".join(links) + "\n")
PY
M=$T/msym
check "symtree: mount" sfs_mount "$S/tree.tar" "$M" -o layout=tar
check "symtree: a link is shown iff the kernel, following it inside the tree, stays beneath it" \
	"$PY" - "$S" "$M" <<'PY'
import ctypes, errno, os, posixpath, sys
s, m = sys.argv[1], sys.argv[2]
libc = ctypes.CDLL(None, use_errno=True)
class How(ctypes.Structure):
    _fields_ = [("flags", ctypes.c_uint64), ("mode", ctypes.c_uint64), ("resolve", ctypes.c_uint64)]
how = How(os.O_PATH, 0, 0x08)   # RESOLVE_BENEATH
root = os.open(s + "/tree", os.O_RDONLY | os.O_DIRECTORY)
names, kinds, bad = open(s + "/links.txt").read().split(), {}, 0
def own_target_leaves(name):
    target = os.readlink(s + "/tree/" + name)
    lexical = posixpath.normpath(posixpath.join(posixpath.dirname(name), target))
    return target.startswith("/") or lexical.split("/")[0] == ".."
skipped = [n for n in names if own_target_leaves(n)]
for name in skipped:
    if os.path.lexists(m + "/" + name):
        bad += 1
        print("    %s -> %s: its own target leaves, the mount shows it" %
              (name, os.readlink(s + "/tree/" + name)))
    os.unlink(s + "/tree/" + name)
for name in names:
    if name in skipped:
        continue
    fd = libc.syscall(437, root, name.encode(), ctypes.byref(how), ctypes.sizeof(how))
    err = 0 if fd >= 0 else ctypes.get_errno()
    if fd >= 0:
        os.close(fd)
    kind = errno.errorcode.get(err, "ok")
    kinds[kind] = kinds.get(kind, 0) + 1
    if os.path.lexists(m + "/" + name) == (err == errno.EXDEV):
        bad += 1
        print("    %s -> %s: kernel %s, the mount %s it" % (name, os.readlink(s + "/tree/" + name),
              kind, "shows" if err == errno.EXDEV else "hides"))
opens = 0
for i in range(46):
    try:
        os.close(os.open(s + "/tree/g/t%d" % i, os.O_PATH))
        opens += 1
        hidden = True
    except OSError as e:
        hidden = False
    if os.path.lexists(m + "/g/c%d" % i) == hidden:
        bad += 1
        print("    g/c%d: %d links to leave, the mount %s it" % (i, 47 - i, "shows" if hidden else "hides"))
print("    kernel: %s; skipped at build: %d; chain: %d of 46 within the limit" %
      (kinds, len(skipped), opens))
sys.exit(bad > 0 or kinds.get("EXDEV", 0) < 10 or kinds.get("ELOOP", 0) < 5 or opens != 39)
PY
check "symtree: unmount, no sanitizer report" sfs_umount "$M"

sfs_done
