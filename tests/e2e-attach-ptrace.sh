#!/usr/bin/env bash
# End-to-end: `osprey attach` where the kernel refuses perf events to the profiler — a seccomp
# filter returning EACCES for perf_event_open (tests/refuse.c, `refuse perf_event_open`, as Docker's and
# Kubernetes' default profiles do), put on the attach only: the target runs normally — on a
# program of three threads (tests/attach/three.c: main burns and counts its own signals, one
# naps 5 ms at a time, one is blocked all the window):
#   - one line says ptrace samples instead, at 100 Hz; the profile names the hot function, the
#     nap's site and the blocked thread at its site, waiting at least 80% of the window;
#   - the on-CPU time recorded is the threads' CPU time in the window (within 10%);
#   - the program's 20 queued signals sent meanwhile all came, its timer's signals and its
#     naps kept their time, its output and exit status are its own; after the attach nothing
#     is traced or stopped and /proc/PID/task, maps, fd and signal masks are as before;
#   - SIGINT to osprey ends the attach the same way, nothing left traced or stopped;
#   - the process exits mid-attach: one line, the profile written;
#   - a thread alternating 5 ms of CPU with 5 ms waits in system calls (tests/attach/alternate.c)
#     has its on-CPU samples in its code (>= 85%), its waits at the calls' sites;
#   - `ospreyd --attach-pid --stream` (osprey top's source) streams samples the same way;
#   - with perf events (where allowed), the thread blocked all the window is there too (and in
#     each batch of the stream osprey top reads, before its end); and
#     where the kernel allows its frames (root, perf_event_paranoid <= 1), the time main spends
#     reading /dev/zero has them below its user frames, named from /proc/kallsyms as perf names
#     them (`[k] read_zero` under three_kernel_site), the report naming them too.
# Usage: e2e-attach-ptrace.sh OSPREY SOURCE_DIR REFUSE
set -uo pipefail

osprey=${1:?usage: e2e-attach-ptrace.sh OSPREY SOURCE_DIR REFUSE}
osprey=$(cd "$(dirname "$osprey")" && pwd)/$(basename "$osprey")
ospreyd=$(dirname "$(dirname "$osprey")")/daemon/ospreyd
src=${2:?}
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tests/lib.sh
. "$here/lib.sh"
scratch_dir attach-ptrace

gcc -O2 -g -fomit-frame-pointer "$src/three.c" -lpthread -o "$work/three" 2>"$work/build" ||
  fail "build failed: $(cat "$work/build")"
no_perf=("${3:?}" perf_event_open)
"${no_perf[@]}" true || skip "no seccomp filter can be installed here"
scope=$(cat /proc/sys/kernel/yama/ptrace_scope 2>/dev/null || echo 0)
if [ "$scope" -gt 0 ] && [ "$(id -u)" -ne 0 ]; then
  skip "kernel.yama.ptrace_scope is $scope: attaching to a process not our child needs root"
fi

# untraced PID WHAT: no thread of PID is traced or stopped.
untraced() {
  local t
  [ -d "/proc/$1/task" ] || { fail "$2: process $1 ended before it could be checked"; return; }
  for t in /proc/"$1"/task/*; do
    grep -q '^TracerPid:[[:space:]]*0$' "$t/status" || fail "$2: thread ${t##*/} is still traced"
    grep -Eq '^State:[[:space:]]*[tT]' "$t/status" && fail "$2: thread ${t##*/} is left stopped"
  done
}
# start SECONDS OUT: the three-thread program, its pid in $pid once it is ready.
start() {
  "$work/three" "$1" >"$2" 2>&1 &
  pid=$!
  pids+=("$pid")
  for _ in $(seq 100); do grep -q ready "$2" && break; sleep 0.05; done
  sleep 0.2
}

# --- ptrace, under the filter: the main case --------------------------------------------------
start 5 "$work/out"
snapshot "$pid" "$work/before"
(for _ in $(seq 20); do kill -s RTMIN "$pid"; sleep 0.05; done) &
signaller=$!
"${no_perf[@]}" "$osprey" attach "$pid" --duration 2 -o "$work/p" >"$work/report" 2>"$work/err"
status=$?
wait "$signaller"
expect_status 0 "$status" "osprey attach under the filter"
grep -q "sampling process $pid from outside by ptrace at 100 Hz" "$work/err" ||
  { fail "no line saying ptrace samples instead:"; cat "$work/err" >&2; }
untraced "$pid" "after the attach"
unchanged_since "$pid" "$work/before"
wait "$pid"
expect_status 5 $? "the program's exit status"
[ "$(cat "$work/out")" = "$(printf 'ready\ndone rt 20 alarms ok naps ok')" ] ||
  fail "the program's output changed: $(cat "$work/out")"
