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
#     on a cold (spliced) read: zeros, never the next member of the tar.
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
make_quickdraw(t + '/pristine/qd', ['cat', 'dog'], [12, 10], [12, 10], seed=1)
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
for i in range(3000):
    with open('%s/m%04d' % (d, i), 'wb') as f:
        f.write(bytes([i % 251 + 1]) * (1000 + i % 2000))
PY
mkdir -p "$T/pristine/tar" "$T/pristine/tar2"
tar -C "$T/files/a" -cf "$T/pristine/tar/a.tar" . &&
	tar -C "$T/files/b" --format=posix -cf "$T/pristine/tar/b.tar" . &&
	tar -C "$T/files/b" -cf "$T/pristine/tar2/b.tar" . &&
	tar -C "$T/files/big" -cf "$T/big.tar" . ||
	{ echo "not ok - GNU tar"; SFS_FAIL=1; sfs_done; exit 1; }
"$PY" "$SFS_ROOT/tests/integration/npy_oracle.py" make "$T/pristine/npy"

M=$T/m
REF=$T/ref
# Each layout: pristine source, -o options, the source file to damage,
# the files that depend on it, some that do not, whether its changes
# are checked on read (strokes are served from the index: they stay).
declare -A OPTS CHANGED AFF UNAFF CHECKED ORACLE
OPTS[qd_img]=layout=quickdraw CHANGED[qd_img]=cat.npy CHECKED[qd_img]=1
OPTS[qd_stk]=layout=quickdraw CHANGED[qd_stk]=cat.npz CHECKED[qd_stk]=0
OPTS[npy]=layout=npy CHANGED[npy]=digits.npy CHECKED[npy]=1
OPTS[tar]=layout=tar CHANGED[tar]=a.tar CHECKED[tar]=1
OPTS[in]=layout=imagenet,shard_size=4 CHANGED[in]=ILSVRC2012_img_train.tar CHECKED[in]=1
src_of() { case $1 in qd_*) echo qd ;; *) echo "$1" ;; esac; }

# oracle_ok LAYOUT MNT: the whole mount agrees with the independent oracle
oracle_ok() {
	local src=$T/live/$(src_of "$1")
	case $1 in
	qd_*) "$PY" "$SFS_ROOT/tests/integration/qd_oracle.py" check "$src" "$2" | tail -5 ;;
	npy) rm -rf "$T/want.npy" && "$PY" "$SFS_ROOT/tests/integration/npy_oracle.py" expect "$src" "$T/want.npy" &&
		diff -r "$T/want.npy" "$2" | head -5 ;;
	tar) diff -r "$T/files/a" "$2/a" | head -5 && diff -r "$T/files/b" "$2/b" | head -5 ;;
	in) "$PY" "$SFS_ROOT/tests/integration/imagenet_oracle.py" "$src" "$2" --shard-size 4 | head -5 ;;
	esac
	[ "${PIPESTATUS[0]}" -eq 0 ]
}

# the live copy a test damages: the pristine source, mtimes kept (so the
# index saved for it stays valid)
fresh_live() {
	rm -rf "$T/live/$1" && mkdir -p "$T/live" && cp -a "$T/pristine/$1" "$T/live/$1"
}

for L in qd_img npy tar in; do
	s=$(src_of $L)
	fresh_live "$s"
	check "$s: mount the pristine source" sfs_mount "$T/live/$s" "$M" -o "${OPTS[$L]}"
	check "$s: the mount agrees with the oracle" oracle_ok "$L" "$M"
	mkdir -p "$REF/$s" && cp -r "$M"/. "$REF/$s"/
	check "$s: unmount" sfs_umount "$M"
