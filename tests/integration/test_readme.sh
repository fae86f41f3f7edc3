#!/usr/bin/env bash
# The README's quick start works by copy-paste (issue 27, item 1): the
# fenced blocks under its "## Quick start" heading are taken from README.md
# as they are, their placeholders (the tar's path, the HTTP URL, the
# endpoint, the bucket, the keys, the mount point, `$PWD/build`) replaced by
# fixtures made here, and run with the daemon under test ($SAMPLEFS, put
# first on PATH by the quick start's own `export PATH=` line):
#   - the tar is made by GNU tar from PNGs in ImageFolder's layout; it is
#     mounted three ways, from the local file, over HTTP (nginx,
#     http_lib.sh) and from Swift's S3 API (swift_lib.sh) with the
#     quick start's `endpoint=` and credentials in the environment;
#   - each mount must show the tree GNU tar extracts (diff -r: names,
#     types, bytes), the browsing block must print on the mount exactly
#     what it prints on that extraction, the DataLoader block must count
#     the tar's samples and classes, and the unmount block must unmount.
# Also: every relative link and #anchor of README.md and docs/*.md resolves.
# Every block of the section must be one of these kinds, and every
# placeholder must be found, so a changed quick start fails here until
# this test runs it too.  `make` in the build block is checked with
# `make -n` (the daemon under test is built already); SAMPLEFS_README=FILE
# tests another copy of the README (the link check reads the tree's).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/http_lib.sh"
. "$(dirname "$0")/swift_lib.sh"
sfs_setup
T=$SFS_TMP
README=${SAMPLEFS_README:-$SFS_ROOT/README.md}
MNT=$T/mnt
B=readme

# ---- every relative link of README.md and docs/*.md leads somewhere ----
# (a file that exists; a #fragment to one of its headings, slugged as
# GitHub slugs them), so a section moved between pages leaves no dead link
links_ok() {
	"$PY" - "$SFS_ROOT" <<'PY'
import os, re, sys
root = sys.argv[1]
def slug(h):
    h = h.strip().lower()
    h = re.sub(r'[^\w\- ]', '', h)
    return h.replace(' ', '-')
def anchors(path):
    out, fence = set(), False
    for l in open(path, encoding='utf-8'):
        if l.startswith('```'): fence = not fence
        if not fence and re.match(r'#{1,6} ', l):
            out.add(slug(l.lstrip('#')))
    return out
bad = 0
files = ['README.md'] + ['docs/' + f for f in sorted(os.listdir(root + '/docs')) if f.endswith('.md')]
for f in files:
    text = open(os.path.join(root, f), encoding='utf-8').read()
    text = re.sub(r'^```.*?^```', '', text, flags=re.S | re.M)
    for target in re.findall(r'\]\(([^)\s]+)\)', text):
        if re.match(r'[a-z]+:', target): continue
        path, _, frag = target.partition('#')
        full = os.path.normpath(os.path.join(root, os.path.dirname(f), path)) if path else os.path.join(root, f)
        if not os.path.exists(full):
            print(f'{f}: link to {target}: no such file'); bad = 1; continue
        if frag and full.endswith('.md') and frag not in anchors(full):
            print(f'{f}: link to {target}: no such heading'); bad = 1
sys.exit(bad)
PY
}
check "README.md and docs/*.md: every relative link and anchor resolves" links_ok

# ---- the quick start's blocks, by kind ----
"$PY" - "$README" "$T/blocks" <<'PY' || { echo "not ok - quick start parsed"; exit 1; }
import os, re, sys
text = open(sys.argv[1], encoding="utf-8").read()
m = re.search(r"^## Quick start\n(.*?)(?=^## )", text, re.S | re.M)
if not m:
    sys.exit("README: no '## Quick start' section")
blocks = re.findall(r"^```(\w*)\n(.*?)^```$", m.group(1), re.S | re.M)
out = sys.argv[2]
os.makedirs(out)
seen = {}
for lang, body in blocks:
    if lang == "python":
        kind = "python"
    elif lang != "sh":
        sys.exit(f"README: a ```{lang} block in the quick start: sh or python only")
    elif re.match(r"make\b", body):
        kind = "build"
    elif "fusermount3 -u" in body:
        kind = "umount"
    elif re.search(r"^samplefs .* s3://", body, re.M):
        kind = "mount-s3"
    elif re.search(r"^samplefs .*https?://", body, re.M):
        kind = "mount-http"
    elif re.search(r"^samplefs ", body, re.M):
        kind = "mount-local"
    elif re.search(r"^ls ", body, re.M):
        kind = "browse"
    elif re.match(r"MNT=", body):
        kind = "setup"
    else:
        sys.exit("README: a quick start block this test does not know:\n" + body)
    if kind in seen:
        sys.exit(f"README: two quick start blocks of kind {kind}")
    seen[kind] = 1
    open(os.path.join(out, kind), "w").write(body)
want = {"build", "setup", "mount-local", "mount-http", "mount-s3", "browse", "python", "umount"}
if set(seen) != want:
    sys.exit(f"README: quick start blocks missing: {sorted(want - set(seen))}")
PY
echo "ok - quick start parsed: $(ls "$T/blocks" | tr '\n' ' ')"

