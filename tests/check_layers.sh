#!/usr/bin/env bash
# check_layers.sh - the layering of samplefs, checked on the source text:
#
#  1. Source bytes are read in one place, core/io.  No file in core/ outside
#     core/io, in fs/ or in tools/ (but tools/bench, rule 5) calls the
#     system's file functions (open, read, stat, mmap, readdir, realpath,
#     readlink, fopen, zlib's gzopen, libarchive's open by name, any
#     libcurl curl_* call, ...): formats, indexes, layouts, the daemon and
#     samplefs-inspect read, stat, list and name sources only through
#     core/io/source.h.  The exceptions are single calls, each named by its
#     file, the function it is in and the function it calls (CALLS below),
#     each on something samplefs owns (index files and their directory, the
#     log file, /dev/fuse, the mount point, the daemon's own pipes), never
#     on a source; a listed call no longer in the code fails too, so the
#     list stays as narrow as the code.
#  2. Includes go downwards: io < formats < index < layouts, each naming
#     its layer ("formats/tar.h"); a file in core/ includes its own layer
#     or lower ones.  log.h, options.h, clock.h, bytes.h, decimal.h,
#     search.h and hash.h, at the top of core/, may be included anywhere, and include
#     nothing above io.  fs/ and tools/ sit above core/ and may include any of it.
#  3. A core/ header is included with quotes, everywhere (core/, fs/,
#     tools/, tests/): #include <layouts/x.h> finds it too (-Icore) and
#     would pass rule 2 unseen.
#  4. No call upward: a file in core/ neither calls nor declares a function
#     defined (not static) in a higher layer, as a prototype of its own
#     would let it do without the include rule 2 checks.  The functions of
#     a layer are those whose definitions start a line in its .c files;
#     top-level files count as io here.
#  5. tools/bench holds the benchmark's and the soak's readers of a mounted
#     tree and a floor file system: they open files of a mount, never a
#     source, and include no core/ header (they stand where a user's
#     program stands).
#  6. No include circle between modules of core/ (a module is x.c with
#     x.h; a header with no .c of its name, such as backend.h, is part of
#     each module that includes it): who builds or loads a thing comes
#     after what it builds on.
#  7. No call circle between the modules of core/: a file that calls a
#     function another file of core/ defines (not static) stands above it,
#     so two files never call each other, however far round (the seams of
#     a module split by size show up here).  A module that needs its
#     caller's help takes it as function pointers it is handed (zrun.c's
#     hooks).  A circle not yet cut is listed in CIRCLES below with why,
#     its files counted as one; a listed circle that is gone fails too.
#
# Comments and string literals are left out before matching calls.  Then
# --self-test (run after the checks unless SFS_LAYERS_CHILD is set) plants
# one violation of each kind in a temporary copy of the tree and checks
# that the script fails naming that rule: the catching is tested too.
# Run by tests/run_all.sh (one result per check in $SFS_RESULTS when set);
# alone: `bash tests/check_layers.sh`, exit status 0 when all hold.
set -u
cd "$(dirname "$0")/.."

