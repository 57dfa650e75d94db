#!/usr/bin/env python3
"""Wait accuracy beside perf's scheduler view: tests/waits/waits.c (each wait bracketed by clock
reads, the program prints its truth) profiled by osprey, and recorded by
`perf record -e sched:sched_switch` (the time from each switch out of a thread that is not a
preemption to its next switch in). Prints a Markdown table: truth, osprey's time at the site,
perf's blocked time of the threads that wait there.

With --noperf REFUSE (tests/refuse, run as `refuse perf_event_open`: perf_event_open refused by
a seccomp filter) osprey's runs
go through it, so the shim times the waits itself; perf's runs do not.

Usage: python3 bench/waits/run.py [BUILD_DIR] [--hz N] [--noperf REFUSE]
(BUILD_DIR default: build)
"""
import collections
import json
import os
import re
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CASES = ["join", "sites", "pipe", "nap", "mutex"]
# which threads wait at each site: the main thread, or the others
SITE_THREADS = {"join_site": "main", "site_short": "main", "site_long": "main",
                "read_site": "main", "nap_site": "main", "lock_site": "others"}


def osprey_site(stem, site):
    raw = json.load(open(stem + ".raw.json"))
    periods = 0
    for line in open(stem + ".offcpu.folded"):
        frames, count = line.rsplit(" ", 1)
        if any(f == site or f.startswith(site + ".") for f in frames.split(";")):
            periods += int(count)
    return periods / raw["rate_hz"], raw.get("waits", {}).get("timed_by", "shim")


def perf_blocked(data, pid):
    """Blocked seconds per tid of process pid from sched_switch records."""
    out = subprocess.run(["perf", "script", "-i", data, "-F", "tid,time,trace"],
                         capture_output=True, text=True).stdout
    tids = set(int(t) for t in os.listdir("/proc/%d/task" % pid)) if os.path.isdir(
        "/proc/%d/task" % pid) else None
    out_at, blocked = {}, collections.Counter()
    pat = re.compile(r"prev_pid=(\d+) .*prev_state=(\S+) ==> next_comm=.* next_pid=(\d+)")
    for line in out.splitlines():
        parts = line.split(None, 2)
        if len(parts) < 3:
            continue
        t = float(parts[1].rstrip(":"))
        m = pat.search(parts[2])
        if not m:
            continue
        prev, state, nxt = int(m.group(1)), m.group(2), int(m.group(3))
        if state not in ("R", "R+"):
            out_at[prev] = t
        else:
            out_at.pop(prev, None)
        if nxt in out_at:
            blocked[nxt] += t - out_at.pop(nxt)
    return blocked


def main():
    args = [a for i, a in enumerate(sys.argv[1:]) if not a.startswith("--") and
            (i == 0 or sys.argv[i] not in ("--hz", "--noperf"))]
    launch = []
    if "--noperf" in sys.argv:
        launch = [os.path.abspath(sys.argv[sys.argv.index("--noperf") + 1]), "perf_event_open"]
    build = os.path.abspath(args[0] if args else os.path.join(ROOT, "build"))
    hz = 997
    if "--hz" in sys.argv:
        hz = int(sys.argv[sys.argv.index("--hz") + 1])
    osprey = os.path.join(build, "tools", "osprey")
    work = tempfile.mkdtemp(prefix="osprey-bench-waits.")
    prog = os.path.join(work, "waits")
    subprocess.run(["gcc", "-O2", "-g", "-fomit-frame-pointer",
                    os.path.join(ROOT, "tests", "waits", "waits.c"), "-lpthread", "-o", prog],
                   check=True)
    print("## Waits: `tests/waits/waits.c` at %d Hz%s, against each wait's own clock reads and "
          "`perf record -e sched:sched_switch`" %
          (hz, " (osprey with perf_event_open refused)" if launch else ""))
    print()
    print("| case | site | truth s | osprey s | osprey error | perf sched_switch s | perf error "
          "| osprey timed by |")
    print("|---|---|---|---|---|---|---|---|")
    for case in CASES:
        stem = os.path.join(work, case)
        env = dict(os.environ, OSPREY_PROFILE_HZ=str(hz))
        res = subprocess.run(launch + [osprey, prog, "--profile", "-o", stem, "--", case],
                             capture_output=True, text=True, env=env)
        truth = {l.split()[1]: float(l.split()[2]) for l in res.stdout.splitlines()
                 if l.startswith("truth ")}
        data = os.path.join(work, case + ".perf.data")
        p = subprocess.Popen(["perf", "record", "-q", "-a", "-e", "sched:sched_switch", "-o", data,
                              "--", prog, case], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                             text=True)
        pout, _ = p.communicate()
        # perf's view of the threads of the recorded process: main is the process's pid
        script = subprocess.run(["perf", "script", "-i", data, "-F", "pid,tid,comm"],
                                capture_output=True, text=True).stdout
        pids = collections.Counter()
        for line in script.splitlines():
            f = line.split()
            if len(f) >= 2 and f[0] == "waits":
                pids[f[1]] += 1
        main_pid = None
        for tok in pids:
            pid, _, tid = tok.partition("/")
            if pid == tid:
                main_pid = int(pid)
        blocked = perf_blocked(data, main_pid or 0)
        ptruth = {l.split()[1]: float(l.split()[2]) for l in pout.splitlines()
                  if l.startswith("truth ")}
        for site, want in truth.items():
            got, timed = osprey_site(stem, site)
            if SITE_THREADS[site] == "main":
                pgot = blocked.get(main_pid, 0.0) if len(truth) == 1 else None
            else:
                pgot = None  # the lockers also sleep while holding the lock: two sites
            pw = ptruth.get(site, want)
            perf_cell = "%.3f" % pgot if pgot is not None else "(a thread's two sites)"
            perf_err = "%+.1f%%" % (100 * (pgot - pw) / pw) if pgot is not None and pw else ""
            print("| %s | %s | %.3f | %.3f | %+.1f%% | %s | %s | %s |" %
                  (case, site, want, got, 100 * (got - want) / want, perf_cell, perf_err, timed))
    print()
    print("perf's figure is the blocked time of the thread(s) waiting at the site over the whole "
          "run (for `join` and `pipe` the main thread also waits a little elsewhere, at start "
          "and exit); its error is against the truth of its own run.")


if __name__ == "__main__":
    main()
