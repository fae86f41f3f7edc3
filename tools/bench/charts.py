#!/usr/bin/python3
"""charts - the benchmark's results.tsv drawn as PNG charts (matplotlib, Agg).

Usage: charts.py RESULTS_TSV OUTDIR

Reads the file through table.load (table.py owns the format and its rows)
and writes into OUTDIR:
  files_per_s.png  parts A, B and stats: files/s of samplefs against the FUSE
                   floor and the exploded or extracted tree, by workload
  http.png         part http: local against http:// mounts, files/s and MB/s
  tools.png        parts B and tools: du, ls -lR, find, in seconds
  scale.png        part scale: first mount time, index size and peak RSS
                   against the dataset's size in samples
A chart none of whose measurements is in the file is not written, so a run
of some parts leaves the other parts' charts alone.  Each chart's title
names the run's commit and date, its footer the command and the machine
(the table's facts).  Bars and points are medians of the runs, error bars
their spread (min to max); a measurement that failed shows as "failed"
where its bar would be.

Not the table: targets, verdicts, ratios and diagnostics stay in
results.md.  Every key table.py shows is drawn here or matched by SKIPPED
with the reason; uncovered() names those that are neither, and
tests/integration/test_charts.sh checks that it names none.
"""
import fnmatch
import os
import statistics
import sys
import textwrap

import matplotlib

matplotlib.use("Agg")	# no display: files only
import matplotlib.pyplot as plt	# noqa: E402 (after the backend is chosen)
from matplotlib.ticker import FuncFormatter	# noqa: E402

import table	# noqa: E402 (this directory is on sys.path: run as a script)

# series: (legend label, colour), the same colour for the same thing everywhere
SERIES = {
    "samplefs": ("samplefs", "#1f77b4"),
    "stats": ("samplefs, stats.json read 10 times a second", "#aec7e8"),
    "floor_libfuse": ("FUSE floor on libfuse's loop", "#555555"),
    "floor": ("FUSE floor polling as samplefs does", "#aaaaaa"),
    "tree": ("files on ext4 (exploded / extracted tree)", "#ff7f0e"),
    "squashfs": ("squashfuse_ll (squashfs of the exploded files)", "#2ca02c"),
    "archivemount": ("archivemount", "#9467bd"),
    "local": ("samplefs, local mount", "#1f77b4"),
    "http": ("samplefs, http:// mount", "#17becf"),
    "curl": ("curl GETs of the whole files", "#d62728"),
    "fresh": ("samplefs, fresh mount", "#1f77b4"),
    "second": ("samplefs, second run on that mount", "#aec7e8"),
    "auto": ("samplefs -o readdirplus=auto, fresh mount", "#8c564b"),
}


def floors(pre):
    """The floor pair and samplefs of a first-pass workload PRE."""
    return [("floor_libfuse", pre + ".floor_libfuse"), ("floor", pre + ".floor"),
            ("samplefs", pre + ".samplefs")]


