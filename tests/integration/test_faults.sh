#!/usr/bin/env bash
# Faults, each a test: what samplefs does when the world changes under it.
#
#  1. a source truncated, rewritten in place (same size, other bytes),
#     touched (mtime only), deleted, or replaced by rename while mounted, in
#     every layout (Quick, Draw! images and strokes, npy, tar, ImageNet):
#     every read is EIO or the bytes the oracle vetted before the fault,
#     never the new bytes, never a mix; one warning names the file;
#  2. a saved index with a byte flipped in its header, in each of its
#     sections (parsed from its section table) and in the table, cut short,
#     or swapped with another source's: the next mount says it rebuilds it
#     and serves the oracle's bytes;
#  3. kill -9 of the daemon during an index build (made to block, not
#     raced: its source is a file on a second mount whose daemon is stopped)
#     and while serving; the remount works, uses no half-written index, and
#     nothing stale is left behind;
#  4. an index_dir on a full file system: a clear error, nothing left;
#  5. eight daemons started at once on one source and one index_dir (as
#     cluster nodes on shared storage, also each in its own PID namespace,
#     where they share a PID): one index results, all serve the same tree;
#  6. the bytes past the end of a small file's last page, through mmap,
#     on a cold (spliced) read: zeros, never the next member of the tar;
#  7. once a change was seen, files read before it, whose pages the kernel
#     keeps, give EIO too (the daemon drops those pages: fs/inval.c),
#     for a tar and for Quick, Draw! (whose layout names no source per
#     file, so every file's pages are dropped).
#
# References: each layout's tree is first checked against its independent
# oracle (numpy's qd_oracle/npy_oracle, the files GNU tar was given,
# imagenet_oracle), then copied; the faults compare with that copy.
. "$(dirname "$0")/lib.sh"
sfs_setup
T=$SFS_TMP
TMPFS=	# a tmpfs this test mounted (section 4)
STOPPED=	# a daemon this test stopped (section 3)
faults_cleanup() {
	[ -n "$STOPPED" ] && kill -CONT "$STOPPED" 2>/dev/null
	[ -n "$TMPFS" ] && umount "$TMPFS" 2>/dev/null
	sfs_cleanup
}
trap faults_cleanup EXIT
IDX=$T/cache/samplefs

# ---- fixtures and references ----
$PY - "$T" "$SFS_ROOT" <<'PY' || { echo "not ok - fixtures"; SFS_FAIL=1; sfs_done; exit 1; }
import os, random, sys
sys.path.insert(0, os.path.join(sys.argv[2], 'tests', 'fixtures'))
from make_quickdraw import make_quickdraw
from make_imagenet import make_imagenet, pick_wnids
t = sys.argv[1]
KINDS = ['truncate', 'rewrite', 'mtime', 'delete', 'replace']
# one class (images and strokes) per kind of fault, and one left alone
make_quickdraw(t + '/pristine/qd', ['k_' + k for k in KINDS] + ['ok'], 8, 8, seed=1)
make_quickdraw(t + '/pristine/qd2', ['cow'], [5], [5], seed=2)
make_imagenet(t + '/pristine/in', pick_wnids(3, seed=5), per_class=4, n_val=6, seed=2)
# files for the tars: small ones (a page tail to look at) between others
rng = random.Random(7)
for tar, sizes in (('a', [10, 1, 700, 100, 511, 4095, 4097, 9000, 0, 30000]),
                   ('b', [5, 2000, 12345])):
    d = '%s/files/%s' % (t, tar)
    os.makedirs(d + '/sub')
    for i, n in enumerate(sizes):
        with open('%s/%sf%02d_%d' % (d, 'sub/' if i % 3 == 2 else '', i, n), 'wb') as f:
            f.write(bytes(rng.randrange(1, 256) for _ in range(n)))
# a tar big enough that a build reads past what one read-ahead brings in
d = t + '/files/big'
os.makedirs(d)
for i in range(1500):
    with open('%s/m%04d' % (d, i), 'wb') as f:
        f.write(bytes([i % 251 + 1]) * (1000 + i % 2000))
import numpy as np
nrng = np.random.default_rng(3)
os.makedirs(t + '/pristine/npy')
for k in KINDS:
    np.save('%s/pristine/npy/k_%s.npy' % (t, k), nrng.integers(0, 256, (8, 100), np.uint8))
