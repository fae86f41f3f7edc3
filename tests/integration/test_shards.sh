#!/usr/bin/env bash
# A directory of shards as layout=tar (layout_tar.c's shard table: *.tar,
# *.zip, *.tar.gz, *.tgz, ...): local and over HTTP (nginx's listing), detected without -o
# layout=, one directory per shard named without its suffix; the tree is
# each shard's own extraction (GNU tar -x, unzip) side by side.  The index
# of the directory is keyed by every shard's stamp: a remount reuses it,
# a new shard makes a new one, which holds the new shard too.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/http_lib.sh"
sfs_setup
T=$SFS_TMP
S=$T/shards X=$T/x
mkdir -p "$S" "$X"

# three tars, two zips (one stored, one deflated) and two gzipped tars
# (gzip, pigz) of small samples
"$PY" - "$T/src" <<'PYEOF'
import os, random, sys
rng = random.Random(5)
for k in range(7):
    d = os.path.join(sys.argv[1], "shard-%06d" % k)
    os.makedirs(d)
    for i in range(30):
        key = "%06d" % (k * 100 + i)
        with open(os.path.join(d, key + ".jpg"), "wb") as f:
            f.write(rng.randbytes(rng.randint(100, 20000)))
        with open(os.path.join(d, key + ".cls"), "w") as f:
            f.write("%d\n" % rng.randint(0, 9))
PYEOF
for k in 0 1 2; do
	n=shard-00000$k
	(cd "$T/src/$n" && tar -cf "$S/$n.tar" .)
	mkdir -p "$X/$n" && (cd "$X/$n" && tar -xf "$S/$n.tar")
done
(cd "$T/src/shard-000003" && zip -q0 "$S/shard-000003.zip" ./*)
(cd "$T/src/shard-000004" && zip -q "$S/shard-000004.zip" ./*)
for k in 3 4; do
	mkdir -p "$X/shard-00000$k" && (cd "$X/shard-00000$k" && unzip -q "$S/shard-00000$k.zip")
done
(cd "$T/src/shard-000005" && tar -cf - . | gzip -6 >"$S/shard-000005.tar.gz")
(cd "$T/src/shard-000006" && tar -cf - . | pigz -p 2 >"$S/shard-000006.tgz")
mkdir -p "$X/shard-000005" && (cd "$X/shard-000005" && tar -xzf "$S/shard-000005.tar.gz")
mkdir -p "$X/shard-000006" && (cd "$X/shard-000006" && tar -xzf "$S/shard-000006.tgz")

mnt=$T/m-local idx=$T/idx
if check "local: the directory mounts (layout detected)" sfs_mount "$S" "$mnt" -o index_dir="$idx"; then
	check "local: one directory per shard, the tree is each shard's extraction" \
		"$PY" "$SFS_ROOT/tests/integration/tree_compare.py" "$X" "$mnt"
	check "local: unmounts cleanly" sfs_umount "$mnt"
fi
if check "local: remounts" sfs_mount "$S" "$mnt" -o index_dir="$idx"; then
	check "local: the index is reused (no rebuild)" bash -c '! grep -q "indexed" "$1"' _ "$(sfs_log "$mnt")"
	check "local: unmounts cleanly again" sfs_umount "$mnt"
fi

http_start "$S"
mnt=$T/m-http
if check "http: the listing mounts (layout detected)" sfs_mount "$(http_url /)" "$mnt" -o index_dir="$idx"; then
	check "http: the tree is each shard's extraction" \
		"$PY" "$SFS_ROOT/tests/integration/tree_compare.py" "$X" "$mnt"
	check "http: unmounts cleanly" sfs_umount "$mnt"
fi

# a new shard: a new index, with it
cp "$S/shard-000000.tar" "$S/shard-000007.tar"
cp -a "$X/shard-000000" "$X/shard-000007"
mnt=$T/m-more
if check "local: with a new shard, mounts" sfs_mount "$S" "$mnt" -o index_dir="$idx"; then
	check "local: ... the index is rebuilt" grep -q "indexed" "$(sfs_log "$mnt")"
	check "local: ... and the tree has the new shard" \
		"$PY" "$SFS_ROOT/tests/integration/tree_compare.py" "$X" "$mnt"
	check "local: unmounts cleanly at last" sfs_umount "$mnt"
fi
sfs_done
