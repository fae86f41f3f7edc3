#!/usr/bin/env bash
# ImageNet layout end to end: fake ILSVRC2012 releases (tests/fixtures/
# make_imagenet.py) mounted and compared with an independent Python model
# (imagenet_oracle.py: tarfile + scipy + numpy) file by file, virtual tars read
# by tarfile and tar -tvf, ImageFolder/DataLoader over /train and /val, then
# damaged sources: truncated train tar, bad header checksum, a meta.mat that is
# not one, a source shrinking while mounted, samplefs-inspect --verify.
. "$(dirname "$0")/lib.sh"
sfs_setup
INSPECT=$SFS_BIN/samplefs-inspect
ORACLE="$PY $SFS_ROOT/tests/integration/imagenet_oracle.py"
D=$SFS_TMP/data
M=$SFS_TMP/mnt

export SFS_ROOT	# the fixture generator below finds tests/fixtures by it
# fixtures: three releases and their truths
$PY - "$D" <<'EOF' || { echo "fixture generation failed"; exit 1; }
import json, os, sys
sys.path.insert(0, os.path.join(os.environ.get("SFS_ROOT", "."), "tests/fixtures"))
from make_imagenet import make_imagenet, pick_wnids
d = sys.argv[1]
wnids = pick_wnids(6, seed=5) + ["n01440764"]
for name, kw in [("full", {}), ("dirs", dict(class_tars_dir=True, compressed_mat="matlab")),
                 ("nodevkit", dict(devkit=False))]:
    t = make_imagenet(os.path.join(d, name), wnids, per_class=7, n_val=21, seed=len(name), **kw)
    json.dump(t, open(os.path.join(d, name + ".json"), "w"))
EOF

# oracle_run NAME SRC [samplefs -o options] -- [oracle options]
oracle_run() {
	local name=$1 src=$2 opts=$3; shift 3
	sfs_mount "$src" "$M" -o "layout=imagenet,$opts" &&
		check "$name: every path and byte vs the oracle" $ORACLE "$src" "$M" "$@"
	check "$name: unmount, no sanitizer report" sfs_umount "$M"
}

oracle_run "default order" "$D/full" shard_size=8 --shard-size 8 --truth "$D/full.json"
oracle_run "shard_seed" "$D/full" shard_size=5,shard_seed=3,shuffle_seed=9 \
	--shard-size 5 --shard-seed 3 --shuffle-seed 9 --truth "$D/full.json"
# -o checksums (issue 28): the class tars' members checked as they are
# read, the virtual shards made from checked bytes
oracle_run "checksums" "$D/full" shard_size=8,checksums,index_dir="$SFS_TMP/sums-idx" \
	--shard-size 8 --truth "$D/full.json"
check "checksums: the build computed them" grep -q "checksums (CRC32C) of" "$(sfs_log "$M")"
oracle_run "train/<wnid>.tar, MATLAB-style meta.mat" "$D/dirs" shard_size=6 \
	--shard-size 6 --truth "$D/dirs.json"
oracle_run "no devkit" "$D/nodevkit" shard_size=4 --shard-size 4 --truth "$D/nodevkit.json"

# partial releases: val only, train only
mkdir -p "$SFS_TMP/valonly" "$SFS_TMP/trainonly"
cp "$D/full/ILSVRC2012_img_val.tar" "$D/full/ILSVRC2012_devkit_t12.tar.gz" "$SFS_TMP/valonly/"
cp "$D/full/ILSVRC2012_img_train.tar" "$D/full/ILSVRC2012_devkit_t12.tar.gz" "$SFS_TMP/trainonly/"
oracle_run "val tar and devkit only" "$SFS_TMP/valonly" "" --truth "$D/full.json"
oracle_run "train tar and devkit only" "$SFS_TMP/trainonly" shard_size=10 --shard-size 10 --truth "$D/full.json"