# charts of bars: file -> (title, [(panel title, y label, [(group, [(series, key)])])])
BARS = {
    "files_per_s.png": ("Files per second by workload (higher is better)", [
        ("A. Quick, Draw! (images and strokes as .npy files)", "files/s", [
            ("cold, 1 thread\nimages, gidx order", [
                ("tree", "qd.cold.exploded"), ("squashfs", "qd.cold.squashfs"),
                ("samplefs", "qd.cold.samplefs")]),
            ("cold, 1 thread\nthe loader's way", [
                ("tree", "qd.cold_listed.exploded"), ("samplefs", "qd.cold_listed.samplefs")]),
            ("first pass, 1 thread\nimages", floors("qd.first1")),
            ("first pass, 4 threads\nimages", floors("qd.first4")),
            ("first pass, 1 thread\nstrokes, random", floors("qd.strokes1")),
            ("second pass, 1 thread\nimages", [
                ("tree", "qd.second1.exploded"), ("floor", "qd.second1.floor"),
                ("samplefs", "qd.second1.samplefs")]),
            ("second pass, 4 threads\nimages", [
                ("tree", "qd.second4.exploded"), ("floor", "qd.second4.floor"),
                ("samplefs", "qd.second4.samplefs")]),
        ]),
        ("B. ImageNet-shaped tar (nested class tars): random train JPEGs", "files/s", [
            ("cold, 1 thread", [("tree", "in.cold.extracted"), ("samplefs", "in.cold.samplefs")]),
            ("cold, 4 threads", [("tree", "in.cold4.extracted"), ("samplefs", "in.cold4.samplefs")]),
            ("first pass, 1 thread", floors("in.first1")),
            ("first pass, 4 threads", floors("in.first4")),
            ("fresh mounts, 4 threads\n(part stats)", [
                ("samplefs", "stats.without"), ("stats", "stats.with")]),
            ("second pass, 4 threads", [
                ("tree", "in.second4.extracted"), ("samplefs", "in.second4.samplefs")]),
            ("flat.tar subset\nfirst pass, 1 thread", [
                ("archivemount", "in.am_flat_read"), ("samplefs", "in.flat_read.samplefs")]),
        ]),
    ]),
    "http.png": ("Mounts over HTTP: nginx on loopback, then 20 ms added per response", [
        ("files/s (higher is better)", "files/s", [
            ("loopback: Quick, Draw!\nimages, gidx order, 1 thread", [
                ("local", "http.qd.first1.local"), ("http", "http.qd.first1.http")]),
            ("loopback: ImageNet\nrandom JPEGs, 4 threads", [
                ("local", "http.in.first4.local"), ("http", "http.in.first4.http")]),
            ("20 ms: ImageNet\nrandom JPEGs, 16 threads", [
                ("local", "http.in.rtt16.local"), ("http", "http.in.rtt16.http")]),
            ("20 ms: Quick, Draw!\nepoch, 1 thread", [
                ("local", "http.qd.epoch.local"), ("http", "http.qd.epoch.http")]),
        ]),
        ("the epoch as MB/s of the class files (higher is better)", "MB/s", [
            ("20 ms", [("local", "http.qd.epoch.local_mbs"), ("http", "http.qd.epoch.http_mbs"),
                       ("curl", "http.qd.epoch.curl_mbs"), ("floor", "http.qd.epoch.floor_mbs")]),
            ("no delay", [("curl", "http.qd.epoch.curl0_mbs")]),
        ]),
    ]),
    "tools.png": ("Everyday tools on the ImageNet-shaped mount (seconds, lower is better)", [
        ("train/ and val/ (the extracted tree warm; samplefs on a fresh mount, then again)", "seconds", [
            ("find train -type f", [("tree", "in.find_extracted_s"), ("fresh", "in.find_s")]),
            ("du -sh", [("tree", "in.tools.du.extracted"), ("fresh", "in.tools.du.samplefs"),
                        ("second", "in.tools.du.samplefs2"), ("auto", "in.tools.du.auto")]),
            ("ls -lR", [("tree", "in.tools.lsR.extracted"), ("fresh", "in.tools.lsR.samplefs"),
                        ("second", "in.tools.lsR.samplefs2")]),
            ("find -size +3k", [("tree", "in.tools.findsize.extracted"),
                                ("fresh", "in.tools.findsize.samplefs"),
                                ("second", "in.tools.findsize.samplefs2")]),
        ]),
        ("the whole mount (shards/ and shuffled/ too; the extracted tree completed with hard links)", "seconds", [
            ("du -sh", [("tree", "in.tools.du.whole_extracted"), ("fresh", "in.tools.du.whole")]),
            ("ls -lR", [("tree", "in.tools.lsR.whole_extracted"), ("fresh", "in.tools.lsR.whole")]),
            ("find -size +3k", [("tree", "in.tools.findsize.whole_extracted"),
                                ("fresh", "in.tools.findsize.whole")]),
            ("find -type f", [("tree", "in.tools.find.extracted"),
                              ("fresh", "in.tools.find.adaptive"), ("auto", "in.tools.find.auto")]),
        ]),
    ]),
}

# scale.png: panel title, y label, [(metric, line style, what)], divisor
SCALE_SETS = {"qd": "#1f77b4", "in": "#ff7f0e"}
SCALE_PANELS = [
    ("first mount (index built) and remount", "seconds", [
        ("mount1_warm", "-", "first mount, warm sources"),
        ("mount1_cold", "--", "first mount, cold"),
        ("remount", ":", "remount, warm")], 1),
    ("index size", "MiB", [("index_kb", "-", "index directory")], 1024),
    ("daemon peak RSS (VmHWM)", "MiB", [
        ("build_rss_kb", "-", "first mount (index build)"),
        ("rss_kb", "--", "remount + random reads")], 1024),
]
SCALE_DRAWN = ["scale.%s.%s.*" % (s, m[0]) for s in SCALE_SETS
               for p in SCALE_PANELS for m in p[2]]

