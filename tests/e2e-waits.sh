#!/usr/bin/env bash
# End-to-end: every wait at its own site, for its own length (shim/README.md, "Waits from the
# kernel"). tests/waits/waits.c, built without frame pointers, logs the truth of each wait it
# makes (clock reads around each one); the profile must agree:
#   join, sites, pipe, nap, mutex at 997 Hz; sites and pipe at 100 Hz and 10 kHz too:
#   - each site's waiting time within 3% of the truth (plus one and a half periods; on the low
#     side, less the time the kernel says the threads were preempted, and the waits whose
#     stacks were cut before the unwind tables were ready, at most that window's length);
#   - the two sites of one thread told apart by name, in the right split (within 2 points);
#   - nap: each of its 100 waits of 15 ms is a slice of its own in trace.json;
#   - the raw file says the waits were timed from the kernel's records;
#   - pingpong (997 Hz, 10 kHz): at most 1% of the periods dropped, the on-CPU total within
#     5% of the process's CPU time, and the client's waiting under recv_site (95% of it at
#     least, less its final pthread_join; its sends never block, and a send preempted in the
#     middle is no wait).
# Where the kernel refuses perf events to this user (perf_event_paranoid 3, a container), the
# waits are the shim's own: only the join is checked and the test ends skipped (77), which in
# CI is a failure.
# And the README's example (examples/hotspot.c): its main thread waits in pthread_join, under
# main, for as long as the worker runs.
# With REFUSE (tests/refuse.c, as `refuse perf_event_open`: perf_event_open refused by a seccomp
# filter, EACCES) every run
# goes through it, and the waits are the shim's own (shim/README.md, "Without the kernel's
# records"), held to: each site within 5% of the truth (the mutex 10%) plus one and a half
# periods, at 100 Hz, 997 Hz and 10 kHz (join at 997 Hz); the two sites' split within 5 points;
# one slice per nap; the raw file says the shim timed them, refused by seccomp, and the report
# says so in one line; pipe calls and timed condvar waits change no signal mask (strace: under
# 1,000 rt_sigprocmask calls for 40,200 of them). pingpong is the kernel's case (its checks read
# the kernel's waited_ns).
# Usage: e2e-waits.sh OSPREY SOURCE_DIR EXAMPLES_DIR [REFUSE]
set -uo pipefail

osprey=${1:?usage: e2e-waits.sh OSPREY SOURCE_DIR}
src=${2:?}
examples=${3:?}
noperf=${4:-}
launch=()
if [ -n "$noperf" ]; then launch=("$noperf" perf_event_open); fi
# shellcheck source=tests/lib.sh
. "$(dirname "$(realpath "$0")")/lib.sh"
scratch_dir waits

gcc -O2 -g -fomit-frame-pointer "$src/waits.c" -lpthread -o "$work/waits" 2>"$work/build" ||
  fail "build failed: $(cat "$work/build")"

run() { # run NAME HZ MODE
  local name=$1 hz=$2 mode=$3
  OSPREY_PROFILE_HZ=$hz "${launch[@]}" "$osprey" "$work/waits" --profile -o "$work/$name" -- "$mode" \
    >"$work/$name.out" 2>"$work/$name.err" ||
    fail "$name: osprey exited $? ($(tail -n 3 "$work/$name.err"))"
}
for mode in join sites pipe nap mutex; do run "$mode-997" 997 "$mode"; done
"${launch[@]}" "$osprey" "$examples/hotspot.c" --profile -o "$work/hotspot" >"$work/hotspot.out" 2>"$work/hotspot.err" ||
  fail "hotspot: osprey exited $? ($(tail -n 3 "$work/hotspot.err"))"
more=(sites pipe)
if [ -n "$noperf" ]; then more=(sites pipe nap mutex); fi
for hz in 100 10000; do
  for mode in "${more[@]}"; do run "$mode-$hz" "$hz" "$mode"; done
