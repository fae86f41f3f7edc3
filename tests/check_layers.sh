#!/usr/bin/env bash
# check_layers.sh - the layering of core/, checked on the source text:
#
#  1. Source bytes are read in one place.  No file in core/ outside core/io
#     calls the system's file functions (open, read, stat, mmap, readdir,
#     fopen, libarchive's open by name, ...): formats, indexes and layouts
#     read, stat and list sources only through core/io/source.h.  The
#     files below are the exceptions, each for a file samplefs owns, never
#     a source.
#  2. Includes go downwards: io < formats < index < layouts, each naming
#     its layer ("formats/tar.h"); a file includes its own layer or lower
#     ones.  log.h and options.h, at the top of core/, may be included
#     anywhere, and include nothing above io.
#
# Comments and string literals are left out before matching.  Run by
# tests/run_all.sh (one result per check in $SFS_RESULTS when set); alone:
# `bash tests/check_layers.sh`, exit status 0 when both hold.
set -u
cd "$(dirname "$0")/.."

declare -A ALLOWED=(
	[core/index/index.c]="index files: written under a lock, renamed, mapped (samplefs's own files)"
	[core/log.c]="the log file (-o log=FILE), written by samplefs"
)
FUNCS='open|open64|openat|openat2|creat|pread|pread64|preadv|preadv2|read|readv|stat|stat64|fstat|fstat64|lstat|fstatat|statx|mmap|mmap64|opendir|fdopendir|readdir|readdir64|scandir|fopen|freopen|access|faccessat|realpath|posix_fadvise|sendfile|splice|archive_read_open_filename|archive_read_open_filenames|archive_read_open_fd|archive_read_open_FILE'

# The file's text without comments and string literals, line numbers kept.
code_of() {
	awk -v sq="'" '
	BEGIN { charlit = sq "(\\\\.|[^" sq "\\\\])" sq }
	{
		out = ""; line = $0
		gsub(charlit, sq sq, line)	# character literals: a double quote in one starts no string
		while (length(line)) {
			if (incomment) {
				e = index(line, "*/")
				if (!e) { line = ""; break }
				line = substr(line, e + 2); incomment = 0; continue
			}
			s = index(line, "/*"); d = index(line, "//"); q = index(line, "\"")
			first = 0
			if (s && (!first || s < first)) first = s
			if (d && (!first || d < first)) first = d
			if (q && (!first || q < first)) first = q
			if (!first) { out = out line; break }
			out = out substr(line, 1, first - 1)
			if (first == s) { line = substr(line, s + 2); incomment = 1 }
			else if (first == d) { line = "" }
			else {
				rest = substr(line, q + 1)
				out = out "\"\""
				line = match(rest, /^([^"\\]|\\.)*"/) ? substr(rest, RLENGTH + 1) : ""
			}
		}
		print out
	}' "$1"
}

layer_rank() {	# io 1, formats 2, index 3, layouts 4; top-level files 0
	case $1 in
	io) echo 1 ;; formats) echo 2 ;; index) echo 3 ;; layouts) echo 4 ;; *) echo 0 ;;
	esac
}

result() {	# NAME BAD: one line of results, and the name of a failure
	if [ "$2" -eq 0 ]; then
		echo "ok - $1"
		[ -n "${SFS_RESULTS:-}" ] && echo "1 0" >> "$SFS_RESULTS"
	else
		echo "FAIL - $1"
		[ -n "${SFS_RESULTS:-}" ] && echo "0 1" >> "$SFS_RESULTS"
		[ -n "${SFS_FAILURES:-}" ] && echo "check_layers: $1" >> "$SFS_FAILURES"
	fi
	return 0
}

files=$(find core -name '*.[ch]' | sort)
[ -n "$files" ] || { echo "no core/ sources here"; result "core/ sources found" 1; exit 1; }

# ---- 1. file functions outside core/io ----
bad_io=0
for f in $files; do
	case $f in core/io/*) continue ;; esac
	if [ -n "${ALLOWED[$f]:-}" ]; then
		echo "# $f may call them: ${ALLOWED[$f]}"
		continue
	fi
	hits=$(code_of "$f" | grep -nP "(?<![\\w.>\$])($FUNCS)\\s*\\(")
	if [ -n "$hits" ]; then
		bad_io=1
		printf '%s\n' "$hits" | sed "s|^|    $f:|;s|\$|   <- a file function: use io/source.h|"
	fi
done
result "no file in core/ outside core/io opens, reads, stats, lists or maps a file (but the listed exceptions)" $bad_io

# ---- 2. includes go downwards ----
bad_inc=0
for f in $files; do
	dir=${f#core/}
	layer=${dir%%/*}
	[ "$layer" = "$dir" ] && layer=top
	own=$(layer_rank "$layer")
	while IFS=: read -r n inc; do
		inc=${inc#*\"}
		inc=${inc%%\"*}
		case $inc in
		log.h|options.h) continue ;;
		*/*) to=${inc%%/*} ;;
		*) to=none ;;
		esac
		rank=$(layer_rank "$to")
		why=
		if [ "$to" = none ] || [ "$rank" -eq 0 ]; then
			why="names no layer (io/, formats/, index/, layouts/)"
		elif [ "$layer" = top ] && [ "$rank" -gt 1 ]; then
			why="top-level files may include io/ only"
		elif [ "$layer" != top ] && [ "$rank" -gt "$own" ]; then
			why="includes upwards ($layer -> $to)"
		fi
		if [ -n "$why" ]; then
			bad_inc=1
			echo "    $f:$n: #include \"$inc\"   <- $why"
		fi
	done < <(grep -n '^[[:space:]]*#[[:space:]]*include[[:space:]]*"' "$f")
done
result "every #include in core/ goes downwards (io < formats < index < layouts)" $bad_inc

[ $bad_io -eq 0 ] && [ $bad_inc -eq 0 ]
