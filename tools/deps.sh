#!/usr/bin/env bash
# Installs the Debian packages samplefs needs to build, test, demo and bench,
# when they are missing and we are root.  Prints what it installs; silent otherwise.
set -euo pipefail
pkgs=(build-essential pkg-config libfuse3-dev fuse3 zlib1g-dev libarchive-dev
      libcurl4-openssl-dev libcriterion-dev python3-numpy python3-scipy python3-pil
      python3-torch python3-torchvision squashfuse squashfs-tools archivemount
      util-linux-extra	# fincore: the tests check that evicted pages are gone
      rsync	# test_messages.sh: rsync -aX from a mount
      zip unzip	# test_zip.sh: Info-ZIP makes zips, and unzip's extraction is the oracle
      libexpat1-dev	# bucket listings (core/io/http/bucketlist.c)
      libssl-dev	# samplefs-download's MD5 and base64 (core/io/download.c, dlnames.c):
			# OpenSSL's libcrypto, loaded anyway by Debian's libcurl (OpenSSL flavour)
      libisal-dev	# ISA-L's igzip inflates gzip sources' spans (core/io/codecs/zgzip.c)
      isal pigz tabix python3-indexed-gzip
      python3-matplotlib	# tools/bench/charts.py: `make bench` draws docs/bench/*.png
				# (tests/integration/test_charts.sh checks them)
      rclone	# tools/bench/bucketbench.sh: rclone mount of the exploded objects, the bench anchor
      python3-fusepy	# tools/bench/gzbench.sh: ratarmount 1.3 run from its source
			# (RATARMOUNT_SRC) on Debian's fusepy (libfuse2 comes with it)
			# and python3-indexed-gzip, its gzip backend here
			# test_gzip.sh and tools/bench/gzbench.sh: igzip -dc (the
			# bench's anchor), pigz and bgzip (tabix) make the fixtures,
			# indexed_gzip is the bench's zran-based reader to compare with
      liblzma-dev libzstd-dev libbz2-dev
			# xz, zstd and bzip2 sources (core/io/codecs/zxz.c, zzstd.c, zbz2.c)
      xz-utils zstd bzip2 pbzip2 pixz
			# tests/integration/test_zcodecs.sh and test_zcodecs.c compress
			# with the real tools (Debian's zstd package has pzstd too)
      ncompress lz4 lzip lzop libarchive-tools
			# test_zdamage.sh: tars in compressions samplefs refuses, made
			# by their tools (compress, lz4, lzip, lzop; lzma is xz-utils'),
			# and bsdtar, the oracle of an empty archive (a 0-byte .tar)
      swift swift-proxy swift-object swift-container swift-account
			# tests/integration/swift_lib.sh: Swift's s3api as the S3 store
      slurm-wlm munge	# tests/integration/test_slurm.sh: a single-node Slurm cluster
			# runs mount-examples/slurm/'s job array
      nginx openssl curl	# HTTP(S) sources: tests/integration/http_lib.sh serves
				# fixtures with nginx over TLS (openssl makes the certificate)
      mandoc groff-base	# test_docs.sh: mandoc -Tlint and groff -ww check the man pages
      debhelper lintian	# test_deb.sh: dpkg-buildpackage builds the .deb (debian/),
				# lintian checks it
      clang libclang-rt-14-dev)	# libFuzzer targets (make fuzz, make test): Debian clang 14
					# and its sanitizer and libFuzzer runtimes (a Recommends)
missing=()
for p in "${pkgs[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
if [ "$(id -u)" != 0 ]; then
	echo "samplefs: missing packages: ${missing[*]} (run as root, or: sudo apt-get install ${missing[*]})" >&2
	exit 1
fi
echo "samplefs: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}"
