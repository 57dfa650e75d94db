#!/usr/bin/env python3
"""bench/field/objects.py RAW.json... — each raw profile's on-CPU samples by the object of
their leaf (the image whose text holds the first pc), in percent: the figure to set beside
`perf report --sort dso`. A system call's time stays on its user leaf here (the shim samples
user space), where perf gives it to [kernel.kallsyms]. A Python frame at the leaf (the eval
loop's own time, given to the Python function that ran) is "[py]", perf's python3.11. A run
of several images has a raw file per image beside STEM.raw.json (STEM.raw.PID.json): given
STEM.raw.json, they are counted with it, as `osprey report` reads them."""
import collections
import glob
import json
import sys


def shares(path, raws):
    counts = collections.Counter()
    total = 0
    for raw in raws:
        total += count(raw, counts)
    top = ", ".join(f"{n} {100.0 * c / max(total, 1):.1f}%" for n, c in counts.most_common(4))
    print(f"{path}: {total} on-CPU samples: {top}")


def count(raw, counts):
    texts = [(i["text"], i["text"] + i["text_size"], i["path"].rsplit("/", 1)[-1])
             for i in raw["images"]]
    total = 0
    for sample in raw["samples"]:
        if sample[3] != 0:  # on-CPU only
            continue
        weight = sample[4] if len(sample) > 4 else 1
        stack = raw["stacks"][sample[2]]
        name = "(empty stack)"
        if stack:
            name = next((n for lo, hi, n in texts if lo <= stack[0] < hi), "(no object)")
            if name == "(no object)" and (stack[0] >> 62) == 1 and raw.get("python"):
                name = "[py]"
        counts[name] += weight
        total += weight
    return total


for path in sys.argv[1:]:
    paths = [path]
    if path.endswith(".raw.json"):
        paths += sorted(glob.glob(glob.escape(path[:-len("json")]) + "[0-9]*.json"))
    raws = []
    for p in paths:
        with open(p) as f:
            raws.append(json.load(f))
    shares(path, raws)
