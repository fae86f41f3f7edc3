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
check "statfs counts the nodes" \
	test "$(stat -f -c '%c' "$M")" -eq "$(( $(find "$M" | wc -l) ))"
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
INSPECT=$SFS_ROOT/$SAMPLEFS_BUILD/samplefs-inspect
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

sfs_done
