#!/usr/bin/env bash
# End-to-end: the profiled program is not hurt, and what it does is recorded, in the corners a
# hostile review found (tests/test-shim-target.c's modes, run plain and profiled with ospreyd):
#   smallstack    a thread on a PTHREAD_STACK_MIN stack with 1.5 KiB left (less than the
#                 kernel's signal frame): runs as plain (the handler has a signal stack);
#   coroutine     the same on a 16 KiB makecontext stack;
#   seccomp       strict mode, and an allow-list filter that kills on anything else, entered
#                 after start: profiling stops before either takes effect, one line says so;
#   alarmpoll     an event loop whose SIGALRM handler changes the mask during a guarded poll;
#   longjmp       a SIGALRM handler that longjmps out of a guarded pause(): the mask the
#                 program sees and the CPU time after it as plain;
#   sigevthread   a SIGEV_THREAD timer's callback burning 0.3 s: its CPU time recorded;
#   zerotimeouts  zero-timeout nanosleep, poll and select at 10 kHz: never EINTR, as plain;
#   timerids      the program's first timer id is 0 and a sweep of ids 0..63 deletes only its
#                 own (the profiler's timers sit at the top of the id range): output as plain,
#                 and a worker running after the sweep is still sampled;
#   shortthreads  2000 threads of 300 us CPU and 500 of 1.5 ms: their CPU time recorded within
#                 10% of what their code used and of what they used in all, their ends
#                 included (each thread starts at a random phase of the period; what its
#                 timers could not sample is paid when it ends);
#   sigpending    under `ulimit -i 16` and `-i 1`: the program runs as plain (a SIGPROF that lost
#                 its siginfo is dropped, not the default action), what was lost said in one line;
#   setuid        a setuid-root copy of the target built with the archive, run by nobody with
#                 OSPREY_DAEMON naming a program and OSPREY_PROFILE a path: neither is used,
#                 one line says so, nothing is left in /dev/shm (needs root; said when skipped);
#   notsc         a program that makes the CPU's counter fault (prctl PR_SET_TSC): runs as
#                 plain (the handler's clock reads become system calls);
#   sched         ospreyd in the program's session, a process group of its own, its tick
#                 below the program's nice value (root) and its unwind builds at it.
# Usage: e2e-hardening.sh TARGET SHIM_SO OSPREYD STATIC_TARGET
set -uo pipefail

target=${1:?usage: e2e-hardening.sh TARGET SHIM_SO OSPREYD}
shim=${2:?}
daemon=${3:?}
static_target=${4:?}
# shellcheck source=tests/lib.sh
. "$(dirname "$(realpath "$0")")/lib.sh"
scratch_dir hardening

profiled() { # profiled NAME ARGS...: stdout, stderr and status of a profiled run
  local name=$1
  shift
  OSPREY_DAEMON=$daemon OSPREY_PROFILE="$work/$name.raw.json" LD_PRELOAD=$shim "$target" "$@" \
    >"$work/$name.out" 2>"$work/$name.err"
  echo $? >"$work/$name.status"
}
plain() {
  local name=$1
  shift
  "$target" "$@" >"$work/$name.plain" 2>/dev/null
  echo $? >"$work/$name.plain-status"
}
same_as_plain() { # same_as_plain NAME ARGS...: the program's own status 0, the same profiled
  local name=$1
  shift
  plain "$name" "$@"
  profiled "$name" "$@"
  [ "$(cat "$work/$name.plain-status")" = 0 ] ||
    fail "$name: the plain run itself ended with status $(cat "$work/$name.plain-status")"
  cmp -s "$work/$name.plain" "$work/$name.out" ||
    fail "$name: output differs: plain '$(cat "$work/$name.plain")', profiled '$(cat "$work/$name.out")'"
  cmp -s "$work/$name.plain-status" "$work/$name.status" ||
    fail "$name: exit status $(cat "$work/$name.status"), plain $(cat "$work/$name.plain-status")"
  [ -s "$work/$name.raw.json" ] || fail "$name: no profile written"
}
same_as_plain smallstack smallstack
same_as_plain coroutine coroutine
# notsc: a program that makes the CPU's counter fault: the handler's clock reads are system
# calls from then on (the vDSO's read the counter: the program was killed by SIGSEGV).
same_as_plain notsc notsc
same_as_plain seccomp-strict seccomp strict
same_as_plain seccomp-filter seccomp filter
# zerotimeouts: nanosleep, poll and select with zero timeouts for 1.5 s at 10 kHz: none cut
# short (the guard does not block SIGPROF around a call that cannot block, and makes again one
# a signal of ours cut short: about 100 a second returned EINTR, where a plain run sees none).
OSPREY_PROFILE_HZ=10000 same_as_plain zerotimeouts zerotimeouts 1500
for kind in strict filter; do
  expect_one_line "$work/seccomp-$kind.err" 'seccomp sandbox: profiling stopped' "seccomp $kind: stderr"
