#!/usr/bin/env bash
# End-to-end: `osprey attach PID` on a program started without the profiler and built without
# frame pointers (tests/attach/target.c), attached for 2 s:
#   - the report names the hot functions, and >= 90% of the on-CPU samples have whole stacks
#     (reaching main, or a thread's start_thread);
#   - the CPU time recorded is what the kernel's cpu-clock events counted (within 10%); those
#     counts are the CPU time the process used in the window (within 10%) plus at most the
#     time the machine's hypervisor took from it meanwhile (steal, /proc/stat: cpu-clock counts
#     time a task is scheduled, and a virtual CPU the host preempts still has it scheduled,
#     while the process's CPU clocks leave it out); and that window's CPU is no more than
#     /proc/PID/stat says it used over the whole attach;
#   - a thread started after attaching is in the profile; the wait is at its site;
#   - after detaching, /proc/PID/task, maps, fd and the signal masks are as before, the
#     program's first timer_create gets id 0, and its output and exit status are its own;
#   - a pid that does not exist, and a process that exits mid-profile: one line each, and a
#     sane exit status.
# Where perf events are refused (perf_event_paranoid 3, a container), the test is skipped.
# Usage: e2e-attach.sh OSPREY SOURCE_DIR
set -uo pipefail

osprey=${1:?usage: e2e-attach.sh OSPREY SOURCE_DIR}
osprey=$(cd "$(dirname "$osprey")" && pwd)/$(basename "$osprey")
src=${2:?}
# shellcheck source=tests/lib.sh
. "$(dirname "$(realpath "$0")")/lib.sh"
scratch_dir attach

paranoid=$(cat /proc/sys/kernel/perf_event_paranoid 2>/dev/null || echo 3)
if [ "$paranoid" -gt 2 ] && [ "$(id -u)" -ne 0 ]; then
  skip "perf events are not allowed here (perf_event_paranoid $paranoid)"
fi

gcc -O2 -g -fomit-frame-pointer "$src/target.c" -lpthread -o "$work/target" 2>"$work/build" ||
  fail "build failed: $(cat "$work/build")"

# cpu_ticks PID: utime + stime, in clock ticks.
cpu_ticks() { awk '{ sub(/.*\) /, ""); print $12 + $13 }' "/proc/$1/stat"; }
# steal_ticks: the time the hypervisor ran something else while this machine's CPUs had work,
# summed over the CPUs, in clock ticks (0 on bare metal).
steal_ticks() { awk '$1 == "cpu" { print $9 + 0 }' /proc/stat; }

# --- the main case ---------------------------------------------------------------------------
"$work/target" "$work/trigger" 7 >"$work/out" 2>&1 &
pid=$!
pids+=("$pid")
for _ in $(seq 100); do grep -q ready "$work/out" && break; sleep 0.05; done
sleep 0.3
snapshot "$pid" "$work/before"
ticks_before=$(cpu_ticks "$pid")
steal_before=$(steal_ticks)
(sleep 0.8 && touch "$work/trigger") &
"$osprey" attach "$pid" --duration 2 -o "$work/p" >"$work/report" 2>&1
status=$?
ticks_after=$(cpu_ticks "$pid")
steal_after=$(steal_ticks)
expect_status 0 "$status" "osprey attach"
sleep 0.5 # the late thread has ended (it runs 0.8 s)
unchanged_since "$pid" "$work/before"
wait "$pid"
expect_status 3 $? "the program's exit status"
# (its first timer after the profile has id 0: no timer of ours was ever made in it)
[ "$(cat "$work/out")" = "$(printf 'ready\ndone ok timer 0')" ] ||
  fail "the program's output changed: $(cat "$work/out")"

grep -q attach_hot_leaf "$work/report" || fail "the report does not name attach_hot_leaf"
python3 - "$work" "$ticks_before" "$ticks_after" "$(getconf CLK_TCK)" \
  "$((steal_after - steal_before))" <<'PY' || fail "profile checks"
import sys
from checks import check, finish, load_raw, on_cpu_seconds
work, before, after, hz = sys.argv[1], float(sys.argv[2]), float(sys.argv[3]), float(sys.argv[4])
steal = float(sys.argv[5]) / hz
total = whole = late = 0
for line in open(work + "/p.folded"):
    stack, n = line.rsplit(" ", 1)
    n = int(n)
    frames = stack.split(";")
    total += n
    if "main" in frames or "start_thread" in frames:
        whole += n
    if "attach_late_leaf" in frames:
        late += n