done
(cd "$REF/qd" && ls -d images/cat/* | sort) >"$T/aff.qd_img"
(cd "$REF/qd" && ls -d strokes/cat/* | sort) >"$T/aff.qd_stk"
(cd "$REF/qd" && ls -d images/dog/* strokes/dog/* | sort | sed -n '1~8p') >"$T/unaff.qd_img"
cp "$T/unaff.qd_img" "$T/unaff.qd_stk"
(cd "$REF/npy" && ls -d digits/* | sort) >"$T/aff.npy"
(cd "$REF/npy" && ls -d images/* labels/* | sort | sed -n '1~8p') >"$T/unaff.npy"
(cd "$REF/tar" && find a -type f -size +0 | sort) >"$T/aff.tar"
(cd "$REF/tar" && find b -type f | sort) >"$T/unaff.tar"
(cd "$REF/in" && find train -type f | sort) >"$T/aff.in"
(cd "$REF/in" && find val -type f | sort) >"$T/unaff.in"

# ---- file checks: every one reads, or fails, as a group ----
# right MNT REFDIR FILE...: each file reads as REFDIR's copy
right() {
	local m=$1 r=$2 f bad=0; shift 2
	for f; do
		cat "$m/$f" >"$T/got" 2>"$T/err" && cmp -s "$T/got" "$r/$f" && continue
		echo "    $f: $(head -c 200 "$T/err") $(cmp "$T/got" "$r/$f" 2>&1 | head -1)"
		bad=1
	done
	return $bad
}
# eio MNT FILE...: each read fails with EIO
eio() {
	local m=$1 f bad=0; shift
	for f; do
		if cat "$m/$f" >/dev/null 2>"$T/err"; then
			echo "    $f: read succeeded"; bad=1
		elif ! grep -q 'Input/output error' "$T/err"; then
			echo "    $f: $(cat "$T/err")"; bad=1
		fi
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
# Two files are read before the fault (the kernel may keep their pages:
# their bytes or EIO), the others after it, once the mount's pages are
# dropped so the daemon is asked: EIO when the layout checks the file
# (its size or mtime differ), else the bytes read before (an unlinked or
# renamed-over file stays open: the daemon reads what it mounted).
source_fault() {
	local L=$1 kind=$2 s w n
	s=$(src_of "$L")
	local live=$T/live/$s aff unaff
	# (8 and 4 of them: a few reads say it as well as many)
	mapfile -t aff < <(head -8 "$T/aff.$L")
	mapfile -t unaff < <(head -4 "$T/unaff.$L")
	fresh_live "$s"
	check "$L $kind: mount" sfs_mount "$live" "$M" -o "${OPTS[$L]}" || return
	check "$L $kind: two files read before" right "$M" "$REF/$s" "${aff[@]:0:2}"
	fault "$kind" "$live/${CHANGED[$L]}"
	check "$L $kind: the mount's pages dropped" sfs_evict "$live"/*.* "$M"
	check "$L $kind: files read before: their bytes or EIO" right_or_eio "$M" "$REF/$s" "${aff[@]:0:2}"
	if [ "${CHECKED[$L]}" = 1 ] && [ "$kind" != delete ] && [ "$kind" != replace ]; then
		check "$L $kind: ${#aff[@]} files of ${CHANGED[$L]} not read before: EIO" eio "$M" "${aff[@]:2}"
		w=1
	else
		check "$L $kind: files of ${CHANGED[$L]} not read before: the mounted bytes" \
			right "$M" "$REF/$s" "${aff[@]:2}"
		w=0
	fi
	check "$L $kind: files of other sources: their bytes" right "$M" "$REF/$s" "${unaff[@]}"
	n=$(grep -c "${CHANGED[$L]}.*changed since" "$(sfs_log "$M")")
	check "$L $kind: $w warning(s) naming ${CHANGED[$L]} (got $n)" test "$n" = "$w"
	check "$L $kind: unmount, no sanitizer report" sfs_umount "$M"
}
for L in qd_img qd_stk npy tar in; do
	for kind in truncate rewrite mtime delete replace; do
		source_fault "$L" "$kind"
	done
done

sfs_done
