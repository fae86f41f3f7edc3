#!/usr/bin/python3
"""table - turns the benchmark's raw measurements into tools/bench/results.md.

Usage: table.py RESULTS_TSV OUT_MD

RESULTS_TSV has one line per measurement, tab-separated:
  m     KEY VALUE        one run's value (several lines per KEY: median taken)
  fail  KEY TEXT         the measurement could not be made (why)
  fact  NAME TEXT        machine facts, the command line, data sizes
  note  TEXT             a caveat printed under the table
Rows below say how each KEY is shown and which target applies.  A row whose
keys were not measured (a part not run) is left out.
"""
import statistics
import sys

# kinds: "abs" compares the value to a limit; "ratio" divides value by ref
# (for times, ref / value, so that bigger is always better); "info" has no
# target.
A = [
    ("A. Quick, Draw!", None),
    ("explode step (np.save per sample, 2 processes), cold", dict(
        key="qd.explode_s", unit="s", kind="info")),
    ("samplefs first mount (index built), cold", dict(
        key="qd.mount1_cold_s", unit="s", kind="ratio", ref="qd.explode_s",
        time=True, op=">=", limit=20, target="explode / mount >= 20x")),
    ("samplefs first mount (index built), warm sources", dict(
        key="qd.mount1_warm_s", unit="s", kind="info")),
    ("samplefs remount, warm", dict(
        key="qd.remount_warm_s", unit="s", kind="abs", op="<", limit=1.0)),
    ("samplefs remount, cold", dict(
        key="qd.remount_cold_s", unit="s", kind="info")),
    ("cold, 1 thread, images in gidx order: exploded tree (ext4)", dict(
        key="qd.cold.exploded", unit="files/s", kind="info")),
    ("cold, 1 thread, images in gidx order: squashfuse_ll (squashfs of the exploded images)", dict(
        key="qd.cold.squashfs", unit="files/s", kind="ratio", ref="qd.cold.exploded",
        info=True)),
    ("cold, 1 thread, images in gidx order: samplefs", dict(
        key="qd.cold.samplefs", unit="files/s", kind="ratio", ref="qd.cold.exploded",
        op=">=", limit=2.0, target="samplefs / exploded >= 2x")),
    ("cold, 1 thread, images in gidx order: samplefs -o poll=0 (libfuse's loop, for reference)", dict(
        key="qd.cold.samplefs_nopoll", unit="files/s", kind="ratio", ref="qd.cold.exploded",
        info=True)),
    ("cold, 1 thread, the loader's way (each class directory listed, then its images read in gidx order): exploded tree (ext4)", dict(
        key="qd.cold_listed.exploded", unit="files/s", kind="info")),
    ("cold, 1 thread, the loader's way: samplefs", dict(
        key="qd.cold_listed.samplefs", unit="files/s", kind="ratio", ref="qd.cold_listed.exploded",
        op=">=", limit=2.0, target="samplefs / exploded >= 2x")),
    ("first pass, warm sources, 1 thread: FUSE floor on libfuse's loop (3264-byte files)", dict(
        key="qd.first1.floor_libfuse", unit="files/s", kind="info")),
    ("first pass, warm sources, 1 thread: FUSE floor polling as samplefs does (3264-byte files)", dict(
        key="qd.first1.floor", unit="files/s", kind="info")),
    ("first pass, warm sources, 1 thread: samplefs images", dict(
        key="qd.first1.samplefs", unit="files/s", kind="ratio", ref="qd.first1.floor_libfuse",
        op=">=", limit=0.8, target="samplefs / floor >= 0.8x")),
    ("the same, against the floor that polls as samplefs does", dict(
        key="qd.first1.samplefs", unit="files/s", kind="ratio", ref="qd.first1.floor",
        op=">=", limit=0.8, target="samplefs / polling floor >= 0.8x")),
    ("first pass, warm sources, 4 threads: FUSE floor on libfuse's loop", dict(
        key="qd.first4.floor_libfuse", unit="files/s", kind="info")),
    ("first pass, warm sources, 4 threads: FUSE floor polling as samplefs does", dict(
        key="qd.first4.floor", unit="files/s", kind="info")),
    ("first pass, warm sources, 4 threads: samplefs images", dict(
        key="qd.first4.samplefs", unit="files/s", kind="ratio", ref="qd.first4.floor_libfuse",
        op=">=", limit=0.8, target="samplefs / floor >= 0.8x")),
    ("the same, against the floor that polls as samplefs does", dict(
        key="qd.first4.samplefs", unit="files/s", kind="ratio", ref="qd.first4.floor",
        op=">=", limit=0.8, target="samplefs / polling floor >= 0.8x")),
    ("second pass, 4 threads: exploded tree, warm", dict(
        key="qd.second4.exploded", unit="files/s", kind="info")),
    ("second pass, 4 threads: FUSE floor", dict(
        key="qd.second4.floor", unit="files/s", kind="info")),
    ("second pass, 4 threads: samplefs images", dict(
        key="qd.second4.samplefs", unit="files/s", kind="ratio", ref="qd.second4.exploded",
        op=">=", limit=0.8, target="samplefs / exploded warm >= 0.8x")),
    ("second pass, 1 thread: exploded tree, warm", dict(
        key="qd.second1.exploded", unit="files/s", kind="info")),
    ("second pass, 1 thread: FUSE floor", dict(
        key="qd.second1.floor", unit="files/s", kind="info")),
    ("second pass, 1 thread: samplefs images", dict(
        key="qd.second1.samplefs", unit="files/s", kind="ratio", ref="qd.second1.exploded",
        info=True)),
    ("strokes, random order, first pass, warm sources, 1 thread: FUSE floor on libfuse's loop (1688-byte files)", dict(
        key="qd.strokes1.floor_libfuse", unit="files/s", kind="info")),
    ("strokes, random order, first pass, warm sources, 1 thread: FUSE floor polling as samplefs does", dict(
        key="qd.strokes1.floor", unit="files/s", kind="info")),
    ("strokes, random order, first pass, warm sources, 1 thread: samplefs", dict(
        key="qd.strokes1.samplefs", unit="files/s", kind="ratio", ref="qd.strokes1.floor_libfuse",
        op=">=", limit=0.5, target="samplefs / floor >= 0.5x")),
    ("the same, against the floor that polls as samplefs does", dict(
        key="qd.strokes1.samplefs", unit="files/s", kind="ratio", ref="qd.strokes1.floor",
        op=">=", limit=0.5, target="samplefs / polling floor >= 0.5x")),
    ("samplefs daemon peak RSS serving the reads above (VmHWM, default cache, max over mounts)", dict(
        key="qd.rss_kb", unit="KiB", kind="abs", op="<", limit=64 * 1024,
        target="< 64 MiB")),
    ("samplefs daemon RssAnon at unmount (heap + stacks: VmHWM minus mapped files)", dict(
        key="qd.anon_kb", unit="KiB", kind="info")),
    ("samplefs daemon peak RSS of a first mount (index build)", dict(
        key="qd.build_rss_kb", unit="KiB", kind="abs", op="<", limit=64 * 1024,
        target="< 64 MiB")),
    ("index size / total .npz size", dict(
        key="qd.index_ratio", unit="x", kind="abs", op="<=", limit=1.2)),
]