python3 - "$work/p" <<'PY' || fail "profile checks"
import sys
from checks import check, finish, load_raw, on_cpu_seconds, read_folded
stem = sys.argv[1]
raw = load_raw(stem + ".raw.json")
window = (raw["end_unix_ns"] - raw["start_unix_ns"]) / 1e9
rate = raw["rate_hz"]
check(rate == 100, f"the rate is {rate} Hz, not the ptrace sampler's 100")
cpu = [(f, n) for f, n in read_folded(stem + ".folded")]
off = [(f, n) for f, n in read_folded(stem + ".offcpu.folded")]
hot = sum(n for f, n in cpu if f[-2:] == ["main", "three_hot_leaf"] or
          "main" in f and "three_kernel_site" in f)
total = sum(n for f, n in cpu)
check(hot >= 0.9 * total > 0,
      f"main;three_hot_leaf and main;three_kernel_site have {hot} of {total} on-CPU periods")
check(not any(x.startswith("[k] ") for f, n in cpu for x in f), "kernel frames by ptrace")
blocked = sum(n for f, n in off if f[0].startswith("blocked-") and "three_blocked_site" in f
              and f[1] in ("clone3", "clone"))
check(blocked >= 0.8 * window * rate,
      f"the blocked thread waits {blocked} periods at three_blocked_site in {window:.2f} s")
naps = sum(n for f, n in off if f[0].startswith("napper-") and "three_nap_site" in f)
# (a loaded machine keeps the napper runnable after its naps for a share of the window)
check(naps >= 0.2 * window * rate, f"the napper waits {naps} periods at three_nap_site")
recorded = on_cpu_seconds(raw)
events = raw["collector"].get("events_cpu_ns", 0) / 1e9
check(events > 0 and abs(recorded - events) <= 0.1 * events,
      f"CPU recorded {recorded:.3f} s, the threads used {events:.3f} s (schedstat)")
used = raw.get("process_cpu_ns", 0) / 1e9
check(abs(used - events) <= 0.1 * used + 0.02,
      f"the threads' CPU {events:.3f} s, the process's CPU clock {used:.3f} s")
check(raw["exit"]["status"] == "stopped", f"exit {raw['exit']}")
finish()
PY

# --- SIGINT ends it, nothing left behind ------------------------------------------------------
start 8 "$work/out2"
# (SIGINT as a terminal's ^C gives it: a background job of a script starts with it ignored)
python3 -c 'import os, signal, sys; signal.signal(signal.SIGINT, signal.SIG_DFL); os.execv(sys.argv[1], sys.argv[1:])' \
  "${no_perf[@]}" "$osprey" attach "$pid" -o "$work/i" >"$work/int.log" 2>&1 &
attach=$!
sleep 1.2
kill -INT "$attach"
wait "$attach"
expect_status 0 $? "osprey attach ended by SIGINT"
[ -s "$work/i.raw.json" ] || fail "SIGINT: no raw profile"
untraced "$pid" "after SIGINT"
wait "$pid"
expect_status 5 $? "the program's exit status (SIGINT case)"
[ "$(cat "$work/out2")" = "$(printf 'ready\ndone rt 0 alarms ok naps ok')" ] ||
  fail "the program's output changed (SIGINT case): $(cat "$work/out2")"

# --- the process exits mid-attach -------------------------------------------------------------
start 1 "$work/out3"
"${no_perf[@]}" "$osprey" attach "$pid" --duration 10 -o "$work/gone" >"$work/gone.out" \
  2>"$work/gone.log"
outlived_attach $? "$work/gone.log" "$pid" 5

# --- osprey top's stream ----------------------------------------------------------------------
start 4 "$work/out4"
"${no_perf[@]}" "$ospreyd" --attach-pid "$pid" --stream --duration 1 >"$work/stream" 2>&1
expect_status 0 $? "the stream under the filter"
head -1 "$work/stream" | grep -q "^osprey-stream 1 $pid 100$" ||
  fail "the stream's first line: $(head -1 "$work/stream")"
grep -q '^sample ' "$work/stream" || fail "the stream has no sample"
untraced "$pid" "after the stream"
wait "$pid"

# --- a thread alternating CPU with waits in system calls --------------------------------------
# Its on-CPU samples follow its CPU time (schedstat's, split by the kernel's user and system
# time): alternate_work has >= 85% of them, its sites of fdatasync and of a pipe's read, where
# it uses next to no CPU, within 5 points of their share of its CPU time (its system time at
# most); its waits are at those sites.
gcc -O2 -g -fomit-frame-pointer "$src/alternate.c" -lpthread -o "$work/alternate" 2>"$work/build" ||
  fail "build failed: $(cat "$work/build")"