# keys of table.py deliberately not drawn: pattern -> why
SKIPPED = {
    "qd.explode_s": "a one-off preparation time: the table sets it against the first mount",
    "in.extract_s": "a one-off preparation time: the table sets it against the first mount",
    "qd.mount1_*": "full-size mount times: scale.png draws them at every size",
    "qd.remount_*": "full-size mount times: scale.png draws them at every size",
    "in.mount1_*": "full-size mount times: scale.png draws them at every size",
    "in.remount_s": "full-size mount times: scale.png draws them at every size",
    "*.rss_kb": "memory at one size, against a target: the table (scale.png: RSS by size)",
    "*.build_rss_kb": "memory at one size, against a target: the table (scale.png: RSS by size)",
    "*.anon_kb": "a memory diagnostic: the table",
    "qd.index_ratio": "index size at one size, against a target: the table (scale.png: by size)",
    "in.index_per_member": "index size at one size, against a target: the table (scale.png: by size)",
    "*.samplefs_nopoll": "libfuse's loop instead of polling: a reference variant, the table",
    "in.cold*.samplefs_nodisk": "a diagnostic: the cold reads without the disk's wait",
    "in.cold*.ios_per_file": "a disk diagnostic of the cold reads: the table",
    "in.cold*.kb_per_file": "a disk diagnostic of the cold reads: the table",
    "in.ratarmount_ref": "the issue's figure for ratarmount, not a measurement",
    "in.am_*_mount_s": "archivemount's mount times: the table",
    "in.tools.find_slab.*": "kernel slab grown by find: a diagnostic, the table",
    "*.cpu_us": "CPU per file: a diagnostic of the HTTP rows, the table",
    "*.nginx_us": "nginx's CPU per file: a diagnostic, the table",
    "*.gets_per_file": "requests per file: a diagnostic of the HTTP rows, the table",
    "*.kib_per_get": "bytes per request: a diagnostic of the HTTP rows, the table",
    "http.*.mount1_*": "mounts over HTTP (time, GETs, MB): counts against targets, the table",
    "http.*.remount*": "remounts over HTTP (time, GETs, HEADs): counts against targets, the table",
}


def drawn_keys():
    """Every key (or, for part scale, pattern) some chart draws."""
    keys = [k for _, panels in BARS.values() for _, _, groups in panels
            for _, bars in groups for _, k in bars]
    return keys + SCALE_DRAWN


def table_keys(meas):
    """Every key table.py's rows show (values and references) for MEAS."""
    keys = set()
    for section in table.sections(meas):
        for _, r in section[1:]:
            if r:
                keys.add(r["key"])
                if "ref" in r:
                    keys.add(r["ref"])
    return keys


def matches(key, patterns):
    return any(fnmatch.fnmatchcase(key, p) for p in patterns)


def uncovered(meas):
    """Keys table.py shows for MEAS that no chart draws and SKIPPED does not name."""
    known = drawn_keys() + list(SKIPPED)
    return sorted(k for k in table_keys(meas) if not matches(k, known))


def short(v):
    """A bar's label: 3 significant figures at most, k and M for thousands."""
    for div, suffix in ((1e6, "M"), (1e3, "k")):
        if v >= div:
            return "%.3g%s" % (v / div, suffix)
    return "%.3g" % v


def stat(vals):
    """(median, distance down to the min, up to the max)"""
    m = statistics.median(vals)
    return m, m - min(vals), max(vals) - m


def run_facts(facts):
    facts = dict(facts)
    title = "samplefs %s" % facts.get("commit", "(commit unknown)")
    foot = "; ".join("%s: %s" % (k, facts[k].replace("`", ""))
                     for k in ("command", "machine", "load average at start") if k in facts)
    return title, foot


def new_figure(nrows, title, facts, width, height, below):
    """A figure of NROWS panels of HEIGHT inches, the title and footer
    around them and BELOW inches under the last panel (its tick labels,
    a legend); returns it, the axes and the margins to pass to layout()."""
    head, foot = run_facts(facts)
    foot = textwrap.wrap(foot, int(width * 15)) + [
        "medians of the runs, error bars min to max; full table: tools/bench/results.md"]
    bottom = 0.15 + 0.13 * len(foot) + below
    fig, axes = plt.subplots(nrows, 1, figsize=(width, height * nrows + 1.0 + bottom),
                             squeeze=False)
    fig.suptitle("%s\n%s" % (title, head), fontsize=13)
    fig.text(0.01, 0.1 / fig.get_figheight(), "\n".join(foot), fontsize=7.5, va="bottom")
    return fig, [a[0] for a in axes], bottom


def layout(fig, bottom, hspace):
    h = fig.get_figheight()
    fig.subplots_adjust(hspace=hspace, top=1 - 0.9 / h, bottom=bottom / h, left=0.08,
                        right=0.98)


def set_scale(ax, vals, ylabel, bottom_zero=True):
    """A log y axis when VALS span more than 20x, labelled as numbers."""
    if vals and max(vals) > 20 * min(vals):
        ax.set_yscale("log")
        ax.set_ylim(min(vals) / 3, max(vals) * 3)
        ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: short(v)))
        ylabel += " (log scale)"
    elif vals and bottom_zero:
        ax.set_ylim(0, max(vals) * 1.2)
    ax.set_ylabel(ylabel)