# part scale: "scale.<set>.<metric>.<samples>", one point per dataset size
SCALE_SETS = [("qd", "Quick, Draw!"), ("in", "ImageNet-shaped")]
SCALE_METRICS = [("mount1_cold", "first mount (index built), cold", "s"),
                 ("mount1_warm", "first mount (index built), warm sources", "s"),
                 ("remount", "remount, warm", "s"),
                 ("index_kb", "index size", "KiB"),
                 ("build_rss_kb", "daemon peak RSS of the first mount", "KiB"),
                 ("rss_kb", "daemon peak RSS after random reads", "KiB")]


def scale_points(meas, ds):
    """The dataset sizes (samples) part scale measured for set DS, ascending."""
    pre = "scale.%s." % ds
    return sorted({int(k.rsplit(".", 1)[1]) for k in meas if k.startswith(pre)})


def scale_rows(meas):
    """The scale section: every metric of every size measured, by set and size."""
    rows = [("scale. How mount time, index size and RSS grow with the dataset", None)]
    for ds, name in SCALE_SETS:
        for n in scale_points(meas, ds):
            rows.append(("{}, {:,} samples".format(name, n), None))
            for metric, what, unit in SCALE_METRICS:
                rows.append((what, dict(key="scale.%s.%s.%d" % (ds, metric, n),
                                        unit=unit, kind="info")))
    return rows


