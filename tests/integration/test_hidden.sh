#!/usr/bin/env bash
# Nothing hidden without a word, and options checked against the layout
# (issue 9, items 4 and 5):
#   - a nested tar expanded onto a path the archive also uses (d/inner next
#     to d/inner.tar; a/x.txt next to a.tar holding x.txt): both reachable,
#     bytes equal to Python's tarfile, one warning naming both members;
#   - Quick, Draw! class names with a TAB, a newline, or otherwise unfit
#     (from the listing or classes.txt): the mount is refused naming the
#     class, never a class dropped;
#   - layout=npy: every entry it does not serve gets one warning, and no
#     "error:" precedes a mount that then succeeds;
#   - options for another layout refused naming option and layout; --help
#     lists each option under the layouts it applies to;
#   - alternating recursive=0/1/0 tar mounts: the third reuses its index;
#   - -o fsname=NAME is the first field of /proc/mounts.
. "$(dirname "$0")/lib.sh"
sfs_setup
T=$SFS_TMP

# mount_refused PATTERN SRC MNT [samplefs args]: the mount fails and its
# messages match PATTERN (a grep -E pattern), with no sanitizer report
mount_refused() {
	local pat=$1 src=$2 mnt=$3 log; shift 3
	if sfs_mount "$src" "$mnt" "$@" 2>/dev/null; then
		echo "    unexpectedly mounted: $*"
		sfs_umount "$mnt"
		return 1
	fi
	log=$(sfs_log "$mnt")
	if grep -q 'Sanitizer\|runtime error:' "$log"; then
		head -30 "$log"
		return 1
	fi
	grep -qE -- "$pat" "$log" || { echo "    log: $(cat "$log")"; return 1; }
}
# logged MNT FIXED-STRING: the daemon log of MNT holds that line part
logged() { grep -qF -- "$2" "$(sfs_log "$1")" || { echo "    log: $(cat "$(sfs_log "$1")")"; return 1; }; }
# count_in MNT FIXED-STRING N: the log holds the string exactly N times
count_in() {
	local n
	n=$(grep -cF -- "$2" "$(sfs_log "$1")")
	[ "$n" -eq "$3" ] || { echo "    '$2': $n times, want $3"; return 1; }
}

# ---- tar: a nested tar and a member of the same path ----
$PY - "$T" <<'PY'
import io, sys, tarfile
t = sys.argv[1]
def tar(members):
    bio = io.BytesIO()
    with tarfile.open(fileobj=bio, mode="w", format=tarfile.GNU_FORMAT) as tf:
        for name, data in members:
            ti = tarfile.TarInfo(name)
            ti.size, ti.mtime = len(data), 1_600_000_000
            tf.addfile(ti, io.BytesIO(data))
    return bio.getvalue()
inner = tar([("x.txt", b"inner x\n"), ("y", b"inner y\n")])
open(t + "/file_then_tar.tar", "wb").write(tar([("d/inner", b"outer d/inner\n"),
                                               ("d/inner.tar", inner)]))
open(t + "/tar_then_file.tar", "wb").write(tar([("d/inner.tar", inner),
                                               ("d/inner", b"outer d/inner\n")]))
open(t + "/dir_and_tar.tar", "wb").write(tar([("a/x.txt", b"outer a/x.txt\n"),
                                             ("a.tar", inner)]))
PY
# tree_is TAR MNT: every member of the mount (path -> bytes) is what Python's
# tarfile gives, the nested tar's members under "<member>.tar/" when they clash
tree_is() {
	$PY - "$1" "$2" <<'PY'
import io, os, sys, tarfile
src, mnt = sys.argv[1], sys.argv[2]
want = {}
with tarfile.open(src) as tf:
    for m in tf.getmembers():
        data = tf.extractfile(m).read()
        if m.name.endswith(".tar"):
            with tarfile.open(fileobj=io.BytesIO(data)) as inner:
                for n in inner.getmembers():
                    want[m.name + "/" + n.name] = inner.extractfile(n).read()
        else:
            want[m.name] = data
got = {}
for d, _, files in os.walk(mnt):
    for f in files:
        p = os.path.join(d, f)
        got[os.path.relpath(p, mnt)] = open(p, "rb").read()
if got != want:
    print("    want", sorted(want), "\n    got ", sorted(got))
    sys.exit(1)
PY
}
M=$T/m
for fx in file_then_tar tar_then_file; do
	if check "$fx: mounts" sfs_mount "$T/$fx.tar" "$M" -o layout=tar,index_dir="$T/idx"; then
		check "$fx: d/inner and d/inner.tar/{x.txt,y} all there, tarfile's bytes" tree_is "$T/$fx.tar" "$M"
		check "$fx: one warning naming both members" count_in "$M" \
			"nested tar 'd/inner.tar' would be directory 'd/inner', which member 'd/inner' also uses" 1
		check "$fx: unmount" sfs_umount "$M"
	fi
