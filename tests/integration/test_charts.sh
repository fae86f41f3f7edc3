#!/usr/bin/env bash
# tools/bench/charts.py, which `make bench` runs after table.py, on a
# synthetic results.tsv (no bench run, no mount; a few seconds):
#   - a value for every key table.py shows (every section, part scale at
#     three sizes of both sets), one drawn key failed: the four charts are
#     written, and each is a PNG that PIL (not matplotlib) opens, of a
#     readable size, with the colours of what it draws (samplefs' blue; the
#     second scale set's orange);
#   - every key table.py shows is drawn or named by charts.SKIPPED, every
#     key drawn is one table.py shows (a typo would draw nothing), and a key
#     added to table.py's rows and not to charts.py is reported;
#   - a run of part scale alone writes scale.png and no other chart; a file
#     with no measurement writes none and does not fail;
#   - table.py turns the same file into results.md with the scale and stats
#     sections and the stats target's verdict.
. "$(dirname "$0")/lib.sh"
sfs_setup
T=$SFS_TMP
BENCH=$SFS_ROOT/tools/bench

# one Python process (matplotlib's import is most of the cost): prints
# "ok NAME" or "not ok NAME: why" per check
"$PY" - "$BENCH" "$T" >"$T/checks" 2>"$T/stderr" <<'PY'
import os, random, sys
bench, tmp = sys.argv[1], sys.argv[2]
sys.path.insert(0, bench)
import table, charts
from PIL import Image

def say(ok, name, why=""):
    print("ok %s" % name if ok else "not ok %s: %s" % (name, why))

rng = random.Random(19)
scale = {"scale.%s.%s.%d" % (s, m, n): [1.0]
         for s, _ in table.SCALE_SETS for m, _, _ in table.SCALE_METRICS
         for n in (1000, 10000, 100000)}
keys = sorted(charts.table_keys(scale))
FAILED = "qd.cold.squashfs"

def write(path, keys, failed=None):
    with open(path, "w") as f:
        f.write("fact\tcommand\t`tools/bench/bench.sh`\n"
                "fact\tcommit\tabc1234 (2026-12-02 17:00 UTC)\n"
                "fact\tmachine\t2 CPUs (test), 1 GiB RAM\nnote\ta note\n")
        for k in keys:
            if k == failed:
                f.write("fail\t%s\tmksquashfs failed\n" % k)
                continue
            base = 10 ** rng.uniform(0, 5)
            for _ in range(3):
                f.write("m\t%s\t%.4f\n" % (k, base * rng.uniform(0.9, 1.1)))

def pngs(d):
    return sorted(f for f in os.listdir(d) if f.endswith(".png"))

def has_colour(img, hexrgb, min_pixels=200):
    want = tuple(int(hexrgb[i:i + 2], 16) for i in (1, 3, 5))
    counts = img.convert("RGB").getcolors(1 << 24)	# [(count, (r, g, b))]
    return sum(c for c, p in counts if p == want) >= min_pixels

# all keys
os.makedirs(tmp + "/all")
write(tmp + "/all.tsv", keys, FAILED)
charts.main(tmp + "/all.tsv", tmp + "/all")
want = ["files_per_s.png", "http.png", "scale.png", "tools.png"]
say(pngs(tmp + "/all") == want, "every chart written", pngs(tmp + "/all"))
for name in pngs(tmp + "/all"):
    path = os.path.join(tmp, "all", name)
    size = os.path.getsize(path)
    try:
        with Image.open(path) as img:
            img.verify()
        img = Image.open(path)
        fmt, (w, h) = img.format, img.size
    except Exception as e:
        say(False, name + " is a PNG", e)
        continue
    say(fmt == "PNG" and 800 <= w <= 2000 and 600 <= h <= 2000 and 20000 < size < 2000000,
        name + " is a PNG of a readable size", "%s %dx%d, %d bytes" % (fmt, w, h, size))
    colour = charts.SCALE_SETS["in"] if name == "scale.png" else charts.SERIES["samplefs"][1]
    say(has_colour(img, colour), name + " draws in " + colour)

# coverage, both ways
left = charts.uncovered(scale)
say(not left, "every key table.py shows is drawn or skipped", left)
drawn = charts.drawn_keys()
stray = [k for k in drawn if not any(charts.matches(t, [k]) for t in keys)]
say(not stray, "every key drawn is one table.py shows", stray)
table.A.append(("a new row", dict(key="qd.new_row", unit="s", kind="info")))
say(charts.uncovered(scale) == ["qd.new_row"], "a new table row is reported",
    charts.uncovered(scale))
table.A.pop()

# part scale alone; nothing at all
os.makedirs(tmp + "/scale")
write(tmp + "/scale.tsv", sorted(scale))
charts.main(tmp + "/scale.tsv", tmp + "/scale")
say(pngs(tmp + "/scale") == ["scale.png"], "part scale alone: scale.png only", pngs(tmp + "/scale"))
os.makedirs(tmp + "/none")
write(tmp + "/none.tsv", [])
charts.main(tmp + "/none.tsv", tmp + "/none")
say(pngs(tmp + "/none") == [], "no measurement: no chart", pngs(tmp + "/none"))

# the table from the same file
table.main(tmp + "/all.tsv", tmp + "/results.md")
md = open(tmp + "/results.md").read()
ok = all(s in md for s in ("## scale.", "## stats.", "ImageNet-shaped, 100,000 samples",
                           "with / without >= 0.98"))
say(ok, "table.py writes the scale and stats sections")
PY
rc=$?
check "charts.py's checks ran (exit $rc)" [ "$rc" = 0 ] || cat "$T/stderr"
check "charts.py's checks printed" [ -s "$T/checks" ]
while IFS= read -r line; do
	case $line in
	"ok "*) check "${line#ok }" true ;;
	"not ok "*) check "${line#not ok }" false ;;
	esac
done <"$T/checks"
sfs_done