# part stats: tools/bench/statsbench.sh on part B's random reads
STATS = [
    ("stats. What reading MOUNT/.samplefs/stats.json costs the reads (alternating pairs)", None),
    ("random ImageNet JPEGs, fresh mount, 4 threads, stats.json not read", dict(
        key="stats.without", unit="files/s", kind="info")),
    ("the same with stats.json read 10 times a second", dict(
        key="stats.with", unit="files/s", kind="ratio", ref="stats.without",
        op=">=", limit=0.98, target="with / without >= 0.98 (under 2 % slower)")),
]


B = [
    ("B. ImageNet-sized tar (nested class tars)", None),
    ("extract (tar -x outer, tar -x + rm each class tar, tar -x val), cold", dict(
        key="in.extract_s", unit="s", kind="info")),
    ("samplefs first mount (index built), warm sources", dict(
        key="in.mount1_warm_s", unit="s", kind="abs", op="<", limit=10.0)),
    ("samplefs first mount (index built), cold", dict(
        key="in.mount1_cold_s", unit="s", kind="abs", op="<", limit=30.0)),
    ("samplefs remount, warm", dict(
        key="in.remount_s", unit="s", kind="abs", op="<", limit=0.5)),
    ("index bytes per member", dict(
        key="in.index_per_member", unit="B", kind="abs", op="<", limit=48)),
    ("samplefs daemon peak RSS serving the reads below (VmHWM, max over mounts)", dict(
        key="in.rss_kb", unit="KiB", kind="abs", op="<", limit=128 * 1024,
        target="< 128 MiB")),
    ("samplefs daemon RssAnon at unmount (heap + stacks: VmHWM minus mapped files)", dict(
        key="in.anon_kb", unit="KiB", kind="info")),
    ("samplefs daemon peak RSS of a first mount (index build; the issue's 128 MiB is for serving)", dict(
        key="in.build_rss_kb", unit="KiB", kind="info")),
    ("`find MNT/train -type f \\| wc -l`, fresh mount (saved index): samplefs", dict(
        key="in.find_s", unit="s", kind="abs", op="<", limit=5.0)),
    ("`find DIR/train -type f \\| wc -l`, warm: extracted tree", dict(
        key="in.find_extracted_s", unit="s", kind="info")),
    ("Everyday tools (train/ and val/, as extracted; see notes)", None),
    ("`du -sh`: extracted tree, warm", dict(
        key="in.tools.du.extracted", unit="s", kind="info")),
    ("`du -sh`: samplefs, fresh mount", dict(
        key="in.tools.du.samplefs", unit="s", kind="ratio", ref="in.tools.du.extracted",
        time=True, op=">=", limit=1 / 3, target="extracted / samplefs >= 1/3 (within 3x)")),
    ("`du -sh`: samplefs, second run on that mount", dict(
        key="in.tools.du.samplefs2", unit="s", kind="ratio", ref="in.tools.du.extracted",
        time=True, op=">=", limit=1 / 3, target="extracted / samplefs >= 1/3 (within 3x)")),
    ("`du -sh`: extracted whole tree (shards/ as hard links), warm", dict(
        key="in.tools.du.whole_extracted", unit="s", kind="info")),
    ("`du -sh`: samplefs, whole mount, fresh mount", dict(
        key="in.tools.du.whole", unit="s", kind="ratio", ref="in.tools.du.whole_extracted",
        time=True, op=">=", limit=1 / 3, target="extracted / samplefs >= 1/3 (within 3x)")),
    ("`du -sh`: samplefs, whole mount, fresh, against train/ + val/ extracted", dict(
        key="in.tools.du.whole", unit="s", kind="ratio", ref="in.tools.du.extracted",
        time=True, info=True)),
    ("`ls -lR`: extracted tree, warm", dict(
        key="in.tools.lsR.extracted", unit="s", kind="info")),
    ("`ls -lR`: samplefs, fresh mount", dict(
        key="in.tools.lsR.samplefs", unit="s", kind="ratio", ref="in.tools.lsR.extracted",
        time=True, op=">=", limit=1 / 3, target="extracted / samplefs >= 1/3 (within 3x)")),
    ("`ls -lR`: samplefs, second run on that mount", dict(
        key="in.tools.lsR.samplefs2", unit="s", kind="ratio", ref="in.tools.lsR.extracted",
        time=True, op=">=", limit=1 / 3, target="extracted / samplefs >= 1/3 (within 3x)")),
    ("`ls -lR`: extracted whole tree (shards/ as hard links), warm", dict(
        key="in.tools.lsR.whole_extracted", unit="s", kind="info")),
    ("`ls -lR`: samplefs, whole mount, fresh mount", dict(
        key="in.tools.lsR.whole", unit="s", kind="ratio", ref="in.tools.lsR.whole_extracted",
        time=True, op=">=", limit=1 / 3, target="extracted / samplefs >= 1/3 (within 3x)")),
    ("`ls -lR`: samplefs, whole mount, fresh, against train/ + val/ extracted", dict(
        key="in.tools.lsR.whole", unit="s", kind="ratio", ref="in.tools.lsR.extracted",
        time=True, info=True)),
    ("`find -size +3k`: extracted tree, warm", dict(
        key="in.tools.findsize.extracted", unit="s", kind="info")),
    ("`find -size +3k`: samplefs, fresh mount", dict(
        key="in.tools.findsize.samplefs", unit="s", kind="ratio", ref="in.tools.findsize.extracted",
        time=True, op=">=", limit=1 / 3, target="extracted / samplefs >= 1/3 (within 3x)")),
    ("`find -size +3k`: samplefs, second run on that mount", dict(
        key="in.tools.findsize.samplefs2", unit="s", kind="ratio", ref="in.tools.findsize.extracted",
        time=True, op=">=", limit=1 / 3, target="extracted / samplefs >= 1/3 (within 3x)")),
    ("`find -size +3k`: extracted whole tree (shards/ as hard links), warm", dict(
        key="in.tools.findsize.whole_extracted", unit="s", kind="info")),
    ("`find -size +3k`: samplefs, whole mount, fresh mount", dict(
        key="in.tools.findsize.whole", unit="s", kind="ratio", ref="in.tools.findsize.whole_extracted",
        time=True, op=">=", limit=1 / 3, target="extracted / samplefs >= 1/3 (within 3x)")),
    ("`find -size +3k`: samplefs, whole mount, fresh, against train/ + val/ extracted", dict(
        key="in.tools.findsize.whole", unit="s", kind="ratio", ref="in.tools.findsize.extracted",
        time=True, info=True)),
    ("`du -sh`: samplefs -o readdirplus=auto (the old default), fresh mount", dict(
        key="in.tools.du.auto", unit="s", kind="ratio", ref="in.tools.du.extracted",
        time=True, info=True)),
    ("`find -type f`, whole tree: extracted, warm", dict(
        key="in.tools.find.extracted", unit="s", kind="info")),
    ("`find -type f`, whole mount, fresh: samplefs (adaptive listings, the default)", dict(
        key="in.tools.find.adaptive", unit="s", kind="ratio", ref="in.tools.find.auto",
        time=True, info=True)),
    ("`find -type f`, whole mount, fresh: samplefs -o readdirplus=auto", dict(
        key="in.tools.find.auto", unit="s", kind="info")),
    ("kernel slab grown by that find: adaptive", dict(
        key="in.tools.find_slab.adaptive", unit="KiB", kind="info")),
    ("kernel slab grown by that find: auto", dict(
        key="in.tools.find_slab.auto", unit="KiB", kind="info")),
    ("Reads", None),
    ("random JPEGs, first pass, warm sources, 1 thread: FUSE floor on libfuse's loop (mean member size)", dict(
        key="in.first1.floor_libfuse", unit="files/s", kind="info")),
    ("random JPEGs, first pass, warm sources, 1 thread: FUSE floor polling as samplefs does", dict(
        key="in.first1.floor", unit="files/s", kind="info")),
    ("random JPEGs, first pass, warm sources, 1 thread: samplefs", dict(
        key="in.first1.samplefs", unit="files/s", kind="ratio", ref="in.first1.floor_libfuse",
        op=">=", limit=0.8, target="samplefs / floor >= 0.8x")),
    ("the same, against the floor that polls as samplefs does", dict(
        key="in.first1.samplefs", unit="files/s", kind="ratio", ref="in.first1.floor",
        op=">=", limit=0.8, target="samplefs / polling floor >= 0.8x")),
    ("random JPEGs, first pass, 1 thread: samplefs vs ratarmount's ~2,200 files/s (the issue's figure; ratarmount is not in Debian)", dict(
        key="in.first1.samplefs", unit="files/s", kind="ratio", ref="in.ratarmount_ref",
        op=">=", limit=5.0, target="samplefs / ratarmount >= 5x")),
    ("random JPEGs, first pass, warm sources, 4 threads: FUSE floor on libfuse's loop", dict(
        key="in.first4.floor_libfuse", unit="files/s", kind="info")),
    ("random JPEGs, first pass, warm sources, 4 threads: FUSE floor polling as samplefs does", dict(
        key="in.first4.floor", unit="files/s", kind="info")),
    ("random JPEGs, first pass, warm sources, 4 threads: samplefs", dict(
        key="in.first4.samplefs", unit="files/s", kind="ratio", ref="in.first4.floor_libfuse",
        op=">=", limit=0.8, target="samplefs / floor >= 0.8x")),
    ("the same, against the floor that polls as samplefs does", dict(
        key="in.first4.samplefs", unit="files/s", kind="ratio", ref="in.first4.floor",
        op=">=", limit=0.8, target="samplefs / polling floor >= 0.8x")),
    ("random JPEGs, second pass, 4 threads: extracted tree, warm", dict(
        key="in.second4.extracted", unit="files/s", kind="info")),
    ("random JPEGs, second pass, 4 threads: samplefs", dict(
        key="in.second4.samplefs", unit="files/s", kind="ratio", ref="in.second4.extracted",
        op=">=", limit=0.8, target="samplefs / extracted warm >= 0.8x")),
    ("random JPEGs, cold, 1 thread: extracted tree", dict(
        key="in.cold.extracted", unit="files/s", kind="info")),
    ("random JPEGs, cold, 1 thread: samplefs", dict(
        key="in.cold.samplefs", unit="files/s", kind="ratio", ref="in.cold.extracted",
        op=">=", limit=1.0, target="samplefs / extracted >= 1x")),
    ("random JPEGs, cold, 1 thread: samplefs -o poll=0 (libfuse's loop, for reference)", dict(
        key="in.cold.samplefs_nopoll", unit="files/s", kind="ratio", ref="in.cold.extracted",
        info=True)),
    ("random JPEGs, cold, 4 threads: extracted tree", dict(
        key="in.cold4.extracted", unit="files/s", kind="info")),
    ("random JPEGs, cold, 4 threads: samplefs", dict(
        key="in.cold4.samplefs", unit="files/s", kind="ratio", ref="in.cold4.extracted",
        op=">=", limit=1.5, target="samplefs / extracted >= 1.5x (issue 10)")),
    ("the same reads, 1 thread, fresh mount, members in the page cache (samplefs without the disk's wait)", dict(
        key="in.cold.samplefs_nodisk", unit="files/s", kind="ratio", ref="in.cold.extracted",
        info=True)),
    ("the same reads, 4 threads, fresh mount, members in the page cache (samplefs without the disk's wait)", dict(
        key="in.cold4.samplefs_nodisk", unit="files/s", kind="ratio", ref="in.cold4.extracted",
        info=True)),
    ("random JPEGs, cold, 1 thread: extracted, disk reads per file", dict(
        key="in.cold.extracted.ios_per_file", unit="", kind="info")),
    ("random JPEGs, cold, 1 thread: extracted, KB read from disk per file", dict(
        key="in.cold.extracted.kb_per_file", unit="KB", kind="info")),
    ("random JPEGs, cold, 1 thread: samplefs, disk reads per file", dict(
        key="in.cold.samplefs.ios_per_file", unit="", kind="info")),
    ("random JPEGs, cold, 1 thread: samplefs, KB read from disk per file", dict(
        key="in.cold.samplefs.kb_per_file", unit="KB", kind="info")),
    ("random JPEGs, cold, 4 threads: extracted, disk reads per file", dict(
        key="in.cold4.extracted.ios_per_file", unit="", kind="info")),
    ("random JPEGs, cold, 4 threads: extracted, KB read from disk per file", dict(
        key="in.cold4.extracted.kb_per_file", unit="KB", kind="info")),
    ("random JPEGs, cold, 4 threads: samplefs, disk reads per file", dict(
        key="in.cold4.samplefs.ios_per_file", unit="", kind="info")),
    ("random JPEGs, cold, 4 threads: samplefs, KB read from disk per file", dict(
        key="in.cold4.samplefs.kb_per_file", unit="KB", kind="info")),
    ("archivemount of the outer tar: mount time", dict(
        key="in.am_outer_mount_s", unit="s", kind="info")),
    ("archivemount of flat.tar (a subset, see notes): mount time", dict(
        key="in.am_flat_mount_s", unit="s", kind="info")),
    ("archivemount of flat.tar: random members, first pass, 1 thread", dict(
        key="in.am_flat_read", unit="files/s", kind="info")),
    ("samplefs, the same members, first pass, warm sources, 1 thread", dict(
        key="in.flat_read.samplefs", unit="files/s", kind="ratio", ref="in.am_flat_read",
        info=True)),
]


