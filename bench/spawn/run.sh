#!/usr/bin/env bash
# What a profiler adds to each process image: 200 posix_spawns of /bin/true, 300 self-execs,
# 300 forks that end at once and 200 forks that exec /bin/true, as a shell runs commands
# (spawner.c), unprofiled, under Osprey's preload shim (each exec'd image boots the shim and
# its own ospreyd, and its profile is written before it exits; each fork profiles itself and
# greets its parent's collector), and under `perf record -e cpu-clock -F 997 -g` (which
# follows the children), in one run, interleaved, median of REPS. Prints ms per image added
# over the unprofiled run.
# Usage: bash bench/spawn/run.sh [BUILD_DIR] [REPS]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
build=$(cd "${1:-$root/build}" && pwd)
reps=${2:-5}
work=$(mktemp -d "${TMPDIR:-/tmp}/osprey-spawn.XXXXXX")
trap 'rm -rf "$work"' EXIT
gcc -O2 "$here/spawner.c" -o "$work/spawner"
perf_ok=0
command -v perf >/dev/null && perf record -q -e cpu-clock -o "$work/probe.data" true 2>/dev/null && perf_ok=1

run_one() { # run_one TOOL MODE N: wall seconds of one run
  local tool=$1 mode=$2 n=$3 start end
  rm -rf "$work/out" && mkdir "$work/out"
  start=$(date +%s%N)
  case $tool in
    plain) "$work/spawner" "$mode" "$n" ;;
    osprey) # until every profile is written, as osprey waits (the run's lock)
      : >"$work/out/.osprey-run.lock"
      OSPREY_DAEMON="$build/daemon/ospreyd" OSPREY_PROFILE="$work/out/p.raw.json" \
        LD_PRELOAD="$build/shim/libospreyprof.so" "$work/spawner" "$mode" "$n" 2>/dev/null
      flock -w 60 "$work/out/.osprey-run.lock" true ;;
    perf) perf record -q -e cpu-clock -F 997 -g -o "$work/out/perf.data" \
      "$work/spawner" "$mode" "$n" 2>/dev/null ;;
  esac
  end=$(date +%s%N)
  echo $(((end - start) / 1000)) # microseconds
}
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

tools=(plain osprey)
[ "$perf_ok" = 1 ] && tools+=(perf)
echo "| workload | images | $(printf '%s | ' "${tools[@]}")osprey ms/image added | perf ms/image added |"
echo "|---|---|$(printf -- '---|%.0s' "${tools[@]}")---|---|"
for spec in "spawn 200" "exec 300" "fork 300" "shell 200"; do
  read -r mode n <<<"$spec"
  declare -A times=()
  for _ in $(seq "$reps"); do
    for tool in "${tools[@]}"; do
      times[$tool]+="$(run_one "$tool" "$mode" "$n") "
    done
  done
  row="| $mode | $n |"
  declare -A med=()
  for tool in "${tools[@]}"; do
    med[$tool]=$(echo "${times[$tool]}" | tr ' ' '\n' | grep . | median)
    row+=" $(awk -v us="${med[$tool]}" 'BEGIN {printf "%.3f s", us / 1e6}') |"
  done
  added() { awk -v a="${med[$1]:-0}" -v b="${med[plain]}" -v n="$n" 'BEGIN {printf "%.2f", (a - b) / 1000 / n}'; }
  row+=" $(added osprey) |"
  if [ "$perf_ok" = 1 ]; then row+=" $(added perf) |"; else row+=" (no perf) |"; fi
  echo "$row"
  unset times med
done
