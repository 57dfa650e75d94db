#!/usr/bin/env bash
# End-to-end: ospreyd sleeps until there is work (daemon/README.md, "Napping until there is
# work"). One thread busy for 3.5 s at 997 Hz: its ring is read when half full (the shim's
# wake-up) or at the 250 ms nap, so ospreyd wakes about 13-21 times a second (59-64 before, on
# a tick paced by the fill, every 14-16 ms). Counted from /proc/PID/status (voluntary context
# switches of its main thread) over 2 s of the run. A loaded machine preempts the program more
# (its samples then repeat less and fill the ring faster: 27 a second once beside the test
# suite with a 100 ms nap) and runs it less. A virtual machine whose fork, page faults and
# signals cost more (a PVM guest) gave 35-36 a second on an idle machine. The bound, 45 a
# second, leaves that margin and fails the paced tick (49-80 a second at load 10). Then 64 busy threads (bench/collector/threads.c, depths 0-23) at 997 Hz
# (napping) and 10 kHz (paced: no nap above about 2 kHz): no sample lost (the raw file's
# `dropped` 0), every thread there.
# A thread that sleeps 0.3 s (ospreyd naps) and then runs 5 ms bursts between 2 ms sleeps, its
# stacks seldom repeating: no sample lost (before: ospreyd woken at the ring's mark counted its
# next read from the nap's end, a quarter second away, and 99 of about 320 periods were lost in
# 3 runs of 4).
# Usage: e2e-collector-wakes.sh OSPREY BENCH_COLLECTOR_DIR
set -uo pipefail

osprey=${1:?usage: e2e-collector-wakes.sh OSPREY BENCH_COLLECTOR_DIR}
bench=${2:?usage: e2e-collector-wakes.sh OSPREY BENCH_COLLECTOR_DIR}
# shellcheck source=tests/lib.sh
. "$(dirname "$(realpath "$0")")/lib.sh"
scratch_dir collector-wakes

cat >"$work/spin.c" <<'EOF'
#include <stdio.h>
#include <time.h>
static volatile unsigned long sink;
static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec / 1e9;
}
int main(void)
{
    double end = now() + 3.5;
    while (now() < end)
        for (int i = 0; i < 100000; i++)
            sink += i;
    printf("%lu\n", sink & 1);
    return 0;
}
EOF
cc -O2 -g -fno-omit-frame-pointer "$work/spin.c" -o "$work/spin" 2>"$work/build" ||
  { fail "cannot build spin.c: $(cat "$work/build")"; finish "no"; }
cc -O2 -g -fno-omit-frame-pointer -pthread "$bench/threads.c" -o "$work/threads" 2>"$work/build" ||
  { fail "cannot build threads.c: $(cat "$work/build")"; finish "no"; }

"$osprey" "$work/spin" --profile -F 997 -o "$work/busy" --format folded >/dev/null 2>"$work/err" &
run=$!
daemon=$(ospreyd_under "$run")
if [ -z "$daemon" ]; then
  fail "no ospreyd under osprey's run: $(cat "$work/err")"
else
  sleep 0.7 # past the unwind tables' builds (the tick is paced by the fill while they run)
  rate=$(wakes_per_second "$daemon")
  if [ -z "$rate" ]; then
    fail "ospreyd ended before the program did"
  elif [ "$rate" -gt 45 ]; then
    fail "ospreyd woke $rate times a second for one thread at 997 Hz (at most 45)"
  else
    echo "ospreyd woke $rate times a second for one thread at 997 Hz"
  fi
fi
wait "$run"
expect_status 0 $? "osprey spin"
got=$(raw_dropped "$work/busy.raw.json")
[ "$got" = 0 ] || fail "one thread: the raw file says dropped ${got:-(no raw file)}"

cat >"$work/burst.c" <<'EOF'
#include <stdio.h>
#include <time.h>
static volatile unsigned long sink;
static double cpu(void)
{
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return t.tv_sec + t.tv_nsec / 1e9;
}
/* Deeper and shallower stacks in turn, so that samples seldom repeat the one before. */
__attribute__((noinline)) static void dive(int depth)
{
    if (depth > 0) {
        dive(depth - 1);
        sink++;
        return;
    }
    for (int i = 0; i < 20000; i++)
        sink += i;
}
int main(void)
{
    struct timespec idle = {0, 300000000}, gap = {0, 2000000};
    nanosleep(&idle, NULL);
    for (int round = 0; round < 60; round++) {
        double end = cpu() + 0.005;
        for (int depth = 0; cpu() < end; depth = (depth + 7) % 23)
            dive(depth);
        nanosleep(&gap, NULL);
    }
    printf("%lu\n", sink & 1);
    return 0;
}
EOF
if cc -O2 -g -fno-omit-frame-pointer "$work/burst.c" -o "$work/burst" 2>"$work/build"; then
  for run in 1 2; do
    "$osprey" "$work/burst" --profile -o "$work/burst-$run" --format folded >/dev/null 2>"$work/err"
    expect_status 0 $? "osprey burst (run $run)"
    got=$(raw_dropped "$work/burst-$run.raw.json")
    [ "$got" = 0 ] ||
      fail "bursts after a nap (run $run): the raw file says dropped ${got:-(no raw file)}"
  done
else
  fail "cannot build burst.c: $(cat "$work/build")"
fi

for hz in 997 10000; do
  "$osprey" "$work/threads" --profile -F "$hz" -o "$work/threads-$hz" --format folded >/dev/null \
    2>"$work/err"
  expect_status 0 $? "osprey threads -F $hz"
  got=$(raw_dropped "$work/threads-$hz.raw.json")
  [ "$got" = 0 ] || fail "64 threads at $hz Hz: the raw file says dropped ${got:-(no raw file)}"
  threads=$(python3 -c 'import json, sys; print(len(json.load(open(sys.argv[1]))["threads"]))' \
    "$work/threads-$hz.raw.json" 2>/dev/null)
  [ "${threads:-0}" -ge 65 ] || fail "64 threads at $hz Hz: ${threads:-no} threads in the raw file"
done
finish "ok: ospreyd sleeps until a ring is half full; bursts after a nap and 64 threads at 997 Hz and 10 kHz lose nothing"
