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
# The daemons are registered with lib.sh (SFS_MOUNTS, SFS_PID_OF), so the
# EXIT trap unmounts and stops them whatever happens.
#
# Not for: what the mounts are compared against (each test's oracle).
declare -p SFS_CLEANUP_HOOKS >/dev/null 2>&1 ||
	{ echo "cluster_lib.sh: source lib.sh first" >&2; return 1; }

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
