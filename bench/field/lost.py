#!/usr/bin/env python3
"""bench/field/lost.py STEM.raw.json... — what each raw file of a run says it lost or paid late:
one line per process (every STEM.raw.PID.json beside STEM.raw.json counted, as `osprey
report` reads them): its threads, on-CPU periods against the CPU time the process used
(`process_cpu_ns`), the time waiting, `dropped` and `drops` (a `ring_full` is a sample the
collector fell behind on), the collector's `longest_late_us` and `longest_read_us`, the waits'
`blocks`, `lost_records` and `unattributed`, and how much of the on-CPU time was paid in heavy
rows (a weight of 8 periods or more: CPU time the thread's timers missed, paid at once where a
later signal landed), with the heaviest row's weight and leaf."""
import glob
import json
import sys


def leaf_name(raw, stack):
    if not stack:
        return "(empty)"
    pc = stack[0]
    for image in raw["images"]:
        if image["text"] <= pc < image["text"] + image["text_size"]:
            return "%s+0x%x" % (image["path"].rsplit("/", 1)[-1], pc - image["base"])
    return hex(pc)


def describe(path, raw):
    period_ns = 1e9 / raw["rate_hz"]
    on_cpu = waiting = heavy = 0
    top = (0, None)
    for sample in raw["samples"]:
        weight = sample[4] if len(sample) > 4 else 1
        if sample[3] == 0:
            on_cpu += weight
            if weight >= 8:
                heavy += weight
            if weight > top[0]:
                top = (weight, sample[2])
        else:
            waiting += weight
    collector = raw.get("collector", {})
    waits = raw.get("waits", {})
    cpu_ms = raw.get("process_cpu_ns", 0) / 1e6
    drops = ",".join("%s %d" % kv for kv in sorted(raw.get("drops", {}).items())) or "-"
    print("  pid %d %s (%s): %d threads; on-CPU %d periods (%.0f ms; process CPU %.0f ms), "
          "waiting %.2f s; dropped %d (%s); late %.1f ms, read %.1f ms; waits %s blocks %s "
          "lost %s unattributed %s; heavy rows %.1f%% of on-CPU, heaviest %d at %s" % (
              raw["pid"], raw.get("comm", "?"), raw.get("exit", {}).get("status", "?"),
              len(raw["threads"]), on_cpu, on_cpu * period_ns / 1e6, cpu_ms,
              waiting * period_ns / 1e9, raw.get("dropped", 0), drops,
              collector.get("longest_late_us", 0) / 1e3, collector.get("longest_read_us", 0) / 1e3,
              waits.get("timed_by", "-"), waits.get("blocks", "-"), waits.get("lost_records", "-"),
              waits.get("unattributed", "-"), 100.0 * heavy / max(on_cpu, 1), top[0],
              leaf_name(raw, raw["stacks"][top[1]]) if top[1] is not None else "-"))


for path in sys.argv[1:]:
    paths = [path]
    if path.endswith(".raw.json"):
        paths += sorted(glob.glob(glob.escape(path[:-len("json")]) + "[0-9]*.json"))
    print(path + ":")
    for p in paths:
        with open(p) as f:
            describe(p, json.load(f))