done

# A program's handler that changes the mask during a guarded call, and one that longjmps out
# of it: their CPU time is still recorded (before: 5 periods of 5.7 s; 0 of 0.3 s). A
# SIGEV_THREAD timer's callback, on a thread the C library starts: recorded (before: absent).
for mode in alarmpoll longjmp sigevthread timerids; do
  same_as_plain "$mode" "$mode"
  python3 - "$work/$mode.raw.json" "$work/$mode.err" "$mode" <<'PY' || fail "$mode: CPU time not recorded (above)"
import sys
from checks import load_raw, on_cpu_seconds
raw, err, mode = sys.argv[1], sys.argv[2], sys.argv[3]
truth = None
for line in open(err):
    if line.startswith("cpu_ns "):
        truth = int(line.split()[1]) / 1e9
recorded = on_cpu_seconds(load_raw(raw))
ok = truth is not None and abs(recorded - truth) <= 0.25 * truth
print("  %s: %s: %.3f s of CPU recorded of %.3f s used" % ("ok" if ok else "FAIL", mode, recorded, truth or 0))
sys.exit(0 if ok else 1)
PY
done

for spec in "2000 300" "500 1500"; do
  read -r n us <<<"$spec"
  name=short-$us
  profiled "$name" shortthreads "$n" "$us"
  python3 - "$work/$name.raw.json" "$work/$name.err" "$n" "$us" <<'PY' || fail "short threads of $us us: CPU time not recorded (above)"
import sys
from checks import load_raw, on_cpu, periods
raw, err, n, us = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
# Two truths: what the threads' code used (from their births to the ends of their loops) and
# all they used (their ends in the C library and the kernel included, which perf counts too).
# The profile pays the CPU time up to the moment its timers are gone, between the two: 2-10%
# above the first, 4-9% below the second here (each thread's end costs tens of microseconds,
# more under load), so the check is 10% either side of the pair, not of either alone.
code = everything = None
for line in open(err):
    if line.startswith("threads_cpu_ns "):
        code = int(line.split()[1]) / 1e9
    if line.startswith("exited_cpu_ns "):
        everything = int(line.split()[1]) / 1e9
profile = load_raw(raw)
threads = profile["threads"]
recorded = periods(profile, lambda row: on_cpu(row) and threads[row[1]]["fiber"] != 0) / \
    profile["rate_hz"]
ok = code is not None and everything is not None and 0.90 * code <= recorded <= 1.10 * everything
print("  %s: %d threads of %d us: %.3f s recorded of %.3f s used by their code, %.3f s in all"
      % ("ok" if ok else "FAIL", n, us, recorded, code or 0, everything or 0))
sys.exit(0 if ok else 1)
PY
done

if [ "$(id -u)" -eq 0 ] && command -v setpriv >/dev/null; then
  jail=$(mktemp -d /tmp/osprey-setuid.XXXXXX)
  chmod 755 "$jail"
  cp "$static_target" "$jail/target"
  chown root:root "$jail/target"
  chmod 4755 "$jail/target"
  printf '#!/bin/sh\ntouch %s/ran-as-root\n' "$jail" >"$jail/evil"
  chmod 755 "$jail/evil"
  setpriv --reuid=65534 --regid=65534 --clear-groups \
    env OSPREY_PROFILE="$jail/out.json" OSPREY_DAEMON="$jail/evil" "$jail/target" print 3 \
    >"$work/setuid.out" 2>"$work/setuid.err"
  status=$?
  "$target" print 3 >"$work/setuid.plain" 2>/dev/null
  expect_status 3 "$status" "setuid"
  cmp -s "$work/setuid.plain" "$work/setuid.out" || fail "setuid: output differs"
  expect_one_line "$work/setuid.err" 'privileged.*OSPREY_.*profiling is off' "setuid: stderr"
  [ -e "$jail/ran-as-root" ] && fail "setuid: OSPREY_DAEMON ran with the program's privileges"
  compgen -G "$jail/out*" >/dev/null && fail "setuid: OSPREY_PROFILE was written: $(ls "$jail")"
  rm -rf "$jail"
else
  skip_part "setuid" "needs root and setpriv"
fi

