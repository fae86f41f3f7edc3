#!/usr/bin/env bash
# Issue 25's zips (zip_trust.py makes them, with the bytes each member must
# read as): no member's byte reaches a reader unless its CRC-32 matched,
# stored members included (small ones read whole, large ones checked whole
# at their first read, even a read of their first bytes, then read in
# place); stored members whose sizes disagree serve the size whose bytes
# match the CRC (unzip's choice here) with a warning, else EIO; zips with
# bytes before them (self-extracting, padded, appended, zip64, zip -A) read
# as zipfile and unzip read them; bzip2, LZMA, zstd and xz members read
# (large ones through their own sources, checked whole at the first read);
# encrypted members are named in one warning at mount, each read EIO.  Each zip
# is read cold (evicted) and warm, and the oracle is checked against unzip
# where unzip reads the member.
. "$(dirname "$0")/lib.sh"
sfs_setup
T=$SFS_TMP
Z=$T/zips
"$PY" "$SFS_ROOT/tests/integration/zip_trust.py" "$Z" || {
	echo "not ok - zip_trust.py failed"; SFS_FAIL=$((SFS_FAIL + 1)); sfs_done; exit 1; }

# reads every member of NAME.want.json under MNT: its bytes, or EIO where
# it says so; the mount lists exactly those files; a second read of a bad
# member fails at once as the first did
members() {
	"$PY" - "$Z/$1.want.json" "$2" <<'PYEOF'
import errno, json, os, sys
want, mnt, bad = json.load(open(sys.argv[1])), sys.argv[2], 0
got = sorted(os.path.relpath(os.path.join(d, n), mnt)
             for d, _, names in os.walk(mnt) for n in names)
if got != sorted(want):
    print("    listed %s, want %s" % (got, sorted(want))); bad = 1
for name, w in sorted(want.items()):
    for attempt in (1, 2):
        try:
            with open(os.path.join(mnt, name), "rb") as f:
                data = f.read()
            if w == "EIO":
                print("    %s: read %d bytes, want EIO" % (name, len(data))); bad = 1
            elif data != bytes.fromhex(w):
                print("    %s: %d bytes, not the %d written" % (name, len(data), len(w) // 2)); bad = 1
        except OSError as e:
            if w != "EIO" or e.errno != errno.EIO:
                print("    %s: %s" % (name, e)); bad = 1
sys.exit(bad)
PYEOF
}

# the first 64 KiB of a large stored member whose damage lies far past
# them: EIO (the whole member is checked before its first byte is served)
head_eio() {
	"$PY" - "$1" <<'PYEOF'
import errno, os, sys
fd = os.open(sys.argv[1], os.O_RDONLY)
try:
    os.pread(fd, 65536, 0)
    print("    the first 64 KiB read"); sys.exit(1)
except OSError as e:
    sys.exit(e.errno != errno.EIO)
PYEOF
}

# unzip agrees with the oracle where it reads a member (-p: no CRC
# refusal), so the want files are no invention of this test
unzip_agrees() {
	"$PY" - "$Z/$1.zip" "$Z/$1.want.json" <<'PYEOF'
import json, subprocess, sys
z, want, bad = sys.argv[1], json.load(open(sys.argv[2])), 0
for name, w in want.items():
    if w == "EIO":
        continue
    p = subprocess.run(["unzip", "-p", z, name], stdout=subprocess.PIPE,
                       stderr=subprocess.DEVNULL)
    if p.stdout != bytes.fromhex(w):
        print("    unzip -p %s %s: %d bytes, not the oracle's" % (z, name, len(p.stdout))); bad = 1
sys.exit(bad)
PYEOF
}

for z in stored sizes zip64size sfx pad appended sfx64 sfxA methods codecs; do
	mnt=$T/m-$z
	# unzip reads neither LZMA, zstd nor xz
	[ "$z" = methods ] || [ "$z" = codecs ] || check "$z: unzip reads the oracle's bytes" unzip_agrees "$z"
	check "$z: mounts" sfs_mount "$Z/$z.zip" "$mnt" -o layout=tar || continue
	log=$(sfs_log "$mnt")
	case $z in
	stored)
		check "stored: a large member flipped far in: its first 64 KiB give EIO" \
			head_eio "$mnt/bigflip.bin"
		check "stored: ... named in the log with both CRC-32s" \
			grep -q "stored.zip: member bigflip.bin: .*CRC-32 mismatch (the directory says [0-9a-f]\{8\}, the [0-9]* stored bytes give [0-9a-f]\{8\})" "$log" ;;
	esac
	check "$z: cold, every member is the oracle's bytes or EIO" members "$z" "$mnt"
	check "$z: warm, the same" members "$z" "$mnt"
	case $z in
	stored)
		check "stored: a small flipped member named in the log" \
			grep -q "member flip.bin: data at offset [0-9]*: CRC-32 mismatch" "$log" ;;
	sizes)
		check "sizes: the member whose 20 bytes match the CRC: a warning with both sizes" \
			grep -q "member 'twenty.bin' is stored and its sizes disagree (central directory: 10 bytes, 10 compressed; local header: 20, 20 compressed): serving the 20 bytes whose CRC-32 matches" "$log"
		check "sizes: none matches: listed, EIO, said at mount" \
			grep -q "member 'none.bin' is stored and its sizes disagree .* the bytes of none match its CRC-32 [0-9a-f]*: it is listed with 10 bytes, and its reads give EIO" "$log" ;;
	zip64size)
		check "zip64size: st_size is the 5 bytes the CRC matches" \
			test "$(stat -c %s "$mnt/five.bin")" = 5
		check "zip64size: a warning with both sizes" \
			grep -q "member 'five.bin' is stored and its sizes disagree (central directory: 4294967301 bytes, 5 compressed; local header: 5, 5 compressed): serving the 5 bytes" "$log" ;;
	sfx|pad|appended|sfx64)
		check "$z: the bytes before the zip are said" \
			grep -q "$z.zip: [0-9]* bytes before the zip" "$log" ;;
	methods)
		check "methods: the encrypted members in one warning at mount" \
			grep -q "methods.zip: 2 members cannot be read (the first: encrypted (samplefs reads no encrypted member)); they are listed, and their reads give EIO: 'secret1.txt', 'secret2.txt'" "$log"
		check "methods: a read of one says encrypted, not a method" \
			grep -q "member secret1.txt: offset [0-9]*: encrypted (samplefs reads no encrypted member): EIO" "$log" ;;
	codecs)
		check "codecs: a small zstd member whose CRC fails: named" \
			grep -q "member badcrc.zst: data at offset [0-9]*: CRC-32 mismatch" "$log"
		check "codecs: a large xz member whose CRC fails: named" \
			grep -q "member badcrc.xz: data at offset [0-9]*: CRC-32 mismatch (the directory says [0-9a-f]*, the 6291456 decoded bytes give" "$log"
		check "codecs: random ranges of the large members are the bytes written" \
			"$PY" - "$Z/codecs.want.json" "$mnt" <<'PYEOF'