PY
KINDS="truncate rewrite mtime delete replace"
mkdir -p "$T/pristine/tar" "$T/pristine/tar2"
for k in $KINDS; do tar -C "$T/files/a" -cf "$T/pristine/tar/k_$k.tar" . || exit 1; done
tar -C "$T/files/a" -cf "$T/pristine/tar/a.tar" . &&
	tar -C "$T/files/b" --format=posix -cf "$T/pristine/tar/b.tar" . &&
	tar -C "$T/files/b" -cf "$T/pristine/tar2/b.tar" . &&
	tar -C "$T/files/big" -cf "$T/big.tar" . ||
	{ echo "not ok - GNU tar"; SFS_FAIL=1; sfs_done; exit 1; }
"$PY" "$SFS_ROOT/tests/integration/npy_oracle.py" make "$T/pristine/npy"
INSPECT=$SFS_BIN/samplefs-inspect

M=$T/m
REF=$T/ref
declare -A OPTS=([qd]=layout=quickdraw [npy]=layout=npy [tar]=layout=tar
	[in]=layout=imagenet,shard_size=4)
# oracle_ok LAYOUT MNT: the whole mount agrees with the independent oracle
oracle_ok() {
	local src=$T/live/$1
	case $1 in
	qd) "$PY" "$SFS_ROOT/tests/integration/qd_oracle.py" check "$src" "$2" | tail -5 ;;
	npy) rm -rf "$T/want.npy" && "$PY" "$SFS_ROOT/tests/integration/npy_oracle.py" expect "$src" "$T/want.npy" &&
		diff -r "$T/want.npy" "$2" | head -5 ;;
	tar) for t in a $(cd "$T/pristine/tar" && ls k_*.tar | sed 's/\.tar$//'); do
		diff -r "$T/files/a" "$2/$t" | head -5
		[ "${PIPESTATUS[0]}" -eq 0 ] || return 1
	     done
	     diff -r "$T/files/b" "$2/b" | head -5 ;;
	in) "$PY" "$SFS_ROOT/tests/integration/imagenet_oracle.py" "$src" "$2" --shard-size 4 | head -5 ;;
	esac
	[ "${PIPESTATUS[0]}" -eq 0 ]
}

# the live copy a test damages: the pristine source, mtimes kept (so the
# index saved for it stays valid)
fresh_live() {
	rm -rf "$T/live/$1" && mkdir -p "$T/live" && cp -a "$T/pristine/$1" "$T/live/$1"
}

for s in qd npy tar in; do
	fresh_live "$s"
	check "$s: mount the pristine source" sfs_mount "$T/live/$s" "$M" -o "${OPTS[$s]}"
	check "$s: the mount agrees with the oracle" oracle_ok "$s" "$M"
	mkdir -p "$REF/$s" && cp -r "$M"/. "$REF/$s"/
	check "$s: unmount" sfs_umount "$M"
done
# files_of S PATTERN...: the reference's non-empty files under each pattern
files_of() {
	local s=$1; shift
	(cd "$REF/$s" && find "$@" -type f -size +0 | sort)
}

# ---- file checks: every one reads, or fails, as a group ----
# right MNT REFDIR FILE...: each file reads as REFDIR's copy (cmp reads
# it to its end, or to its first byte that differs: a failed read, a
# difference and another length all fail)
right() {
	local m=$1 r=$2 f bad=0 err; shift 2
	for f; do
		cmp "$m/$f" "$r/$f" >"$T/err" 2>&1 && continue
		read -r -N 200 err <"$T/err"
		echo "    $f: $err"
		bad=1
	done
	return $bad
}
# eio MNT FILE...: each read fails with EIO
eio() {
	local m=$1 f bad=0 err; shift
	for f; do
		if cat "$m/$f" >/dev/null 2>"$T/err"; then
			echo "    $f: read succeeded"; bad=1
			continue
		fi
		read -r -d '' err <"$T/err"
		[[ $err == *'Input/output error'* ]] || { echo "    $f: $err"; bad=1; }
	done
	return $bad
}
# right_or_eio MNT REFDIR FILE...: each file is REFDIR's copy, or EIO
right_or_eio() {
	local m=$1 r=$2 f bad=0; shift 2
	for f; do
		same_or_eio "$m/$f" "$r/$f" || { echo "    $f: neither its bytes nor EIO"; bad=1; }
	done
	return $bad
}