# the mount of a saved index, ImageFolder, tar -tvf
idx_before=$(ls -l --time-style=+%s.%N "$XDG_CACHE_HOME"/samplefs/imagenet-* 2>/dev/null | md5sum)
if sfs_mount "$D/full" "$M" -o layout=imagenet,shard_size=8; then
	check "remount reuses the saved indexes" \
		test "$idx_before" = "$(ls -l --time-style=+%s.%N "$XDG_CACHE_HOME"/samplefs/imagenet-* | md5sum)"
	check "inodes distinct, none in the reserved range" inodes_in_scheme "$M"
	check "ImageFolder + DataLoader(num_workers=2) on /train and /val" \
		$PY "$SFS_ROOT/tests/integration/imagefolder_check.py" "$M" "$D/full.json"
	check "tar -tvf lists the shard" bash -c \
		"set -o pipefail; tar -tvf '$M/shards/train-000001.tar' | grep -c ' n[0-9]*_[0-9]*\.\(cls\|jpg\)$' | grep -qx 16"
	check "webdataset key grouping: .cls then .jpg per sample" bash -c \
		"set -o pipefail; tar -tf '$M/shards/val-000000.tar' | sed 's/\.[^.]*$//' | uniq -c |
		 awk '\$1 != 2 {bad = 1} END {exit bad || NR == 0}'"
	check "a name that is not there" bash -c "! test -e '$M/train/n99999999' && ! test -e '$M/shards/train/0/0.nope.JPEG'"
	f0=$(ls "$M/shards/train/0" | head -n1)
	check "shard names: no leading zeros, right shard, right label only" bash -c "
		test -e '$M/shards/train/0/$f0' && ! test -e '$M/shards/train/00' &&
		! test -e '$M/shards/train/1/$f0' && ! test -e '$M/shards/train/0/9${f0}' &&
		! test -e '$M/shards/train/0/0${f0}' && ! test -e '$M/shards/train-0.tar' &&
		! test -e '$M/shards/train-999999.tar' && ! test -e '$M/shuffled/test.txt'"
	check "a train member is not a val member" bash -c \
		"! test -e '$M/val/$(ls "$M/train" | head -n1)/${f0#*.}'"
	check "shuffled/train.txt names every shard file once" bash -c \
		"cd '$M/shards/train' && sort '$M/shuffled/train.txt' | diff - <(find . -type f | sed 's|^\./||' | sort)"
fi
check "unmount after ImageFolder" sfs_umount "$M"

# corrupt saved indexes are noticed and rebuilt
for f in "$XDG_CACHE_HOME"/samplefs/imagenet-*.sfsidx; do
	$PY -c "import sys; f = open(sys.argv[1], 'r+b'); n = f.seek(0, 2); f.seek(n // 2); b = f.read(1); f.seek(n // 2); f.write(bytes([b[0] ^ 0x55]))" "$f"
done
oracle_run "flipped byte in the saved indexes" "$D/full" shard_size=8 --shard-size 8
check "daemon said it rebuilt" grep -q "rebuilding index" "$SFS_TMP/daemon-$(( ${#SFS_PIDS[@]} - 1 )).log"

check "inspect: summary line" bash -c \
	"'$INSPECT' '$D/full' | grep -qx 'Classes: 7 | Train: 49 | Val: 21 | Elapsed: [0-9.]*s'"
check "inspect --verify: good source" "$INSPECT" --verify "$D/full"

# --verify with checksums scrubs the members (train/, val/; the shard views
# hold them again and are not read twice): a byte of one val member changed
# in place, its mtime put back, is listed, alone, and fails the run
sums=$SFS_TMP/sums-src
mkdir -p "$sums"
cp -p "$D/full/"* "$sums/"
check "inspect --verify --checksums: good source, scrubbed" bash -c \
	"'$INSPECT' --verify --checksums -o index_dir='$SFS_TMP/scrub-idx' '$sums' >'$SFS_TMP/scrub1.out' &&
	 grep -q '^Scrubbed: .* against 70 checksums: 0 bad$' '$SFS_TMP/scrub1.out'"
