#!/usr/bin/env python3
"""bench/collector/wakeups.py OSPREY BUSY WORK HZ — run BUSY under `OSPREY BUSY --profile -F HZ`
and print ospreyd's wake-ups (voluntary context switches) per second of the program's run, read
from /proc as it goes (its last reading before it ended): a count the machine's load does not
blur, where CPU time on a loaded 2-core machine moves by more than the collector costs."""
import os, subprocess, sys, time

osprey, busy, work, hz = sys.argv[1:5]
tmp = os.path.dirname(os.path.abspath(busy))
p = subprocess.Popen([osprey, busy, "--profile", "-F", hz, "-o", os.path.join(tmp, "w"),
                      "--format", "folded", "--", work], stdout=subprocess.DEVNULL,
                     stderr=subprocess.DEVNULL, cwd=tmp)

def descendants(pid):
    out, todo = [], [pid]
    while todo:
        q = todo.pop()
        kids = []
        try:  # every thread's: an orphan goes to whichever thread of a subreaper
            for task in os.listdir(f"/proc/{q}/task"):
                kids += open(f"/proc/{q}/task/{task}/children").read().split()
        except OSError:
            continue
        out += kids
        todo += [int(k) for k in kids]
    return out

start, last, daemon = time.monotonic(), None, None
while p.poll() is None:
    if daemon is None:
        for k in descendants(p.pid):
            try:
                if open(f"/proc/{k}/comm").read().strip() == "ospreyd":
                    daemon, start = k, time.monotonic()
            except OSError:
                pass
    if daemon is not None:
        try:
            for line in open(f"/proc/{daemon}/status"):
                if line.startswith("voluntary_ctxt_switches"):
                    last = (int(line.split()[1]), time.monotonic() - start)
        except OSError:
            pass
    time.sleep(0.02)
if last is None or last[1] <= 0:
    sys.exit("wakeups.py: ospreyd not seen")
print(f"{last[0]} wake-ups in {last[1]:.2f} s: {last[0] / last[1]:.0f}/s")