done
if [ -z "$noperf" ]; then
  for hz in 997 10000; do run "pingpong-$hz" "$hz" pingpong; done
fi
# noperf: calls timed by their clock reads change no signal mask (shim/README.md, "Without the
# kernel's records"): 40,000 pipe calls that do not wait and 200 timed condvar waits, under
# strace, made 80,432 rt_sigprocmask calls when they were guarded (two each), 32 since, the
# collector's and the launcher's included.
if [ -n "$noperf" ]; then
  if ! command -v strace >/dev/null 2>&1; then
    skip_part "calls" "strace is not installed"
  elif ! strace -qq -o /dev/null true 2>/dev/null; then
    skip_part "calls" "ptrace is not allowed here" "CI's container may forbid ptrace"
  else
    strace -f -qq -e trace=rt_sigprocmask -o "$work/calls.trace" \
      "${launch[@]}" "$osprey" "$work/waits" --profile -o "$work/calls" -- calls \
      >"$work/calls.out" 2>"$work/calls.err" || fail "calls: osprey exited $? ($(tail -n 3 "$work/calls.err"))"
    grep -q '^calls 20000$' "$work/calls.out" || fail "calls: the program's output: $(cat "$work/calls.out")"
    masks=$(grep -c 'rt_sigprocmask(' "$work/calls.trace")
    [ "$masks" -lt 1000 ] ||
      fail "calls: $masks rt_sigprocmask calls for 40,200 timed calls (guarded: two each)"
    echo "  ok: calls: $masks rt_sigprocmask calls for 40,200 timed calls"
  fi
fi

python3 - "$work" "$noperf" <<'PY'
import json, os, sys
from checks import ROOTS, check, failures, load_raw, on_cpu, periods, waiting
work = sys.argv[1]
noperf = sys.argv[2] != ""

waits = load_raw(work + "/join-997.raw.json").get("waits", {})
kernel = waits.get("timed_by") == "kernel"
if noperf:
    # The filter refused them; where perf_event_paranoid refuses this user too (above 2, not
    # root), that setting is named first (it must change first).
    paranoid = int(open("/proc/sys/kernel/perf_event_paranoid").read())
    by = "perf_event_paranoid" if paranoid > 2 and os.geteuid() != 0 else "seccomp"
    check(not kernel and waits.get("timed_by") == "shim" and waits.get("refused") == "EACCES" and
          waits.get("refused_by") == by,
          "noperf: the raw file's waits say the shim timed them, perf events refused by %s (%s)"
          % (by, waits))
    said = ("a seccomp filter (EACCES)" if by == "seccomp" else
            "kernel.perf_event_paranoid=%d" % paranoid)
    report = [l.rstrip("\n") for l in open(work + "/join-997.err") if l.startswith("waits timed")]
    check(len(report) == 1 and report[0].startswith(
              "waits timed by the program's calls: perf events refused by %s;" % said),
          "noperf: the report's one line on how waits were timed: %s" % report)

def waited(name, site):
    raw = load_raw("%s/%s.raw.json" % (work, name))
    hit = 0
    for line in open("%s/%s.offcpu.folded" % (work, name)):
        frames, count = line.rsplit(" ", 1)
        if any(f == site or f.startswith(site + ".") for f in frames.split(";")):  # GCC's clones
            hit += int(count)
    return hit / raw["rate_hz"], 1.0 / raw["rate_hz"]

def truth(name):
    out = {}
    for line in open("%s/%s.out" % (work, name)):
        if line.startswith("truth "):
            _, site, seconds, waits = line.split()
            out[site] = float(seconds)
    return out

runs = ["join-997"] + ([] if not kernel else
        ["sites-997", "pipe-997", "nap-997", "mutex-997", "sites-100", "pipe-100", "sites-10000",
         "pipe-10000"])
if noperf:
    runs = ["join-997"] + ["%s-%s" % (m, hz) for hz in (997, 100, 10000)
                           for m in ("sites", "pipe", "nap", "mutex")]
