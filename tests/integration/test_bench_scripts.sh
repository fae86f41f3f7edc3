#!/usr/bin/env bash
# The bench's scripts hang together without running a bench (a second):
#   - every tools/bench/*.sh parses (bash -n);
#   - every file a bench script sources (`. "$HERE/X"`, `. "$ROOT/X"`) and
#     every script bench.sh runs as a part (`part_script NAME SCRIPT`) is in
#     the tree, and tracked by git where the tree is a checkout: bench.sh
#     once sourced a part_http.sh that was never committed, and `make
#     bench` lost its part http on every clone without a test noticing.
. "$(dirname "$0")/lib.sh"
sfs_setup
BENCH=$SFS_ROOT/tools/bench

# in_tree PATH: PATH (relative to the repository) exists, and is tracked
in_tree() {
	[ -f "$SFS_ROOT/$1" ] || { echo "missing: $1" >&2; return 1; }
	if git -C "$SFS_ROOT" rev-parse --git-dir >/dev/null 2>&1; then
		git -C "$SFS_ROOT" ls-files --error-unmatch "$1" >/dev/null 2>&1 ||
			{ echo "not tracked by git: $1" >&2; return 1; }
	fi
}

for f in "$BENCH"/*.sh; do
	check "$(basename "$f") parses" bash -n "$f"
done

n=0
for f in "$BENCH"/*.sh; do
	while read -r rel; do
		n=$((n + 1))
		check "$(basename "$f") sources $rel, which is in the tree" in_tree "$rel"
	done < <(sed -n -e 's|^[[:space:]]*\. "\$HERE/\([^"]*\)".*|tools/bench/\1|p' \
		-e 's|^[[:space:]]*\. "\$ROOT/\([^"]*\)".*|\1|p' "$f")
done
check "the bench scripts source files at all ($n found: the patterns still match)" test "$n" -ge 5

parts=$(sed -n 's|.*part_script [a-z]* \([a-z_]*\.sh\).*|\1|p' "$BENCH/bench.sh" | sort -u)
check "bench.sh runs parts by script (the pattern still matches)" test -n "$parts"
for s in $parts; do
	check "bench.sh's part script $s is in the tree" in_tree "tools/bench/$s"
done

sfs_done