HTTP = [
    ("http. Mounts over HTTP (nginx on loopback; local and HTTP mounts alternate in each run)", None),
    ("Loopback, no added latency", None),
    ("Quick, Draw! images in gidx order, first pass, 1 thread: local mount", dict(
        key="http.qd.first1.local", unit="files/s", kind="info")),
    ("the same: mount of the http:// directory URL", dict(
        key="http.qd.first1.http", unit="files/s", kind="ratio", ref="http.qd.first1.local",
        op=">=", limit=0.5, target="HTTP / local >= 0.5x")),
    ("daemon CPU (user + sys) per file: local", dict(
        key="http.qd.first1.local.cpu_us", unit="us", kind="info")),
    ("daemon CPU (user + sys) per file: HTTP", dict(
        key="http.qd.first1.http.cpu_us", unit="us", kind="info")),
    ("its data GETs per file read (nginx's log)", dict(
        key="http.qd.first1.http.gets_per_file", unit="GETs", kind="info")),
    ("its KiB per data GET", dict(
        key="http.qd.first1.http.kib_per_get", unit="KiB/GET", kind="info")),
    ("random ImageNet JPEGs, first pass, 4 threads: local mount", dict(
        key="http.in.first4.local", unit="files/s", kind="info")),
    ("the same: mount of the http:// directory URL", dict(
        key="http.in.first4.http", unit="files/s", kind="ratio", ref="http.in.first4.local",
        op=">=", limit=0.5, target="HTTP / local >= 0.5x")),
    ("daemon CPU (user + sys) per file: local", dict(
        key="http.in.first4.local.cpu_us", unit="us", kind="info")),
    ("daemon CPU (user + sys) per file: HTTP", dict(
        key="http.in.first4.http.cpu_us", unit="us", kind="info")),
    ("its data GETs per file read", dict(
        key="http.in.first4.http.gets_per_file", unit="GETs", kind="info")),
    ("its KiB per data GET", dict(
        key="http.in.first4.http.kib_per_get", unit="KiB/GET", kind="info")),
    ("20 ms added to every response (the fault proxy; see notes)", None),
    ("random ImageNet JPEGs, first pass, 16 threads: local mount (for reference)", dict(
        key="http.in.rtt16.local", unit="files/s", kind="info")),
    ("the same over HTTP at 20 ms", dict(
        key="http.in.rtt16.http", unit="files/s", kind="abs", op=">=", limit=480,
        target=">= 0.6 x 16 / 20 ms = 480 files/s")),
    ("its daemon CPU (user + sys) per file", dict(
        key="http.in.rtt16.http.cpu_us", unit="us", kind="info")),
    ("its data GETs per file read", dict(
        key="http.in.rtt16.http.gets_per_file", unit="GETs", kind="info")),
    ("its KiB per data GET", dict(
        key="http.in.rtt16.http.kib_per_get", unit="KiB/GET", kind="info")),
    ("sequential Quick, Draw! epoch (whole classes in gidx order), 1 thread: local mount", dict(
        key="http.qd.epoch.local", unit="files/s", kind="info")),
    ("the same, as MB/s of the class files", dict(
        key="http.qd.epoch.local_mbs", unit="MB/s", kind="info")),
    ("the same over HTTP at 20 ms", dict(
        key="http.qd.epoch.http", unit="files/s", kind="ratio", ref="http.qd.epoch.local",
        info=True)),
    ("the same over HTTP at 20 ms, as MB/s of the class files", dict(
        key="http.qd.epoch.http_mbs", unit="MB/s", kind="ratio", ref="http.qd.epoch.curl_mbs",
        op=">=", limit=0.8, target="samplefs / curl >= 0.8x")),
    ("the local mount's epoch against the same curl", dict(
        key="http.qd.epoch.local_mbs", unit="MB/s", kind="ratio", ref="http.qd.epoch.curl_mbs",
        info=True)),
    ("daemon CPU (user + sys) per file: local", dict(
        key="http.qd.epoch.local.cpu_us", unit="us", kind="info")),
    ("daemon CPU (user + sys) per file: HTTP", dict(
        key="http.qd.epoch.http.cpu_us", unit="us", kind="info")),
    ("curl GETs of those class files at 20 ms, one connection", dict(
        key="http.qd.epoch.curl_mbs", unit="MB/s", kind="info")),
    ("sequential Quick, Draw! epoch, 1 thread: the FUSE floor serving as many files of the same size", dict(
        key="http.qd.epoch.floor_mbs", unit="MB/s", kind="ratio", ref="http.qd.epoch.curl_mbs",
        info=True)),
    ("curl GETs of those class files from nginx, no delay (for reference)", dict(
        key="http.qd.epoch.curl0_mbs", unit="MB/s", kind="info")),
    ("the epoch's data GETs per file read", dict(
        key="http.qd.epoch.http.gets_per_file", unit="GETs", kind="info")),
    ("its KiB per data GET", dict(
        key="http.qd.epoch.http.kib_per_get", unit="KiB/GET", kind="info")),
    ("Mounts and memory", None),
    ("first mount of the Quick, Draw! URL (index built from ranged GETs)", dict(
        key="http.qd.mount1_s", unit="s", kind="info")),
    ("its data GETs", dict(key="http.qd.mount1_gets", unit="GETs", kind="info")),
    ("its MB fetched", dict(key="http.qd.mount1_mb", unit="MB", kind="info")),
    ("first mount of the ImageNet URL (index built from ranged GETs)", dict(
        key="http.in.mount1_s", unit="s", kind="info")),
    ("its data GETs", dict(key="http.in.mount1_gets", unit="GETs", kind="info")),
    ("its MB fetched", dict(key="http.in.mount1_mb", unit="MB", kind="info")),
    ("remount of the Quick, Draw! URL with the saved index", dict(
        key="http.qd.remount_s", unit="s", kind="info")),
    ("its data GETs (nginx's log, 200/206; of files, not listings)", dict(
        key="http.qd.remount_gets", unit="GETs", kind="abs", op="<=", limit=0,
        target="0")),
    ("its directory listings (GETs of a URL ending in /)", dict(
        key="http.qd.remount_lists", unit="GETs", kind="info")),
    ("its HEADs", dict(key="http.qd.remount_heads", unit="HEADs", kind="info")),
    ("the same remount at 20 ms", dict(key="http.qd.remount20_s", unit="s", kind="info")),
    ("remount of the ImageNet URL with the saved index", dict(
        key="http.in.remount_s", unit="s", kind="info")),
    ("its data GETs (nginx's log, 200/206; of files, not listings)", dict(
        key="http.in.remount_gets", unit="GETs", kind="abs", op="<=", limit=0,
        target="0")),
    ("its directory listings (GETs of a URL ending in /)", dict(
        key="http.in.remount_lists", unit="GETs", kind="info")),
    ("its HEADs", dict(key="http.in.remount_heads", unit="HEADs", kind="info")),
    ("the same remount at 20 ms", dict(key="http.in.remount20_s", unit="s", kind="info")),
    ("samplefs daemon peak RSS serving the HTTP reads above (VmHWM, default cache, max over mounts)", dict(
        key="http.rss_kb", unit="KiB", kind="abs", op="<", limit=128 * 1024,
        target="< 128 MiB")),
    ("samplefs daemon RssAnon at unmount, max over those mounts (heap + stacks: VmHWM minus mapped files)", dict(
        key="http.anon_kb", unit="KiB", kind="info")),
    ("samplefs daemon peak RSS of a first mount over HTTP (index build)", dict(
        key="http.build_rss_kb", unit="KiB", kind="info")),
]