# The program's truth is wall time around each call; the kernel's wait is the time switched
# out. A loaded machine preempts a thread between its clock read and the call, or as it is
# woken: that time is in the truth and is not waiting (the raw file counts it apart, per
# thread), so the low side gives way by the process's preempted time (0.05 s of 1.58 s once).
# And a wait whose stack was taken before ospreyd had the C library's unwind rows (the
# startup window, collector.unwind.ready_ns: 8-38 ms beside two CPU hogs, longer beside the
# suite's other tests too) ends in libc's read, not at its site: the low side gives way by
# those cut waits too, at most the window's length (and one wait of 10 ms that began in it).
def cut_waiting(name, rate):
    cut = 0
    for line in open("%s/%s.offcpu.folded" % (work, name)):
        frames, count = line.rsplit(" ", 1)
        if not ROOTS.intersection(frames.split(";")):
            cut += int(count)
    return cut / rate
for name in runs:
    raw = load_raw("%s/%s.raw.json" % (work, name))
    preempted = sum(t.get("preempted_ns", 0) for t in raw["threads"]) / 1e9
    window = raw.get("collector", {}).get("unwind", {}).get("ready_ns", 0) / 1e9
    early = min(cut_waiting(name, raw["rate_hz"]), window + 0.01 + 2.0 / raw["rate_hz"])
    for site, want in truth(name).items():
        got, period = waited(name, site)
        # The shim's own timing (noperf): 5% (the contended mutex 10%), as the waits' target.
        # The kernel's records: 3%, but 5% for the contended mutex, whose threads alternate
        # between the lock and a nap: a block shorter than the drain interval (paced up to 16 ms
        # when the rings are quiet) gets the site of the span before it (shim/README.md, "Known
        # limits with the records"), here now and then the nap's, the thread totals staying
        # exact: lock_site 0.5-3.4% short beside other builds, as much at 153d9d6 as since.
        share = (0.05 if site == "lock_site" else 0.03) if not noperf else \
            0.10 if site == "lock_site" else 0.05
        tol = share * want + 1.5 * period
        check(want - preempted - early - tol <= got <= want + tol,
              "%s: %s waited %.3f s, truth %.3f s (preempted %.3f s; cut stacks %.3f s of "
              "waits, of those begun in the first %.3f s, before the unwind tables were ready)" %
              (name, site, got, want, preempted, early, window))
    # Each thread on the contended mutex (noperf: the shim's own timing, 10% a thread).
    for line in open("%s/%s.out" % (work, name)) if noperf else []:
        if not line.startswith("thread_truth "):
            continue
        _, site, tid, seconds, _ = line.split()
        want, got = float(seconds), 0
        for row in open("%s/%s.offcpu.folded" % (work, name)):
            frames, count = row.rsplit(" ", 1)
            f = frames.split(";")
            if f[0].endswith("-" + tid) and any(x == site or x.startswith(site + ".") for x in f):
                got += int(count)
        got /= raw["rate_hz"]
        tol = 0.10 * want + 1.5 / raw["rate_hz"]
        check(want - early - tol <= got <= want + tol,
              "%s: thread %s waited %.3f s at %s, truth %.3f s" % (name, tid, got, site, want))
    if name.startswith("sites"):
        t = truth(name)
        a, _ = waited(name, "site_short")
        b, _ = waited(name, "site_long")
        want = t["site_short"] / (t["site_short"] + t["site_long"])
        check(a + b > 0 and abs(a / (a + b) - want) <= (0.05 if noperf else 0.02),
              "%s: site_short has %.3f of the two sites' waits, truth %.3f" %
              (name, a / (a + b) if a + b else 0, want))