# "FILE FUNCTION CALLED" -> why that call is on samplefs's own files
declare -A CALLS=(
	["core/index/index.c index_dir_remove_private opendir"]="the private index directory samplefs made (mkdtemp)"
	["core/index/index.c index_dir_remove_private readdir"]="the private index directory samplefs made (mkdtemp)"
	["core/index/index.c sweep_leftovers opendir"]="the index directory: temporary index files of dead builds"
	["core/index/index.c sweep_leftovers readdir"]="the index directory: temporary index files of dead builds"
	["core/index/index.c sweep_leftovers openat"]="a temporary index file, locked to see that its writer is gone"
	["core/index/index.c sweep_leftovers fstat"]="a temporary index file, compared with its name"
	["core/index/index.c sweep_leftovers fstatat"]="a temporary index file, compared with its name"
	["core/index/checkpoint.c create open"]="the checkpoint this build writes, next to its index"
	["core/index/checkpoint.c reopen fopen"]="the checkpoint of this index, replayed"
	["core/index/checkpoint.c reopen open"]="the checkpoint of this index, appended to"
	["core/index/checkpoint.c ckpt_open fopen"]="the checkpoint of this index, checked"
	["core/index/checkpoint.c ckpt_check_file fopen"]="a checkpoint file (the fuzz target's)"
	["core/index/index.c create_tmp fstat"]="the temporary index file this build writes"
	["core/index/index.c create_tmp stat"]="the temporary index file this build writes"
	["core/index/index.c fsync_dir_of open"]="the index directory, synced after the rename"
	["core/index/index_map.c index_map_open open"]="an index file"
	["core/index/index_map.c index_map_open fstat"]="an index file"
	["core/index/spill.c rd_load pread"]="a scratch file of a build's sorted runs, made and unlinked by spill.c in the index directory"
	["core/index/index_map.c index_map_open mmap"]="an index file, mapped"
	["core/index/lock.c lock_create open"]="an index's build lock, created (O_EXCL) in the index directory"
	["core/index/lock.c lock_look open"]="an index's build lock, opened to see its holder and heartbeat"
	["core/index/lock.c lock_look fstat"]="an index's build lock: its heartbeat (mtime) and inode"
	["core/index/lock.c lock_look read"]="an index's build lock: who holds it, for the waiters' message"
	["core/log.c sfs_log_open open"]="the log file (-o log=FILE), written by samplefs"
	["fs/devpoll.c dev_splice_send splice"]="libfuse's splice of a reply into /dev/fuse, from a descriptor of source_fd (core/io), checked by source_check first"
	["fs/devpoll.c devpoll_read read"]="/dev/fuse: a request read from the device"
	["fs/main.c is_mount_root stat"]="the mount point's parent"
	["fs/main.c check_mountpoint statx"]="the mount point"
	["fs/main.c check_fuse_device access"]="/dev/fuse"
	["tools/stat/samplefs-stat.c sample open"]="a mount's stats.json (fs/ctl.h), samplefs's own"
	["tools/stat/samplefs-stat.c sample read"]="a mount's stats.json (fs/ctl.h), samplefs's own"
	["tools/stat/samplefs-stat.c stats_path access"]="a mount's stats.json: under which control directory name"
	["fs/main.c wait_for_child read"]="the daemon's signalfd and its child's pipe"
	["fs/main.c stop_pending read"]="the daemon's signalfd: stop signals pending with the child's byte"
	["fs/main.c detach open"]="/dev/null, the daemon's stdio"
	["fs/main.c main access"]="the mount point (fstab's 'mount point does not exist')"
	["fs/readahead.c readahead_path fopen"]="/proc/self/mountinfo: the mount's device, for its read-ahead window"
	["fs/readahead.c readahead_set open"]="/sys/class/bdi/MAJ:MIN/read_ahead_kb of the mount samplefs made (-o readahead)"
	["fs/ops.c pipe_max_size fopen"]="/proc/sys/fs/pipe-max-size: the largest reply libfuse can splice"
)
# "FILE..." (globs) of core/ modules that still call each other -> why,
# until cut
# (none now: the last ones, the tar index's build stages calling back
# into tarindex_build.c and its zip reads calling back into tarindex.c,
# were cut by tarindex_ents.c, the builder's hooks, and the zip section's
# reads moving into tarindex.c)
declare -A CIRCLES=()
FUNCS='open|open64|openat|openat2|creat|pread|pread64|preadv|preadv2|read|readv|stat|stat64|fstat|fstat64|lstat|fstatat|statx|mmap|mmap64|opendir|fdopendir|readdir|readdir64|scandir|fopen|freopen|access|faccessat|realpath|readlink|readlinkat|posix_fadvise|sendfile|splice|gzopen|gzopen64|gzdopen|archive_read_open_filename|archive_read_open_filenames|archive_read_open_fd|archive_read_open_FILE|curl_[A-Za-z0-9_]+'

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

