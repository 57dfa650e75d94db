#!/usr/bin/env bash
# What a wrapped call costs, in instructions (valgrind --tool=callgrind: repeatable whatever
# the machine's load). loop.c's rounds() — a read from /dev/zero and an uncontended mutex,
# ROUNDS times — linked plain, linked with the shim's archive and run without OSPREY_PROFILE
# (off), with the archive and OSPREY_PROFILE set (on), and plain under the preload shim off and
# on. Prints instructions per round (rounds() inclusive, the SIGPROF handler's samples left
# out: callgrind counts a signal handler apart) and the ratio to plain.
# With MODE "mutex" a round is the mutex alone, with "pipe" a byte written to the program's own
# pipe and read back; with REFUSE (tests/refuse, run as `refuse perf_event_open`, which refuses
# perf_event_open: the shim then times the futex-based waits and the pipe's calls itself) two more
# rows run under it; with "pipe", a row for the least a wrapper timing each call costs
# (loop.c's "floor" mode).
# Usage: bash bench/guard/run.sh [BUILD_DIR] [ROUNDS] [MODE] [REFUSE]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
build=$(cd "${1:-$root/build}" && pwd)
rounds=${2:-200000}
mode=${3:-read+mutex}
noperf=${4:-}
work=$(mktemp -d "${TMPDIR:-/tmp}/osprey-guard.XXXXXX")
[ -n "${KEEP:-}" ] || trap 'rm -rf "$work"' EXIT
cc -O2 -g -fno-omit-frame-pointer "$here/loop.c" -o "$work/plain" -lpthread
cc -O2 -g -fno-omit-frame-pointer "$here/loop.c" -o "$work/archive" \
  -Wl,--whole-archive "$build/shim/libospreyprof.a" -Wl,--no-whole-archive -lpthread -ldl -lrt

count() { # count NAME ENV...: instructions of rounds(), inclusive, per round
  local name=$1
  shift
  local launch=()
  if [ "${name##*-}" = noperf ]; then launch=("$noperf" perf_event_open); fi
  env "$@" "${launch[@]}" valgrind --tool=callgrind --callgrind-out-file="$work/$name.out" \
    --toggle-collect=rounds "$work/${name%%-*}" "$rounds" "${round_mode:-$mode}" >/dev/null \
    2>"$work/$name.err" ||
    { echo "$name failed:" >&2; cat "$work/$name.err" >&2; exit 1; }
  local ir
  ir=$(callgrind_annotate "$work/$name.out" 2>/dev/null | awk '/PROGRAM TOTALS/ {gsub(",", "", $1); print $1; exit}')
  echo "$ir"
}

daemon=(OSPREY_DAEMON="$build/daemon/ospreyd")
plain=$(count plain-0 -u OSPREY_PROFILE)
off=$(count archive-off -u OSPREY_PROFILE)
on=$(count archive-on "${daemon[@]}" OSPREY_PROFILE="$work/on.json")
poff=$(count plain-preload-off -u OSPREY_PROFILE LD_PRELOAD="$build/shim/libospreyprof.so")
pon=$(count plain-preload-on LD_PRELOAD="$build/shim/libospreyprof.so" "${daemon[@]}" \
  OSPREY_PROFILE="$work/pon.json")
printf '%-22s %14s %12s %10s %12s\n' build instructions per-round ratio "+per round"
row() {
  awk -v n="$1" -v ir="$2" -v p="$plain" -v r="$rounds" \
    'BEGIN { printf "%-22s %14d %12.2f %10.3f %12.2f\n", n, ir, ir / r, ir / p, (ir - p) / r }'
}
row plain "$plain"
row "archive, off" "$off"
row "archive, on" "$on"
row "preload, off" "$poff"
row "preload, on" "$pon"
# The least a wrapper that times each call by its clock reads can cost (loop.c's floor_read and
# floor_write: two counter reads, a flag stored around the call, a compare and a store; no
# site, no scale, no checks): the floor under the rows timed so.
if [ "$mode" = pipe ]; then
  row "timing floor, plain" "$(round_mode=floor count plain-floor)"
fi
if [ -n "$noperf" ]; then
  row "archive, on, noperf" "$(count archive-on-noperf "${daemon[@]}" OSPREY_PROFILE="$work/onn.json")"
  row "preload, on, noperf" "$(count plain-preload-on-noperf \
    LD_PRELOAD="$build/shim/libospreyprof.so" "${daemon[@]}" OSPREY_PROFILE="$work/ponn.json")"
fi
