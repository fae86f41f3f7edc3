#!/usr/bin/env bash
# The documentation users read cannot drift from the commands (issue 19, item 4):
#   - every -o option of `samplefs --help` is in samplefs.1 under the same
#     group (every layout, URL, bucket sources, each layout), and the man
#     page has no option --help lacks; every layout is named there; so is
#     docs/options.md's table, one row per option;
#   - the options of samplefs-inspect (its usage line and the -o keys it
#     parses) and samplefs-download (--help) are in their man pages;
#   - every man page passes mandoc -Tlint and groff -ww, and man -l renders it;
#   - the bash completion, called as bash calls it (COMP_WORDS, COMP_CWORD,
#     COMP_LINE, COMP_POINT): -o completes exactly --help's options, with
#     '=' where they take a value, layout= the layouts of --help, SOURCE
#     files and MOUNTPOINT directories only; the tools' options likewise;
#   - make install DESTDIR= PREFIX=/usr installs exactly the expected files
#     and make uninstall removes exactly them;
#   - mount-examples/systemd: the .mount/.automount pair and the units the
#     fstab line generates pass systemd-analyze verify (offline: no PID 1
#     systemd needed), a planted mismatch fails it; and the fstab line and
#     the unit's Options= mount through mount(8) and mount.fuse3 with every
#     generic option they carry, serving numpy's bytes; samplefs takes every
#     generic mount option (fs/opts.c ignores those libfuse refuses).
. "$(dirname "$0")/lib.sh"
sfs_setup
T=$SFS_TMP
BUILD_DIR=$(dirname "$SAMPLEFS")
MAN=$SFS_ROOT/docs/man
COMP=$SFS_ROOT/completions/samplefs
EX=$SFS_ROOT/mount-examples/systemd

# ---- samplefs --help against samplefs.1 ----
"$SAMPLEFS" --help >"$T/help" 2>&1
# help_pairs: "GROUP OPTION[=]" for each -o line of --help's samplefs part
# (from its first group to the blank line where libfuse's options start)
help_pairs() {
	awk '/^samplefs options/ { on = 1 } !on { next } /^$/ { exit }
	     /^[^ ]/ { g = tolower($1); if (match($0, /\(layout=[a-z]+\)/)) g = substr($0, RSTART + 8, RLENGTH - 9)
		       if (g == "samplefs") g = "every" }
	     /^    -o / { o = $2; sub(/=.*/, "=", o); print g, o }' "$T/help" | sort
}
# man_pairs: the same from samplefs.1's OPTIONS, each .SS a group, each
# .TP's tag an option (up to the FUSE options)
man_pairs() {
	awk '/^\.SH OPTIONS/ { on = 1; next } /^\.SS FUSE/ || (/^\.SH/ && on) { on = 0 }
	     !on { next }
	     /^\.SS / { g = tolower($2); if (match($0, /\(layout=[a-z]+\)/)) g = substr($0, RSTART + 8, RLENGTH - 9) }
	     tp { o = $2; gsub(/\\fI.*/, "", o); sub(/=.*/, "=", o); print g, o; tp = 0 }
	     /^\.TP/ { tp = 1 }' "$MAN/samplefs.1" | sort
}
same_lists() {	# same_lists A B: the two files hold the same lines
	diff "$1" "$2" | sed 's/^/    /' | head -20
	[ "${PIPESTATUS[0]}" -eq 0 ]
}
# in_page PAGE OPTION...: each option appears in the page (roff's \- for -)
in_page() {
	local page=$1 o r; shift
	for o in "$@"; do
		r=${o//-/\\-}
		grep -qF -- "$r" "$page" || { echo "    $o not in ${page##*/}"; return 1; }
	done
}
help_pairs >"$T/help.pairs"
man_pairs >"$T/man.pairs"
check "--help lists options (the parse works)" test "$(wc -l <"$T/help.pairs")" -ge 40
check "samplefs.1: every option of --help, in its group, and no other" \
	same_lists "$T/help.pairs" "$T/man.pairs"
awk '{ print $2 }' "$T/help.pairs" | sort -u >"$T/help.opts"
# docs/options.md's table: one row per option ("| `name=..." or "| `flag`")
grep -o '^| `[a-z_]*=\?' "$SFS_ROOT/docs/options.md" | sed 's/^| `//' | sort -u >"$T/doc.opts"
check "docs/options.md: a row for every option of --help, and no other" \
	same_lists "$T/help.opts" "$T/doc.opts"
grep -o '(layout=[a-z]*)' "$T/help" | sed 's/(layout=\(.*\))/\1/' | sort >"$T/help.layouts"
check "--help names the four layouts" test "$(wc -l <"$T/help.layouts")" -eq 4
layouts_in_man() {
	local l
	for l in $(cat "$T/help.layouts"); do
		grep -qx "\.B $l" "$MAN/samplefs.1" || { echo "    layout $l not described"; return 1; }
	done
}
check "samplefs.1 describes every layout" layouts_in_man
check "samplefs.1 documents -f -d -s --help --version" \
	in_page "$MAN/samplefs.1" -f -d -s --help --version

# ---- the tools' options against their pages ----
INSPECT=$BUILD_DIR/samplefs-inspect DOWNLOAD=$BUILD_DIR/samplefs-download
mapfile -t insp_flags < <("$INSPECT" 2>&1 | grep -o -- '--[a-z-]*\|-o' | sort -u)
mapfile -t insp_keys < <(grep -o 'strcmp(kv, "[a-z_]*")' "$SFS_ROOT/tools/inspect/samplefs-inspect.c" |
			 sed 's/.*"\(.*\)")/\1/' | sort -u)
check "samplefs-inspect: usage and -o keys parsed (the parse works)" \
	test "${#insp_flags[@]}" -ge 3 -a "${#insp_keys[@]}" -ge 15
check "samplefs-inspect.1: every option and -o key" in_page "$MAN/samplefs-inspect.1" \
	"${insp_flags[@]}" "${insp_keys[@]}"
mapfile -t dl_flags < <("$DOWNLOAD" --help | grep -o -- '\[--\?[a-z][a-z-]*' | tr -d '[' | sort -u)
check "samplefs-download: usage parsed (the parse works)" test "${#dl_flags[@]}" -ge 9
check "samplefs-download.1: every option of --help" in_page "$MAN/samplefs-download.1" \
	"${dl_flags[@]}" --help --jobs --quiet

# ---- every page: lint and render ----
lint() {
	local out
	out=$(mandoc -Tlint -W warning "$1" 2>&1) || { echo "    $out"; return 1; }
	out=$(groff -man -Tutf8 -ww -z "$1" 2>&1)
	[ -z "$out" ] || { echo "    $out"; return 1; }
	man -l "$1" 2>/dev/null | grep -q '^NAME' || { echo "    man -l: no NAME"; return 1; }
}
for p in "$MAN"/*.1; do
	check "${p##*/}: mandoc -Tlint, groff -ww, man -l" lint "$p"