check(total > 0, "no on-CPU samples")
check(whole >= 0.9 * total, f"whole stacks: {whole} of {total} on-CPU samples")
check(late > 0, "the thread started after attaching is not in the profile")
hot = sum(int(l.rsplit(" ", 1)[1]) for l in open(work + "/p.folded")
          if "main;attach_hot_middle;attach_hot_leaf" in l)
check(hot > 0, "attach_hot_leaf is not under main;attach_hot_middle")
waits = [l for l in open(work + "/p.offcpu.folded") if "attach_wait_site" in l]
check(waits, "the wait is not at attach_wait_site")
raw = load_raw(work + "/p.raw.json")
recorded = on_cpu_seconds(raw)
window = raw.get("process_cpu_ns", 0) / 1e9
used = (after - before) / hz
events = raw.get("collector", {}).get("events_cpu_ns", 0) / 1e9
check(events > 0, "the raw file does not say what the kernel's cpu-clock events counted")
check(abs(recorded - events) <= 0.1 * events,
      f"CPU recorded {recorded:.3f} s, the kernel's cpu-clock events counted {events:.3f} s")
check(window > 0 and events - window <= 0.1 * window + steal and window - events <= 0.1 * window,
      f"the cpu-clock events counted {events:.3f} s, the process used {window:.3f} s in the "
      f"window and the hypervisor took {steal:.3f} s from the machine meanwhile")
check(window <= used + 0.05, f"the window's CPU {window:.3f} s exceeds /proc's {used:.3f} s")
check(raw["exit"]["status"] == "stopped", f"exit {raw['exit']}")
print(f"on-CPU {total} samples, {whole} whole, late thread {late}, CPU {recorded:.3f} s of {window:.3f} s ({used:.3f} s by /proc, {events:.3f} s by the events, {steal:.3f} s stolen)")
finish()
PY

# --- a pid that does not exist ---------------------------------------------------------------
missing=999999
while [ -e "/proc/$missing" ]; do missing=$((missing - 1)); done
"$osprey" attach "$missing" --duration 1 -o "$work/m" >"$work/missing" 2>&1
expect_status 1 $? "attach to a missing pid"
expect_one_line "$work/missing" "no process $missing" "attach to a missing pid"

# --- attaching twice -------------------------------------------------------------------------
"$work/target" "$work/never" 3 >"$work/out2" 2>&1 &
pid2=$!
pids+=("$pid2")
for _ in $(seq 100); do grep -q ready "$work/out2" && break; sleep 0.05; done
"$osprey" attach "$pid2" --duration 2 -o "$work/first" >"$work/first.log" 2>&1 &
first=$!
sleep 0.5
"$osprey" attach "$pid2" --duration 1 -o "$work/second" >"$work/second.log" 2>&1
expect_status 1 $? "a second attach"
expect_one_line "$work/second.log" "already being profiled" "a second attach"
wait "$first"
expect_status 0 $? "the first attach"

# --- the process exits mid-profile -----------------------------------------------------------
wait "$pid2"
"$work/target" "$work/never" 1 >"$work/out3" 2>&1 &
pid3=$!
pids+=("$pid3")
for _ in $(seq 100); do grep -q ready "$work/out3" && break; sleep 0.05; done
"$osprey" attach "$pid3" --duration 10 -o "$work/gone" >"$work/gone.log" 2>&1
outlived_attach $? "$work/gone.log" "$pid3" 3

# --- who may attach: who may ptrace the process ------------------------------------------------
# As root, with nobody for the other user: nobody attaching to root's process, and to a process
# of its own that is not dumpable (as a setuid program is not), is refused in one line. Needs
# osprey and the target reachable by nobody: a build under /root is not, so nobody runs a copy
# of the build's osprey and ospreyd laid out as in the build tree (tools/, daemon/, shim/).
as_nobody() { setpriv --reuid nobody --regid nogroup --clear-groups "$@"; }
nobody_osprey=$osprey
if [ "$(id -u)" = 0 ] && chmod 755 "$work" && ! as_nobody test -x "$osprey"; then
  build=$(dirname "$(dirname "$osprey")")
  mkdir -p "$work/tree/tools" "$work/tree/daemon" "$work/tree/shim"
  cp "$osprey" "$work/tree/tools/" && cp "$build/daemon/ospreyd" "$work/tree/daemon/" &&
    cp "$build/shim/libospreyprof.a" "$build/shim/libospreyprof.so" "$work/tree/shim/" &&
    chmod -R a+rX "$work/tree" &&
    nobody_osprey=$work/tree/tools/$(basename "$osprey")
