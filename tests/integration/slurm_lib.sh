# A single-node Slurm cluster (Debian's slurm-wlm and munge) in $SFS_TMP for
# the tests, sourced after lib.sh and http_lib.sh:
#   slurm_start   munged on its own socket and key, slurmctld and slurmd (-D,
#                 as root, on free loopback ports, one node "localhost" of 2
#                 CPUs, one partition), and exports SLURM_CONF for sbatch and
#                 squeue; returns once the node is idle (60 s guard)
# Cgroup-free plugins (proctrack/linuxproc, task/none, no accounting): the
# test needs neither limits nor a systemd-delegated cgroup tree.  Every daemon
# is recorded by PID; the cleanup hook cancels the cluster's jobs, then stops
# them by PID, whatever happened.
#
# Not for: what the jobs are checked against (the test's oracle).
declare -p SFS_CLEANUP_HOOKS >/dev/null 2>&1 ||
	{ echo "slurm_lib.sh: source lib.sh first" >&2; return 1; }
SLURM_PIDS=()

slurm_cleanup() {
	local p i
	[ ${#SLURM_PIDS[@]} -gt 2 ] && scancel --full --quiet --user=root 2>/dev/null
	for ((i = ${#SLURM_PIDS[@]} - 1; i >= 0; i--)); do	# slurmd, slurmctld, then munged
		p=${SLURM_PIDS[i]}
		kill "$p" 2>/dev/null
		for _ in $(seq 1 100); do kill -0 "$p" 2>/dev/null || break; sfs_nap 0.1; done
		kill -9 "$p" 2>/dev/null
		wait "$p" 2>/dev/null
	done
	SLURM_PIDS=()
}
SFS_CLEANUP_HOOKS+=(slurm_cleanup)

slurm_start() {
	local d=$SFS_TMP/slurm ports i
	mkdir -p "$d/state" "$d/spool"
	head -c 1024 /dev/urandom >"$d/munge.key" && chmod 600 "$d/munge.key"
	# --force: /tmp is world-writable, which munged refuses to trust otherwise
	munged -F --force --socket="$d/munge.sock" --key-file="$d/munge.key" \
		--pid-file="$d/munged.pid" --seed-file="$d/munge.seed" --log-file="$d/munged.log" \
		>"$d/munged.out" 2>&1 &
	SLURM_PIDS+=($!)
	ports=($(http_free_ports 2))
	cat >"$d/slurm.conf" <<-CONF
	ClusterName=sfstest
	SlurmctldHost=localhost(127.0.0.1)
	SlurmUser=root
	SlurmdUser=root
	SlurmctldPort=${ports[0]}
	SlurmdPort=${ports[1]}
	AuthType=auth/munge
	AuthInfo=socket=$d/munge.sock
	CredType=cred/munge
	StateSaveLocation=$d/state
	SlurmdSpoolDir=$d/spool
	SlurmctldPidFile=$d/slurmctld.pid
	SlurmdPidFile=$d/slurmd.pid
	ProctrackType=proctrack/linuxproc
	TaskPlugin=task/none
	JobAcctGatherType=jobacct_gather/none
	AccountingStorageType=accounting_storage/none
	JobCompType=jobcomp/none
	SelectType=select/cons_tres
	SelectTypeParameters=CR_Core
	MpiDefault=none
	ReturnToService=2
	KillWait=5
	NodeName=localhost NodeAddr=127.0.0.1 CPUs=2 State=UNKNOWN
	PartitionName=test Nodes=localhost Default=YES MaxTime=10 State=UP
	CONF
	export SLURM_CONF=$d/slurm.conf
	for ((i = 0; i < 500; i++)); do [ -S "$d/munge.sock" ] && break; sfs_nap 0.02; done
	slurmctld -D -i >"$d/slurmctld.log" 2>&1 &
	SLURM_PIDS+=($!)
	slurmd -D -N localhost >"$d/slurmd.log" 2>&1 &
	SLURM_PIDS+=($!)
	for ((i = 0; i < 300; i++)); do
		[ "$(sinfo -h -n localhost -o %t 2>/dev/null)" = idle ] && return 0
		sfs_nap 0.2
	done
	echo "    slurm did not come up:" && tail -n 5 "$d"/*.log | sed 's/^/    /'
	return 1
}
