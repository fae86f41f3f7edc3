#!/usr/bin/env bash
# samplefs-download of a plain URL whose server sends no Content-Length
# and no MD5 and closes the connection early (cut_server.py): libcurl sees
# a whole response, so only the size the HEAD gave tells the file is short.
# The oracle is the file the server holds.
#  - cut once: the attempt is retried from where it stopped (a Range), and
#    the file equals the server's;
#  - cut every time: the file fails after its retries, naming the bytes it
#    got, and no file of that name is left (only the .part).
. "$(dirname "$0")/lib.sh"
sfs_setup
T=$SFS_TMP
DL=${SAMPLEFS_DOWNLOAD:-$SFS_BIN/samplefs-download}
SERVER_PIDS=()
stop_servers() { local p; for p in "${SERVER_PIDS[@]}"; do kill "$p" 2>/dev/null; wait "$p" 2>/dev/null; done; }
SFS_CLEANUP_HOOKS+=(stop_servers)

head -c 700001 /dev/urandom >"$T/x.bin"
# serve MODE: starts cut_server.py in MODE; sets PORT
serve() {
	rm -f "$T/port.$1"
	"$PY" "$SFS_ROOT/tests/integration/cut_server.py" "$T/x.bin" "$1" "$T/port.$1" "$T/log.$1" &
	SERVER_PIDS+=($!)
	for i in $(seq 1 100); do [ -s "$T/port.$1" ] && break; sfs_nap 0.1; done
	PORT=$(cat "$T/port.$1")
}

check "a server that cuts its first body starts" serve once
echo "http://127.0.0.1:$PORT/x.bin" >"$T/once.txt"
dl() { local out=$1; shift; "$DL" "$@" >"$out"; }
check "cut once: the download succeeds" dl "$T/o1" --retries 3 "$T/once.txt" "$T/d1"
check "cut once: the server did cut a body" grep -q "^cut after 350000 of 700001" "$T/log.once"
check "cut once: resumed from the bytes it got" grep -qx "\[DOWNLOAD\] x.bin (resumed at byte 350000)" "$T/o1"
check "cut once: the file is the server's, every byte" cmp "$T/x.bin" "$T/d1/x.bin"
check "cut once: no .part left" test ! -e "$T/d1/.x.bin.part"

check "a server that cuts every body starts" serve always
echo "http://127.0.0.1:$PORT/x.bin" >"$T/always.txt"
check "cut always: the file fails after its retries, naming the bytes it got" \
	expect_fail "\[FAIL\] x.bin: [0-9]* bytes of 700001 (3 attempts)" \
	"$DL" --retries 2 "$T/always.txt" "$T/d2"
check "cut always: no file x.bin" test ! -e "$T/d2/x.bin"
check "cut always: its bytes kept in the .part, short" \
	test "$(stat -c %s "$T/d2/.x.bin.part")" -lt 700001

sfs_done
