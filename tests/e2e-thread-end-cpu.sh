#!/usr/bin/env bash
# End-to-end: a thread's CPU time its timers missed is paid at its end where it was last seen
# running (its latest on-CPU sample's stack, as at the program's exit), not as its start
# routine's own time. A worker that runs in bursts its timers seldom see (ffmpeg's slice
# threads under load: 6-35 periods each) had it all on the start routine alone, a frame that
# runs nothing itself: ffmpeg's `libavutil.so.57+0x71440` at 21% self where perf has the
# work in libswscale (a thread with no sample at all still pays it there). Here the worker spins 50 ms sampled (spin_seen), then 80 ms with
# SIGPROF blocked by the raw system call (spin_unseen: its timers fire, nothing is delivered)
# and ends: those ~80 periods were the start routine's (`worker` alone, 76-80 before), now
# spin_seen's stack's.
# Usage: e2e-thread-end-cpu.sh OSPREY
set -uo pipefail

osprey=${1:?usage: e2e-thread-end-cpu.sh OSPREY}
# shellcheck source=tests/lib.sh
. "$(dirname "$(realpath "$0")")/lib.sh"
scratch_dir thread-end-cpu

cat >"$work/ends.c" <<'EOF2'
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
static double cpu_now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}
static __attribute__((noinline)) unsigned spin_seen(double seconds)
{
    volatile unsigned x = 0;
    for (double end = cpu_now() + seconds; cpu_now() < end;)
        for (int i = 0; i < 1000; i++)
            x += (unsigned)i;
    return x;
}
static __attribute__((noinline)) unsigned spin_unseen(double seconds)
{
    volatile unsigned x = 1;
    for (double end = cpu_now() + seconds; cpu_now() < end;)
        for (int i = 0; i < 1000; i++)
            x ^= (unsigned)i;
    return x;
}
static void *worker(void *arg)
{
    unsigned x = spin_seen(0.05);
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGPROF);
    /* Not through the C library (whose call the profiler keeps SIGPROF out of). */
    syscall(SYS_rt_sigprocmask, SIG_BLOCK, &set, NULL, 8);
    x += spin_unseen(0.08);
    *(unsigned *)arg = x;
    return NULL;
}
int main(void)
{
    pthread_t t;
    unsigned x = 0;
    pthread_create(&t, NULL, worker, &x);
    pthread_join(t, NULL);
    puts(x != 12345 ? "done" : "?");
    return 0;
}
EOF2
gcc -O1 -g -fno-omit-frame-pointer -pthread "$work/ends.c" -o "$work/ends" 2>"$work/build" ||
  fail "build failed: $(cat "$work/build")"

"$osprey" "$work/ends" --profile -o "$work/p" --format folded >"$work/out" 2>"$work/err"
expect_status 0 $? "osprey"
grep -qx 'done' "$work/out" || fail "the program's output changed: $(cat "$work/out")"
python3 - "$work/p.folded" <<'PY' || failures=$((failures + 1))
import sys
from checks import check, finish, read_folded
rows = [(frames, count) for frames, count in read_folded(sys.argv[1]) if "worker" in frames]
total = sum(count for _, count in rows)
alone = sum(count for frames, count in rows if frames[-1] == "worker")
seen = sum(count for frames, count in rows if "spin_seen" in frames)
check(total >= 40, f"the worker has {total} on-CPU periods (40 at least of ~130)")
check(alone * 10 <= total, f"{alone} of the worker's {total} periods on its start routine alone (a tenth at most)")
check(seen * 3 >= total * 2, f"{seen} of the worker's {total} periods under spin_seen (two thirds at least)")
finish()
PY

finish "a thread's CPU time its timers missed is paid where it was last seen running"