# fault KIND FILE: damages FILE while it is mounted
fault() {
	local flip='import sys
p = sys.argv[1]
b = open(p, "rb").read()
with open(sys.argv[2], "r+b" if sys.argv[2] == p else "wb") as f:
    f.write(bytes(x ^ 0x5a for x in b))'
	case $1 in
	truncate) truncate -s $(( $(stat -c %s "$2") / 2 )) "$2" ;;
	rewrite) "$PY" -c "$flip" "$2" "$2" ;;     # same inode, same size, new mtime
	mtime) touch -d '+1 hour' "$2" ;;          # same bytes
	delete) rm "$2" ;;
	replace) "$PY" -c "$flip" "$2" "$2.new" && mv "$2.new" "$2" ;;   # a new inode
	esac
}

# ---- 1. a source changed while mounted ----
# One mount per layout, each of its source files damaged in another way
# (ImageNet has two tars: more mounts).  Of each file's dependants, two
# are read before the fault (the kernel may keep their pages: their bytes
# or EIO), the others after it, once the mount's pages are dropped so the
# daemon is asked: EIO when the layout checks the file (its size or mtime
# differ), else the bytes of the reference (an unlinked or renamed-over
# file stays open: the daemon reads what it mounted; strokes come from the
# index).  One warning names each file a read found changed.
#
# source_faults S OPTS "FILE KIND CHECKED PATTERN"... -- UNAFFECTED...
source_faults() {
	local s=$1 opts=$2 live=$T/live/$1 g file kind checked pat aff n w groups=()
	shift 2
	while [ "$1" != -- ]; do groups+=("$1"); shift; done
	shift
	fresh_live "$s"
	check "$s faults: mount" sfs_mount "$live" "$M" -o "$opts" || return
	for g in "${groups[@]}"; do
		read -r file kind checked pat <<<"$g"
		mapfile -t aff < <(files_of "$s" $pat | head -8)
		check "$s $kind $file: two files read before" right "$M" "$REF/$s" "${aff[@]:0:2}"
	done
	for g in "${groups[@]}"; do
		read -r file kind checked pat <<<"$g"
		fault "$kind" "$live/$file"
	done
	check "$s faults: the mount's pages dropped" sfs_evict "$live"/* "$M"
	for g in "${groups[@]}"; do
		read -r file kind checked pat <<<"$g"
		mapfile -t aff < <(files_of "$s" $pat | head -8)
		check "$s $kind $file: files read before: their bytes or EIO" \
			right_or_eio "$M" "$REF/$s" "${aff[@]:0:2}"
		if [ "$checked" = 1 ] && [ "$kind" != delete ] && [ "$kind" != replace ]; then
			check "$s $kind $file: $(( ${#aff[@]} - 2 )) files not read before: EIO" \
				eio "$M" "${aff[@]:2}"
			w=1
		else
			check "$s $kind $file: files not read before: the mounted bytes" \
				right "$M" "$REF/$s" "${aff[@]:2}"
			w=0
		fi
		n=$(grep -F "/$file: changed since" "$(sfs_log "$M")" | wc -l)
		check "$s $kind $file: $w warning(s) naming it (got $n)" test "$n" = "$w"
	done
	check "$s faults: files of other sources: their bytes" right "$M" "$REF/$s" "$@"
	check "$s faults: unmount, no sanitizer report" sfs_umount "$M"
}

# SFS_FAULTS="1 3" runs those sections only (while working on one)
section() { [ -z "${SFS_FAULTS:-}" ] || [[ " $SFS_FAULTS " == *" $1 "* ]]; }

if section 1; then
	args=()
	for k in $KINDS; do
		args+=("k_$k.npy $k 1 images/k_$k" "k_$k.npz $k 0 strokes/k_$k")
	done
	source_faults qd layout=quickdraw "${args[@]}" -- $(files_of qd images/ok strokes/ok | sed -n '1~3p')
	args=()
	for k in $KINDS; do args+=("k_$k.npy $k 1 k_$k"); done
	source_faults npy layout=npy "${args[@]}" -- $(files_of npy digits labels | sed -n '1~8p')
	args=()
	for k in $KINDS; do args+=("k_$k.tar $k 1 k_$k"); done
	source_faults tar layout=tar "${args[@]}" -- $(files_of tar a b)
	# the train tar damaged each way it is checked for, the val tar the others
	TR=ILSVRC2012_img_train.tar VA=ILSVRC2012_img_val.tar
	source_faults in "${OPTS[in]}" "$TR truncate 1 train" "$VA delete 1 val" --
	source_faults in "${OPTS[in]}" "$TR rewrite 1 train" "$VA replace 1 val" --
	source_faults in "${OPTS[in]}" "$TR mtime 1 train" -- $(files_of in val)
fi

# ---- 2. a damaged saved index ----
# index_cases FILE: "name offset" for a byte to flip in each header field,
# in the middle of each section (from the section table, see core/index/index.c)
# and in the table; then the cuts.  Not in MADE, which says what the index
# was made for and which a mount never reads (a prebuilt index's messages
# do): the sections' blocks are checked when used, so a flip there changes
# nothing (test_index.c checks the unused blocks are not read, and
# test_indexload.sh that damage in a large section is caught on first use)
index_cases() {
	"$PY" - "$1" <<'PY'
import struct, sys
b = open(sys.argv[1], 'rb').read()
magic, ver, hsize, fp, nsect, crc, toff, tlen = struct.unpack_from('<8sIIQIIQQ', b)
assert magic == b'SFSIDX\0\1' and tlen == len(b), 'not an index'
for name, off in (('magic', 0), ('fingerprint', 16), ('crc', 28), ('length', 40)):
    print('flip-header-%s %d' % (name, off))
for i in range(nsect):
    tag, _, off, n = struct.unpack_from('<4sIQQ', b, toff + 24 * i)
    if n and tag != b'MADE':
        print('flip-section-%s %d' % (tag.decode('ascii', 'replace'), off + n // 2))
print('flip-table %d' % (toff + 24 * nsect // 2))
print('cut-half %d' % (len(b) // 2))
print('cut-63 63')
PY
}
# index_fault FILE GOOD CASE ARG: FILE is GOOD damaged as CASE says
index_fault() {
	cp "$2" "$1"
	case $3 in
	flip-*) "$PY" -c 'import sys
with open(sys.argv[1], "r+b") as f:
    f.seek(int(sys.argv[2])); b = f.read(1); f.seek(int(sys.argv[2])); f.write(bytes([b[0] ^ 0xff]))' "$1" "$4" ;;
	cut-*) truncate -s "$4" "$1" ;;
	swap) cp "$4" "$1" ;;
	esac
}
# damaged_index S FILE CASE: the layout says it rebuilds FILE (through
# samplefs-inspect, which opens the layout as the daemon does, without
# FUSE), and the index it leaves is whole
damaged_index() {
	local s=$1 f=$2 case=$3 out
	out=$("$INSPECT" -o "${OPTS[$s]}" "$T/live/$s" 2>&1) || { echo "    $out"; return 1; }
	grep -q "Sanitizer\|runtime error" <<<"$out" && { echo "$out"; return 1; }
	grep -q "rebuilding.*${f##*/}\|${f##*/}.*rebuilding" <<<"$out" || { echo "    $out"; return 1; }
	index_whole "$f"
}
# damaged_block S FILE TAG: damage in section TAG, whose blocks are checked
# as they are read, not at the mount (Quick, Draw!'s stroke data: checked
# whole, all of it would stay resident): the mount serves from the saved
# index, every file reads the reference's bytes or EIO, some EIO, the
# daemon names the index and the section and removes the file, and the
# next open builds a whole one
damaged_block() {
	local s=$1 f=$2 tag=$3 log p n=0 out files
	sfs_mount "$T/live/$s" "$M" -o "${OPTS[$s]}" || return 1
	log=$(sfs_log "$M")
	mapfile -t files < <(files_of "$s" .)
	for p in "${files[@]}"; do
		if cat "$M/$p" >"$T/got" 2>"$T/err"; then
			cmp -s "$T/got" "$REF/$s/$p" && continue
			echo "    $p: other bytes"
		elif grep -q 'Input/output error' "$T/err"; then
			n=$((n + 1)); continue
		else
			echo "    $p: $(head -c 200 "$T/err")"
		fi
		sfs_umount "$M"; return 1
	done
	sfs_umount "$M" || return 1
	echo "    $n of ${#files[@]} files gave EIO"
	[ "$n" -gt 0 ] || return 1
	grep -q "${f##*/}: the index is damaged: section $tag .*removed" "$log" ||
		{ sed 's/^/    /' "$log"; return 1; }
	[ ! -e "$f" ] || { echo "    $f was not removed"; return 1; }
	out=$("$INSPECT" -o "${OPTS[$s]}" "$T/live/$s" 2>&1) || { echo "    $out"; return 1; }
	index_whole "$f"
}
# index_whole FILE: magic, length and the table's crc32 agree with the
# header, and every section's blocks with their crc32s
index_whole() {
	"$PY" - "$1" <<'PY'
import struct, sys, zlib
b = open(sys.argv[1], 'rb').read()
magic, ver, hsize, fp, nsect, crc, toff, tlen, nblk, shift = \
    struct.unpack_from('<8sIIQIIQQII', b)
ok = magic == b'SFSIDX\0\1' and tlen == len(b) and zlib.crc32(b[toff:]) == crc
crcs = struct.unpack_from('<%dI' % nblk, b, toff + 24 * nsect) if ok else ()
for i in range(nsect if ok else 0):
    tag, blk, off, n = struct.unpack_from('<4sIQQ', b, toff + 24 * i)
    for k in range(0, n, 1 << shift):
        ok = ok and zlib.crc32(b[off + k:off + min(n, k + (1 << shift))]) == \
            crcs[blk + (k >> shift)]
if not ok:
    sys.exit('    %s: not a whole index' % sys.argv[1])
PY
}
# damaged_index_mount S FILE CASE: the same through a mount, which then
# serves the reference's bytes
damaged_index_mount() {
	local s=$1 f=$2 case=$3 log aff
	mapfile -t aff < <(files_of "$s" . | sed -n '1~5p')
	check "$s index, $case: mount" sfs_mount "$T/live/$s" "$M" -o "${OPTS[$s]}" || return
	log=$(sfs_log "$M")
	check "$s index, $case: the daemon says it rebuilds ${f##*/}" \
		grep -q "${f##*/}.*rebuilding\|rebuilding.*${f##*/}" "$log"
	check "$s index, $case: the reference's bytes" right "$M" "$REF/$s" "${aff[@]}"
	check "$s index, $case: unmount, no sanitizer report" sfs_umount "$M"
}
if section 2; then
	# another source's index of each layout, to swap in
	mkdir -p "$T/other"
	"$INSPECT" -o "index_dir=$T/other" "$T/pristine/qd2" >/dev/null 2>&1
	"$INSPECT" -o "layout=tar,index_dir=$T/other" "$T/pristine/tar2" >/dev/null 2>&1
	for s in qd tar in; do
		fresh_live "$s"
		case $s in qd) prefix=quickdraw ;; tar) prefix=tar ;; in) prefix=imagenet ;; esac
		files=("$IDX/$prefix"-*.sfsidx)
		check "$s: ${#files[@]} saved index(es) to damage" test -f "${files[0]}"
		for f in "${files[@]}"; do
			good=$T/good.${f##*/}
			cp "$f" "$good"
			while read -r case arg; do
				index_fault "$f" "$good" "$case" "$arg"
				case $case in
				flip-section-QDSD) check "$s index ${f##*/}, $case: said when read, removed, rebuilt" \
					damaged_block "$s" "$f" QDSD ;;
				*) check "$s index ${f##*/}, $case: rebuilt with a message" \
					damaged_index "$s" "$f" "$case" ;;
				esac
			done < <(index_cases "$good")
			# another source's index: qd2's, tar2's; the other ImageNet index
			other=$(ls "$T/other/$prefix"-*.sfsidx "${files[@]}" 2>/dev/null | grep -vx "$f" | head -1)
			index_fault "$f" "$good" swap "$other"
			check "$s index ${f##*/}, swapped with ${other##*/}: rebuilt with a message" \
				damaged_index "$s" "$f" swap
			cp "$good" "$f"
		done
		# and through the daemon: a flipped section, a swapped index
		f=${files[0]}
		read -r case arg < <(index_cases "$T/good.${f##*/}" | grep flip-section | tail -1)
		index_fault "$f" "$T/good.${f##*/}" "$case" "$arg"
		damaged_index_mount "$s" "$f" "$case"
		other=$(ls "$T/other/$prefix"-*.sfsidx "${files[@]}" 2>/dev/null | grep -vx "$f" | head -1)
		index_fault "$f" "$T/good.${f##*/}" swap "$other"
		damaged_index_mount "$s" "$f" "swapped with ${other##*/}"
	done