fi
if [ "$(id -u)" = 0 ] && command -v setpriv >/dev/null && chmod 755 "$work" &&
  as_nobody test -x "$nobody_osprey" && as_nobody test -x "$work/target"; then
  # Both live until they are killed below: on a loaded machine the build alone once took
  # longer than a target of 3 s lived ("no process").
  printf '#include <sys/prctl.h>\n#include <unistd.h>\nint main(void) { prctl(PR_SET_DUMPABLE, 0); sleep(60); return 0; }\n' >"$work/undumpable.c"
  gcc "$work/undumpable.c" -o "$work/undumpable" && chmod 755 "$work/undumpable"
  "$work/target" "$work/never" 60 >"$work/out4" 2>&1 &
  pid4=$!
  pids+=("$pid4")
  setpriv --reuid nobody --regid nogroup --clear-groups "$work/undumpable" & # not a function: $! is it
  pid5=$!
  pids+=("$pid5")
  sleep 0.3
  (cd / && as_nobody "$nobody_osprey" attach "$pid4" --duration 1 -o /tmp/never) >"$work/other" 2>&1
  expect_status 1 $? "attach to another user's process"
  expect_one_line "$work/other" "process $pid4 belongs to another user .*CAP_SYS_PTRACE" \
    "attach to another user's process"
  # The process is said first: from a directory nobody cannot write, without -o, the refusal
  # still names the process, not where the outputs would have gone.
  (cd / && as_nobody "$nobody_osprey" attach "$pid4" --duration 1) >"$work/other-here" 2>&1
  expect_status 1 $? "attach to another user's process, outputs in an unwritable place"
  expect_one_line "$work/other-here" "process $pid4 belongs to another user .*CAP_SYS_PTRACE" \
    "attach to another user's process, outputs in an unwritable place"
  (cd / && as_nobody "$nobody_osprey" attach "$pid5" --duration 1 -o /tmp/never) >"$work/undump" 2>&1
  expect_status 1 $? "attach to a process that is not dumpable"
  expect_one_line "$work/undump" "not allowed to attach to process $pid5 .*not dumpable" \
    "attach to a process that is not dumpable"
  kill "$pid4" "$pid5" 2>/dev/null
  wait "$pid4" "$pid5" 2>/dev/null
else
  skip_part "who may attach" "needs root, setpriv, and osprey reachable by nobody"
fi

# --- a process in another mount namespace (a container's) ------------------------------------
# Its program is on a tmpfs only its namespace has: the host has nothing at that path. The
# report and `osprey dump` name its functions through /proc/PID/root while it runs, the report
# from the build-id cache once it has ended.
if [ "$(id -u)" = 0 ] && command -v unshare >/dev/null && mkdir -p "$work/ns" &&
  unshare -m --propagation private true 2>/dev/null; then
  # shellcheck disable=SC2016 # expanded by the inner shell
  unshare -m --propagation private sh -c \
    'mount -t tmpfs none "$1" && cp "$2" "$1/target" && exec "$1/target" "$3" 60' \
    sh "$work/ns" "$work/target" "$work/never" >"$work/ns-out" 2>&1 &
  pid6=$!
  pids+=("$pid6")
  for _ in $(seq 100); do grep -q ready "$work/ns-out" && break; sleep 0.05; done
  [ ! -e "$work/ns/target" ] || fail "the namespace's tmpfs is seen from outside it"
  "$osprey" attach "$pid6" --duration 1 -o "$work/ns-p" >"$work/ns-report" 2>&1
  expect_status 0 $? "attach to a process in another mount namespace"
  grep -q attach_hot_leaf "$work/ns-report" ||
    fail "another mount namespace: attach_hot_leaf not named: $(cat "$work/ns-report")"
  "$osprey" dump "$pid6" >"$work/ns-dump" 2>&1
  expect_status 0 $? "dump of a process in another mount namespace"
  grep -Eq '^    main \(' "$work/ns-dump" ||
    fail "another mount namespace: dump does not name main: $(cat "$work/ns-dump")"
  kill "$pid6" 2>/dev/null
  wait "$pid6" 2>/dev/null
  "$osprey" report "$work/ns-p.raw.json" --top 5 >"$work/ns-again" 2>&1
  grep -q attach_hot_leaf "$work/ns-again" ||
    fail "another mount namespace, once it ended: attach_hot_leaf not named: $(cat "$work/ns-again")"
else
  skip_part "another mount namespace" "needs root and unshare"
fi

finish "e2e-attach: whole stacks, CPU, a late thread, the wait's site, nothing left behind, who may attach, another mount namespace"