done
if check "dir_and_tar: mounts" sfs_mount "$T/dir_and_tar.tar" "$M" -o layout=tar,index_dir="$T/idx"; then
	check "dir_and_tar: a/x.txt and a.tar/{x.txt,y} all there, tarfile's bytes" tree_is "$T/dir_and_tar.tar" "$M"
	check "dir_and_tar: the warning names a.tar and a/x.txt" logged "$M" \
		"nested tar 'a.tar' would be directory 'a', which member 'a/x.txt' also uses"
	check "dir_and_tar: unmount" sfs_umount "$M"
fi

# ---- Quick, Draw!: class names the tree or the split lines cannot carry ----
$PY - "$T" "$SFS_ROOT" <<'PY'
import os, sys
sys.path.insert(0, os.path.join(sys.argv[2], "tests", "fixtures"))
from make_quickdraw import make_quickdraw
t = sys.argv[1]
make_quickdraw(t + "/qd_tab", ["cat", "a\tb", "dog"], [4, 4, 4], [4, 4, 4], layout="official", seed=1)
make_quickdraw(t + "/qd_nl", ["cat", "x\ny", "dog"], [4, 4, 4], [4, 4, 4], layout="official", seed=2)
make_quickdraw(t + "/qd_ok", ["cat", "dog"], [4, 4], [4, 4], layout="official", seed=3)
open(t + "/tab_classes.txt", "w").write("cat\nca\tt\ndog\n")
open(t + "/long_classes.txt", "w").write("cat\n" + "l" * 251 + "\n")
open(t + "/dup_classes.txt", "wb").write(b"cat\r\ndog\n\ncat\n")
# 100,000 names (the most a classes file may hold), the last the first's
# again: pairwise checks took 26 s of CPU on it
many = ["%05d" % i for i in range(99999)] + ["00000"]
open(t + "/many_classes.txt", "w").write("\n".join(many) + "\n")
# with its own classes.txt, an unfit file name in the listing is no class
make_quickdraw(t + "/qd_listed", ["cat", "a\tb", "dog"], [4, 4, 4], [4, 4, 4], layout="official", seed=4)
open(t + "/qd_listed/classes.txt", "w").write("dog\ncat\n")
PY
check "class 'a<TAB>b' in the listing: refused naming it" mount_refused \
	"numpy_bitmap: file of class 'a\\\\tb': a control character" "$T/qd_tab" "$M" -o index_dir="$T/idx"
check "class 'x<newline>y' in the listing: refused naming it (not dropped)" mount_refused \
	"file of class 'x\\\\ny': a control character" "$T/qd_nl" "$M" -o index_dir="$T/idx"
check "a TAB in -o classes=FILE: refused naming the class and offset" mount_refused \
	"tab_classes.txt: offset 4: class 'ca\\\\tt': a control character" "$T/qd_ok" "$M" \
	-o index_dir="$T/idx",classes="$T/tab_classes.txt"
check "a 251-byte name in -o classes=FILE: refused saying why" mount_refused \
	"class 'l{80}\.\.\.': longer than 250 bytes" "$T/qd_ok" "$M" \
	-o index_dir="$T/idx",classes="$T/long_classes.txt"
if check "a class listed twice in -o classes=FILE: refused naming the second line's offset" \
	mount_refused "dup_classes.txt: offset 10: class 'cat' listed twice" "$T/qd_ok" "$M" \
	-o index_dir="$T/idx",classes="$T/dup_classes.txt"
# a bound for a hang, not a speed check: the refusal takes well under 1 s
check "100,000 classes, the last listed twice: refused within 20 s" expect_fail \
	"many_classes.txt: offset 599994: class '00000' listed twice" \
	timeout 20 "$SAMPLEFS" -f -o index_dir="$T/idx",classes="$T/many_classes.txt" "$T/qd_ok" "$M"
check "classes.txt chooses the classes: an unfit unlisted file is no class" \
	sfs_mount "$T/qd_listed" "$M" -o index_dir="$T/idx"; then
	check "classes.txt order served" test "$(cat "$M/classes.txt")" = "$(printf 'dog\ncat')"
	check "unmount qd_listed" sfs_umount "$M"
fi