def draw_bars(ax, title, ylabel, groups, meas, fails):
    """One panel of grouped bars; returns the series drawn (for the legend)."""
    used, vals = [], []
    for gi, (_, bars) in enumerate(groups):
        width = 0.8 / max(len(bars), 3)	# as wide in every group, centred
        for bi, (series, key) in enumerate(bars):
            x = gi + width * (bi + 0.5 - len(bars) / 2)
            label, colour = SERIES[series]
            if key in meas:
                m, lo, hi = stat(meas[key])
                ax.bar(x, m, width * 0.92, color=colour, yerr=[[lo], [hi]],
                       capsize=2, error_kw=dict(lw=0.8))
                ax.annotate(short(m), (x, m + hi), ha="center", va="bottom", fontsize=7,
                            xytext=(0, 1), textcoords="offset points")
                vals.append(m)
            else:
                ax.text(x, 0.03, "failed", rotation=90, ha="center", va="bottom", fontsize=7,
                        color=colour, transform=ax.get_xaxis_transform())
            if series not in used:
                used.append(series)
    set_scale(ax, vals, ylabel)
    ax.set_xticks(range(len(groups)))
    ax.set_xticklabels([g for g, _ in groups], fontsize=8)
    ax.set_xlim(-0.6, len(groups) - 0.4)
    ax.set_title(title, fontsize=10, loc="left")
    ax.grid(axis="y", which="major", alpha=0.3)
    return used


def bar_chart(path, title, panels, meas, fails, facts):
    """Writes PATH unless none of its panels has a measurement; returns whether it did."""
    kept = []
    for ptitle, ylabel, groups in panels:
        groups = [(g, [b for b in bars if b[1] in meas or b[1] in fails])
                  for g, bars in groups]
        groups = [(g, bars) for g, bars in groups if bars]
        if any(k in meas for _, bars in groups for _, k in bars):
            kept.append((ptitle, ylabel, groups))
    if not kept:
        return False
    fig, axes, bottom = new_figure(len(kept), title, facts, 13, 4.2, 1.5)
    used = []
    for ax, (ptitle, ylabel, groups) in zip(axes, kept):
        used += [s for s in draw_bars(ax, ptitle, ylabel, groups, meas, fails) if s not in used]
    handles = [plt.Rectangle((0, 0), 1, 1, color=SERIES[s][1]) for s in used]
    fig.legend(handles, [SERIES[s][0] for s in used], loc="lower center", ncol=3,
               fontsize=8.5, bbox_to_anchor=(0.5, (bottom - 1.5) / fig.get_figheight()))
    layout(fig, bottom, 0.45)
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return True


def scale_chart(path, meas, facts):
    """scale.png: each metric of part scale against samples, one line per set."""
    names = dict(table.SCALE_SETS)
    if not any(table.scale_points(meas, s) for s in SCALE_SETS):
        return False
    fig, axes, bottom = new_figure(len(SCALE_PANELS), "How mount time, index size and RSS "
                                   "grow with the dataset (part scale)", facts, 10, 3.6, 0.45)
    for ax, (ptitle, ylabel, metrics, div) in zip(axes, SCALE_PANELS):
        drawn = []
        for s, colour in SCALE_SETS.items():
            for metric, style, what in metrics:
                pts = [(n, meas.get("scale.%s.%s.%d" % (s, metric, n)))
                       for n in table.scale_points(meas, s)]
                pts = [(n, [v / div for v in vals]) for n, vals in pts if vals]
                if not pts:
                    continue
                st = [stat(v) for _, v in pts]
                drawn += [m for m, _, _ in st]
                ax.errorbar([n for n, _ in pts], [m for m, _, _ in st],
                            yerr=[[lo for _, lo, _ in st], [hi for _, _, hi in st]],
                            fmt="o" + style, color=colour, capsize=3, ms=4,
                            label="%s: %s" % (names[s], what))
                n, v = pts[-1]
                ax.annotate(short(statistics.median(v)), (n, statistics.median(v)),
                            fontsize=7, xytext=(4, 0), textcoords="offset points",
                            va="center")
        ax.set_xscale("log")
        ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: short(v)))
        set_scale(ax, drawn, ylabel)
        ax.set_title(ptitle, fontsize=10, loc="left")
        ax.set_xlabel("dataset size, samples (log scale)", fontsize=8)
        ax.grid(which="major", alpha=0.3)
        ax.legend(fontsize=7.5, loc="upper left")
    layout(fig, bottom, 0.5)
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return True


def main(tsv, outdir):
    meas, fails, facts, _ = table.load(tsv)
    written = [name for name, (title, panels) in BARS.items()
               if bar_chart(os.path.join(outdir, name), title, panels, meas, fails, facts)]
    if scale_chart(os.path.join(outdir, "scale.png"), meas, facts):
        written.append("scale.png")
    print("charts: %s" % (", ".join(written) or "none (no measurement to draw)"))


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    main(sys.argv[1], sys.argv[2])