# block KIND OLD NEW [OLD NEW...]: the block with each OLD (which must be
# in it) replaced by NEW
block() {
	local s old
	s=$(cat "$T/blocks/$1") || return 1
	shift
	while [ $# -gt 0 ]; do
		old=$1
		[[ $s == *"$old"* ]] || { echo "    placeholder '$old' not in the block" >&2; return 1; }
		s=${s//"$old"/$2}
		shift 2
	done
	printf '%s\n' "$s"
}

# ---- fixtures: a tar GNU tar makes, its extraction, nginx, Swift ----
mkdir -p "$T/data/src" "$T/x" "$T/home"
"$PY" - "$T/data/src" <<'PY'
import os, sys
from PIL import Image
root = sys.argv[1]
for c, (cls, colour) in enumerate([("cat", (200, 30, 30)), ("dog", (30, 200, 30)), ("owl", (30, 30, 200))]):
    os.makedirs(f"{root}/train/{cls}")
    for i in range(1, 4 + c):
        Image.new("RGB", (8, 8), tuple(min(255, v + 9 * i) for v in colour)).save(f"{root}/train/{cls}/{i:04d}.png")
PY
tar -C "$T/data/src" -cf "$T/data/train.tar" train || { echo "not ok - GNU tar made the fixture"; exit 1; }
tar -C "$T/x" -xf "$T/data/train.tar"
NFILES=$(find "$T/x" -type f | wc -l)
check "fixture: GNU tar made a tar of $NFILES PNGs" [ "$NFILES" -eq 12 ]
check "nginx serves the tar" http_start "$T/data"
URL=$(http_url train.tar)
check "Swift starts" swift_start || { sfs_done; exit 1; }
check "the tar uploaded to s3://$B/data/train.tar" eval 'swift_mkbucket "$B" && swift_put "$B" data/train.tar "$T/data/train.tar"'
unset AWS_SESSION_TOKEN AWS_PROFILE AWS_ENDPOINT_URL AWS_REGION AWS_DEFAULT_REGION \
	AWS_ACCESS_KEY_ID AWS_SECRET_ACCESS_KEY AWS_SHARED_CREDENTIALS_FILE

# ---- the build block: make (checked), then PATH ----
BIN=$(dirname "$SAMPLEFS")
PRE=$(block build '$PWD/build' "$BIN") || { echo "not ok - build block"; exit 1; }
# make_lines_ok: each `make ...` line of the build block names targets the
# Makefile has (make -n: nothing is built, the daemon under test is)
make_lines_ok() {
	local cmd n=0
	while read -r cmd; do
		cmd=${cmd%%#*}
		(cd "$SFS_ROOT" && ${cmd/make/make -n} >/dev/null) || return 1
		n=$((n + 1))
	done < <(grep '^make' <<<"$PRE")
	[ "$n" -gt 0 ]
}
check "build block: its make command is a target of the Makefile" make_lines_ok
PRE=$(grep -v '^make' <<<"$PRE")
PRE+=$'\n'"[ \"\$(command -v samplefs)\" = \"$SAMPLEFS\" ] || { echo 'samplefs on PATH is not the daemon under test' >&2; exit 1; }"
SETUP=$(block setup '~/mnt/data' "$MNT") || { echo "not ok - setup block"; exit 1; }
SFS_MOUNTS+=("$MNT")	# unmounted by sfs_cleanup whatever happens below

BROWSE=$(block browse) && UMOUNT=$(block umount) || exit 1
PYCODE=$(block python '~/mnt/data' "$MNT") || { echo "not ok - python block"; exit 1; }

# run_sh SCRIPT: runs the README's commands in SCRIPT as a user would paste
# them (bash, stopping at the first failure), HOME a directory of the test's
run_sh() {
	(cd "$T/home" && HOME=$T/home bash -e -c "$1")
}
# what the browsing block prints on GNU tar's extraction: the oracle
run_sh "MNT=$T/x"$'\n'"$BROWSE" >"$T/browse.want" 2>&1 ||
	{ echo "not ok - the browsing block on the extraction"; cat "$T/browse.want"; exit 1; }

browse_same() {
	run_sh "$SETUP"$'\n'"$BROWSE" >"$T/browse.$1" 2>&1 && diff "$T/browse.want" "$T/browse.$1"
}
loader_ok() {
	local out
	out=$(cd "$T/home" && HOME=$T/home "$PY" -c "$PYCODE" 2>&1) || { echo "$out" | tail -5; return 1; }
	grep -qx "$NFILES samples, 3 classes; a batch of (8, 3, 8, 8)" <<<"$out" ||
		{ echo "    printed: $out"; return 1; }
}
umount_ok() {
	run_sh "$SETUP"$'\n'"$UMOUNT" && ! sfs_mounted "$MNT"
}

# run NAME MOUNT-BLOCK: the quick start from the build block to the
# unmount, with MOUNT-BLOCK as its mount
run() {
	local name=$1 mount=$2
	check "$name: the build, setup and mount blocks succeed" \
		run_sh "$PRE"$'\n'"$SETUP"$'\n'"$mount" || return 1
	check "$name: mounted" sfs_mounted "$MNT" || return 1
	check "$name: the tree is GNU tar's extraction" diff -r "$T/x" "$MNT"
	check "$name: the browsing block prints what it prints on the extraction" browse_same "$name"
	check "$name: the DataLoader block loads every sample" loader_ok
	check "$name: the unmount block unmounts" umount_ok
}

run local "$(block mount-local '~/data/train.tar' "$T/data/train.tar")"
run http "$(block mount-http 'https://example.org/data/train.tar' "$URL")"
run s3 "$(block mount-s3 'http://127.0.0.1:9000' "$SWIFT_S3" \
	's3://bucket/data/train.tar' "s3://$B/data/train.tar" \
	'AKIAEXAMPLE' "$SWIFT_ACCESS_KEY" 'wJalrEXAMPLEKEY' "$SWIFT_SECRET_KEY")"

sfs_done
