#!/bin/bash
# bench/field/waits-perf.sh COMMAND [ARGS...] — the kernel's view of a run's waits, to set
# beside Osprey's (`bench/field/lost.py STEM.raw.json`, "waiting"): `perf record -e
# sched:sched_switch -a` of the command, then per command name of the switched-out tasks
# (every task of the machine: read the rows of the program's own names) the time blocked (from
# a switch out in any state but R until the task's next switch in), the time preempted (state
# R) and the number of blocks; COMMS (a regular expression, default the command's name) picks
# the names printed. Root only.
set -u
data=$(mktemp /tmp/osprey-waits-perf.XXXXXX)
perf record -q -e sched:sched_switch -a -o "$data" -- "$@" >/dev/null 2>&1
perf script -i "$data" -F tid,time,trace 2>/dev/null | COMMS=${COMMS:-^$(basename "$1")$} python3 -c '
import os
import collections, re, sys
out = {}  # tid -> (time switched out, state, comm)
blocked = collections.Counter(); preempted = collections.Counter(); blocks = collections.Counter()
pat = re.compile(r"\s*(\d+)\s+([\d.]+):\s+prev_comm=(.*) prev_pid=(\d+) prev_prio=\d+ prev_state=(\S+) ==> next_comm=(.*) next_pid=(\d+)")
for line in sys.stdin:
    m = pat.match(line)
    if not m:
        continue
    t = float(m.group(2)); prev = int(m.group(4)); nxt = int(m.group(7))
    out[prev] = (t, m.group(5), m.group(3))
    if nxt in out:
        since, state, comm = out.pop(nxt)
        if state.startswith("R"):
            preempted[comm] += t - since
        else:
            blocked[comm] += t - since
            blocks[comm] += 1
for comm, s in blocked.most_common():
    if not re.search(os.environ["COMMS"], comm):
        continue
    print("  %-16s blocked %.2f s in %d blocks, preempted %.2f s" % (comm, s, blocks[comm], preempted[comm]))
'
rm -f "$data"