def fmt(v, unit):
    if unit == "files/s":
        return "{:,.0f} files/s".format(v)
    if unit == "KiB":
        return "%.1f MiB" % (v / 1024) if v >= 1024 else "%.1f KiB" % v
    if unit == "s":
        return ("%.3f s" if v < 10 else "%.1f s") % v
    if unit == "x":
        return "%.2fx" % v
    if unit == "B":
        return "%.1f B" % v
    if unit in ("MB/s", "MB", "KiB/GET"):
        return "%.1f %s" % (v, unit)
    if unit == "us":
        return "%.0f us" % v
    if unit in ("GETs", "HEADs"):
        return ("%.0f %s" if v == int(v) else "%.3f %s") % (v, unit)
    return "%g %s" % (v, unit)


def spread(vals, unit):
    if len(vals) < 2:
        return "1 run"
    lo, hi = min(vals), max(vals)
    if unit == "files/s":
        return "%d runs, %s–%s" % (len(vals), "{:,.0f}".format(lo),
                                   "{:,.0f}".format(hi))
    return "%d runs, %s–%s" % (len(vals), fmt(lo, unit), fmt(hi, unit))


def met(v, op, limit):
    return {"<": v < limit, "<=": v <= limit, ">=": v >= limit,
            ">": v > limit}[op]


