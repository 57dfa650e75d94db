#!/usr/bin/env python3
"""What aggregating a raw profile's samples would keep: for time buckets of 1 ms to 10 s, the
rows left when the samples of one thread, stack and state within a bucket become one weighted
row (raw v1 allows it: a row of weight w is w rows of weight 1), the bytes ospreyd would hold
for them (24 a row, struct ospd_sample) and that per hour of the run. Stacks are the raw
file's: the leaf is the precise pc, so two samples in one function share a stack only when
they landed on the same instruction with the same callers.
Usage: python3 bench/longrun/aggregate.py RAW.json"""
import json
import sys

raw = json.load(open(sys.argv[1]))
rows = raw["samples"]
span_ns = max((r[0] for r in rows), default=0) or 1
hours = span_ns / 3.6e12
print(f"{len(rows)} rows over {span_ns / 1e9:.0f} s, {len(raw['stacks'])} distinct stacks, "
      f"{len(raw['threads'])} threads")
print("| bucket | rows | of the samples' rows | MB held | MB per hour |")
print("|---|---|---|---|---|")
print(f"| none (spill) | {len(rows)} | 1.000 | {len(rows) * 24 / 2**20:.1f} (on disk) | "
      f"{len(rows) * 24 / 2**20 / hours:.0f} (on disk) |")
for bucket_ns in (1_000_000, 10_000_000, 100_000_000, 1_000_000_000, 10_000_000_000):
    merged = {(r[0] // bucket_ns, r[1], r[2], r[3]) for r in rows}
    mb = len(merged) * 24 / 2**20
    label = f"{bucket_ns / 1e6:g} ms"
    print(f"| {label} | {len(merged)} | {len(merged) / len(rows):.3f} | {mb:.1f} | "
          f"{mb / hours:.0f} |")
