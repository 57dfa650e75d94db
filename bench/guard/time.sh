#!/usr/bin/env bash
# What a wrapped call costs in time (the CPU time of bench/guard/loop.c, user + system, best of
# ROUNDS, interleaved): ROUNDS of `loop.c COUNT MODE` (default 2,000,000 rounds of `pipe`: a
# byte written to the program's own pipe and read back, neither call blocking) unprofiled, under
# the preload shim with perf events, and with perf_event_open refused (tests/refuse: the shim
# times the pipe's calls itself, by their clock reads); with BEFORE_DIRs (each a directory
# holding another build's libospreyprof.so and ospreyd), refused under each of those too.
# tests/refuse's seccomp filter makes every system call dearer (about 40 ns here), so a refused
# run is compared with the program unprofiled under the same filter ("plain, refused").
# Prints ns a round per variant and its ratio to unprofiled (refused: to plain, refused).
# Usage: bash bench/guard/time.sh [BUILD_DIR] [ROUNDS] [COUNT] [MODE] [BEFORE_DIR...]
set -euo pipefail
# shellcheck source=bench/lib.sh
. "$(dirname "$0")/../lib.sh"
bench_dirs "${1:-}"
rounds=${2:-5}
count=${3:-2000000}
mode=${4:-pipe}
befores=("${@:5}")
work=$(mktemp -d "${TMPDIR:-/tmp}/osprey-guardtime.XXXXXX")
trap 'rm -rf "$work"' EXIT
cc -O2 -g -fno-omit-frame-pointer "$here/loop.c" -o "$work/loop" -lpthread

# cpu_of LIB DAEMON [REFUSE]: the loop's user + system seconds (its collector's not counted).
cpu_of() {
  local lib=$1 daemon=$2 refuse=${3:-} launch=() TIMEFORMAT='%U %S'
  if [ -n "$refuse" ]; then launch=("$refuse" perf_event_open); fi
  { time "${launch[@]}" env ${lib:+LD_PRELOAD="$lib" OSPREY_PROFILE="$work/out.raw.json"} \
      OSPREY_DAEMON="$daemon" "$work/loop" "$count" "$mode" >/dev/null 2>&1; } 2>&1 |
    awk '{ printf "%.4f", $1 + $2 }'
  rm -f "$work"/out.*
}

variants=(plain perf-events plain-refused refused)
declare -A before_dir
bench_befores "${befores[@]}"
declare -A best
for ((r = 1; r <= rounds; r++)); do
  for v in "${variants[@]}"; do
    case $v in
      plain) s=$(cpu_of "" "$build/daemon/ospreyd") ;;
      plain-refused) s=$(cpu_of "" "$build/daemon/ospreyd" "$build/tests/refuse") ;;
      perf-events) s=$(cpu_of "$build/shim/libospreyprof.so" "$build/daemon/ospreyd") ;;
      refused) s=$(cpu_of "$build/shim/libospreyprof.so" "$build/daemon/ospreyd" "$build/tests/refuse") ;;
      refused:*) s=$(cpu_of "${before_dir[$v]}/libospreyprof.so" "${before_dir[$v]}/ospreyd" \
                   "$build/tests/refuse") ;;
    esac
    echo "round $r $v: $s s"
    if [ -z "${best[$v]:-}" ] || awk -v a="$s" -v b="${best[$v]}" 'BEGIN { exit !(a < b) }'; then
      best[$v]=$s
    fi
  done
done
printf '%-24s %10s %10s\n' variant "ns/round" ratio
for v in "${variants[@]}"; do
  base=${best[plain]}
  case $v in refused*) base=${best[plain-refused]} ;; esac
  awk -v n="$v" -v s="${best[$v]}" -v p="$base" -v c="$count" \
    'BEGIN { printf "%-24s %10.1f %10.3f\n", n, s * 1e9 / c, s / p }'
done
echo "(best of $rounds, $count rounds of $mode; load $(cut -d' ' -f1-3 /proc/loadavg))"