done
check "a planted roff error fails the lint" sh -c \
	"printf '.TH X 1\n.SH NAME\nx\n.BI\n.foo\n' > '$T/bad.1'; ! mandoc -Tlint -W warning '$T/bad.1' >/dev/null 2>&1"

# ---- bash completion, called as bash would ----
# comp FUNC WORD...: COMPREPLY, one a line, completing the last WORD
comp() {
	bash -c '. "$1"; f=$2; shift 2
		COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); COMP_LINE="$*"; COMP_POINT=${#COMP_LINE}
		COMPREPLY=(); $f; printf "%s\n" "${COMPREPLY[@]}"' sh "$COMP" "$@" | sort
}
comp _samplefs samplefs -o '' | grep -v '^allow_other$\|^allow_root$\|^auto_unmount$' >"$T/comp.opts"
check "completion: -o gives exactly --help's options, '=' where they take a value" \
	same_lists "$T/help.opts" "$T/comp.opts"
comp _samplefs samplefs -o quiet,layout= | sed 's/^quiet,layout=//' >"$T/comp.layouts"
check "completion: layout= after a comma gives --help's layouts" \
	same_lists "$T/help.layouts" "$T/comp.layouts"
# bash split at '=' (its default COMP_WORDBREAKS): the word is what follows it
split_layout() {
	bash -c '. "$1"; COMP_WORDS=(samplefs -o layout = np); COMP_CWORD=4
		COMP_LINE="samplefs -o layout=np"; COMP_POINT=${#COMP_LINE}
		_samplefs; printf "%s\n" "${COMPREPLY[@]}"' sh "$COMP"
}
check "completion: layout=np split by COMP_WORDBREAKS gives npy" test "$(split_layout)" = npy
mkdir -p "$T/c/srcdir" "$T/c/mntdir"
: >"$T/c/srcfile"
check "completion: SOURCE gives files and directories" \
	test "$(comp _samplefs samplefs "$T/c/s" | tr '\n' ' ')" = "$T/c/srcdir $T/c/srcfile "
check "completion: MOUNTPOINT gives directories only" \
	test "$(comp _samplefs samplefs -o quiet "$T/c/srcfile" "$T/c/" | tr '\n' ' ')" = "$T/c/mntdir $T/c/srcdir "
check "completion: nothing after MOUNTPOINT" \
	test -z "$(comp _samplefs samplefs "$T/c/srcfile" "$T/c/mntdir" "$T/c/")"
comp _samplefs_inspect samplefs-inspect -o '' | sed 's/=$//' >"$T/comp.insp"
printf '%s\n' "${insp_keys[@]}" >"$T/insp.keys"
check "completion: samplefs-inspect -o gives exactly the keys it parses" \
	same_lists "$T/insp.keys" "$T/comp.insp"
check "completion: samplefs-inspect's flags" \
	test "$(comp _samplefs_inspect samplefs-inspect - | tr '\n' ' ')" = "--checksums --save-index= --verify -o "
printf '%s\n' "${dl_flags[@]}" -h --help --jobs --quiet | sort -u >"$T/dl.flags"
comp _samplefs_download samplefs-download - >"$T/comp.dl"
check "completion: samplefs-download's options, exactly" same_lists "$T/dl.flags" "$T/comp.dl"
check "completion: samplefs-download --classes gives files" \
	test "$(comp _samplefs_download samplefs-download --classes "$T/c/srcf")" = "$T/c/srcfile"

# ---- make install / uninstall ----
case $SAMPLEFS_BUILD in
build) SAN=0 ;;
build-asan) SAN=1 ;;
*) SAN= ;;
esac
D=$T/dest
expected_files() {
	local c
	for c in samplefs samplefs-inspect samplefs-download samplefs-stat; do
		[ -e "$BUILD_DIR/$c" ] || continue
		echo "./usr/bin/$c"
		echo "./usr/share/man/man1/$c.1"
		echo "./usr/share/bash-completion/completions/$c"
	done | sort
}
installed_ok() {
	(cd "$D" && find . -type f | sort) >"$T/installed"
	expected_files >"$T/expected"
	same_lists "$T/expected" "$T/installed" || return 1
	cmp -s "$D/usr/bin/samplefs" "$SAMPLEFS" &&
		cmp -s "$D/usr/share/man/man1/samplefs.1" "$MAN/samplefs.1" &&
		test -x "$D/usr/bin/samplefs-inspect"
}
if [ -n "$SAN" ]; then
	check "make install DESTDIR= PREFIX=/usr" \
		make -s -C "$SFS_ROOT" install SAN="$SAN" BUILD="$SAMPLEFS_BUILD" DESTDIR="$D" PREFIX=/usr
	check "installs exactly the commands, man pages and completions" installed_ok
	: >"$D/usr/bin/other"	# someone else's file stays
	check "make uninstall" \
		make -s -C "$SFS_ROOT" uninstall BUILD="$SAMPLEFS_BUILD" DESTDIR="$D" PREFIX=/usr
	check "uninstall removes exactly them" \
		test "$(cd "$D" && find . -type f)" = ./usr/bin/other
