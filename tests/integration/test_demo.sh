#!/usr/bin/env bash
# make demo (tools/demo.sh), issue 25 item 5: it works in a fresh directory
# of its own and removes it at the end; a file in /tmp/samplefs-demo (the
# directory it used to take, and empty, every time) is left alone; a
# DEMO_DIR that is not empty is refused with nothing deleted; DEMO_KEEP=1
# leaves its directory and mounts, named in its output.
. "$(dirname "$0")/lib.sh"
sfs_setup
T=$SFS_TMP
DEMO=$SFS_ROOT/tools/demo.sh
export TMPDIR=$T/tmp
mkdir -p "$TMPDIR"
KEPT=
demo_cleanup() {
	local m
	[ -n "$KEPT" ] || return 0
	for m in "$KEPT/qd" "$KEPT/in"; do fusermount3 -u "$m" 2>/dev/null; done
	rm -rf --one-file-system "$KEPT"
}
SFS_CLEANUP_HOOKS+=(demo_cleanup)

# a file of the user's where the demo used to work
OLD=/tmp/samplefs-demo
made_old=
if [ ! -e "$OLD" ]; then mkdir -p "$OLD/quickdraw" && made_old=1; fi
SENTINEL=$OLD/quickdraw/mine-$$.txt
echo "the user's" >"$SENTINEL"

check "make demo's script runs" bash -c "'$DEMO' >'$T/demo.out' 2>&1"
check "it shows the mounted classes" grep -q "The Eiffel Tower" "$T/demo.out"
check "a file in /tmp/samplefs-demo is left alone" grep -qx "the user's" "$SENTINEL"
check "its own directory is removed at the end" test -z "$(ls -A "$TMPDIR")"
check "nothing of it stays mounted" bash -c "! grep -q ' $TMPDIR/' /proc/mounts"
rm -f "$SENTINEL"
[ -n "$made_old" ] && rm -rf "$OLD"

mkdir -p "$T/full" && echo x >"$T/full/keep"
check "DEMO_DIR not empty: refused" \
	expect_fail "DEMO_DIR=$T/full is not empty" env DEMO_DIR="$T/full" "$DEMO"
check "DEMO_DIR not empty: nothing deleted" grep -qx x "$T/full/keep"

check "DEMO_KEEP=1: runs" bash -c "DEMO_KEEP=1 '$DEMO' >'$T/keep.out' 2>&1"
KEPT=$(ls -d "$TMPDIR"/samplefs-demo.* 2>/dev/null | head -1)
check "DEMO_KEEP=1: its directory is kept and named" \
	bash -c "test -n '$KEPT' && grep -q 'left mounted at $KEPT/qd' '$T/keep.out'"
check "DEMO_KEEP=1: the mounts stay" grep -q " $KEPT/qd fuse" /proc/mounts
sfs_done
