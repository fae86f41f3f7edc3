"""ctl_fresh.py CTLDIR ROUNDS: lists, stats, reads and reopens the control
files ROUNDS times (tests/integration/test_stats.sh, issue 25 item 5).

Each open must give a fresh, whole snapshot, whatever was listed, stat'ed or
read before: stats.json parses with Python's json, its lookup count grows
strictly from one open to the next (each open of it is a LOOKUP, counted
before the snapshot is made) and its uptime never goes back; metrics is whole Prometheus text whose
lookup count grows likewise; a file opened, half read, then opened and read
again by someone else, reads on as its own whole document.  Prints what
failed and exits 1.
"""
import json
import os
import re
import sys

ctl, rounds = sys.argv[1], int(sys.argv[2])
stats, metrics = os.path.join(ctl, "stats.json"), os.path.join(ctl, "metrics")
LOOKUPS = re.compile(r'^samplefs_fuse_requests_total\{op="lookup"\} (\d+)$', re.M)


def fail(msg):
    sys.exit("    round %d: %s" % (r, msg))


def stats_doc(data):
    try:
        return json.loads(data)
    except ValueError as e:
        fail("stats.json is not JSON (%s): %r" % (e, data[:200]))


def metrics_lookups(data):
    m = LOOKUPS.search(data.decode())
    if (not m or not data.startswith(b"# HELP samplefs_fuse_requests_total ")
            or not re.search(rb"\nsamplefs_uptime_seconds [0-9.]+\n$", data)):
        fail("metrics is not whole: %r" % data[-200:])
    return int(m.group(1))


prev_lookup = prev_up = prev_mlookup = -1
first_files = None
for r in range(rounds):
    # what a user or samplefs-stat does between reads: list, stat, read
    names = sorted(os.listdir(ctl))
    if names != ["config", "metrics", "stats.json", "version"]:
        fail("listing %r" % names)
    if r % 2:
        os.stat(stats)
    with open(stats, "rb") as f:
        data = f.read()
    d = stats_doc(data)
    if d["ops"]["lookup"] <= prev_lookup or d["uptime_s"] < prev_up:
        fail("stats.json not fresh: lookups %d after %d, uptime %s after %s" %
             (d["ops"]["lookup"], prev_lookup, d["uptime_s"], prev_up))
    prev_lookup, prev_up = d["ops"]["lookup"], d["uptime_s"]
    if first_files is None:
        first_files = d["files_read"]
    last_files = d["files_read"]
    with open(metrics, "rb") as f:
        n = metrics_lookups(f.read())
    if n <= prev_mlookup:
        fail("metrics not fresh: lookups %d after %d" % (n, prev_mlookup))
    prev_mlookup = n
    # opened, half read; another open and read; the first reads on
    with open(stats, "rb") as a:
        head = a.read(100)
        with open(stats, "rb") as b:
            other = stats_doc(b.read())
        whole = stats_doc(head + a.read())
        if other["ops"]["lookup"] <= whole["ops"]["lookup"]:
            fail("the second open's snapshot is not newer than the first's")
        prev_lookup = other["ops"]["lookup"]
        prev_up = other["uptime_s"]
print("files_read %d -> %d" % (first_files, last_files))
if len(sys.argv) > 3 and last_files <= first_files:
    sys.exit("    files_read stayed %d while the mount was read" % first_files)