victim=$($PY - "$sums/ILSVRC2012_img_val.tar" <<'EOF'
import os, sys, tarfile
p = sys.argv[1]
st = os.stat(p)
m = [m for m in tarfile.open(p) if m.isfile()][3]
with open(p, "r+b") as f:   # one byte inside the 4th member's data
    f.seek(m.offset_data + m.size // 2); b = f.read(1)
    f.seek(m.offset_data + m.size // 2); f.write(bytes([b[0] ^ 0x5A]))
os.utime(p, ns=(st.st_atime_ns, st.st_mtime_ns))
print(m.name)
EOF
)
check "inspect --verify --checksums: the changed member listed, alone, exit 1" bash -c \
	"! '$INSPECT' --verify --checksums -o index_dir='$SFS_TMP/scrub-idx' '$sums' >'$SFS_TMP/scrub2.out' 2>'$SFS_TMP/scrub2.err' &&
	 test \"\$(grep -c '^bad: ' '$SFS_TMP/scrub2.out')\" = 1 &&
	 grep -q '^bad: val/n[0-9]*/$victim\$' '$SFS_TMP/scrub2.out'"

# ---- damaged sources ----
bad=$SFS_TMP/bad
mkdir -p "$bad/trunc" "$bad/cksum" "$bad/meta"
cp "$D/full/"* "$bad/trunc/"
truncate -s $(( $(stat -c %s "$D/full/ILSVRC2012_img_train.tar") / 2 + 700 )) "$bad/trunc/ILSVRC2012_img_train.tar"
oracle_run "truncated train tar" "$bad/trunc" "" --truth "$D/full.json"
check "inspect --verify: truncated train tar fails, naming an offset" bash -c \
	"! '$INSPECT' --verify '$bad/trunc' 2>'$SFS_TMP/v.err' && grep -q 'offset [0-9]' '$SFS_TMP/v.err'"

cp "$D/full/"* "$bad/cksum/"
$PY - "$bad/cksum/ILSVRC2012_img_val.tar" <<'EOF'
import sys, tarfile
p = sys.argv[1]
off = [m.offset for m in tarfile.open(p)][5]
with open(p, "r+b") as f:   # corrupt the 6th header's size field
    f.seek(off + 130); f.write(b"9")
EOF
oracle_run "bad header checksum in the val tar" "$bad/cksum" ""
check "daemon warned about the checksum" grep -q "checksum" "$SFS_TMP/daemon-$(( ${#SFS_PIDS[@]} - 1 )).log"
check "inspect --verify: bad checksum fails" bash -c "! '$INSPECT' --verify '$bad/cksum' 2>/dev/null"

cp "$D/full/"* "$bad/meta/"
$PY - "$bad/meta/ILSVRC2012_devkit_t12.tar.gz" <<'EOF'
import io, sys, tarfile
p = sys.argv[1]
with tarfile.open(p) as tf:
    members = [(m, tf.extractfile(m).read()) for m in tf]
with tarfile.open(p, "w:gz") as tf:
    for m, data in members:
        if m.name.endswith("meta.mat"):
            data = data[:len(data) // 2]   # claims more than it holds
        m.size = len(data)
        tf.addfile(m, io.BytesIO(data))
EOF
oracle_run "truncated meta.mat: labels from the train tar" "$bad/meta" ""
check "daemon named meta.mat" grep -q "meta.mat" "$SFS_TMP/daemon-$(( ${#SFS_PIDS[@]} - 1 )).log"

# a source shrinking while mounted: -EIO, never wrong bytes
cp -r "$D/full" "$bad/shrink"
if sfs_mount "$bad/shrink" "$M" -o layout=imagenet; then
	last=$($PY -c "import tarfile,sys; print([m.name for m in tarfile.open(sys.argv[1])][-1])" "$bad/shrink/ILSVRC2012_img_val.tar")
	f=$(ls "$M"/val/*/"$last")
	truncate -s 10240 "$bad/shrink/ILSVRC2012_img_val.tar"
	check "read of a member past the new end fails" bash -c "! cat '$f' >/dev/null 2>&1"
	check "virtual tar holding it fails too" bash -c "! cat '$M/shards/val-000000.tar' >/dev/null 2>&1"
fi
check "unmount after shrink" sfs_umount "$M"

# rewritten in place with a new mtime, same size: EIO for its members
cp -r "$D/full" "$bad/touch"
if sfs_mount "$bad/touch" "$M" -o layout=imagenet; then
	f=$(find "$M/train" -type f | head -1)
	touch -d '+1 min' "$bad/touch/ILSVRC2012_img_train.tar"
	check "touched train tar: its members give EIO" \
		bash -c "cat '$f' 2>&1 >/dev/null | grep -q 'Input/output error'"
	check "touched train tar: a warning names it" \
		grep -q "ILSVRC2012_img_train.tar: changed since mounting" "$(sfs_log "$M")"
fi
check "unmount after touch" sfs_umount "$M"

sfs_done
