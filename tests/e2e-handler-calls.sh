#!/usr/bin/env bash
# End-to-end: the system calls the SIGPROF handler makes for a thread that has a CPU to itself.
# Its sampling timer runs every period by itself and its CPU clock is reckoned from the wall
# clock between readings (shim/README.md, "The design"), so that of a second of a busy loop at
# 997 Hz the profiled process tree makes fewer timer_settime and clock_gettime system calls than
# there are samples (one of each a sample before: re-arming a one-shot timer, reading the clock),
# and the samples' weights still add up to its CPU time. Counted by `perf stat` on the kernel's
# tracepoints; the loop runs under SCHED_FIFO so the machine's load cannot take its CPU away
# (then every landing is late, and read). Needs root (tracepoints, real-time priority): skipped
# otherwise.
# Usage: e2e-handler-calls.sh OSPREY
set -uo pipefail

osprey=${1:?usage: e2e-handler-calls.sh OSPREY}
# shellcheck source=tests/lib.sh
. "$(dirname "$(realpath "$0")")/lib.sh"
if [ "$(id -u)" != 0 ] || ! command -v perf >/dev/null ||
  ! perf stat -e syscalls:sys_enter_timer_settime true >/dev/null 2>&1 ||
  ! chrt -f 1 true 2>/dev/null; then
  echo "skipped: needs root, perf's syscall tracepoints and SCHED_FIFO"
  exit 77
fi
work=$(mktemp -d "${TMPDIR:-/tmp}/osprey-handler-calls.XXXXXX")
trap 'rm -rf "$work"' EXIT

# A second of the wall clock, read through the vDSO (no system call of its own).
cat >"$work/spin.c" <<'EOF'
#include <time.h>
static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec / 1e9;
}
int main(void)
{
    volatile unsigned long n = 0;
    double end = now() + 1.0;
    while (now() < end)
        for (int i = 0; i < 1000; i++)
            n++;
    return 0;
}
EOF
cc -O2 "$work/spin.c" -o "$work/spin" || { fail "cc spin.c"; finish; }
perf stat -x, -o "$work/stat" \
  -e syscalls:sys_enter_timer_settime,syscalls:sys_enter_clock_gettime \
  -- chrt -f 1 "$osprey" "$work/spin" --profile -F 997 -o "$work/p" --format folded \
  >/dev/null 2>"$work/err"
expect_status 0 $? "osprey spin under perf stat: $(cat "$work/err")"
read -r settime gettime < <(awk -F, '/^[0-9]/ { v[++n] = $1 } END { print v[1], v[2] }' "$work/stat")
read -r rows weight cpu_periods < <(python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
on = [r for r in d["samples"] if r[3] == 0]
print(len(on), sum(r[4] if len(r) > 4 else 1 for r in on), round(d["process_cpu_ns"] * d["rate_hz"] / 1e9))
' "$work/p.raw.json" 2>/dev/null)
if [ -z "${rows:-}" ] || [ "$rows" -lt 500 ]; then
  fail "the raw file has ${rows:-no} on-CPU samples for a second of CPU (at least 500)"
else
  echo "timer_settime $settime, clock_gettime $gettime for $rows samples (weights $weight, CPU $cpu_periods periods)"
  # Before the periodic timer: at least one of each per sample.
  [ $((settime + gettime)) -lt "$rows" ] ||
    fail "timer_settime $settime + clock_gettime $gettime system calls for $rows samples (fewer than one a sample)"
  # The weights pay the CPU time whole: within 5% (the shim's start and the exit's rounding).
  if [ $((weight * 100)) -lt $((cpu_periods * 95)) ] || [ $((weight * 100)) -gt $((cpu_periods * 105)) ]; then
    fail "the samples weigh $weight periods for $cpu_periods periods of CPU time"
  fi
fi
finish "ok: a busy thread's samples make fewer system calls than there are samples"
