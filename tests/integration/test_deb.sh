#!/usr/bin/env bash
# test_deb.sh - the Debian package: `dpkg-buildpackage -b -us -uc` builds a
# .deb from the source files (a copy, so the work tree gets no build
# products), lintian finds no error in it, and the package unpacked with
# `dpkg -x` (not installed) holds each command with its man page and
# completion, runs `samplefs --version` (the version debian/changelog
# gives), and mounts a tar whose files equal what Python's tarfile reads.
. "$(dirname "$0")/lib.sh"
sfs_setup
cd "$SFS_ROOT"

pkg=$SFS_TMP/pkg
mkdir -p "$pkg/src"
if git rev-parse --is-inside-work-tree > /dev/null 2>&1; then
	# tracked files and new ones not ignored: never build products
	git ls-files -z -co --exclude-standard | tar --null -cf - -T - | tar -xf - -C "$pkg/src"
else
	tar --exclude='./build*' -cf - . | tar -xf - -C "$pkg/src"
fi
version=$(dpkg-parsechangelog -l debian/changelog -S Version)
arch=$(dpkg --print-architecture)
deb=$pkg/samplefs_${version}_$arch.deb

(cd "$pkg/src" && dpkg-buildpackage -b -us -uc) > "$SFS_TMP/build.log" 2>&1
check "dpkg-buildpackage -b -us -uc builds $(basename "$deb")" test -s "$deb" ||
	{ tail -30 "$SFS_TMP/build.log"; sfs_done; exit; }

lintian --tag-display-limit 0 "$deb" 2>&1 | grep -v 'running with root privileges' > "$SFS_TMP/lintian.log"
check "lintian: no error" bash -c "! grep '^E:' '$SFS_TMP/lintian.log'" ||
	cat "$SFS_TMP/lintian.log"

root=$SFS_TMP/root
dpkg -x "$deb" "$root"
for c in samplefs samplefs-inspect samplefs-download samplefs-stat; do
	check "the package holds $c, its man page and its completion" \
		test -x "$root/usr/bin/$c" -a -s "$root/usr/share/man/man1/$c.1.gz" \
		-a -s "$root/usr/share/bash-completion/completions/$c"
done
check "the unpacked commands find every library they link" \
	bash -c "! ldd '$root'/usr/bin/* | grep 'not found'"
dpkg -I "$deb" > "$SFS_TMP/info"
check "it depends on fuse3 and the libraries it links (libfuse3, libarchive, libcurl)" \
	bash -c "grep -q 'Depends:.*fuse3' '$SFS_TMP/info' && grep -q 'libfuse3-3' '$SFS_TMP/info' &&
		 grep -q 'libarchive' '$SFS_TMP/info' && grep -q 'libcurl' '$SFS_TMP/info'"
check "samplefs --version says $version" \
	bash -c "'$root/usr/bin/samplefs' --version | grep -qx 'samplefs version $version'"

# a mount with the unpacked daemon, checked against tarfile
$PY - "$SFS_TMP/a.tar" <<'PY'
import io, sys, tarfile
with tarfile.open(sys.argv[1], "w", format=tarfile.PAX_FORMAT) as t:
    for i in range(20):
        data = bytes((i * 7 + j) % 251 for j in range(1000 + 97 * i))
        ti = tarfile.TarInfo(f"dir{i % 3}/file{i:02d}.bin")
        ti.size = len(data)
        t.addfile(ti, io.BytesIO(data))
PY
SAMPLEFS=$root/usr/bin/samplefs
check "the unpacked samplefs mounts a tar" \
	sfs_mount "$SFS_TMP/a.tar" "$SFS_TMP/mnt" -o "index_dir=$SFS_TMP/idx"
check "its files equal tarfile's" $PY - "$SFS_TMP/a.tar" "$SFS_TMP/mnt" <<'PY'
import os, sys, tarfile
with tarfile.open(sys.argv[1]) as t:
    members = [m for m in t.getmembers() if m.isfile()]
    for m in members:
        with open(os.path.join(sys.argv[2], m.name), "rb") as f:
            if f.read() != t.extractfile(m).read():
                sys.exit(f"{m.name}: bytes differ")
    seen = sum(len(fs) for _, _, fs in os.walk(sys.argv[2]) if True)
    if seen < len(members):
        sys.exit(f"{seen} files in the mount, {len(members)} in the tar")
PY
check "unmount" sfs_umount "$SFS_TMP/mnt"
sfs_done