"$work/alternate" 4 "$work/alternate.data" >"$work/alt.out" 2>&1 &
pid=$!
pids+=("$pid")
for _ in $(seq 100); do grep -q ready "$work/alt.out" && break; sleep 0.05; done
sleep 0.2
"${no_perf[@]}" "$osprey" attach "$pid" --duration 2 -o "$work/alt" >"$work/alt.report" 2>"$work/alt.err"
expect_status 0 $? "osprey attach (alternating thread)"
wait "$pid"
expect_status 0 $? "the alternating program's exit status"
python3 - "$work/alt" "$(cat "$work/alt.out")" <<'PY' || fail "profile checks (alternating thread): $(cat "$work/alt.err" "$work/alt.report")"
import sys
from checks import check, finish, load_raw, read_folded
stem, out = sys.argv[1], sys.argv[2].split()
user, system = float(out[out.index("user") + 1]), float(out[out.index("sys") + 1])
truth = system / (user + system)  # the most its syscall sites can use of its CPU
raw = load_raw(stem + ".raw.json")
window = (raw["end_unix_ns"] - raw["start_unix_ns"]) / 1e9
sites = ("alternate_sync", "alternate_pipe")
cpu = [(f, n) for f, n in read_folded(stem + ".folded") if f[0].startswith("alternator-")]
total = sum(n for f, n in cpu)
work = sum(n for f, n in cpu if "alternate_work" in f)
at_sites = sum(n for f, n in cpu if any(s in f for s in sites))
check(total > 0 and work >= 0.85 * total,
      f"alternate_work has {work} of the thread's {total} on-CPU periods")
check(total > 0 and at_sites / total <= truth + 0.05,
      f"its syscall sites have {at_sites} of {total} on-CPU periods, "
      f"their CPU share is {100 * truth:.1f}% at most")
off = [(f, n) for f, n in read_folded(stem + ".offcpu.folded") if f[0].startswith("alternator-")]
waits = sum(n for f, n in off if any(s in f for s in sites))
# (a loaded machine keeps it runnable, neither running nor waiting, for a share of the window)
check(waits >= 0.05 * window * raw["rate_hz"] and waits >= 0.9 * sum(n for f, n in off),
      f"the thread waits {waits} periods at its sites in {window:.2f} s, "
      f"of {sum(n for f, n in off)} in all")
finish()
PY

# --- perf events: the thread blocked all the window is there too -----------------------------
paranoid=$(cat /proc/sys/kernel/perf_event_paranoid 2>/dev/null || echo 3)
if [ "$paranoid" -le 2 ] || [ "$(id -u)" -eq 0 ]; then
  start 6 "$work/out5"
  "$osprey" attach "$pid" --duration 2 -o "$work/perf" >"$work/perf.report" 2>"$work/perf.err"
  expect_status 0 $? "osprey attach with perf events"
  grep -q "by ptrace" "$work/perf.err" && fail "perf events allowed, and yet ptrace sampled"
  kernel=()
  if [ "$paranoid" -le 1 ] || [ "$(id -u)" -eq 0 ]; then
    kernel=(kernel)
    cat "$work/perf.report" "$work/perf.err" | grep -q '\[k\] read_zero .*\[kernel.kallsyms\]' ||
      { fail "the report does not name [k] read_zero:"; cat "$work/perf.err" >&2; }
  else
    skip_part "kernel frames" "perf_event_paranoid $paranoid and not root"
  fi
  python3 - "$work/perf" "${kernel[@]}" <<'PY' || fail "profile checks (perf events)"
import sys
from checks import check, finish, load_raw, read_folded
stem = sys.argv[1]
raw = load_raw(stem + ".raw.json")
window = (raw["end_unix_ns"] - raw["start_unix_ns"]) / 1e9
blocked = sum(n for f, n in read_folded(stem + ".offcpu.folded")
              if f[0].startswith("blocked-") and "three_blocked_site" in f)
check(blocked >= 0.8 * window * raw["rate_hz"],
      f"perf events: the blocked thread waits {blocked} periods at three_blocked_site")
if len(sys.argv) > 2:  # kernel frames allowed
    cpu = read_folded(stem + ".folded")
    kernel = sum(n for f, n in cpu if "three_kernel_site" in f and
                 any(x.startswith("[k] ") for x in f[f.index("three_kernel_site"):]))
    named = sum(n for f, n in cpu if "[k] read_zero" in f)
    check(kernel > 0 and named > 0,
          f"kernel frames below three_kernel_site: {kernel} periods, {named} in [k] read_zero")
    above = sum(n for f, n in cpu if any(x.startswith("[k] ") for x in f) and
                not all(x.startswith("[k] ") for x in f[next(i for i, x in enumerate(f)
                                                              if x.startswith("[k] ")):]))
    check(above == 0, f"{above} periods with a user frame below a kernel one")
    check(raw.get("kernel_symbols"), "no kernel_symbols in the raw file")
finish()
PY
  # osprey top's stream: the blocked thread waits in every batch, not only at the end
  "$ospreyd" --attach-pid "$pid" --stream --duration 1 >"$work/perf.stream" 2>&1
  waited=$(awk '$1 == "thread" && $4 == "blocked" { b = $2 }
    $1 == "sample" && $4 == 1 && $6 == b && $2 < 900000000 { w += $5 } END { print w + 0 }' \
    "$work/perf.stream")
  [ "$waited" -gt 0 ] || fail "the stream: the blocked thread waits nowhere in its first batches"
  wait "$pid"
else
  skip_part "the blocked thread beside perf events" "perf_event_paranoid $paranoid"
fi

finish "e2e-attach-ptrace: ptrace under a seccomp filter, every thread, signals kept, nothing left behind"
