#!/usr/bin/env bash
# run.sh BEFORE_BUILD AFTER_BUILD N [wait|nowait]: daemonize.c profiled N times under each
# build's preload shim and ospreyd, interleaved (before, after, before, ...), beside 8 busy
# loops; per build, the runs whose daemon has its raw file, and those without one with a line
# naming it or without. README.md has what it measures.
set -uo pipefail
before=${1:?usage: run.sh BEFORE_BUILD AFTER_BUILD N [wait|nowait]}
after=${2:?}
n=${3:?}
mode=${4:-wait}
here=$(dirname "$(realpath "$0")")
work=$(mktemp -d "${TMPDIR:-/tmp}/osprey-daemonize.XXXXXX")
loops=()
trap 'kill "${loops[@]}" 2>/dev/null; rm -rf "$work"' EXIT
gcc -O2 -g -fno-omit-frame-pointer "$here/daemonize.c" -o "$work/daemonize" || exit 1
for _ in $(seq 8); do
  (while :; do :; done) &
  loops+=($!)
done
declare -A present said silent
for i in $(seq "$n"); do
  for build in "$before" "$after"; do
    d=$work/$i-$(basename "$build")
    mkdir -p "$d"
    OSPREY_DAEMON="$build/daemon/ospreyd" OSPREY_PROFILE="$d/p.raw.json" \
      LD_PRELOAD="$build/shim/libospreyprof.so" "$work/daemonize" "$mode" >"$d/out" 2>"$d/err"
    for _ in $(seq 300); do grep -q '^daemon' "$d/out" && break; sleep 0.1; done
    for _ in $(seq 300); do pgrep -f "ospreyd .*$d/" >/dev/null || break; sleep 0.1; done
    pid=$(awk '/^daemon/ {print $2}' "$d/out")
    if [ -n "$pid" ] && [ -s "$d/p.raw.$pid.json" ]; then
      present[$build]=$((${present[$build]:-0} + 1))
    elif [ -n "$pid" ] && grep -q "process $pid " "$d/err"; then
      said[$build]=$((${said[$build]:-0} + 1))
    else
      silent[$build]=$((${silent[$build]:-0} + 1))
    fi
  done
done
for build in "$before" "$after"; do
  echo "$build: $n runs ($mode), daemon profiled ${present[$build]:-0}, not profiled with a" \
    "line ${said[$build]:-0}, without ${silent[$build]:-0}"
done