# sigpending: under `ulimit -i N`, three threads busy at once and the main thread want 8 of
# the user's queued signals for our timers. The count is the user's over all of its processes
# (a parallel suite's other profiled programs hold some), so the one line says either how many
# ours hold or that a thread's timers could not be made; the program runs as plain. With N = 1
# the timers fail and ospreyd's asks reach the blocked main thread without their siginfo (the
# kernel had no queued signal left for it: SI_USER from pid 0), which once ended the program
# by SIGPROF's default action; now such a signal is dropped.
"$target" busy 3 200 >"$work/sigpending.plain" 2>/dev/null
for limit in 16 1; do
  bash -c 'ulimit -i "$0" && exec env "$@"' "$limit" OSPREY_DAEMON="$daemon" \
    OSPREY_PROFILE="$work/sigpending$limit.raw.json" LD_PRELOAD="$shim" "$target" busy 3 200 \
    >"$work/sigpending$limit.out" 2>"$work/sigpending$limit.err"
  expect_status 0 $? "sigpending (ulimit -i $limit)"
  cmp -s "$work/sigpending.plain" "$work/sigpending$limit.out" ||
    fail "sigpending (ulimit -i $limit): output differs"
  # One line of each kind at most: how many ours hold (when one was made), that one could not be.
  said="sampling timers hold [0-9]+ of the $limit queued signals this user may have \\(ulimit -i\\)|cannot create a thread's sampling timers \\(Resource temporarily unavailable\\)"
  lines=$(wc -l <"$work/sigpending$limit.err")
  if [ "$lines" -lt 1 ] || [ "$lines" -gt 2 ] || grep -Evq "$said" "$work/sigpending$limit.err"; then
    fail "sigpending (ulimit -i $limit): stderr: expected one or two lines matching '$said', got:"
    cat "$work/sigpending$limit.err" >&2
  fi
done

# ospreyd beside the program: in the program's session (the kernel's scheduling group, where
# autogroup is on) and a process group of its own (the terminal's ^C is the program's); its
# tick 10 below the program's nice value where allowed (root), its unwind builds at the
# program's. In a session of its own the tick ran 50-640 ms late beside two CPU hogs and the
# suite, and a 997 Hz client's rings overflowed (e2e-waits, pingpong).
OSPREY_DAEMON=$daemon OSPREY_PROFILE="$work/sched.raw.json" LD_PRELOAD=$shim "$target" busy 1 3000 \
  >/dev/null 2>"$work/sched.err" &
program=$!
collector=
for _ in $(seq 1 100); do
  collector=$(pgrep -f -- "--out $work/sched.raw.json" | head -n 1)
  [ -n "$collector" ] && [ -d "/proc/$collector/task" ] && break
  sleep 0.01
done
if [ -z "$collector" ]; then
  fail "sched: no ospreyd found for the profiled program"
else
  before=$failures
  read -r program_sid program_nice < <(ps -o sid=,ni= -p "$program")
  read -r sid pgid < <(ps -o sid=,pgid= -p "$collector")
  [ "$sid" = "$program_sid" ] || fail "sched: ospreyd in session $sid, the program in $program_sid"
  [ "$pgid" = "$collector" ] || fail "sched: ospreyd in process group $pgid, not one of its own"
  want=$program_nice
  [ "$(id -u)" -eq 0 ] && want=$((program_nice - 10))
  # ospreyd sets its tick's nice value once it has attached and queued its first builds: on a
  # loaded machine that can take a while after it appears.
  for _ in $(seq 1 100); do
    tick=$(ps -o ni= -L -p "$collector" | head -n 1 | tr -d ' ')
    [ "$tick" = "$want" ] && [ "$(ps -o tid= -L -p "$collector" | wc -l)" -gt 1 ] && break
    sleep 0.02
  done
  [ "$tick" = "$want" ] || fail "sched: ospreyd's tick at nice $tick, want $want"
  others=$(ps -o tid=,ni= -L -p "$collector" | awk -v pid="$collector" -v n="$program_nice" \
    '$1 != pid && $2 != n { print $1 " at " $2 }')
  builders=$(($(ps -o tid= -L -p "$collector" | wc -l) - 1))
  [ "$builders" -gt 0 ] || fail "sched: ospreyd has no unwind builders (it built no rows?)"
  [ -z "$others" ] || fail "sched: ospreyd's builders not at the program's nice $program_nice: $others"
  [ "$failures" -eq "$before" ] &&
    echo "  ok: sched: ospreyd in session $sid, group $pgid, tick at $tick, $builders builders at $program_nice"
fi
wait "$program"
expect_status 0 $? "sched"

finish "small stacks, coroutines, short threads, setuid, a small ulimit -i, ospreyd's scheduling"
