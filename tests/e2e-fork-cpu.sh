#!/usr/bin/env bash
# End-to-end: a parent that forks 200 short children and waits for each spends its CPU time in
# fork (the kernel's copy of its address space, glibc's fork and its handlers) and the wait.
# Its timers see little of it as it runs (bursts of ~100 us between waits, where the CPU-time
# timer fires only at a tick that finds the thread running); what they missed was paid at its
# exit, at exit's stack (the last sample's had been lost to a wait's capture since):
# exit;…;_dl_fini;__cxa_finalize held 15 of the parent's ~20 periods, where perf puts them in
# __libc_fork and its handlers. Now each fork pays the parent's CPU time due at fork's stack
# (shim/registry.c, a pthread_atfork parent handler): the parent's periods under exit at most
# a quarter of its total (0 in 10 runs; 15 of 20 and 15 of 18 before), under fork at least
# half (14-18 of 14-18; 2-5 before).
# OSPREY_PROFILE_FORKS=0: the children are not profiled (the parent's profile is the point).
# Usage: e2e-fork-cpu.sh OSPREY
set -uo pipefail

osprey=${1:?usage: e2e-fork-cpu.sh OSPREY}
# shellcheck source=tests/lib.sh
. "$(dirname "$(realpath "$0")")/lib.sh"
scratch_dir fork-cpu

cat >"$work/forks.c" <<'EOF2'
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>
int main(void)
{
    for (int i = 0; i < 200; i++) {
        pid_t p = fork();
        if (p == 0) {
            volatile unsigned x = 0;
            for (int j = 0; j < 20000; j++)
                x += (unsigned)j;
            _exit(0);
        }
        if (p > 0)
            waitpid(p, NULL, 0);
    }
    puts("done");
    return 0;
}
EOF2
gcc -O1 -g -fno-omit-frame-pointer "$work/forks.c" -o "$work/forks" 2>"$work/build" ||
  fail "build failed: $(cat "$work/build")"

OSPREY_PROFILE_FORKS=0 "$osprey" "$work/forks" --profile -o "$work/p" --format folded \
  >"$work/out" 2>"$work/err"
expect_status 0 $? "osprey"
grep -qx 'done' "$work/out" || fail "the program's output changed: $(cat "$work/out")"
python3 - "$work/p.folded" <<'PY' || failures=$((failures + 1))
import sys
from checks import check, finish, read_folded
rows = [(frames, count) for frames, count in read_folded(sys.argv[1]) if "main" in frames or "exit" in frames]
total = sum(count for _, count in rows)
at_exit = sum(count for frames, count in rows if "exit" in frames)
in_fork = sum(count for frames, count in rows
              if {"__fork", "_Fork", "arch_fork", "__libc_fork"} & set(frames))
check(total >= 5, f"the parent has {total} on-CPU periods (5 at least)")
check(at_exit * 4 <= total, f"{at_exit} of the parent's {total} periods under exit (a quarter at most)")
check(in_fork * 2 >= total, f"{in_fork} of the parent's {total} periods under fork (half at least)")
finish()
PY

finish "a forking parent's CPU time is paid in fork, not at its exit"
