# Helpers for the compressed-source tests (sourced after lib.sh, with T
# set): the tree they compress, reads of the mounted tree against what
# `tar -x` extracted into $T/x, and damage.

# make_tree DIR DIRS FILES X_MIB: DIRS directories of FILES files (small
# and large, text and random bytes), big.bin (3 MiB random, then X_MIB
# MiB of "x"), a symlink
make_tree() {
	"$PY" - "$@" <<'EOF'
import os, random, sys
root, dirs, files, xmib = sys.argv[1], *map(int, sys.argv[2:5])
rng = random.Random(18)
words = [b"tar ", b"gzip ", b"span ", b"block ", b"window\n", b"0" * 40]
for d in range(dirs):
    os.makedirs(f"{root}/d{d}", exist_ok=True)
    for i in range(files):
        n = rng.choice([0, 1, 511, 512, 4096, 30000, 200000])
        if rng.random() < 0.5:
            data = rng.randbytes(n)
        else:
            data = b"".join(rng.choice(words) for _ in range(n // 5 + 1))[:n]
        open(f"{root}/d{d}/f{i}.bin", "wb").write(data)
open(f"{root}/big.bin", "wb").write(rng.randbytes(3 << 20) + b"x" * (xmib << 20))
os.symlink("d0/f1.bin", f"{root}/link")
EOF
}

# tree_tar DIR DIRS FILES X_MIB: make_tree's tree in DIR/src and GNU
# tar's DIR/t.tar of it
tree_tar() {
	make_tree "$1/src" "$2" "$3" "$4" && tar -cf "$1/t.tar" -C "$1/src" .
}

# extract: what `tar -x` makes of $T/t.tar, in $T/x (the oracle; made by
# each test, never shared: tree_compare.py compares st_nlink too)
extract() {
	mkdir -p "$T/x" && tar -xf "$T/t.tar" -C "$T/x"
}

# random_reads MNT FILE [N]: N (200) reads at random offsets and lengths
# equal the extracted file's bytes
random_reads() {
	"$PY" - "$T/x/$2" "$1/$2" "${3:-200}" <<'EOF'
import os, random, sys
want, got = (open(p, "rb") for p in sys.argv[1:3])
size = os.fstat(want.fileno()).st_size
rng = random.Random(7)
for _ in range(int(sys.argv[3])):
    off, n = rng.randrange(size + 100), rng.randrange(300000)
    want.seek(off); got.seek(off)
    if want.read(n) != got.read(n):
        sys.exit(f"    differ at {off}+{n}")
EOF
}

# right_or_eio MNT [any]: every file reads as extracted or fails with EIO;
# some fail (unless `any`: a damaged member the tar layout left out)
right_or_eio() {
	"$PY" - "$T/x" "$1" "${2:-}" <<'EOF'
import errno, os, sys
want_root, got_root, any_ok = sys.argv[1:4]
eio = 0
for d, _, names in os.walk(got_root):
    for name in names:
        p = os.path.join(d, name)
        if os.path.islink(p):
            continue
        rel = os.path.relpath(p, got_root)
        try:
            data = open(p, "rb").read()
        except OSError as e:
            if e.errno != errno.EIO:
                sys.exit(f"    {rel}: {e}")
            eio += 1
            continue
        if data != open(os.path.join(want_root, rel), "rb").read():
            sys.exit(f"    {rel}: wrong bytes")
if not eio and not any_ok:
    sys.exit("    no read failed")
EOF
}

# flip FILE OFFSET [MASK]: xors one byte with MASK (0x10); a negative
# offset counts from the end
flip() {
	"$PY" -c 'import os, sys
f = open(sys.argv[1], "r+b"); size = os.fstat(f.fileno()).st_size
off = int(sys.argv[2]); off = off + size if off < 0 else off
f.seek(off); b = f.read(1); f.seek(off); f.write(bytes([b[0] ^ int(sys.argv[3])]))' "$1" "$2" "${3:-16}"
}
