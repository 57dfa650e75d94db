#!/usr/bin/env bash
# End-to-end: a program that daemonizes 4 times in a row (tests/forks/forks.c, `forks daemons`:
# setsid, a second fork, the middle process ending at once, by _exit and by the exit_group
# system call in turn) under the preload shim and ospreyd: every grandchild has its raw file
# (<out>.<pid>.json, forked) with its work_daemon, and no line says one was not profiled. The
# grandchild greets the collector that took its parent's greeting, which answers, not the
# middle process's socket, whose collector never starts (shim/README.md, "Forked children");
# before, a grandchild whose middle process ended by exit_group had no answer in its 100 ms
# and was not profiled (one line), and under load one of the others as well.
# Usage: e2e-forks-daemon.sh OSPREY SHIM_SO OSPREYD SOURCE_DIR
set -uo pipefail

osprey=${1:?usage: e2e-forks-daemon.sh OSPREY SHIM_SO OSPREYD SOURCE_DIR}
osprey=$(cd "$(dirname "$osprey")" && pwd)/$(basename "$osprey")
shim=${2:?}
daemon=${3:?}
src=${4:?}
# shellcheck source=tests/lib.sh
. "$(dirname "$(realpath "$0")")/lib.sh"
scratch_dir forks-daemon

build_forks "$src" "$work"
mkdir -p "$work/daemons"
OSPREY_DAEMON="$daemon" OSPREY_PROFILE="$work/daemons/p.raw.json" LD_PRELOAD="$shim" \
  "$work/forks" daemons >"$work/daemons.out" 2>"$work/daemons.err"
expect_status 0 $? "forks daemons, profiled"
settle_collectors "$work/daemons"

daemons=$(awk '/^daemon/ {print $2}' "$work/daemons.out")
[ "$(echo "$daemons" | wc -w)" -eq 4 ] || fail "4 daemons expected: $(cat "$work/daemons.out")"
if grep -q "not profiled" "$work/daemons.err"; then
  fail "a process was not profiled: $(cat "$work/daemons.err")"
fi
for pid in $daemons; do
  raw="$work/daemons/p.raw.$pid.json"
  if [ ! -s "$raw" ]; then
    fail "daemon $pid has no raw file: $(ls "$work/daemons") $(cat "$work/daemons.err")"
    continue
  fi
  "$osprey" report "$raw" --pid "$pid" --format folded -o "${raw%.json}" >/dev/null \
    2>>"$work/report.err" || fail "osprey report $raw: $(tail -n 2 "$work/report.err")"
  grep -q "work_daemon" "${raw%.json}.folded" ||
    fail "daemon $pid: work_daemon is not in its profile: $(head -c 600 "${raw%.json}.folded")"
done
finish "every daemon's grandchild profiled: $(echo "$daemons" | wc -w) of 4"