# ---- npy: one warning per entry not served, no 'error:' ----
$PY - "$T" <<'PY'
import os, sys
import numpy as np
d = sys.argv[1] + "/arrays"
os.makedirs(d + "/sub")
np.save(d + "/a.npy", np.arange(6).reshape(3, 2))
np.save(d + "/sub/b.npy", np.arange(3))
np.savez(d + "/c.npz", x=np.arange(3))
np.save(d + "/.hidden.npy", np.arange(3))
np.save(d + "/u.npy", np.array(["ab", "cd"]))
np.save(d + "/f.npy", np.asfortranarray(np.arange(6).reshape(3, 2).T))
open(d + "/README", "w").write("notes\n")
PY
A=$T/arrays
if check "npy dir with unserved entries: mounts" sfs_mount "$A" "$M" -o layout=npy; then
	check "npy: only a/ served" test "$(ls -A "$M")" = a
	for w in "$A/c.npz: skipped: an .npz archive" "$A/.hidden.npy: skipped: hidden" \
		 "$A/sub: skipped: a directory" "$A/README: skipped: not a .npy file" \
		 "$A/f.npy: skipped: Fortran-order" \
		 "$A/u.npy: skipped: dtype '<U2' is not served (layout=npy serves the kinds b, i, u, f, c and ?: numbers and booleans)"; do
		check "npy: one warning: ${w#$A/}" count_in "$M" "warning: $w" 1
	done
	check "npy: no 'error:' before a mount that succeeds" count_in "$M" "error:" 0
	check "npy: unmount" sfs_umount "$M"
fi

# ---- options checked against the layout ----
mkdir -p "$T/empty"
for o in per_class=3 image=uint8 classes="$T/tab_classes.txt" recursive=2; do
	check "-o ${o%%=*} on imagenet: refused naming option and layout" mount_refused \
		"-o ${o%%=*} does not apply to layout=imagenet" "$T/empty" "$M" -o layout=imagenet,$o
done
check "-o shard_size on a (detected) plain tar: refused" mount_refused \
	"-o shard_size does not apply to layout=tar" "$T/dir_and_tar.tar" "$M" -o shard_size=100
check "-o per_class and split on a tar: both named" mount_refused \
	"-o per_class does not apply to layout=tar" "$T/dir_and_tar.tar" "$M" -o per_class=1,split=80/10/10
check "... and split" grep -qF -- "-o split does not apply to layout=tar" "$(sfs_log "$M")"
check "-o recursive on npy: refused" mount_refused \
	"-o recursive does not apply to layout=npy" "$A" "$M" -o layout=npy,recursive=1
# --help: the section each option is listed under
help_section() { # OPTION: the titles of the sections that list it
	"$SAMPLEFS" --help | awk -v o="-o $1" '
		/^[A-Za-z]/ { sec = $0 } index($0, o) == 5 { print sec }' | tr '\n' '|'
}
check "--help: recursive only under tars" test "$(help_section recursive=)" = "tars (layout=tar):|"
check "--help: shard_size under quickdraw (its /epochs) and ImageNet" test "$(help_section shard_size=)" = \
	"Quick, Draw! (layout=quickdraw):|ImageNet (layout=imagenet):|"
check "--help: shuffle_seed only under ImageNet" test "$(help_section shuffle_seed=)" = "ImageNet (layout=imagenet):|"
check "--help: per_class under quickdraw and npy" test "$(help_section per_class=)" = \
	"Quick, Draw! (layout=quickdraw):|arrays (layout=npy):|"
check "--help: classes only under quickdraw" test "$(help_section classes=)" = "Quick, Draw! (layout=quickdraw):|"

# ---- the tar index is kept per recursive= ----
n=0
for r in 0 1 0 1; do
	n=$((n + 1))
	if check "recursive=$r (mount $n): mounts" sfs_mount "$T/dir_and_tar.tar" "$M" \
		-o layout=tar,recursive=$r,index_dir="$T/idx-r"; then
		if [ $n -le 2 ]; then
			check "mount $n: built its index" logged "$M" "indexed in"
		else
			check "mount $n (recursive=$r again): no rebuild" count_in "$M" "indexed in" 0
		fi
		check "mount $n: unmount" sfs_umount "$M"
	fi
done

# ---- -o fsname= ----
if check "mount -o fsname=mydata" sfs_mount "$T/dir_and_tar.tar" "$M" -o fsname=mydata,index_dir="$T/idx"; then
	check "/proc/mounts' first field is mydata" \
		test "$(awk -v m="$M" '$2 == m { print $1 }' /proc/mounts)" = mydata
	check "unmount fsname" sfs_umount "$M"
fi
if check "mount without fsname" sfs_mount "$T/dir_and_tar.tar" "$M" -o index_dir="$T/idx"; then
	check "/proc/mounts' first field is the source" \
		test "$(awk -v m="$M" '$2 == m { print $1 }' /proc/mounts)" = "$T/dir_and_tar.tar"
	check "unmount plain" sfs_umount "$M"
fi

sfs_done