else
	echo "skip - make install: build $SAMPLEFS_BUILD has no make flags here"
fi

# ---- systemd units, verified offline ----
# verify UNIT...: systemd-analyze verify passes and says nothing (an
# unknown key is only a warning, with status 0)
verify() {
	local out
	out=$(cd "$(dirname "$1")" && SYSTEMD_LOG_LEVEL=warning timeout 60 \
		systemd-analyze verify --man=no "$@" 2>&1) || { echo "    $out"; return 1; }
	[ -z "$out" ] || { echo "    $out"; return 1; }
}
if command -v systemd-analyze >/dev/null; then
	check "mnt-imagenet.mount and .automount pass systemd-analyze verify" \
		verify "$EX/mnt-imagenet.mount" "$EX/mnt-imagenet.automount"
	mkdir -p "$T/bad"
	sed 's/^Type=/Typ=/' "$EX/mnt-imagenet.mount" >"$T/bad/mnt-imagenet.mount"
	refused() { ! verify "$@" >/dev/null; }
	check "a planted unknown key fails the check" refused "$T/bad/mnt-imagenet.mount"
	sed 's|^Where=.*|Where=/mnt/other|' "$EX/mnt-imagenet.mount" >"$T/bad/mnt-imagenet.mount"
	check "a planted Where= that is not the unit's name fails it" refused "$T/bad/mnt-imagenet.mount"
	GEN=/lib/systemd/system-generators/systemd-fstab-generator
	mkdir -p "$T/gen"
	check "the fstab line generates an automount" sh -c \
		"SYSTEMD_FSTAB='$EX/fstab' SYSTEMD_LOG_LEVEL=err '$GEN' '$T/gen' '$T/gen' '$T/gen' &&
		 test -e '$T/gen/mnt-imagenet.automount' -a -e '$T/gen/mnt-imagenet.mount'"
	check "the generated units pass systemd-analyze verify" \
		verify "$T/gen/mnt-imagenet.mount" "$T/gen/mnt-imagenet.automount"