fi

# ---- 3. kill -9 during an index build and while serving ----
# The build is made to block, not raced: its source is big.tar read
# through a tar mount (recursive=0) whose daemon is stopped once the first
# bytes are cached, so the build waits inside its first read past them.
if section 3; then
	tar -C "$T" -cf "$T/outer.tar" big.tar
	MO=$T/mo MB=$T/mb K9=$T/idx-k9
	check "kill during build: mount the outer tar" sfs_mount "$T/outer.tar" "$MO" -o layout=tar,recursive=0
	head -c 65536 "$MO/big.tar" >/dev/null && stat "$MO/big.tar" >/dev/null
	STOPPED=${SFS_PID_OF[$MO]}
	kill -STOP "$STOPPED"
	mkdir -p "$MB"
	SFS_MOUNTS+=("$MB")
	"$SAMPLEFS" -f -o layout=tar,index_dir="$K9" "$MO/big.tar" "$MB" 2>"$T/k9.log" &
	k9=$!
	SFS_PID_OF[$MB]=$k9
	# a hang guard, not a timing check
	for i in $(seq 1 600); do compgen -G "$K9/tar-*.tmp*" >/dev/null && break; sleep 0.1; done
	check "kill during build: the build has begun (a temporary file)" sh -c "ls '$K9'/tar-*.tmp.* >/dev/null"
	kill -9 "$k9"
	wait "$k9" 2>/dev/null
	unset "SFS_PID_OF[$MB]"
	kill -CONT "$STOPPED"
	STOPPED=
	check "kill during build: no index was saved" sh -c "! ls '$K9'/*.sfsidx 2>/dev/null | grep -q ."
	check "kill during build: it never mounted" sh -c "! grep -q ' $MB fuse' /proc/mounts"
	check "kill during build: the remount works" sfs_mount "$MO/big.tar" "$MB" -o layout=tar,index_dir="$K9"
	check "kill during build: the remount built a new index" grep -q "indexed in" "$(sfs_log "$MB")"
	check "kill during build: the remount serves GNU tar's bytes" \
		right "$MB" "$T/files/big" $(cd "$T/files/big" && ls | sed -n '1~47p')
	check "kill during build: the leftover temporary file is gone" \
		sh -c "test \"\$(ls -A '$K9')\" = '$(cd "$K9" && ls *.sfsidx)'"
	check "kill during build: unmount" sfs_umount "$MB"
	check "kill during build: unmount the outer tar" sfs_umount "$MO"

	fresh_live tar
	check "kill while serving: mount" sfs_mount "$T/live/tar" "$M" -o layout=tar
	mapfile -t all < <(files_of tar a b k_rewrite)
	# (statfs always reaches the daemon: the loop ends once it is dead)
	( for i in $(seq 1 2000); do
		cat "${all[@]/#/$M/}" >/dev/null 2>&1 && stat -f "$M" >/dev/null 2>&1 || exit 0
	  done ) &
	reader=$!
	sleep 0.2	# not a timing check: the kill may land before or during the reads
	kill -9 "${SFS_PID_OF[$M]}"
	wait "${SFS_PID_OF[$M]}" 2>/dev/null
	unset "SFS_PID_OF[$M]"
	wait "$reader"
	check "kill while serving: the dead mount says so" expect_fail "Transport endpoint is not connected" stat "$M/a"
	check "kill while serving: fusermount3 -u clears it" fusermount3 -u "$M"
	check "kill while serving: the remount works" sfs_mount "$T/live/tar" "$M" -o layout=tar
	check "kill while serving: the saved index was used" \
		sh -c "! grep -q 'indexed\|rebuilding' '$(sfs_log "$M")'"
	check "kill while serving: the reference's bytes" right "$M" "$REF/tar" "${all[@]}"
	check "kill while serving: unmount" sfs_umount "$M"