layer_of() {	# FILE: io, formats, index, layouts; top (core/*.c); fs, tools, bench
	case $1 in
	core/*/*) local d=${1#core/}; echo "${d%%/*}" ;;
	core/*) echo top ;;
	tools/bench/*) echo bench ;;
	tools/*) echo tools ;;
	fs/*) echo fs ;;
	*) echo other ;;
	esac
}

RULE1="no file outside core/io (core/, fs/, tools/) opens, reads, stats, lists, maps or names a file itself (but the calls listed)"
RULE2="every #include in core/ goes downwards (io < formats < index < layouts)"
RULE3="core/ headers are included with quotes (core/, fs/, tools/, tests/)"
RULE4="no file in core/ calls or declares a function of a higher layer"
RULE5="tools/bench includes no core/ header"
RULE6="no include circle between the modules of core/"
RULE7="no call circle between the modules of core/ (but the circles listed)"

# The code of FILES, one line each as "FILE<TAB>LINE<TAB>FUNCTION<TAB>CODE"
# without comments and string literals (FUNCTION: the one whose definition
# last started a line, "" at file scope); and, into $2, "FILE<TAB>NAME
# <TAB>static|global" for each function defined.
corpus() {
	local defs=$1; shift
	awk -v sq="'" -v defs="$defs" '
	BEGIN { charlit = sq "(\\\\.|[^" sq "\\\\])" sq }
	FNR == 1 { incomment = 0; fn = "" }
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
		# a definition starts a line: "[static ...] type name(" not ending in ";"
		if (out ~ /^[A-Za-z_]/ && out !~ /^(typedef|extern)[ \t]/ && index(out, "(") &&
		    out !~ /;[ \t]*$/ && out !~ /=/) {
			name = out
			sub(/\(.*/, "", name)
			sub(/^.*[^A-Za-z0-9_]/, "", name)
			if (name != "" && name !~ /^[A-Z0-9_]+$/) {	# not a macro such as SFS_PRINTF(4, 5)
				fn = name
				print FILENAME "\t" name "\t" (out ~ /^static[ \t]/ ? "static" : "global") > defs
			}
		} else if (out ~ /^}/) {
			fn = ""
		}
		print FILENAME "\t" FNR "\t" fn "\t" out
	}' "$@"
}