# A client alternating two guarded calls on a socket with timeouts, 20,000+ times a second:
# before, each call wrote a span, the rings overflowed and most samples and sites were lost.
for name in ["pingpong-997", "pingpong-10000"] if kernel else []:
    raw = load_raw("%s/%s.raw.json" % (work, name))
    on = periods(raw, on_cpu) / raw["rate_hz"]
    cpu = raw["process_cpu_ns"] / 1e9
    # The flood wrote a record per call: 112,609 periods lost in 1.5 s. A loaded machine (two
    # CPU hogs and another test on 2 cores) may keep ospreyd from a 10 kHz thread's ring for
    # a few milliseconds: 0-58 periods of about 6,800 (under 0.9%) in runs at load 5.
    recorded = periods(raw)
    collector = raw.get("collector", {})
    check(raw["dropped"] <= 0.01 * recorded,
          "%s: %d records dropped of %d periods recorded (%s; ospreyd's tick %.1f ms late at most)"
          % (name, raw["dropped"], recorded, raw.get("drops", "no reasons"),
             collector.get("longest_late_us", 0) / 1000))
    check(abs(on - cpu) <= 0.05 * cpu, "%s: %.3f s on the CPU recorded of %.3f s" % (name, on, cpu))
    main = [t for t in raw["threads"] if t["fiber"] == 0][0]["waited_ns"] / 1e9
    at_recv, _ = waited(name, "recv_site")
    # Less its final pthread_join, a wait of its own at its own site: the echo thread, woken
    # by the last byte, ends before it returns, 0.06-0.10 s beside 8 busy loops on 2 cores.
    joined = sum(int(line.rsplit(" ", 1)[1]) for line in open("%s/%s.offcpu.folded" % (work, name))
                 if any("pthread_join" in f or "clockjoin" in f
                        for f in line.rsplit(" ", 1)[0].split(";"))) / raw["rate_hz"]
    check(at_recv >= 0.95 * (main - joined),
          "%s: recv_site has %.3f s of the client's %.3f s waiting (%.3f s in its final join)" %
          (name, at_recv, main, joined))
raw = load_raw(work + "/hotspot.raw.json")
main = [i for i, t in enumerate(raw["threads"]) if t["fiber"] == 0]
waited = periods(raw, lambda s: s[1] in main and waiting(s))
wall = (raw["end_unix_ns"] - raw["start_unix_ns"]) * raw["rate_hz"] / 1e9
joined = 0
first = [t for t in raw["threads"] if t["fiber"] == 0][0]
root = "%s-%d" % (raw["exe"].rsplit("/", 1)[-1], first["tid"])  # the main thread's root
for line in open(work + "/hotspot.offcpu.folded"):
    frames, count = line.rsplit(" ", 1)
    f = frames.split(";")
    if f[0] == root and "main" in f and any("pthread_join" in x or "clockjoin" in x for x in f):
        joined += int(count)
ok = waited >= 0.9 * wall and joined >= 0.95 * waited
check(ok, "hotspot: main waited %d of %.0f periods, %d of them in pthread_join under main" % (waited, wall, joined))
if not ok:
    print(open(work + "/hotspot.offcpu.folded").read(), raw.get("waits"), raw.get("collector"))
for name in ["nap-997"] if kernel else ["nap-997", "nap-100", "nap-10000"] if noperf else []:
    trace = json.load(open("%s/%s.trace.json" % (work, name)))
    events = trace["traceEvents"] if isinstance(trace, dict) else trace
    slices = [e for e in events if e.get("ph") == "X" and e.get("cat") == "osprey.waiting"]
    long = [e for e in slices if e["dur"] >= 10000]
    check(95 <= len(long) <= 101,
          "%s: %d wait slices of 10 ms or more in trace.json (100 waits)" % (name, len(long)))
# Without the kernel's records (and not asked for: noperf) only the join and hotspot's wait
# were checked: skipped (77).
sys.exit(1 if failures else 0 if kernel or noperf else 77)
PY
case $? in
  0) ;;
  77) skip_part "the waits timed from the kernel's records" "perf events are refused here" ;;
  *) fail "waits wrong (see above)" ;;
esac
finish "every wait at its site, for its length"