fi

# ---- 4. an index_dir on a full file system ----
# What the code does: the build's first write that fails (ENOSPC) fails the
# mount with the file and the reason; the temporary file is removed.
full_refused() {	# DIR: a mount with index_dir=DIR is refused, DIR left empty
	expect_fail "$1/.*No space left on device" \
		timeout 120 "$SAMPLEFS" -f -o layout=tar,index_dir="$1" "$T/big.tar" "$T/mfull" &&
		! grep -q " $T/mfull fuse" /proc/mounts && test -z "$(ls -A "$1")"
}
if section 4; then
	mkdir -p "$T/full" "$T/mfull"
	SFS_MOUNTS+=("$T/mfull")
	if mount -t tmpfs -o size=1m tmpfs "$T/full" 2>/dev/null; then
		TMPFS=$T/full
		mkdir "$T/full/idx"
		dd if=/dev/zero of="$T/full/fill" bs=64k 2>/dev/null
		check "index_dir on a full file system: refused, naming it" full_refused "$T/full/idx"
		# room for the header and some of the index, not all of it
		rm "$T/full/fill"
		avail=$(df --output=avail -B1 "$T/full" | tail -1)
		fallocate -l $((avail - 16384)) "$T/full/fill"
		check "index_dir with 16 KiB free: refused, naming it" full_refused "$T/full/idx"
		rm "$T/full/fill"
		check "index_dir with room again: the mount works" \
			sfs_mount "$T/big.tar" "$T/mfull" -o layout=tar,index_dir="$T/full/idx"
		check "index_dir with room again: GNU tar's bytes" \
			right "$T/mfull" "$T/files/big" $(cd "$T/files/big" && ls | sed -n '1~47p')
		check "index_dir with room again: unmount" sfs_umount "$T/mfull"
		umount "$T/full" && TMPFS=
	else
		echo "# skipped: cannot mount a tmpfs (not root?)"
	fi