def row(label, r, meas, fails):
    key = r["key"]
    if key not in meas:
        if key in fails:
            return "| %s | not measured: %s | | | |" % (label, fails[key])
        return None
    vals = meas[key]
    v = statistics.median(vals)
    cells = [label, "%s (%s)" % (fmt(v, r["unit"]), spread(vals, r["unit"]))]
    if r["kind"] == "info":
        return "| %s | %s | | | |" % tuple(cells)
    if r["kind"] == "abs":
        target = r.get("target", "%s %s" % (r["op"], fmt(r["limit"], r["unit"])))
        ok = met(v, r["op"], r["limit"])
        return "| %s | %s | %s | | %s |" % (cells[0], cells[1], target,
                                            "**met**" if ok else "**MISSED**")
    ref = meas.get(r["ref"])
    if not ref:
        return "| %s | %s | | (no reference measured) | |" % tuple(cells)
    rv = statistics.median(ref)
    ratio = rv / v if r.get("time") else v / rv
    if r.get("info"):
        return "| %s | %s | | %.2fx | |" % (cells[0], cells[1], ratio)
    ok = met(ratio, r["op"], r["limit"])
    return "| %s | %s | %s | %.2fx | %s |" % (
        cells[0], cells[1], r["target"], ratio, "**met**" if ok else "**MISSED**")