# Rules 1 and 4 on the corpus: every "name(" not after ".", "->" or a word
# character; prints "1 FILE LINE FUNCTION NAME" (a file function) and
# "4 FILE LINE NAME LAYER" (a function of a higher layer) and "7 FILE LINE
# NAME DEFINER" (a call from one file of core/ to a function another
# defines).
calls() {
	local code=$1 defs=$2
	awk -F'\t' -v funcs="^($FUNCS)\$" '
	function rank(l) { return l == "io" ? 1 : l == "formats" ? 2 : l == "index" ? 3 : l == "layouts" ? 4 : 0 }
	function layer(f,   d) {
		if (f ~ /^core\/[^\/]+\//) { d = substr(f, 6); sub(/\/.*/, "", d); return d }
		if (f ~ /^core\//) return "top"
		if (f ~ /^tools\/bench\//) return "bench"
		if (f ~ /^tools\//) return "tools"
		if (f ~ /^fs\//) return "fs"
		return "other"
	}
	FNR == NR {
		own[$1 SUBSEP $2] = 1
		if ($3 == "global" && $1 ~ /\.c$/) { def[$2] = layer($1); where[$2] = $1 }
		next
	}
	{
		f = $1; L = layer(f); code = $0
		sub(/^[^\t]*\t[^\t]*\t[^\t]*\t/, "", code)	# the code holds tabs too
		io_rule = (L != "io" && L != "bench" && L != "other")
		max = L == "top" ? 1 : rank(L)
		while (match(code, /[A-Za-z_][A-Za-z0-9_]*[ \t]*\(/)) {
			before = RSTART > 1 ? substr(code, RSTART - 1, 1) : ""
			name = substr(code, RSTART, RLENGTH)
			sub(/[ \t]*\($/, "", name)
			code = substr(code, RSTART + RLENGTH)
			if (before ~ /[A-Za-z0-9_.>$]/)
				continue
			if (io_rule && name ~ funcs)
				print "1\t" f "\t" $2 "\t" $3 "\t" name
			if (max && (name in def) && rank(def[name]) > max && !((f SUBSEP name) in own))
				print "4\t" f "\t" $2 "\t" name "\t" def[name]
			if (f ~ /^core\/.*\.c$/ && (name in where) && where[name] ~ /^core\// &&
			    where[name] != f && !((f SUBSEP name) in own))
				print "7\t" f "\t" $2 "\t" name "\t" where[name]
		}
	}' "$defs" "$code"
}

# Rules 2, 3, 5 and the module graph of rule 6, from the include lines
# ("FILE:LINE:TEXT", file $1) and the core/ files (stdin): prints "RULE
# <TAB>message" for each violation and "E<TAB>MODULE MODULE" for each
# module of core/ including another.  A header with no .c of its name
# (backend.h, http_int.h) is no module: what it includes counts for each
# module that includes it.
includes() {
	awk -v incs="$1" '
	function rank(l) { return l == "io" ? 1 : l == "formats" ? 2 : l == "index" ? 3 : l == "layouts" ? 4 : 0 }
	function norm(p,   n, i, k, part, out) {	# a path with "x/.." and "." taken out
		n = split(p, part, "/"); k = 0
		for (i = 1; i <= n; i++) {
			if (part[i] == "." || part[i] == "") continue
			if (part[i] == ".." && k && out[k] != "..") { k--; continue }
			out[++k] = part[i]
		}
		p = ""
		for (i = 1; i <= k; i++) p = p (i > 1 ? "/" : "") out[i]
		return p
	}
	function mod(f) { sub(/\.[ch]$/, "", f); return f }
	function deps(m, f,   i, n, h, list) {	# the modules f includes, for m
		n = split(inc[f], list, " ")
		for (i = 1; i <= n; i++) {
			h = list[i]
			if ((mod(h) ".c") in exists) {
				if (mod(h) != m) print "E\t" m " " mod(h)
			} else if (!((m SUBSEP h) in seen)) {
				seen[m, h] = 1
				deps(m, h)
			}
		}
	}
	{ exists[$0] = 1; next }
	END {
		while ((getline line < incs) > 0) {
			f = line; sub(/:.*/, "", f)
			rest = substr(line, length(f) + 2)
			n = rest; sub(/:.*/, "", n)
			text = substr(rest, length(n) + 2)
			angle = text ~ /^[ \t]*#[ \t]*include[ \t]*</
			h = text
			sub(/^[^"<]*["<]/, "", h); sub(/[">].*/, "", h)
			dir = f; sub(/\/[^\/]*$/, "", dir)
			if (angle) {
				if (("core/" h) in exists)
					print "3\t" f ":" n ": #include <" h ">   <- a core/ header: #include \"" h "\""
				continue
			}
			# what a quoted include finds: beside the file, else through -Icore
			target = (norm(dir "/" h) in exists) ? norm(dir "/" h) : (("core/" h) in exists) ? "core/" h : ""
			if (f ~ /^tools\/bench\// && (target ~ /^core\// || norm(dir "/" h) ~ /^core\//))
				print "5\t" f ":" n ": #include \"" h "\"   <- tools/bench reads mounts, not core/"
			if (f !~ /^core\//)
				continue
			if (target ~ /^core\//) inc[f] = inc[f] " " target
			L = f; sub(/^core\//, "", L)
			L = L ~ /\// ? substr(L, 1, index(L, "/") - 1) : "top"
			if (h == "log.h" || h == "options.h" || h == "clock.h" || h == "bytes.h" || h == "decimal.h" || h == "search.h" || h == "hash.h")
				continue
			to = h ~ /\// ? substr(h, 1, index(h, "/") - 1) : ""
			why = ""
			if (!rank(to))
				why = "names no layer (io/, formats/, index/, layouts/)"
			else if (L == "top" && rank(to) > 1)
				why = "top-level files may include io/ only"
			else if (L != "top" && rank(to) > rank(L))
				why = "includes upwards (" L " -> " to ")"
			if (why != "")
				print "2\t" f ":" n ": #include \"" h "\"   <- " why
		}
		for (f in exists)
			if (f ~ /^core\// && (mod(f) ".c") in exists)
				deps(mod(f), f)
	}'
}

# Rule 7 on $1/calls: the graph of calls between core/ files, each listed
# circle counted as one node, must have no loop (tsort names one); and
# each listed circle must still be one (its files' own calls, alone, loop).
calls_circles() {
	local tmp=$1 glob bad=0 node f

	in_list() {	# FILE "GLOB...": 0 if a glob of the list matches
		local g
		for g in $2; do
			# shellcheck disable=SC2053
			[[ $1 == $g ]] && return 0
		done
		return 1
	}
	node() {	# FILE: its node (a listed circle, or itself)
		local g
		for g in "${!CIRCLES[@]}"; do
			in_list "$1" "$g" && { echo "${g// /+}"; return; }
		done
		echo "$1"
	}
	declare -A nodes=()
	for f in $(awk -F'\t' '$1 == 7 { print $2; print $5 }' "$tmp/calls" | sort -u); do
		nodes[$f]=$(node "$f")
	done
	awk -F'\t' '$1 == 7 { print $2 " " $5 }' "$tmp/calls" | sort -u > "$tmp/cedges"
	while read -r a b; do
		[ "${nodes[$a]}" != "${nodes[$b]}" ] && echo "${nodes[$a]} ${nodes[$b]}"
	done < "$tmp/cedges" > "$tmp/cgraph"
	if ! tsort "$tmp/cgraph" > /dev/null 2> "$tmp/cloop"; then
		bad=1
		sed 's/^tsort: [^:]*: input contains a loop:/    a call circle:/; s/^tsort: /    /' "$tmp/cloop"
		# who calls what, among the files named: the seam to cut
		awk -F'\t' 'FNR == NR { if ($0 ~ /input contains a loop/) next; sub(/^tsort: /, ""); in_loop[$1] = 1; next }
			$1 == 7 && in_loop[$2] && in_loop[$5] { print "    " $2 " -> " $5 ": " $4 }' \
			"$tmp/cloop" "$tmp/calls" | sort -u | head -40
		echo "    (a module that needs its caller's help takes function pointers: zrun_hooks)"
	fi
	for glob in "${!CIRCLES[@]}"; do
		printf '# call circle listed: %s: %s\n' "$glob" "${CIRCLES[$glob]}"
		while read -r a b; do
			in_list "$a" "$glob" && in_list "$b" "$glob" && echo "$a $b"
		done < "$tmp/cedges" > "$tmp/cin"
		if tsort "$tmp/cin" > /dev/null 2>&1; then
			bad=1
			echo "    listed call circle $glob: no longer a circle: take it off the list"
		fi
	done
	return $bad
}

check() {
	local tmp files code defs bad1=0 bad4=0 bad6=0 bad7=0 failed=
	local kind f n fn name key layer

	report() {	# RULE NAME: the lines of $tmp/inc for that rule, and its result
		local lines
		lines=$(grep "^$1"$'\t' "$tmp/inc" | cut -f2-)
		[ -n "$lines" ] && printf '    %s\n' "$lines" | sed '2,$s/^/    /'
		[ -n "$lines" ] && failed="$failed $1"
		result "$2" "$([ -n "$lines" ] && echo 1 || echo 0)"
	}

	tmp=$(mktemp -d "${TMPDIR:-/tmp}/sfs-layers.XXXXXX")
	code=$tmp/code defs=$tmp/defs
	files=$(find core fs tools -name '*.[ch]' | sort)
	if ! printf '%s\n' "$files" | grep -q '^core/'; then
		echo "no core/ sources here"; result "core/ sources found" 1; rm -rf "$tmp"; return 1
	fi
	# shellcheck disable=SC2086
	corpus "$defs" $files > "$code"
	calls "$code" "$defs" > "$tmp/calls"

	# ---- 1. file functions outside core/io ----
	for key in "${!CALLS[@]}"; do
		printf '# %s: %s\n' "$key" "${CALLS[$key]}"
	done | sort
	declare -A used=()
	while IFS=$'\t' read -r kind f n fn name; do
		[ "$kind" = 1 ] || continue
		if [ -n "${CALLS[$f $fn $name]:-}" ]; then
			used[$f $fn $name]=1
			continue
		fi
		bad1=1
		echo "    $f:$n: $name() in ${fn:-file scope}   <- a file function: use io/source.h (or list the call, if on samplefs's own file)"
	done < "$tmp/calls"
	for key in "${!CALLS[@]}"; do	# the list stays as narrow as the code
		if [ -z "${used[$key]:-}" ]; then
			bad1=1
			echo "    listed call $key: not in the code any more: take it off the list"
		fi
	done
	result "$RULE1" $bad1

	# ---- 2, 3, 5 and 6: includes ----
	grep -rn --include='*.[ch]' '^[[:space:]]*#[[:space:]]*include[[:space:]]*["<]' \
		core fs tools tests > "$tmp/includes"
	printf '%s\n' $files | grep '^core/' | includes "$tmp/includes" > "$tmp/inc"
	report 2 "$RULE2"
	report 3 "$RULE3"

	# ---- 4. no call upward ----
	while IFS=$'\t' read -r kind f n name layer; do
		[ "$kind" = 4 ] || continue
		bad4=1
		echo "    $f:$n: $name()   <- defined in core/$layer, above $(layer_of "$f"): include its header from above instead"
	done < "$tmp/calls"
	result "$RULE4" $bad4

	report 5 "$RULE5"

	# ---- 6. no include circle between modules ----
	grep '^E' "$tmp/inc" | cut -f2 > "$tmp/edges"
	if ! tsort "$tmp/edges" > /dev/null 2> "$tmp/loop"; then
		bad6=1
		sed 's/^tsort: [^:]*: input contains a loop:/    a circle:/; s/^tsort: /    /' "$tmp/loop"
	fi
	result "$RULE6" $bad6

	# ---- 7. no call circle between modules ----
	calls_circles "$tmp" || bad7=1
	result "$RULE7" $bad7

	rm -rf "$tmp"
	[ $((bad1 + bad4 + bad6 + bad7)) -eq 0 ] && [ -z "$failed" ]
}

# ---- the self-test: each kind of violation planted once is caught ----

# plant NAME FILE RULE TEXT: TEXT appended to FILE in a copy of the tree
# must make the script fail with FAIL on RULE; SED instead of TEXT as
# "sed:EXPR" edits the file in place.
PLANTS=(
	"angle include|core/formats/npy.c|$RULE3|#include <layouts/layout.h>"
	"angle include in fs/|fs/ops.c|$RULE3|#include <index/index.h>"
	"open in fs/|fs/ops.c|$RULE1|static int planted(const char *p) { return open(p, 0); }"
	"listing in fs/main.c|fs/main.c|$RULE1|static void planted(void) { opendir(\"/\"); }"
	"stat in tools/inspect|tools/inspect/samplefs-inspect.c|$RULE1|static int planted(const char *p) { struct stat st; return stat(p, &st); }"
	"gzopen in formats|core/formats/npy.c|$RULE1|static void *planted(const char *p) { return gzopen(p, \"rb\"); }"
	"readlink in layouts|core/layouts/layout_tar.c|$RULE1|static long planted(const char *p, char *b) { return readlink(p, b, 9); }"
	"curl in index|core/index/blockstore.c|$RULE1|static void *planted(void) { return curl_easy_init(); }"
	"open in index.c outside its listed calls|core/index/index.c|$RULE1|static int planted(const char *p) { return open(p, 0); }"
	"realpath of the source in index_path|core/index/index.c|$RULE1|sed:s/real = source_resolve(src);/real = realpath(src, NULL);/"
	"a call upward through a local prototype|core/formats/npy.c|$RULE4|int layout_open(const struct sfs_opts *o, struct layout *l);\\nstatic int planted(void)\\n{\\n\\treturn layout_open(0, 0);\\n}"
	"a prototype of a layout function in index|core/index/load.c|$RULE4|const struct layout_ops *layout_choose(const struct sfs_opts *o);"
	"a core header in tools/bench|tools/bench/readfiles.c|$RULE5|#include \"io/source.h\""
	"an include upwards|core/io/lru.c|$RULE2|#include \"formats/npy.h\""
	"an include circle|core/layouts/imagenet_index.c|$RULE6|#include \"layouts/imagenet_build.h\""
	"a call circle|core/io/source.c|$RULE7|int planted(void);\nint planted(void)\n{\n\treturn zsource_damage(0, 0);\n}"
	"a call circle far round|core/io/codecs/zrun.c|$RULE7|int planted(void);\nint planted(void)\n{\n\treturn zsource_damage(0, 0);\n}"
)

self_test() {
	local tmp p name file rule text out bad=0

	tmp=$(mktemp -d "${TMPDIR:-/tmp}/sfs-layers-self.XXXXXX")
	mkdir -p "$tmp/tests"
	cp -r core fs tools "$tmp/"
	cp tests/check_layers.sh "$tmp/tests/"
	mkdir -p "$tmp/tests/unit" && cp tests/unit/*.[ch] "$tmp/tests/unit/" 2>/dev/null
	run_copy() { (cd "$tmp" && SFS_LAYERS_CHILD=1 SFS_RESULTS= SFS_FAILURES= bash tests/check_layers.sh 2>&1); }
	if out=$(run_copy); then
		result "self-test: the copy of the tree passes unplanted" 0
	else
		printf '%s\n' "$out" | grep -v '^#' | sed 's/^/    /'
		result "self-test: the copy of the tree passes unplanted" 1
		rm -rf "$tmp"; return 1
	fi
	for p in "${PLANTS[@]}"; do
		IFS='|' read -r name file rule text <<<"$p"
		cp "$file" "$tmp/$file.orig"
		case $text in
		sed:*) sed -i "${text#sed:}" "$tmp/$file" ;;
		*) printf '\n%b\n' "$text" >> "$tmp/$file" ;;
		esac
		if cmp -s "$file" "$tmp/$file"; then
			echo "    plant '$name' changed nothing in $file"
			out=
		else
			out=$(run_copy)
		fi
		mv "$tmp/$file.orig" "$tmp/$file"
		if grep -qF "FAIL - $rule" <<<"$out"; then
			result "self-test: caught: $name" 0
		else
			bad=1
			printf '%s\n' "$out" | grep -v '^#' | sed 's/^/    /'
			result "self-test: caught: $name ($file)" 1
		fi
	done
	rm -rf "$tmp"
	return $bad
}

case ${1:-} in
--self-test) self_test ;;
"")	check; rc=$?
	if [ -z "${SFS_LAYERS_CHILD:-}" ]; then
		self_test || rc=1
	fi
	exit $rc ;;
*) echo "usage: $0 [--self-test]" >&2; exit 2 ;;
esac