fi

# ---- 5. eight daemons at once, one source, one index_dir ----
# as the nodes of a cluster on shared storage; then each in its own PID
# namespace, where all eight have the same PID (as in containers)
eight() {	# NAME [wrapper...]: 8 daemons on mid.tar with index_dir $T/idx8-NAME
	local name=$1 dir=$T/idx8-$1 i mnt pids=() ok
	shift
	for i in 1 2 3 4 5 6 7 8; do
		mnt=$T/m8-$name-$i
		mkdir -p "$mnt"
		SFS_MOUNTS+=("$mnt")
		"$@" "$SAMPLEFS" -f -o layout=tar,index_dir="$dir" "$T/mid.tar" "$mnt" 2>"$T/m8-$name-$i.log" &
		SFS_PID_OF[$mnt]=$!
		SFS_LOG_OF[$mnt]=$T/m8-$name-$i.log
	done
	for i in 1 2 3 4 5 6 7 8; do
		mnt=$T/m8-$name-$i
		ok=0
		for j in $(seq 1 600); do	# a hang guard
			grep -q " $mnt fuse" /proc/mounts && { ok=1; break; }
			kill -0 "${SFS_PID_OF[$mnt]}" 2>/dev/null || break
			sleep 0.1
		done
		check "8 daemons ($name): daemon $i mounted" test $ok = 1 || cat "$T/m8-$name-$i.log"
	done
	check "8 daemons ($name): one index file, nothing else" \
		test "$(ls -A "$dir" | grep -c .) $(ls "$dir" | grep -c '\.sfsidx$')" = "1 1"
	(cd "$T/files/big" && find . -name 'm0[0-4]*' -printf '%P %y %s\n' | sort) >"$T/tree.want"
	for i in 1 2 3 4 5 6 7 8; do
		mnt=$T/m8-$name-$i
		check "8 daemons ($name): daemon $i lists GNU tar's tree" \
			cmp -s "$T/tree.want" <(cd "$mnt" && find . -type f -printf '%P %y %s\n' | sort)
		check "8 daemons ($name): daemon $i serves GNU tar's bytes" \
			right "$mnt" "$T/files/big" $(cd "$T/files/big" && ls m0[0-4]* | sed -n "${i}~41p")
		check "8 daemons ($name): daemon $i read no partial index" \
			sh -c "! grep -q 'rebuilding\|does not load\|error' '$T/m8-$name-$i.log'"
	done
	check "8 daemons ($name): one built the index, the others waited for it (lock.c)" \
		test "$(cat "$T"/m8-$name-*.log | grep -c 'indexed in')" = 1
	for i in 1 2 3 4 5 6 7 8; do
		mnt=$T/m8-$name-$i
		grep -q " $mnt fuse" /proc/mounts && check "8 daemons ($name): unmount $i" sfs_umount "$mnt"
	done
}
if section 5; then
	(cd "$T/files/big" && tar -cf "$T/mid.tar" m0[0-4]*)
	eight plain
	if unshare --pid --fork --kill-child true 2>/dev/null; then
		eight pidns unshare --pid --fork --kill-child
	else
		echo "# skipped: cannot make PID namespaces (unshare)"
	fi
