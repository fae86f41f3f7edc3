# part_http.sh - make bench's part http, sourced by bench.sh (its helpers,
# $DATA, $LISTS and the results file are bench.sh's): mounts of parts A's
# and B's sources over HTTP against the local mounts.  Not run alone.
#
# Part A's and B's sources served by nginx (tests/integration/http_lib.sh:
# its own configuration, logs and pid file under $DATA/http, a free
# loopback port, one worker, `autoindex_format json`, one access-log line a
# request), mounted by URL and read as the local mounts are, local and HTTP
# alternating in each run; then 20 ms added per request by the fault proxy
# (tests/integration/fault_proxy.py, /__delay), since this kernel may have
# no netem (probed and noted).  The access log gives the requests each
# measurement sent.  The indexes of URLs go to $DATA/index/http, remade on
# every bench run (the URL, port included, names an index).

# http_warm [INDEX_DIR...]: the sources and indexes read once, so nginx and
# the local mount both read them from the page cache; no drop_caches: this
# part compares the network with the disk's page cache, not with the disk
http_warm() {
	local d
	cat_files "$DATA/qd-$QD_PER"/numpy_bitmap/* "$DATA/qd-$QD_PER"/sketchrnn/* \
		"$DATA/imagenet"/ILSVRC2012_*
	for d in "$@"; do
		cat_files "$d"/*
	done
}

# http_traffic KEY MARK NFILES: what nginx logged since MARK (samplefs
# unmounted first), per file read: data GETs (200/206) and their bytes
http_traffic() {
	local n b
	read -r n b < <(http_log_lines "$2" | awk -F'\t' '$1 == "GET" && $4 ~ /^20[06]$/ {
		n++; b += $5 } END { print n + 0, b + 0 }')
	[ -n "$n" ] || return 0
	rec "$1.gets_per_file" "$(awk -v n="$n" -v f="$3" 'BEGIN { printf "%.4f", n / f }')"
	[ "$n" -gt 0 ] &&
		rec "$1.kib_per_get" "$(awk -v n="$n" -v b="$b" 'BEGIN { printf "%.1f", b / n / 1024 }')"
	return 0
}

# cpu_per_file KEY NFILES: the daemon's CPU time (user + sys) so far, in
# microseconds per file: less noisy than files/s on a shared machine
cpu_per_file() {
	local t
	t=$(awk '{ print $14 + $15 }' "/proc/$FS_PID/stat" 2>/dev/null) || return 0
	[ -n "$t" ] && rec "$1.cpu_us" "$(awk -v t="$t" -v hz="$(getconf CLK_TCK)" -v n="$2" \
		'BEGIN { printf "%.1f", t / hz * 1e6 / n }')"
	return 0
}

# nginx_ticks: CPU clock ticks (user + sys) nginx's master and workers
# have used so far
nginx_ticks() {
	local p
	for p in "${HTTP_WORKER_PIDS[@]}" "$HTTP_PID"; do
		awk '{ print $14 + $15 }' "/proc/$p/stat" 2>/dev/null
	done | awk '{ t += $1 } END { print t + 0 }'
}

# http_read KEY LIST THREADS URL INDEX_DIR: a fresh mount of URL, one pass
# of LIST, its traffic, the daemon's CPU per file and nginx's (KEY.nginx_us:
# the server's side of each file, which shares the 2 cores); the daemon's
# VmHWM and RssAnon kept in HTTP_HWM and HTTP_ANON
http_read() {
	local mark t0
	samplefs_start "$4" "$5" || { fail "$1" "mount of $4 failed"; return 1; }
	mark=$(http_log_mark) || { fs_stop "$MNT"; return 1; }	# the pass's requests only
	t0=$(nginx_ticks)
	measure "$1" "$2" "$MNT" "$3" && cpu_per_file "$1" "$(wc -l <"$2")" &&
		rec "$1.nginx_us" "$(awk -v a="$t0" -v b="$(nginx_ticks)" -v hz="$(getconf CLK_TCK)" \
			-v n="$(wc -l <"$2")" 'BEGIN { printf "%.1f", (b - a) / hz * 1e6 / n }')"
	fs_stop "$MNT"; keep_max HTTP_HWM "$FS_HWM"; keep_max HTTP_ANON "$FS_ANON"
	http_traffic "$1" "$mark" "$(wc -l <"$2")"
}

local_read() {	# KEY LIST THREADS SOURCE INDEX_DIR
	samplefs_start "$4" "$5" || { fail "$1" "mount of $4 failed"; return 1; }
	measure "$1" "$2" "$MNT" "$3" && cpu_per_file "$1" "$(wc -l <"$2")"
	fs_stop "$MNT"
}

# http_mounts TAG URL INDEX_DIR: the first mount of URL (the index built
# from ranged GETs: time, requests, bytes), then RUNS remounts with the
# saved index, counting the data GETs each sends (the target is none) and
# its listings
http_mounts() {
	local tag=$1 url=$2 idx=$3 mark n b r gets lists
	rm -rf "$idx"
	mark=$(http_log_mark) || return 1
	samplefs_start "$url" "$idx" || { fail "http.$tag.mount1_s" "mount of $url failed"; return 1; }
	rec "http.$tag.mount1_s" "$FS_SECS"
	fs_stop "$MNT"; keep_max HTTP_BUILD_HWM "$FS_HWM"
	read -r n b < <(http_log_lines "$mark" | awk -F'\t' '$1 == "GET" && $4 ~ /^20[06]$/ {
		n++; b += $5 } END { print n + 0, b + 0 }')
	rec "http.$tag.mount1_gets" "$n"
	rec "http.$tag.mount1_mb" "$(awk -v b="$b" 'BEGIN { printf "%.1f", b / 1e6 }')"
	for r in $(seq 1 "$RUNS"); do
		mark=$(http_log_mark) || return 1
		samplefs_start "$url" "$idx" || { fail "http.$tag.remount_gets" "remount failed"; return 1; }
		rec "http.$tag.remount_s" "$FS_SECS"
		fs_stop "$MNT"
		# data GETs: of files; a GET of a URL ending in / is the
		# directory's listing, which a remount asks for to see what
		# files there are (counted apart)
		read -r gets lists < <(http_log_lines "$mark" | awk -F'\t' '$1 == "GET" && $4 ~ /^20[06]$/ {
			if ($2 ~ /\/$/) l++; else d++ } END { print d + 0, l + 0 }')
		rec "http.$tag.remount_gets" "$gets"
		rec "http.$tag.remount_lists" "$lists"
		rec "http.$tag.remount_heads" "$(http_log_count HEAD "$mark")"
	done
}

# epoch_read KEY LIST ROOT BYTES_PER_IMAGE: one thread through LIST;
# files/s, and MB/s (1e6 bytes) of the class files' bytes behind them
epoch_read() {
	local v
	if v=$(readlist "$2" "$3" 1); then
		rec "$1" "$v"
		rec "$1_mbs" "$(awk -v v="$v" -v b="$4" 'BEGIN { printf "%.3f", v * b / 1e6 }')"
	else
		fail "$1" "reader error or timeout (see bench.log)"
		return 1
	fi
}

# curl_read KEY BYTES URL...: one curl, one connection, the URLs one after
# another (a GET each, the whole file): MB/s (1e6 bytes)
curl_read() {
	local key=$1 want=$2 t0 got u args=()
	shift 2
	for u in "$@"; do
		args+=(-o /dev/null "$u")
	done
	t0=$(usec)
	got=$(curl -sS --fail --max-time 600 -w '%{size_download}\n' "${args[@]}" 2>>"$LOG" |
		awk '{ n += $1 } END { print n + 0 }')
	if [ "$got" = "$want" ]; then
		rec "$key" "$(awk -v b="$got" -v t="$(secs_since "$t0")" 'BEGIN { printf "%.3f", b / t / 1e6 }')"
	else
		fail "$key" "curl fetched $got bytes, not $want"
	fi
}

# netem_probe: why tc netem is or is not used: the qdisc tried on the
# loopback of a network namespace made and deleted here
netem_probe() {
	local ns=sfsbench$$ out
	ip netns add "$ns" 2>/dev/null || { echo "no network namespace (ip netns add failed)"; return 1; }
	out=$(ip netns exec "$ns" tc qdisc add dev lo root netem delay 1ms 2>&1)
	local rc=$?
	ip netns del "$ns"
	[ "$rc" = 0 ] && { echo "available"; return 0; }
	echo "not available: tc said '${out//$'\n'/ }'"
	return 1
}

# rtt_probe URL: the median time of 5 GETs of a small file, ms
rtt_probe() {
	local i
	for i in 1 2 3 4 5; do
		curl -s -o /dev/null -w '%{time_total}\n' "$1"
	done | sort -n | awk '{ t[NR] = $1 } END { printf "%.1f", t[3] * 1000 }'
}

part_http() {
	local qsrc=$DATA/qd-$QD_PER qidx=$DATA/index/qd-$QD_PER isrc=$DATA/imagenet
	local iidx=$DATA/index/imagenet hidx=$DATA/index/http il=$LISTS/qd_images.txt
	local jl=$LISTS/in_random.txt el=$LISTS/http/qd_images.txt isz=
	local qurl iurl pq pi r c bpi ebytes netem mark rtt urls=() purls=() classes=()
	say "== http. Mounts over HTTP"
	qd_source "$qsrc" "$QD_CLASSES" "$QD_PER" || { fail http.qd.first1.http "generator failed"; return 1; }
	in_source || { fail http.in.first4.http "generator failed"; return 1; }
	mkdir -p "$LISTS/http"
	"$PY" "$HERE/lists.py" qd "$qsrc/manifest.json" "$LISTS" "$QD_READ" "$QD_STROKES" 1 >/dev/null &&
		"$PY" "$HERE/lists.py" in "$isrc" "$LISTS" "$IN_READ" "$AM_READ" 1 >/dev/null &&
		"$PY" "$HERE/lists.py" qd "$qsrc/manifest.json" "$LISTS/http" \
			"$((HTTP_EPOCH * QD_PER))" 0 1 >/dev/null || return 1
	SFS_TMP=$DATA/http
	rm -rf "$SFS_TMP" "$hidx"
	mkdir -p "$SFS_TMP" "$hidx"
	http_start "$DATA" || { fail http.qd.first1.http "nginx did not start"; return 1; }
	qurl=$(http_url "qd-$QD_PER/")
	iurl=$(http_url imagenet/)
	ebytes=0
	while IFS= read -r c; do
		classes+=("$c")
		urls+=("$(http_url "qd-$QD_PER/numpy_bitmap/$c.npy")")
		ebytes=$((ebytes + $(stat -c %s "$qsrc/numpy_bitmap/$c.npy")))
	done < <(head -n "$HTTP_EPOCH" "$qsrc/classes.txt")
	bpi=$(awk -v b="$ebytes" -v n="$((HTTP_EPOCH * QD_PER))" 'BEGIN { printf "%.3f", b / n }')
	fact "http servers" "$(nginx -v 2>&1 | sed 's/^nginx version: //'), 1 worker, sendfile, on 127.0.0.1, serving $DATA (access log $HTTP_ACCESS_LOG); samplefs with its URL defaults (workers=16, cache_mem=64M, no cache_dir)"

	# the local indexes (parts A and B's; built here when missing)
	SFS_LAYOUT=quickdraw
	samplefs_start "$qsrc" "$qidx" && fs_stop "$MNT"
	SFS_LAYOUT=imagenet
	samplefs_start "$isrc" "$iidx" && fs_stop "$MNT"
	http_warm "$qidx" "$iidx"
	SFS_LAYOUT=quickdraw
	http_mounts qd "$qurl" "$hidx/qd"
	SFS_LAYOUT=imagenet
	http_mounts in "$iurl" "$hidx/in"
	[ -n "${HTTP_BUILD_HWM:-}" ] && rec http.build_rss_kb "$HTTP_BUILD_HWM"

	for r in $(seq 1 "$RUNS"); do
		say "reads over loopback HTTP, run $r"
		http_warm "$qidx" "$iidx" "$hidx/qd" "$hidx/in"
		SFS_LAYOUT=quickdraw
		local_read http.qd.first1.local "$il" 1 "$qsrc" "$qidx"
		http_read http.qd.first1.http "$il" 1 "$qurl" "$hidx/qd"
		SFS_LAYOUT=imagenet
		local_read http.in.first4.local "$jl" 4 "$isrc" "$iidx"
		http_read http.in.first4.http "$jl" 4 "$iurl" "$hidx/in"
	done

	netem=$(netem_probe) && note "http: tc netem is $netem here, but the bench adds the 20 ms with the fault proxy, which it always has"
	[ "$netem" = available ] || note "http: tc netem is $netem (sch_netem is not in this kernel and it has no modules to load), so the 20 ms is the fault proxy's (tests/integration/fault_proxy.py, /__delay?ms=20: each response waits 20 ms; the proxy is Python, so it also costs CPU per request and per byte)"
	proxy_start "$(http_url)" || { fail http.in.rtt16.http "the fault proxy did not start"; return 1; }
	pq=$(proxy_url "qd-$QD_PER/")
	pi=$(proxy_url imagenet/)
	for c in "${classes[@]}"; do
		purls+=("$(proxy_url "qd-$QD_PER/numpy_bitmap/$c.npy")")
	done
	# the proxy's URLs name other indexes: built once, before the delay
	SFS_LAYOUT=quickdraw
	samplefs_start "$pq" "$hidx/qdp" && fs_stop "$MNT"
	SFS_LAYOUT=imagenet
	samplefs_start "$pi" "$hidx/inp" && fs_stop "$MNT"
	rtt="$(rtt_probe "$(http_url "qd-$QD_PER/classes.txt")") ms from nginx, $(rtt_probe "$(proxy_url "qd-$QD_PER/classes.txt")") ms through the proxy"
	proxy_ctl 'delay?ms=20' >/dev/null || { fail http.in.rtt16.http "the proxy refused /__delay"; return 1; }
	fact "a curl GET of classes.txt (median of 5)" "$rtt, $(rtt_probe "$(proxy_url "qd-$QD_PER/classes.txt")") ms through the proxy with /__delay?ms=20"
	for r in $(seq 1 "$RUNS"); do
		say "reads at 20 ms, run $r"
		http_warm "$qidx" "$iidx" "$hidx/qdp" "$hidx/inp"
		SFS_LAYOUT=imagenet
		local_read http.in.rtt16.local "$jl" 16 "$isrc" "$iidx"
		http_read http.in.rtt16.http "$jl" 16 "$pi" "$hidx/inp"
		SFS_LAYOUT=quickdraw
		if samplefs_start "$qsrc" "$qidx"; then
			isz=$(stat -c %s "$MNT/$(head -1 "$el")")
			epoch_read http.qd.epoch.local "$el" "$MNT" "$bpi" &&
				cpu_per_file http.qd.epoch.local "$(wc -l <"$el")"
			fs_stop "$MNT"
		fi
		# the most any FUSE file system serves these files at: the floor
		if [ -n "$isz" ] && floor_start "$(wc -l <"$el")" "$isz" "$QD_PER" npy; then
			epoch_read http.qd.epoch.floor "$LISTS/http/floor_images.txt" "$MNT" "$bpi"
			fs_stop "$MNT"
		fi
		if samplefs_start "$pq" "$hidx/qdp"; then
			mark=$(http_log_mark)
			epoch_read http.qd.epoch.http "$el" "$MNT" "$bpi" &&
				cpu_per_file http.qd.epoch.http "$(wc -l <"$el")"
			fs_stop "$MNT"; keep_max HTTP_HWM "$FS_HWM"; keep_max HTTP_ANON "$FS_ANON"
			http_traffic http.qd.epoch.http "$mark" "$(wc -l <"$el")"
		fi
		curl_read http.qd.epoch.curl_mbs "$ebytes" "${purls[@]}"
		# remounts at 20 ms: what a saved index leaves to ask the server
		samplefs_start "$pq" "$hidx/qdp" && rec http.qd.remount20_s "$FS_SECS" && fs_stop "$MNT"
		SFS_LAYOUT=imagenet
		samplefs_start "$pi" "$hidx/inp" && rec http.in.remount20_s "$FS_SECS" && fs_stop "$MNT"
	done
	proxy_ctl 'delay?ms=0' >/dev/null
	curl_read http.qd.epoch.curl0_mbs "$ebytes" "${urls[@]}"
	[ -n "${HTTP_HWM:-}" ] && rec http.rss_kb "$HTTP_HWM"
	[ -n "${HTTP_ANON:-}" ] && rec http.anon_kb "$HTTP_ANON"
	fact "http data" "Quick, Draw! $qurl ($QD_CLASSES classes, classes.txt), ImageNet $iurl; reads: $(wc -l <"$il") image files in gidx order (part A's list), $(wc -l <"$jl") random train JPEGs (part B's list); the epoch at 20 ms: all $((HTTP_EPOCH * QD_PER)) image files of the first $HTTP_EPOCH classes, and curl GETs of their $HTTP_EPOCH numpy_bitmap/*.npy ($ebytes bytes)"
	note "http: MB/s of the epoch = files/s x $bpi bytes (the $HTTP_EPOCH class .npy files' bytes / their images: what samplefs fetches per image file it serves; the image files it serves are 4x that, as float32); curl's = bytes / wall time of one curl fetching the $HTTP_EPOCH files in turn on one connection. MB = 1e6 bytes."
	note "http: first passes use a fresh mount with the sources in the page cache (nginx reads them from there too); no drop_caches. 'GETs per file' and 'KiB per GET' are from nginx's access log (data GETs answered 200/206) over that pass, prefetches included, the mount's own requests not (they are in the mount rows)."
	proxy_stop
	http_stop
}
