#!/usr/bin/env bash
# Big sequential reads and warm epochs (issue 26), checked by what the
# kernel and the mount's counters say, never by time:
#  - the mount's read-ahead window (/sys/class/bdi/MAJ:MIN/read_ahead_kb)
#    is what -o readahead says: 1024 KiB by default as root, the value
#    given, the kernel's 128 with readahead=0; where it cannot be written
#    (not root, or a read-only /sys) the kernel's stays and a value given
#    is warned about (fs/readahead.h);
#  - a virtual shard streamed by cat arrives in 1 MiB READs
#    (stats.json's read_size_hist), and its members are the source's bytes
#    (Python's tarfile reads both the shard and the source's class tars);
#  - a second pass over N files (an epoch with the page cache warm) sends
#    no READ and no LOOKUP to the daemon, and gives the source's bytes.
# Needs root (only root may set the window; no caches are dropped: a
# fresh mount has nothing in the kernel's caches); skipped otherwise.  The
# not-root checks run as nobody where nobody may mount FUSE.
. "$(dirname "$0")/lib.sh"
sfs_setup
T=$SFS_TMP
M=$T/mnt

if [ "$(id -u)" != 0 ]; then
	echo "ok - skipped: needs root (the read-ahead window is root's to set)"
	sfs_done
	exit $?
fi

# An ImageNet-shaped release: 20 classes x 100 JPEGs of a few KB (the
# bench's generator), shards of 1000 samples (~4.5 MB each)
timeout 120 "$PY" "$SFS_ROOT/tools/bench/gen_imagenet.py" "$T/in" 20 100 40 0 >/dev/null ||
	{ echo "not ok - fixture"; SFS_FAIL=$((SFS_FAIL + 1)); sfs_done; exit 1; }
rm -f "$T/in/flat.tar" "$T/in/train.txt" "$T/in/manifest.json"

# ra MNT: the mount's read_ahead_kb
ra() {
	cat "/sys/class/bdi/$(mountpoint -d "$1")/read_ahead_kb"
}
# stat_of MNT KEY: a number of stats.json (ops' lookup/read, or
# read_size_hist's bucket "1048576" as 1M, "524288" as 512K...)
stat_of() {
	timeout 20 "$PY" - "$1/.samplefs/stats.json" "$2" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
k = sys.argv[2]
if k in d["ops"]:
    print(d["ops"][k])
else:
    print(d["read_size_hist"][k])
PY
}

OPTS=layout=imagenet,shard_size=1000,index_dir=$T/idx