fi

# ---- 6. the page past a small file's end, through mmap ----
# A cold read is spliced from the tar; through read() the kernel cuts it at
# st_size, but a mapped page shows whatever the reply held past the end:
# zeros, never the next member's header.
mmap_tails() {	# MNT REFDIR FILE...: each mapped file = REF's bytes, then zeros
	"$PY" - "$@" <<'PY'
import ctypes, mmap, os, sys
libc = ctypes.CDLL(None, use_errno=True)
libc.mmap.restype = ctypes.c_void_p
libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int,
                      ctypes.c_int, ctypes.c_long]
libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
mnt, ref, bad = sys.argv[1], sys.argv[2], 0
for f in sys.argv[3:]:
    want = open(os.path.join(ref, f), 'rb').read()
    n = len(want)
    length = -(-n // mmap.PAGESIZE) * mmap.PAGESIZE
    fd = os.open(os.path.join(mnt, f), os.O_RDONLY)
    addr = libc.mmap(None, length, mmap.PROT_READ, mmap.MAP_SHARED, fd, 0)
    os.close(fd)
    if addr in (None, ctypes.c_void_p(-1).value):
        print('    %s: mmap: %s' % (f, os.strerror(ctypes.get_errno())))
        bad = 1
        continue
    got = ctypes.string_at(addr, length)
    libc.munmap(addr, length)
    if got[:n] != want:
        print('    %s: its bytes differ' % f)
        bad = 1
    tail = got[n:]
    if tail != bytes(len(tail)):
        i = next(i for i, c in enumerate(tail) if c)
        print('    %s (%d bytes): byte %d of its last page is %r, not zero' % (f, n, n + i, tail[i:i + 8]))
        bad = 1
sys.exit(bad)
PY
}
if section 6; then
	fresh_live tar
	mapfile -t small < <(cd "$REF/tar" && find a -type f -size -8k -size +0 | sort)
	# poll=0: every read waits, so every read is spliced, cached or not
	check "mmap, poll=0: mount" sfs_mount "$T/live/tar" "$M" -o layout=tar,poll=0
	check "mmap, poll=0: sources and mount evicted" sfs_evict "$T/live/tar"/* "$M"
	check "mmap, poll=0: ${#small[@]} small members, zeros past their ends" mmap_tails "$M" "$REF/tar" "${small[@]}"
	check "mmap, poll=0: unmount" sfs_umount "$M"
	# the default tries memory first: a cold source makes it splice
	check "mmap, default: mount" sfs_mount "$T/live/tar" "$M" -o layout=tar
	for f in a/f00_10 a/f06_4097; do
		check "mmap, default: $f cold" sfs_evict "$T/live/tar/a.tar" "$M"
		check "mmap, default: $f, zeros past its end" mmap_tails "$M" "$REF/tar" "$f"
	done
	check "mmap, default: unmount" sfs_umount "$M"
	# ImageNet's members are spliced from the train tar too
	fresh_live in
	mapfile -t small < <(files_of in train | head -4)
	check "mmap, ImageNet: mount" sfs_mount "$T/live/in" "$M" -o "${OPTS[in]},poll=0"
	check "mmap, ImageNet: sources and mount evicted" sfs_evict "$T/live/in"/* "$M"
	check "mmap, ImageNet: train members, zeros past their ends" mmap_tails "$M" "$REF/in" "${small[@]}"
	check "mmap, ImageNet: unmount" sfs_umount "$M"
fi

# eio_soon MNT FILE: its read gives EIO within 10 s (the pages are
# dropped by a thread of the daemon's, after the read that saw the change)
eio_soon() {
	local i
	for i in $(seq 1 50); do
		cat "$1/$2" >/dev/null 2>&1 || { eio "$1" "$2"; return; }
		sfs_nap 0.2
	done
	echo "    $2: still read after 10 s"
	return 1
}
# ---- 7. for S, two files from FILE read, FILE touched: a third gives
# EIO, and then so do the two, whose pages the kernel had ----
if section 7; then
	for g in "tar layout=tar k_mtime.tar k_mtime" \
		 "qd layout=quickdraw k_mtime.npy images/k_mtime"; do
		read -r s opts file pat <<<"$g"
		fresh_live "$s"
		mapfile -t aff < <(files_of "$s" $pat | head -3)
		check "$s page cache: mount" sfs_mount "$T/live/$s" "$M" -o "$opts"
		check "$s page cache: two files read" right "$M" "$REF/$s" "${aff[@]:0:2}"
		fault mtime "$T/live/$s/$file"
		check "$s page cache: a file not read before: EIO" eio "$M" "${aff[2]}"
		check "$s page cache: the files read before: EIO too" eio_soon "$M" "${aff[0]}"
		check "$s page cache: ... both" eio_soon "$M" "${aff[1]}"
		check "$s page cache: unmount" sfs_umount "$M"
	done
fi

sfs_done
