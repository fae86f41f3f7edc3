# Many mounts of one source started at once, for the cluster-on-one-machine
# tests (test_shared_index.sh over nginx, test_s3_cluster.sh over Swift),
# sourced after lib.sh:
#   start_many PREFIX N OPTIONS SOURCE   N daemons at once on $SFS_TMP/PREFIX-i,
#                                        each logging to $SFS_TMP/PREFIX-i.log
#   all_mounted PREFIX N                 each came up (60 s hang guard)
#   in_logs PATTERN PREFIX               how many of their logs hold PATTERN
#   is_tar_tree TREE MNT                 MNT serves the tree tar -x made in TREE
#   each_serves_tar PREFIX N TREE        a check per mount
#   umount_all PREFIX N                  a check per mount still mounted
#   cluster_tar TAR N SEED NDIRS         a GNU tar of N random members (0 B to
#                                        40 KB) in NDIRS directories, written
#                                        by Python's tarfile; prints the offset
#                                        of its last header (every build reads it)
# The daemons are registered with lib.sh (SFS_MOUNTS, SFS_PID_OF), so the
# EXIT trap unmounts and stops them whatever happens.
#
# Not for: what the mounts are compared against (each test's oracle).
declare -p SFS_CLEANUP_HOOKS >/dev/null 2>&1 ||
	{ echo "cluster_lib.sh: source lib.sh first" >&2; return 1; }

cluster_tar() {
	"$PY" - "$@" <<'PY'
import io, random, sys, tarfile
path, n, seed, ndirs = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
rnd = random.Random(seed)
with tarfile.open(path, "w", format=tarfile.GNU_FORMAT) as t:
    for i in range(n):
        data = bytes(rnd.getrandbits(8) for _ in range(rnd.choice([0, 100, 3000, 40000])))
        ti = tarfile.TarInfo("d%d/f%03d.bin" % (i % ndirs, i))
        ti.size = len(data)
        ti.mtime = 1700000000 + i
        t.addfile(ti, io.BytesIO(data))
with tarfile.open(path) as t:
    print(t.getmembers()[-1].offset)
PY
}

start_many() {
	local p=$1 n=$2 opts=$3 src=$4 i mnt
	for ((i = 1; i <= n; i++)); do
		mnt=$SFS_TMP/$p-$i
		mkdir -p "$mnt"
		SFS_MOUNTS+=("$mnt")
		"$SAMPLEFS" -f -o "$opts" "$src" "$mnt" 2>"$SFS_TMP/$p-$i.log" &
		SFS_PID_OF[$mnt]=$!
		SFS_LOG_OF[$mnt]=$SFS_TMP/$p-$i.log
	done
}

all_mounted() {
	local i j mnt
	for ((i = 1; i <= $2; i++)); do
		mnt=$SFS_TMP/$1-$i
		for ((j = 0; j < 600; j++)); do
			sfs_mounted "$mnt" && break
			kill -0 "${SFS_PID_OF[$mnt]}" 2>/dev/null || break
			sfs_nap 0.1
		done
		sfs_mounted "$mnt" || { echo "    $mnt:"; sed 's/^/    /' "$SFS_TMP/$1-$i.log"; return 1; }
	done
}

in_logs() {
	grep -l -- "$1" "$SFS_TMP/$2"-*.log 2>/dev/null | grep -c .
}

is_tar_tree() {
	"$PY" "$SFS_ROOT/tests/integration/tree_compare.py" "$1" "$2" >"$SFS_TMP/cmp.out" 2>&1 ||
		{ head -5 "$SFS_TMP/cmp.out" | sed 's/^/    /'; return 1; }
}

each_serves_tar() {
	local i
	for ((i = 1; i <= $2; i++)); do
		check "$1: mount $i serves tar -x's tree" is_tar_tree "$3" "$SFS_TMP/$1-$i"
	done
}

umount_all() {
	local i
	for ((i = 1; i <= $2; i++)); do
		sfs_mounted "$SFS_TMP/$1-$i" && check "$1: unmount $i" sfs_umount "$SFS_TMP/$1-$i"
	done
}
