#!/usr/bin/env bash
# Random whole-sample reads over HTTP (issue 26): N members of a tar on
# nginx (loopback), read whole and at random by 16 threads at once, cost
# at most N GETs (nginx's access log counts them), and each is the bytes
# Python's tarfile reads from the tar.  A count, never a time.
#
# What it guards: the kernel sends a file's readahead as background
# requests and, past its congestion threshold (9 in flight by default),
# drops a readahead of "async" pages; 16 readers of small files then got
# 4 KiB READs, one page each, each its own GET (1.4 GETs a file).  The
# mount asks for room for all of them (fs/ops.c, sfs_init).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/http_lib.sh"
sfs_setup
T=$SFS_TMP
M=$T/mnt
N=400

# 600 members of 1-160 KB (~48 MB), sizes and bytes from a fixed seed
mkdir -p "$T/www"
timeout 120 "$PY" - "$T/www/r.tar" <<'PY' || { echo "not ok - fixture"; exit 1; }
import io, random, sys, tarfile
rnd = random.Random(26)
with tarfile.open(sys.argv[1], "w", format=tarfile.USTAR_FORMAT) as t:
    for i in range(600):
        data = rnd.randbytes(rnd.randint(1000, 160000))
        ti = tarfile.TarInfo("c%d/s%04d.jpg" % (i % 8, i))
        ti.size = len(data)
        t.addfile(ti, io.BytesIO(data))
PY
http_start "$T/www" || { echo "not ok - nginx"; exit 1; }
# a memory cache far smaller than the tar: no member's blocks are kept
sfs_mount "$(http_url r.tar)" "$M" -o cache_mem=1M ||
	{ echo "not ok - mount"; SFS_FAIL=$((SFS_FAIL + 1)); sfs_done; exit 1; }

mark=$(http_log_mark)
check "$N random members read whole by 16 threads are tarfile's bytes" \
	timeout 300 "$PY" - "$T/www/r.tar" "$M" "$N" <<'PY'
import random, sys, tarfile, threading
tar, mnt, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
with tarfile.open(tar) as t:
    want = {m.name: t.extractfile(m).read() for m in t.getmembers() if m.isfile()}
names = random.Random(7).sample(sorted(want), n)
bad, lock = [], threading.Lock()
def reader(k):
    for name in names[k::16]:
        with open(mnt + "/" + name, "rb") as f:
            got = f.read()
        if got != want[name]:
            with lock:
                bad.append(name)
th = [threading.Thread(target=reader, args=(k,)) for k in range(16)]
for x in th: x.start()
for x in th: x.join()
for name in bad[:5]:
    print("    %s: not the bytes tarfile reads" % name)
sys.exit(1 if bad else 0)
PY
gets=$(http_log_count GET "$mark")
echo "    $gets GETs for $N members; READs by size: $("$PY" -c 'import json, sys; print(json.load(open(sys.argv[1]))["read_size_hist"])' "$M/.samplefs/stats.json")"
check "at most one GET a member ($gets for $N)" test "$gets" -le "$N"
sfs_umount "$M"
sfs_done