# ---- the window -----------------------------------------------------------
for want in "1024:" "2048:readahead=2048" "128:readahead=0"; do
	kib=${want%%:*} opt=${want#*:}
	if check "mount ${opt:-with the default readahead}" sfs_mount "$T/in" "$M" -o "$OPTS${opt:+,$opt}"; then
		check "${opt:-default (root)}: read_ahead_kb is $kib" test "$(ra "$M")" = "$kib"
		check "unmount" sfs_umount "$M"
	fi
done
check "-o readahead past 1 GiB refuses the mount" \
	expect_fail "at most" "$SAMPLEFS" -f -o "$OPTS,readahead=2000000" "$T/in" "$M"

# a window that cannot be written (sysfs read-only, in a mount namespace of
# its own, as in a container): the mount goes on with the kernel's window,
# warning only when a value was given
ro_sys() {	# LOG [options]: prints the window of a mount made there
	timeout 60 unshare -m --propagation private sh -c '
		mount -o remount,bind,ro /sys || exit 1
		"$1" -o "layout=imagenet,index_dir=$2/idx,quiet$5" "$2/in" "$3" 2>"$4" || exit 1
		cat "/sys/class/bdi/$(mountpoint -d "$3")/read_ahead_kb"
		fusermount3 -u "$3"' sh "$SAMPLEFS" "$T" "$T/rosys" "$@"
}
mkdir -p "$T/rosys"
SFS_MOUNTS+=("$T/rosys")
if command -v unshare >/dev/null && out=$(ro_sys "$T/ro1" ""); then
	check "read-only sysfs, default: the kernel's 128 KiB" test "$out" = 128
	check "read-only sysfs, default: no warning" sh -c "! grep -q warning \"$T/ro1\" || { cat \"$T/ro1\"; false; }"
	out=$(ro_sys "$T/ro2" ,readahead=4096)
	check "read-only sysfs, readahead=4096: mounted, the kernel's 128 KiB" test "$out" = 128
	check "read-only sysfs, readahead=4096: a warning names read_ahead_kb and why" \
		grep -q "readahead=4096: cannot write /sys/class/bdi/.*/read_ahead_kb: Read-only file system" "$T/ro2"
else
	echo "ok - skipped: no mount namespace with a read-only /sys here"
fi

# not root: the kernel's window, and a warning when one was asked for
if id nobody >/dev/null 2>&1 && command -v setpriv >/dev/null; then
	mkdir -p "$T/nr" && chmod 755 "$T" && chown nobody "$T/nr"
	nobody() {
		timeout 60 setpriv --reuid=nobody --regid="$(id -g nobody)" --clear-groups \
			env HOME="$T/nr" XDG_CACHE_HOME="$T/nr" "$@"
	}
	nr_mount() {	# LOG [options]: mounts as nobody, waits, prints read_ahead_kb
		local log=$1 i; shift
		nobody "$SAMPLEFS" -o "layout=imagenet,index_dir=$T/nr/idx,quiet$*" "$T/in" "$T/nr/m" 2>"$log" ||
			return 1
		for i in $(seq 1 100); do sfs_mounted "$T/nr/m" && break; sfs_nap 0.05; done
		ra "$T/nr/m"
		fusermount3 -u "$T/nr/m"
	}
	mkdir -p "$T/nr/m" && chown nobody "$T/nr/m"
	SFS_MOUNTS+=("$T/nr/m")
	if out=$(nr_mount "$T/nr/log1"); then
		check "not root, default: the kernel's 128 KiB" test "$out" = 128
		check "not root, default: no warning" sh -c "! grep -q warning \"$T/nr/log1\""
		out=$(nr_mount "$T/nr/log2" ,readahead=4096)
		check "not root, readahead=4096: the kernel's 128 KiB" test "$out" = 128
		check "not root, readahead=4096: a warning names read_ahead_kb" \
			grep -q "readahead=4096: cannot write /sys/class/bdi/.*/read_ahead_kb" "$T/nr/log2"
	else
		echo "ok - skipped: nobody cannot mount here ($(head -c 200 "$T/nr/log1"))"
	fi
fi

# ---- a shard streamed -----------------------------------------------------
if check "mount for streaming" sfs_mount "$T/in" "$M" -o "$OPTS,readahead=1024"; then
	size=$(stat -c %s "$M/shards/train-000000.tar")
	timeout 30 cat "$M/shards/train-000000.tar" >"$T/shard0.tar"
	big=$(stat_of "$M" 1048576) small=$(stat_of "$M" 131072) mid=$(stat_of "$M" 524288)
	echo "    shard of $size bytes: READs of <=128K $small, <=512K $mid, <=1M $big"
	# the window ramps up from the first READ: at most a few below 1 MiB
	check "streamed in 1 MiB READs ($big of $((size / 1048576)) MiB)" \
		test "$big" -ge $((size / 1048576 - 1))
	check "few READs below 1 MiB ($small + $mid)" test $((small + mid)) -le 4
	check "the shard's members are the source's bytes (tarfile)" \
		timeout 60 "$PY" - "$T/shard0.tar" "$T/in/ILSVRC2012_img_train.tar" <<'PY'
import io, sys, tarfile
src = {}
with tarfile.open(sys.argv[2]) as outer:
    wnids = sorted(m.name[:-4] for m in outer.getmembers())
    for m in outer.getmembers():
        with tarfile.open(fileobj=io.BytesIO(outer.extractfile(m).read())) as inner:
            for n in inner.getmembers():
                src[n.name] = inner.extractfile(n).read()
seen = 0
with tarfile.open(sys.argv[1]) as shard:
    for m in shard.getmembers():
        stem, ext = m.name.rsplit(".", 1)
        data = shard.extractfile(m).read()
        if ext == "jpg":
            assert data == src[stem + ".JPEG"], m.name
            seen += 1
        else:
            assert data == str(wnids.index(stem.split("_")[0])).encode(), m.name
assert seen == 1000, seen
PY
	check "unmount" sfs_umount "$M"
fi

# ---- a warm epoch ---------------------------------------------------------
if check "mount for epochs" sfs_mount "$T/in" "$M" -o "$OPTS"; then
	(cd "$M" && find train -type f | sort | head -600) >"$T/list"
	epoch() { (cd "$M" && timeout 60 xargs -a "$T/list" -d '\n' md5sum) >"$T/epoch$1"; }
	epoch 1
	# what reading stats.json costs by itself (LOOKUPs of the control
	# directory and its file: their entries time out at once, which the
	# kernel checks per jiffy, so one read costs 1 to 3), then around the
	# second epoch: no more, give or take those 2 (a LOOKUP per file would
	# be 600)
	l0=$(stat_of "$M" lookup) r0=$(stat_of "$M" read)
	l1=$(stat_of "$M" lookup) r1=$(stat_of "$M" read)
	epoch 2
	l2=$(stat_of "$M" lookup) r2=$(stat_of "$M" read)
	echo "    lookups $l0 $l1 $l2, reads $r0 $r1 $r2"
	check "warm epoch: no LOOKUP sent" test $((l2 - l1)) -le $((l1 - l0 + 2))
	check "warm epoch: no READ sent" test $((r2 - r1)) -le $((r1 - r0 + 2))
	check "warm epoch: the same bytes as the first" cmp "$T/epoch1" "$T/epoch2"
	check "epochs: the source's bytes (tarfile)" \
		timeout 60 "$PY" - "$T/epoch2" "$T/in/ILSVRC2012_img_train.tar" <<'PY'
import hashlib, io, sys, tarfile
src = {}
with tarfile.open(sys.argv[2]) as outer:
    for m in outer.getmembers():
        with tarfile.open(fileobj=io.BytesIO(outer.extractfile(m).read())) as inner:
            for n in inner.getmembers():
                src["train/%s/%s" % (m.name[:-4], n.name)] = inner.extractfile(n).read()
lines = open(sys.argv[1]).read().split("\n")[:-1]
assert len(lines) == 600
for line in lines:
    h, path = line.split("  ", 1)
    assert hashlib.md5(src[path]).hexdigest() == h, path
PY
	check "unmount" sfs_umount "$M"
fi
sfs_done
