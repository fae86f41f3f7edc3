#!/usr/bin/env bash
# layout=tar against GNU tar itself: gnutar_cases.py makes archives with
# GNU tar (every format, sparse files in every sparse format including one
# over 8 GiB, hard links across rewrites, appended duplicates, long and
# unicode names, a dumpdir, a volume label) and extracts each with `tar -x`;
# each archive is mounted (recursive=0: tar -x does not expand nested tars)
# and tree_compare.py compares the whole tree with the extraction.  Only
# the documented refusals (fifos, devices, symlinks leading out) may differ.
. "$(dirname "$0")/lib.sh"
sfs_setup
T=$SFS_TMP

cases=$("$PY" "$SFS_ROOT/tests/integration/gnutar_cases.py" "$T/cases") || {
	echo "not ok - gnutar_cases.py failed"; SFS_FAIL=$((SFS_FAIL + 1)); sfs_done; exit 1; }

for c in $cases; do
	mnt=$T/m-$c
	if ! check "$c: mounts" sfs_mount "$T/cases/$c/archive.tar" "$mnt" -o layout=tar,recursive=0; then
		continue
	fi
	check "$c: the tree is tar -x's" "$PY" "$SFS_ROOT/tests/integration/tree_compare.py" \
		"$T/cases/$c/x" "$mnt"
	check "$c: unmounts cleanly" sfs_umount "$mnt"
done
sfs_done
