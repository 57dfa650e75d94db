#!/usr/bin/env bash
# What a profiler adds to each process image: 200 posix_spawns of /bin/true, 300 self-execs,
# 300 forks that end at once and 200 forks that exec /bin/true, as a shell runs commands
# (spawner.c), unprofiled, under Osprey's preload shim (each exec'd image boots the shim and
# greets the collector of the image that started it, which starts the image's own; each fork
# profiles itself and greets its parent's collector), and under `perf record -e cpu-clock -F 997 -g` (which
# follows the children), in one run, interleaved, median of REPS. Prints ms per image added
# over the unprofiled run. With BEFORE_DIR (another build: its shim/libospreyprof.so and
# daemon/ospreyd are all it needs), that build runs too, interleaved, as "before". With CPU=1,
# the CPU time of every process of each run instead of the wall time (`perf stat -e
# task-clock`, which follows the children: ospreyd's on the other core counts, which the wall
# time hides on an idle machine and not on a busy one).
# Usage: [CPU=1] bash bench/spawn/run.sh [BUILD_DIR] [REPS] [BEFORE_DIR]
set -euo pipefail
# shellcheck source=bench/lib.sh
. "$(dirname "$0")/../lib.sh"
bench_dirs "${1:-}"
reps=${2:-5}
before=${3:+$(cd "$3" && pwd)}
work=$(mktemp -d "${TMPDIR:-/tmp}/osprey-spawn.XXXXXX")
trap 'rm -rf "$work"' EXIT
gcc -O2 "$here/spawner.c" -o "$work/spawner"
perf_ok=0
command -v perf >/dev/null && perf record -q -e cpu-clock -o "$work/probe.data" true 2>/dev/null && perf_ok=1

run_body() { # run_body TOOL MODE N: one run
  local tool=$1 mode=$2 n=$3
  case $tool in
    plain) "$work/spawner" "$mode" "$n" ;;
    osprey | before) # until every profile is written, as osprey waits (the run's lock)
      local b=$build
      [ "$tool" = before ] && b=$before
      : >"$work/out/.osprey-run.lock"
      OSPREY_DAEMON="$b/daemon/ospreyd" OSPREY_PROFILE="$work/out/p.raw.json" \
        LD_PRELOAD="$b/shim/libospreyprof.so" "$work/spawner" "$mode" "$n" 2>/dev/null
      flock -w 60 "$work/out/.osprey-run.lock" true ;;
    perf) perf record -q -e cpu-clock -F 997 -g -o "$work/out/perf.data" \
      "$work/spawner" "$mode" "$n" 2>/dev/null ;;
  esac
}
run_one() { # run_one TOOL MODE N: microseconds of one run, wall or (CPU=1) CPU
  local start end
  rm -rf "$work/out" && mkdir "$work/out"
  if [ "${CPU:-0}" = 1 ]; then
    export work build before
    perf stat -x, -e task-clock -o "$work/stat" \
      bash -c "$(declare -f run_body); run_body $1 $2 $3"
    awk -F, '/task-clock/ {printf "%d\n", $1 * 1000}' "$work/stat"
    return
  fi
  start=$(date +%s%N)
  run_body "$@"
  end=$(date +%s%N)
  echo $(((end - start) / 1000))
}
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

[ "${CPU:-0}" = 1 ] && echo "CPU time of every process of a run (perf stat -e task-clock), not wall time:"
tools=(plain osprey)
[ -n "$before" ] && tools+=(before)
[ "$perf_ok" = 1 ] && tools+=(perf)
added_head="osprey ms/image added |"
[ -n "$before" ] && added_head+=" before ms/image added |"
echo "| workload | images | $(printf '%s | ' "${tools[@]}")$added_head perf ms/image added |"
echo "|---|---|$(printf -- '---|%.0s' "${tools[@]}")---|${before:+---|}---|"
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
  [ -n "$before" ] && row+=" $(added before) |"
  if [ "$perf_ok" = 1 ]; then row+=" $(added perf) |"; else row+=" (no perf) |"; fi
  echo "$row"
  unset times med
done
