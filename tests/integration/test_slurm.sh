#!/usr/bin/env bash
# mount-examples/slurm/ on a single-node Slurm cluster (slurm_lib.sh): a job
# array of four tasks, each mounting a Quick, Draw! source from one prebuilt
# index (samplefs-inspect --save-index) through one shared index_dir, training
# a tiny torch model for a few steps and writing the (path, label) pairs it
# trained on; each task's pairs are compared with numpy's split
# (qd_oracle.py splits: its share of train.txt, in order).  Then a task that
# fails after mounting, and one that scancel stops: no mount may outlive them.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/http_lib.sh"
. "$(dirname "$0")/slurm_lib.sh"
sfs_setup
T=$SFS_TMP
EX=$SFS_ROOT/mount-examples/slurm
STEPS=3 BATCH=4	# train.py's default batch

$PY - "$T/qd" "$SFS_ROOT" <<'PY' || { echo "fixture generation failed"; exit 1; }
import sys
sys.path.insert(0, sys.argv[2] + "/tests/fixtures")
from make_quickdraw import make_quickdraw
make_quickdraw(sys.argv[1], ["cat", "ice cream", "t-shirt"], [25, 22, 24], [25, 22, 24], seed=11)
PY
# the daemon under test (plain or ASan) as `samplefs` on the jobs' PATH
mkdir -p "$T/bin" "$T/out" "$T/mnt" "$T/index"
ln -s "$SAMPLEFS" "$T/bin/samplefs"
export PATH=$T/bin:$PATH
# sbatch --export=ALL hands these to the job script
export SRC=$T/qd INDEX=$T/index/qd.sfsidx INDEX_DIR=$T/index/cache OUT=$T/out STEPS TMPDIR=$T/mnt \
	PYTHON=$PY
# an ASan daemon's reports, once it is in the background (stderr gone), go to
# files the test looks for at the end
export ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}log_path=$T/out/asan
export UBSAN_OPTIONS=${UBSAN_OPTIONS:+$UBSAN_OPTIONS:}log_path=$T/out/ubsan

# mounts left under $T/mnt (the jobs' mount points), counted from /proc/mounts
mounts_left() { grep -c " $T/mnt/[^ ]* fuse" /proc/mounts; }
# and unmounted at exit, whatever the test found: a leaked mount's daemon
# (in the background, out of Slurm's reach) ends with it, and $T can go
umount_leftovers() {
	local m
	for m in $(grep -o " $T/mnt/[^ ]*" /proc/mounts); do
		fusermount3 -u "$m" 2>/dev/null || fusermount3 -uz "$m"
	done
}
SFS_CLEANUP_HOOKS+=(umount_leftovers)
# run_job NAME [sbatch args]: submits train.sbatch from its directory, waits
# for every task to end (not sbatch --wait, which polls at up to 32 s), and
# succeeds if all completed
run_job() {
	local job i
	job=$(cd "$EX" && sbatch --parsable -o "$T/out/$1-%a.log" "${@:2}" train.sbatch) || return 1
	for ((i = 0; i < 1200; i++)); do	# 120 s guard
		[ -z "$(squeue -h -j "$job" -t PD,R,CG 2>/dev/null)" ] && break
		sfs_nap 0.1
	done
	scontrol -o show job "$job" | grep -oE "(JobState|StartTime|EndTime)=[^ ]*" | paste -d" " - - - | sed "s/^/    /"
	! scontrol -o show job "$job" | grep -v -q 'JobState=COMPLETED'
}

prebuild() { "$SFS_BIN/samplefs-inspect" --save-index="$INDEX" "$SRC" >"$T/inspect.log" 2>&1; }
check "prebuilt index: samplefs-inspect --save-index" prebuild
have_slurm() { command -v slurmctld slurmd sbatch munged >/dev/null; }
check "slurm-wlm and munge are installed (tools/deps.sh)" have_slurm || { sfs_done; exit 1; }
check "single-node Slurm cluster is up" slurm_start || { sfs_done; exit 1; }

check "job array of 4 training tasks succeeds" run_job train --export=ALL
cat "$T"/out/train-0.log | sed 's/^/    /'
$PY "$SFS_ROOT/tests/integration/qd_oracle.py" splits "$SRC" | cut -f1,3 >"$T/train.want"
for t in 0 1 2 3; do
	check "task $t trained on its share of train.txt, labels as numpy says" cmp "$T/out/labels-$t.txt" \
		<(awk -v t=$t -v n=$((STEPS * BATCH)) 'NR % 4 == (t + 1) % 4 && c++ < n' "$T/train.want")
done
check "no task built an index (index_only)" bash -c "! grep -q 'indexed in' '$T'/out/train-*.log"
check "one task fetched the prebuilt index into the shared index_dir, the others mapped it" \
	test "$(cat "$T"/out/train-*.log | grep -c 'prebuilt index fetched')" = 1
check "no mount left after the array" test "$(mounts_left)" = 0

# a task whose training fails after the mount is up
cat >"$T/crash.py" <<'PY'
import os, sys
open(os.path.join(sys.argv[1], "classes.txt")).read()   # the mount is there
sys.exit("training failed")
PY
export TRAIN=$T/crash.py
check "a failing task fails the job" eval "! run_job crash --array=0 --export=ALL"
check "it had mounted (its log says so)" grep -q "training failed" "$T/out/crash-0.log"
check "no mount left after the failure" test "$(mounts_left)" = 0

# a task stopped by scancel while it trains
cat >"$T/hang.py" <<'PY'
import os, sys, time
open(os.path.join(sys.argv[1], "classes.txt")).read()
open(os.environ["OUT"] + "/hang.started", "w").close()
time.sleep(300)
PY
TRAIN=$T/hang.py
job=$(cd "$EX" && sbatch --parsable --array=0 -o "$T/out/hang-%a.log" --export=ALL train.sbatch)
for ((i = 0; i < 600; i++)); do [ -e "$T/out/hang.started" ] && break; sfs_nap 0.1; done
check "the task to cancel is training on its mount" test "$(mounts_left)" = 1
scancel "${job%%;*}"
for ((i = 0; i < 300; i++)); do [ -z "$(squeue -h -j "${job%%;*}" 2>/dev/null)" ] && break; sfs_nap 0.1; done
check "scancel: no mount left" test "$(mounts_left)" = 0
check "no sanitizer report from the jobs' daemons" bash -c "! ls '$T'/out/*san.* 2>/dev/null"
sfs_done