else
	echo "skip - systemd-analyze missing"
fi

# ---- the examples' options through mount(8) and mount.fuse3 ----
# mount(8) resets PATH for its helpers, so in a private mount namespace the
# build directory is bound over /usr/local/bin (in the default PATH), as
# test_daemon.sh does; the daemon is then the one mount.fuse3 starts
export ASAN_OPTIONS="${ASAN_OPTIONS:-}:log_path=$T/asan-mount"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-}:log_path=$T/asan-mount"
"$PY" -c 'import numpy as np, sys
rng = np.random.default_rng(19)
np.save(sys.argv[1] + "/a.npy", rng.integers(0, 256, (5, 7), dtype=np.uint8))' "$T/c/srcdir"
M=$T/m
mkdir -p "$M"
SFS_MOUNTS+=("$M")
# serves_rows: every row file of the mount is np.save(a[i]) (numpy the oracle)
serves_rows() {
	"$PY" - "$T/c/srcdir/a.npy" "$M/a" <<'PY'
import io, os, sys
import numpy as np
a = np.load(sys.argv[1])
names = sorted(os.listdir(sys.argv[2]))
assert names == ["%06d.npy" % i for i in range(len(a))], names
for i, n in enumerate(names):
    want = io.BytesIO(); np.save(want, a[i])
    assert open(os.path.join(sys.argv[2], n), "rb").read() == want.getvalue(), n
PY
}
export -f serves_rows
export T M PY
in_ns() {
	unshare -m --propagation private bash -c '
		mount --bind "$1" /usr/local/bin || exit 1
		shift
		trap "fusermount3 -u \"$M\" 2>/dev/null" EXIT
		"$@" || exit 1
		grep -q " $M fuse.samplefs ro," /proc/mounts || { echo "    not mounted ro"; exit 1; }
		serves_rows; rc=$?
		fusermount3 -u "$M" || rc=1
		exit $rc' bash "$BUILD_DIR" "$@"
}
# the example's options, with this test's paths and layout=npy for its
# ImageNet-only shard_size=
adapt() {
	sed -e "s|/data/imagenet|$T/c/srcdir|; s|/mnt/imagenet|$M|" \
	    -e "s|index_dir=/var/cache/samplefs|index_dir=$T/idx|; s|shard_size=10000|layout=npy|"
}
grep -v '^#' "$EX/fstab" | adapt >"$T/fstab"
unit_opts=$(sed -n 's/^Options=//p' "$EX/mnt-imagenet.mount" | adapt)
if unshare -m true 2>/dev/null; then
	check "the fstab example mounts via mount -T, read-only, numpy's bytes" \
		in_ns mount -T "$T/fstab" "$M"
	check "the .mount unit's Options= mount via mount -t fuse.samplefs" \
		in_ns mount -t fuse.samplefs "$T/c/srcdir" "$M" -o "$unit_opts"
	check "the fstab example kept its generic options" \
		grep -q 'nofail,noauto,x-systemd.automount,x-systemd.idle-timeout' "$T/fstab"
else
	echo "skip - mount(8) tests: no unshare -m here"
fi
# every generic option mount(8), fstab and systemd may pass, at once (those
# libfuse takes, and those fs/opts.c ignores), and an unknown one refused
GENERIC=rw,ro,dev,nodev,suid,nosuid,exec,noexec,sync,async,dirsync,atime,noatime,diratime
GENERIC=$GENERIC,nodiratime,relatime,norelatime,strictatime,nostrictatime,lazytime,nolazytime
GENERIC=$GENERIC,iversion,noiversion,mand,nomand,silent,loud,defaults,auto,noauto,user,nouser
GENERIC=$GENERIC,users,owner,group,_netdev,nofail,comment=x,x-systemd.automount,x-mount.mkdir
check "samplefs takes every generic mount option" \
	sfs_mount "$T/c/srcdir" "$T/g" -o "layout=npy,$GENERIC"
check "  and serves numpy's bytes" env M="$T/g" bash -c serves_rows
check "  unmounts" sfs_umount "$T/g"
check "an unknown option is still refused" \
	expect_fail "unknown option" "$SAMPLEFS" -f -o layout=npy,nosuchoption "$T/c/srcdir" "$T/g"
check "nothing left mounted" sh -c "! grep -q ' $M fuse' /proc/mounts"
check "no sanitizer report from the mount.fuse3 daemons" \
	sh -c "! cat '$T'/asan-mount* 2>/dev/null | grep -q ."
sfs_done