def load(path):
    meas, fails, facts, notes = {}, {}, [], []
    with open(path) as f:
        for line in f:
            p = line.rstrip("\n").split("\t")
            if p[0] == "m" and len(p) == 3:
                meas.setdefault(p[1], []).append(float(p[2]))
            elif p[0] == "fail" and len(p) >= 3:
                fails[p[1]] = p[2]
            elif p[0] == "fact" and len(p) >= 3:
                facts.append((p[1], p[2]))
            elif p[0] == "note" and len(p) >= 2:
                notes.append(p[1])
    return meas, fails, facts, notes


def sections(meas):
    """The table's sections, each [(title, None), (label, row or None)...]:
    every KEY the table shows (charts.py draws or skips each)."""
    return [A, B, HTTP, scale_rows(meas), STATS]


def main(tsv, out):
    meas, fails, facts, notes = load(tsv)
    lines = ["# samplefs benchmark results", "",
             "Written by `tools/bench/table.py` from one run of "
             "`tools/bench/bench.sh`; do not edit by hand.", ""]
    lines += ["- **%s**: %s" % (k, v) for k, v in facts]
    lines += [""]
    for section in sections(meas):
        body = []
        for label, r in section[1:]:
            if label and r is None:
                body.append("| **%s** | | | | |" % label)
                continue
            s = row(label, r, meas, fails)
            if s:
                body.append(s)
        if not any(not b.startswith("| **") for b in body):
            continue
        lines += ["## " + section[0][0], "",
                  "| measurement | median (spread) | target | ratio | verdict |",
                  "|---|---|---|---|---|"] + body + [""]
    if notes:
        lines += ["## Notes", ""] + ["- " + n for n in notes] + [""]
    with open(out, "w") as f:
        f.write("\n".join(lines))


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    main(sys.argv[1], sys.argv[2])