import json, os, random, sys
want, mnt, bad = json.load(open(sys.argv[1])), sys.argv[2], 0
rng = random.Random(93)
for name in ("big.zst", "big.xz", "big.bz2"):
    w = bytes.fromhex(want[name])
    fd = os.open(os.path.join(mnt, name), os.O_RDONLY)
    for _ in range(40):
        off, n = rng.randrange(len(w)), rng.choice([1, 4096, 65536, 1 << 20])
        if os.pread(fd, n, off) != w[off:off + n]:
            print("    %s: %d bytes at %d differ" % (name, n, off)); bad = 1
    os.close(fd)
sys.exit(bad)
PYEOF
		;;
	esac
	check "$z: no error in the log but for the damaged members" \
		bash -c '! grep "error" "$1" | grep -v "flip.bin\|none.bin\|secret[12].txt\|badcrc"' _ "$log"
	check "$z: unmounts cleanly" sfs_umount "$mnt"
done

# a tar holding a zip as its last member is still a tar (a zip's end
# record lies within its last 64 KiB)
mkdir -p "$T/tz"
cp "$Z/sfx.zip" "$T/tz/inner.zip"
(cd "$T/tz" && tar -cf "$T/last.tar" inner.zip)
if check "a tar whose last member is a zip: mounts" sfs_mount "$T/last.tar" "$T/m-last" -o layout=tar; then
	check "... as a tar: the zip is a file, GNU tar's bytes" cmp "$T/tz/inner.zip" "$T/m-last/inner.zip"
	check "... unmounts cleanly" sfs_umount "$T/m-last"
fi
sfs_done
