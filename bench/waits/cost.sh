#!/usr/bin/env bash
# The cost of timing waits by their calls (perf_event_open refused, shim/README.md "Without
# the kernel's records"), side by side with perf on the same runs: the program's own CPU time
# (getrusage, printed by the workload) while
#   timed   1000 threads on 100 ms timed condvar waits, 10,000 waits a second, 4 s
#           (bench/workloads/idle.c 1000 4 timed: idle_cpu_ns);
#   pipe    200,000 writes of 4 KiB from one thread to another through the program's own pipe
#           (bench/workloads/pipe_stream.c: pipe_cpu_ns);
# unprofiled, under Osprey at 997 Hz with the kernel's records, under Osprey with
# perf_event_open refused (tests/refuse perf_event_open), and under `perf record -g -F 997`; with BEFORE_DIRs
# (each a directory holding another build's libospreyprof.so and ospreyd), refused with each of
# those too (a column named after the directory), interleaved in each round. Prints one line
# per run and a table of min-max per column.
# Usage: [CASES="timed pipe"] bash bench/waits/cost.sh [BUILD_DIR] [ROUNDS] [BEFORE_DIR...]
set -euo pipefail
# shellcheck source=bench/lib.sh
. "$(dirname "$0")/../lib.sh"
bench_dirs "${1:-}"
rounds=${2:-3}
befores=("${@:3}")
work=$(mktemp -d /tmp/osprey-waitcost.XXXXXX)
trap 'rm -rf "$work"' EXIT
gcc -O2 -g -o "$work/idle" "$root/bench/workloads/idle.c" -lpthread
gcc -O2 -g -o "$work/pipe" "$root/bench/workloads/pipe_stream.c" -lpthread

# osprey_run LIB DAEMON [REFUSE] -- PROGRAM...: `REFUSE perf_event_open` outside the preloaded environment (its
# own seccomp filter would otherwise stop the profile of its own image).
osprey_run() {
  local lib=$1 daemon=$2 launch=()
  shift 2
  if [ "$1" != -- ]; then launch=("$1" perf_event_open); shift; fi
  shift
  "${launch[@]}" env OSPREY_PROFILE="$work/out.raw.json" OSPREY_PROFILE_HZ=997 \
    OSPREY_DAEMON="$daemon" LD_PRELOAD="$lib" "$@"
}
cpu_of() { awk '$1 ~ /_cpu_ns$/ { printf "%.3f", $2 / 1e9 }'; }

variants=(plain osprey refused perf)
declare -A before_dir
bench_befores "${befores[@]}"
declare -A got
for case in ${CASES:-timed pipe}; do
  if [ "$case" = timed ]; then prog=("$work/idle" 1000 4 timed); else prog=("$work/pipe" 200000); fi
  for ((r = 1; r <= rounds; r++)); do
    for v in "${variants[@]}"; do
      case $v in
        plain) out=$("${prog[@]}") ;;
        osprey) out=$(osprey_run "$build/shim/libospreyprof.so" "$build/daemon/ospreyd" -- "${prog[@]}") ;;
        refused) out=$(osprey_run "$build/shim/libospreyprof.so" "$build/daemon/ospreyd" \
                         "$build/tests/refuse" -- "${prog[@]}") ;;
        refused:*) out=$(osprey_run "${before_dir[$v]}/libospreyprof.so" "${before_dir[$v]}/ospreyd" \
                           "$build/tests/refuse" -- "${prog[@]}") ;;
        perf) out=$(perf record -q -g -F 997 -o "$work/perf.data" -- "${prog[@]}" 2>/dev/null) ;;
      esac
      cpu=$(cpu_of <<<"$out")
      echo "$case round $r $v: ${cpu} s"
      got[$case/$v]="${got[$case/$v]:-} $cpu"
      rm -f "$work"/out.* "$work/perf.data"
    done
  done
done
echo
header="| case |"
for v in "${variants[@]}"; do header+=" $v |"; done
echo "$header"
for case in ${CASES:-timed pipe}; do
  row="| $case |"
  for v in "${variants[@]}"; do
    # shellcheck disable=SC2086
    row+=" $(printf '%s\n' ${got[$case/$v]} | sort -n | sed -n '1p;$p' | paste -sd- -) |"
  done
  echo "$row"
done
echo "(program CPU seconds, min-max of $rounds rounds, load $(cut -d' ' -f1-3 /proc/loadavg))"
