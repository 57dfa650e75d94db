#!/usr/bin/env bash
# End-to-end test of a stripped binary's names through a real debuginfod server: a program is
# (examples/hotspot.c) built with debug information, its debug file split off and the binary stripped; profiled,
# its rows are `prog+0xOFFSET` and the report's one line says how to get names; then Debian's
# `debuginfod`, started here on a free port of this machine with a directory holding the debug
# file, answers llvm-symbolizer (DEBUGINFOD_URLS=http://127.0.0.1:PORT) and `osprey report`
# names the functions, without that line. Skipped (77) without debuginfod.
# Usage: e2e-debuginfod.sh path/to/osprey
set -uo pipefail
. "$(dirname "$(realpath "$0")")/lib.sh"

osprey=$(realpath "${1:?usage: e2e-debuginfod.sh path/to/osprey}")
example="$(dirname "$(realpath "$0")")/../examples/hotspot.c"
for tool in debuginfod curl objcopy strip clang; do
  if ! command -v "$tool" >/dev/null 2>&1; then
    skip "$tool is not installed (scripts/install-deps.sh installs it)"
  fi
done
server=
cleanup() {
  [ -n "$server" ] && kill "$server" 2>/dev/null
  wait 2>/dev/null
}
scratch_dir debuginfod cleanup
mkdir -p "$work/debug"
unset DEBUGINFOD_URLS
export DEBUGINFOD_CACHE_PATH="$work/llvm-debuginfod" OSPREY_BUILDID_CACHE="$work/buildid"

cd "$work" || exit 1
clang -O2 -g -fno-omit-frame-pointer -pthread -Wl,--build-id -o prog "$example" || { echo "FAIL: clang" >&2; exit 1; }
objcopy --only-keep-debug prog debug/prog.debug
strip -s prog
id=$(readelf -n prog | sed -n 's/.*Build ID: *//p')
[ -n "$id" ] || { echo "FAIL: the program has no build id" >&2; exit 1; }

# 1. Stripped, no server: unnamed rows, and the line that says how to get names.
"$osprey" ./prog --profile -o run >out 2>report
expect_status 0 $? "profiling the stripped program"
grep -q 'checksum_block' report && fail "the stripped program was named without a server: $(cat report)"
grep -Eq '  prog\+0x[0-9a-f]+ ' report || fail "no prog+0xOFFSET row: $(cat report)"
grep -Eq '^names: [0-9]+% of CPU time without symbols \(prog[,)].*; install -dbgsym packages or set DEBUGINFOD_URLS$' report ||
  fail "no line saying how to get names: $(cat report)"

# 2. debuginfod on a free port, serving the debug file; it scans its directory once started.
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
debuginfod -F -p "$port" -d "$work/index.sqlite" "$work/debug" >server.log 2>&1 &
server=$!
url="http://127.0.0.1:$port"
deadline=$((SECONDS + 120))
until curl -sf -o /dev/null "$url/buildid/$id/debuginfo"; do
  if [ "$SECONDS" -ge "$deadline" ] || ! kill -0 "$server" 2>/dev/null; then
    echo "FAIL: debuginfod did not serve $id within 120 s: $(cat server.log)" >&2
    exit 1
  fi
  sleep 0.5
done

# 3. With DEBUGINFOD_URLS, the same raw file names the function and says nothing of names.
DEBUGINFOD_URLS="$url" "$osprey" report run.raw.json -o named >out 2>&1
expect_status 0 $? "osprey report with DEBUGINFOD_URLS"
grep -Eq '  checksum_block +hotspot\.c:[0-9]+' out || fail "debuginfod gave no name: $(cat out)"
grep -q '^names:' out && fail "a names line with DEBUGINFOD_URLS set: $(cat out)"
grep -q 'checksum_block' named.folded || fail "the outputs have no name: $(head -3 named.folded)"

finish "a stripped binary named through debuginfod; the names line without it"
